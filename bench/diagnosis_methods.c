/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-bench-diagnosis: the methods compared on a trial. The engine's session
 * (scheduler/bisect.h, as the runner drives it: the node-local round, then the rounds it plans,
 * results recorded in planned or shuffled order, a transcript hash to compare runs) and the two
 * baselines run in the same simulator: CHS-style two passes and 15 rounds of random pairs.
 * Separate from the world (diagnosis_world.c), which every method sees the same way, and from
 * the report (diagnosis.c). */
#include "diagnosis_internal.h"

#include "common/rng.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_SLOW 0.8 /* baselines: a pair below this share of the median is slow */
#define S_RANDOM_ROUNDS 15

/* ---- the engine ----------------------------------------------------------------------------- */

/* A transcript hash: every plan and every final verdict, to compare runs. */
static uint64_t s_mix_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = fb_mix64(h ^ (unsigned char)*s);
    return fb_mix64(h ^ 0xff);
}

/* The order results are recorded in: identity, or a shuffle seeded by shuffle (0: none). */
static void s_order(size_t *idx, size_t n, uint64_t shuffle)
{
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = n; shuffle && i > 1; i--) {
        size_t j = (size_t)fb_rng_below(&shuffle, i), t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}

static fb_bisect_t *s_engine_new(const dbench_opts_t *o, const dbench_fleet_t *f, unsigned trial)
{
    fb_bisect_opts_t bo;
    fb_bisect_opts_default(&bo);
    bo.pairing = o->pairing;
    bo.topology = f->topo; /* the fabric as a topology file says it; no routes */
    bo.seed = o->seed * 31 + trial;
    bo.sweeps = o->sweeps;
    bo.max_rounds = o->follow_ups;
    fb_bisect_t *b = fb_bisect_new(&bo);
    for (unsigned i = 0; b && i < f->n; i++)
        fb_bisect_add_node(b, f->names[i], f->rails_csv);
    return b;
}

static int s_rail_index(const char *rail)
{
    return rail ? atoi(rail + strlen("mlx5_")) : -1;
}

/* Counts a judged test in the record of each member's node and, on a rail, its NIC there. */
static void s_engine_count(const dbench_fleet_t *f, const char *const *m, size_t n, int rail,
                           const dbench_result_t *r, dbench_engine_run_t *run)
{
    if (!r->judged)
        return;
    for (size_t k = 0; k < n; k++) {
        int u = dbench__node_index(f, m[k]);
        if (u < 0)
            continue;
        size_t slots[2] = {(size_t)u * (f->rails + 1), 0}, n_slots = 1;
        if (rail >= 0 && (unsigned)rail < f->rails)
            slots[n_slots++] = slots[0] + 1 + (size_t)rail;
        for (size_t s = 0; s < n_slots; s++) {
            run->part_tests[slots[s]]++;
            run->part_fails[slots[s]] += r->failed;
        }
    }
}

/* The node-local round at time 0: its length. */
static double s_engine_local(const dbench_fleet_t *f, fb_bisect_t *b, unsigned trial,
                             uint64_t shuffle, dbench_engine_run_t *run)
{
    size_t *idx = xmalloc(f->n * sizeof *idx);
    s_order(idx, f->n, shuffle);
    bool lost = false;
    for (size_t k = 0; k < f->n; k++) {
        const char *node = f->names[idx[k]];
        char *id = xasprintf("t%u.local.%s", trial, node);
        dbench_result_t r;
        dbench__run_test(f, id, &node, 1, -1, 0.0, &r);
        s_engine_count(f, &node, 1, -1, &r, run);
        lost |= r.lost;
        if (r.judged) /* a lost node-local result says nothing, as the runner's timeout */
            fb_bisect_record_local(b, id, node, r.failed);
        run->transcript = fb_mix64(run->transcript ^ (r.judged * 2u + r.failed));
        free(id);
    }
    free(idx);
    return dbench__round_s(f->o, DBENCH_LOCAL_S, lost);
}

/* Notes the faults named by now. */
static void s_engine_named(const dbench_fleet_t *f, const fb_bisect_t *b, dbench_engine_run_t *run)
{
    char **bad;
    size_t n = fb_bisect_bad(b, &bad);
    dscore_truth_t t = {&f->world, f->topo, f->rails};
    for (size_t i = 0; i < f->world.n_faults; i++) {
        if (run->named_round[i])
            continue;
        for (size_t k = 0; k < n; k++) {
            dmix_world_t one = {&f->world.faults[i], 1, NULL, 0, NULL};
            dscore_truth_t ti = {&one, t.topo, t.rails};
            if (dscore_is_fault(&ti, bad[k])) {
                run->named_round[i] = run->rounds;
                run->named_s[i] = run->sim_s;
                break;
            }
        }
    }
    for (size_t k = 0; k < n; k++)
        free(bad[k]);
    free(bad);
}

/* One planned round: every test run at the round's start, results recorded in shuffled order. */
static void s_engine_round(const dbench_fleet_t *f, fb_bisect_t *b, const fb_bisect_round_t *rd,
                           unsigned trial, uint64_t shuffle, dbench_engine_run_t *run)
{
    dbench_result_t *res = xcalloc(rd->n_tests + 1, sizeof *res);
    char **ids = xcalloc(rd->n_tests + 1, sizeof *ids);
    bool lost = false;
    for (size_t i = 0; i < rd->n_tests; i++) {
        const fb_bisect_test_t *t = &rd->tests[i];
        ids[i] = xasprintf("t%u.r%u.%zu", trial, run->rounds, i);
        dbench__run_test(f, ids[i], (const char *const *)t->members, t->n_members,
                         s_rail_index(t->rail), run->sim_s, &res[i]);
        s_engine_count(f, (const char *const *)t->members, t->n_members, s_rail_index(t->rail),
                       &res[i], run);
        lost |= res[i].lost;
        for (size_t k = 0; k < t->n_members; k++)
            run->transcript = s_mix_str(run->transcript, t->members[k]);
        run->transcript = s_mix_str(s_mix_str(run->transcript, t->rail), t->suspect);
    }
    size_t *idx = xmalloc((rd->n_tests + 1) * sizeof *idx);
    s_order(idx, rd->n_tests, shuffle ? fb_mix64(shuffle ^ run->rounds) : 0);
    for (size_t k = 0; k < rd->n_tests; k++) {
        size_t i = idx[k];
        const fb_bisect_test_t *t = &rd->tests[i];
        fb_bisect_result_t r = {ids[i],
                                (long)i,
                                (const char *const *)t->members,
                                t->n_members,
                                t->rail,
                                res[i].judged,
                                res[i].failed,
                                res[i].flows,
                                res[i].n_flows,
                                NULL,
                                0};
        fb_bisect_record(b, &r);
    }
    run->tests += rd->n_tests;
    run->sim_s += dbench__round_s(f->o, DBENCH_ROUND_S, lost);
    for (size_t i = 0; i < rd->n_tests; i++)
        free(ids[i]);
    free(ids);
    free(idx);
    free(res);
}

/* The record slot of a node or NIC fault's part ("sim-0007", "sim-0007/mlx5_3"), or -1 (other
 * parts: a leaf, an uplink). */
static long s_record_slot(const dbench_fleet_t *f, const dmix_fault_t *fault)
{
    int u = fault->node ? dbench__node_index(f, fault->node) : -1;
    if (u < 0)
        return -1;
    const char *slash = strchr(fault->part, '/');
    int rail = slash ? s_rail_index(slash + 1) : -1;
    if (slash && (rail < 0 || (unsigned)rail >= f->rails))
        return -1;
    return (long)u * (f->rails + 1) + 1 + rail;
}

/* How many healthy parts of the fault's kind (nodes for a node fault, NICs for a NIC fault) had
 * a record as bad as its part's or worse: at least as many failed tests in no more tests. A
 * fault that left no more trace than that many healthy parts cannot be told from them by any
 * rule: implicating it implicates them too. 0 for other parts. */
static unsigned s_lookalikes(const dbench_fleet_t *f, const dbench_engine_run_t *run,
                             const dmix_fault_t *fault)
{
    long slot = s_record_slot(f, fault);
    if (slot < 0)
        return 0;
    unsigned tests = run->part_tests[slot], fails = run->part_fails[slot], count = 0;
    size_t width = f->rails + 1, first = (size_t)slot % width;
    dscore_truth_t t = {&f->world, f->topo, f->rails};
    for (size_t u = 0; u < f->n; u++) {
        size_t s = u * width + first;
        if (s == (size_t)slot || run->part_fails[s] < fails || run->part_tests[s] > tests)
            continue;
        char *part =
            first ? xasprintf("%s/mlx5_%zu", f->names[u], first - 1) : xstrdup(f->names[u]);
        count += !dscore_is_fault(&t, part);
        free(part);
    }
    return count;
}

/* The whole session of one trial; shuffle 0 records results in planned order. */
int dbench__engine_run(const dbench_opts_t *o, const dbench_fleet_t *f, unsigned trial,
                       uint64_t shuffle, dbench_engine_run_t *run)
{
    memset(run, 0, sizeof *run);
    run->named_round = xcalloc(f->world.n_faults + 1, sizeof *run->named_round);
    run->named_s = xcalloc(f->world.n_faults + 1, sizeof *run->named_s);
    run->showed = xcalloc(f->world.n_faults + 1, sizeof *run->showed);
    run->lookalikes = xcalloc(f->world.n_faults + 1, sizeof *run->lookalikes);
    run->part_tests = xcalloc((size_t)f->n * (f->rails + 1), sizeof *run->part_tests);
    run->part_fails = xcalloc((size_t)f->n * (f->rails + 1), sizeof *run->part_fails);
    fb_bisect_t *b = s_engine_new(o, f, trial);
    if (!b)
        return -EINVAL;
    memset(f->showed, 0, f->world.n_faults * sizeof *f->showed);
    run->sim_s = s_engine_local(f, b, trial, shuffle, run);
    fb_bisect_round_t rd;
    int rc;
    while (run->rounds < DBENCH_MAX_ROUNDS && (rc = fb_bisect_next(b, &rd)) == 1) {
        run->rounds++;
        s_engine_round(f, b, &rd, trial, shuffle, run);
        fb_bisect_round_clear(&rd);
        s_engine_named(f, b, run);
    }
    fb_bisect_round_clear(&rd);
    run->follow_ups = fb_bisect_follow_ups(b);
    run->n_verdicts = fb_bisect_verdicts(b, &run->verdicts);
    for (size_t i = 0; i < run->n_verdicts; i++) {
        run->transcript = s_mix_str(run->transcript, run->verdicts[i].part);
        run->transcript = fb_mix64(run->transcript ^ (uint64_t)run->verdicts[i].state);
    }
    run->budget_ended = fb_bisect_end(b) == FB_BISECT_END_ROUNDS;
    memcpy(run->showed, f->showed, f->world.n_faults * sizeof *run->showed);
    for (size_t i = 0; i < f->world.n_faults; i++)
        run->lookalikes[i] = s_lookalikes(f, run, &f->world.faults[i]);
    fb_bisect_destroy(&b);
    return 0;
}

void dbench__engine_run_free(dbench_engine_run_t *run)
{
    fb_bisect_verdicts_free(&run->verdicts, run->n_verdicts);
    free(run->named_round);
    free(run->named_s);
    free(run->showed);
    free(run->lookalikes);
    free(run->part_tests);
    free(run->part_fails);
}

/* FB_BENCH_DEBUG=1: every verdict that is not "cleared", and the truth (wrong: only trials with
 * a wrong verdict). */
void dbench__debug(const dbench_fleet_t *f, const dbench_engine_run_t *run, unsigned trial)
{
    const char *debug = getenv("FB_BENCH_DEBUG");
    if (!debug)
        return;
    dscore_truth_t t = {&f->world, f->topo, f->rails};
    bool wrong = false;
    for (size_t i = 0; i < run->n_verdicts; i++)
        wrong |=
            (run->verdicts[i].state == FB_BISECT_BAD) != dscore_is_fault(&t, run->verdicts[i].part);
    for (size_t i = 0; i < f->world.n_faults; i++)
        wrong |= !run->named_round[i];
    bool only_wrong = !strcmp(debug, "wrong") || !strcmp(debug, "evidence");
    if (only_wrong && !wrong)
        return;
    fprintf(stderr, "trial %u after %u rounds (%u follow-ups), %.0f s: truth", trial, run->rounds,
            run->follow_ups, run->sim_s);
    for (size_t i = 0; i < f->world.n_faults; i++)
        fprintf(stderr, " %s(%s q %.2f x%.2f b %.0f)", f->world.faults[i].part,
                dmix_type_name(f->world.faults[i].type), f->world.faults[i].q,
                f->world.faults[i].factor, f->world.faults[i].burst_s);
    for (size_t i = 0; i < f->world.n_noisy; i++)
        fprintf(stderr, "%s %s", i ? "," : "; noisy", f->world.noisy[i]);
    fprintf(stderr, "\n");
    for (size_t i = 0; i < run->n_verdicts; i++) {
        const fb_bisect_verdict_t *v = &run->verdicts[i];
        if (v->state == FB_BISECT_CLEARED && !dscore_is_fault(&t, v->part))
            continue;
        bool fault = dscore_is_fault(&t, v->part);
        const char *mark =
            v->state == FB_BISECT_BAD ? (fault ? "  " : "FP") : (fault ? "FN" : "  ");
        fprintf(stderr, "%s %-9s %-22s %-5s %.4f %s\n", mark, fb_bisect_state_name(v->state),
                v->part, v->kind, v->confidence, v->summary);
        if (!strcmp(debug, "evidence") && mark[0] != ' ') /* the tests behind a wrong verdict */
            for (size_t e = 0; e < v->n_evidence; e++)
                fprintf(stderr, "     %s: %s\n", v->evidence[e].test_id, v->evidence[e].what);
    }
}

/* ---- baselines --------------------------------------------------------------------------------
 */

static void s_shuffle(unsigned *v, unsigned n, uint64_t *rng)
{
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)fb_rng_below(rng, i), t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static int s_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A round of pairs a[i]-b[i] on every rail at time t: bad[i] when the pair failed or is slow
 * (its smallest flow below S_SLOW of the round's median), judged[i] when it has a verdict.
 * Returns the round's length. */
static double s_pass(const dbench_fleet_t *f, const char *tag, const unsigned *a, const unsigned *b,
                     unsigned n, double t, bool *bad, bool *judged)
{
    double *bw = xmalloc((n + 1) * sizeof *bw), *sorted = xmalloc((n + 1) * sizeof *sorted);
    size_t n_bw = 0;
    bool lost = false;
    for (unsigned i = 0; i < n; i++) {
        char *id = xasprintf("%s.%u", tag, i);
        const char *m[2] = {f->names[a[i]], f->names[b[i]]};
        dbench_result_t r;
        dbench__run_test(f, id, m, 2, -1, t, &r);
        lost |= r.lost;
        bad[i] = r.judged && r.failed;
        judged[i] = r.judged;
        bw[i] = r.min_bw;
        if (!isnan(r.min_bw))
            sorted[n_bw++] = r.min_bw;
        free(id);
    }
    qsort(sorted, n_bw, sizeof *sorted, s_cmp_d);
    double med = n_bw ? sorted[n_bw / 2] : NAN;
    for (unsigned i = 0; i < n; i++)
        if (!isnan(bw[i]) && bw[i] < S_SLOW * med) {
            bad[i] = true;
            judged[i] = true;
        }
    free(bw);
    free(sorted);
    return dbench__round_s(f->o, DBENCH_ROUND_S, lost);
}

/* A random perfect matching of the nodes: a[i]-b[i], returns the number of pairs. */
static unsigned s_matching(const dbench_fleet_t *f, uint64_t *rng, unsigned *a, unsigned *b)
{
    unsigned *perm = xmalloc(f->n * sizeof *perm);
    for (unsigned i = 0; i < f->n; i++)
        perm[i] = i;
    s_shuffle(perm, f->n, rng);
    for (unsigned i = 0; i < f->n / 2; i++) {
        a[i] = perm[2 * i];
        b[i] = perm[2 * i + 1];
    }
    free(perm);
    return f->n / 2;
}

/* Names the nodes marked in named[] as bad verdicts. */
static size_t s_named_verdicts(const dbench_fleet_t *f, const bool *named,
                               fb_bisect_verdict_t **out)
{
    size_t n = 0;
    *out = xcalloc(f->n + 1, sizeof **out);
    for (unsigned i = 0; i < f->n; i++)
        if (named[i]) {
            (*out)[n].part = xstrdup(f->names[i]);
            (*out)[n].kind = "node";
            (*out)[n].state = FB_BISECT_BAD;
            (*out)[n++].confidence = NAN;
        }
    return n;
}

static void s_baseline_done(dscore_t *s, const dbench_fleet_t *f, const bool *named,
                            unsigned rounds, double sim_s, size_t tests)
{
    fb_bisect_verdict_t *v;
    size_t n = s_named_verdicts(f, named, &v);
    dscore_truth_t t = {&f->world, f->topo, f->rails};
    dscore_run_t run = {
        .verdicts = v, .n_verdicts = n, .rounds = rounds, .sim_s = sim_s, .tests = tests};
    dscore_add(s, &t, &run);
    fb_bisect_verdicts_free(&v, n);
}

/* Two passes: random pairs; every node of a bad pair re-paired with a node that passed. */
void dbench__run_two_pass(const dbench_opts_t *o, const dbench_fleet_t *f, unsigned trial,
                          dscore_t *s)
{
    uint64_t rng = fb_mix64(o->seed * 7 + trial);
    unsigned *a = xmalloc(f->n * sizeof *a), *b = xmalloc(f->n * sizeof *b);
    unsigned np = s_matching(f, &rng, a, b);
    bool *bad = xcalloc(f->n + 1, sizeof *bad), *judged = xcalloc(f->n + 1, sizeof *judged);
    bool *named = xcalloc(f->n, sizeof *named);
    char tag[64];
    snprintf(tag, sizeof tag, "t%u.two.1", trial);
    double t = s_pass(f, tag, a, b, np, 0.0, bad, judged);
    unsigned *good = xmalloc(f->n * sizeof *good), n_good = 0;
    unsigned *sus = xmalloc(f->n * sizeof *sus), n_sus = 0;
    for (unsigned i = 0; i < np; i++) {
        unsigned *to = bad[i] ? sus : judged[i] ? good : NULL;
        unsigned *count = bad[i] ? &n_sus : &n_good;
        if (!to)
            continue;
        to[(*count)++] = a[i];
        to[(*count)++] = b[i];
    }
    s_shuffle(good, n_good, &rng);
    unsigned n2 = n_sus < n_good ? n_sus : n_good;
    snprintf(tag, sizeof tag, "t%u.two.2", trial);
    t += s_pass(f, tag, sus, good, n2, t, bad, judged);
    for (unsigned i = 0; i < n2; i++)
        named[sus[i]] |= bad[i];
    s_baseline_done(s, f, named, 2, t, (size_t)(np + n2) * f->rails);
    free(a);
    free(b);
    free(bad);
    free(judged);
    free(named);
    free(good);
    free(sus);
}

/* 15 rounds of random pairs; a node failing or slow in a third of its judged tests is bad. */
void dbench__run_random(const dbench_opts_t *o, const dbench_fleet_t *f, unsigned trial,
                        dscore_t *s)
{
    uint64_t rng = fb_mix64(o->seed * 13 + trial);
    unsigned *a = xmalloc(f->n * sizeof *a), *b = xmalloc(f->n * sizeof *b);
    unsigned *tests = xcalloc(f->n, sizeof *tests), *fails = xcalloc(f->n, sizeof *fails);
    bool *bad = xcalloc(f->n + 1, sizeof *bad), *judged = xcalloc(f->n + 1, sizeof *judged);
    double t = 0;
    size_t n_tests = 0;
    for (unsigned round = 0; round < S_RANDOM_ROUNDS; round++) {
        unsigned np = s_matching(f, &rng, a, b);
        char tag[64];
        snprintf(tag, sizeof tag, "t%u.rand.%u", trial, round);
        t += s_pass(f, tag, a, b, np, t, bad, judged);
        n_tests += (size_t)np * f->rails;
        for (unsigned i = 0; i < np; i++) {
            tests[a[i]] += judged[i];
            tests[b[i]] += judged[i];
            fails[a[i]] += bad[i];
            fails[b[i]] += bad[i];
        }
    }
    bool *named = xcalloc(f->n, sizeof *named);
    for (unsigned i = 0; i < f->n; i++)
        named[i] = tests[i] >= 3 && 3 * fails[i] >= tests[i];
    s_baseline_done(s, f, named, S_RANDOM_ROUNDS, t, n_tests);
    free(a);
    free(b);
    free(tests);
    free(fails);
    free(bad);
    free(judged);
    free(named);
}
