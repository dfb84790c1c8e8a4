/* SPDX-License-Identifier: Apache-2.0 */
/* Stage scopes and the plans that place one round of a multi-node stage: which nodes run
 * together (groups), which run as pairs (matchings), and which sit the round out (idle).
 *
 * Scopes: `node` (the default: each node runs alone), `group` (all selected nodes together, or
 * consecutive groups of group_size), `pairs` (a matching chosen by a pairing strategy: random,
 * round-robin, or topology — the last lives in topology.h because it needs the fabric).
 *
 * Contracts shared by every planner here:
 *  - Every node appears in at most one group per plan, and every node given appears exactly once
 *    in the plan: in a group or in idle.
 *  - A plan is a pure function of (the node list in its order, the seed or round): the same
 *    inputs give the same plan on every host and every run. Callers pass a stage's nodes in
 *    the order of the stage's node list.
 *  - Member rank is the index in fb_group_t.members.
 *  - The plan owns copies of the names; fb_plan_clear() frees them. `out` is always
 *    initialised (to an empty plan on error).
 *  - Errors: -EINVAL for a NULL or empty name or a name given twice. Pure logic, no I/O. */
#ifndef FB_PAIRING_H
#define FB_PAIRING_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    FB_SCOPE_NODE = 0, /* default: one task per node */
    FB_SCOPE_GROUP,    /* one task per group of nodes */
    FB_SCOPE_PAIRS,    /* one task per pair, pairs chosen by an fb_pairing_t */
} fb_scope_t;

typedef enum {
    FB_PAIRING_RANDOM = 0,  /* a seeded random perfect matching */
    FB_PAIRING_ROUND_ROBIN, /* round r of a round-robin tournament (circle method) */
    FB_PAIRING_TOPOLOGY,    /* cross-leaf matchings that load leaf-spine uplinks (topology.h) */
} fb_pairing_t;

/* "node" | "group" | "pairs". 0 or -EINVAL. */
int fb_scope_parse(const char *text, fb_scope_t *out);
const char *fb_scope_name(fb_scope_t scope);
/* "random" | "round-robin" | "topology". 0 or -EINVAL. */
int fb_pairing_parse(const char *text, fb_pairing_t *out);
const char *fb_pairing_name(fb_pairing_t pairing);

typedef struct {
    char **members; /* owned; rank = index */
    size_t n_members;
} fb_group_t;

typedef struct {
    fb_group_t *groups; /* owned */
    size_t n_groups;
    char **idle; /* owned: nodes that sit this round out, in input order */
    size_t n_idle;
    size_t cap_groups, cap_idle; /* room in groups and idle (fb_plan_add_*) */
} fb_plan_t;

/* scope: node. One group of one per node, in input order. */
int fb_plan_nodes(const char *const *nodes, size_t n, fb_plan_t *out);

/* scope: group. group_size 0 (or >= n) puts all n nodes in one group. Otherwise consecutive
 * groups of group_size in input order; a remainder of two or more nodes forms a smaller last
 * group, and a single leftover node is idle (a group of one tests nothing between nodes, and
 * folding it in would make a group larger than group_size, which may not fit the fabric or the
 * workload). n == 0 gives an empty plan; n == 1 puts the node in idle. group_size 1 is -EINVAL
 * (use scope: node). */
int fb_plan_groups(const char *const *nodes, size_t n, size_t group_size, fb_plan_t *out);

/* scope: pairs, pairing: random. A uniformly random perfect matching of the nodes (SplitMix64
 * seeded by seed, Fisher-Yates); odd n leaves one node idle. Different seeds give (almost
 * always) different matchings. */
int fb_plan_pairs_random(const char *const *nodes, size_t n, uint64_t seed, fb_plan_t *out);

/* The number of rounds of a round-robin tournament over n nodes: n-1 for even n, n for odd n
 * (each round one node is idle), 0 for n < 2. */
unsigned fb_round_robin_rounds(size_t n);

/* scope: pairs, pairing: round-robin. Round `round` (taken modulo fb_round_robin_rounds(n)) of
 * a circle-method tournament: over fb_round_robin_rounds(n) consecutive rounds every node meets
 * every other exactly once; with odd n each node is idle in exactly one of those rounds. In
 * each pair the node earlier in the input is rank 0. */
int fb_plan_pairs_round_robin(const char *const *nodes, size_t n, unsigned round, fb_plan_t *out);

/* The same tournament by position: the index that i (< n) meets in round `round` of
 * fb_plan_pairs_round_robin over n nodes, or SIZE_MAX when i is idle in that round (or n < 2). */
size_t fb_round_robin_partner(size_t n, unsigned round, size_t i);

/* The group holding node, or NULL (borrowed from plan); *rank_out (may be NULL) gets its rank. */
const fb_group_t *fb_plan_group_of(const fb_plan_t *plan, const char *node, size_t *rank_out);

/* Frees everything the plan owns and empties it. NULL-safe; clearing twice is fine. */
void fb_plan_clear(fb_plan_t *plan);

/* --- building blocks shared with topology.c (not for other callers) --- */

/* 0, or -EINVAL when a name is NULL, empty or given twice. */
int fb_plan_check_nodes(const char *const *nodes, size_t n);
/* Appends a group of copies of the k names; appends a copy of name to idle. */
void fb_plan_add_group(fb_plan_t *plan, const char *const *names, size_t k);
void fb_plan_add_idle(fb_plan_t *plan, const char *name);

#endif
