/* SPDX-License-Identifier: Apache-2.0 */
/* A diagnosis session over one multi-node stage: what `on_fail: bisect` runs. It holds the
 * suspicion engine (diagnosis.h), the slow-part judge (flowjudge.h) and the split searches of
 * failing groups, takes every test result of the stage, plans the next round, and at the end
 * says which parts are bad, which suspects were cleared, what stayed undecided (and what was
 * tried) and which parts in failed tests were never implicated (passed), each with its evidence,
 * and why the session ended. The coordinator's runner turns the planned rounds into real tasks;
 * the benchmark (bench/diagnosis.c) and fleetburn-simengine run the same session against the
 * fault model, so all plan alike.
 *
 * Results are held until the round is read (fb_bisect_next, fb_bisect_verdicts, ...) and then
 * taken in order of test id: what the session concludes is a function of each round's results,
 * not of the order they came in. Read only between rounds.
 *
 * Pairs (scope pairs): every round is planned here. The first `sweeps` rounds match every node
 * freshly on every rail (and re-test suspects with trusted partners); the rounds after them
 * re-test only suspects: parts the engine has implicated and not decided, and nodes whose slow
 * flows are not explained yet. The session ends when nothing is undecided or pending, or when
 * the budget (max_rounds follow-up rounds, budget_s seconds) is spent, or when no suspect has a
 * trusted partner left; fb_bisect_end says which.
 *
 * Groups (scope group): the stage's own round runs as planned by the runner and is recorded
 * here (every group a test of all its members). Then members the failures implicate are re-tested
 * in tests of two with trusted partners (the smallest group that exercises a fault between
 * nodes); a failing group that implicates nobody (a large one: chance alone makes some of its
 * members fail now and then) is split first (split_k parts, all parts of all groups in one
 * round, each part split_repeat times), never below split_floor nodes a part. Names come from
 * the engine's standard only, as for pairs.
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

/* The spine a flow src -> dst on rail (an adapter such as "mlx5_0", NULL for a stage without
 * rails) crosses when the fabric's routing is known (NULL: unknown); e.g. fb_routes_spine. */
typedef const char *(*fb_bisect_route_fn)(void *arg, const char *src, const char *dst,
                                          const char *rail);

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
    double budget_s;    /* time budget of the follow-up rounds, seconds (0: none); the caller says
                         * how much is spent (fb_bisect_set_elapsed) */
    size_t split_floor; /* groups: a part never has fewer nodes, >= 1 */
    bool sweep_idle;    /* pairs: in follow-up rounds, nodes not re-tested are matched freshly
                         * while the round budget still leaves the rounds it takes to clear a part
                         * such a test implicates (rounds cost the same with them busy) */
} fb_bisect_opts_t;

/* Pairs, random, no topology, seed 1, 1 sweep, 24 follow-up rounds, no time budget, idle nodes
 * swept, split 4 x 2 down to 2 nodes, engine and flow defaults. */
void fb_bisect_opts_default(fb_bisect_opts_t *o);

typedef struct fb_bisect fb_bisect_t;

/* NULL on bad options (a scope other than pairs/group, sweeps 0, split_k < 2, split_repeat 0,
 * split_floor 0, a negative or non-finite budget_s, pairing topology without a topology, engine
 * or flow parameters out of range). */
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

/* Plans the next round: 1 with *out filled, 0 when the session is over (fb_bisect_end says
 * why), negative errno from the planners. *out is always initialised; clear with
 * fb_bisect_round_clear. */
int fb_bisect_next(fb_bisect_t *b, fb_bisect_round_t *out);
void fb_bisect_round_clear(fb_bisect_round_t *r);
/* Follow-up rounds planned so far. */
unsigned fb_bisect_follow_ups(const fb_bisect_t *b);
/* The time spent on follow-up rounds so far, for the time budget (the caller's clock: the runner
 * measures it; a replay says 0 for rounds that were run). */
void fb_bisect_set_elapsed(fb_bisect_t *b, double seconds);

typedef enum {
    FB_BISECT_RUNNING = 0, /* not ended */
    FB_BISECT_END_DECIDED, /* nothing undecided or pending */
    FB_BISECT_END_ROUNDS,  /* the round budget is spent */
    FB_BISECT_END_TIME,    /* the time budget is spent */
    FB_BISECT_END_STUCK,   /* suspects left, and no trusted partner for any of them */
} fb_bisect_end_t;

/* Why the session ended (FB_BISECT_RUNNING while fb_bisect_next still plans rounds). */
fb_bisect_end_t fb_bisect_end(const fb_bisect_t *b);
/* "running", "decided", "budget: rounds", "budget: time", "no trusted partner". */
const char *fb_bisect_end_name(fb_bisect_end_t e);
/* Whether anything so far calls for diagnosis: a failed test or a slow flow. */
bool fb_bisect_needed(const fb_bisect_t *b);
/* The engine and judge behind the session (borrowed), for tests and benchmarks. */
const fb_diag_t *fb_bisect_diag(const fb_bisect_t *b);

typedef enum {
    FB_BISECT_BAD,
    FB_BISECT_UNDECIDED, /* implicated, not enough evidence either way (its summary: what was
                          * tried and what it still needs) */
    FB_BISECT_CLEARED,   /* implicated, then its own tests ruled a fault out (the bound) */
    FB_BISECT_PASSED,    /* in a failed test, never implicated (a part named bad explains it,
                          * or the failure did not point at it) */
} fb_bisect_state_t;

typedef struct {
    char *test_id; /* the test (task) it rests on */
    char *what;    /* "with n7/mlx5_0 (trusted): failed; P 0.34 -> 0.97" */
} fb_bisect_evidence_t;

typedef struct {
    char *part;       /* "n17", "n17/mlx5_2", "leaf02<->spine01", "n1,n2,n3" (a group) */
    const char *kind; /* node, nic, link, group (static) */
    fb_bisect_state_t state;
    double confidence; /* bad and undecided: P(bad) (slow parts: see docs); cleared: P(good);
                        * passed: NaN (no claim is made) */
    char *summary;     /* one line: what was found and on what grounds */
    char **partners;   /* the distinct nodes it was tested with in the evidence */
    size_t n_partners;
    fb_bisect_evidence_t *evidence;
    size_t n_evidence;
    bool unit; /* a node of a session without rails: the node or one of its NICs (its tests use
                * every NIC; a stage with rails can tell them apart) */
    bool on_watch; /* undecided, on watch: its passes rule out a steady fault, and only a fault
                    * in bursts, quiet since its failure, is left open */
} fb_bisect_verdict_t;

/* The verdicts so far: bad, then undecided, then cleared, then passed, each by part name. *out
 * is the caller's (free with fb_bisect_verdicts_free). Returns the count. */
size_t fb_bisect_verdicts(const fb_bisect_t *b, fb_bisect_verdict_t **out);
void fb_bisect_verdicts_free(fb_bisect_verdict_t **v, size_t n);
/* Only the names of the parts named bad so far (no evidence), for callers that ask after every
 * round. *parts is the caller's (free each, then the array); returns the count. */
size_t fb_bisect_bad(const fb_bisect_t *b, char ***parts);
/* "bad", "undecided", "cleared", "passed". */
const char *fb_bisect_state_name(fb_bisect_state_t s);
/* A seed from a stage's name (FNV-1a): the session of a stage that has no seed of its own (scope
 * group has none) is seeded by it, so that its diagnosis replays the same in every run. */
uint64_t fb_bisect_name_seed(const char *name);

#endif
