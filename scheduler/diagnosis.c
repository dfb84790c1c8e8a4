/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine core: results recorded per round, posteriors over single-fault hypotheses per
 * node unit (the node or one of its rails, each with a q from a grid) recomputed over every result
 * at each round's end, the fleet's own estimates of the false-fail rate and of the mixture over q,
 * and the one naming standard: bad (posterior threshold, independent confirmations, fleet
 * significance), cleared (its own tests rule a fault out), undecided, passed. Round planning is
 * in diagnosis_plan.c, splits in diagnosis_split.c. The model and why are in docs/diagnosis.md;
 * this file does no I/O. */
#include "diagnosis_internal.h"

#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double diag__qgrid[DIAG_NQ] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.97};
const double diag__agrid[DIAG_NA] = {0.1, 0.2, 0.35, 0.5, 0.7};

/* Posterior iterations: converged when no hypothesis moves more than this. */
#define S_CONVERGED 1e-9
#define S_MAX_ITER 200
#define S_MAX_EM 5

void diag__ivec_push(diag_ivec_t *v, int x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4;
        v->v = xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = x;
}

bool diag__ivec_has(const diag_ivec_t *v, int x)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == x)
            return true;
    return false;
}

static void s_ivec_add_unique(diag_ivec_t *v, int x)
{
    if (!diag__ivec_has(v, x))
        diag__ivec_push(v, x);
}

void fb_diag_params_default(fb_diag_params_t *p)
{
    assert(p);
    p->prior_bad = 0.01;
    p->false_fail_rate = 0.05;
    p->false_fail_weight = 20.0;
    p->mixture_weight = 1.0;
    p->bad_threshold = 0.99;
    p->implicate_ratio = 3.0;
    p->clear_threshold = 0.001;
    p->clear_q = 0.25;
    p->clear_confidence = 0.99;
    p->min_confirmations = 2;
    p->fleet_error = 0.001;
    p->counter_lr = 100.0;
}

static bool s_prob_ok(double x)
{
    return x > 0.0 && x < 1.0;
}

static bool s_params_ok(const fb_diag_params_t *p)
{
    return p->false_fail_rate >= 0.0 && p->false_fail_rate < 1.0 && p->false_fail_weight >= 0.0 &&
           p->mixture_weight > 0.0 && s_prob_ok(p->prior_bad) && s_prob_ok(p->bad_threshold) &&
           s_prob_ok(p->clear_threshold) && p->clear_threshold < p->prior_bad &&
           p->prior_bad < p->bad_threshold && p->implicate_ratio >= 1.0 && s_prob_ok(p->clear_q) &&
           s_prob_ok(p->clear_confidence) && p->min_confirmations >= 1 && p->fleet_error >= 0.0 &&
           p->fleet_error < 1.0 && p->counter_lr >= 1.0;
}

fb_diag_t *fb_diag_new(const fb_diag_params_t *params)
{
    fb_diag_params_t par;
    if (params)
        par = *params;
    else
        fb_diag_params_default(&par);
    if (!s_params_ok(&par))
        return NULL;
    fb_diag_t *d = xcalloc(1, sizeof *d);
    d->par = par;
    d->index = fb_strmap_new();
    d->f_multi = d->f_local = par.false_fail_rate;
    d->f_multi_hi = d->f_local_hi = par.false_fail_rate;
    for (size_t j = 0; j < DIAG_NQ; j++)
        d->mix[j] = 1.0 / DIAG_NQ;
    d->q_clear = par.clear_q;
    return d;
}

static void s_test_free(diag_test_t *t)
{
    free(t->id);
    free(t->mem);
    free(t->inv);
    free(t->units);
    free(t->unit_rail);
    free(t->trusted);
    free(t->p_before);
    free(t->p_after);
}

static void s_evidence_free(diag_ent_t *e);

void fb_diag_destroy(fb_diag_t **self_p)
{
    assert(self_p);
    fb_diag_t *d = *self_p;
    if (!d)
        return;
    for (size_t i = 0; i < d->n_ents; i++) {
        diag_ent_t *e = &d->ents[i];
        free(e->name);
        free(e->children.v);
        free(e->post);
        free(e->rpass);
        free(e->tests.v);
        free(e->ufails.v);
        free(e->counters.v);
        free(e->partners.v);
        s_evidence_free(e);
    }
    free(d->ents);
    for (size_t i = 0; i < d->n_tests; i++)
        s_test_free(&d->tests[i]);
    free(d->tests);
    for (size_t i = 0; i < d->n_counters; i++) {
        free(d->counters[i].test_id);
        free(d->counters[i].what);
    }
    free(d->counters);
    for (size_t i = 0; i < d->n_rails; i++)
        free(d->rails[i]);
    free(d->rails);
    fb_strmap_destroy(&d->index);
    free(d);
    *self_p = NULL;
}

int diag__find(const fb_diag_t *d, const char *name)
{
    if (!name)
        return -1;
    void *v = fb_strmap_get(d->index, name);
    return v ? (int)((uintptr_t)v - 1) : -1;
}

int diag__node_of(const fb_diag_t *d, int i)
{
    return d->ents[i].parent >= 0 ? d->ents[i].parent : i;
}

static int s_add_ent(fb_diag_t *d, const char *name, int parent)
{
    if (d->n_ents == d->cap_ents) {
        d->cap_ents = d->cap_ents ? 2 * d->cap_ents : 64;
        d->ents = xrealloc(d->ents, d->cap_ents * sizeof *d->ents);
    }
    int idx = (int)d->n_ents++;
    diag_ent_t *e = &d->ents[idx];
    memset(e, 0, sizeof *e);
    e->name = xstrdup(name);
    e->parent = parent;
    e->rail = -1;
    e->trusted = true;
    e->chance = 1.0;
    fb_strmap_put(d->index, e->name, (void *)(uintptr_t)(idx + 1));
    return idx;
}

/* The index of rail name p[0..len) in d->rails, added when new. */
static int s_rail_index(fb_diag_t *d, const char *p, size_t len)
{
    for (size_t i = 0; i < d->n_rails; i++)
        if (strlen(d->rails[i]) == len && !strncmp(d->rails[i], p, len))
            return (int)i;
    d->rails = xrealloc(d->rails, (d->n_rails + 1) * sizeof *d->rails);
    d->rails[d->n_rails] = xstrndup(p, len);
    return (int)d->n_rails++;
}

static bool s_name_ok(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ',' || s[i] == '/' || (unsigned char)s[i] <= ' ')
            return false;
    return true;
}

static bool s_rails_ok(const char *rails_csv)
{
    if (!rails_csv || !*rails_csv)
        return true;
    for (const char *p = rails_csv;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (!s_name_ok(p, len))
            return false;
        if (!c)
            return true;
        p = c + 1;
    }
}

/* Hypotheses of a unit with R rails: 0 all good; 1 + p * DIAG_NQ + j: part p (0 the node,
 * 1 + c its rail c) is the bad one and shows with q = diag__qgrid[j]. */
static size_t s_hyp(size_t part, size_t j)
{
    return 1 + part * DIAG_NQ + j;
}

/* After them, a unit with R rails: the node is bad in bursts, active in a share diag__agrid[b] of
 * rounds. */
static size_t s_hyp_burst(size_t R, size_t b)
{
    return 1 + (1 + R) * DIAG_NQ + b;
}

int fb_diag_add_node(fb_diag_t *d, const char *node, const char *rails_csv)
{
    assert(d);
    if (!node || !s_name_ok(node, strlen(node)) || !s_rails_ok(rails_csv))
        return -EINVAL;
    if (diag__find(d, node) >= 0)
        return -EEXIST;
    int ni = s_add_ent(d, node, -1);
    d->n_nodes++;
    for (const char *p = rails_csv && *rails_csv ? rails_csv : NULL; p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char *rail = xasprintf("%s/%.*s", node, (int)len, p);
        if (diag__find(d, rail) < 0) { /* a rail listed twice is added once */
            int ri = s_add_ent(d, rail, ni);
            d->ents[ri].rail = s_rail_index(d, p, len);
            diag__ivec_push(&d->ents[ni].children, ri);
        }
        free(rail);
        p = c ? c + 1 : NULL;
    }
    diag_ent_t *ne = &d->ents[ni];
    size_t R = ne->children.n;
    /* The node and its NICs together: prior_bad for the node, and as much again shared by its
     * rails (a NIC of eight is not as likely to be bad as the whole node). */
    double bursty = d->par.prior_bad * DIAG_BURSTY_SHARE;
    ne->prior = d->par.prior_bad + bursty;
    ne->n_post = 1 + (1 + R) * DIAG_NQ + DIAG_NA;
    ne->post = xcalloc(ne->n_post, sizeof *ne->post);
    ne->post[0] = 1.0 - d->par.prior_bad * (R ? 2.0 : 1.0) - bursty;
    for (size_t b = 0; b < DIAG_NA; b++)
        ne->post[s_hyp_burst(R, b)] = bursty / DIAG_NA;
    for (size_t part = 0; part <= R; part++) {
        double pr = part ? d->par.prior_bad / (double)R : d->par.prior_bad;
        if (part)
            d->ents[ne->children.v[part - 1]].prior = d->ents[ne->children.v[part - 1]].p = pr;
        for (size_t j = 0; j < DIAG_NQ; j++)
            ne->post[s_hyp(part, j)] = pr * d->mix[j];
    }
    ne->p = ne->prior;
    return 0;
}

/* ---- recording ---- */

static diag_test_t *s_new_test(fb_diag_t *d)
{
    if (d->n_tests == d->cap_tests) {
        d->cap_tests = d->cap_tests ? 2 * d->cap_tests : 256;
        d->tests = xrealloc(d->tests, d->cap_tests * sizeof *d->tests);
    }
    diag_test_t *t = &d->tests[d->n_tests++];
    memset(t, 0, sizeof *t);
    return t;
}

/* The members' entities; -ENOENT for an unknown one, -EINVAL for two of one node. */
static int s_members(const fb_diag_t *d, const char *const *members, size_t n, int *mem)
{
    for (size_t k = 0; k < n; k++) {
        mem[k] = diag__find(d, members[k]);
        if (mem[k] < 0)
            return -ENOENT;
    }
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < k; j++)
            if (diag__node_of(d, mem[j]) == diag__node_of(d, mem[k]))
                return -EINVAL;
    return 0;
}

int fb_diag_record(fb_diag_t *d, const char *test_id, const char *const *members, size_t n,
                   bool failed)
{
    assert(d);
    if (!test_id || !members || n == 0)
        return -EINVAL;
    int *mem = xmalloc(n * sizeof *mem);
    int rc = s_members(d, members, n, mem);
    if (rc) {
        free(mem);
        return rc;
    }
    diag_test_t *t = s_new_test(d);
    t->id = xstrdup(test_id);
    t->mem = mem;
    t->n_mem = n;
    t->failed = failed;
    t->inv = xmalloc(2 * n * sizeof *t->inv);
    t->units = xmalloc(n * sizeof *t->units);
    t->unit_rail = xmalloc(n * sizeof *t->unit_rail);
    for (size_t k = 0; k < n; k++)
        t->inv[t->n_inv++] = mem[k];
    for (size_t k = 0; k < n; k++) {
        int u = diag__node_of(d, mem[k]);
        if (u != mem[k])
            t->inv[t->n_inv++] = u;
        int c = -1;
        for (size_t x = 0; u != mem[k] && x < d->ents[u].children.n; x++)
            if (d->ents[u].children.v[x] == mem[k])
                c = (int)x;
        t->units[t->n_units] = u;
        t->unit_rail[t->n_units++] = c;
    }
    d->unsettled = true;
    return 0;
}

int fb_diag_record_counter(fb_diag_t *d, const char *test_id, const char *rail, const char *what)
{
    assert(d);
    int ri = diag__find(d, rail);
    if (!test_id)
        return -EINVAL;
    if (ri < 0)
        return -ENOENT;
    if (d->ents[ri].parent < 0)
        return -EINVAL;
    d->counters = xrealloc(d->counters, (d->n_counters + 1) * sizeof *d->counters);
    d->counters[d->n_counters++] = (diag_counter_t){
        xstrdup(test_id), xstrdup(what ? what : "port counter increased"), ri, 0, false};
    d->unsettled = true;
    return 0;
}

/* ---- states ---- */

bool diag__undecided(const fb_diag_t *d, int i)
{
    const diag_ent_t *e = &d->ents[i];
    return e->implicated && !e->bad && !e->cleared && !d->ents[diag__node_of(d, i)].bad;
}

bool diag__ent_trusted(const fb_diag_t *d, int i)
{
    return !d->ents[i].bad && !diag__undecided(d, i);
}

bool diag__node_trusted(const fb_diag_t *d, int ni)
{
    if (!diag__ent_trusted(d, ni))
        return false;
    const diag_ivec_t *ch = &d->ents[ni].children;
    for (size_t k = 0; k < ch->n; k++)
        if (!d->ents[ch->v[k]].bad && diag__undecided(d, ch->v[k]))
            return false;
    return true;
}

/* ---- settling a round: taking the results in ---- */

static const fb_diag_t *s_sort_d; /* qsort has no context argument in C11 */

static int s_cmp_test_id(const void *a, const void *b)
{
    const diag_test_t *x = &s_sort_d->tests[*(const int *)a];
    const diag_test_t *y = &s_sort_d->tests[*(const int *)b];
    int c = strcmp(x->id, y->id);
    return c ? c : (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The pending tests join the round: each entity's list stays ordered by (round, id) whatever
 * the order they were recorded in; trust as of the plan (the last settle); passes counted. */
static void s_take_tests(fb_diag_t *d, unsigned round)
{
    size_t first = d->settled_tests, n = d->n_tests - first;
    int *order = xmalloc((n ? n : 1) * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = (int)(first + i);
    s_sort_d = d;
    qsort(order, n, sizeof *order, s_cmp_test_id);
    for (size_t o = 0; o < n; o++) {
        int ti = order[o];
        diag_test_t *t = &d->tests[ti];
        t->round = round;
        t->settled = true;
        t->trusted = xmalloc(t->n_mem * sizeof *t->trusted);
        for (size_t k = 0; k < t->n_mem; k++) {
            int u = diag__node_of(d, t->mem[k]);
            t->trusted[k] = d->ents[u].trusted && diag__ent_trusted(d, t->mem[k]);
        }
        t->p_before = xmalloc(t->n_inv * sizeof *t->p_before);
        t->p_after = xmalloc(t->n_inv * sizeof *t->p_after);
        for (size_t k = 0; k < t->n_inv; k++) {
            diag_ent_t *e = &d->ents[t->inv[k]];
            t->p_before[k] = e->p;
            diag__ivec_push(&e->tests, ti);
            e->n_pass += !t->failed;
            if (e->parent < 0) {
                if (e->n_rpass <= round) {
                    e->rpass = xrealloc(e->rpass, (round + 1) * sizeof *e->rpass);
                    memset(e->rpass + e->n_rpass, 0, (round + 1 - e->n_rpass) * sizeof *e->rpass);
                    e->n_rpass = round + 1;
                }
                e->rpass[round] += !t->failed;
            }
            int self = diag__node_of(d, t->inv[k]);
            for (size_t s = 0; s < t->n_units; s++)
                if (t->units[s] != self)
                    s_ivec_add_unique(&e->partners, t->units[s]);
        }
        for (size_t s = 0; t->failed && s < t->n_units; s++)
            diag__ivec_push(&d->ents[t->units[s]].ufails, ti);
    }
    d->settled_tests = d->n_tests;
    free(order);
    for (size_t i = d->settled_counters; i < d->n_counters; i++) {
        diag_counter_t *c = &d->counters[i];
        c->round = round;
        c->settled = true;
        diag__ivec_push(&d->ents[c->rail].counters, (int)i);
    }
    d->settled_counters = d->n_counters;
}

/* Whether test t holds a part named bad other than entity self. */
static bool s_explained(const fb_diag_t *d, const diag_test_t *t, int self)
{
    for (size_t k = 0; k < t->n_inv; k++)
        if (t->inv[k] != self && d->ents[t->inv[k]].bad)
            return true;
    return false;
}

/* Whether a part in test t is named bad or probably bad (P >= 0.5): its failures are that part's,
 * not the fleet's false fails. */
static bool s_holds_fault(const fb_diag_t *d, const diag_test_t *t)
{
    for (size_t k = 0; k < t->n_inv; k++)
        if (d->ents[t->inv[k]].bad || d->ents[t->inv[k]].p >= 0.5)
            return true;
    return false;
}

/* The false-fail rates: tests whose members were all trusted when their round was planned and
 * that hold no part named or probably bad, node-local ones apart. Trust when planned keeps the
 * estimate free of the selection a failure makes (the members of a failed test are suspects
 * after it); leaving out the tests of probable faults keeps a fault's own failures out, even in a
 * small fleet where they would be most of the failures. The upper bound (two standard errors
 * above) is what fleet significance uses: a rate underestimated names healthy parts. */
static void s_estimate_f(fb_diag_t *d)
{
    double n[2] = {0, 0}, k[2] = {0, 0};
    for (size_t i = 0; i < d->settled_tests; i++) {
        const diag_test_t *t = &d->tests[i];
        bool all = true;
        for (size_t m = 0; m < t->n_mem && all; m++)
            all = t->trusted[m];
        if (!all || s_holds_fault(d, t))
            continue;
        int cls = t->n_mem == 1;
        n[cls] += 1.0;
        k[cls] += t->failed;
    }
    double w = d->par.false_fail_weight, f0 = d->par.false_fail_rate;
    double f[2], hi[2];
    for (int c = 0; c < 2; c++) {
        f[c] = w + n[c] > 0.0 ? (f0 * w + k[c]) / (w + n[c]) : f0;
        hi[c] = f[c] + 2.0 * sqrt(f[c] * (1.0 - f[c]) / (w + n[c] > 1.0 ? w + n[c] : 1.0));
        if (hi[c] > 0.999)
            hi[c] = 0.999;
    }
    d->f_multi = f[0];
    d->f_local = f[1];
    d->f_multi_hi = hi[0];
    d->f_local_hi = hi[1];
}

/* ---- settling a round: the posteriors ---- */

/* Log-weights of unit u's hypotheses from its prior, the mixture, its passes (a passing test
 * says the same about every hypothesis except those that put the fault in it: under mean field
 * the other members' part cancels) and the port counters against its rails. */
static void s_base(const fb_diag_t *d, int u, double *lw)
{
    double log_miss[DIAG_NQ], log_mix[DIAG_NQ];
    for (size_t j = 0; j < DIAG_NQ; j++) {
        log_miss[j] = log1p(-diag__qgrid[j]);
        log_mix[j] = log(d->mix[j]);
    }
    const diag_ent_t *ue = &d->ents[u];
    size_t R = ue->children.n;
    lw[0] = log(1.0 - d->par.prior_bad * (R ? 2.0 : 1.0) - d->par.prior_bad * DIAG_BURSTY_SHARE);
    for (size_t part = 0; part <= R; part++) {
        const diag_ent_t *pe = part ? &d->ents[ue->children.v[part - 1]] : ue;
        double lp = log(pe->prior) + (double)pe->counters.n * log(d->par.counter_lr);
        for (size_t j = 0; j < DIAG_NQ; j++)
            lw[s_hyp(part, j)] = lp + log_mix[j] + (double)pe->n_pass * log_miss[j];
    }
}

/* The chance that unit slot s of failed test t shows a fault in it, under post. */
static double s_show(const fb_diag_t *d, const diag_test_t *t, size_t s, const double *post)
{
    double m = 0.0;
    for (size_t j = 0; j < DIAG_NQ; j++) {
        m += post[s_hyp(0, j)] * diag__qgrid[j];
        if (t->unit_rail[s] >= 0)
            m += post[s_hyp(1 + (size_t)t->unit_rail[s], j)] * diag__qgrid[j];
    }
    /* a bursty node shows in the tests of the rounds it was active in (s_burst) */
    return m + post[d->ents[t->units[s]].n_post + t->round];
}

static void s_normalise(double *lw, size_t n, double *out)
{
    double mx = lw[0];
    for (size_t h = 1; h < n; h++)
        mx = lw[h] > mx ? lw[h] : mx;
    double sum = 0.0;
    for (size_t h = 0; h < n; h++) {
        out[h] = exp(lw[h] - mx);
        sum += out[h];
    }
    for (size_t h = 0; h < n; h++)
        out[h] /= sum;
}

/* Unit u's bursty hypotheses, round by round: in a round the fault is active (share a), and then
 * each of the node's tests fails with DIAG_Q_ON, or quiet, and then its tests fail as they would
 * with the node good (its failed test i with 1 - keeps[i]). Rounds multiply:
 *   L(a) = prod_r (a * P(round r | active) + (1 - a) * P(round r | quiet)),
 * passes entering as in s_base (the other members' part cancels). Then the posterior (out, from
 * the log-weights lw) and, after its hypotheses, per round the chance that the node showed a
 * fault in it: sum_b P(bursty with a_b) * P(active in r | a_b, round r) * DIAG_Q_ON. */
static void s_burst(const fb_diag_t *d, int u, const double *keeps, double *lw, double *out,
                    double *act)
{
    const diag_ent_t *ue = &d->ents[u];
    size_t R = ue->children.n, rounds = d->rounds;
    double lprior = log(d->par.prior_bad * DIAG_BURSTY_SHARE / DIAG_NA);
    for (size_t b = 0; b < DIAG_NA; b++)
        lw[s_hyp_burst(R, b)] = lprior;
    size_t f = 0;
    for (size_t r = 0; r < rounds; r++) {
        double on = 0.0, off = 0.0; /* log P(round r | active), log P(round r | quiet) */
        unsigned passes = r < ue->n_rpass ? ue->rpass[r] : 0;
        on += (double)passes * log1p(-DIAG_Q_ON);
        bool tested = passes > 0;
        for (; f < ue->ufails.n && d->tests[ue->ufails.v[f]].round == r; f++) {
            double miss = 1.0 - keeps[f];
            on += log(1.0 - (1.0 - DIAG_Q_ON) * keeps[f]);
            off += log(miss > 1e-12 ? miss : 1e-12);
            tested = true;
        }
        for (size_t b = 0; b < DIAG_NA; b++) {
            double a = diag__agrid[b];
            double x = log(a) + on, y = log1p(-a) + off, mx = x > y ? x : y;
            double l = mx + log(exp(x - mx) + exp(y - mx));
            lw[s_hyp_burst(R, b)] += tested ? l : 0.0;
            act[b * rounds + r] = tested ? exp(x - l) : a;
        }
    }
    s_normalise(lw, ue->n_post, out);
    for (size_t r = 0; r < rounds; r++) {
        double show = 0.0;
        for (size_t b = 0; b < DIAG_NA; b++)
            show += out[s_hyp_burst(R, b)] * act[b * rounds + r] * DIAG_Q_ON;
        out[ue->n_post + r] = show;
    }
}

/* Unit u's posterior from its base log-weights and its failed tests, the other members of each
 * entering through how likely they are to show a fault in it (mean field):
 *   P(fail | h) = 1 - (1 - s_h) * prod_{other units v} (1 - show_v) * (1 - f),
 *   s_h = q of h when h puts the fault in the test, else 0. */
static void s_unit_post(const fb_diag_t *d, int u, double *const *posts, double *lw, double *out,
                        double *keeps, double *act)
{
    const diag_ent_t *ue = &d->ents[u];
    s_base(d, u, lw);
    size_t steady = 1 + (1 + ue->children.n) * DIAG_NQ;
    for (size_t i = 0; i < ue->ufails.n; i++) {
        const diag_test_t *t = &d->tests[ue->ufails.v[i]];
        double others = 1.0;
        int rail = -1;
        for (size_t s = 0; s < t->n_units; s++) {
            if (t->units[s] == u)
                rail = t->unit_rail[s];
            else
                others *= 1.0 - s_show(d, t, s, posts[t->units[s]]);
        }
        double keep = others * (1.0 - (t->n_mem == 1 ? d->f_local : d->f_multi));
        keeps[i] = keep;
        for (size_t h = 0; h < steady; h++) {
            double sh = 0.0;
            if (h > 0) {
                size_t part = (h - 1) / DIAG_NQ;
                if (part == 0 || (int)part - 1 == rail)
                    sh = diag__qgrid[(h - 1) % DIAG_NQ];
            }
            double lik = 1.0 - (1.0 - sh) * keep;
            lw[h] += log(lik > 1e-12 ? lik : 1e-12); /* never rule a hypothesis out for good */
        }
    }
    s_burst(d, u, keeps, lw, out, act);
}

/* Every unit's posterior over every result so far: closed form for units in no failed test,
 * a fixed point (Jacobi iterations from the last round's posteriors, every unit moving at once,
 * so that the order units and results come in never matters) for the others. */
static void s_posteriors(fb_diag_t *d)
{
    size_t ne = d->n_ents ? d->n_ents : 1, maxh = 1;
    for (size_t i = 0; i < d->n_ents; i++)
        maxh = d->ents[i].n_post > maxh ? d->ents[i].n_post : maxh;
    double **posts = xcalloc(ne, sizeof *posts), **next = xcalloc(ne, sizeof *next);
    double *lw = xmalloc(maxh * sizeof *lw);
    size_t maxf = 1, rounds = d->rounds;
    for (size_t i = 0; i < d->n_ents; i++)
        maxf = d->ents[i].ufails.n > maxf ? d->ents[i].ufails.n : maxf;
    double *keeps = xmalloc(maxf * sizeof *keeps);
    double *act = xmalloc((DIAG_NA * rounds + 1) * sizeof *act);
    for (size_t i = 0; i < d->n_ents; i++) {
        const diag_ent_t *e = &d->ents[i];
        if (e->parent >= 0)
            continue;
        /* its hypotheses, then per round the chance a bursty fault of it showed (s_burst) */
        posts[i] = xcalloc(e->n_post + rounds + 1, sizeof *posts[i]);
        memcpy(posts[i], e->post, e->n_post * sizeof *posts[i]);
        next[i] = xcalloc(e->n_post + rounds + 1, sizeof *next[i]);
    }
    for (unsigned it = 0; it < S_MAX_ITER; it++) {
        double moved = 0.0;
        for (size_t i = 0; i < d->n_ents; i++) {
            const diag_ent_t *e = &d->ents[i];
            if (e->parent >= 0 || (it > 0 && e->ufails.n == 0))
                continue;
            s_unit_post(d, (int)i, posts, lw, next[i], keeps, act);
            for (size_t h = 0; h < e->n_post; h++) {
                /* damped once past the easy cases, against oscillation */
                double x = it < 20 ? next[i][h] : 0.5 * (next[i][h] + posts[i][h]);
                double dx = fabs(x - posts[i][h]);
                moved = dx > moved ? dx : moved;
                next[i][h] = x;
            }
        }
        for (size_t i = 0; i < d->n_ents; i++)
            if (d->ents[i].parent < 0 && (it == 0 || d->ents[i].ufails.n)) {
                double *tmp = posts[i];
                posts[i] = next[i];
                next[i] = tmp;
            }
        if (moved < S_CONVERGED)
            break;
    }
    for (size_t i = 0; i < d->n_ents; i++) {
        if (d->ents[i].parent >= 0)
            continue;
        memcpy(d->ents[i].post, posts[i], d->ents[i].n_post * sizeof *posts[i]);
        free(posts[i]);
        free(next[i]);
    }
    free(posts);
    free(next);
    free(lw);
    free(keeps);
    free(act);
}

/* P(part bad) from its unit's posterior, and its posterior mass per q (w, may be NULL). */
static double s_part_mass(const fb_diag_t *d, int i, double *w)
{
    int u = diag__node_of(d, i);
    const diag_ent_t *ue = &d->ents[u];
    size_t part = 0;
    for (size_t c = 0; i != u && c < ue->children.n; c++)
        if (ue->children.v[c] == i)
            part = 1 + c;
    double m = 0.0;
    for (size_t j = 0; j < DIAG_NQ; j++) {
        double x = ue->post[s_hyp(part, j)];
        if (w)
            w[j] = x;
        m += x;
    }
    for (size_t b = 0; part == 0 && b < DIAG_NA; b++) /* a node bad in bursts is bad */
        m += ue->post[s_hyp_burst(ue->children.n, b)];
    return m;
}

/* The mixture over q from the parts that are probably bad, each by its posterior over q.
 * Returns how far it moved. */
static double s_update_mixture(fb_diag_t *d)
{
    double c[DIAG_NQ] = {0}, w[DIAG_NQ], total = 0.0;
    for (size_t i = 0; i < d->n_ents; i++) {
        double m = s_part_mass(d, (int)i, w);
        if (m < 0.5)
            continue;
        for (size_t j = 0; j < DIAG_NQ; j++) {
            c[j] += w[j] / m;
            total += w[j] / m;
        }
    }
    double a = d->par.mixture_weight, moved = 0.0;
    for (size_t j = 0; j < DIAG_NQ; j++) {
        double x = (a + c[j]) / (a * DIAG_NQ + total);
        moved = fabs(x - d->mix[j]) > moved ? fabs(x - d->mix[j]) : moved;
        d->mix[j] = x;
    }
    return moved;
}

static void s_marginals(fb_diag_t *d)
{
    for (size_t i = 0; i < d->n_ents; i++)
        d->ents[i].p = s_part_mass(d, (int)i, NULL);
    for (size_t i = 0; i < d->n_tests; i++) {
        diag_test_t *t = &d->tests[i];
        if (t->round + 1 != d->rounds)
            continue;
        for (size_t k = 0; k < t->n_inv; k++)
            t->p_after[k] = d->ents[t->inv[k]].p;
    }
}

/* ---- the standard ---- */

/* P(X >= k) for X ~ Binomial(n, p): the first term from log-gamma, the rest by the ratio of
 * successive terms. */
static double s_binom_tail(unsigned n, unsigned k, double p)
{
    if (k == 0)
        return 1.0;
    if (k > n || p <= 0.0)
        return 0.0;
    if (p >= 1.0)
        return 1.0;
    double term = exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + k * log(p) +
                      (n - k) * log1p(-p));
    double sum = 0.0, odds = p / (1.0 - p);
    for (unsigned j = k; j <= n; j++) {
        sum += term;
        term *= (double)(n - j) / (double)(j + 1) * odds;
    }
    return sum > 1.0 ? 1.0 : sum;
}

/* P(X <= k) for X ~ Binomial(n, p). */
static double s_binom_cdf(unsigned n, unsigned k, double p)
{
    return k >= n ? 1.0 : 1.0 - s_binom_tail(n, k + 1, p);
}

/* Whether every other member of t was trusted when its round was planned and is trusted now:
 * a test that says something about entity i alone. */
static bool s_informative(const fb_diag_t *d, const diag_test_t *t, int i)
{
    int self = diag__node_of(d, i);
    for (size_t k = 0; k < t->n_mem; k++) {
        int u = diag__node_of(d, t->mem[k]);
        if (u != self && !(t->trusted[k] && d->ents[u].trusted))
            return false;
    }
    return true;
}

/* The standard as it stands for entity i (docs/diagnosis.md "Naming"): confirmations, the
 * informative tests since its first unexplained failure and the failures among them, fleet
 * significance, and the passes it still needs to be cleared. Returns whether it has an
 * unexplained failure. */
static bool s_standard(fb_diag_t *d, int i)
{
    diag_ent_t *e = &d->ents[i];
    diag_ivec_t partners = {0};
    bool local_fail = false, started = false, any_local = false;
    unsigned n = 0, k = 0;
    for (size_t x = 0; x < e->tests.n; x++) {
        const diag_test_t *t = &d->tests[e->tests.v[x]];
        bool expl = t->failed && s_explained(d, t, i);
        bool inf = s_informative(d, t, i);
        bool selecting = !started && t->failed && !expl;
        started |= selecting;
        if (t->failed && !expl && inf) {
            local_fail |= t->n_mem == 1;
            for (size_t s = 0; s < t->n_units; s++)
                if (t->units[s] != diag__node_of(d, i))
                    s_ivec_add_unique(&partners, t->units[s]);
        }
        if (!started || selecting || !inf || expl)
            continue;
        n++;
        k += t->failed;
        any_local |= t->n_mem == 1;
    }
    e->confirmations = (unsigned)partners.n + (local_fail ? 1u : 0u) + (e->counters.n ? 1u : 0u);
    free(partners.v);
    e->n_inf = n;
    e->k_inf = k;
    double f = any_local && d->f_local_hi > d->f_multi_hi ? d->f_local_hi : d->f_multi_hi;
    size_t parts = e->parent < 0 ? d->n_nodes : d->n_ents - d->n_nodes;
    e->chance = started ? s_binom_tail(n, k, f) * (double)parts : 1.0;
    double room = 1.0 - d->par.clear_confidence;
    unsigned more = 0;
    while (started && s_binom_cdf(n + more, k, d->q_clear) > room && more < 10000)
        more++;
    e->clear_more = more;
    return started || e->counters.n;
}

static bool s_witnessed(const fb_diag_t *d, const diag_ent_t *e)
{
    return e->confirmations >= d->par.min_confirmations &&
           (e->counters.n > 0 || d->par.fleet_error <= 0.0 || e->chance <= d->par.fleet_error);
}

/* Names the bad part of node unit u, if the standard names one: a rail before its node. A node
 * with a single rail is a special case: its pair tests cannot tell the node from its NIC, so
 * once the unit as a whole holds P >= bad_threshold the node is named, as the part that holds
 * both (its verdict says so). */
static void s_name(diag_ent_t *e)
{
    e->bad = true;
    e->chance_named = e->counters.n ? 0.0 : e->chance;
    e->confirmations_named = e->confirmations;
}

static bool s_name_unit(fb_diag_t *d, int u)
{
    diag_ent_t *ue = &d->ents[u];
    const double thr = d->par.bad_threshold;
    if (ue->bad)
        return false;
    for (size_t c = 0; c < ue->children.n; c++) {
        diag_ent_t *re = &d->ents[ue->children.v[c]];
        if (!re->bad && re->p >= thr && s_witnessed(d, re)) {
            s_name(re);
            return true;
        }
    }
    if (ue->p >= thr && s_witnessed(d, ue)) {
        s_name(ue);
        return true;
    }
    if (ue->children.n == 1 && 1.0 - ue->post[0] >= thr && s_witnessed(d, ue)) {
        ue->ambiguous = true;
        s_name(ue);
        return true;
    }
    return false;
}

/* The 5% quantile of a part's posterior over q, given it is bad. */
static double s_q_low(const fb_diag_t *d, int i)
{
    double w[DIAG_NQ], m = 0.0, acc = 0.0;
    s_part_mass(d, i, w);
    for (size_t j = 0; j < DIAG_NQ; j++)
        m += w[j]; /* its steady fault's q (a bursty one shows in every test while active) */
    for (size_t j = 0; m > 0.0 && j < DIAG_NQ; j++) {
        acc += w[j] / m;
        if (acc >= 0.05)
            return diag__qgrid[j];
    }
    return diag__qgrid[DIAG_NQ - 1];
}

/* Implicated (sticky until cleared or explained), cleared, and the trust of every node for the
 * next round. */
static void s_classify(fb_diag_t *d)
{
    d->q_clear = d->par.clear_q;
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].bad) {
            double ql = s_q_low(d, (int)i);
            d->q_clear = ql < d->q_clear ? ql : d->q_clear;
        }
    for (size_t i = 0; i < d->n_ents; i++) {
        diag_ent_t *e = &d->ents[i];
        bool unexplained = s_standard(d, (int)i);
        if (e->bad)
            continue;
        if (!unexplained)
            e->implicated = false;
        else if (e->p >= d->par.implicate_ratio * e->prior || e->counters.n)
            e->implicated = true;
        e->cleared = e->implicated && e->p <= d->par.clear_threshold && e->clear_more == 0;
    }
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].parent < 0)
            d->ents[i].trusted = diag__node_trusted(d, (int)i);
}

void fb_diag_settle(fb_diag_t *d)
{
    assert(d);
    if (!d->unsettled)
        return;
    d->unsettled = false;
    s_take_tests(d, d->rounds++);
    /* The fleet's estimates and the posteriors depend on each other: alternate until they
     * settle (a few rounds of expectation-maximisation). */
    for (unsigned em = 0; em < S_MAX_EM; em++) {
        double f_before = d->f_multi + d->f_local;
        s_estimate_f(d);
        s_posteriors(d);
        s_marginals(d);
        double moved = s_update_mixture(d);
        if (moved < 1e-4 && fabs(d->f_multi + d->f_local - f_before) < 1e-6)
            break;
    }
    s_marginals(d);
    /* The standard on the trust the round was planned with; every unit is judged on the names
     * as they were before this round, so the order units are looked at in does not matter. */
    for (size_t i = 0; i < d->n_ents; i++)
        s_standard(d, (int)i);
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].parent < 0)
            s_name_unit(d, (int)i);
    s_classify(d);
}

/* ---- accessors ---- */

bool fb_diag_done(const fb_diag_t *d)
{
    assert(d);
    for (size_t i = 0; i < d->n_ents; i++)
        if (diag__undecided(d, (int)i))
            return false;
    return true;
}

double fb_diag_false_fail_rate(const fb_diag_t *d)
{
    assert(d);
    return d->f_multi;
}

size_t fb_diag_q_mixture(const fb_diag_t *d, const double **q, const double **w)
{
    assert(d && q && w);
    *q = diag__qgrid;
    *w = d->mix;
    return DIAG_NQ;
}

double fb_diag_q(const fb_diag_t *d)
{
    assert(d);
    double m = 0.0;
    for (size_t j = 0; j < DIAG_NQ; j++)
        m += d->mix[j] * diag__qgrid[j];
    return m;
}

double fb_diag_q_clear(const fb_diag_t *d)
{
    assert(d);
    return d->q_clear;
}

bool fb_diag_trusted(const fb_diag_t *d, const char *node)
{
    assert(d);
    int i = diag__find(d, node);
    return i >= 0 && d->ents[i].parent < 0 && diag__node_trusted(d, i);
}

double fb_diag_p_bad(const fb_diag_t *d, const char *suspect)
{
    assert(d);
    int i = diag__find(d, suspect);
    return i < 0 ? NAN : d->ents[i].p;
}

unsigned fb_diag_rounds(const fb_diag_t *d)
{
    assert(d);
    return d->rounds;
}

size_t fb_diag_bad_parts(const fb_diag_t *d, const char *const **parts)
{
    assert(d && parts);
    const char **v = xcalloc(d->n_ents + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].bad)
            v[n++] = d->ents[i].name;
    *parts = v;
    return n;
}

const char *fb_diag_state_name(fb_diag_state_t s)
{
    static const char *const names[] = {"undecided", "cleared", "bad", "passed"};
    return (unsigned)s < 4 ? names[s] : "?";
}

/* ---- verdicts ---- */

static void s_evidence_free(diag_ent_t *e)
{
    for (size_t k = 0; k < e->n_ev; k++)
        free((char *)e->ev[k].partners);
    free(e->ev);
    e->ev = NULL;
    e->n_ev = 0;
}

/* The other members of t as seen from entity i, comma-separated; counts the distinct nodes
 * among them and those trusted when the round was planned. */
static char *s_partners(const fb_diag_t *d, const diag_test_t *t, int i, unsigned *n,
                        unsigned *trusted)
{
    int self = diag__node_of(d, i);
    size_t len = 1;
    for (size_t k = 0; k < t->n_mem; k++)
        len += strlen(d->ents[t->mem[k]].name) + 1;
    char *s = xmalloc(len), *at = s;
    *at = '\0';
    *n = *trusted = 0;
    for (size_t k = 0; k < t->n_mem; k++) {
        if (diag__node_of(d, t->mem[k]) == self)
            continue;
        at += sprintf(at, "%s%s", at == s ? "" : ",", d->ents[t->mem[k]].name);
        (*n)++; /* members are of distinct nodes */
        *trusted += t->trusted[k];
    }
    return s;
}

static void s_ev_push(diag_ent_t *e, size_t *cap, const fb_diag_evidence_t *ev)
{
    if (e->n_ev == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        e->ev = xrealloc(e->ev, *cap * sizeof *e->ev);
    }
    e->ev[e->n_ev++] = *ev;
}

/* Entity i's evidence: its tests from its first failed one on, and the counters against it,
 * in round order (a round's counters after its tests). */
static void s_build_evidence(const fb_diag_t *d, int i)
{
    diag_ent_t *e = &d->ents[i];
    s_evidence_free(e);
    size_t cap = 0, c = 0;
    bool started = false;
    for (size_t x = 0; x <= e->tests.n; x++) {
        const diag_test_t *t = x < e->tests.n ? &d->tests[e->tests.v[x]] : NULL;
        for (; c < e->counters.n; c++) { /* counters of the rounds before t's */
            const diag_counter_t *k = &d->counters[e->counters.v[c]];
            if (t && k->round >= t->round)
                break;
            fb_diag_evidence_t ev = {.test_id = k->test_id,
                                     .partners = xstrdup(""),
                                     .failed = true,
                                     .p_before = e->p,
                                     .p_after = e->p,
                                     .counter = k->what,
                                     .round = k->round,
                                     .informative = true};
            s_ev_push(e, &cap, &ev);
            started = true;
        }
        if (!t)
            break;
        started |= t->failed;
        if (!started)
            continue;
        fb_diag_evidence_t ev = {.test_id = t->id, .failed = t->failed, .round = t->round};
        ev.partners = s_partners(d, t, i, &ev.n_partners, &ev.n_trusted);
        for (size_t k = 0; k < t->n_inv; k++)
            if (t->inv[k] == i) {
                ev.p_before = t->p_before[k];
                ev.p_after = t->p_after[k];
            }
        ev.informative = s_informative(d, t, i);
        ev.explained = t->failed && s_explained(d, t, i);
        s_ev_push(e, &cap, &ev);
    }
}

static fb_diag_state_t s_state(const fb_diag_t *d, int i)
{
    const diag_ent_t *e = &d->ents[i];
    if (e->bad)
        return FB_DIAG_BAD;
    if (diag__undecided(d, i))
        return FB_DIAG_UNDECIDED;
    return e->implicated && e->cleared ? FB_DIAG_CLEARED : FB_DIAG_PASSED;
}

size_t fb_diag_verdicts(const fb_diag_t *d, fb_diag_verdict_t **out)
{
    assert(d && out);
    fb_diag_verdict_t *v = xcalloc(d->n_ents ? d->n_ents : 1, sizeof *v);
    for (size_t i = 0; i < d->n_ents; i++) {
        const diag_ent_t *e = &d->ents[i];
        fb_diag_verdict_t *x = &v[i];
        s_build_evidence(d, (int)i);
        x->suspect = e->name;
        x->parent = e->parent >= 0 ? d->ents[e->parent].name : NULL;
        x->state = s_state(d, (int)i);
        x->p_bad = e->p;
        for (size_t k = 0; k < e->tests.n; k++) {
            x->n_tests++;
            x->n_failed += d->tests[e->tests.v[k]].failed;
        }
        x->n_counters = (unsigned)e->counters.n;
        unsigned conf = e->bad ? e->confirmations_named : e->confirmations;
        x->n_trusted_fail_partners = conf - (e->counters.n ? 1u : 0u); /* with a local failure */
        x->kind = e->parent < 0 ? "node" : (e->counters.n ? "link" : "nic");
        x->ambiguous = e->ambiguous;
        x->p_unit = e->parent < 0 && e->post ? 1.0 - e->post[0] : e->p;
        x->evidence = e->ev;
        x->n_evidence = e->n_ev;
        x->n_confirmations = conf;
        x->n_informative = e->n_inf;
        x->k_informative = e->k_inf;
        x->clear_more = x->state == FB_DIAG_UNDECIDED ? e->clear_more : 0;
        x->chance = e->bad ? e->chance_named : e->chance;
        x->q_est = NAN;
        double w[DIAG_NQ], m = 0.0;
        s_part_mass(d, (int)i, w);
        for (size_t j = 0; j < DIAG_NQ; j++)
            m += w[j]; /* of its steady fault (a bursty one shows whenever active) */
        if (e->bad && m > 0.0) {
            x->q_est = 0.0;
            for (size_t j = 0; j < DIAG_NQ; j++)
                x->q_est += w[j] / m * diag__qgrid[j];
        }
    }
    *out = v;
    return d->n_ents;
}
