/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine's core: from test results it keeps a posterior P(bad) per suspect (a
 * node "n17" or one of its rails "n17/mlx5_2"), plans the next round (on every rail, each
 * undecided suspect with a trusted partner it has not had before, everyone else in fresh
 * matchings), decides bad / cleared / undecided, estimates from the fleet how often a fault shows
 * and how often a healthy test fails, takes port-counter increases as evidence against a rail's
 * cable, and plans splits of groups that fail only at scale. Slow parts are judged from measured
 * flows by flowjudge.h. Pure logic: no I/O, no clocks, deterministic for a given seed.
 * docs/diagnosis.md has the model.
 *
 * Ownership: the engine copies every string it is given. Strings and evidence inside returned
 * verdict entries are borrowed from the engine and valid until the next fb_diag_record*() /
 * fb_diag_add_node() / fb_diag_verdicts() or fb_diag_destroy(); the entry array itself is the
 * caller's (free()). */
#ifndef FB_DIAGNOSIS_H
#define FB_DIAGNOSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fb_topology;
typedef struct fb_diag fb_diag_t;

typedef struct {
    double q;                 /* prior P(a faulty part's fault shows in one test); 0 < q <= 1 */
    double q_weight;          /* pseudo-tests behind that prior when q is estimated from the
                               * parts named bad (0: q stays fixed) */
    double false_fail_rate;   /* prior f: P(a test of good members fails anyway) */
    double false_fail_weight; /* pseudo-tests behind that prior when f is estimated */
    double prior_bad;         /* prior P(bad) of a node before any result; its rails share
                               * as much again (each prior_bad / rails) */
    double bad_threshold;     /* P >= this (and enough trusted partners): bad */
    double clear_threshold;   /* P <= this: cleared (and trusted) */
    unsigned min_trusted_partners; /* distinct trusted partners in failed tests to name bad */
    double fleet_error;            /* a part is named only when (chance that a healthy part fails
                                    * as often, after its first failure, at the estimated false-fail
                                    * rate) x (parts of its kind in the fleet) <= this: the expected
                                    * number of parts named by chance in the fleet (0: off) */
    double counter_lr;             /* likelihood ratio of a port-counter increase on a rail:
                                    * P(increase | its cable is bad) / P(increase | good) */
} fb_diag_params_t;

/* q 0.5 (weight 5), f 0.01 (weight 200), prior 0.01, bad 0.99, cleared 0.001, 2 trusted
 * partners, fleet error 0.001, counter likelihood ratio 100. */
void fb_diag_params_default(fb_diag_params_t *p);

typedef enum {
    FB_DIAG_UNDECIDED = 0, /* in a failed test, neither bad nor cleared yet */
    FB_DIAG_CLEARED,       /* P <= clear_threshold, or never in a failed test */
    FB_DIAG_BAD,           /* named bad (sticky) */
} fb_diag_state_t;

/* One test (or counter reading) behind a verdict, as seen from one suspect. A suspect keeps
 * the evidence of every test from its first failed one on (earlier passes of a node that was
 * never suspected say nothing a report needs, and a fleet has millions of them). */
typedef struct {
    const char *test_id;  /* the caller's test id */
    const char *partners; /* the other members, comma-separated ("" for a node-local test) */
    bool failed;
    unsigned n_partners; /* distinct other nodes in the test */
    unsigned n_trusted;  /* how many of them were trusted when the result came in */
    double p_before;     /* this suspect's P(bad) before and after the update */
    double p_after;
    const char *counter; /* a port-counter reading ("symbol_error +12"), NULL for a test */
} fb_diag_evidence_t;

typedef struct {
    const char *suspect; /* "node" or "node/rail" */
    const char *parent;  /* the node of a rail; NULL for a node */
    fb_diag_state_t state;
    double p_bad;
    unsigned n_tests, n_failed;
    unsigned n_trusted_fail_partners; /* distinct trusted partners in its failed tests */
    unsigned n_counters;              /* port-counter increases recorded against it */
    const char *kind; /* "node"; a rail: "nic", or "link" (its cable) when counters point at it */
    bool ambiguous;   /* a node named bad for itself or its only NIC (one rail cannot tell) */
    double p_unit;    /* a node: P(it or one of its rails is bad); a rail: p_bad */
    const fb_diag_evidence_t *evidence; /* its results from its first failed test on, in order */
    size_t n_evidence;
} fb_diag_verdict_t;

/* A suspect paired with a trusted node for the next round. Strings are the caller's (owned by
 * the array returned from fb_diag_plan_pairs; free with fb_diag_pairs_free). */
typedef struct {
    char *suspect; /* "node" or "node/rail" */
    char *partner; /* a trusted node */
    char *rail;    /* NULL for nodes without rails; else the rail to test on both nodes: the
                    * suspect's rail, or for a node suspect its least suspected rail, so that a
                    * node fault and a rail fault can be told apart */
} fb_pair_t;

/* NULL when params are out of range: q not in (0,1], f not in [0,1), or not
 * 0 < clear_threshold < prior_bad < bad_threshold < 1. params NULL = defaults. */
fb_diag_t *fb_diag_new(const fb_diag_params_t *params);
void fb_diag_destroy(fb_diag_t **self_p);

/* Adds a node and optionally its rails ("mlx5_0,mlx5_1"): suspects "node" and "node/mlx5_0"...
 * 0, -EEXIST when the node is known, -EINVAL on an empty or malformed name (names hold no ',' or
 * '/'). */
int fb_diag_add_node(fb_diag_t *d, const char *node, const char *rails_csv);
/* One test result over members ("node" or "node/rail", all known: -ENOENT otherwise; -EINVAL
 * for n == 0, a NULL test id or a member listed twice). A single member is a node-local test.
 * A rail member also involves its node. Updates every involved suspect by Bayes. */
int fb_diag_record(fb_diag_t *d, const char *test_id, const char *const *members, size_t n,
                   bool failed);
/* Names the parts that the results so far prove bad (the stopping rule below). Results of one
 * round are concurrent and come in in no meaningful order, so a part is named on the evidence of
 * whole rounds: call this after the results of a round (planning does it first). Naming is
 * sticky. */
void fb_diag_settle(fb_diag_t *d);
/* A port error counter of a rail ("node/rail") increased while test_id ran (symbol errors,
 * link downs: what a bad cable or transceiver does). Multiplies the odds that this rail is the
 * unit's bad part by counter_lr, and counts as one witness towards naming it (a cable that
 * counts its own errors needs one trusted partner, not two). what ("symbol_error +12") is kept
 * as evidence. 0, -ENOENT (unknown rail), -EINVAL (not a rail, NULL test id). */
int fb_diag_record_counter(fb_diag_t *d, const char *test_id, const char *rail, const char *what);

/* Plans the next pair round. Each undecided suspect (highest P first) gets a trusted node it has
 * not been tested with before (a repeat only when none is left); partners are drawn in an order
 * shuffled by seed. One test per node per round: where a node and one of its rails are both
 * undecided, the node is tested first, on its least suspected rail (fb_pair_t.rail). *rest gets
 * every other node that is not named bad, for the caller to match freely (a node with a rail
 * named bad stays in: the caller leaves that rail out); a suspect with no trusted node left goes
 * there too. Returns 0; arrays are the caller's (fb_diag_pairs_free, fb_diag_names_free). */
int fb_diag_plan_pairs(fb_diag_t *d, uint64_t seed, fb_pair_t **pairs, size_t *n_pairs,
                       char ***rest, size_t *n_rest);
void fb_diag_pairs_free(fb_pair_t **pairs, size_t n);
void fb_diag_names_free(char ***names, size_t n);

/* ---- a whole round, on every rail ---- */

/* How the nodes that are not re-tested get their partners. */
typedef struct {
    uint64_t seed;  /* random matchings and partner order */
    unsigned round; /* round index: round-robin / topology matchings, seed variation */
    bool fresh;     /* match everyone else freshly (else they sit the round out) */
    int pairing;    /* fb_pairing_t of the fresh matchings (pairing.h) */
    const struct fb_topology *topology; /* pairing topology: the fabric (borrowed) */
    const char *const *extra; /* nodes to re-test with trusted partners although the engine
                               * itself does not suspect them (slow ones, flowjudge.h) */
    size_t n_extra;
} fb_diag_round_opts_t;

typedef struct {
    char *a, *b;   /* the two nodes */
    char *rail;    /* the rail both run on; NULL for nodes without rails */
    char *suspect; /* re-test of this suspect ("n" or "n/rail") with trusted b; NULL: fresh */
} fb_diag_test_t;

typedef struct {
    fb_diag_test_t *tests; /* rail by rail, re-tests first */
    size_t n_tests;
    size_t n_retests;  /* tests with a suspect */
    size_t n_suspects; /* distinct nodes re-tested */
} fb_diag_round_t;

/* Plans one round on every rail (the union of the rails of the nodes, in the order first added;
 * a single pass when no node has rails). On each rail, a node that is not trusted (undecided, or
 * in opts->extra) gets a trusted partner that has that rail and is trusted on it, a different one
 * on each rail of the round and, while there are any, one it has never been tested with; then,
 * with opts->fresh, every other node with that rail is matched by the pairing over the nodes left
 * (an odd one out sits out). A node named bad, or a rail named bad, takes no part. Every node is
 * in at most one test per rail. 0, or -EINVAL (a pairing topology without a topology, or one that
 * cannot place the nodes). *out is always initialised; clear with fb_diag_round_clear. */
int fb_diag_plan_round(fb_diag_t *d, const fb_diag_round_opts_t *opts, fb_diag_round_t *out);
void fb_diag_round_clear(fb_diag_round_t *r);

/* The rails of the engine (the union over nodes), in the order first added; borrowed. */
size_t fb_diag_rails(const fb_diag_t *d, const char *const **rails);

/* True when no suspect is undecided (as of the last fb_diag_settle). */
bool fb_diag_done(const fb_diag_t *d);
/* Current false-fail rate estimate: prior f with false_fail_weight pseudo-tests, plus the
 * tests whose members were all cleared (P <= clear_threshold) when their result came in. */
double fb_diag_false_fail_rate(const fb_diag_t *d);
/* Current estimate of q: prior q with q_weight pseudo-tests, plus the tests of the parts named
 * bad whose partners were all trusted when the result came in (the failed test that made a part
 * a suspect is left out: it was chosen for having failed). */
double fb_diag_q(const fb_diag_t *d);
/* Whether a node is a trusted partner: not named bad, and it and its rails cleared or never in
 * a failed test. False for an unknown name. */
bool fb_diag_trusted(const fb_diag_t *d, const char *node);
/* P(bad) of a suspect; NaN when unknown. */
double fb_diag_p_bad(const fb_diag_t *d, const char *suspect);
/* Verdicts of all suspects, in the order they were added. *out is a heap array the caller
 * frees with free(); its strings and evidence are borrowed (see the top of this header).
 * Returns the count. */
size_t fb_diag_verdicts(const fb_diag_t *d, fb_diag_verdict_t **out);

/* ---- faults that show only at scale: split and recurse ---- */

/* Splits n members into k contiguous parts of near-equal size (the first n % k parts one larger):
 * part i is members [starts[i], starts[i+1]); starts has k+1 entries. Returns the number of
 * parts, min(k, n); 0 for n == 0 or k < 2 is -EINVAL. */
int fb_diag_split(size_t n, size_t k, size_t *starts);

typedef struct fb_split fb_split_t;
/* A split search over a failing group: each level splits every failing group into k parts, all
 * parts of a level run concurrently (disjoint nodes), each `repeat` times (one round each) to
 * beat flakiness; a part that fails at least once becomes a failing group of the next level.
 * A group none of whose parts fails is irreducible (the fault needs that scale, or it hid) and is
 * reported as is. NULL for n == 0, k < 2 or repeat == 0. Copies the member names. */
fb_split_t *fb_split_new(const char *const *members, size_t n, size_t k, unsigned repeat);
void fb_split_destroy(fb_split_t **self_p);
/* Parts of the current level (0 once the search is finished). */
size_t fb_split_n_parts(const fb_split_t *s);
/* Members of part i of the current level (borrowed until fb_split_next); NULL for a bad index. */
const char *const *fb_split_part(const fb_split_t *s, size_t i, size_t *size);
/* Records one run of part i at the current level. 0 or -EINVAL (bad index, or more than
 * `repeat` runs for that part). */
int fb_split_record(fb_split_t *s, size_t part, bool failed);
/* Moves to the next level once every part ran `repeat` times (-EAGAIN otherwise). Returns 1 when
 * another level follows, 0 when finished. */
int fb_split_next(fb_split_t *s);
/* Levels started so far (the first level is 1). */
unsigned fb_split_levels(const fb_split_t *s);
/* Findings once finished: failing singletons and irreducible groups, borrowed. */
size_t fb_split_n_findings(const fb_split_t *s);
const char *const *fb_split_finding(const fb_split_t *s, size_t i, size_t *size);

#endif
