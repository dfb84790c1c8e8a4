/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine's planning and interface: split searches over failing groups (with their
 * floor, and repetition against flaky faults), a round's plan on every rail (trusted partners for
 * suspects, fresh matchings for the rest, busy and extra nodes), a bad rail named and not its
 * node, port counters naming a link, parameters and an empty engine, and the robust scores the
 * flow judgement uses. Separate from the trials (test_diagnosis.c) and the standard
 * (test_diagnosis_standard.c): these check what is planned and what the API accepts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diagnosis_fixture.h"

#include "scheduler/diagnosis.h"
#include "scheduler/pairing.h"
#include "scheduler/robust.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return s_has(part, n, "g37") && diag_fixture_unif(rng) < 0.5;
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
        cmocka_unit_test(test_split),      cmocka_unit_test(test_robust_score),
        cmocka_unit_test(test_rails),      cmocka_unit_test(test_params_and_empty),
        cmocka_unit_test(test_plan_round), cmocka_unit_test(test_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
