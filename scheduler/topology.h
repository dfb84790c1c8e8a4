/* SPDX-License-Identifier: Apache-2.0 */
/* The fabric as the scheduler sees it: a two-level fat tree of leaf switches (nodes attach to
 * them) and spine switches (leaves attach to them). Read from a small text file or from the
 * output of `ibnetdiscover`; used to plan pair rounds whose traffic crosses leaf-spine uplinks,
 * to say which links a pair's traffic crosses, and to name the leaf, uplink or node link that a
 * set of slow pairs implicates.
 *
 * Text format (fb_topology_parse), one switch per line, '#' starts a comment:
 *     leaf01: node[01-04]          a leaf and its nodes (hostlist notation, common/hostlist.h)
 *     spine01: leaf[01-04]         a spine and the leaves it connects
 * A line whose members are all switches named on the left of another line is a spine; one whose
 * members are none of them is a leaf. Errors name the line: a missing ':', a bad hostlist, a
 * switch defined twice, a node on two leaves, a line that mixes switches and nodes, a spine that
 * lists a spine (only two levels are modelled), a leaf with no nodes, and lines that list more
 * than FB_TOPOLOGY_MAX_MEMBERS members together (a two-level fat tree of 128-port switches has
 * 8192 nodes; the bound keeps a short hostlist from making the parser build millions of names).
 *
 * ibnetdiscover (fb_topology_parse_ibnetdiscover): the text `ibnetdiscover` prints. Switch and
 * Ca blocks; a switch with a link to a channel adapter (H-...) is a leaf, a switch whose links
 * all go to switches is a spine. Switch names come from the node description, "MF0;leaf01:
 * SX6036/U1" -> "leaf01" (the text between ';' and ':' when both are there, else the whole
 * description); node names are the first word of the CA description ("node01 mlx5_0" ->
 * "node01"). A node with several HCAs on different leaves is placed on the leaf of its first
 * HCA in the file (rail-optimised fabrics are not modelled per HCA yet).
 *
 * Ownership: a topology owns its names; every returned const char * is borrowed from it and
 * lives as long as it does. Pure logic: the parsers take text and never open a file. Their
 * messages name the line and quote at most the offending token (a switch name, a word, one
 * character), never a whole line of the text. */
#ifndef FB_TOPOLOGY_H
#define FB_TOPOLOGY_H

#include "pairing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fb_topology fb_topology_t;

/* Members (nodes, and leaves on spine lines) all lines of the text format list together, at most;
 * counted as written, before any check of names seen twice. */
#define FB_TOPOLOGY_MAX_MEMBERS 131072u

/* Parse the text format / ibnetdiscover output into a new topology (*out, caller destroys).
 * 0, or -EINVAL with *out = NULL and a one-line message in err such as "line 7: node05 is on
 * leaf01 and leaf02" (err may be NULL when errlen is 0). */
int fb_topology_parse(const char *text, fb_topology_t **out, char *err, size_t errlen);
int fb_topology_parse_ibnetdiscover(const char *text, fb_topology_t **out, char *err,
                                    size_t errlen);
/* Parses either format: ibnetdiscover output when text has a "Switch" or "Ca" block header,
 * the text format otherwise. */
int fb_topology_parse_any(const char *text, fb_topology_t **out, char *err, size_t errlen);
void fb_topology_destroy(fb_topology_t **self_p);

size_t fb_topology_n_leaves(const fb_topology_t *self);
size_t fb_topology_n_spines(const fb_topology_t *self);
size_t fb_topology_n_nodes(const fb_topology_t *self);
/* Names by index (index < count; in the order first seen), NULL when out of range. */
const char *fb_topology_leaf_name(const fb_topology_t *self, size_t i);
const char *fb_topology_spine_name(const fb_topology_t *self, size_t i);
/* Nodes of leaf i in the order listed, and spines of leaf i. Borrowed arrays; count in *n. */
const char *const *fb_topology_leaf_nodes(const fb_topology_t *self, size_t i, size_t *n);
const char *const *fb_topology_leaf_spines(const fb_topology_t *self, size_t i, size_t *n);
/* The leaf a node is attached to, or NULL for a node the topology does not know. */
const char *fb_topology_leaf_of(const fb_topology_t *self, const char *node);

typedef enum {
    FB_LINK_NODE_LEAF,  /* a node's cable to its leaf; a = node, b = leaf */
    FB_LINK_LEAF_SPINE, /* a leaf's uplink; a = leaf, b = spine, or "*" (see below) */
} fb_link_kind_t;

typedef struct {
    fb_link_kind_t kind;
    const char *a, *b; /* borrowed from the topology (or the static "*") */
} fb_link_t;

/* The links traffic between nodes a and b crosses, from a to b, into links[] (up to cap);
 * returns how many there are (which may exceed cap), or -ENOENT when a node is unknown and
 * -EINVAL when a == b. Same leaf: a-leaf, leaf-b (2). Different leaves: a-leafA, leafA-spine,
 * leafB-spine, b-leafB (4). Which spine carries the traffic is chosen by the subnet manager's
 * routing (or adaptive routing), not by the topology: when leafA and leafB share exactly one
 * spine it is named, otherwise the spine is "*" ("one of leafA's uplinks"). Two leaves with no
 * common spine give -EHOSTUNREACH. */
int fb_topology_path(const fb_topology_t *self, const char *a, const char *b, fb_link_t *links,
                     size_t cap);

/* Rounds after which fb_plan_pairs_topology() has paired every two leaves holding selected
 * nodes at least once (equal leaves; see below): the round-robin rounds over those leaves (L-1
 * for even L, L for odd, 0 below two). Nodes the topology does not know are not counted. */
unsigned fb_topology_pair_rounds(const fb_topology_t *self, const char *const *nodes, size_t n);

/* scope: pairs, pairing: topology. Round `round` of cross-leaf matchings. The leaves holding
 * selected nodes meet in a round-robin tournament (fb_plan_pairs_round_robin over the leaves);
 * nodes are then paired one pair at a time, always across leaves and always keeping the matching
 * as large as the leaf sizes allow (min(N/2, N - largest leaf) pairs): two leaves that meet this
 * round first, otherwise the largest leaf with the next largest. Within two leaves node i of one
 * meets node i + cycle of the other (cycle = round / rounds), so partners change from cycle to
 * cycle. Nodes no other leaf can take are idle. With leaves of equal size (the usual case)
 * every two leaves meet within fb_topology_pair_rounds() consecutive rounds, so traffic crosses
 * every leaf's uplinks towards every other leaf; with very unequal leaves a larger matching wins
 * over meeting every leaf pair. -ENOENT when a node is not in the topology; -EINVAL as in
 * pairing.h. Deterministic for (topology, node list, round). */
int fb_plan_pairs_topology(const fb_topology_t *topo, const char *const *nodes, size_t n,
                           unsigned round, fb_plan_t *out);

/* One tested pair and whether it was slow (or failed). */
typedef struct {
    const char *a, *b;
    bool slow;
} fb_pair_result_t;

typedef enum {
    FB_SUSPECT_NODE_LINK,   /* name = node: the node, its HCA or its cable to the leaf */
    FB_SUSPECT_LEAF_UPLINK, /* name = leaf: one or more of the leaf's uplinks to the spines */
    FB_SUSPECT_LEAF,        /* name = leaf: the leaf switch itself (also slow inside the leaf) */
} fb_suspect_kind_t;

typedef struct {
    fb_suspect_kind_t kind;
    const char *name; /* borrowed from the topology */
    size_t slow;      /* slow pairs whose path crosses it */
    size_t passed;    /* passing pairs whose path crosses it */
} fb_suspect_t;

/* Which part of the fabric a round's pair results implicate. Every node link, leaf uplink set
 * and leaf switch is scored by the slow and passing pairs that cross it; the suspects that lie on
 * the path of every slow pair are written to out (up to cap), best first: fewest passing pairs,
 * then the most specific part (node link, then leaf uplink, then leaf). Returns how many parts
 * explain every slow pair (0 when there are no slow pairs, or when no single part explains them
 * all: several faults, or a spine), or -ENOENT when a pair names an unknown node. A passing pair
 * through a part weighs against it but does not clear it: with several spines a bad uplink only
 * slows the pairs routed over it. When two suspects tie on passes, the evidence cannot separate
 * them; the caller should pair again (e.g. the slow leaf's nodes within their leaf). */
int fb_topology_implicate(const fb_topology_t *self, const fb_pair_result_t *results, size_t n,
                          fb_suspect_t *out, size_t cap);
const char *fb_suspect_kind_name(fb_suspect_kind_t kind);

#endif
