/* SPDX-License-Identifier: Apache-2.0 */
/* The insides of fleetburn-bench-diagnosis, shared by the files that make it up: diagnosis.c
 * (options, the trial loop, the report), diagnosis_world.c (the simulated world of a trial, one
 * test in it, --check-world) and diagnosis_methods.c (the engine's session and the baselines run
 * on a trial). Functions shared between them are named dbench__name; helpers of one file stay
 * static s_name. */
#ifndef FB_BENCH_DIAGNOSIS_INTERNAL_H
#define FB_BENCH_DIAGNOSIS_INTERNAL_H

#include "diagnosis_mix.h"
#include "diagnosis_score.h"

#include "scheduler/bisect.h"
#include "scheduler/topology.h"
#include "sim/faultmodel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBENCH_LEAF_SIZE 32
#define DBENCH_SPINES 4
#define DBENCH_LOCAL_S 600.0 /* simulated length of the node-local round (a memtest) */
#define DBENCH_ROUND_S 60.0  /* ... and of one pair round */
#define DBENCH_MAX_ROUNDS 256

typedef struct {
    unsigned nodes, rails, trials, sweeps, follow_ups, goal_follow_ups, order_check;
    uint64_t seed;
    dmix_opts_t mix;
    double false_fail, lost, disagree, noise_sigma, noise_width, timeout_factor;
    bool baselines, check_world;
    fb_pairing_t pairing;
    const char *faults_file;
} dbench_opts_t;

/* The fleet of one trial: names, fabric, the simulator, and the truth. */
typedef struct {
    const dbench_opts_t *o;
    unsigned n, rails;
    char **names;
    fb_topology_t *topo;
    fb_faultmodel_t *model;
    dmix_world_t world;
    char *rails_csv;
    int *world_of; /* per fault of the simulator's model: the world's fault it is, -1: noisy */
    bool *showed; /* per fault of the world: it showed in a test since the method's session began */
} dbench_fleet_t;

/* What the runner makes of a test: its verdict from the members' reports, their flows. */
typedef struct {
    bool judged, failed;
    bool lost; /* a member's result never came: the round waits for the deadline */
    fb_bisect_flow_t flows[4];
    size_t n_flows;
    double min_bw; /* smallest reported flow (baselines' one number), NAN: none */
} dbench_result_t;

/* One session of the engine on a trial. */
typedef struct {
    unsigned rounds, follow_ups;
    double sim_s;
    size_t tests;
    bool budget_ended;
    uint64_t transcript;
    unsigned *named_round; /* per fault of the world */
    double *named_s;
    bool *showed; /* per fault of the world: it showed in at least one test of the session */
    unsigned *lookalikes; /* per fault of the world: healthy parts of its kind (node or NIC)
                           * whose record is as bad or worse (dbench__lookalikes) */
    unsigned *part_tests, *part_fails; /* judged and failed tests per node (slot u x (rails + 1))
                                        * and per NIC of node u on rail r (u x (rails + 1) + 1 + r) */
    fb_bisect_verdict_t *verdicts;
    size_t n_verdicts;
} dbench_engine_run_t;

/* ---- diagnosis_world.c ---- */

/* The fleet of trial `trial` under the options (or of --faults-file): 0, or nonzero after saying
 * why on stderr; free it with dbench__fleet_free either way. */
int dbench__fleet_init(dbench_fleet_t *f, const dbench_opts_t *o, unsigned trial);
void dbench__fleet_free(dbench_fleet_t *f);
/* Runs the test id over m[0..n) (n = 1 or 2) on rail at simulated time t. */
void dbench__run_test(const dbench_fleet_t *f, const char *id, const char *const *m, size_t n,
                      int rail, double t, dbench_result_t *out);
/* The index of node `name` in f->names, or -1. */
int dbench__node_index(const dbench_fleet_t *f, const char *name);
/* How long a round lasts: its tests, or until the deadline when a result was lost. */
double dbench__round_s(const dbench_opts_t *o, double test_s, bool lost);
/* --check-world: measures the world of the options; the exit status (0 ok, 1 off, 3 failed). */
int dbench__check_world(const dbench_opts_t *o);

/* ---- diagnosis_methods.c ---- */

/* The engine's whole session on a trial; shuffle 0 records results in planned order, another
 * value in an order seeded by it. 0 or -EINVAL. */
int dbench__engine_run(const dbench_opts_t *o, const dbench_fleet_t *f, unsigned trial,
                       uint64_t shuffle, dbench_engine_run_t *run);
void dbench__engine_run_free(dbench_engine_run_t *run);
/* FB_BENCH_DEBUG=1 (or =wrong: only trials with a wrong verdict; =evidence: those, with the tests
 * behind each wrong verdict): a trial's verdicts against the truth on stderr. */
void dbench__debug(const dbench_fleet_t *f, const dbench_engine_run_t *run, unsigned trial);
/* The baselines on a trial, scored into s: CHS-style two passes, 15 rounds of random pairs. */
void dbench__run_two_pass(const dbench_opts_t *o, const dbench_fleet_t *f, unsigned trial,
                          dscore_t *s);
void dbench__run_random(const dbench_opts_t *o, const dbench_fleet_t *f, unsigned trial,
                        dscore_t *s);

#endif
