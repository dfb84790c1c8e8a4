/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of what the coordinator's Slurm actions rest on: the child processes that run sinfo and
 * scontrol (coordinator/subprocess.h: argv verbatim, no shell, output bounded, timeouts that
 * kill what the program started), each node's outcome in a campaign read back from a real
 * store (coordinator/report_outcome.h: which nodes a bad part names, which passed), and the
 * Slurm selections stored with a campaign (schema 3). */
#include "report_outcome.h"
#include "store.h"
#include "subprocess.h"
#include "util.h"
#include "store_fixture.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- child processes ----------------------------------------------------------------------- */

static void test_subprocess_argv(void **state)
{
    (void)state;
    /* every argument reaches the program as it is: blanks, quotes, $, ; and backquotes too */
    const char *argv[] = {"printf",    "%s|",        "Reason=fleetburn: a b",
                          "\"q\" 'q'", "$(id);`id`", NULL};
    subprocess_result_t res;
    assert_int_equal(subprocess_run(argv, 5000, 4096, &res), 0);
    assert_string_equal(res.out, "Reason=fleetburn: a b|\"q\" 'q'|$(id);`id`|");
    assert_int_equal(res.exit_status, 0);
    subprocess_result_fini(&res);
    char *text = subprocess_argv_text(argv);
    assert_string_equal(text, "printf %s| 'Reason=fleetburn: a b' '\"q\" 'q'' $(id);`id`");
    free(text);
}

static void test_subprocess_failures(void **state)
{
    (void)state;
    subprocess_result_t res;
    const char *missing[] = {"fleetburn-no-such-program", NULL};
    assert_int_equal(subprocess_run(missing, 5000, 4096, &res), -1);
    assert_int_equal(res.spawn_error, ENOENT);
    char *why = subprocess_failure(&res, 5000);
    assert_string_equal(why, "cannot run it: No such file or directory");
    free(why);
    subprocess_result_fini(&res);

    /* a failing program: its status and what it said on stderr, on one line */
    const char *ls[] = {"ls", "/fleetburn/no/such/dir", NULL};
    assert_int_equal(subprocess_run(ls, 5000, 4096, &res), -1);
    assert_int_equal(res.exit_status, 2);
    why = subprocess_failure(&res, 5000);
    assert_non_null(strstr(why, "exit status 2: ls: cannot access"));
    assert_null(strchr(why, '\n'));
    free(why);
    subprocess_result_fini(&res);

    /* output past the limit is read and dropped, and says so */
    const char *yes[] = {"head", "-c", "100000", "/dev/zero", NULL};
    assert_int_equal(subprocess_run(yes, 5000, 1000, &res), 0);
    assert_int_equal(res.out_len, 1000);
    assert_true(res.out_cut);
    subprocess_result_fini(&res);
}

/* A program that does not end is killed with what it started, which would otherwise hold its
 * pipes open. */
static void test_subprocess_timeout(void **state)
{
    (void)state;
    const char *argv[] = {"sh", "-c", "sleep 30 & echo started; sleep 30", NULL};
    subprocess_result_t res;
    uint64_t t0 = fb_mono_ms();
    assert_int_equal(subprocess_run(argv, 300, 4096, &res), -1);
    uint64_t took = fb_mono_ms() - t0;
    assert_true(res.timed_out);
    assert_int_equal(res.term_signal, 9);
    assert_string_equal(res.out, "started\n");
    assert_true(took < 3000);
    char *why = subprocess_failure(&res, 300);
    assert_string_equal(why, "did not end within 0.3s; killed");
    free(why);
    subprocess_result_fini(&res);
}

/* ---- a campaign in a store ------------------------------------------------------------------ */

typedef store_fixture_t fixture_t;

static void s_result(store_t *store, const char *result_id, const char *task_id, const char *node,
                     fb_verdict_t verdict, const char *part, const char *kind, const char *what)
{
    store_fixture_result(store, &(store_fixture_result_t){.result_id = result_id,
                                                          .task_id = task_id,
                                                          .node = node,
                                                          .verdict = verdict,
                                                          .started_ms = 1000,
                                                          .finished_ms = 2000,
                                                          .stored_ms = 2000,
                                                          .part = part,
                                                          .kind = kind,
                                                          .what = what});
}

/* A node task of stage with one result. */
static void s_node_task(store_t *store, const char *campaign, int64_t stage, const char *id,
                        const char *node, fb_verdict_t verdict, const char *part, const char *kind,
                        const char *what)
{
    const char *nodes[] = {node};
    assert_int_equal(store_task_create(store, id, campaign, stage, nodes, 1, 1000), 0);
    if (verdict == FB_VERDICT_LOST || verdict == FB_VERDICT_TIMEOUT)
        assert_int_equal(store_task_finish(store, id, verdict, "no result", 3000), 0);
    else
        s_result(store, id, id, node, verdict, part, kind, what);
}

static int64_t s_stage(store_t *store, const char *campaign, int idx, const char *name,
                       const char *on_fail, const char *const *plan, size_t n_plan)
{
    int64_t id = 0;
    assert_int_equal(
        store_stage_create(store, campaign, idx, name, "memtest", NULL, on_fail, 60000, &id), 0);
    assert_int_equal(store_stage_plan(store, id, 1, plan, n_plan), 0);
    assert_int_equal(store_stage_start(store, id, 1000), 0);
    return id;
}

static const report_bad_node_t *s_bad(const report_outcome_t *o, const char *node, const char *part)
{
    for (size_t i = 0; i < o->n_bad; i++)
        if (!strcmp(o->bad[i].node, node) && !strcmp(o->bad[i].part, part))
            return &o->bad[i];
    return NULL;
}

static bool s_note(const report_outcome_t *o, const char *text)
{
    for (size_t i = 0; i < o->n_notes; i++)
        if (strstr(o->notes[i], text))
            return true;
    return false;
}

static report_outcome_t s_outcome(fixture_t *fx, const char *id)
{
    store_campaign_t *c = NULL;
    assert_int_equal(store_campaign_load(fx->store, id, &c), 0);
    report_outcome_t o;
    report_outcome_build(c, &o);
    store_campaign_destroy(&c);
    return o;
}

/* Node tasks: a finding naming the node, a DIMM label (its node reported it), a timeout without
 * a finding, a lost task; a bisect pairs stage whose diagnosis names an uplink (no node), leaves
 * a node undecided and clears another. */
static void test_outcome_parts(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    assert_int_equal(store_campaign_create(s, "c1", "burn", "c1.yaml", "yaml", 1000), 0);
    const char *all[] = {"n1", "n2", "n3", "n4", "n5", "n6"};
    int64_t dram = s_stage(s, "c1", 0, "dram", "continue", all, 6);
    s_node_task(s, "c1", dram, "c1/0/n1", "n1", FB_VERDICT_PASS, NULL, NULL, NULL);
    s_node_task(s, "c1", dram, "c1/0/n2", "n2", FB_VERDICT_FAIL, "n2", "memory",
                "miscompare in walking_ones");
    s_node_task(s, "c1", dram, "c1/0/n3", "n3", FB_VERDICT_FAIL, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0",
                "dimm", "EDAC corrected errors +12");
    s_node_task(s, "c1", dram, "c1/0/n4", "n4", FB_VERDICT_TIMEOUT, NULL, NULL, NULL);
    s_node_task(s, "c1", dram, "c1/0/n5", "n5", FB_VERDICT_LOST, NULL, NULL, NULL);
    s_node_task(s, "c1", dram, "c1/0/n6", "n6", FB_VERDICT_PASS, NULL, NULL, NULL);
    assert_int_equal(store_stage_finish(s, dram, FB_VERDICT_FAIL, 4000), 0);
    const char *pair_plan[] = {"n1", "n6"};
    int64_t net = s_stage(s, "c1", 1, "net", "bisect", pair_plan, 2);
    const char *pair[] = {"n1", "n6"};
    assert_int_equal(store_task_create(s, "c1/1/r0.g0", "c1", net, pair, 2, 5000), 0);
    s_result(s, "c1/1/r0.g0@n1", "c1/1/r0.g0", "n1", FB_VERDICT_FAIL, NULL, NULL, NULL);
    s_result(s, "c1/1/r0.g0@n6", "c1/1/r0.g0", "n6", FB_VERDICT_FAIL, NULL, NULL, NULL);
    assert_int_equal(store_task_create(s, "c1/1/diagnosis", "c1", net, pair, 2, 6000), 0);
    s_result(s, "c1/1/diagnosis/up", "c1/1/diagnosis", "leaf01", FB_VERDICT_FAIL,
             "leaf01<->spine01", "link", "slow uplink");
    store_fixture_result_t res = {
        .result_id = "c1/1/diagnosis/n6",
        .task_id = "c1/1/diagnosis",
        .node = "n6",
        .verdict = FB_VERDICT_FAIL,
        .stored_ms = 6000,
        .metric = "undecided",
        .value = 1,
        .unit = "",
        .part = "n6",
        .kind = "node",
        .what = "undecided after 12 rounds",
    };
    store_fixture_result(s, &res);
    s_result(s, "c1/1/diagnosis/n1", "c1/1/diagnosis", "n1", FB_VERDICT_PASS, "n1", "node",
             "cleared");
    assert_int_equal(store_stage_finish(s, net, FB_VERDICT_FAIL, 7000), 0);
    assert_int_equal(store_campaign_end(s, "c1", "finished", FB_VERDICT_FAIL, 7000), 0);

    report_outcome_t o = s_outcome(fx, "c1");
    assert_int_equal(o.n_nodes, 6);
    const report_bad_node_t *b2 = s_bad(&o, "n2", "n2");
    assert_non_null(b2);
    assert_string_equal(b2->what, "dram: miscompare in walking_ones");
    const report_bad_node_t *b3 = s_bad(&o, "n3", "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_non_null(b3);
    assert_string_equal(b3->what, "dram: EDAC corrected errors +12");
    const report_bad_node_t *b4 = s_bad(&o, "n4", "n4");
    assert_non_null(b4);
    assert_string_equal(b4->what, "dram: timeout: no result");
    assert_int_equal(o.n_bad, 3); /* not n5 (lost), nor the uplink, nor undecided n6 */
    assert_true(s_note(&o, "task c1/0/n5 (lost) on n5 names no bad part; not drained"));
    assert_true(s_note(&o, "bad part leaf01<->spine01 (link) names no node of the campaign"));
    assert_true(s_note(&o, "undecided part n6 (node)"));
    /* n1 failed a pair test the diagnosis explains, and was cleared; n6 stays undecided */
    assert_int_equal(o.n_passed, 1);
    assert_string_equal(o.passed[0], "n1");
    report_outcome_free(&o);
}

/* An undecided NIC on watch (its passes ruled out a steady fault; only one in bursts is open)
 * holds no node back: n1 is resumed, with one note naming the part; n2, whose NIC is undecided
 * and not on watch, is not. */
static void test_outcome_on_watch(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    assert_int_equal(store_campaign_create(s, "c4", "burn", "c4.yaml", "yaml", 1000), 0);
    const char *pair[] = {"n1", "n2"};
    int64_t net = s_stage(s, "c4", 0, "net", "bisect", pair, 2);
    assert_int_equal(store_task_create(s, "c4/0/r0.g0", "c4", net, pair, 2, 2000), 0);
    s_result(s, "c4/0/r0.g0@n1", "c4/0/r0.g0", "n1", FB_VERDICT_FAIL, NULL, NULL, NULL);
    s_result(s, "c4/0/r0.g0@n2", "c4/0/r0.g0", "n2", FB_VERDICT_FAIL, NULL, NULL, NULL);
    assert_int_equal(store_task_create(s, "c4/0/diagnosis", "c4", net, pair, 2, 6000), 0);
    const char *parts[] = {"n1/mlx5_0", "n2/mlx5_0"};
    for (int k = 0; k < 2; k++)
        store_fixture_undecided_nic(s, "c4/0/diagnosis", pair[k], parts[k], "undecided", k == 0,
                                    6000);
    assert_int_equal(store_stage_finish(s, net, FB_VERDICT_PASS, 7000), 0);
    assert_int_equal(store_campaign_end(s, "c4", "finished", FB_VERDICT_PASS, 7000), 0);

    report_outcome_t o = s_outcome(fx, "c4");
    assert_int_equal(o.n_bad, 0);
    assert_int_equal(o.n_passed, 1);
    assert_string_equal(o.passed[0], "n1");
    assert_true(s_note(&o, "1 undecided part(s) on watch"));
    assert_true(s_note(&o, "resumed if they passed otherwise: n1/mlx5_0"));
    assert_true(s_note(&o, "undecided part n2/mlx5_0 (nic): not drained, and its nodes are not "
                           "resumed"));
    report_outcome_free(&o);
}

/* A cable found by the pair judgment names both its ends; a group failure that no part explains
 * names none; a stage that never ran leaves no node passed. */
static void test_outcome_links_groups_skipped(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    assert_int_equal(store_campaign_create(s, "c2", "net", "c2.yaml", "yaml", 1000), 0);
    const char *all[] = {"n1", "n2", "n3", "n4"};
    int64_t pairs = s_stage(s, "c2", 0, "pairs", "continue", all, 4);
    const char *p12[] = {"n1", "n2"}, *p34[] = {"n3", "n4"};
    assert_int_equal(store_task_create(s, "c2/0/r0.g0", "c2", pairs, p12, 2, 1000), 0);
    s_result(s, "c2/0/r0.g0@n1", "c2/0/r0.g0", "n1", FB_VERDICT_PASS, NULL, NULL, NULL);
    s_result(s, "c2/0/r0.g0@n2", "c2/0/r0.g0", "n2", FB_VERDICT_PASS, NULL, NULL, NULL);
    assert_int_equal(store_task_create(s, "c2/0/r0.g1", "c2", pairs, p34, 2, 1000), 0);
    s_result(s, "c2/0/r0.g1@n3", "c2/0/r0.g1", "n3", FB_VERDICT_FAIL, "n3<->n4", "link",
             "slow pair: 3.1 Gbit/s, the stage's median 94");
    s_result(s, "c2/0/r0.g1@n4", "c2/0/r0.g1", "n4", FB_VERDICT_FAIL, NULL, NULL, NULL);
    assert_int_equal(store_stage_finish(s, pairs, FB_VERDICT_FAIL, 2000), 0);
    int64_t group = s_stage(s, "c2", 1, "group", "continue", p12, 2);
    assert_int_equal(store_task_create(s, "c2/1/g0", "c2", group, p12, 2, 3000), 0);
    s_result(s, "c2/1/g0@n1", "c2/1/g0", "n1", FB_VERDICT_FAIL, NULL, NULL, NULL);
    s_result(s, "c2/1/g0@n2", "c2/1/g0", "n2", FB_VERDICT_PASS, NULL, NULL, NULL);
    assert_int_equal(store_stage_finish(s, group, FB_VERDICT_FAIL, 4000), 0);

    report_outcome_t o = s_outcome(fx, "c2");
    assert_non_null(s_bad(&o, "n3", "n3<->n4"));
    assert_non_null(s_bad(&o, "n4", "n3<->n4"));
    assert_int_equal(o.n_bad, 2);
    assert_true(s_note(&o, "task c2/1/g0 (fail) on n[1-2] names no bad part; not drained (on_fail: "
                           "bisect names the part"));
    assert_int_equal(o.n_passed, 0); /* n1, n2 were in a failed group */
    report_outcome_free(&o);

    /* the same with a third stage that was skipped (on_fail: stop): nobody passed every stage */
    assert_int_equal(store_campaign_create(s, "c3", "x", "c3.yaml", "yaml", 1000), 0);
    const char *one[] = {"n1"};
    int64_t a = s_stage(s, "c3", 0, "a", "stop", one, 1);
    s_node_task(s, "c3", a, "c3/0/n1", "n1", FB_VERDICT_PASS, NULL, NULL, NULL);
    int64_t b = 0;
    assert_int_equal(store_stage_create(s, "c3", 1, "b", "memtest", NULL, "continue", 1, &b), 0);
    assert_int_equal(store_stage_finish(s, b, FB_VERDICT_SKIPPED, 3000), 0);
    o = s_outcome(fx, "c3");
    assert_int_equal(o.n_passed, 0);
    assert_true(s_note(&o, "stage b did not run; no node passed every stage"));
    report_outcome_free(&o);
}

static int s_collect(const char *expr, const char *nodes, void *arg)
{
    char *buf = arg;
    size_t len = strlen(buf);
    snprintf(buf + len, 256 - len, "%s=%s;", expr, nodes);
    return 0;
}

static void test_selections_stored(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    assert_int_equal(store_campaign_create(s, "c4", "x", "c4.yaml", "yaml", 1000), 0);
    assert_int_equal(store_node_selection_add(s, "c4", "slurm:gpu", "g[1-4]"), 0);
    assert_int_equal(store_node_selection_add(s, "c4", "slurm:idle", "g[1-2]"), 0);
    assert_int_equal(store_node_selection_add(s, "c4", "slurm:gpu", "g[1-3]"), 0);
    assert_int_equal(store_node_selection_add(s, "nope", "slurm:gpu", "g1"), -ENOENT);
    char buf[256] = "";
    assert_int_equal(store_node_selection_foreach(s, "c4", s_collect, buf), 0);
    assert_string_equal(buf, "slurm:idle=g[1-2];slurm:gpu=g[1-3];");
    buf[0] = '\0';
    assert_int_equal(store_node_selection_foreach(s, "other", s_collect, buf), 0);
    assert_string_equal(buf, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subprocess_argv),
        cmocka_unit_test(test_subprocess_failures),
        cmocka_unit_test(test_subprocess_timeout),
        STORE_FIXTURE_TEST(test_outcome_parts),
        STORE_FIXTURE_TEST(test_outcome_on_watch),
        STORE_FIXTURE_TEST(test_outcome_links_groups_skipped),
        STORE_FIXTURE_TEST(test_selections_stored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
