/* SPDX-License-Identifier: Apache-2.0 */
/* Two stored campaigns side by side (compare.h): what each stage measured, part by part; the
 * changes judged metric family by metric family (scheduler/regress.h, with the defaults of
 * scheduler/metricrules.h and the compared campaign's regress:); and what changed in the nodes'
 * environment between the two. The output is compare_out.c. */
#include "compare.h"

#include "report.h"
#include "common/strmap.h"
#include "common/util.h"
#include "scheduler/metricrules.h"
#include "scheduler/regress_config.h"
#include "scheduler/robust.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- growing arrays ---- */

/* Appends one zeroed element of size sz to *arr (of *n); returns it. */
static void *s_push(void *arr_p, size_t *n, size_t sz)
{
    void **arr = arr_p;
    *arr = xrealloc(*arr, (*n + 1) * sz);
    void *e = (char *)*arr + *n * sz;
    memset(e, 0, sz);
    (*n)++;
    return e;
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **s_dup_names(char *const *names, size_t n)
{
    char **out = xcalloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(names[i]);
    return out;
}

static void s_free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- what one stage of one campaign measured, by part and metric ---- */

typedef struct {
    char *part; /* "node" or "n1,n2" */
    char *key;  /* the metric as compared: "name" or "name@node" */
    char *name; /* the metric's own name */
    char *unit;
    char **nodes; /* the part's members, sorted (borrowed from the part's first cell) */
    size_t n_nodes;
    double *values;
    size_t n_values;
    double value; /* the median of values */
} s_cell_t;

typedef struct {
    s_cell_t **cells; /* in the order measured */
    size_t n_cells;
    fb_strmap_t *by_key;  /* "part\037key" -> cell */
    fb_strmap_t *parts;   /* part -> its first cell's nodes holder (s_cell_t *) */
    char **part_names; /* in the order measured */
    size_t n_parts;
} s_measure_t;

/* Bisect follow-ups ("<campaign>/<stage>/b3.g1") and the diagnosis task: who gets re-tested
 * depends on what was suspected, so they do not match anything in another campaign. */
static bool s_task_compared(const char *id)
{
    const char *last = strrchr(id, '/');
    last = last ? last + 1 : id;
    if (!strcmp(last, "diagnosis"))
        return false;
    if (last[0] != 'b' || !isdigit((unsigned char)last[1]))
        return true;
    const char *p = last + 1;
    while (isdigit((unsigned char)*p))
        p++;
    if (p[0] != '.' || p[1] != 'g' || !isdigit((unsigned char)p[2]))
        return true;
    for (p += 2; isdigit((unsigned char)*p); p++)
        ;
    return *p != '\0';
}

/* Only measurements: a pass, or a fail (a slow part fails its own floor and is the news). */
static bool s_result_used(const fb_result_t *r)
{
    return r->verdict == FB_VERDICT_PASS || r->verdict == FB_VERDICT_FAIL;
}

static s_cell_t *s_cell(s_measure_t *m, const char *part, char **nodes, size_t n_nodes,
                        const char *key, const char *name, const char *unit)
{
    char *mapkey = xasprintf("%s\037%s", part, key);
    s_cell_t *c = fb_strmap_get(m->by_key, mapkey);
    if (!c) {
        c = xcalloc(1, sizeof *c);
        c->part = xstrdup(part);
        c->key = xstrdup(key);
        c->name = xstrdup(name);
        c->unit = xstrdup(unit ? unit : "");
        s_cell_t *first = fb_strmap_get(m->parts, part);
        if (!first) {
            c->nodes = s_dup_names(nodes, n_nodes);
            c->n_nodes = n_nodes;
            fb_strmap_put(m->parts, part, c);
            *(char **)s_push(&m->part_names, &m->n_parts, sizeof(char *)) = xstrdup(part);
        } else {
            c->nodes = s_dup_names(first->nodes, first->n_nodes);
            c->n_nodes = first->n_nodes;
        }
        fb_strmap_put(m->by_key, mapkey, c);
        *(s_cell_t **)s_push(&m->cells, &m->n_cells, sizeof(s_cell_t *)) = c;
    }
    free(mapkey);
    return c;
}

/* The metrics of one task: a metric several members report is one value per member. */
static void s_measure_task(s_measure_t *m, const store_task_t *t)
{
    if (t->n_nodes == 0 || !s_task_compared(t->id))
        return;
    char **nodes = s_dup_names(t->nodes, t->n_nodes);
    qsort(nodes, t->n_nodes, sizeof *nodes, s_cmp_str);
    size_t len = 1;
    for (size_t i = 0; i < t->n_nodes; i++)
        len += strlen(nodes[i]) + 1;
    char *part = xcalloc(1, len);
    for (size_t i = 0; i < t->n_nodes; i++) {
        if (i)
            strcat(part, ",");
        strcat(part, nodes[i]);
    }
    fb_strmap_t *reporters = fb_strmap_new(); /* metric name -> how many results report it */
    for (size_t r = 0; r < t->n_results; r++) {
        const fb_result_t *res = t->results[r].result;
        for (size_t k = 0; s_result_used(res) && k < res->n_metrics; k++) {
            const char *name = res->metrics[k].name;
            fb_strmap_put(reporters, name, (void *)((size_t)fb_strmap_get(reporters, name) + 1));
        }
    }
    for (size_t r = 0; r < t->n_results; r++) {
        const fb_result_t *res = t->results[r].result;
        for (size_t k = 0; s_result_used(res) && k < res->n_metrics; k++) {
            const fb_metric_t *mt = &res->metrics[k];
            if (!isfinite(mt->value))
                continue;
            bool per_member = t->n_nodes > 1 && (size_t)fb_strmap_get(reporters, mt->name) > 1;
            char *key = per_member ? xasprintf("%s@%s", mt->name, res->node ? res->node : "?")
                                   : xstrdup(mt->name);
            s_cell_t *c = s_cell(m, part, nodes, t->n_nodes, key, mt->name, mt->unit);
            c->values = xrealloc(c->values, (c->n_values + 1) * sizeof *c->values);
            c->values[c->n_values++] = mt->value;
            free(key);
        }
    }
    fb_strmap_destroy(&reporters);
    free(part);
    s_free_names(nodes, t->n_nodes);
}

static void s_measure(s_measure_t *m, const store_stage_t *st)
{
    memset(m, 0, sizeof *m);
    m->by_key = fb_strmap_new();
    m->parts = fb_strmap_new();
    for (size_t i = 0; i < st->n_tasks; i++)
        s_measure_task(m, &st->tasks[i]);
    for (size_t i = 0; i < m->n_cells; i++) {
        s_cell_t *c = m->cells[i];
        c->value = fb_robust_median(c->values, c->n_values);
    }
}

static void s_measure_fini(s_measure_t *m)
{
    for (size_t i = 0; i < m->n_cells; i++) {
        s_cell_t *c = m->cells[i];
        free(c->part);
        free(c->key);
        free(c->name);
        free(c->unit);
        s_free_names(c->nodes, c->n_nodes);
        free(c->values);
        free(c);
    }
    free(m->cells);
    s_free_names(m->part_names, m->n_parts);
    fb_strmap_destroy(&m->by_key);
    fb_strmap_destroy(&m->parts);
}

static s_cell_t *s_find_cell(const s_measure_t *m, const s_cell_t *like)
{
    char *mapkey = xasprintf("%s\037%s", like->part, like->key);
    s_cell_t *c = fb_strmap_get(m->by_key, mapkey);
    free(mapkey);
    return c;
}

/* ---- judging one stage ---- */

/* The values of one metric family in one stage, base and now side by side. */
typedef struct {
    const char *family;
    fb_regress_limits_t limits;
    bool from_campaign;
    const s_cell_t **base, **now;
    size_t n;
} s_family_t;

typedef struct {
    compare_t *out;
    size_t stage_index;
    const store_stage_t *stage;
    const fb_regress_config_t *cfg;
    s_measure_t base, now;
    s_family_t *families;
    size_t n_families;
    fb_strmap_t *family_index; /* family -> index + 1 */
} s_stage_cmp_t;

static void s_unknown(compare_t *out, const char *name)
{
    for (size_t i = 0; i < out->n_unknown; i++)
        if (!strcmp(out->unknown[i].name, name)) {
            out->unknown[i].count++;
            return;
        }
    compare_unknown_t *u = s_push(&out->unknown, &out->n_unknown, sizeof *u);
    u->name = xstrdup(name);
    u->count = 1;
}

static void s_add_pair(s_stage_cmp_t *sc, const s_cell_t *b, const s_cell_t *n)
{
    fb_metric_plan_t plan;
    fb_metric_plan(sc->cfg, n->name, &plan);
    if (plan.use == FB_METRIC_UNKNOWN) {
        s_unknown(sc->out, n->name);
        return;
    }
    if (plan.use != FB_METRIC_COMPARED)
        return;
    size_t idx = (size_t)fb_strmap_get(sc->family_index, plan.family);
    if (!idx) {
        s_family_t *f = s_push(&sc->families, &sc->n_families, sizeof *f);
        f->family = plan.family; /* the cell's name or the table's glob: both outlive f */
        f->limits = plan.limits;
        f->from_campaign = plan.entry != NULL;
        idx = sc->n_families;
        fb_strmap_put(sc->family_index, f->family, (void *)idx);
    }
    s_family_t *f = &sc->families[idx - 1];
    f->base = xrealloc(f->base, (f->n + 1) * sizeof *f->base);
    f->now = xrealloc(f->now, (f->n + 1) * sizeof *f->now);
    f->base[f->n] = b;
    f->now[f->n] = n;
    f->n++;
    sc->out->values_compared++;
}

static compare_item_t *s_item(s_stage_cmp_t *sc, bool worse)
{
    compare_t *o = sc->out;
    compare_item_t *it = worse ? s_push(&o->regressions, &o->n_regressions, sizeof *it)
                               : s_push(&o->improvements, &o->n_improvements, sizeof *it);
    it->stage_index = sc->stage_index;
    it->stage = xstrdup(sc->stage->name ? sc->stage->name : "");
    it->workload = xstrdup(sc->stage->workload ? sc->stage->workload : "");
    return it;
}

static void s_item_fleet(compare_item_t *it, const s_family_t *f, const fb_regress_fleet_t *fl)
{
    it->fleet_change = fl->by_fleet ? fl->median : NAN;
    it->fleet_parts = fl->n;
    it->by_fleet = fl->by_fleet;
    it->limits = f->limits;
    it->from_campaign = f->from_campaign;
}

/* The nodes of every part of the compared campaign's stage, sorted, once each. */
static char **s_stage_nodes(const s_measure_t *m, size_t *n_out)
{
    char **all = NULL;
    size_t n = 0;
    for (size_t i = 0; i < m->n_parts; i++) {
        const s_cell_t *c = fb_strmap_get(m->parts, m->part_names[i]);
        for (size_t k = 0; c && k < c->n_nodes; k++)
            *(char **)s_push(&all, &n, sizeof(char *)) = xstrdup(c->nodes[k]);
    }
    if (n)
        qsort(all, n, sizeof *all, s_cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && !strcmp(all[u - 1], all[i]))
            free(all[i]);
        else
            all[u++] = all[i];
    }
    *n_out = u;
    return all;
}

static void s_judge_family(s_stage_cmp_t *sc, const s_family_t *f)
{
    double *base = xmalloc(f->n * sizeof *base), *now = xmalloc(f->n * sizeof *now);
    fb_call_t *calls = xmalloc(f->n * sizeof *calls);
    for (size_t i = 0; i < f->n; i++) {
        base[i] = f->base[i]->value;
        now[i] = f->now[i]->value;
    }
    fb_regress_fleet_t fl;
    fb_regress_judge(&f->limits, base, now, f->n, &fl, calls);
    for (size_t i = 0; i < f->n; i++) {
        if (calls[i] == FB_CALL_SAME)
            continue;
        compare_item_t *it = s_item(sc, calls[i] == FB_CALL_WORSE);
        const s_cell_t *c = f->now[i];
        it->part = xstrdup(c->part);
        it->metric = xstrdup(c->key);
        it->unit = xstrdup(c->unit);
        it->base = base[i];
        it->now = now[i];
        it->change = base[i] == 0 ? NAN : (now[i] - base[i]) / fabs(base[i]);
        it->nodes = s_dup_names(c->nodes, c->n_nodes);
        it->n_nodes = c->n_nodes;
        s_item_fleet(it, f, &fl);
    }
    if (fl.shift != FB_CALL_SAME) {
        compare_item_t *it = s_item(sc, fl.shift == FB_CALL_WORSE);
        it->part = xstrdup("fleet");
        it->metric = xstrdup(f->family);
        it->unit = xstrdup(f->now[0]->unit);
        it->base = fl.base_median;
        it->now = fl.now_median;
        it->change = fl.median;
        it->fleet_wide = true;
        it->parts_beyond = fl.shift == FB_CALL_WORSE ? fl.n_worse : fl.n_better;
        it->nodes = s_stage_nodes(&sc->now, &it->n_nodes);
        s_item_fleet(it, f, &fl);
    }
    if (!fl.by_fleet) {
        compare_small_t *s = s_push(&sc->out->small, &sc->out->n_small, sizeof *s);
        s->stage = xstrdup(sc->stage->name ? sc->stage->name : "");
        s->family = xstrdup(f->family);
        s->n = f->n;
    }
    free(base);
    free(now);
    free(calls);
}

static void s_unmatched(compare_t *out, const char *stage, const char *part, bool in_base)
{
    compare_unmatched_t *u = s_push(&out->unmatched, &out->n_unmatched, sizeof *u);
    u->stage = xstrdup(stage ? stage : "");
    u->part = part ? xstrdup(part) : NULL;
    u->in_base = in_base;
}

/* Parts of one side that the other does not have. */
static void s_unmatched_parts(compare_t *out, const char *stage, const s_measure_t *have,
                              const s_measure_t *other, bool in_base)
{
    for (size_t i = 0; i < have->n_parts; i++)
        if (!fb_strmap_get(other->parts, have->part_names[i]))
            s_unmatched(out, stage, have->part_names[i], in_base);
}

/* A node in at least two regressed multi-node parts of the stage, and in more than half of them:
 * the likely cause of its pairs' regressions. */
static void s_suspects(s_stage_cmp_t *sc, size_t first_item)
{
    compare_t *o = sc->out;
    char **parts = NULL; /* regressed multi-node parts of this stage, once each */
    size_t n_parts = 0;
    for (size_t i = first_item; i < o->n_regressions; i++) {
        const compare_item_t *it = &o->regressions[i];
        bool seen = it->fleet_wide || it->n_nodes < 2;
        for (size_t k = 0; k < n_parts && !seen; k++)
            seen = !strcmp(parts[k], it->part);
        if (!seen)
            *(const char **)s_push(&parts, &n_parts, sizeof(char *)) = it->part;
    }
    size_t n_nodes = 0;
    char **nodes = s_stage_nodes(&sc->now, &n_nodes);
    for (size_t k = 0; n_parts >= 2 && k < n_nodes; k++) {
        size_t in_regressed = 0, in_parts = 0;
        for (size_t i = 0; i < n_parts; i++) {
            const s_cell_t *c = fb_strmap_get(sc->now.parts, parts[i]);
            for (size_t j = 0; c && j < c->n_nodes; j++)
                in_regressed += !strcmp(c->nodes[j], nodes[k]);
        }
        for (size_t i = 0; i < sc->now.n_parts; i++) {
            const s_cell_t *c = fb_strmap_get(sc->now.parts, sc->now.part_names[i]);
            for (size_t j = 0; c && c->n_nodes > 1 && j < c->n_nodes; j++)
                in_parts += !strcmp(c->nodes[j], nodes[k]);
        }
        if (in_regressed >= 2 && 2 * in_regressed > n_parts) {
            compare_suspect_t *s = s_push(&o->suspects, &o->n_suspects, sizeof *s);
            s->stage = xstrdup(sc->stage->name ? sc->stage->name : "");
            s->node = xstrdup(nodes[k]);
            s->regressed_parts = in_regressed;
            s->parts = in_parts;
            s->stage_regressed = n_parts;
        }
    }
    s_free_names(nodes, n_nodes);
    free(parts);
}

static void s_compare_stage(compare_t *out, size_t idx, const store_stage_t *bs,
                            const store_stage_t *ns, const fb_regress_config_t *cfg)
{
    s_stage_cmp_t sc = {.out = out, .stage_index = idx, .stage = ns, .cfg = cfg};
    s_measure(&sc.base, bs);
    s_measure(&sc.now, ns);
    sc.family_index = fb_strmap_new();
    s_unmatched_parts(out, ns->name, &sc.base, &sc.now, true);
    s_unmatched_parts(out, ns->name, &sc.now, &sc.base, false);
    for (size_t i = 0; i < sc.now.n_parts; i++)
        out->parts_compared += fb_strmap_get(sc.base.parts, sc.now.part_names[i]) != NULL;
    for (size_t i = 0; i < sc.now.n_cells; i++) {
        const s_cell_t *n = sc.now.cells[i], *b = s_find_cell(&sc.base, n);
        if (b)
            s_add_pair(&sc, b, n);
    }
    size_t first_regression = out->n_regressions;
    for (size_t i = 0; i < sc.n_families; i++)
        s_judge_family(&sc, &sc.families[i]);
    s_suspects(&sc, first_regression);
    for (size_t i = 0; i < sc.n_families; i++) {
        free(sc.families[i].base);
        free(sc.families[i].now);
    }
    free(sc.families);
    fb_strmap_destroy(&sc.family_index);
    s_measure_fini(&sc.base);
    s_measure_fini(&sc.now);
}

/* Stages match by name and workload. */
static const store_stage_t *s_find_stage(const store_campaign_t *c, const store_stage_t *like)
{
    for (size_t i = 0; i < c->n_stages; i++) {
        const store_stage_t *s = &c->stages[i];
        if (s->name && like->name && !strcmp(s->name, like->name) && s->workload &&
            like->workload && !strcmp(s->workload, like->workload))
            return s;
    }
    return NULL;
}

static void s_compare_stages(compare_t *out, const store_campaign_t *base,
                             const store_campaign_t *now, const fb_regress_config_t *cfg)
{
    for (size_t i = 0; i < now->n_stages; i++) {
        const store_stage_t *b = s_find_stage(base, &now->stages[i]);
        if (b)
            s_compare_stage(out, i, b, &now->stages[i], cfg);
        else
            s_unmatched(out, now->stages[i].name, NULL, false);
    }
    for (size_t i = 0; i < base->n_stages; i++)
        if (!s_find_stage(now, &base->stages[i]))
            s_unmatched(out, base->stages[i].name, NULL, true);
}

/* ---- what changed in the nodes' environment ---- */

typedef struct {
    char *node, *component, *version;
} s_fp_row_t;

typedef struct {
    s_fp_row_t *rows;
    size_t n;
} s_fp_rows_t;

static int s_fp_collect(const char *node, const char *component, const char *version, void *arg)
{
    s_fp_rows_t *r = arg;
    s_fp_row_t *row = s_push(&r->rows, &r->n, sizeof *row);
    row->node = xstrdup(node ? node : "");
    row->component = xstrdup(component ? component : "");
    row->version = xstrdup(version ? version : "");
    return 0;
}

static void s_fp_rows_free(s_fp_rows_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->rows[i].node);
        free(r->rows[i].component);
        free(r->rows[i].version);
    }
    free(r->rows);
}

static void s_fp_change(compare_t *out, const char *component, const char *base, const char *now,
                        const char *node)
{
    compare_fp_change_t *c = NULL;
    for (size_t i = 0; i < out->n_fp_changes && !c; i++) {
        compare_fp_change_t *x = &out->fp_changes[i];
        if (!strcmp(x->component, component) &&
            !strcmp(x->base ? x->base : "\001", base ? base : "\001") &&
            !strcmp(x->now ? x->now : "\001", now ? now : "\001"))
            c = x;
    }
    if (!c) {
        c = s_push(&out->fp_changes, &out->n_fp_changes, sizeof *c);
        c->component = xstrdup(component);
        c->base = base ? xstrdup(base) : NULL;
        c->now = now ? xstrdup(now) : NULL;
    }
    *(char **)s_push(&c->nodes, &c->n_nodes, sizeof(char *)) = xstrdup(node);
}

/* Each side's rows keyed "node\037component" -> version; nodes of both campaigns only. */
static void s_fp_diff(compare_t *out, const s_fp_rows_t *b, const s_fp_rows_t *n)
{
    fb_strmap_t *bmap = fb_strmap_new(), *nmap = fb_strmap_new(), *bnodes = fb_strmap_new(),
             *nnodes = fb_strmap_new();
    for (size_t i = 0; i < b->n; i++) {
        char *k = xasprintf("%s\037%s", b->rows[i].node, b->rows[i].component);
        fb_strmap_put(bmap, k, b->rows[i].version);
        fb_strmap_put(bnodes, b->rows[i].node, b->rows[i].node);
        free(k);
    }
    for (size_t i = 0; i < n->n; i++) {
        char *k = xasprintf("%s\037%s", n->rows[i].node, n->rows[i].component);
        fb_strmap_put(nmap, k, n->rows[i].version);
        fb_strmap_put(nnodes, n->rows[i].node, n->rows[i].node);
        free(k);
    }
    for (size_t i = 0; i < n->n; i++) {
        const s_fp_row_t *r = &n->rows[i];
        if (!fb_strmap_get(bnodes, r->node))
            continue;
        char *k = xasprintf("%s\037%s", r->node, r->component);
        const char *was = fb_strmap_get(bmap, k);
        if (!was || strcmp(was, r->version))
            s_fp_change(out, r->component, was, r->version, r->node);
        free(k);
    }
    for (size_t i = 0; i < b->n; i++) {
        const s_fp_row_t *r = &b->rows[i];
        char *k = xasprintf("%s\037%s", r->node, r->component);
        if (fb_strmap_get(nnodes, r->node) && !fb_strmap_get(nmap, k))
            s_fp_change(out, r->component, r->version, NULL, r->node);
        free(k);
    }
    for (size_t i = 0; i < out->n_fp_changes; i++)
        qsort(out->fp_changes[i].nodes, out->fp_changes[i].n_nodes, sizeof(char *), s_cmp_str);
    fb_strmap_destroy(&bmap);
    fb_strmap_destroy(&nmap);
    fb_strmap_destroy(&bnodes);
    fb_strmap_destroy(&nnodes);
}

static int s_fingerprints(store_t *store, compare_t *out)
{
    s_fp_rows_t b = {0}, n = {0};
    int rc = store_node_fingerprint_foreach(store, out->base.id, s_fp_collect, &b);
    if (!rc)
        rc = store_node_fingerprint_foreach(store, out->now.id, s_fp_collect, &n);
    if (!rc)
        s_fp_diff(out, &b, &n);
    s_fp_rows_free(&b);
    s_fp_rows_free(&n);
    return rc;
}

/* ---- entry points ---- */

static void s_campaign_head(compare_campaign_t *h, const store_campaign_t *c)
{
    h->id = xstrdup(c->id);
    h->name = c->name ? xstrdup(c->name) : NULL;
    h->state = c->state ? xstrdup(c->state) : NULL;
    h->started_ms = c->started_ms;
    h->finished_ms = c->finished_ms;
    h->verdict = report_campaign_verdict(c);
}

int compare_campaigns(store_t *store, const char *base_id, const char *now_id, compare_t **out,
                      char **error_out)
{
    *out = NULL;
    *error_out = NULL;
    store_campaign_t *base = NULL, *now = NULL;
    int rc = store_campaign_load(store, base_id, &base);
    if (rc == -ENOENT)
        *error_out = xasprintf("no campaign '%s'", base_id);
    if (!rc) {
        rc = store_campaign_load(store, now_id, &now);
        if (rc == -ENOENT)
            *error_out = xasprintf("no campaign '%s'", now_id);
    }
    if (rc) {
        if (!*error_out)
            *error_out = xasprintf("cannot read the campaigns: %s", store_errmsg(store));
        store_campaign_destroy(&base);
        return rc;
    }
    compare_t *c = xcalloc(1, sizeof *c);
    s_campaign_head(&c->base, base);
    s_campaign_head(&c->now, now);
    fb_regress_config_t *cfg = NULL;
    char *err = NULL;
    if (now->yaml &&
        fb_regress_config_from_text(now->yaml, strlen(now->yaml), now->source, &cfg, &err)) {
        c->regress_note = xasprintf("its regress: tolerances could not be read (%s); the defaults "
                                    "apply",
                                    err ? err : "unknown error");
        free(err);
    }
    s_compare_stages(c, base, now, cfg);
    fb_regress_config_destroy(&cfg);
    store_campaign_destroy(&base);
    store_campaign_destroy(&now);
    rc = s_fingerprints(store, c);
    if (rc) {
        *error_out = xasprintf("cannot read the nodes' fingerprints: %s", store_errmsg(store));
        compare_destroy(&c);
        return rc;
    }
    *out = c;
    return 0;
}

bool compare_has_regression(const compare_t *self)
{
    return self && self->n_regressions > 0;
}

static void s_items_free(compare_item_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(items[i].stage);
        free(items[i].workload);
        free(items[i].part);
        free(items[i].metric);
        free(items[i].unit);
        s_free_names(items[i].nodes, items[i].n_nodes);
    }
    free(items);
}

static void s_head_free(compare_campaign_t *h)
{
    free(h->id);
    free(h->name);
    free(h->state);
}

void compare_destroy(compare_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    compare_t *c = *self_p;
    s_head_free(&c->base);
    s_head_free(&c->now);
    s_items_free(c->regressions, c->n_regressions);
    s_items_free(c->improvements, c->n_improvements);
    for (size_t i = 0; i < c->n_fp_changes; i++) {
        free(c->fp_changes[i].component);
        free(c->fp_changes[i].base);
        free(c->fp_changes[i].now);
        s_free_names(c->fp_changes[i].nodes, c->fp_changes[i].n_nodes);
    }
    free(c->fp_changes);
    for (size_t i = 0; i < c->n_unmatched; i++) {
        free(c->unmatched[i].stage);
        free(c->unmatched[i].part);
    }
    free(c->unmatched);
    for (size_t i = 0; i < c->n_small; i++) {
        free(c->small[i].stage);
        free(c->small[i].family);
    }
    free(c->small);
    for (size_t i = 0; i < c->n_unknown; i++)
        free(c->unknown[i].name);
    free(c->unknown);
    for (size_t i = 0; i < c->n_suspects; i++) {
        free(c->suspects[i].stage);
        free(c->suspects[i].node);
    }
    free(c->suspects);
    free(c->regress_note);
    free(c);
    *self_p = NULL;
}
