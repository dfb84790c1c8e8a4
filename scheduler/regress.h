/* SPDX-License-Identifier: Apache-2.0 */
/* Regressions against a baseline: the statistics that tell a part that got worse from noise and
 * from a shift of the whole fleet (docs/regressions.md).
 *
 * One call judges one metric family of one stage: the same metric measured on n parts (nodes,
 * pairs, groups; with pooled per-GPU or per-port metrics, every GPU or port of them) in the base
 * campaign and in the campaign compared with it. Each part has its relative change
 *
 *     change = (now - base) / |base|            (what is reported and held to the tolerance)
 *
 * and its log ratio
 *
 *     score = ln((now + o) / (base + o))        (what the fleet's statistics are taken over)
 *
 * with o the metric's min_delta (0 for rates, 1 for counts, so that a count going from 0 to 3 has
 * a score). Benchmark noise is multiplicative: in log ratios a halving and a doubling are equally
 * far from "no change", where relative changes would squeeze every drop into [-100%, 0] and let
 * the scatter of a noisy fleet hide a part that lost 99%. Then:
 *
 *   - fleet of at least FB_REGRESS_MIN_FLEET parts: a part is worse (better) when its change is
 *     worse (better) than the tolerance AND its score stands out from the fleet's in that
 *     direction: |score - median| > threshold = max(FB_REGRESS_K * 1.4826 * MAD, ln(1 +
 * tolerance)). The whole fleet has shifted when the median score itself is beyond the tolerance and
 * beyond FB_REGRESS_SHIFT_Z standard errors of the median; parts that merely follow the shift are
 * not named one by one;
 *   - fewer parts: the MAD of one to three values says nothing about noise, so each part is
 *     judged on the tolerance alone, and no fleet-wide shift is called.
 *
 * A change smaller in absolute terms than the metric's min_delta is never judged (0 -> 1 error is
 * a change; 18 -> 20 us of latency is not worth a line). Pure functions, no I/O. */
#ifndef FB_REGRESS_H
#define FB_REGRESS_H

#include <stdbool.h>
#include <stddef.h>

/* Parts below this are judged on the tolerance alone. */
#define FB_REGRESS_MIN_FLEET 4
/* A part stands out when its change is more than this many robust standard deviations
 * (1.4826 * MAD) from the fleet's median change (docs/regressions.md says why 5). */
#define FB_REGRESS_K 5.0
/* A fleet-wide shift must be this many standard errors of the median away from zero. */
#define FB_REGRESS_SHIFT_Z 3.0
/* Scores are clamped to +-this (a value that became 0 has an infinite log ratio). */
#define FB_REGRESS_SCORE_CAP 20.0

/* Which way a metric is better. */
typedef enum {
    FB_BETTER_HIGHER = 0, /* bandwidth, TFLOPS, clocks, GPUs present */
    FB_BETTER_LOWER,      /* latency, errors, temperature */
    FB_BETTER_NEITHER,    /* no known direction: a change either way beyond tolerance is worse */
} fb_better_t;

/* How a metric is judged. */
typedef struct {
    fb_better_t better;
    double tolerance; /* relative change allowed, as a fraction (0.05 = 5%), >= 0 */
    double min_delta; /* absolute change (the metric's unit) below which nothing is judged */
} fb_regress_limits_t;

typedef enum { FB_CALL_SAME = 0, FB_CALL_WORSE, FB_CALL_BETTER } fb_call_t;

/* What the fleet did, for one metric family. */
typedef struct {
    size_t n;            /* parts judged together */
    bool by_fleet;       /* n >= FB_REGRESS_MIN_FLEET; else judged on the tolerance alone */
    double median;       /* the median relative change, for the report */
    double score_median; /* median and unscaled MAD of the scores */
    double score_mad;
    double threshold;   /* by_fleet: how far a part's score must be from the median to stand out */
    double base_median; /* medians of the values themselves, for the report */
    double now_median;
    fb_call_t shift; /* by_fleet: the fleet as a whole got worse or better */
    size_t n_worse;  /* parts whose own change is worse than the tolerance (standing out or not) */
    size_t n_better; /* ... better than the tolerance */
} fb_regress_fleet_t;

/* (now - base) / |base|; NaN when base is 0 (no relative change) or either value is NaN. */
double fb_regress_change(double base, double now);
/* ln((now + offset) / (base + offset)), clamped to +-FB_REGRESS_SCORE_CAP; 0 when both are equal.
 * NaN when either value is NaN. */
double fb_regress_score(double base, double now, double offset);
/* How much worse a change or score is in the metric's direction: positive worse, negative better
 * (NEITHER: its absolute value, never better). */
double fb_regress_loss(fb_better_t better, double change);
/* Judges n parts: base[i] -> now[i] (finite values). Fills *fleet and, when calls is not NULL,
 * calls[i] for every part. n may be 0. */
void fb_regress_judge(const fb_regress_limits_t *lim, const double *base, const double *now,
                      size_t n, fb_regress_fleet_t *fleet, fb_call_t *calls);

#endif
