/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn compare BASE CAMPAIGN`: every metric of the matching tasks of two stored campaigns,
 * judged by scheduler/regress.h, with what changed in the nodes' environment between them
 * (docs/regressions.md; the JSON in docs/report-json.md "compare").
 *
 * Stages match by name and workload; tasks by part: the node of a node task, the sorted members
 * of a pair or group task ("n1,n2"), so an allreduce group's per-size metrics match size by size.
 * Within a task of several nodes, a metric several members report is one value per member
 * ("netbw.tx_gbps@n1"); a part measured more than once in a stage (rounds that repeat a pair)
 * counts with the median of its values. Bisect follow-up tasks and diagnosis tasks are not
 * compared (who gets re-tested depends on what was suspected). Parts and stages found in one
 * campaign only are listed, not judged. */
#ifndef FB_COMPARE_H
#define FB_COMPARE_H

#include "store.h"
#include "scheduler/regress.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The version of the compare JSON ("format_version"). */
#define COMPARE_JSON_FORMAT_VERSION 1

/* One judged change: a part's metric, or (fleet_wide) a whole stage's metric family. */
typedef struct {
    size_t stage_index; /* in the compared campaign, for ordering */
    char *stage, *workload;
    char *part;          /* node, "n1,n2" (sorted members), or "fleet" */
    char *metric;        /* as compared ("netbw.tx_gbps@n1"); fleet-wide: the family ("gpu*.x") */
    char *unit;          /* "" when none */
    double base, now;    /* the values (fleet-wide: the medians of the fleet's values) */
    double change;       /* (now - base) / |base|; NaN when base is 0 */
    double fleet_change; /* the fleet's median change; NaN with fewer than FB_REGRESS_MIN_FLEET */
    size_t fleet_parts;  /* how many values the fleet of this metric had */
    bool by_fleet;       /* judged against the fleet (else on the tolerance alone) */
    bool fleet_wide;     /* the whole stage moved: reported once, not part by part */
    size_t parts_beyond; /* fleet-wide: values whose own change is beyond the tolerance */
    fb_regress_limits_t limits;
    bool from_campaign; /* the tolerance came from the campaign's regress: */
    char **nodes;       /* the nodes of the part (fleet-wide: of every part of the stage) */
    size_t n_nodes;
} compare_item_t;

/* One component that differs between the two campaigns on some nodes. */
typedef struct {
    char *component;
    char *base, *now; /* NULL where the node did not report it */
    char **nodes;     /* in node order */
    size_t n_nodes;
} compare_fp_change_t;

/* A part or a stage found in one campaign only. */
typedef struct {
    char *stage;
    char *part;   /* NULL: the whole stage */
    bool in_base; /* in the base only (else in the compared campaign only) */
} compare_unmatched_t;

/* A metric family judged on the tolerance alone (too few parts for the fleet to say anything). */
typedef struct {
    char *stage, *family;
    size_t n;
} compare_small_t;

/* A metric fleetburn has no rule for and the campaign's regress: does not name. */
typedef struct {
    char *name;   /* plain name (without @node) */
    size_t count; /* values skipped */
} compare_unknown_t;

/* A node in most of a stage's regressed multi-node parts (a pair stage's slow node). */
typedef struct {
    char *stage, *node;
    size_t regressed_parts, parts; /* regressed parts it is in, parts it is in */
    size_t stage_regressed;        /* regressed multi-node parts of the stage */
} compare_suspect_t;

typedef struct {
    char *id, *name, *state;
    uint64_t started_ms, finished_ms;
    const char *verdict; /* report_campaign_verdict */
} compare_campaign_t;

typedef struct compare {
    compare_campaign_t base, now;
    compare_item_t *regressions, *improvements; /* parts first by stage, fleet-wide among them */
    size_t n_regressions, n_improvements;
    compare_fp_change_t *fp_changes;
    size_t n_fp_changes;
    compare_unmatched_t *unmatched;
    size_t n_unmatched;
    compare_small_t *small;
    size_t n_small;
    compare_unknown_t *unknown;
    size_t n_unknown;
    compare_suspect_t *suspects;
    size_t n_suspects;
    size_t parts_compared, values_compared;
    char *regress_note; /* the compared campaign's regress: could not be read (why), or NULL */
} compare_t;

/* Compares campaign now_id with base_id. 0 with *out, -ENOENT when either campaign is unknown
 * (*error_out names it), or the store's error. */
int compare_campaigns(store_t *store, const char *base_id, const char *now_id, compare_t **out,
                      char **error_out);
void compare_destroy(compare_t **self_p);
/* Whether anything got worse (a part or the fleet). */
bool compare_has_regression(const compare_t *self);

/* The comparison for people: regressions, fleet-wide shifts with the fingerprint changes of their
 * nodes, improvements, what was not compared, and a summary line. -EIO when out fails. */
int compare_write_text(const compare_t *self, FILE *out);
/* The JSON document (docs/report-json.md "compare"). -EIO when out fails. */
int compare_write_json(const compare_t *self, FILE *out);

#endif
