/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine's core: from test results it keeps a posterior P(bad) per suspect (a
 * node "n17" or one of its rails "n17/mlx5_2"), plans the next pair round (each undecided
 * suspect with a trusted partner it has not had before), decides bad / cleared / undecided, names
 * slow nodes from pair measurements, and plans splits of groups that fail only at scale.
 * Pure logic: no I/O, no clocks, deterministic for a given seed. docs/diagnosis.md has the model.
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

typedef struct fb_diag fb_diag_t;

typedef struct {
    double q;                      /* P(a faulty member's fault shows in one test); 0 < q <= 1 */
    double false_fail_rate;        /* prior f: P(a test of good members fails anyway) */
    double false_fail_weight;      /* pseudo-tests behind that prior when f is estimated */
    double prior_bad;              /* prior P(bad) of every suspect before any result */
    double bad_threshold;          /* P >= this (and enough trusted partners): bad */
    double clear_threshold;        /* P <= this: cleared (and trusted) */
    unsigned min_trusted_partners; /* distinct trusted partners in failed tests to name bad */
    double slow_threshold;         /* robust score at or above which a measurement is slow */
    unsigned slow_min_partners;    /* distinct trusted partners that must agree to name slow */
} fb_diag_params_t;

/* q 0.5, f 0.01 (weight 200), prior 0.01, bad 0.99, cleared 0.001, 2 trusted partners, slow
 * score 3.5 with 3 partners. */
void fb_diag_params_default(fb_diag_params_t *p);

typedef enum {
    FB_DIAG_UNDECIDED = 0, /* in a failed test, neither bad nor cleared yet */
    FB_DIAG_CLEARED,       /* P <= clear_threshold, or never in a failed test */
    FB_DIAG_BAD,           /* named bad (sticky) */
} fb_diag_state_t;

/* One test behind a verdict, as seen from one suspect. */
typedef struct {
    const char *test_id;  /* the caller's test id */
    const char *partners; /* the other members, comma-separated ("" for a node-local test) */
    bool failed;
    unsigned n_trusted; /* how many of the partners were trusted when the result came in */
    double p_before;    /* this suspect's P(bad) before and after the update */
    double p_after;
} fb_diag_evidence_t;

/* A slow measurement behind a slow verdict. */
typedef struct {
    const char *test_id;
    const char *partner;
    double value;
    double score;         /* robust score of value against all pair measurements */
    bool partner_trusted; /* the partner had no slow measurement with anyone else */
} fb_diag_slow_evidence_t;

typedef struct {
    const char *suspect; /* "node" or "node/rail" */
    const char *parent;  /* the node of a rail; NULL for a node */
    fb_diag_state_t state;
    double p_bad;
    unsigned n_tests, n_failed;
    unsigned n_trusted_fail_partners;   /* distinct trusted partners in its failed tests */
    const fb_diag_evidence_t *evidence; /* every test result of this suspect, in order */
    size_t n_evidence;
    bool slow; /* named slow: >= slow_min_partners trusted partners agree */
    unsigned n_slow_partners;
    const fb_diag_slow_evidence_t *slow_evidence; /* its slow measurements (only when > 0) */
    size_t n_slow_evidence;
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
/* A measured pair value (bandwidth: higher is better) between nodes a and b. 0, -ENOENT,
 * -EINVAL (a == b, NaN value). */
int fb_diag_record_measure(fb_diag_t *d, const char *test_id, const char *a, const char *b,
                           double value);

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

/* True when no suspect is undecided. */
bool fb_diag_done(const fb_diag_t *d);
/* Current false-fail rate estimate: prior f with false_fail_weight pseudo-tests, plus the
 * tests whose members were all cleared (P <= clear_threshold) when their result came in. */
double fb_diag_false_fail_rate(const fb_diag_t *d);
/* P(bad) of a suspect; NaN when unknown. */
double fb_diag_p_bad(const fb_diag_t *d, const char *suspect);
/* Verdicts of all suspects, in the order they were added. *out is a heap array the caller
 * frees with free(); its strings and evidence are borrowed (see the top of this header).
 * Not const: slow scores are computed here, against all pair measurements so far, and the slow
 * evidence is cached in the engine. Returns the count. */
size_t fb_diag_verdicts(fb_diag_t *d, fb_diag_verdict_t **out);

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
