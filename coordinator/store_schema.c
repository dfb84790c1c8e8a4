/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline's schema and its migrations (store_internal.h): the SQL of every schema version
 * as a step from the one before (s_migrations, append only), and what opening a database does
 * before any statement runs (store__setup): refuse another application's database or one from a
 * newer fleetburn, switch to WAL mode, and migrate an older schema forward in one transaction,
 * recording the version in the meta table. Separate from store.c (the connection, the cached
 * statements and the transaction helpers) because the schema only grows: a new version is one
 * new step here and nothing else changes. docs/timeline-store.md describes the tables. */
#include "store_internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Schema version 2: campaigns may end cancelled (and wait queued); a stage keeps its plan (seed
 * and selected nodes) and a campaign the files its text names, so that a campaign a coordinator
 * left running is resumed by the next one. SQLite cannot change a CHECK constraint in place:
 * the campaigns table is built again (foreign keys are off while migrating, store__setup). */
/* clang-format off */
static const char s_schema_v2[] =
    "CREATE TABLE campaigns_v2 ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT,"
    "  source TEXT,"
    "  yaml TEXT,"
    "  started_ms INTEGER NOT NULL,"
    "  finished_ms INTEGER,"
    "  verdict TEXT " S_VERDICT_CHECK("verdict") ","
    "  state TEXT NOT NULL DEFAULT 'running'"
    "    CHECK (state IN ('queued','running','finished','cancelled','interrupted','error'))"
    ");"
    "INSERT INTO campaigns_v2(rowid, id, name, source, yaml, started_ms, finished_ms, verdict,"
    "  state) SELECT rowid, id, name, source, yaml, started_ms, finished_ms, verdict, state"
    "  FROM campaigns ORDER BY rowid;"
    "DROP TABLE campaigns;"
    "ALTER TABLE campaigns_v2 RENAME TO campaigns;"
    "CREATE INDEX campaigns_by_start ON campaigns(started_ms);"
    "ALTER TABLE stages ADD COLUMN seed INTEGER;"
    "ALTER TABLE stages ADD COLUMN nodes_json TEXT;"
    "CREATE TABLE campaign_files ("
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  name TEXT NOT NULL,"
    "  content BLOB NOT NULL,"
    "  PRIMARY KEY (campaign_id, name)"
    ");";
/* clang-format on */

/* Schema version 3: the delivery queue of webhook alerts (coordinator/webhook_queue.c,
 * store_webhook.c; docs/operations.md "Alerts"). One row per alert: the document, where it goes,
 * its retry schedule, how many attempts were made and when the next is due, so that a coordinator
 * started again on the same database resumes the deliveries still pending at their due time. */
/* clang-format off */
static const char s_schema_webhooks[] =
    "CREATE TABLE webhook_deliveries ("
    "  id INTEGER PRIMARY KEY,"
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  url TEXT NOT NULL,"
    "  payload TEXT NOT NULL,"
    "  retry_ms TEXT NOT NULL,"
    "  timeout_ms INTEGER NOT NULL,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  next_attempt_ms INTEGER,"
    "  state TEXT NOT NULL DEFAULT 'pending'"
    "    CHECK (state IN ('pending','delivered','failed')),"
    "  last_error TEXT,"
    "  created_ms INTEGER NOT NULL,"
    "  finished_ms INTEGER,"
    "  UNIQUE (campaign_id, url)"
    ");"
    "CREATE INDEX webhook_deliveries_by_state ON webhook_deliveries(state, next_attempt_ms);";
/* clang-format on */

/* Schema version 4: environment fingerprints (coordinator/store_fingerprint.c,
 * docs/timeline-store.md): the versions of what each node ran each campaign on (driver, CUDA, NCCL,
 * VBIOS, firmware, kernel, BIOS, OS, fleetburn), taken from the node's inventory when the campaign
 * first gives it a task, so that a report says what changed on which nodes since their previous
 * campaign. */
/* clang-format off */
static const char s_schema_fingerprints[] =
    "CREATE TABLE fingerprints ("
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  node TEXT NOT NULL,"
    "  component TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  time_ms INTEGER NOT NULL,"
    "  PRIMARY KEY (campaign_id, node, component)"
    ");"
    "CREATE INDEX fingerprints_by_node ON fingerprints(node, campaign_id);";
/* clang-format on */

/* Schema version 5 (Slurm, docs/operations.md "Slurm"): what each `nodes: slurm:...` selection of
 * a campaign resolved to when it was submitted, so that a resumed campaign runs on the same
 * nodes (store_selections.c). */
/* clang-format off */
static const char s_schema_node_selections[] =
    "CREATE TABLE campaign_node_selections ("
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  expr TEXT NOT NULL,"
    "  nodes TEXT NOT NULL,"
    "  PRIMARY KEY (campaign_id, expr)"
    ");";
/* clang-format on */

/* Schema version 6: named baselines of `fleetburn compare` and `run --baseline`
 * (docs/regressions.md; read and written by store_compare.c), and an index for finding a campaign's
 * predecessor of the same name (`--baseline latest`) among months of campaigns. Only these: other
 * steps add their own. */
/* clang-format off */
static const char s_schema_baselines[] =
    "CREATE TABLE baselines ("
    "  name TEXT PRIMARY KEY,"
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  set_ms INTEGER NOT NULL"
    ");"
    "CREATE INDEX campaigns_by_name ON campaigns(name, started_ms);";
/* clang-format on */

/* Schema version 7: telemetry as data (docs/timeline-store.md "Telemetry"; store_telemetry.c).
 * A series per (campaign, node, device, quantity) and its downsampled buckets (count, min, max,
 * mean), keyed by series and start so that a bucket is stored once and late samples merge into
 * it. The partial index finds the buckets of one width that retention has to merge (narrower
 * than the widest tier, 300 s) without reading the rest. Only these: other steps
 * add their own. */
/* clang-format off */
static const char s_schema_telemetry[] =
    "CREATE TABLE telemetry_series ("
    "  id INTEGER PRIMARY KEY,"
    "  campaign_id TEXT NOT NULL REFERENCES campaigns(id),"
    "  node TEXT NOT NULL,"
    "  device TEXT NOT NULL,"
    "  quantity TEXT NOT NULL,"
    "  unit TEXT NOT NULL,"
    "  UNIQUE (campaign_id, node, device, quantity)"
    ");"
    "CREATE TABLE telemetry ("
    "  series_id INTEGER NOT NULL REFERENCES telemetry_series(id),"
    "  time_ms INTEGER NOT NULL,"
    "  span_ms INTEGER NOT NULL CHECK (span_ms > 0),"
    "  n INTEGER NOT NULL CHECK (n > 0),"
    "  vmin REAL NOT NULL,"
    "  vmax REAL NOT NULL,"
    "  vmean REAL NOT NULL,"
    "  PRIMARY KEY (series_id, time_ms)"
    ") WITHOUT ROWID;"
    "CREATE INDEX telemetry_unmerged ON telemetry(span_ms, time_ms) WHERE span_ms < 300000;";
/* clang-format on */

/* s_migrations[v] takes a database from schema version v to v + 1. Append only: a released
 * step is never edited, a change is a new step (ALTER TABLE, new tables, data rewrites). */
static const char *const s_migrations[] = {
    s_schema_v1,              /* 0 -> 1 */
    s_schema_v2,              /* 1 -> 2 */
    s_schema_webhooks,        /* 2 -> 3: webhook deliveries */
    s_schema_fingerprints,    /* 3 -> 4: fingerprints */
    s_schema_node_selections, /* 4 -> 5: Slurm selections */
    s_schema_baselines,       /* 5 -> 6: named baselines */
    s_schema_telemetry,       /* 6 -> 7: telemetry samples */
};

_Static_assert(sizeof s_migrations / sizeof s_migrations[0] == STORE_SCHEMA_VERSION,
               "one migration step per schema version");

/* ---- Setting up and migrating ------------------------------------------------------------ */

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
    int err = rc == SQLITE_OK ? 0 : store__sqlite_err(self, rc, sql);
    sqlite3_finalize(st);
    return err;
}

static int s_refuse_newer(store_t *self, int64_t version)
{
    return store__fail(
        self, -ENOTSUP,
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
        return store__sqlite_err(self, rc, "writing meta");
    store__bind_text(st, 1, key);
    store__bind_text(st, 2, value);
    rc = sqlite3_step(st);
    int err = rc == SQLITE_DONE ? 0 : store__sqlite_err(self, rc, "writing meta");
    sqlite3_finalize(st);
    return err;
}

/* Brings the schema from its version to STORE_SCHEMA_VERSION in one transaction. The version is
 * read again under the write lock: another process may have migrated in the meantime. */
static int s_migrate(store_t *self)
{
    int err = store__begin(self);
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
        return store__end(self, err);
    if (version > STORE_SCHEMA_VERSION)
        return store__end(self, s_refuse_newer(self, version));
    if (version == STORE_SCHEMA_VERSION)
        return store__end(self, 0);
    if (version < 0 || (app_id != 0 && app_id != STORE_APPLICATION_ID) ||
        (version == 0 && n_tables > 0))
        return store__end(self,
                          store__fail(self, -EINVAL,
                                      "%s: not a fleetburn timeline (application_id %lld, schema "
                                      "version %lld, %lld tables)",
                                      self->path, (long long)app_id, (long long)version,
                                      (long long)n_tables));
    char what[96];
    for (int64_t v = version; v < STORE_SCHEMA_VERSION && !err; v++) {
        snprintf(what, sizeof what, "migrating schema version %lld to %lld", (long long)v,
                 (long long)v + 1);
        err = store__exec(self, s_migrations[v], what);
    }
    char *sql = xasprintf("PRAGMA user_version = %d; PRAGMA application_id = %d;",
                          STORE_SCHEMA_VERSION, STORE_APPLICATION_ID);
    if (!err)
        err = store__exec(self, sql, "setting the schema version");
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
    err = store__end(self, err);
    if (!err && version > 0)
        log_info("%s: timeline migrated from schema version %lld to %d", self->path,
                 (long long)version, STORE_SCHEMA_VERSION);
    return err;
}

int store__setup(store_t *self)
{
    sqlite3_extended_result_codes(self->db, 1);
    sqlite3_busy_timeout(self->db, STORE_BUSY_TIMEOUT_MS);
    int err = store__exec(self, "PRAGMA foreign_keys = ON", "enabling foreign keys");
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
        return store__fail(self, -EINVAL, "%s: not a fleetburn timeline (application_id %lld)",
                           self->path, (long long)app_id);
    if (version > STORE_SCHEMA_VERSION)
        return s_refuse_newer(self, version);

    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(self->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        err = store__sqlite_err(self, rc, "switching to WAL mode");
        sqlite3_finalize(st);
        return err;
    }
    const char *mode = (const char *)sqlite3_column_text(st, 0);
    if (!mode || strcmp(mode, "wal") != 0)
        log_warn("%s: journal mode is %s, not wal: readers will block the writer", self->path,
                 mode ? mode : "unknown");
    sqlite3_finalize(st);
    err = store__exec(self, "PRAGMA synchronous = NORMAL", "setting synchronous");
    if (err)
        return err;
    if (version < STORE_SCHEMA_VERSION) {
        /* A step may build a table again (s_schema_v2): foreign keys are off while it runs (the
         * pragma is a no-op inside the migration's transaction, so it is set around it). */
        err = store__exec(self, "PRAGMA foreign_keys = OFF", "disabling foreign keys");
        if (!err)
            err = s_migrate(self);
        int on = store__exec(self, "PRAGMA foreign_keys = ON", "enabling foreign keys");
        if (!err)
            err = on;
    }
    return err;
}
