/* SPDX-License-Identifier: Apache-2.0 */
/* Slow parts from measured flows. A pair test measures the bandwidth of a flow each way (src ->
 * dst, on a rail or not); the flow crosses parts: the sending node and its NIC on that rail, the
 * fabric links of its route (leaf-spine uplinks, where the route is known), the receiving NIC and
 * node. A slow part slows every flow through it, in the direction it is slow in. So:
 *
 *  - Each flow is compared with the median of its class (flows between nodes of the same two
 *    hardware classes): its log ratio, and the class's robust spread of log ratios
 *    (1.4826 * MAD). A flow whose ratio is at most slow_fraction and whose robust score is at
 *    least slow_score counts as slow (evidence, and the fleet's count of slow flows).
 *  - A part is judged on all its flows (in one direction, for nodes and NICs): it is slow when
 *    the median of their log ratios is at most log(slow_fraction) (a slowdown that matters), by
 *    the same standard as failing parts (diagnosis.h): the chance that a healthy part's flows
 *    have a median that low (normal tail of the median, from the class spread), times the parts
 *    of its kind in the fleet, is at most fleet_error, and the flows come from at least
 *    min_partners distinct partners (the other node; for a link, distinct node pairs). A slow NIC
 *    slows only its rail's flows, so its node's median stays healthy; a healthy node that met a
 *    slow one has a few slow flows among many fast ones.
 *  - Naming is a greedy explanation: the part that explains the most unexplained flows is named
 *    first, its flows become explained, the others are judged again on what is left; a node is
 *    preferred over its NIC and a NIC over a link when they explain as many.
 *  - Parts slow enough to matter but not proven yet (too few flows or partners) make their nodes
 *    pending: callers re-pair them with trusted nodes (diagnosis.h fb_diag_round_opts_t.extra).
 *    A node whose flows rule a slowdown that matters out (the lower 99% bound of its median
 *    ratio, each way, above slow_fraction) is fast: a pending node that turns fast is cleared;
 *    one whose slow flows a named part explains is not implicated any more.
 *
 * Pure logic: no I/O. Names are copied; judgments own their strings except the borrowed ones
 * marked below, which live as long as the judge (and until its next record). */
#ifndef FB_FLOWJUDGE_H
#define FB_FLOWJUDGE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    double slow_score;     /* robust score at or above which one flow counts as slow (3.5) */
    double slow_fraction;  /* a part (and a flow) is slow at most at this fraction of its class
                            * median (0.93) */
    unsigned min_partners; /* distinct partners among a part's flows to name it (2) */
    double fleet_error;    /* (chance of a healthy part's flows being as slow) x (parts of its
                            * kind) at most this to name it (0.001) */
} fb_flow_params_t;

void fb_flow_params_default(fb_flow_params_t *p);

typedef struct fb_flowjudge fb_flowjudge_t;

/* NULL params = defaults; NULL when out of range (slow_score > 0, 0 < slow_fraction < 1,
 * min_partners >= 1, 0 < fleet_error < 1). */
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
    double ratio;           /* median of value / class median over the flows it explains */
    unsigned n_partners;    /* distinct partners (links: node pairs) among them */
    size_t n_flows;         /* the flows it explains */
    fb_flow_sample_t *slow; /* those flows, slowest first (owned array) */
    size_t n_slow;
    double chance;     /* fleet significance: chance of a healthy part's flows being as slow,
                        * times the parts of its kind */
    double confidence; /* 1 - chance */
} fb_flow_finding_t;

typedef struct {
    fb_flow_finding_t *findings; /* in the order named */
    size_t n_findings;
    char **pending; /* nodes of parts slow enough to matter that are not proven yet: more
                     * partners will tell; name order */
    size_t n_pending;
    char **fast; /* nodes whose flows, each way, rule a slowdown that matters out; name order */
    size_t n_fast;
    char **stray; /* nodes at an end of a slow flow that no finding explains; name order */
    size_t n_stray;
    size_t n_flows, n_slow; /* flows judged, and slow ones */
} fb_flow_judgment_t;

/* Judges every flow recorded so far. *out is always initialised; clear it with
 * fb_flow_judgment_clear. Returns the number of findings. */
int fb_flowjudge_judge(const fb_flowjudge_t *fj, fb_flow_judgment_t *out);
/* NULL-safe; empties j. */
void fb_flow_judgment_clear(fb_flow_judgment_t *j);
/* Whether node is among j's pending (fast, stray) nodes. */
bool fb_flow_judgment_pending(const fb_flow_judgment_t *j, const char *node);
bool fb_flow_judgment_fast(const fb_flow_judgment_t *j, const char *node);
bool fb_flow_judgment_stray(const fb_flow_judgment_t *j, const char *node);

#endif
