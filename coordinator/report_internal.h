/* SPDX-License-Identifier: Apache-2.0 */
/* The reports' insides, shared by the files that make them up: report.c (the campaign verdict,
 * counts, metrics, the diagnosis model, software versions), report_json.c (the JSON report) and
 * report_text.c (the text report and the nodes table). Nothing outside coordinator/report*.c
 * includes this; report.h is the reports' only public header. Functions shared between these
 * files are named report__name (as libuv's uv__name); helpers of one file stay static s_name. */
#ifndef FB_REPORT_INTERNAL_H
#define FB_REPORT_INTERNAL_H

#include "report.h"
#include "strmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- Shared helpers ---------------------------------------------------------------------- */

/* Flushes out: 0; -EPIPE when out is a pipe or socket whose reader has gone (a normal end for
 * `fleetburn report | head`: callers exit 0 quietly); -EIO when writing to it failed otherwise. */
int report__finish_output(FILE *out);
/* Counts of tasks by verdict (index: fb_verdict_t; NONE counts pending ones). */
void report__count_tasks(const store_campaign_t *c, size_t counts[FB_VERDICT_MAX + 1],
                         size_t *total);

/* A metric as reports show it: the key is unique within its object. */
typedef struct {
    char *key;
    double value;
    const char *unit; /* borrowed from the result */
} report_metric_t;

typedef struct {
    report_metric_t *items;
    size_t n;
} report_metrics_t;

/* The metrics of a task: a name reported by one result keeps its name; a name reported by
 * several results (a group task, one result per node) becomes "name@node" for each. */
void report__task_metrics(const store_task_t *task, report_metrics_t *ms);
/* The metrics of one result, by name (the last value of a repeated name wins). */
void report__result_metrics(const fb_result_t *r, report_metrics_t *ms);
/* Frees the items and empties ms. */
void report__metrics_free(report_metrics_t *ms);

/* ---- Diagnosis ---------------------------------------------------------------------------- */

/* The diagnosis is built once from the campaign (everything borrowed from it) and written as
 * JSON and as text. Two sources: findings of failed tasks of ordinary stages (a memtest naming
 * a DIMM or its node: bad with confidence 1), and the diagnosis task that a stage with
 * on_fail: bisect ends with (coordinator/runner.c): one result per part, whose first finding is
 * the part and whose other findings (kind "evidence") cite the tests it rests on. */

typedef enum { REPORT_BAD, REPORT_UNDECIDED, REPORT_CLEARED, REPORT_PASSED } report_state_t;

/* One piece of evidence: a finding, or a test the diagnosis rests on. */
typedef struct {
    const store_stage_t *stage;
    const store_task_t *task; /* the task of the finding, or the test cited (NULL: unknown) */
    const char *task_id;      /* as cited */
    const fb_result_t *result;
    const char *what;
} report_evidence_t;

/* One part and what is known of it. */
typedef struct {
    const char *part, *kind, *summary; /* summary NULL for parts named by findings only */
    report_state_t state;
    double confidence;
    bool bisect; /* a diagnosis session decided it */
    bool unit;   /* the engine named a node without telling it from its NICs */
    bool on_watch; /* undecided, but its passes rule out a steady fault: only one in bursts is
                    * left open, which passes cannot bound (its nodes may be resumed) */
    const store_stage_t *stage;
    report_evidence_t *evidence;
    size_t n_evidence;
} report_suspect_t;

/* How a stage's diagnosis session ended (its diagnosis task's "#session" result). */
typedef struct {
    const store_stage_t *stage;
    const fb_result_t *result; /* error: "ended: ..."; metrics ended, follow_up_rounds, budget_* */
} report_session_t;

typedef struct {
    report_suspect_t *v;
    size_t n;
    report_session_t *sessions;
    size_t n_sessions;
    bool bisect;        /* some stage had a diagnosis session */
    fb_strmap_t *tasks;    /* task id -> store_task_t, for citing tests */
    fb_strmap_t *stage_of; /* task id -> store_stage_t */
} report_diag_t;

/* Builds the diagnosis of c into d (everything borrowed from c); free it with report__diag_free. */
void report__diag_build(report_diag_t *d, const store_campaign_t *c);
void report__diag_free(report_diag_t *d);
/* Whether part is also named bad (a part bad in one stage is not listed as cleared). */
bool report__diag_bad(const report_diag_t *d, const char *part);
/* Failed tasks no finding or diagnosis explains: a timeout, a lost node. In a bisect stage only
 * those that did not run to a verdict (its failures are what the diagnosis explains). */
bool report__unattributed(const store_stage_t *stage, const store_task_t *task);

/* ---- JSON (report_json.c) ------------------------------------------------------------------ */

struct fb_json;
/* "started" and "finished" (ISO 8601, or null while unknown) and "duration_ms" (null until
 * both are known): the span of a campaign, stage or task, as every JSON document writes it. */
void report__json_span(struct fb_json *j, uint64_t started_ms, uint64_t finished_ms);
/* The campaign's "id", "name", "source", "state" and "verdict" (report_campaign_verdict), the
 * fields that name it in the JSON report and in the alert. */
void report__json_campaign_fields(struct fb_json *j, const store_campaign_t *c);

/* ---- Slurm (report_slurm.c) --------------------------------------------------------------- */

/* The "slurm" section of the text report: the campaign's events of kind "slurm", if any. 0 or
 * the store's error. */
int report__text_slurm(store_t *store, const char *campaign_id, FILE *out);

/* ---- Fleet software versions ------------------------------------------------------------ */

/* Software versions of the campaign's nodes (from their inventories), to show components whose
 * version differs across the fleet: after an upgrade that reached only part of it, a regression
 * is often exactly that. Rows arrive ordered by component, version, node. */
typedef struct {
    char *component, *version, *node;
} report_sw_row_t;

typedef struct {
    report_sw_row_t *rows;
    size_t n, cap;
} report_software_t;

/* A store_software_foreach callback: appends a row to the report_software_t arg. */
int report__sw_add(const char *component, const char *version, const char *node, void *arg);
void report__sw_free(report_software_t *sw);
/* Index one past the last row of the component starting at i. */
size_t report__sw_component_end(const report_software_t *sw, size_t i);
/* Whether the rows [begin, end) of one component hold more than one version. */
bool report__sw_differs(const report_software_t *sw, size_t begin, size_t end);

/* ---- Headline figures (report_headline.c) ------------------------------------------------ */

/* The headline figures of a task (its workload's fb_headline_t list): "689..696 TFLOPS, 99..100%
 * of same-run peak, power 612..640 W, errors 0"; for a task of several nodes each node's own,
 * "node01: tx 93.1 Gb/s, rx 92.8 Gb/s; node02: ...". Heap text, or NULL when the workload has no
 * headline or none of its metrics is there. */
char *report__headline(const char *workload, const store_task_t *task);

/* ---- Environment (report_environment.c) -------------------------------------------------- */

/* The nodes' fingerprints in the campaign and what changed since each node's previous one. */
typedef struct {
    store_node_fingerprint_t *nodes;
    size_t n_nodes;
    fb_fp_group_t *changes;
    size_t n_changes;
    size_t n_compared; /* nodes that ran an earlier campaign */
} report_env_t;

/* Loads env (empty when the store has nothing, or cannot be read: the report goes without it). */
void report__env_load(store_t *store, const char *campaign_id, report_env_t *env);
void report__env_free(report_env_t *env);
/* "environment": {nodes, compared, changes, previous_campaigns, fingerprints} */
void report__env_json(struct fb_json *j, const report_env_t *env);
/* "changes since previous campaign" and one line per change; nothing without fingerprints. */
void report__env_text(const report_env_t *env, FILE *out);

#endif
