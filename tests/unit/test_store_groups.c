/* SPDX-License-Identifier: Apache-2.0 */
/* The store's rules for tasks with several nodes (group and pair tasks): the task's error names
 * the member whose result set it; a skipped member turns a pass into skipped (the group did not
 * run as a whole) while a later pass does not undo it; a coordinator judgment result fails a
 * task that passed; single-node tasks are unchanged. */
#include "coordinator/store.h"
#include "common/result.h"
#include "common/util.h"
#include "store_fixture.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The store with one campaign "c" of one netbw stage, where each test creates its tasks. */
typedef struct {
    store_fixture_t db;
    int64_t stage;
} fixture_t;

static int s_setup(void **state)
{
    fixture_t *fx = xcalloc(1, sizeof *fx);
    store_fixture_open(&fx->db);
    assert_int_equal(store_campaign_create(fx->db.store, "c", "c", "c.yaml", "", 1), 0);
    assert_int_equal(
        store_stage_create(fx->db.store, "c", 0, "s", "netbw", NULL, "continue", 1000, &fx->stage),
        0);
    *state = fx;
    return 0;
}

static int s_teardown(void **state)
{
    fixture_t *fx = *state;
    store_fixture_close(&fx->db);
    free(fx);
    return 0;
}

static void s_insert(fixture_t *fx, const char *task, const char *node, fb_verdict_t v,
                     const char *error)
{
    char *id = xasprintf("%s@%s", task, node);
    store_fixture_result(fx->db.store, &(store_fixture_result_t){.result_id = id,
                                                                 .task_id = task,
                                                                 .node = node,
                                                                 .verdict = v,
                                                                 .error = error,
                                                                 .stored_ms = 2});
    free(id);
}

/* The task's verdict and error (heap, may be NULL) as stored. */
static fb_verdict_t s_task(fixture_t *fx, const char *task_id, char **error)
{
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(fx->db.store, "c", &c), 0);
    fb_verdict_t v = FB_VERDICT_NONE;
    *error = NULL;
    bool found = false;
    for (size_t t = 0; t < c->stages[0].n_tasks; t++)
        if (!strcmp(c->stages[0].tasks[t].id, task_id)) {
            v = c->stages[0].tasks[t].verdict;
            *error = xstrdup(c->stages[0].tasks[t].error);
            found = true;
        }
    store_campaign_destroy(&c);
    assert_true(found);
    return v;
}

static void s_create(fixture_t *fx, const char *task, size_t n)
{
    const char *nodes[] = {"n1", "n2", "n3"};
    assert_int_equal(store_task_create(fx->db.store, task, "c", fx->stage, nodes, n, 1), 0);
}

static void test_error_names_member(void **state)
{
    fixture_t *fx = *state;
    char *error;
    s_create(fx, "g", 3);
    s_insert(fx, "g", "n1", FB_VERDICT_PASS, NULL);
    s_insert(fx, "g", "n2", FB_VERDICT_ERROR, "died from signal 9");
    assert_int_equal(s_task(fx, "g", &error), FB_VERDICT_ERROR);
    assert_string_equal(error, "n2: died from signal 9");
    free(error);
    /* a failing verdict stands; the cancelled survivor's result is stored beside it */
    s_insert(fx, "g", "n3", FB_VERDICT_ERROR, "cancelled: member n2 (rank 1) error");
    assert_int_equal(s_task(fx, "g", &error), FB_VERDICT_ERROR);
    assert_string_equal(error, "n2: died from signal 9");
    free(error);

    /* an error that already names the node is not named twice */
    s_create(fx, "h", 2);
    s_insert(fx, "h", "n1", FB_VERDICT_FAIL, "n1: slow");
    assert_int_equal(s_task(fx, "h", &error), FB_VERDICT_FAIL);
    assert_string_equal(error, "n1: slow");
    free(error);

    /* a task of one node keeps its result's error as it is */
    s_create(fx, "single", 1);
    s_insert(fx, "single", "n1", FB_VERDICT_ERROR, "died from signal 9");
    assert_int_equal(s_task(fx, "single", &error), FB_VERDICT_ERROR);
    assert_string_equal(error, "died from signal 9");
    free(error);
}

static void test_skipped_member(void **state)
{
    fixture_t *fx = *state;
    char *error;
    s_create(fx, "a", 2);
    s_insert(fx, "a", "n1", FB_VERDICT_PASS, NULL);
    s_insert(fx, "a", "n2", FB_VERDICT_SKIPPED, "no HCA");
    assert_int_equal(s_task(fx, "a", &error), FB_VERDICT_SKIPPED);
    assert_string_equal(error, "n2: no HCA");
    free(error);
    s_create(fx, "b", 2);
    s_insert(fx, "b", "n1", FB_VERDICT_SKIPPED, "no HCA");
    s_insert(fx, "b", "n2", FB_VERDICT_PASS, NULL);
    assert_int_equal(s_task(fx, "b", &error), FB_VERDICT_SKIPPED);
    free(error);
}

static void test_judgment_fails_a_pass(void **state)
{
    fixture_t *fx = *state;
    char *error;
    s_create(fx, "p", 2);
    s_insert(fx, "p", "n1", FB_VERDICT_PASS, NULL);
    s_insert(fx, "p", "n2", FB_VERDICT_PASS, NULL);
    assert_int_equal(s_task(fx, "p", &error), FB_VERDICT_PASS);
    free(error);
    fb_result_t *r = fb_result_new();
    fb_result_set_ids(r, "p/judge", "p", "n2");
    r->verdict = FB_VERDICT_FAIL;
    fb_result_set_error(r, "pair judgment: node n2 is slow");
    fb_result_add_finding(r, "n2", "node", "n2 is slow with 3 partners");
    assert_int_equal(store_result_insert(fx->db.store, r, 3), 0);
    fb_result_destroy(&r);
    assert_int_equal(s_task(fx, "p", &error), FB_VERDICT_FAIL);
    assert_string_equal(error, "n2: pair judgment: node n2 is slow");
    free(error);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_error_names_member, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_skipped_member, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_judgment_fails_a_pass, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
