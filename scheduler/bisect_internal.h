/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis session's insides, shared by bisect.c (recording, planning, the end),
 * bisect_verdicts.c and bisect_slow.c (the verdicts). Nothing outside scheduler/bisect*.c
 * includes this. */
#ifndef FB_BISECT_INTERNAL_H
#define FB_BISECT_INTERNAL_H

#include "bisect.h"

#include "common/strmap.h"

/* A group test of the stage, kept for the evidence of group verdicts. */
typedef struct {
    char *test_id;
    char **members;
    size_t n_members;
    bool failed;
} bisect_gtest_t;

/* The flow judgment of the flows recorded so far; valid while the count matches. */
typedef struct {
    fb_flow_judgment_t j;
    size_t n_flows;
    bool valid;
} bisect_cache_t;

/* Where a planned test of a group session belongs: a part of a split, or a pair re-test. */
typedef struct {
    size_t split, part; /* split SIZE_MAX: a pair re-test */
    bool recorded;
} bisect_planned_t;

/* A result held until the round is read. */
typedef struct {
    char *test_id;
    long planned;
    char **members;
    size_t n_members;
    char *rail;
    bool judged, failed;
    fb_bisect_flow_t *flows; /* strings owned */
    size_t n_flows;
    fb_bisect_counter_t *counters; /* strings owned */
    size_t n_counters;
} bisect_held_t;

/* What reading a round changes: kept behind a pointer so that the reading functions, which
 * take the session as const, can apply the results held back (logically const: the results
 * were recorded before). */
typedef struct {
    bisect_held_t *held;
    size_t n_held;
    bool any_failed;
    bisect_gtest_t *gtests;
    size_t n_gtests;
    size_t *failing; /* indices into gtests of the stage's own failing groups */
    size_t n_failing;
    bisect_cache_t cache;
} bisect_state_t;

struct fb_bisect {
    fb_bisect_opts_t o;
    fb_diag_t *diag;
    fb_flowjudge_t *flows;
    bisect_state_t *st;
    unsigned rounds, follow_ups;
    size_t n_nodes;
    double elapsed_s;
    fb_bisect_end_t end;
    /* groups */
    fb_split_t **splits;
    size_t *split_group; /* per split: its failing group (index into st->failing) */
    size_t n_splits;
    bool groups_started;
    unsigned level_runs;
    bisect_planned_t *planned;
    size_t n_planned;
    /* slow */
    fb_strmap_t *ever_pending; /* nodes that were pending at some point */
};

/* Applies the results held back (in order of test id) and settles the engine. */
void bisect__read(const fb_bisect_t *b);
/* The judgment of every flow so far (borrowed, until the next call). */
const fb_flow_judgment_t *bisect__judgment(const fb_bisect_t *b);

/* The verdicts list being built (bisect_verdicts.c, bisect_slow.c). */
typedef struct {
    fb_bisect_verdict_t *v;
    size_t n, cap;
} bisect_vlist_t;

fb_bisect_verdict_t *bisect__verdict_find(bisect_vlist_t *l, const char *part);
fb_bisect_verdict_t *bisect__verdict_new(bisect_vlist_t *l, const char *part, const char *kind,
                                         fb_bisect_state_t state, double confidence);
/* Takes ownership of what. */
void bisect__evidence_add(fb_bisect_verdict_t *v, const char *test_id, char *what);
void bisect__partner_add(fb_bisect_verdict_t *v, const char *node, size_t len);
/* x's findings are explained by the part `by` names (a bad leaf switch or uplink): by takes x's
 * part as a partner and x's first two pieces of evidence, and x becomes passed with summary
 * (taken). */
void bisect__explained_by(fb_bisect_verdict_t *by, fb_bisect_verdict_t *x, char *summary);
/* P(X >= k) for X ~ Binomial(n, p). */
double bisect__binom_tail(size_t n, size_t k, double p);

/* bisect_slow.c: the slow parts the flows name and the uplinks of leaves (appended to l), and
 * the same as names appended to (*parts)[0..n) for fb_bisect_bad; returns the new count. */
void bisect__slow_verdicts(const fb_bisect_t *b, bisect_vlist_t *l);
size_t bisect__slow_bad(const fb_bisect_t *b, char ***parts, size_t n);

#endif
