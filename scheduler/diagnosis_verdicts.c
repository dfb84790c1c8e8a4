/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine: the one naming standard and the verdicts (docs/diagnosis.md "Naming"). A
 * part is named bad on its posterior, independent confirmations and fleet significance; an
 * implicated part is cleared only when its own passes rule a fault out; the rest are undecided
 * or passed. Verdicts carry the evidence they rest on. Separate from the posteriors
 * (diagnosis_settle.c): this file decides what the numbers mean, that one computes them. Pure
 * logic. */
#include "diagnosis_internal.h"

#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the standard ---- */

/* Whether test t holds a part named bad other than entity self. */
static bool s_explained(const fb_diag_t *d, const diag_test_t *t, int self)
{
    for (size_t k = 0; k < t->n_inv; k++)
        if (t->inv[k] != self && d->ents[t->inv[k]].bad)
            return true;
    return false;
}

/* P(X <= k) for X ~ Binomial(n, p). */
static double s_binom_cdf(unsigned n, unsigned k, double p)
{
    return k >= n ? 1.0 : 1.0 - diag__binom_tail(n, k + 1, p);
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

/* Whether entity i has an unexplained failure that a fault in bursts explains as well as a
 * steady one: every test it had in that round failed (a test alone, a NIC's one test
 * of the round, or all of a node's rails together). Such a fault can stay quiet for longer than a
 * campaign (an ECC storm, a flapping cable: hours between bursts), so no number of later passes
 * bounds it; a failure beside a passing test of the same part in the same round cannot be a
 * burst of that part. A failure that a part named bad explains does not count; one with an
 * untrusted partner does (the burst explains it as well). Tests are ordered by round. */
static bool s_burst_open(const fb_diag_t *d, int i)
{
    const diag_ent_t *e = &d->ents[i];
    bool fail = false, pass = false;
    unsigned round = 0;
    for (size_t x = 0; x < e->tests.n; x++) {
        const diag_test_t *t = &d->tests[e->tests.v[x]];
        if (!t->settled)
            continue;
        if (t->round != round) {
            if (fail && !pass)
                return true;
            fail = pass = false;
            round = t->round;
        }
        if (!t->failed) /* whoever the partner: the part's fault was not active then */
            pass = true;
        else if (!s_explained(d, t, i))
            fail = true;
    }
    return fail && !pass;
}

/* Rounds of a node's informative tests, and those with an unexplained failure among them. */
typedef struct {
    unsigned n, k, round;
    bool failed;           /* the current round has counted a failure */
    unsigned in_round;     /* tests counted in the current round */
    unsigned fewest_tests; /* the fewest tests of a finished round (0: none finished) */
} s_round_count_t;

static void s_round_end(s_round_count_t *rc)
{
    if (rc->n && (rc->fewest_tests == 0 || rc->in_round < rc->fewest_tests))
        rc->fewest_tests = rc->in_round;
}

static void s_round_count(s_round_count_t *rc, const diag_test_t *t)
{
    if (rc->n == 0 || t->round != rc->round) {
        s_round_end(rc);
        rc->n++;
        rc->round = t->round;
        rc->failed = false;
        rc->in_round = 0;
    }
    rc->in_round++;
    if (t->failed && !rc->failed) {
        rc->k++;
        rc->failed = true;
    }
}

/* How often a part with a fault showing in q of its observations fails one of them, when each
 * observation is `tests` tests that also fail spuriously at the fleet's rate f: the fault or a
 * false fail. The bound compares a part's failures with this, not with q alone, which would ask
 * a faulty part to fail less often than it does (with 8 rails at f 2%, a healthy node fails in
 * 15% of its rounds; a fault active in a quarter of them, in 36%). */
static double s_q_shown(double q, double f, unsigned tests)
{
    double f_obs = 1.0 - pow(1.0 - f, tests ? (double)tests : 1.0);
    return q + (1.0 - q) * f_obs;
}

/* Entity i's kind, as q_clear_of indexes it: 0 a node, 1 a rail (a NIC or its cable). */
static int s_kind(const fb_diag_t *d, int i)
{
    return d->ents[i].parent < 0 ? 0 : 1;
}

/* The q that clearing entity i must rule out: that of its kind. */
static double s_q_clear_of(const fb_diag_t *d, int i)
{
    return d->q_clear_of[s_kind(d, i)];
}

/* Passes in a row that, after n informative observations with k failures, rule out a fault
 * showing in q_clear of them with the clearing confidence (0: already ruled out). */
static unsigned s_passes_to_bound(const fb_diag_t *d, double q, unsigned n, unsigned k)
{
    double room = 1.0 - d->par.clear_confidence;
    unsigned more = 0;
    while (s_binom_cdf(n + more, k, q) > room && more < 10000)
        more++;
    return more;
}

/* Fleet significance of a record whose tail probability is p at the fleet's false-fail rate f:
 * the chance that a healthy record is as extreme at some round of the session, from the part's
 * first failure (first_round) to the session's last (params.rounds, or the rounds so far), with
 * per_look tests in each, times the parts of its kind. A record that could not be named anyway
 * (p times the parts at least 1) keeps p. */
static double s_fleet_chance(const fb_diag_t *d, double p, double f, unsigned per_look,
                             unsigned first_round, size_t parts)
{
    if (p * (double)parts >= 1.0)
        return p * (double)parts;
    unsigned last = d->par.rounds > d->rounds ? d->par.rounds : d->rounds;
    unsigned looks = last > first_round ? last - first_round : 1;
    return diag__looks_chance(p, f, per_look ? per_look : 1, looks) * (double)parts;
}

/* The standard as it stands for entity i (docs/diagnosis.md "Naming"): confirmations, the
 * informative tests since its first unexplained failure and the failures among them, fleet
 * significance, and the passes it still needs to be cleared. Returns whether it has an
 * unexplained failure. */
bool diag__standard(fb_diag_t *d, int i)
{
    diag_ent_t *e = &d->ents[i];
    diag_ivec_t partners = {0};
    bool local_fail = false, started = false, any_local = false;
    unsigned n = 0, k = 0, first_round = 0;
    s_round_count_t rc = {0};
    struct {
        unsigned round, in_round, per_look; /* the most informative tests in one round */
    } looked = {0};
    for (size_t x = 0; x < e->tests.n; x++) {
        const diag_test_t *t = &d->tests[e->tests.v[x]];
        bool expl = t->failed && s_explained(d, t, i);
        bool inf = s_informative(d, t, i);
        bool selecting = !started && t->failed && !expl;
        started |= selecting;
        if (selecting)
            first_round = t->round;
        if (t->failed && !expl && inf) {
            local_fail |= t->n_mem == 1;
            for (size_t s = 0; s < t->n_units; s++)
                if (t->units[s] != diag__node_of(d, i))
                    diag__ivec_add_unique(&partners, t->units[s]);
        }
        if (!started || selecting || !inf || expl)
            continue;
        n++;
        k += t->failed;
        looked.in_round = t->round == looked.round ? looked.in_round + 1 : 1;
        looked.round = t->round;
        looked.per_look = looked.in_round > looked.per_look ? looked.in_round : looked.per_look;
        any_local |= t->n_mem == 1;
        if (t->round != first_round)
            s_round_count(&rc, t);
    }
    e->burst_open = s_burst_open(d, i);
    e->confirmations = (unsigned)partners.n + (local_fail ? 1u : 0u) + (e->counters.n ? 1u : 0u);
    free(partners.v);
    e->n_inf = n;
    e->k_inf = k;
    double f = any_local && d->f_local_hi > d->f_multi_hi ? d->f_local_hi : d->f_multi_hi;
    size_t parts = e->parent < 0 ? d->n_nodes : d->n_ents - d->n_nodes;
    e->chance = started ? s_fleet_chance(d, diag__binom_tail(n, k, f), f, looked.per_look,
                                         first_round, parts)
                        : 1.0;
    e->n_inf_rounds = rc.n;
    e->k_inf_rounds = rc.k;
    s_round_end(&rc);
    double q = s_q_clear_of(d, i);
    double f_spurious = any_local ? fmin(d->f_multi_lo, d->f_local_lo) : d->f_multi_lo;
    unsigned more = started ? s_passes_to_bound(d, s_q_shown(q, f_spurious, 1), n, k) : 0;
    unsigned more_rounds =
        started && e->parent < 0
            ? s_passes_to_bound(d, s_q_shown(q, f_spurious, rc.fewest_tests), rc.n, rc.k)
            : 0;
    e->clear_by_rounds = more_rounds > more;
    e->clear_more = e->clear_by_rounds ? more_rounds : more;
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

bool diag__name_unit(fb_diag_t *d, int u)
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
    diag__part_mass(d, i, w);
    for (size_t j = 0; j < DIAG_NQ; j++)
        m += w[j]; /* its steady fault's q (a bursty one shows in every test while active) */
    for (size_t j = 0; m > 0.0 && j < DIAG_NQ; j++) {
        acc += w[j] / m;
        if (acc >= 0.05)
            return diag__qgrid[j];
    }
    return diag__qgrid[DIAG_NQ - 1];
}

/* Whether node u, named bad, fails in bursts: given it is bad, at least DIAG_BURSTY_NAMED of its
 * posterior on the bursty hypotheses. */
static bool s_fails_in_bursts(const fb_diag_t *d, int u)
{
    const diag_ent_t *ue = &d->ents[u];
    double bad = 1.0 - ue->post[0], bursty = 0.0;
    for (size_t b = 0; b < DIAG_NA; b++)
        bursty += ue->post[diag__hyp_burst(ue->children.n, b)];
    return bad > 0.0 && bursty >= DIAG_BURSTY_NAMED * bad;
}

/* The first node named bad that fails in bursts, once there is one. From then on passes clear
 * nothing: a fault of this fleet can be quiet for hours, longer than a session, and a part
 * whose only failure was spurious while its own burst was off passes like a healthy one. */
static void s_note_bursty(fb_diag_t *d)
{
    for (size_t u = 0; d->bursty < 0 && u < d->n_ents; u++)
        if (d->ents[u].parent < 0 && d->ents[u].bad && s_fails_in_bursts(d, (int)u))
            d->bursty = (int)u;
}

/* Implicated (sticky until cleared or explained), cleared, and the trust of every node for the
 * next round. */
void diag__classify(fb_diag_t *d)
{
    s_note_bursty(d);
    d->q_clear_of[0] = d->q_clear_of[1] = d->par.clear_q;
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].bad) {
            double ql = s_q_low(d, (int)i), *q = &d->q_clear_of[s_kind(d, (int)i)];
            *q = ql < *q ? ql : *q;
        }
    for (size_t i = 0; i < d->n_ents; i++) {
        diag_ent_t *e = &d->ents[i];
        bool unexplained = diag__standard(d, (int)i);
        if (e->bad)
            continue;
        if (!unexplained)
            e->implicated = false;
        else if (e->p >= d->par.implicate_ratio * e->prior || e->counters.n)
            e->implicated = true;
        e->cleared = e->implicated && e->p <= d->par.clear_threshold && e->clear_more == 0 &&
                     !e->burst_open && d->bursty < 0;
    }
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].parent < 0)
            d->ents[i].trusted = diag__node_trusted(d, (int)i);
}

/* ---- verdicts ---- */

void diag__evidence_free(diag_ent_t *e)
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
    diag__evidence_free(e);
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
        x->clear_by_rounds = e->clear_by_rounds;
        x->n_inf_rounds = e->n_inf_rounds;
        x->k_inf_rounds = e->k_inf_rounds;
        x->burst_open = x->state == FB_DIAG_UNDECIDED && e->burst_open;
        x->burst_fleet = x->state == FB_DIAG_UNDECIDED && !e->burst_open && d->bursty >= 0;
        x->on_watch = (x->burst_open || x->burst_fleet) && e->clear_more == 0 &&
                      e->p <= d->par.clear_threshold;
        x->chance = e->bad ? e->chance_named : e->chance;
        x->q_clear = s_q_clear_of(d, (int)i);
        x->q_est = NAN;
        double w[DIAG_NQ], m = 0.0;
        diag__part_mass(d, (int)i, w);
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
