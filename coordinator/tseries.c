/* SPDX-License-Identifier: Apache-2.0 */
/* Telemetry downsampling (tseries.h): fixed-width buckets of count, min, max and mean, one open
 * bucket per series, and the retention tiers the store's compaction applies. The open buckets
 * live in a string map keyed by "campaign\tnode\tdevice\tquantity"; a second map counts the open
 * series of each (campaign, node), which bounds what one node can make the coordinator hold. */
#include "tseries.h"
#include "common/strmap.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tseries_bucket_init(tseries_bucket_t *b, uint64_t span_ms, uint64_t t, double v)
{
    b->span_ms = span_ms ? span_ms : 1;
    b->time_ms = tseries_bucket_start(t, b->span_ms);
    b->count = 1;
    b->min = b->max = b->sum = v;
}

void tseries_bucket_add(tseries_bucket_t *b, double v)
{
    b->count++;
    b->sum += v;
    if (v < b->min)
        b->min = v;
    if (v > b->max)
        b->max = v;
}

void tseries_bucket_merge(tseries_bucket_t *into, const tseries_bucket_t *from)
{
    if (!from->count)
        return;
    if (!into->count) {
        uint64_t start = into->time_ms, span = into->span_ms;
        *into = *from;
        into->time_ms = start;
        into->span_ms = span > from->span_ms ? span : from->span_ms;
        return;
    }
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
    if (from->span_ms > into->span_ms)
        into->span_ms = from->span_ms;
}

double tseries_bucket_mean(const tseries_bucket_t *b)
{
    return b->count ? b->sum / (double)b->count : NAN;
}

uint64_t tseries_bucket_start(uint64_t t, uint64_t span_ms)
{
    return span_ms ? t - t % span_ms : t;
}

bool tseries_split_name(const char *name, char *dev, size_t dev_len, char *qty, size_t qty_len)
{
    if (!name || !*name || !dev_len || !qty_len)
        return false;
    const char *dot = strchr(name, '.');
    size_t dlen = dot ? (size_t)(dot - name) : 0;
    bool is_device = dot && dlen > 0 && dot[1] && name[dlen - 1] >= '0' && name[dlen - 1] <= '9';
    const char *q = is_device ? dot + 1 : name;
    if (!is_device)
        dlen = 0;
    if (dlen >= dev_len || strlen(q) >= qty_len)
        return false;
    memcpy(dev, name, dlen);
    dev[dlen] = '\0';
    strcpy(qty, q);
    return true;
}

/* Fine detail while it is fresh, coarse history: a night of 12 hours keeps about 300 buckets
 * per series (docs/timeline-store.md states the bytes this costs). */
static const tseries_tier_t s_tiers[] = {
    {0, TSERIES_BUCKET_MS},
    {15 * 60 * 1000ull, 60 * 1000ull},
    {2 * 3600 * 1000ull, 300 * 1000ull},
};

const tseries_tier_t *tseries_tiers(size_t *n)
{
    *n = FB_ARRAY_LEN(s_tiers);
    return s_tiers;
}

uint64_t tseries_span_for_age(const tseries_tier_t *tiers, size_t n, uint64_t age_ms)
{
    uint64_t span = n ? tiers[0].span_ms : TSERIES_BUCKET_MS;
    for (size_t i = 0; i < n; i++)
        if (age_ms >= tiers[i].after_ms)
            span = tiers[i].span_ms;
    return span;
}

/* ---- The aggregator --------------------------------------------------------------------- */

typedef struct {
    char *campaign_id, *node, *device, *quantity, *unit;
    char *node_key; /* "campaign\tnode", for the per-node count */
    tseries_bucket_t open;
    uint64_t touched; /* caller's monotonic time of the last sample */
} s_series_t;

struct tseries_agg {
    uint64_t span_ms;
    tseries_emit_fn emit;
    void *arg;
    fb_strmap_t *series;   /* key -> s_series_t */
    fb_strmap_t *per_node; /* "campaign\tnode" -> open series count, as a pointer-sized int */
};

tseries_agg_t *tseries_agg_new(uint64_t span_ms, tseries_emit_fn emit, void *arg)
{
    tseries_agg_t *self = xcalloc(1, sizeof *self);
    self->span_ms = span_ms ? span_ms : TSERIES_BUCKET_MS;
    self->emit = emit;
    self->arg = arg;
    self->series = fb_strmap_new();
    self->per_node = fb_strmap_new();
    return self;
}

static void s_series_free(s_series_t *s)
{
    free(s->campaign_id);
    free(s->node);
    free(s->device);
    free(s->quantity);
    free(s->unit);
    free(s->node_key);
    free(s);
}

void tseries_agg_destroy(tseries_agg_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tseries_agg_t *self = *self_p;
    *self_p = NULL;
    size_t pos = 0;
    void *value;
    while (fb_strmap_next(self->series, &pos, NULL, &value))
        s_series_free(value);
    fb_strmap_destroy(&self->series);
    fb_strmap_destroy(&self->per_node);
    free(self);
}

static void s_emit(tseries_agg_t *self, const s_series_t *s, const tseries_bucket_t *b)
{
    tseries_key_t key = {s->campaign_id, s->node, s->device, s->quantity, s->unit};
    if (self->emit)
        self->emit(&key, b, self->arg);
}

static size_t s_node_count(const tseries_agg_t *self, const char *node_key)
{
    return (size_t)(uintptr_t)fb_strmap_get(self->per_node, node_key);
}

static void s_node_count_set(tseries_agg_t *self, const char *node_key, size_t n)
{
    if (n)
        fb_strmap_put(self->per_node, node_key, (void *)(uintptr_t)n);
    else
        fb_strmap_remove(self->per_node, node_key);
}

static s_series_t *s_series_new(tseries_agg_t *self, const tseries_key_t *key, const char *node_key)
{
    s_series_t *s = xcalloc(1, sizeof *s);
    s->campaign_id = xstrdup(key->campaign_id);
    s->node = xstrdup(key->node);
    s->device = xstrdup(key->device ? key->device : "");
    s->quantity = xstrdup(key->quantity);
    s->unit = xstrdup(key->unit ? key->unit : "");
    s->node_key = xstrdup(node_key);
    return s;
}

int tseries_agg_add(tseries_agg_t *self, const tseries_key_t *key, uint64_t t, double v,
                    uint64_t now)
{
    if (!isfinite(v))
        return -ERANGE;
    char *node_key = xasprintf("%s\t%s", key->campaign_id, key->node);
    char *skey = xasprintf("%s\t%s\t%s", node_key, key->device ? key->device : "", key->quantity);
    s_series_t *s = fb_strmap_get(self->series, skey);
    int rc = 0;
    if (!s) {
        size_t n = s_node_count(self, node_key);
        if (n >= TSERIES_MAX_SERIES_PER_NODE) {
            rc = -ENOSPC;
            goto out;
        }
        s = s_series_new(self, key, node_key);
        tseries_bucket_init(&s->open, self->span_ms, t, v);
        fb_strmap_put(self->series, skey, s);
        s_node_count_set(self, node_key, n + 1);
    } else if (tseries_bucket_start(t, self->span_ms) == s->open.time_ms) {
        tseries_bucket_add(&s->open, v);
    } else if (t > s->open.time_ms) {
        s_emit(self, s, &s->open); /* the open bucket is complete */
        tseries_bucket_init(&s->open, self->span_ms, t, v);
    } else {
        tseries_bucket_t late; /* an older bucket: stored on its own, merged by the store */
        tseries_bucket_init(&late, self->span_ms, t, v);
        s_emit(self, s, &late);
    }
    s->touched = now;
out:
    free(skey);
    free(node_key);
    return rc;
}

size_t tseries_agg_flush(tseries_agg_t *self, const char *campaign_id, const char *node,
                         uint64_t idle_since)
{
    size_t pos = 0, n_keys = 0, cap = 0;
    const char *key;
    void *value;
    char **keys = NULL;
    while (fb_strmap_next(self->series, &pos, &key, &value)) {
        const s_series_t *s = value;
        if ((campaign_id && strcmp(s->campaign_id, campaign_id)) || (node && strcmp(s->node, node)))
            continue;
        if (idle_since != UINT64_MAX && s->touched >= idle_since)
            continue;
        if (n_keys == cap) {
            cap = cap ? cap * 2 : 64;
            keys = xrealloc(keys, cap * sizeof *keys);
        }
        keys[n_keys++] = xstrdup(key);
    }
    for (size_t i = 0; i < n_keys; i++) {
        s_series_t *s = fb_strmap_remove(self->series, keys[i]);
        s_emit(self, s, &s->open);
        s_node_count_set(self, s->node_key, s_node_count(self, s->node_key) - 1);
        s_series_free(s);
        free(keys[i]);
    }
    free(keys);
    return n_keys;
}

size_t tseries_agg_size(const tseries_agg_t *self)
{
    return fb_strmap_size(self->series);
}
