/* SPDX-License-Identifier: Apache-2.0 */
/* The comparison written out (compare.h): a text for people, regressions first, then fleet-wide
 * shifts with the environment changes of their nodes beside them, then improvements, what was not
 * compared, and one summary line; and the JSON document of docs/report-json.md "compare". */
#include "compare.h"
#include "report.h"

#include "common/hostlist.h"
#include "common/json.h"
#include "common/util.h"
#include "scheduler/metricrules.h"
#include "scheduler/regress.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int s_finish(FILE *out)
{
    return fflush(out) || ferror(out) ? -EIO : 0;
}

/* ---- shared pieces ---- */

/* "+12.3%", "-99.1%"; "new" for a value that was 0 and is not now (no relative change). */
static const char *s_pct(double change, char *buf, size_t len)
{
    if (isnan(change))
        snprintf(buf, len, "from 0");
    else
        snprintf(buf, len, "%+.1f%%", change * 100);
    return buf;
}

static const char *s_value(double v, const char *unit, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.4g%s%s", v, unit && *unit ? " " : "", unit ? unit : "");
    return buf;
}

/* Whether node is one of names (sorted or not). */
static bool s_has(char *const *names, size_t n, const char *node)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], node))
            return true;
    return false;
}

/* The nodes of change c that are among names, as a heap hostlist, or NULL when none is. */
static char *s_fp_nodes_among(const compare_fp_change_t *c, char *const *names, size_t n)
{
    const char **hit = xcalloc(c->n_nodes ? c->n_nodes : 1, sizeof *hit);
    size_t k = 0;
    for (size_t i = 0; i < c->n_nodes; i++)
        if (!names || s_has(names, n, c->nodes[i]))
            hit[k++] = c->nodes[i];
    char *list = k ? fb_hostlist_compress(hit, k) : NULL;
    free(hit);
    return list;
}

/* Text from nodes (parts, metric names) with control characters shown as '?'. */
static char *s_clean(const char *s)
{
    char *out = xstrdup(s ? s : "");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return out;
}

/* ---- text: a small table writer ---- */

#define S_COLS 8

typedef struct {
    char *(*rows)[S_COLS];
    size_t n, cols;
} s_table_t;

static void s_row(s_table_t *t, ...)
{
    t->rows = xrealloc(t->rows, (t->n + 1) * sizeof *t->rows);
    va_list ap;
    va_start(ap, t);
    for (size_t c = 0; c < S_COLS; c++) {
        const char *v = c < t->cols ? va_arg(ap, const char *) : NULL;
        t->rows[t->n][c] = v ? s_clean(v) : NULL;
    }
    va_end(ap);
    t->n++;
}

static void s_table_print(s_table_t *t, FILE *out)
{
    size_t w[S_COLS] = {0};
    for (size_t r = 0; r < t->n; r++)
        for (size_t c = 0; c < t->cols; c++)
            if (t->rows[r][c] && strlen(t->rows[r][c]) > w[c])
                w[c] = strlen(t->rows[r][c]);
    for (size_t r = 0; r < t->n; r++) {
        for (size_t c = 0; c < t->cols; c++) {
            const char *v = t->rows[r][c] ? t->rows[r][c] : "";
            if (c + 1 == t->cols)
                fprintf(out, "%s\n", v);
            else
                fprintf(out, "%-*s  ", (int)w[c], v);
        }
        for (size_t c = 0; c < S_COLS; c++)
            free(t->rows[r][c]);
    }
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

/* "-0.4% of 12", or "tolerance (2)" where the fleet was too small to judge against. */
static const char *s_fleet_text(const compare_item_t *it, char *buf, size_t len)
{
    char pct[32];
    if (it->by_fleet)
        snprintf(buf, len, "%s of %zu", s_pct(it->fleet_change, pct, sizeof pct), it->fleet_parts);
    else
        snprintf(buf, len, "tolerance alone (%zu)", it->fleet_parts);
    return buf;
}

static void s_text_parts(const compare_item_t *items, size_t n, FILE *out)
{
    s_table_t t = {.cols = 7};
    s_row(&t, "STAGE", "PART", "METRIC", "BASE", "NOW", "CHANGE", "FLEET (median change of)");
    for (size_t i = 0; i < n; i++) {
        const compare_item_t *it = &items[i];
        char b[64], v[64], pct[32], fleet[64];
        s_row(&t, it->stage, it->fleet_wide ? "fleet (median)" : it->part, it->metric,
              s_value(it->base, it->unit, b, sizeof b), s_value(it->now, it->unit, v, sizeof v),
              s_pct(it->change, pct, sizeof pct), s_fleet_text(it, fleet, sizeof fleet));
    }
    s_table_print(&t, out);
}

static void s_text_suspects(const compare_t *c, FILE *out)
{
    for (size_t i = 0; i < c->n_suspects; i++) {
        const compare_suspect_t *s = &c->suspects[i];
        char *node = s_clean(s->node), *stage = s_clean(s->stage);
        fprintf(out,
                "  %s is in %zu of the %zu regressed parts of stage %s (in %zu parts in all)\n",
                node, s->regressed_parts, s->stage_regressed, stage, s->parts);
        free(node);
        free(stage);
    }
}

/* The environment changes on a fleet-wide shift's nodes, one line each. */
static void s_text_fp_beside(const compare_t *c, const compare_item_t *it, FILE *out)
{
    bool any = false;
    for (size_t i = 0; i < c->n_fp_changes; i++) {
        const compare_fp_change_t *f = &c->fp_changes[i];
        char *nodes = s_fp_nodes_among(f, it->nodes, it->n_nodes);
        if (!nodes)
            continue;
        char *comp = s_clean(f->component), *b = s_clean(f->base ? f->base : "(none)"),
             *n = s_clean(f->now ? f->now : "(none)");
        fprintf(out, "    %s %s %s -> %s on %s\n",
                any ? "               " : "since the base:", comp, b, n, nodes);
        free(comp);
        free(b);
        free(n);
        free(nodes);
        any = true;
    }
    if (!any)
        fprintf(out, "    no environment change on these nodes since the base: look at what "
                     "they share (load, cooling, power, the fabric)\n");
}

static void s_text_fleet(const compare_t *c, size_t n_fleet, FILE *out)
{
    fprintf(out,
            "\nFLEET-WIDE SHIFTS: %zu (the whole stage moved; its parts are not listed one "
            "by one)\n",
            n_fleet);
    for (size_t i = 0; i < c->n_regressions; i++) {
        const compare_item_t *it = &c->regressions[i];
        if (!it->fleet_wide)
            continue;
        char b[64], v[64], pct[32];
        char *stage = s_clean(it->stage), *metric = s_clean(it->metric);
        fprintf(out, "  stage %s: %s %s (median %s -> %s), %zu of %zu values worse than %g%%\n",
                stage, metric, s_pct(it->change, pct, sizeof pct),
                s_value(it->base, it->unit, b, sizeof b), s_value(it->now, it->unit, v, sizeof v),
                it->parts_beyond, it->fleet_parts, it->limits.tolerance * 100);
        s_text_fp_beside(c, it, out);
        free(stage);
        free(metric);
    }
}

/* Metrics judged on their tolerance alone, one line per stage (an allreduce group has a metric
 * per message size, each with one value), naming the first few. */
static void s_text_small(const compare_t *c, FILE *out)
{
    for (size_t i = 0; i < c->n_small;) {
        size_t end = i;
        while (end < c->n_small && !strcmp(c->small[end].stage, c->small[i].stage))
            end++;
        char *stage = s_clean(c->small[i].stage);
        if (end - i == 1)
            fprintf(out, "  stage %s: ", stage);
        else
            fprintf(out, "  stage %s: %zu metrics, ", stage, end - i);
        for (size_t k = i; k < end && k < i + 3; k++) {
            char *fam = s_clean(c->small[k].family);
            fprintf(out, "%s%s (%zu value(s))", k > i ? ", " : "", fam, c->small[k].n);
            free(fam);
        }
        fprintf(out,
                "%s judged on the tolerance alone: too few values for the fleet's spread to "
                "mean anything (at least %d)\n",
                end - i > 3 ? ", ..." : "", FB_REGRESS_MIN_FLEET);
        free(stage);
        i = end;
    }
}

static void s_text_not_compared(const compare_t *c, FILE *out)
{
    if (!c->n_unmatched && !c->n_small && !c->n_unknown && !c->regress_note)
        return;
    fprintf(out, "\nNOT COMPARED\n");
    for (size_t i = 0; i < c->n_unmatched; i++) {
        const compare_unmatched_t *u = &c->unmatched[i];
        char *stage = s_clean(u->stage), *part = s_clean(u->part);
        if (u->part)
            fprintf(out, "  stage %s: %s only in the %s\n", stage, part,
                    u->in_base ? "base" : "compared campaign");
        else
            fprintf(out, "  stage %s only in the %s\n", stage,
                    u->in_base ? "base" : "compared campaign");
        free(stage);
        free(part);
    }
    s_text_small(c, out);
    for (size_t i = 0; i < c->n_unknown; i++) {
        char *name = s_clean(c->unknown[i].name);
        fprintf(out,
                "  %s: no default rule (%zu value(s) skipped); name it in the campaign's "
                "regress: to compare it\n",
                name, c->unknown[i].count);
        free(name);
    }
    if (c->regress_note) {
        char *note = s_clean(c->regress_note);
        fprintf(out, "  the compared campaign: %s\n", note);
        free(note);
    }
}

static void s_text_head(const compare_t *c, FILE *out)
{
    const compare_campaign_t *h[2] = {&c->base, &c->now};
    const char *label[2] = {"base", "compared"};
    for (int i = 0; i < 2; i++) {
        char t[40];
        char *name = s_clean(h[i]->name ? h[i]->name : "-");
        fprintf(out, "%-9s %s  %s  started %s  %s (%s)\n", label[i], h[i]->id, name,
                fb_iso8601(h[i]->started_ms, t, sizeof t), h[i]->verdict,
                h[i]->state ? h[i]->state : "-");
        free(name);
    }
}

static size_t s_count_fleet(const compare_item_t *items, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += items[i].fleet_wide;
    return k;
}

/* The part items only, or the fleet-wide ones only, as a new array of copies (borrowed fields). */
static compare_item_t *s_select(const compare_item_t *items, size_t n, bool fleet, size_t *n_out)
{
    compare_item_t *sel = xcalloc(n ? n : 1, sizeof *sel);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].fleet_wide == fleet)
            sel[k++] = items[i];
    *n_out = k;
    return sel;
}

int compare_write_text(const compare_t *c, FILE *out)
{
    s_text_head(c, out);
    size_t n_fleet = s_count_fleet(c->regressions, c->n_regressions), n_parts;
    compare_item_t *parts = s_select(c->regressions, c->n_regressions, false, &n_parts);
    fprintf(out,
            "\nREGRESSIONS: %zu (worse than their tolerance, and standing out from the "
            "fleet where it has at least %d values)\n",
            n_parts, FB_REGRESS_MIN_FLEET);
    if (n_parts)
        s_text_parts(parts, n_parts, out);
    s_text_suspects(c, out);
    free(parts);
    if (n_fleet)
        s_text_fleet(c, n_fleet, out);
    fprintf(out, "\nIMPROVEMENTS: %zu\n", c->n_improvements);
    if (c->n_improvements)
        s_text_parts(c->improvements, c->n_improvements, out);
    if (c->n_fp_changes) {
        fprintf(out, "\nENVIRONMENT CHANGES (each node as it was when each campaign started)\n");
        for (size_t i = 0; i < c->n_fp_changes; i++) {
            const compare_fp_change_t *f = &c->fp_changes[i];
            char *nodes = s_fp_nodes_among(f, NULL, 0);
            char *comp = s_clean(f->component), *b = s_clean(f->base ? f->base : "(none)"),
                 *n = s_clean(f->now ? f->now : "(none)");
            fprintf(out, "  %s %s -> %s on %s\n", comp, b, n, nodes ? nodes : "");
            free(comp);
            free(b);
            free(n);
            free(nodes);
        }
    }
    s_text_not_compared(c, out);
    size_t n_unmatched_parts = 0;
    for (size_t i = 0; i < c->n_unmatched; i++)
        n_unmatched_parts += c->unmatched[i].part != NULL;
    fprintf(out,
            "\nsummary: %s: %zu regression(s) of parts, %zu fleet-wide, %zu improvement(s); "
            "%zu values of %zu parts compared%s%s\n",
            compare_has_regression(c) ? "REGRESSION" : "no regression", n_parts, n_fleet,
            c->n_improvements, c->values_compared, c->parts_compared,
            n_unmatched_parts ? ", some parts in one campaign only" : "",
            c->n_fp_changes ? ", environment changed" : "");
    return s_finish(out);
}

/* ---- JSON ---- */

static void s_json_campaign(fb_json_t *j, const char *key, const compare_campaign_t *h)
{
    fb_json_object_begin(j, key);
    fb_json_string(j, "id", h->id);
    fb_json_string(j, "name", h->name);
    fb_json_string(j, "state", h->state);
    fb_json_string(j, "verdict", h->verdict);
    fb_json_time(j, "started", h->started_ms);
    fb_json_time(j, "finished", h->finished_ms);
    fb_json_object_end(j);
}

static void s_json_fp_change(fb_json_t *j, const compare_fp_change_t *f, char *const *among,
                             size_t n_among)
{
    char *list = s_fp_nodes_among(f, among, n_among);
    if (!list)
        return;
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "component", f->component);
    fb_json_string(j, "base", f->base);
    fb_json_string(j, "now", f->now);
    fb_json_string(j, "nodes", list);
    fb_json_object_end(j);
    free(list);
}

static void s_json_item(fb_json_t *j, const compare_t *c, const compare_item_t *it)
{
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "stage", it->stage);
    fb_json_string(j, "workload", it->workload);
    fb_json_string(j, "part", it->part);
    fb_json_string(j, "metric", it->metric);
    fb_json_string(j, "unit", it->unit);
    fb_json_number(j, "base", it->base);
    fb_json_number(j, "now", it->now);
    fb_json_number(j, "change", it->change);
    fb_json_number(j, "fleet_change", it->fleet_change);
    fb_json_int(j, "fleet_values", (int64_t)it->fleet_parts);
    fb_json_string(j, "judged_by", it->by_fleet ? "fleet" : "tolerance");
    fb_json_bool(j, "fleet_wide", it->fleet_wide);
    if (it->fleet_wide)
        fb_json_int(j, "values_beyond_tolerance", (int64_t)it->parts_beyond);
    else
        fb_json_null(j, "values_beyond_tolerance");
    fb_json_number(j, "tolerance", it->limits.tolerance);
    fb_json_number(j, "min_delta", it->limits.min_delta);
    fb_json_string(j, "better", fb_better_name(it->limits.better));
    fb_json_string(j, "tolerance_from", it->from_campaign ? "campaign" : "default");
    fb_json_array_begin(j, "nodes");
    for (size_t i = 0; i < it->n_nodes; i++)
        fb_json_string(j, NULL, it->nodes[i]);
    fb_json_array_end(j);
    if (it->fleet_wide) {
        fb_json_array_begin(j, "fingerprint_changes");
        for (size_t i = 0; i < c->n_fp_changes; i++)
            s_json_fp_change(j, &c->fp_changes[i], it->nodes, it->n_nodes);
        fb_json_array_end(j);
    }
    fb_json_object_end(j);
}

static void s_json_items(fb_json_t *j, const compare_t *c, const char *key,
                         const compare_item_t *items, size_t n)
{
    fb_json_array_begin(j, key);
    for (size_t i = 0; i < n; i++)
        s_json_item(j, c, &items[i]);
    fb_json_array_end(j);
}

static void s_json_not_compared(fb_json_t *j, const compare_t *c)
{
    fb_json_object_begin(j, "not_compared");
    fb_json_array_begin(j, "only_in_one");
    for (size_t i = 0; i < c->n_unmatched; i++) {
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "stage", c->unmatched[i].stage);
        fb_json_string(j, "part", c->unmatched[i].part);
        fb_json_string(j, "in", c->unmatched[i].in_base ? "base" : "campaign");
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_array_begin(j, "tolerance_only");
    for (size_t i = 0; i < c->n_small; i++) {
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "stage", c->small[i].stage);
        fb_json_string(j, "metric", c->small[i].family);
        fb_json_int(j, "values", (int64_t)c->small[i].n);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_array_begin(j, "unknown_metrics");
    for (size_t i = 0; i < c->n_unknown; i++) {
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "metric", c->unknown[i].name);
        fb_json_int(j, "values", (int64_t)c->unknown[i].count);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_string(j, "note", c->regress_note);
    fb_json_object_end(j);
}

int compare_write_json(const compare_t *c, FILE *out)
{
    fb_json_t *j = fb_json_new(true);
    report_json_begin(j, "fleetburn-compare", COMPARE_JSON_FORMAT_VERSION);
    fb_json_string(j, "verdict", compare_has_regression(c) ? "regression" : "no regression");
    s_json_campaign(j, "base", &c->base);
    s_json_campaign(j, "campaign", &c->now);
    s_json_items(j, c, "regressions", c->regressions, c->n_regressions);
    s_json_items(j, c, "improvements", c->improvements, c->n_improvements);
    fb_json_array_begin(j, "fingerprint_changes");
    for (size_t i = 0; i < c->n_fp_changes; i++)
        s_json_fp_change(j, &c->fp_changes[i], NULL, 0);
    fb_json_array_end(j);
    fb_json_array_begin(j, "suspects");
    for (size_t i = 0; i < c->n_suspects; i++) {
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "stage", c->suspects[i].stage);
        fb_json_string(j, "node", c->suspects[i].node);
        fb_json_int(j, "regressed_parts", (int64_t)c->suspects[i].regressed_parts);
        fb_json_int(j, "parts", (int64_t)c->suspects[i].parts);
        fb_json_int(j, "stage_regressed_parts", (int64_t)c->suspects[i].stage_regressed);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    s_json_not_compared(j, c);
    fb_json_object_begin(j, "counts");
    fb_json_int(j, "parts", (int64_t)c->parts_compared);
    fb_json_int(j, "values", (int64_t)c->values_compared);
    fb_json_int(j, "regressions", (int64_t)c->n_regressions);
    fb_json_int(j, "improvements", (int64_t)c->n_improvements);
    fb_json_object_end(j);
    fb_json_object_end(j);
    char *text = fb_json_take(j);
    fb_json_destroy(&j);
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return s_finish(out);
}
