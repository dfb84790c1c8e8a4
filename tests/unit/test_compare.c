/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of `fleetburn compare` on a real SQLite timeline (coordinator/compare, store_compare):
 * campaigns written through the store's API the way the coordinator writes them; a fleet that
 * lost 8% after a driver upgrade is one fleet-wide regression with the driver change beside it
 * (the snapshot taken after the campaign started is not used); a throttled pair member is named
 * with its pair; parts and stages in one campaign only are listed; a metric without a rule is
 * counted until the campaign's regress: names it; the JSON is checked by Python's json module;
 * named baselines and the `latest` predecessor; a timeline written by schema version 2
 * (tests/fixtures/timeline-v2.sql) is migrated and compared. */
#include "compare.h"
#include "store.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct {
    char dir[64];
    char *path;
    store_t *store;
} fixture_t;

static int s_setup(void **state)
{
    fixture_t *fx = xcalloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/fb-test-compare-XXXXXX");
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
    const char *files[] = {"timeline.db", "timeline.db-wal", "timeline.db-shm", "check.py",
                           "out.txt"};
    for (size_t i = 0; i < FB_ARRAY_LEN(files); i++) {
        char *p = xasprintf("%s/%s", fx->dir, files[i]);
        unlink(p);
        free(p);
    }
    rmdir(fx->dir);
    free(fx->path);
    free(fx);
    return 0;
}

/* ---- writing campaigns ---- */

static void s_agent(store_t *store, const char *name, const char *driver, uint64_t t)
{
    char *inv = xasprintf("{\"hostname\":\"%s\",\"kernel\":\"6.8.0\",\"agent_version\":\"0.1.0\","
                          "\"software\":{\"kernel\":\"6.8.0\",\"nvidia_driver\":\"%s\"}}",
                          name, driver);
    assert_int_equal(store_agent_upsert(store, name, "alive", "8 GPU", inv, t), 0);
    free(inv);
}

static void s_result(store_t *store, const char *task, const char *node, size_t n_metrics,
                     const char *const *names, const double *values)
{
    fb_result_t *r = fb_result_new();
    char *rid = xasprintf("%s@%s", task, node);
    fb_result_set_ids(r, rid, task, node);
    r->verdict = FB_VERDICT_PASS;
    for (size_t i = 0; i < n_metrics; i++)
        fb_result_add_metric(r, names[i], values[i], "");
    assert_int_equal(store_result_insert(store, r, 1), 0);
    fb_result_destroy(&r);
    free(rid);
}

static int64_t s_stage(store_t *store, const char *campaign, int idx, const char *name,
                       const char *workload)
{
    int64_t id = 0;
    assert_int_equal(
        store_stage_create(store, campaign, idx, name, workload, NULL, "continue", 60000, &id), 0);
    return id;
}

/* A node task of stage `stage` on node with the given metrics. */
static void s_node_task(store_t *store, const char *campaign, int64_t stage, int idx,
                        const char *node, size_t n, const char *const *names, const double *values)
{
    char *task = xasprintf("%s/%d/%s", campaign, idx, node);
    const char *nodes[] = {node};
    assert_int_equal(store_task_create(store, task, campaign, stage, nodes, 1, 1), 0);
    s_result(store, task, node, n, names, values);
    free(task);
}

/* A pair task: each member reports tx (its own sending rate) and rx (its partner's). */
static void s_pair_task(store_t *store, const char *campaign, int64_t stage, const char *id,
                        const char *a, const char *b, double a_tx, double b_tx)
{
    char *task = xasprintf("%s/1/%s", campaign, id);
    const char *nodes[] = {a, b};
    assert_int_equal(store_task_create(store, task, campaign, stage, nodes, 2, 1), 0);
    const char *names[] = {"netbw.tx_gbps", "netbw.rx_gbps"};
    double va[] = {a_tx, b_tx}, vb[] = {b_tx, a_tx};
    s_result(store, task, a, 2, names, va);
    s_result(store, task, b, 2, names, vb);
    free(task);
}

static void s_finish(store_t *store, const char *campaign, uint64_t t)
{
    assert_int_equal(store_campaign_finish(store, campaign, FB_VERDICT_PASS, t), 0);
}

/* Six GPU nodes n1..n6, two GPUs each, at tflops * factor. */
static void s_gpu_campaign(store_t *store, const char *id, uint64_t t0, double factor)
{
    assert_int_equal(store_campaign_create(store, id, "gpu-check", "c.yaml",
                                           "name: gpu-check\nstages: []\n", t0),
                     0);
    int64_t st = s_stage(store, id, 0, "burn", "gpuburn");
    for (int i = 1; i <= 6; i++) {
        char node[8];
        snprintf(node, sizeof node, "n%d", i);
        const char *names[] = {"gpu0.tflops_median", "gpu1.tflops_median", "seed"};
        double v[] = {(689 + i) * factor, (690 - i * 0.5) * factor, (double)i};
        s_node_task(store, id, st, 0, node, 3, names, v);
    }
    s_finish(store, id, t0 + 100);
}

/* ---- checks ---- */

/* Writes the JSON comparison into a Python program that parses it (strict UTF-8) into d and runs
 * the checks. Returns its exit status. */
static int s_check_json(fixture_t *fx, const compare_t *c, const char *checks)
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
    assert_int_equal(compare_write_json(c, py), 0);
    int status = pclose(py);
    free(cmd);
    free(script);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The text comparison as a heap string. */
static char *s_text(fixture_t *fx, const compare_t *c)
{
    char *path = xasprintf("%s/out.txt", fx->dir);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    assert_int_equal(compare_write_text(c, f), 0);
    fclose(f);
    size_t len;
    char *text = fb_read_file(path, &len);
    free(path);
    assert_non_null(text);
    return text;
}

static compare_t *s_compare(fixture_t *fx, const char *base, const char *now)
{
    compare_t *c = NULL;
    char *err = NULL;
    int rc = compare_campaigns(fx->store, base, now, &c, &err);
    if (rc)
        fail_msg("compare %s %s: %s", base, now, err);
    return c;
}

/* Every GPU 8% slower after a driver upgrade: one fleet-wide regression, no node named, and the
 * driver change beside it. */
static void test_fleet_shift_with_driver_change(void **state)
{
    fixture_t *fx = *state;
    for (int i = 1; i <= 6; i++) {
        char node[8];
        snprintf(node, sizeof node, "n%d", i);
        s_agent(fx->store, node, "570.86", 1000);
    }
    s_gpu_campaign(fx->store, "c1", 2000, 1.0);
    for (int i = 1; i <= 6; i++) {
        char node[8];
        snprintf(node, sizeof node, "n%d", i);
        s_agent(fx->store, node, "580.159", 3000);
    }
    s_gpu_campaign(fx->store, "c2", 4000, 0.92);
    s_agent(fx->store, "n2", "999.1", 5000); /* after c2 started: not its fingerprint */

    compare_t *c = s_compare(fx, "c1", "c2");
    assert_true(compare_has_regression(c));
    assert_int_equal(c->n_regressions, 1);
    const compare_item_t *it = &c->regressions[0];
    assert_true(it->fleet_wide);
    assert_string_equal(it->part, "fleet");
    assert_string_equal(it->metric, "gpu*.tflops_median");
    assert_int_equal(it->fleet_parts, 12);
    assert_int_equal(it->parts_beyond, 12);
    assert_true(fabs(it->change + 0.08) < 0.001);
    assert_int_equal(it->n_nodes, 6);
    assert_int_equal(c->n_fp_changes, 1);
    assert_string_equal(c->fp_changes[0].component, "nvidia_driver");
    assert_string_equal(c->fp_changes[0].base, "570.86");
    assert_string_equal(c->fp_changes[0].now, "580.159");
    assert_int_equal(c->fp_changes[0].n_nodes, 6);
    assert_int_equal(c->n_unknown, 0); /* seed is known, and not compared */
    assert_int_equal(c->values_compared, 12);
    char *text = s_text(fx, c);
    if (!strstr(text, "stage burn: gpu*.tflops_median -8.0%") ||
        !strstr(text, "since the base: nvidia_driver 570.86 -> 580.159 on n[1-6]") ||
        !strstr(text, "summary: REGRESSION: 0 regression(s) of parts, 1 fleet-wide"))
        fail_msg("text:\n%s", text);
    free(text);
    if (system("python3 -c '' >/dev/null 2>&1") == 0)
        assert_int_equal(
            s_check_json(fx, c,
                         "assert d['format'] == 'fleetburn-compare' and d['verdict'] == "
                         "'regression'\n"
                         "r = d['regressions'][0]\n"
                         "assert r['part'] == 'fleet' and r['fleet_wide'] is True, r\n"
                         "assert set(r) >= {'part', 'metric', 'base', 'now', 'change', "
                         "'fleet_change'}, r\n"
                         "assert abs(r['change'] + 0.08) < 0.001 and r['judged_by'] == 'fleet'\n"
                         "assert r['fingerprint_changes'] == [{'component': 'nvidia_driver', "
                         "'base': '570.86', 'now': '580.159', 'nodes': 'n[1-6]'}], r\n"
                         "assert d['fingerprint_changes'] == r['fingerprint_changes']\n"
                         "assert d['improvements'] == [] and d['counts']['values'] == 12\n"
                         "assert d['base']['id'] == 'c1' and d['campaign']['id'] == 'c2'\n"),
            0);
    compare_destroy(&c);

    /* The other way round, the same fleet is 8.7% faster: a fleet-wide improvement. */
    c = s_compare(fx, "c2", "c1");
    assert_false(compare_has_regression(c));
    assert_int_equal(c->n_improvements, 1);
    assert_true(c->improvements[0].fleet_wide);
    compare_destroy(&c);
}

/* The pair stage and friends: the throttled member named with its pair, things in one campaign
 * only listed, an unknown metric counted, a two-node stage judged on the tolerance alone. */
static void s_net_campaign(store_t *store, const char *id, uint64_t t0, const char *yaml,
                           double n3_tx, bool extra_stage, bool extra_pair)
{
    assert_int_equal(store_campaign_create(store, id, "net-check", "c.yaml", yaml, t0), 0);
    int64_t mem = s_stage(store, id, 0, "mem", "memtest");
    const char *names[] = {"bandwidth_mbs", "mytool.score"};
    double v1[] = {5000, 7}, v2[] = {extra_stage ? 5100 : 3000, 7.5};
    s_node_task(store, id, mem, 0, "n1", 2, names, v1);
    s_node_task(store, id, mem, 0, "n2", 2, names, v2);
    int64_t net = s_stage(store, id, 1, "net", "netbw");
    s_pair_task(store, id, net, "r0.g0", "n1", "n2", 9.41, 9.38);
    s_pair_task(store, id, net, "r0.g1", "n4", "n3", 9.40, n3_tx); /* nodes stored unsorted */
    s_pair_task(store, id, net, "r0.g2", "n5", "n6", 9.36, 9.42);
    s_pair_task(store, id, net, "r1.g0", "n1", "n3", 9.39, n3_tx);
    s_pair_task(store, id, net, "r1.g1", "n2", "n5", 9.43, 9.40);
    if (extra_pair)
        s_pair_task(store, id, net, "r1.g2", "n7", "n8", 9.4, 9.4);
    else
        s_pair_task(store, id, net, "r1.g2", "n4", "n6", 9.37, 9.41);
    /* a bisect follow-up and the diagnosis are not compared */
    s_pair_task(store, id, net, "b1.g0", "n3", "n6", 1.0, 1.0);
    if (extra_stage) {
        int64_t x = s_stage(store, id, 2, "extra", "sleep");
        const char *sn[] = {"slept_ms"};
        double sv[] = {100};
        s_node_task(store, id, x, 2, "n1", 1, sn, sv);
    }
    s_finish(store, id, t0 + 100);
}

static void test_pair_outlier_and_unmatched(void **state)
{
    fixture_t *fx = *state;
    s_net_campaign(fx->store, "b1", 1000, "name: net-check\n", 9.39, true, false);
    s_net_campaign(fx->store, "b2", 2000, "name: net-check\n", 0.9, false, true);
    compare_t *c = s_compare(fx, "b1", "b2");
    /* n3's two pairs: its own tx and its partners' rx; the memtest node n2 at -41% on the
     * tolerance alone (two nodes). */
    assert_int_equal(c->n_regressions, 5);
    size_t tx = 0, rx = 0, mem = 0;
    for (size_t i = 0; i < c->n_regressions; i++) {
        const compare_item_t *it = &c->regressions[i];
        assert_false(it->fleet_wide);
        if (!strcmp(it->metric, "netbw.tx_gbps@n3")) {
            tx++;
            assert_true(!strcmp(it->part, "n3,n4") || !strcmp(it->part, "n1,n3"));
            assert_true(it->by_fleet);
            assert_int_equal(it->fleet_parts, 10); /* 5 common pairs x 2 members */
        } else if (!strncmp(it->metric, "netbw.rx_gbps@", 14)) {
            rx++;
        } else {
            assert_string_equal(it->metric, "bandwidth_mbs");
            assert_string_equal(it->part, "n2");
            assert_false(it->by_fleet);
            mem++;
        }
    }
    assert_int_equal(tx, 2);
    assert_int_equal(rx, 2);
    assert_int_equal(mem, 1);
    /* n3 is in both regressed pairs */
    assert_int_equal(c->n_suspects, 1);
    assert_string_equal(c->suspects[0].node, "n3");
    assert_int_equal(c->suspects[0].regressed_parts, 2);
    /* only in one: stage extra (base), pairs n4,n6 (base) and n7,n8 (now) */
    bool extra = false, n46 = false, n78 = false;
    for (size_t i = 0; i < c->n_unmatched; i++) {
        const compare_unmatched_t *u = &c->unmatched[i];
        extra |= !u->part && !strcmp(u->stage, "extra") && u->in_base;
        n46 |= u->part && !strcmp(u->part, "n4,n6") && u->in_base;
        n78 |= u->part && !strcmp(u->part, "n7,n8") && !u->in_base;
    }
    assert_true(extra && n46 && n78);
    assert_int_equal(c->n_unknown, 1);
    assert_string_equal(c->unknown[0].name, "mytool.score");
    assert_int_equal(c->unknown[0].count, 2);
    assert_int_equal(c->n_small, 1); /* bandwidth_mbs of 2 nodes */
    char *text = s_text(fx, c);
    if (!strstr(text, "n3 is in 2 of the 2 regressed parts of stage net") ||
        !strstr(text, "stage extra only in the base") ||
        !strstr(text, "stage net: n7,n8 only in the compared campaign") ||
        !strstr(text, "mytool.score: no default rule (2 value(s) skipped)") ||
        !strstr(text, "stage mem: bandwidth_mbs (2 value(s)) judged on the tolerance alone"))
        fail_msg("text:\n%s", text);
    free(text);
    compare_destroy(&c);

    /* The campaign names the unknown metric (and loosens memtest): compared, no longer counted. */
    s_net_campaign(fx->store, "b3", 3000,
                   "name: net-check\nregress:\n  mytool.score: 5% higher\n  bandwidth_mbs: 50%\n",
                   0.9, false, true);
    c = s_compare(fx, "b1", "b3");
    assert_int_equal(c->n_unknown, 0);
    assert_int_equal(c->n_regressions, 4); /* n2's memtest is within 50% now */
    assert_true(c->values_compared > 2);
    compare_destroy(&c);
}

static int s_count_baselines(const store_baseline_t *b, void *arg)
{
    (*(int *)arg)++;
    assert_non_null(b->campaign_name);
    return 0;
}

/* Named baselines and the predecessor `latest` stands for: the previous finished campaign of the
 * same name. */
static void test_baselines_and_previous(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    assert_int_equal(store_campaign_create(s, "a1", "X", NULL, NULL, 100), 0);
    s_finish(s, "a1", 150);
    assert_int_equal(store_campaign_create(s, "a2", "X", NULL, NULL, 200), 0);
    assert_int_equal(store_campaign_end(s, "a2", "cancelled", FB_VERDICT_ERROR, 250), 0);
    assert_int_equal(store_campaign_create(s, "a3", "Y", NULL, NULL, 300), 0);
    s_finish(s, "a3", 350);
    assert_int_equal(store_campaign_create(s, "a4", "X", NULL, NULL, 400), 0);
    assert_int_equal(store_campaign_finish(s, "a4", FB_VERDICT_FAIL, 450), 0); /* failed: counts */
    assert_int_equal(store_campaign_create(s, "a5", "X", NULL, NULL, 500), 0); /* running */
    char *id = NULL;
    assert_int_equal(store_campaign_previous(s, "X", 500, "a5", &id), 0);
    assert_string_equal(id, "a4");
    free(id);
    assert_int_equal(store_campaign_previous(s, "X", 400, "a4", &id), 0);
    assert_string_equal(id, "a1"); /* a2 was cancelled */
    free(id);
    assert_int_equal(store_campaign_previous(s, "X", 100, "a1", &id), -ENOENT);
    assert_null(id);
    assert_int_equal(store_campaign_previous(s, "Y", UINT64_MAX, NULL, &id), 0);
    assert_string_equal(id, "a3");
    free(id);

    char *prev = NULL;
    assert_int_equal(store_baseline_set(s, "golden", "a1", 1000, &prev), 0);
    assert_null(prev);
    assert_int_equal(store_baseline_get(s, "golden", &id), 0);
    assert_string_equal(id, "a1");
    free(id);
    assert_int_equal(store_baseline_set(s, "golden", "a3", 2000, &prev), 0);
    assert_string_equal(prev, "a1");
    free(prev);
    assert_int_equal(store_baseline_set(s, "other", "nope", 2000, NULL), -ENOENT);
    assert_int_equal(store_baseline_get(s, "other", &id), -ENOENT);
    assert_int_equal(store_baseline_set(s, "b", "a4", 3000, NULL), 0);
    int n = 0;
    assert_int_equal(store_baseline_foreach(s, s_count_baselines, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(store_baseline_delete(s, "b"), 0);
    assert_int_equal(store_baseline_delete(s, "b"), -ENOENT);
    char *name = NULL, *st = NULL;
    uint64_t started = 0;
    assert_int_equal(store_campaign_head(s, "a2", &name, &st, &started), 0);
    assert_string_equal(name, "X");
    assert_string_equal(st, "cancelled");
    assert_true(started == 200);
    free(name);
    free(st);
    assert_int_equal(store_campaign_head(s, "zz", NULL, NULL, NULL), -ENOENT);
    compare_t *c = NULL;
    char *err = NULL;
    assert_int_equal(compare_campaigns(s, "a1", "zz", &c, &err), -ENOENT);
    assert_string_equal(err, "no campaign 'zz'");
    free(err);
}

static void s_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s", err);
}

/* A timeline of schema version 2 (two runs of one memtest campaign, written by fleetburn before
 * baselines existed) is migrated; its campaigns compare, `latest` finds the first from the second,
 * and a baseline can be kept. */
static void test_v2_timeline(void **state)
{
    fixture_t *fx = *state;
    store_destroy(&fx->store);
    unlink(fx->path);
    FILE *f = fopen(FB_FIXTURES "/timeline-v2.sql", "r");
    assert_non_null(f);
    char *sql = NULL;
    size_t cap = 0;
    assert_true(getdelim(&sql, &cap, '\0', f) > 0);
    fclose(f);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    s_exec(db, sql);
    free(sql);
    sqlite3_close(db);

    char *err = NULL;
    assert_int_equal(store_open(fx->path, &fx->store, &err), 0);
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(
        sqlite3_prepare_v2(db,
                           "SELECT (SELECT user_version FROM pragma_user_version),"
                           " (SELECT COUNT(*) FROM baselines),"
                           " (SELECT id FROM campaigns ORDER BY started_ms LIMIT 1),"
                           " (SELECT id FROM campaigns ORDER BY started_ms DESC LIMIT 1)",
                           -1, &st, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), STORE_SCHEMA_VERSION);
    assert_int_equal(sqlite3_column_int(st, 1), 0);
    char *first = xstrdup((const char *)sqlite3_column_text(st, 2));
    char *second = xstrdup((const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    sqlite3_close(db);

    char *id = NULL;
    assert_int_equal(store_campaign_previous(fx->store, "v2-fixture", UINT64_MAX, second, &id), 0);
    assert_string_equal(id, first);
    free(id);
    compare_t *c = s_compare(fx, first, second);
    assert_int_equal(c->parts_compared, 2);
    assert_true(c->values_compared >= 4); /* bandwidth_mbs, miscompares (+ EDAC) of two nodes */
    assert_int_equal(c->n_unknown, 0);
    assert_int_equal(c->n_fp_changes, 0); /* same machine, same build */
    compare_destroy(&c);
    assert_int_equal(store_baseline_set(fx->store, "before-upgrade", first, 5, NULL), 0);
    free(first);
    free(second);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fleet_shift_with_driver_change, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_pair_outlier_and_unmatched, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_baselines_and_previous, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_v2_timeline, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
