/* SPDX-License-Identifier: Apache-2.0 */
/* Median, MAD and the robust z-score used to call a node slow against its hardware class: a
 * few outliers (the slow parts we look for) do not move the median or the MAD, where they
 * would drag a mean and standard deviation towards themselves. */
#include "robust.h"

#include "common/util.h"

#include <math.h>
#include <stdlib.h>

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Copies the non-NaN values into a sorted heap array; returns the count. */
static size_t s_sorted_copy(const double *values, size_t n, double **out)
{
    double *v = xmalloc((n ? n : 1) * sizeof *v);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(values[i]))
            v[m++] = values[i];
    qsort(v, m, sizeof *v, s_cmp_double);
    *out = v;
    return m;
}

static double s_median_sorted(const double *v, size_t m)
{
    if (m == 0)
        return NAN;
    return (m % 2) ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

/* The median of the non-NaN values (NAN when there are none, or no values at all), with their
 * sorted copy in *v (heap, NULL without values; free it) and its length in *m. */
static double s_median_copy(const double *values, size_t n, double **v, size_t *m)
{
    *v = NULL;
    *m = values && n ? s_sorted_copy(values, n, v) : 0;
    return s_median_sorted(*v, *m);
}

double fb_robust_median(const double *values, size_t n)
{
    double *v;
    size_t m;
    double med = s_median_copy(values, n, &v, &m);
    free(v);
    return med;
}

double fb_robust_mad(const double *values, size_t n)
{
    double *v;
    size_t m;
    double med = s_median_copy(values, n, &v, &m);
    for (size_t i = 0; i < m; i++)
        v[i] = fabs(v[i] - med);
    if (m) /* v is NULL without values */
        qsort(v, m, sizeof *v, s_cmp_double);
    double mad = s_median_sorted(v, m);
    free(v);
    return mad;
}

double fb_robust_score(double value, const double *class_values, size_t n)
{
    if (isnan(value) || !class_values || n < 3)
        return NAN;
    return fb_robust_score_from(value, fb_robust_median(class_values, n),
                                fb_robust_mad(class_values, n));
}

double fb_robust_score_from(double value, double med, double mad)
{
    if (isnan(value) || isnan(med) || isnan(mad))
        return NAN;
    double scale = FB_ROBUST_MAD_SCALE * mad;
    double floor_scale = 0.01 * fabs(med);
    if (floor_scale < 1e-12)
        floor_scale = 1e-12;
    if (scale < floor_scale)
        scale = floor_scale;
    return (med - value) / scale;
}
