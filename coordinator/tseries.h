/* SPDX-License-Identifier: Apache-2.0 */
/* Telemetry downsampling (docs/timeline-store.md, "Telemetry"): samples as workers send them
 * (a GPU's temperature, power, clocks about once a second) are folded into fixed-width buckets
 * that keep count, minimum, maximum and mean, so that a spike survives while the number of rows
 * stays bounded. Pure: no I/O, no clock; the caller passes times and writes what is emitted.
 *
 * A series is (campaign, node, device, quantity): `gpu3.power_w` from node07 is device `gpu3`,
 * quantity `power_w`. The aggregator holds one open bucket per series; a sample in a later bucket
 * closes (emits) the open one, and tseries_agg_flush emits buckets whose series went quiet. */
#ifndef FB_TSERIES_H
#define FB_TSERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bucket width at which samples are first stored. */
#define TSERIES_BUCKET_MS 10000u
/* Per (campaign, node): more distinct series than this are dropped (a worker cannot flood the
 * store with made-up names; 8 GPUs send about 80). */
#define TSERIES_MAX_SERIES_PER_NODE 512u

typedef struct {
    uint64_t time_ms; /* start, a multiple of span_ms */
    uint64_t span_ms; /* width */
    uint32_t count;   /* samples folded in */
    double min, max, sum;
} tseries_bucket_t;

/* A bucket of width span_ms holding the one sample (t, v). */
void tseries_bucket_init(tseries_bucket_t *b, uint64_t span_ms, uint64_t t, double v);
/* Folds sample v in (the caller checked that it falls in b). */
void tseries_bucket_add(tseries_bucket_t *b, double v);
/* Folds bucket from into into: counts add, extremes widen, the mean is weighted by count. The
 * width becomes the wider of the two; the start stays into's. */
void tseries_bucket_merge(tseries_bucket_t *into, const tseries_bucket_t *from);
double tseries_bucket_mean(const tseries_bucket_t *b);
/* The start of the bucket of width span_ms that holds t. */
uint64_t tseries_bucket_start(uint64_t t, uint64_t span_ms);

/* "gpu3.power_w" -> device "gpu3", quantity "power_w": the part before the first dot is a device
 * when it ends in a digit (gpu0, mlx5_1, nvme0); otherwise the device is "" (the node itself) and
 * the quantity is the whole name ("netbw.rx_gbps_1s"). Writes into dev and qty (truncated to
 * their sizes); false when name is empty or a part does not fit. */
bool tseries_split_name(const char *name, char *dev, size_t dev_len, char *qty, size_t qty_len);

/* Retention: buckets older than `after_ms` (behind the newest time the caller knows) are merged
 * into buckets of `span_ms`. The tiers, finest first, each wider and later than the one before. */
typedef struct {
    uint64_t after_ms, span_ms;
} tseries_tier_t;

/* The tiers the coordinator applies (10 s buckets for the last 15 minutes, 60 s up to 2 hours,
 * 300 s beyond); *n gets their number. */
const tseries_tier_t *tseries_tiers(size_t *n);
/* The width a bucket as old as age_ms is kept at under tiers. */
uint64_t tseries_span_for_age(const tseries_tier_t *tiers, size_t n, uint64_t age_ms);

/* ---- The aggregator --------------------------------------------------------------------- */

typedef struct {
    const char *campaign_id, *node, *device, *quantity, *unit;
} tseries_key_t;

/* Called with every bucket that closes; key and bucket are borrowed for the call. */
typedef void (*tseries_emit_fn)(const tseries_key_t *key, const tseries_bucket_t *b, void *arg);

typedef struct tseries_agg tseries_agg_t;

tseries_agg_t *tseries_agg_new(uint64_t span_ms, tseries_emit_fn emit, void *arg);
/* Emits nothing: call tseries_agg_flush first to keep the open buckets. NULL-safe. */
void tseries_agg_destroy(tseries_agg_t **self_p);
/* Adds sample (t, v) of key; now is the caller's monotonic clock, for tseries_agg_flush. A
 * sample in a later bucket than the open one emits the open one first; a sample older than the
 * open bucket is emitted as a bucket of its own (the store merges it with what it has). Returns
 * 0, -ERANGE for a value that is not finite, -ENOSPC when the node has TSERIES_MAX_SERIES_PER_NODE
 * series already (the sample is dropped). */
int tseries_agg_add(tseries_agg_t *self, const tseries_key_t *key, uint64_t t, double v,
                    uint64_t now);
/* Emits and forgets the open buckets of series not added to since idle_since (monotonic; 
 * UINT64_MAX: all), only of campaign_id and node where they are not NULL. Returns how many. */
size_t tseries_agg_flush(tseries_agg_t *self, const char *campaign_id, const char *node,
                         uint64_t idle_since);
/* Open series. */
size_t tseries_agg_size(const tseries_agg_t *self);

#endif
