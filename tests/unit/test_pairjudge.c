/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of scheduler/pairjudge: simulated pair rounds (round-robin plans from pairing.h)
 * with one node's egress throttled name that node once it has met several partners, and only a
 * link between two nodes after a single round; two bad nodes are both named; ordinary spread,
 * a noisy fleet and too few values name nobody; the evidence quotes values and medians. */
#include "scheduler/pairing.h"
#include "scheduler/pairjudge.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct {
    char **names;
    size_t n;
    const char *slow[2]; /* nodes whose egress runs at 20% */
    bool both_ways;      /* their ingress too (a shaped link, a bad cable) */
    double jitter;       /* relative spread of healthy values */
    fb_pair_sample_t *samples;
    size_t n_samples;
} s_sim_t;

static double s_bw(const s_sim_t *sim, const char *from, const char *to, unsigned salt)
{
    double v = 9.4 * (1.0 + sim->jitter * (double)((salt * 2654435761u) % 1000) / 1000.0);
    for (size_t i = 0; i < 2; i++)
        if (sim->slow[i] &&
            (!strcmp(sim->slow[i], from) || (sim->both_ways && !strcmp(sim->slow[i], to))))
            v *= 0.2;
    return v;
}

static void s_add(s_sim_t *sim, const char *node, const char *partner, unsigned round, double tx,
                  double rx)
{
    sim->samples = xrealloc(sim->samples, (sim->n_samples + 1) * sizeof *sim->samples);
    sim->samples[sim->n_samples++] = (fb_pair_sample_t){node, partner, round, tx, rx};
}

/* Runs `rounds` round-robin rounds over nodes n1..nN. */
static void s_simulate(s_sim_t *sim, size_t n, unsigned rounds)
{
    sim->n = n;
    sim->names = xcalloc(n, sizeof *sim->names);
    for (size_t i = 0; i < n; i++)
        sim->names[i] = xasprintf("n%zu", i + 1);
    unsigned salt = 1;
    for (unsigned r = 0; r < rounds; r++) {
        fb_plan_t plan;
        assert_int_equal(fb_plan_pairs_round_robin((const char *const *)sim->names, n, r, &plan),
                         0);
        for (size_t g = 0; g < plan.n_groups; g++) {
            /* the sample names are borrowed: point them at the simulation's own copies */
            const char *a = NULL, *b = NULL;
            for (size_t i = 0; i < n; i++) {
                if (!strcmp(sim->names[i], plan.groups[g].members[0]))
                    a = sim->names[i];
                if (!strcmp(sim->names[i], plan.groups[g].members[1]))
                    b = sim->names[i];
            }
            double ab = s_bw(sim, a, b, salt++), ba = s_bw(sim, b, a, salt++);
            s_add(sim, a, b, r, ab, ba);
            s_add(sim, b, a, r, ba, ab);
        }
        fb_plan_clear(&plan);
    }
}

static void s_sim_free(s_sim_t *sim)
{
    for (size_t i = 0; i < sim->n; i++)
        free(sim->names[i]);
    free(sim->names);
    free(sim->samples);
}

static int s_judge(const s_sim_t *sim, fb_pair_judgment_t *j)
{
    return fb_pairjudge(fb_pairjudge_metrics("netbw"), sim->samples, sim->n_samples, j);
}

static void test_metric_table(void **state)
{
    (void)state;
    const fb_pair_metrics_t *m = fb_pairjudge_metrics("netbw");
    assert_non_null(m);
    assert_string_equal(m->tx, "netbw.tx_gbps");
    assert_string_equal(m->rx, "netbw.rx_gbps");
    m = fb_pairjudge_metrics("rdmabw");
    assert_non_null(m);
    assert_string_equal(m->tx, "rdmabw.tx_gbps");
    assert_null(fb_pairjudge_metrics("sleep"));
    assert_null(fb_pairjudge_metrics(NULL));
    assert_string_equal(fb_pair_finding_kind_name(FB_PAIR_FINDING_NODE), "node");
    assert_string_equal(fb_pair_finding_kind_name(FB_PAIR_FINDING_LINK), "link");
}

/* Three round-robin rounds over four nodes: n1 meets everyone, and only its pairs are slow. */
static void test_throttled_node_named(void **state)
{
    (void)state;
    s_sim_t sim = {0};
    sim.slow[0] = "n1";
    sim.jitter = 0.03;
    s_simulate(&sim, 4, 3);
    fb_pair_judgment_t j;
    assert_int_equal(s_judge(&sim, &j), 1);
    assert_int_equal(j.slow_pairs, 3);
    const fb_pair_finding_t *f = &j.findings[0];
    assert_int_equal(f->kind, FB_PAIR_FINDING_NODE);
    assert_string_equal(f->part, "n1");
    assert_string_equal(f->node, "n1");
    assert_int_equal(f->n_samples, 6);
    for (size_t i = 0; i < f->n_samples; i++) {
        const fb_pair_sample_t *s = &sim.samples[f->samples[i]];
        assert_true(!strcmp(s->node, "n1") || !strcmp(s->partner, "n1"));
    }
    assert_non_null(
        strstr(f->what, "n1 is slow with 3 partners, 3 of which pass with other nodes:"));
    assert_non_null(strstr(f->what, "n1 netbw.tx_gbps 1."));
    assert_non_null(strstr(f->what, "netbw.rx_gbps 1."));
    assert_non_null(strstr(f->what, "stage medians (over nodes) netbw.tx_gbps 9."));
    assert_non_null(strstr(f->what, "round 0 with n"));
    assert_non_null(strstr(f->what, "round 2 with n"));
    assert_true(j.median_tx > 9.0 && j.median_tx < 10.0);
    print_message("evidence: %s\n", f->what);
    fb_pair_judgment_clear(&j);
    fb_pair_judgment_clear(&j);
    s_sim_free(&sim);
}

/* Slow both ways on a small stage: half of all samples are slow, and still only ns2 is named. */
static void test_both_ways_small_stage(void **state)
{
    (void)state;
    s_sim_t sim = {0};
    sim.slow[0] = "n2";
    sim.both_ways = true;
    sim.jitter = 0.3;
    s_simulate(&sim, 4, 3);
    fb_pair_judgment_t j;
    assert_int_equal(s_judge(&sim, &j), 1);
    assert_int_equal(j.slow_pairs, 3);
    assert_string_equal(j.findings[0].part, "n2");
    assert_int_equal(j.findings[0].kind, FB_PAIR_FINDING_NODE);
    assert_non_null(strstr(j.findings[0].what, "n1"));
    assert_non_null(strstr(j.findings[0].what, "n3"));
    assert_non_null(strstr(j.findings[0].what, "n4"));
    fb_pair_judgment_clear(&j);
    s_sim_free(&sim);
}

/* One round: each node met one partner, so the slow pair cannot be pinned on either end. */
static void test_single_round_is_a_link(void **state)
{
    (void)state;
    s_sim_t sim = {0};
    sim.slow[0] = "n1";
    sim.jitter = 0.03;
    s_simulate(&sim, 4, 1);
    fb_pair_judgment_t j;
    assert_int_equal(s_judge(&sim, &j), 1);
    const fb_pair_finding_t *f = &j.findings[0];
    assert_int_equal(f->kind, FB_PAIR_FINDING_LINK);
    /* round 0 of the circle method over n1..n4 pairs n1 with n4 */
    assert_string_equal(f->part, "n1<->n4");
    assert_string_equal(f->node, "n1");
    assert_int_equal(f->n_samples, 2);
    assert_non_null(strstr(f->what, "slow between n1 and n4: round 0 ("));
    assert_non_null(strstr(f->what, "undecided between n1 and n4"));
    print_message("evidence: %s\n", f->what);
    fb_pair_judgment_clear(&j);
    s_sim_free(&sim);
}

/* Two bad nodes over six nodes and five rounds: both named, their pair with each other too. */
static void test_two_bad_nodes(void **state)
{
    (void)state;
    s_sim_t sim = {0};
    sim.slow[0] = "n2";
    sim.slow[1] = "n5";
    sim.jitter = 0.05;
    s_simulate(&sim, 6, 5);
    fb_pair_judgment_t j;
    assert_int_equal(s_judge(&sim, &j), 2);
    assert_string_equal(j.findings[0].part, "n2");
    assert_string_equal(j.findings[1].part, "n5");
    assert_int_equal(j.findings[0].kind, FB_PAIR_FINDING_NODE);
    assert_int_equal(j.findings[1].kind, FB_PAIR_FINDING_NODE);
    assert_int_equal(j.slow_pairs, 9);
    fb_pair_judgment_clear(&j);
    s_sim_free(&sim);
}

static void test_nobody_named(void **state)
{
    (void)state;
    /* healthy spread of 20% */
    s_sim_t sim = {0};
    sim.jitter = 0.2;
    s_simulate(&sim, 8, 7);
    fb_pair_judgment_t j;
    assert_int_equal(s_judge(&sim, &j), 0);
    assert_int_equal(j.slow_pairs, 0);
    fb_pair_judgment_clear(&j);
    s_sim_free(&sim);

    /* a noisy fleet: the lowest value is under 70% of the median, but within 3 robust
     * deviations of it */
    s_sim_t noisy = {0};
    const char *nodes[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    for (size_t i = 0; i < 10; i += 2) {
        s_add(&noisy, nodes[i], nodes[i + 1], 0, (double)(i + 1), (double)(i + 2));
        s_add(&noisy, nodes[i + 1], nodes[i], 0, (double)(i + 2), (double)(i + 1));
    }
    assert_int_equal(
        fb_pairjudge(fb_pairjudge_metrics("netbw"), noisy.samples, noisy.n_samples, &j), 0);
    fb_pair_judgment_clear(&j);
    free(noisy.samples);

    /* too few values to judge against: no medians, nobody named */
    s_sim_t two = {0};
    s_add(&two, "a", "b", 0, 9.0, 1.0);
    s_add(&two, "b", "a", 0, 1.0, 9.0);
    assert_int_equal(fb_pairjudge(fb_pairjudge_metrics("netbw"), two.samples, 2, &j), 0);
    assert_true(isnan(j.median_tx));
    fb_pair_judgment_clear(&j);
    /* missing metrics (NaN) are left out of the medians */
    s_add(&two, "c", "d", 0, NAN, NAN);
    s_add(&two, "d", "c", 0, NAN, NAN);
    assert_int_equal(fb_pairjudge(fb_pairjudge_metrics("netbw"), two.samples, 4, &j), 0);
    fb_pair_judgment_clear(&j);
    /* a node paired with itself is a caller error */
    s_add(&two, "e", "e", 0, 1.0, 1.0);
    assert_int_equal(fb_pairjudge(fb_pairjudge_metrics("netbw"), two.samples, 5, &j), -EINVAL);
    assert_int_equal(j.n_findings, 0);
    free(two.samples);
    assert_int_equal(fb_pairjudge(fb_pairjudge_metrics("netbw"), NULL, 0, &j), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metric_table),           cmocka_unit_test(test_throttled_node_named),
        cmocka_unit_test(test_single_round_is_a_link), cmocka_unit_test(test_two_bad_nodes),
        cmocka_unit_test(test_both_ways_small_stage),  cmocka_unit_test(test_nobody_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
