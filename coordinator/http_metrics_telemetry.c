/* SPDX-License-Identifier: Apache-2.0 */
/* The telemetry gauges of /metrics: fleetburn_telemetry{node,device,quantity,unit}, the mean of
 * the latest bucket (store_telemetry.h) of every series of the campaigns running now, within the
 * last S_RECENT_MS: a campaign that ended, or a node gone quiet, stops being exported instead of
 * showing a stale value. Outside campaigns dcgm-exporter is the GPU's gauge. */
#include "http_serve.h"
#include "store_telemetry.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How far back the latest bucket of a series may start. */
#define S_RECENT_MS 120000
/* Running campaigns read at most (a coordinator runs a few at once). */
#define S_CAMPAIGNS_MAX 16

typedef struct {
    char *ids[S_CAMPAIGNS_MAX];
    size_t n;
} s_running_t;

static int s_running(const store_campaign_t *c, void *arg)
{
    s_running_t *r = arg;
    if (c->state && !strcmp(c->state, "running") && r->n < S_CAMPAIGNS_MAX)
        r->ids[r->n++] = xstrdup(c->id);
    return 0;
}

typedef struct {
    FILE *out;
    char *node, *device, *quantity, *unit; /* the series being read */
    double value;
    bool have;
} s_latest_t;

static void s_label(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '\\' || *p == '"')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fputc('?', out);
        else
            fputc(*p, out);
    }
}

static void s_emit(s_latest_t *l)
{
    if (!l->have)
        return;
    fputs("fleetburn_telemetry{node=\"", l->out);
    s_label(l->out, l->node);
    fputs("\",device=\"", l->out);
    s_label(l->out, l->device);
    fputs("\",quantity=\"", l->out);
    s_label(l->out, l->quantity);
    fputs("\",unit=\"", l->out);
    s_label(l->out, l->unit);
    fprintf(l->out, "\"} %.15g\n", l->value);
    free(l->node);
    free(l->device);
    free(l->quantity);
    free(l->unit);
    l->have = false;
}

/* Rows come ordered by node, device, quantity, time: the last row of a series is its latest. */
static int s_row(const store_telemetry_t *row, void *arg)
{
    s_latest_t *l = arg;
    if (!isfinite(row->mean))
        return 0;
    if (l->have && (strcmp(l->node, row->node) || strcmp(l->device, row->device) ||
                    strcmp(l->quantity, row->quantity)))
        s_emit(l);
    if (!l->have) {
        l->node = xstrdup(row->node);
        l->device = xstrdup(row->device ? row->device : "");
        l->quantity = xstrdup(row->quantity);
        l->unit = xstrdup(row->unit ? row->unit : "");
        l->have = true;
    }
    l->value = row->mean;
    return 0;
}

int http_metrics_telemetry(FILE *out, store_t *store)
{
    fputs("# HELP fleetburn_telemetry The latest telemetry of each device and quantity in the "
          "campaigns running (mean of its latest bucket, at most 2 minutes old).\n"
          "# TYPE fleetburn_telemetry gauge\n",
          out);
    s_running_t running = {0};
    int rc = store_campaign_foreach(store, s_running, &running);
    uint64_t now = fb_now_ms();
    for (size_t k = 0; k < running.n && !rc; k++) {
        s_latest_t l = {.out = out};
        store_telemetry_filter_t filter = {.campaign_id = running.ids[k],
                                           .from_ms = now > S_RECENT_MS ? now - S_RECENT_MS : 0};
        rc = store_telemetry_foreach(store, &filter, s_row, &l);
        s_emit(&l);
    }
    for (size_t k = 0; k < running.n; k++)
        free(running.ids[k]);
    return rc;
}
