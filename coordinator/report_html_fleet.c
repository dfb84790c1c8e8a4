/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report's fleet views: where each node stands in each stage, drawn so that it stays
 * readable at a thousand nodes and more. The node x stage heatmap is small multiples, one panel
 * per stage with every node at the same place in each panel (so a node that fails everywhere is
 * the same dot in every panel), a tooltip per node, and no labels that would grow with the fleet.
 * The outliers of each stage are listed (failed nodes, and passing nodes whose headline metric
 * lies far below the stage's median by the robust score of scheduler/robust.h), capped with "and
 * N more". The timeline of tasks per node shows every node of a small fleet and only the nodes
 * of interest of a large one, so no section becomes a 1000-row wall. */
#include "report_html_internal.h"
#include "scheduler/robust.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Heatmap geometry: cells per row and cell size in pixels. */
#define S_HM_COLS 50
#define S_HM_CELL 8
/* Timeline geometry. */
#define S_TL_ROW 16
#define S_TL_LABEL 150
#define S_TL_WIDTH 1100

/* ---- Headline metrics ---------------------------------------------------------------------- */

typedef struct {
    const char *workload;
    const char *metrics[3]; /* the first one a result has is used */
    bool higher_better;
} s_headline_t;

static const s_headline_t s_headlines[] = {
    {"memtest", {"bandwidth_mbs"}, true},
    {"gpuburn", {"tflops_median"}, true},
    {"allreduce", {"allreduce.peak_busbw_gbs", "allreduce.busbw_gbs"}, true},
    {"netbw", {"netbw.tx_gbps"}, true},
    {"rdmabw", {"rdmabw.tx_gbps"}, true},
};

static const s_headline_t *s_headline_of(const char *workload)
{
    for (size_t i = 0; workload && i < sizeof s_headlines / sizeof s_headlines[0]; i++)
        if (!strcmp(s_headlines[i].workload, workload))
            return &s_headlines[i];
    return NULL;
}

const char *report__html_headline(const char *workload, bool *higher_better)
{
    const s_headline_t *hl = s_headline_of(workload);
    if (higher_better)
        *higher_better = !hl || hl->higher_better;
    return hl ? hl->metrics[0] : NULL;
}

/* The headline value a result reports, and which name it had (NaN: none). */
static double s_result_headline(const s_headline_t *hl, const fb_result_t *r, const char **name)
{
    for (size_t k = 0; hl && k < 3 && hl->metrics[k]; k++) {
        const fb_metric_t *m = fb_result_metric(r, hl->metrics[k]);
        if (m && isfinite(m->value)) {
            *name = hl->metrics[k];
            return m->value;
        }
    }
    return NAN;
}

/* ---- The per-node model ------------------------------------------------------------------ */

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool s_is_diagnosis(const store_task_t *t)
{
    size_t n = strlen(t->id);
    return n > 10 && !strcmp(t->id + n - 10, "/diagnosis");
}

/* Severity for "worst verdict": pass < skipped < pending < lost/timeout/error/fail. */
static int s_severity(fb_verdict_t v)
{
    static const int sev[FB_VERDICT_MAX + 1] = {
        [FB_VERDICT_NONE] = 3, [FB_VERDICT_PASS] = 1,  [FB_VERDICT_SKIPPED] = 2,
        [FB_VERDICT_FAIL] = 7, [FB_VERDICT_ERROR] = 6, [FB_VERDICT_TIMEOUT] = 5,
        [FB_VERDICT_LOST] = 4,
    };
    return (int)v >= 0 && v <= FB_VERDICT_MAX ? sev[v] : 6;
}

static void s_collect_names(report_html_t *h)
{
    size_t cap = 64, n = 0;
    const char **names = xmalloc(cap * sizeof *names);
    for (size_t s = 0; s < h->c->n_stages; s++) {
        const store_stage_t *st = &h->c->stages[s];
        for (size_t t = 0; t < st->n_tasks; t++)
            for (size_t i = 0; i < st->tasks[t].n_nodes; i++) {
                if (n == cap)
                    names = xrealloc(names, (cap *= 2) * sizeof *names);
                names[n++] = st->tasks[t].nodes[i];
            }
    }
    qsort(names, n, sizeof *names, s_cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(names[u - 1], names[i]))
            names[u++] = names[i];
    size_t ns = h->c->n_stages ? h->c->n_stages : 1;
    h->nodes = xcalloc(u ? u : 1, sizeof *h->nodes);
    h->n_nodes = u;
    for (size_t i = 0; i < u; i++) {
        h->nodes[i].name = names[i];
        h->nodes[i].verdicts = xcalloc(ns, sizeof *h->nodes[i].verdicts);
        h->nodes[i].in_stage = xcalloc(ns, sizeof *h->nodes[i].in_stage);
        h->nodes[i].cleared = xcalloc(ns, sizeof *h->nodes[i].cleared);
        h->nodes[i].values = xmalloc(ns * sizeof(double));
        h->nodes[i].scores = xmalloc(ns * sizeof(double));
        for (size_t s = 0; s < ns; s++)
            h->nodes[i].values[s] = h->nodes[i].scores[s] = NAN;
    }
    free(names);
}

static report_html_node_t *s_node(report_html_t *h, const char *name)
{
    size_t lo = 0, hi = h->n_nodes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(h->nodes[mid].name, name);
        if (!c)
            return &h->nodes[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Verdicts and mean headline values of every node in stage s. */
static void s_stage_nodes(report_html_t *h, size_t s)
{
    const store_stage_t *st = &h->c->stages[s];
    const s_headline_t *hl = s_headline_of(st->workload);
    for (size_t t = 0; t < st->n_tasks; t++) {
        const store_task_t *task = &st->tasks[t];
        if (s_is_diagnosis(task))
            continue;
        for (size_t i = 0; i < task->n_nodes; i++) {
            report_html_node_t *nd = s_node(h, task->nodes[i]);
            if (!nd)
                continue;
            if (!nd->in_stage[s] || s_severity(task->verdict) > s_severity(nd->verdicts[s]))
                nd->verdicts[s] = task->verdict;
            nd->in_stage[s] = true;
        }
        for (size_t r = 0; r < task->n_results; r++) {
            const fb_result_t *res = task->results[r].result;
            const char *name = NULL;
            double v = s_result_headline(hl, res, &name);
            report_html_node_t *nd = res->node ? s_node(h, res->node) : NULL;
            if (!nd || !isfinite(v))
                continue;
            if (!h->headline[s])
                h->headline[s] = name;
            nd->values[s] = isfinite(nd->values[s]) ? nd->values[s] + v : v;
            nd->scores[s] = isfinite(nd->scores[s]) ? nd->scores[s] + 1 : 1; /* a count, for now */
        }
    }
}

/* Turns each node's sum of values into its mean and scores it against the stage. */
static void s_stage_scores(report_html_t *h, size_t s)
{
    bool higher_better = true;
    report__html_headline(h->c->stages[s].workload, &higher_better);
    double *vals = xmalloc((h->n_nodes ? h->n_nodes : 1) * sizeof *vals);
    size_t n = 0;
    for (size_t i = 0; i < h->n_nodes; i++) {
        report_html_node_t *nd = &h->nodes[i];
        if (isfinite(nd->values[s])) {
            nd->values[s] /= nd->scores[s];
            vals[n++] = higher_better ? nd->values[s] : -nd->values[s];
        }
        nd->scores[s] = NAN;
    }
    double med = fb_robust_median(vals, n), mad = fb_robust_mad(vals, n);
    for (size_t i = 0; i < h->n_nodes && n >= 3; i++) {
        report_html_node_t *nd = &h->nodes[i];
        if (isfinite(nd->values[s]))
            nd->scores[s] =
                fb_robust_score_from(higher_better ? nd->values[s] : -nd->values[s], med, mad);
    }
    free(vals);
}

static bool s_outlier(const report_html_node_t *nd, size_t s)
{
    return isfinite(nd->scores[s]) && nd->scores[s] >= REPORT_HTML_OUTLIER_SCORE;
}

static bool s_failed(fb_verdict_t v)
{
    return v != FB_VERDICT_NONE && !fb_verdict_ok(v);
}

/* Whether the diagnosis took node out of suspicion (cleared by its own passes, or passed: its
 * failed tests were each explained by another part) and names it bad nowhere. */
static bool s_diag_cleared(const report_html_t *h, const char *node)
{
    if (report__diag_bad(&h->diag, node))
        return false;
    for (size_t k = 0; k < h->diag.n; k++)
        if ((h->diag.v[k].state == REPORT_CLEARED || h->diag.v[k].state == REPORT_PASSED) &&
            !strcmp(h->diag.v[k].part, node))
            return true;
    return false;
}

/* In a stage with on_fail: bisect, a node that failed only with partners and was then cleared
 * or passed by the diagnosis is not a failure to look at: its cell says so, and it is not listed
 * as an outlier. */
static void s_stage_cleared(report_html_t *h, size_t s)
{
    const store_stage_t *st = &h->c->stages[s];
    if (!st->on_fail || strcmp(st->on_fail, "bisect"))
        return;
    for (size_t i = 0; i < h->n_nodes; i++)
        h->nodes[i].cleared[s] =
            s_failed(h->nodes[i].verdicts[s]) && s_diag_cleared(h, h->nodes[i].name);
}

/* A failure to look at: failed in the stage and not cleared afterwards. */
static bool s_flagged(const report_html_node_t *nd, size_t s)
{
    return s_failed(nd->verdicts[s]) && !nd->cleared[s];
}

void report__html_nodes_build(report_html_t *h)
{
    s_collect_names(h);
    h->headline = xcalloc(h->c->n_stages ? h->c->n_stages : 1, sizeof *h->headline);
    for (size_t s = 0; s < h->c->n_stages; s++) {
        s_stage_nodes(h, s);
        s_stage_scores(h, s);
        s_stage_cleared(h, s);
        for (size_t i = 0; i < h->n_nodes; i++)
            h->nodes[i].of_interest |= s_flagged(&h->nodes[i], s) || s_outlier(&h->nodes[i], s);
    }
}

void report__html_nodes_free(report_html_t *h)
{
    for (size_t i = 0; i < h->n_nodes; i++) {
        free(h->nodes[i].verdicts);
        free(h->nodes[i].in_stage);
        free(h->nodes[i].cleared);
        free(h->nodes[i].values);
        free(h->nodes[i].scores);
    }
    free(h->nodes);
    free(h->headline);
    h->nodes = NULL;
    h->headline = NULL;
    h->n_nodes = 0;
}

/* ---- Heatmap ----------------------------------------------------------------------------- */

static void s_heat_cell(report_html_t *h, size_t i, size_t s, bool present)
{
    const report_html_node_t *nd = &h->nodes[i];
    int x = (int)(i % S_HM_COLS) * (S_HM_CELL + 1), y = (int)(i / S_HM_COLS) * (S_HM_CELL + 1);
    const char *cls = !present         ? "v-absent"
                      : nd->cleared[s] ? "v-cleared"
                      : s_outlier(nd, s) && !s_failed(nd->verdicts[s])
                          ? "v-out"
                          : report__html_verdict_class(nd->verdicts[s]);
    fprintf(h->out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"%s\"><title>", x, y,
            S_HM_CELL, S_HM_CELL, cls);
    report__html_text(h->out, nd->name);
    if (present) {
        fprintf(h->out, " %s%s", report__html_verdict_name(nd->verdicts[s]),
                nd->cleared[s] ? " with a partner; the diagnosis found it not at fault" : "");
        if (isfinite(nd->values[s]))
            fprintf(h->out, ", %.4g", nd->values[s]);
        if (isfinite(nd->scores[s]) && nd->scores[s] > 0)
            fprintf(h->out, " (%.1f robust sd below the median)", nd->scores[s]);
    } else {
        fputs(" not in this stage", h->out);
    }
    fputs("</title></rect>", h->out);
}

static void s_heat_panel(report_html_t *h, size_t s)
{
    const store_stage_t *st = &h->c->stages[s];
    size_t rows = (h->n_nodes + S_HM_COLS - 1) / S_HM_COLS;
    int w = S_HM_COLS * (S_HM_CELL + 1), hgt = (int)(rows ? rows : 1) * (S_HM_CELL + 1);
    fputs("<figure class=\"chart\"><figcaption>", h->out);
    report__html_text(h->out, st->name);
    fputs(" <span class=\"muted\">", h->out);
    report__html_text(h->out, st->workload);
    fprintf(h->out,
            "</span></figcaption><svg class=\"plot hm\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\">",
            w, hgt, w, hgt);
    for (size_t i = 0; i < h->n_nodes; i++)
        s_heat_cell(h, i, s, h->nodes[i].in_stage[s]);
    fputs("</svg></figure>", h->out);
}

static void s_heat_legend(FILE *out)
{
    static const struct {
        const char *cls, *what;
    } items[] = {{"v-pass", "pass"},
                 {"v-out", "passed, outlier"},
                 {"v-cleared", "failed with a partner, not at fault"},
                 {"v-fail", "fail"},
                 {"v-error", "error"},
                 {"v-timeout", "timeout"},
                 {"v-lost", "lost"},
                 {"v-skipped", "skipped"},
                 {"v-none", "pending"},
                 {"v-absent", "not in stage"}};
    fputs("<p class=\"muted\">", out);
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        fprintf(out,
                "<svg class=\"legendbox\" viewBox=\"0 0 10 10\"><rect width=\"10\" "
                "height=\"10\" class=\"%s\"/></svg>%s",
                items[i].cls, items[i].what);
    fprintf(out, " &middot; nodes in name order, %d per row; hover a cell for its node</p>",
            S_HM_COLS);
}

/* ---- Outliers ---------------------------------------------------------------------------- */

static void s_outlier_row(report_html_t *h, size_t s, const report_html_node_t *nd)
{
    FILE *out = h->out;
    fputs("<tr><td>", out);
    report__html_text(out, h->c->stages[s].name);
    fputs("</td><td class=\"part\">", out);
    report__html_text(out, nd->name);
    fprintf(out, "</td><td><span class=\"badge %s\">%s</span></td>",
            s_flagged(nd, s) ? report__html_verdict_class(nd->verdicts[s]) : "v-out",
            s_flagged(nd, s) ? report__html_verdict_name(nd->verdicts[s]) : "outlier");
    if (isfinite(nd->values[s]))
        fprintf(out, "<td class=\"num\">%.*f</td>", fabs(nd->values[s]) >= 100 ? 0 : 3,
                nd->values[s]);
    else
        fputs("<td class=\"num\">-</td>", out);
    if (isfinite(nd->scores[s]))
        fprintf(out, "<td class=\"num\">%.1f</td></tr>", nd->scores[s]);
    else
        fputs("<td class=\"num\">-</td></tr>", out);
}

static void s_outliers(report_html_t *h)
{
    FILE *out = h->out;
    fputs("<h3>Outliers</h3><table id=\"outliers\"><tr><th>stage</th><th>node</th><th>why</th>"
          "<th>headline value</th><th>robust sd below median</th></tr>",
          out);
    size_t listed = 0;
    for (size_t s = 0; s < h->c->n_stages; s++) {
        size_t n = 0, more = 0;
        for (size_t i = 0; i < h->n_nodes; i++) {
            const report_html_node_t *nd = &h->nodes[i];
            if (!s_flagged(nd, s) && !s_outlier(nd, s))
                continue;
            if (n++ < REPORT_HTML_OUTLIERS_MAX)
                s_outlier_row(h, s, nd);
            else
                more++;
        }
        if (more) {
            fprintf(out, "<tr><td>");
            report__html_text(out, h->c->stages[s].name);
            fprintf(out, "</td><td colspan=\"4\" class=\"muted\">and %zu more</td></tr>", more);
        }
        listed += n;
    }
    fputs("</table>", out);
    if (!listed)
        fputs("<p class=\"muted\" id=\"outliers-none\">No node failed or stood out.</p>", out);
}

void report__html_fleet(report_html_t *h)
{
    FILE *out = h->out;
    fprintf(out, "<section id=\"fleet\"><h2>Fleet: %zu node%s &times; %zu stage%s</h2>",
            h->n_nodes, h->n_nodes == 1 ? "" : "s", h->c->n_stages, h->c->n_stages == 1 ? "" : "s");
    if (!h->n_nodes || !h->c->n_stages) {
        fputs("<p class=\"muted\">No tasks yet.</p></section>\n", out);
        return;
    }
    s_heat_legend(out);
    fputs("<div id=\"fleet-heatmap\">", out);
    for (size_t s = 0; s < h->c->n_stages; s++)
        s_heat_panel(h, s);
    fputs("</div>", out);
    s_outliers(h);
    fputs("</section>\n", out);
}

/* ---- Timeline ---------------------------------------------------------------------------- */

static void s_tl_bar(report_html_t *h, const store_stage_t *st, const store_task_t *t, int row,
                     uint64_t t0, double scale)
{
    uint64_t end = t->finished_ms ? t->finished_ms : fb_now_ms();
    if (!t->started_ms || end < t->started_ms)
        return;
    double x = S_TL_LABEL + (double)(t->started_ms - t0) * scale;
    double w = (double)(end - t->started_ms) * scale;
    char dur[32];
    fprintf(h->out,
            "<rect class=\"bar %s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\">"
            "<title>",
            report__html_verdict_class(t->verdict), x, row * S_TL_ROW + 22, w < 1 ? 1 : w,
            S_TL_ROW - 4);
    report__html_text(h->out, st->name);
    fputs(" ", h->out);
    report__html_text(h->out, t->id);
    fprintf(h->out, ": %s, %s", report__html_verdict_name(t->verdict),
            report__html_duration(end - t->started_ms, dur, sizeof dur));
    if (t->error) {
        fputs(": ", h->out);
        report__html_text(h->out, t->error);
    }
    fputs("</title></rect>", h->out);
}

static bool s_task_has(const store_task_t *t, const char *node)
{
    for (size_t k = 0; k < t->n_nodes; k++)
        if (!strcmp(t->nodes[k], node))
            return true;
    return false;
}

static void s_tl_axis(report_html_t *h, uint64_t span, double scale, int height)
{
    /* Past the table (campaigns of more than 10 days), whole days. */
    double step_s = 86400 * ceil((double)span / 1000.0 / 86400 / 10);
    static const double steps[] = {0.01, 0.02, 0.05, 0.1,  0.2,   0.5,   1,     2,
                                   5,    10,   15,   30,   60,    120,   300,   600,
                                   900,  1800, 3600, 7200, 10800, 21600, 43200, 86400};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if ((double)span / 1000.0 / steps[i] <= 10) {
            step_s = steps[i];
            break;
        }
    char label[32];
    for (int k = 0; k * step_s * 1000 <= (double)span && k <= 20; k++) {
        double t = k * step_s;
        double x = S_TL_LABEL + t * 1000 * scale;
        if (step_s < 0.1) /* campaigns of a second or less (simulated fleets): milliseconds */
            snprintf(label, sizeof label, "%.0f ms", t * 1000);
        else
            report__html_duration((uint64_t)(t * 1000), label, sizeof label);
        fprintf(h->out,
                "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"18\" y2=\"%d\"/>"
                "<text class=\"tick\" x=\"%.1f\" y=\"12\" text-anchor=\"middle\">%s</text>",
                x, x, height, x, label);
    }
}

void report__html_timeline(report_html_t *h)
{
    FILE *out = h->out;
    uint64_t t0 = h->c->started_ms, t1 = h->c->finished_ms ? h->c->finished_ms : fb_now_ms();
    bool all = h->n_nodes <= REPORT_HTML_ROWS_MAX;
    size_t rows = 0, interesting = 0;
    for (size_t i = 0; i < h->n_nodes; i++)
        interesting += h->nodes[i].of_interest;
    rows = all                                  ? h->n_nodes
           : interesting < REPORT_HTML_ROWS_MAX ? interesting
                                                : REPORT_HTML_ROWS_MAX;
    fputs("<section id=\"timeline\"><h2>Timeline of tasks per node</h2>", out);
    if (!all)
        fprintf(out,
                "<p class=\"muted\">%zu nodes: shown are the %zu that failed or stood out"
                "%s; <code>fleetburn report --format json</code> has every task.</p>",
                h->n_nodes, rows, interesting > rows ? " (the first of them by name)" : "");
    if (!rows || t1 <= t0) {
        fputs("<p class=\"muted\">Nothing to draw.</p></section>\n", out);
        return;
    }
    int height = 22 + (int)rows * S_TL_ROW + 4;
    double scale = (double)(S_TL_WIDTH - S_TL_LABEL - 10) / (double)(t1 - t0);
    fprintf(out,
            "<svg class=\"plot\" id=\"timeline-svg\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\">",
            S_TL_WIDTH, height, S_TL_WIDTH, height);
    s_tl_axis(h, t1 - t0, scale, height);
    int row = 0;
    for (size_t i = 0; i < h->n_nodes && (size_t)row < rows; i++) {
        if (!all && !h->nodes[i].of_interest)
            continue;
        fprintf(out,
                "<rect class=\"lane\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
                "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">",
                S_TL_LABEL, row * S_TL_ROW + 21, S_TL_WIDTH - S_TL_LABEL - 10, S_TL_ROW - 2,
                S_TL_LABEL - 6, row * S_TL_ROW + 32);
        report__html_text(out, h->nodes[i].name);
        fputs("</text>", out);
        for (size_t s = 0; s < h->c->n_stages; s++)
            for (size_t t = 0; t < h->c->stages[s].n_tasks; t++)
                if (s_task_has(&h->c->stages[s].tasks[t], h->nodes[i].name))
                    s_tl_bar(h, &h->c->stages[s], &h->c->stages[s].tasks[t], row, t0, scale);
        row++;
    }
    fputs("</svg></section>\n", out);
}
