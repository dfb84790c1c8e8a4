/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store's reads: a whole campaign (stages, tasks, results with metrics and findings)
 * loaded from one snapshot, the latest campaign, task membership (may this node speak for this
 * task), and the readers that walk campaigns, agents, events and the fleet's software versions
 * row by row. The connection, the statements and the helpers are store.c's. */
#include "store_internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- Lookups ----------------------------------------------------------------------------- */

int store_latest_campaign(store_t *self, char **id_out)
{
    *id_out = NULL;
    sqlite3_stmt *st = store__stmt(self, STMT_CAMPAIGN_LATEST);
    if (!st)
        return -EIO;
    int rc = sqlite3_step(st);
    int err = 0;
    if (rc == SQLITE_ROW)
        *id_out = store__col_dup(st, 0);
    else if (rc == SQLITE_DONE)
        err = store__fail(self, -ENOENT, "the timeline holds no campaign");
    else
        err = store__sqlite_err(self, rc, "finding the latest campaign");
    sqlite3_reset(st);
    return err;
}

/* 1 when the task exists, 0 when not, or -errno. */
int store__task_exists(store_t *self, const char *task_id)
{
    sqlite3_stmt *st = store__stmt(self, STMT_TASK_EXISTS);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, task_id);
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_ROW    ? 1
              : rc == SQLITE_DONE ? 0
                                  : store__sqlite_err(self, rc, "looking up a task");
    sqlite3_reset(st);
    return ret;
}

int store_task_member(store_t *self, const char *task_id, const char *node)
{
    sqlite3_stmt *st = store__stmt(self, STMT_TASK_MEMBER);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, task_id);
    store__bind_text(st, 2, node);
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_ROW    ? sqlite3_column_int(st, 0)
              : rc == SQLITE_DONE ? 1
                                  : store__sqlite_err(self, rc, "looking up a task's members");
    sqlite3_reset(st);
    if (ret == 1 && rc == SQLITE_DONE) {
        int exists = store__task_exists(self, task_id);
        return exists < 0 ? exists : exists ? -EPERM : -ENOENT;
    }
    return ret;
}

/* ---- Reading ----------------------------------------------------------------------------- */

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
    for (size_t i = 0; i < stage->n_nodes; i++)
        free(stage->nodes[i]);
    free(stage->nodes);
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
    sqlite3_stmt *st = store__stmt(self, STMT_METRICS_OF);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, r->result_id);
    int more;
    while ((more = store__step(self, st, "reading metrics")) > 0) {
        double value =
            sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 1);
        fb_result_add_metric(r, store__col_text(st, 0), value, store__col_text(st, 2));
    }
    if (more < 0)
        return more;
    if (!(st = store__stmt(self, STMT_FINDINGS_OF)))
        return -EIO;
    store__bind_text(st, 1, r->result_id);
    while ((more = store__step(self, st, "reading findings")) > 0)
        fb_result_add_finding(r, store__col_text(st, 0), store__col_text(st, 1),
                              store__col_text(st, 2));
    return more;
}

/* The names of a JSON array of node names (a task's nodes, a stage's plan). */
static int s_json_names(store_t *self, const char *json, char ***names, size_t *n)
{
    sqlite3_stmt *st = store__stmt(self, STMT_TASK_NODES);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, json ? json : "[]");
    int more;
    while ((more = store__step(self, st, "reading node names")) > 0) {
        char **node = s_push(names, n, sizeof **names);
        const char *text = store__col_text(st, 0);
        *node = xstrdup(text ? text : "");
    }
    return more < 0 ? more : 0;
}

static int s_load_task(store_t *self, store_task_t *task, const char *nodes_json)
{
    int more = s_json_names(self, nodes_json, &task->nodes, &task->n_nodes);
    if (more < 0)
        return more;
    sqlite3_stmt *st;

    if (!(st = store__stmt(self, STMT_RESULTS_OF)))
        return -EIO;
    store__bind_text(st, 1, task->id);
    while ((more = store__step(self, st, "reading results")) > 0) {
        store_result_t *sr = s_push(&task->results, &task->n_results, sizeof *task->results);
        fb_result_t *r = sr->result = fb_result_new();
        fb_result_set_ids(r, store__col_text(st, 0), task->id, store__col_text(st, 1));
        r->verdict = store__col_verdict(st, 2);
        r->error = store__col_dup(st, 3);
        r->started_ms = store__col_time(st, 4);
        r->finished_ms = store__col_time(st, 5);
        sr->received_ms = store__col_time(st, 6);
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
    sqlite3_stmt *st = store__stmt(self, STMT_TASKS_OF);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, stage->id);
    char **nodes_json = NULL;
    size_t n_json = 0;
    int more;
    while ((more = store__step(self, st, "reading tasks")) > 0) {
        store_task_t *task = s_push(&stage->tasks, &stage->n_tasks, sizeof *stage->tasks);
        task->id = store__col_dup(st, 0);
        task->state = store__col_dup(st, 1);
        task->verdict = store__col_verdict(st, 2);
        task->error = store__col_dup(st, 3);
        task->started_ms = store__col_time(st, 4);
        task->finished_ms = store__col_time(st, 5);
        char **json = s_push(&nodes_json, &n_json, sizeof *nodes_json);
        *json = store__col_dup(st, 6);
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
    c->id = store__col_dup(st, 0);
    c->name = store__col_dup(st, 1);
    c->source = store__col_dup(st, 2);
    c->yaml = store__col_dup(st, 3);
    c->state = store__col_dup(st, 4);
    c->verdict = store__col_verdict(st, 5);
    c->started_ms = store__col_time(st, 6);
    c->finished_ms = store__col_time(st, 7);
}

static int s_campaign_load(store_t *self, const char *id, store_campaign_t *c)
{
    sqlite3_stmt *st = store__stmt(self, STMT_CAMPAIGN_GET);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, id);
    int more = store__step(self, st, "reading a campaign");
    if (more <= 0)
        return more < 0 ? more : store__fail(self, -ENOENT, "no campaign '%s'", id);
    s_campaign_row(st, c);
    sqlite3_reset(st);

    if (!(st = store__stmt(self, STMT_STAGES_OF)))
        return -EIO;
    char **plans_json = NULL; /* read after the stages statement is done with */
    store__bind_text(st, 1, id);
    while ((more = store__step(self, st, "reading stages")) > 0) {
        store_stage_t *stage = s_push(&c->stages, &c->n_stages, sizeof *c->stages);
        stage->id = sqlite3_column_int64(st, 0);
        stage->idx = sqlite3_column_int(st, 1);
        stage->name = store__col_dup(st, 2);
        stage->workload = store__col_dup(st, 3);
        stage->on_fail = store__col_dup(st, 4);
        stage->params_json = store__col_dup(st, 5);
        stage->timeout_ms = store__col_time(st, 6);
        stage->started_ms = store__col_time(st, 7);
        stage->finished_ms = store__col_time(st, 8);
        stage->verdict = store__col_verdict(st, 9);
        stage->planned = sqlite3_column_type(st, 11) != SQLITE_NULL;
        stage->seed = (uint64_t)sqlite3_column_int64(st, 10);
        plans_json = xrealloc(plans_json, c->n_stages * sizeof *plans_json);
        plans_json[c->n_stages - 1] = store__col_dup(st, 11);
    }
    int err = more;
    for (size_t i = 0; i < c->n_stages; i++) {
        if (!err && plans_json[i])
            err = s_json_names(self, plans_json[i], &c->stages[i].nodes, &c->stages[i].n_nodes);
        free(plans_json[i]);
    }
    free(plans_json);
    for (size_t i = 0; !err && i < c->n_stages; i++)
        err = s_load_stage(self, &c->stages[i]);
    return err;
}

int store_campaign_load(store_t *self, const char *id, store_campaign_t **out)
{
    *out = NULL;
    if (!id)
        return store__fail(self, -EINVAL, "campaign load: id is required");
    int err = store__begin_read(self);
    if (err)
        return err;
    store_campaign_t *c = xcalloc(1, sizeof *c);
    err = store__end(self, s_campaign_load(self, id, c));
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
    sqlite3_stmt *st = store__stmt(self, STMT_CAMPAIGN_LIST);
    if (!st)
        return -EIO;
    int more, ret = 0;
    while (!ret && (more = store__step(self, st, "listing campaigns")) > 0) {
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
    sqlite3_stmt *st = store__stmt(self, STMT_AGENT_LIST);
    if (!st)
        return -EIO;
    int more, ret = 0;
    while (!ret && (more = store__step(self, st, "listing agents")) > 0) {
        store_agent_t a = {
            .name = store__col_text(st, 0),
            .state = store__col_text(st, 1),
            .summary = store__col_text(st, 2),
            .inventory_json = store__col_text(st, 3),
            .first_seen_ms = store__col_time(st, 4),
            .last_seen_ms = store__col_time(st, 5),
            .state_since_ms = store__col_time(st, 6),
        };
        ret = cb(&a, arg);
    }
    sqlite3_reset(st);
    return ret ? ret : more;
}

int store_event_foreach(store_t *self, const char *campaign_id,
                        int (*cb)(const store_event_t *event, void *arg), void *arg)
{
    sqlite3_stmt *st = store__stmt(self, campaign_id ? STMT_EVENTS_OF : STMT_EVENTS_ALL);
    if (!st)
        return -EIO;
    if (campaign_id)
        store__bind_text(st, 1, campaign_id);
    int more, ret = 0;
    while (!ret && (more = store__step(self, st, "listing events")) > 0) {
        store_event_t e = {
            .id = sqlite3_column_int64(st, 0),
            .time_ms = store__col_time(st, 1),
            .campaign_id = store__col_text(st, 2),
            .task_id = store__col_text(st, 3),
            .node = store__col_text(st, 4),
            .kind = store__col_text(st, 5),
            .message = store__col_text(st, 6),
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
        "SELECT sw.key, sw.value, a.name"
        " FROM agents a, json_each(a.inventory_json, '$.software') sw"
        " WHERE json_valid(a.inventory_json) AND a.name IN (SELECT DISTINCT n.value FROM tasks t,"
        " json_each(t.nodes_json) n WHERE t.campaign_id = ?1)"
        " ORDER BY sw.key, sw.value, a.name";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK) {
        log_error("store: listing software versions: %s", sqlite3_errmsg(self->db));
        return -EIO;
    }
    store__bind_text(st, 1, campaign_id);
    int more, ret = 0;
    while (!ret && (more = store__step(self, st, "listing software versions")) > 0)
        ret = cb(store__col_text(st, 0), store__col_text(st, 1), store__col_text(st, 2), arg);
    sqlite3_finalize(st);
    return ret ? ret : more;
}

int store_campaign_files(store_t *self, const char *campaign_id, store_file_t **files_out,
                         size_t *n_out)
{
    *files_out = NULL;
    *n_out = 0;
    sqlite3_stmt *st = store__stmt(self, STMT_FILES_OF);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, campaign_id);
    int more;
    while ((more = store__step(self, st, "reading a campaign's files")) > 0) {
        store_file_t *f = s_push(files_out, n_out, sizeof **files_out);
        const char *name = store__col_text(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        const void *blob = sqlite3_column_blob(st, 1);
        f->name = xstrdup(name ? name : "");
        f->content = xmalloc(len + 1);
        if (len)
            memcpy(f->content, blob, len);
        f->content[len] = '\0';
        f->len = len;
    }
    sqlite3_reset(st);
    if (more < 0) {
        store_files_free(*files_out, *n_out);
        *files_out = NULL;
        *n_out = 0;
    }
    return more < 0 ? more : 0;
}

void store_files_free(store_file_t *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(files[i].name);
        free(files[i].content);
    }
    free(files);
}
