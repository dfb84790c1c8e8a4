/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis session of a stage (scheduler/bisect.h) against the simulated fleet's fault
 * model (sim/faultmodel.h), as the runner drives it: pairs planned from the first round on
 * every rail, a hard node and a hard NIC named and nothing else, evidence that cites the tests;
 * a slow uplink named by its spine when the routing is known; a failing group resolved in twos
 * with trusted partners (a NIC fault, which one node alone cannot show, named as its node); a
 * group as large as the fleet split, never below two nodes; the budget and why a session ends;
 * the same verdicts whatever order a round's results come in; bad options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util.h"
#include "scheduler/bisect.h"
#include "sim/faultmodel.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 32 };

typedef struct {
    char names[N][8];
    fb_topology_t *topo;
    fb_faultmodel_t *model;
} s_fleet_t;

/* The fleet of N nodes in four leaves of eight on `spines` spines. */
static void s_fleet_on(s_fleet_t *f, int spines, const char *faults)
{
    for (int i = 0; i < N; i++)
        snprintf(f->names[i], sizeof f->names[i], "sim-%02d", i);
    char topo[512], err[128];
    int at = snprintf(topo, sizeof topo, "leaf01: sim-[00-07]\nleaf02: sim-[08-15]\n"
                                         "leaf03: sim-[16-23]\nleaf04: sim-[24-31]\n");
    for (int k = 1; k <= spines; k++)
        at += snprintf(topo + at, sizeof topo - (size_t)at, "spine%02d: leaf[01-04]\n", k);
    assert_int_equal(fb_topology_parse(topo, &f->topo, err, sizeof err), 0);
    char *error = NULL;
    assert_int_equal(fb_faultmodel_parse(faults, strlen(faults), "t", &f->model, &error), 0);
    assert_int_equal(fb_faultmodel_bind(f->model, f->topo, &error), 0);
}

static void s_fleet(s_fleet_t *f, const char *faults)
{
    s_fleet_on(f, 2, faults);
}

static void s_fleet_free(s_fleet_t *f)
{
    fb_faultmodel_destroy(&f->model);
    fb_topology_destroy(&f->topo);
}

static const char *s_route(void *arg, const char *src, const char *dst, const char *rail)
{
    (void)rail; /* the simulated fabric routes by destination node */
    return fb_faultmodel_spine(arg, src, dst);
}

static bool s_judge(const s_fleet_t *f, const char *id, const char *const *m, size_t n, int rail)
{
    fb_sim_test_t t = {id, m, n, rail};
    fb_sim_outcome_t out;
    assert_int_equal(fb_faultmodel_judge(f->model, &t, &out), 0);
    return out.failed;
}

/* Runs one planned round in the simulator and records it. */
static void s_run_round(const s_fleet_t *f, fb_bisect_t *b, const fb_bisect_round_t *rd)
{
    for (size_t i = 0; i < rd->n_tests; i++) {
        const fb_bisect_test_t *t = &rd->tests[i];
        char id[32];
        snprintf(id, sizeof id, "r%u.%zu", rd->round, i);
        int rail = t->rail ? atoi(t->rail + 5) : -1;
        fb_bisect_flow_t flows[2];
        size_t nf = 0;
        if (t->n_members == 2)
            for (int d = 0; d < 2; d++) {
                const char *src = t->members[d], *dst = t->members[1 - d];
                flows[nf++] = (fb_bisect_flow_t){
                    src, dst, 100.0 * fb_faultmodel_flow_factor(f->model, src, dst, rail)};
            }
        fb_bisect_result_t r = {id,
                                (long)i,
                                (const char *const *)t->members,
                                t->n_members,
                                t->rail,
                                true,
                                s_judge(f, id, (const char *const *)t->members, t->n_members, rail),
                                flows,
                                nf,
                                NULL,
                                0};
        assert_int_equal(fb_bisect_record(b, &r), 0);
    }
}

static fb_bisect_t *s_session(const s_fleet_t *f, fb_scope_t scope, unsigned sweeps,
                              unsigned max_rounds, bool rails)
{
    fb_bisect_opts_t o;
    fb_bisect_opts_default(&o);
    o.scope = scope;
    o.pairing = FB_PAIRING_TOPOLOGY;
    o.topology = f->topo;
    o.route = s_route;
    o.route_arg = f->model;
    o.seed = 42;
    o.sweeps = sweeps;
    o.max_rounds = max_rounds;
    fb_bisect_t *b = fb_bisect_new(&o);
    assert_non_null(b);
    for (int i = 0; i < N; i++)
        assert_int_equal(
            fb_bisect_add_node(b, f->names[i], rails ? "mlx5_0,mlx5_1,mlx5_2,mlx5_3" : NULL), 0);
    return b;
}

/* Runs the session to its end; returns the rounds run. */
static unsigned s_run(const s_fleet_t *f, fb_bisect_t *b)
{
    unsigned rounds = 0;
    fb_bisect_round_t rd;
    while (fb_bisect_next(b, &rd) == 1) {
        assert_int_equal(rd.round, rounds + 1);
        assert_non_null(rd.why);
        s_run_round(f, b, &rd);
        fb_bisect_round_clear(&rd);
        rounds++;
    }
    fb_bisect_round_clear(&rd);
    return rounds;
}

static const fb_bisect_verdict_t *s_verdict(const fb_bisect_verdict_t *v, size_t n,
                                            const char *part)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].part, part))
            return &v[i];
    return NULL;
}

static size_t s_count(const fb_bisect_verdict_t *v, size_t n, fb_bisect_state_t st)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i].state == st;
    return k;
}

/* Pairs on 4 rails: a hard node and a hard NIC, 1% spurious failures. Both named, nothing else
 * bad or undecided at the end; the node's evidence cites the node-local test and partners. */
static void test_pairs(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f, "seed: 5\nfalse_fail_rate: 0.01\nrails: 4\nfaults:\n"
                "  - {node: sim-07, kind: hard}\n  - {nic: sim-20/1, kind: hard}\n");
    fb_bisect_t *b = s_session(&f, FB_SCOPE_PAIRS, 1, 12, true);
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "local.%s", f.names[i]);
        const char *m[1] = {f.names[i]};
        assert_int_equal(fb_bisect_record_local(b, id, f.names[i], s_judge(&f, id, m, 1, -1)), 0);
    }
    assert_true(fb_bisect_needed(b));
    unsigned rounds = s_run(&f, b);
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    const fb_bisect_verdict_t *node = s_verdict(v, n, "sim-07"),
                              *nic = s_verdict(v, n, "sim-20/mlx5_1");
    assert_non_null(node);
    assert_non_null(nic);
    assert_int_equal(node->state, FB_BISECT_BAD);
    assert_string_equal(node->kind, "node");
    assert_true(node->confidence >= 0.99);
    assert_string_equal(node->evidence[0].test_id, "local.sim-07");
    assert_true(node->n_partners >= 2);
    assert_int_equal(nic->state, FB_BISECT_BAD);
    assert_string_equal(nic->kind, "nic");
    assert_int_equal(s_count(v, n, FB_BISECT_BAD), 2);
    for (size_t i = 0; i < n; i++) /* what is left undecided leans towards good */
        if (v[i].state == FB_BISECT_UNDECIDED)
            assert_true(v[i].confidence < 0.5);
    assert_int_equal(v[0].state, FB_BISECT_BAD); /* bad first */
    assert_true(fb_bisect_end(b) == FB_BISECT_END_DECIDED ||
                fb_bisect_end(b) == FB_BISECT_END_ROUNDS);
    printf("[bisect] pairs: %u rounds (%u follow-up, ended: %s), %zu verdicts, %zu undecided, "
           "%zu cleared, %zu passed\n",
           rounds, fb_bisect_follow_ups(b), fb_bisect_end_name(fb_bisect_end(b)), n,
           s_count(v, n, FB_BISECT_UNDECIDED), s_count(v, n, FB_BISECT_CLEARED),
           s_count(v, n, FB_BISECT_PASSED));
    char **bad;
    size_t nb = fb_bisect_bad(b, &bad);
    assert_int_equal(nb, 2);
    for (size_t i = 0; i < nb; i++)
        free(bad[i]);
    free(bad);
    fb_bisect_verdicts_free(&v, n);
    assert_null(v);
    fb_bisect_destroy(&b);
    fb_bisect_destroy(&b); /* NULL-safe */
    s_fleet_free(&f);
}

/* A slow uplink (an eighth of the flows cross it): named as leaf02<->spine01 in the first round,
 * and no node of leaf02 with it. */
static void test_uplink(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f,
            "seed: 9\nrails: 4\nfaults:\n  - {link: leaf02<->spine01, kind: slow, factor: 0.5}\n");
    fb_bisect_t *b = s_session(&f, FB_SCOPE_PAIRS, 1, 4, true);
    fb_bisect_round_t rd;
    assert_int_equal(fb_bisect_next(b, &rd), 1);
    assert_false(rd.follow_up);
    assert_int_equal(rd.n_tests, N / 2 * 4);
    s_run_round(&f, b, &rd);
    fb_bisect_round_clear(&rd);
    assert_true(fb_bisect_needed(b));
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    assert_int_equal(s_count(v, n, FB_BISECT_BAD), 1);
    assert_string_equal(v[0].part, "leaf02<->spine01");
    assert_string_equal(v[0].kind, "link");
    assert_true(v[0].confidence > 0.99);
    assert_true(v[0].n_evidence > 0 && strstr(v[0].evidence[0].what, "of the median"));
    fb_bisect_verdicts_free(&v, n);
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* fb_bisect_bad names exactly one part, `part`. */
static void s_assert_only_named(const fb_bisect_t *b, const char *part)
{
    char **bad;
    size_t nb = fb_bisect_bad(b, &bad);
    assert_int_equal(nb, 1);
    assert_string_equal(bad[0], part);
    free(bad[0]);
    free(bad);
}

/* A pairs session on 4 rails that knows the topology but not the routes (the runner's case
 * until it reads the subnet manager's tables). */
static fb_bisect_t *s_session_no_routes(const s_fleet_t *f)
{
    fb_bisect_opts_t o;
    fb_bisect_opts_default(&o);
    o.pairing = FB_PAIRING_TOPOLOGY;
    o.topology = f->topo;
    o.seed = 42;
    o.sweeps = 2;
    o.max_rounds = 8;
    fb_bisect_t *b = fb_bisect_new(&o);
    assert_non_null(b);
    for (int i = 0; i < N; i++)
        assert_int_equal(fb_bisect_add_node(b, f->names[i], "mlx5_0,mlx5_1,mlx5_2,mlx5_3"), 0);
    return b;
}

/* The same uplink where the routes are not known (the runner's case until it reads the subnet
 * manager's tables): the flows into the leaf's nodes that the fabric routes through that spine
 * are slow, so those nodes look slow when receiving. Several of one leaf slow the same way are
 * the leaf's doing: one of its uplinks is named, "leaf02<->*", and the nodes pass. */
static void test_uplink_no_routes(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f,
            "seed: 9\nrails: 4\nfaults:\n  - {link: leaf02<->spine01, kind: slow, factor: 0.5}\n");
    fb_bisect_t *b = s_session_no_routes(&f);
    s_run(&f, b);
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    const fb_bisect_verdict_t *up = s_verdict(v, n, "leaf02<->*");
    assert_non_null(up);
    printf("[bisect] leaf02<->spine01 slow, no routes: %s\n", up->summary);
    assert_int_equal(up->state, FB_BISECT_BAD);
    assert_string_equal(up->kind, "link");
    assert_int_equal(s_count(v, n, FB_BISECT_BAD), 1);
    for (size_t i = 0; i < n; i++)
        if (strstr(v[i].part, "sim-1") && v[i].n_evidence)
            assert_int_not_equal(v[i].state, FB_BISECT_BAD);
    fb_bisect_verdicts_free(&v, n);
    s_assert_only_named(b, "leaf02<->*");
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* A slow uplink on a fabric of four spines, without the routes: only the two nodes of leaf02
 * that the fabric routes over spine01 receive over it, too few to name the leaf's uplinks, and
 * each looks slow when receiving from other leaves only, exactly as a slow receive path of its
 * own would. Neither is named: both stay undecided, saying which uplinks could be the cause. A
 * throttled node on the same fabric, slow both ways, is still named. */
static void test_uplink_two_nodes_no_routes(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet_on(&f, 4,
               "seed: 9\nrails: 4\nfaults:\n  - {link: leaf02<->spine01, kind: slow, factor: 0.5}\n"
               "  - {node: sim-20, kind: slow, factor: 0.6}\n");
    int behind = 0; /* the nodes of leaf02 whose traffic in crosses the slow link */
    for (int i = 8; i < 16; i++)
        behind += fb_faultmodel_flow_factor(f.model, "sim-00", f.names[i], 0) < 1.0;
    assert_int_equal(behind, 2);
    fb_bisect_t *b = s_session_no_routes(&f);
    s_run(&f, b);
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    const fb_bisect_verdict_t *slow = s_verdict(v, n, "sim-20");
    assert_non_null(slow);
    assert_int_equal(slow->state, FB_BISECT_BAD);
    assert_int_equal(s_count(v, n, FB_BISECT_BAD), 1);
    size_t undecided = 0;
    for (int i = 8; i < 16; i++) {
        const fb_bisect_verdict_t *x = s_verdict(v, n, f.names[i]);
        if (!x || fb_faultmodel_flow_factor(f.model, "sim-00", f.names[i], 0) == 1.0)
            continue;
        printf("[bisect] %s behind leaf02<->spine01, no routes: %s\n", x->part, x->summary);
        assert_int_equal(x->state, FB_BISECT_UNDECIDED);
        assert_non_null(strstr(x->summary, "leaf02's uplinks"));
        assert_true(x->n_evidence > 0);
        undecided++;
    }
    assert_true(undecided >= 1);
    fb_bisect_verdicts_free(&v, n);
    s_assert_only_named(b, "sim-20");
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* Records the stage's own round of a group stage: groups of `size` in name order. */
static void s_group_round(const s_fleet_t *f, fb_bisect_t *b, int size)
{
    for (int g = 0; g * size < N; g++) {
        const char *m[N];
        int n = 0;
        for (int i = g * size; i < N && i < (g + 1) * size; i++)
            m[n++] = f->names[i];
        char id[32];
        snprintf(id, sizeof id, "stage.g%d", g);
        fb_bisect_result_t r = {id,   -1, m,    (size_t)n, NULL, true, s_judge(f, id, m, n, -1),
                                NULL, 0,  NULL, 0};
        assert_int_equal(fb_bisect_record(b, &r), 0);
    }
}

/* A group stage: two groups of 16, one holding a hard node. Its members are re-tested in twos
 * with trusted partners from the group that passed (when the failure implicates them; split
 * first, never below two nodes, when it does not), and the bad node is named by the same
 * standard as pairs; its group mates pass. */
static void test_groups(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f, "faults:\n  - {node: sim-09, kind: hard}\n");
    fb_bisect_t *b = s_session(&f, FB_SCOPE_GROUP, 1, 12, false);
    s_group_round(&f, b, 16);
    assert_true(fb_bisect_needed(b));
    fb_bisect_round_t rd;
    assert_int_equal(fb_bisect_next(b, &rd), 1);
    for (size_t i = 0; i < rd.n_tests; i++)
        assert_true(rd.tests[i].n_members >= 2);
    s_run_round(&f, b, &rd);
    fb_bisect_round_clear(&rd);
    unsigned rounds = 1;
    while (fb_bisect_next(b, &rd) == 1) {
        s_run_round(&f, b, &rd);
        fb_bisect_round_clear(&rd);
        rounds++;
    }
    fb_bisect_round_clear(&rd);
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    const fb_bisect_verdict_t *bad = s_verdict(v, n, "sim-09");
    assert_non_null(bad);
    assert_int_equal(bad->state, FB_BISECT_BAD);
    assert_true(bad->n_partners >= 2);
    assert_int_equal(s_count(v, n, FB_BISECT_BAD), 1);
    assert_int_equal(s_count(v, n, FB_BISECT_UNDECIDED), 0);
    for (size_t i = 0; i < n; i++) /* its group mates and partners: explained by it */
        assert_true(v[i].state == FB_BISECT_PASSED || !strcmp(v[i].part, "sim-09"));
    assert_true(isnan(s_verdict(v, n, "sim-03")->confidence)); /* passed makes no claim */
    printf("[bisect] group of 16 with a hard node: %u follow-up round(s), ended: %s\n", rounds,
           fb_bisect_end_name(fb_bisect_end(b)));
    fb_bisect_verdicts_free(&v, n);
    /* a planned index out of the last round is refused */
    const char *m[1] = {"sim-01"};
    fb_bisect_result_t r = {"x", 99, m, 1, NULL, true, false, NULL, 0, NULL, 0};
    assert_int_equal(fb_bisect_record(b, &r), -EINVAL);
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* A NIC fault in a group stage (the test uses every rail): a node alone never shows it, so a split
 * down to single nodes could not find it. In twos with trusted partners it shows, and the node
 * holding it is named. */
static void test_groups_nic(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f, "rails: 4\nfaults:\n  - {nic: sim-05/2, kind: hard}\n");
    fb_bisect_t *b = s_session(&f, FB_SCOPE_GROUP, 1, 12, false);
    s_group_round(&f, b, 4);
    s_run(&f, b);
    char **bad;
    size_t nb = fb_bisect_bad(b, &bad);
    assert_int_equal(nb, 1);
    assert_string_equal(bad[0], "sim-05");
    free(bad[0]);
    free(bad);
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* The whole fleet in one group fails: nobody is trusted and the failure implicates nobody (in a
 * group of 32 a failure is not rare), so the group is split, 4 parts a level, each run twice,
 * never into parts of fewer than two nodes; the part that keeps failing ends in pairs with
 * trusted partners, and the hard node is named. */
static void test_groups_split(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f, "faults:\n  - {node: sim-22, kind: hard}\n");
    fb_bisect_t *b = s_session(&f, FB_SCOPE_GROUP, 1, 24, false);
    s_group_round(&f, b, N);
    fb_bisect_round_t rd;
    size_t smallest = N;
    unsigned rounds = 0;
    while (fb_bisect_next(b, &rd) == 1) {
        for (size_t i = 0; i < rd.n_tests; i++)
            smallest = rd.tests[i].n_members < smallest ? rd.tests[i].n_members : smallest;
        if (rounds == 0)
            assert_int_equal(rd.n_tests, 4); /* 32 in 4 parts of 8 */
        s_run_round(&f, b, &rd);
        fb_bisect_round_clear(&rd);
        rounds++;
    }
    fb_bisect_round_clear(&rd);
    assert_int_equal(smallest, 2);
    char **bad;
    size_t nb = fb_bisect_bad(b, &bad);
    assert_int_equal(nb, 1);
    assert_string_equal(bad[0], "sim-22");
    printf("[bisect] fleet of 32 in one group, a hard node: %u follow-up round(s), ended: %s\n",
           rounds, fb_bisect_end_name(fb_bisect_end(b)));
    free(bad[0]);
    free(bad);
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* A leaf switch that takes every node behind it: the eight nodes of leaf02 fail every test. The
 * leaf is named, and its nodes pass (the leaf explains them). */
static void test_leaf(void **state)
{
    (void)state;
    s_fleet_t f;
    char faults[1024] = "seed: 2\nrails: 4\nfaults:\n";
    for (int i = 8; i < 16; i++)
        snprintf(faults + strlen(faults), sizeof faults - strlen(faults),
                 "  - {node: sim-%02d, kind: hard}\n", i);
    s_fleet(&f, faults);
    fb_bisect_t *b = s_session(&f, FB_SCOPE_PAIRS, 1, 12, true);
    s_run(&f, b);
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    const fb_bisect_verdict_t *leaf = s_verdict(v, n, "leaf02");
    assert_non_null(leaf);
    assert_int_equal(leaf->state, FB_BISECT_BAD);
    assert_string_equal(leaf->kind, "leaf");
    assert_int_equal(s_count(v, n, FB_BISECT_BAD), 1);
    assert_int_equal(s_verdict(v, n, "sim-09")->state, FB_BISECT_PASSED);
    printf("[bisect] leaf02 down: %s\n", leaf->summary);
    fb_bisect_verdicts_free(&v, n);
    char **bad;
    size_t nb = fb_bisect_bad(b, &bad);
    assert_int_equal(nb, 1);
    assert_string_equal(bad[0], "leaf02");
    free(bad[0]);
    free(bad);
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* The adaptive stop: nothing failed, nothing slow: after the sweeps the session ends, decided.
 * Undecided parts are re-tested until decided or the budget runs out: the rounds (an intermittent
 * fault with one follow-up round), the time (as the caller measures it), or the trusted partners
 * (two nodes that failed together have none); the session says which. */
static void test_limits(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f, "faults: []\n");
    fb_bisect_t *b = s_session(&f, FB_SCOPE_PAIRS, 2, 12, false);
    assert_false(fb_bisect_needed(b));
    assert_int_equal(fb_bisect_end(b), FB_BISECT_RUNNING);
    assert_int_equal(s_run(&f, b), 2);
    assert_int_equal(fb_bisect_follow_ups(b), 0);
    assert_int_equal(fb_bisect_end(b), FB_BISECT_END_DECIDED);
    assert_string_equal(fb_bisect_end_name(fb_bisect_end(b)), "decided");
    fb_bisect_verdict_t *v;
    assert_int_equal(fb_bisect_verdicts(b, &v), 0);
    fb_bisect_verdicts_free(&v, 0);
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
    /* an intermittent fault with a budget of one follow-up round: the session stops there */
    s_fleet(&f, "seed: 3\nfaults:\n  - {node: sim-03, kind: intermittent, q: 0.3}\n");
    b = s_session(&f, FB_SCOPE_PAIRS, 1, 1, false);
    assert_int_equal(fb_bisect_record_local(b, "l3", "sim-03", true), 0);
    assert_int_equal(s_run(&f, b), 2);
    assert_int_equal(fb_bisect_follow_ups(b), 1);
    assert_int_equal(fb_bisect_end(b), FB_BISECT_END_ROUNDS);
    fb_bisect_round_t rd;
    assert_int_equal(fb_bisect_next(b, &rd), 0); /* and stays ended */
    fb_bisect_destroy(&b);
    /* a time budget of a minute: 30 s spent, the session goes on; 61 s, it ends */
    fb_bisect_opts_t o;
    fb_bisect_opts_default(&o);
    o.budget_s = 60.0;
    b = fb_bisect_new(&o);
    for (int i = 0; i < N; i++)
        assert_int_equal(fb_bisect_add_node(b, f.names[i], NULL), 0);
    assert_int_equal(fb_bisect_record_local(b, "l3", "sim-03", true), 0);
    assert_int_equal(fb_bisect_next(b, &rd), 1); /* the sweep */
    s_run_round(&f, b, &rd);
    fb_bisect_round_clear(&rd);
    fb_bisect_set_elapsed(b, 30.0);
    assert_int_equal(fb_bisect_next(b, &rd), 1);
    assert_true(rd.follow_up);
    s_run_round(&f, b, &rd);
    fb_bisect_round_clear(&rd);
    fb_bisect_set_elapsed(b, 61.0);
    assert_int_equal(fb_bisect_next(b, &rd), 0);
    assert_int_equal(fb_bisect_end(b), FB_BISECT_END_TIME);
    assert_string_equal(fb_bisect_end_name(FB_BISECT_END_TIME), "budget: time");
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
    /* two nodes that failed together: no trusted partner for either */
    b = fb_bisect_new(&o);
    assert_int_equal(fb_bisect_add_node(b, "a", NULL), 0);
    assert_int_equal(fb_bisect_add_node(b, "b", NULL), 0);
    assert_int_equal(fb_bisect_next(b, &rd), 1);
    const char *m[2] = {"a", "b"};
    fb_bisect_result_t r = {"t", 0, m, 2, NULL, true, true, NULL, 0, NULL, 0};
    assert_int_equal(fb_bisect_record(b, &r), 0);
    fb_bisect_round_clear(&rd);
    assert_int_equal(fb_bisect_next(b, &rd), 0);
    assert_int_equal(fb_bisect_end(b), FB_BISECT_END_STUCK);
    fb_bisect_destroy(&b);
}

/* Records a round of a healthy fleet in which only the test of `node` on `rail` fails, and only
 * when `fail` is set. */
static void s_round_one_failure(fb_bisect_t *b, const fb_bisect_round_t *rd, const char *node,
                                const char *rail, bool fail)
{
    for (size_t i = 0; i < rd->n_tests; i++) {
        const fb_bisect_test_t *t = &rd->tests[i];
        bool failed = false;
        for (size_t k = 0; fail && k < t->n_members; k++)
            failed |= !strcmp(t->members[k], node) && t->rail && !strcmp(t->rail, rail);
        char id[32];
        snprintf(id, sizeof id, "r%u.%zu", rd->round, i);
        fb_bisect_result_t r = {id,   (long)i, (const char *const *)t->members, t->n_members,
                                t->rail, true, failed, NULL, 0, NULL, 0};
        assert_int_equal(fb_bisect_record(b, &r), 0);
    }
}

/* The number in "on watch once N more passing test(s) rule out a steady fault", or 0. */
static unsigned s_watch_more(const char *summary)
{
    const char *at = strstr(summary, "on watch once ");
    unsigned more = 0;
    if (at && sscanf(at, "on watch once %u more passing test(s) rule out", &more) == 1)
        return more;
    return 0;
}

/* A NIC that failed once, alone in its round (a fault in bursts would), is held undecided; its
 * verdict says what would put it on watch (its node back in service): how many more passing
 * tests rule out a steady fault, which they do after exactly that many passing follow-ups, then
 * a P(bad) low enough, which further passes bring. */
static void test_watch_more(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f, "faults: []\n");
    fb_bisect_t *b = s_session(&f, FB_SCOPE_PAIRS, 2, 40, true);
    const char *part = "sim-05/mlx5_0";
    fb_bisect_round_t rd;
    unsigned said = 0, said_at = 0, bound_at = 0, watch_at = 0;
    while (!watch_at && fb_bisect_next(b, &rd) == 1) {
        unsigned round = rd.round;
        s_round_one_failure(b, &rd, "sim-05", "mlx5_0", round == 1);
        fb_bisect_round_clear(&rd);
        fb_bisect_verdict_t *v;
        size_t n = fb_bisect_verdicts(b, &v);
        const fb_bisect_verdict_t *x = s_verdict(v, n, part);
        assert_non_null(x);
        if (x->state != FB_BISECT_UNDECIDED)
            fail_msg("after round %u: %s", round, x->summary);
        unsigned more = s_watch_more(x->summary);
        bool p_left = strstr(x->summary, "its passes rule out a steady fault: on watch once more "
                                         "passes bring P(bad) to at most") != NULL;
        if (!x->on_watch && !more && !p_left) /* held: the verdict says what releases it */
            fail_msg("after round %u, held with no word of what releases it: %s", round,
                     x->summary);
        if (more && !said) {
            said = more;
            said_at = round;
            printf("[bisect] %s after round %u: %s\n", part, round, x->summary);
        }
        if (!more && said && !bound_at) {
            bound_at = round;
            printf("[bisect] %s after round %u: %s\n", part, round, x->summary);
        }
        if (x->on_watch)
            watch_at = round;
        fb_bisect_verdicts_free(&v, n);
    }
    fb_bisect_round_clear(&rd);
    printf("[bisect] %s: %u more passing test(s) said after round %u; a steady fault ruled out "
           "after round %u, on watch after round %u\n",
           part, said, said_at, bound_at, watch_at);
    assert_true(said > 0);
    assert_int_equal(bound_at, said_at + said); /* one test of it a round, each a pass */
    assert_true(watch_at >= bound_at);
    fb_bisect_destroy(&b);
    s_fleet_free(&f);
}

/* A round's results in any order: the same verdicts, word for word. */
static char *s_all_verdicts(const s_fleet_t *f, bool reverse)
{
    fb_bisect_t *b = s_session(f, FB_SCOPE_PAIRS, 1, 12, true);
    fb_bisect_round_t rd;
    char id[32];
    while (fb_bisect_next(b, &rd) == 1) {
        for (size_t k = 0; k < rd.n_tests; k++) {
            size_t i = reverse ? rd.n_tests - 1 - k : k;
            const fb_bisect_test_t *t = &rd.tests[i];
            snprintf(id, sizeof id, "r%u.%zu", rd.round, i);
            int rail = t->rail ? atoi(t->rail + 5) : -1;
            fb_bisect_result_t r = {
                id,
                (long)i,
                (const char *const *)t->members,
                t->n_members,
                t->rail,
                true,
                s_judge(f, id, (const char *const *)t->members, t->n_members, rail),
                NULL,
                0,
                NULL,
                0};
            assert_int_equal(fb_bisect_record(b, &r), 0);
        }
        fb_bisect_round_clear(&rd);
    }
    fb_bisect_round_clear(&rd);
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    char *all = xstrdup("");
    for (size_t i = 0; i < n; i++) {
        char *x = xasprintf("%s%s %s %s;", all, v[i].part, fb_bisect_state_name(v[i].state),
                            v[i].summary);
        free(all);
        all = x;
    }
    fb_bisect_verdicts_free(&v, n);
    fb_bisect_destroy(&b);
    return all;
}

static void test_order(void **state)
{
    (void)state;
    s_fleet_t f;
    s_fleet(&f,
            "seed: 8\nfalse_fail_rate: 0.02\nrails: 4\nfaults:\n"
            "  - {node: sim-07, kind: intermittent, q: 0.5}\n  - {nic: sim-20/1, kind: hard}\n");
    char *fwd = s_all_verdicts(&f, false), *rev = s_all_verdicts(&f, true);
    assert_string_equal(fwd, rev);
    free(fwd);
    free(rev);
    s_fleet_free(&f);
}

static void test_options(void **state)
{
    (void)state;
    fb_bisect_opts_t o;
    fb_bisect_opts_default(&o);
    assert_int_equal(o.sweeps, 1);
    assert_int_equal(o.max_rounds, 24);
    o.scope = FB_SCOPE_NODE;
    assert_null(fb_bisect_new(&o));
    fb_bisect_opts_default(&o);
    o.pairing = FB_PAIRING_TOPOLOGY; /* without a topology */
    assert_null(fb_bisect_new(&o));
    fb_bisect_opts_default(&o);
    o.sweeps = 0;
    assert_null(fb_bisect_new(&o));
    fb_bisect_opts_default(&o);
    o.diag.prior_bad = 2.0;
    assert_null(fb_bisect_new(&o));
    fb_bisect_opts_default(&o);
    fb_bisect_t *b = fb_bisect_new(&o);
    assert_int_equal(fb_bisect_add_node(b, "a", NULL), 0);
    assert_int_equal(fb_bisect_add_node(b, "a", NULL), -EEXIST);
    assert_int_equal(fb_bisect_add_node(b, "a/b", NULL), -EINVAL);
    const char *m[2] = {"a", "zz"};
    fb_bisect_result_t r = {"t", -1, m, 2, NULL, true, true, NULL, 0, NULL, 0};
    assert_int_equal(fb_bisect_record(b, &r), -ENOENT);
    r.test_id = NULL;
    assert_int_equal(fb_bisect_record(b, &r), -EINVAL);
    assert_string_equal(fb_bisect_state_name(FB_BISECT_UNDECIDED), "undecided");
    assert_non_null(fb_bisect_diag(b));
    fb_bisect_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),        cmocka_unit_test(test_uplink),
        cmocka_unit_test(test_uplink_no_routes),
        cmocka_unit_test(test_uplink_two_nodes_no_routes),
        cmocka_unit_test(test_groups),       cmocka_unit_test(test_groups_nic),
        cmocka_unit_test(test_groups_split), cmocka_unit_test(test_leaf),
        cmocka_unit_test(test_limits),       cmocka_unit_test(test_watch_more),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
