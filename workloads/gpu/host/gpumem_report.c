/* SPDX-License-Identifier: Apache-2.0 */
/* The host half of gpumemtest that needs no GPU: which patterns and devices a campaign asked for,
 * how the miscompares the verification kernels recorded become address ranges ("gpu0
 * 0x7f3f2000000-0x7f3f2000fff: 12 errors, bits 0x...04") named on "<node>/gpuN", the per-GPU
 * metrics, and the verdict. A failing HBM row or bank shows up as many miscompares close
 * together; coalescing them keeps the finding list short enough for a person to read and still
 * says where on the device the damage is and which bits were hit. */
#include "gpumem_report.h"

#include "common/units.h"
#include "common/util.h"
#include "scheduler/workload.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gpumem_pattern_name(gpumem_pattern_t p)
{
    if (p == GPUMEM_TRIAD)
        return "triad"; /* the internal check, not selectable in a campaign */
    if ((int)p < 0 || p >= GPUMEM_N_PATTERNS)
        return "unknown";
    return fb_workload_gpumem_patterns[p];
}

int gpumem_pattern_from_name(const char *name)
{
    for (int i = 0; name && i < GPUMEM_N_PATTERNS; i++)
        if (!strcmp(name, fb_workload_gpumem_patterns[i]))
            return i;
    return -1;
}

int gpumem_parse_patterns(const char *text, gpumem_pattern_t **list_out, size_t *n_out,
                          char **bad_out)
{
    /* The shared list parser works on table indices, which are the pattern values. */
    const char *names[GPUMEM_N_PATTERNS];
    for (int i = 0; i < GPUMEM_N_PATTERNS; i++)
        names[i] = gpumem_pattern_name((gpumem_pattern_t)i);
    int *ids = NULL;
    int rc = fb_parse_name_list(text, names, GPUMEM_N_PATTERNS, &ids, n_out, bad_out);
    *list_out = NULL;
    if (rc == 0) {
        *list_out = xcalloc(*n_out, sizeof **list_out);
        for (size_t i = 0; i < *n_out; i++)
            (*list_out)[i] = (gpumem_pattern_t)ids[i];
    }
    free(ids);
    return rc;
}

/* ---- ranges ---------------------------------------------------------------------------------- */

static int s_by_addr(const void *a, const void *b)
{
    uint64_t x = ((const gpumem_miscompare_t *)a)->addr;
    uint64_t y = ((const gpumem_miscompare_t *)b)->addr;
    return x < y ? -1 : x > y;
}

gpumem_range_t *gpumem_coalesce(const gpumem_miscompare_t *m, size_t n, uint64_t granule,
                                uint64_t gap, size_t *n_ranges)
{
    *n_ranges = 0;
    if (n == 0)
        return NULL;
    if (granule < 8 || (granule & (granule - 1)))
        granule = 8;
    gpumem_miscompare_t *sorted = xmalloc(n * sizeof *sorted);
    memcpy(sorted, m, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, s_by_addr);
    gpumem_range_t *out = xcalloc(n, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const gpumem_miscompare_t *e = &sorted[i];
        uint64_t lo = e->addr & ~(granule - 1);
        uint64_t hi = lo + (granule - 1);
        if (hi < lo) /* the last granule of the address space */
            hi = UINT64_MAX;
        gpumem_range_t *r = k ? &out[k - 1] : NULL;
        /* Sorted, so lo >= r->first; merge when it starts within gap of the range's end. */
        if (!r || (lo > r->last && lo - r->last - 1 >= gap)) {
            r = &out[k++];
            r->first = lo;
            r->last = hi;
            r->passes_lo = r->passes_hi = e->pass;
        }
        if (hi > r->last)
            r->last = hi;
        r->errors++;
        r->bits |= e->expected ^ e->actual;
        if ((int)e->pattern >= 0 && e->pattern < GPUMEM_N_CHECKS)
            r->patterns |= 1u << e->pattern;
        if (e->pass < r->passes_lo)
            r->passes_lo = e->pass;
        if (e->pass > r->passes_hi)
            r->passes_hi = e->pass;
    }
    free(sorted);
    *n_ranges = k;
    return out;
}

const char *gpumem_format_range(const gpumem_range_t *r, const char *label, char *buf, size_t len)
{
    if (!len)
        return buf;
    size_t o = (size_t)snprintf(
        buf, len, "%s 0x%" PRIx64 "-0x%" PRIx64 ": %" PRIu64 " error%s, bits 0x%016" PRIx64 " (",
        label, r->first, r->last, r->errors, r->errors == 1 ? "" : "s", r->bits);
    for (int p = 0, any = 0; p < GPUMEM_N_CHECKS && o < len; p++)
        if (r->patterns >> p & 1)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", any++ ? ", " : "",
                                  gpumem_pattern_name((gpumem_pattern_t)p));
    if (o < len) {
        if (r->passes_lo == r->passes_hi)
            snprintf(buf + o, len - o, "%spass %u)", r->patterns ? ", " : "", r->passes_lo + 1);
        else
            snprintf(buf + o, len - o, "%spasses %u-%u)", r->patterns ? ", " : "", r->passes_lo + 1,
                     r->passes_hi + 1);
    }
    return buf;
}

/* ---- report ---------------------------------------------------------------------------------- */

static const char *s_node(const char *node)
{
    return node && *node ? node : "localhost";
}

size_t gpumem_report_gpu(fb_result_t *res, const char *node, const gpumem_gpu_t *g)
{
    char name[64], label[16];
    snprintf(label, sizeof label, "gpu%d", g->device);
    snprintf(name, sizeof name, "gpu%d.tested_bytes", g->device);
    fb_result_set_metric(res, name, (double)g->tested_bytes, "B");
    snprintf(name, sizeof name, "gpu%d.tested_fraction", g->device);
    fb_result_set_metric(
        res, name, g->total_bytes ? (double)g->tested_bytes / (double)g->total_bytes : 0.0, "");
    snprintf(name, sizeof name, "gpu%d.errors", g->device);
    fb_result_set_metric(res, name, (double)g->errors, "");
    if (g->triad_gbs > 0) {
        snprintf(name, sizeof name, "gpu%d.triad_gbs", g->device);
        fb_result_set_metric(res, name, g->triad_gbs, "GB/s");
    }
    if (g->errors == 0)
        return 0;

    char *part = xasprintf("%s/%s", s_node(node), label);
    char where[160];
    snprintf(where, sizeof where, "PCI %s%s%s", g->pci[0] ? g->pci : "unknown",
             g->name[0] ? ", " : "", g->name);
    size_t n_ranges = 0, added = 0;
    gpumem_range_t *ranges =
        gpumem_coalesce(g->records, g->n_records, GPUMEM_GRANULE, GPUMEM_GAP, &n_ranges);
    uint64_t listed = 0, rest_bits = 0;
    for (size_t i = 0; i < n_ranges; i++) {
        if (i < GPUMEM_MAX_RANGE_FINDINGS) {
            char text[512];
            gpumem_format_range(&ranges[i], label, text, sizeof text);
            fb_result_add_findingf(res, part, "gpu", "%s [%s]", text, where);
            listed += ranges[i].errors;
            added++;
        } else {
            rest_bits |= ranges[i].bits;
        }
    }
    if (g->errors > listed) {
        /* Miscompares beyond the record buffer, or ranges beyond the findings limit. */
        uint64_t bits = rest_bits;
        for (size_t i = 0; i < g->n_records; i++)
            bits |= g->records[i].expected ^ g->records[i].actual;
        fb_result_add_findingf(res, part, "gpu",
                               "%s: %" PRIu64 " more miscompare%s not itemised (%" PRIu64
                               " in all); bits seen in recorded ones 0x%016" PRIx64 " [%s]",
                               label, g->errors - listed, g->errors - listed == 1 ? "" : "s",
                               g->errors, bits, where);
        added++;
    }
    free(ranges);
    free(part);
    return added;
}

fb_verdict_t gpumem_verdict(const gpumem_gpu_t *gpus, size_t n, int telemetry_faults)
{
    bool errors = false, broken = false;
    for (size_t i = 0; i < n; i++) {
        if (gpus[i].errors)
            errors = true;
        if (gpus[i].error[0])
            broken = true;
        /* Flips that went unnoticed mean the test itself is broken: never a pass. */
        if (gpus[i].injected && !gpus[i].errors)
            broken = true;
    }
    if (errors || telemetry_faults > 0)
        return FB_VERDICT_FAIL;
    if (broken || n == 0)
        return FB_VERDICT_ERROR;
    return FB_VERDICT_PASS;
}

char *gpumem_summary(const gpumem_gpu_t *gpus, size_t n, fb_verdict_t verdict, int telemetry_faults)
{
    size_t cap = 128 + n * 256, o = 0;
    char *s = xmalloc(cap);
    o += (size_t)snprintf(s, cap, "gpumemtest %s:", fb_verdict_name(verdict));
    for (size_t i = 0; i < n && o < cap; i++) {
        const gpumem_gpu_t *g = &gpus[i];
        char tested[32], total[32];
        fb_format_bytes(g->tested_bytes, tested, sizeof tested);
        fb_format_bytes(g->total_bytes, total, sizeof total);
        o += (size_t)snprintf(
            s + o, cap - o, "%s gpu%d %s (%.1f%% of %s), %" PRIu64 " error%s", i ? ";" : "",
            g->device, tested,
            g->total_bytes ? 100.0 * (double)g->tested_bytes / (double)g->total_bytes : 0.0, total,
            g->errors, g->errors == 1 ? "" : "s");
        if (o < cap && g->triad_gbs > 0)
            o += (size_t)snprintf(s + o, cap - o, ", triad %.0f GB/s", g->triad_gbs);
        if (o < cap && g->injected)
            o += (size_t)snprintf(s + o, cap - o, ", %" PRIu64 " bits flipped on purpose",
                                  g->injected);
        if (o < cap && g->error[0])
            o += (size_t)snprintf(s + o, cap - o, ", not fully tested: %.120s", g->error);
    }
    if (o < cap) {
        if (telemetry_faults > 0)
            snprintf(s + o, cap - o, "; %d new GPU fault%s in telemetry", telemetry_faults,
                     telemetry_faults == 1 ? "" : "s");
        else if (telemetry_faults < 0)
            snprintf(s + o, cap - o, "; GPU telemetry unavailable (%s)",
                     strerror(-telemetry_faults));
    }
    return s;
}
