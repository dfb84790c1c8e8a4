/* SPDX-License-Identifier: Apache-2.0 */
/* The rdmabw plan (sizes and the lockstep order of steps), the data pattern and the arithmetic
 * of bandwidth and latency. Kept apart from the verbs code so that everything that decides a
 * number in the result is unit-tested on machines without an HCA. */
#include "rdma_sweep.h"

#include "common/rng.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const rdma_mode_names[] = {"write", "read", "send", NULL};

const char *rdma_mode_name(rdma_mode_t m)
{
    switch (m) {
    case RDMA_MODE_WRITE:
        return "write";
    case RDMA_MODE_READ:
        return "read";
    case RDMA_MODE_SEND:
        return "send";
    case RDMA_MODE_LAT:
        return "lat";
    }
    return "?";
}

int rdma_sizes(uint64_t min, uint64_t max, uint64_t *out, size_t cap)
{
    if (min == 0 || min > max || max > RDMA_MAX_MESSAGE)
        return -EINVAL;
    size_t n = 0;
    for (uint64_t s = min; s <= max && n < cap; s *= 2)
        out[n++] = s;
    if (n < cap && out[n - 1] != max)
        out[n++] = max;
    return (int)n;
}

size_t rdma_schedule(const rdma_mode_t *modes, size_t n_modes, const uint64_t *sizes,
                     size_t n_sizes, bool loopback, bool latency, uint64_t lat_size,
                     rdma_step_t *out, size_t cap)
{
    size_t n = 0;
    unsigned directions = loopback ? 1 : 2;
    for (size_t m = 0; m < n_modes; m++)
        for (unsigned d = 0; d < directions; d++)
            for (size_t s = 0; s < n_sizes; s++) {
                if (n == cap)
                    return n;
                out[n] = (rdma_step_t){modes[m], d, sizes[s], fb_mix64(n + 1)};
                n++;
            }
    if (latency && n < cap) {
        out[n] = (rdma_step_t){RDMA_MODE_LAT, 0, lat_size, fb_mix64(n + 1)};
        n++;
    }
    return n;
}

uint64_t rdma_slots(uint64_t region, uint64_t size, uint64_t depth)
{
    uint64_t slots = size ? region / size : 0;
    if (slots > depth)
        slots = depth;
    return slots ? slots : 1;
}

void rdma_pattern_fill(uint8_t *buf, uint64_t len, uint64_t seed, bool complement)
{
    uint8_t flip = complement ? 0xff : 0;
    for (uint64_t i = 0; i < len; i++)
        buf[i] = rdma_pattern_byte(seed, i) ^ flip;
}

uint64_t rdma_pattern_check(const uint8_t *buf, uint64_t len, uint64_t seed, uint64_t *first,
                            uint8_t *expected, uint8_t *actual)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint8_t want = rdma_pattern_byte(seed, i);
        if (buf[i] == want)
            continue;
        if (bad++ == 0) {
            if (first)
                *first = i;
            if (expected)
                *expected = want;
            if (actual)
                *actual = buf[i];
        }
    }
    return bad;
}

/* ---- bandwidth ------------------------------------------------------------------------------- */

static double s_gbps(uint64_t bytes, uint64_t ns)
{
    return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

void rdma_bw_compute(uint64_t size, uint64_t t0, const uint64_t *t, const uint64_t *ops_done,
                     size_t n, unsigned windows, uint64_t min_window_ns, rdma_bw_t *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return;
    uint64_t ops = ops_done[n - 1];
    uint64_t elapsed = t[n - 1] > t0 ? t[n - 1] - t0 : 0;
    out->bytes = ops * size;
    out->seconds = (double)elapsed / 1e9;
    out->avg_gbps = s_gbps(out->bytes, elapsed);
    out->msg_rate_mps = elapsed ? (double)ops / ((double)elapsed / 1e3) : 0.0;
    out->min_gbps = out->peak_gbps = out->avg_gbps;
    uint64_t span = t[n - 1] > t[0] ? t[n - 1] - t[0] : 0;
    uint64_t window = windows ? span / windows : span;
    if (window < min_window_ns)
        window = min_window_ns;
    if (window == 0)
        window = 1;
    /* Windows from one stamp to the first later one at least `window` further. */
    bool any = false;
    size_t from = 0;
    for (size_t k = 1; k < n; k++) {
        if (t[k] < t[from] + window)
            continue;
        double g = s_gbps((ops_done[k] - ops_done[from]) * size, t[k] - t[from]);
        if (!any || g < out->min_gbps)
            out->min_gbps = g;
        if (!any || g > out->peak_gbps)
            out->peak_gbps = g;
        any = true;
        from = k;
    }
}

/* ---- latency --------------------------------------------------------------------------------- */

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least permille/1000 of all samples at or below it.
 * Integer arithmetic: 0.99 * 100 in doubles is 99.00000000000001, which would round up. */
static double s_rank(const double *sorted, size_t n, unsigned permille)
{
    size_t idx = (n * permille + 999) / 1000;
    if (idx == 0)
        idx = 1;
    if (idx > n)
        idx = n;
    return sorted[idx - 1];
}

void rdma_lat_compute(double *samples_us, size_t n, rdma_lat_t *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return;
    qsort(samples_us, n, sizeof *samples_us, s_cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += samples_us[i];
    out->n = n;
    out->min_us = samples_us[0];
    out->max_us = samples_us[n - 1];
    out->avg_us = sum / (double)n;
    out->p50_us = s_rank(samples_us, n, 500);
    out->p99_us = s_rank(samples_us, n, 990);
    out->p999_us = s_rank(samples_us, n, 999);
}
