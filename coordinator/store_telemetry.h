/* SPDX-License-Identifier: Apache-2.0 */
/* Telemetry in the timeline store (store_telemetry.c; tables telemetry_series and telemetry,
 * docs/timeline-store.md "Telemetry"): typed samples of a campaign, one series per
 * (node, device, quantity), stored as downsampled buckets (coordinator/tseries.h) that keep
 * count, minimum, maximum and mean. Readers (`fleetburn timeline`, the reports, /metrics) ask
 * for the buckets of a campaign, optionally of one node, device or quantity, in a time range.
 *
 * Same rules as store.h: one connection per thread, 0 or negative errno, store_errmsg() on
 * failure; strings passed in are copied; rows handed to callbacks are borrowed for the call. */
#ifndef FB_STORE_TELEMETRY_H
#define FB_STORE_TELEMETRY_H

#include "store.h"

#include <stddef.h>
#include <stdint.h>

/* One bucket of one series: the samples between time_ms and time_ms + span_ms. */
typedef struct {
    const char *campaign_id;
    const char *node;
    const char *device;   /* "gpu0", "mlx5_1"; "" for the node itself */
    const char *quantity; /* "temp_c", "power_w", "sm_clock_mhz", "netbw.rx_gbps_1s" ... */
    const char *unit;     /* "C", "W", "MHz", "Gb/s"; "" when none */
    uint64_t time_ms;     /* bucket start, epoch ms (the agent's clock) */
    uint64_t span_ms;     /* bucket width: 10 s when stored, wider after compaction */
    uint32_t count;       /* samples in it */
    double min, max, mean;
} store_telemetry_t;

/* Stores n buckets in one transaction. A bucket that meets a stored one of its series at the same
 * time_ms is merged into it (counts add, extremes widen, means weighted), so late samples and
 * samples sent twice never make two rows. -ENOENT when a campaign is unknown (nothing stored),
 * -EINVAL for a bucket without campaign, node, quantity or samples. */
int store_telemetry_insert(store_t *self, const store_telemetry_t *rows, size_t n);

/* What to read; NULL strings and zero times match everything. */
typedef struct {
    const char *campaign_id; /* required */
    const char *node, *device, *quantity;
    uint64_t from_ms, to_ms; /* buckets that overlap [from_ms, to_ms) */
} store_telemetry_filter_t;

/* Calls cb for each bucket that matches, ordered by node, device, quantity, time, from one
 * snapshot. cb must not call into the store; a nonzero return stops and is returned.
 * -EINVAL without a campaign id. An unknown campaign has no buckets (0, cb never called). */
int store_telemetry_foreach(store_t *self, const store_telemetry_filter_t *filter,
                            int (*cb)(const store_telemetry_t *row, void *arg), void *arg);

/* Retention: merges every bucket narrower than span_ms that starts before before_ms (rounded
 * down to a multiple of span_ms) into buckets of span_ms, in one transaction. *merged_out (may be
 * NULL) gets the number of rows that went away. */
int store_telemetry_compact(store_t *self, uint64_t before_ms, uint64_t span_ms,
                            size_t *merged_out);

/* Applies the retention tiers (tseries_tiers: 10 s buckets for the last 15 minutes, 60 s up to 2
 * hours, 300 s beyond) to buckets older than their tier's age, counted back from now_ms. */
int store_telemetry_retain(store_t *self, uint64_t now_ms, size_t *merged_out);

#endif
