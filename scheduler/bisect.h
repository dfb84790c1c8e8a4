/* SPDX-License-Identifier: Apache-2.0 */
/* A diagnosis session over one multi-node stage: what `on_fail: bisect` runs. It holds the
 * suspicion engine (diagnosis.h), the slow-part judge (flowjudge.h) and the split searches of
 * failing groups, takes every test result of the stage, plans the next round, and at the end
 * says which parts are bad, which suspects were cleared and what stayed undecided, each with
 * its evidence. The coordinator's runner turns the planned rounds into real tasks; the benchmark
 * (bench/diagnosis.c) runs the same session against the fault model, so both plan alike.
 *
 * Pairs (scope pairs): every round is planned here. The first `sweeps` rounds match every node
 * freshly on every rail (and re-test suspects with trusted partners); the rounds after them
 * re-test only suspects: nodes the engine has not decided, and nodes whose slow flows are not
 * explained yet. The session ends when nothing is undecided or pending, or after max_rounds
 * follow-up rounds.
 *
 * Groups (scope group): the stage's own round runs as planned by the runner and is recorded
 * here; then every failing group is split (split_k parts, all parts of all groups in one round,
 * each part split_repeat times), recursively, down to single nodes (fb_split_t in diagnosis.h).
 * A single node that fails is bad; a group none of whose parts fails alone is undecided (the
 * fault needs that scale, or it hid).
 *
 * Pure logic: no I/O, deterministic for a seed. Returned structures own their strings. */
#ifndef FB_BISECT_H
#define FB_BISECT_H

#include "diagnosis.h"
#include "flowjudge.h"
#include "pairing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fb_topology;

/* The spine a flow src -> dst crosses when the fabric's routing is known (NULL: unknown). */
typedef const char *(*fb_bisect_route_fn)(void *arg, const char *src, const char *dst);

typedef struct {
    fb_scope_t scope;                   /* FB_SCOPE_PAIRS or FB_SCOPE_GROUP */
    fb_pairing_t pairing;               /* pairs: how fresh matchings are made */
    const struct fb_topology *topology; /* optional (required for pairing topology): routes */
    fb_bisect_route_fn route;           /* optional: the spine of a flow (see above) */
    void *route_arg;
    uint64_t seed;
    unsigned sweeps;       /* pairs: rounds matching every node freshly, >= 1 */
    unsigned max_rounds;   /* follow-up rounds at most (after the sweeps / the stage's round) */
    unsigned split_k;      /* groups: parts of a split, >= 2 */
    unsigned split_repeat; /* groups: runs of every part, >= 1 */
    fb_diag_params_t diag;
    fb_flow_params_t flow;
} fb_bisect_opts_t;

/* Pairs, random, no topology, seed 1, 1 sweep, 12 follow-up rounds, split 4 x 2, engine and
 * flow defaults. */
void fb_bisect_opts_default(fb_bisect_opts_t *o);

typedef struct fb_bisect fb_bisect_t;

/* NULL on bad options (a scope other than pairs/group, sweeps 0, split_k < 2, split_repeat 0,
 * pairing topology without a topology, engine or flow parameters out of range). */
fb_bisect_t *fb_bisect_new(const fb_bisect_opts_t *opts);
void fb_bisect_destroy(fb_bisect_t **self_p);

/* A node of the stage and its rails ("mlx5_0,mlx5_1"; NULL or "" for none). fb_diag_add_node's
 * errors. */
int fb_bisect_add_node(fb_bisect_t *b, const char *node, const char *rails_csv);
/* A node-local result (the node-local round, or an earlier stage's verdict on the node). */
int fb_bisect_record_local(fb_bisect_t *b, const char *test_id, const char *node, bool failed);

/* A measured flow of a test: bandwidth src -> dst, as one member reported it. */
typedef struct {
    const char *src, *dst;
    double value;
} fb_bisect_flow_t;

/* A port error counter of rail `rail` of `node` that increased while the test ran. */
typedef struct {
    const char *node, *rail, *what;
} fb_bisect_counter_t;

typedef struct {
    const char *test_id;
    long planned; /* index of the test in the last round of fb_bisect_next, or -1 for a test the
                   * session did not plan (a group stage's own round) */
    const char *const *members; /* nodes */
    size_t n_members;
    const char *rail; /* the rail it ran on; NULL: none */
    bool judged;      /* the test reached a verdict (false: lost, error, timeout: only its flows
                       * and counters count) */
    bool failed;      /* its verdict, when judged */
    const fb_bisect_flow_t *flows;
    size_t n_flows;
    const fb_bisect_counter_t *counters;
    size_t n_counters;
} fb_bisect_result_t;

/* 0, -ENOENT (unknown member), -EINVAL (no id or members, a bad planned index, a bad flow). */
int fb_bisect_record(fb_bisect_t *b, const fb_bisect_result_t *r);

typedef struct {
    char **members; /* nodes, rank order */
    size_t n_members;
    char *rail;    /* run it on this rail; NULL: the workload's own choice */
    char *suspect; /* what it re-tests ("n7", "n7/mlx5_0", a part of a split), NULL: fresh */
} fb_bisect_test_t;

typedef struct {
    unsigned round; /* 1-based over the session's rounds */
    bool follow_up; /* a follow-up round (else a sweep) */
    fb_bisect_test_t *tests;
    size_t n_tests;
    char *why; /* one line for the timeline: "bisect round 3: 12 suspects re-paired with trusted
                * partners on 8 rails" */
} fb_bisect_round_t;

/* Plans the next round: 1 with *out filled, 0 when the session is over (nothing undecided or
 * pending, the round limit, or nothing left to test), negative errno from the planners.
 * *out is always initialised; clear with fb_bisect_round_clear. */
int fb_bisect_next(fb_bisect_t *b, fb_bisect_round_t *out);
void fb_bisect_round_clear(fb_bisect_round_t *r);
/* Follow-up rounds planned so far. */
unsigned fb_bisect_follow_ups(const fb_bisect_t *b);
/* Whether anything so far calls for diagnosis: a failed test or a slow flow. */
bool fb_bisect_needed(const fb_bisect_t *b);
/* The engine and judge behind the session (borrowed), for tests and benchmarks. */
const fb_diag_t *fb_bisect_diag(const fb_bisect_t *b);

typedef enum { FB_BISECT_BAD, FB_BISECT_UNDECIDED, FB_BISECT_CLEARED } fb_bisect_state_t;

typedef struct {
    char *test_id; /* the test (task) it rests on */
    char *what;    /* "with n7/mlx5_0 (trusted): failed; P 0.34 -> 0.97" */
} fb_bisect_evidence_t;

typedef struct {
    char *part;       /* "n17", "n17/mlx5_2", "leaf02<->spine01", "n1,n2,n3" (a group) */
    const char *kind; /* node, nic, link, group (static) */
    fb_bisect_state_t state;
    double confidence; /* bad and undecided: P(bad) (slow parts: see docs); cleared: P(good) */
    char *summary;     /* one line: what was found and on what grounds */
    char **partners;   /* the distinct nodes it was tested with in the evidence */
    size_t n_partners;
    fb_bisect_evidence_t *evidence;
    size_t n_evidence;
} fb_bisect_verdict_t;

/* The verdicts so far: bad, then undecided, then cleared. *out is the caller's (free with
 * fb_bisect_verdicts_free). Returns the count. */
size_t fb_bisect_verdicts(const fb_bisect_t *b, fb_bisect_verdict_t **out);
void fb_bisect_verdicts_free(fb_bisect_verdict_t **v, size_t n);
/* Only the names of the parts named bad so far (no evidence), for callers that ask after every
 * round. *parts is the caller's (free each, then the array); returns the count. */
size_t fb_bisect_bad(const fb_bisect_t *b, char ***parts);
/* "bad", "undecided", "cleared". */
const char *fb_bisect_state_name(fb_bisect_state_t s);

#endif
