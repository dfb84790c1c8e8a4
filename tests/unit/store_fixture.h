/* SPDX-License-Identifier: Apache-2.0 */
/* What the unit tests of the timeline and of its readers (reports, compare, alerts, Slurm
 * actions) share: a real SQLite store in a fresh temporary folder, opened before each test and
 * removed with everything beside it after, and results written the way the coordinator writes
 * them. Linked into every unit test (tests/CMakeLists.txt). */
#ifndef FB_TEST_STORE_FIXTURE_H
#define FB_TEST_STORE_FIXTURE_H

#include "coordinator/store.h"
#include "common/result.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    char dir[64]; /* /tmp/fb-<test program>-XXXXXX, made by mkdtemp */
    char *path;   /* dir/timeline.db */
    store_t *store;
} store_fixture_t;

/* Opens a new store at fx->path in a new folder; fails the test when it cannot. */
void store_fixture_open(store_fixture_t *fx);
/* Closes the store and removes the folder with every file in it (the database, its WAL and
 * journal, scripts and outputs a test wrote beside it). */
void store_fixture_close(store_fixture_t *fx);

/* cmocka setup and teardown: *state is a store_fixture_t, opened and closed as above. */
int store_fixture_setup(void **state);
int store_fixture_teardown(void **state);
/* A test of main()'s table that runs on its own fresh store. */
#define STORE_FIXTURE_TEST(f)                                                                      \
    cmocka_unit_test_setup_teardown(f, store_fixture_setup, store_fixture_teardown)

/* One node's result, inserted with store_result_insert (which must succeed). Fields left NULL
 * are left out: metric (with value and unit), finding (part, kind, what), error. */
typedef struct {
    const char *result_id, *task_id, *node;
    fb_verdict_t verdict;
    uint64_t started_ms, finished_ms, stored_ms;
    const char *metric;
    double value;
    const char *unit;
    const char *part, *kind, *what;
    const char *error;
} store_fixture_result_t;

void store_fixture_result(store_t *store, const store_fixture_result_t *r);
/* An undecided NIC in the diagnosis task of a bisect stage, stored as the runner stores it
 * (result "<task_id>/<part>", verdict fail, metric undecided, and on_watch when on_watch). */
void store_fixture_undecided_nic(store_t *store, const char *task_id, const char *node,
                                 const char *part, const char *what, bool on_watch,
                                 uint64_t stored_ms);

/* ---- the database underneath, as another process or an older fleetburn sees it ---- */

typedef struct sqlite3 sqlite3;

/* A second, raw connection to fx->path (busy timeout 2 s); the caller closes it. */
sqlite3 *store_fixture_raw(const store_fixture_t *fx);
/* Closes the store, removes its database and makes a new one at fx->path from the SQL file
 * FB_FIXTURES/name (a timeline an older schema wrote); returns a raw connection to it, which the
 * caller closes before opening the store again. */
sqlite3 *store_fixture_replace(store_fixture_t *fx, const char *name);
/* Runs sql (several statements may follow each other); fails the test, naming the SQL and
 * SQLite's message, when it does not succeed. */
void store_fixture_exec(sqlite3 *db, const char *sql);
/* The first column of the first row of a query that must return one. */
int64_t store_fixture_query_int(sqlite3 *db, const char *sql);

#endif
