/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the messy world of sim/faultmodel (docs/simfleet.md): the frequencies every key
 * promises, measured over many draws. Intermittent faults show in a share q of tests for any q;
 * bursty faults are active a share q of simulated time in periods of the stated mean, fail a
 * node's concurrent tests on every rail together and fail again soon after; a leaf fault fails
 * every flow through its switch; several faults on one node act together; lognormal noise has
 * its sigma and a noisy node its own; lost results and disagreeing members come at their rates,
 * independent of the verdict.
 *
 * Every draw derives from a fixed seed, so each test passes or fails for good; the bounds are
 * what a correct model meets: within S_Z standard deviations of the binomial (or of the mean's
 * sampling distribution), where a correct model lands outside with probability below 1e-8, and a
 * wrong rate (a q of 0.25 instead of 0.3, a sigma 10% off) lands outside. */
#include "common/fileload.h"
#include "scheduler/topology.h"
#include "sim/faultmodel.h"
#include "faultmodel_fixture.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* the shared fixtures (faultmodel_fixture.h), with this file's source name */
#define s_parse(text) fm_fixture_parse((text), "w.yaml")
#define s_bound(text, topo) fm_fixture_bound((text), "w.yaml", (topo))
#define s_fabric() fm_fixture_fabric()
#define S_Z 6.0

/* k successes in n trials agree with probability p: |k - np| <= S_Z sd (+1 for p near 0, 1). */
static void s_binomial(size_t k, size_t n, double p, const char *what)
{
    double mean = (double)n * p, sd = sqrt((double)n * p * (1.0 - p));
    if (fabs((double)k - mean) > S_Z * sd + 1.0)
        fail_msg("%s: %zu of %zu, expected %.1f +- %.1f (p %.4f)", what, k, n, mean, S_Z * sd, p);
}

static bool s_fails_at(const fb_faultmodel_t *m, const char *id, const char *const *members,
                       size_t n, int rail, double t)
{
    fb_sim_test_t test = {id, members, n, rail};
    fb_sim_outcome_t o;
    assert_int_equal(fb_faultmodel_judge_at(m, &test, t, &o), 0);
    return o.failed;
}

/* Any q in (0, 1] shows in a share q of the tests that contain the fault. */
static void test_intermittent_any_q(void **state)
{
    (void)state;
    static const double qs[] = {0.01, 0.05, 0.3, 0.5, 0.9, 1.0};
    for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
        char text[96];
        snprintf(text, sizeof text, "faults:\n  - {node: f, kind: intermittent, q: %g}\n", qs[k]);
        fb_faultmodel_t *m = s_parse(text);
        const char *pair[] = {"f", "ok"}, *alone[] = {"f"};
        size_t n = 20000, pair_fails = 0, local_fails = 0;
        for (size_t i = 0; i < n; i++) {
            char id[32];
            snprintf(id, sizeof id, "q%zu.%zu", k, i);
            pair_fails += s_fails_at(m, id, pair, 2, (int)(i % 8), 0.0);
            local_fails += s_fails_at(m, id, alone, 1, -1, 0.0);
        }
        s_binomial(pair_fails, n, qs[k], "pair tests of an intermittent node");
        s_binomial(local_fails, n, qs[k], "node-local tests of an intermittent node");
        fb_faultmodel_destroy(&m);
    }
}

/* Runs of activity of fault 0 sampled every dt over [0, horizon). */
typedef struct {
    size_t samples, active, runs, long_runs; /* long: longer than twice the mean */
    double mean_run_s;
} s_runs_t;

static s_runs_t s_sample_runs(const fb_faultmodel_t *m, double horizon, double dt, double burst)
{
    s_runs_t r = {0};
    size_t run = 0;
    for (double t = 0; t < horizon; t += dt) {
        bool on = fb_faultmodel_active(m, 0, t);
        r.samples++;
        r.active += on;
        if (on) {
            run++;
            continue;
        }
        if (run) {
            r.runs++;
            r.long_runs += (double)run * dt > 2.0 * burst;
        }
        run = 0;
    }
    r.mean_run_s = r.runs ? (double)r.active * dt / (double)r.runs : 0;
    return r;
}

/* A bursty fault is active a share q of simulated time, in periods of mean `burst` with an
 * exponential's tail. */
static void test_burst_share_and_periods(void **state)
{
    (void)state;
    static const struct {
        double q, burst;
    } cases[] = {{0.3, 600}, {0.8, 60}, {0.1, 3600}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[128];
        snprintf(text, sizeof text,
                 "seed: %zu\nfaults:\n  - {node: f, kind: intermittent, q: %g, burst: %g}\n", k + 3,
                 cases[k].q, cases[k].burst);
        fb_faultmodel_t *m = s_parse(text);
        double cycle = cases[k].burst / cases[k].q; /* mean active + quiet */
        double quiet = cycle - cases[k].burst;
        double horizon = 2000 * cycle, dt = (quiet < cases[k].burst ? quiet : cases[k].burst) / 100;
        s_runs_t r = s_sample_runs(m, horizon, dt, cases[k].burst);
        /* About 2000 periods of each state: the share has an sd of q (1 - q) sqrt(2 / 2000)
         * (at most 0.007), the mean period one of 2.2%; sampling on a grid of a 100th of the
         * shorter mean misses or merges about 1% of the periods. */
        double share = (double)r.active / (double)r.samples;
        if (fabs(share - cases[k].q) > 0.1 * cases[k].q + 0.01)
            fail_msg("q %g burst %g: active %.4f of the time", cases[k].q, cases[k].burst, share);
        if (fabs(r.mean_run_s / cases[k].burst - 1.0) > 0.12)
            fail_msg("q %g burst %g: mean active period %.1f s over %zu periods", cases[k].q,
                     cases[k].burst, r.mean_run_s, r.runs);
        s_binomial(r.long_runs, r.runs, exp(-2.0), "periods longer than twice the mean");
        /* A stateless function of time: asked backwards, the same answers. */
        for (double t = 50 * cycle; t > 0; t -= cycle / 7)
            assert_int_equal(fb_faultmodel_active(m, 0, t), fb_faultmodel_active(m, 0, t));
        fb_faultmodel_destroy(&m);
    }
    /* q 1 with a burst is always active; other faults are always active. */
    fb_faultmodel_t *m = s_parse("faults:\n  - {node: f, kind: intermittent, q: 1, burst: 60}\n"
                                 "  - {node: g, kind: hard}\n");
    for (double t = 0; t < 1e5; t += 333)
        assert_true(fb_faultmodel_active(m, 0, t) && fb_faultmodel_active(m, 1, t));
    assert_false(fb_faultmodel_active(m, 2, 0));
    fb_faultmodel_destroy(&m);
}

/* While a bursty node is active its concurrent tests on all rails fail together, and a round
 * soon after a failed one fails again far more often than q. */
static void test_burst_rails_fail_together(void **state)
{
    (void)state;
    fb_faultmodel_t *m =
        s_parse("faults:\n  - {node: f, kind: intermittent, q: 0.3, burst: 600}\n");
    size_t rounds = 3000, failed_rounds = 0, again = 0;
    for (size_t k = 0; k < rounds; k++) {
        /* rounds 10^4 s apart are independent (correlation e^-24); each with a follow-up 60 s
         * later */
        double t = 1e4 * (double)k;
        size_t fails = 0, fails_later = 0;
        for (int rail = 0; rail < 8; rail++) {
            char partner[16], id[48];
            snprintf(partner, sizeof partner, "p%d", rail);
            const char *pair[] = {"f", partner};
            snprintf(id, sizeof id, "r%zu.%d", k, rail);
            fails += s_fails_at(m, id, pair, 2, rail, t);
            snprintf(id, sizeof id, "r%zu.%d.later", k, rail);
            fails_later += s_fails_at(m, id, pair, 2, rail, t + 60);
        }
        assert_true(fails == 0 || fails == 8);
        assert_true(fails_later == 0 || fails_later == 8);
        failed_rounds += fails == 8;
        again += fails == 8 && fails_later == 8;
    }
    s_binomial(failed_rounds, rounds, 0.3, "rounds of a bursty node that failed");
    /* P(active at t + 60 | active at t) = q + (1 - q) e^(-60 (1/600 + 1/1400)) = 0.907 */
    double p_again = 0.3 + 0.7 * exp(-60.0 * (1.0 / 600 + 1.0 / 1400));
    s_binomial(again, failed_rounds, p_again, "failed rounds that failed again 60 s later");
    fb_faultmodel_destroy(&m);

    /* Without a burst the same q draws per test: rails fail independently. */
    m = s_parse("faults:\n  - {node: f, kind: intermittent, q: 0.3}\n");
    size_t mixed = 0;
    for (size_t k = 0; k < 1000; k++) {
        size_t fails = 0;
        for (int rail = 0; rail < 8; rail++) {
            char partner[16], id[48];
            snprintf(partner, sizeof partner, "p%d", rail);
            const char *pair[] = {"f", partner};
            snprintf(id, sizeof id, "r%zu.%d", k, rail);
            fails += s_fails_at(m, id, pair, 2, rail, 60.0 * (double)k);
        }
        mixed += fails != 0 && fails != 8;
    }
    s_binomial(mixed, 1000, 1.0 - pow(0.3, 8) - pow(0.7, 8), "rounds with some rails failing");
    fb_faultmodel_destroy(&m);
}

/* A leaf fault fails every test with a flow that starts or ends behind the switch, on every
 * rail, and nothing else; an intermittent one a share q of them. */
static void test_leaf_faults(void **state)
{
    (void)state;
    fb_topology_t *topo = s_fabric(); /* leaf02: node05-08 */
    fb_faultmodel_t *m = s_bound("faults:\n  - {leaf: leaf02, kind: hard}\n", topo);
    const char *inside[] = {"node05", "node06"}, *across[] = {"node01", "node07"},
               *elsewhere[] = {"node01", "node09"}, *alone[] = {"node05"},
               *ring[] = {"node01", "node08", "node12"},
               *ring_ok[] = {"node01", "node02", "node12"};
    for (int rail = -1; rail < 8; rail++) {
        assert_true(s_fails_at(m, "a", inside, 2, rail, 0));
        assert_true(s_fails_at(m, "a", across, 2, rail, 0));
        assert_false(s_fails_at(m, "a", elsewhere, 2, rail, 0));
        assert_true(s_fails_at(m, "a", ring, 3, rail, 0));
        assert_false(s_fails_at(m, "a", ring_ok, 3, rail, 0));
    }
    assert_false(s_fails_at(m, "a", alone, 1, -1, 0)); /* node-local: no fabric */
    fb_faultmodel_destroy(&m);

    m = s_bound("faults:\n  - {leaf: leaf03, kind: intermittent, q: 0.4}\n"
                "  - {leaf: leaf04, kind: slow, factor: 0.7}\n",
                topo);
    size_t n = 20000, fails = 0;
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "l%zu", i);
        const char *pair[] = {"node02", i % 2 ? "node10" : "node11"};
        fails += s_fails_at(m, id, pair, 2, (int)(i % 8), 0);
        assert_false(s_fails_at(m, id, alone, 1, -1, 0));
    }
    s_binomial(fails, n, 0.4, "tests through an intermittent leaf");
    assert_true(fb_faultmodel_flow_factor(m, "node01", "node13", 2) == 0.7);
    assert_true(fb_faultmodel_flow_factor(m, "node14", "node15", -1) == 0.7);
    assert_true(fb_faultmodel_flow_factor(m, "node01", "node09", -1) == 1.0);
    fb_faultmodel_destroy(&m);
    fb_topology_destroy(&topo);
}

/* Several faults on one node act together: each shows with its own draw, the slowest factor
 * wins. */
static void test_several_faults_one_node(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("faults:\n  - {node: f, kind: slow, factor: 0.9}\n"
                                 "  - {node: f, kind: intermittent, q: 0.3}\n"
                                 "  - {node: f, kind: intermittent, q: 0.5}\n");
    assert_true(fb_faultmodel_node_factor(m, "f") == 0.9);
    assert_true(fb_faultmodel_flow_factor(m, "f", "ok", 3) == 0.9);
    const char *pair[] = {"ok", "f"};
    size_t n = 20000, fails = 0, first = 0, both = 0;
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "s%zu", i);
        fb_sim_test_t t = {id, pair, 2, 0};
        fb_sim_outcome_t o;
        assert_int_equal(fb_faultmodel_judge(m, &t, &o), 0);
        assert_true(o.factor == 0.9);
        fails += o.failed;
        first += o.n_causes >= 1 && o.causes[0] == 1;
        both += o.n_causes == 2;
    }
    s_binomial(fails, n, 1.0 - 0.7 * 0.5, "tests of a node with two intermittent faults");
    s_binomial(first, n, 0.3, "tests in which the q 0.3 fault showed");
    s_binomial(both, n, 0.15, "tests in which both showed");
    fb_faultmodel_destroy(&m);
}

/* Mean and standard deviation of log(noise) over n draws involving nodes. */
static void s_log_moments(const fb_faultmodel_t *m, size_t n, const char *const *nodes,
                          size_t n_nodes, double *mean, double *sd, size_t *below, double cut)
{
    double s1 = 0, s2 = 0;
    *below = 0;
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "task%zu@x", i);
        double x = log(fb_faultmodel_noise(m, key, "tx", nodes, n_nodes));
        s1 += x;
        s2 += x * x;
        *below += x < cut;
    }
    *mean = s1 / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

/* Lognormal noise has median 1 and the stated sigma, with a normal tail in the logarithm; a noisy
 * node adds its own; the default is the old +-1% uniform jitter. */
static void test_noise(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("noise: {dist: lognormal, sigma: 0.05}\n"
                                 "faults:\n  - {node: loud, kind: noisy, sigma: 0.2}\n");
    size_t n = 100000, below;
    double mean, sd;
    const char *quiet[] = {"a", "b"}, *loud[] = {"a", "loud"};
    s_log_moments(m, n, quiet, 2, &mean, &sd, &below, -2 * 0.05);
    /* sd of the mean: sigma / sqrt(n); of the sample sd: sigma / sqrt(2n) */
    if (fabs(mean) > S_Z * 0.05 / sqrt((double)n) || fabs(sd - 0.05) > S_Z * 0.05 / sqrt(2.0 * n))
        fail_msg("lognormal 0.05: log mean %.5f, sd %.5f", mean, sd);
    s_binomial(below, n, 0.0227501, "measurements more than 2 sigma below the median");
    double both = sqrt(0.05 * 0.05 + 0.2 * 0.2);
    s_log_moments(m, n, loud, 2, &mean, &sd, &below, -3 * both);
    if (fabs(mean) > S_Z * both / sqrt((double)n) || fabs(sd - both) > S_Z * both / sqrt(2.0 * n))
        fail_msg("noisy node: log mean %.5f, sd %.5f (expected %.4f)", mean, sd, both);
    s_binomial(below, n, 0.0013499, "a noisy node's measurements 3 sigma below the median");
    /* deterministic, and independent of the order of the nodes */
    const char *loud_r[] = {"loud", "a"};
    assert_true(fb_faultmodel_noise(m, "k", "tx", loud, 2) ==
                fb_faultmodel_noise(m, "k", "tx", loud_r, 2));
    assert_true(fb_faultmodel_noise(m, "k", "tx", loud, 2) !=
                fb_faultmodel_noise(m, "k", "rx", loud, 2));
    fb_faultmodel_destroy(&m);

    m = s_parse("faults: []\n");
    double lo = 2, hi = 0;
    for (size_t i = 0; i < 10000; i++) {
        char key[32];
        snprintf(key, sizeof key, "t%zu", i);
        double x = fb_faultmodel_noise(m, key, "rx", quiet, 2);
        assert_true(x == 1.0 + 0.01 * (2.0 * fb_faultmodel_uniform(m, key, "rx") - 1.0));
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    assert_true(lo >= 0.99 && lo < 0.9905 && hi <= 1.01 && hi > 1.0095);
    fb_faultmodel_destroy(&m);
}

/* Lost results come at lost_rate per member and test, whatever the verdict. */
static void test_lost_rate(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("lost_rate: 0.01\nfalse_fail_rate: 0.5\nfaults: []\n");
    const char *pair[] = {"a", "b"};
    size_t n = 100000, lost_failed = 0, lost_passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "lt%zu", i);
        bool f = s_fails_at(m, id, pair, 2, -1, 0);
        bool lost = fb_faultmodel_lost(m, id, "a");
        failed += f;
        lost_failed += f && lost;
        lost_passed += !f && lost;
        assert_int_equal(lost, fb_faultmodel_lost(m, id, "a"));
    }
    s_binomial(lost_failed, failed, 0.01, "lost results of failed tests");
    s_binomial(lost_passed, n - failed, 0.01, "lost results of passed tests");
    size_t lost_b = 0;
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "lt%zu", i);
        lost_b += fb_faultmodel_lost(m, id, "b");
        /* the two members' losses are independent */
    }
    s_binomial(lost_b, n, 0.01, "lost results of the other member");
    fb_faultmodel_destroy(&m);
    m = s_parse("faults: []\n");
    for (size_t i = 0; i < 1000; i++)
        assert_false(fb_faultmodel_lost(m, "x", "a"));
    fb_faultmodel_destroy(&m);
}

/* One member of a group test reports the opposite verdict at disagree_rate, any member alike;
 * node-local tests never disagree. */
static void test_disagree_rate(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("disagree_rate: 0.05\nfaults:\n  - {node: c, kind: hard}\n");
    const char *pair[] = {"a", "b"}, *pair_r[] = {"b", "a"}, *group[] = {"a", "b", "c"},
               *alone[] = {"a"};
    size_t n = 100000, dis = 0, dis_a = 0, dis_group = 0, dis_c = 0;
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "d%zu", i);
        fb_sim_test_t t = {id, pair, 2, 0}, tr = {id, pair_r, 2, 0}, tg = {id, group, 3, -1},
                      tl = {id, alone, 1, -1};
        fb_sim_outcome_t o, orv, og, ol;
        fb_faultmodel_judge(m, &t, &o);
        fb_faultmodel_judge(m, &tr, &orv);
        fb_faultmodel_judge(m, &tg, &og);
        fb_faultmodel_judge(m, &tl, &ol);
        assert_null(ol.disagreeing);
        assert_false(o.failed);
        /* the same member whatever the order of the members */
        assert_true((o.disagreeing == NULL) == (orv.disagreeing == NULL));
        if (o.disagreeing) {
            assert_string_equal(o.disagreeing, orv.disagreeing);
            dis++;
            dis_a += !strcmp(o.disagreeing, "a");
            const char *other = strcmp(o.disagreeing, "a") ? "a" : "b";
            assert_true(fb_sim_member_failed(&o, o.disagreeing));
            assert_false(fb_sim_member_failed(&o, other));
        } else {
            assert_false(fb_sim_member_failed(&o, "a") || fb_sim_member_failed(&o, "b"));
        }
        assert_true(og.failed); /* c is hard: the disagreeing member reports a pass */
        if (og.disagreeing) {
            dis_group++;
            dis_c += !strcmp(og.disagreeing, "c");
            assert_false(fb_sim_member_failed(&og, og.disagreeing));
        }
    }
    s_binomial(dis, n, 0.05, "pair tests with a disagreeing member");
    s_binomial(dis_a, dis, 0.5, "disagreements by the first member");
    s_binomial(dis_group, n, 0.05, "group tests with a disagreeing member");
    s_binomial(dis_c, dis_group, 1.0 / 3, "disagreements by the third member of three");
    fb_faultmodel_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intermittent_any_q),
        cmocka_unit_test(test_burst_share_and_periods),
        cmocka_unit_test(test_burst_rails_fail_together),
        cmocka_unit_test(test_leaf_faults),
        cmocka_unit_test(test_several_faults_one_node),
        cmocka_unit_test(test_noise),
        cmocka_unit_test(test_lost_rate),
        cmocka_unit_test(test_disagree_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
