/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report's drawing kit: HTML escaping of every text that came from the network, verdict
 * colours, a colour scale, and the SVG charts the sections draw (a line chart on linear or log2
 * axes, a labelled matrix heatmap). Charts are written as SVG markup by this code: no script
 * library is embedded or fetched, so the report renders the same offline, in a mail client's
 * preview, or years later. Geometry is computed here; colours and fonts are in the document's
 * style sheet (report_html.c), referred to by class. */
#include "report_html_internal.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- Escaping ---------------------------------------------------------------------------- */

/* Length of a valid UTF-8 sequence starting at s (1-4), or 0 when it is not one. */
static size_t s_utf8_len(const unsigned char *s)
{
    size_t n = s[0] < 0x80             ? 1
               : (s[0] & 0xe0) == 0xc0 ? 2
               : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 2 && s[0] < 0xc2)
        return 0; /* overlong */
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void report__html_text(FILE *out, const char *s)
{
    if (!s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        switch (*p) {
        case '&':
            fputs("&amp;", out);
            p++;
            continue;
        case '<':
            fputs("&lt;", out);
            p++;
            continue;
        case '>':
            fputs("&gt;", out);
            p++;
            continue;
        case '"':
            fputs("&quot;", out);
            p++;
            continue;
        case '\'':
            fputs("&#39;", out);
            p++;
            continue;
        default:
            break;
        }
        if (*p < 0x20 || *p == 0x7f) {
            fputs(*p == '\n' || *p == '\t' ? " " : "\xef\xbf\xbd", out);
            p++;
            continue;
        }
        size_t n = s_utf8_len(p);
        if (n == 0) {
            fputs("\xef\xbf\xbd", out); /* U+FFFD for a byte that is not UTF-8 */
            p++;
            continue;
        }
        fwrite(p, 1, n, out);
        p += n;
    }
}

void report__html_textf(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    report__html_text(out, s);
    free(s);
}

/* ---- Verdicts, colours, units -------------------------------------------------------------- */

const char *report__html_verdict_class(fb_verdict_t v)
{
    switch (v) {
    case FB_VERDICT_PASS:
        return "v-pass";
    case FB_VERDICT_FAIL:
        return "v-fail";
    case FB_VERDICT_SKIPPED:
        return "v-skipped";
    case FB_VERDICT_TIMEOUT:
        return "v-timeout";
    case FB_VERDICT_LOST:
        return "v-lost";
    case FB_VERDICT_ERROR:
        return "v-error";
    default:
        return "v-none";
    }
}

const char *report__html_verdict_name(fb_verdict_t v)
{
    return v == FB_VERDICT_NONE ? "pending" : fb_verdict_name(v);
}

const char *report__html_scale_color(double value, double lo, double hi, char *buf, size_t len)
{
    if (!isfinite(value) || !isfinite(lo) || !isfinite(hi)) {
        snprintf(buf, len, "#cfd4da");
        return buf;
    }
    double t = hi > lo ? (value - lo) / (hi - lo) : 1.0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    /* red (#c62828) -> amber (#f9a825) -> green (#2e7d32) */
    static const int stops[3][3] = {{0xc6, 0x28, 0x28}, {0xf9, 0xa8, 0x25}, {0x2e, 0x7d, 0x32}};
    int k = t < 0.5 ? 0 : 1;
    double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
    int rgb[3];
    for (int i = 0; i < 3; i++)
        rgb[i] = (int)lround(stops[k][i] + (stops[k + 1][i] - stops[k][i]) * u);
    snprintf(buf, len, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    return buf;
}

const char *report__html_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, bytes == floor(bytes) ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

const char *report__html_duration(uint64_t ms, char *buf, size_t len)
{
    uint64_t s = ms / 1000;
    if (s >= 3600)
        snprintf(buf, len, "%lluh %02llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s % 3600 / 60));
    else if (s >= 60)
        snprintf(buf, len, "%llum %02llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
    else
        snprintf(buf, len, "%.1f s", ms / 1000.0);
    return buf;
}

/* ---- Line chart ---------------------------------------------------------------------------- */

typedef struct {
    double x0, x1, y0, y1; /* data range */
    int left, top, w, h;   /* plot area in pixels */
    bool log2_x;
} s_frame_t;

static double s_fx(const s_frame_t *f, double x)
{
    double v0 = f->log2_x ? log2(f->x0) : f->x0, v1 = f->log2_x ? log2(f->x1) : f->x1;
    double v = f->log2_x ? log2(x) : x;
    return f->left + (v1 > v0 ? (v - v0) / (v1 - v0) : 0.5) * f->w;
}

static double s_fy(const s_frame_t *f, double y)
{
    return f->top + f->h - (f->y1 > f->y0 ? (y - f->y0) / (f->y1 - f->y0) : 0.5) * f->h;
}

/* A "nice" step for about n ticks over span (1, 2 or 5 times a power of ten). */
static double s_nice_step(double span, int n)
{
    if (!(span > 0))
        return 1;
    double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void s_tick_label(const report_html_chart_t *c, double v, char *buf, size_t len)
{
    if (c->x_bytes)
        report__html_bytes(v, buf, len);
    else if (c->x_time)
        report__html_duration((uint64_t)(v * 1000), buf, len);
    else
        snprintf(buf, len, "%g", v);
}

static void s_x_ticks(FILE *out, const report_html_chart_t *c, const s_frame_t *f)
{
    char label[32];
    if (f->log2_x) {
        double lo = floor(log2(f->x0)), hi = ceil(log2(f->x1));
        int every = (int)ceil((hi - lo + 1) / 8.0);
        for (double e = lo; e <= hi; e += every > 0 ? every : 1) {
            double x = pow(2, e);
            if (x < f->x0 || x > f->x1)
                continue;
            s_tick_label(c, x, label, sizeof label);
            fprintf(out,
                    "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
                    s_fx(f, x), f->top + f->h + 14, label);
        }
        return;
    }
    double step = s_nice_step(f->x1 - f->x0, 6);
    for (double x = ceil(f->x0 / step) * step; x <= f->x1 + step * 1e-9; x += step) {
        s_tick_label(c, x, label, sizeof label);
        fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
                s_fx(f, x), f->top + f->h + 14, label);
    }
}

static void s_y_ticks(FILE *out, const s_frame_t *f)
{
    double step = s_nice_step(f->y1 - f->y0, 5);
    for (double y = ceil(f->y0 / step) * step; y <= f->y1 + step * 1e-9; y += step) {
        fprintf(out,
                "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>",
                f->left, f->left + f->w, s_fy(f, y), s_fy(f, y), f->left - 4, s_fy(f, y) + 4, y);
    }
}

static bool s_frame_range(s_frame_t *f, const report_html_series_t *series, size_t n_series)
{
    bool any = false;
    f->x0 = f->y0 = INFINITY;
    f->x1 = f->y1 = -INFINITY;
    for (size_t s = 0; s < n_series; s++)
        for (size_t i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (f->log2_x && x <= 0))
                continue;
            any = true;
            f->x0 = x < f->x0 ? x : f->x0;
            f->x1 = x > f->x1 ? x : f->x1;
            f->y0 = y < f->y0 ? y : f->y0;
            f->y1 = y > f->y1 ? y : f->y1;
        }
    if (!any)
        return false;
    f->y0 = f->y0 > 0 ? 0 : f->y0; /* bars and bandwidths read from zero */
    if (f->y1 <= f->y0)
        f->y1 = f->y0 + 1;
    f->y1 += (f->y1 - f->y0) * 0.05;
    return true;
}

static void s_series(FILE *out, const report_html_chart_t *c, const s_frame_t *f,
                     const report_html_series_t *s)
{
    fprintf(out, "<polyline class=\"line %s%s\" points=\"", s->css ? s->css : "s0",
            s->dashed ? " dashed" : "");
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->x[i]) && isfinite(s->y[i]) && (!f->log2_x || s->x[i] > 0))
            fprintf(out, "%.1f,%.1f ", s_fx(f, s->x[i]), s_fy(f, s->y[i]));
    fputs("\"/>", out);
    if (s->n > 200)
        return; /* a dense series (telemetry) is read from its line, not its points */
    char xl[32];
    for (size_t i = 0; i < s->n; i++) {
        if (!isfinite(s->x[i]) || !isfinite(s->y[i]) || (f->log2_x && s->x[i] <= 0))
            continue;
        s_tick_label(c, s->x[i], xl, sizeof xl);
        fprintf(out, "<circle class=\"pt %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>",
                s->css ? s->css : "s0", s_fx(f, s->x[i]), s_fy(f, s->y[i]));
        report__html_text(out, s->label);
        fprintf(out, ": %s, %.4g</title></circle>", xl, s->y[i]);
    }
}

static void s_legend(FILE *out, const s_frame_t *f, const report_html_series_t *series,
                     size_t n_series)
{
    int y = f->top + 4;
    for (size_t s = 0; s < n_series && s < 12; s++, y += 14) {
        fprintf(out,
                "<line class=\"line %s%s\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
                "<text class=\"legend\" x=\"%d\" y=\"%d\">",
                series[s].css ? series[s].css : "s0", series[s].dashed ? " dashed" : "",
                f->left + f->w + 10, f->left + f->w + 28, y, y, f->left + f->w + 32, y + 4);
        report__html_text(out, series[s].label);
        fputs("</text>", out);
    }
    if (n_series > 12)
        fprintf(out, "<text class=\"legend\" x=\"%d\" y=\"%d\">and %zu more</text>",
                f->left + f->w + 10, y + 4, n_series - 12);
}

void report__html_line_chart(FILE *out, const report_html_chart_t *c,
                             const report_html_series_t *series, size_t n_series)
{
    int width = c->width ? c->width : 760, height = c->height ? c->height : 260;
    s_frame_t f = {
        .left = 56, .top = 24, .w = width - 56 - 190, .h = height - 24 - 40, .log2_x = c->log2_x};
    fputs("<figure class=\"chart\"", out);
    if (c->id) {
        fputs(" id=\"", out);
        report__html_text(out, c->id);
        fputs("\"", out);
    }
    fputs("><figcaption>", out);
    report__html_text(out, c->title);
    fputs("</figcaption>", out);
    if (!s_frame_range(&f, series, n_series)) {
        fputs("<p class=\"muted\">no values</p></figure>\n", out);
        return;
    }
    fprintf(out,
            "<svg class=\"plot\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">"
            "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>",
            width, height, width, height, f.left, f.top, f.w, f.h);
    s_y_ticks(out, &f);
    s_x_ticks(out, c, &f);
    for (size_t s = 0; s < n_series; s++)
        s_series(out, c, &f, &series[s]);
    s_legend(out, &f, series, n_series);
    fprintf(out, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">", f.left + f.w / 2,
            height - 6);
    report__html_text(out, c->x_label);
    fprintf(out,
            "</text><text class=\"axis\" x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" "
            "text-anchor=\"middle\">",
            f.top + f.h / 2, f.top + f.h / 2);
    report__html_text(out, c->y_label);
    fputs("</text></svg></figure>\n", out);
}

/* ---- Matrix heatmap -------------------------------------------------------------------------- */

void report__html_matrix(FILE *out, const char *id, const char *title, const char *const *labels,
                         size_t n, const double *values, double lo, double hi, const char *unit)
{
    const int cell = 46, left = 64, top = 34;
    int size_w = left + (int)n * cell + 10, size_h = top + (int)n * cell + 10;
    fputs("<figure class=\"chart matrix\"", out);
    if (id) {
        fputs(" id=\"", out);
        report__html_text(out, id);
        fputs("\"", out);
    }
    fputs("><figcaption>", out);
    report__html_text(out, title);
    fprintf(out,
            "</figcaption><svg class=\"plot\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\">",
            size_w, size_h, size_w, size_h);
    for (size_t j = 0; j < n; j++) {
        fprintf(out, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
                left + (int)j * cell + cell / 2, top - 8);
        report__html_text(out, labels[j]);
        fputs("</text>", out);
    }
    char color[16];
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 6,
                top + (int)i * cell + cell / 2 + 4);
        report__html_text(out, labels[i]);
        fputs("</text>", out);
        for (size_t j = 0; j < n; j++) {
            double v = values[i * n + j];
            int x = left + (int)j * cell, y = top + (int)i * cell;
            if (i == j || !isfinite(v)) {
                fprintf(out,
                        "<rect class=\"cell empty\" x=\"%d\" y=\"%d\" width=\"%d\" "
                        "height=\"%d\"/>",
                        x, y, cell - 2, cell - 2);
                continue;
            }
            fprintf(out,
                    "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                    "fill=\"%s\"><title>",
                    x, y, cell - 2, cell - 2,
                    report__html_scale_color(v, lo, hi, color, sizeof color));
            report__html_text(out, labels[i]);
            fputs(" \xe2\x86\x92 ", out);
            report__html_text(out, labels[j]);
            fprintf(out, ": %.1f ", v);
            report__html_text(out, unit);
            fprintf(out,
                    "</title></rect><text class=\"cellv\" x=\"%d\" y=\"%d\" "
                    "text-anchor=\"middle\">%.0f</text>",
                    x + cell / 2 - 1, y + cell / 2 + 3, v);
        }
    }
    fputs("</svg></figure>\n", out);
}
