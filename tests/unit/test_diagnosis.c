/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine against a simulated fleet: a fault model written here (hard faults,
 * intermittent faults that show with probability q, spurious failures), node-local then pair
 * rounds planned by the engine, and recall/precision of the bad verdicts over seeded trials,
 * without rails and on 8; then the fleet's own estimates of the false-fail rate f and of how
 * often faults show (q) from such results. The naming standard rule by rule is in
 * test_diagnosis_standard.c; planning, splits, rails and counters in test_diagnosis_plan.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diagnosis_fixture.h"

#include "common/rng.h"
#include "scheduler/diagnosis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FLEET 256

/* The simulated fleet: which nodes are bad, how often a fault shows, spurious failures. */
typedef struct {
    size_t n;
    bool bad[FLEET];
    double q, f;
    uint64_t rng;
    char names[FLEET][16];
} s_fleet_t;

static int s_node_index(const char *name)
{
    return atoi(name + 4); /* "node%03d" */
}

static bool s_run_test(s_fleet_t *fl, const int *idx, size_t n)
{
    bool fail = diag_fixture_unif(&fl->rng) < fl->f;
    for (size_t i = 0; i < n; i++)
        if (fl->bad[idx[i]] && diag_fixture_unif(&fl->rng) < fl->q)
            fail = true;
    return fail;
}

static void s_record(fb_diag_t *d, s_fleet_t *fl, const char *id, const int *idx, size_t n)
{
    const char *mem[2];
    for (size_t i = 0; i < n; i++)
        mem[i] = fl->names[idx[i]];
    assert_int_equal(fb_diag_record(d, id, mem, n, s_run_test(fl, idx, n)), 0);
}

typedef struct {
    unsigned tp, fp, fn;
    unsigned rounds_to_all; /* pair rounds until every bad node was named (0: not within max) */
} s_outcome_t;

static unsigned s_count_named(fb_diag_t *d, const s_fleet_t *fl, unsigned *tp, unsigned *fp,
                              unsigned *fn)
{
    fb_diag_settle(d);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    *tp = *fp = *fn = 0;
    for (size_t i = 0; i < n; i++) {
        bool named = v[i].state == FB_DIAG_BAD;
        bool truth = !v[i].parent && fl->bad[s_node_index(v[i].suspect)];
        if (named && truth)
            (*tp)++;
        else if (named)
            (*fp)++;
        else if (truth)
            (*fn)++;
        if (named) { /* a verdict cites its failures with distinct trusted partners */
            assert_true(v[i].n_trusted_fail_partners >= 2);
            assert_true(v[i].p_bad >= 0.99);
            unsigned fails = 0;
            for (size_t k = 0; k < v[i].n_evidence; k++)
                fails += v[i].evidence[k].failed;
            assert_int_equal(fails, v[i].n_failed);
        }
    }
    free(v);
    return *tp;
}

/* Records a pair test planned on a rail: its members are the two nodes' ports "node/rail". */
static void s_record_on_rail(fb_diag_t *d, s_fleet_t *fl, const char *id, const fb_diag_test_t *t,
                             const int *idx)
{
    char ma[32], mb[32];
    snprintf(ma, sizeof ma, "%s/%s", t->a, t->rail);
    snprintf(mb, sizeof mb, "%s/%s", t->b, t->rail);
    const char *mm[2] = {ma, mb};
    assert_int_equal(fb_diag_record(d, id, mm, 2, s_run_test(fl, idx, 2)), 0);
}

#define RAILS 8

/* One trial on a fleet of FLEET nodes, some bad (q per test): node-local round, then up to
 * max_rounds pair rounds planned by the engine. Without rails, suspects get trusted partners and
 * everyone else is matched freshly every round; with RAILS rails each, fresh random matchings are
 * made for everyone else in the first two rounds only, re-tests after. */
static s_outcome_t s_trial(uint64_t seed, unsigned n_bad, double q, double f, unsigned max_rounds,
                           bool rails)
{
    s_fleet_t *fl = calloc(1, sizeof *fl);
    assert_non_null(fl);
    fl->n = FLEET;
    fl->q = q;
    fl->f = f;
    fl->rng = seed * 7919 + 17;
    fb_diag_t *d = fb_diag_new(NULL);
    assert_non_null(d);
    char rail_list[64] = "";
    for (int r = 0; rails && r < RAILS; r++)
        snprintf(rail_list + strlen(rail_list), sizeof rail_list - strlen(rail_list), "%smlx5_%d",
                 r ? "," : "", r);
    for (size_t i = 0; i < FLEET; i++) {
        snprintf(fl->names[i], sizeof fl->names[i], "node%03zu", i);
        assert_int_equal(fb_diag_add_node(d, fl->names[i], rails ? rail_list : NULL), 0);
    }
    for (unsigned b = 0; b < n_bad;) {
        size_t i = (size_t)(fb_splitmix64(&fl->rng) % FLEET);
        if (!fl->bad[i]) {
            fl->bad[i] = true;
            b++;
        }
    }
    char id[48];
    for (int i = 0; i < FLEET; i++) {
        snprintf(id, sizeof id, "local-%d", i);
        s_record(d, fl, id, &i, 1);
    }
    s_outcome_t out = {0};
    for (unsigned r = 1; r <= max_rounds; r++) {
        bool fresh = !rails || r <= 2;
        fb_diag_round_opts_t o = {seed * 31 + r, r, fresh, 0, NULL, NULL, 0, NULL, 0};
        fb_diag_round_t plan;
        assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
        for (size_t k = 0; k < plan.n_tests; k++) {
            const fb_diag_test_t *t = &plan.tests[k];
            int idx[2] = {s_node_index(t->a), s_node_index(t->b)};
            snprintf(id, sizeof id, "r%u-%zu", r, k);
            if (rails) {
                s_record_on_rail(d, fl, id, t, idx);
            } else {
                assert_null(t->rail);
                s_record(d, fl, id, idx, 2);
            }
        }
        fb_diag_round_clear(&plan);
        unsigned tp, fp, fn;
        s_count_named(d, fl, &tp, &fp, &fn);
        if (!out.rounds_to_all && fn == 0)
            out.rounds_to_all = r;
    }
    s_count_named(d, fl, &out.tp, &out.fp, &out.fn);
    fb_diag_destroy(&d);
    assert_null(d);
    free(fl);
    return out;
}

static void s_campaign(const char *what, unsigned trials, double q, double f, unsigned rounds,
                       double *recall, double *precision, unsigned *worst_rounds)
{
    unsigned tp = 0, fp = 0, fn = 0;
    *worst_rounds = 0;
    for (unsigned t = 0; t < trials; t++) {
        s_outcome_t o = s_trial(1000 + t, 1 + t % 8, q, f, rounds, false);
        tp += o.tp;
        fp += o.fp;
        fn += o.fn;
        unsigned r = o.rounds_to_all ? o.rounds_to_all : rounds + 1;
        if (r > *worst_rounds)
            *worst_rounds = r;
    }
    *recall = tp + fn ? (double)tp / (tp + fn) : 1.0;
    *precision = tp + fp ? (double)tp / (tp + fp) : 1.0;
    printf("[diag] %s: %u trials, q=%.2f f=%.3f, %u pair rounds: tp=%u fp=%u fn=%u recall=%.4f "
           "precision=%.4f worst rounds to find all=%u%s\n",
           what, trials, q, f, rounds, tp, fp, fn, *recall, *precision, *worst_rounds,
           *worst_rounds > rounds ? " (not all found in some trial)" : "");
}

static void test_hard_faults(void **state)
{
    (void)state;
    double recall, precision;
    unsigned worst;
    s_campaign("hard", 200, 1.0, 0.01, 6, &recall, &precision, &worst);
    assert_true(recall == 1.0);
    assert_true(precision == 1.0);
    assert_true(worst <= 6);
}

/* One test per node per round (a node with one path): intermittent q = 0.5, f = 1%. Each
 * round adds one test per suspect; naming waits until its failures are too many for chance in a
 * fleet of 256 (fleet_error) and two trusted partners confirm, so recall at 8 rounds is about a
 * third, and most are named within 24 rounds. With rails (test_intermittent_rails) a node gets a
 * test per rail per round and the goal is met within 8. Measured values are printed. */
static void test_intermittent_faults(void **state)
{
    (void)state;
    double recall, precision;
    unsigned worst;
    s_campaign("intermittent", 100, 0.5, 0.01, 8, &recall, &precision, &worst);
    assert_true(recall >= 0.2);
    assert_true(precision >= 0.99);
    s_campaign("intermittent", 100, 0.5, 0.01, 24, &recall, &precision, &worst);
    assert_true(recall >= 0.95);
    assert_true(precision >= 0.99);
}

/* ---- rounds on every rail ---- */

/* The goal: intermittent q = 0.5 with 1% false fails, recall and precision >= 0.99 within 8
 * rounds, met with 8 rails (a node fault shows in each rail's test). */
static void test_intermittent_rails(void **state)
{
    (void)state;
    unsigned tp = 0, fp = 0, fn = 0, worst = 0;
    for (unsigned t = 0; t < 60; t++) {
        s_outcome_t o = s_trial(2000 + t, 1 + t % 8, 0.5, 0.01, 8, true);
        tp += o.tp;
        fp += o.fp;
        fn += o.fn;
        unsigned r = o.rounds_to_all ? o.rounds_to_all : 9;
        worst = r > worst ? r : worst;
    }
    double recall = (double)tp / (tp + fn), precision = tp + fp ? (double)tp / (tp + fp) : 1.0;
    printf("[diag] intermittent on %d rails: 60 trials, 8 rounds: tp=%u fp=%u fn=%u recall=%.4f "
           "precision=%.4f worst rounds to find all=%u\n",
           RAILS, tp, fp, fn, recall, precision, worst);
    assert_true(recall >= 0.99);
    assert_true(precision >= 0.99);
}

/* f from the fleet's own results: 1000 tests between trusted nodes of which 30 fail estimate f
 * near 3%, far from the 5% it starts from; tests with a part named bad do not count. */
static void test_estimate_f(void **state)
{
    (void)state;
    fb_diag_t *d = diag_fixture_engine(2000, 0, NULL);
    char id[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(id, sizeof id, "t%d", i);
        diag_fixture_pair(d, id, 2 * i, 2 * i + 1, NULL, i % 100 < 3);
    }
    fb_diag_settle(d);
    double f = fb_diag_false_fail_rate(d);
    printf("[diag] f from 30 failures in 1000 tests: %.4f\n", f);
    assert_true(fabs(f - (0.05 * 20 + 30) / 1020.0) < 1e-9);
    fb_diag_destroy(&d);
}

/* q from the fleet: nodes that fail every test are named with q near 1 and move the fleet's
 * mixture up; nodes that fail half of them are named with q near 0.5; clearing rules out the
 * smallest q a named part of the same kind shows, when it is below clear_q (*q_clear: the
 * nodes', *q_clear_rail: the NICs'). */
static void s_q_fleet(double q, double *q_named, double *top_weight, double *q_clear,
                      double *q_clear_rail)
{
    s_fleet_t *fl = calloc(1, sizeof *fl);
    fl->q = q;
    fl->f = 0.01;
    fl->rng = 99;
    fb_diag_t *d = diag_fixture_engine(256, 8, NULL);
    for (int b = 0; b < 8; b++)
        fl->bad[b * 31] = true;
    char id[32];
    for (unsigned r = 1; r <= 8; r++) {
        fb_diag_round_opts_t o = {r, r, r <= 2, 0, NULL, NULL, 0, NULL, 0};
        fb_diag_round_t plan;
        assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
        for (size_t k = 0; k < plan.n_tests; k++) {
            const fb_diag_test_t *t = &plan.tests[k];
            int idx[2] = {atoi(t->a + 1), atoi(t->b + 1)};
            snprintf(id, sizeof id, "r%u-%zu", r, k);
            s_record_on_rail(d, fl, id, t, idx);
        }
        fb_diag_round_clear(&plan);
    }
    fb_diag_settle(d);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v), named = 0;
    *q_named = 0;
    *q_clear_rail = NAN;
    for (size_t i = 0; i < n; i++) {
        if (v[i].parent) {
            assert_true(isnan(*q_clear_rail) || *q_clear_rail == v[i].q_clear);
            *q_clear_rail = v[i].q_clear;
        } else {
            assert_true(v[i].q_clear == fb_diag_q_clear(d)); /* only nodes were named */
        }
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].state == FB_DIAG_BAD) {
            *q_named += v[i].q_est;
            named++;
        }
    *q_named /= named ? (double)named : 1.0;
    free(v);
    const double *grid, *w;
    size_t m = fb_diag_q_mixture(d, &grid, &w);
    *top_weight = w[m - 1];
    *q_clear = fb_diag_q_clear(d);
    fb_diag_destroy(&d);
    free(fl);
}

static void test_estimate_q(void **state)
{
    (void)state;
    fb_diag_t *d = fb_diag_new(NULL);
    const double *grid, *w;
    size_t m = fb_diag_q_mixture(d, &grid, &w);
    for (size_t j = 0; j < m; j++) /* nothing known yet: flat */
        assert_true(fabs(w[j] - 1.0 / (double)m) < 1e-12);
    fb_diag_destroy(&d);
    double qn, top, qc, qr;
    s_q_fleet(1.0, &qn, &top, &qc, &qr);
    printf("[diag] 8 hard nodes: q of the named %.2f, mixture weight at q %.2f: %.2f, q cleared "
           "against %.2f\n",
           qn, grid[m - 1], top, qc);
    assert_true(qn > 0.85);
    assert_true(top > 0.3);
    assert_true(fabs(qc - 0.25) < 1e-12);
    s_q_fleet(0.5, &qn, &top, &qc, &qr);
    printf("[diag] 8 nodes at q 0.5: q of the named %.2f, mixture weight at q %.2f: %.2f, q "
           "cleared against %.2f\n",
           qn, grid[m - 1], top, qc);
    assert_true(qn > 0.35 && qn < 0.65);
    assert_true(top < 0.1);
    s_q_fleet(0.3, &qn, &top, &qc, &qr);
    printf("[diag] 8 nodes at q 0.3: q of the named %.2f, q cleared against %.2f (nodes), %.2f "
           "(NICs)\n",
           qn, qc, qr);
    assert_true(qc < 0.25); /* the smallest plausible q of a named node, when smaller */
    /* a node's fault that shows rarely says nothing of how a NIC's shows: no NIC was named */
    assert_true(fabs(qr - 0.25) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hard_faults),        cmocka_unit_test(test_intermittent_faults),
        cmocka_unit_test(test_intermittent_rails), cmocka_unit_test(test_estimate_f),
        cmocka_unit_test(test_estimate_q),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
