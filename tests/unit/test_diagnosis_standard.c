/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine's naming standard, rule by rule, on results written by hand: the
 * posterior threshold, fleet significance, independent confirmations, a node bad in bursts,
 * cleared only with a bound, passed versus cleared, and results of a round recorded in any order
 * (the same state, named on whole rounds). Separate from the seeded trials
 * (test_diagnosis.c): each test here checks one rule on results chosen to isolate it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diagnosis_fixture.h"

#include "common/rng.h"
#include "scheduler/diagnosis.h"
#include "scheduler/diagnosis_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the standard, rule by rule, on results written by hand ---- */

/* Background: every other node of the fleet in passing pairs (and one spurious failure in a
 * hundred, on other nodes each round), so that the fleet's false-fail rate is known; nodes
 * [from, n) take part. */
static void s_background(fb_diag_t *d, int from, int n, int round)
{
    char id[32];
    for (int i = from; i + 1 < n; i += 2) {
        snprintf(id, sizeof id, "bg%d.%d", round, i);
        diag_fixture_pair(d, id, i, i + 1, NULL, (i / 2 + 37 * round) % 100 == 7);
    }
}

/* The default parameters, but implicated at 1.5 times the prior, so that one failure beside a
 * pass implicates a part (the clearing tests need something implicated to clear). */
static fb_diag_params_t s_params_one_failure_implicates(void)
{
    fb_diag_params_t par;
    fb_diag_params_default(&par);
    par.implicate_ratio = 1.5;
    return par;
}

static const fb_diag_verdict_t *s_get(const fb_diag_verdict_t *v, size_t n, const char *part)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].suspect, part))
            return &v[i];
    fail_msg("no verdict for %s", part);
    return NULL;
}

static fb_diag_state_t s_state_of(const fb_diag_t *d, const char *part)
{
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    fb_diag_state_t st = s_get(v, n, part)->state;
    if (getenv("FB_DIAG_DEBUG")) { /* the part's standard and evidence */
        const fb_diag_verdict_t *x = s_get(v, n, part);
        printf("dbg %s %s P %.4g conf %u inf %u/%u chance %.3g clear_more %u f %.4f:", part,
               fb_diag_state_name(x->state), x->p_bad, x->n_confirmations, x->k_informative,
               x->n_informative, x->chance, x->clear_more, fb_diag_false_fail_rate(d));
        for (size_t k = 0; k < x->n_evidence; k++)
            printf(" %s(%s,%d,%d,%.3g)", x->evidence[k].test_id, x->evidence[k].partners,
                   x->evidence[k].failed, x->evidence[k].informative, x->evidence[k].p_after);
        printf("\n");
    }
    free(v);
    return st;
}

/* n0 fails with trusted partners n1, n2, n3 ... in rounds of their own (one test a round); the
 * rest of a fleet of `fleet` nodes passes in the background. Returns after `fails` failures. */
static fb_diag_t *s_failing_node(int fleet, int fails, const fb_diag_params_t *par)
{
    fb_diag_t *d = diag_fixture_engine(fleet, 0, par);
    s_background(d, 0, fleet, 0);
    fb_diag_settle(d);
    for (int k = 1; k <= fails; k++) {
        char id[16];
        snprintf(id, sizeof id, "f%d", k);
        diag_fixture_pair(d, id, 0, fleet - k, NULL, true);
        s_background(d, 1, fleet - 8, k);
        fb_diag_settle(d);
    }
    return d;
}

/* The posterior threshold: the same results, two thresholds. With confirmations and fleet
 * significance met, a part is named only once its P(bad) reaches bad_threshold. (n0's first
 * failure, with a partner as fresh as itself, implicates both and counts for neither.) */
static void test_posterior_threshold(void **state)
{
    (void)state;
    fb_diag_params_t par;
    fb_diag_params_default(&par);
    fb_diag_t *d = s_failing_node(64, 5, &par);
    double p = fb_diag_p_bad(d, "n0");
    assert_true(p >= 0.99);
    assert_int_equal(s_state_of(d, "n0"), FB_DIAG_BAD);
    fb_diag_destroy(&d);
    par.bad_threshold = p + (1.0 - p) / 2.0; /* above what the results give */
    d = s_failing_node(64, 5, &par);
    assert_true(fb_diag_p_bad(d, "n0") < par.bad_threshold);
    assert_int_equal(s_state_of(d, "n0"), FB_DIAG_UNDECIDED);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    const fb_diag_verdict_t *x = s_get(v, n, "n0");
    assert_true(x->n_confirmations >= 2 && x->chance <= par.fleet_error);
    free(v);
    fb_diag_destroy(&d);
}

/* Fleet significance (at a false-fail rate held at 1% here): three failures with trusted partners
 * after the first are too many for chance in a fleet of 64, not in one of 4096, where some healthy
 * node fails that often; the larger fleet names the node after one more. */
static void test_fleet_significance(void **state)
{
    (void)state;
    fb_diag_params_t par;
    fb_diag_params_default(&par);
    par.false_fail_rate = 0.01;
    par.false_fail_weight = 1e9;
    fb_diag_t *d = s_failing_node(64, 4, &par);
    assert_int_equal(s_state_of(d, "n0"), FB_DIAG_BAD);
    fb_diag_destroy(&d);
    d = s_failing_node(4096, 4, &par);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    const fb_diag_verdict_t *x = s_get(v, n, "n0");
    printf("[diag] 4 failures with trusted partners: in 64 nodes named; in 4096 %s, chance %.2g\n",
           fb_diag_state_name(x->state), x->chance);
    assert_int_equal(x->state, FB_DIAG_UNDECIDED);
    assert_true(x->chance > 0.001 && x->p_bad >= 0.99 && x->n_confirmations >= 2);
    free(v);
    fb_diag_destroy(&d);
    d = s_failing_node(4096, 5, &par);
    assert_int_equal(s_state_of(d, "n0"), FB_DIAG_BAD);
    fb_diag_destroy(&d);
}

/* Healthy records (tests failing at f) looked at after each of `looks` rounds of `per_look`
 * tests: the share that is at some look at least as extreme as tail probability p. */
static double s_crossing_share(double p, double f, unsigned per_look, unsigned looks,
                               unsigned records)
{
    uint64_t rng = 14;
    unsigned crossed = 0;
    for (unsigned r = 0; r < records; r++) {
        unsigned k = 0;
        for (unsigned look = 1; look <= looks; look++) {
            for (unsigned t = 0; t < per_look; t++)
                k += fb_rng_unit(fb_splitmix64(&rng)) < f;
            if (k && diag__binom_tail(look * per_look, k, f) <= p) {
                crossed++;
                break;
            }
        }
    }
    return (double)crossed / records;
}

/* The chance behind fleet significance counts every round the rule asks in: with one look at all
 * the tests it is the tail probability itself; with a look after every round it is the share of
 * healthy records that cross at some round (drawn here), more than the tail, and more again over
 * a longer session. */
static void test_looks_chance(void **state)
{
    (void)state;
    double p = diag__binom_tail(20, 5, 0.05);
    assert_float_equal(diag__looks_chance(p, 0.05, 20, 1), p, p * 1e-9);
    const double f = 0.1, tail = 0.005;
    const unsigned records = 200000;
    for (unsigned per_look = 1; per_look <= 4; per_look *= 4) {
        double exact = diag__looks_chance(tail, f, per_look, 20);
        double drawn = s_crossing_share(tail, f, per_look, 20, records);
        double sd = sqrt(exact * (1.0 - exact) / records);
        printf("[diag] %u test(s) a look, 20 looks: chance %.5f, drawn %.5f (tail %.3f)\n",
               per_look, exact, drawn, tail);
        assert_true(fabs(drawn - exact) < 5.0 * sd);
        assert_true(exact > 1.5 * tail);
        assert_true(diag__looks_chance(tail, f, per_look, 60) > exact);
    }
    assert_float_equal(diag__looks_chance(1.0, f, 1, 20), 1.0, 0.0);
    /* docs/diagnosis.md "Naming": one test a round over 26 rounds (2 sweeps and 24 follow-ups),
     * a node of 1024 whose tests all fail after its first failure */
    for (unsigned fails = 4; fails <= 5; fails++)
        for (double ff = 0.02; ff < 0.026; ff += 0.005) {
            double t = diag__binom_tail(fails, fails, ff);
            double c = diag__looks_chance(t, ff, 1, 26);
            printf("[diag] %u of %u at f %.3f: tail %.3g, over 26 rounds %.3g (x%.2f), "
                   "in 1024 nodes %.2g\n",
                   fails, fails, ff, t, c, c / t, 1024 * c);
            assert_true(c > 2.0 * t && c < 4.0 * t);
            assert_true((1024 * c <= 0.001) == (fails == 5 || ff < 0.021));
        }
    /* docs/diagnosis.md "What a larger budget buys": a healthy NIC of 8192 that failed 7 of 17
     * tests after its first failure in round 4 of a session of 1 + 2 + 48 rounds */
    double t17 = diag__binom_tail(17, 7, 0.025), c17 = diag__looks_chance(t17, 0.025, 1, 47);
    printf("[diag] 7 of 17 at f 0.025: in 8192 NICs %.2g at one look, %.2g over 47 rounds\n",
           8192 * t17, 8192 * c17);
    assert_true(8192 * t17 <= 0.001 && 8192 * c17 > 0.002);
}

/* A record asked about over a long session: n0 fails in every other round (a fresh trusted
 * partner each time, at a false-fail rate held at 1% in a fleet of 1024). Asked only about the
 * rounds so far, its record after round 11 (4 failures in 8 informative tests after its first) is
 * named; in a session of 50 rounds a healthy record that extreme comes about at some round more
 * often than the fleet's error allows, and the part is named at its next failure. */
static void test_fleet_significance_over_rounds(void **state)
{
    (void)state;
    fb_diag_params_t par;
    fb_diag_params_default(&par);
    par.false_fail_rate = 0.01;
    par.false_fail_weight = 1e9;
    double chance[2][2];
    fb_diag_state_t st[2][2];
    for (int session = 0; session < 2; session++) {
        par.rounds = session ? 50 : 0;
        fb_diag_t *d = diag_fixture_engine(1024, 0, &par);
        s_background(d, 0, 1024, 0);
        fb_diag_settle(d);
        for (int r = 1; r <= 13; r++) {
            char id[16];
            snprintf(id, sizeof id, "a%d", r);
            diag_fixture_pair(d, id, 0, 1024 - r, NULL, r % 2 == 1);
            s_background(d, 1, 1024 - 14, r);
            fb_diag_settle(d);
            if (r < 11 || r % 2 == 0)
                continue;
            fb_diag_verdict_t *v;
            size_t n = fb_diag_verdicts(d, &v);
            const fb_diag_verdict_t *x = s_get(v, n, "n0");
            st[session][(r - 11) / 2] = x->state;
            chance[session][(r - 11) / 2] = x->chance;
            printf("[diag] rounds %s, after round %d: %s, %u of %u, chance %.2g\n",
                   session ? "50" : "so far", r, fb_diag_state_name(x->state), x->k_informative,
                   x->n_informative, x->chance);
            free(v);
        }
        fb_diag_destroy(&d);
    }
    assert_int_equal(st[0][0], FB_DIAG_BAD);
    assert_int_equal(st[1][0], FB_DIAG_UNDECIDED);
    assert_true(chance[1][0] > par.fleet_error && chance[1][0] > chance[0][0]);
    assert_int_equal(st[1][1], FB_DIAG_BAD);
}

/* Independent confirmations: the same results name a node with its distinct trusted partners,
 * not when more are asked for than it had partners; a failed node-local test counts as one. */
static void test_confirmations(void **state)
{
    (void)state;
    fb_diag_params_t par;
    fb_diag_params_default(&par);
    fb_diag_t *d = s_failing_node(64, 6, &par);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    unsigned c = s_get(v, n, "n0")->n_confirmations;
    assert_true(c >= 4);
    assert_int_equal(s_get(v, n, "n0")->state, FB_DIAG_BAD);
    free(v);
    fb_diag_destroy(&d);
    par.min_confirmations = 7; /* six failures, six partners */
    d = s_failing_node(64, 6, &par);
    assert_int_equal(s_state_of(d, "n0"), FB_DIAG_UNDECIDED);
    fb_diag_destroy(&d);
    /* the first failure node-local: it counts, and so does every partner after it */
    fb_diag_params_default(&par);
    d = diag_fixture_engine(64, 0, &par);
    s_background(d, 2, 64, 0);
    const char *m[1] = {"n0"};
    assert_int_equal(fb_diag_record(d, "local", m, 1, true), 0);
    fb_diag_settle(d);
    char id[16];
    for (int k = 1; k <= 5; k++) {
        snprintf(id, sizeof id, "p%d", k);
        diag_fixture_pair(d, id, 0, 63 - k, NULL, true);
        fb_diag_settle(d);
    }
    n = fb_diag_verdicts(d, &v);
    assert_int_equal(s_get(v, n, "n0")->n_confirmations, 6);
    assert_int_equal(s_get(v, n, "n0")->state, FB_DIAG_BAD);
    free(v);
    fb_diag_destroy(&d);
}

/* A node bad in bursts: quiet for 24 rounds on 8 rails (192 passes), then one round in which every
 * test of it fails, with 8 distinct trusted partners; 2% of the fleet's tests fail by chance. Per
 * test that is 8 failures in 208 (or more), which a fault showing in a tenth of its tests or
 * chance could explain; per round it is a burst: implicated at once, and the quiet rounds after
 * it do not clear it. One failure among 8 passing tests of the same round (a spurious failure)
 * does not implicate a node, and the burst's partners are not blamed for it. */
static void test_bursty(void **state)
{
    (void)state;
    fb_diag_t *d = diag_fixture_engine(64, 8, NULL);
    char id[32], rail[8];
    for (int r = 0; r < 27; r++) {
        for (int k = 0; k < 8; k++) {
            snprintf(rail, sizeof rail, "r%d", k);
            for (int a = 0; a < 64; a += 2) {
                int b = (a + 2 * (r + k) + 1) % 64; /* a fresh odd partner */
                snprintf(id, sizeof id, "t%d.%d.%d", r, k, a);
                bool burst = r == 24 && a == 0;              /* n0's burst, every rail */
                bool spurious = r == 24 && a == 4 && k == 3; /* n4: one failure */
                bool chance = r != 24 && (a * 7 + k * 13 + r * 31) % 50 == 3; /* 2% elsewhere */
                diag_fixture_pair(d, id, a, b, rail, burst || spurious || chance);
            }
        }
        fb_diag_settle(d);
        if (r == 24) {
            assert_int_not_equal(s_state_of(d, "n0"), FB_DIAG_PASSED);
            assert_int_equal(s_state_of(d, "n4"), FB_DIAG_PASSED);
        }
    }
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    const fb_diag_verdict_t *x = s_get(v, n, "n0");
    printf("[diag] a burst in round 25 of 27 (8 of 8 rails): %s, P(bad) %.4f\n",
           fb_diag_state_name(x->state), x->p_bad);
    assert_true(x->state == FB_DIAG_BAD || x->state == FB_DIAG_UNDECIDED);
    assert_true(x->p_bad > 0.5);
    assert_int_equal(s_get(v, n, "n4")->state, FB_DIAG_PASSED);
    for (int k = 0; k < 8; k++) { /* the burst's partners: explained by it */
        char partner[16];
        snprintf(partner, sizeof partner, "n%d", (2 * (24 + k) + 1) % 64);
        assert_int_not_equal(s_get(v, n, partner)->state, FB_DIAG_BAD);
        assert_true(s_get(v, n, partner)->p_bad < 0.5);
    }
    free(v);
    fb_diag_destroy(&d);
}

/* 64 nodes after a background round: n0 failed with n1 and passed with n2 in the same round,
 * so n0's failure came beside a pass of its own and n1's alone in its round. */
static fb_diag_t *s_failed_beside_a_pass(const fb_diag_params_t *par)
{
    fb_diag_t *d = diag_fixture_engine(64, 0, par);
    s_background(d, 4, 64, 0);
    diag_fixture_pair(d, "fail", 0, 1, NULL, true);
    diag_fixture_pair(d, "beside", 0, 2, NULL, false);
    fb_diag_settle(d);
    return d;
}

/* Cleared only with a bound: a node that failed once and then passed is undecided until its own
 * passes rule out a fault showing in a quarter of its tests with 0.99 (17 in a row), however low
 * its P(bad) fell before; then it is cleared, and a part never implicated is passed. n0's
 * failure came beside a passing test of n0 in the same round, so it was no burst of n0's; its
 * partner n1 had no other test that round, and a fault in bursts (quiet for hours between them)
 * explains its failure as well as anything: the same passes never clear n1. (Implicated at 1.5
 * times the prior, so that n0's one failure beside a pass implicates it.) */
static void test_cleared_needs_bound(void **state)
{
    (void)state;
    fb_diag_params_t par = s_params_one_failure_implicates();
    fb_diag_t *d = s_failed_beside_a_pass(&par);
    assert_int_equal(s_state_of(d, "n0"), FB_DIAG_UNDECIDED);
    assert_int_equal(s_state_of(d, "n1"), FB_DIAG_UNDECIDED);
    char id[16];
    unsigned cleared_at = 0;
    double p_low_at = 0;
    for (int k = 1; k <= 20 && !cleared_at; k++) {
        snprintf(id, sizeof id, "pass%d", k);
        diag_fixture_pair(d, id, 0, 30 + k, NULL, false); /* trusted partners (n14, n15 failed) */
        snprintf(id, sizeof id, "quiet%d", k);
        diag_fixture_pair(d, id, 1, 9 + k, NULL, false);
        fb_diag_settle(d);
        if (!p_low_at && fb_diag_p_bad(d, "n0") <= 0.001)
            p_low_at = k;
        if (s_state_of(d, "n0") == FB_DIAG_CLEARED)
            cleared_at = (unsigned)k;
    }
    printf("[diag] one failure, then passes: P(bad) <= 0.001 after %.0f, cleared after %u\n",
           p_low_at, cleared_at);
    assert_int_equal(cleared_at, 17); /* 0.75^17 < 0.01 <= 0.75^16 */
    assert_true(p_low_at > 0 && p_low_at < 17);
    assert_true(fb_diag_trusted(d, "n0"));
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    const fb_diag_verdict_t *n1 = s_get(v, n, "n1");
    printf("[diag] its partner, alone in its failing round, after the same passes: %s, P(bad) "
           "%.4f\n",
           fb_diag_state_name(n1->state), n1->p_bad);
    assert_int_equal(n1->state, FB_DIAG_UNDECIDED);
    assert_true(n1->burst_open);
    assert_true(n1->p_bad < 0.01); /* however unlikely now: no bound */
    assert_int_equal(s_get(v, n, "n40")->state, FB_DIAG_PASSED); /* never implicated */
    assert_int_equal(s_get(v, n, "n0")->clear_more, 0);
    assert_false(s_get(v, n, "n0")->burst_open);
    free(v);
    fb_diag_destroy(&d);
}

/* On watch: a part held undecided only because passes cannot bound a fault in bursts, once its
 * own passes rule out a steady fault exactly as clearing would. n1 failed alone in its round
 * (the burst rule holds it open) and then passes with trusted partners: it is on watch from the
 * pass that bounds a steady fault on, never before, and stays undecided throughout. */
static void test_on_watch(void **state)
{
    (void)state;
    fb_diag_params_t par = s_params_one_failure_implicates();
    fb_diag_t *d = s_failed_beside_a_pass(&par);
    char id[16];
    unsigned watch_at = 0, informative_at = 0;
    for (int k = 1; k <= 24; k++) {
        snprintf(id, sizeof id, "quiet%d", k);
        diag_fixture_pair(d, id, 1, 9 + k, NULL, false);
        fb_diag_settle(d);
        fb_diag_verdict_t *v;
        size_t n = fb_diag_verdicts(d, &v);
        const fb_diag_verdict_t *n1 = s_get(v, n, "n1");
        assert_int_equal(n1->state, FB_DIAG_UNDECIDED);
        assert_true(n1->burst_open);
        bool bounded = n1->clear_more == 0 && n1->p_bad <= par.clear_threshold;
        assert_int_equal(n1->on_watch, bounded);
        if (n1->on_watch && !watch_at) {
            watch_at = (unsigned)k;
            informative_at = n1->n_informative;
        }
        if (watch_at)
            assert_true(n1->on_watch);             /* passes only add to the bound */
        assert_false(s_get(v, n, "n0")->on_watch); /* cleared, not undecided */
        free(v);
    }
    printf("[diag] alone in its failing round, then passes: on watch after %u (%u informative)\n",
           watch_at, informative_at);
    /* the bound that clears n0 in test_cleared_needs_bound: 17 informative passes; two of n1's
     * partners (n14, n15) failed in the background round and were no trusted partners */
    assert_int_equal(informative_at, 17);
    assert_int_equal(watch_at, 19);
    fb_diag_destroy(&d);
}

/* A node is cleared round by round, not rail by rail: a fault in bursts shows in all of its tests
 * of a round or in none, so eight passing rails are one observation of whether it is active.
 * n0 fails on two of its eight rails in round 0 (beside six passes: no burst of its own) and
 * passes on all eight in every later round. 17 passing tests would bound a steady fault after
 * three rounds; the burst needs 15 passing rounds: a node with a fault active in a quarter of
 * the rounds also fails in the others when one of its eight rails fails spuriously (about 1%
 * here; the bound takes the rate's lower bound), so it fails in more than a quarter of its
 * rounds, and fewer passing rounds rule that out than the 17 that q alone would need. */
static void test_node_cleared_by_rounds(void **state)
{
    (void)state;
    fb_diag_params_t par = s_params_one_failure_implicates();
    fb_diag_t *d = diag_fixture_engine(64, 8, &par);
    char id[32], rail[8];
    unsigned cleared_at = 0;
    for (int r = 0; r < 24 && !cleared_at; r++) {
        for (int k = 0; k < 8; k++) {
            snprintf(rail, sizeof rail, "r%d", k);
            for (int a = 0; a < 64; a += 2) {
                int b = (a + 2 * (r + k) + 1) % 64; /* a fresh odd partner */
                snprintf(id, sizeof id, "t%d.%d.%d", r, k, a);
                bool mine = a == 0 && r == 0 && (k == 2 || k == 5);
                bool chance = a != 0 && (a * 7 + k * 13 + r * 31) % 100 == 3; /* 1% elsewhere */
                diag_fixture_pair(d, id, a, b, rail, mine || chance);
            }
        }
        fb_diag_settle(d);
        fb_diag_verdict_t *v;
        size_t n = fb_diag_verdicts(d, &v);
        const fb_diag_verdict_t *x = s_get(v, n, "n0");
        if (r == 4) {
            printf("[diag] after round %d: %s, %u informative tests, %u rounds, %u more\n", r,
                   fb_diag_state_name(x->state), x->n_informative, x->n_inf_rounds, x->clear_more);
            assert_int_equal(x->state, FB_DIAG_UNDECIDED);
            assert_true(x->n_informative >= 17 + 6); /* the steady bound alone would clear it */
            assert_true(x->clear_by_rounds);
            assert_int_equal(x->n_inf_rounds, 4);
            assert_int_equal(x->clear_more, 11);
        }
        if (x->state == FB_DIAG_CLEARED)
            cleared_at = (unsigned)r;
        free(v);
    }
    printf("[diag] cleared after round %u (false-fail rate %.4f)\n", cleared_at,
           fb_diag_false_fail_rate(d));
    assert_int_equal(cleared_at, 15);
    fb_diag_destroy(&d);
}

/* One round of s_bursty_fleet: n0 runs two tests with fresh partners of [8, 36), both failing
 * while its burst is on (rounds 0-1, 8-9, 16-17: a share of 1/4, every test while active); n4
 * fails once beside a pass in round 0 (so no burst of its own) and passes with partners of
 * [36, 64) in every other round. */
static void s_bursty_round(fb_diag_t *d, int r, bool n0_bursts)
{
    char id[32];
    s_background(d, 8, 64, r);
    bool on = n0_bursts && r % 8 < 2;
    for (int k = 0; k < 2; k++) {
        snprintf(id, sizeof id, "n0.%d.%d", r, k);
        diag_fixture_pair(d, id, 0, 8 + (2 * r + k) % 28, NULL, on);
    }
    snprintf(id, sizeof id, "n4.%d", r);
    if (r == 0) {
        diag_fixture_pair(d, id, 4, 5, NULL, true);
        diag_fixture_pair(d, "n4.beside", 4, 6, NULL, false);
    } else {
        diag_fixture_pair(d, id, 4, 36 + r % 28, NULL, false);
    }
    fb_diag_settle(d);
}

/* Passes clear nothing in a fleet where a part named bad fails in bursts: there a fault can be
 * quiet for longer than the session, and n4 - one failure beside a passing test, then 21 passes,
 * which clear it in a fleet without bursts - passes exactly as a bursty node would whose only
 * failure was spurious while its burst was off. It stays undecided and says why. */
static void test_no_clearing_in_bursty_fleet(void **state)
{
    (void)state;
    fb_diag_params_t par = s_params_one_failure_implicates(); /* n4's one failure */
    for (int bursts = 0; bursts < 2; bursts++) {
        fb_diag_t *d = diag_fixture_engine(64, 0, &par);
        for (int r = 0; r < 24; r++)
            s_bursty_round(d, r, bursts);
        fb_diag_verdict_t *v;
        size_t n = fb_diag_verdicts(d, &v);
        const fb_diag_verdict_t *n0 = s_get(v, n, "n0"), *n4 = s_get(v, n, "n4");
        printf("[diag] n0 %s in bursts: n0 %s, n4 %s (P(bad) %.5f, %u informative)\n",
               bursts ? "failing" : "not failing", fb_diag_state_name(n0->state),
               fb_diag_state_name(n4->state), n4->p_bad, n4->n_informative);
        assert_true(n4->p_bad <= par.clear_threshold);
        assert_int_equal(n4->clear_more, 0);
        assert_false(n4->burst_open);
        if (!bursts) {
            assert_null(fb_diag_bursty_node(d));
            assert_int_equal(n4->state, FB_DIAG_CLEARED);
            assert_false(n4->on_watch);
        } else {
            assert_int_equal(n0->state, FB_DIAG_BAD);
            assert_non_null(fb_diag_bursty_node(d));
            assert_string_equal(fb_diag_bursty_node(d), "n0");
            assert_int_equal(n4->state, FB_DIAG_UNDECIDED);
            assert_true(n4->burst_fleet);
            assert_true(n4->on_watch); /* a steady fault is ruled out, as in the fleet above */
            assert_false(fb_diag_trusted(d, "n4"));
        }
        free(v);
        fb_diag_destroy(&d);
    }
}

/* Passed, not cleared: the partners of a node named bad failed with it, and that explains their
 * failures; they were never implicated and make no claim of a bound. */
static void test_passed_vs_cleared(void **state)
{
    (void)state;
    fb_diag_t *d = diag_fixture_engine(64, 4, NULL);
    char id[16];
    for (int r = 0; r < 4; r++) { /* n0 is hard bad: every rail of every round */
        char rail[4];
        snprintf(rail, sizeof rail, "r%d", r);
        snprintf(id, sizeof id, "s%d", r);
        diag_fixture_pair(d, id, 0, 1 + r, rail, true);
        for (int i = 5 + r; i + 1 < 64; i += 2) {
            snprintf(id, sizeof id, "s%d.%d", r, i);
            diag_fixture_pair(d, id, i, i + 1, rail, false);
        }
    }
    fb_diag_settle(d);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    assert_int_equal(s_get(v, n, "n0")->state, FB_DIAG_BAD);
    for (int k = 1; k <= 4; k++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", k);
        const fb_diag_verdict_t *x = s_get(v, n, name);
        assert_int_equal(x->state, FB_DIAG_PASSED);
        assert_int_equal(x->n_failed, 1);
        assert_true(x->evidence[0].explained);
    }
    free(v);
    fb_diag_destroy(&d);
}

/* Results of one round come in in no meaningful order: the engine's state after the round is the
 * same whatever order they were recorded in (every P, state and evidence line), and a part is
 * named on whole rounds. */
static void s_order_round(fb_diag_t *d, const int *order, int n)
{
    char id[32], a[32], b[32];
    for (int k = 0; k < n; k++) {
        int r = order[k];
        snprintf(a, sizeof a, "n0/r%d", r % 8);
        snprintf(b, sizeof b, "n%d/r%d", r + 1, r % 8);
        snprintf(id, sizeof id, "t%02d", r);
        const char *m[2] = {a, b};
        assert_int_equal(fb_diag_record(d, id, m, 2, r % 8 < 3 || r == 11), 0);
    }
    fb_diag_settle(d);
}

static char *s_dump(const fb_diag_t *d)
{
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    size_t cap = 1 << 16, len = 0;
    char *s = calloc(1, cap);
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%s %d %.12g %u|", v[i].suspect,
                                (int)v[i].state, v[i].p_bad, v[i].n_confirmations);
        for (size_t k = 0; k < v[i].n_evidence; k++)
            len += (size_t)snprintf(s + len, cap - len, "%s %.12g;", v[i].evidence[k].test_id,
                                    v[i].evidence[k].p_after);
    }
    free(v);
    return s;
}

static void test_order(void **state)
{
    (void)state;
    enum { T = 16 };
    int fwd[T], rev[T], mix[T];
    for (int i = 0; i < T; i++) {
        fwd[i] = i;
        rev[i] = T - 1 - i;
        mix[i] = (i * 7) % T;
    }
    char *dumps[3];
    const int *orders[3] = {fwd, rev, mix};
    for (int o = 0; o < 3; o++) {
        fb_diag_t *d = diag_fixture_engine(40, 8, NULL);
        s_order_round(d, orders[o], T);
        dumps[o] = s_dump(d);
        fb_diag_destroy(&d);
    }
    assert_string_equal(dumps[0], dumps[1]);
    assert_string_equal(dumps[0], dumps[2]);
    for (int o = 0; o < 3; o++)
        free(dumps[o]);
    /* three failures on rails 0-2 and five passes on the others in one round: not named */
    fb_diag_t *d = diag_fixture_engine(40, 8, NULL);
    for (int r = 0; r < 8; r++) {
        char rail[4], id[8];
        snprintf(rail, sizeof rail, "r%d", r);
        snprintf(id, sizeof id, "u%d", r);
        diag_fixture_pair(d, id, 0, r + 1, rail, r < 3);
    }
    fb_diag_settle(d);
    assert_int_not_equal(s_state_of(d, "n0"), FB_DIAG_BAD);
    assert_false(fb_diag_done(d));
    fb_diag_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_posterior_threshold),
        cmocka_unit_test(test_fleet_significance),
        cmocka_unit_test(test_looks_chance),
        cmocka_unit_test(test_fleet_significance_over_rounds),
        cmocka_unit_test(test_confirmations),
        cmocka_unit_test(test_cleared_needs_bound),
        cmocka_unit_test(test_bursty),
        cmocka_unit_test(test_no_clearing_in_bursty_fleet),
        cmocka_unit_test(test_on_watch),
        cmocka_unit_test(test_node_cleared_by_rounds),
        cmocka_unit_test(test_passed_vs_cleared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
