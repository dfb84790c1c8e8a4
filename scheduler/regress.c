/* SPDX-License-Identifier: Apache-2.0 */
/* The statistics of `fleetburn compare`: a part's change against its own baseline value and
 * against the fleet's robust spread of changes, so that one slow part is named, a fleet that
 * moved as a whole is reported once, and the ordinary scatter of repeated measurements is
 * neither (regress.h has the rules, docs/regressions.md the reasons for the constants). */
#include "regress.h"

#include "robust.h"
#include "common/util.h"

#include <math.h>
#include <stdlib.h>

/* Standard error of the median of n normal values, in standard deviations: sqrt(pi/2)/sqrt(n). */
#define S_MEDIAN_SE 1.2533

double fb_regress_change(double base, double now)
{
    if (isnan(base) || isnan(now) || base == 0)
        return NAN;
    return (now - base) / fabs(base);
}

double fb_regress_score(double base, double now, double offset)
{
    if (isnan(base) || isnan(now))
        return NAN;
    if (now == base)
        return 0;
    double b = base + offset, n = now + offset, s;
    if (b <= 0 || n <= 0)
        s = now > base ? FB_REGRESS_SCORE_CAP : -FB_REGRESS_SCORE_CAP;
    else
        s = log(n / b);
    return s > FB_REGRESS_SCORE_CAP    ? FB_REGRESS_SCORE_CAP
           : s < -FB_REGRESS_SCORE_CAP ? -FB_REGRESS_SCORE_CAP
                                       : s;
}

double fb_regress_loss(fb_better_t better, double change)
{
    switch (better) {
    case FB_BETTER_HIGHER:
        return -change;
    case FB_BETTER_LOWER:
        return change;
    case FB_BETTER_NEITHER:
        break;
    }
    return fabs(change);
}

/* The change held to the tolerance: relative, and infinite when a value left or reached 0. */
static double s_own_change(double base, double now)
{
    if (base == 0)
        return now == 0 ? 0 : now > 0 ? INFINITY : -INFINITY;
    return (now - base) / fabs(base);
}

/* Worse, better or the same by the tolerance alone. */
static fb_call_t s_by_tolerance(const fb_regress_limits_t *lim, double loss)
{
    if (loss > lim->tolerance)
        return FB_CALL_WORSE;
    if (lim->better != FB_BETTER_NEITHER && -loss > lim->tolerance)
        return FB_CALL_BETTER;
    return FB_CALL_SAME;
}

/* A part of a fleet of at least FB_REGRESS_MIN_FLEET: beyond the tolerance (own), and its score
 * standing out from the fleet's median score by more than the threshold in the same direction. */
static fb_call_t s_by_fleet(const fb_regress_limits_t *lim, const fb_regress_fleet_t *f,
                            fb_call_t own, double score)
{
    if (own == FB_CALL_SAME)
        return own;
    double off = fb_regress_loss(lim->better, score - f->score_median);
    if (own == FB_CALL_WORSE && off > f->threshold)
        return own;
    if (own == FB_CALL_BETTER && -off > f->threshold)
        return own;
    return FB_CALL_SAME;
}

/* The fleet as a whole: its median change beyond the tolerance, and its median score beyond what
 * the scatter of n values lets a median wander by chance. */
static fb_call_t s_shift(const fb_regress_limits_t *lim, const fb_regress_fleet_t *f)
{
    if (fabs(f->now_median - f->base_median) < lim->min_delta)
        return FB_CALL_SAME;
    double se = S_MEDIAN_SE * FB_ROBUST_MAD_SCALE * f->score_mad / sqrt((double)f->n);
    if (fabs(f->score_median) <= FB_REGRESS_SHIFT_Z * se)
        return FB_CALL_SAME;
    double change = isnan(f->median) ? s_own_change(f->base_median, f->now_median) : f->median;
    return s_by_tolerance(lim, fb_regress_loss(lim->better, change));
}

void fb_regress_judge(const fb_regress_limits_t *lim, const double *base, const double *now,
                      size_t n, fb_regress_fleet_t *fleet, fb_call_t *calls)
{
    *fleet = (fb_regress_fleet_t){.n = n,
                                  .median = NAN,
                                  .score_median = NAN,
                                  .score_mad = NAN,
                                  .threshold = NAN,
                                  .base_median = NAN,
                                  .now_median = NAN};
    if (n == 0)
        return;
    double *score = xmalloc(n * sizeof *score), *change = xmalloc(n * sizeof *change);
    for (size_t i = 0; i < n; i++) {
        score[i] = fb_regress_score(base[i], now[i], lim->min_delta);
        change[i] = fb_regress_change(base[i], now[i]);
    }
    fleet->median = fb_robust_median(change, n); /* NaN changes (base 0) are left out */
    fleet->score_median = fb_robust_median(score, n);
    fleet->score_mad = fb_robust_mad(score, n);
    fleet->base_median = fb_robust_median(base, n);
    fleet->now_median = fb_robust_median(now, n);
    fleet->by_fleet = n >= FB_REGRESS_MIN_FLEET;
    if (fleet->by_fleet) {
        double spread = FB_REGRESS_K * FB_ROBUST_MAD_SCALE * fleet->score_mad;
        /* The floor: when the fleet agrees closely (MAD near 0), a part stands out once it is
         * further from the fleet than the tolerance the metric allows against its own past. */
        double floor = log1p(lim->tolerance);
        fleet->threshold = spread > floor ? spread : floor;
        fleet->shift = s_shift(lim, fleet);
    }
    for (size_t i = 0; i < n; i++) {
        fb_call_t own = FB_CALL_SAME, call = FB_CALL_SAME;
        if (fabs(now[i] - base[i]) >= lim->min_delta && !isnan(score[i])) {
            own = s_by_tolerance(lim, fb_regress_loss(lim->better, s_own_change(base[i], now[i])));
            call = fleet->by_fleet ? s_by_fleet(lim, fleet, own, score[i]) : own;
        }
        fleet->n_worse += own == FB_CALL_WORSE;
        fleet->n_better += own == FB_CALL_BETTER;
        if (calls)
            calls[i] = call;
    }
    free(score);
    free(change);
}
