/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the group task verdict (scheduler/stage.h): a failing or broken member decides
 * the task at once and is named; otherwise the task waits for every member; all passed is pass,
 * any skipped is skipped. */
#include "scheduler/stage.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define S_NONE FB_VERDICT_NONE
#define S_PASS FB_VERDICT_PASS
#define S_FAIL FB_VERDICT_FAIL
#define S_SKIP FB_VERDICT_SKIPPED

static fb_verdict_t s_verdict(const fb_verdict_t *v, size_t n, size_t *member)
{
    *member = 99;
    return fb_group_verdict(v, n, member);
}

static void test_group_verdict(void **state)
{
    (void)state;
    size_t m;
    const fb_verdict_t running[] = {S_PASS, S_NONE, S_PASS};
    assert_int_equal(s_verdict(running, 3, &m), S_NONE);
    assert_int_equal(m, 99);
    const fb_verdict_t passed[] = {S_PASS, S_PASS, S_PASS};
    assert_int_equal(s_verdict(passed, 3, &m), S_PASS);
    const fb_verdict_t skipped[] = {S_SKIP, S_SKIP};
    assert_int_equal(s_verdict(skipped, 2, &m), S_SKIP);
    const fb_verdict_t mixed[] = {S_PASS, S_SKIP};
    assert_int_equal(s_verdict(mixed, 2, &m), S_SKIP);
    /* decided at once, while others still run, and the member is named */
    const fb_verdict_t failed[] = {S_NONE, S_FAIL, S_NONE};
    assert_int_equal(s_verdict(failed, 3, &m), S_FAIL);
    assert_int_equal(m, 1);
    const fb_verdict_t lost[] = {S_PASS, S_NONE, FB_VERDICT_LOST};
    assert_int_equal(s_verdict(lost, 3, &m), FB_VERDICT_LOST);
    assert_int_equal(m, 2);
    const fb_verdict_t broken[] = {FB_VERDICT_TIMEOUT, FB_VERDICT_ERROR};
    assert_int_equal(s_verdict(broken, 2, &m), FB_VERDICT_TIMEOUT);
    assert_int_equal(m, 0);
    /* one member: exactly its verdict (scope node) */
    const fb_verdict_t one[] = {FB_VERDICT_ERROR};
    assert_int_equal(s_verdict(one, 1, &m), FB_VERDICT_ERROR);
    assert_int_equal(s_verdict(one, 0, &m), FB_VERDICT_ERROR);
    assert_int_equal(fb_group_verdict(failed, 3, NULL), S_FAIL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
