/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store's insides, shared by the files that make it up: store.c (open, the
 * statements, errors, transactions, deferred commits, close), store_schema.c (the schema, its
 * migrations and the setup of an opened database), store_write.c
 * (agents, campaigns, stages, tasks, results, events), store_read.c (campaign load, the
 * foreach readers, lookups) and store_stmt.c (statements of rare calls, prepared where they are
 * used by store_compare.c, store_fingerprint.c and store_selections.c). Nothing outside
 * coordinator/store*.c includes this; store.h is the store's only public header.
 *
 * Functions shared between these files are named store__name (as libuv's uv__name), so that
 * they never pass for the public API; helpers of one file stay static s_name. */
#ifndef FB_STORE_INTERNAL_H
#define FB_STORE_INTERNAL_H

#include "store.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- Statements -------------------------------------------------------------------------- */

/* Every prepared statement, by name; its SQL is in s_sql in store.c, under the same name.
 *
 * Adding a statement: add its name here, before STMT_COUNT (in the group of the file that uses
 * it), and its SQL to s_sql in store.c as [STMT_NAME] = "...". The order means nothing (the
 * value only indexes the statement cache); store__stmt prepares it on first use, caches it for
 * the life of the connection, and asserts that the name has its SQL. A statement needed only
 * while opening or migrating (PRAGMAs, meta) is prepared and finalized where it is used, as in
 * store_schema.c's s_meta_set and s_pragma_int, not added here. Schema changes are new steps of
 * s_migrations in store_schema.c (with STORE_SCHEMA_VERSION in store.h), never edits of a
 * released step.
 */
enum {
    /* agents (store_write.c; STMT_AGENT_LIST store_read.c) */
    STMT_AGENT_UPSERT,
    STMT_INVENTORY_LATEST,
    STMT_INVENTORY_INSERT,
    STMT_AGENT_SET_STATE,
    STMT_AGENT_SEEN,
    STMT_AGENT_LIST,
    STMT_AGENT_UNHEARD,
    /* campaigns and stages (writes store_write.c, LATEST/GET/LIST/STAGES_OF store_read.c) */
    STMT_CAMPAIGN_CREATE,
    STMT_CAMPAIGN_FINISH,
    STMT_CAMPAIGN_INTERRUPT,
    STMT_CAMPAIGN_LATEST,
    STMT_CAMPAIGN_GET,
    STMT_CAMPAIGN_LIST,
    STMT_JSON_IS_OBJECT,
    STMT_STAGE_CREATE,
    STMT_STAGE_START,
    STMT_STAGE_FINISH,
    STMT_STAGES_OF,
    STMT_CAMPAIGN_END,
    STMT_FILE_ADD,
    STMT_FILES_OF,
    STMT_STAGE_PLAN,
    /* tasks, results, metrics, findings, events (writes store_write.c, reads store_read.c) */
    STMT_TASK_CREATE,
    STMT_TASK_FINISH,
    STMT_TASK_EXISTS,
    STMT_TASK_MEMBER,
    STMT_TASK_FROM_RESULT,
    STMT_TASKS_OF,
    STMT_TASK_NODES,
    STMT_RESULT_INSERT,
    STMT_RESULTS_OF,
    STMT_METRIC_INSERT,
    STMT_METRICS_OF,
    STMT_FINDING_INSERT,
    STMT_FINDINGS_OF,
    STMT_EVENT_INSERT,
    STMT_EVENTS_ALL,
    STMT_EVENTS_OF,
    /* webhook deliveries (store_webhook.c) */
    STMT_WEBHOOK_ENQUEUE,
    STMT_WEBHOOK_ATTEMPTED,
    STMT_WEBHOOKS_PENDING,
    STMT_WEBHOOKS_OF,
    /* fingerprints (store_fingerprint.c): on the dispatch path, so cached */
    STMT_FINGERPRINT_SEEN,
    STMT_FINGERPRINT_INSERT,
    /* telemetry (store_telemetry.c) */
    STMT_TSERIES_ID,
    STMT_TSERIES_ADD,
    STMT_TELEMETRY_PUT,
    STMT_TELEMETRY_READ,
    /* new statements above this line */
    STMT_COUNT
};

struct store {
    sqlite3 *db;
    char *path;
    char errmsg[512];
    sqlite3_stmt *stmts[STMT_COUNT];
    bool deferred;  /* store_defer_commits: writes join one transaction until store_flush */
    int savepoints; /* open per-call savepoints inside that transaction */
};

/* The cached statement `which` (a STMT_ name), reset and unbound; NULL (message recorded) when
 * it cannot be prepared. */
sqlite3_stmt *store__stmt(store_t *self, int which);

/* ---- Errors (store.c) --------------------------------------------------------------------- */

/* Records "what: <SQLite message>" and maps the SQLite code to a negative errno. */
int store__sqlite_err(store_t *self, int rc, const char *what);
/* Records a message for a failure that is not SQLite's and returns err. */
int store__fail(store_t *self, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- Binding parameters and reading columns (store.c) ------------------------------------ */

/* Text; NULL binds NULL. */
void store__bind_text(sqlite3_stmt *st, int i, const char *s);
/* Optional timestamps and durations: 0 is stored as NULL. */
void store__bind_time(sqlite3_stmt *st, int i, uint64_t ms);
/* A verdict's name; FB_VERDICT_NONE binds NULL. */
void store__bind_verdict(sqlite3_stmt *st, int i, fb_verdict_t v);
/* A heap copy of a text column; NULL for NULL. */
char *store__col_dup(sqlite3_stmt *st, int i);
/* Borrowed text, valid until the next step or reset; NULL for NULL. */
const char *store__col_text(sqlite3_stmt *st, int i);
/* A timestamp column; NULL and negative values read as 0. */
uint64_t store__col_time(sqlite3_stmt *st, int i);
/* A stored verdict; NULL is NONE, and text this build does not know reads as error. */
fb_verdict_t store__col_verdict(sqlite3_stmt *st, int i);

/* ---- Running statements and transactions (store.c) --------------------------------------- */

/* Runs a statement that returns no rows (opening the transaction of deferred commits first). */
int store__run(store_t *self, sqlite3_stmt *st, const char *what);
/* Runs SQL text without a cached statement (transaction control, migration steps). */
int store__exec(store_t *self, const char *sql, const char *what);
/* A write transaction, taking the write lock up front (a savepoint under deferred commits). */
int store__begin(store_t *self);
/* A read transaction: everything read until store__end sees one snapshot. */
int store__begin_read(store_t *self);
/* Ends a transaction: commits when err is 0, rolls back otherwise; returns the first error. */
int store__end(store_t *self, int err);
/* Commits the call's transaction (or releases its savepoint); rolls back when that fails. */
int store__commit(store_t *self);
/* Rolls back the call's transaction (or its savepoint); nothing when none is open. */
void store__rollback(store_t *self);

/* ---- Schema and migrations (store_schema.c) ---------------------------------------------- */

/* Sets up a newly opened connection: refuses another application's database or a newer schema,
 * switches to WAL mode and migrates an older schema to STORE_SCHEMA_VERSION. 0 or -errno
 * (message recorded). */
int store__setup(store_t *self);

/* ---- Lookups (store_read.c) -------------------------------------------------------------- */

/* 1 when the task exists, 0 when not, or -errno. */
int store__task_exists(store_t *self, const char *task_id);

/* ---- Statements of rare calls (store_stmt.c) --------------------------------------------- */

/* A statement prepared for one call, outside the cache (commands that run once, writes once per
 * campaign); the caller finalizes it. NULL (message recorded as what) when it cannot be. */
sqlite3_stmt *store__prepare(store_t *self, const char *sql, const char *what);
/* Steps st: 1 with a row, 0 at the end, or -errno (message recorded as what); at the end or
 * on an error the statement is reset, ready to be bound and run again. */
int store__step(store_t *self, sqlite3_stmt *st, const char *what);

#endif
