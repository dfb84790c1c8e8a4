/* SPDX-License-Identifier: Apache-2.0 */
/* Which stage scopes each workload runs in (scheduler/workload.h fb_workload_check_scope): the
 * campaign parser refuses a workload in a scope it cannot run in when the campaign loads, naming
 * the stage, the workload and the scopes it runs in, instead of tasks that fail at run time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "scheduler/campaign.h"
#include "scheduler/workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_ok(const char *stage)
{
    char text[512];
    snprintf(text, sizeof text, "name: x\nstages:\n  - %s\n", stage);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    if (fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err))
        fail_msg("'%s' refused: %s", stage, err);
    fb_campaign_destroy(&c);
}

static void s_refused(const char *stage, const char *expected)
{
    char text[512];
    snprintf(text, sizeof text, "name: x\nstages:\n  - %s\n", stage);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err), -EINVAL);
    assert_null(c);
    if (strcmp(err, expected))
        fail_msg("for '%s':\n got      '%s'\n expected '%s'", stage, err, expected);
    free(err);
}

static void test_pair_workloads(void **state)
{
    (void)state;
    s_ok("{name: net, workload: netbw, scope: pairs}");
    s_refused("{name: net, workload: netbw}",
              "t.yaml:3: stages[0].scope: stage 'net': netbw runs only with scope: pairs (it "
              "measures between two nodes), and this stage has scope: node (the default); "
              "expected scope: pairs");
    s_refused("{name: net, workload: netbw, scope: group}",
              "t.yaml:3: stages[0].scope: stage 'net': netbw runs only with scope: pairs (it "
              "measures between two nodes), and this stage has scope: group; expected scope: "
              "pairs");
}

static void test_rdmabw_loopback(void **state)
{
    (void)state;
    s_ok("{name: rd, workload: rdmabw, scope: pairs}");
    s_ok("{name: rd, workload: rdmabw, params: {loopback: true}}");
    s_refused("{name: rd, workload: rdmabw}",
              "t.yaml:3: stages[0].scope: stage 'rd': rdmabw runs with scope: pairs, or scope: "
              "node with loopback: true (it measures between two nodes, or each HCA against "
              "itself with loopback: true), and this stage has scope: node (the default) "
              "without loopback: true; expected loopback: true in params, or scope: pairs");
    s_refused("{name: rd, workload: rdmabw, scope: group}",
              "t.yaml:3: stages[0].scope: stage 'rd': rdmabw runs with scope: pairs, or scope: "
              "node with loopback: true (it measures between two nodes, or each HCA against "
              "itself with loopback: true), and this stage has scope: group; expected scope: "
              "pairs, or scope: node with loopback: true");
}

static void test_node_workloads(void **state)
{
    (void)state;
    const char *node_only[] = {"memtest", "gpuburn", "gpumemtest", "p2p", "health"};
    for (size_t i = 0; i < sizeof node_only / sizeof *node_only; i++) {
        char stage[128], expected[512];
        snprintf(stage, sizeof stage, "{name: s, workload: %s}", node_only[i]);
        s_ok(stage);
        snprintf(stage, sizeof stage, "{name: s, workload: %s, scope: pairs}", node_only[i]);
        snprintf(expected, sizeof expected,
                 "t.yaml:3: stages[0].scope: stage 's': %s runs only with scope: node (it tests "
                 "one node at a time), and this stage has scope: pairs; expected scope: node",
                 node_only[i]);
        s_refused(stage, expected);
    }
}

static void test_every_scope(void **state)
{
    (void)state;
    const char *scopes[] = {"node", "group", "pairs"};
    for (size_t i = 0; i < 3; i++) {
        char stage[128];
        snprintf(stage, sizeof stage, "{name: a, workload: allreduce, scope: %s}", scopes[i]);
        s_ok(stage);
        snprintf(stage, sizeof stage, "{name: a, workload: sleep, scope: %s}", scopes[i]);
        s_ok(stage);
    }
}

/* The error points at the scope key when it is written, else at the stage. */
static void test_line(void **state)
{
    (void)state;
    const char text[] = "name: x\n"
                        "stages:\n"
                        "  - name: m\n"
                        "    workload: memtest\n"
                        "  - name: net\n"
                        "    workload: netbw\n"
                        "    timeout: 5m\n"
                        "    scope: group\n";
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err), -EINVAL);
    assert_non_null(strstr(err, "t.yaml:8: stages[1].scope: stage 'net': netbw"));
    free(err);
}

static void test_scope_listing(void **state)
{
    (void)state;
    char buf[160];
    assert_string_equal(fb_workload_scopes(fb_workload_find("netbw"), buf, sizeof buf),
                        "scope: pairs");
    assert_string_equal(fb_workload_scopes(fb_workload_find("memtest"), buf, sizeof buf),
                        "scope: node");
    assert_string_equal(fb_workload_scopes(fb_workload_find("allreduce"), buf, sizeof buf),
                        "scope: pairs, scope: group or scope: node");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_workloads), cmocka_unit_test(test_rdmabw_loopback),
        cmocka_unit_test(test_node_workloads), cmocka_unit_test(test_every_scope),
        cmocka_unit_test(test_line),           cmocka_unit_test(test_scope_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
