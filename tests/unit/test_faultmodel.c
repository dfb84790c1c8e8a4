/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of sim/faultmodel: the fault file (a good one read back, each class of error
 * as its exact one-line message, binding errors against a topology, mutated files never crash),
 * determinism (same draws for the same test whatever the member order, different draws for other
 * seeds), the statistics of intermittent faults and false fails, slow factors, NIC rails, and
 * link faults on the routes of a 2-spine 4-leaf fabric. The messy world (bursts, leaves, several
 * faults on a node, noise, lost results, disagreeing members) is test_faultmodel_world.c. */
#include "common/fileload.h"
#include "sim/faultmodel.h"
#include "faultmodel_fixture.h"
#include "scheduler/topology.h"
#include "common/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* the shared fixtures (faultmodel_fixture.h), with this file's source name */
#define s_parse(text) fm_fixture_parse((text), "f.yaml")
#define s_bound(text, topo) fm_fixture_bound((text), "f.yaml", (topo))
#define s_fabric() fm_fixture_fabric()

static bool s_fails(const fb_faultmodel_t *m, const char *id, const char *const *members, size_t n,
                    int rail)
{
    fb_sim_test_t t = {id, members, n, rail};
    fb_sim_outcome_t o;
    assert_int_equal(fb_faultmodel_judge(m, &t, &o), 0);
    return o.failed;
}

static void test_good_file(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("seed: 7\n"
                                 "false_fail_rate: 0.01\n"
                                 "rails: 2\n"
                                 "faults:\n"
                                 "  - {node: sim-0017, kind: hard}\n"
                                 "  - {node: sim-0420, kind: intermittent, q: 0.5}\n"
                                 "  - {node: sim-0333, kind: slow, factor: 0.6}\n"
                                 "  - {nic: sim-0100/1, kind: hard}\n"
                                 "  - {link: leaf02<->spine01, kind: slow, factor: 0.5}\n");
    assert_int_equal(fb_faultmodel_seed(m), 7);
    assert_true(fb_faultmodel_false_fail_rate(m) == 0.01);
    assert_int_equal(fb_faultmodel_rails(m), 2);
    assert_int_equal(fb_faultmodel_count(m), 5);
    const fb_fault_t *f = fb_faultmodel_fault(m, 0);
    assert_int_equal(f->site, FB_FAULT_AT_NODE);
    assert_int_equal(f->kind, FB_FAULT_HARD);
    assert_string_equal(f->a, "sim-0017");
    assert_true(f->q == 1.0 && f->factor == 1.0);
    assert_int_equal(f->line, 5);
    f = fb_faultmodel_fault(m, 1);
    assert_int_equal(f->kind, FB_FAULT_INTERMITTENT);
    assert_true(f->q == 0.5);
    f = fb_faultmodel_fault(m, 2);
    assert_int_equal(f->kind, FB_FAULT_SLOW);
    assert_true(f->factor == 0.6 && f->q == 0.0);
    f = fb_faultmodel_fault(m, 3);
    assert_int_equal(f->site, FB_FAULT_AT_NIC);
    assert_string_equal(f->a, "sim-0100");
    assert_int_equal(f->rail, 1);
    assert_string_equal(f->part, "sim-0100/1");
    f = fb_faultmodel_fault(m, 4);
    assert_int_equal(f->site, FB_FAULT_AT_LINK);
    assert_string_equal(f->a, "leaf02");
    assert_string_equal(f->b, "spine01");
    assert_null(fb_faultmodel_fault(m, 5));
    fb_faultmodel_set_seed(m, 99);
    assert_int_equal(fb_faultmodel_seed(m), 99);
    fb_faultmodel_destroy(&m);
    assert_null(m);

    /* The messy world's keys, read back. */
    m = s_parse("lost_rate: 0.002\n"
                "disagree_rate: 0.005\n"
                "noise: {dist: lognormal, sigma: 0.05}\n"
                "faults:\n"
                "  - {node: n1, kind: intermittent, q: 0.2, burst: 600}\n"
                "  - {node: n1, kind: slow, factor: 0.9}\n"
                "  - {node: n2, kind: noisy, sigma: 0.2}\n"
                "  - {leaf: leaf03, kind: intermittent, q: 0.5}\n");
    assert_true(fb_faultmodel_lost_rate(m) == 0.002);
    assert_true(fb_faultmodel_disagree_rate(m) == 0.005);
    double param = 0;
    assert_int_equal(fb_faultmodel_noise_dist(m, &param), FB_NOISE_LOGNORMAL);
    assert_true(param == 0.05);
    assert_int_equal(fb_faultmodel_count(m), 4);
    f = fb_faultmodel_fault(m, 0);
    assert_true(f->kind == FB_FAULT_INTERMITTENT && f->q == 0.2 && f->burst_s == 600.0);
    f = fb_faultmodel_fault(m, 1);
    assert_true(f->kind == FB_FAULT_SLOW && f->factor == 0.9 && !strcmp(f->a, "n1"));
    f = fb_faultmodel_fault(m, 2);
    assert_true(f->kind == FB_FAULT_NOISY && f->sigma == 0.2 && f->q == 0.0);
    f = fb_faultmodel_fault(m, 3);
    assert_int_equal(f->site, FB_FAULT_AT_LEAF);
    assert_string_equal(f->a, "leaf03");
    assert_string_equal(f->part, "leaf03");
    assert_string_equal(fb_fault_site_name(f->site), "leaf");
    assert_string_equal(fb_fault_kind_name(FB_FAULT_NOISY), "noisy");
    assert_string_equal(fb_noise_dist_name(FB_NOISE_LOGNORMAL), "lognormal");
    fb_faultmodel_destroy(&m);
    m = s_parse("noise: {dist: uniform, width: 0.03}\n");
    assert_int_equal(fb_faultmodel_noise_dist(m, &param), FB_NOISE_UNIFORM);
    assert_true(param == 0.03);
    fb_faultmodel_destroy(&m);

    /* Defaults: seed 1, no false fails, nothing lost, no disagreement, +-1% uniform noise, 8
     * rails; an empty fault list is a healthy fleet. */
    m = s_parse("faults: []\n");
    assert_int_equal(fb_faultmodel_seed(m), 1);
    assert_true(fb_faultmodel_false_fail_rate(m) == 0.0);
    assert_true(fb_faultmodel_lost_rate(m) == 0.0 && fb_faultmodel_disagree_rate(m) == 0.0);
    assert_int_equal(fb_faultmodel_noise_dist(m, &param), FB_NOISE_UNIFORM);
    assert_true(param == 0.01);
    assert_int_equal(fb_faultmodel_rails(m), 8);
    assert_int_equal(fb_faultmodel_count(m), 0);
    const char *one[] = {"a"};
    assert_false(s_fails(m, "t", one, 1, -1));
    fb_faultmodel_destroy(&m);
}

static void s_expect_error(const char *text, const char *expected)
{
    fb_faultmodel_t *m = (fb_faultmodel_t *)1;
    char *err = NULL;
    assert_int_equal(fb_faultmodel_parse(text, strlen(text), "f.yaml", &m, &err), -EINVAL);
    assert_null(m);
    assert_non_null(err);
    if (strcmp(err, expected))
        fail_msg("for:\n%s\n got      '%s'\n expected '%s'", text, err, expected);
    free(err);
}

static void test_bad_files(void **state)
{
    (void)state;
    s_expect_error("", "f.yaml:1: (top level): empty fault file; expected a mapping with keys "
                       "seed, false_fail_rate, lost_rate, disagree_rate, noise, rails, faults");
    s_expect_error("- a\n",
                   "f.yaml:1: (top level): is a list; expected a mapping with keys "
                   "seed, false_fail_rate, lost_rate, disagree_rate, noise, rails, faults");
    s_expect_error("seed: 1\nsede: 2\n", "f.yaml:2: (top level): unknown key 'sede'; expected one "
                                         "of seed, false_fail_rate, lost_rate, disagree_rate, "
                                         "noise, rails, faults");
    s_expect_error("seed: 1\nseed: 2\n", "f.yaml:2: seed: given twice; expected it once");
    s_expect_error("seed: -3\n", "f.yaml:1: seed: '-3' is not in range; expected an integer "
                                 "from 0 to 18446744073709551615");
    s_expect_error("false_fail_rate: 1\n", "f.yaml:1: false_fail_rate: 1 is out of range; "
                                           "expected a probability from 0 to below 1");
    s_expect_error("false_fail_rate: lots\n", "f.yaml:1: false_fail_rate: 'lots' is not a number; "
                                              "expected a probability from 0 to below 1");
    s_expect_error("rails: 0\n", "f.yaml:1: rails: '0' is not in range; expected an integer from "
                                 "1 to 64");
    s_expect_error("faults: {node: a}\n", "f.yaml:1: faults: is a mapping; expected a list of "
                                          "faults");
    s_expect_error("faults:\n  - sim-1\n", "f.yaml:2: faults[0]: is a single value; expected a "
                                           "mapping such as {node: NAME, kind: hard}");
    s_expect_error("faults:\n  - {kind: hard}\n", "f.yaml:2: faults[0]: no part; expected one of "
                                                  "node, nic, link, leaf");
    s_expect_error("faults:\n  - {node: a}\n", "f.yaml:2: faults[0].kind: missing; expected hard, "
                                               "intermittent, slow or noisy");
    s_expect_error("faults:\n  - {node: a, nic: a/1, kind: hard}\n",
                   "f.yaml:2: faults[0]: node and nic both given; expected one of node, nic, link, "
                   "leaf");
    s_expect_error("faults:\n  - {node: a, kind: hard, kind: slow}\n",
                   "f.yaml:2: faults[0]: kind given twice; expected it once");
    s_expect_error("faults:\n  - {node: a, kind: broken}\n",
                   "f.yaml:2: faults[0].kind: unknown kind 'broken'; expected hard, intermittent, "
                   "slow or noisy");
    s_expect_error("faults:\n  - {node: a, kind: hard, colour: red}\n",
                   "f.yaml:2: faults[0]: unknown key 'colour'; expected one of node, nic, link, "
                   "leaf, kind, q, burst, factor, sigma");
    s_expect_error("faults:\n  - {node: 'a b', kind: hard}\n",
                   "f.yaml:2: faults[0].node: 'a b' is not a node name; expected letters, digits, "
                   "'.', '_' and '-'");
    s_expect_error("faults:\n  - {nic: sim-1, kind: hard}\n",
                   "f.yaml:2: faults[0].nic: 'sim-1' is not a NIC; expected NODE/RAIL, e.g. "
                   "sim-0100/1");
    s_expect_error("faults:\n  - {nic: sim-1/x, kind: hard}\n",
                   "f.yaml:2: faults[0].nic: 'sim-1/x' is not a NIC; expected NODE/RAIL, e.g. "
                   "sim-0100/1");
    s_expect_error("faults:\n  - {link: leaf01-spine01, kind: hard}\n",
                   "f.yaml:2: faults[0].link: 'leaf01-spine01' is not a link; expected "
                   "NODE<->LEAF or LEAF<->SPINE, e.g. leaf02<->spine01");
    s_expect_error("faults:\n  - {link: leaf01<->leaf01, kind: hard}\n",
                   "f.yaml:2: faults[0].link: 'leaf01<->leaf01' is not a link; expected "
                   "NODE<->LEAF or LEAF<->SPINE, e.g. leaf02<->spine01");
    s_expect_error("faults:\n  - {node: a, kind: intermittent}\n",
                   "f.yaml:2: faults[0].q: missing; expected q (the probability that the fault "
                   "shows in a test) with kind intermittent");
    s_expect_error("faults:\n  - {node: a, kind: intermittent, q: 0}\n",
                   "f.yaml:2: faults[0].q: 0 is out of range; expected a probability above 0 and "
                   "at most 1");
    s_expect_error("faults:\n  - {node: a, kind: hard, q: 0.5}\n",
                   "f.yaml:2: faults[0].q: does not apply to kind hard; expected q only with kind "
                   "intermittent");
    s_expect_error("faults:\n  - {node: a, kind: slow}\n",
                   "f.yaml:2: faults[0].factor: missing; expected factor (the bandwidth "
                   "multiplier, e.g. 0.6) with kind slow");
    s_expect_error("faults:\n  - {node: a, kind: slow, factor: 1.5}\n",
                   "f.yaml:2: faults[0].factor: 1.5 is out of range; expected a number above 0 "
                   "and below 1");
    s_expect_error("faults:\n  - {node: a, kind: intermittent, q: 0.5, factor: 0.5}\n",
                   "f.yaml:2: faults[0].factor: does not apply to kind intermittent; expected "
                   "factor only with kind slow");
    s_expect_error("faults: [\n", "f.yaml:2: YAML syntax error: did not find expected node "
                                  "content at column 1 (while parsing a flow node at line 2, "
                                  "column 1); expected valid YAML (check indentation, quoting "
                                  "and ': ' after keys)");

    /* The keys of the messy world (docs/simfleet.md). */
    s_expect_error("lost_rate: 1\n", "f.yaml:1: lost_rate: 1 is out of range; expected a "
                                     "probability from 0 to below 1");
    s_expect_error("disagree_rate: -0.1\n", "f.yaml:1: disagree_rate: -0.1 is out of range; "
                                            "expected a probability from 0 to below 1");
    s_expect_error("disagree_rate: often\n", "f.yaml:1: disagree_rate: 'often' is not a number; "
                                             "expected a probability from 0 to below 1");
    s_expect_error("noise: lognormal\n", "f.yaml:1: noise: is a single value; expected a "
                                         "mapping such as {dist: lognormal, sigma: 0.05}");
    s_expect_error("noise: {sigma: 0.05}\n", "f.yaml:1: noise.dist: missing; expected uniform "
                                             "or lognormal");
    s_expect_error("noise: {dist: gauss}\n", "f.yaml:1: noise.dist: unknown distribution "
                                             "'gauss'; expected uniform or lognormal");
    s_expect_error("noise: {dist: lognormal}\n",
                   "f.yaml:1: noise.sigma: missing; expected sigma (the standard deviation of "
                   "the logarithm of a measurement) with dist lognormal");
    s_expect_error("noise: {dist: lognormal, sigma: 0}\n",
                   "f.yaml:1: noise.sigma: 0 is out of range; expected a number above 0 and at "
                   "most 1");
    s_expect_error("noise: {dist: lognormal, sigma: 0.05, width: 0.01}\n",
                   "f.yaml:1: noise.width: does not apply to dist lognormal; expected width only "
                   "with dist uniform");
    s_expect_error("noise: {dist: uniform, sigma: 0.05}\n",
                   "f.yaml:1: noise.sigma: does not apply to dist uniform; expected sigma only "
                   "with dist lognormal");
    s_expect_error("noise: {dist: uniform, width: 0.7}\n",
                   "f.yaml:1: noise.width: 0.7 is out of range; expected a number from 0 to 0.5");
    s_expect_error("noise: {dist: uniform, shape: 2}\n",
                   "f.yaml:1: noise: unknown key 'shape'; expected one of dist, sigma, width");
    s_expect_error("noise: {dist: uniform, dist: lognormal}\n",
                   "f.yaml:1: noise: dist given twice; expected it once");
    s_expect_error("faults:\n  - {node: a, kind: hard, burst: 60}\n",
                   "f.yaml:2: faults[0].burst: does not apply to kind hard; expected burst only "
                   "with kind intermittent");
    s_expect_error("faults:\n  - {node: a, kind: intermittent, q: 0.3, burst: 0}\n",
                   "f.yaml:2: faults[0].burst: 0 is out of range; expected seconds above 0 and at "
                   "most 10000000");
    s_expect_error("faults:\n  - {node: a, kind: intermittent, q: 0.3, burst: 10m}\n",
                   "f.yaml:2: faults[0].burst: '10m' is not a number; expected seconds above 0 "
                   "and at most 10000000");
    s_expect_error("faults:\n  - {node: a, kind: noisy}\n",
                   "f.yaml:2: faults[0].sigma: missing; expected sigma (the spread of its "
                   "measurements, e.g. 0.2) with kind noisy");
    s_expect_error("faults:\n  - {node: a, kind: slow, factor: 0.9, sigma: 0.2}\n",
                   "f.yaml:2: faults[0].sigma: does not apply to kind slow; expected sigma only "
                   "with kind noisy");
    s_expect_error("faults:\n  - {nic: a/1, kind: noisy, sigma: 0.2}\n",
                   "f.yaml:2: faults[0].kind: noisy does not apply to a nic; expected kind noisy "
                   "only at a node");
    s_expect_error("faults:\n  - {leaf: 'leaf 1', kind: hard}\n",
                   "f.yaml:2: faults[0].leaf: 'leaf 1' is not a leaf name; expected letters, "
                   "digits, '.', '_' and '-'");
    s_expect_error("faults:\n  - {leaf: leaf01, node: a, kind: hard}\n",
                   "f.yaml:2: faults[0]: leaf and node both given; expected one of node, nic, "
                   "link, leaf");

    /* The YAML limits of campaign files hold here too (common/yamldoc.h). */
    char deep[200] = "faults: ";
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    s_expect_error(deep, "f.yaml:1: YAML nesting: mappings and lists nested more than 32 levels "
                         "deep; expected a fault file of a few levels");
}

static void s_expect_bind_error(fb_topology_t *topo, const char *text, const char *expected)
{
    fb_faultmodel_t *m = s_parse(text);
    char *err = NULL;
    assert_int_equal(fb_faultmodel_bind(m, topo, &err), -EINVAL);
    if (!err || strcmp(err, expected))
        fail_msg("got '%s', expected '%s'", err ? err : "(none)", expected);
    free(err);
    fb_faultmodel_destroy(&m);
}

static void test_bind_errors(void **state)
{
    (void)state;
    fb_topology_t *topo = s_fabric();
    s_expect_bind_error(topo, "faults:\n  - {node: node99, kind: hard}\n",
                        "f.yaml:2: faults[0].node: node99 is not a node of the fleet; expected a "
                        "node of the topology");
    s_expect_bind_error(topo, "rails: 2\nfaults:\n  - {nic: node01/2, kind: hard}\n",
                        "f.yaml:3: faults[0].nic: rail 2 of node01 does not exist; expected a "
                        "rail from 0 to 1 (rails: 2)");
    s_expect_bind_error(topo,
                        "faults:\n  - {node: node01, kind: hard}\n"
                        "  - {link: node01<->leaf02, kind: hard}\n",
                        "f.yaml:3: faults[1].link: node01<->leaf02 is not a link of the topology; "
                        "expected NODE<->LEAF (a node and its leaf) or LEAF<->SPINE (a leaf and "
                        "one of its spines)");
    s_expect_bind_error(topo, "faults:\n  - {leaf: leaf09, kind: hard}\n",
                        "f.yaml:2: faults[0].leaf: leaf09 is not a leaf of the topology; "
                        "expected one of its 4 leaf switches, e.g. leaf01");
    s_expect_bind_error(topo, "faults:\n  - {leaf: spine01, kind: hard}\n",
                        "f.yaml:2: faults[0].leaf: spine01 is not a leaf of the topology; "
                        "expected one of its 4 leaf switches, e.g. leaf01");
    s_expect_bind_error(topo, "faults:\n  - {node: node99, kind: noisy, sigma: 0.1}\n",
                        "f.yaml:2: faults[0].node: node99 is not a node of the fleet; expected a "
                        "node of the topology");
    s_expect_bind_error(topo, "faults:\n  - {link: leaf01<->spine07, kind: hard}\n",
                        "f.yaml:2: faults[0].link: leaf01<->spine07 is not a link of the "
                        "topology; expected NODE<->LEAF (a node and its leaf) or LEAF<->SPINE (a "
                        "leaf and one of its spines)");
    /* Either order of a link's ends is the same link. */
    fb_faultmodel_t *m = s_bound("faults:\n  - {link: spine02<->leaf03, kind: hard}\n"
                                 "  - {link: leaf01<->node02, kind: hard}\n",
                                 topo);
    fb_faultmodel_destroy(&m);
    fb_topology_destroy(&topo);
}

static void test_determinism(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("seed: 7\nfalse_fail_rate: 0.3\nfaults:\n"
                                 "  - {node: b, kind: intermittent, q: 0.5}\n");
    const char *ab[] = {"a", "b", "c"}, *ba[] = {"c", "b", "a"};
    size_t differ_seed = 0;
    for (int i = 0; i < 2000; i++) {
        char id[32];
        snprintf(id, sizeof id, "camp/1/%d", i);
        fb_sim_test_t t1 = {id, ab, 3, -1}, t2 = {id, ba, 3, -1};
        fb_sim_outcome_t o1, o2, o3;
        fb_faultmodel_judge(m, &t1, &o1);
        fb_faultmodel_judge(m, &t2, &o2);
        assert_int_equal(o1.failed, o2.failed);
        assert_int_equal(o1.spurious, o2.spurious);
        assert_int_equal(o1.n_causes, o2.n_causes);
        fb_faultmodel_judge(m, &t1, &o3);
        assert_int_equal(o1.failed, o3.failed);
        fb_faultmodel_set_seed(m, 8);
        fb_faultmodel_judge(m, &t1, &o3);
        differ_seed += o1.failed != o3.failed;
        fb_faultmodel_set_seed(m, 7);
    }
    /* Two seeds agree on about 0.65^2 + 0.35^2 of tests: they differ on roughly 45%. */
    assert_in_range(differ_seed, 700, 1100);
    double u1 = fb_faultmodel_uniform(m, "k", "delay"), u2 = fb_faultmodel_uniform(m, "k", "delay");
    assert_true(u1 == u2 && u1 >= 0 && u1 < 1);
    assert_true(fb_faultmodel_uniform(m, "k", "jitter") != u1);
    fb_sim_test_t empty = {"x", ab, 0, -1};
    fb_sim_outcome_t o;
    assert_int_equal(fb_faultmodel_judge(m, &empty, &o), -EINVAL);
    fb_faultmodel_destroy(&m);
}

static void test_hard_and_intermittent(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("faults:\n  - {node: bad, kind: hard}\n"
                                 "  - {node: flaky, kind: intermittent, q: 0.3}\n");
    const char *alone[] = {"bad"}, *pair[] = {"ok", "bad"}, *good[] = {"ok", "ok2"},
               *group[] = {"g1", "g2", "bad", "g3"}, *flaky[] = {"flaky"},
               *flaky_pair[] = {"flaky", "ok"};
    size_t fails = 0, pair_fails = 0, n = 20000;
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%zu", i);
        assert_true(s_fails(m, id, alone, 1, -1));
        assert_true(s_fails(m, id, pair, 2, 0));
        assert_true(s_fails(m, id, group, 4, -1));
        assert_false(s_fails(m, id, good, 2, -1));
        fails += s_fails(m, id, flaky, 1, -1);
        pair_fails += s_fails(m, id, flaky_pair, 2, -1);
    }
    /* q = 0.3: 6000 expected, sd ~65. */
    assert_in_range(fails, 5700, 6300);
    assert_in_range(pair_fails, 5700, 6300);
    fb_sim_test_t t = {"t0", pair, 2, -1};
    fb_sim_outcome_t o;
    fb_faultmodel_judge(m, &t, &o);
    assert_int_equal(o.n_causes, 1);
    assert_int_equal(o.causes[0], 0);
    assert_false(o.spurious);
    fb_faultmodel_destroy(&m);
}

static void test_false_fail_rate(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("false_fail_rate: 0.01\nfaults: []\n");
    const char *pair[] = {"x", "y"};
    size_t fails = 0, n = 100000;
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "run/%zu", i);
        fb_sim_test_t t = {id, pair, 2, -1};
        fb_sim_outcome_t o;
        fb_faultmodel_judge(m, &t, &o);
        assert_int_equal(o.failed, o.spurious);
        assert_int_equal(o.n_causes, 0);
        fails += o.failed;
    }
    /* 1000 expected, sd ~31. */
    assert_in_range(fails, 880, 1120);
    fb_faultmodel_destroy(&m);
}

static void test_slow_factors(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("faults:\n  - {node: slow, kind: slow, factor: 0.6}\n"
                                 "  - {node: slow, kind: slow, factor: 0.8}\n"
                                 "  - {nic: n1/1, kind: slow, factor: 0.5}\n");
    assert_true(fb_faultmodel_node_factor(m, "slow") == 0.6);
    assert_true(fb_faultmodel_node_factor(m, "fast") == 1.0);
    assert_true(fb_faultmodel_node_factor(m, "n1") == 1.0); /* a NIC does not slow node-local */
    assert_true(fb_faultmodel_flow_factor(m, "slow", "fast", -1) == 0.6);
    assert_true(fb_faultmodel_flow_factor(m, "fast", "slow", 0) == 0.6);
    assert_true(fb_faultmodel_flow_factor(m, "fast", "other", -1) == 1.0);
    assert_true(fb_faultmodel_flow_factor(m, "n1", "fast", 1) == 0.5);
    assert_true(fb_faultmodel_flow_factor(m, "n1", "fast", -1) == 0.5);
    assert_true(fb_faultmodel_flow_factor(m, "n1", "fast", 0) == 1.0);
    /* Slow parts never fail a test by themselves. */
    const char *pair[] = {"slow", "fast"}, *alone[] = {"slow"};
    fb_sim_test_t t = {"t", pair, 2, -1};
    fb_sim_outcome_t o;
    fb_faultmodel_judge(m, &t, &o);
    assert_false(o.failed);
    assert_true(o.factor == 0.6);
    t.members = alone;
    t.n_members = 1;
    fb_faultmodel_judge(m, &t, &o);
    assert_false(o.failed);
    assert_true(o.factor == 0.6);
    fb_faultmodel_destroy(&m);
}

static void test_nic_rails(void **state)
{
    (void)state;
    fb_faultmodel_t *m = s_parse("rails: 2\nfaults:\n  - {nic: n1/1, kind: hard}\n");
    const char *pair[] = {"n2", "n1"}, *alone[] = {"n1"}, *group[] = {"n3", "n1", "n2"};
    assert_true(s_fails(m, "a", pair, 2, 1));
    assert_false(s_fails(m, "a", pair, 2, 0));
    assert_true(s_fails(m, "a", pair, 2, -1));
    assert_true(s_fails(m, "a", group, 3, 1));
    assert_false(s_fails(m, "a", group, 3, 0));
    assert_false(s_fails(m, "a", alone, 1, 1)); /* node-local tests do not use the fabric */
    fb_faultmodel_destroy(&m);
}

static void test_link_routes(void **state)
{
    (void)state;
    fb_topology_t *topo = s_fabric();
    /* leaf01: node01-04, leaf02: node05-08, leaf03: node09-12, leaf04: node13-16; 2 spines. */
    fb_faultmodel_t *m = s_bound("faults:\n  - {link: leaf01<->spine01, kind: slow, factor: 0.5}\n"
                                 "  - {link: node06<->leaf02, kind: hard}\n",
                                 topo);
    assert_true(fb_faultmodel_flow_factor(m, "node01", "node02", -1) == 1.0); /* within leaf01 */
    assert_true(fb_faultmodel_flow_factor(m, "node05", "node09", -1) == 1.0); /* not via leaf01 */
    size_t slow = 0, fast = 0;
    for (int src = 1; src <= 4; src++)
        for (int dst = 5; dst <= 16; dst++) {
            char s[16], d[16];
            snprintf(s, sizeof s, "node%02d", src);
            snprintf(d, sizeof d, "node%02d", dst);
            double up = fb_faultmodel_flow_factor(m, s, d, -1);
            double down = fb_faultmodel_flow_factor(m, d, s, -1);
            assert_true(up == 0.5 || up == 1.0);
            /* Destination-based routing: the flow's spine depends on dst only. */
            char s2[16];
            snprintf(s2, sizeof s2, "node%02d", src % 4 + 1);
            assert_true(fb_faultmodel_flow_factor(m, s2, d, -1) == up);
            (void)down;
            slow += up == 0.5;
            fast += up == 1.0;
        }
    /* With two spines some flows leave leaf01 over spine01, some over spine02. */
    assert_true(slow > 0 && fast > 0);

    const char *p1[] = {"node06", "node09"}, *p2[] = {"node05", "node09"},
               *p3[] = {"node06", "node07"}, *alone[] = {"node06"};
    assert_true(s_fails(m, "x", p1, 2, -1));
    assert_false(s_fails(m, "x", p2, 2, -1));
    assert_true(s_fails(m, "x", p3, 2, 0)); /* the cable is on every path of node06 */
    assert_false(s_fails(m, "x", alone, 1, -1));
    /* A ring of four: node06's neighbours send through its cable. */
    const char *ring[] = {"node01", "node06", "node11", "node16"};
    assert_true(s_fails(m, "x", ring, 4, -1));
    const char *ring_ok[] = {"node01", "node05", "node11", "node16"};
    assert_false(s_fails(m, "x", ring_ok, 4, -1));
    fb_faultmodel_destroy(&m);
    fb_topology_destroy(&topo);

    /* One spine: every flow out of leaf01 crosses leaf01<->spine01. */
    char err[256];
    assert_int_equal(fb_topology_parse("leaf01: a[1-2]\nleaf02: b[1-2]\nspine01: leaf[01-02]\n",
                                       &topo, err, sizeof err),
                     0);
    m = s_bound("faults:\n  - {link: spine01<->leaf01, kind: intermittent, q: 1}\n", topo);
    const char *cross[] = {"a1", "b2"}, *inside[] = {"a1", "a2"};
    assert_true(s_fails(m, "y", cross, 2, -1));
    assert_false(s_fails(m, "y", inside, 2, -1));
    fb_faultmodel_destroy(&m);
    /* Unbound, link faults have no route to lie on. */
    m = s_parse("faults:\n  - {link: spine01<->leaf01, kind: hard}\n");
    assert_false(s_fails(m, "y", cross, 2, -1));
    fb_faultmodel_destroy(&m);
    fb_topology_destroy(&topo);
}

/* Truncations and byte flips of a valid file give a model or an error, never a crash. */
static void test_mutations(void **state)
{
    (void)state;
    const char *good = "seed: 7\nfalse_fail_rate: 0.01\nrails: 2\nfaults:\n"
                       "  - {node: sim-0017, kind: hard}\n"
                       "  - {node: sim-0420, kind: intermittent, q: 0.5}\n"
                       "  - {link: leaf02<->spine01, kind: slow, factor: 0.5}\n";
    size_t len = strlen(good);
    char *buf = xmalloc(len + 1);
    uint64_t x = 42;
    for (int i = 0; i < 5000; i++) {
        memcpy(buf, good, len + 1);
        size_t n = i < (int)len ? (size_t)i : len;
        if (i >= (int)len)
            for (int k = 0; k < 3; k++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                buf[(x >> 33) % len] = (char)(x >> 17);
            }
        fb_faultmodel_t *m = NULL;
        char *err = NULL;
        int rc = fb_faultmodel_parse(buf, n, "m.yaml", &m, &err);
        assert_true((rc == 0 && m && !err) || (rc == -EINVAL && !m && err));
        assert_true(!err || !strncmp(err, "m.yaml:", 7));
        free(err);
        fb_faultmodel_destroy(&m);
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_bind_errors),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_hard_and_intermittent),
        cmocka_unit_test(test_false_fail_rate),
        cmocka_unit_test(test_slow_factors),
        cmocka_unit_test(test_nic_rails),
        cmocka_unit_test(test_link_routes),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
