/* SPDX-License-Identifier: Apache-2.0 */
/* The unit tests' temporary timeline store and result writer (store_fixture.h). */
#include "store_fixture.h"
#include "common/util.h"

#include <errno.h>
#include <sqlite3.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

void store_fixture_open(store_fixture_t *fx)
{
    snprintf(fx->dir, sizeof fx->dir, "/tmp/fb-%.32s-XXXXXX", program_invocation_short_name);
    assert_non_null(mkdtemp(fx->dir));
    fx->path = xasprintf("%s/timeline.db", fx->dir);
    char *err = NULL;
    int rc = store_open(fx->path, &fx->store, &err);
    if (rc)
        fprintf(stderr, "store_open: %s\n", err);
    assert_int_equal(rc, 0);
    assert_null(err);
}

void store_fixture_close(store_fixture_t *fx)
{
    store_destroy(&fx->store);
    char **names = NULL;
    size_t n = fb_list_dir(fx->dir, &names);
    for (size_t i = 0; i < n; i++) {
        char *p = xasprintf("%s/%s", fx->dir, names[i]);
        unlink(p);
        free(p);
    }
    fb_names_free(names, n);
    rmdir(fx->dir);
    free(fx->path);
    fx->path = NULL;
}

int store_fixture_setup(void **state)
{
    store_fixture_t *fx = xcalloc(1, sizeof *fx);
    store_fixture_open(fx);
    *state = fx;
    return 0;
}

int store_fixture_teardown(void **state)
{
    store_fixture_t *fx = *state;
    store_fixture_close(fx);
    free(fx);
    return 0;
}

void store_fixture_result(store_t *store, const store_fixture_result_t *r)
{
    fb_result_t *res = fb_result_new();
    fb_result_set_ids(res, r->result_id, r->task_id, r->node);
    res->verdict = r->verdict;
    res->started_ms = r->started_ms;
    res->finished_ms = r->finished_ms;
    if (r->metric)
        fb_result_add_metric(res, r->metric, r->value, r->unit);
    if (r->part)
        fb_result_add_finding(res, r->part, r->kind, r->what);
    if (r->error)
        fb_result_set_error(res, "%s", r->error);
    assert_int_equal(store_result_insert(store, res, r->stored_ms), 0);
    fb_result_destroy(&res);
}

void store_fixture_undecided_nic(store_t *store, const char *task_id, const char *node,
                                 const char *part, const char *what, bool on_watch,
                                 uint64_t stored_ms)
{
    char *rid = xasprintf("%s/%s", task_id, part);
    fb_result_t *res = fb_result_new();
    fb_result_set_ids(res, rid, task_id, node);
    res->verdict = FB_VERDICT_FAIL;
    fb_result_add_metric(res, "undecided", 1.0, "");
    if (on_watch)
        fb_result_add_metric(res, "on_watch", 1.0, "");
    fb_result_add_finding(res, part, "nic", what);
    assert_int_equal(store_result_insert(store, res, stored_ms), 0);
    fb_result_destroy(&res);
    free(rid);
}

sqlite3 *store_fixture_raw(const store_fixture_t *fx)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 2000);
    return db;
}

sqlite3 *store_fixture_replace(store_fixture_t *fx, const char *name)
{
    store_destroy(&fx->store);
    unlink(fx->path);
    char *path = xasprintf("%s/%s", FB_FIXTURES, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    free(path);
    char *sql = NULL;
    size_t cap = 0;
    ssize_t len = getdelim(&sql, &cap, '\0', f);
    fclose(f);
    assert_true(len > 0);
    sqlite3 *db = store_fixture_raw(fx);
    store_fixture_exec(db, sql);
    free(sql);
    return db;
}

void store_fixture_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", sql, msg);
    sqlite3_free(msg);
    assert_int_equal(rc, SQLITE_OK);
}

int64_t store_fixture_query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}
