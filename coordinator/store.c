/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store: campaigns, stages, tasks, results with their metrics and findings, agents
 * with inventory history, and free-form events, kept in one SQLite database in WAL mode so that a
 * report can be read while a campaign is writing. The schema is versioned (PRAGMA user_version,
 * mirrored in the meta table) and migrated forward step by step in one transaction; a database
 * from a newer fleetburn is refused rather than guessed at. Every statement is prepared once and
 * cached for the life of the connection. Write paths that change several rows run in one
 * IMMEDIATE transaction; read paths that walk several tables run in one read transaction, so they
 * see one snapshot. docs/timeline-store.md describes the schema and the verdict rules. */
#include "store.h"
#include "json.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Schema ------------------------------------------------------------------------------ */

#define S_VERDICT_CHECK(col) "CHECK (" col " IN ('pass','fail','skipped','timeout','lost','error'))"

/* Schema version 1: everything from an empty database. */
/* clang-format off */
static const char s_schema_v1[] =
    "CREATE TABLE meta ("
    "  key TEXT PRIMARY KEY,"
    "  value TEXT NOT NULL"
    ") WITHOUT ROWID;"
    "CREATE TABLE agents ("
    "  name TEXT PRIMARY KEY,"
    "  state TEXT NOT NULL,"
    "  first_seen_ms INTEGER NOT NULL,"
    "  last_seen_ms INTEGER NOT NULL,"
    "  state_since_ms INTEGER NOT NULL,"
    "  summary TEXT,"
    "  inventory_json TEXT"
    ");"
    "CREATE TABLE inventory_snapshots ("
    "  id INTEGER PRIMARY KEY,"
    "  agent TEXT NOT NULL REFERENCES agents(name),"
    "  time_ms INTEGER NOT NULL,"
    "  inventory_json TEXT NOT NULL"
    ");"
    "CREATE INDEX inventory_snapshots_by_agent ON inventory_snapshots(agent, id);"
    "CREATE TABLE campaigns ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT,"
    "  source TEXT,"
    "  yaml TEXT,"
    "  started_ms INTEGER NOT NULL,"
    "  finished_ms INTEGER,"
    "  verdict TEXT " S_VERDICT_CHECK("verdict") ","
    "  state TEXT NOT NULL DEFAULT 'running'"
    "    CHECK (state IN ('running','finished','interrupted'))"
    ");"
    "CREATE INDEX campaigns_by_start ON campaigns(started_ms);"
    "CREATE TABLE stages ("
    "  id INTEGER PRIMARY KEY,"
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  idx INTEGER NOT NULL,"
    "  name TEXT,"
    "  workload TEXT,"
    "  params_json TEXT,"
    "  on_fail TEXT,"
    "  timeout_ms INTEGER,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  verdict TEXT " S_VERDICT_CHECK("verdict") ");"
    "CREATE INDEX stages_by_campaign ON stages(campaign_id, idx);"
    "CREATE TABLE tasks ("
    "  id TEXT PRIMARY KEY,"
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  stage_id INTEGER NOT NULL REFERENCES stages(id),"
    "  nodes_json TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('running','finished')),"
    "  verdict TEXT " S_VERDICT_CHECK("verdict") ","
    "  verdict_by TEXT CHECK (verdict_by IN ('result','coordinator')),"
    "  error TEXT,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER"
    ");"
    "CREATE INDEX tasks_by_stage ON tasks(stage_id);"
    "CREATE INDEX tasks_by_campaign ON tasks(campaign_id);"
    "CREATE TABLE results ("
    "  result_id TEXT PRIMARY KEY,"
    "  task_id TEXT NOT NULL,"
    "  node TEXT,"
    "  verdict TEXT NOT NULL " S_VERDICT_CHECK("verdict") ","
    "  error TEXT,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  received_ms INTEGER NOT NULL"
    ");"
    "CREATE INDEX results_by_task ON results(task_id);"
    "CREATE INDEX results_by_node ON results(node);"
    "CREATE TABLE metrics ("
    "  result_id TEXT NOT NULL REFERENCES results(result_id) ON DELETE CASCADE,"
    "  name TEXT NOT NULL,"
    "  value REAL,"
    "  unit TEXT"
    ");"
    "CREATE INDEX metrics_by_result ON metrics(result_id);"
    "CREATE INDEX metrics_by_name ON metrics(name);"
    "CREATE TABLE findings ("
    "  result_id TEXT NOT NULL REFERENCES results(result_id) ON DELETE CASCADE,"
    "  part TEXT NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  what TEXT"
    ");"
    "CREATE INDEX findings_by_result ON findings(result_id);"
    "CREATE INDEX findings_by_part ON findings(part);"
    "CREATE TABLE events ("
    "  id INTEGER PRIMARY KEY,"
    "  time_ms INTEGER NOT NULL,"
    "  campaign_id TEXT,"
    "  task_id TEXT,"
    "  node TEXT,"
    "  kind TEXT NOT NULL,"
    "  message TEXT"
    ");"
    "CREATE INDEX events_by_campaign ON events(campaign_id, time_ms);";
/* clang-format on */

/* s_migrations[v] takes a database from schema version v to v + 1. Append only: a released
 * step is never edited, a change is a new step (ALTER TABLE, new tables, data rewrites). */
static const char *const s_migrations[] = {
    s_schema_v1, /* 0 -> 1 */
};

_Static_assert(sizeof s_migrations / sizeof s_migrations[0] == STORE_SCHEMA_VERSION,
               "one migration step per schema version");

/* ---- Statements -------------------------------------------------------------------------- */

enum {
    S_AGENT_UPSERT,
    S_INVENTORY_LATEST,
    S_INVENTORY_INSERT,
    S_AGENT_SET_STATE,
    S_AGENT_SEEN,
    S_AGENT_LIST,
    S_AGENT_UNHEARD,
    S_CAMPAIGN_CREATE,
    S_CAMPAIGN_FINISH,
    S_CAMPAIGN_INTERRUPT,
    S_CAMPAIGN_LATEST,
    S_CAMPAIGN_GET,
    S_CAMPAIGN_LIST,
    S_JSON_IS_OBJECT,
    S_STAGE_CREATE,
    S_STAGE_START,
    S_STAGE_FINISH,
    S_STAGES_OF,
    S_TASK_CREATE,
    S_TASK_FINISH,
    S_TASK_EXISTS,
    S_TASK_MEMBER,
    S_TASK_FROM_RESULT,
    S_TASKS_OF,
    S_TASK_NODES,
    S_RESULT_INSERT,
    S_RESULTS_OF,
    S_METRIC_INSERT,
    S_METRICS_OF,
    S_FINDING_INSERT,
    S_FINDINGS_OF,
    S_EVENT_INSERT,
    S_EVENTS_ALL,
    S_EVENTS_OF,
    S_COUNT
};

/* A failing verdict: anything but pass and skipped. */
#define S_FAILING_SQL "NOT IN ('pass','skipped')"

static const char *const s_sql[S_COUNT] = {
    [S_AGENT_UPSERT] =
        "INSERT INTO agents(name, state, first_seen_ms, last_seen_ms, state_since_ms, summary,"
        " inventory_json) VALUES (?1, ?2, ?3, ?3, ?3, ?4, ?5)"
        " ON CONFLICT(name) DO UPDATE SET"
        " state_since_ms = CASE WHEN state IS excluded.state THEN state_since_ms"
        "                  ELSE excluded.state_since_ms END,"
        " state = excluded.state,"
        " last_seen_ms = MAX(last_seen_ms, excluded.last_seen_ms),"
        " summary = COALESCE(excluded.summary, summary),"
        " inventory_json = COALESCE(excluded.inventory_json, inventory_json)",
    [S_INVENTORY_LATEST] = "SELECT inventory_json FROM inventory_snapshots WHERE agent = ?1"
                           " ORDER BY id DESC LIMIT 1",
    [S_INVENTORY_INSERT] =
        "INSERT INTO inventory_snapshots(agent, time_ms, inventory_json) VALUES (?1, ?2, ?3)",
    [S_AGENT_SET_STATE] = "UPDATE agents SET"
                          " state_since_ms = CASE WHEN state IS ?2 THEN state_since_ms ELSE ?3 END,"
                          " state = ?2 WHERE name = ?1",
    [S_AGENT_SEEN] = "UPDATE agents SET last_seen_ms = MAX(last_seen_ms, ?2) WHERE name = ?1",
    [S_AGENT_UNHEARD] = "UPDATE agents SET state = 'unheard', state_since_ms = ?1"
                        " WHERE state = 'alive'",
    [S_AGENT_LIST] = "SELECT name, state, summary, inventory_json, first_seen_ms, last_seen_ms,"
                     " state_since_ms FROM agents ORDER BY name",
    [S_CAMPAIGN_CREATE] = "INSERT INTO campaigns(id, name, source, yaml, started_ms, state)"
                          " VALUES (?1, ?2, ?3, ?4, ?5, 'running')",
    [S_CAMPAIGN_FINISH] = "UPDATE campaigns SET state = 'finished', verdict = ?2, finished_ms = ?3"
                          " WHERE id = ?1",
    [S_CAMPAIGN_INTERRUPT] = "UPDATE campaigns SET state = 'interrupted', verdict = 'error',"
                             " finished_ms = ?1 WHERE state = 'running'",
    [S_CAMPAIGN_LATEST] = "SELECT id FROM campaigns ORDER BY started_ms DESC, rowid DESC LIMIT 1",
    [S_CAMPAIGN_GET] = "SELECT id, name, source, yaml, state, verdict, started_ms, finished_ms"
                       " FROM campaigns WHERE id = ?1",
    [S_CAMPAIGN_LIST] = "SELECT id, name, source, NULL, state, verdict, started_ms, finished_ms"
                        " FROM campaigns ORDER BY started_ms DESC, rowid DESC",
    [S_JSON_IS_OBJECT] = "SELECT CASE WHEN json_valid(?1) THEN json_type(?1) = 'object' ELSE 0 END",
    [S_STAGE_CREATE] =
        "INSERT INTO stages(campaign_id, idx, name, workload, params_json, on_fail, timeout_ms)"
        " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1)",
    [S_STAGE_START] = "UPDATE stages SET started_ms = ?2 WHERE id = ?1",
    [S_STAGE_FINISH] = "UPDATE stages SET verdict = ?2, finished_ms = ?3 WHERE id = ?1",
    [S_STAGES_OF] = "SELECT id, idx, name, workload, on_fail, params_json, timeout_ms, started_ms,"
                    " finished_ms, verdict FROM stages WHERE campaign_id = ?1 ORDER BY idx, id",
    [S_TASK_CREATE] = "INSERT INTO tasks(id, campaign_id, stage_id, nodes_json, state, started_ms)"
                      " SELECT ?1, ?2, ?3, ?4, 'running', ?5"
                      " WHERE EXISTS (SELECT 1 FROM stages WHERE id = ?3 AND campaign_id = ?2)",
    /* ?5: the new verdict fails. A provisional pass (from results of fewer nodes than the task
     * has) gives way to a failing verdict; anything else that is set stays. */
    [S_TASK_FINISH] =
        "UPDATE tasks SET verdict = ?2, error = ?3, finished_ms = ?4, state = 'finished',"
        " verdict_by = 'coordinator'"
        " WHERE id = ?1 AND (verdict IS NULL OR (?5 AND verdict_by = 'result'"
        "   AND verdict IN ('pass','skipped')"
        "   AND (SELECT COUNT(DISTINCT COALESCE(node, result_id)) FROM results"
        "        WHERE task_id = ?1) < MAX(1, json_array_length(nodes_json))))",
    [S_TASK_EXISTS] = "SELECT 1 FROM tasks WHERE id = ?1",
    [S_TASK_MEMBER] = "SELECT CAST(j.key AS INTEGER) FROM tasks t, json_each(t.nodes_json) j "
                      "WHERE t.id = ?1 AND j.value = ?2",
    /* ?5: the result fails; a failing result replaces a passing task verdict, and a skipped one
     * a pass (a group that did not run as a whole). ?6: the result's node, which prefixes the
     * error of a task with several nodes so that the task's error says which member it was. */
    [S_TASK_FROM_RESULT] =
        "UPDATE tasks SET verdict = ?2, finished_ms = ?4, state = 'finished',"
        " verdict_by = 'result',"
        " error = CASE WHEN ?3 IS NOT NULL AND ?6 IS NOT NULL"
        "   AND json_array_length(nodes_json) > 1 AND substr(?3, 1, length(?6) + 1) != ?6 || ':'"
        "   THEN ?6 || ': ' || ?3 ELSE ?3 END"
        " WHERE id = ?1 AND (verdict IS NULL OR (?5 AND verdict IN ('pass','skipped'))"
        "   OR (?2 = 'skipped' AND verdict = 'pass'))",
    [S_TASKS_OF] = "SELECT id, state, verdict, error, started_ms, finished_ms, nodes_json"
                   " FROM tasks WHERE stage_id = ?1 ORDER BY rowid",
    [S_TASK_NODES] = "SELECT CAST(value AS TEXT) FROM json_each(?1) ORDER BY key",
    [S_RESULT_INSERT] =
        "INSERT INTO results(result_id, task_id, node, verdict, error, started_ms, finished_ms,"
        " received_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        " ON CONFLICT(result_id) DO NOTHING",
    [S_RESULTS_OF] = "SELECT result_id, node, verdict, error, started_ms, finished_ms, received_ms"
                     " FROM results WHERE task_id = ?1 ORDER BY received_ms, rowid",
    [S_METRIC_INSERT] = "INSERT INTO metrics(result_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)",
    [S_METRICS_OF] = "SELECT name, value, unit FROM metrics WHERE result_id = ?1 ORDER BY rowid",
    [S_FINDING_INSERT] =
        "INSERT INTO findings(result_id, part, kind, what) VALUES (?1, ?2, ?3, ?4)",
    [S_FINDINGS_OF] = "SELECT part, kind, what FROM findings WHERE result_id = ?1 ORDER BY rowid",
    [S_EVENT_INSERT] = "INSERT INTO events(time_ms, campaign_id, task_id, node, kind, message)"
                       " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [S_EVENTS_ALL] = "SELECT id, time_ms, campaign_id, task_id, node, kind, message FROM events"
                     " ORDER BY time_ms, id",
    [S_EVENTS_OF] = "SELECT id, time_ms, campaign_id, task_id, node, kind, message FROM events"
                    " WHERE campaign_id = ?1 ORDER BY time_ms, id",
};

struct store {
    sqlite3 *db;
    char *path;
    char errmsg[512];
    sqlite3_stmt *stmts[S_COUNT];
    bool deferred;  /* store_defer_commits: writes join one transaction until store_flush */
    int savepoints; /* open per-call savepoints inside that transaction */
};

/* ---- Errors ------------------------------------------------------------------------------ */

/* Records "what: <SQLite message>" and maps the SQLite code to a negative errno. */
static int s_sqlite_err(store_t *self, int rc, const char *what)
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
static int s_fail(store_t *self, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int s_fail(store_t *self, int err, const char *fmt, ...)
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
static sqlite3_stmt *s_stmt(store_t *self, int which)
{
    sqlite3_stmt *st = self->stmts[which];
    if (!st) {
        int rc =
            sqlite3_prepare_v3(self->db, s_sql[which], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK) {
            s_sqlite_err(self, rc, "preparing a statement");
            return NULL;
        }
        self->stmts[which] = st;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

static void s_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* Optional timestamps and durations: 0 is stored as NULL. */
static void s_bind_time(sqlite3_stmt *st, int i, uint64_t ms)
{
    if (ms)
        sqlite3_bind_int64(st, i, ms > INT64_MAX ? INT64_MAX : (int64_t)ms);
    else
        sqlite3_bind_null(st, i);
}

static void s_bind_verdict(sqlite3_stmt *st, int i, fb_verdict_t v)
{
    if (v == FB_VERDICT_NONE)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_text(st, i, fb_verdict_name(v), -1, SQLITE_STATIC);
}

static char *s_col_dup(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    return xstrdup((const char *)sqlite3_column_text(st, i));
}

/* Borrowed text, valid until the next step or reset; NULL for NULL. */
static const char *s_col_text(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    return (const char *)sqlite3_column_text(st, i);
}

static uint64_t s_col_time(sqlite3_stmt *st, int i)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v > 0 ? (uint64_t)v : 0;
}

/* A stored verdict; NULL is NONE, and text this build does not know reads as error so that it
 * can never pass a campaign. */
static fb_verdict_t s_col_verdict(sqlite3_stmt *st, int i)
{
    const char *name = s_col_text(st, i);
    if (!name)
        return FB_VERDICT_NONE;
    int v = fb_verdict_parse(name);
    return v <= 0 ? FB_VERDICT_ERROR : (fb_verdict_t)v;
}

static int s_exec(store_t *self, const char *sql, const char *what);

/* With deferred commits, the first write since the last store_flush opens the transaction that
 * every write joins until the next flush. */
static int s_batch_open(store_t *self)
{
    if (!self->deferred || !sqlite3_get_autocommit(self->db))
        return 0;
    return s_exec(self, "BEGIN IMMEDIATE", "starting a transaction");
}

/* Runs a statement that returns no rows. */
static int s_run(store_t *self, sqlite3_stmt *st, const char *what)
{
    int err = s_batch_open(self);
    if (err) {
        sqlite3_reset(st);
        return err;
    }
    int rc = sqlite3_step(st);
    err = rc == SQLITE_DONE ? 0 : s_sqlite_err(self, rc, what);
    sqlite3_reset(st);
    return err;
}

static int s_exec(store_t *self, const char *sql, const char *what)
{
    int rc = sqlite3_exec(self->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : s_sqlite_err(self, rc, what);
}

/* Inside the open transaction of deferred commits, a call's own transaction is a savepoint: it
 * still changes all or nothing. */
static int s_savepoint(store_t *self)
{
    int err = s_exec(self, "SAVEPOINT fb", "starting a savepoint");
    if (!err)
        self->savepoints++;
    return err;
}

/* Write transactions take the write lock up front, so the busy timeout applies to it instead of
 * failing at the first write of a deferred transaction. */
static int s_begin(store_t *self)
{
    if (self->deferred) {
        int err = s_batch_open(self);
        return err ? err : s_savepoint(self);
    }
    return s_exec(self, "BEGIN IMMEDIATE", "starting a transaction");
}

/* Read transactions: everything read until s_end sees one snapshot (inside the transaction of
 * deferred commits, that one, with its writes). */
static int s_begin_read(store_t *self)
{
    if (self->deferred && !sqlite3_get_autocommit(self->db))
        return s_savepoint(self);
    return s_exec(self, "BEGIN DEFERRED", "starting a read transaction");
}

static void s_rollback(store_t *self)
{
    if (self->savepoints > 0) {
        self->savepoints--;
        sqlite3_exec(self->db, "ROLLBACK TO fb; RELEASE fb", NULL, NULL, NULL);
        return;
    }
    if (!sqlite3_get_autocommit(self->db))
        sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
}

static int s_commit(store_t *self)
{
    if (self->savepoints > 0) {
        int err = s_exec(self, "RELEASE fb", "releasing a savepoint");
        if (err)
            s_rollback(self);
        else
            self->savepoints--;
        return err;
    }
    int err = s_exec(self, "COMMIT", "committing");
    if (err)
        s_rollback(self);
    return err;
}

/* Ends a transaction: commits when err is 0, rolls back otherwise; returns the first error. */
static int s_end(store_t *self, int err)
{
    if (err) {
        s_rollback(self);
        return err;
    }
    return s_commit(self);
}

static int s_check_verdict(store_t *self, fb_verdict_t verdict, const char *what)
{
    if (verdict == FB_VERDICT_NONE || (int)verdict < 0 || verdict > FB_VERDICT_MAX)
        return s_fail(self, -EINVAL, "%s: verdict %d is not a final verdict", what, (int)verdict);
    return 0;
}

/* ---- Open, migrate, close ---------------------------------------------------------------- */

static int s_pragma_int(store_t *self, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(self->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    int err = rc == SQLITE_OK ? 0 : s_sqlite_err(self, rc, sql);
    sqlite3_finalize(st);
    return err;
}

static int s_refuse_newer(store_t *self, int64_t version)
{
    return s_fail(self, -ENOTSUP,
                  "%s: timeline schema version %lld is newer than this fleetburn supports "
                  "(schema version %d); open it with the newer fleetburn that wrote it, or use "
                  "another database file",
                  self->path, (long long)version, STORE_SCHEMA_VERSION);
}

static int s_meta_set(store_t *self, const char *key, const char *value)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(self->db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
                                -1, &st, NULL);
    if (rc != SQLITE_OK)
        return s_sqlite_err(self, rc, "writing meta");
    s_bind_text(st, 1, key);
    s_bind_text(st, 2, value);
    rc = sqlite3_step(st);
    int err = rc == SQLITE_DONE ? 0 : s_sqlite_err(self, rc, "writing meta");
    sqlite3_finalize(st);
    return err;
}

/* Brings the schema from its version to STORE_SCHEMA_VERSION in one transaction. The version is
 * read again under the write lock: another process may have migrated in the meantime. */
static int s_migrate(store_t *self)
{
    int err = s_begin(self);
    if (err)
        return err;
    int64_t version = 0, app_id = 0, n_tables = 0;
    err = s_pragma_int(self, "PRAGMA user_version", &version);
    if (!err)
        err = s_pragma_int(self, "PRAGMA application_id", &app_id);
    if (!err)
        err = s_pragma_int(self,
                           "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'"
                           " AND name NOT LIKE 'sqlite_%'",
                           &n_tables);
    if (err)
        return s_end(self, err);
    if (version > STORE_SCHEMA_VERSION)
        return s_end(self, s_refuse_newer(self, version));
    if (version == STORE_SCHEMA_VERSION)
        return s_end(self, 0);
    if (version < 0 || (app_id != 0 && app_id != STORE_APPLICATION_ID) ||
        (version == 0 && n_tables > 0))
        return s_end(self, s_fail(self, -EINVAL,
                                  "%s: not a fleetburn timeline (application_id %lld, schema "
                                  "version %lld, %lld tables)",
                                  self->path, (long long)app_id, (long long)version,
                                  (long long)n_tables));
    char what[96];
    for (int64_t v = version; v < STORE_SCHEMA_VERSION && !err; v++) {
        snprintf(what, sizeof what, "migrating schema version %lld to %lld", (long long)v,
                 (long long)v + 1);
        err = s_exec(self, s_migrations[v], what);
    }
    char *sql = xasprintf("PRAGMA user_version = %d; PRAGMA application_id = %d;",
                          STORE_SCHEMA_VERSION, STORE_APPLICATION_ID);
    if (!err)
        err = s_exec(self, sql, "setting the schema version");
    free(sql);
    char now[32], num[24];
    fb_iso8601(fb_now_ms(), now, sizeof now);
    snprintf(num, sizeof num, "%d", STORE_SCHEMA_VERSION);
    if (!err)
        err = s_meta_set(self, "schema_version", num);
    if (!err && version == 0) {
        err = s_meta_set(self, "application", "fleetburn timeline");
        if (!err)
            err = s_meta_set(self, "created", now);
        if (!err)
            err = s_meta_set(self, "created_by", "fleetburn " FB_VERSION);
    } else if (!err) {
        err = s_meta_set(self, "migrated", now);
        if (!err)
            err = s_meta_set(self, "migrated_by", "fleetburn " FB_VERSION);
    }
    err = s_end(self, err);
    if (!err && version > 0)
        log_info("%s: timeline migrated from schema version %lld to %d", self->path,
                 (long long)version, STORE_SCHEMA_VERSION);
    return err;
}

static int s_setup(store_t *self)
{
    sqlite3_extended_result_codes(self->db, 1);
    sqlite3_busy_timeout(self->db, STORE_BUSY_TIMEOUT_MS);
    int err = s_exec(self, "PRAGMA foreign_keys = ON", "enabling foreign keys");
    if (err)
        return err;
    /* Refuse another application's database or a newer one before changing anything. */
    int64_t version = 0, app_id = 0;
    err = s_pragma_int(self, "PRAGMA user_version", &version);
    if (!err)
        err = s_pragma_int(self, "PRAGMA application_id", &app_id);
    if (err)
        return err;
    if (app_id != 0 && app_id != STORE_APPLICATION_ID)
        return s_fail(self, -EINVAL, "%s: not a fleetburn timeline (application_id %lld)",
                      self->path, (long long)app_id);
    if (version > STORE_SCHEMA_VERSION)
        return s_refuse_newer(self, version);

    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(self->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        err = s_sqlite_err(self, rc, "switching to WAL mode");
        sqlite3_finalize(st);
        return err;
    }
    const char *mode = (const char *)sqlite3_column_text(st, 0);
    if (!mode || strcmp(mode, "wal") != 0)
        log_warn("%s: journal mode is %s, not wal: readers will block the writer", self->path,
                 mode ? mode : "unknown");
    sqlite3_finalize(st);
    err = s_exec(self, "PRAGMA synchronous = NORMAL", "setting synchronous");
    if (err)
        return err;
    if (version < STORE_SCHEMA_VERSION)
        err = s_migrate(self);
    return err;
}

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
            err = s_sqlite_err(self, rc, path);
        else
            err = s_fail(self, -ENOMEM, "%s: cannot allocate a SQLite connection", path);
    } else {
        err = s_setup(self);
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
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(self->stmts[i]);
    if (self->db) {
        s_rollback(self);
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
    return s_commit(self);
}

/* ---- Agents ------------------------------------------------------------------------------ */

int store_agent_upsert(store_t *self, const char *name, const char *state, const char *summary,
                       const char *inventory_json, uint64_t now_ms)
{
    if (!name || !state)
        return s_fail(self, -EINVAL, "agent upsert: name and state are required");
    int err = s_begin(self);
    if (err)
        return err;
    sqlite3_stmt *st = s_stmt(self, S_AGENT_UPSERT);
    if (!st)
        return s_end(self, -EIO);
    s_bind_text(st, 1, name);
    s_bind_text(st, 2, state);
    sqlite3_bind_int64(st, 3, (int64_t)now_ms);
    s_bind_text(st, 4, summary);
    s_bind_text(st, 5, inventory_json);
    err = s_run(self, st, "storing an agent");
    if (err || !inventory_json)
        return s_end(self, err);

    /* A snapshot only when the inventory changed. */
    st = s_stmt(self, S_INVENTORY_LATEST);
    if (!st)
        return s_end(self, -EIO);
    s_bind_text(st, 1, name);
    int rc = sqlite3_step(st);
    bool changed = true;
    if (rc == SQLITE_ROW) {
        const char *latest = s_col_text(st, 0);
        changed = !latest || strcmp(latest, inventory_json) != 0;
    } else if (rc != SQLITE_DONE) {
        err = s_sqlite_err(self, rc, "reading the latest inventory");
    }
    sqlite3_reset(st);
    if (!err && changed) {
        st = s_stmt(self, S_INVENTORY_INSERT);
        if (!st)
            return s_end(self, -EIO);
        s_bind_text(st, 1, name);
        sqlite3_bind_int64(st, 2, (int64_t)now_ms);
        s_bind_text(st, 3, inventory_json);
        err = s_run(self, st, "storing an inventory snapshot");
    }
    return s_end(self, err);
}

/* Runs a single-row UPDATE; -ENOENT (with a message naming what and key) when no row matched. */
static int s_update_one(store_t *self, sqlite3_stmt *st, const char *what, const char *key)
{
    int err = s_run(self, st, what);
    if (!err && sqlite3_changes(self->db) == 0)
        err = s_fail(self, -ENOENT, "%s: no such row '%s'", what, key);
    return err;
}

int store_agent_set_state(store_t *self, const char *name, const char *state, uint64_t now_ms)
{
    if (!name || !state)
        return s_fail(self, -EINVAL, "agent state: name and state are required");
    sqlite3_stmt *st = s_stmt(self, S_AGENT_SET_STATE);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, name);
    s_bind_text(st, 2, state);
    sqlite3_bind_int64(st, 3, (int64_t)now_ms);
    return s_update_one(self, st, "setting an agent's state", name);
}

int store_agent_seen(store_t *self, const char *name, uint64_t now_ms)
{
    if (!name)
        return s_fail(self, -EINVAL, "agent seen: name is required");
    sqlite3_stmt *st = s_stmt(self, S_AGENT_SEEN);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, name);
    sqlite3_bind_int64(st, 2, (int64_t)now_ms);
    return s_update_one(self, st, "recording an agent as seen", name);
}

/* ---- Campaigns, stages, tasks ------------------------------------------------------------ */

/* Maps a uniqueness violation to -EEXIST, other failures as s_sqlite_err does. */
static int s_insert(store_t *self, sqlite3_stmt *st, const char *what, const char *key)
{
    int rc = sqlite3_step(st);
    int err = 0;
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
        err = s_fail(self, -EEXIST, "%s: '%s' already exists", what, key);
    else if (rc != SQLITE_DONE)
        err = s_sqlite_err(self, rc, what);
    sqlite3_reset(st);
    return err;
}

int store_campaign_create(store_t *self, const char *id, const char *name, const char *source,
                          const char *yaml, uint64_t started_ms)
{
    if (!id)
        return s_fail(self, -EINVAL, "campaign create: id is required");
    sqlite3_stmt *st = s_stmt(self, S_CAMPAIGN_CREATE);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, id);
    s_bind_text(st, 2, name);
    s_bind_text(st, 3, source);
    s_bind_text(st, 4, yaml);
    sqlite3_bind_int64(st, 5, (int64_t)started_ms);
    return s_insert(self, st, "creating a campaign", id);
}

int store_campaign_finish(store_t *self, const char *id, fb_verdict_t verdict, uint64_t finished_ms)
{
    int err = s_check_verdict(self, verdict, "campaign finish");
    if (err)
        return err;
    if (!id)
        return s_fail(self, -EINVAL, "campaign finish: id is required");
    sqlite3_stmt *st = s_stmt(self, S_CAMPAIGN_FINISH);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, id);
    s_bind_verdict(st, 2, verdict);
    s_bind_time(st, 3, finished_ms);
    return s_update_one(self, st, "finishing a campaign", id);
}

int store_agents_mark_unheard(store_t *self, uint64_t now_ms)
{
    sqlite3_stmt *st = s_stmt(self, S_AGENT_UNHEARD);
    if (!st)
        return -EIO;
    s_bind_time(st, 1, now_ms);
    int err = s_run(self, st, "marking agents not heard since the start");
    return err ? err : sqlite3_changes(self->db);
}

int store_campaign_interrupt_stale(store_t *self, uint64_t now_ms)
{
    sqlite3_stmt *st = s_stmt(self, S_CAMPAIGN_INTERRUPT);
    if (!st)
        return -EIO;
    s_bind_time(st, 1, now_ms);
    int err = s_run(self, st, "interrupting stale campaigns");
    return err ? err : sqlite3_changes(self->db);
}

int store_latest_campaign(store_t *self, char **id_out)
{
    *id_out = NULL;
    sqlite3_stmt *st = s_stmt(self, S_CAMPAIGN_LATEST);
    if (!st)
        return -EIO;
    int rc = sqlite3_step(st);
    int err = 0;
    if (rc == SQLITE_ROW)
        *id_out = s_col_dup(st, 0);
    else if (rc == SQLITE_DONE)
        err = s_fail(self, -ENOENT, "the timeline holds no campaign");
    else
        err = s_sqlite_err(self, rc, "finding the latest campaign");
    sqlite3_reset(st);
    return err;
}

int store_stage_create(store_t *self, const char *campaign_id, int idx, const char *name,
                       const char *workload, const char *params_json, const char *on_fail,
                       uint64_t timeout_ms, int64_t *stage_id_out)
{
    if (stage_id_out)
        *stage_id_out = 0;
    if (!campaign_id)
        return s_fail(self, -EINVAL, "stage create: campaign id is required");
    sqlite3_stmt *st;
    if (params_json) {
        st = s_stmt(self, S_JSON_IS_OBJECT);
        if (!st)
            return -EIO;
        s_bind_text(st, 1, params_json);
        int rc = sqlite3_step(st);
        int is_object = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
        int err = rc == SQLITE_ROW ? 0 : s_sqlite_err(self, rc, "checking stage parameters");
        sqlite3_reset(st);
        if (err)
            return err;
        if (!is_object)
            return s_fail(self, -EINVAL, "stage %d (%s): parameters are not a JSON object", idx,
                          name ? name : "unnamed");
    }
    st = s_stmt(self, S_STAGE_CREATE);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, campaign_id);
    sqlite3_bind_int(st, 2, idx);
    s_bind_text(st, 3, name);
    s_bind_text(st, 4, workload);
    s_bind_text(st, 5, params_json);
    s_bind_text(st, 6, on_fail);
    s_bind_time(st, 7, timeout_ms);
    int err = s_run(self, st, "creating a stage");
    if (err)
        return err;
    if (sqlite3_changes(self->db) == 0)
        return s_fail(self, -ENOENT, "creating a stage: no campaign '%s'", campaign_id);
    if (stage_id_out)
        *stage_id_out = sqlite3_last_insert_rowid(self->db);
    return 0;
}

int store_stage_start(store_t *self, int64_t stage_id, uint64_t now_ms)
{
    sqlite3_stmt *st = s_stmt(self, S_STAGE_START);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, stage_id);
    s_bind_time(st, 2, now_ms);
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)stage_id);
    return s_update_one(self, st, "starting a stage", key);
}

int store_stage_finish(store_t *self, int64_t stage_id, fb_verdict_t verdict, uint64_t now_ms)
{
    int err = s_check_verdict(self, verdict, "stage finish");
    if (err)
        return err;
    sqlite3_stmt *st = s_stmt(self, S_STAGE_FINISH);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, stage_id);
    s_bind_verdict(st, 2, verdict);
    s_bind_time(st, 3, now_ms);
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)stage_id);
    return s_update_one(self, st, "finishing a stage", key);
}

int store_task_create(store_t *self, const char *task_id, const char *campaign_id, int64_t stage_id,
                      const char *const *nodes, size_t n_nodes, uint64_t now_ms)
{
    if (!task_id || !campaign_id || (n_nodes && !nodes))
        return s_fail(self, -EINVAL, "task create: task id, campaign id and nodes are required");
    fb_json_t *json = fb_json_new(false);
    fb_json_array_begin(json, NULL);
    for (size_t i = 0; i < n_nodes; i++)
        fb_json_string(json, NULL, nodes[i]);
    fb_json_array_end(json);
    sqlite3_stmt *st = s_stmt(self, S_TASK_CREATE);
    int err = -EIO;
    if (st) {
        s_bind_text(st, 1, task_id);
        s_bind_text(st, 2, campaign_id);
        sqlite3_bind_int64(st, 3, stage_id);
        s_bind_text(st, 4, fb_json_text(json));
        s_bind_time(st, 5, now_ms);
        err = s_insert(self, st, "creating a task", task_id);
        if (!err && sqlite3_changes(self->db) == 0)
            err = s_fail(self, -ENOENT, "creating task '%s': no stage %lld in campaign '%s'",
                         task_id, (long long)stage_id, campaign_id);
    }
    fb_json_destroy(&json);
    return err;
}

/* 1 when the task exists, 0 when not, or -errno. */
static int s_task_exists(store_t *self, const char *task_id)
{
    sqlite3_stmt *st = s_stmt(self, S_TASK_EXISTS);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, task_id);
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_ROW    ? 1
              : rc == SQLITE_DONE ? 0
                                  : s_sqlite_err(self, rc, "looking up a task");
    sqlite3_reset(st);
    return ret;
}

int store_task_member(store_t *self, const char *task_id, const char *node)
{
    sqlite3_stmt *st = s_stmt(self, S_TASK_MEMBER);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, task_id);
    s_bind_text(st, 2, node);
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_ROW ? sqlite3_column_int(st, 0)
              : rc == SQLITE_DONE ? 1
                                  : s_sqlite_err(self, rc, "looking up a task's members");
    sqlite3_reset(st);
    if (ret == 1 && rc == SQLITE_DONE) {
        int exists = s_task_exists(self, task_id);
        return exists < 0 ? exists : exists ? -EPERM : -ENOENT;
    }
    return ret;
}

int store_task_finish(store_t *self, const char *task_id, fb_verdict_t verdict, const char *error,
                      uint64_t now_ms)
{
    int err = s_check_verdict(self, verdict, "task finish");
    if (err)
        return err;
    if (!task_id)
        return s_fail(self, -EINVAL, "task finish: task id is required");
    err = s_begin(self);
    if (err)
        return err;
    sqlite3_stmt *st = s_stmt(self, S_TASK_FINISH);
    if (!st)
        return s_end(self, -EIO);
    s_bind_text(st, 1, task_id);
    s_bind_verdict(st, 2, verdict);
    s_bind_text(st, 3, error);
    s_bind_time(st, 4, now_ms);
    sqlite3_bind_int(st, 5, !fb_verdict_ok(verdict));
    err = s_run(self, st, "finishing a task");
    if (!err && sqlite3_changes(self->db) == 0) {
        int exists = s_task_exists(self, task_id);
        if (exists < 0)
            err = exists;
        else if (exists)
            err = s_fail(self, -EALREADY, "task '%s' already has a verdict", task_id);
        else
            err = s_fail(self, -ENOENT, "finishing a task: no task '%s'", task_id);
    }
    /* -EALREADY changed nothing: the transaction may as well commit. */
    if (err == -EALREADY) {
        s_commit(self);
        return err;
    }
    return s_end(self, err);
}

int store_result_insert(store_t *self, const fb_result_t *result, uint64_t received_ms)
{
    if (!result || !result->result_id || !result->task_id)
        return s_fail(self, -EINVAL, "result insert: result id and task id are required");
    int err = s_check_verdict(self, result->verdict, "result insert");
    if (err)
        return err;
    err = s_begin(self);
    if (err)
        return err;
    sqlite3_stmt *st = s_stmt(self, S_RESULT_INSERT);
    if (!st)
        return s_end(self, -EIO);
    s_bind_text(st, 1, result->result_id);
    s_bind_text(st, 2, result->task_id);
    s_bind_text(st, 3, result->node);
    s_bind_verdict(st, 4, result->verdict);
    s_bind_text(st, 5, result->error);
    s_bind_time(st, 6, result->started_ms);
    s_bind_time(st, 7, result->finished_ms);
    sqlite3_bind_int64(st, 8, (int64_t)received_ms);
    err = s_run(self, st, "storing a result");
    if (!err && sqlite3_changes(self->db) == 0) {
        s_rollback(self);
        return s_fail(self, -EEXIST, "result '%s' is already stored", result->result_id);
    }
    for (size_t i = 0; !err && i < result->n_metrics; i++) {
        const fb_metric_t *m = &result->metrics[i];
        if (!(st = s_stmt(self, S_METRIC_INSERT)))
            return s_end(self, -EIO);
        s_bind_text(st, 1, result->result_id);
        s_bind_text(st, 2, m->name ? m->name : "");
        if (isfinite(m->value))
            sqlite3_bind_double(st, 3, m->value);
        else
            sqlite3_bind_null(st, 3);
        s_bind_text(st, 4, m->unit);
        err = s_run(self, st, "storing a metric");
    }
    for (size_t i = 0; !err && i < result->n_findings; i++) {
        const fb_finding_t *f = &result->findings[i];
        if (!(st = s_stmt(self, S_FINDING_INSERT)))
            return s_end(self, -EIO);
        s_bind_text(st, 1, result->result_id);
        s_bind_text(st, 2, f->part ? f->part : "");
        s_bind_text(st, 3, f->kind ? f->kind : "");
        s_bind_text(st, 4, f->what);
        err = s_run(self, st, "storing a finding");
    }
    if (!err) {
        if (!(st = s_stmt(self, S_TASK_FROM_RESULT)))
            return s_end(self, -EIO);
        s_bind_text(st, 1, result->task_id);
        s_bind_verdict(st, 2, result->verdict);
        s_bind_text(st, 3, result->error);
        s_bind_time(st, 4, received_ms);
        sqlite3_bind_int(st, 5, !fb_verdict_ok(result->verdict));
        s_bind_text(st, 6, result->node && *result->node ? result->node : NULL);
        err = s_run(self, st, "setting a task's verdict from its result");
    }
    return s_end(self, err);
}

int store_event(store_t *self, uint64_t time_ms, const char *campaign_id, const char *task_id,
                const char *node, const char *kind, const char *message)
{
    if (!kind)
        return s_fail(self, -EINVAL, "event: kind is required");
    sqlite3_stmt *st = s_stmt(self, S_EVENT_INSERT);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, (int64_t)time_ms);
    s_bind_text(st, 2, campaign_id);
    s_bind_text(st, 3, task_id);
    s_bind_text(st, 4, node);
    s_bind_text(st, 5, kind);
    s_bind_text(st, 6, message);
    return s_run(self, st, "storing an event");
}

/* ---- Reading ----------------------------------------------------------------------------- */

/* Steps a read statement: 1 for a row, 0 at the end, or -errno (statement reset). */
static int s_next(store_t *self, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    int err = rc == SQLITE_DONE ? 0 : s_sqlite_err(self, rc, what);
    sqlite3_reset(st);
    return err;
}

static void s_task_clear(store_task_t *task)
{
    for (size_t i = 0; i < task->n_nodes; i++)
        free(task->nodes[i]);
    free(task->nodes);
    for (size_t i = 0; i < task->n_results; i++)
        fb_result_destroy(&task->results[i].result);
    free(task->results);
    free(task->id);
    free(task->state);
    free(task->error);
}

static void s_stage_clear(store_stage_t *stage)
{
    for (size_t i = 0; i < stage->n_tasks; i++)
        s_task_clear(&stage->tasks[i]);
    free(stage->tasks);
    free(stage->name);
    free(stage->workload);
    free(stage->on_fail);
    free(stage->params_json);
}

void store_campaign_destroy(store_campaign_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    store_campaign_t *self = *self_p;
    for (size_t i = 0; i < self->n_stages; i++)
        s_stage_clear(&self->stages[i]);
    free(self->stages);
    free(self->id);
    free(self->name);
    free(self->source);
    free(self->yaml);
    free(self->state);
    free(self);
    *self_p = NULL;
}

/* Grows an array of elem-sized items by one zeroed item; returns it. */
static void *s_push(void *array_p, size_t *n, size_t elem)
{
    void **array = array_p;
    *array = xrealloc(*array, (*n + 1) * elem);
    void *item = (char *)*array + *n * elem;
    memset(item, 0, elem);
    (*n)++;
    return item;
}

static int s_load_result_details(store_t *self, fb_result_t *r)
{
    sqlite3_stmt *st = s_stmt(self, S_METRICS_OF);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, r->result_id);
    int more;
    while ((more = s_next(self, st, "reading metrics")) > 0) {
        double value =
            sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 1);
        fb_result_add_metric(r, s_col_text(st, 0), value, s_col_text(st, 2));
    }
    if (more < 0)
        return more;
    if (!(st = s_stmt(self, S_FINDINGS_OF)))
        return -EIO;
    s_bind_text(st, 1, r->result_id);
    while ((more = s_next(self, st, "reading findings")) > 0)
        fb_result_add_finding(r, s_col_text(st, 0), s_col_text(st, 1), s_col_text(st, 2));
    return more;
}

static int s_load_task(store_t *self, store_task_t *task, const char *nodes_json)
{
    sqlite3_stmt *st = s_stmt(self, S_TASK_NODES);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, nodes_json ? nodes_json : "[]");
    int more;
    while ((more = s_next(self, st, "reading a task's nodes")) > 0) {
        char **node = s_push(&task->nodes, &task->n_nodes, sizeof *task->nodes);
        const char *text = s_col_text(st, 0);
        *node = xstrdup(text ? text : "");
    }
    if (more < 0)
        return more;

    if (!(st = s_stmt(self, S_RESULTS_OF)))
        return -EIO;
    s_bind_text(st, 1, task->id);
    while ((more = s_next(self, st, "reading results")) > 0) {
        store_result_t *sr = s_push(&task->results, &task->n_results, sizeof *task->results);
        fb_result_t *r = sr->result = fb_result_new();
        fb_result_set_ids(r, s_col_text(st, 0), task->id, s_col_text(st, 1));
        r->verdict = s_col_verdict(st, 2);
        r->error = s_col_dup(st, 3);
        r->started_ms = s_col_time(st, 4);
        r->finished_ms = s_col_time(st, 5);
        sr->received_ms = s_col_time(st, 6);
    }
    if (more < 0)
        return more;
    /* Details after the results statement is done with, so the two never interleave. */
    for (size_t i = 0; i < task->n_results; i++) {
        int err = s_load_result_details(self, task->results[i].result);
        if (err)
            return err;
    }
    return 0;
}

static int s_load_stage(store_t *self, store_stage_t *stage)
{
    sqlite3_stmt *st = s_stmt(self, S_TASKS_OF);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, stage->id);
    char **nodes_json = NULL;
    size_t n_json = 0;
    int more;
    while ((more = s_next(self, st, "reading tasks")) > 0) {
        store_task_t *task = s_push(&stage->tasks, &stage->n_tasks, sizeof *stage->tasks);
        task->id = s_col_dup(st, 0);
        task->state = s_col_dup(st, 1);
        task->verdict = s_col_verdict(st, 2);
        task->error = s_col_dup(st, 3);
        task->started_ms = s_col_time(st, 4);
        task->finished_ms = s_col_time(st, 5);
        char **json = s_push(&nodes_json, &n_json, sizeof *nodes_json);
        *json = s_col_dup(st, 6);
    }
    int err = more;
    for (size_t i = 0; !err && i < stage->n_tasks; i++)
        err = s_load_task(self, &stage->tasks[i], nodes_json[i]);
    for (size_t i = 0; i < n_json; i++)
        free(nodes_json[i]);
    free(nodes_json);
    return err;
}

/* Fills the campaign columns (id, name, source, yaml, state, verdict, started, finished). */
static void s_campaign_row(sqlite3_stmt *st, store_campaign_t *c)
{
    c->id = s_col_dup(st, 0);
    c->name = s_col_dup(st, 1);
    c->source = s_col_dup(st, 2);
    c->yaml = s_col_dup(st, 3);
    c->state = s_col_dup(st, 4);
    c->verdict = s_col_verdict(st, 5);
    c->started_ms = s_col_time(st, 6);
    c->finished_ms = s_col_time(st, 7);
}

static int s_campaign_load(store_t *self, const char *id, store_campaign_t *c)
{
    sqlite3_stmt *st = s_stmt(self, S_CAMPAIGN_GET);
    if (!st)
        return -EIO;
    s_bind_text(st, 1, id);
    int more = s_next(self, st, "reading a campaign");
    if (more <= 0)
        return more < 0 ? more : s_fail(self, -ENOENT, "no campaign '%s'", id);
    s_campaign_row(st, c);
    sqlite3_reset(st);

    if (!(st = s_stmt(self, S_STAGES_OF)))
        return -EIO;
    s_bind_text(st, 1, id);
    while ((more = s_next(self, st, "reading stages")) > 0) {
        store_stage_t *stage = s_push(&c->stages, &c->n_stages, sizeof *c->stages);
        stage->id = sqlite3_column_int64(st, 0);
        stage->idx = sqlite3_column_int(st, 1);
        stage->name = s_col_dup(st, 2);
        stage->workload = s_col_dup(st, 3);
        stage->on_fail = s_col_dup(st, 4);
        stage->params_json = s_col_dup(st, 5);
        stage->timeout_ms = s_col_time(st, 6);
        stage->started_ms = s_col_time(st, 7);
        stage->finished_ms = s_col_time(st, 8);
        stage->verdict = s_col_verdict(st, 9);
    }
    int err = more;
    for (size_t i = 0; !err && i < c->n_stages; i++)
        err = s_load_stage(self, &c->stages[i]);
    return err;
}

int store_campaign_load(store_t *self, const char *id, store_campaign_t **out)
{
    *out = NULL;
    if (!id)
        return s_fail(self, -EINVAL, "campaign load: id is required");
    int err = s_begin_read(self);
    if (err)
        return err;
    store_campaign_t *c = xcalloc(1, sizeof *c);
    err = s_end(self, s_campaign_load(self, id, c));
    if (err) {
        store_campaign_destroy(&c);
        return err;
    }
    *out = c;
    return 0;
}

int store_campaign_foreach(store_t *self, int (*cb)(const store_campaign_t *campaign, void *arg),
                           void *arg)
{
    sqlite3_stmt *st = s_stmt(self, S_CAMPAIGN_LIST);
    if (!st)
        return -EIO;
    int more, ret = 0;
    while (!ret && (more = s_next(self, st, "listing campaigns")) > 0) {
        store_campaign_t c = {0};
        s_campaign_row(st, &c);
        ret = cb(&c, arg);
        free(c.id);
        free(c.name);
        free(c.source);
        free(c.yaml);
        free(c.state);
    }
    sqlite3_reset(st);
    return ret ? ret : more;
}

int store_agent_foreach(store_t *self, int (*cb)(const store_agent_t *agent, void *arg), void *arg)
{
    sqlite3_stmt *st = s_stmt(self, S_AGENT_LIST);
    if (!st)
        return -EIO;
    int more, ret = 0;
    while (!ret && (more = s_next(self, st, "listing agents")) > 0) {
        store_agent_t a = {
            .name = s_col_text(st, 0),
            .state = s_col_text(st, 1),
            .summary = s_col_text(st, 2),
            .inventory_json = s_col_text(st, 3),
            .first_seen_ms = s_col_time(st, 4),
            .last_seen_ms = s_col_time(st, 5),
            .state_since_ms = s_col_time(st, 6),
        };
        ret = cb(&a, arg);
    }
    sqlite3_reset(st);
    return ret ? ret : more;
}

int store_event_foreach(store_t *self, const char *campaign_id,
                        int (*cb)(const store_event_t *event, void *arg), void *arg)
{
    sqlite3_stmt *st = s_stmt(self, campaign_id ? S_EVENTS_OF : S_EVENTS_ALL);
    if (!st)
        return -EIO;
    if (campaign_id)
        s_bind_text(st, 1, campaign_id);
    int more, ret = 0;
    while (!ret && (more = s_next(self, st, "listing events")) > 0) {
        store_event_t e = {
            .id = sqlite3_column_int64(st, 0),
            .time_ms = s_col_time(st, 1),
            .campaign_id = s_col_text(st, 2),
            .task_id = s_col_text(st, 3),
            .node = s_col_text(st, 4),
            .kind = s_col_text(st, 5),
            .message = s_col_text(st, 6),
        };
        ret = cb(&e, arg);
    }
    sqlite3_reset(st);
    return ret ? ret : more;
}

int store_software_foreach(store_t *self, const char *campaign_id,
                           int (*cb)(const char *component, const char *version, const char *node,
                                     void *arg),
                           void *arg)
{
    /* The inventory is stored as JSON; SQLite's json_each unpacks its software map. */
    static const char *sql =
        "SELECT sw.key, sw.value, a.name FROM agents a, json_each(a.inventory_json, '$.software') sw"
        " WHERE json_valid(a.inventory_json) AND a.name IN (SELECT DISTINCT n.value FROM tasks t,"
        " json_each(t.nodes_json) n WHERE t.campaign_id = ?1)"
        " ORDER BY sw.key, sw.value, a.name";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK) {
        log_error("store: listing software versions: %s", sqlite3_errmsg(self->db));
        return -EIO;
    }
    s_bind_text(st, 1, campaign_id);
    int more, ret = 0;
    while (!ret && (more = s_next(self, st, "listing software versions")) > 0)
        ret = cb(s_col_text(st, 0), s_col_text(st, 1), s_col_text(st, 2), arg);
    sqlite3_finalize(st);
    return ret ? ret : more;
}
