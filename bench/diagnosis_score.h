/* SPDX-License-Identifier: Apache-2.0 */
/* Scoring of the diagnosis benchmark: what a method said about each trial (its verdicts: bad,
 * undecided, cleared, with the confidence it printed) against the truth (the trial's faults,
 * diagnosis_mix.h), accumulated over trials and printed as tables: per method, per kind of
 * fault, the calibration of the printed confidences, and the goals.
 *
 * Matching: a fault is named when the method names its part exactly (on a fleet of one rail, a
 * node named for itself or its only NIC also names a fault of that NIC: one rail cannot tell
 * them apart, and the engine says so). A named part that is not a fault's is a false name; it is
 * "related" when it is next to a fault (the node of a bad NIC, a NIC of a bad node, a node or
 * uplink of a bad leaf, a node behind a slow uplink's leaf, a group holding a bad node) and
 * "unrelated" otherwise: a healthy part far from every fault. */
#ifndef FB_BENCH_DIAGNOSIS_SCORE_H
#define FB_BENCH_DIAGNOSIS_SCORE_H

#include "diagnosis_mix.h"
#include "scheduler/bisect.h"
#include "scheduler/topology.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The truth of one trial. */
typedef struct {
    const dmix_world_t *world;
    const fb_topology_t *topo;
    unsigned rails;
} dscore_truth_t;

/* What one method did in one trial. */
typedef struct {
    const fb_bisect_verdict_t *verdicts; /* bad, undecided, cleared; confidence NaN: none printed */
    size_t n_verdicts;
    const unsigned *named_round; /* per fault of the world: the pair round after which its part
                                  * was first named (0: never; NULL: only at the end) */
    const double *named_s;       /* ... and the simulated time then */
    const bool *showed;          /* per fault of the world: it showed in a test of the session
                                  * (a burst came while its part was tested); NULL: not known */
    const unsigned *lookalikes;  /* per fault of the world: healthy parts of its kind whose
                                  * record (failed tests, tests) was as bad or worse; NULL: not
                                  * known */
    unsigned rounds;             /* pair rounds run */
    double sim_s;                /* simulated wall time */
    size_t tests;                /* tests run (pair tests on one rail count one each) */
    bool budget_ended;           /* ended by its round budget with suspects left */
} dscore_run_t;

typedef struct dscore dscore_t;

dscore_t *dscore_new(const char *method);
void dscore_destroy(dscore_t **self_p);
/* Scores one trial. */
void dscore_add(dscore_t *s, const dscore_truth_t *t, const dscore_run_t *run);
/* Whether the verdict's part is a fault of the trial (with the one-rail rule above). */
bool dscore_is_fault(const dscore_truth_t *t, const char *part);

/* One line per method: faults, recall, precision, undecided share, trials with any / an
 * unrelated false name, rounds, simulated time, tests. */
void dscore_print_summary(FILE *out, dscore_t *const *methods, size_t n);
/* Per kind of fault, for the first method (with states): named, undecided, cleared, passed,
 * another part named; rounds and time until named. Then the recall of every method per kind. */
void dscore_print_kinds(FILE *out, dscore_t *const *methods, size_t n);
/* Precision by the kind of the named part, and the calibration of printed confidences. */
void dscore_print_calibration(FILE *out, const dscore_t *s);
/* The goals for this world, measured. follow_up_goal: the follow-up round by which an
 * intermittent fault should be named (one rail); 0: not asked. */
void dscore_print_goals(FILE *out, const dscore_t *s, unsigned rails, unsigned sweeps,
                        unsigned follow_up_goal);

#endif
