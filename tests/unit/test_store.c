/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the timeline store: schema creation, version refusal, WAL mode, round trips of
 * campaigns, stages, tasks and results, the task verdict rules, idempotent result insertion,
 * agents with inventory history, events, stale campaigns, a reader beside a writer, and deferred
 * commits. Every test works on its own database in a fresh temporary directory. */
#include "store.h"
#include "util.h"
#include "store_fixture.h"

#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef store_fixture_t fixture_t;

static char *s_query_text(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *v = t ? xstrdup((const char *)t) : NULL;
    sqlite3_finalize(st);
    return v;
}

/* One campaign "c1" with stage 0 "mem" and task "t1" on node-a. */
static int64_t s_campaign(store_t *store)
{
    assert_int_equal(
        store_campaign_create(store, "c1", "nightly", "rack4.yaml", "stages: []", 1000), 0);
    int64_t stage = 0;
    assert_int_equal(store_stage_create(store, "c1", 0, "mem", "memtest", "{\"size\":\"1GiB\"}",
                                        "continue", 60000, &stage),
                     0);
    assert_true(stage > 0);
    const char *nodes[] = {"node-a"};
    assert_int_equal(store_task_create(store, "t1", "c1", stage, nodes, 1, 1100), 0);
    return stage;
}

static fb_result_t *s_result(const char *result_id, const char *task_id, const char *node,
                             fb_verdict_t verdict)
{
    fb_result_t *r = fb_result_new();
    fb_result_set_ids(r, result_id, task_id, node);
    r->verdict = verdict;
    r->started_ms = 1200;
    r->finished_ms = 1900;
    return r;
}

/* s_result inserted at time at, which must succeed. */
static void s_insert(store_t *store, const char *result_id, const char *task_id, const char *node,
                     fb_verdict_t verdict, uint64_t at)
{
    store_fixture_result(store, &(store_fixture_result_t){.result_id = result_id,
                                                          .task_id = task_id,
                                                          .node = node,
                                                          .verdict = verdict,
                                                          .started_ms = 1200,
                                                          .finished_ms = 1900,
                                                          .stored_ms = at});
}

static fb_verdict_t s_task_verdict(store_t *store, const char *campaign, const char *task_id)
{
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(store, campaign, &c), 0);
    fb_verdict_t v = FB_VERDICT_NONE;
    bool found = false;
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks; t++)
            if (!strcmp(c->stages[s].tasks[t].id, task_id)) {
                v = c->stages[s].tasks[t].verdict;
                found = true;
            }
    store_campaign_destroy(&c);
    assert_true(found);
    return v;
}

static void test_open_schema_and_wal(void **state)
{
    fixture_t *fx = *state;
    sqlite3 *db = store_fixture_raw(fx);
    char *mode = s_query_text(db, "PRAGMA journal_mode");
    assert_string_equal(mode, "wal");
    free(mode);
    assert_int_equal(store_fixture_query_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(store_fixture_query_int(db, "PRAGMA application_id"), STORE_APPLICATION_ID);
    char *v = s_query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    char want[16];
    snprintf(want, sizeof want, "%d", STORE_SCHEMA_VERSION);
    assert_string_equal(v, want);
    free(v);
    sqlite3_close(db);
    assert_string_equal(store_path(fx->store), fx->path);

    /* A second connection opens the same database without migrating again. */
    store_t *other = NULL;
    char *err = NULL;
    assert_int_equal(store_open_existing(fx->path, &other, &err), 0);
    assert_null(err);
    store_destroy(&other);
    assert_null(other);
    store_destroy(&other);
    store_destroy(NULL);
}

static void test_refuses_newer_schema(void **state)
{
    fixture_t *fx = *state;
    store_destroy(&fx->store);
    sqlite3 *db = store_fixture_raw(fx);
    char *sql = xasprintf("PRAGMA user_version = %d", STORE_SCHEMA_VERSION + 1);
    store_fixture_exec(db, sql); /* one newer than this build, whatever this build's is */
    free(sql);
    sqlite3_close(db);

    char *err = NULL;
    store_t *store = (store_t *)0x1;
    int rc = store_open(fx->path, &store, &err);
    assert_int_equal(rc, -ENOTSUP);
    assert_null(store);
    assert_non_null(err);
    char newer[32], own[32];
    snprintf(newer, sizeof newer, "schema version %d", STORE_SCHEMA_VERSION + 1);
    assert_non_null(strstr(err, newer));
    snprintf(own, sizeof own, "schema version %d", STORE_SCHEMA_VERSION);
    assert_non_null(strstr(err, own));
    free(err);

    /* Nothing was changed: the version is still the newer one. */
    db = store_fixture_raw(fx);
    assert_int_equal(store_fixture_query_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION + 1);
    sqlite3_close(db);
}

static void test_refuses_foreign_database(void **state)
{
    fixture_t *fx = *state;
    char *other = xasprintf("%s/other.db", fx->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
    store_fixture_exec(db, "CREATE TABLE accounts(id INTEGER)");
    sqlite3_close(db);
    store_t *store = NULL;
    char *err = NULL;
    assert_int_equal(store_open(other, &store, &err), -EINVAL);
    assert_non_null(strstr(err, "not a fleetburn timeline"));
    free(err);
    unlink(other);
    free(other);

    /* Another application's database with a version of its own. */
    other = xasprintf("%s/app.db", fx->dir);
    assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
    store_fixture_exec(db, "PRAGMA application_id = 1234; PRAGMA user_version = 1");
    sqlite3_close(db);
    assert_int_equal(store_open(other, &store, &err), -EINVAL);
    assert_non_null(strstr(err, "not a fleetburn timeline"));
    free(err);
    unlink(other);
    free(other);

    /* Not a database at all. */
    char *junk = xasprintf("%s/junk.db", fx->dir);
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("this is not a database, just some text that is long enough to have a header....", f);
    fclose(f);
    assert_true(store_open(junk, &store, &err) < 0);
    assert_null(store);
    assert_non_null(err);
    free(err);
    unlink(junk);
    free(junk);

    char *missing = xasprintf("%s/missing.db", fx->dir);
    assert_int_equal(store_open_existing(missing, &store, &err), -ENOENT);
    assert_non_null(err);
    free(err);
    assert_int_equal(access(missing, F_OK), -1);
    free(missing);
}

static void test_round_trip(void **state)
{
    fixture_t *fx = *state;
    int64_t stage = s_campaign(fx->store);
    assert_int_equal(store_stage_start(fx->store, stage, 1050), 0);
    fb_result_t *r = s_result("r1", "t1", "node-a", FB_VERDICT_FAIL);
    fb_result_add_metric(r, "bandwidth_mbs", 1234.5, "MB/s");
    fb_result_add_metric(r, "miscompares", 3, "");
    fb_result_add_finding(r, "node-a/CPU_SrcID#0_MC#0_Chan#1_DIMM#0", "dimm", "3 miscompares");
    fb_result_set_error(r, "%s", "miscompares found");
    assert_int_equal(store_result_insert(fx->store, r, 2000), 0);
    fb_result_destroy(&r);
    assert_int_equal(store_stage_finish(fx->store, stage, FB_VERDICT_FAIL, 2100), 0);
    assert_int_equal(store_campaign_finish(fx->store, "c1", FB_VERDICT_FAIL, 2200), 0);

    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(fx->store, "c1", &c), 0);
    assert_string_equal(c->id, "c1");
    assert_string_equal(c->name, "nightly");
    assert_string_equal(c->source, "rack4.yaml");
    assert_string_equal(c->yaml, "stages: []");
    assert_string_equal(c->state, "finished");
    assert_int_equal(c->verdict, FB_VERDICT_FAIL);
    assert_int_equal(c->started_ms, 1000);
    assert_int_equal(c->finished_ms, 2200);
    assert_int_equal(c->n_stages, 1);
    const store_stage_t *s = &c->stages[0];
    assert_int_equal(s->id, stage);
    assert_string_equal(s->name, "mem");
    assert_string_equal(s->workload, "memtest");
    assert_string_equal(s->params_json, "{\"size\":\"1GiB\"}");
    assert_string_equal(s->on_fail, "continue");
    assert_int_equal(s->timeout_ms, 60000);
    assert_int_equal(s->started_ms, 1050);
    assert_int_equal(s->finished_ms, 2100);
    assert_int_equal(s->verdict, FB_VERDICT_FAIL);
    assert_int_equal(s->n_tasks, 1);
    const store_task_t *t = &s->tasks[0];
    assert_string_equal(t->id, "t1");
    assert_int_equal(t->n_nodes, 1);
    assert_string_equal(t->nodes[0], "node-a");
    assert_string_equal(t->state, "finished");
    assert_int_equal(t->verdict, FB_VERDICT_FAIL);
    assert_string_equal(t->error, "miscompares found");
    assert_int_equal(t->started_ms, 1100);
    assert_int_equal(t->finished_ms, 2000);
    assert_int_equal(t->n_results, 1);
    const fb_result_t *back = t->results[0].result;
    assert_int_equal(t->results[0].received_ms, 2000);
    assert_string_equal(back->result_id, "r1");
    assert_string_equal(back->node, "node-a");
    assert_int_equal(back->started_ms, 1200);
    assert_int_equal(back->finished_ms, 1900);
    assert_int_equal(back->n_metrics, 2);
    assert_string_equal(back->metrics[0].name, "bandwidth_mbs");
    assert_true(back->metrics[0].value == 1234.5);
    assert_string_equal(back->metrics[0].unit, "MB/s");
    assert_int_equal(back->n_findings, 1);
    assert_string_equal(back->findings[0].kind, "dimm");
    assert_string_equal(back->findings[0].what, "3 miscompares");
    store_campaign_destroy(&c);
    assert_null(c);
    store_campaign_destroy(&c);

    assert_int_equal(store_campaign_load(fx->store, "nope", &c), -ENOENT);
    assert_null(c);
}

static void test_create_errors(void **state)
{
    fixture_t *fx = *state;
    int64_t stage = s_campaign(fx->store);
    int64_t id = 0;
    assert_int_equal(store_campaign_create(fx->store, "c1", "again", NULL, NULL, 5), -EEXIST);
    assert_non_null(strstr(store_errmsg(fx->store), "c1"));
    assert_int_equal(store_stage_create(fx->store, "nope", 0, "s", "w", NULL, NULL, 0, &id),
                     -ENOENT);
    assert_int_equal(store_stage_create(fx->store, "c1", 1, "s", "w", "[1,2]", NULL, 0, &id),
                     -EINVAL);
    assert_int_equal(store_stage_create(fx->store, "c1", 1, "s", "w", "{bad", NULL, 0, &id),
                     -EINVAL);
    assert_int_equal(store_stage_create(fx->store, "c1", 1, "s", "w", NULL, NULL, 0, NULL), 0);
    const char *nodes[] = {"node-a", "node-b"};
    assert_int_equal(store_task_create(fx->store, "t1", "c1", stage, nodes, 2, 1), -EEXIST);
    assert_int_equal(store_task_create(fx->store, "t9", "c1", stage + 100, nodes, 2, 1), -ENOENT);
    assert_int_equal(store_campaign_create(fx->store, "c2", NULL, NULL, NULL, 5), 0);
    /* A stage of another campaign. */
    assert_int_equal(store_task_create(fx->store, "t9", "c2", stage, nodes, 2, 1), -ENOENT);
    assert_int_equal(store_stage_start(fx->store, 999, 1), -ENOENT);
    assert_int_equal(store_stage_finish(fx->store, 999, FB_VERDICT_PASS, 1), -ENOENT);
    assert_int_equal(store_stage_finish(fx->store, stage, FB_VERDICT_NONE, 1), -EINVAL);
    assert_int_equal(store_campaign_finish(fx->store, "nope", FB_VERDICT_PASS, 1), -ENOENT);
    assert_int_equal(store_task_finish(fx->store, "nope", FB_VERDICT_LOST, NULL, 1), -ENOENT);
    assert_int_equal(store_task_finish(fx->store, "t1", FB_VERDICT_NONE, NULL, 1), -EINVAL);
}

static void test_result_idempotent(void **state)
{
    fixture_t *fx = *state;
    s_campaign(fx->store);
    fb_result_t *r = s_result("r1", "t1", "node-a", FB_VERDICT_PASS);
    fb_result_add_metric(r, "bandwidth_mbs", 1000, "MB/s");
    fb_result_add_metric(r, "elapsed_s", 5, "s");
    fb_result_add_finding(r, "node-a", "node", "warm");
    assert_int_equal(store_result_insert(fx->store, r, 2000), 0);
    /* The agent re-sends after a lost ack: same id, even with different content. */
    r->verdict = FB_VERDICT_FAIL;
    fb_result_add_metric(r, "extra", 1, "");
    assert_int_equal(store_result_insert(fx->store, r, 3000), -EEXIST);
    assert_int_equal(store_result_insert(fx->store, r, 3000), -EEXIST);
    fb_result_destroy(&r);

    sqlite3 *db = store_fixture_raw(fx);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM results"), 1);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM metrics"), 2);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM findings"), 1);
    sqlite3_close(db);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t1"), FB_VERDICT_PASS);

    /* Bad results are refused. */
    r = s_result(NULL, "t1", "node-a", FB_VERDICT_PASS);
    assert_int_equal(store_result_insert(fx->store, r, 1), -EINVAL);
    fb_result_destroy(&r);
    r = s_result("r2", "t1", "node-a", FB_VERDICT_NONE);
    assert_int_equal(store_result_insert(fx->store, r, 1), -EINVAL);
    fb_result_destroy(&r);
    /* A result for a task this store never saw is kept. */
    s_insert(fx->store, "r3", "t-unknown", "node-z", FB_VERDICT_PASS, 1);
}

static void test_task_verdict_not_overwritten(void **state)
{
    fixture_t *fx = *state;
    int64_t stage = s_campaign(fx->store);

    /* Coordinator decides timeout; a late passing result does not change it. */
    assert_int_equal(store_task_finish(fx->store, "t1", FB_VERDICT_TIMEOUT, "deadline", 5000), 0);
    s_insert(fx->store, "r1", "t1", "node-a", FB_VERDICT_PASS, 6000);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t1"), FB_VERDICT_TIMEOUT);
    assert_int_equal(store_task_finish(fx->store, "t1", FB_VERDICT_LOST, "x", 7000), -EALREADY);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t1"), FB_VERDICT_TIMEOUT);

    /* A failing result is not undone by a later passing one. */
    const char *a[] = {"node-a"};
    assert_int_equal(store_task_create(fx->store, "t2", "c1", stage, a, 1, 1), 0);
    s_insert(fx->store, "r2", "t2", "node-a", FB_VERDICT_FAIL, 2);
    s_insert(fx->store, "r3", "t2", "node-a", FB_VERDICT_PASS, 3);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t2"), FB_VERDICT_FAIL);

    /* A single-node task that passed keeps its pass against a coordinator timeout. */
    assert_int_equal(store_task_create(fx->store, "t3", "c1", stage, a, 1, 1), 0);
    s_insert(fx->store, "r4", "t3", "node-a", FB_VERDICT_PASS, 2);
    assert_int_equal(store_task_finish(fx->store, "t3", FB_VERDICT_TIMEOUT, NULL, 3), -EALREADY);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t3"), FB_VERDICT_PASS);

    /* A group task: one node's failure fails it even after another node passed. */
    const char *ab[] = {"node-a", "node-b"};
    assert_int_equal(store_task_create(fx->store, "t4", "c1", stage, ab, 2, 1), 0);
    s_insert(fx->store, "r5", "t4", "node-a", FB_VERDICT_PASS, 2);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t4"), FB_VERDICT_PASS);
    s_insert(fx->store, "r6", "t4", "node-b", FB_VERDICT_FAIL, 3);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t4"), FB_VERDICT_FAIL);

    /* A group task where one node never answered: the coordinator's timeout replaces the
     * provisional pass; once every node has answered, it does not. */
    assert_int_equal(store_task_create(fx->store, "t5", "c1", stage, ab, 2, 1), 0);
    s_insert(fx->store, "r7", "t5", "node-a", FB_VERDICT_PASS, 2);
    assert_int_equal(store_task_finish(fx->store, "t5", FB_VERDICT_TIMEOUT, "node-b silent", 3), 0);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t5"), FB_VERDICT_TIMEOUT);
    assert_int_equal(store_task_create(fx->store, "t6", "c1", stage, ab, 2, 1), 0);
    s_insert(fx->store, "r8", "t6", "node-a", FB_VERDICT_PASS, 2);
    s_insert(fx->store, "r9", "t6", "node-b", FB_VERDICT_PASS, 2);
    assert_int_equal(store_task_finish(fx->store, "t6", FB_VERDICT_TIMEOUT, NULL, 3), -EALREADY);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t6"), FB_VERDICT_PASS);
}

static int s_count_event(const store_event_t *e, void *arg)
{
    int *n = arg;
    assert_non_null(e->kind);
    (*n)++;
    return 0;
}

static int s_stop_event(const store_event_t *e, void *arg)
{
    (void)e;
    (void)arg;
    return 42;
}

static void test_events(void **state)
{
    fixture_t *fx = *state;
    s_campaign(fx->store);
    assert_int_equal(store_event(fx->store, 10, "c1", "t1", "node-a", "task", "started"), 0);
    assert_int_equal(store_event(fx->store, 20, "c1", NULL, NULL, "campaign", NULL), 0);
    assert_int_equal(store_event(fx->store, 5, NULL, NULL, "node-b", "agent", "lost: silence"), 0);
    assert_int_equal(store_event(fx->store, 5, NULL, NULL, NULL, NULL, "x"), -EINVAL);
    int n = 0;
    assert_int_equal(store_event_foreach(fx->store, "c1", s_count_event, &n), 0);
    assert_int_equal(n, 2);
    n = 0;
    assert_int_equal(store_event_foreach(fx->store, NULL, s_count_event, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(store_event_foreach(fx->store, NULL, s_stop_event, NULL), 42);

    sqlite3 *db = store_fixture_raw(fx);
    char *msg = s_query_text(db, "SELECT message FROM events WHERE kind = 'task'");
    assert_string_equal(msg, "started");
    free(msg);
    char *node = s_query_text(db, "SELECT node FROM events ORDER BY time_ms LIMIT 1");
    assert_string_equal(node, "node-b");
    free(node);
    sqlite3_close(db);
}

static void test_interrupt_stale_and_latest(void **state)
{
    fixture_t *fx = *state;
    char *id = NULL;
    assert_int_equal(store_latest_campaign(fx->store, &id), -ENOENT);
    assert_null(id);
    assert_int_equal(store_campaign_interrupt_stale(fx->store, 1), 0);

    assert_int_equal(store_campaign_create(fx->store, "new", "n", NULL, NULL, 3000), 0);
    assert_int_equal(store_campaign_create(fx->store, "old", "o", NULL, NULL, 1000), 0);
    assert_int_equal(store_campaign_create(fx->store, "done", "d", NULL, NULL, 2000), 0);
    assert_int_equal(store_campaign_finish(fx->store, "done", FB_VERDICT_PASS, 2500), 0);
    assert_int_equal(store_latest_campaign(fx->store, &id), 0);
    assert_string_equal(id, "new");
    free(id);

    assert_int_equal(store_campaign_interrupt_stale(fx->store, 9000), 2);
    assert_int_equal(store_campaign_interrupt_stale(fx->store, 9500), 0);
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(fx->store, "old", &c), 0);
    assert_string_equal(c->state, "interrupted");
    assert_int_equal(c->verdict, FB_VERDICT_ERROR);
    assert_int_equal(c->finished_ms, 9000);
    store_campaign_destroy(&c);
    assert_int_equal(store_campaign_load(fx->store, "done", &c), 0);
    assert_string_equal(c->state, "finished");
    assert_int_equal(c->verdict, FB_VERDICT_PASS);
    assert_int_equal(c->finished_ms, 2500);
    store_campaign_destroy(&c);
}

typedef struct {
    int n;
    char names[4][16];
    uint64_t last_seen[4], since[4];
    char states[4][16];
} agents_seen_t;

static int s_collect_agent(const store_agent_t *a, void *arg)
{
    agents_seen_t *seen = arg;
    if (seen->n < 4) {
        fb_strlcpy(seen->names[seen->n], a->name, sizeof seen->names[0]);
        fb_strlcpy(seen->states[seen->n], a->state, sizeof seen->states[0]);
        seen->last_seen[seen->n] = a->last_seen_ms;
        seen->since[seen->n] = a->state_since_ms;
    }
    seen->n++;
    return 0;
}

static int s_collect_campaign(const store_campaign_t *c, void *arg)
{
    int *n = arg;
    assert_non_null(c->id);
    assert_null(c->yaml);
    (*n)++;
    return 0;
}

static void test_agents(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    assert_int_equal(store_agent_upsert(s, "node-b", "alive", "2x H100", "{\"gpus\":2}", 100), 0);
    assert_int_equal(store_agent_upsert(s, "node-b", "alive", NULL, "{\"gpus\":2}", 200), 0);
    assert_int_equal(store_agent_upsert(s, "node-a", "alive", "8x H200", NULL, 250), 0);
    assert_int_equal(store_agent_upsert(s, "node-b", "alive", "1x H100", "{\"gpus\":1}", 300), 0);
    assert_int_equal(store_agent_set_state(s, "node-b", "lost", 400), 0);
    assert_int_equal(store_agent_set_state(s, "node-b", "lost", 450), 0);
    assert_int_equal(store_agent_set_state(s, "node-x", "lost", 450), -ENOENT);
    assert_int_equal(store_agent_seen(s, "node-a", 500), 0);
    assert_int_equal(store_agent_seen(s, "node-a", 260), 0); /* never backwards */
    assert_int_equal(store_agent_seen(s, "node-x", 500), -ENOENT);

    sqlite3 *db = store_fixture_raw(fx);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM inventory_snapshots"
                                                 " WHERE agent = 'node-b'"),
                     2);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM inventory_snapshots"
                                                 " WHERE agent = 'node-a'"),
                     0);
    char *summary = s_query_text(db, "SELECT summary FROM agents WHERE name = 'node-b'");
    assert_string_equal(summary, "1x H100");
    free(summary);
    assert_int_equal(
        store_fixture_query_int(db, "SELECT first_seen_ms FROM agents WHERE name = 'node-b'"), 100);
    sqlite3_close(db);

    agents_seen_t seen = {0};
    assert_int_equal(store_agent_foreach(s, s_collect_agent, &seen), 0);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.names[0], "node-a");
    assert_int_equal(seen.last_seen[0], 500);
    assert_string_equal(seen.names[1], "node-b");
    assert_string_equal(seen.states[1], "lost");
    assert_int_equal(seen.last_seen[1], 300); /* being marked lost is not being seen */
    assert_int_equal(seen.since[1], 400);     /* the state changed at 400, not at 450 */

    int n = 0;
    s_campaign(s);
    assert_int_equal(store_campaign_foreach(s, s_collect_campaign, &n), 0);
    assert_int_equal(n, 1);

    /* A coordinator starting on this database: node-a was alive for the earlier one only. */
    assert_int_equal(store_agent_upsert(s, "node-c", "alive", "1x H200", NULL, 600), 0);
    assert_int_equal(store_agent_set_state(s, "node-c", "gone", 650), 0);
    assert_int_equal(store_agents_mark_unheard(s, 700), 1);
    assert_int_equal(store_agents_mark_unheard(s, 800), 0);
    agents_seen_t after = {0};
    assert_int_equal(store_agent_foreach(s, s_collect_agent, &after), 0);
    assert_int_equal(after.n, 3);
    assert_string_equal(after.states[0], "unheard");
    assert_int_equal(after.since[0], 700);
    assert_int_equal(after.last_seen[0], 500); /* not seen by being marked */
    assert_string_equal(after.states[1], "lost");
    assert_string_equal(after.states[2], "gone");
}

/* A reader holding a snapshot (as `fleetburn report` does) does not block the writer. */
static void test_reader_beside_writer(void **state)
{
    fixture_t *fx = *state;
    s_campaign(fx->store);
    sqlite3 *reader = store_fixture_raw(fx);
    store_fixture_exec(reader, "BEGIN");
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM campaigns"), 1);

    assert_int_equal(store_campaign_create(fx->store, "c2", NULL, NULL, NULL, 5000), 0);
    fb_result_t *r = s_result("r1", "t1", "node-a", FB_VERDICT_PASS);
    fb_result_add_metric(r, "m", 1, "");
    assert_int_equal(store_result_insert(fx->store, r, 5), 0);
    fb_result_destroy(&r);

    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM campaigns"),
                     1); /* snapshot */
    store_fixture_exec(reader, "COMMIT");
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM campaigns"), 2);

    /* A second store on the same file reads the writer's data. */
    store_t *other = NULL;
    assert_int_equal(store_open(fx->path, &other, NULL), 0);
    char *id = NULL;
    assert_int_equal(store_latest_campaign(other, &id), 0);
    assert_string_equal(id, "c2");
    free(id);
    assert_int_equal(s_task_verdict(other, "c1", "t1"), FB_VERDICT_PASS);
    store_destroy(&other);
    sqlite3_close(reader);
}

/* Deferred commits: writes join one transaction, invisible to other connections until
 * store_flush; a failing call inside it changes nothing and leaves the others; reads through the
 * writer see its own writes; closing the store flushes. */
static void test_deferred_commits(void **state)
{
    fixture_t *fx = *state;
    s_campaign(fx->store);
    assert_int_equal(store_defer_commits(fx->store, true), 0);
    assert_int_equal(store_flush(fx->store), 0); /* nothing open: nothing to do */
    sqlite3 *reader = store_fixture_raw(fx);
    fb_result_t *r = s_result("r1", "t1", "node-a", FB_VERDICT_PASS);
    fb_result_add_metric(r, "m", 1, "");
    assert_int_equal(store_result_insert(fx->store, r, 5), 0);
    assert_int_equal(store_result_insert(fx->store, r, 6), -EEXIST); /* rolled back alone */
    fb_result_destroy(&r);
    assert_int_equal(store_event(fx->store, 7, "c1", "t1", "node-a", "result", "pass"), 0);
    assert_int_equal(store_campaign_create(fx->store, "c1", NULL, NULL, NULL, 8), -EEXIST);
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM results"), 0);
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM events"), 0);
    assert_int_equal(s_task_verdict(fx->store, "c1", "t1"), FB_VERDICT_PASS); /* its own view */
    assert_int_equal(store_flush(fx->store), 0);
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM results"), 1);
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM metrics"), 1);
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM events"), 1);

    /* Closing flushes; turning deferral off flushes too. */
    assert_int_equal(store_event(fx->store, 9, "c1", NULL, NULL, "note", "a"), 0);
    assert_int_equal(store_defer_commits(fx->store, false), 0);
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM events"), 2);
    assert_int_equal(store_defer_commits(fx->store, true), 0);
    assert_int_equal(store_event(fx->store, 10, "c1", NULL, NULL, "note", "b"), 0);
    store_destroy(&fx->store);
    assert_int_equal(store_fixture_query_int(reader, "SELECT COUNT(*) FROM events"), 3);
    sqlite3_close(reader);
}

/* A timeline written by schema version 1 (tests/fixtures/timeline-v1.sql, made by fleetburn
 * itself) is migrated on open: nothing recorded is lost, foreign keys still hold, and what
 * version 2 adds works on the old rows (a cancelled end, a stage plan, a campaign's files). */
static void test_migrates_version_1(void **state)
{
    fixture_t *fx = *state;
    sqlite3 *db = store_fixture_replace(fx, "timeline-v1.sql");
    int64_t tasks = store_fixture_query_int(db, "SELECT COUNT(*) FROM tasks");
    int64_t results = store_fixture_query_int(db, "SELECT COUNT(*) FROM results");
    assert_int_equal(store_fixture_query_int(db, "PRAGMA user_version"), 1);
    sqlite3_close(db);

    char *err = NULL;
    assert_int_equal(store_open(fx->path, &fx->store, &err), 0);
    assert_null(err);
    db = store_fixture_raw(fx);
    assert_int_equal(store_fixture_query_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM tasks"), tasks);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM results"), results);
    assert_int_equal(store_fixture_query_int(db, "SELECT COUNT(*) FROM pragma_foreign_key_check"),
                     0);
    char *id = s_query_text(db, "SELECT id FROM campaigns");
    sqlite3_close(db);

    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(fx->store, id, &c), 0);
    assert_string_equal(c->name, "v1-fixture");
    assert_string_equal(c->state, "finished");
    assert_int_equal(c->n_stages, 2);
    assert_false(c->stages[0].planned);
    assert_int_equal(c->stages[0].n_tasks, 2);
    assert_int_equal(c->stages[1].tasks[0].n_nodes, 2);
    int64_t stage = c->stages[1].id;
    store_campaign_destroy(&c);

    const char *nodes[] = {"local-0", "local-1"};
    assert_int_equal(store_stage_plan(fx->store, stage, UINT64_MAX - 6, nodes, 2), 0);
    assert_int_equal(store_campaign_add_file(fx->store, id, "rack.topo", "a\0b", 3), 0);
    assert_int_equal(store_campaign_add_file(fx->store, "nope", "rack.topo", "x", 1), -ENOENT);
    assert_int_equal(store_campaign_end(fx->store, id, "cancelled", FB_VERDICT_ERROR, 5), 0);
    assert_int_equal(store_campaign_end(fx->store, id, "running", FB_VERDICT_ERROR, 5), -EINVAL);
    assert_int_equal(store_campaign_load(fx->store, id, &c), 0);
    assert_string_equal(c->state, "cancelled");
    assert_true(c->stages[1].planned);
    assert_true(c->stages[1].seed == UINT64_MAX - 6);
    assert_int_equal(c->stages[1].n_nodes, 2);
    assert_string_equal(c->stages[1].nodes[1], "local-1");
    store_campaign_destroy(&c);
    store_file_t *files = NULL;
    size_t n = 0;
    assert_int_equal(store_campaign_files(fx->store, id, &files, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(files[0].len, 3);
    assert_memory_equal(files[0].content, "a\0b", 3);
    store_files_free(files, n);
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        STORE_FIXTURE_TEST(test_open_schema_and_wal),
        STORE_FIXTURE_TEST(test_refuses_newer_schema),
        STORE_FIXTURE_TEST(test_refuses_foreign_database),
        STORE_FIXTURE_TEST(test_round_trip),
        STORE_FIXTURE_TEST(test_create_errors),
        STORE_FIXTURE_TEST(test_result_idempotent),
        STORE_FIXTURE_TEST(test_task_verdict_not_overwritten),
        STORE_FIXTURE_TEST(test_events),
        STORE_FIXTURE_TEST(test_interrupt_stale_and_latest),
        STORE_FIXTURE_TEST(test_agents),
        STORE_FIXTURE_TEST(test_reader_beside_writer),
        STORE_FIXTURE_TEST(test_deferred_commits),
        STORE_FIXTURE_TEST(test_migrates_version_1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
