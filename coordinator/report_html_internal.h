/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report's insides, shared by the files that make it up: report_html.c (the document,
 * its style, the header and the diagnosis), report_html_svg.c (escaping and the SVG pieces every
 * chart is drawn with), report_html_fleet.c (the node x stage heatmap, outliers, the timeline of
 * tasks per node), report_html_charts.c (GPU peer-to-peer matrices, allreduce bandwidth against
 * size, memory errors by address range) and report_html_telemetry.c (telemetry per GPU).
 *
 * Every chart is SVG written here: the file has no script or style from elsewhere and fetches
 * nothing when viewed (its Content-Security-Policy forbids it). Every text that came from the
 * network (node names, findings, errors, metric names) goes through report__html_text or
 * report__html_attr. Nothing outside coordinator/report_html*.c includes this header. */
#ifndef FB_REPORT_HTML_INTERNAL_H
#define FB_REPORT_HTML_INTERNAL_H

#include "report_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Up to this many nodes every node has its own row in the timeline; above it, only the nodes
 * that failed or stood out (at most this many), so that a 1000-node fleet is no 1000-row wall. */
#define REPORT_HTML_ROWS_MAX 48
/* Outliers listed per stage before "and N more". */
#define REPORT_HTML_OUTLIERS_MAX 20
/* A passing node whose headline metric lies this many robust standard deviations below its
 * stage's median is an outlier (scheduler/robust.h). */
#define REPORT_HTML_OUTLIER_SCORE 3.0

/* One node of the campaign and where it stands in each stage. */
typedef struct {
    const char *name;       /* borrowed from the campaign */
    bool *in_stage;         /* per stage: it had a task there */
    bool *cleared;          /* per stage (on_fail: bisect): failed with partners, then cleared */
    fb_verdict_t *verdicts; /* per stage: the worst verdict of its tasks there */
    double *values;         /* per stage: its headline metric (NaN: none) */
    double *scores;         /* per stage: robust score of the value below the stage (NaN) */
    bool of_interest;       /* failed somewhere, or an outlier */
} report_html_node_t;

typedef struct {
    FILE *out;
    store_t *store; /* borrowed, for what the campaign struct does not hold (telemetry) */
    const store_campaign_t *c;
    const store_campaign_t *base; /* the baseline compared with, or NULL */
    report_diag_t diag;
    report_html_node_t *nodes; /* sorted by name */
    size_t n_nodes;
    const char **headline; /* per stage: the metric its nodes are compared on (NULL: none) */
    bool live;             /* the live view of `fleetburn serve --http` */
} report_html_t;

/* ---- Escaping and SVG pieces (report_html_svg.c) ------------------------------------------- */

/* Writes s escaped for HTML text and attribute values (& < > " '); control characters become
 * U+FFFD, invalid UTF-8 is written as it is replaced by the same; NULL writes nothing. */
void report__html_text(FILE *out, const char *s);
/* printf, then the result escaped as report__html_text does. */
void report__html_textf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The CSS class of a verdict's colour: v-pass, v-fail, v-skipped, v-timeout, v-lost, v-error,
 * v-none (pending). */
const char *report__html_verdict_class(fb_verdict_t v);
/* A verdict name for people ("pending" for NONE). */
const char *report__html_verdict_name(fb_verdict_t v);

/* A linear colour scale from red (lo) through yellow to green (hi), as "#rrggbb" into buf. NaN
 * gives grey. */
const char *report__html_scale_color(double value, double lo, double hi, char *buf, size_t len);

/* A line chart: series of (x, y) points on linear or log2 x, with axes, ticks, a legend and a
 * <title> on every point. */
typedef struct {
    const char *label; /* legend; borrowed */
    const double *x, *y;
    size_t n;
    bool dashed;     /* a baseline drawn dashed */
    const char *css; /* stroke class: s0..s7, or "base" */
} report_html_series_t;

typedef struct {
    const char *id, *title, *x_label, *y_label; /* id: the element id (NULL: none) */
    bool log2_x;                                /* sizes: powers of two */
    bool x_bytes;                               /* tick labels as 8 B, 1 MiB ... */
    bool x_time;                                /* x is seconds since the campaign started */
    int width, height;
} report_html_chart_t;

void report__html_line_chart(FILE *out, const report_html_chart_t *chart,
                             const report_html_series_t *series, size_t n_series);

/* A matrix heatmap (rows x cols values, NaN: none) with row and column labels, the value written
 * in each cell, and a colour from lo (red) to hi (green). */
void report__html_matrix(FILE *out, const char *id, const char *title, const char *const *labels,
                         size_t n, const double *values, double lo, double hi, const char *unit);

/* "8 B", "1 KiB", "256 MiB": bytes as powers of two, for chart ticks. */
const char *report__html_bytes(double bytes, char *buf, size_t len);
/* "2h 03m", "4m 10s", "12.3 s". */
const char *report__html_duration(uint64_t ms, char *buf, size_t len);

/* ---- Sections ---------------------------------------------------------------------------- */

/* report_html_fleet.c: builds the per-node model (nodes, headline metrics, scores); frees it. */
void report__html_nodes_build(report_html_t *h);
void report__html_nodes_free(report_html_t *h);
/* The node x stage heatmap and the outliers of each stage. */
void report__html_fleet(report_html_t *h);
/* The timeline of tasks per node (the nodes of interest only, on a large fleet). */
void report__html_timeline(report_html_t *h);

/* report_html_charts.c */
void report__html_p2p(report_html_t *h);
void report__html_allreduce(report_html_t *h);
void report__html_memory(report_html_t *h);

/* report_html_compare.c: regressions, improvements and environment changes against the baseline
 * (nothing without one). */
void report__html_compare(report_html_t *h);

/* report_html_telemetry.c: telemetry plots per GPU. */
void report__html_telemetry(report_html_t *h);

/* The headline metric a workload's nodes are compared on (NULL: none), and whether higher is
 * better. */
const char *report__html_headline(const char *workload, bool *higher_better);

#endif
