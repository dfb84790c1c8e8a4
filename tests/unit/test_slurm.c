/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of Slurm as pure logic (scheduler/slurm.h, scheduler/actions.h): sinfo output captured
 * from a real slurmctld (tests/fixtures/slurm, made by capture.sh) and hostile variants of it,
 * `nodes: slurm:...` selections in campaign files and their resolution, drain reasons, and the
 * plan of drains and resumes with its breaker. */
#include "actions.h"
#include "campaign.h"
#include "slurm.h"
#include "common/fileload.h"
#include "common/hostlist.h"
#include "common/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- sinfo output ---------------------------------------------------------------------------- */

static void s_parse_fixture(const char *name, fb_slurm_nodes_t *out)
{
    char *path = xasprintf("%s/slurm/%s", FB_FIXTURES, name);
    size_t len = 0;
    char *text = fb_read_file(path, &len);
    if (!text)
        fail_msg("cannot read %s", path);
    fb_slurm_nodes_parse(text, len, out);
    free(text);
    free(path);
}

static const fb_slurm_node_t *s_node(const fb_slurm_nodes_t *nodes, const char *name)
{
    const fb_slurm_node_t *n = fb_slurm_nodes_find(nodes, name);
    if (!n)
        fail_msg("sinfo output has no node %s", name);
    return n;
}

static void test_sinfo_states(void **state)
{
    (void)state;
    fb_slurm_nodes_t nodes;
    s_parse_fixture("sinfo-states.txt", &nodes);
    assert_int_equal(nodes.n, 7); /* cap-n5 is listed twice, once per partition */
    assert_int_equal(nodes.n_ignored, 0);
    const fb_slurm_node_t *n1 = s_node(&nodes, "cap-n1"), *n3 = s_node(&nodes, "cap-n3");
    assert_string_equal(n1->state, "draining");
    assert_true(fb_slurm_reason_ours(n1->reason));
    assert_true(fb_slurm_state_resumable(n1->state));
    /* A person's reason, '|' and all: the reason is the last field */
    assert_string_equal(n3->reason, "bad fan | ticket 42: see cap-n3 [ops]");
    assert_false(fb_slurm_reason_ours(n3->reason));
    assert_true(fb_slurm_state_drained(n3->state));
    const fb_slurm_node_t *n4 = s_node(&nodes, "cap-n4");
    assert_string_equal(n4->state, "down");
    assert_false(fb_slurm_state_drained(n4->state));
    const fb_slurm_node_t *n5 = s_node(&nodes, "cap-n5");
    assert_string_equal(n5->state, "idle*");
    assert_null(n5->reason); /* "none" */
    assert_int_equal(n5->n_partitions, 2);
    assert_string_equal(n5->partitions[0], "burn"); /* the default partition's '*' dropped */
    assert_string_equal(n5->partitions[1], "gpu");
    const fb_slurm_node_t *n6 = s_node(&nodes, "cap-n6");
    assert_string_equal(n6->state, "drained*");
    assert_true(fb_slurm_state_resumable(n6->state));
    assert_string_equal(s_node(&nodes, "cap-n7")->state, "unknown*");
    /* nothing is idle here: not responding, drained, down and unknown are not */
    size_t n = 0;
    char **idle = fb_slurm_nodes_select(&nodes, NULL, true, &n);
    assert_int_equal(n, 0);
    fb_hostlist_free(idle, n);
    char **gpu = fb_slurm_nodes_select(&nodes, "gpu", false, &n);
    char *list = fb_hostlist_compress((const char *const *)gpu, n);
    assert_string_equal(list, "cap-n[5-7]");
    free(list);
    fb_hostlist_free(gpu, n);
    fb_slurm_nodes_fini(&nodes);
}

static void test_sinfo_select(void **state)
{
    (void)state;
    fb_slurm_nodes_t nodes;
    s_parse_fixture("sinfo-idle.txt", &nodes);
    size_t n = 0;
    char **idle = fb_slurm_nodes_select(&nodes, NULL, true, &n);
    char *list = fb_hostlist_compress((const char *const *)idle, n);
    assert_string_equal(list, "cap-n[1-6]"); /* cap-n7 never had a slurmd: unknown */
    free(list);
    fb_hostlist_free(idle, n);
    char **burn = fb_slurm_nodes_select(&nodes, "burn", true, &n);
    list = fb_hostlist_compress((const char *const *)burn, n);
    assert_string_equal(list, "cap-n[1-5]");
    free(list);
    fb_hostlist_free(burn, n);
    fb_slurm_nodes_fini(&nodes);
    s_parse_fixture("sinfo-partition-gpu.txt", &nodes);
    assert_int_equal(nodes.n, 3);
    char **gpu_idle = fb_slurm_nodes_select(&nodes, "gpu", true, &n);
    assert_int_equal(n, 0);
    fb_hostlist_free(gpu_idle, n);
    fb_slurm_nodes_fini(&nodes);
}

/* Output that is not what sinfo prints is skipped line by line, never acted on. */
static void test_sinfo_hostile(void **state)
{
    (void)state;
    static const char text[] = "good1|idle|burn*|none\n"
                               "no fields at all\n"
                               "bad name|idle|burn|none\n"
                               "-n1|idle|burn|none\n"
                               "n2|IDLE|burn|none\n"
                               "n3|idle;rm|burn|none\n"
                               "n4|idle|burn|reason with \x1b[31mescape\n"
                               "\n"
                               "n5|drained|bad part!|fleetburn: x\r\n"
                               "good1|drained|other|another line for good1\n";
    fb_slurm_nodes_t nodes;
    fb_slurm_nodes_parse(text, sizeof text - 1, &nodes);
    assert_int_equal(nodes.n, 3); /* good1, n4, n5 */
    assert_int_equal(nodes.n_ignored, 5);
    assert_non_null(strstr(nodes.ignored, "line 2"));
    const fb_slurm_node_t *g = s_node(&nodes, "good1");
    assert_string_equal(g->state, "idle"); /* a node's first line decides its state */
    assert_int_equal(g->n_partitions, 2);
    assert_string_equal(s_node(&nodes, "n4")->reason, "reason with ?[31mescape");
    const fb_slurm_node_t *n5 = s_node(&nodes, "n5");
    assert_string_equal(n5->reason, "fleetburn: x");
    assert_int_equal(n5->n_partitions, 0); /* "bad part!" is no partition name */
    fb_slurm_nodes_fini(&nodes);

    /* a NUL byte, a huge name, and nothing */
    static const char nul[] = "n1|idle|p|none\nn2|id\0le|p|none\n";
    fb_slurm_nodes_parse(nul, sizeof nul - 1, &nodes);
    assert_int_equal(nodes.n, 1);
    assert_int_equal(nodes.n_ignored, 1);
    fb_slurm_nodes_fini(&nodes);
    char *huge = xmalloc(300);
    memset(huge, 'a', 200);
    memcpy(huge + 200, "|idle|p|none\n", 14);
    fb_slurm_nodes_parse(huge, strlen(huge), &nodes);
    assert_int_equal(nodes.n, 0);
    assert_int_equal(nodes.n_ignored, 1);
    fb_slurm_nodes_fini(&nodes);
    free(huge);
    fb_slurm_nodes_parse(NULL, 0, &nodes);
    assert_int_equal(nodes.n, 0);
    fb_slurm_nodes_fini(&nodes);
}

static void test_states(void **state)
{
    (void)state;
    assert_true(fb_slurm_state_drained("drained"));
    assert_true(fb_slurm_state_drained("draining"));
    assert_true(fb_slurm_state_drained("drained*"));
    assert_true(fb_slurm_state_drained("idle+drain"));
    assert_true(fb_slurm_state_drained("down+drain"));
    assert_false(fb_slurm_state_drained("idle"));
    assert_false(fb_slurm_state_drained("down*"));
    assert_false(fb_slurm_state_drained("mixed"));
    assert_true(fb_slurm_state_resumable("drained~"));
    assert_false(fb_slurm_state_resumable("down+drain"));
    assert_false(fb_slurm_state_resumable("fail+drain"));
    assert_false(fb_slurm_state_resumable("idle"));
}

/* ---- reasons and names --------------------------------------------------------------------- */

static void test_reasons(void **state)
{
    (void)state;
    char *r = fb_slurm_reason("20261124-1-ab", "n2/CPU_SrcID#0_MC#0_Chan#1_DIMM#0",
                              "dram: \"bad\" 'dimm'\n\tat `x` \\ y | z @root\x01\xc3\xa9");
    assert_string_equal(r, "fleetburn: 20261124-1-ab: n2/CPU_SrcID#0_MC#0_Chan#1_DIMM#0 dram: "
                           "_bad_ _dimm_ at _x_ _ y _ z _root___");
    assert_true(fb_slurm_reason_ok(r));
    free(r);
    char *long_what = xmalloc(1001);
    memset(long_what, 'x', 1000);
    long_what[1000] = '\0';
    r = fb_slurm_reason("id", "n1", long_what);
    assert_int_equal(strlen(r), FB_SLURM_REASON_MAX);
    assert_true(fb_slurm_reason_ok(r));
    free(r);
    free(long_what);
    assert_false(fb_slurm_reason_ok("bad fan"));
    assert_false(fb_slurm_reason_ok("fleetburn: a \"quoted\" one"));
    assert_false(fb_slurm_reason_ok("fleetburn: a\nnewline"));
    assert_false(fb_slurm_reason_ok("fleetburn: x [root@2026-11-24T00:00:00]"));
    assert_false(fb_slurm_reason_ok(NULL));
    assert_true(fb_slurm_reason_ours("fleetburn: 1: n1 x"));
    assert_false(fb_slurm_reason_ours("NHC: fleetburn: x"));
    assert_false(fb_slurm_reason_ours("Fleetburn: x"));

    assert_true(fb_slurm_name_ok("gpu-a01.rack_2"));
    assert_false(fb_slurm_name_ok("-n1"));      /* reads as an option */
    assert_false(fb_slurm_name_ok("n1,n2"));    /* a list */
    assert_false(fb_slurm_name_ok("n[1-2]"));   /* a hostlist */
    assert_false(fb_slurm_name_ok("n1 State")); /* another argument */
    assert_false(fb_slurm_name_ok(""));
}

/* ---- nodes: slurm:... ---------------------------------------------------------------------- */

static void test_selection_syntax(void **state)
{
    (void)state;
    char *partition = NULL, err[256];
    bool idle = false;
    assert_int_equal(fb_slurm_selection_parse("slurm:idle", &partition, &idle, err, sizeof err), 0);
    assert_null(partition);
    assert_true(idle);
    assert_int_equal(fb_slurm_selection_parse("slurm:gpu", &partition, &idle, err, sizeof err), 0);
    assert_string_equal(partition, "gpu");
    assert_false(idle);
    free(partition);
    assert_int_equal(
        fb_slurm_selection_parse("slurm:gpu-h200:idle", &partition, &idle, err, sizeof err), 0);
    assert_string_equal(partition, "gpu-h200");
    assert_true(idle);
    free(partition);
    static const char *const bad[] = {
        "slurm:",      "slurm:gpu:busy", "slurm:a b", "slurm:gpu;reboot",
        "slurm::idle", "slurm:-x:y",     "nodes"};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++)
        if (!fb_slurm_selection_parse(bad[i], NULL, NULL, err, sizeof err))
            fail_msg("'%s' was accepted", bad[i]);
    fb_slurm_selection_parse("slurm:gpu:busy", NULL, NULL, err, sizeof err);
    assert_non_null(strstr(err, "expected slurm:idle, slurm:PARTITION or slurm:PARTITION:idle"));
}

static fb_campaign_t *s_campaign(const char *text)
{
    fb_campaign_t *c = NULL;
    char *err = NULL;
    if (fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err))
        fail_msg("does not parse: %s", err);
    return c;
}

static void s_expect_error(const char *text, const char *expected)
{
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err), -EINVAL);
    assert_null(c);
    if (!err || strncmp(err, expected, strlen(expected)))
        fail_msg("got      '%s'\nexpected '%s...'", err ? err : "(none)", expected);
    free(err);
}

static void test_selection_in_campaign(void **state)
{
    (void)state;
    fb_campaign_t *c = s_campaign("name: periodic\n"
                                  "nodes: slurm:gpu:idle\n"
                                  "stages:\n"
                                  "  - name: a\n"
                                  "    workload: sleep\n"
                                  "  - name: b\n"
                                  "    workload: sleep\n"
                                  "    nodes: slurm:idle\n"
                                  "  - name: c\n"
                                  "    workload: sleep\n"
                                  "    nodes: slurm:gpu:idle\n");
    const char *exprs[4];
    assert_int_equal(fb_campaign_slurm_selections(c, exprs, 4), 2);
    assert_string_equal(exprs[0], "slurm:gpu:idle");
    assert_string_equal(exprs[1], "slurm:idle");
    assert_int_equal(fb_campaign_slurm_selections(c, NULL, 0), 2);
    /* not resolved: no stage selects anything, and says why */
    bool all = true;
    char **names = NULL, err[256];
    size_t n = 0;
    assert_int_equal(fb_stage_nodes(c, &c->stages[0], &all, &names, &n, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "slurm:gpu:idle was not resolved"));
    assert_int_equal(fb_campaign_resolve_selection(c, "slurm:gpu:idle", "g[01-04]"), 0);
    assert_int_equal(fb_campaign_resolve_selection(c, "slurm:idle", "g[01-04],c1"), 0);
    assert_int_equal(fb_campaign_resolve_selection(c, "slurm:idle", "g[01-02],c1"), 0);
    assert_int_equal(fb_campaign_resolve_selection(c, "slurm:idle", "g[02-01]"), -EINVAL);
    assert_string_equal(fb_campaign_selection(c, "slurm:idle"), "g[01-02],c1");
    assert_int_equal(fb_stage_nodes(c, &c->stages[0], &all, &names, &n, err, sizeof err), 0);
    assert_false(all);
    assert_int_equal(n, 4);
    assert_string_equal(names[3], "g04");
    fb_hostlist_free(names, n);
    assert_int_equal(fb_stage_nodes(c, &c->stages[1], &all, &names, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    fb_hostlist_free(names, n);
    fb_campaign_destroy(&c);

    s_expect_error("name: x\nnodes: slurm:gpu:busy\nstages: [{name: a, workload: sleep}]\n",
                   "t.yaml:2: nodes: 'busy' after the partition is not 'idle'; expected "
                   "slurm:idle, slurm:PARTITION or slurm:PARTITION:idle");
    s_expect_error("name: x\nstages:\n  - {name: a, workload: sleep, nodes: \"slurm:a b\"}\n",
                   "t.yaml:3: stages[0].nodes: 'a b' is not a partition name");
}

/* The example of docs/operations.md "Periodic checks" loads, and says what it promises. */
static void test_periodic_example(void **state)
{
    (void)state;
    char *path = xasprintf("%s/../../deploy/campaigns/periodic-idle.yaml", FB_FIXTURES);
    size_t len = 0;
    char *text = fb_read_file(path, &len), *err = NULL;
    assert_non_null(text);
    fb_campaign_t *c = NULL;
    if (fb_campaign_parse(text, len, path, &c, &err))
        fail_msg("%s", err);
    assert_string_equal(c->nodes_expr, "slurm:idle");
    assert_true(c->actions.has_slurm);
    assert_false(c->actions.slurm.dry_run);
    assert_true(c->actions.slurm.drain && c->actions.slurm.resume);
    fb_campaign_destroy(&c);
    free(text);
    free(path);
}

/* ---- actions: ------------------------------------------------------------------------------ */

static void test_actions_parse(void **state)
{
    (void)state;
    fb_campaign_t *c = s_campaign("name: x\nstages: [{name: a, workload: sleep}]\n");
    assert_false(c->actions.has_slurm);
    fb_campaign_destroy(&c);
    c = s_campaign("name: x\nactions: {slurm: }\nstages: [{name: a, workload: sleep}]\n");
    assert_true(c->actions.has_slurm);
    assert_true(c->actions.slurm.drain);
    assert_true(c->actions.slurm.resume);
    assert_true(c->actions.slurm.dry_run); /* the default: say, do not do */
    assert_true(c->actions.slurm.max_fraction == FB_SLURM_MAX_FRACTION_DEFAULT);
    fb_campaign_destroy(&c);
    c = s_campaign("name: x\n"
                   "actions:\n"
                   "  slurm: {drain: true, resume: no, dry_run: false, max_fraction: 25%}\n"
                   "stages: [{name: a, workload: sleep}]\n");
    assert_false(c->actions.slurm.resume);
    assert_false(c->actions.slurm.dry_run);
    assert_true(c->actions.slurm.max_fraction == 0.25);
    fb_campaign_destroy(&c);

#define S_HEAD "name: x\nstages: [{name: a, workload: sleep}]\n"
    s_expect_error(S_HEAD "actions: {slurm: {drian: true}}\n",
                   "t.yaml:3: actions.slurm.drian: unknown key; expected one of drain, resume, "
                   "dry_run, max_fraction");
    s_expect_error(S_HEAD "actions: {slurm: {dry_run: maybe}}\n",
                   "t.yaml:3: actions.slurm.dry_run: 'maybe' is not a boolean; expected true or "
                   "false");
    s_expect_error(S_HEAD "actions: {slurm: {max_fraction: 0}}\n",
                   "t.yaml:3: actions.slurm.max_fraction: '0' is not a fraction in (0, 1]");
    s_expect_error(S_HEAD "actions: {slurm: {max_fraction: 1.5}}\n",
                   "t.yaml:3: actions.slurm.max_fraction: '1.5' is not a fraction in (0, 1]");
    s_expect_error(S_HEAD "actions: {slurm: {max_fraction: 120%}}\n",
                   "t.yaml:3: actions.slurm.max_fraction: '120%' is not a fraction in (0, 1]");
    s_expect_error(S_HEAD "actions: {slurm: {drain: yes, drain: no}}\n",
                   "t.yaml:3: actions.slurm.drain: key given twice");
    s_expect_error(S_HEAD "actions: {slurm: [drain]}\n",
                   "t.yaml:3: actions.slurm: is a list; expected a mapping with keys drain");
    s_expect_error(S_HEAD "actions: {sluurm: {}}\n",
                   "t.yaml:3: actions.sluurm: unknown action; expected one of slurm, webhook");
    s_expect_error(S_HEAD "actions:\n", "t.yaml:3: actions: is empty; expected a mapping");
    s_expect_error(S_HEAD "actions: {slurm: {}}\nactions: {slurm: {}}\n",
                   "t.yaml:4: actions: key given twice");
#undef S_HEAD
}

/* ---- the plan ------------------------------------------------------------------------------ */

typedef struct {
    fb_slurm_actions_t conf;
    fb_slurm_nodes_t slurm;
    fb_slurm_plan_t plan;
} s_plan_t;

/* Plans over nodes n1..n4 with Slurm saying sinfo_text. */
static void s_plan(s_plan_t *p, const char *sinfo_text, const fb_slurm_bad_t *bad, size_t n_bad,
                   const char *const *passed, size_t n_passed)
{
    static const char *const nodes[] = {"n1", "n2", "n3", "n4"};
    fb_slurm_nodes_parse(sinfo_text, strlen(sinfo_text), &p->slurm);
    fb_slurm_input_t in = {.campaign_id = "C1",
                           .conf = &p->conf,
                           .nodes = nodes,
                           .n_nodes = 4,
                           .bad = bad,
                           .n_bad = n_bad,
                           .passed = passed,
                           .n_passed = n_passed,
                           .slurm = &p->slurm};
    fb_slurm_plan(&in, &p->plan);
}

static void s_plan_fini(s_plan_t *p)
{
    fb_slurm_plan_fini(&p->plan);
    fb_slurm_nodes_fini(&p->slurm);
}

static const fb_slurm_op_t *s_op(const s_plan_t *p, fb_slurm_op_kind_t kind, const char *node)
{
    for (size_t k = 0; k < p->plan.n_ops; k++)
        if (p->plan.ops[k].kind == kind && !strcmp(p->plan.ops[k].node, node))
            return &p->plan.ops[k];
    return NULL;
}

static const char s_all_idle[] = "n1|idle|p*|none\nn2|idle|p*|none\nn3|idle|p*|none\n"
                                 "n4|idle|p*|none\n";

static void test_plan_drain_and_resume(void **state)
{
    (void)state;
    s_plan_t p = {.conf = {true, true, false, 0.5}};
    /* n2 is bad twice (a DIMM and a cable to n3); the cable names n3 too */
    fb_slurm_bad_t bad[] = {{"n2", "n2", "dram: 4 memory findings"},
                            {"n2", "n2<->n3", "net: slow pair"},
                            {"n3", "n2<->n3", "net: slow pair"}};
    const char *passed[] = {"n1", "n4"};
    s_plan(&p,
           "n1|idle|p*|none\nn2|idle|p*|none\nn3|mixed|p*|none\n"
           "n4|drained|p*|fleetburn: C0: n4 dram: 1 memory finding\n",
           bad, 3, passed, 2);
    assert_false(p.plan.breaker);
    assert_int_equal(p.plan.n_drain, 2);
    assert_int_equal(p.plan.n_resume, 1);
    const fb_slurm_op_t *d2 = s_op(&p, FB_SLURM_OP_DRAIN, "n2");
    assert_non_null(d2);
    assert_string_equal(d2->reason, "fleetburn: C1: n2 dram: 4 memory findings (+1 more)");
    assert_string_equal(s_op(&p, FB_SLURM_OP_DRAIN, "n3")->reason,
                        "fleetburn: C1: n2<->n3 net: slow pair");
    assert_non_null(s_op(&p, FB_SLURM_OP_RESUME, "n4"));
    assert_int_equal(p.plan.ops[0].kind, FB_SLURM_OP_DRAIN); /* drains first */
    s_plan_fini(&p);

    /* resume: false keeps fleetburn's drains; drain: false drains nothing */
    p = (s_plan_t){.conf = {false, false, false, 0.5}};
    s_plan(&p, "n4|drained|p*|fleetburn: C0: n4 x\n", bad, 1, passed, 2);
    assert_int_equal(p.plan.n_ops, 0);
    s_plan_fini(&p);
}

/* Drains that are not fleetburn's are never touched, whatever the campaign found. */
static void test_plan_foreign_drains(void **state)
{
    (void)state;
    s_plan_t p = {.conf = {true, true, false, 1.0}};
    fb_slurm_bad_t bad[] = {{"n1", "n1", "dram: x"},
                            {"n2", "n2", "dram: x"},
                            {"n3", "n3", "dram: x"},
                            {"bad name", "bad name", "dram: x"},
                            {"n9", "n9", "dram: x"}};
    const char *passed[] = {"n4"};
    s_plan(&p,
           "n1|drained|p*|bad fan, ticket 42\n"
           "n2|down|p*|psu\n"
           "n3|draining|p*|fleetburn: C0: n3 earlier\n"
           "n4|drained|p*|NHC: check_hw_ib failed\n",
           bad, 5, passed, 1);
    assert_int_equal(p.plan.n_drain, 0);
    assert_int_equal(p.plan.n_resume, 0);
    assert_int_equal(p.plan.n_ops, 6);
    assert_non_null(strstr(s_op(&p, FB_SLURM_OP_NOTE, "n1")->message,
                           "someone else's reason 'bad fan, ticket 42'; left as it is"));
    assert_non_null(strstr(s_op(&p, FB_SLURM_OP_NOTE, "n2")->message, "down"));
    assert_non_null(
        strstr(s_op(&p, FB_SLURM_OP_NOTE, "n3")->message, "drained by fleetburn already"));
    assert_non_null(strstr(s_op(&p, FB_SLURM_OP_NOTE, "n4")->message,
                           "passed but is drained with someone else's reason 'NHC: "));
    assert_non_null(
        strstr(s_op(&p, FB_SLURM_OP_NOTE, "bad name")->message, "cannot be given to scontrol"));
    assert_non_null(strstr(s_op(&p, FB_SLURM_OP_NOTE, "n9")->message, "Slurm does not list it"));
    s_plan_fini(&p);

    /* fleetburn's drain on a node that is down as well stays */
    p = (s_plan_t){.conf = {true, true, false, 1.0}};
    const char *n1[] = {"n1"};
    s_plan(&p, "n1|down+drain|p*|fleetburn: C0: n1 x\n", NULL, 0, n1, 1);
    assert_int_equal(p.plan.n_resume, 0);
    assert_non_null(strstr(s_op(&p, FB_SLURM_OP_NOTE, "n1")->message, "down+drain as well"));
    s_plan_fini(&p);
}

static void test_plan_breaker(void **state)
{
    (void)state;
    fb_slurm_bad_t one[] = {{"n1", "n1", "dram: x"}};
    fb_slurm_bad_t two[] = {{"n1", "n1", "dram: x"}, {"n2", "n2", "dram: y"}};
    /* 1 of 4 is within 0.25 */
    s_plan_t p = {.conf = {true, true, false, 0.25}};
    s_plan(&p, s_all_idle, one, 1, NULL, 0);
    assert_false(p.plan.breaker);
    assert_int_equal(p.plan.n_drain, 1);
    s_plan_fini(&p);
    /* 2 of 4 is over it: none drained, and the message says which and why */
    p = (s_plan_t){.conf = {true, true, false, 0.25}};
    const char *passed[] = {"n3"};
    s_plan(&p, "n1|idle|p*|none\nn2|idle|p*|none\nn3|drained|p*|fleetburn: C0: n3 x\n", two, 2,
           passed, 1);
    assert_true(p.plan.breaker);
    assert_int_equal(p.plan.n_drain, 0);
    assert_int_equal(p.plan.n_resume, 1); /* resumes go on */
    assert_string_equal(p.plan.breaker_message,
                        "breaker: draining n[1-2] (2 node(s)) would leave 2 of the campaign's 4 "
                        "nodes drained by fleetburn (0 already), 50%, over max_fraction 25%; no "
                        "node drained");
    s_plan_fini(&p);
    /* nodes fleetburn keeps drained count: 1 new + 1 staying = 2 of 4 */
    p = (s_plan_t){.conf = {true, true, false, 0.25}};
    s_plan(&p, "n1|idle|p*|none\nn4|drained|p*|fleetburn: C0: n4 x\n", one, 1, NULL, 0);
    assert_true(p.plan.breaker);
    assert_non_null(strstr(p.plan.breaker_message, "(1 already)"));
    s_plan_fini(&p);
    /* max_fraction 1 never trips */
    p = (s_plan_t){.conf = {true, true, false, 1.0}};
    s_plan(&p, s_all_idle, two, 2, NULL, 0);
    assert_false(p.plan.breaker);
    assert_int_equal(p.plan.n_drain, 2);
    s_plan_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sinfo_states),
        cmocka_unit_test(test_sinfo_select),
        cmocka_unit_test(test_sinfo_hostile),
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_selection_syntax),
        cmocka_unit_test(test_selection_in_campaign),
        cmocka_unit_test(test_periodic_example),
        cmocka_unit_test(test_actions_parse),
        cmocka_unit_test(test_plan_drain_and_resume),
        cmocka_unit_test(test_plan_foreign_drains),
        cmocka_unit_test(test_plan_breaker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
