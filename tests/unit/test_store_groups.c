/* SPDX-License-Identifier: Apache-2.0 */
/* The store's rules for tasks with several nodes (group and pair tasks): the task's error names
 * the member whose result set it; a skipped member turns a pass into skipped (the group did not
 * run as a whole) while a later pass does not undo it; a coordinator judgment result fails a
 * task that passed; single-node tasks are unchanged. */
#include "coordinator/store.h"
#include "common/result.h"
#include "common/util.h"

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

typedef struct {
    char dir[64];
    char *path;
    store_t *store;
    int64_t stage;
} fixture_t;

static int s_setup(void **state)
{
    fixture_t *fx = xcalloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/fb-test-groups-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    fx->path = xasprintf("%s/timeline.db", fx->dir);
    assert_int_equal(store_open(fx->path, &fx->store, NULL), 0);
    assert_int_equal(store_campaign_create(fx->store, "c", "c", "c.yaml", "", 1), 0);
    assert_int_equal(
        store_stage_create(fx->store, "c", 0, "s", "netbw", NULL, "continue", 1000, &fx->stage), 0);
    *state = fx;
    return 0;
}

static int s_teardown(void **state)
{
    fixture_t *fx = *state;
    store_destroy(&fx->store);
    const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < FB_ARRAY_LEN(suffixes); i++) {
        char *p = xasprintf("%s%s", fx->path, suffixes[i]);
        unlink(p);
        free(p);
    }
    rmdir(fx->dir);
    free(fx->path);
    free(fx);
    return 0;
}

static void s_insert(fixture_t *fx, const char *task, const char *node, fb_verdict_t v,
                     const char *error)
{
    fb_result_t *r = fb_result_new();
    char *id = xasprintf("%s@%s", task, node);
    fb_result_set_ids(r, id, task, node);
    free(id);
    r->verdict = v;
    if (error)
        fb_result_set_error(r, "%s", error);
    assert_int_equal(store_result_insert(fx->store, r, 2), 0);
    fb_result_destroy(&r);
}

/* The task's verdict and error (heap, may be NULL) as stored. */
static fb_verdict_t s_task(fixture_t *fx, const char *task_id, char **error)
{
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(fx->store, "c", &c), 0);
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
    assert_int_equal(store_task_create(fx->store, task, "c", fx->stage, nodes, n, 1), 0);
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
    assert_int_equal(store_result_insert(fx->store, r, 3), 0);
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
