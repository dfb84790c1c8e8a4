/* SPDX-License-Identifier: Apache-2.0 */
/* The plan of an rdmabw run and the arithmetic of its results, with no verbs in sight: the
 * message sizes, the order of steps both members follow in lockstep, the data pattern written and
 * checked, bandwidth from completion timestamps (min, average and peak, the way ib_write_bw
 * reports them) and latency percentiles. Both members compute the same plan from the same
 * parameters, so it is never sent. */
#ifndef FB_RDMA_SWEEP_H
#define FB_RDMA_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    RDMA_MODE_WRITE = 0,
    RDMA_MODE_READ = 1,
    RDMA_MODE_SEND = 2,
    RDMA_N_MODES = 3,
    RDMA_MODE_LAT = 3, /* write ping-pong (ib_write_lat) */
} rdma_mode_t;

/* "write", "read", "send", "lat". */
const char *rdma_mode_name(rdma_mode_t m);
/* The mode names in the order of the enum, NULL-terminated (for fb_parse_name_list). */
extern const char *const rdma_mode_names[];

/* The largest message rdmabw sends: InfiniBand allows 2 GiB, HCAs often 1 GiB. */
#define RDMA_MAX_MESSAGE (UINT64_C(1) << 30)
#define RDMA_MAX_SIZES 64

/* min, 2*min, 4*min ... up to max, and max itself when the doubling does not land on it.
 * Returns the count, or -EINVAL when min is 0, min > max or max > RDMA_MAX_MESSAGE. */
int rdma_sizes(uint64_t min, uint64_t max, uint64_t *out, size_t cap);

/* One step of the run. In a pair, `active` is the rank that posts the operations (the writer,
 * the reader, the sender) and the other one is passive; in loopback it names the queue pair.
 * Latency steps have both sides active in turn. */
typedef struct {
    rdma_mode_t mode;
    unsigned active;
    uint64_t size;
    uint64_t seed; /* of the data pattern: differs between steps so stale data never passes */
} rdma_step_t;

/* Bandwidth steps for every mode, both directions (rank 0 active first; loopback: one
 * direction), every size; then one latency step at lat_size when lat_iters > 0. Returns the
 * count (at most cap). */
size_t rdma_schedule(const rdma_mode_t *modes, size_t n_modes, const uint64_t *sizes,
                     size_t n_sizes, bool loopback, bool latency, uint64_t lat_size,
                     rdma_step_t *out, size_t cap);

/* How many message slots a region of `region` bytes holds for messages of `size` bytes, at most
 * `depth` (operations cycle over the slots, so the last `slots` messages are what is checked). */
uint64_t rdma_slots(uint64_t region, uint64_t size, uint64_t depth);

/* The byte at offset i of every message of a step. */
static inline uint8_t rdma_pattern_byte(uint64_t seed, uint64_t i)
{
    uint64_t x = (i >> 3) * 0x9e3779b97f4a7c15ull ^ seed;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return (uint8_t)(x >> (8 * (i & 7)));
}
/* Fills buf with one message of len bytes. complement: every byte inverted (the poison a sink
 * is cleared with, so that any byte not written is caught). */
void rdma_pattern_fill(uint8_t *buf, uint64_t len, uint64_t seed, bool complement);
/* Checks one message. Returns the number of bytes that differ; the first one's offset, expected
 * and actual values go to the out parameters (any may be NULL). */
uint64_t rdma_pattern_check(const uint8_t *buf, uint64_t len, uint64_t seed, uint64_t *first,
                            uint8_t *expected, uint8_t *actual);

/* ---- bandwidth ------------------------------------------------------------------------------- */

/* A run of `ops` operations of `size` bytes. Completions were timestamped (ns, monotonic) as
 * they were reaped: t[k] is when ops_done[k] operations in all had completed (one stamp per poll
 * that reaped any, since completions reaped together carry no timing between them). The average
 * is what ib_write_bw reports as "BW average": all bytes over the time from the first post (t0)
 * to the last completion. Min and peak are over windows between stamps, each at least
 * max(min_window_ns, (t[n-1] - t[0]) / windows) long, measured completion to completion so that
 * the pipeline fill at the start does not count as a slow window; a short window would measure
 * the completion batching (one ACK for many messages) instead of the link. With no whole window,
 * min and peak equal the average. Gb/s are 10^9 bits per second. */
typedef struct {
    double min_gbps, avg_gbps, peak_gbps;
    double msg_rate_mps; /* millions of messages per second, average */
    uint64_t bytes;
    double seconds;
} rdma_bw_t;

void rdma_bw_compute(uint64_t size, uint64_t t0, const uint64_t *t, const uint64_t *ops_done,
                     size_t n, unsigned windows, uint64_t min_window_ns, rdma_bw_t *out);

/* ---- latency --------------------------------------------------------------------------------- */

typedef struct {
    double min_us, avg_us, p50_us, p99_us, p999_us, max_us;
    size_t n;
} rdma_lat_t;

/* Sorts samples_us[0..n) in place and takes nearest-rank percentiles. n == 0 gives zeros. */
void rdma_lat_compute(double *samples_us, size_t n, rdma_lat_t *out);

#endif
