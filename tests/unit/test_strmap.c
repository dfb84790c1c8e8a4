/* SPDX-License-Identifier: Apache-2.0 */
/* strmap against a brute-force model under random inserts and removals, and stage verdicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/strmap.h"
#include "scheduler/stage.h"

#include <stdio.h>
#include <stdlib.h>

#define KEYS 3000

static void test_strmap_matches_model(void **state)
{
    (void)state;
    fb_strmap_t *m = fb_strmap_new();
    static int present[KEYS];
    static int values[KEYS];
    srand(7);
    for (int iter = 0; iter < 60000; iter++) {
        int k = rand() % KEYS;
        char key[32];
        snprintf(key, sizeof key, "sim-%04d", k);
        if (rand() % 3) {
            fb_strmap_put(m, key, &values[k]);
            present[k] = 1;
        } else {
            void *v = fb_strmap_remove(m, key);
            assert_true(present[k] ? v == &values[k] : v == NULL);
            present[k] = 0;
        }
    }
    size_t expected = 0;
    for (int k = 0; k < KEYS; k++) {
        char key[32];
        snprintf(key, sizeof key, "sim-%04d", k);
        assert_true(present[k] ? fb_strmap_get(m, key) == &values[k] : fb_strmap_get(m, key) == NULL);
        expected += (size_t)present[k];
    }
    assert_int_equal(fb_strmap_size(m), expected);
    size_t pos = 0, seen = 0;
    while (fb_strmap_next(m, &pos, NULL, NULL))
        seen++;
    assert_int_equal(seen, expected);
    fb_strmap_destroy(&m);
    assert_null(m);
}

static void test_stage_verdicts(void **state)
{
    (void)state;
    fb_verdict_t all_pass[] = {FB_VERDICT_PASS, FB_VERDICT_PASS};
    fb_verdict_t some_skipped[] = {FB_VERDICT_PASS, FB_VERDICT_SKIPPED};
    fb_verdict_t all_skipped[] = {FB_VERDICT_SKIPPED, FB_VERDICT_SKIPPED};
    fb_verdict_t one_lost[] = {FB_VERDICT_PASS, FB_VERDICT_LOST};
    fb_verdict_t one_timeout[] = {FB_VERDICT_TIMEOUT, FB_VERDICT_PASS};
    assert_int_equal(fb_stage_verdict(all_pass, 2), FB_VERDICT_PASS);
    assert_int_equal(fb_stage_verdict(some_skipped, 2), FB_VERDICT_PASS);
    assert_int_equal(fb_stage_verdict(all_skipped, 2), FB_VERDICT_SKIPPED);
    assert_int_equal(fb_stage_verdict(one_lost, 2), FB_VERDICT_FAIL);
    assert_int_equal(fb_stage_verdict(one_timeout, 2), FB_VERDICT_FAIL);
    assert_int_equal(fb_stage_verdict(NULL, 0), FB_VERDICT_ERROR);
    assert_true(fb_stage_deadline_ms(1000) > 1000);
    assert_true(fb_stage_deadline_ms(24ull * 3600 * 1000) <= 24ull * 3600 * 1000 + 300000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strmap_matches_model),
        cmocka_unit_test(test_stage_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
