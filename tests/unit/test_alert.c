/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the coordinator's side of webhook alerts, on a real SQLite store: the delivery queue
 * (queued once per campaign and URL, every attempt recorded, pending rows read back by a store
 * opened again, as a restarted coordinator does; a version-2 database migrated), the triggers a
 * campaign's end meets, the alert document checked by Python's json module (the campaign, its
 * verdict, each bad part with its evidence on one line, failures nothing explains, regressions,
 * lists cut with their totals), and the allow-list that decides which hosts a coordinator posts
 * to, judged on libcurl's own reading of the URL. */
#include "http_client.h"
#include "report.h"
#include "store.h"
#include "webhook_queue.h"
#include "common/util.h"
#include "scheduler/webhook.h"

#include <errno.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define T0 1700000000000ull

typedef struct {
    char dir[64];
    char *path;
    store_t *store;
} fixture_t;

static int s_setup(void **state)
{
    fixture_t *fx = xcalloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/fb-test-alert-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    fx->path = xasprintf("%s/timeline.db", fx->dir);
    assert_int_equal(store_open(fx->path, &fx->store, NULL), 0);
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
    char *script = xasprintf("%s/check.py", fx->dir);
    unlink(script);
    free(script);
    rmdir(fx->dir);
    free(fx->path);
    free(fx);
    return 0;
}

/* ---- the queue ---------------------------------------------------------------------------- */

typedef struct {
    store_webhook_t rows[8];
    size_t n;
} s_rows_t;

static int s_collect(const store_webhook_t *w, void *arg)
{
    s_rows_t *rows = arg;
    assert_true(rows->n < FB_ARRAY_LEN(rows->rows));
    store_webhook_t *r = &rows->rows[rows->n++];
    *r = *w;
    r->campaign_id = xstrdup(w->campaign_id);
    r->url = xstrdup(w->url);
    r->payload = xstrdup(w->payload);
    r->state = xstrdup(w->state);
    r->last_error = xstrdup(w->last_error);
    r->retry_ms = xcalloc(w->n_retry + 1, sizeof *r->retry_ms);
    memcpy(r->retry_ms, w->retry_ms, w->n_retry * sizeof *w->retry_ms);
    return 0;
}

static void s_rows_free(s_rows_t *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        free(rows->rows[i].campaign_id);
        free(rows->rows[i].url);
        free(rows->rows[i].payload);
        free(rows->rows[i].state);
        free(rows->rows[i].last_error);
        free(rows->rows[i].retry_ms);
    }
    rows->n = 0;
}

static void test_queue(void **state)
{
    fixture_t *fx = *state;
    store_t *st = fx->store;
    assert_int_equal(store_campaign_create(st, "c1", "n", "c.yaml", "yaml", T0), 0);
    const uint64_t retry[] = {1000, 2000};
    int64_t id = 0;
    assert_int_equal(store_webhook_enqueue(st, "c1", "http://h.example/x", "{\"a\":1}", retry, 2,
                                           5000, T0 + 10, &id),
                     0);
    assert_true(id > 0);
    /* Once per campaign and URL; never for a campaign the store does not hold. */
    assert_int_equal(
        store_webhook_enqueue(st, "c1", "http://h.example/x", "{}", NULL, 0, 5000, T0 + 20, NULL),
        -EEXIST);
    assert_int_equal(
        store_webhook_enqueue(st, "nope", "http://h.example/x", "{}", NULL, 0, 5000, T0, NULL),
        -ENOENT);

    s_rows_t rows = {0};
    assert_int_equal(store_webhook_foreach(st, NULL, s_collect, &rows), 0);
    assert_int_equal(rows.n, 1);
    store_webhook_t *r = &rows.rows[0];
    assert_int_equal(r->id, id);
    assert_string_equal(r->campaign_id, "c1");
    assert_string_equal(r->url, "http://h.example/x");
    assert_string_equal(r->payload, "{\"a\":1}");
    assert_string_equal(r->state, "pending");
    assert_int_equal(r->attempts, 0);
    assert_int_equal(r->next_attempt_ms, T0 + 10);
    assert_int_equal(r->n_retry, 2);
    assert_int_equal(r->retry_ms[1], 2000);
    assert_int_equal(r->timeout_ms, 5000);
    assert_null(r->last_error);
    s_rows_free(&rows);

    /* A failed attempt: still pending, due later; then delivered: no longer pending. */
    assert_int_equal(store_webhook_attempted(st, id, 1, "pending", T0 + 1010, "HTTP 503", T0 + 11),
                     0);
    assert_int_equal(store_webhook_foreach(st, NULL, s_collect, &rows), 0);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.rows[0].attempts, 1);
    assert_int_equal(rows.rows[0].next_attempt_ms, T0 + 1010);
    assert_string_equal(rows.rows[0].last_error, "HTTP 503");
    s_rows_free(&rows);
    assert_int_equal(store_webhook_attempted(st, id, 2, "delivered", 0, NULL, T0 + 1020), 0);
    assert_int_equal(store_webhook_foreach(st, NULL, s_collect, &rows), 0);
    assert_int_equal(rows.n, 0);
    assert_int_equal(store_webhook_foreach(st, "c1", s_collect, &rows), 0);
    assert_int_equal(rows.n, 1);
    assert_string_equal(rows.rows[0].state, "delivered");
    assert_int_equal(rows.rows[0].attempts, 2);
    assert_int_equal(rows.rows[0].next_attempt_ms, 0);
    assert_int_equal(rows.rows[0].finished_ms, T0 + 1020);
    s_rows_free(&rows);

    assert_int_equal(store_webhook_attempted(st, id, 3, "lost", 0, NULL, T0), -EINVAL);
    assert_int_equal(store_webhook_attempted(st, id + 100, 1, "failed", 0, "x", T0), -ENOENT);
}

/* A coordinator killed between two attempts: the store opened again holds the delivery, with the
 * attempts made and the next one's due time. */
static void test_queue_survives_reopen(void **state)
{
    fixture_t *fx = *state;
    assert_int_equal(store_campaign_create(fx->store, "c1", "n", "c.yaml", "yaml", T0), 0);
    const uint64_t retry[] = {300000, 600000};
    int64_t id = 0;
    assert_int_equal(store_webhook_enqueue(fx->store, "c1", "https://h.example/", "{}", retry, 2,
                                           30000, T0, &id),
                     0);
    assert_int_equal(
        store_webhook_attempted(fx->store, id, 1, "pending", T0 + 300000, "HTTP 502", T0 + 5), 0);
    store_destroy(&fx->store);
    assert_int_equal(store_open(fx->path, &fx->store, NULL), 0);
    s_rows_t rows = {0};
    assert_int_equal(store_webhook_foreach(fx->store, NULL, s_collect, &rows), 0);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.rows[0].attempts, 1);
    assert_int_equal(rows.rows[0].next_attempt_ms, T0 + 300000);
    assert_int_equal(rows.rows[0].n_retry, 2);
    assert_int_equal(rows.rows[0].retry_ms[0], 300000);
    s_rows_free(&rows);
}

static int64_t s_query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A database of schema version 2 (before the queue) gets the queue, and keeps its campaigns. */
static void test_migrates_version_2(void **state)
{
    fixture_t *fx = *state;
    assert_int_equal(store_campaign_create(fx->store, "old", "n", "c.yaml", "yaml", T0), 0);
    store_destroy(&fx->store);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "DROP TABLE webhook_deliveries; DROP TABLE fingerprints;"
                                  "DROP TABLE campaign_node_selections; DROP TABLE baselines;"
                                  "DROP INDEX campaigns_by_name; PRAGMA user_version = 2;"
                                  "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open(fx->path, &fx->store, NULL), 0);
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    assert_int_equal(s_query_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(s_query_int(db, "SELECT COUNT(*) FROM webhook_deliveries"), 0);
    assert_int_equal(s_query_int(db, "SELECT COUNT(*) FROM campaigns WHERE id = 'old'"), 1);
    sqlite3_close(db);
    assert_int_equal(
        store_webhook_enqueue(fx->store, "old", "http://h.example/", "{}", NULL, 0, 1000, T0, NULL),
        0);
}

/* ---- triggers and the document -------------------------------------------------------------- */

static void s_result(store_t *store, const char *result_id, const char *task_id, const char *node,
                     fb_verdict_t verdict, const char *part, const char *what)
{
    fb_result_t *r = fb_result_new();
    fb_result_set_ids(r, result_id, task_id, node);
    r->verdict = verdict;
    r->started_ms = T0 + 1000;
    r->finished_ms = T0 + 2000;
    fb_result_add_metric(r, "bandwidth_mbs", 1000, "MB/s");
    if (part)
        fb_result_add_finding(r, part, "dimm", what);
    assert_int_equal(store_result_insert(store, r, T0 + 3000), 0);
    fb_result_destroy(&r);
}

/* Campaign id with one memtest stage on n1 (pass), n2 (fail, a finding whose text spans lines),
 * n3 (timeout, nothing found), ended in state with the recorded verdict. */
static void s_campaign(store_t *st, const char *id, const char *state, fb_verdict_t verdict,
                       bool failures)
{
    assert_int_equal(store_campaign_create(st, id, "rack4 burn-in", "rack4.yaml", "yaml", T0), 0);
    int64_t stage = 0;
    assert_int_equal(store_stage_create(st, id, 0, "dram", "memtest", NULL, "continue", 0, &stage),
                     0);
    assert_int_equal(store_stage_start(st, stage, T0 + 10), 0);
    const char *nodes[] = {"n1", "n2", "n3"};
    for (size_t i = 0; i < 3; i++) {
        char *task = xasprintf("%s/dram/%s", id, nodes[i]);
        assert_int_equal(store_task_create(st, task, id, stage, &nodes[i], 1, T0 + 20), 0);
        if (i == 0 || !failures)
            s_result(st, task, task, nodes[i], FB_VERDICT_PASS, NULL, NULL);
        else if (i == 1)
            s_result(st, task, task, nodes[i], FB_VERDICT_FAIL, "n2/CPU_SrcID#0_MC#0_Chan#1_DIMM#0",
                     "17 miscompares\nat 0x1000\tpattern random");
        else
            assert_int_equal(
                store_task_finish(st, task, FB_VERDICT_TIMEOUT, "no result in 10m", T0 + 600000),
                0);
        free(task);
    }
    assert_int_equal(
        store_stage_finish(st, stage, failures ? FB_VERDICT_FAIL : FB_VERDICT_PASS, T0 + 600000),
        0);
    assert_int_equal(store_campaign_end(st, id, state, verdict, T0 + 600100), 0);
}

static unsigned s_triggers(store_t *st, const char *id, bool regressions)
{
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(st, id, &c), 0);
    unsigned t = report_alert_triggers(c, regressions);
    store_campaign_destroy(&c);
    return t;
}

static void test_triggers(void **state)
{
    fixture_t *fx = *state;
    store_t *st = fx->store;
    s_campaign(st, "failed", "finished", FB_VERDICT_FAIL, true);
    assert_int_equal(s_triggers(st, "failed", false), FB_ALERT_BAD);
    assert_int_equal(s_triggers(st, "failed", true), FB_ALERT_BAD | FB_ALERT_REGRESSION);
    s_campaign(st, "passed", "finished", FB_VERDICT_PASS, false);
    assert_int_equal(s_triggers(st, "passed", false), 0);
    assert_int_equal(s_triggers(st, "passed", true), FB_ALERT_REGRESSION);
    /* Cancelled after a part was named: both; cancelled with nothing named: error only (its
     * stopped tasks fail it, but name no part). */
    s_campaign(st, "cancelled-bad", "cancelled", FB_VERDICT_ERROR, true);
    assert_int_equal(s_triggers(st, "cancelled-bad", false), FB_ALERT_BAD | FB_ALERT_ERROR);
    s_campaign(st, "cancelled", "cancelled", FB_VERDICT_ERROR, false);
    assert_int_equal(s_triggers(st, "cancelled", false), FB_ALERT_ERROR);
    s_campaign(st, "interrupted", "interrupted", FB_VERDICT_ERROR, false);
    assert_int_equal(s_triggers(st, "interrupted", false), FB_ALERT_ERROR);
    s_campaign(st, "store-error", "error", FB_VERDICT_ERROR, false);
    assert_int_equal(s_triggers(st, "store-error", false), FB_ALERT_ERROR);
    /* A campaign that still runs meets nothing. */
    assert_int_equal(store_campaign_create(st, "running", "r", "r.yaml", "yaml", T0), 0);
    assert_int_equal(s_triggers(st, "running", true), 0);
}

/* Python checks (statements using d, the parsed document) on text; the exit status. */
static int s_check(fixture_t *fx, const char *text, const char *checks)
{
    char *script = xasprintf("%s/check.py", fx->dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fprintf(f, "import json, sys\nd = json.loads(sys.stdin.buffer.read().decode('utf-8'))\n%s\n",
            checks);
    fclose(f);
    char *cmd = xasprintf("python3 %s", script);
    FILE *py = popen(cmd, "w");
    assert_non_null(py);
    fputs(text, py);
    int status = pclose(py);
    free(cmd);
    free(script);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *s_document(store_t *st, const char *id, unsigned triggers,
                        const report_regression_t *regs, size_t n)
{
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(st, id, &c), 0);
    char *doc = report_alert_json(c, triggers, regs, n);
    store_campaign_destroy(&c);
    return doc;
}

static void test_document(void **state)
{
    fixture_t *fx = *state;
    if (system("python3 -c '' >/dev/null 2>&1") != 0)
        skip();
    s_campaign(fx->store, "c1", "finished", FB_VERDICT_FAIL, true);
    const report_regression_t regs[] = {{"n1", "bandwidth_mbs", 1200, 1000, -0.1667, -0.01}};
    char *doc = s_document(fx->store, "c1", FB_ALERT_BAD | FB_ALERT_REGRESSION, regs, 1);
    int rc = s_check(
        fx, doc,
        "assert d['format'] == 'fleetburn-alert' and d['format_version'] == 1, d\n"
        "assert d['generator'].startswith('fleetburn '), d\n"
        "assert d['triggers'] == ['bad', 'regression'], d['triggers']\n"
        "c = d['campaign']\n"
        "assert (c['id'], c['name'], c['state'], c['verdict']) == "
        "('c1', 'rack4 burn-in', 'finished', 'fail'), c\n"
        "assert c['started'] == '2023-11-14T22:13:20.000Z' and c['duration_ms'] == 600100, c\n"
        "assert d['stages'] == [{'name': 'dram', 'workload': 'memtest', 'verdict': 'fail',"
        " 'tasks': 3, 'tasks_failed': 2}], d['stages']\n"
        "b, = d['bad']\n"
        "assert b['part'] == 'n2/CPU_SrcID#0_MC#0_Chan#1_DIMM#0' and b['kind'] == 'dimm', b\n"
        "assert b['stage'] == 'dram' and b['confidence'] == 1, b\n"
        "assert b['evidence'] == 'dram: 17 miscompares at 0x1000 pattern random', b\n"
        "assert d['bad_total'] == 1 and d['undecided'] == [] and d['undecided_total'] == 0\n"
        "u, = d['unattributed']\n"
        "assert u == {'task': 'c1/dram/n3', 'stage': 'dram', 'nodes': 'n3', 'verdict': 'timeout',"
        " 'error': 'no result in 10m'}, u\n"
        "assert d['regressions'] == [{'part': 'n1', 'metric': 'bandwidth_mbs', 'base': 1200,"
        " 'now': 1000, 'change': -0.1667, 'fleet_change': -0.01}], d['regressions']\n"
        "assert d['regressions_total'] == 1\n"
        "t = d['text']\n"
        "assert t.startswith('fleetburn campaign c1 (rack4 burn-in) finished: fail; 1 bad part: "
        "n2/CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (dram: 17 miscompares'), t\n"
        "assert '1 failed task without a named part; 1 regression' in t and '\\n' not in t, t\n"
        "assert 'http' not in json.dumps(d), 'a link in the document'\n");
    assert_int_equal(rc, 0);
    free(doc);
}

/* Lists are cut at REPORT_ALERT_LIST_MAX with their totals, and a long evidence text at one line
 * of 300 bytes: a fleet-wide failure still makes a small document. */
static void test_document_bounded(void **state)
{
    fixture_t *fx = *state;
    if (system("python3 -c '' >/dev/null 2>&1") != 0)
        skip();
    store_t *st = fx->store;
    assert_int_equal(store_campaign_create(st, "big", "big", "b.yaml", "yaml", T0), 0);
    int64_t stage = 0;
    assert_int_equal(
        store_stage_create(st, "big", 0, "dram", "memtest", NULL, "continue", 0, &stage), 0);
    char long_what[2000];
    memset(long_what, 'x', sizeof long_what - 1);
    long_what[sizeof long_what - 1] = '\0';
    for (int i = 0; i < 60; i++) {
        char node[16], task[32], part[32];
        snprintf(node, sizeof node, "n%02d", i);
        snprintf(task, sizeof task, "big/dram/%s", node);
        snprintf(part, sizeof part, "%s/DIMM_A1", node);
        const char *nodes[] = {node};
        assert_int_equal(store_task_create(st, task, "big", stage, nodes, 1, T0), 0);
        s_result(st, task, task, node, FB_VERDICT_FAIL, part, long_what);
    }
    assert_int_equal(store_campaign_end(st, "big", "finished", FB_VERDICT_FAIL, T0 + 1), 0);
    char *doc = s_document(st, "big", FB_ALERT_BAD, NULL, 0);
    assert_true(strlen(doc) < 32 * 1024);
    int rc = s_check(fx, doc,
                     "assert len(d['bad']) == 50 and d['bad_total'] == 60, len(d['bad'])\n"
                     "e = d['bad'][0]['evidence']\n"
                     "assert len(e) == 300 and e.endswith('...') and e.startswith('dram: xxx'), e\n"
                     "assert d['text'].endswith('and 55 more'), d['text'][-80:]\n"
                     "assert len(d['text']) <= 1000\n");
    assert_int_equal(rc, 0);
    free(doc);
}

/* ---- the allow-list ------------------------------------------------------------------------ */

static int s_may(uv_loop_t *loop, store_t *st, const char *allow, const char *url, char *why,
                 size_t whylen)
{
    webhook_options_t opts = {.allow = allow};
    char err[256];
    webhook_queue_t *w = webhook_queue_new(loop, st, &opts, err, sizeof err);
    if (!w)
        fail_msg("%s", err);
    int rc = webhook_queue_may_post(w, url, why, whylen);
    webhook_queue_destroy(&w);
    uv_run(loop, UV_RUN_NOWAIT);
    return rc;
}

static void test_allow_list(void **state)
{
    fixture_t *fx = *state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    char why[512];
    int refused = http_client_available() ? -EPERM : -ENOTSUP;
    const char *list = "hooks.example.com, *.alerts.example.org:8443,10.1.2.3:8080,[fd00::1]";
    struct {
        const char *url;
        bool allowed;
    } cases[] = {
        {"https://hooks.example.com/x", true},
        {"https://HOOKS.Example.com:9999/x", true}, /* any port when the entry has none */
        {"https://hooks.example.com.evil.example/x", false},
        {"https://evilhooks.example.com/x", false},
        {"https://a.alerts.example.org:8443/x", true},
        {"https://b.a.alerts.example.org:8443/x", true},
        {"https://alerts.example.org:8443/x", false}, /* *.domain: its hosts, not itself */
        {"https://a.alerts.example.org/x", false},    /* 443, not 8443 */
        {"https://x.evilalerts.example.org:8443/x", false},
        {"http://10.1.2.3:8080/", true},
        {"http://10.1.2.3/", false},
        {"http://[fd00::1]:9000/", true},
        {"http://[fd00::2]/", false},
        {"http://127.0.0.1/", false},
        {"http://169.254.169.254/latest/meta-data/", false},
        /* libcurl's reading of the URL decides: the host is evil.example, whatever follows. */
        {"http://evil.example/#@hooks.example.com/", false},
        {"http://evil.example?@hooks.example.com/", false},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(cases); i++) {
        int rc = s_may(&loop, fx->store, list, cases[i].url, why, sizeof why);
        int want = cases[i].allowed && http_client_available() ? 0 : refused;
        if (rc != want)
            fail_msg("%s: %d, expected %d (%s)", cases[i].url, rc, want, why);
    }
    if (http_client_available()) {
        assert_int_equal(
            s_may(&loop, fx->store, "*", "http://anything.example:1/", why, sizeof why), 0);
        assert_int_equal(
            s_may(&loop, fx->store, NULL, "http://hooks.example.com/", why, sizeof why), -EPERM);
        assert_string_equal(why, "this coordinator may not post to hooks.example.com port 80: its "
                                 "administrator allows webhooks to no host (fleetburn serve "
                                 "--webhook-allow)");
        assert_int_equal(s_may(&loop, fx->store, "*", "gopher://h.example/", why, sizeof why),
                         -EINVAL);
    } else {
        assert_int_equal(s_may(&loop, fx->store, NULL, "http://h.example/", why, sizeof why),
                         -ENOTSUP);
        assert_non_null(strstr(why, "built without libcurl"));
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_allow_list_syntax(void **state)
{
    (void)state;
    char err[512];
    const char *good[] = {"*",
                          "hooks.example.com",
                          "a.example,b.example:8443",
                          "*.example.com",
                          "[fd00::1]:443",
                          "10.0.0.1 10.0.0.2"};
    const char *bad[] = {"",
                         ",",
                         "hooks.example.com:0",
                         "hooks.example.com:http",
                         "ho$t",
                         "http://hooks.example.com",
                         "[fd00::g]",
                         "*.",
                         "a.example:70000"};
    for (size_t i = 0; i < FB_ARRAY_LEN(good); i++) {
        webhook_options_t opts = {.allow = good[i]};
        int rc = webhook_options_check(&opts, err, sizeof err);
        if (rc != (http_client_available() ? 0 : -EINVAL))
            fail_msg("'%s' refused: %s", good[i], err);
    }
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++) {
        webhook_options_t opts = {.allow = bad[i]};
        if (webhook_options_check(&opts, err, sizeof err) != -EINVAL)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(err, "--webhook-allow"));
    }
    webhook_options_t opts = {.allow = "ho$t"};
    assert_int_equal(webhook_options_check(&opts, err, sizeof err), -EINVAL);
    assert_string_equal(err, "--webhook-allow: 'ho$t' is not a host; expected hosts such as "
                             "hooks.example.com, 10.1.2.3:8080, [fd00::1], *.example.com, "
                             "separated by commas, or *");
    opts = (webhook_options_t){.ca_file = "/nonexistent/ca.pem"};
    assert_int_equal(webhook_options_check(&opts, err, sizeof err), -EINVAL);
    assert_string_equal(err, "--webhook-ca: /nonexistent/ca.pem: No such file or directory; "
                             "expected a readable CA bundle (PEM)");
    opts = (webhook_options_t){.ca_file = "/tmp"};
    assert_int_equal(webhook_options_check(&opts, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "not a regular file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queue, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_queue_survives_reopen, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_migrates_version_2, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_triggers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_document, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_document_bounded, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_allow_list, s_setup, s_teardown),
        cmocka_unit_test(test_allow_list_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
