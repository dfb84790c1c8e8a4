/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-bench-diagnosis: seeded trials of the diagnosis session (scheduler/bisect.h, the
 * planning code the runner uses for `on_fail: bisect`) against the simulated fleet's fault model
 * (sim/faultmodel.h, what fleetburn-simfleet's agents answer from), in one process so that
 * hundreds of trials of a thousand nodes run in minutes.
 *
 * The world is messy on purpose (docs/diagnosis.md "Benchmark"): each trial draws its faults from
 * the failure mix of a real fleet (diagnosis_mix.h: bursts, several faults on a node, slow nodes
 * close to the engine's threshold, leaf switches, noisy nodes), and every test goes through the
 * simulator's false fails, lognormal measurement noise, lost results and disagreeing members. A
 * test's verdict reaches the engine the way the runner forms it (scheduler/stage.h
 * fb_group_verdict: a member's failure decides it; a lost member's result, unless another
 * failed, leaves it without a verdict, the deadline's timeout, which says nothing about parts),
 * and each member reports its own two flows.
 *
 * What the engine is given, as the runner gives it: the topology (leaves and spines), each
 * node's rails, the node-local round's verdicts, every result with its flows. Not given: the
 * simulator's routes (which spine a flow crosses), its q or false-fail rate, the faults. The
 * engine's parameters are its defaults (fb_diag_params_default); the report prints them.
 *
 * The same trials run two baselines in the same simulator: CHS-style two passes (random pairs on
 * all rails; a pair that fails or is slow makes both suspects; a suspect re-paired with a node
 * that passed and failing again is bad, as cluster-health-scanner does) and 15 rounds of random
 * pairs (a node failing or slow in at least a third of its judged tests is bad).
 *
 * The clock: the node-local round lasts 600 s, every pair round 60 s, a round in which a result
 * was lost lasts until the coordinator's deadline: the stage's timeout (--timeout-factor times
 * the round's test length) plus scheduler/stage.h's grace.
 * Bursty faults are judged at their round's start.
 *
 *   fleetburn-bench-diagnosis --nodes N [--rails R] [--trials T] [--seed S]
 *       [--mix fleet|TYPE] [--q Q] [--factor F] [--burst S] [--faults MIN-MAX]
 *       [--false-fail F] [--noise-sigma S | --noise-width W] [--lost P] [--disagree P]
 *       [--noisy-share P] [--noisy-sigma S] [--second-share P]
 *       [--sweeps S] [--follow-ups K] [--timeout-factor F] [--goal-follow-ups K]
 *       [--pairing random|topology] [--no-baselines] [--order-check K]
 *   fleetburn-bench-diagnosis --check-world [world options]
 *   fleetburn-bench-diagnosis --nodes N --faults-file FILE [--sweeps S] [--follow-ups K]
 *
 * --check-world measures the world itself (the mix's shares, false fails, lost results,
 * disagreements, noise) against what the options promise, and exits 1 when a measure is off:
 * the short test of tests/integration/test_bench_diagnosis.sh. --faults-file runs one trial of
 * the engine on a fault file (fleetburn-simfleet's format) and prints what it named. */
#include "diagnosis_mix.h"
#include "diagnosis_score.h"

#include "common/fileload.h"
#include "common/rng.h"
#include "common/util.h"
#include "scheduler/bisect.h"
#include "scheduler/stage.h"
#include "scheduler/topology.h"
#include "sim/faultmodel.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_LEAF_SIZE 32
#define S_SPINES 4
#define S_NOMINAL 100.0 /* Gb/s of a healthy flow */
#define S_LOCAL_S 600.0 /* simulated length of the node-local round (a memtest) */
#define S_ROUND_S 60.0  /* ... and of one pair round */
#define S_MAX_ROUNDS 256
#define S_SLOW 0.8 /* baselines: a pair below this share of the median is slow */
#define S_RANDOM_ROUNDS 15

typedef struct {
    unsigned nodes, rails, trials, sweeps, follow_ups, goal_follow_ups, order_check;
    uint64_t seed;
    dmix_opts_t mix;
    double false_fail, lost, disagree, noise_sigma, noise_width, timeout_factor;
    bool baselines, check_world;
    fb_pairing_t pairing;
    const char *faults_file;
} s_opts_t;

/* The fleet of one trial: names, fabric, the simulator, and the truth. */
typedef struct {
    const s_opts_t *o;
    unsigned n, rails;
    char **names;
    fb_topology_t *topo;
    fb_faultmodel_t *model;
    dmix_world_t world;
    char *rails_csv;
} s_fleet_t;

/* ---- the fleet ------------------------------------------------------------------------------ */

static char *s_topology_text(char **names, unsigned n)
{
    unsigned leaves = (n + S_LEAF_SIZE - 1) / S_LEAF_SIZE;
    size_t cap = 256 + (size_t)n * 16 + leaves * 32, len = 0;
    char *text = xmalloc(cap);
    for (unsigned l = 0; l < leaves; l++) {
        len += (size_t)snprintf(text + len, cap - len, "leaf%03u:", l + 1);
        for (unsigned i = l * S_LEAF_SIZE; i < n && i < (l + 1) * S_LEAF_SIZE; i++)
            len += (size_t)snprintf(text + len, cap - len, "%s%s", i % S_LEAF_SIZE ? "," : " ",
                                    names[i]);
        len += (size_t)snprintf(text + len, cap - len, "\n");
    }
    for (unsigned s = 0; s < S_SPINES; s++)
        len +=
            (size_t)snprintf(text + len, cap - len, "spine%02u: leaf[001-%03u]\n", s + 1, leaves);
    return text;
}

/* The world's top-level keys as fault-file text. */
static char *s_world_keys(const s_opts_t *o, unsigned trial)
{
    char *noise = o->noise_sigma > 0 ? xasprintf("{dist: lognormal, sigma: %g}", o->noise_sigma)
                                     : xasprintf("{dist: uniform, width: %g}", o->noise_width);
    char *text = xasprintf("seed: %llu\nfalse_fail_rate: %g\nlost_rate: %g\ndisagree_rate: %g\n"
                           "noise: %s\nrails: %u\nfaults:\n",
                           (unsigned long long)(o->seed * 7919ULL + trial), o->false_fail, o->lost,
                           o->disagree, noise, o->rails);
    free(noise);
    return text;
}

static int s_load_model(s_fleet_t *f, const char *text, size_t len, const char *source)
{
    char *error = NULL;
    int rc = fb_faultmodel_parse(text, len, source, &f->model, &error);
    if (!rc)
        rc = fb_faultmodel_bind(f->model, f->topo, &error);
    if (rc)
        fprintf(stderr, "%s\n", error ? error : "cannot load the faults");
    free(error);
    return rc;
}

/* The truth of a fault file given with --faults-file, in the benchmark's types. */
static void s_truth_from_file(s_fleet_t *f)
{
    for (size_t i = 0; i < fb_faultmodel_count(f->model); i++) {
        const fb_fault_t *ft = fb_faultmodel_fault(f->model, i);
        if (ft->kind == FB_FAULT_NOISY)
            continue;
        dmix_type_t t = DMIX_NODE_HARD;
        bool bursty = ft->burst_s > 0, hard = ft->kind == FB_FAULT_HARD;
        if (ft->site == FB_FAULT_AT_NODE)
            t = ft->kind == FB_FAULT_SLOW
                    ? (ft->factor < 0.8 ? DMIX_NODE_SLOW : DMIX_NODE_SLOW_MILD)
                : hard   ? DMIX_NODE_HARD
                : bursty ? DMIX_NODE_BURSTY
                         : DMIX_NODE_INTERMITTENT;
        else if (ft->site == FB_FAULT_AT_NIC)
            t = hard ? DMIX_NIC_HARD : bursty ? DMIX_NIC_BURSTY : DMIX_NIC_INTERMITTENT;
        else if (ft->site == FB_FAULT_AT_LEAF)
            t = hard ? DMIX_LEAF_HARD : DMIX_LEAF_INTERMITTENT;
        else
            t = DMIX_UPLINK_SLOW;
        dmix_world_t *w = &f->world;
        w->faults = xrealloc(w->faults, (w->n_faults + 1) * sizeof *w->faults);
        dmix_fault_t *d = &w->faults[w->n_faults++];
        memset(d, 0, sizeof *d);
        d->type = t;
        d->category = "fault file";
        d->q = ft->q;
        d->factor = ft->factor;
        d->burst_s = ft->burst_s;
        if (ft->site == FB_FAULT_AT_NIC)
            d->part = xasprintf("%s/mlx5_%u", ft->a, ft->rail);
        else
            d->part = xstrdup(ft->part);
        if (ft->site == FB_FAULT_AT_NODE || ft->site == FB_FAULT_AT_NIC) {
            d->node = xstrdup(ft->a);
            const char *leaf = fb_topology_leaf_of(f->topo, ft->a);
            d->leaf = leaf ? xstrdup(leaf) : NULL;
        } else {
            d->leaf =
                xstrdup(ft->site == FB_FAULT_AT_LEAF || !strncmp(ft->a, "leaf", 4) ? ft->a : ft->b);
        }
    }
}

static int s_fleet_init(s_fleet_t *f, const s_opts_t *o, unsigned trial)
{
    memset(f, 0, sizeof *f);
    f->o = o;
    f->n = o->nodes;
    f->rails = o->rails;
    int width = snprintf(NULL, 0, "%u", f->n - 1);
    f->names = xcalloc(f->n, sizeof *f->names);
    for (unsigned i = 0; i < f->n; i++)
        f->names[i] = xasprintf("sim-%0*u", width, i); /* as fleetburn-simfleet names them */
    char err[256];
    char *text = s_topology_text(f->names, f->n);
    int rc = fb_topology_parse(text, &f->topo, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "topology: %s\n", err);
        return rc;
    }
    if (o->faults_file) {
        char *error = NULL, *faults = NULL;
        size_t len = 0;
        rc = fb_load_file(o->faults_file, FB_FAULTMODEL_MAX_BYTES, &faults, &len, &error);
        if (rc)
            fprintf(stderr, "%s\n", error);
        free(error);
        if (!rc)
            rc = s_load_model(f, faults, len, o->faults_file);
        free(faults);
        if (!rc) {
            f->rails = fb_faultmodel_rails(f->model);
            s_truth_from_file(f);
        }
    } else {
        uint64_t rng = fb_mix64(o->seed * 1000003ULL + trial);
        dmix_fabric_t fab = {f->names, f->n, f->rails, S_LEAF_SIZE, S_SPINES};
        rc = dmix_draw(&o->mix, &fab, &rng, &f->world);
        if (rc)
            fprintf(stderr, "cannot place the faults of trial %u\n", trial);
        char *keys = s_world_keys(o, trial);
        char *yaml = rc ? NULL : xasprintf("%s%s", keys, f->world.yaml);
        if (!rc)
            rc = s_load_model(f, yaml, strlen(yaml), "bench");
        free(keys);
        free(yaml);
    }
    f->rails_csv = xstrdup("");
    for (unsigned r = 0; r < f->rails; r++) {
        char *x = xasprintf("%s%smlx5_%u", f->rails_csv, r ? "," : "", r);
        free(f->rails_csv);
        f->rails_csv = x;
    }
    return rc;
}

static void s_fleet_free(s_fleet_t *f)
{
    for (unsigned i = 0; i < f->n; i++)
        free(f->names[i]);
    free(f->names);
    free(f->rails_csv);
    dmix_world_free(&f->world);
    fb_faultmodel_destroy(&f->model);
    fb_topology_destroy(&f->topo);
}

/* ---- one test in the simulator -------------------------------------------------------------- */

/* What the runner makes of a test: its verdict from the members' reports, their flows. */
typedef struct {
    bool judged, failed;
    bool lost; /* a member's result never came: the round waits for the deadline */
    fb_bisect_flow_t flows[4];
    size_t n_flows;
    double min_bw; /* smallest reported flow (baselines' one number), NAN: none */
} s_result_t;

static int s_rail_index(const char *rail)
{
    return rail ? atoi(rail + strlen("mlx5_")) : -1;
}

/* A measurement as the member `who` reports it (simtask.c's key and salts). */
static double s_measure(const s_fleet_t *f, const char *id, const char *who, const char *src,
                        const char *dst, int rail, const char *what)
{
    char *key = xasprintf("%s@%s", id, who);
    const char *ends[2] = {src, dst};
    double v = S_NOMINAL * fb_faultmodel_flow_factor(f->model, src, dst, rail) *
               fb_faultmodel_noise(f->model, key, what, ends, 2);
    free(key);
    return v;
}

/* Runs the test over m[0..n) (n = 1 or 2) on rail at simulated time t. */
static void s_run_test(const s_fleet_t *f, const char *id, const char *const *m, size_t n, int rail,
                       double t, s_result_t *out)
{
    memset(out, 0, sizeof *out);
    out->min_bw = NAN;
    fb_sim_test_t test = {id, m, n, n > 1 ? rail : -1};
    fb_sim_outcome_t o;
    fb_faultmodel_judge_at(f->model, &test, t, &o);
    fb_verdict_t v[2] = {FB_VERDICT_NONE, FB_VERDICT_NONE};
    for (size_t k = 0; k < n; k++) {
        if (fb_faultmodel_lost(f->model, id, m[k])) {
            out->lost = true;
            continue;
        }
        v[k] = fb_sim_member_failed(&o, m[k]) ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
        if (n < 2)
            continue;
        const char *me = m[k], *peer = m[1 - k];
        double tx = s_measure(f, id, me, me, peer, rail, "tx");
        double rx = s_measure(f, id, me, peer, me, rail, "rx");
        out->flows[out->n_flows++] = (fb_bisect_flow_t){me, peer, tx};
        out->flows[out->n_flows++] = (fb_bisect_flow_t){peer, me, rx};
        double lo = tx < rx ? tx : rx;
        out->min_bw = isnan(out->min_bw) || lo < out->min_bw ? lo : out->min_bw;
    }
    fb_verdict_t g = fb_group_verdict(v, n, NULL);
    out->judged = g == FB_VERDICT_FAIL || g == FB_VERDICT_PASS;
    out->failed = g == FB_VERDICT_FAIL;
}

/* How long a round lasts: its tests, or until the deadline when a result was lost. */
static double s_round_s(const s_opts_t *o, double test_s, bool lost)
{
    if (!lost)
        return test_s;
    return (double)fb_stage_deadline_ms((uint64_t)(o->timeout_factor * test_s * 1000.0)) / 1000.0;
}

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

typedef struct {
    unsigned rounds, follow_ups;
    double sim_s;
    size_t tests;
    bool budget_ended;
    uint64_t transcript;
    unsigned *named_round; /* per fault of the world */
    double *named_s;
    fb_bisect_verdict_t *verdicts;
    size_t n_verdicts;
} s_engine_run_t;

static fb_bisect_t *s_engine_new(const s_opts_t *o, const s_fleet_t *f, unsigned trial)
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

/* The node-local round at time 0: its length. */
static double s_engine_local(const s_fleet_t *f, fb_bisect_t *b, unsigned trial, uint64_t shuffle,
                             uint64_t *h)
{
    size_t *idx = xmalloc(f->n * sizeof *idx);
    s_order(idx, f->n, shuffle);
    bool lost = false;
    for (size_t k = 0; k < f->n; k++) {
        const char *node = f->names[idx[k]];
        char *id = xasprintf("t%u.local.%s", trial, node);
        s_result_t r;
        s_run_test(f, id, &node, 1, -1, 0.0, &r);
        lost |= r.lost;
        if (r.judged) /* a lost node-local result says nothing, as the runner's timeout */
            fb_bisect_record_local(b, id, node, r.failed);
        *h = fb_mix64(*h ^ (r.judged * 2u + r.failed));
        free(id);
    }
    free(idx);
    return s_round_s(f->o, S_LOCAL_S, lost);
}

/* Notes the faults named by now. */
static void s_engine_named(const s_fleet_t *f, const fb_bisect_t *b, s_engine_run_t *run)
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
static void s_engine_round(const s_fleet_t *f, fb_bisect_t *b, const fb_bisect_round_t *rd,
                           unsigned trial, uint64_t shuffle, s_engine_run_t *run)
{
    s_result_t *res = xcalloc(rd->n_tests + 1, sizeof *res);
    char **ids = xcalloc(rd->n_tests + 1, sizeof *ids);
    bool lost = false;
    for (size_t i = 0; i < rd->n_tests; i++) {
        const fb_bisect_test_t *t = &rd->tests[i];
        ids[i] = xasprintf("t%u.r%u.%zu", trial, run->rounds, i);
        s_run_test(f, ids[i], (const char *const *)t->members, t->n_members, s_rail_index(t->rail),
                   run->sim_s, &res[i]);
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
    run->sim_s += s_round_s(f->o, S_ROUND_S, lost);
    for (size_t i = 0; i < rd->n_tests; i++)
        free(ids[i]);
    free(ids);
    free(idx);
    free(res);
}

/* The whole session of one trial; shuffle 0 records results in planned order. */
static int s_engine_run(const s_opts_t *o, const s_fleet_t *f, unsigned trial, uint64_t shuffle,
                        s_engine_run_t *run)
{
    memset(run, 0, sizeof *run);
    run->named_round = xcalloc(f->world.n_faults + 1, sizeof *run->named_round);
    run->named_s = xcalloc(f->world.n_faults + 1, sizeof *run->named_s);
    fb_bisect_t *b = s_engine_new(o, f, trial);
    if (!b)
        return -EINVAL;
    run->sim_s = s_engine_local(f, b, trial, shuffle, &run->transcript);
    fb_bisect_round_t rd;
    int rc;
    while (run->rounds < S_MAX_ROUNDS && (rc = fb_bisect_next(b, &rd)) == 1) {
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
    fb_bisect_destroy(&b);
    return 0;
}

static void s_engine_run_free(s_engine_run_t *run)
{
    fb_bisect_verdicts_free(&run->verdicts, run->n_verdicts);
    free(run->named_round);
    free(run->named_s);
}

/* FB_BENCH_DEBUG=1: every verdict that is not "cleared", and the truth (wrong: only trials with
 * a wrong verdict). */
static void s_debug(const s_fleet_t *f, const s_engine_run_t *run, unsigned trial)
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
    if (!strcmp(debug, "wrong") && !wrong)
        return;
    fprintf(stderr, "trial %u after %u rounds (%u follow-ups), %.0f s: truth", trial, run->rounds,
            run->follow_ups, run->sim_s);
    for (size_t i = 0; i < f->world.n_faults; i++)
        fprintf(stderr, " %s(%s q %.2f x%.2f b %.0f)", f->world.faults[i].part,
                dmix_type_name(f->world.faults[i].type), f->world.faults[i].q,
                f->world.faults[i].factor, f->world.faults[i].burst_s);
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
static double s_pass(const s_fleet_t *f, const char *tag, const unsigned *a, const unsigned *b,
                     unsigned n, double t, bool *bad, bool *judged)
{
    double *bw = xmalloc((n + 1) * sizeof *bw), *sorted = xmalloc((n + 1) * sizeof *sorted);
    size_t n_bw = 0;
    bool lost = false;
    for (unsigned i = 0; i < n; i++) {
        char *id = xasprintf("%s.%u", tag, i);
        const char *m[2] = {f->names[a[i]], f->names[b[i]]};
        s_result_t r;
        s_run_test(f, id, m, 2, -1, t, &r);
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
    return s_round_s(f->o, S_ROUND_S, lost);
}

/* A random perfect matching of the nodes: a[i]-b[i], returns the number of pairs. */
static unsigned s_matching(const s_fleet_t *f, uint64_t *rng, unsigned *a, unsigned *b)
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
static size_t s_named_verdicts(const s_fleet_t *f, const bool *named, fb_bisect_verdict_t **out)
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

static void s_baseline_done(dscore_t *s, const s_fleet_t *f, const bool *named, unsigned rounds,
                            double sim_s, size_t tests)
{
    fb_bisect_verdict_t *v;
    size_t n = s_named_verdicts(f, named, &v);
    dscore_truth_t t = {&f->world, f->topo, f->rails};
    dscore_run_t run = {v, n, NULL, NULL, rounds, sim_s, tests, false};
    dscore_add(s, &t, &run);
    fb_bisect_verdicts_free(&v, n);
}

/* Two passes: random pairs; every node of a bad pair re-paired with a node that passed. */
static void s_run_two_pass(const s_opts_t *o, const s_fleet_t *f, unsigned trial, dscore_t *s)
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
static void s_run_random(const s_opts_t *o, const s_fleet_t *f, unsigned trial, dscore_t *s)
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

/* ---- the world's own statistics (--check-world) ------------------------------------------- */

typedef struct {
    const char *what;
    double measured, expected, bound;
} s_check_t;

static bool s_check_print(const s_check_t *c)
{
    bool ok = fabs(c->measured - c->expected) <= c->bound;
    printf("  %-46s %10.5f %10.5f +- %-9.5f %s\n", c->what, c->measured, c->expected, c->bound,
           ok ? "ok" : "OFF");
    return ok;
}

/* A binomial share: k of n against p, within 6 standard deviations (+ one count). */
static s_check_t s_share(const char *what, size_t k, size_t n, double p)
{
    double sd = sqrt(p * (1 - p) / (double)(n ? n : 1));
    return (s_check_t){what, n ? (double)k / (double)n : 0, p, 6 * sd + 1.0 / (double)(n ? n : 1)};
}

/* The fault mix: shares of the types over many draws, second faults and noisy nodes. */
static bool s_check_mix(const s_opts_t *o, const s_fleet_t *f)
{
    size_t counts[DMIX_N] = {0}, first = 0, node_faults = 0, seconds = 0, noisy = 0, others = 0;
    for (unsigned trial = 0; trial < 4000; trial++) {
        uint64_t rng = fb_mix64(o->seed * 1000003ULL + trial);
        dmix_fabric_t fab = {f->names, f->n, f->rails, S_LEAF_SIZE, S_SPINES};
        dmix_world_t w;
        if (dmix_draw(&o->mix, &fab, &rng, &w))
            return false;
        for (size_t i = 0; i < w.n_faults; i++) {
            bool second = w.faults[i].second;
            seconds += second;
            if (second)
                continue;
            counts[w.faults[i].type]++;
            first++;
            node_faults += dmix_type_site(w.faults[i].type) == DMIX_AT_NODE;
        }
        noisy += w.n_noisy;
        others += f->n - w.n_faults;
        dmix_world_free(&w);
    }
    bool ok = true;
    for (int t = 0; t < DMIX_N && o->mix.only < 0; t++) {
        char what[64];
        snprintf(what, sizeof what, "share of %s", dmix_type_name((dmix_type_t)t));
        s_check_t c = s_share(what, counts[t], first, dmix_type_share((dmix_type_t)t));
        ok &= s_check_print(&c);
    }
    s_check_t c =
        s_share("node faults with a second fault", seconds, node_faults, o->mix.second_share);
    ok &= s_check_print(&c);
    /* noisy nodes are drawn among the nodes without faults (about f->n - faults of them) */
    c = s_share("noisy share of the other nodes", noisy, others, o->mix.noisy_share);
    c.bound *= 1.2;
    ok &= s_check_print(&c);
    return ok;
}

/* The simulator's rates over healthy pair tests: false fails (with disagreement), lost results,
 * the noise's sigma. */
static bool s_check_rates(const s_opts_t *o, const s_fleet_t *f)
{
    size_t n = 200000, failed = 0, members = 0, lost = 0, flows = 0;
    double s1 = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        char id[48];
        snprintf(id, sizeof id, "check.%zu", i);
        const char *m[2] = {f->names[0], f->names[1]}; /* a healthy pair: no faults here */
        s_result_t r;
        s_run_test(f, id, m, 2, (int)(i % f->rails), 0.0, &r);
        failed += r.judged && r.failed;
        members += 2;
        lost += 2 - r.n_flows / 2; /* every member that reported gave two flows */
        for (size_t k = 0; k < r.n_flows; k++, flows++) {
            double x = log(r.flows[k].value / S_NOMINAL);
            s1 += x;
            s2 += x * x;
        }
    }
    /* The runner takes a failure from either member; a lost member's is not heard. A spurious
     * failure (f) fails the test unless both members are lost, or one disagrees (d) and the other
     * is lost; a passing test fails when one member disagrees and is heard. */
    double f_ = o->false_fail, d = o->disagree, l = o->lost;
    double p_fail = f_ * ((1 - d) * (1 - l * l) + d * (1 - l)) + (1 - f_) * d * (1 - l);
    bool ok = true;
    s_check_t c = s_share("healthy pair tests failed", failed, n, p_fail);
    ok &= s_check_print(&c);
    c = s_share("member results lost", lost, members, o->lost);
    ok &= s_check_print(&c);
    double mean = s1 / (double)flows, sd = sqrt(s2 / (double)flows - mean * mean);
    double expected = o->noise_sigma > 0 ? o->noise_sigma : o->noise_width / sqrt(3.0);
    /* flows are reported twice (by each member) with independent noise: n draws */
    c = (s_check_t){"sd of log(measured / nominal)", sd, expected,
                    6 * expected / sqrt(2.0 * (double)flows) + 1e-4};
    ok &= s_check_print(&c);
    return ok;
}

static int s_check_world(const s_opts_t *o)
{
    s_opts_t clean = *o;
    clean.mix.faults_min = clean.mix.faults_max = 0;
    s_fleet_t f;
    clean.mix.noisy_share = 0;
    if (s_fleet_init(&f, &clean, 0))
        return 3;
    printf("# the world of these options, measured (fleetburn-bench-diagnosis --check-world)\n");
    printf("  %-46s %10s %10s    %-9s\n", "measure", "measured", "expected", "bound");
    bool ok = s_check_mix(o, &f) & s_check_rates(o, &f);
    s_fleet_free(&f);
    printf("%s\n", ok ? "world ok" : "world OFF");
    return ok ? 0 : 1;
}

/* ---- report ---------------------------------------------------------------------------------- */

static void s_print_world(const s_opts_t *o)
{
    fb_bisect_opts_t bo; /* what s_engine_new starts from */
    fb_bisect_opts_default(&bo);
    const fb_diag_params_t p = bo.diag;
    unsigned leaves = (o->nodes + S_LEAF_SIZE - 1) / S_LEAF_SIZE;
    printf("# world: %u nodes, %u rail(s), %u leaves of %u nodes on %u spines; %u trials, seed "
           "%llu\n",
           o->nodes, o->rails, leaves, S_LEAF_SIZE, S_SPINES, o->trials,
           (unsigned long long)o->seed);
    if (o->noise_sigma > 0)
        printf("# noise lognormal sigma %g", o->noise_sigma);
    else
        printf("# noise uniform +-%g", o->noise_width);
    printf("; false fails %g; lost results %g; disagreeing members %g; noisy nodes %g (sigma "
           "%g); second faults on %g of node faults\n",
           o->false_fail, o->lost, o->disagree, o->mix.noisy_share, o->mix.noisy_sigma,
           o->mix.second_share);
    printf("# faults per trial: %u-%u, ", o->mix.faults_min, o->mix.faults_max);
    if (o->mix.only >= 0)
        printf("all %s (q %g, factor %g, burst %g s; 0: drawn)\n",
               dmix_type_name((dmix_type_t)o->mix.only), o->mix.q, o->mix.factor, o->mix.burst_s);
    else
        printf("the fleet mix:\n");
    if (o->mix.only < 0)
        dmix_describe(stdout, "#   ");
    printf("# engine (scheduler/bisect.h): parameters at their defaults: f and a mixture over q "
           "estimated from the fleet\n#   (f starts at %g worth %g tests, the mixture flat worth %g "
           "parts), prior %g, bad at %g with %u confirmations\n#   and fleet error %g, implicated "
           "at %g x prior, cleared at P <= %g with q %g ruled out at %g;\n#   %s pairing; %u "
           "sweep(s), at most %u follow-up rounds%s\n",
           p.false_fail_rate, p.false_fail_weight, p.mixture_weight, p.prior_bad, p.bad_threshold,
           p.min_confirmations, p.fleet_error, p.implicate_ratio, p.clear_threshold, p.clear_q,
           p.clear_confidence, fb_pairing_name(o->pairing), o->sweeps, o->follow_ups,
           bo.sweep_idle ? " (idle nodes swept while the budget allows)" : "");
    printf("# given to the engine: the topology (leaves, spines), every node's rails, the "
           "node-local round, every result with its flows;\n#   not given: routes (which spine), "
           "q, f, the faults, the simulator's seed\n");
    printf("# clock: node-local round %.0f s, pair round %.0f s, a round with a lost result until "
           "the deadline\n#   (a stage's timeout is %g x its test: %.0f s and %.0f s after the "
           "round's start)\n",
           S_LOCAL_S, S_ROUND_S, o->timeout_factor, s_round_s(o, S_LOCAL_S, true),
           s_round_s(o, S_ROUND_S, true));
}

static void s_print_legend(void)
{
    printf("# summary columns: recall = fault parts named / fault parts; precis = named parts that "
           "are a fault's / named parts;\n#   undec, clear = fault parts left undecided / cleared; "
           "false_t = trials with any false name, unrel_t = with a false name\n#   not next to "
           "any fault; undec_h = healthy parts left undecided per trial; rounds = pair rounds "
           "(median/p90/max);\n#   sim_s = simulated wall time incl. the node-local round "
           "(median/p90); tests = tests per trial (one rail each)\n");
    printf("# kind columns: shares of the faults of that kind: named (its part named bad), undec, "
           "clear, passed (never\n#   implicated), other (not named, but a part next to it "
           "named); rounds, sim_s: when named (median/p90/max, median/p90)\n");
}

/* --faults-file: one trial of the engine; prints the truth, what was named, and when. */
static int s_one_file(s_opts_t *o)
{
    o->trials = 1;
    s_fleet_t f;
    if (s_fleet_init(&f, o, 0))
        return 3;
    s_engine_run_t run;
    if (s_engine_run(o, &f, 0, 0, &run))
        return 3;
    dscore_truth_t t = {&f.world, f.topo, f.rails};
    printf("truth:");
    for (size_t i = 0; i < f.world.n_faults; i++)
        printf(" %s", f.world.faults[i].part);
    printf("\nnamed after %u rounds (%u follow-ups):", run.rounds, run.follow_ups);
    size_t fp = 0, undecided = 0;
    for (size_t i = 0; i < run.n_verdicts; i++) {
        const fb_bisect_verdict_t *v = &run.verdicts[i];
        if (v->state == FB_BISECT_BAD) {
            printf(" %s", v->part);
            fp += !dscore_is_fault(&t, v->part);
        }
        undecided += v->state == FB_BISECT_UNDECIDED;
    }
    size_t found = 0;
    for (size_t i = 0; i < f.world.n_faults; i++)
        found += run.named_round[i] != 0;
    printf("\nfound %zu of %zu, %zu false, %zu undecided\n", found, f.world.n_faults, fp,
           undecided);
    s_engine_run_free(&run);
    s_fleet_free(&f);
    return 0;
}

static void s_usage(FILE *out)
{
    fprintf(
        out,
        "usage: fleetburn-bench-diagnosis --nodes N [--rails R] [--trials T] [--seed S]\n"
        "       [--mix fleet|TYPE] [--q Q] [--factor F] [--burst S] [--faults MIN-MAX]\n"
        "       [--false-fail F] [--noise-sigma S | --noise-width W] [--lost P] [--disagree P]\n"
        "       [--noisy-share P] [--noisy-sigma S] [--second-share P]\n"
        "       [--sweeps S] [--follow-ups K] [--timeout-factor F] [--goal-follow-ups K]\n"
        "       [--pairing random|topology] [--no-baselines] [--order-check K]\n"
        "       fleetburn-bench-diagnosis --check-world [world options]\n"
        "       fleetburn-bench-diagnosis --nodes N --faults-file FILE\n"
        "TYPE: node-hard node-intermittent node-bursty node-slow node-slow-mild sdc nic-hard\n"
        "      nic-intermittent nic-bursty leaf-hard leaf-intermittent uplink-slow\n");
}

/* A number option within [lo, hi]; -EINVAL otherwise. */
static int s_num(const char *name, const char *text, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (!end || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "--%s: '%s' is not a number from %g to %g\n", name, text, lo, hi);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static int s_parse(int argc, char **argv, s_opts_t *o)
{
    *o = (s_opts_t){.nodes = 1024,
                    .rails = 8,
                    .trials = 100,
                    .sweeps = 2,
                    .follow_ups = 24,
                    .seed = 1,
                    .false_fail = 0.02,
                    .lost = 0.002,
                    .noise_sigma = 0.05,
                    .noise_width = 0.01,
                    .timeout_factor = 3,
                    .baselines = true,
                    .pairing = FB_PAIRING_TOPOLOGY,
                    .mix = {.only = -1,
                            .faults_min = 1,
                            .faults_max = 8,
                            .second_share = 0.1,
                            .noisy_share = 0.01,
                            .noisy_sigma = 0.15}};
    static const struct option opts[] = {{"nodes", 1, 0, 'n'},
                                         {"rails", 1, 0, 'R'},
                                         {"trials", 1, 0, 't'},
                                         {"seed", 1, 0, 'S'},
                                         {"mix", 1, 0, 'm'},
                                         {"q", 1, 0, 'q'},
                                         {"factor", 1, 0, 'x'},
                                         {"burst", 1, 0, 'b'},
                                         {"faults", 1, 0, 'F'},
                                         {"false-fail", 1, 0, 'f'},
                                         {"noise-sigma", 1, 0, 'N'},
                                         {"noise-width", 1, 0, 'W'},
                                         {"lost", 1, 0, 'l'},
                                         {"disagree", 1, 0, 'd'},
                                         {"noisy-share", 1, 0, 'y'},
                                         {"noisy-sigma", 1, 0, 'Y'},
                                         {"second-share", 1, 0, '2'},
                                         {"sweeps", 1, 0, 's'},
                                         {"follow-ups", 1, 0, 'k'},
                                         {"timeout-factor", 1, 0, 'T'},
                                         {"goal-follow-ups", 1, 0, 'g'},
                                         {"pairing", 1, 0, 'p'},
                                         {"no-baselines", 0, 0, 'B'},
                                         {"order-check", 1, 0, 'o'},
                                         {"check-world", 0, 0, 'C'},
                                         {"faults-file", 1, 0, 'X'},
                                         {"help", 0, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    double v = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int rc = 0;
        const char *name = NULL;
        for (size_t i = 0; opts[i].name; i++)
            if (opts[i].val == c)
                name = opts[i].name;
        switch (c) {
        case 'n':
            rc = s_num(name, optarg, 4, 65536, &v), o->nodes = (unsigned)v;
            break;
        case 'R':
            rc = s_num(name, optarg, 1, 64, &v), o->rails = (unsigned)v;
            break;
        case 't':
            rc = s_num(name, optarg, 1, 1e6, &v), o->trials = (unsigned)v;
            break;
        case 'S':
            o->seed = strtoull(optarg, NULL, 10);
            break;
        case 'm':
            o->mix.only = strcmp(optarg, "fleet") ? dmix_type_parse(optarg) : -1;
            rc = strcmp(optarg, "fleet") && o->mix.only < 0 ? -EINVAL : 0;
            break;
        case 'q':
            rc = s_num(name, optarg, 0, 1, &o->mix.q);
            break;
        case 'x':
            rc = s_num(name, optarg, 0, 0.999, &o->mix.factor);
            break;
        case 'b':
            rc = s_num(name, optarg, 0, 1e7, &o->mix.burst_s);
            break;
        case 'F':
            if (sscanf(optarg, "%u-%u", &o->mix.faults_min, &o->mix.faults_max) != 2)
                o->mix.faults_min = o->mix.faults_max = (unsigned)atoi(optarg);
            break;
        case 'f':
            rc = s_num(name, optarg, 0, 0.5, &o->false_fail);
            break;
        case 'N':
            rc = s_num(name, optarg, 0, 1, &o->noise_sigma);
            break;
        case 'W':
            rc = s_num(name, optarg, 0, 0.5, &o->noise_width), o->noise_sigma = 0;
            break;
        case 'l':
            rc = s_num(name, optarg, 0, 0.5, &o->lost);
            break;
        case 'd':
            rc = s_num(name, optarg, 0, 0.5, &o->disagree);
            break;
        case 'y':
            rc = s_num(name, optarg, 0, 0.5, &o->mix.noisy_share);
            break;
        case 'Y':
            rc = s_num(name, optarg, 0.001, 1, &o->mix.noisy_sigma);
            break;
        case '2':
            rc = s_num(name, optarg, 0, 1, &o->mix.second_share);
            break;
        case 's':
            rc = s_num(name, optarg, 1, 16, &v), o->sweeps = (unsigned)v;
            break;
        case 'k':
            rc = s_num(name, optarg, 0, 200, &v), o->follow_ups = (unsigned)v;
            break;
        case 'T':
            rc = s_num(name, optarg, 1, 100, &o->timeout_factor);
            break;
        case 'g':
            rc = s_num(name, optarg, 0, 200, &v), o->goal_follow_ups = (unsigned)v;
            break;
        case 'p':
            rc = fb_pairing_parse(optarg, &o->pairing);
            break;
        case 'B':
            o->baselines = false;
            break;
        case 'o':
            rc = s_num(name, optarg, 0, 1e6, &v), o->order_check = (unsigned)v;
            break;
        case 'C':
            o->check_world = true;
            break;
        case 'X':
            o->faults_file = optarg;
            break;
        case 'h':
            s_usage(stdout);
            exit(0);
        default:
            return -EINVAL;
        }
        if (rc)
            return -EINVAL;
    }
    if (optind < argc || o->mix.faults_max < o->mix.faults_min ||
        o->mix.faults_max * 2 > o->nodes || o->sweeps + o->follow_ups > S_MAX_ROUNDS)
        return -EINVAL;
    return 0;
}

int main(int argc, char **argv)
{
    s_opts_t o;
    if (s_parse(argc, argv, &o)) {
        s_usage(stderr);
        return 2;
    }
    if (o.check_world)
        return s_check_world(&o);
    if (o.faults_file)
        return s_one_file(&o);
    dscore_t *methods[3] = {dscore_new("engine"), dscore_new("two-pass"), dscore_new("random-15")};
    size_t n_methods = o.baselines ? 3 : 1;
    unsigned order_differs = 0, order_checked = 0, replay_differs = 0;
    double t0 = fb_mono_s();
    for (unsigned trial = 0; trial < o.trials; trial++) {
        s_fleet_t f;
        s_engine_run_t run;
        if (s_fleet_init(&f, &o, trial) || s_engine_run(&o, &f, trial, 0, &run))
            return 3;
        s_debug(&f, &run, trial);
        dscore_truth_t t = {&f.world, f.topo, f.rails};
        dscore_run_t dr = {run.verdicts, run.n_verdicts, run.named_round, run.named_s,
                           run.rounds,   run.sim_s,      run.tests,       run.budget_ended};
        dscore_add(methods[0], &t, &dr);
        if (trial < o.order_check) { /* the same results in another order; the same order */
            s_engine_run_t again, same;
            if (s_engine_run(&o, &f, trial, fb_mix64(trial + 1), &again) ||
                s_engine_run(&o, &f, trial, 0, &same))
                return 3;
            order_checked++;
            order_differs += again.transcript != run.transcript;
            replay_differs += same.transcript != run.transcript;
            s_engine_run_free(&again);
            s_engine_run_free(&same);
        }
        s_engine_run_free(&run);
        if (o.baselines) {
            s_run_two_pass(&o, &f, trial, methods[1]);
            s_run_random(&o, &f, trial, methods[2]);
        }
        s_fleet_free(&f);
        if (getenv("FB_BENCH_PROGRESS"))
            fprintf(stderr, "trial %u done, %.1f s\n", trial, fb_mono_s() - t0);
    }
    s_print_world(&o);
    s_print_legend();
    printf("\n## summary\n");
    dscore_print_summary(stdout, methods, n_methods);
    printf("\n## per kind of fault\n");
    dscore_print_kinds(stdout, methods, n_methods);
    printf("\n## the engine's verdicts: precision by kind, calibration of printed confidences\n");
    dscore_print_calibration(stdout, methods[0]);
    printf("\n## goals (issue 14), measured in this world\n");
    dscore_print_goals(stdout, methods[0], o.rails, o.sweeps, o.goal_follow_ups);
    if (order_checked)
        printf("\n## order: %u of %u trials re-run with every round's results recorded in another "
               "order gave other plans or verdicts\n#   (control: %u of them differed when re-run "
               "in the same order)\n",
               order_differs, order_checked, replay_differs);
    printf("# %u trials in %.1f s of CPU-bound wall time\n", o.trials, fb_mono_s() - t0);
    for (size_t m = 0; m < 3; m++)
        dscore_destroy(&methods[m]);
    return 0;
}
