/* SPDX-License-Identifier: Apache-2.0 */
/* Telemetry as data (docs/timeline-store.md "Telemetry"): the samples of the agents' TELEMETRY
 * events ("gpu0.temp_c" = 61 C) are split into device and quantity, folded into 10 s buckets
 * (tseries.h) and written to the store's telemetry tables as the buckets close. A timer writes the
 * buckets of series that went quiet and applies retention (older buckets merged into wider ones),
 * so that a night of a thousand nodes stays a bounded number of rows. Samples are not
 * acknowledged: while the store cannot be written they are counted and dropped. */
#include "coord_internal.h"
#include "store_telemetry.h"
#include "tseries.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* How often quiet series are written and retention runs. */
#define S_TICK_MS 5000u
#define S_RETAIN_EVERY_MS 60000u
/* A series without a sample for this long has its open bucket written. */
#define S_QUIET_MS (2u * TSERIES_BUCKET_MS)
/* An agent's sample time this far from the coordinator's clock is replaced by the coordinator's. */
#define S_MAX_SKEW_MS (24u * 3600u * 1000u)

struct coord_telemetry {
    coord_t *coord;
    tseries_agg_t *agg;
    store_telemetry_t *pending; /* closed buckets not yet written; strings owned */
    size_t n_pending, cap_pending;
    uv_timer_t timer;
    uint64_t last_retain;                 /* monotonic ms */
    uint64_t n_dropped;                   /* samples dropped: store down, too many series */
    fb_ratelimit_t drop_log;
};

static void s_on_bucket(const tseries_key_t *key, const tseries_bucket_t *b, void *arg)
{
    struct coord_telemetry *t = arg;
    if (t->n_pending == t->cap_pending) {
        t->cap_pending = t->cap_pending ? t->cap_pending * 2 : 256;
        t->pending = xrealloc(t->pending, t->cap_pending * sizeof *t->pending);
    }
    t->pending[t->n_pending++] = (store_telemetry_t){
        .campaign_id = xstrdup(key->campaign_id),
        .node = xstrdup(key->node),
        .device = xstrdup(key->device),
        .quantity = xstrdup(key->quantity),
        .unit = xstrdup(key->unit),
        .time_ms = b->time_ms,
        .span_ms = b->span_ms,
        .count = b->count,
        .min = b->min,
        .max = b->max,
        .mean = tseries_bucket_mean(b),
    };
}

static void s_pending_clear(struct coord_telemetry *t)
{
    for (size_t i = 0; i < t->n_pending; i++) {
        store_telemetry_t *r = &t->pending[i];
        free((char *)r->campaign_id);
        free((char *)r->node);
        free((char *)r->device);
        free((char *)r->quantity);
        free((char *)r->unit);
    }
    t->n_pending = 0;
}

static void s_dropped(struct coord_telemetry *t, size_t n, const char *why)
{
    t->n_dropped += n;
    uint64_t held = 0;
    if (fb_ratelimit_ok(&t->drop_log, fb_mono_ms(), &held))
        log_warn("telemetry: %zu sample(s) dropped: %s (%llu dropped in all)", n, why,
                 (unsigned long long)t->n_dropped);
}

/* Writes the closed buckets (joining the loop iteration's deferred transaction). */
static void s_write(struct coord_telemetry *t)
{
    if (!t->n_pending)
        return;
    coord_t *self = t->coord;
    if (self->store_down) {
        s_dropped(t, t->n_pending, "the store cannot be written");
    } else {
        int rc = store_telemetry_insert(self->store, t->pending, t->n_pending);
        if (rc && rc != -ENOENT)
            log_error("cannot store telemetry: %s", store_errmsg(self->store));
    }
    s_pending_clear(t);
}

static void s_on_tick(uv_timer_t *h)
{
    struct coord_telemetry *t = h->data;
    uint64_t now = fb_mono_ms();
    tseries_agg_flush(t->agg, NULL, NULL, now > S_QUIET_MS ? now - S_QUIET_MS : 0);
    s_write(t);
    if (now - t->last_retain >= S_RETAIN_EVERY_MS && !t->coord->store_down) {
        t->last_retain = now;
        size_t merged = 0;
        if (store_telemetry_retain(t->coord->store, fb_now_ms(), &merged))
            log_error("telemetry retention: %s", store_errmsg(t->coord->store));
        else if (merged)
            log_debug("telemetry retention merged %zu bucket(s)", merged);
    }
}

void coord_telemetry_init(coord_t *self)
{
    struct coord_telemetry *t = xcalloc(1, sizeof *t);
    t->coord = self;
    t->agg = tseries_agg_new(TSERIES_BUCKET_MS, s_on_bucket, t);
    t->drop_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(60000);
    t->last_retain = fb_mono_ms();
    uv_timer_init(self->loop, &t->timer);
    t->timer.data = t;
    uv_timer_start(&t->timer, s_on_tick, S_TICK_MS, S_TICK_MS);
    uv_unref((uv_handle_t *)&t->timer); /* never what keeps a loop running */
    self->telemetry = t;
}

static void s_free_on_close(uv_handle_t *h)
{
    free(h->data);
}

void coord_telemetry_close(coord_t *self)
{
    struct coord_telemetry *t = self->telemetry;
    if (!t)
        return;
    self->telemetry = NULL;
    tseries_agg_flush(t->agg, NULL, NULL, UINT64_MAX);
    s_write(t);
    tseries_agg_destroy(&t->agg);
    free(t->pending);
    uv_close((uv_handle_t *)&t->timer, s_free_on_close);
}

void coord_telemetry_event(coord_t *self, const char *campaign_id, const char *node,
                           const Fleetburn__TaskEvent *ev)
{
    struct coord_telemetry *t = self->telemetry;
    if (!t || !campaign_id)
        return;
    uint64_t wall = fb_now_ms(), mono = fb_mono_ms();
    uint64_t time_ms = ev->time_ms;
    if (!time_ms || time_ms + S_MAX_SKEW_MS < wall || time_ms > wall + S_MAX_SKEW_MS)
        time_ms = wall;
    size_t refused = 0;
    for (size_t i = 0; i < ev->n_samples; i++) {
        const Fleetburn__Metric *m = ev->samples[i];
        char device[64], quantity[128];
        if (!tseries_split_name(m->name, device, sizeof device, quantity, sizeof quantity)) {
            refused++;
            continue;
        }
        tseries_key_t key = {campaign_id, node, device, quantity, m->unit};
        if (tseries_agg_add(t->agg, &key, time_ms, m->value, mono) == -ENOSPC)
            refused++;
    }
    if (refused)
        s_dropped(t, refused, "a name too long, or more series than a node may have");
    s_write(t);
}

void coord_telemetry_node_done(coord_t *self, const char *campaign_id, const char *node)
{
    struct coord_telemetry *t = self->telemetry;
    if (!t || !campaign_id)
        return;
    tseries_agg_flush(t->agg, campaign_id, node, UINT64_MAX);
    s_write(t);
}
