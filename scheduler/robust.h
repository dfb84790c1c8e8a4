/* SPDX-License-Identifier: Apache-2.0 */
/* Robust statistics for fleet-relative judgement: median, median absolute deviation (MAD) and
 * the robust z-score that says how far one value sits below the rest of its class. Pure
 * functions, no I/O; the input arrays are never modified (the helpers sort private copies). */
#ifndef FB_ROBUST_H
#define FB_ROBUST_H

#include <stddef.h>

/* Consistency constant: 1.4826 * MAD estimates the standard deviation of normal data. */
#define FB_ROBUST_MAD_SCALE 1.4826

/* Median of n values (mean of the two middle ones for even n). NaN when n == 0 or values is
 * NULL. NaN inputs are ignored; all-NaN gives NaN. */
double fb_robust_median(const double *values, size_t n);
/* Median absolute deviation from the median (unscaled). NaN when there are no values. */
double fb_robust_mad(const double *values, size_t n);
/* How far value lies BELOW its class, in robust standard deviations:
 *     (median - value) / (1.4826 * MAD).
 * Positive = slower/lower than the class. Guards: NaN when the class has fewer than 3 values or
 * value is NaN. The scale is at least 1% of |median| (1e-12 when the median is 0): a class of
 * identical values does not divide by zero, and measurement jitter below 1% never scores high. */
double fb_robust_score(double value, const double *class_values, size_t n);
/* The same score against a precomputed class median and (unscaled) MAD, for scoring many values
 * against one class. NaN when any input is NaN. */
double fb_robust_score_from(double value, double median, double mad);

#endif
