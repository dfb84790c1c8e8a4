/* SPDX-License-Identifier: Apache-2.0 */
/* How each metric a workload reports is compared with a baseline: which way is better, the
 * default tolerance, the smallest absolute change worth judging, and whether the per-GPU or
 * per-port instances of a node form one fleet. One table (metricrules.c) for every workload;
 * docs/regressions.md lists it with the reasons. A campaign's regress: entries
 * (regress_config.h) override it metric by metric. Pure. */
#ifndef FB_METRICRULES_H
#define FB_METRICRULES_H

#include "regress.h"
#include "regress_config.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *glob; /* fnmatch pattern over the metric name; the first row that matches wins */
    bool compared;    /* false: configuration or bookkeeping (seed, passes), never compared */
    fb_better_t better;
    double tolerance; /* fraction */
    double min_delta; /* in the metric's unit */
    bool pooled;      /* every name the glob matches is judged as one fleet (gpu0.x, gpu1.x ...) */
} fb_metric_rule_t;

/* The default table, in match order. */
const fb_metric_rule_t *fb_metric_rules(size_t *n);
/* The first default row whose glob matches name, or NULL. */
const fb_metric_rule_t *fb_metric_rule_find(const char *name);

typedef enum {
    FB_METRIC_COMPARED = 0,
    FB_METRIC_NOT_COMPARED, /* a row says so, or the campaign wrote off */
    FB_METRIC_UNKNOWN,      /* no row and no regress: entry: skipped and counted */
} fb_metric_use_t;

typedef struct {
    fb_metric_use_t use;
    fb_regress_limits_t limits;
    const char *family; /* what the fleet is formed over: a pooled row's glob, else name; borrowed
                           from the table or from the name passed in */
    const fb_regress_entry_t *entry; /* the campaign's entry that applied, or NULL */
} fb_metric_plan_t;

/* How name (a metric name without "@node") is compared under the campaign's regress: entries
 * (cfg may be NULL): the campaign's first matching entry sets the tolerance (and the direction,
 * when it names one; a metric with no row and no direction in the entry changes for the worse
 * either way) or turns it off; otherwise the default row; otherwise the metric is unknown. */
void fb_metric_plan(const fb_regress_config_t *cfg, const char *name, fb_metric_plan_t *out);

/* "higher", "lower", "either". */
const char *fb_better_name(fb_better_t better);

#endif
