/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store's writes: agents and their inventory snapshots, campaigns, stages, tasks,
 * results with their metrics and findings, and events. A write that changes several rows is one
 * IMMEDIATE transaction (a savepoint under deferred commits), so it changes all or nothing; the
 * verdict rules it applies (which verdict a task keeps when results and the coordinator disagree)
 * are in docs/timeline-store.md. The connection, the statements and the helpers are store.c's. */
#include "store_internal.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* -EINVAL (message recorded) unless verdict is a final verdict. */
static int s_check_verdict(store_t *self, fb_verdict_t verdict, const char *what)
{
    if (verdict == FB_VERDICT_NONE || (int)verdict < 0 || verdict > FB_VERDICT_MAX)
        return store__fail(self, -EINVAL, "%s: verdict %d is not a final verdict", what,
                           (int)verdict);
    return 0;
}

/* ---- Agents ------------------------------------------------------------------------------ */

int store_agent_upsert(store_t *self, const char *name, const char *state, const char *summary,
                       const char *inventory_json, uint64_t now_ms)
{
    if (!name || !state)
        return store__fail(self, -EINVAL, "agent upsert: name and state are required");
    int err = store__begin(self);
    if (err)
        return err;
    sqlite3_stmt *st = store__stmt(self, STMT_AGENT_UPSERT);
    if (!st)
        return store__end(self, -EIO);
    store__bind_text(st, 1, name);
    store__bind_text(st, 2, state);
    sqlite3_bind_int64(st, 3, (int64_t)now_ms);
    store__bind_text(st, 4, summary);
    store__bind_text(st, 5, inventory_json);
    err = store__run(self, st, "storing an agent");
    if (err || !inventory_json)
        return store__end(self, err);

    /* A snapshot only when the inventory changed. */
    st = store__stmt(self, STMT_INVENTORY_LATEST);
    if (!st)
        return store__end(self, -EIO);
    store__bind_text(st, 1, name);
    int rc = sqlite3_step(st);
    bool changed = true;
    if (rc == SQLITE_ROW) {
        const char *latest = store__col_text(st, 0);
        changed = !latest || strcmp(latest, inventory_json) != 0;
    } else if (rc != SQLITE_DONE) {
        err = store__sqlite_err(self, rc, "reading the latest inventory");
    }
    sqlite3_reset(st);
    if (!err && changed) {
        st = store__stmt(self, STMT_INVENTORY_INSERT);
        if (!st)
            return store__end(self, -EIO);
        store__bind_text(st, 1, name);
        sqlite3_bind_int64(st, 2, (int64_t)now_ms);
        store__bind_text(st, 3, inventory_json);
        err = store__run(self, st, "storing an inventory snapshot");
    }
    return store__end(self, err);
}

/* Runs a single-row UPDATE; -ENOENT (with a message naming what and key) when no row matched. */
static int s_update_one(store_t *self, sqlite3_stmt *st, const char *what, const char *key)
{
    int err = store__run(self, st, what);
    if (!err && sqlite3_changes(self->db) == 0)
        err = store__fail(self, -ENOENT, "%s: no such row '%s'", what, key);
    return err;
}

int store_agent_set_state(store_t *self, const char *name, const char *state, uint64_t now_ms)
{
    if (!name || !state)
        return store__fail(self, -EINVAL, "agent state: name and state are required");
    sqlite3_stmt *st = store__stmt(self, STMT_AGENT_SET_STATE);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, name);
    store__bind_text(st, 2, state);
    sqlite3_bind_int64(st, 3, (int64_t)now_ms);
    return s_update_one(self, st, "setting an agent's state", name);
}

int store_agent_seen(store_t *self, const char *name, uint64_t now_ms)
{
    if (!name)
        return store__fail(self, -EINVAL, "agent seen: name is required");
    sqlite3_stmt *st = store__stmt(self, STMT_AGENT_SEEN);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, name);
    sqlite3_bind_int64(st, 2, (int64_t)now_ms);
    return s_update_one(self, st, "recording an agent as seen", name);
}

/* ---- Campaigns, stages, tasks ------------------------------------------------------------ */

/* Maps a uniqueness violation to -EEXIST, other failures as store__sqlite_err does. */
static int s_insert(store_t *self, sqlite3_stmt *st, const char *what, const char *key)
{
    int rc = sqlite3_step(st);
    int err = 0;
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
        err = store__fail(self, -EEXIST, "%s: '%s' already exists", what, key);
    else if (rc != SQLITE_DONE)
        err = store__sqlite_err(self, rc, what);
    sqlite3_reset(st);
    return err;
}

int store_campaign_create(store_t *self, const char *id, const char *name, const char *source,
                          const char *yaml, uint64_t started_ms)
{
    if (!id)
        return store__fail(self, -EINVAL, "campaign create: id is required");
    sqlite3_stmt *st = store__stmt(self, STMT_CAMPAIGN_CREATE);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, id);
    store__bind_text(st, 2, name);
    store__bind_text(st, 3, source);
    store__bind_text(st, 4, yaml);
    sqlite3_bind_int64(st, 5, (int64_t)started_ms);
    return s_insert(self, st, "creating a campaign", id);
}

int store_campaign_finish(store_t *self, const char *id, fb_verdict_t verdict, uint64_t finished_ms)
{
    int err = s_check_verdict(self, verdict, "campaign finish");
    if (err)
        return err;
    if (!id)
        return store__fail(self, -EINVAL, "campaign finish: id is required");
    sqlite3_stmt *st = store__stmt(self, STMT_CAMPAIGN_FINISH);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, id);
    store__bind_verdict(st, 2, verdict);
    store__bind_time(st, 3, finished_ms);
    return s_update_one(self, st, "finishing a campaign", id);
}

bool store_campaign_state_ended(const char *state)
{
    static const char *const ends[] = {"finished", "cancelled", "interrupted", "error"};
    for (size_t i = 0; state && i < sizeof ends / sizeof ends[0]; i++)
        if (!strcmp(state, ends[i]))
            return true;
    return false;
}

int store_campaign_end(store_t *self, const char *id, const char *state, fb_verdict_t verdict,
                       uint64_t finished_ms)
{
    if (!store_campaign_state_ended(state))
        return store__fail(self, -EINVAL, "campaign end: state %s is not an end",
                           state ? state : "(none)");
    int err = s_check_verdict(self, verdict, "campaign end");
    if (err)
        return err;
    if (!id)
        return store__fail(self, -EINVAL, "campaign end: id is required");
    sqlite3_stmt *st = store__stmt(self, STMT_CAMPAIGN_END);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, id);
    store__bind_text(st, 2, state);
    store__bind_verdict(st, 3, verdict);
    store__bind_time(st, 4, finished_ms);
    return s_update_one(self, st, "ending a campaign", id);
}

int store_campaign_add_file(store_t *self, const char *campaign_id, const char *name,
                            const char *content, size_t len)
{
    if (!campaign_id || !name || (!content && len))
        return store__fail(self, -EINVAL, "campaign file: campaign id and name are required");
    sqlite3_stmt *st = store__stmt(self, STMT_FILE_ADD);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, campaign_id);
    store__bind_text(st, 2, name);
    sqlite3_bind_blob64(st, 3, len ? content : "", len, SQLITE_TRANSIENT);
    int err = store__run(self, st, "storing a campaign's file");
    if (err == 0 && sqlite3_changes(self->db) == 0)
        err = store__fail(self, -ENOENT, "campaign file %s: no campaign %s", name, campaign_id);
    return err;
}

int store_stage_plan(store_t *self, int64_t stage_id, uint64_t seed, const char *const *nodes,
                     size_t n)
{
    if (!nodes && n)
        return store__fail(self, -EINVAL, "stage plan: nodes missing");
    fb_json_t *json = fb_json_new(false);
    fb_json_array_begin(json, NULL);
    for (size_t i = 0; i < n; i++)
        fb_json_string(json, NULL, nodes[i]);
    fb_json_array_end(json);
    sqlite3_stmt *st = store__stmt(self, STMT_STAGE_PLAN);
    int err = -EIO;
    if (st) {
        sqlite3_bind_int64(st, 1, stage_id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)seed); /* the bits, not the value */
        store__bind_text(st, 3, fb_json_text(json));
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)stage_id);
        err = s_update_one(self, st, "storing a stage's plan", key);
    }
    fb_json_destroy(&json);
    return err;
}

int store_agents_mark_unheard(store_t *self, uint64_t now_ms)
{
    sqlite3_stmt *st = store__stmt(self, STMT_AGENT_UNHEARD);
    if (!st)
        return -EIO;
    store__bind_time(st, 1, now_ms);
    int err = store__run(self, st, "marking agents not heard since the start");
    return err ? err : sqlite3_changes(self->db);
}

int store_campaign_interrupt_stale(store_t *self, uint64_t now_ms)
{
    sqlite3_stmt *st = store__stmt(self, STMT_CAMPAIGN_INTERRUPT);
    if (!st)
        return -EIO;
    store__bind_time(st, 1, now_ms);
    int err = store__run(self, st, "interrupting stale campaigns");
    return err ? err : sqlite3_changes(self->db);
}

int store_stage_create(store_t *self, const char *campaign_id, int idx, const char *name,
                       const char *workload, const char *params_json, const char *on_fail,
                       uint64_t timeout_ms, int64_t *stage_id_out)
{
    if (stage_id_out)
        *stage_id_out = 0;
    if (!campaign_id)
        return store__fail(self, -EINVAL, "stage create: campaign id is required");
    sqlite3_stmt *st;
    if (params_json) {
        st = store__stmt(self, STMT_JSON_IS_OBJECT);
        if (!st)
            return -EIO;
        store__bind_text(st, 1, params_json);
        int rc = sqlite3_step(st);
        int is_object = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
        int err = rc == SQLITE_ROW ? 0 : store__sqlite_err(self, rc, "checking stage parameters");
        sqlite3_reset(st);
        if (err)
            return err;
        if (!is_object)
            return store__fail(self, -EINVAL, "stage %d (%s): parameters are not a JSON object",
                               idx, name ? name : "unnamed");
    }
    st = store__stmt(self, STMT_STAGE_CREATE);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, campaign_id);
    sqlite3_bind_int(st, 2, idx);
    store__bind_text(st, 3, name);
    store__bind_text(st, 4, workload);
    store__bind_text(st, 5, params_json);
    store__bind_text(st, 6, on_fail);
    store__bind_time(st, 7, timeout_ms);
    int err = store__run(self, st, "creating a stage");
    if (err)
        return err;
    if (sqlite3_changes(self->db) == 0)
        return store__fail(self, -ENOENT, "creating a stage: no campaign '%s'", campaign_id);
    if (stage_id_out)
        *stage_id_out = sqlite3_last_insert_rowid(self->db);
    return 0;
}

int store_stage_start(store_t *self, int64_t stage_id, uint64_t now_ms)
{
    sqlite3_stmt *st = store__stmt(self, STMT_STAGE_START);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, stage_id);
    store__bind_time(st, 2, now_ms);
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)stage_id);
    return s_update_one(self, st, "starting a stage", key);
}

int store_stage_finish(store_t *self, int64_t stage_id, fb_verdict_t verdict, uint64_t now_ms)
{
    int err = s_check_verdict(self, verdict, "stage finish");
    if (err)
        return err;
    sqlite3_stmt *st = store__stmt(self, STMT_STAGE_FINISH);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, stage_id);
    store__bind_verdict(st, 2, verdict);
    store__bind_time(st, 3, now_ms);
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)stage_id);
    return s_update_one(self, st, "finishing a stage", key);
}

int store_task_create(store_t *self, const char *task_id, const char *campaign_id, int64_t stage_id,
                      const char *const *nodes, size_t n_nodes, uint64_t now_ms)
{
    if (!task_id || !campaign_id || (n_nodes && !nodes))
        return store__fail(self, -EINVAL,
                           "task create: task id, campaign id and nodes are required");
    fb_json_t *json = fb_json_new(false);
    fb_json_array_begin(json, NULL);
    for (size_t i = 0; i < n_nodes; i++)
        fb_json_string(json, NULL, nodes[i]);
    fb_json_array_end(json);
    sqlite3_stmt *st = store__stmt(self, STMT_TASK_CREATE);
    int err = -EIO;
    if (st) {
        store__bind_text(st, 1, task_id);
        store__bind_text(st, 2, campaign_id);
        sqlite3_bind_int64(st, 3, stage_id);
        store__bind_text(st, 4, fb_json_text(json));
        store__bind_time(st, 5, now_ms);
        err = s_insert(self, st, "creating a task", task_id);
        if (!err && sqlite3_changes(self->db) == 0)
            err = store__fail(self, -ENOENT, "creating task '%s': no stage %lld in campaign '%s'",
                              task_id, (long long)stage_id, campaign_id);
    }
    fb_json_destroy(&json);
    return err;
}

int store_task_finish(store_t *self, const char *task_id, fb_verdict_t verdict, const char *error,
                      uint64_t now_ms)
{
    int err = s_check_verdict(self, verdict, "task finish");
    if (err)
        return err;
    if (!task_id)
        return store__fail(self, -EINVAL, "task finish: task id is required");
    err = store__begin(self);
    if (err)
        return err;
    sqlite3_stmt *st = store__stmt(self, STMT_TASK_FINISH);
    if (!st)
        return store__end(self, -EIO);
    store__bind_text(st, 1, task_id);
    store__bind_verdict(st, 2, verdict);
    store__bind_text(st, 3, error);
    store__bind_time(st, 4, now_ms);
    sqlite3_bind_int(st, 5, !fb_verdict_ok(verdict));
    err = store__run(self, st, "finishing a task");
    if (!err && sqlite3_changes(self->db) == 0) {
        int exists = store__task_exists(self, task_id);
        if (exists < 0)
            err = exists;
        else if (exists)
            err = store__fail(self, -EALREADY, "task '%s' already has a verdict", task_id);
        else
            err = store__fail(self, -ENOENT, "finishing a task: no task '%s'", task_id);
    }
    /* -EALREADY changed nothing: the transaction may as well commit. */
    if (err == -EALREADY) {
        store__commit(self);
        return err;
    }
    return store__end(self, err);
}

int store_result_insert(store_t *self, const fb_result_t *result, uint64_t received_ms)
{
    if (!result || !result->result_id || !result->task_id)
        return store__fail(self, -EINVAL, "result insert: result id and task id are required");
    int err = s_check_verdict(self, result->verdict, "result insert");
    if (err)
        return err;
    err = store__begin(self);
    if (err)
        return err;
    sqlite3_stmt *st = store__stmt(self, STMT_RESULT_INSERT);
    if (!st)
        return store__end(self, -EIO);
    store__bind_text(st, 1, result->result_id);
    store__bind_text(st, 2, result->task_id);
    store__bind_text(st, 3, result->node);
    store__bind_verdict(st, 4, result->verdict);
    store__bind_text(st, 5, result->error);
    store__bind_time(st, 6, result->started_ms);
    store__bind_time(st, 7, result->finished_ms);
    sqlite3_bind_int64(st, 8, (int64_t)received_ms);
    err = store__run(self, st, "storing a result");
    if (!err && sqlite3_changes(self->db) == 0) {
        store__rollback(self);
        return store__fail(self, -EEXIST, "result '%s' is already stored", result->result_id);
    }
    for (size_t i = 0; !err && i < result->n_metrics; i++) {
        const fb_metric_t *m = &result->metrics[i];
        if (!(st = store__stmt(self, STMT_METRIC_INSERT)))
            return store__end(self, -EIO);
        store__bind_text(st, 1, result->result_id);
        store__bind_text(st, 2, m->name ? m->name : "");
        if (isfinite(m->value))
            sqlite3_bind_double(st, 3, m->value);
        else
            sqlite3_bind_null(st, 3);
        store__bind_text(st, 4, m->unit);
        err = store__run(self, st, "storing a metric");
    }
    for (size_t i = 0; !err && i < result->n_findings; i++) {
        const fb_finding_t *f = &result->findings[i];
        if (!(st = store__stmt(self, STMT_FINDING_INSERT)))
            return store__end(self, -EIO);
        store__bind_text(st, 1, result->result_id);
        store__bind_text(st, 2, f->part ? f->part : "");
        store__bind_text(st, 3, f->kind ? f->kind : "");
        store__bind_text(st, 4, f->what);
        err = store__run(self, st, "storing a finding");
    }
    if (!err) {
        if (!(st = store__stmt(self, STMT_TASK_FROM_RESULT)))
            return store__end(self, -EIO);
        store__bind_text(st, 1, result->task_id);
        store__bind_verdict(st, 2, result->verdict);
        store__bind_text(st, 3, result->error);
        store__bind_time(st, 4, received_ms);
        sqlite3_bind_int(st, 5, !fb_verdict_ok(result->verdict));
        store__bind_text(st, 6, result->node && *result->node ? result->node : NULL);
        err = store__run(self, st, "setting a task's verdict from its result");
    }
    return store__end(self, err);
}

int store_event(store_t *self, uint64_t time_ms, const char *campaign_id, const char *task_id,
                const char *node, const char *kind, const char *message)
{
    if (!kind)
        return store__fail(self, -EINVAL, "event: kind is required");
    sqlite3_stmt *st = store__stmt(self, STMT_EVENT_INSERT);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, (int64_t)time_ms);
    store__bind_text(st, 2, campaign_id);
    store__bind_text(st, 3, task_id);
    store__bind_text(st, 4, node);
    store__bind_text(st, 5, kind);
    store__bind_text(st, 6, message);
    return store__run(self, st, "storing an event");
}
