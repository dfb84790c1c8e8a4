/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine's core: from test results it keeps a posterior P(bad) per suspect (a
 * node "n17" or one of its rails "n17/mlx5_2"), plans the next round (on every rail, each
 * undecided suspect with a trusted partner it has not had before, everyone else in fresh
 * matchings), and decides, by one standard for every route, which parts are bad, which suspects
 * are cleared, which stay undecided and which were never implicated. How often a fault shows
 * (a mixture over q, per part) and how often a healthy test fails (f) are estimated from the
 * fleet's own results. Port-counter increases are evidence against a rail's cable. Slow parts are
 * judged from measured flows by flowjudge.h; splits of groups that fail only at scale are below.
 * Pure logic: no I/O, no clocks, deterministic for a given seed.
 *
 * Results of one round are concurrent: they are recorded in any order and take effect together
 * at fb_diag_settle() (one call per round; planning calls it first). What the engine concludes
 * is a function of the results of each round, not of the order they were recorded in.
 * docs/diagnosis.md has the model.
 *
 * Ownership: the engine copies every string it is given. Strings and evidence inside returned
 * verdict entries are borrowed from the engine and valid until the next fb_diag_record*() /
 * fb_diag_add_node() / fb_diag_settle() / fb_diag_verdicts() or fb_diag_destroy(); the entry
 * array itself is the caller's (free()). */
#ifndef FB_DIAGNOSIS_H
#define FB_DIAGNOSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fb_topology;
typedef struct fb_diag fb_diag_t;

typedef struct {
    double prior_bad;           /* prior P(bad) of a node before any result; its rails share
                                 * as much again (each prior_bad / rails) */
    double false_fail_rate;     /* f before the fleet's own results: P(a test of good members
                                 * fails anyway); a vague start, not a model of any fleet */
    double false_fail_weight;   /* pseudo-tests behind it (the fleet's tests outweigh it soon) */
    double mixture_weight;      /* pseudo-parts per q of the mixture before any part is bad */
    double bad_threshold;       /* P >= this (with the confirmations and fleet significance): bad */
    double implicate_ratio;     /* a part in an unexplained failed test whose P(bad) reaches this
                                 * many times its prior is implicated (a suspect until cleared) */
    double clear_threshold;     /* cleared needs P <= this, and the bound below */
    double clear_q;             /* cleared needs its own tests to rule out a fault that shows in
                                 * this share of tests (or in the smallest share a part named bad
                                 * in this fleet shows in, when smaller) ... */
    double clear_confidence;    /* ... with this confidence (0.99) */
    unsigned min_confirmations; /* independent confirmations to name a part: distinct trusted
                                 * partners in its failed tests, a failed node-local test and a
                                 * port counter count one each */
    double fleet_error;         /* a part is named only when (chance that a healthy part fails
                                 * as often, after its first failure, at the fleet's false-fail
                                 * rate) x (parts of its kind in the fleet) <= this: the expected
                                 * number of parts named by chance in the fleet (0: off) */
    double counter_lr;          /* likelihood ratio of a port-counter increase on a rail:
                                 * P(increase | its cable is bad) / P(increase | good) */
    unsigned rounds;            /* rounds (settles) the session runs at most. Fleet significance
                                 * is asked after every round, so its chance is that of a
                                 * healthy record as extreme at any of the rounds from the
                                 * part's first failure to this one (0: to the rounds settled
                                 * so far, when the caller does not know its budget) */
} fb_diag_params_t;

/* prior 0.01, f 0.05 (weight 20), mixture weight 1, bad 0.99, implicated at 3 x prior, cleared
 * at P <= 0.001 and q 0.25 ruled out with 0.99, 2 confirmations, fleet error 0.001, counter
 * likelihood ratio 100, rounds 0 (those settled so far). */
void fb_diag_params_default(fb_diag_params_t *p);

typedef enum {
    FB_DIAG_UNDECIDED = 0, /* implicated, neither named bad nor cleared */
    FB_DIAG_CLEARED,       /* implicated once, then its own tests ruled a fault out (the bound) */
    FB_DIAG_BAD,           /* named bad (sticky) */
    FB_DIAG_PASSED,        /* never implicated: no failed test, or only failed tests that a part
                            * named bad explains, or too little suspicion to implicate it */
} fb_diag_state_t;

/* One test (or counter reading) behind a verdict, as seen from one suspect. A suspect keeps
 * the evidence of every test from its first failed one on (earlier passes of a node that was
 * never suspected say nothing a report needs, and a fleet has millions of them). Ordered by
 * round, then test id. */
typedef struct {
    const char *test_id;  /* the caller's test id */
    const char *partners; /* the other members, comma-separated ("" for a node-local test) */
    bool failed;
    unsigned n_partners; /* distinct other nodes in the test */
    unsigned n_trusted;  /* how many of them were trusted when the round was planned */
    double p_before;     /* this suspect's P(bad) before and after the round of the test */
    double p_after;
    const char *counter; /* a port-counter reading ("symbol_error +12"), NULL for a test */
    unsigned round;      /* the round (settle) the test belongs to, from 0 */
    bool informative;    /* every partner trusted, then and now: it counts for the standard */
    bool explained;      /* failed, and another part in it is named bad */
} fb_diag_evidence_t;

typedef struct {
    const char *suspect; /* "node" or "node/rail" */
    const char *parent;  /* the node of a rail; NULL for a node */
    fb_diag_state_t state;
    double p_bad;
    unsigned n_tests, n_failed;
    unsigned n_trusted_fail_partners; /* distinct trusted partners in its unexplained failures */
    unsigned n_counters;              /* port-counter increases recorded against it */
    const char *kind; /* "node"; a rail: "nic", or "link" (its cable) when counters point at it */
    bool ambiguous;   /* a node named bad for itself or its only NIC (one rail cannot tell) */
    double p_unit;    /* a node: P(it or one of its rails is bad); a rail: p_bad */
    const fb_diag_evidence_t *evidence; /* its results from its first failed test on, in order */
    size_t n_evidence;
    /* the standard, as it stands for this part */
    unsigned n_confirmations; /* independent confirmations (see the params) */
    unsigned n_informative;   /* informative tests since its first unexplained failure ... */
    unsigned k_informative;   /* ... and the unexplained failures among them */
    unsigned clear_more;      /* passes in a row it still needs to be cleared (0: cleared or bad) */
    unsigned n_inf_rounds;    /* a node: rounds after the one of its first unexplained failure
                               * with informative tests of it ... */
    unsigned k_inf_rounds;    /* ... and those with an unexplained failure among them */
    bool clear_by_rounds;     /* clear_more counts passing rounds: a fault in bursts shows in all
                               * of a node's tests of a round or in none */
    bool burst_open;          /* undecided: a failure of it came with no pass of it beside it in
                               * its round, which a fault in bursts explains; passes alone never
                               * clear it (docs/diagnosis.md "Cleared") */
    bool burst_fleet;         /* undecided: it would be cleared, but a part named bad in this
                               * fleet fails in bursts (fb_diag_bursty_node) */
    bool on_watch;            /* undecided only for want of a bound on bursts (burst_open or
                               * burst_fleet): its passes since its first failure rule out a
                               * steady fault exactly as clearing would, so only a fault in
                               * bursts, quiet since, is left (docs/diagnosis.md "On watch") */
    double q_clear;           /* the q its clearing bound rules out: that of its kind (nodes, or
                               * rails), fb_diag_q_clear */
    double q_est;             /* if bad: how often its fault shows (posterior mean); else NaN */
    double chance;            /* fleet significance: the chance a healthy part of its kind fails
                               * as often at some round of the session, times the parts of its
                               * kind (params.rounds; 1: not computed) */
} fb_diag_verdict_t;

/* NULL when params are out of range: f not in [0,1), weights negative, not
 * 0 < clear_threshold < prior_bad < bad_threshold < 1, implicate_ratio < 1, clear_q or
 * clear_confidence not in (0,1), min_confirmations 0, fleet_error not in [0,1), counter_lr < 1.
 * params NULL = defaults. */
fb_diag_t *fb_diag_new(const fb_diag_params_t *params);
void fb_diag_destroy(fb_diag_t **self_p);

/* Adds a node and optionally its rails ("mlx5_0,mlx5_1"): suspects "node" and "node/mlx5_0"...
 * 0, -EEXIST when the node is known, -EINVAL on an empty or malformed name (names hold no ',' or
 * '/'). */
int fb_diag_add_node(fb_diag_t *d, const char *node, const char *rails_csv);
/* One test result over members ("node" or "node/rail", all known: -ENOENT otherwise; -EINVAL
 * for n == 0, a NULL test id, or two members of one node). A single member is a node-local
 * test. A rail member also involves its node. Takes effect at the next fb_diag_settle(). */
int fb_diag_record(fb_diag_t *d, const char *test_id, const char *const *members, size_t n,
                   bool failed);
/* Closes the round: every result recorded since the last call takes effect together (the
 * posteriors over all results so far, the fleet's estimates of f and q), then parts are named,
 * cleared or implicated by the standard (docs/diagnosis.md). Naming is sticky. Nothing to do
 * when nothing was recorded since the last call. */
void fb_diag_settle(fb_diag_t *d);
/* A port error counter of a rail ("node/rail") increased while test_id ran (symbol errors,
 * link downs: what a bad cable or transceiver does). Multiplies the odds that this rail is the
 * unit's bad part by counter_lr, implicates it, and counts as one confirmation (a cable that
 * counts its own errors needs one trusted partner, not two); exempt from fleet significance.
 * what ("symbol_error +12") is kept as evidence. Takes effect at the next fb_diag_settle().
 * 0, -ENOENT (unknown rail), -EINVAL (not a rail, NULL test id). */
int fb_diag_record_counter(fb_diag_t *d, const char *test_id, const char *rail, const char *what);

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
    const char *const *busy; /* nodes the caller tests otherwise this round (parts of a split):
                              * neither partners nor re-tested here */
    size_t n_busy;
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
/* The fleet's false-fail rate of tests between nodes (node-local tests have their own), as of
 * the last settle: the start value with its weight, plus the tests whose members were all
 * trusted when the round was planned and that hold no part named bad since. */
double fb_diag_false_fail_rate(const fb_diag_t *d);
/* The fleet's mixture of how often a fault shows: *q and *w get the grid of q values and their
 * weights (borrowed, summing to 1); returns the grid's size. Estimated from the parts that are
 * probably bad (P >= 0.5), each by its own posterior over q. */
size_t fb_diag_q_mixture(const fb_diag_t *d, const double **q, const double **w);
/* The mixture's mean q. */
double fb_diag_q(const fb_diag_t *d);
/* The q the clearing bound rules out: clear_q, or the smallest share a part of the same kind
 * (a node; a rail: a NIC or its cable) named bad in this fleet shows in (5% quantile of its
 * posterior), when smaller. This is the smaller of the two kinds' (each verdict has its own). */
double fb_diag_q_clear(const fb_diag_t *d);
/* The first node named bad whose fault comes in bursts (given it is bad, its posterior at least
 * 0.9 on the bursty hypotheses), or NULL. Once there is one, passes clear nothing:
 * this fleet's faults can be quiet for longer than a session (docs/diagnosis.md "Cleared"). */
const char *fb_diag_bursty_node(const fb_diag_t *d);
/* Whether a node is a trusted partner: not named bad, and it and its rails not undecided (as of
 * the last settle). False for an unknown name. */
bool fb_diag_trusted(const fb_diag_t *d, const char *node);
/* P(bad) of a suspect as of the last settle; NaN when unknown. */
double fb_diag_p_bad(const fb_diag_t *d, const char *suspect);
/* Rounds settled so far. */
unsigned fb_diag_rounds(const fb_diag_t *d);
/* Verdicts of all suspects, in the order they were added, as of the last settle. *out is a heap
 * array the caller frees with free(); its strings and evidence are borrowed (see the top of this
 * header). Returns the count. */
size_t fb_diag_verdicts(const fb_diag_t *d, fb_diag_verdict_t **out);
/* The parts named bad so far, in the order they were added: *parts is a heap array of borrowed
 * names (valid until fb_diag_destroy) the caller frees with free(). Returns the count. Cheaper
 * than fb_diag_verdicts, for callers that ask after every round. */
size_t fb_diag_bad_parts(const fb_diag_t *d, const char *const **parts);
/* "undecided", "cleared", "bad", "passed". */
const char *fb_diag_state_name(fb_diag_state_t s);

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
/* The same, never below `floor` members a part (the smallest group that exercises the fault: two
 * nodes for a test between nodes): a failing group smaller than 2 x floor is not split but is a
 * finding of its own (its members are then tested with trusted partners). floor 1 is
 * fb_split_new. NULL also for floor 0. */
fb_split_t *fb_split_new_floor(const char *const *members, size_t n, size_t k, unsigned repeat,
                               size_t floor);
/* Whether finding i failed in some part of its own (a failing part at the floor, or a single
 * node); false for an irreducible group (no part of it failed alone). */
bool fb_split_finding_failed(const fb_split_t *s, size_t i);
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
