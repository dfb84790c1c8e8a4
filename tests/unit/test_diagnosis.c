/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine against a simulated fleet: a fault model written here (hard faults,
 * intermittent faults that show with probability q, spurious failures), node-local then pair
 * rounds planned by the engine, and recall/precision of the bad verdicts over seeded trials.
 * Then each rule of the naming standard on results written by hand: the posterior threshold,
 * independent confirmations, fleet significance, cleared only with a bound, passed versus
 * cleared, the estimates of f and q from the fleet's results, results of a round in any order.
 * Also split planning (with its floor), rails, counters, robust scores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/rng.h"
#include "scheduler/diagnosis.h"
#include "scheduler/pairing.h"
#include "scheduler/robust.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET 256

static double s_unif(uint64_t *state)
{
    return fb_rng_unit(fb_splitmix64(state));
}

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
    bool fail = s_unif(&fl->rng) < fl->f;
    for (size_t i = 0; i < n; i++)
        if (fl->bad[idx[i]] && s_unif(&fl->rng) < fl->q)
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

/* One trial: node-local round, then up to max_rounds pair rounds planned by the engine. */
static s_outcome_t s_trial(uint64_t seed, unsigned n_bad, double q, double f, unsigned max_rounds)
{
    s_fleet_t *fl = calloc(1, sizeof *fl);
    assert_non_null(fl);
    fl->n = FLEET;
    fl->q = q;
    fl->f = f;
    fl->rng = seed * 7919 + 17;
    fb_diag_t *d = fb_diag_new(NULL);
    assert_non_null(d);
    for (size_t i = 0; i < FLEET; i++) {
        snprintf(fl->names[i], sizeof fl->names[i], "node%03zu", i);
        assert_int_equal(fb_diag_add_node(d, fl->names[i], NULL), 0);
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
        /* suspects with trusted partners, everyone else matched freshly, every round */
        fb_diag_round_opts_t o = {seed * 31 + r, r, true, 0, NULL, NULL, 0, NULL, 0};
        fb_diag_round_t plan;
        assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
        for (size_t k = 0; k < plan.n_tests; k++) {
            int idx[2] = {s_node_index(plan.tests[k].a), s_node_index(plan.tests[k].b)};
            assert_null(plan.tests[k].rail);
            snprintf(id, sizeof id, "r%u-%zu", r, k);
            s_record(d, fl, id, idx, 2);
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
        s_outcome_t o = s_trial(1000 + t, 1 + t % 8, q, f, rounds);
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

/* Drives a split search; `shows(part, n, rng)` decides whether one run of a part fails. */
typedef bool (*s_shows_fn)(const char *const *part, size_t n, uint64_t *rng);

static fb_split_t *s_split_search(const char *const *names, size_t n, unsigned repeat,
                                  s_shows_fn shows, uint64_t *rng)
{
    fb_split_t *s = fb_split_new(names, n, 4, repeat);
    assert_non_null(s);
    for (;;) {
        size_t np = fb_split_n_parts(s);
        for (size_t i = 0; i < np; i++) {
            size_t sz;
            const char *const *part = fb_split_part(s, i, &sz);
            assert_non_null(part);
            for (unsigned r = 0; r < repeat; r++)
                assert_int_equal(fb_split_record(s, i, shows(part, sz, rng)), 0);
            assert_int_equal(fb_split_record(s, i, false), -EINVAL); /* one run too many */
        }
        int rc = fb_split_next(s);
        assert_true(rc == 0 || rc == 1);
        if (rc == 0)
            break;
    }
    return s;
}

static bool s_has(const char *const *part, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(part[i], name) == 0)
            return true;
    return false;
}

static bool s_shows_hard(const char *const *part, size_t n, uint64_t *rng)
{
    (void)rng;
    return s_has(part, n, "g37") || s_has(part, n, "g50");
}

static bool s_shows_one(const char *const *part, size_t n, uint64_t *rng)
{
    (void)rng;
    return s_has(part, n, "g37");
}

static bool s_shows_flaky(const char *const *part, size_t n, uint64_t *rng)
{
    return s_has(part, n, "g37") && s_unif(rng) < 0.5;
}

/* Fails only at a scale of 16 or more nodes including g37 (e.g. a congestion fault). */
static bool s_shows_at_scale(const char *const *part, size_t n, uint64_t *rng)
{
    (void)rng;
    return n >= 16 && s_has(part, n, "g37");
}

static void test_split(void **state)
{
    (void)state;
    size_t starts[5];
    assert_int_equal(fb_diag_split(10, 4, starts), 4);
    assert_int_equal(starts[0], 0);
    assert_int_equal(starts[1], 3);
    assert_int_equal(starts[2], 6);
    assert_int_equal(starts[3], 8);
    assert_int_equal(starts[4], 10);
    assert_int_equal(fb_diag_split(3, 4, starts), 3);
    assert_int_equal(fb_diag_split(0, 4, starts), -EINVAL);
    assert_int_equal(fb_diag_split(8, 1, starts), -EINVAL);

    char buf[64][8];
    const char *names[64];
    for (int i = 0; i < 64; i++) {
        snprintf(buf[i], sizeof buf[i], "g%d", i);
        names[i] = buf[i];
    }
    uint64_t rng = 5;
    size_t sz;
    /* one hard fault in 64: log4(64) = 3 levels, the singleton found */
    fb_split_t *s = s_split_search(names, 64, 1, s_shows_one, &rng);
    assert_int_equal(fb_split_levels(s), 3);
    assert_int_equal(fb_split_n_findings(s), 1);
    const char *const *f = fb_split_finding(s, 0, &sz);
    assert_int_equal(sz, 1);
    assert_string_equal(f[0], "g37");
    fb_split_destroy(&s);
    assert_null(s);
    /* two faults in different quarters: both found, still 3 levels (parts run concurrently) */
    s = s_split_search(names, 64, 1, s_shows_hard, &rng);
    assert_int_equal(fb_split_levels(s), 3);
    assert_int_equal(fb_split_n_findings(s), 2);
    fb_split_destroy(&s);
    /* fault only at scale >= 16: the irreducible group of 16 is the finding */
    s = s_split_search(names, 64, 1, s_shows_at_scale, &rng);
    assert_int_equal(fb_split_n_findings(s), 1);
    f = fb_split_finding(s, 0, &sz);
    assert_int_equal(sz, 16);
    assert_true(s_has(f, sz, "g37"));
    fb_split_destroy(&s);
    /* flaky (q = 0.5): repetition beats it; r = 1 vs r = 5 over 200 seeded searches */
    unsigned exact[2] = {0, 0};
    unsigned reps[2] = {1, 5};
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < 200; t++) {
            rng = 1000 + (uint64_t)t;
            s = s_split_search(names, 64, reps[k], s_shows_flaky, &rng);
            if (fb_split_n_findings(s) == 1) {
                f = fb_split_finding(s, 0, &sz);
                exact[k] += sz == 1 && strcmp(f[0], "g37") == 0;
            }
            fb_split_destroy(&s);
        }
    printf("[diag] split, flaky q=0.5: singleton found in %u/200 with r=1, %u/200 with r=5\n",
           exact[0], exact[1]);
    assert_true(exact[1] >= 165); /* expected (1 - 0.5^5)^3 = 91% at 3 levels: 182 */
    assert_true(exact[1] > exact[0]);
    /* a single member is its own finding; a level cannot advance before every part ran */
    s = fb_split_new(names, 1, 4, 1);
    assert_int_equal(fb_split_n_parts(s), 0);
    assert_int_equal(fb_split_n_findings(s), 1);
    assert_int_equal(fb_split_next(s), 0);
    fb_split_destroy(&s);
    s = fb_split_new(names, 8, 4, 2);
    assert_int_equal(fb_split_n_parts(s), 4);
    assert_int_equal(fb_split_record(s, 0, true), 0);
    assert_int_equal(fb_split_next(s), -EAGAIN);
    assert_null(fb_split_part(s, 4, &sz));
    assert_int_equal(fb_split_record(s, 4, true), -EINVAL);
    fb_split_destroy(&s);
    assert_null(fb_split_new(names, 0, 4, 1));
    assert_null(fb_split_new(names, 4, 1, 1));
}

static void test_robust_score(void **state)
{
    (void)state;
    double v[] = {10, 12, 11, 13, 9, 11, 100};
    assert_true(fabs(fb_robust_median(v, 7) - 11.0) < 1e-12);
    assert_true(fabs(fb_robust_mad(v, 7) - 1.0) < 1e-12); /* |dev| 1,1,0,2,2,0,89 */
    assert_true(fabs(fb_robust_score(5.0, v, 7) - 6.0 / 1.4826) < 1e-9);
    assert_true(fabs(fb_robust_score(11.0, v, 7)) < 1e-12);
    assert_true(fb_robust_score(100.0, v, 7) < 0);
    double even[] = {1, 2, 3, 4};
    assert_true(fabs(fb_robust_median(even, 4) - 2.5) < 1e-12);
    double same[] = {50, 50, 50, 50};
    /* MAD 0: scale floors at 1% of the median (0.5) */
    assert_true(fabs(fb_robust_score(49.0, same, 4) - 2.0) < 1e-9);
    assert_true(isnan(fb_robust_score(1.0, v, 2)));
    assert_true(isnan(fb_robust_score(NAN, v, 7)));
    assert_true(isnan(fb_robust_median(NULL, 0)));
    double with_nan[] = {1, NAN, 3, 2};
    assert_true(fabs(fb_robust_median(with_nan, 4) - 2.0) < 1e-12);
}

/* A bad rail: tests over rail r1 fail whenever n3/r1 is in them; its node's r0 tests pass. The
 * rail is named; the node is not, and passes (its failures are the rail's). */
static void test_rails(void **state)
{
    (void)state;
    fb_diag_t *d = fb_diag_new(NULL);
    char names[16][8];
    for (int i = 0; i < 16; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        assert_int_equal(fb_diag_add_node(d, names[i], "r0,r1"), 0);
    }
    assert_int_equal(fb_diag_add_node(d, "n3", NULL), -EEXIST);
    assert_int_equal(fb_diag_add_node(d, "a/b", NULL), -EINVAL);
    assert_int_equal(fb_diag_add_node(d, "x", "r0,,r1"), -EINVAL);
    const char *m[2] = {"n3/r1", "nope"};
    assert_int_equal(fb_diag_record(d, "t", m, 2, true), -ENOENT);
    m[1] = "n3/r1";
    assert_int_equal(fb_diag_record(d, "t", m, 2, true), -EINVAL);
    char id[32], pm[2][16];
    for (unsigned r = 1; r <= 24 && (r <= 2 || !fb_diag_done(d)); r++) {
        fb_diag_round_opts_t o = {r, r, r <= 2, 0, NULL, NULL, 0, NULL, 0};
        fb_diag_round_t plan;
        assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
        for (size_t k = 0; k < plan.n_tests; k++) {
            const fb_diag_test_t *t = &plan.tests[k];
            assert_non_null(t->rail); /* the planned rail on both nodes */
            if (t->suspect && strchr(t->suspect, '/'))
                assert_string_equal(strchr(t->suspect, '/') + 1, t->rail);
            snprintf(pm[0], sizeof pm[0], "%s/%s", t->a, t->rail);
            snprintf(pm[1], sizeof pm[1], "%s/%s", t->b, t->rail);
            const char *mm[2] = {pm[0], pm[1]};
            bool fail = !strcmp(pm[0], "n3/r1") || !strcmp(pm[1], "n3/r1");
            snprintf(id, sizeof id, "r%u-%zu", r, k);
            assert_int_equal(fb_diag_record(d, id, mm, 2, fail), 0);
        }
        fb_diag_round_clear(&plan);
    }
    fb_diag_settle(d);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    assert_int_equal(n, 48);
    for (size_t i = 0; i < n; i++) {
        /* FB_DIAG_DEBUG=1 prints the evidence trail of every suspect that failed a test */
        if (getenv("FB_DIAG_DEBUG") && v[i].n_failed) {
            printf("dbg %s st=%d p=%.4f tests=%u failed=%u tfp=%u:", v[i].suspect, (int)v[i].state,
                   v[i].p_bad, v[i].n_tests, v[i].n_failed, v[i].n_trusted_fail_partners);
            for (size_t k = 0; k < v[i].n_evidence; k++)
                printf(" %s(%s,%d,%.3f)", v[i].evidence[k].test_id, v[i].evidence[k].partners,
                       v[i].evidence[k].failed, v[i].evidence[k].p_after);
            printf("\n");
        }
        if (strcmp(v[i].suspect, "n3/r1") == 0) {
            assert_int_equal(v[i].state, FB_DIAG_BAD);
            assert_string_equal(v[i].parent, "n3");
            printf("[diag] rail n3/r1: bad, P=%.4f after %u tests, %u failed, %u trusted partners:",
                   v[i].p_bad, v[i].n_tests, v[i].n_failed, v[i].n_trusted_fail_partners);
            for (size_t k = 0; k < v[i].n_evidence; k++)
                printf(" %s(%s,%s)", v[i].evidence[k].test_id, v[i].evidence[k].partners,
                       v[i].evidence[k].failed ? "fail" : "pass");
            printf("\n");
        } else {
            assert_int_not_equal(v[i].state, FB_DIAG_BAD);
        }
        if (strcmp(v[i].suspect, "n3") == 0)
            assert_int_equal(v[i].state, FB_DIAG_PASSED);
        if (strcmp(v[i].suspect, "n3") == 0)
            printf("[diag] node n3: state %d P=%.4f\n", (int)v[i].state, v[i].p_bad);
    }
    free(v);
    fb_diag_destroy(&d);
    fb_diag_destroy(&d); /* NULL-safe */
}

static void test_params_and_empty(void **state)
{
    (void)state;
    fb_diag_params_t p;
    fb_diag_params_default(&p);
    p.clear_q = 0.0;
    assert_null(fb_diag_new(&p));
    fb_diag_params_default(&p);
    p.clear_threshold = 0.5;
    assert_null(fb_diag_new(&p));
    fb_diag_t *d = fb_diag_new(NULL);
    assert_true(fb_diag_done(d));
    assert_true(fabs(fb_diag_false_fail_rate(d) - 0.05) < 1e-12);
    assert_true(isnan(fb_diag_p_bad(d, "x")));
    fb_diag_round_opts_t o = {1, 0, true, 0, NULL, NULL, 0, NULL, 0};
    fb_diag_round_t plan;
    assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
    assert_int_equal(plan.n_tests, 0);
    fb_diag_round_clear(&plan);
    assert_int_equal(fb_diag_add_node(d, "a", NULL), 0);
    assert_int_equal(fb_diag_add_node(d, "b", NULL), 0);
    /* a node failing its node-local test is implicated: a suspect, undecided */
    const char *m[1] = {"a"};
    assert_int_equal(fb_diag_record(d, "local-a", m, 1, true), 0);
    /* nothing before the round ends: its prior, steady and bursty */
    assert_true(fabs(fb_diag_p_bad(d, "a") - 0.01 * 1.25) < 1e-12);
    fb_diag_settle(d);
    assert_true(fb_diag_p_bad(d, "a") > 0.03);
    assert_false(fb_diag_done(d));
    assert_false(fb_diag_trusted(d, "a"));
    assert_true(fb_diag_trusted(d, "b"));
    fb_diag_verdict_t *v;
    assert_int_equal(fb_diag_verdicts(d, &v), 2);
    assert_int_equal(v[0].state, FB_DIAG_UNDECIDED);
    assert_int_equal(v[1].state, FB_DIAG_PASSED);
    assert_string_equal(v[0].evidence[0].test_id, "local-a");
    assert_string_equal(v[0].evidence[0].partners, "");
    assert_true(v[0].clear_more > 10); /* a suspect earns "cleared" with its own passes */
    assert_string_equal(fb_diag_state_name(v[1].state), "passed");
    free(v);
    const char *two[2] = {"a", "a"};
    assert_int_equal(fb_diag_record(d, "t", two, 2, true), -EINVAL);
    fb_diag_destroy(&d);
}

/* ---- rounds on every rail ---- */

#define RAILS 8

/* A fleet of FLEET nodes with RAILS rails each, some nodes bad (q per test, on every rail). One
 * trial: node-local round, then rounds planned by fb_diag_plan_round (fresh random matchings for
 * everyone else in the first two, only re-tests after). Returns tp/fp/fn after max_rounds. */
static s_outcome_t s_rail_trial(uint64_t seed, unsigned n_bad, double q, double f,
                                unsigned max_rounds)
{
    s_fleet_t *fl = calloc(1, sizeof *fl);
    assert_non_null(fl);
    fl->n = FLEET;
    fl->q = q;
    fl->f = f;
    fl->rng = seed * 7919 + 17;
    fb_diag_t *d = fb_diag_new(NULL);
    char rails[64] = "";
    for (int r = 0; r < RAILS; r++)
        snprintf(rails + strlen(rails), sizeof rails - strlen(rails), "%smlx5_%d", r ? "," : "", r);
    for (size_t i = 0; i < FLEET; i++) {
        snprintf(fl->names[i], sizeof fl->names[i], "node%03zu", i);
        assert_int_equal(fb_diag_add_node(d, fl->names[i], rails), 0);
    }
    for (unsigned b = 0; b < n_bad;) {
        size_t i = (size_t)(fb_splitmix64(&fl->rng) % FLEET);
        if (!fl->bad[i]) {
            fl->bad[i] = true;
            b++;
        }
    }
    char id[48], ma[32], mb[32];
    for (int i = 0; i < FLEET; i++) {
        snprintf(id, sizeof id, "local-%d", i);
        s_record(d, fl, id, &i, 1);
    }
    s_outcome_t out = {0};
    for (unsigned r = 1; r <= max_rounds; r++) {
        fb_diag_round_opts_t o = {seed * 31 + r, r, r <= 2, 0, NULL, NULL, 0, NULL, 0};
        fb_diag_round_t plan;
        assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
        for (size_t k = 0; k < plan.n_tests; k++) {
            const fb_diag_test_t *t = &plan.tests[k];
            int idx[2] = {s_node_index(t->a), s_node_index(t->b)};
            snprintf(ma, sizeof ma, "%s/%s", t->a, t->rail);
            snprintf(mb, sizeof mb, "%s/%s", t->b, t->rail);
            const char *mm[2] = {ma, mb};
            snprintf(id, sizeof id, "r%u-%zu", r, k);
            assert_int_equal(fb_diag_record(d, id, mm, 2, s_run_test(fl, idx, 2)), 0);
        }
        fb_diag_round_clear(&plan);
        unsigned tp, fp, fn;
        s_count_named(d, fl, &tp, &fp, &fn);
        if (!out.rounds_to_all && fn == 0)
            out.rounds_to_all = r;
    }
    s_count_named(d, fl, &out.tp, &out.fp, &out.fn);
    fb_diag_destroy(&d);
    free(fl);
    return out;
}

/* The goal: intermittent q = 0.5 with 1% false fails, recall and precision >= 0.99 within 8
 * rounds, met with 8 rails (a node fault shows in each rail's test). */
static void test_intermittent_rails(void **state)
{
    (void)state;
    unsigned tp = 0, fp = 0, fn = 0, worst = 0;
    for (unsigned t = 0; t < 60; t++) {
        s_outcome_t o = s_rail_trial(2000 + t, 1 + t % 8, 0.5, 0.01, 8);
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

/* One round's plan: every node at most once per rail; a suspect gets a trusted partner on every
 * rail, a different one each time; everyone else is matched freshly; a bad rail sits out. */
static void test_plan_round(void **state)
{
    (void)state;
    enum { N = 20 };
    fb_diag_t *d = fb_diag_new(NULL);
    char names[N][8];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        assert_int_equal(fb_diag_add_node(d, names[i], "r0,r1,r2"), 0);
    }
    const char *const *rails;
    assert_int_equal(fb_diag_rails(d, &rails), 3);
    assert_string_equal(rails[2], "r2");
    /* n1 fails alone: a suspect; n2's rail r1 fails with n3 (both rails suspected) */
    const char *m1[1] = {"n1"};
    assert_int_equal(fb_diag_record(d, "local-n1", m1, 1, true), 0);
    const char *m2[2] = {"n2/r1", "n3/r1"};
    assert_int_equal(fb_diag_record(d, "t0", m2, 2, true), 0);
    fb_diag_settle(d);
    assert_false(fb_diag_trusted(d, "n1"));
    assert_false(fb_diag_trusted(d, "n2"));
    assert_true(fb_diag_trusted(d, "n4"));
    const char *extra[1] = {"n5"};
    const char *busy[1] = {"n6"};
    fb_diag_round_opts_t o = {7, 1, true, 0, NULL, extra, 1, busy, 1};
    fb_diag_round_t plan;
    assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
    int seen[N][3] = {{0}};
    char partners_of_n1[3][8] = {"", "", ""};
    for (size_t k = 0; k < plan.n_tests; k++) {
        const fb_diag_test_t *t = &plan.tests[k];
        int r = t->rail[1] - '0', a = atoi(t->a + 1), b = atoi(t->b + 1);
        assert_int_equal(seen[a][r]++, 0);
        assert_int_equal(seen[b][r]++, 0);
        if (t->suspect) {
            assert_true(fb_diag_trusted(d, t->b));
            if (a == 1)
                snprintf(partners_of_n1[r], sizeof partners_of_n1[r], "%s", t->b);
        } else {
            /* fresh pairs hold no suspect */
            assert_true(a != 1 && a != 2 && a != 3 && a != 5 && b != 1 && b != 2 && b != 3 &&
                        b != 5);
        }
    }
    assert_int_equal(plan.n_suspects, 4); /* n1, n2, n3 and the extra n5 */
    for (int r = 0; r < 3; r++) {
        assert_true(partners_of_n1[r][0]);
        for (int r2 = 0; r2 < r; r2++)
            assert_string_not_equal(partners_of_n1[r], partners_of_n1[r2]);
    }
    for (int r = 0; r < 3; r++) { /* everybody on every rail but n6 (busy) and an odd one out */
        int idle = 0;
        for (int i = 0; i < N; i++)
            if (i == 6)
                assert_int_equal(seen[i][r], 0);
            else
                idle += seen[i][r] == 0;
        assert_true(idle <= 1);
    }
    fb_diag_round_clear(&plan);
    fb_diag_round_clear(&plan); /* twice is fine */
    /* without fresh matchings only the suspects and their partners are busy */
    o.fresh = false;
    assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
    assert_int_equal(plan.n_tests, plan.n_retests);
    assert_int_equal(plan.n_tests, 4 * 3);
    fb_diag_round_clear(&plan);
    /* a topology pairing without a topology is refused */
    o.pairing = FB_PAIRING_TOPOLOGY;
    o.fresh = true;
    assert_int_equal(fb_diag_plan_round(d, &o, &plan), -EINVAL);
    assert_int_equal(plan.n_tests, 0);
    fb_diag_destroy(&d);
}

/* ---- the standard, rule by rule, on results written by hand ---- */

/* A fleet of n nodes "n0" ... without rails, or with rails r0..r(rails-1). */
static fb_diag_t *s_engine(int n, int rails, const fb_diag_params_t *par)
{
    fb_diag_t *d = fb_diag_new(par);
    assert_non_null(d);
    char name[16], rl[64] = "";
    for (int r = 0; r < rails; r++)
        snprintf(rl + strlen(rl), sizeof rl - strlen(rl), "%sr%d", r ? "," : "", r);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(fb_diag_add_node(d, name, rl), 0);
    }
    return d;
}

static void s_pair(fb_diag_t *d, const char *id, int a, int b, const char *rail, bool failed)
{
    char x[24], y[24];
    snprintf(x, sizeof x, rail ? "n%d/%s" : "n%d", a, rail);
    snprintf(y, sizeof y, rail ? "n%d/%s" : "n%d", b, rail);
    const char *m[2] = {x, y};
    assert_int_equal(fb_diag_record(d, id, m, 2, failed), 0);
}

/* Background: every other node of the fleet in passing pairs (and one spurious failure in a
 * hundred, on other nodes each round), so that the fleet's false-fail rate is known; nodes
 * [from, n) take part. */
static void s_background(fb_diag_t *d, int from, int n, int round)
{
    char id[32];
    for (int i = from; i + 1 < n; i += 2) {
        snprintf(id, sizeof id, "bg%d.%d", round, i);
        s_pair(d, id, i, i + 1, NULL, (i / 2 + 37 * round) % 100 == 7);
    }
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
    fb_diag_t *d = s_engine(fleet, 0, par);
    s_background(d, 0, fleet, 0);
    fb_diag_settle(d);
    for (int k = 1; k <= fails; k++) {
        char id[16];
        snprintf(id, sizeof id, "f%d", k);
        s_pair(d, id, 0, fleet - k, NULL, true);
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
    d = s_engine(64, 0, &par);
    s_background(d, 2, 64, 0);
    const char *m[1] = {"n0"};
    assert_int_equal(fb_diag_record(d, "local", m, 1, true), 0);
    fb_diag_settle(d);
    char id[16];
    for (int k = 1; k <= 5; k++) {
        snprintf(id, sizeof id, "p%d", k);
        s_pair(d, id, 0, 63 - k, NULL, true);
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
    fb_diag_t *d = s_engine(64, 8, NULL);
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
                s_pair(d, id, a, b, rail, burst || spurious || chance);
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

/* Cleared only with a bound: a node that failed once and then passed is undecided until its own
 * passes rule out a fault showing in a quarter of its tests with 0.99 (17 in a row), however low
 * its P(bad) fell before; then it is cleared, and a part never implicated is passed. */
static void test_cleared_needs_bound(void **state)
{
    (void)state;
    fb_diag_t *d = s_engine(64, 0, NULL);
    s_background(d, 2, 64, 0);
    s_pair(d, "fail", 0, 1, NULL, true);
    fb_diag_settle(d);
    assert_int_equal(s_state_of(d, "n0"), FB_DIAG_UNDECIDED);
    assert_int_equal(s_state_of(d, "n1"), FB_DIAG_UNDECIDED);
    char id[16];
    unsigned cleared_at = 0;
    double p_low_at = 0;
    for (int k = 1; k <= 20 && !cleared_at; k++) {
        snprintf(id, sizeof id, "pass%d", k);
        s_pair(d, id, 0, 30 + k, NULL, false); /* trusted partners (n14, n15 failed) */
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
    assert_int_equal(s_get(v, n, "n1")->state, FB_DIAG_UNDECIDED); /* never re-tested */
    assert_int_equal(s_get(v, n, "n40")->state, FB_DIAG_PASSED);   /* never implicated */
    assert_int_equal(s_get(v, n, "n0")->clear_more, 0);
    free(v);
    fb_diag_destroy(&d);
}

/* Passed, not cleared: the partners of a node named bad failed with it, and that explains their
 * failures; they were never implicated and make no claim of a bound. */
static void test_passed_vs_cleared(void **state)
{
    (void)state;
    fb_diag_t *d = s_engine(64, 4, NULL);
    char id[16];
    for (int r = 0; r < 4; r++) { /* n0 is hard bad: every rail of every round */
        char rail[4];
        snprintf(rail, sizeof rail, "r%d", r);
        snprintf(id, sizeof id, "s%d", r);
        s_pair(d, id, 0, 1 + r, rail, true);
        for (int i = 5 + r; i + 1 < 64; i += 2) {
            snprintf(id, sizeof id, "s%d.%d", r, i);
            s_pair(d, id, i, i + 1, rail, false);
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

/* f from the fleet's own results: 1000 tests between trusted nodes of which 30 fail estimate f
 * near 3%, far from the 5% it starts from; tests with a part named bad do not count. */
static void test_estimate_f(void **state)
{
    (void)state;
    fb_diag_t *d = s_engine(2000, 0, NULL);
    char id[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(id, sizeof id, "t%d", i);
        s_pair(d, id, 2 * i, 2 * i + 1, NULL, i % 100 < 3);
    }
    fb_diag_settle(d);
    double f = fb_diag_false_fail_rate(d);
    printf("[diag] f from 30 failures in 1000 tests: %.4f\n", f);
    assert_true(fabs(f - (0.05 * 20 + 30) / 1020.0) < 1e-9);
    fb_diag_destroy(&d);
}

/* q from the fleet: nodes that fail every test are named with q near 1 and move the fleet's
 * mixture up; nodes that fail half of them are named with q near 0.5; clearing rules out the
 * smallest q a named part shows, when it is below clear_q. */
static void s_q_fleet(double q, double *q_named, double *top_weight, double *q_clear)
{
    s_fleet_t *fl = calloc(1, sizeof *fl);
    fl->q = q;
    fl->f = 0.01;
    fl->rng = 99;
    fb_diag_t *d = s_engine(256, 8, NULL);
    for (int b = 0; b < 8; b++)
        fl->bad[b * 31] = true;
    char id[32], ma[16], mb[16];
    for (unsigned r = 1; r <= 8; r++) {
        fb_diag_round_opts_t o = {r, r, r <= 2, 0, NULL, NULL, 0, NULL, 0};
        fb_diag_round_t plan;
        assert_int_equal(fb_diag_plan_round(d, &o, &plan), 0);
        for (size_t k = 0; k < plan.n_tests; k++) {
            const fb_diag_test_t *t = &plan.tests[k];
            int idx[2] = {atoi(t->a + 1), atoi(t->b + 1)};
            snprintf(ma, sizeof ma, "%s/%s", t->a, t->rail);
            snprintf(mb, sizeof mb, "%s/%s", t->b, t->rail);
            const char *mm[2] = {ma, mb};
            snprintf(id, sizeof id, "r%u-%zu", r, k);
            assert_int_equal(fb_diag_record(d, id, mm, 2, s_run_test(fl, idx, 2)), 0);
        }
        fb_diag_round_clear(&plan);
    }
    fb_diag_settle(d);
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v), named = 0;
    *q_named = 0;
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
    double qn, top, qc;
    s_q_fleet(1.0, &qn, &top, &qc);
    printf("[diag] 8 hard nodes: q of the named %.2f, mixture weight at q %.2f: %.2f, q cleared "
           "against %.2f\n",
           qn, grid[m - 1], top, qc);
    assert_true(qn > 0.85);
    assert_true(top > 0.3);
    assert_true(fabs(qc - 0.25) < 1e-12);
    s_q_fleet(0.5, &qn, &top, &qc);
    printf("[diag] 8 nodes at q 0.5: q of the named %.2f, mixture weight at q %.2f: %.2f, q "
           "cleared against %.2f\n",
           qn, grid[m - 1], top, qc);
    assert_true(qn > 0.35 && qn < 0.65);
    assert_true(top < 0.1);
    s_q_fleet(0.3, &qn, &top, &qc);
    printf("[diag] 8 nodes at q 0.3: q of the named %.2f, q cleared against %.2f\n", qn, qc);
    assert_true(qc < 0.25); /* the smallest plausible q of a named part, when smaller */
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
        fb_diag_t *d = s_engine(40, 8, NULL);
        s_order_round(d, orders[o], T);
        dumps[o] = s_dump(d);
        fb_diag_destroy(&d);
    }
    assert_string_equal(dumps[0], dumps[1]);
    assert_string_equal(dumps[0], dumps[2]);
    for (int o = 0; o < 3; o++)
        free(dumps[o]);
    /* three failures on rails 0-2 and five passes on the others in one round: not named */
    fb_diag_t *d = s_engine(40, 8, NULL);
    for (int r = 0; r < 8; r++) {
        char rail[4], id[8];
        snprintf(rail, sizeof rail, "r%d", r);
        snprintf(id, sizeof id, "u%d", r);
        s_pair(d, id, 0, r + 1, rail, r < 3);
    }
    fb_diag_settle(d);
    assert_int_not_equal(s_state_of(d, "n0"), FB_DIAG_BAD);
    assert_false(fb_diag_done(d));
    fb_diag_destroy(&d);
}

/* A port counter of a rail's cable moved: with one trusted partner failing on that rail, the rail
 * is named, as a link; the counter is in its evidence. */
static void test_counters(void **state)
{
    (void)state;
    fb_diag_t *d = fb_diag_new(NULL);
    char names[8][8];
    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        assert_int_equal(fb_diag_add_node(d, names[i], "r0,r1"), 0);
    }
    assert_int_equal(fb_diag_record_counter(d, "t1", "n2/r9", "x"), -ENOENT);
    assert_int_equal(fb_diag_record_counter(d, "t1", "n2", "x"), -EINVAL);
    assert_int_equal(fb_diag_record_counter(d, NULL, "n2/r1", "x"), -EINVAL);
    for (int k = 0; k < 4; k++) {
        char b[16], id[16];
        snprintf(b, sizeof b, "n%d/r1", 3 + k);
        snprintf(id, sizeof id, "t%d", k);
        const char *m[2] = {"n2/r1", b};
        assert_int_equal(fb_diag_record(d, id, m, 2, true), 0);
        if (k == 0)
            assert_int_equal(fb_diag_record_counter(d, id, "n2/r1", "symbol_error +12"), 0);
        const char *o[2] = {"n2/r0", k ? "n1/r0" : "n0/r0"};
        snprintf(id, sizeof id, "u%d", k);
        assert_int_equal(fb_diag_record(d, id, o, 2, false), 0);
        fb_diag_settle(d);
    }
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    bool named = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].suspect, "n2/r1"))
            continue;
        named = v[i].state == FB_DIAG_BAD;
        assert_string_equal(v[i].kind, "link");
        assert_int_equal(v[i].n_counters, 1);
        bool cited = false;
        for (size_t k = 0; k < v[i].n_evidence; k++)
            cited |=
                v[i].evidence[k].counter && !strcmp(v[i].evidence[k].counter, "symbol_error +12");
        assert_true(cited);
    }
    free(v);
    assert_true(named);
    fb_diag_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hard_faults),
        cmocka_unit_test(test_intermittent_faults),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_robust_score),
        cmocka_unit_test(test_rails),
        cmocka_unit_test(test_params_and_empty),
        cmocka_unit_test(test_intermittent_rails),
        cmocka_unit_test(test_plan_round),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_posterior_threshold),
        cmocka_unit_test(test_fleet_significance),
        cmocka_unit_test(test_confirmations),
        cmocka_unit_test(test_cleared_needs_bound),
        cmocka_unit_test(test_bursty),
        cmocka_unit_test(test_passed_vs_cleared),
        cmocka_unit_test(test_estimate_f),
        cmocka_unit_test(test_estimate_q),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
