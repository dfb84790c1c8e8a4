/* SPDX-License-Identifier: Apache-2.0 */
/* The headline figures of a task in the summary table (report_internal.h): each workload names,
 * in its schema (scheduler/workload.c, fb_headline_t), the few figures an operator looks for
 * first — TFLOPS and the share of the same-run peak, power, GiB tested and errors, busbw at the
 * largest size, per-direction Gb/s — as metric name patterns; here the matching metrics of each
 * result are combined (range or sum), scaled and labelled. Each node of a pair or group speaks
 * for itself, so that a pair's figures never come from whichever member answered last. */
#include "report_internal.h"
#include "scheduler/workload.h"
#include "util.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_number(char *buf, size_t len, double v)
{
    if (fabs(v) < 1e15 && v == floor(v))
        snprintf(buf, len, "%.0f", v);
    else if (fabs(v) >= 100)
        snprintf(buf, len, "%.1f", v);
    else
        snprintf(buf, len, "%.3g", v);
}

/* One figure of one result, appended to text; false when no metric matches. */
static bool s_figure(const fb_headline_t *h, const fb_result_t *r, char **text)
{
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    const char *unit = h->unit;
    size_t n = 0;
    for (size_t m = 0; m < r->n_metrics; m++) {
        const fb_metric_t *mt = &r->metrics[m];
        if (!mt->name || fnmatch(h->metric, mt->name, 0) || !isfinite(mt->value))
            continue;
        double v = mt->value * (h->scale ? h->scale : 1.0);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
        if (!unit)
            unit = mt->unit ? mt->unit : "";
        n++;
    }
    if (!n)
        return false;
    char a[32], b[32], value[80];
    if (h->agg == FB_HEADLINE_SUM) {
        s_number(value, sizeof value, sum);
    } else {
        s_number(a, sizeof a, lo);
        s_number(b, sizeof b, hi);
        if (!strcmp(a, b))
            snprintf(value, sizeof value, "%s", a);
        else
            snprintf(value, sizeof value, "%s..%s", a, b);
    }
    /* "power 612..640 W", "99..100% of same-run peak", "689..696 TFLOPS" */
    bool label_after = h->label[0] && (!strncmp(h->label, "of ", 3));
    char *figure = xasprintf("%s%s%s%s%s%s%s", label_after || !h->label[0] ? "" : h->label,
                             label_after || !h->label[0] ? "" : " ", value,
                             unit && *unit && strcmp(unit, "%") ? " " : "", unit ? unit : "",
                             label_after ? " " : "", label_after ? h->label : "");
    char *joined = xasprintf("%s%s%s", *text, **text ? ", " : "", figure);
    free(figure);
    free(*text);
    *text = joined;
    return true;
}

char *report__headline(const char *workload, const store_task_t *task)
{
    const fb_workload_spec_t *w = workload ? fb_workload_find(workload) : NULL;
    if (!w || !w->n_headline || !task->n_results)
        return NULL;
    char *all = xstrdup("");
    bool any = false;
    for (size_t i = 0; i < task->n_results; i++) {
        const fb_result_t *r = task->results[i].result;
        char *one = xstrdup("");
        bool found = false;
        for (size_t k = 0; k < w->n_headline; k++)
            found |= s_figure(&w->headline[k], r, &one);
        if (found) {
            char *joined = task->n_results > 1
                               ? xasprintf("%s%s%s: %s", all, any ? "; " : "",
                                           r->node ? r->node : "?", one)
                               : xasprintf("%s%s", all, one);
            free(all);
            all = joined;
            any = true;
        }
        free(one);
    }
    if (!any) {
        free(all);
        return NULL;
    }
    return all;
}
