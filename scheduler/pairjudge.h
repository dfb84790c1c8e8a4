/* SPDX-License-Identifier: Apache-2.0 */
/* Stage-level judgment of pair bandwidth tests (scope: pairs, docs/scheduling.md): which pairs
 * were slow against the rest of the stage, and whether the slowness belongs to one node or can
 * only be pinned on a link between two.
 *
 * Input: one sample per member result of the stage: the node, its partner, the round, and the
 * two judged metrics of the workload, tx (node -> partner) and rx (partner -> node). A pair test
 * (round, two nodes) is slow when any of its up to four directions is slow. A direction is slow
 * when it is below FB_PAIRJUDGE_SLOW_FRACTION of the stage median of its metric AND at least
 * FB_PAIRJUDGE_MIN_SCORE robust deviations below it (robust.h): the first keeps ordinary spread
 * from counting, the second keeps a noisy fleet from naming anyone. The stage median and MAD are
 * taken over nodes, of each node's median: a node slow both ways slows half of all samples of a
 * small stage (4 nodes, 3 rounds), but it is one node of four.
 *
 * Attribution: a node is named (a `node` finding) when it was slow with at least two different
 * partners that speak for themselves: each passed a pair test with some other node, and is slow
 * with fewer partners than the node is. Its slow pairs are explained by it. (Two bad nodes in
 * one stage are both named: their healthy partners are slow with both, but pass with everyone
 * else.) Every other slow pair is a `link` finding "a<->b": the evidence cannot tell which end is
 * at fault (e.g. a single round, where each node meets one partner). With fewer than three values
 * of a metric (nodes with a value) there is no median to judge against, and it is not judged.
 *
 * Pure: no I/O; the findings own their strings; deterministic for the same samples in the same
 * order. */
#ifndef FB_PAIRJUDGE_H
#define FB_PAIRJUDGE_H

#include <stddef.h>

#define FB_PAIRJUDGE_SLOW_FRACTION 0.7
#define FB_PAIRJUDGE_MIN_SCORE 3.0

/* The judged metrics of a pair workload. */
typedef struct {
    const char *workload;
    const char *tx; /* this node -> partner */
    const char *rx; /* partner -> this node */
} fb_pair_metrics_t;

/* The metrics judged for workload (netbw, rdmabw), or NULL when it has none (borrowed,
 * static). */
const fb_pair_metrics_t *fb_pairjudge_metrics(const char *workload);

typedef struct {
    const char *node, *partner; /* borrowed */
    unsigned round;
    double tx, rx; /* NaN when the result did not report it */
} fb_pair_sample_t;

typedef enum {
    FB_PAIR_FINDING_NODE, /* part = node: slow with several partners that are fine elsewhere */
    FB_PAIR_FINDING_LINK, /* part = "a<->b": slow, undecided between a and b */
} fb_pair_finding_kind_t;

typedef struct {
    fb_pair_finding_kind_t kind;
    char *part;      /* "node07" or "node03<->node07" */
    char *node;      /* the named node; for a link, its first node */
    char *what;      /* evidence: partners, rounds, values against the medians */
    size_t *samples; /* indices of the samples of the slow pair tests it rests on */
    size_t n_samples;
} fb_pair_finding_t;

typedef struct {
    fb_pair_finding_t *findings; /* node findings first, then links, in sample order */
    size_t n_findings;
    double median_tx, median_rx; /* NaN when not judged */
    size_t slow_pairs;           /* slow pair tests */
} fb_pair_judgment_t;

/* Judges n samples with the metric names of m (used in the evidence). *out is always
 * initialised; clear it with fb_pair_judgment_clear. Returns the number of findings, or -EINVAL
 * for a sample without node or partner, or a node paired with itself. */
int fb_pairjudge(const fb_pair_metrics_t *m, const fb_pair_sample_t *samples, size_t n,
                 fb_pair_judgment_t *out);
/* "node" | "link". */
const char *fb_pair_finding_kind_name(fb_pair_finding_kind_t kind);
/* Frees what the judgment owns and empties it. NULL-safe. */
void fb_pair_judgment_clear(fb_pair_judgment_t *j);

#endif
