/* SPDX-License-Identifier: Apache-2.0 */
/* Slow parts from measured flows: log ratios to the class median per flow and the class's robust
 * spread, the median of every part's flows tested against chance at the fleet's size, and a
 * greedy explanation that names the part explaining the most flows, then the next. The rules and
 * why are in flowjudge.h and docs/diagnosis.md ("Slow, not failing"). Names are interned once: a
 * 4096-node stage on 8 rails records hundreds of thousands of flows. */
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
    p->slow_fraction = 0.93;
    p->min_partners = 2;
    p->fleet_error = 0.001;
}

fb_flowjudge_t *fb_flowjudge_new(const fb_flow_params_t *params)
{
    fb_flow_params_t par;
    if (params)
        par = *params;
    else
        fb_flow_params_default(&par);
    if (!(par.slow_score > 0.0) || !(par.slow_fraction > 0.0 && par.slow_fraction < 1.0) ||
        par.min_partners < 1 || !(par.fleet_error > 0.0 && par.fleet_error < 1.0))
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

/* The spread of log ratios is floored: identical measurements must not make any difference
 * infinitely significant. */
#define S_MIN_SIGMA 0.002
/* One-sided 99%: pending parts, and the bound that rules a slowdown out. */
#define S_Z99 2.326
/* Flows of a node, each way, from which its own spread is known; on fewer, its parts are judged as
 * if the node could be S_UNKNOWN_NOISE times as noisy as its class. */
#define S_OWN_KNOWN 12
#define S_UNKNOWN_NOISE 3.0

/* The working state of one judgment. Parts are numbered: node n sending 2n, receiving 2n + 1;
 * rail r of node n sending base_rail + 2 (n * R + r), receiving + 1; link l base_link + l. */
typedef struct {
    const fb_flowjudge_t *fj;
    size_t n_parts, base_rail, base_link, n_kind[3];
    double *median, *lr, *sigma; /* per flow: class median, log ratio, class spread */
    bool *slow, *explained;
    size_t *flows_at, *flows_v; /* per part: its flows, flows_v[flows_at[p] .. flows_at[p+1]) */
    double *vals;               /* scratch */
    uint64_t *keys;             /* scratch */
    struct s_stat *stat0;       /* per part, on all its flows (before any was explained) */
    double *own_sigma_hi;       /* per node part (node and direction): the one-sided 99% upper
                                 * bound of its own flows' spread, 0 when too few; its NICs
                                 * share it */
    size_t *own_n;              /* ... and the flows it is from */
    bool dirty;                 /* flows were explained since stat0 */
} s_judge_t;

/* A part's unexplained flows, summarised. */
typedef struct s_stat {
    size_t n;
    unsigned partners;
    double m, se; /* median log ratio and its standard error */
    double chance;
} s_stat_t;

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

static double s_log_ratio(double value, double median)
{
    double r = median > 0.0 ? value / median : 1.0;
    return log(r > 1e-6 ? r : 1e-6);
}

/* Median, log ratio and spread of every flow against its class (the classes of its two ends). */
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
    double *vals = j->vals;
    for (size_t c = 0; c < ncp; c++) {
        size_t n = at[c + 1] - at[c];
        if (n == 0)
            continue;
        for (size_t k = 0; k < n; k++)
            vals[k] = fj->flows[order[at[c] + k]].value;
        double med = s_median(vals, n);
        for (size_t k = 0; k < n; k++)
            vals[k] = fabs(s_log_ratio(fj->flows[order[at[c] + k]].value, med));
        double sigma = 1.4826 * s_median(vals, n);
        sigma = sigma > S_MIN_SIGMA ? sigma : S_MIN_SIGMA;
        for (size_t k = 0; k < n; k++) {
            size_t i = order[at[c] + k];
            double v = fj->flows[i].value;
            j->median[i] = med;
            j->lr[i] = n >= 3 ? s_log_ratio(v, med) : NAN;
            j->sigma[i] = sigma;
            j->slow[i] = n >= 3 && -j->lr[i] / sigma >= fj->par.slow_score &&
                         v <= fj->par.slow_fraction * med;
        }
    }
    free(fill);
    free(order);
    free(at);
}

/* Every part's flows (those with a class to judge them by). */
static void s_index_parts(s_judge_t *j)
{
    const fb_flowjudge_t *fj = j->fj;
    size_t parts[4 + S_MAX_LINKS];
    j->flows_at = xcalloc(j->n_parts + 1, sizeof *j->flows_at);
    for (size_t i = 0; i < fj->n_flows; i++) {
        if (isnan(j->lr[i]))
            continue;
        size_t n = s_parts_of(j, &fj->flows[i], parts);
        for (size_t k = 0; k < n; k++)
            j->flows_at[parts[k] + 1]++;
    }
    for (size_t p = 0; p < j->n_parts; p++)
        j->flows_at[p + 1] += j->flows_at[p];
    j->flows_v = xmalloc((j->flows_at[j->n_parts] + 1) * sizeof *j->flows_v);
    size_t *fill = xmalloc((j->n_parts + 1) * sizeof *fill);
    memcpy(fill, j->flows_at, (j->n_parts + 1) * sizeof *fill);
    for (size_t i = 0; i < fj->n_flows; i++) {
        if (isnan(j->lr[i]))
            continue;
        size_t n = s_parts_of(j, &fj->flows[i], parts);
        for (size_t k = 0; k < n; k++)
            j->flows_v[fill[parts[k]]++] = i;
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

/* The node part (node and direction) of a node or rail part; a link's own index (its spread is
 * never computed: 0). */
static size_t s_node_part(const s_judge_t *j, size_t p)
{
    if (p < j->base_rail)
        return p;
    if (p < j->base_link) {
        size_t q = (p - j->base_rail) / 2;
        return 2 * (q / j->fj->rails.n) + (p - j->base_rail) % 2;
    }
    return p;
}

/* Every node part's own spread: sqrt(pi / 2) x the mean absolute deviation of its flows' log
 * ratios from their median, over all its flows (at least S_OWN_KNOWN of them; else 0), and its
 * one-sided 99% upper bound (the estimate's relative standard error is sqrt(pi / 2 - 1) / sqrt(n)
 * = 0.756 / sqrt(n) for normal data). Not the median absolute deviation, robust as it is: on a
 * dozen flows it comes out at a quarter of the true spread now and then (half of them close to
 * their median by chance), and the judge, looking after every round, then names a noisy node
 * whose median wandered low (8 noisy nodes in 64, 25 rounds: 1 of 60 fleets). The mean of the
 * deviations is almost never under half the true spread on 12 flows; one far flow (a partner's
 * fault) widens it, which only makes the node harder to name. */
static void s_own_spreads(s_judge_t *j)
{
    j->own_sigma_hi = xcalloc(j->n_parts + 1, sizeof *j->own_sigma_hi);
    j->own_n = xcalloc(j->n_parts + 1, sizeof *j->own_n);
    for (size_t p = 0; p < j->base_rail; p++) {
        size_t n = 0;
        for (size_t k = j->flows_at[p]; k < j->flows_at[p + 1]; k++)
            j->vals[n++] = j->lr[j->flows_v[k]];
        j->own_n[p] = n;
        if (n < S_OWN_KNOWN)
            continue;
        double m = s_median(j->vals, n), dev = 0.0;
        for (size_t k = 0; k < n; k++)
            dev += fabs(j->vals[k] - m);
        j->own_sigma_hi[p] = 1.2533 * dev / (double)n * (1.0 + S_Z99 * 0.756 / sqrt((double)n));
    }
}

/* The spread part p's median is judged with: its class's, or its node's own (its flows that way)
 * where that is wider. A noisy node's medians, and its NICs', wander as far as its measurements
 * scatter: judged by the class's spread alone, the fleet's noisiest NIC would be named slow after
 * a few flows. The judge looks again after every round and names for good, and a noisy node's
 * median wanders low now and then, most of all while it has few flows (1 rail, noisy nodes of
 * sigma 0.15 in a fleet of 0.05: 4 of 200 benchmark trials named one slow). So until a node has
 * S_OWN_KNOWN flows that way its spread is not known, and it is judged as if it could be
 * S_UNKNOWN_NOISE times as noisy as its class (a node at 0.6 is named all the same; one at 0.85
 * waits for its spread to be known); after that the upper 99% bound of its own spread counts
 * where it is wider than the class's, since on tens of flows the estimate is sometimes well under
 * what it is (a node as steady as its class is judged on up to 1.5 times the class's spread on 12
 * flows, 1.3 times on 32). Links are judged on the class's (their flows are many nodes'). */
static double s_spread(const s_judge_t *j, size_t p, double class_sigma)
{
    size_t node = s_node_part(j, p);
    if (p < j->base_link && j->own_n[node] < S_OWN_KNOWN)
        return S_UNKNOWN_NOISE * class_sigma;
    double own = j->own_sigma_hi[node];
    return own > class_sigma ? own : class_sigma;
}

/* Part p on its unexplained flows: upper median log ratio, its standard error (the median of n
 * normal values has 1.2533 times the mean's), and the chance that a healthy part of its kind
 * anywhere in the fleet has a median that low. */
static s_stat_t s_stat(const s_judge_t *j, size_t p)
{
    s_stat_t st = {0};
    double sig_sum = 0.0;
    for (size_t k = j->flows_at[p]; k < j->flows_at[p + 1]; k++) {
        size_t i = j->flows_v[k];
        if (j->explained[i])
            continue;
        j->vals[st.n++] = j->lr[i];
        sig_sum += j->sigma[i];
    }
    if (st.n == 0) {
        st.chance = 1.0;
        return st;
    }
    /* The upper median: a part is slow when more than half of its flows are (of two flows, one
     * slow one is a partner's doing, not its own). */
    st.m = s_select(j->vals, st.n, st.n / 2);
    double sigma = s_spread(j, p, sig_sum / (double)st.n);
    st.se = 1.2533 * sigma / sqrt((double)st.n);
    double tail = 0.5 * erfc(-st.m / st.se / sqrt(2.0)); /* P(Z >= -m / se) */
    st.chance = tail * (double)j->n_kind[s_part_kind(j, p)];
    return st;
}

/* Distinct partners among part p's unexplained flows (only asked of parts slow enough to
 * matter: the sort is the costly part of a judgment). */
static unsigned s_partners(const s_judge_t *j, size_t p)
{
    size_t n = 0;
    for (size_t k = j->flows_at[p]; k < j->flows_at[p + 1]; k++)
        if (!j->explained[j->flows_v[k]])
            j->keys[n++] = s_partner(j, p, j->flows_v[k]);
    qsort(j->keys, n, sizeof *j->keys, s_cmp_u64);
    unsigned d = 0;
    for (size_t k = 0; k < n; k++)
        d += k == 0 || j->keys[k] != j->keys[k - 1];
    return d;
}

/* s_stat, from the judgment's first look while no flow has been explained since. */
static s_stat_t s_stat_now(const s_judge_t *j, size_t p)
{
    return j->dirty ? s_stat(j, p) : j->stat0[p];
}

static bool s_material(const s_judge_t *j, const s_stat_t *st)
{
    return st->n > 0 && st->m <= log(j->fj->par.slow_fraction);
}

static bool s_proven(const s_judge_t *j, const s_stat_t *st)
{
    return s_material(j, st) && st->partners >= j->fj->par.min_partners &&
           st->chance <= j->fj->par.fleet_error;
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

static int s_cmp_sample(const void *a, const void *b)
{
    const fb_flow_sample_t *x = a, *y = b;
    double rx = x->median > 0 ? x->value / x->median : 0,
           ry = y->median > 0 ? y->value / y->median : 0;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    int c = strcmp(x->test_id, y->test_id);
    return c ? c : strcmp(x->src, y->src);
}

/* Names part p: a finding of its unexplained flows, which become explained. */
static void s_name_part(s_judge_t *j, size_t p, const s_stat_t *st, fb_flow_judgment_t *out)
{
    const fb_flowjudge_t *fj = j->fj;
    out->findings = xrealloc(out->findings, (out->n_findings + 1) * sizeof *out->findings);
    fb_flow_finding_t *fd = &out->findings[out->n_findings++];
    memset(fd, 0, sizeof *fd);
    fd->part = s_part_name(j, p, &fd->direction);
    fd->kind = s_kind_names[s_part_kind(j, p)];
    fd->n_partners = st->partners;
    fd->n_flows = st->n;
    fd->ratio = exp(st->m);
    fd->chance = st->chance;
    fd->confidence = 1.0 - (st->chance < 1.0 ? st->chance : 1.0);
    fd->slow = xmalloc((st->n + 1) * sizeof *fd->slow);
    for (size_t k = j->flows_at[p]; k < j->flows_at[p + 1]; k++) {
        size_t i = j->flows_v[k];
        if (j->explained[i])
            continue;
        j->explained[i] = true;
        const s_flow_t *f = &fj->flows[i];
        fd->slow[fd->n_slow++] = (fb_flow_sample_t){fj->tests.names[f->test],
                                                    fj->nodes.names[f->src],
                                                    fj->nodes.names[f->dst],
                                                    f->rail >= 0 ? fj->rails.names[f->rail] : NULL,
                                                    f->value,
                                                    j->median[i],
                                                    -j->lr[i] / j->sigma[i]};
    }
    qsort(fd->slow, fd->n_slow, sizeof *fd->slow, s_cmp_sample);
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
            x->ratio = x->ratio > y->ratio ? x->ratio : y->ratio;
            x->chance = x->chance > y->chance ? x->chance : y->chance;
            x->confidence = x->confidence < y->confidence ? x->confidence : y->confidence;
            x->direction = "both";
            qsort(x->slow, x->n_slow, sizeof *x->slow, s_cmp_sample);
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

static void s_push_name(char ***v, size_t *n, const char *name)
{
    *v = xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[(*n)++] = xstrdup(name);
}

/* Pending: nodes of parts slow enough to matter, one-sided 99% beyond chance for one part, but
 * not proven at the fleet's size or without enough partners. Fast: nodes whose flows each way
 * put the lower 99% bound of the median ratio above slow_fraction. */
static void s_pending_fast(s_judge_t *j, fb_flow_judgment_t *out)
{
    const fb_flowjudge_t *fj = j->fj;
    bool *mark = xcalloc(fj->nodes.n + 1, sizeof *mark);
    double thr = log(fj->par.slow_fraction);
    for (size_t p = 0; p < j->n_parts; p++) {
        if (j->flows_at[p + 1] == j->flows_at[p])
            continue;
        s_stat_t st = s_stat_now(j, p);
        if (!s_material(j, &st) || -st.m / st.se < S_Z99)
            continue;
        if (s_part_kind(j, p) != S_LINK) {
            size_t node = p < j->base_rail ? p / 2 : (p - j->base_rail) / 2 / fj->rails.n;
            mark[node] = true;
            continue;
        }
        for (size_t k = j->flows_at[p]; k < j->flows_at[p + 1]; k++) {
            size_t i = j->flows_v[k];
            if (!j->explained[i] && j->lr[i] <= thr)
                mark[fj->flows[i].src] = mark[fj->flows[i].dst] = true;
        }
    }
    bool *stray = xcalloc(fj->nodes.n + 1, sizeof *stray);
    for (size_t i = 0; i < fj->n_flows; i++)
        if (j->slow[i] && !j->explained[i])
            stray[fj->flows[i].src] = stray[fj->flows[i].dst] = true;
    for (size_t n = 0; n < fj->nodes.n; n++) {
        if (stray[n])
            s_push_name(&out->stray, &out->n_stray, fj->nodes.names[n]);
        if (mark[n])
            s_push_name(&out->pending, &out->n_pending, fj->nodes.names[n]);
        bool fast = true;
        for (size_t dir = 0; dir < 2 && fast; dir++) {
            s_stat_t st = s_stat_now(j, 2 * n + dir);
            fast = st.n > 0 && st.m - S_Z99 * st.se >= thr;
        }
        if (fast && !mark[n])
            s_push_name(&out->fast, &out->n_fast, fj->nodes.names[n]);
    }
    if (out->n_pending)
        qsort(out->pending, out->n_pending, sizeof *out->pending, s_cmp_str);
    if (out->n_fast)
        qsort(out->fast, out->n_fast, sizeof *out->fast, s_cmp_str);
    if (out->n_stray)
        qsort(out->stray, out->n_stray, sizeof *out->stray, s_cmp_str);
    free(stray);
    free(mark);
}

/* The greedy explanation (flowjudge.h). Only parts slow enough to matter on all their flows can
 * become so on fewer: explaining flows away removes the slow ones. */
static void s_explain(s_judge_t *j, fb_flow_judgment_t *out)
{
    size_t *cand = xmalloc((j->n_parts + 1) * sizeof *cand), n_cand = 0;
    for (size_t p = 0; p < j->n_parts; p++) {
        j->stat0[p] = s_stat(j, p);
        if (s_material(j, &j->stat0[p]))
            cand[n_cand++] = p;
    }
    for (;;) {
        size_t best = SIZE_MAX;
        s_stat_t best_st = {0};
        for (size_t c = 0; c < n_cand; c++) {
            s_stat_t st = s_stat_now(j, cand[c]);
            if (!s_material(j, &st) || st.chance > j->fj->par.fleet_error)
                continue;
            st.partners = s_partners(j, cand[c]);
            if (!s_proven(j, &st))
                continue;
            bool more = st.n > best_st.n, same = st.n == best_st.n;
            bool kind = s_part_kind(j, cand[c]) < s_part_kind(j, best);
            if (best == SIZE_MAX || more || (same && kind) ||
                (same && s_part_kind(j, cand[c]) == s_part_kind(j, best) &&
                 st.chance < best_st.chance)) {
                best = cand[c];
                best_st = st;
            }
        }
        if (best == SIZE_MAX)
            break;
        s_name_part(j, best, &best_st, out);
        j->dirty = true;
    }
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
    j.n_kind[S_NODE] = j.base_rail;
    j.n_kind[S_RAIL] = j.base_link - j.base_rail;
    j.n_kind[S_LINK] = fj->links.n;
    j.median = xmalloc((nf + 1) * sizeof *j.median);
    j.lr = xmalloc((nf + 1) * sizeof *j.lr);
    j.sigma = xmalloc((nf + 1) * sizeof *j.sigma);
    j.slow = xcalloc(nf + 1, sizeof *j.slow);
    j.explained = xcalloc(nf + 1, sizeof *j.explained);
    j.vals = xmalloc((nf + 1) * sizeof *j.vals);
    j.keys = xmalloc((nf + 1) * sizeof *j.keys);
    j.stat0 = xcalloc(j.n_parts + 1, sizeof *j.stat0);
    s_score_flows(&j);
    s_index_parts(&j);
    s_own_spreads(&j);
    out->n_flows = nf;
    for (size_t i = 0; i < nf; i++)
        out->n_slow += j.slow[i];
    s_explain(&j, out);
    s_merge_directions(out);
    s_pending_fast(&j, out);
    free(j.median);
    free(j.lr);
    free(j.sigma);
    free(j.slow);
    free(j.explained);
    free(j.vals);
    free(j.keys);
    free(j.stat0);
    free(j.own_sigma_hi);
    free(j.own_n);
    free(j.flows_at);
    free(j.flows_v);
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
    for (size_t i = 0; i < j->n_fast; i++)
        free(j->fast[i]);
    free(j->fast);
    for (size_t i = 0; i < j->n_stray; i++)
        free(j->stray[i]);
    free(j->stray);
    memset(j, 0, sizeof *j);
}

static bool s_listed(char *const *v, size_t n, const char *node)
{
    return node && n && bsearch(&node, v, n, sizeof *v, s_cmp_str);
}

bool fb_flow_judgment_pending(const fb_flow_judgment_t *j, const char *node)
{
    return j && s_listed(j->pending, j->n_pending, node);
}

bool fb_flow_judgment_fast(const fb_flow_judgment_t *j, const char *node)
{
    return j && s_listed(j->fast, j->n_fast, node);
}

bool fb_flow_judgment_stray(const fb_flow_judgment_t *j, const char *node)
{
    return j && s_listed(j->stray, j->n_stray, node);
}
