/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store: campaigns, stages, tasks, results with their metrics and findings, agents
 * with inventory history, and free-form events, kept in one SQLite database in WAL mode so that a
 * report can be read while a campaign is writing. The schema is versioned (PRAGMA user_version,
 * mirrored in the meta table) and migrated forward step by step in one transaction; a database
 * from a newer fleetburn is refused rather than guessed at. Every statement is prepared once and
 * cached for the life of the connection. Write paths that change several rows run in one
 * IMMEDIATE transaction; read paths that walk several tables run in one read transaction, so they
 * see one snapshot. docs/timeline-store.md describes the schema and the verdict rules.
 *
 * This file holds the connection: opening, the table of prepared statements and the helpers
 * every statement goes through (binding, reading columns, errors, transactions), deferred
 * commits and closing. The schema, its migrations and the setup of a newly opened database are
 * in store_schema.c, the writes in store_write.c, the reads in store_read.c; store_internal.h is
 * what they share. */
#include "store_internal.h"
#include "log.h"
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Statements -------------------------------------------------------------------------- */

/* A failing verdict: anything but pass and skipped. */
#define S_FAILING_SQL "NOT IN ('pass','skipped')"

/* The SQL of every statement named in store_internal.h, under its name. A new statement: its
 * name in that enum, its SQL here (store__stmt asserts that no name lacks its SQL). */
static const char *const s_sql[STMT_COUNT] = {
    [STMT_AGENT_UPSERT] =
        "INSERT INTO agents(name, state, first_seen_ms, last_seen_ms, state_since_ms, summary,"
        " inventory_json) VALUES (?1, ?2, ?3, ?3, ?3, ?4, ?5)"
        " ON CONFLICT(name) DO UPDATE SET"
        " state_since_ms = CASE WHEN state IS excluded.state THEN state_since_ms"
        "                  ELSE excluded.state_since_ms END,"
        " state = excluded.state,"
        " last_seen_ms = MAX(last_seen_ms, excluded.last_seen_ms),"
        " summary = COALESCE(excluded.summary, summary),"
        " inventory_json = COALESCE(excluded.inventory_json, inventory_json)",
    [STMT_INVENTORY_LATEST] = "SELECT inventory_json FROM inventory_snapshots WHERE agent = ?1"
                              " ORDER BY id DESC LIMIT 1",
    [STMT_INVENTORY_INSERT] =
        "INSERT INTO inventory_snapshots(agent, time_ms, inventory_json) VALUES (?1, ?2, ?3)",
    [STMT_AGENT_SET_STATE] =
        "UPDATE agents SET"
        " state_since_ms = CASE WHEN state IS ?2 THEN state_since_ms ELSE ?3 END,"
        " state = ?2 WHERE name = ?1",
    [STMT_AGENT_SEEN] = "UPDATE agents SET last_seen_ms = MAX(last_seen_ms, ?2) WHERE name = ?1",
    [STMT_AGENT_UNHEARD] = "UPDATE agents SET state = 'unheard', state_since_ms = ?1"
                           " WHERE state = 'alive'",
    [STMT_AGENT_LIST] = "SELECT name, state, summary, inventory_json, first_seen_ms, last_seen_ms,"
                        " state_since_ms FROM agents ORDER BY name",
    [STMT_CAMPAIGN_CREATE] = "INSERT INTO campaigns(id, name, source, yaml, started_ms, state)"
                             " VALUES (?1, ?2, ?3, ?4, ?5, 'running')",
    [STMT_CAMPAIGN_FINISH] =
        "UPDATE campaigns SET state = 'finished', verdict = ?2, finished_ms = ?3"
        " WHERE id = ?1",
    [STMT_CAMPAIGN_INTERRUPT] = "UPDATE campaigns SET state = 'interrupted', verdict = 'error',"
                                " finished_ms = ?1 WHERE state = 'running'",
    [STMT_CAMPAIGN_LATEST] =
        "SELECT id FROM campaigns ORDER BY started_ms DESC, rowid DESC LIMIT 1",
    [STMT_CAMPAIGN_GET] = "SELECT id, name, source, yaml, state, verdict, started_ms, finished_ms"
                          " FROM campaigns WHERE id = ?1",
    [STMT_CAMPAIGN_LIST] = "SELECT id, name, source, NULL, state, verdict, started_ms, finished_ms"
                           " FROM campaigns ORDER BY started_ms DESC, rowid DESC",
    [STMT_JSON_IS_OBJECT] =
        "SELECT CASE WHEN json_valid(?1) THEN json_type(?1) = 'object' ELSE 0 END",
    [STMT_STAGE_CREATE] =
        "INSERT INTO stages(campaign_id, idx, name, workload, params_json, on_fail, timeout_ms)"
        " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1)",
    [STMT_STAGE_START] = "UPDATE stages SET started_ms = ?2 WHERE id = ?1",
    [STMT_STAGE_FINISH] = "UPDATE stages SET verdict = ?2, finished_ms = ?3 WHERE id = ?1",
    [STMT_STAGES_OF] =
        "SELECT id, idx, name, workload, on_fail, params_json, timeout_ms, started_ms,"
        " finished_ms, verdict, seed, nodes_json FROM stages WHERE campaign_id = ?1"
        " ORDER BY idx, id",
    [STMT_CAMPAIGN_END] =
        "UPDATE campaigns SET state = ?2, verdict = ?3, finished_ms = ?4 WHERE id = ?1",
    [STMT_FILE_ADD] = "INSERT OR REPLACE INTO campaign_files(campaign_id, name, content)"
                      " SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1)",
    [STMT_FILES_OF] = "SELECT name, content FROM campaign_files WHERE campaign_id = ?1"
                      " ORDER BY rowid",
    [STMT_STAGE_PLAN] = "UPDATE stages SET seed = ?2, nodes_json = ?3 WHERE id = ?1",
    [STMT_TASK_CREATE] =
        "INSERT INTO tasks(id, campaign_id, stage_id, nodes_json, state, started_ms)"
        " SELECT ?1, ?2, ?3, ?4, 'running', ?5"
        " WHERE EXISTS (SELECT 1 FROM stages WHERE id = ?3 AND campaign_id = ?2)",
    /* ?5: the new verdict fails. A provisional pass (from results of fewer nodes than the task
     * has) gives way to a failing verdict; anything else that is set stays. */
    [STMT_TASK_FINISH] =
        "UPDATE tasks SET verdict = ?2, error = ?3, finished_ms = ?4, state = 'finished',"
        " verdict_by = 'coordinator'"
        " WHERE id = ?1 AND (verdict IS NULL OR (?5 AND verdict_by = 'result'"
        "   AND verdict IN ('pass','skipped')"
        "   AND (SELECT COUNT(DISTINCT COALESCE(node, result_id)) FROM results"
        "        WHERE task_id = ?1) < MAX(1, json_array_length(nodes_json))))",
    [STMT_TASK_EXISTS] = "SELECT 1 FROM tasks WHERE id = ?1",
    [STMT_TASK_MEMBER] = "SELECT CAST(j.key AS INTEGER) FROM tasks t, json_each(t.nodes_json) j "
                         "WHERE t.id = ?1 AND j.value = ?2",
    /* ?5: the result fails; a failing result replaces a passing task verdict, and a skipped one
     * a pass (a group that did not run as a whole). ?6: the result's node, which prefixes the
     * error of a task with several nodes so that the task's error says which member it was. */
    [STMT_TASK_FROM_RESULT] =
        "UPDATE tasks SET verdict = ?2, finished_ms = ?4, state = 'finished',"
        " verdict_by = 'result',"
        " error = CASE WHEN ?3 IS NOT NULL AND ?6 IS NOT NULL"
        "   AND json_array_length(nodes_json) > 1 AND substr(?3, 1, length(?6) + 1) != ?6 || ':'"
        "   THEN ?6 || ': ' || ?3 ELSE ?3 END"
        " WHERE id = ?1 AND (verdict IS NULL OR (?5 AND verdict IN ('pass','skipped'))"
        "   OR (?2 = 'skipped' AND verdict = 'pass'))",
    [STMT_TASKS_OF] = "SELECT id, state, verdict, error, started_ms, finished_ms, nodes_json"
                      " FROM tasks WHERE stage_id = ?1 ORDER BY rowid",
    [STMT_TASK_NODES] = "SELECT CAST(value AS TEXT) FROM json_each(?1) ORDER BY key",
    [STMT_RESULT_INSERT] =
        "INSERT INTO results(result_id, task_id, node, verdict, error, started_ms, finished_ms,"
        " received_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        " ON CONFLICT(result_id) DO NOTHING",
    [STMT_RESULTS_OF] =
        "SELECT result_id, node, verdict, error, started_ms, finished_ms, received_ms"
        " FROM results WHERE task_id = ?1 ORDER BY received_ms, rowid",
    [STMT_METRIC_INSERT] =
        "INSERT INTO metrics(result_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)",
    [STMT_METRICS_OF] = "SELECT name, value, unit FROM metrics WHERE result_id = ?1 ORDER BY rowid",
    [STMT_FINDING_INSERT] =
        "INSERT INTO findings(result_id, part, kind, what) VALUES (?1, ?2, ?3, ?4)",
    [STMT_FINDINGS_OF] =
        "SELECT part, kind, what FROM findings WHERE result_id = ?1 ORDER BY rowid",
    [STMT_EVENT_INSERT] = "INSERT INTO events(time_ms, campaign_id, task_id, node, kind, message)"
                          " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [STMT_EVENTS_ALL] = "SELECT id, time_ms, campaign_id, task_id, node, kind, message FROM events"
                        " ORDER BY time_ms, id",
    [STMT_EVENTS_OF] = "SELECT id, time_ms, campaign_id, task_id, node, kind, message FROM events"
                       " WHERE campaign_id = ?1 ORDER BY time_ms, id",
    /* webhook deliveries (store_webhook.c) */
    [STMT_WEBHOOK_ENQUEUE] =
        "INSERT INTO webhook_deliveries(campaign_id, url, payload, retry_ms, timeout_ms,"
        " next_attempt_ms, created_ms) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6"
        " WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1)"
        " ON CONFLICT(campaign_id, url) DO NOTHING",
    [STMT_WEBHOOK_ATTEMPTED] =
        "UPDATE webhook_deliveries SET attempts = ?2, state = ?3, next_attempt_ms = ?4,"
        " last_error = ?5, finished_ms = ?6 WHERE id = ?1",
    [STMT_WEBHOOKS_PENDING] =
        "SELECT id, campaign_id, url, payload, retry_ms, timeout_ms, attempts, next_attempt_ms,"
        " state, last_error, created_ms, finished_ms FROM webhook_deliveries"
        " WHERE state = 'pending' ORDER BY next_attempt_ms, id",
    [STMT_WEBHOOKS_OF] =
        "SELECT id, campaign_id, url, payload, retry_ms, timeout_ms, attempts, next_attempt_ms,"
        " state, last_error, created_ms, finished_ms FROM webhook_deliveries"
        " WHERE campaign_id = ?1 ORDER BY id",
    /* fingerprints (store_fingerprint.c): on the dispatch path, so cached */
    [STMT_FINGERPRINT_SEEN] =
        "SELECT 1 FROM fingerprints WHERE campaign_id = ?1 AND node = ?2 LIMIT 1",
    [STMT_FINGERPRINT_INSERT] =
        "INSERT OR IGNORE INTO fingerprints(campaign_id, node, component, version, time_ms)"
        " SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1)",
    /* telemetry (store_telemetry.c): on the ingest path, so cached */
    [STMT_TSERIES_ID] = "SELECT id FROM telemetry_series"
                        " WHERE campaign_id = ?1 AND node = ?2 AND device = ?3 AND quantity = ?4",
    [STMT_TSERIES_ADD] =
        "INSERT INTO telemetry_series(campaign_id, node, device, quantity, unit)"
        " SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1)",
    /* A bucket that meets a stored one at the same start merges into it. */
    [STMT_TELEMETRY_PUT] =
        "INSERT INTO telemetry(series_id, time_ms, span_ms, n, vmin, vmax, vmean)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        " ON CONFLICT(series_id, time_ms) DO UPDATE SET"
        " span_ms = MAX(span_ms, excluded.span_ms),"
        " vmean = (vmean * n + excluded.vmean * excluded.n) / (n + excluded.n),"
        " n = n + excluded.n,"
        " vmin = MIN(vmin, excluded.vmin),"
        " vmax = MAX(vmax, excluded.vmax)",
    [STMT_TELEMETRY_READ] =
        "SELECT s.node, s.device, s.quantity, s.unit, t.time_ms, t.span_ms, t.n, t.vmin, t.vmax,"
        " t.vmean FROM telemetry_series s JOIN telemetry t ON t.series_id = s.id"
        " WHERE s.campaign_id = ?1 AND (?2 IS NULL OR s.node = ?2)"
        " AND (?3 IS NULL OR s.device = ?3) AND (?4 IS NULL OR s.quantity = ?4)"
        " AND (?5 IS NULL OR t.time_ms + t.span_ms > ?5) AND (?6 IS NULL OR t.time_ms < ?6)"
        " ORDER BY s.node, s.device, s.quantity, t.time_ms",
};

/* ---- Errors ------------------------------------------------------------------------------ */

/* Records "what: <SQLite message>" and maps the SQLite code to a negative errno. */
int store__sqlite_err(store_t *self, int rc, const char *what)
{
    snprintf(self->errmsg, sizeof self->errmsg, "%s: %s", what, sqlite3_errmsg(self->db));
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_READONLY:
        return -EROFS;
    case SQLITE_NOMEM:
        return -ENOMEM;
    default:
        return -EIO;
    }
}

/* Records a message for a failure that is not SQLite's and returns err. */
int store__fail(store_t *self, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(self->errmsg, sizeof self->errmsg, fmt, ap);
    va_end(ap);
    return err;
}

const char *store_errmsg(const store_t *self)
{
    return self ? self->errmsg : "no store";
}

const char *store_path(const store_t *self)
{
    return self->path;
}

/* ---- Statement helpers ------------------------------------------------------------------- */

/* The cached statement, reset and unbound; NULL (message recorded) when it cannot be prepared. */
sqlite3_stmt *store__stmt(store_t *self, int which)
{
    assert(which >= 0 && which < STMT_COUNT && s_sql[which]);
    sqlite3_stmt *st = self->stmts[which];
    if (!st) {
        int rc =
            sqlite3_prepare_v3(self->db, s_sql[which], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK) {
            store__sqlite_err(self, rc, "preparing a statement");
            return NULL;
        }
        self->stmts[which] = st;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

void store__bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* Optional timestamps and durations: 0 is stored as NULL. */
void store__bind_time(sqlite3_stmt *st, int i, uint64_t ms)
{
    if (ms)
        sqlite3_bind_int64(st, i, ms > INT64_MAX ? INT64_MAX : (int64_t)ms);
    else
        sqlite3_bind_null(st, i);
}

void store__bind_verdict(sqlite3_stmt *st, int i, fb_verdict_t v)
{
    if (v == FB_VERDICT_NONE)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_text(st, i, fb_verdict_name(v), -1, SQLITE_STATIC);
}

char *store__col_dup(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    return xstrdup((const char *)sqlite3_column_text(st, i));
}

/* Borrowed text, valid until the next step or reset; NULL for NULL. */
const char *store__col_text(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    return (const char *)sqlite3_column_text(st, i);
}

uint64_t store__col_time(sqlite3_stmt *st, int i)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v > 0 ? (uint64_t)v : 0;
}

/* A stored verdict; NULL is NONE, and text this build does not know reads as error so that it
 * can never pass a campaign. */
fb_verdict_t store__col_verdict(sqlite3_stmt *st, int i)
{
    const char *name = store__col_text(st, i);
    if (!name)
        return FB_VERDICT_NONE;
    int v = fb_verdict_parse(name);
    return v <= 0 ? FB_VERDICT_ERROR : (fb_verdict_t)v;
}

/* With deferred commits, the first write since the last store_flush opens the transaction that
 * every write joins until the next flush. */
static int s_batch_open(store_t *self)
{
    if (!self->deferred || !sqlite3_get_autocommit(self->db))
        return 0;
    return store__exec(self, "BEGIN IMMEDIATE", "starting a transaction");
}

/* Runs a statement that returns no rows. */
int store__run(store_t *self, sqlite3_stmt *st, const char *what)
{
    int err = s_batch_open(self);
    if (err) {
        sqlite3_reset(st);
        return err;
    }
    int rc = sqlite3_step(st);
    err = rc == SQLITE_DONE ? 0 : store__sqlite_err(self, rc, what);
    sqlite3_reset(st);
    return err;
}

int store__exec(store_t *self, const char *sql, const char *what)
{
    int rc = sqlite3_exec(self->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : store__sqlite_err(self, rc, what);
}

/* Inside the open transaction of deferred commits, a call's own transaction is a savepoint: it
 * still changes all or nothing. */
static int s_savepoint(store_t *self)
{
    int err = store__exec(self, "SAVEPOINT fb", "starting a savepoint");
    if (!err)
        self->savepoints++;
    return err;
}

/* Write transactions take the write lock up front, so the busy timeout applies to it instead of
 * failing at the first write of a deferred transaction. */
int store__begin(store_t *self)
{
    if (self->deferred) {
        int err = s_batch_open(self);
        return err ? err : s_savepoint(self);
    }
    return store__exec(self, "BEGIN IMMEDIATE", "starting a transaction");
}

/* Read transactions: everything read until store__end sees one snapshot (inside the transaction of
 * deferred commits, that one, with its writes). */
int store__begin_read(store_t *self)
{
    if (self->deferred && !sqlite3_get_autocommit(self->db))
        return s_savepoint(self);
    return store__exec(self, "BEGIN DEFERRED", "starting a read transaction");
}

void store__rollback(store_t *self)
{
    if (self->savepoints > 0) {
        self->savepoints--;
        sqlite3_exec(self->db, "ROLLBACK TO fb; RELEASE fb", NULL, NULL, NULL);
        return;
    }
    if (!sqlite3_get_autocommit(self->db))
        sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
}

int store__commit(store_t *self)
{
    if (self->savepoints > 0) {
        int err = store__exec(self, "RELEASE fb", "releasing a savepoint");
        if (err)
            store__rollback(self);
        else
            self->savepoints--;
        return err;
    }
    int err = store__exec(self, "COMMIT", "committing");
    if (err)
        store__rollback(self);
    return err;
}

/* Ends a transaction: commits when err is 0, rolls back otherwise; returns the first error. */
int store__end(store_t *self, int err)
{
    if (err) {
        store__rollback(self);
        return err;
    }
    return store__commit(self);
}

/* ---- Open, close ------------------------------------------------------------------------- */

static int s_open(const char *path, bool create, store_t **out, char **error_out)
{
    if (error_out)
        *error_out = NULL;
    *out = NULL;
    if (!path || !*path) {
        if (error_out)
            *error_out = xstrdup("no timeline database path given");
        return -EINVAL;
    }
    struct stat sb;
    if (!create && stat(path, &sb) != 0) {
        int err = -errno;
        if (error_out)
            *error_out = xasprintf("%s: %s", path, strerror(-err));
        return err;
    }
    store_t *self = xcalloc(1, sizeof *self);
    self->path = xstrdup(path);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &self->db, flags, NULL);
    int err;
    if (rc != SQLITE_OK) {
        if (self->db)
            err = store__sqlite_err(self, rc, path);
        else
            err = store__fail(self, -ENOMEM, "%s: cannot allocate a SQLite connection", path);
    } else {
        err = store__setup(self);
    }
    if (err) {
        if (error_out)
            *error_out = xstrdup(self->errmsg);
        store_destroy(&self);
        return err;
    }
    *out = self;
    return 0;
}

int store_open(const char *path, store_t **out, char **error_out)
{
    return s_open(path, true, out, error_out);
}

int store_open_existing(const char *path, store_t **out, char **error_out)
{
    return s_open(path, false, out, error_out);
}

void store_destroy(store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    store_t *self = *self_p;
    if (self->db && store_flush(self))
        log_error("%s: the last writes were lost: %s", self->path, self->errmsg);
    for (int i = 0; i < STMT_COUNT; i++)
        sqlite3_finalize(self->stmts[i]);
    if (self->db) {
        store__rollback(self);
        if (sqlite3_close(self->db) != SQLITE_OK)
            log_warn("%s: closing the timeline: %s", self->path, sqlite3_errmsg(self->db));
    }
    free(self->path);
    free(self);
    *self_p = NULL;
}

int store_defer_commits(store_t *self, bool on)
{
    int err = on ? 0 : store_flush(self);
    self->deferred = on;
    return err;
}

int store_flush(store_t *self)
{
    if (!self->deferred || self->savepoints > 0 || sqlite3_get_autocommit(self->db))
        return 0;
    return store__commit(self);
}
