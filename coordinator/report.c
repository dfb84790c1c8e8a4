/* SPDX-License-Identifier: Apache-2.0 */
/* Reports out of the timeline: the machine-readable JSON report (every field is documented in
 * docs/report-json.md), the human summary printed at the end of `fleetburn run` and by
 * `fleetburn report`, and the `fleetburn nodes` table. A campaign is loaded from the store in
 * one snapshot and then only formatted here, so these functions never hold a read transaction
 * while writing to a slow pipe. The diagnosis (which parts are bad, undecided or cleared, with
 * their evidence) is built once from findings and from the diagnosis tasks of bisect stages, and
 * written both as JSON and as text. */
#include "report.h"
#include "json.h"
#include "strmap.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- Shared helpers ---------------------------------------------------------------------- */

/* A stage with on_fail: bisect that passed: its diagnosis cleared every suspect, so the tests
 * that failed in it failed spuriously (or with a partner since cleared), and do not fail the
 * campaign. */
static bool s_stage_explained(const store_stage_t *stage)
{
    return stage->on_fail && !strcmp(stage->on_fail, "bisect") &&
           stage->verdict != FB_VERDICT_NONE && fb_verdict_ok(stage->verdict);
}

const char *report_campaign_verdict(const store_campaign_t *c)
{
    if (!c->state || !strcmp(c->state, "running"))
        return "running";
    if (c->verdict != FB_VERDICT_NONE && !fb_verdict_ok(c->verdict))
        return "fail";
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks && !s_stage_explained(&c->stages[s]); t++)
            if (!fb_verdict_ok(c->stages[s].tasks[t].verdict))
                return "fail";
    return "pass";
}

static bool s_task_failed(const store_task_t *task)
{
    return task->verdict != FB_VERDICT_NONE && !fb_verdict_ok(task->verdict);
}

static int s_finish_output(FILE *out)
{
    if (fflush(out) != 0 || ferror(out))
        return -EIO;
    return 0;
}

/* Counts of tasks by verdict (index: fb_verdict_t; NONE counts pending ones). */
static void s_count_tasks(const store_campaign_t *c, size_t counts[FB_VERDICT_MAX + 1],
                          size_t *total)
{
    memset(counts, 0, sizeof(size_t) * (FB_VERDICT_MAX + 1));
    *total = 0;
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
            fb_verdict_t v = c->stages[s].tasks[t].verdict;
            counts[(int)v >= 0 && v <= FB_VERDICT_MAX ? v : FB_VERDICT_ERROR]++;
            (*total)++;
        }
}

/* A metric as reports show it: the key is unique within its object. */
typedef struct {
    char *key;
    double value;
    const char *unit; /* borrowed from the result */
} s_metric_t;

typedef struct {
    s_metric_t *items;
    size_t n;
} s_metrics_t;

static void s_metrics_set(s_metrics_t *ms, char *key, double value, const char *unit)
{
    for (size_t i = 0; i < ms->n; i++) {
        if (!strcmp(ms->items[i].key, key)) { /* the last value of a repeated name wins */
            free(key);
            ms->items[i].value = value;
            ms->items[i].unit = unit;
            return;
        }
    }
    ms->items = xrealloc(ms->items, (ms->n + 1) * sizeof *ms->items);
    ms->items[ms->n++] = (s_metric_t){key, value, unit};
}

static void s_metrics_free(s_metrics_t *ms)
{
    for (size_t i = 0; i < ms->n; i++)
        free(ms->items[i].key);
    free(ms->items);
    ms->items = NULL;
    ms->n = 0;
}

static const char *s_result_label(const fb_result_t *r)
{
    return r->node && *r->node ? r->node : r->result_id ? r->result_id : "?";
}

/* The metrics of a task: a name reported by one result keeps its name; a name reported by
 * several results (a group task, one result per node) becomes "name@node" for each. */
static void s_task_metrics(const store_task_t *task, s_metrics_t *ms)
{
    for (size_t i = 0; i < task->n_results; i++) {
        const fb_result_t *r = task->results[i].result;
        for (size_t m = 0; m < r->n_metrics; m++) {
            const char *name = r->metrics[m].name ? r->metrics[m].name : "";
            bool shared = false;
            for (size_t j = 0; j < task->n_results && !shared; j++)
                shared = j != i && fb_result_metric(task->results[j].result, name) != NULL;
            char *key = shared ? xasprintf("%s@%s", name, s_result_label(r)) : xstrdup(name);
            s_metrics_set(ms, key, r->metrics[m].value, r->metrics[m].unit);
        }
    }
}

static void s_result_metrics(const fb_result_t *r, s_metrics_t *ms)
{
    for (size_t m = 0; m < r->n_metrics; m++)
        s_metrics_set(ms, xstrdup(r->metrics[m].name ? r->metrics[m].name : ""),
                      r->metrics[m].value, r->metrics[m].unit);
}

/* ---- JSON -------------------------------------------------------------------------------- */

static void s_json_time(fb_json_t *j, const char *key, uint64_t ms)
{
    char buf[40];
    if (ms)
        fb_json_string(j, key, fb_iso8601(ms, buf, sizeof buf));
    else
        fb_json_null(j, key);
}

static void s_json_duration(fb_json_t *j, const char *key, uint64_t start, uint64_t end)
{
    if (start && end && end >= start)
        fb_json_int(j, key, (int64_t)(end - start));
    else
        fb_json_null(j, key);
}

static void s_json_metrics(fb_json_t *j, const s_metrics_t *ms)
{
    fb_json_object_begin(j, "metrics");
    for (size_t i = 0; i < ms->n; i++)
        fb_json_number(j, ms->items[i].key, ms->items[i].value);
    fb_json_object_end(j);
    fb_json_object_begin(j, "units");
    for (size_t i = 0; i < ms->n; i++)
        fb_json_string(j, ms->items[i].key, ms->items[i].unit ? ms->items[i].unit : "");
    fb_json_object_end(j);
}

/* A stored parameter text is only emitted raw when it is a JSON object; the store checks that
 * on the way in, and this keeps a hand-edited database from breaking the report. */
static bool s_looks_like_object(const char *text)
{
    if (!text)
        return false;
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r')
        text++;
    size_t n = strlen(text);
    while (n > 0 && strchr(" \t\n\r", text[n - 1]))
        n--;
    return n >= 2 && text[0] == '{' && text[n - 1] == '}';
}

static void s_json_task(fb_json_t *j, const store_task_t *task)
{
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "id", task->id);
    fb_json_array_begin(j, "nodes");
    for (size_t i = 0; i < task->n_nodes; i++)
        fb_json_string(j, NULL, task->nodes[i]);
    fb_json_array_end(j);
    fb_json_string(j, "state", task->state);
    fb_json_string(j, "verdict", fb_verdict_name(task->verdict));
    fb_json_string(j, "error", task->error);
    s_json_time(j, "started", task->started_ms);
    s_json_time(j, "finished", task->finished_ms);
    s_json_duration(j, "duration_ms", task->started_ms, task->finished_ms);

    s_metrics_t ms = {0};
    s_task_metrics(task, &ms);
    s_json_metrics(j, &ms);
    s_metrics_free(&ms);

    fb_json_array_begin(j, "findings");
    for (size_t i = 0; i < task->n_results; i++) {
        const fb_result_t *r = task->results[i].result;
        for (size_t f = 0; f < r->n_findings; f++) {
            fb_json_object_begin(j, NULL);
            fb_json_string(j, "part", r->findings[f].part);
            fb_json_string(j, "kind", r->findings[f].kind);
            fb_json_string(j, "what", r->findings[f].what);
            fb_json_string(j, "node", r->node);
            fb_json_string(j, "result_id", r->result_id);
            fb_json_object_end(j);
        }
    }
    fb_json_array_end(j);

    fb_json_array_begin(j, "results");
    for (size_t i = 0; i < task->n_results; i++) {
        const fb_result_t *r = task->results[i].result;
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "result_id", r->result_id);
        fb_json_string(j, "node", r->node);
        fb_json_string(j, "verdict", fb_verdict_name(r->verdict));
        fb_json_string(j, "error", r->error);
        s_json_time(j, "started", r->started_ms);
        s_json_time(j, "finished", r->finished_ms);
        s_json_time(j, "received", task->results[i].received_ms);
        s_metrics_t rm = {0};
        s_result_metrics(r, &rm);
        s_json_metrics(j, &rm);
        s_metrics_free(&rm);
        fb_json_int(j, "findings", (int64_t)r->n_findings);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
}

static void s_json_stage(fb_json_t *j, const store_stage_t *stage)
{
    fb_json_object_begin(j, NULL);
    fb_json_int(j, "index", stage->idx);
    fb_json_string(j, "name", stage->name);
    fb_json_string(j, "workload", stage->workload);
    fb_json_string(j, "on_fail", stage->on_fail);
    if (stage->timeout_ms)
        fb_json_int(j, "timeout_ms", (int64_t)stage->timeout_ms);
    else
        fb_json_null(j, "timeout_ms");
    fb_json_string(j, "verdict", fb_verdict_name(stage->verdict));
    if (s_looks_like_object(stage->params_json))
        fb_json_raw(j, "params", stage->params_json);
    else if (stage->params_json)
        fb_json_string(j, "params", stage->params_json);
    else
        fb_json_raw(j, "params", "{}");
    s_json_time(j, "started", stage->started_ms);
    s_json_time(j, "finished", stage->finished_ms);
    s_json_duration(j, "duration_ms", stage->started_ms, stage->finished_ms);
    fb_json_array_begin(j, "tasks");
    for (size_t t = 0; t < stage->n_tasks; t++)
        s_json_task(j, &stage->tasks[t]);
    fb_json_array_end(j);
    fb_json_object_end(j);
}

/* ---- Diagnosis ---------------------------------------------------------------------------- */

/* The diagnosis is built once from the campaign (everything borrowed from it) and written as
 * JSON and as text. Two sources: findings of failed tasks of ordinary stages (a memtest naming
 * a DIMM or its node: bad with confidence 1), and the diagnosis task that a stage with
 * on_fail: bisect ends with (coordinator/runner.c): one result per part, whose first finding is
 * the part and whose other findings (kind "evidence") cite the tests it rests on. */

typedef enum { S_BAD, S_UNDECIDED, S_CLEARED } s_state_t;

/* One piece of evidence: a finding, or a test the diagnosis rests on. */
typedef struct {
    const store_stage_t *stage;
    const store_task_t *task; /* the task of the finding, or the test cited (NULL: unknown) */
    const char *task_id;      /* as cited */
    const fb_result_t *result;
    const char *what;
} s_evidence_t;

/* One part and what is known of it. */
typedef struct {
    const char *part, *kind, *summary; /* summary NULL for parts named by findings only */
    s_state_t state;
    double confidence;
    bool bisect; /* a diagnosis session decided it */
    const store_stage_t *stage;
    s_evidence_t *evidence;
    size_t n_evidence;
} s_suspect_t;

typedef struct {
    s_suspect_t *v;
    size_t n;
    bool bisect;        /* some stage had a diagnosis session */
    strmap_t *tasks;    /* task id -> store_task_t, for citing tests */
    strmap_t *stage_of; /* task id -> store_stage_t */
} s_diag_t;

static bool s_is_bisect(const store_stage_t *stage)
{
    return stage->on_fail && !strcmp(stage->on_fail, "bisect");
}

static bool s_is_diagnosis_task(const store_stage_t *stage, const store_task_t *task)
{
    size_t n = strlen(task->id);
    return s_is_bisect(stage) && n > 10 && !strcmp(task->id + n - 10, "/diagnosis");
}

static s_suspect_t *s_suspect(s_diag_t *d, const char *part, const char *kind, s_state_t state)
{
    for (size_t k = 0; k < d->n; k++)
        if (!strcmp(d->v[k].part, part) && d->v[k].state == state)
            return &d->v[k];
    d->v = xrealloc(d->v, (d->n + 1) * sizeof *d->v);
    s_suspect_t *sus = &d->v[d->n++];
    *sus = (s_suspect_t){.part = part, .kind = kind, .state = state};
    return sus;
}

static void s_evidence_add(s_suspect_t *sus, s_evidence_t ev)
{
    sus->evidence = xrealloc(sus->evidence, (sus->n_evidence + 1) * sizeof *sus->evidence);
    sus->evidence[sus->n_evidence++] = ev;
}

static double s_metric_or(const fb_result_t *r, const char *name, double dflt)
{
    const fb_metric_t *m = fb_result_metric(r, name);
    return m ? m->value : dflt;
}

/* The parts a bisect stage's diagnosis task names. */
static void s_diag_bisect(s_diag_t *d, const store_stage_t *stage, const store_task_t *task)
{
    d->bisect = true;
    for (size_t r = 0; r < task->n_results; r++) {
        const fb_result_t *res = task->results[r].result;
        if (res->n_findings == 0 || !res->findings[0].part)
            continue;
        const fb_finding_t *head = &res->findings[0];
        s_state_t state = fb_verdict_ok(res->verdict)
                              ? S_CLEARED
                              : (s_metric_or(res, "undecided", 0) > 0 ? S_UNDECIDED : S_BAD);
        s_suspect_t *sus = s_suspect(d, head->part, head->kind, state);
        double conf = s_metric_or(res, "confidence", 1.0);
        sus->confidence = conf > sus->confidence ? conf : sus->confidence;
        sus->summary = head->what;
        sus->bisect = true;
        if (!sus->stage)
            sus->stage = stage;
        for (size_t f = 1; f < res->n_findings; f++) {
            const fb_finding_t *ev = &res->findings[f];
            const char *id = ev->part ? ev->part : "";
            s_evidence_add(sus, (s_evidence_t){strmap_get(d->stage_of, id),
                                               strmap_get(d->tasks, id), id, res, ev->what});
        }
    }
}

/* The parts the findings of a failed task name. */
static void s_diag_findings(s_diag_t *d, const store_stage_t *stage, const store_task_t *task)
{
    for (size_t r = 0; r < task->n_results; r++) {
        const fb_result_t *res = task->results[r].result;
        for (size_t f = 0; f < res->n_findings; f++) {
            const fb_finding_t *fd = &res->findings[f];
            if (!fd->part)
                continue;
            s_suspect_t *sus = s_suspect(d, fd->part, fd->kind, S_BAD);
            if (!sus->stage)
                sus->stage = stage;
            sus->confidence = 1.0; /* the part named itself */
            s_evidence_add(sus, (s_evidence_t){stage, task, task->id, res, fd->what});
        }
    }
}

static void s_diag_build(s_diag_t *d, const store_campaign_t *c)
{
    memset(d, 0, sizeof *d);
    d->tasks = strmap_new();
    d->stage_of = strmap_new();
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
            strmap_put(d->tasks, c->stages[s].tasks[t].id, &c->stages[s].tasks[t]);
            strmap_put(d->stage_of, c->stages[s].tasks[t].id, &c->stages[s]);
        }
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *stage = &c->stages[s];
        for (size_t t = 0; t < stage->n_tasks; t++) {
            const store_task_t *task = &stage->tasks[t];
            if (s_is_diagnosis_task(stage, task))
                s_diag_bisect(d, stage, task);
            else if (!s_is_bisect(stage) && s_task_failed(task))
                s_diag_findings(d, stage, task);
        }
    }
}

static void s_diag_free(s_diag_t *d)
{
    for (size_t k = 0; k < d->n; k++)
        free(d->v[k].evidence);
    free(d->v);
    strmap_destroy(&d->tasks);
    strmap_destroy(&d->stage_of);
}

/* Whether part is also named bad (a part bad in one stage is not listed as cleared). */
static bool s_diag_bad(const s_diag_t *d, const char *part)
{
    for (size_t k = 0; k < d->n; k++)
        if (d->v[k].state == S_BAD && !strcmp(d->v[k].part, part))
            return true;
    return false;
}

/* Failed tasks no finding or diagnosis explains: a timeout, a lost node. In a bisect stage only
 * those that did not run to a verdict (its failures are what the diagnosis explains). */
static bool s_unattributed(const store_stage_t *stage, const store_task_t *task)
{
    if (!s_task_failed(task))
        return false;
    if (s_is_bisect(stage))
        return task->verdict != FB_VERDICT_FAIL;
    for (size_t r = 0; r < task->n_results; r++)
        if (task->results[r].result->n_findings > 0)
            return false;
    return true;
}

/* The node of a part ("n7", "n7/mlx5_0" -> n7), for telling partners from the part itself. */
static bool s_is_part_node(const char *part, const char *node)
{
    size_t n = strlen(node);
    return !strncmp(part, node, n) && (part[n] == '\0' || part[n] == '/');
}

static void s_json_partners(fb_json_t *j, const char *part, const store_task_t *task)
{
    fb_json_array_begin(j, "partners");
    for (size_t i = 0; task && i < task->n_nodes; i++)
        if (!s_is_part_node(part, task->nodes[i]))
            fb_json_string(j, NULL, task->nodes[i]);
    fb_json_array_end(j);
}

/* Every node the part was tested with, over its evidence, once. */
static void s_json_all_partners(fb_json_t *j, const s_suspect_t *sus)
{
    strmap_t *seen = strmap_new();
    fb_json_array_begin(j, "partners");
    for (size_t e = 0; e < sus->n_evidence; e++) {
        const store_task_t *task = sus->evidence[e].task;
        for (size_t i = 0; task && sus->bisect && i < task->n_nodes; i++) {
            if (s_is_part_node(sus->part, task->nodes[i]) || strmap_get(seen, task->nodes[i]))
                continue;
            strmap_put(seen, task->nodes[i], (void *)1);
            fb_json_string(j, NULL, task->nodes[i]);
        }
    }
    fb_json_array_end(j);
    strmap_destroy(&seen);
}

static void s_json_suspect(fb_json_t *j, const s_suspect_t *sus)
{
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "part", sus->part);
    fb_json_string(j, "kind", sus->kind);
    fb_json_number(j, "confidence", sus->confidence);
    fb_json_string(j, "method", sus->bisect ? "bisect" : "finding");
    fb_json_string(j, "stage", sus->stage ? sus->stage->name : NULL);
    fb_json_string(j, "summary", sus->summary);
    s_json_all_partners(j, sus);
    fb_json_array_begin(j, "evidence");
    for (size_t e = 0; e < sus->n_evidence; e++) {
        const s_evidence_t *ev = &sus->evidence[e];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "task", ev->task_id);
        fb_json_string(j, "stage", ev->stage ? ev->stage->name : NULL);
        fb_json_string(j, "node", ev->result->node);
        fb_json_string(j, "result_id", ev->result->result_id);
        if (ev->task)
            fb_json_string(j, "verdict", fb_verdict_name(ev->task->verdict));
        else
            fb_json_null(j, "verdict");
        fb_json_string(j, "what", ev->what);
        if (sus->bisect)
            s_json_partners(j, sus->part, ev->task);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
}

static void s_json_suspects(fb_json_t *j, const s_diag_t *d, const char *key, s_state_t state)
{
    fb_json_array_begin(j, key);
    for (size_t k = 0; k < d->n; k++)
        if (d->v[k].state == state && (state != S_CLEARED || !s_diag_bad(d, d->v[k].part)))
            s_json_suspect(j, &d->v[k]);
    fb_json_array_end(j);
}

/* The `diagnosis` object of docs/report-json.md. */
static void s_diagnosis(fb_json_t *j, const store_campaign_t *c)
{
    s_diag_t d;
    s_diag_build(&d, c);
    fb_json_object_begin(j, "diagnosis");
    fb_json_string(j, "method", d.bisect ? "findings+bisect" : "findings");
    s_json_suspects(j, &d, "bad", S_BAD);
    s_json_suspects(j, &d, "undecided", S_UNDECIDED);
    s_json_suspects(j, &d, "cleared", S_CLEARED);
    fb_json_array_begin(j, "unattributed");
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *stage = &c->stages[s];
        for (size_t t = 0; t < stage->n_tasks; t++) {
            const store_task_t *task = &stage->tasks[t];
            if (!s_unattributed(stage, task))
                continue;
            fb_json_object_begin(j, NULL);
            fb_json_string(j, "task", task->id);
            fb_json_string(j, "stage", stage->name);
            fb_json_array_begin(j, "nodes");
            for (size_t i = 0; i < task->n_nodes; i++)
                fb_json_string(j, NULL, task->nodes[i]);
            fb_json_array_end(j);
            fb_json_string(j, "verdict", fb_verdict_name(task->verdict));
            fb_json_string(j, "error", task->error);
            fb_json_object_end(j);
        }
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
    s_diag_free(&d);
}

/* ---- Fleet software versions ------------------------------------------------------------ */

/* Software versions of the campaign's nodes (from their inventories), to show components whose
 * version differs across the fleet: after an upgrade that reached only part of it, a regression
 * is often exactly that. Rows arrive ordered by component, version, node. */
typedef struct {
    char *component, *version, *node;
} s_sw_row_t;

typedef struct {
    s_sw_row_t *rows;
    size_t n, cap;
} s_software_t;

static int s_sw_add(const char *component, const char *version, const char *node, void *arg)
{
    s_software_t *sw = arg;
    if (!component || !version || !node)
        return 0;
    if (sw->n == sw->cap) {
        sw->cap = sw->cap ? sw->cap * 2 : 32;
        sw->rows = xrealloc(sw->rows, sw->cap * sizeof *sw->rows);
    }
    sw->rows[sw->n++] = (s_sw_row_t){xstrdup(component), xstrdup(version), xstrdup(node)};
    return 0;
}

static void s_sw_free(s_software_t *sw)
{
    for (size_t i = 0; i < sw->n; i++) {
        free(sw->rows[i].component);
        free(sw->rows[i].version);
        free(sw->rows[i].node);
    }
    free(sw->rows);
}

/* Index one past the last row of the component starting at i. */
static size_t s_sw_component_end(const s_software_t *sw, size_t i)
{
    size_t e = i;
    while (e < sw->n && !strcmp(sw->rows[e].component, sw->rows[i].component))
        e++;
    return e;
}

static bool s_sw_differs(const s_software_t *sw, size_t begin, size_t end)
{
    for (size_t k = begin + 1; k < end; k++)
        if (strcmp(sw->rows[k].version, sw->rows[begin].version))
            return true;
    return false;
}

static void s_json_fleet(fb_json_t *j, const s_software_t *sw)
{
    fb_json_object_begin(j, "fleet");
    fb_json_array_begin(j, "software");
    for (size_t i = 0; i < sw->n;) {
        size_t end = s_sw_component_end(sw, i);
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "component", sw->rows[i].component);
        fb_json_bool(j, "differs", s_sw_differs(sw, i, end));
        fb_json_array_begin(j, "versions");
        for (size_t k = i; k < end;) {
            fb_json_object_begin(j, NULL);
            fb_json_string(j, "version", sw->rows[k].version);
            fb_json_array_begin(j, "nodes");
            size_t v = k;
            for (; v < end && !strcmp(sw->rows[v].version, sw->rows[k].version); v++)
                fb_json_string(j, NULL, sw->rows[v].node);
            fb_json_array_end(j);
            fb_json_object_end(j);
            k = v;
        }
        fb_json_array_end(j);
        fb_json_object_end(j);
        i = end;
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
}

static char *s_json_report(const store_campaign_t *c, const s_software_t *sw)
{
    fb_json_t *j = fb_json_new(true);
    char now[40];
    size_t counts[FB_VERDICT_MAX + 1], total;
    s_count_tasks(c, counts, &total);

    fb_json_object_begin(j, NULL);
    fb_json_string(j, "format", "fleetburn-report");
    fb_json_int(j, "format_version", REPORT_JSON_FORMAT_VERSION);
    fb_json_string(j, "generator", "fleetburn " FB_VERSION);
    fb_json_string(j, "generated", fb_iso8601(fb_now_ms(), now, sizeof now));

    fb_json_object_begin(j, "campaign");
    fb_json_string(j, "id", c->id);
    fb_json_string(j, "name", c->name);
    fb_json_string(j, "source", c->source);
    fb_json_string(j, "state", c->state);
    fb_json_string(j, "verdict", report_campaign_verdict(c));
    if (c->verdict == FB_VERDICT_NONE)
        fb_json_null(j, "recorded_verdict");
    else
        fb_json_string(j, "recorded_verdict", fb_verdict_name(c->verdict));
    s_json_time(j, "started", c->started_ms);
    s_json_time(j, "finished", c->finished_ms);
    s_json_duration(j, "duration_ms", c->started_ms, c->finished_ms);
    fb_json_object_begin(j, "counts");
    fb_json_int(j, "stages", (int64_t)c->n_stages);
    fb_json_int(j, "tasks", (int64_t)total);
    for (int v = 0; v <= FB_VERDICT_MAX; v++)
        fb_json_int(j, fb_verdict_name((fb_verdict_t)v), (int64_t)counts[v]);
    fb_json_object_end(j);
    fb_json_object_end(j);

    fb_json_array_begin(j, "stages");
    for (size_t s = 0; s < c->n_stages; s++)
        s_json_stage(j, &c->stages[s]);
    fb_json_array_end(j);

    s_diagnosis(j, c);
    s_json_fleet(j, sw);
    fb_json_object_end(j);
    char *text = fb_json_take(j);
    fb_json_destroy(&j);
    return text;
}

int report_write_json(store_t *store, const char *campaign_id, FILE *out)
{
    store_campaign_t *c = NULL;
    int err = store_campaign_load(store, campaign_id, &c);
    if (err)
        return err;
    s_software_t sw = {0};
    store_software_foreach(store, campaign_id, s_sw_add, &sw);
    char *text = s_json_report(c, &sw);
    s_sw_free(&sw);
    store_campaign_destroy(&c);
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return s_finish_output(out);
}

/* ---- Text -------------------------------------------------------------------------------- */

/* A copy safe for a terminal: C0 and C1 control characters and DEL become '?', and at most max
 * characters (UTF-8 code points) are kept, the last one replaced by '~' when cut. */
static char *s_clean(const char *text, size_t max)
{
    if (!text)
        text = "";
    size_t len = strlen(text);
    char *out = xmalloc(len + 1);
    size_t o = 0, chars = 0;
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        bool start = (*p & 0xC0) != 0x80;
        if (start && chars == max) {
            /* Cut: replace the last character with '~'. */
            while (o > 0 && ((unsigned char)out[o - 1] & 0xC0) == 0x80)
                o--;
            if (o > 0)
                o--;
            out[o++] = '~';
            break;
        }
        if (start)
            chars++;
        if (*p < 0x20 || *p == 0x7F) {
            out[o++] = '?';
            p++;
        } else if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
            out[o++] = '?';
            p += 2;
        } else {
            out[o++] = (char)*p++;
        }
    }
    out[o] = '\0';
    return out;
}

/* Display width in characters (UTF-8 code points). */
static size_t s_width(const char *text)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

#define S_COLS_MAX 8

typedef struct {
    size_t n_cols;
    char **cells; /* n_rows * n_cols, cleaned */
    size_t n_rows;
} s_table_t;

static void s_table_row(s_table_t *t, const char *const *cols, const size_t *max)
{
    t->cells = xrealloc(t->cells, (t->n_rows + 1) * t->n_cols * sizeof *t->cells);
    for (size_t i = 0; i < t->n_cols; i++)
        t->cells[t->n_rows * t->n_cols + i] = s_clean(cols[i], max[i]);
    t->n_rows++;
}

static void s_table_print(s_table_t *t, FILE *out, const char *indent)
{
    size_t width[S_COLS_MAX] = {0};
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t i = 0; i < t->n_cols; i++) {
            size_t w = s_width(t->cells[r * t->n_cols + i]);
            if (w > width[i])
                width[i] = w;
        }
    for (size_t r = 0; r < t->n_rows; r++) {
        fputs(indent, out);
        for (size_t i = 0; i < t->n_cols; i++) {
            const char *cell = t->cells[r * t->n_cols + i];
            if (i + 1 == t->n_cols) {
                fputs(cell, out);
            } else {
                fputs(cell, out);
                fprintf(out, "%*s", (int)(width[i] - s_width(cell) + 2), "");
            }
        }
        fputc('\n', out);
    }
}

static void s_table_free(s_table_t *t)
{
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->n_rows = 0;
}

/* Metrics worth a column, in order of preference; other metrics fill up to S_KEY_METRICS. */
static const char *const s_key_metric_names[] = {
    "bandwidth_mbs", "busbw_gbs",   "algbw_gbs",     "bandwidth_gbs", "tflops",
    "gflops",        "miscompares", "edac_ce_delta", "edac_ue_delta", "errors",
};
#define S_KEY_METRICS 3

/* Integral values in full, large ones to one decimal, small ones to four significant digits. */
static void s_format_metric(char *buf, size_t len, const s_metric_t *m)
{
    const char *unit = m->unit ? m->unit : "";
    const char *sep = *unit ? " " : "";
    double v = m->value;
    if (!isfinite(v))
        snprintf(buf, len, "%s=n/a", m->key);
    else if (fabs(v) < 1e15 && v == floor(v))
        snprintf(buf, len, "%s=%.0f%s%s", m->key, v, sep, unit);
    else if (fabs(v) >= 100)
        snprintf(buf, len, "%s=%.1f%s%s", m->key, v, sep, unit);
    else
        snprintf(buf, len, "%s=%.4g%s%s", m->key, v, sep, unit);
}

static char *s_key_metrics(const store_task_t *task)
{
    s_metrics_t ms = {0};
    s_task_metrics(task, &ms);
    bool used[64] = {false};
    size_t picked[S_KEY_METRICS], n = 0;
    for (size_t k = 0; k < FB_ARRAY_LEN(s_key_metric_names) && n < S_KEY_METRICS; k++)
        for (size_t i = 0; i < ms.n && i < 64 && n < S_KEY_METRICS; i++)
            if (!used[i] &&
                (!strcmp(ms.items[i].key, s_key_metric_names[k]) ||
                 (!strncmp(ms.items[i].key, s_key_metric_names[k], strlen(s_key_metric_names[k])) &&
                  ms.items[i].key[strlen(s_key_metric_names[k])] == '@'))) {
                used[i] = true;
                picked[n++] = i;
            }
    if (n == 0)
        for (size_t i = 0; i < ms.n && i < 64 && n < 2; i++)
            picked[n++] = i;
    char *text = xstrdup(n ? "" : "-");
    for (size_t i = 0; i < n; i++) {
        char one[160];
        s_format_metric(one, sizeof one, &ms.items[picked[i]]);
        char *joined = xasprintf("%s%s%s", text, i ? ", " : "", one);
        free(text);
        text = joined;
    }
    s_metrics_free(&ms);
    return text;
}

static char *s_join_nodes(const store_task_t *task)
{
    if (task->n_nodes == 0)
        return xstrdup("-");
    if (task->n_nodes > 3)
        return xasprintf("%s,%s +%zu", task->nodes[0], task->nodes[1], task->n_nodes - 2);
    char *text = xstrdup("");
    for (size_t i = 0; i < task->n_nodes; i++) {
        char *joined = xasprintf("%s%s%s", text, i ? "," : "", task->nodes[i]);
        free(text);
        text = joined;
    }
    return text;
}

static void s_print_field(FILE *out, const char *label, const char *value)
{
    char *clean = s_clean(value, 200);
    fprintf(out, "%-10s%s\n", label, clean);
    free(clean);
}

/* The diagnosis for people: every bad and undecided part with its summary; the cleared ones
 * counted and named. */
static void s_text_diagnosis(const store_campaign_t *c, FILE *out)
{
    s_diag_t d;
    s_diag_build(&d, c);
    size_t cleared = 0;
    bool header = false;
    for (size_t k = 0; k < d.n; k++) {
        const s_suspect_t *sus = &d.v[k];
        if (sus->state == S_CLEARED) {
            cleared += !s_diag_bad(&d, sus->part);
            continue;
        }
        if (!header)
            fprintf(out, "\ndiagnosis\n");
        header = true;
        char *part = s_clean(sus->part, 64);
        char *why = s_clean(
            sus->summary ? sus->summary : (sus->n_evidence ? sus->evidence[0].what : ""), 240);
        char *kind = s_clean(sus->kind ? sus->kind : "?", 16);
        char *stage = s_clean(sus->stage && sus->stage->name ? sus->stage->name : "?", 64);
        fprintf(out, "  %-9s %-24s %-6s %.4f  %s  [%s]\n",
                sus->state == S_BAD ? "BAD" : "UNDECIDED", part, kind, sus->confidence, why, stage);
        free(kind);
        free(stage);
        free(part);
        free(why);
    }
    if (cleared) {
        if (!header)
            fprintf(out, "\ndiagnosis\n");
        fprintf(out, "  cleared   %zu suspect(s):", cleared);
        size_t shown = 0;
        for (size_t k = 0; k < d.n && shown < 12; k++)
            if (d.v[k].state == S_CLEARED && !s_diag_bad(&d, d.v[k].part)) {
                char *part = s_clean(d.v[k].part, 64);
                fprintf(out, " %s", part);
                free(part);
                shown++;
            }
        fprintf(out, "%s\n", cleared > shown ? " ..." : "");
    }
    s_diag_free(&d);
}

static void s_text_report(const store_campaign_t *c, FILE *out)
{
    char a[40], b[40], dur[32];
    const char *verdict = report_campaign_verdict(c);
    char *title = xasprintf("%s%s%s", c->id, c->name ? "  " : "", c->name ? c->name : "");
    s_print_field(out, "campaign", title);
    free(title);
    if (c->source)
        s_print_field(out, "source", c->source);
    char *line = xasprintf("%s (%s)",
                           !strcmp(verdict, "pass")   ? "PASS"
                           : !strcmp(verdict, "fail") ? "FAIL"
                                                      : "RUNNING",
                           c->state ? c->state : "?");
    s_print_field(out, "verdict", line);
    free(line);
    uint64_t end = c->finished_ms ? c->finished_ms : fb_now_ms();
    fb_format_duration(end >= c->started_ms ? end - c->started_ms : 0, dur, sizeof dur);
    line = xasprintf("%s .. %s, %s%s", fb_iso8601(c->started_ms, a, sizeof a),
                     c->finished_ms ? fb_iso8601(c->finished_ms, b, sizeof b) : "now", dur,
                     c->finished_ms ? "" : " so far");
    s_print_field(out, "time", line);
    free(line);

    size_t counts[FB_VERDICT_MAX + 1], total;
    s_count_tasks(c, counts, &total);
    char *tasks = xasprintf("%zu", total);
    for (int v = 1; v <= FB_VERDICT_MAX + 1; v++) {
        int vv = v <= FB_VERDICT_MAX ? v : FB_VERDICT_NONE; /* pending last */
        if (!counts[vv])
            continue;
        char *joined = xasprintf("%s%s %zu %s", tasks, strchr(tasks, ':') ? "," : ":", counts[vv],
                                 fb_verdict_name((fb_verdict_t)vv));
        free(tasks);
        tasks = joined;
    }
    s_print_field(out, "tasks", tasks);
    free(tasks);
    fputc('\n', out);

    /* The table: one row per task (one per stage without tasks). */
    static const size_t max[] = {24, 16, 32, 8, 72, 8};
    s_table_t table = {.n_cols = FB_ARRAY_LEN(max)};
    const char *header[] = {"STAGE", "WORKLOAD", "NODES", "VERDICT", "METRICS", "FINDINGS"};
    s_table_row(&table, header, max);
    size_t n_findings_total = 0, n_errors = 0;
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *stage = &c->stages[s];
        if (stage->n_tasks == 0) {
            const char *row[] = {
                stage->name, stage->workload,
                "-",         stage->verdict ? fb_verdict_name(stage->verdict) : "-",
                "-",         "-"};
            s_table_row(&table, row, max);
        }
        for (size_t t = 0; t < stage->n_tasks; t++) {
            const store_task_t *task = &stage->tasks[t];
            size_t nf = 0;
            for (size_t r = 0; r < task->n_results; r++)
                nf += task->results[r].result->n_findings;
            n_findings_total += nf;
            n_errors += task->error != NULL;
            char *nodes = s_join_nodes(task);
            char *metrics = s_key_metrics(task);
            char count[24];
            snprintf(count, sizeof count, "%zu", nf);
            const char *row[] = {stage->name, stage->workload,
                                 nodes,       fb_verdict_name(task->verdict),
                                 metrics,     count};
            s_table_row(&table, row, max);
            free(nodes);
            free(metrics);
        }
    }
    s_table_print(&table, out, "");
    s_table_free(&table);

    if (n_findings_total) {
        fprintf(out, "\nfindings\n");
        static const size_t fmax[] = {48, 10, 120, 40};
        s_table_t ft = {.n_cols = FB_ARRAY_LEN(fmax)};
        for (size_t s = 0; s < c->n_stages; s++)
            for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
                const store_task_t *task = &c->stages[s].tasks[t];
                for (size_t r = 0; r < task->n_results; r++) {
                    const fb_result_t *res = task->results[r].result;
                    for (size_t f = 0; f < res->n_findings; f++) {
                        if (res->findings[f].kind && !strcmp(res->findings[f].kind, "evidence"))
                            continue; /* cited under "diagnosis" */
                        char *where = xasprintf("task %s%s%s", task->id, res->node ? " on " : "",
                                                res->node ? res->node : "");
                        const char *row[] = {res->findings[f].part, res->findings[f].kind,
                                             res->findings[f].what, where};
                        s_table_row(&ft, row, fmax);
                        free(where);
                    }
                }
            }
        s_table_print(&ft, out, "  ");
        s_table_free(&ft);
    }
    s_text_diagnosis(c, out);
    if (n_errors) {
        fprintf(out, "\nwhy tasks did not pass (errors, timeouts, skips)\n");
        for (size_t s = 0; s < c->n_stages; s++)
            for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
                const store_task_t *task = &c->stages[s].tasks[t];
                if (!task->error)
                    continue;
                char *id = s_clean(task->id, 64);
                char *err = s_clean(task->error, 400);
                fprintf(out, "  %s (%s): %s\n", id, fb_verdict_name(task->verdict), err);
                free(id);
                free(err);
            }
    }
}

static void s_text_fleet(const s_software_t *sw, FILE *out)
{
    bool header = false;
    for (size_t i = 0; i < sw->n;) {
        size_t end = s_sw_component_end(sw, i);
        if (s_sw_differs(sw, i, end)) {
            if (!header)
                fprintf(out, "\nsoftware that differs across nodes\n");
            header = true;
            char *component = s_clean(sw->rows[i].component, 64);
            fprintf(out, "  %s:", component);
            free(component);
            for (size_t k = i; k < end;) {
                char *version = s_clean(sw->rows[k].version, 80);
                fprintf(out, "%s %s on", k == i ? "" : ";", version);
                free(version);
                size_t v = k;
                for (; v < end && !strcmp(sw->rows[v].version, sw->rows[k].version); v++) {
                    char *node = s_clean(sw->rows[v].node, 64);
                    fprintf(out, "%s %s", v == k ? "" : ",", node);
                    free(node);
                }
                k = v;
            }
            fputc('\n', out);
        }
        i = end;
    }
}

int report_write_text(store_t *store, const char *campaign_id, FILE *out)
{
    store_campaign_t *c = NULL;
    int err = store_campaign_load(store, campaign_id, &c);
    if (err)
        return err;
    s_text_report(c, out);
    s_software_t sw = {0};
    store_software_foreach(store, campaign_id, s_sw_add, &sw);
    s_text_fleet(&sw, out);
    s_sw_free(&sw);
    store_campaign_destroy(&c);
    return s_finish_output(out);
}

/* ---- Nodes ------------------------------------------------------------------------------- */

typedef struct {
    s_table_t table;
    uint64_t now_ms;
} s_nodes_t;

static void s_when(char *buf, size_t len, uint64_t ms, uint64_t now_ms)
{
    char iso[40], ago[32];
    if (!ms) {
        snprintf(buf, len, "never");
        return;
    }
    fb_iso8601(ms, iso, sizeof iso);
    iso[19] = '\0'; /* to the second */
    if (now_ms >= ms)
        snprintf(buf, len, "%sZ (%s ago)", iso, fb_format_duration(now_ms - ms, ago, sizeof ago));
    else
        snprintf(buf, len, "%sZ", iso);
}

static const size_t s_nodes_max[] = {40, 12, 40, 40, 100};

static int s_node_row(const store_agent_t *agent, void *arg)
{
    s_nodes_t *nodes = arg;
    char seen[96], since[96];
    s_when(seen, sizeof seen, agent->last_seen_ms, nodes->now_ms);
    s_when(since, sizeof since, agent->state_since_ms, nodes->now_ms);
    const char *row[] = {agent->name, agent->state, seen, since,
                         agent->summary ? agent->summary : "-"};
    s_table_row(&nodes->table, row, s_nodes_max);
    return 0;
}

int report_write_nodes(store_t *store, FILE *out)
{
    s_nodes_t nodes = {.table = {.n_cols = FB_ARRAY_LEN(s_nodes_max)}, .now_ms = fb_now_ms()};
    const char *header[] = {"NAME", "STATE", "LAST SEEN", "STATE SINCE", "SUMMARY"};
    s_table_row(&nodes.table, header, s_nodes_max);
    int err = store_agent_foreach(store, s_node_row, &nodes);
    if (!err) {
        if (nodes.table.n_rows == 1)
            fprintf(out, "no agent has registered yet\n");
        else
            s_table_print(&nodes.table, out, "");
    }
    s_table_free(&nodes.table);
    return err ? err : s_finish_output(out);
}
