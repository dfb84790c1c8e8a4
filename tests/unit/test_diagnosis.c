/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine against a simulated fleet: a fault model written here (hard faults,
 * intermittent faults that show with probability q, spurious failures), node-local then pair
 * rounds planned by the engine, and recall/precision of the bad verdicts over seeded trials.
 * Also slow-node naming, split planning for faults at scale, rails, evidence, robust scores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "scheduler/diagnosis.h"
#include "scheduler/robust.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET 256

static uint64_t s_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double s_unif(uint64_t *state)
{
    return (double)(s_rand(state) >> 11) / 9007199254740992.0;
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
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(d, &v);
    *tp = *fp = *fn = 0;
    for (size_t i = 0; i < n; i++) {
        bool named = v[i].state == FB_DIAG_BAD;
        bool truth = fl->bad[s_node_index(v[i].suspect)];
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
        size_t i = (size_t)(s_rand(&fl->rng) % FLEET);
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
        fb_pair_t *pairs;
        char **rest;
        size_t n_pairs, n_rest;
        assert_int_equal(fb_diag_plan_pairs(d, seed * 31 + r, &pairs, &n_pairs, &rest, &n_rest), 0);
        for (size_t k = 0; k < n_pairs; k++) {
            int idx[2] = {s_node_index(pairs[k].suspect), s_node_index(pairs[k].partner)};
            snprintf(id, sizeof id, "r%u-s%zu", r, k);
            s_record(d, fl, id, idx, 2);
        }
        /* the caller's fresh matching of everyone else */
        for (size_t k = n_rest; k > 1; k--) {
            size_t j = (size_t)(s_rand(&fl->rng) % k);
            char *t = rest[k - 1];
            rest[k - 1] = rest[j];
            rest[j] = t;
        }
        for (size_t k = 0; k + 1 < n_rest; k += 2) {
            int idx[2] = {s_node_index(rest[k]), s_node_index(rest[k + 1])};
            snprintf(id, sizeof id, "r%u-m%zu", r, k / 2);
            s_record(d, fl, id, idx, 2);
        }
        fb_diag_pairs_free(&pairs, n_pairs);
        fb_diag_names_free(&rest, n_rest);
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
    s_campaign("hard", 200, 1.0, 0.01, 3, &recall, &precision, &worst);
    assert_true(recall == 1.0);
    assert_true(precision == 1.0);
    assert_true(worst <= 3);
}

/* Goal from the brief: recall and precision >= 0.99 within 8 pair rounds at q = 0.5, f = 1%.
 * NOT MET at 8 rounds, and no rule can meet it there: a bad node shows in 9 tests (node-local +
 * 8 pairs) Bin(9, 0.5) failures, so 9% of bad nodes fail at most twice, while each good node
 * with trusted partners fails twice with probability ~0.4% (~1 such node per 256-node trial);
 * naming at two failures would cost the precision. Measured (seeds 1000..1099): 8 rounds
 * recall 0.79 precision 0.997; 20 rounds 0.991 / 0.998; 24 rounds 0.998 / 0.998. The test
 * asserts what the engine achieves at 8 rounds and the 0.99 goal at 24 rounds. */
static void test_intermittent_faults(void **state)
{
    (void)state;
    double recall, precision;
    unsigned worst;
    s_campaign("intermittent", 100, 0.5, 0.01, 8, &recall, &precision, &worst);
    assert_true(recall >= 0.75);
    assert_true(precision >= 0.99);
    s_campaign("intermittent", 100, 0.5, 0.01, 24, &recall, &precision, &worst);
    assert_true(recall >= 0.99);
    assert_true(precision >= 0.99);
}

/* A node 40% slower than the fleet: every pair measurement with it is slow, but it is named
 * only once three distinct trusted partners agree; nobody else is named. */
static void test_slow_node(void **state)
{
    (void)state;
    enum { N = 64, SLOW = 21 };
    fb_diag_t *d = fb_diag_new(NULL);
    char names[N][16];
    double bw[N];
    uint64_t rng = 99;
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "node%03d", i);
        assert_int_equal(fb_diag_add_node(d, names[i], NULL), 0);
        bw[i] = 100.0 * (0.99 + 0.02 * s_unif(&rng));
    }
    bw[SLOW] *= 0.6;
    int partners[8], n_partners = 0;
    for (int r = 1; r <= 5; r++) {
        int perm[N];
        for (int i = 0; i < N; i++)
            perm[i] = i;
        for (int i = N; i > 1; i--) {
            int j = (int)(s_rand(&rng) % (uint64_t)i), t = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = t;
        }
        for (int k = 0; k < N; k += 2) {
            int a = perm[k], b = perm[k + 1];
            double v = (bw[a] < bw[b] ? bw[a] : bw[b]) * (0.995 + 0.01 * s_unif(&rng));
            char id[32];
            snprintf(id, sizeof id, "bw-r%d-%d", r, k / 2);
            assert_int_equal(fb_diag_record_measure(d, id, names[a], names[b], v), 0);
            if (a == SLOW || b == SLOW) {
                int o = a == SLOW ? b : a;
                bool seen = false;
                for (int i = 0; i < n_partners; i++)
                    seen = seen || partners[i] == o;
                if (!seen)
                    partners[n_partners++] = o;
            }
        }
        fb_diag_verdict_t *v;
        size_t n = fb_diag_verdicts(d, &v);
        assert_int_equal(n, N);
        for (size_t i = 0; i < n; i++) {
            if ((int)i == SLOW) {
                assert_int_equal(v[i].n_slow_partners, (unsigned)n_partners);
                assert_true(v[i].slow == (n_partners >= 3));
                assert_int_equal(v[i].n_slow_evidence, (size_t)r);
                assert_true(v[i].slow_evidence[0].score > 10.0);
            } else {
                assert_false(v[i].slow);
            }
        }
        if (r == 3)
            printf("[diag] slow node: %d distinct partners after 3 rounds, named=%d\n", n_partners,
                   (int)v[SLOW].slow);
        free(v);
    }
    assert_true(n_partners >= 3);
    fb_diag_destroy(&d);
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
 * rail is named, the node is not, and partners are trusted nodes not used before. */
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
    for (int r = 1; r <= 16 && (r <= 2 || !fb_diag_done(d)); r++) {
        const char *rail = (r % 2) ? "r1" : "r0";
        fb_pair_t *pairs;
        char **rest;
        size_t np, nr;
        assert_int_equal(fb_diag_plan_pairs(d, (uint64_t)r, &pairs, &np, &rest, &nr), 0);
        for (size_t k = 0; k < np; k++) {
            /* the planned rail on both nodes */
            assert_non_null(pairs[k].rail);
            const char *sr = strchr(pairs[k].suspect, '/');
            if (sr)
                assert_string_equal(sr + 1, pairs[k].rail);
            snprintf(pm[0], sizeof pm[0], "%.*s/%s",
                     sr ? (int)(sr - pairs[k].suspect) : (int)strlen(pairs[k].suspect),
                     pairs[k].suspect, pairs[k].rail);
            snprintf(pm[1], sizeof pm[1], "%s/%s", pairs[k].partner, pairs[k].rail);
            const char *mm[2] = {pm[0], pm[1]};
            bool fail = strcmp(pm[0], "n3/r1") == 0;
            snprintf(id, sizeof id, "r%d-s%zu", r, k);
            assert_int_equal(fb_diag_record(d, id, mm, 2, fail), 0);
        }
        for (size_t k = 0; k + 1 < nr; k += 2) {
            snprintf(pm[0], sizeof pm[0], "%s/%s", rest[k], rail);
            snprintf(pm[1], sizeof pm[1], "%s/%s", rest[k + 1], rail);
            const char *mm[2] = {pm[0], pm[1]};
            bool fail = strcmp(pm[0], "n3/r1") == 0 || strcmp(pm[1], "n3/r1") == 0;
            snprintf(id, sizeof id, "r%d-m%zu", r, k / 2);
            assert_int_equal(fb_diag_record(d, id, mm, 2, fail), 0);
        }
        fb_diag_pairs_free(&pairs, np);
        fb_diag_names_free(&rest, nr);
    }
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
            assert_int_equal(v[i].state, FB_DIAG_CLEARED);
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
    p.q = 0.0;
    assert_null(fb_diag_new(&p));
    fb_diag_params_default(&p);
    p.clear_threshold = 0.5;
    assert_null(fb_diag_new(&p));
    fb_diag_t *d = fb_diag_new(NULL);
    assert_true(fb_diag_done(d));
    assert_true(fabs(fb_diag_false_fail_rate(d) - 0.01) < 1e-12);
    assert_true(isnan(fb_diag_p_bad(d, "x")));
    fb_pair_t *pairs;
    char **rest;
    size_t np, nr;
    assert_int_equal(fb_diag_plan_pairs(d, 1, &pairs, &np, &rest, &nr), 0);
    assert_int_equal(np, 0);
    assert_int_equal(nr, 0);
    fb_diag_pairs_free(&pairs, np);
    fb_diag_names_free(&rest, nr);
    assert_int_equal(fb_diag_add_node(d, "a", NULL), 0);
    assert_int_equal(fb_diag_add_node(d, "b", NULL), 0);
    assert_int_equal(fb_diag_record_measure(d, "m", "a", "a", 1.0), -EINVAL);
    assert_int_equal(fb_diag_record_measure(d, "m", "a", "c", 1.0), -ENOENT);
    /* a node failing its node-local test starts with raised suspicion and is undecided */
    const char *m[1] = {"a"};
    assert_int_equal(fb_diag_record(d, "local-a", m, 1, true), 0);
    assert_true(fb_diag_p_bad(d, "a") > 0.3);
    assert_false(fb_diag_done(d));
    fb_diag_verdict_t *v;
    assert_int_equal(fb_diag_verdicts(d, &v), 2);
    assert_int_equal(v[0].state, FB_DIAG_UNDECIDED);
    assert_int_equal(v[1].state, FB_DIAG_CLEARED);
    assert_string_equal(v[0].evidence[0].test_id, "local-a");
    assert_string_equal(v[0].evidence[0].partners, "");
    free(v);
    fb_diag_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hard_faults),      cmocka_unit_test(test_intermittent_faults),
        cmocka_unit_test(test_slow_node),        cmocka_unit_test(test_split),
        cmocka_unit_test(test_robust_score),     cmocka_unit_test(test_rails),
        cmocka_unit_test(test_params_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
