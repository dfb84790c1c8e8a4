/* SPDX-License-Identifier: Apache-2.0 */
/* Slow parts from measured flows. A pair test measures the bandwidth of a flow each way (src ->
 * dst, on a rail or not); the flow crosses parts: the sending node and its NIC on that rail, the
 * fabric links of its route (leaf-spine uplinks, where the route is known), the receiving NIC and
 * node. A slow part slows every flow through it, in the direction it is slow in. So:
 *
 *  - Each flow is scored against the median of its class (flows between nodes of the same two
 *    hardware classes) by its robust score (robust.h: deviations of 1.4826 * MAD): it is slow when
 *    the score is at least slow_score AND the value is at most slow_fraction of the median (the
 *    first keeps ordinary spread from counting, the second keeps a noisy class from naming
 *    anyone).
 *  - A part is consistent when every flow through it (in one direction, for nodes and NICs) is
 *    slow: a slow node slows all its flows, a bad uplink all flows routed over it, a bad NIC all
 *    flows on its rail; a healthy node with one slow partner has fast flows with the others.
 *  - Naming is a greedy explanation: the consistent part that explains the most slow flows not yet
 *    explained is named, if those flows involve at least min_partners distinct partners (the
 *    other node; for a link, distinct node pairs); its flows are explained; repeat. The flows of a
 *    healthy node that met a slow node are explained by that node, and those of the nodes behind
 *    a slow uplink by the uplink (explaining away). A node is preferred over its NIC and a NIC
 *    over a link when they explain the same flows.
 *  - Nodes with slow flows that nothing named explains, through a part that is still consistent,
 *    are pending: they need more partners (callers re-pair them with trusted nodes, diagnosis.h
 *    fb_diag_round_opts_t.extra). A stray slow flow between two nodes that are fast with everyone
 *    else leaves nobody pending.
 *
 * Pure logic: no I/O. Names are copied; judgments own their strings except the borrowed ones
 * marked below, which live as long as the judge (and until its next record). */
#ifndef FB_FLOWJUDGE_H
#define FB_FLOWJUDGE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    double slow_score;     /* robust score at or above which a flow is slow (3.5) */
    double slow_fraction;  /* ... and at most this fraction of its class median (0.8) */
    unsigned min_partners; /* distinct partners that must agree to name a part (3) */
} fb_flow_params_t;

void fb_flow_params_default(fb_flow_params_t *p);

typedef struct fb_flowjudge fb_flowjudge_t;

/* NULL params = defaults; NULL when out of range (slow_score > 0, 0 < slow_fraction < 1,
 * min_partners >= 1). */
fb_flowjudge_t *fb_flowjudge_new(const fb_flow_params_t *params);
void fb_flowjudge_destroy(fb_flowjudge_t **self_p);

/* The hardware class of a node (default ""): flows are judged against flows between nodes of
 * the same two classes. 0 or -EINVAL (empty name, NULL class). */
int fb_flowjudge_set_class(fb_flowjudge_t *fj, const char *node, const char *cls);

/* One measured flow src -> dst (higher is better: bandwidth), on rail (NULL: the nodes' only
 * path), crossing the fabric links links[0..n_links) (names such as "leaf02<->spine01"; the
 * caller knows the route, or leaves links out it does not know; at most 16). 0, or -EINVAL (a
 * NULL or empty name, src == dst, a non-finite or negative value, too many links). */
int fb_flowjudge_record(fb_flowjudge_t *fj, const char *test_id, const char *src, const char *dst,
                        const char *rail, double value, const char *const *links, size_t n_links);
size_t fb_flowjudge_flows(const fb_flowjudge_t *fj);

/* A slow flow behind a finding. Strings borrowed from the judge. */
typedef struct {
    const char *test_id, *src, *dst, *rail; /* rail NULL when none */
    double value, median, score;            /* the class median it was judged against */
} fb_flow_sample_t;

typedef struct {
    char *part;             /* "n17", "n17/mlx5_2", "leaf02<->spine01" */
    const char *kind;       /* "node", "nic", "link" (static) */
    const char *direction;  /* "both", "send", "receive" (static); links: "both" */
    double ratio;           /* median of value / class median over its slow flows */
    unsigned n_partners;    /* distinct partners (links: node pairs) among them */
    size_t n_flows;         /* flows through it, all slow (the part is consistent) */
    fb_flow_sample_t *slow; /* its slow flows it explains (owned array) */
    size_t n_slow;
} fb_flow_finding_t;

typedef struct {
    fb_flow_finding_t *findings; /* in the order named */
    size_t n_findings;
    char **pending; /* nodes with slow flows that no finding explains but a part still could
                     * (every flow through it slow so far): more partners will tell; name order */
    size_t n_pending;
    size_t n_flows, n_slow; /* flows judged, and slow ones */
} fb_flow_judgment_t;

/* Judges every flow recorded so far. *out is always initialised; clear it with
 * fb_flow_judgment_clear. Returns the number of findings. */
int fb_flowjudge_judge(const fb_flowjudge_t *fj, fb_flow_judgment_t *out);
/* NULL-safe; empties j. */
void fb_flow_judgment_clear(fb_flow_judgment_t *j);

#endif
