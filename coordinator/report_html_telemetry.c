/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report's telemetry plots per GPU, from the typed telemetry of the timeline
 * (store_telemetry.h: downsampled buckets with count, minimum, maximum and mean per node, device
 * and quantity). For each node shown, four charts over the campaign's time, one line per GPU and
 * quantity: power (and its limit), temperature (GPU and memory), clocks (SM and memory), and
 * throttling and error counters (throttle reasons, PCIe replays, ECC, XID; their maximum per
 * bucket, so a single event shows); then one chart of what the node itself reported (a
 * workload's own series: netbw's per-second rates, sleep's progress). A small fleet shows every
 * node; a large one the nodes that failed or stood out first, at most S_NODES, so that the section
 * stays a page and not a thousand. */
#include "report_html_internal.h"
#include "store_telemetry.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Nodes whose GPUs are plotted. */
#define S_NODES 4
/* Lines per chart (8 GPUs, some with two quantities of a family). */
#define S_SERIES_MAX 16

typedef enum { S_POWER, S_TEMP, S_CLOCK, S_ERRORS, S_NODE, S_FAMILIES } s_family_t;

static const struct {
    const char *title, *y_label;
} s_families[S_FAMILIES] = {
    [S_POWER] = {"power", "W"},
    [S_TEMP] = {"temperature", "\xc2\xb0"
                               "C"},
    [S_CLOCK] = {"clocks", "MHz"},
    [S_ERRORS] = {"throttling and errors", "count"},
    [S_NODE] = {"other telemetry", "value"},
};

/* The family a quantity belongs to, or -1 (plotted elsewhere or not at all). */
static int s_family_of(const char *q)
{
    if (strstr(q, "power"))
        return S_POWER;
    if (strstr(q, "temp"))
        return S_TEMP;
    if (strstr(q, "clock"))
        return S_CLOCK;
    if (strstr(q, "ecc") || strstr(q, "xid") || strstr(q, "err") || strstr(q, "retired") ||
        strstr(q, "remap") || strstr(q, "throttl") || strstr(q, "replay"))
        return S_ERRORS;
    return -1;
}

typedef struct {
    char *label; /* "gpu0 power_w" */
    double *x, *y;
    size_t n, cap;
    int family;
} s_series_t;

typedef struct {
    uint64_t t0;
    s_series_t *v;
    size_t n;
} s_node_data_t;

static s_series_t *s_series(s_node_data_t *d, const store_telemetry_t *row, int family)
{
    char *label = row->device && *row->device ? xasprintf("%s %s", row->device, row->quantity)
                                              : xstrdup(row->quantity);
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->v[i].label, label)) {
            free(label);
            return &d->v[i];
        }
    d->v = xrealloc(d->v, (d->n + 1) * sizeof *d->v);
    s_series_t *s = &d->v[d->n++];
    *s = (s_series_t){.label = label, .family = family};
    return s;
}

static int s_row(const store_telemetry_t *row, void *arg)
{
    s_node_data_t *d = arg;
    bool gpu = row->device && !strncmp(row->device, "gpu", 3);
    int family = gpu ? s_family_of(row->quantity) : S_NODE;
    if (family < 0 || !isfinite(row->mean))
        return 0;
    s_series_t *s = s_series(d, row, family);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->x = xrealloc(s->x, s->cap * sizeof *s->x);
        s->y = xrealloc(s->y, s->cap * sizeof *s->y);
    }
    /* At the bucket's start: the first bucket of a campaign starts before it, the last one may
     * end long after it (10 s buckets and wider). */
    s->x[s->n] = row->time_ms > d->t0 ? (double)(row->time_ms - d->t0) / 1000.0 : 0;
    s->y[s->n++] = family == S_ERRORS ? row->max : row->mean;
    return 0;
}

static void s_data_free(s_node_data_t *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].label);
        free(d->v[i].x);
        free(d->v[i].y);
    }
    free(d->v);
}

/* first: the first node drawn, whose charts get the section's element ids. */
static void s_node_charts(report_html_t *h, const char *node, const s_node_data_t *d, bool first)
{
    static const char *const css[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"};
    fputs("<h3>", h->out);
    report__html_text(h->out, node);
    fputs("</h3>", h->out);
    for (int f = 0; f < S_FAMILIES; f++) {
        report_html_series_t series[S_SERIES_MAX];
        size_t n = 0;
        for (size_t i = 0; i < d->n && n < S_SERIES_MAX; i++) {
            if (d->v[i].family != f)
                continue;
            series[n] = (report_html_series_t){d->v[i].label, d->v[i].x, d->v[i].y,
                                               d->v[i].n,     false,     css[n % 8]};
            n++;
        }
        if (!n)
            continue;
        char *title = xasprintf(f == S_NODE ? "%s: %s" : "%s: GPU %s", node, s_families[f].title);
        static const char *const ids[S_FAMILIES] = {"telemetry-power", NULL, NULL, NULL,
                                                    "telemetry-node"};
        report_html_chart_t chart = {.id = first ? ids[f] : NULL,
                                     .title = title,
                                     .x_label = "since the campaign started",
                                     .y_label = s_families[f].y_label,
                                     .x_time = true,
                                     .width = 620,
                                     .height = 220};
        report__html_line_chart(h->out, &chart, series, n);
        free(title);
    }
}

/* The nodes to plot: of interest first, then by name; at most S_NODES. */
static size_t s_pick_nodes(const report_html_t *h, const char **out)
{
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < h->n_nodes && n < S_NODES; i++)
            if (h->nodes[i].of_interest == (pass == 0))
                out[n++] = h->nodes[i].name;
    return n;
}

/* Whether the campaign ran a GPU workload: then a missing telemetry is worth saying. */
static bool s_gpu_campaign(const report_html_t *h)
{
    static const char *const gpu[] = {"gpuburn", "gpumemtest", "p2p"};
    for (size_t s = 0; s < h->c->n_stages; s++)
        for (size_t k = 0; k < sizeof gpu / sizeof gpu[0]; k++)
            if (h->c->stages[s].workload && !strcmp(h->c->stages[s].workload, gpu[k]))
                return true;
    return false;
}

void report__html_telemetry(report_html_t *h)
{
    const char *nodes[S_NODES];
    size_t n_nodes = s_pick_nodes(h, nodes), drawn = 0;
    bool opened = false;
    for (size_t k = 0; k < n_nodes; k++) {
        s_node_data_t d = {.t0 = h->c->started_ms};
        store_telemetry_filter_t filter = {.campaign_id = h->c->id, .node = nodes[k]};
        if (store_telemetry_foreach(h->store, &filter, s_row, &d) == 0 && d.n) {
            if (!opened)
                fputs("<section id=\"telemetry\"><h2>Telemetry per GPU</h2>", h->out);
            opened = true;
            if (!drawn && h->n_nodes > S_NODES)
                fprintf(h->out,
                        "<p class=\"muted\">%zu nodes: shown are %d, those that failed or "
                        "stood out first; <code>fleetburn timeline</code> has every "
                        "series.</p>",
                        h->n_nodes, S_NODES);
            s_node_charts(h, nodes[k], &d, drawn == 0);
            drawn++;
        }
        s_data_free(&d);
    }
    if (opened)
        fputs("</section>\n", h->out);
    else if (s_gpu_campaign(h))
        fputs("<section id=\"telemetry\"><h2>Telemetry per GPU</h2><p class=\"muted\" "
              "id=\"telemetry-none\">No GPU telemetry was recorded.</p></section>\n",
              h->out);
}
