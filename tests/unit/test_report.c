/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the reports: the JSON report checked field by field by Python's json module (strict
 * UTF-8), hostile text from nodes kept valid in JSON and harmless on a terminal, the text
 * summary, the nodes table, the campaign verdict rule and the first-cut diagnosis. */
#include "report.h"
#include "util.h"
#include "json_check.h"
#include "store_fixture.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef store_fixture_t fixture_t;

static bool s_have_python(void)
{
    return system("python3 -c '' >/dev/null 2>&1") == 0;
}

/* Writes the JSON report of campaign_id into a Python program that parses it as strict UTF-8
 * JSON into d and then runs checks (Python statements, asserts). Returns its exit status. */
static int s_check_json(fixture_t *fx, const char *campaign_id, const char *checks)
{
    FILE *py = json_check_begin(fx->dir, checks);
    int rc = report_write_json(fx->store, campaign_id, py);
    int status = json_check_end(py);
    assert_int_equal(rc, 0);
    return status;
}

static void s_insert(store_t *store, const char *result_id, const char *task_id, const char *node,
                     fb_verdict_t verdict, const char *metric, double value, const char *unit,
                     const char *part, const char *kind, const char *what, const char *error)
{
    store_fixture_result(store, &(store_fixture_result_t){.result_id = result_id,
                                                          .task_id = task_id,
                                                          .node = node,
                                                          .verdict = verdict,
                                                          .started_ms = 1700000001000ull,
                                                          .finished_ms = 1700000061000ull,
                                                          .stored_ms = 1700000062000ull,
                                                          .metric = metric,
                                                          .value = value,
                                                          .unit = unit,
                                                          .part = part,
                                                          .kind = kind,
                                                          .what = what,
                                                          .error = error});
}

/* Campaign c1: stage mem (t1 passes on node-a), stage gpu (t2 fails on node-b with a finding,
 * t3 times out on node-c with none, t4 passes on node-a and node-b as a group). */
static void s_campaign(store_t *store)
{
    const uint64_t t0 = 1700000000000ull;
    assert_int_equal(store_campaign_create(store, "c1", "nightly", "rack4.yaml", "yaml", t0), 0);
    int64_t mem = 0, gpu = 0;
    assert_int_equal(store_stage_create(store, "c1", 0, "mem", "memtest",
                                        "{\"size\":\"1GiB\",\"passes\":2}", "continue", 600000,
                                        &mem),
                     0);
    assert_int_equal(store_stage_create(store, "c1", 1, "gpu", "gpu-burn", NULL, "stop", 0, &gpu),
                     0);
    assert_int_equal(store_stage_start(store, mem, t0 + 10), 0);
    const char *a[] = {"node-a"}, *b[] = {"node-b"}, *cc[] = {"node-c"};
    const char *ab[] = {"node-a", "node-b"};
    assert_int_equal(store_task_create(store, "t1", "c1", mem, a, 1, t0 + 20), 0);
    s_insert(store, "r1", "t1", "node-a", FB_VERDICT_PASS, "bandwidth_mbs", 1234.5, "MB/s", NULL,
             NULL, NULL, NULL);
    assert_int_equal(store_stage_finish(store, mem, FB_VERDICT_PASS, t0 + 70000), 0);
    assert_int_equal(store_stage_start(store, gpu, t0 + 70010), 0);
    assert_int_equal(store_task_create(store, "t2", "c1", gpu, b, 1, t0 + 70020), 0);
    assert_int_equal(store_task_create(store, "t3", "c1", gpu, cc, 1, t0 + 70020), 0);
    assert_int_equal(store_task_create(store, "t4", "c1", gpu, ab, 2, t0 + 70020), 0);
    s_insert(store, "r2", "t2", "node-b", FB_VERDICT_FAIL, "tflops", 12.5, "TFLOP/s", "node-b/gpu0",
             "gpu", "XID 79", "fell off the bus");
    assert_int_equal(
        store_task_finish(store, "t3", FB_VERDICT_TIMEOUT, "no result in 10m", t0 + 80000), 0);
    s_insert(store, "r4a", "t4", "node-a", FB_VERDICT_PASS, "busbw_gbs", 180, "GB/s", NULL, NULL,
             NULL, NULL);
    s_insert(store, "r4b", "t4", "node-b", FB_VERDICT_PASS, "busbw_gbs", 170, "GB/s", NULL, NULL,
             NULL, NULL);
    assert_int_equal(store_stage_finish(store, gpu, FB_VERDICT_FAIL, t0 + 90000), 0);
    assert_int_equal(store_campaign_finish(store, "c1", FB_VERDICT_FAIL, t0 + 90000), 0);
}

static void test_json_fields(void **state)
{
    if (!s_have_python())
        skip();
    fixture_t *fx = *state;
    s_campaign(fx->store);
    const char *checks =
        "assert d['format'] == 'fleetburn-report' and d['format_version'] == 1\n"
        "c = d['campaign']\n"
        "assert c['id'] == 'c1' and c['name'] == 'nightly' and c['source'] == 'rack4.yaml'\n"
        "assert c['verdict'] == 'fail' and c['state'] == 'finished'\n"
        "assert c['recorded_verdict'] == 'fail'\n"
        "assert c['started'] == '2023-11-14T22:13:20.000Z', c['started']\n"
        "assert c['finished'] == '2023-11-14T22:14:50.000Z' and c['duration_ms'] == 90000\n"
        "assert c['counts']['tasks'] == 4 and c['counts']['stages'] == 2\n"
        "assert c['counts']['pass'] == 2 and c['counts']['fail'] == 1\n"
        "assert c['counts']['timeout'] == 1 and c['counts']['pending'] == 0\n"
        "s = d['stages']\n"
        "assert [x['name'] for x in s] == ['mem', 'gpu']\n"
        "assert s[0]['params'] == {'size': '1GiB', 'passes': 2}\n"
        "assert s[1]['params'] == {}\n"
        "assert s[0]['workload'] == 'memtest' and s[0]['verdict'] == 'pass'\n"
        "assert s[0]['timeout_ms'] == 600000 and s[1]['timeout_ms'] is None\n"
        "t1 = s[0]['tasks'][0]\n"
        "assert t1['id'] == 't1' and t1['nodes'] == ['node-a'] and t1['verdict'] == 'pass'\n"
        "assert t1['metrics'] == {'bandwidth_mbs': 1234.5}\n"
        "assert t1['units'] == {'bandwidth_mbs': 'MB/s'}\n"
        "assert t1['findings'] == [] and t1['error'] is None\n"
        "assert t1['results'][0]['result_id'] == 'r1'\n"
        "t2, t3, t4 = s[1]['tasks']\n"
        "assert t2['verdict'] == 'fail' and t2['error'] == 'fell off the bus'\n"
        "assert t2['findings'][0]['part'] == 'node-b/gpu0'\n"
        "assert t2['findings'][0]['kind'] == 'gpu' and t2['findings'][0]['what'] == 'XID 79'\n"
        "assert t3['verdict'] == 'timeout' and t3['results'] == []\n"
        "assert t4['nodes'] == ['node-a', 'node-b']\n"
        "assert t4['metrics'] == {'busbw_gbs@node-a': 180, 'busbw_gbs@node-b': 170}, t4\n"
        "assert [r['node'] for r in t4['results']] == ['node-a', 'node-b']\n"
        "assert t4['results'][0]['metrics'] == {'busbw_gbs': 180}\n"
        "g = d['diagnosis']\n"
        "assert g['cleared'] == []\n"
        "assert len(g['bad']) == 1\n"
        "bad = g['bad'][0]\n"
        "assert bad['part'] == 'node-b/gpu0' and bad['kind'] == 'gpu'\n"
        "assert bad['confidence'] == 1.0\n"
        "assert bad['evidence'][0]['task'] == 't2' and bad['evidence'][0]['what'] == 'XID 79'\n"
        "assert [u['task'] for u in g['unattributed']] == ['t3']\n";
    assert_int_equal(s_check_json(fx, "c1", checks), 0);
}

/* The text report of a campaign (report_write_text must succeed), as a heap string. */
static char *s_text_report(store_t *store, const char *campaign_id)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_int_equal(report_write_text(store, campaign_id, mem), 0);
    fclose(mem);
    return text;
}

/* The nodes report (report_write_nodes must succeed), as a heap string. */
static char *s_nodes_report(store_t *store)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_int_equal(report_write_nodes(store, mem), 0);
    fclose(mem);
    return text;
}

static void test_json_hostile_strings(void **state)
{
    if (!s_have_python())
        skip();
    fixture_t *fx = *state;
    const char *hostile = "\"quoted\" \\ back\nline\ttab\x01\x1b[31mred \xff\xfe\xc3\x28 "
                          "\xed\xa0\x80 \xe0\x80\x80 \xf4\x90\x80\x80 end \xc3";
    assert_int_equal(store_campaign_create(fx->store, hostile, hostile, hostile, hostile, 5), 0);
    int64_t stage = 0;
    assert_int_equal(store_stage_create(fx->store, hostile, 0, hostile, hostile,
                                        "{\"note\":\"a\\\"b\\n\",\"x\":[1,{\"y\":null}]}", hostile,
                                        0, &stage),
                     0);
    const char *nodes[] = {hostile, "node-\xff"};
    assert_int_equal(store_task_create(fx->store, hostile, hostile, stage, nodes, 2, 6), 0);
    s_insert(fx->store, hostile, hostile, hostile, FB_VERDICT_FAIL, hostile, INFINITY, hostile,
             hostile, hostile, hostile, hostile);
    const char *checks =
        "c = d['campaign']\n"
        "assert c['name'].startswith('\"quoted\" \\\\ back\\nline\\ttab\\x01\\x1b[31mred ')\n"
        "assert c['name'].endswith(' end \\ufffd'), ascii(c['name'])\n"
        "assert c['verdict'] == 'running'\n"
        "t = d['stages'][0]['tasks'][0]\n"
        "assert d['stages'][0]['params'] == {'note': 'a\"b\\n', 'x': [1, {'y': None}]}\n"
        "assert len(t['nodes']) == 2 and t['nodes'][1] == 'node-\\ufffd'\n"
        "assert list(t['metrics'].values()) == [None]\n"
        "assert t['findings'][0]['what'] == c['name']\n"
        "assert d['diagnosis']['bad'][0]['part'] == c['name']\n";
    assert_int_equal(s_check_json(fx, hostile, checks), 0);

    /* The text report keeps control characters off the terminal. */
    char *text = s_text_report(fx->store, hostile);
    assert_null(strchr(text, '\x1b'));
    assert_null(strchr(text, '\x01'));
    assert_non_null(strstr(text, "RUNNING"));
    free(text);
}

static void test_unknown_campaign(void **state)
{
    fixture_t *fx = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_int_equal(report_write_json(fx->store, "nope", mem), -ENOENT);
    assert_int_equal(report_write_text(fx->store, "nope", mem), -ENOENT);
    fclose(mem);
    assert_int_equal(len, 0);
    free(text);
}

static void test_write_error(void **state)
{
    fixture_t *fx = *state;
    s_campaign(fx->store);
    FILE *ro = fopen("/dev/null", "r");
    assert_non_null(ro);
    assert_int_equal(report_write_json(fx->store, "c1", ro), -EIO);
    fclose(ro);
}

static void test_text_report(void **state)
{
    fixture_t *fx = *state;
    s_campaign(fx->store);
    char *text = s_text_report(fx->store, "c1");
    const char *expect[] = {"c1  nightly",
                            "FAIL (finished)",
                            "1m30s",
                            "4: 2 pass, 1 fail, 1 timeout",
                            "STAGE",
                            "1234.5 MB/s", /* memtest's headline figure */
                            "busbw_gbs@node-a=180 GB/s",
                            "node-a,node-b",
                            "findings\n",
                            "node-b/gpu0",
                            "XID 79",
                            "task t2 on node-b",
                            "why tasks did not pass (errors, timeouts, skips)\n",
                            "t3 (timeout): no result in 10m"};
    for (size_t i = 0; i < FB_ARRAY_LEN(expect); i++)
        if (!strstr(text, expect[i]))
            fail_msg("text report lacks \"%s\":\n%s", expect[i], text);
    free(text);
}

/* A bisect stage's diagnosis with two undecided NICs, one on watch: the text report gives the
 * other its own line and counts the one on watch on a line of its own; the JSON report says
 * which is which. */
static void test_undecided_on_watch(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    const uint64_t t0 = 1700000000000ull;
    assert_int_equal(store_campaign_create(s, "c9", "rack", "rack.yaml", "yaml", t0), 0);
    int64_t net = 0;
    assert_int_equal(store_stage_create(s, "c9", 0, "net", "rdmabw", NULL, "bisect", 0, &net), 0);
    assert_int_equal(store_stage_start(s, net, t0 + 10), 0);
    const char *pair[] = {"node-a", "node-b"};
    assert_int_equal(store_task_create(s, "c9/0/diagnosis", "c9", net, pair, 2, t0 + 20), 0);
    const char *parts[] = {"node-a/mlx5_0", "node-b/mlx5_1"};
    const char *why[] = {"undecided, on watch: failed 0 of 20 informative tests since its first "
                         "failure; its passes rule out a steady fault, as clearing would",
                         "undecided: failed 1 of 3 informative tests since its first failure"};
    for (int k = 0; k < 2; k++)
        store_fixture_undecided_nic(s, "c9/0/diagnosis", pair[k], parts[k], why[k], k == 0,
                                    t0 + 30);
    assert_int_equal(store_stage_finish(s, net, FB_VERDICT_PASS, t0 + 40), 0);
    assert_int_equal(store_campaign_finish(s, "c9", FB_VERDICT_PASS, t0 + 40), 0);
    char *text = s_text_report(s, "c9");
    if (!strstr(text, "UNDECIDED node-b/mlx5_1") || strstr(text, "UNDECIDED node-a/mlx5_0") ||
        !strstr(text, "on watch  1 part(s): node-a/mlx5_0\n"))
        fail_msg("the text report does not set the part on watch apart:\n%s", text);
    free(text);
    if (!s_have_python())
        return;
    assert_int_equal(
        s_check_json(fx, "c9",
                     "u = {x['part']: x['on_watch'] for x in d['diagnosis']['undecided']}\n"
                     "assert u == {'node-a/mlx5_0': True, 'node-b/mlx5_1': False}, u\n"),
        0);
}

static void test_nodes_report(void **state)
{
    fixture_t *fx = *state;
    char *text = s_nodes_report(fx->store);
    assert_non_null(strstr(text, "no agent"));
    free(text);

    uint64_t now = fb_now_ms();
    assert_int_equal(
        store_agent_upsert(fx->store, "node-a", "alive", "8x H200 \x1b[2J", "{}", now - 5000), 0);
    assert_int_equal(store_agent_upsert(fx->store, "node-b", "alive", NULL, NULL, now - 90000), 0);
    assert_int_equal(store_agent_set_state(fx->store, "node-b", "lost", now - 60000), 0);
    text = s_nodes_report(fx->store);
    assert_non_null(strstr(text, "LAST SEEN"));
    assert_non_null(strstr(text, "node-a"));
    assert_non_null(strstr(text, "8x H200 ?[2J"));
    assert_non_null(strstr(text, "lost"));
    assert_non_null(strstr(text, "ago)"));
    assert_null(strchr(text, '\x1b'));
    const char *a = strstr(text, "node-a"), *b = strstr(text, "node-b");
    assert_true(a && b && a < b);
    free(text);
}

static const char *s_verdict_of(store_t *store, const char *id)
{
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(store, id, &c), 0);
    const char *v = report_campaign_verdict(c);
    store_campaign_destroy(&c);
    return v;
}

static void test_campaign_verdict(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    const char *n[] = {"node-a"};
    int64_t stage = 0;
    assert_int_equal(store_campaign_create(s, "ok", NULL, NULL, NULL, 1), 0);
    assert_int_equal(store_stage_create(s, "ok", 0, "s", "w", "{}", NULL, 0, &stage), 0);
    assert_int_equal(store_task_create(s, "ok-1", "ok", stage, n, 1, 2), 0);
    assert_int_equal(store_task_create(s, "ok-2", "ok", stage, n, 1, 2), 0);
    s_insert(s, "r-ok-1", "ok-1", "node-a", FB_VERDICT_PASS, NULL, 0, NULL, NULL, NULL, NULL, NULL);
    assert_string_equal(s_verdict_of(s, "ok"), "running");
    assert_int_equal(store_task_finish(s, "ok-2", FB_VERDICT_SKIPPED, "no GPU", 3), 0);
    assert_int_equal(store_campaign_finish(s, "ok", FB_VERDICT_PASS, 4), 0);
    assert_string_equal(s_verdict_of(s, "ok"), "pass");

    /* A task left without a verdict fails a campaign that ended. */
    assert_int_equal(store_campaign_create(s, "pending", NULL, NULL, NULL, 1), 0);
    assert_int_equal(store_stage_create(s, "pending", 0, "s", "w", NULL, NULL, 0, &stage), 0);
    assert_int_equal(store_task_create(s, "p-1", "pending", stage, n, 1, 2), 0);
    assert_int_equal(store_campaign_finish(s, "pending", FB_VERDICT_PASS, 4), 0);
    assert_string_equal(s_verdict_of(s, "pending"), "fail");

    /* An interrupted campaign fails even with every task passed. */
    assert_int_equal(store_campaign_create(s, "cut", NULL, NULL, NULL, 1), 0);
    assert_int_equal(store_campaign_interrupt_stale(s, 9), 1);
    assert_string_equal(s_verdict_of(s, "cut"), "fail");
}


/* Software versions that differ across the campaign's nodes are shown, naming the nodes. */
static void test_fleet_software(void **state)
{
    fixture_t *fx = *state;
    s_campaign(fx->store);
    const uint64_t t = 1700000000000ull;
    assert_int_equal(store_agent_upsert(fx->store, "node-a", "alive", "a",
                                        "{\"software\":{\"kernel\":\"6.8.0\",\"nvidia_driver\":\"580.95\"}}", t),
                     0);
    assert_int_equal(store_agent_upsert(fx->store, "node-b", "alive", "b",
                                        "{\"software\":{\"kernel\":\"6.8.0\",\"nvidia_driver\":\"570.10\"}}", t),
                     0);
    /* An agent outside the campaign does not count. */
    assert_int_equal(store_agent_upsert(fx->store, "node-z", "alive", "z",
                                        "{\"software\":{\"kernel\":\"5.15\"}}", t),
                     0);
    if (s_have_python())
        assert_int_equal(
            s_check_json(fx, "c1",
                         "sw = {e['component']: e for e in d['fleet']['software']}\n"
                         "assert sw['nvidia_driver']['differs'] is True, sw\n"
                         "assert sw['kernel']['differs'] is False, sw\n"
                         "v = {x['version']: x['nodes'] for x in sw['nvidia_driver']['versions']}\n"
                         "assert v == {'570.10': ['node-b'], '580.95': ['node-a']}, v\n"
                         "assert sw['kernel']['versions'][0]['nodes'] == ['node-a', 'node-b']\n"),
            0);
    char *text = s_text_report(fx->store, "c1");
    assert_non_null(strstr(text, "software that differs across nodes"));
    assert_non_null(strstr(text, "nvidia_driver: 570.10 on node-b; 580.95 on node-a"));
    assert_null(strstr(text, "kernel:"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        STORE_FIXTURE_TEST(test_json_fields),      STORE_FIXTURE_TEST(test_json_hostile_strings),
        STORE_FIXTURE_TEST(test_unknown_campaign), STORE_FIXTURE_TEST(test_write_error),
        STORE_FIXTURE_TEST(test_text_report),      STORE_FIXTURE_TEST(test_undecided_on_watch),
        STORE_FIXTURE_TEST(test_nodes_report),     STORE_FIXTURE_TEST(test_campaign_verdict),
        STORE_FIXTURE_TEST(test_fleet_software),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
