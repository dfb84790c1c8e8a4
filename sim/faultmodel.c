/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated fleet's fault model: for any test over any members, at any simulated time, a
 * verdict, what each member reports and what it measures. It has to be deterministic in what
 * members can agree on without talking (seed, test id, sorted member names, the test's simulated
 * start), because every member of a simulated group computes the group's verdict by itself, and
 * independent of the order tests are judged in, because the engine it tests must be judged on
 * results, not on timing; and it has to route flows the way a fat tree does, because telling a
 * bad uplink or leaf from a bad node is what the diagnosis it feeds is tested on. The fault file
 * is read by sim/faultmodel_parse.c. */
#include "faultmodel_impl.h"

#include "common/rng.h"
#include "common/util.h"
#include "common/yamldoc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Salts of the draws that are not per fault (fault i draws with i + 1, the false fail with 0):
 * constants far above any fault index. */
#define S_SALT_DISAGREE 0x6469736167726565ull /* "disagree" */
#define S_SALT_WHO 0x77686f2d64697361ull      /* which member disagrees */
#define S_SALT_LOST 0x6c6f73742d726573ull     /* a member's result lost */
#define S_SALT_BURST 0x6275727374000000ull    /* a bursty fault's periods */
#define S_SALT_RADIUS 0x6e6f726d616c2d72ull   /* Box-Muller: radius */
#define S_SALT_ANGLE 0x6e6f726d616c2d61ull    /* Box-Muller: angle */
#define S_TWO_PI 6.283185307179586476925

/* A bursty fault's process starts afresh (from its stationary state) every this many mean
 * cycles (active + quiet), so that its state at any instant takes a bounded walk to compute
 * without history; the period cut at each restart shortens the mean active period by under 1%. */
#define S_BURST_EPOCH_CYCLES 64.0
/* Steps of one such walk at most: the expected count is 2 x S_BURST_EPOCH_CYCLES. */
#define S_BURST_MAX_STEPS 100000

/* ---- hashing: the one source of randomness ------------------------------------------------ */

/* FNV-1a over the bytes and a terminator, so "ab"+"c" and "a"+"bc" differ. */
static uint64_t s_hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull;
}

static uint64_t s_base(const fb_faultmodel_t *self)
{
    return 0xcbf29ce484222325ull ^ fb_mix64(self->seed);
}

static double s_unit(uint64_t h)
{
    return fb_rng_unit(fb_mix64(h));
}

/* A standard normal draw from h (Box-Muller over two independent uniforms). */
static double s_normal(uint64_t h)
{
    double radius = sqrt(-2.0 * log(1.0 - s_unit(h ^ fb_mix64(S_SALT_RADIUS))));
    return radius * cos(S_TWO_PI * s_unit(h ^ fb_mix64(S_SALT_ANGLE)));
}

double fb_faultmodel_uniform(const fb_faultmodel_t *self, const char *key, const char *salt)
{
    return s_unit(s_hash_str(s_hash_str(s_base(self), key), salt));
}

double fb_faultmodel_noise(const fb_faultmodel_t *self, const char *key, const char *salt,
                           const char *const *nodes, size_t n)
{
    uint64_t h = s_hash_str(s_hash_str(s_base(self), key), salt);
    double x = self->noise_dist == FB_NOISE_LOGNORMAL
                   ? exp(self->noise_param * s_normal(h))
                   : 1.0 + self->noise_param * (2.0 * s_unit(h) - 1.0);
    for (size_t i = 0; i < self->n_faults; i++) {
        const fb_fault_t *f = &self->faults[i];
        if (f->kind != FB_FAULT_NOISY)
            continue;
        for (size_t k = 0; k < n; k++)
            if (!strcmp(nodes[k], f->a))
                x *= exp(f->sigma * s_normal(s_hash_str(h ^ fb_mix64(i + 1), nodes[k])));
    }
    return x;
}

bool fb_faultmodel_lost(const fb_faultmodel_t *self, const char *test_id, const char *member)
{
    if (self->lost_rate <= 0.0)
        return false;
    uint64_t h = s_hash_str(s_hash_str(s_base(self), test_id), member);
    return s_unit(h ^ fb_mix64(S_SALT_LOST)) < self->lost_rate;
}

/* ---- bursts -------------------------------------------------------------------------------- */

/* Whether bursty fault i is active at t: an alternating process of active periods (exponential,
 * mean burst_s) and quiet ones (exponential, mean burst_s (1 - q) / q), so active a share q of
 * the time; a two-state Markov process, started in its stationary state at every epoch. */
static bool s_burst_active(const fb_faultmodel_t *self, size_t i, double t)
{
    const fb_fault_t *f = &self->faults[i];
    if (f->q >= 1.0)
        return true;
    double on = f->burst_s, off = f->burst_s * (1.0 - f->q) / f->q;
    double epoch = S_BURST_EPOCH_CYCLES * (on + off);
    if (!(t > 0.0))
        t = 0.0;
    double e = floor(t / epoch);
    uint64_t state =
        fb_mix64(s_base(self) ^ fb_mix64(i + 1)) ^ fb_mix64((uint64_t)e + S_SALT_BURST);
    bool active = fb_rng_unit(fb_splitmix64(&state)) < f->q;
    double at = e * epoch;
    for (int step = 0; step < S_BURST_MAX_STEPS; step++) {
        at += -(active ? on : off) * log(1.0 - fb_rng_unit(fb_splitmix64(&state)));
        if (at > t)
            return active;
        active = !active;
    }
    return active;
}

bool fb_faultmodel_active(const fb_faultmodel_t *self, size_t i, double t_s)
{
    if (i >= self->n_faults)
        return false;
    const fb_fault_t *f = &self->faults[i];
    return f->kind == FB_FAULT_INTERMITTENT && f->burst_s > 0.0 ? s_burst_active(self, i, t_s)
                                                                : true;
}

void fb_faultmodel_destroy(fb_faultmodel_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_faultmodel_t *self = *self_p;
    *self_p = NULL;
    for (size_t i = 0; i < self->n_faults; i++) {
        free(self->faults[i].part);
        free(self->faults[i].a);
        free(self->faults[i].b);
    }
    free(self->faults);
    fb_strmap_destroy(&self->leaf_index);
    free(self->source);
    free(self);
}

/* ---- binding to the fabric ----------------------------------------------------------------- */

static size_t s_leaf_index(const fb_faultmodel_t *self, const char *leaf)
{
    return leaf && self->leaf_index ? (size_t)(uintptr_t)fb_strmap_get(self->leaf_index, leaf) : 0;
}

static bool s_leaf_has_spine(const fb_faultmodel_t *self, size_t leaf_plus1, const char *spine)
{
    size_t n = 0;
    const char *const *spines = fb_topology_leaf_spines(self->topo, leaf_plus1 - 1, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(spines[i], spine))
            return true;
    return false;
}

/* True when the two ends name a link of the topology: node and its leaf, or leaf and spine. */
static bool s_is_link(const fb_faultmodel_t *self, const char *x, const char *y)
{
    const char *leaf = fb_topology_leaf_of(self->topo, x);
    if (leaf)
        return !strcmp(leaf, y);
    size_t li = s_leaf_index(self, x);
    return li && s_leaf_has_spine(self, li, y);
}

static int s_check_fault(const fb_faultmodel_t *self, fb_yaml_t *ctx, size_t i)
{
    const fb_fault_t *f = &self->faults[i];
    char path[48];
    snprintf(path, sizeof path, "faults[%zu].%s", i, fb_fault_site_name(f->site));
    if (f->site == FB_FAULT_AT_LEAF) {
        if (s_leaf_index(self, f->a))
            return 0;
        return fb_yaml_fail(ctx, f->line, path,
                            "%s is not a leaf of the topology; expected one of its %zu leaf "
                            "switches, e.g. %s",
                            f->a, fb_topology_n_leaves(self->topo),
                            fb_topology_n_leaves(self->topo) ? fb_topology_leaf_name(self->topo, 0)
                                                             : "(none)");
    }
    if (f->site != FB_FAULT_AT_LINK) {
        if (!fb_topology_leaf_of(self->topo, f->a))
            return fb_yaml_fail(ctx, f->line, path,
                                "%s is not a node of the fleet; expected a node of "
                                "the topology",
                                f->a);
        if (f->site == FB_FAULT_AT_NIC && f->rail >= self->rails)
            return fb_yaml_fail(ctx, f->line, path,
                                "rail %u of %s does not exist; expected a rail "
                                "from 0 to %u (rails: %u)",
                                f->rail, f->a, self->rails - 1, self->rails);
        return 0;
    }
    if (s_is_link(self, f->a, f->b) || s_is_link(self, f->b, f->a))
        return 0;
    return fb_yaml_fail(ctx, f->line, path,
                        "%s is not a link of the topology; expected NODE<->LEAF "
                        "(a node and its leaf) or LEAF<->SPINE (a leaf and one of its spines)",
                        f->part);
}

int fb_faultmodel_bind(fb_faultmodel_t *self, const fb_topology_t *topo, char **error_out)
{
    if (error_out)
        *error_out = NULL;
    self->topo = topo;
    fb_strmap_destroy(&self->leaf_index);
    self->leaf_index = fb_strmap_new();
    for (size_t i = 0; i < fb_topology_n_leaves(topo); i++)
        fb_strmap_put(self->leaf_index, fb_topology_leaf_name(topo, i), (void *)(uintptr_t)(i + 1));
    fb_yaml_t ctx = {self->source, "", 0, NULL, NULL, 0};
    for (size_t i = 0; i < self->n_faults; i++) {
        if (s_check_fault(self, &ctx, i)) {
            self->topo = NULL;
            fb_strmap_destroy(&self->leaf_index);
            if (error_out)
                *error_out = ctx.error;
            else
                free(ctx.error);
            return -EINVAL;
        }
    }
    return 0;
}

/* ---- routes -------------------------------------------------------------------------------- */

typedef struct {
    const char *a, *b;
} s_hop_t;

/* The links of the flow src -> dst (at most 4), or 0 when not bound or a node is unknown. */
/* The spine the routes give the flow src -> dst, as the topology's name (one of common[]), or
 * NULL when they give none of them. */
static const char *s_routed_spine(const fb_faultmodel_t *self, const char *src, const char *dst,
                                  const char *const *common, size_t nc)
{
    const char *spine = fb_routes_spine(self->routes, src, dst, NULL);
    for (size_t i = 0; spine && i < nc; i++)
        if (!strcmp(common[i], spine))
            return common[i];
    return NULL;
}

void fb_faultmodel_set_routes(fb_faultmodel_t *self, const fb_routes_t *routes)
{
    self->routes = routes;
}

static size_t s_route(const fb_faultmodel_t *self, const char *src, const char *dst, s_hop_t *hops)
{
    if (!self->topo)
        return 0;
    const char *ls = fb_topology_leaf_of(self->topo, src),
               *ld = fb_topology_leaf_of(self->topo, dst);
    if (!ls || !ld)
        return 0;
    size_t n = 0;
    hops[n++] = (s_hop_t){src, ls};
    if (strcmp(ls, ld)) {
        size_t is = s_leaf_index(self, ls), id = s_leaf_index(self, ld), ns = 0, nd = 0;
        const char *const *ss = fb_topology_leaf_spines(self->topo, is - 1, &ns);
        const char *const *sd = fb_topology_leaf_spines(self->topo, id - 1, &nd);
        const char *common[64];
        size_t nc = 0;
        for (size_t i = 0; i < ns && nc < FB_ARRAY_LEN(common); i++)
            for (size_t j = 0; j < nd; j++)
                if (!strcmp(ss[i], sd[j])) {
                    common[nc++] = ss[i];
                    break;
                }
        if (nc) {
            /* the routes a subnet manager set where the world has them, else by destination */
            const char *spine = self->routes ? s_routed_spine(self, src, dst, common, nc) : NULL;
            if (!spine)
                spine = common[fb_mix64(s_hash_str(0, dst)) % nc];
            hops[n++] = (s_hop_t){ls, spine};
            hops[n++] = (s_hop_t){ld, spine};
        }
    }
    hops[n++] = (s_hop_t){dst, ld};
    return n;
}

static bool s_link_is(const fb_fault_t *f, const s_hop_t *h)
{
    return (!strcmp(f->a, h->a) && !strcmp(f->b, h->b)) ||
           (!strcmp(f->a, h->b) && !strcmp(f->b, h->a));
}

static bool s_rail_matches(const fb_fault_t *f, int rail)
{
    return rail < 0 || (unsigned)rail == f->rail;
}

/* Whether fault f lies on the flow src -> dst on rail. */
static bool s_on_flow(const fb_fault_t *f, const char *src, const char *dst, int rail,
                      const s_hop_t *hops, size_t n_hops)
{
    switch (f->site) {
    case FB_FAULT_AT_NODE:
        return !strcmp(f->a, src) || !strcmp(f->a, dst);
    case FB_FAULT_AT_NIC:
        return s_rail_matches(f, rail) && (!strcmp(f->a, src) || !strcmp(f->a, dst));
    case FB_FAULT_AT_LEAF: /* the first hop ends at src's leaf, the last at dst's */
        return n_hops > 0 && (!strcmp(f->a, hops[0].b) || !strcmp(f->a, hops[n_hops - 1].b));
    default:
        for (size_t i = 0; i < n_hops; i++)
            if (s_link_is(f, &hops[i]))
                return true;
        return false;
    }
}

double fb_faultmodel_flow_factor(const fb_faultmodel_t *self, const char *src, const char *dst,
                                 int rail)
{
    s_hop_t hops[4];
    size_t n_hops = s_route(self, src, dst, hops);
    double factor = 1.0;
    for (size_t i = 0; i < self->n_faults; i++) {
        const fb_fault_t *f = &self->faults[i];
        if (f->kind == FB_FAULT_SLOW && f->factor < factor &&
            s_on_flow(f, src, dst, rail, hops, n_hops))
            factor = f->factor;
    }
    return factor;
}

const char *fb_faultmodel_spine(const fb_faultmodel_t *self, const char *src, const char *dst)
{
    s_hop_t hops[4];
    return s_route(self, src, dst, hops) == 4 ? hops[1].b : NULL;
}

double fb_faultmodel_node_factor(const fb_faultmodel_t *self, const char *node)
{
    double factor = 1.0;
    for (size_t i = 0; i < self->n_faults; i++) {
        const fb_fault_t *f = &self->faults[i];
        if (f->kind == FB_FAULT_SLOW && f->site == FB_FAULT_AT_NODE && f->factor < factor &&
            !strcmp(f->a, node))
            factor = f->factor;
    }
    return factor;
}

/* ---- judging ------------------------------------------------------------------------------- */

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Which faults lie in the test (in[i]) and the smallest slow factor over its flows. */
static double s_faults_in(const fb_faultmodel_t *self, const fb_sim_test_t *t,
                          const char *const *sorted, bool *in)
{
    size_t n = t->n_members;
    double factor = 1.0;
    if (n == 1) {
        for (size_t i = 0; i < self->n_faults; i++) {
            const fb_fault_t *f = &self->faults[i];
            in[i] = f->site == FB_FAULT_AT_NODE && !strcmp(f->a, sorted[0]);
            if (in[i] && f->kind == FB_FAULT_SLOW && f->factor < factor)
                factor = f->factor;
        }
        return factor;
    }
    /* A pair has one flow each way; a ring of n > 2 has n neighbour links, each both ways. */
    size_t n_links = n == 2 ? 1 : n;
    for (size_t k = 0; k < n_links; k++) {
        const char *x = sorted[k], *y = sorted[(k + 1) % n];
        for (int dir = 0; dir < 2; dir++) {
            const char *src = dir ? y : x, *dst = dir ? x : y;
            s_hop_t hops[4];
            size_t n_hops = s_route(self, src, dst, hops);
            for (size_t i = 0; i < self->n_faults; i++) {
                const fb_fault_t *f = &self->faults[i];
                if (!s_on_flow(f, src, dst, t->rail, hops, n_hops))
                    continue;
                in[i] = true;
                if (f->kind == FB_FAULT_SLOW && f->factor < factor)
                    factor = f->factor;
            }
        }
    }
    return factor;
}

/* Whether fault i, in a test with draw key `key` that starts at start_s, shows. */
static bool s_shows(const fb_faultmodel_t *self, size_t i, uint64_t key, double start_s)
{
    const fb_fault_t *f = &self->faults[i];
    switch (f->kind) {
    case FB_FAULT_HARD:
        return true;
    case FB_FAULT_INTERMITTENT:
        return f->burst_s > 0.0 ? s_burst_active(self, i, start_s)
                                : s_unit(key ^ fb_mix64(i + 1)) < f->q;
    default: /* slow and noisy parts never fail a test by themselves */
        return false;
    }
}

/* The member (of sorted[0..n)) that reports the opposite verdict, or NULL. */
static const char *s_disagreeing(const fb_faultmodel_t *self, uint64_t key,
                                 const char *const *sorted, size_t n)
{
    if (n < 2 || self->disagree_rate <= 0.0 ||
        s_unit(key ^ fb_mix64(S_SALT_DISAGREE)) >= self->disagree_rate)
        return NULL;
    size_t who = (size_t)(s_unit(key ^ fb_mix64(S_SALT_WHO)) * (double)n);
    return sorted[who < n ? who : n - 1];
}

int fb_faultmodel_judge_at(const fb_faultmodel_t *self, const fb_sim_test_t *t, double start_s,
                           fb_sim_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    out->factor = 1.0;
    if (!t || !t->test_id || !t->members || t->n_members == 0)
        return -EINVAL;
    const char **sorted = xmalloc(t->n_members * sizeof *sorted);
    memcpy(sorted, t->members, t->n_members * sizeof *sorted);
    qsort(sorted, t->n_members, sizeof *sorted, s_cmp_str);
    /* Every draw of this test hashes the same key: seed, test id and the sorted members. */
    uint64_t key = s_hash_str(s_base(self), t->test_id);
    for (size_t i = 0; i < t->n_members; i++)
        key = s_hash_str(key, sorted[i]);
    bool *in = xcalloc(self->n_faults ? self->n_faults : 1, sizeof *in);
    out->factor = s_faults_in(self, t, sorted, in);
    for (size_t i = 0; i < self->n_faults; i++) {
        if (!in[i] || !s_shows(self, i, key, start_s))
            continue;
        if (out->n_causes < FB_SIM_CAUSES_MAX)
            out->causes[out->n_causes] = i;
        out->n_causes++;
    }
    bool spurious = s_unit(key ^ fb_mix64(0)) < self->false_fail_rate;
    out->failed = out->n_causes > 0 || spurious;
    out->spurious = spurious && out->n_causes == 0;
    out->disagreeing = s_disagreeing(self, key, sorted, t->n_members);
    free(in);
    free(sorted);
    return 0;
}

int fb_faultmodel_judge(const fb_faultmodel_t *self, const fb_sim_test_t *t, fb_sim_outcome_t *out)
{
    return fb_faultmodel_judge_at(self, t, 0.0, out);
}

bool fb_sim_member_failed(const fb_sim_outcome_t *out, const char *member)
{
    bool flip = out->disagreeing && member && !strcmp(out->disagreeing, member);
    return out->failed != flip;
}

/* ---- accessors ----------------------------------------------------------------------------- */

uint64_t fb_faultmodel_seed(const fb_faultmodel_t *self)
{
    return self->seed;
}

void fb_faultmodel_set_seed(fb_faultmodel_t *self, uint64_t seed)
{
    self->seed = seed;
}

double fb_faultmodel_false_fail_rate(const fb_faultmodel_t *self)
{
    return self->false_fail_rate;
}

double fb_faultmodel_lost_rate(const fb_faultmodel_t *self)
{
    return self->lost_rate;
}

double fb_faultmodel_disagree_rate(const fb_faultmodel_t *self)
{
    return self->disagree_rate;
}

fb_noise_dist_t fb_faultmodel_noise_dist(const fb_faultmodel_t *self, double *param)
{
    if (param)
        *param = self->noise_param;
    return self->noise_dist;
}

unsigned fb_faultmodel_rails(const fb_faultmodel_t *self)
{
    return self->rails;
}

size_t fb_faultmodel_count(const fb_faultmodel_t *self)
{
    return self->n_faults;
}

const fb_fault_t *fb_faultmodel_fault(const fb_faultmodel_t *self, size_t i)
{
    return i < self->n_faults ? &self->faults[i] : NULL;
}

const char *fb_fault_kind_name(fb_fault_kind_t kind)
{
    switch (kind) {
    case FB_FAULT_HARD:
        return "hard";
    case FB_FAULT_INTERMITTENT:
        return "intermittent";
    case FB_FAULT_SLOW:
        return "slow";
    default:
        return "noisy";
    }
}

const char *fb_fault_site_name(fb_fault_site_t site)
{
    switch (site) {
    case FB_FAULT_AT_NODE:
        return "node";
    case FB_FAULT_AT_NIC:
        return "nic";
    case FB_FAULT_AT_LINK:
        return "link";
    default:
        return "leaf";
    }
}

const char *fb_noise_dist_name(fb_noise_dist_t dist)
{
    return dist == FB_NOISE_LOGNORMAL ? "lognormal" : "uniform";
}
