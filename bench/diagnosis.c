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
 * the engine on a fault file (fleetburn-simfleet's format) and prints what it named.
 *
 * This file holds the options, the trial loop and the report; the simulated world of a trial
 * (and --check-world) is in diagnosis_world.c, the methods run on it (the engine's session, the
 * baselines) in diagnosis_methods.c, what they share in diagnosis_internal.h. */
#include "diagnosis_internal.h"

#include "common/cliopt.h"
#include "common/rng.h"
#include "common/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- report ---------------------------------------------------------------------------------- */

static void s_print_world(const dbench_opts_t *o)
{
    fb_bisect_opts_t bo; /* what the engine's session (diagnosis_methods.c) starts from */
    fb_bisect_opts_default(&bo);
    const fb_diag_params_t p = bo.diag;
    unsigned leaves = (o->nodes + DBENCH_LEAF_SIZE - 1) / DBENCH_LEAF_SIZE;
    printf("# world: %u nodes, %u rail(s), %u leaves of %u nodes on %u spines; %u trials, seed "
           "%llu\n",
           o->nodes, o->rails, leaves, DBENCH_LEAF_SIZE, DBENCH_SPINES, o->trials,
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
    printf(
        "# engine (scheduler/bisect.h): parameters at their defaults: f and a mixture over q "
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
           DBENCH_LOCAL_S, DBENCH_ROUND_S, o->timeout_factor,
           dbench__round_s(o, DBENCH_LOCAL_S, true), dbench__round_s(o, DBENCH_ROUND_S, true));
}

static void s_print_legend(void)
{
    printf("# summary columns: recall = fault parts named / fault parts; precis = named parts that "
           "are a fault's / named parts;\n#   undec, clear = fault parts left undecided / cleared; "
           "false_t = trials with any false name, unrel_t = with a false name\n#   not next to "
           "any fault; undec_h = healthy parts left undecided per trial; watch_h = of them on "
           "watch\n#   (a steady fault ruled out: their nodes are resumed); held = nodes held out "
           "of service by undecided\n#   parts not on watch, per trial, held_a = by any undecided "
           "part (were none on watch); rounds = pair rounds "
           "(median/p90/max); sim_s = simulated wall time\n#   incl. the node-local round "
           "(median/p90); tests = tests per trial (one rail each)\n");
    printf("# kind columns: shares of the faults of that kind: named (its part named bad), undec, "
           "clear, passed (never\n#   implicated, though it showed in a test), unseen (never "
           "implicated, and never showed in any test of\n#   the session: a burst that did not "
           "come while its part was tested), other (not named, but a part\n#   next to it "
           "named); rounds, sim_s: when named (median/p90/max, median/p90)\n");
}

/* --faults-file: one trial of the engine; prints the truth, what was named, and when. */
static int s_one_file(dbench_opts_t *o)
{
    o->trials = 1;
    dbench_fleet_t f;
    if (dbench__fleet_init(&f, o, 0))
        return 3;
    dbench_engine_run_t run;
    if (dbench__engine_run(o, &f, 0, 0, &run))
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
    dbench__engine_run_free(&run);
    dbench__fleet_free(&f);
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

/* The options whose value only goes somewhere, as a table (common/cliopt.h); the others are
 * parsed below. */
static int s_parse_options(int argc, char **argv, dbench_opts_t *o)
{
    const fb_cliopt_t table[] = {
        {"nodes", 'n', FB_CLIOPT_UINT, &o->nodes, 4, 65536},
        {"rails", 'R', FB_CLIOPT_UINT, &o->rails, 1, 64},
        {"trials", 't', FB_CLIOPT_UINT, &o->trials, 1, 1e6},
        {"seed", 'S', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"mix", 'm', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"q", 'q', FB_CLIOPT_REAL, &o->mix.q, 0, 1},
        {"factor", 'x', FB_CLIOPT_REAL, &o->mix.factor, 0, 0.999},
        {"burst", 'b', FB_CLIOPT_REAL, &o->mix.burst_s, 0, 1e7},
        {"faults", 'F', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"false-fail", 'f', FB_CLIOPT_REAL, &o->false_fail, 0, 0.5},
        {"noise-sigma", 'N', FB_CLIOPT_REAL, &o->noise_sigma, 0, 1},
        {"noise-width", 'W', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"lost", 'l', FB_CLIOPT_REAL, &o->lost, 0, 0.5},
        {"disagree", 'd', FB_CLIOPT_REAL, &o->disagree, 0, 0.5},
        {"noisy-share", 'y', FB_CLIOPT_REAL, &o->mix.noisy_share, 0, 0.5},
        {"noisy-sigma", 'Y', FB_CLIOPT_REAL, &o->mix.noisy_sigma, 0.001, 1},
        {"second-share", '2', FB_CLIOPT_REAL, &o->mix.second_share, 0, 1},
        {"sweeps", 's', FB_CLIOPT_UINT, &o->sweeps, 1, 16},
        {"follow-ups", 'k', FB_CLIOPT_UINT, &o->follow_ups, 0, 200},
        {"timeout-factor", 'T', FB_CLIOPT_REAL, &o->timeout_factor, 1, 100},
        {"goal-follow-ups", 'g', FB_CLIOPT_UINT, &o->goal_follow_ups, 0, 200},
        {"pairing", 'p', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"no-baselines", 'B', FB_CLIOPT_UNSET, &o->baselines, 0, 0},
        {"order-check", 'o', FB_CLIOPT_UINT, &o->order_check, 0, 1e6},
        {"check-world", 'C', FB_CLIOPT_SET, &o->check_world, 0, 0},
        {"faults-file", 'X', FB_CLIOPT_TEXT, &o->faults_file, 0, 0},
        {"help", 'h', FB_CLIOPT_CALLER_FLAG, NULL, 0, 0},
        {0}};
    int c;
    char *error = NULL;
    while ((c = fb_cliopt_next(argc, argv, "", table, &error)) > 0) {
        int rc = 0;
        switch (c) {
        case 'S':
            rc = fb_cliopt_uint("seed", optarg, 0, UINT64_MAX, &o->seed, &error);
            break;
        case 'm':
            o->mix.only = strcmp(optarg, "fleet") ? dmix_type_parse(optarg) : -1;
            rc = strcmp(optarg, "fleet") && o->mix.only < 0 ? -EINVAL : 0;
            break;
        case 'F':
            if (sscanf(optarg, "%u-%u", &o->mix.faults_min, &o->mix.faults_max) != 2)
                o->mix.faults_min = o->mix.faults_max = (unsigned)atoi(optarg);
            break;
        case 'W': /* a uniform noise instead of the lognormal one */
            rc = fb_cliopt_real("noise-width", optarg, 0, 0.5, &o->noise_width, &error);
            o->noise_sigma = 0;
            break;
        case 'p':
            rc = fb_pairing_parse(optarg, &o->pairing);
            break;
        case 'h':
            s_usage(stdout);
            exit(0);
        }
        if (rc) {
            c = -EINVAL;
            break;
        }
    }
    if (error)
        fprintf(stderr, "fleetburn-bench-diagnosis: %s\n", error);
    free(error);
    return c;
}

static int s_parse(int argc, char **argv, dbench_opts_t *o)
{
    *o = (dbench_opts_t){.nodes = 1024,
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
    if (s_parse_options(argc, argv, o) || optind < argc || o->mix.faults_max < o->mix.faults_min ||
        o->mix.faults_max * 2 > o->nodes || o->sweeps + o->follow_ups > DBENCH_MAX_ROUNDS)
        return -EINVAL;
    return 0;
}

int main(int argc, char **argv)
{
    dbench_opts_t o;
    if (s_parse(argc, argv, &o)) {
        s_usage(stderr);
        return 2;
    }
    if (o.check_world)
        return dbench__check_world(&o);
    if (o.faults_file)
        return s_one_file(&o);
    dscore_t *methods[3] = {dscore_new("engine"), dscore_new("two-pass"), dscore_new("random-15")};
    size_t n_methods = o.baselines ? 3 : 1;
    unsigned order_differs = 0, order_checked = 0, replay_differs = 0;
    double t0 = fb_mono_s();
    for (unsigned trial = 0; trial < o.trials; trial++) {
        dbench_fleet_t f;
        dbench_engine_run_t run;
        if (dbench__fleet_init(&f, &o, trial) || dbench__engine_run(&o, &f, trial, 0, &run))
            return 3;
        dbench__debug(&f, &run, trial);
        dscore_truth_t t = {&f.world, f.topo, f.rails};
        dscore_run_t dr = {.verdicts = run.verdicts,
                           .n_verdicts = run.n_verdicts,
                           .named_round = run.named_round,
                           .named_s = run.named_s,
                           .showed = run.showed,
                           .lookalikes = run.lookalikes,
                           .rounds = run.rounds,
                           .sim_s = run.sim_s,
                           .tests = run.tests,
                           .budget_ended = run.budget_ended};
        dscore_add(methods[0], &t, &dr);
        if (trial < o.order_check) { /* the same results in another order; the same order */
            dbench_engine_run_t again, same;
            if (dbench__engine_run(&o, &f, trial, fb_mix64(trial + 1), &again) ||
                dbench__engine_run(&o, &f, trial, 0, &same))
                return 3;
            order_checked++;
            order_differs += again.transcript != run.transcript;
            replay_differs += same.transcript != run.transcript;
            dbench__engine_run_free(&again);
            dbench__engine_run_free(&same);
        }
        dbench__engine_run_free(&run);
        if (o.baselines) {
            dbench__run_two_pass(&o, &f, trial, methods[1]);
            dbench__run_random(&o, &f, trial, methods[2]);
        }
        dbench__fleet_free(&f);
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
