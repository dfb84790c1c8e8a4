/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line fault injection (scheduler/inject.h): a misspelt key, a workload the campaign
 * does not run and a bad value are errors that say what is expected, instead of a run that
 * injects nothing and passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "scheduler/campaign.h"
#include "scheduler/inject.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static fb_campaign_t *s_campaign(const char *text)
{
    fb_campaign_t *c = NULL;
    char *err = NULL;
    if (fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err))
        fail_msg("campaign refused: %s", err);
    return c;
}

static void s_ok(const char *spec, const fb_campaign_t *c)
{
    char err[2048] = "";
    if (fb_inject_check(spec, c, err, sizeof err))
        fail_msg("'%s' refused: %s", spec, err);
}

static void s_refused(const char *spec, const fb_campaign_t *c, const char *expected)
{
    char err[2048] = "";
    assert_int_equal(fb_inject_check(spec, c, err, sizeof err), -EINVAL);
    if (strcmp(err, expected))
        fail_msg("for '%s':\n got      '%s'\n expected '%s'", spec, err, expected);
}

static const char s_memtest_campaign[] = "name: x\n"
                                         "stages:\n"
                                         "  - {name: m, workload: memtest}\n"
                                         "  - {name: s, workload: sleep}\n";

static void test_valid(void **state)
{
    (void)state;
    fb_campaign_t *c = s_campaign(s_memtest_campaign);
    s_ok("memtest.inject_bitflips=4", c);
    s_ok("inject_bitflips=4", c);      /* every task: memtest takes it */
    s_ok("memtest.size=1MiB", c);      /* any parameter, not only test-only ones */
    s_ok("netbw.inject_rate_mbit=200", NULL); /* an agent's: any workload */
    fb_campaign_destroy(&c);
}

static void test_misspelt_key(void **state)
{
    (void)state;
    fb_campaign_t *c = s_campaign(s_memtest_campaign);
    s_refused("memtest.inject_bitflip=4", c,
              "memtest has no parameter 'inject_bitflip'; expected one of size, passes, threads, "
              "patterns, seed, lock, retests, dimm_decode, inject_bitflips, inject_stuck_bits");
    s_refused("inject_bitflip=4", c,
              "'inject_bitflip' is not a parameter of any workload the campaign runs (memtest, "
              "sleep); expected [WORKLOAD.]KEY=VALUE, e.g. memtest.inject_bitflips=4");
    fb_campaign_destroy(&c);
}

static void test_workload(void **state)
{
    (void)state;
    fb_campaign_t *c = s_campaign(s_memtest_campaign);
    s_refused("netbw.inject_rate_mbit=200", c,
              "no stage of the campaign runs netbw, so nothing would be injected; expected one "
              "of the workloads it runs: memtest, sleep");
    s_refused("memtst.inject_bitflips=4", c,
              "unknown workload 'memtst'; expected one of memtest, sleep, gpuburn, gpumemtest, "
              "p2p, health, allreduce, rdmabw, netbw");
    fb_campaign_destroy(&c);
}

static void test_value(void **state)
{
    (void)state;
    fb_campaign_t *c = s_campaign(s_memtest_campaign);
    s_refused("memtest.inject_bitflips=four", c,
              "memtest.inject_bitflips: 'four' is not a non-negative integer; expected an "
              "integer from 0 to 1000000");
    s_refused("inject_bitflips=-1", c,
              "memtest.inject_bitflips: '-1' is not a non-negative integer; expected an integer "
              "from 0 to 1000000");
    fb_campaign_destroy(&c);
}

static void test_form(void **state)
{
    (void)state;
    s_refused("memtest.inject_bitflips", NULL,
              "'memtest.inject_bitflips': expected [WORKLOAD.]KEY=VALUE, e.g. "
              "memtest.inject_bitflips=4");
    s_refused("=4", NULL, "'=4': expected [WORKLOAD.]KEY=VALUE, e.g. memtest.inject_bitflips=4");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),         cmocka_unit_test(test_misspelt_key),
        cmocka_unit_test(test_workload),      cmocka_unit_test(test_value),
        cmocka_unit_test(test_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
