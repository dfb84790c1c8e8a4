/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine: settling a round (diagnosis.h fb_diag_settle). The round's pending results
 * are taken in; then the fleet's estimates (the false-fail rates, the mixture over q) and every
 * unit's posterior over its hypotheses are recomputed from every result so far, alternating
 * until they agree; the naming standard (diagnosis_verdicts.c) is then applied to what they say.
 * Separate from the core because this is the model's arithmetic (docs/diagnosis.md), the part
 * of the engine that changes when the model does. Pure logic. */
#include "diagnosis_internal.h"

#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Posterior iterations: converged when no hypothesis moves more than this. */
#define S_CONVERGED 1e-9
#define S_MAX_ITER 200
#define S_MAX_EM 5

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
                    diag__ivec_add_unique(&e->partners, t->units[s]);
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
 * above) is what fleet significance uses: a rate underestimated names healthy parts. The lower
 * bound (two below) is what the clearing bound uses: a rate overestimated clears faulty ones. */
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
    double f[2], hi[2], lo[2];
    for (int c = 0; c < 2; c++) {
        f[c] = w + n[c] > 0.0 ? (f0 * w + k[c]) / (w + n[c]) : f0;
        double se = sqrt(f[c] * (1.0 - f[c]) / (w + n[c] > 1.0 ? w + n[c] : 1.0));
        hi[c] = fmin(f[c] + 2.0 * se, 0.999);
        lo[c] = fmax(f[c] - 2.0 * se, 0.0);
    }
    d->f_multi = f[0];
    d->f_local = f[1];
    d->f_multi_hi = hi[0];
    d->f_local_hi = hi[1];
    d->f_multi_lo = lo[0];
    d->f_local_lo = lo[1];
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
            lw[diag__hyp(part, j)] = lp + log_mix[j] + (double)pe->n_pass * log_miss[j];
    }
}

/* The chance that unit slot s of failed test t shows a fault in it, under post. */
static double s_show(const fb_diag_t *d, const diag_test_t *t, size_t s, const double *post)
{
    double m = 0.0;
    for (size_t j = 0; j < DIAG_NQ; j++) {
        m += post[diag__hyp(0, j)] * diag__qgrid[j];
        if (t->unit_rail[s] >= 0)
            m += post[diag__hyp(1 + (size_t)t->unit_rail[s], j)] * diag__qgrid[j];
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
        lw[diag__hyp_burst(R, b)] = lprior;
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
            lw[diag__hyp_burst(R, b)] += tested ? l : 0.0;
            act[b * rounds + r] = tested ? exp(x - l) : a;
        }
    }
    s_normalise(lw, ue->n_post, out);
    for (size_t r = 0; r < rounds; r++) {
        double show = 0.0;
        for (size_t b = 0; b < DIAG_NA; b++)
            show += out[diag__hyp_burst(R, b)] * act[b * rounds + r] * DIAG_Q_ON;
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
double diag__part_mass(const fb_diag_t *d, int i, double *w)
{
    int u = diag__node_of(d, i);
    const diag_ent_t *ue = &d->ents[u];
    size_t part = 0;
    for (size_t c = 0; i != u && c < ue->children.n; c++)
        if (ue->children.v[c] == i)
            part = 1 + c;
    double m = 0.0;
    for (size_t j = 0; j < DIAG_NQ; j++) {
        double x = ue->post[diag__hyp(part, j)];
        if (w)
            w[j] = x;
        m += x;
    }
    for (size_t b = 0; part == 0 && b < DIAG_NA; b++) /* a node bad in bursts is bad */
        m += ue->post[diag__hyp_burst(ue->children.n, b)];
    return m;
}

/* The mixture over q from the parts that are probably bad, each by its posterior over q.
 * Returns how far it moved. */
static double s_update_mixture(fb_diag_t *d)
{
    double c[DIAG_NQ] = {0}, w[DIAG_NQ], total = 0.0;
    for (size_t i = 0; i < d->n_ents; i++) {
        double m = diag__part_mass(d, (int)i, w);
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
        d->ents[i].p = diag__part_mass(d, (int)i, NULL);
    for (size_t i = 0; i < d->n_tests; i++) {
        diag_test_t *t = &d->tests[i];
        if (t->round + 1 != d->rounds)
            continue;
        for (size_t k = 0; k < t->n_inv; k++)
            t->p_after[k] = d->ents[t->inv[k]].p;
    }
}

/* ---- settling a round: all of it ---- */

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
        diag__standard(d, (int)i);
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].parent < 0)
            diag__name_unit(d, (int)i);
    diag__classify(d);
}
