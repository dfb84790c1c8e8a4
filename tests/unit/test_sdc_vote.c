/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the odd-one-out vote of gpuburn's SDC probe (workloads/gpu/host/sdc_vote.c): a clean
 * GPU (every block the same digest) names nobody; one bad SM among 132 is named with its counts,
 * also when only one of its blocks went wrong; two bad SMs with different wrong results are both
 * named; no majority names nobody and says so; and the same vote over GPUs names the odd GPU of
 * eight, and cannot decide between two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gpu/host/sdc_vote.h"

#include <stdint.h>
#include <stdlib.h>

#define GOOD 0x1234567890abcdefull

/* blocks_per_sm blocks on each of sms SMs, all GOOD, in the order a GPU might finish them. */
static sdc_sample_t *s_clean(uint32_t sms, uint32_t blocks_per_sm, size_t *n)
{
    *n = (size_t)sms * blocks_per_sm;
    sdc_sample_t *s = calloc(*n, sizeof *s);
    for (size_t i = 0; i < *n; i++) {
        s[i].unit = (uint32_t)((i * 37) % sms);
        s[i].digest = GOOD;
    }
    return s;
}

static void test_clean(void **state)
{
    (void)state;
    size_t n;
    sdc_sample_t *s = s_clean(132, 4, &n);
    sdc_vote_t v;
    sdc_vote(s, n, &v);
    assert_true(v.majority);
    assert_true(v.digest == GOOD);
    assert_int_equal(v.agree, n);
    assert_int_equal(v.units, 132);
    assert_int_equal(v.n_odd, 0);
    sdc_vote_clear(&v);
    free(s);
}

static void test_one_bad_sm(void **state)
{
    (void)state;
    size_t n;
    sdc_sample_t *s = s_clean(132, 4, &n);
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].unit == 17) {
            s[i].digest = GOOD ^ 1;
            bad++;
        }
    sdc_vote_t v;
    sdc_vote(s, n, &v);
    assert_true(v.majority && v.digest == GOOD);
    assert_int_equal(v.n_odd, 1);
    assert_int_equal(v.odd[0].unit, 17);
    assert_int_equal(v.odd[0].off, bad);
    assert_int_equal(v.odd[0].total, bad);
    sdc_vote_clear(&v);
    /* An intermittent fault: one block of SM 90 wrong, its other blocks right. */
    for (size_t i = 0; i < n; i++)
        if (s[i].unit == 17)
            s[i].digest = GOOD;
    for (size_t i = 0; i < n; i++)
        if (s[i].unit == 90) {
            s[i].digest = 42;
            break;
        }
    sdc_vote(s, n, &v);
    assert_int_equal(v.n_odd, 1);
    assert_int_equal(v.odd[0].unit, 90);
    assert_int_equal(v.odd[0].off, 1);
    assert_int_equal(v.odd[0].total, 4);
    sdc_vote_clear(&v);
    free(s);
}

static void test_two_bad_sms(void **state)
{
    (void)state;
    size_t n;
    sdc_sample_t *s = s_clean(108, 2, &n);
    for (size_t i = 0; i < n; i++) {
        if (s[i].unit == 3)
            s[i].digest = 7;
        if (s[i].unit == 100)
            s[i].digest = 9;
    }
    sdc_vote_t v;
    sdc_vote(s, n, &v);
    assert_int_equal(v.n_odd, 2);
    assert_int_equal(v.odd[0].unit, 3);
    assert_int_equal(v.odd[1].unit, 100);
    assert_int_equal(v.agree, n - 4);
    sdc_vote_clear(&v);
    free(s);
}

/* Half the blocks one way, half the other: no majority, nobody named. */
static void test_no_majority(void **state)
{
    (void)state;
    size_t n;
    sdc_sample_t *s = s_clean(10, 2, &n);
    for (size_t i = 0; i < n; i++)
        if (s[i].unit < 5)
            s[i].digest = 1;
    sdc_vote_t v;
    sdc_vote(s, n, &v);
    assert_false(v.majority);
    assert_int_equal(v.agree, n / 2);
    assert_int_equal(v.n_odd, 0);
    sdc_vote_clear(&v);
    sdc_vote(s, 0, &v); /* nothing to vote on */
    assert_false(v.majority);
    assert_int_equal(v.samples, 0);
    sdc_vote_clear(&v);
    free(s);
}

/* GPUs of a node as units: one odd GPU of 8 is named; two GPUs that disagree are undecided. */
static void test_gpus(void **state)
{
    (void)state;
    sdc_sample_t g[8];
    for (uint32_t i = 0; i < 8; i++)
        g[i] = (sdc_sample_t){i, 0, GOOD};
    g[5].digest = GOOD + 1;
    sdc_vote_t v;
    sdc_vote(g, 8, &v);
    assert_true(v.majority);
    assert_int_equal(v.n_odd, 1);
    assert_int_equal(v.odd[0].unit, 5);
    assert_int_equal(v.units, 8);
    sdc_vote_clear(&v);
    sdc_vote(g + 4, 2, &v); /* gpu4 and gpu5 */
    assert_false(v.majority);
    assert_int_equal(v.n_odd, 0);
    sdc_vote_clear(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),        cmocka_unit_test(test_one_bad_sm),
        cmocka_unit_test(test_two_bad_sms),  cmocka_unit_test(test_no_majority),
        cmocka_unit_test(test_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
