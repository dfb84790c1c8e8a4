/* SPDX-License-Identifier: Apache-2.0 */
/* Slow parts from measured flows: class medians and robust scores per flow, parts every flow of
 * which is slow (consistent), and a greedy explanation that names the part explaining the most
 * slow flows with enough distinct partners, then the next. The rules and why are in flowjudge.h
 * and docs/diagnosis.md ("Slow, not failing"). Names are interned once: a 4096-node stage on 8
 * rails records hundreds of thousands of flows. */
#include "flowjudge.h"

#include "common/strmap.h"
#include "common/util.h"
#include "robust.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Interned names: index <-> string. */
typedef struct {
    fb_strmap_t *map; /* name -> index + 1 */
    char **names;
    size_t n, cap;
} s_names_t;

typedef struct {
    int test, src, dst;
    int rail; /* index in rails, -1 when none */
    double value;
    size_t link_at; /* first of its links in fb_flowjudge.link_idx */
    unsigned n_links;
} s_flow_t;

struct fb_flowjudge {
    fb_flow_params_t par;
    s_names_t nodes, classes, rails, links, tests;
    int *node_class; /* per node: index in classes */
    s_flow_t *flows;
    size_t n_flows, cap_flows;
    int *link_idx;
    size_t n_link_idx, cap_link_idx;
};

/* Links one flow may cross (a route in a fat tree crosses two). */
#define S_MAX_LINKS 16

/* Part kinds, in the order of preference when two parts explain the same flows. */
enum { S_NODE = 0, S_RAIL = 1, S_LINK = 2 };

static int s_intern(s_names_t *t, const char *name)
{
    if (!t->map)
        t->map = fb_strmap_new();
    void *v = fb_strmap_get(t->map, name);
    if (v)
        return (int)((uintptr_t)v - 1);
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->names = xrealloc(t->names, t->cap * sizeof *t->names);
    }
    t->names[t->n] = xstrdup(name);
    fb_strmap_put(t->map, t->names[t->n], (void *)(uintptr_t)(t->n + 1));
    return (int)t->n++;
}

static void s_names_free(s_names_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    fb_strmap_destroy(&t->map);
}

void fb_flow_params_default(fb_flow_params_t *p)
{
    assert(p);
    p->slow_score = 3.5;
    p->slow_fraction = 0.8;
    p->min_partners = 3;
}

fb_flowjudge_t *fb_flowjudge_new(const fb_flow_params_t *params)
{
    fb_flow_params_t par;
    if (params)
        par = *params;
    else
        fb_flow_params_default(&par);
    if (!(par.slow_score > 0.0) || !(par.slow_fraction > 0.0 && par.slow_fraction < 1.0) ||
        par.min_partners < 1)
        return NULL;
    fb_flowjudge_t *fj = xcalloc(1, sizeof *fj);
    fj->par = par;
    s_intern(&fj->classes, ""); /* class 0: the default */
    return fj;
}

void fb_flowjudge_destroy(fb_flowjudge_t **self_p)
{
    assert(self_p);
    fb_flowjudge_t *fj = *self_p;
    if (!fj)
        return;
    s_names_free(&fj->nodes);
    s_names_free(&fj->classes);
    s_names_free(&fj->rails);
    s_names_free(&fj->links);
    s_names_free(&fj->tests);
    free(fj->node_class);
    free(fj->flows);
    free(fj->link_idx);
    free(fj);
    *self_p = NULL;
}

static int s_node(fb_flowjudge_t *fj, const char *name)
{
    size_t before = fj->nodes.n;
    int i = s_intern(&fj->nodes, name);
    if (fj->nodes.n != before) {
        fj->node_class = xrealloc(fj->node_class, fj->nodes.cap * sizeof *fj->node_class);
        fj->node_class[i] = 0;
    }
    return i;
}

int fb_flowjudge_set_class(fb_flowjudge_t *fj, const char *node, const char *cls)
{
    assert(fj);
    if (!node || !*node || !cls)
        return -EINVAL;
    int i = s_node(fj, node);
    fj->node_class[i] = s_intern(&fj->classes, cls);
    return 0;
}

int fb_flowjudge_record(fb_flowjudge_t *fj, const char *test_id, const char *src, const char *dst,
                        const char *rail, double value, const char *const *links, size_t n_links)
{
    assert(fj);
    if (!test_id || !src || !dst || !*src || !*dst || !strcmp(src, dst) || !isfinite(value) ||
        value < 0.0 || (n_links && !links) || n_links > S_MAX_LINKS)
        return -EINVAL;
    for (size_t i = 0; i < n_links; i++)
        if (!links[i] || !*links[i])
            return -EINVAL;
    if (fj->n_flows == fj->cap_flows) {
        fj->cap_flows = fj->cap_flows ? 2 * fj->cap_flows : 256;
        fj->flows = xrealloc(fj->flows, fj->cap_flows * sizeof *fj->flows);
    }
    s_flow_t *f = &fj->flows[fj->n_flows++];
    f->test = s_intern(&fj->tests, test_id);
    f->src = s_node(fj, src);
    f->dst = s_node(fj, dst);
    f->rail = rail && *rail ? s_intern(&fj->rails, rail) : -1;
    f->value = value;
    f->link_at = fj->n_link_idx;
    f->n_links = (unsigned)n_links;
    if (fj->n_link_idx + n_links > fj->cap_link_idx) {
        fj->cap_link_idx = 2 * (fj->n_link_idx + n_links) + 64;
        fj->link_idx = xrealloc(fj->link_idx, fj->cap_link_idx * sizeof *fj->link_idx);
    }
    for (size_t i = 0; i < n_links; i++)
        fj->link_idx[fj->n_link_idx++] = s_intern(&fj->links, links[i]);
    return 0;
}

size_t fb_flowjudge_flows(const fb_flowjudge_t *fj)
{
    assert(fj);
    return fj->n_flows;
}

/* ---- judging ---- */

/* The working state of one judgment. Parts are numbered: node n sending 2n, receiving 2n + 1;
 * rail r of node n sending base_rail + 2 (n * R + r), receiving + 1; link l base_link + l. */
typedef struct {
    const fb_flowjudge_t *fj;
    size_t n_parts, base_rail, base_link;
    double *median, *score; /* per flow */
    bool *slow, *explained;
    size_t *n_fast;           /* per part: flows through it that are not slow */
    size_t *slow_at, *slow_v; /* per part: its slow flows, slow_v[slow_at[p] .. slow_at[p+1]) */
} s_judge_t;

static size_t s_parts_of(const s_judge_t *j, const s_flow_t *f, size_t *parts)
{
    const fb_flowjudge_t *fj = j->fj;
    size_t n = 0, R = fj->rails.n;
    parts[n++] = 2 * (size_t)f->src;
    parts[n++] = 2 * (size_t)f->dst + 1;
    if (f->rail >= 0) {
        parts[n++] = j->base_rail + 2 * ((size_t)f->src * R + (size_t)f->rail);
        parts[n++] = j->base_rail + 2 * ((size_t)f->dst * R + (size_t)f->rail) + 1;
    }
    for (unsigned k = 0; k < f->n_links; k++)
        parts[n++] = j->base_link + (size_t)fj->link_idx[f->link_at + k];
    return n;
}

static int s_part_kind(const s_judge_t *j, size_t p)
{
    return p < j->base_rail ? S_NODE : (p < j->base_link ? S_RAIL : S_LINK);
}

static int s_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The k-th smallest of v[0..n) (reorders v): Hoare's selection, linear on average, where a sort
 * of every flow of a large stage on every round would dominate the judgment. */
static double s_select(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

/* Median of v[0..n), n > 0 (reorders v). */
static double s_median(double *v, size_t n)
{
    double hi = s_select(v, n, n / 2);
    if (n % 2)
        return hi;
    double lo = v[0]; /* the largest of the lower half, which selection left below n / 2 */
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo)
            lo = v[i];
    return (lo + hi) / 2.0;
}

/* Median and robust score of every flow against its class (the classes of its two ends). */
static void s_score_flows(s_judge_t *j)
{
    const fb_flowjudge_t *fj = j->fj;
    size_t nc = fj->classes.n, nf = fj->n_flows, ncp = nc * nc;
    size_t *at = xcalloc(ncp + 1, sizeof *at);
    size_t *order = xmalloc((nf ? nf : 1) * sizeof *order);
    for (size_t i = 0; i < nf; i++)
        at[(size_t)fj->node_class[fj->flows[i].src] * nc +
           (size_t)fj->node_class[fj->flows[i].dst] + 1]++;
    for (size_t c = 0; c < ncp; c++)
        at[c + 1] += at[c];
    size_t *fill = xmalloc((ncp ? ncp : 1) * sizeof *fill);
    memcpy(fill, at, ncp * sizeof *fill);
    for (size_t i = 0; i < nf; i++)
        order[fill[(size_t)fj->node_class[fj->flows[i].src] * nc +
                   (size_t)fj->node_class[fj->flows[i].dst]]++] = i;
    double *vals = xmalloc((nf ? nf : 1) * sizeof *vals);
    for (size_t c = 0; c < ncp; c++) {
        size_t n = at[c + 1] - at[c];
        if (n == 0)
            continue;
        for (size_t k = 0; k < n; k++)
            vals[k] = fj->flows[order[at[c] + k]].value;
        double med = s_median(vals, n);
        for (size_t k = 0; k < n; k++)
            vals[k] = fabs(vals[k] - med);
        double mad = s_median(vals, n);
        for (size_t k = 0; k < n; k++) {
            size_t i = order[at[c] + k];
            double v = fj->flows[i].value;
            j->median[i] = med;
            j->score[i] = n >= 3 ? fb_robust_score_from(v, med, mad) : NAN;
            j->slow[i] =
                n >= 3 && j->score[i] >= fj->par.slow_score && v <= fj->par.slow_fraction * med;
        }
    }
    free(vals);
    free(fill);
    free(order);
    free(at);
}

/* Fast counts and slow-flow lists per part. */
static void s_index_parts(s_judge_t *j)
{
    const fb_flowjudge_t *fj = j->fj;
    size_t parts[4 + S_MAX_LINKS];
    j->slow_at = xcalloc(j->n_parts + 1, sizeof *j->slow_at);
    for (size_t i = 0; i < fj->n_flows; i++) {
        size_t n = s_parts_of(j, &fj->flows[i], parts);
        for (size_t k = 0; k < n; k++) {
            if (j->slow[i])
                j->slow_at[parts[k] + 1]++;
            else
                j->n_fast[parts[k]]++;
        }
    }
    for (size_t p = 0; p < j->n_parts; p++)
        j->slow_at[p + 1] += j->slow_at[p];
    j->slow_v = xmalloc((j->slow_at[j->n_parts] + 1) * sizeof *j->slow_v);
    size_t *fill = xmalloc((j->n_parts + 1) * sizeof *fill);
    memcpy(fill, j->slow_at, (j->n_parts + 1) * sizeof *fill);
    for (size_t i = 0; i < fj->n_flows; i++) {
        if (!j->slow[i])
            continue;
        size_t n = s_parts_of(j, &fj->flows[i], parts);
        for (size_t k = 0; k < n; k++)
            j->slow_v[fill[parts[k]]++] = i;
    }
    free(fill);
}

/* The partner of flow i as seen from part p: the other node for a node or rail part, the node
 * pair for a link. */
static uint64_t s_partner(const s_judge_t *j, size_t p, size_t i)
{
    const s_flow_t *f = &j->fj->flows[i];
    uint64_t a = (uint64_t)f->src, b = (uint64_t)f->dst;
    if (s_part_kind(j, p) == S_LINK)
        return a < b ? (a << 32 | b) : (b << 32 | a);
    bool sending = p < j->base_rail ? (p % 2 == 0) : ((p - j->base_rail) % 2 == 0);
    return sending ? b : a;
}

/* Unexplained slow flows of part p and their distinct partners. */
static size_t s_unexplained(const s_judge_t *j, size_t p, unsigned *partners, uint64_t *scratch)
{
    size_t u = 0;
    for (size_t k = j->slow_at[p]; k < j->slow_at[p + 1]; k++) {
        size_t i = j->slow_v[k];
        if (!j->explained[i])
            scratch[u++] = s_partner(j, p, i);
    }
    qsort(scratch, u, sizeof *scratch, s_cmp_u64);
    unsigned d = 0;
    for (size_t k = 0; k < u; k++)
        d += k == 0 || scratch[k] != scratch[k - 1];
    *partners = d;
    return u;
}

/* "n17", "n17/mlx5_2" or the link's name, and the direction of a node or rail part. */
static char *s_part_name(const s_judge_t *j, size_t p, const char **direction)
{
    const fb_flowjudge_t *fj = j->fj;
    *direction = "both";
    if (p < j->base_rail) {
        *direction = p % 2 ? "receive" : "send";
        return xstrdup(fj->nodes.names[p / 2]);
    }
    if (p < j->base_link) {
        size_t q = (p - j->base_rail) / 2, R = fj->rails.n;
        *direction = (p - j->base_rail) % 2 ? "receive" : "send";
        return xasprintf("%s/%s", fj->nodes.names[q / R], fj->rails.names[q % R]);
    }
    return xstrdup(fj->links.names[p - j->base_link]);
}

static const char *const s_kind_names[] = {"node", "nic", "link"};

/* Names part p: a finding of its unexplained slow flows, which become explained. */
static void s_name_part(s_judge_t *j, size_t p, unsigned partners, fb_flow_judgment_t *out)
{
    const fb_flowjudge_t *fj = j->fj;
    out->findings = xrealloc(out->findings, (out->n_findings + 1) * sizeof *out->findings);
    fb_flow_finding_t *fd = &out->findings[out->n_findings++];
    memset(fd, 0, sizeof *fd);
    fd->part = s_part_name(j, p, &fd->direction);
    fd->kind = s_kind_names[s_part_kind(j, p)];
    fd->n_partners = partners;
    fd->n_flows = j->slow_at[p + 1] - j->slow_at[p];
    fd->slow = xmalloc((fd->n_flows + 1) * sizeof *fd->slow);
    double *ratios = xmalloc((fd->n_flows + 1) * sizeof *ratios);
    for (size_t k = j->slow_at[p]; k < j->slow_at[p + 1]; k++) {
        size_t i = j->slow_v[k];
        if (j->explained[i])
            continue;
        j->explained[i] = true;
        const s_flow_t *f = &fj->flows[i];
        ratios[fd->n_slow] = j->median[i] > 0.0 ? f->value / j->median[i] : NAN;
        fd->slow[fd->n_slow++] = (fb_flow_sample_t){fj->tests.names[f->test],
                                                    fj->nodes.names[f->src],
                                                    fj->nodes.names[f->dst],
                                                    f->rail >= 0 ? fj->rails.names[f->rail] : NULL,
                                                    f->value,
                                                    j->median[i],
                                                    j->score[i]};
    }
    fd->ratio = fb_robust_median(ratios, fd->n_slow);
    free(ratios);
}

/* A node or NIC named slow both ways is one finding: the receiving one joins the sending one. */
static void s_merge_directions(fb_flow_judgment_t *out)
{
    for (size_t a = 0; a < out->n_findings; a++) {
        fb_flow_finding_t *x = &out->findings[a];
        for (size_t b = a + 1; b < out->n_findings; b++) {
            fb_flow_finding_t *y = &out->findings[b];
            if (strcmp(x->part, y->part) || !strcmp(x->direction, "both"))
                continue;
            x->slow = xrealloc(x->slow, (x->n_slow + y->n_slow + 1) * sizeof *x->slow);
            memcpy(x->slow + x->n_slow, y->slow, y->n_slow * sizeof *y->slow);
            x->n_slow += y->n_slow;
            x->n_flows += y->n_flows;
            x->n_partners = x->n_partners > y->n_partners ? x->n_partners : y->n_partners;
            x->direction = "both";
            free(y->part);
            free(y->slow);
            memmove(y, y + 1, (out->n_findings - b - 1) * sizeof *y);
            out->n_findings--;
            b--;
        }
    }
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Nodes that more partners could still name or clear: an end of an unexplained slow flow
 * through a part every flow of which is still slow (a stray slow flow between two nodes that are
 * fast with everyone else leaves nobody pending: nothing could explain it). */
static void s_pending(const s_judge_t *j, fb_flow_judgment_t *out)
{
    const fb_flowjudge_t *fj = j->fj;
    bool *mark = xcalloc(fj->nodes.n + 1, sizeof *mark);
    size_t parts[4 + S_MAX_LINKS];
    for (size_t i = 0; i < fj->n_flows; i++) {
        if (!j->slow[i] || j->explained[i])
            continue;
        const s_flow_t *f = &fj->flows[i];
        size_t n = s_parts_of(j, f, parts);
        for (size_t k = 0; k < n; k++) {
            if (j->n_fast[parts[k]])
                continue;
            size_t p = parts[k];
            bool receiving =
                p < j->base_rail ? p % 2 : (p < j->base_link ? (p - j->base_rail) % 2 : 0);
            if (s_part_kind(j, p) == S_LINK)
                mark[f->src] = mark[f->dst] = true;
            else
                mark[receiving ? f->dst : f->src] = true;
        }
    }
    for (size_t n = 0; n < fj->nodes.n; n++)
        if (mark[n]) {
            out->pending = xrealloc(out->pending, (out->n_pending + 1) * sizeof *out->pending);
            out->pending[out->n_pending++] = xstrdup(fj->nodes.names[n]);
        }
    if (out->n_pending)
        qsort(out->pending, out->n_pending, sizeof *out->pending, s_cmp_str);
    free(mark);
}

/* The greedy explanation (flowjudge.h). */
static void s_explain(s_judge_t *j, fb_flow_judgment_t *out)
{
    size_t *cand = xmalloc((j->n_parts + 1) * sizeof *cand), n_cand = 0;
    for (size_t p = 0; p < j->n_parts; p++)
        if (j->n_fast[p] == 0 && j->slow_at[p + 1] > j->slow_at[p])
            cand[n_cand++] = p;
    uint64_t *scratch = xmalloc((j->slow_at[j->n_parts] + 1) * sizeof *scratch);
    for (;;) {
        size_t best = SIZE_MAX, best_u = 0;
        unsigned best_partners = 0;
        for (size_t c = 0; c < n_cand; c++) {
            unsigned partners;
            size_t u = s_unexplained(j, cand[c], &partners, scratch);
            if (u == 0 || partners < j->fj->par.min_partners)
                continue;
            if (best == SIZE_MAX || u > best_u ||
                (u == best_u && s_part_kind(j, cand[c]) < s_part_kind(j, best))) {
                best = cand[c];
                best_u = u;
                best_partners = partners;
            }
        }
        if (best == SIZE_MAX)
            break;
        s_name_part(j, best, best_partners, out);
    }
    free(scratch);
    free(cand);
}

int fb_flowjudge_judge(const fb_flowjudge_t *fj, fb_flow_judgment_t *out)
{
    assert(fj && out);
    memset(out, 0, sizeof *out);
    size_t nf = fj->n_flows;
    s_judge_t j = {.fj = fj};
    j.base_rail = 2 * fj->nodes.n;
    j.base_link = j.base_rail + 2 * fj->nodes.n * fj->rails.n;
    j.n_parts = j.base_link + fj->links.n;
    j.median = xmalloc((nf + 1) * sizeof *j.median);
    j.score = xmalloc((nf + 1) * sizeof *j.score);
    j.slow = xcalloc(nf + 1, sizeof *j.slow);
    j.explained = xcalloc(nf + 1, sizeof *j.explained);
    j.n_fast = xcalloc(j.n_parts + 1, sizeof *j.n_fast);
    s_score_flows(&j);
    s_index_parts(&j);
    out->n_flows = nf;
    for (size_t i = 0; i < nf; i++)
        out->n_slow += j.slow[i];
    if (out->n_slow)
        s_explain(&j, out);
    s_merge_directions(out);
    s_pending(&j, out);
    free(j.median);
    free(j.score);
    free(j.slow);
    free(j.explained);
    free(j.n_fast);
    free(j.slow_at);
    free(j.slow_v);
    return (int)out->n_findings;
}

void fb_flow_judgment_clear(fb_flow_judgment_t *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n_findings; i++) {
        free(j->findings[i].part);
        free(j->findings[i].slow);
    }
    free(j->findings);
    for (size_t i = 0; i < j->n_pending; i++)
        free(j->pending[i]);
    free(j->pending);
    memset(j, 0, sizeof *j);
}
