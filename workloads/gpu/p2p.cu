/* SPDX-License-Identifier: Apache-2.0 */
/* The p2p workload: bandwidth and latency between every ordered pair of the node's GPUs, and
 * between host memory and each GPU, with every transfer's data verified. Between GPUs it measures
 * copy-engine copies (gpuMemcpyPeerAsync with peer access on) and SM copies (a kernel on the source
 * GPU writing into the peer's memory), one direction at a time and both directions at once on
 * separate streams, and read latency with a pointer chase through the peer's memory. Between host
 * and GPU it measures pinned-memory copies in each direction and both at once, with the host
 * buffers allocated on the GPU's NUMA node. Each timed transfer moves a buffer filled with a
 * pattern derived from the pair, the kind of copy and the iteration; a counting kernel (or the
 * CPU, for host buffers) checks every received word, so a link that corrupts data fails even when
 * it is fast. Bandwidths form matrices (row = source, column = destination) judged per link type
 * (NVLink, xGMI, PCIe switch / host bridge / across root complexes, via host) by
 * gpu/host/p2p_matrix.c: a pair below min_gbs or below min_relative times the median of its link
 * type is a finding on that link. inject_corrupt (test-only) corrupts one received buffer. */
extern "C" {
#include "common/result.h"
#include "common/rng.h"
#include "common/units.h"
#include "common/util.h"
#include "gpu/host/gpu_devices.h"
#include "gpu/host/gpumem_report.h"
#include "gpu/host/p2p_matrix.h"
#include "worker.h"
}
#include "gpu/gpu.h"
#include "gpu/gpu_runtime.h"
#include "gpu/p2p_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device side ----------------------------------------------------------------------------- */

namespace
{

/* Word i of a buffer filled with key: distinct for every word, and for every key. */
__host__ __device__ __forceinline__ u64 s_word(u64 i, u64 key)
{
    return (i * FB_RNG_GAMMA) ^ key;
}

__global__ void k_fill(ulonglong2 *p, size_t pairs, u64 key)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < pairs; k += stride) {
        ulonglong2 v;
        v.x = s_word(2 * k, key);
        v.y = s_word(2 * k + 1, key);
        p[k] = v;
    }
}

__device__ __forceinline__ void s_report(p2p_log *log, u64 word, u64 expected, u64 actual, u64 tag)
{
    atomicAdd(&log->count, 1ULL);
    unsigned int i = atomicAdd(&log->n, 1u);
    if (i < P2P_MAX_RECORDS) {
        log->rec[i].offset = word * 8;
        log->rec[i].expected = expected;
        log->rec[i].actual = actual;
        log->rec[i].tag = tag;
    }
}

__global__ void k_check(const ulonglong2 *p, size_t pairs, u64 key, p2p_log *log, u64 tag)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < pairs; k += stride) {
        ulonglong2 v = p[k];
        u64 e0 = s_word(2 * k, key), e1 = s_word(2 * k + 1, key);
        if (v.x != e0)
            s_report(log, 2 * k, e0, v.x, tag);
        if (v.y != e1)
            s_report(log, 2 * k + 1, e1, v.y, tag);
    }
}

/* The SM copy: 16-byte loads, four in flight per thread. */
__global__ void k_copy(ulonglong2 *dst, const ulonglong2 *src, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        ulonglong2 a = src[i], b = src[i + stride], c = src[i + 2 * stride],
                   d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

/* One thread follows the chain: every load depends on the one before. */
__global__ void k_chase(const char *base, u64 hops, u64 *out)
{
    u64 off = 0;
    for (u64 h = 0; h < hops; h++)
        off = *(const volatile u64 *)(base + off);
    *out = off;
}

/* Test-only: damages one received word. */
__global__ void k_corrupt(u64 *p, size_t word, u64 mask)
{
    p[word] ^= mask;
}

} // namespace

/* ---- host side ------------------------------------------------------------------------------- */

typedef enum { K_CE_UNI, K_SM_UNI, K_CE_BIDI, K_SM_BIDI, K_H2D, K_D2H, K_HBIDI, K_N } kind_t;

static const char *const s_kind_text[K_N] = {
    "copy-engine unidirectional",  "SM-copy unidirectional", "copy-engine bidirectional",
    "SM-copy bidirectional",       "host-to-device",         "device-to-host",
    "host<->device bidirectional",
};

static const char *s_node(p2p_run_t *run)
{
    const char *node = worker_node(run->ctx);
    return node && *node ? node : "localhost";
}

static u64 s_key(p2p_run_t *run, kind_t kind, int a, int b, uint64_t it)
{
    return fb_mix64(run->seed ^ ((u64)kind << 56) ^ ((u64)(unsigned)a << 44) ^
                 ((u64)(unsigned)b << 32) ^ it);
}

static void s_step(p2p_run_t *run, const char *what)
{
    run->steps++;
    worker_progress(run->ctx, (double)run->steps / (double)(run->steps_total + 1), "p2p: %s", what);
}

static unsigned s_grid(const p2p_gpu_t *g)
{
    return (unsigned)g->sms * 4;
}

/* ---- verification ---------------------------------------------------------------------------- */

/* Reads and clears g's device log; a finding per measurement that saw corrupted words. */
static int s_collect(p2p_run_t *run, p2p_gpu_t *g, kind_t kind, int from, p2p_link_t link)
{
    p2p_log log;
    P2P_TRY(run, gpuSetDevice(g->dev), "gpuSetDevice");
    P2P_TRY(run, gpuMemcpy(&log, g->log, sizeof log, gpuMemcpyDeviceToHost),
            "reading the check log");
    if (!log.count)
        return 0;
    P2P_TRY(run, gpuMemset(g->log, 0, sizeof log), "clearing the check log");
    /* Transfers that went wrong: the distinct iteration tags among the records. */
    u64 bad_iters = 0, seen_tags[P2P_MAX_RECORDS];
    size_t n = log.n < P2P_MAX_RECORDS ? log.n : P2P_MAX_RECORDS;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (u64 k = 0; k < bad_iters; k++)
            dup |= seen_tags[k] == log.rec[i].tag;
        if (!dup)
            seen_tags[bad_iters++] = log.rec[i].tag;
    }
    run->corrupt_transfers += bad_iters ? bad_iters : 1;
    const uint64_t tag = log.rec[0].tag, count = log.count, offset = log.rec[0].offset;
    const uint64_t expected = log.rec[0].expected, actual = log.rec[0].actual;
    char where[64], *part;
    if (from < 0) {
        snprintf(where, sizeof where, "host->gpu%d", g->dev);
        part = xasprintf("%s/gpu%d", s_node(run), g->dev);
    } else {
        snprintf(where, sizeof where, "gpu%d->gpu%d", from, g->dev);
        part = xasprintf("%s/gpu%d<->gpu%d", s_node(run), from < g->dev ? from : g->dev,
                         from < g->dev ? g->dev : from);
    }
    fb_result_add_findingf(run->res, part, from < 0 ? "gpu" : "link",
                           "%s/%s (%s): %s transfer %" PRIu64 " of %" PRIu64 " delivered %" PRIu64
                           " corrupted 8-byte word%s of %" PRIu64 "; first at offset 0x%" PRIx64
                           ": expected 0x%016" PRIx64 ", got 0x%016" PRIx64 " (xor 0x%016" PRIx64
                           ")",
                           s_node(run), where, from < 0 ? "PCIe" : p2p_link_name(link),
                           s_kind_text[kind], tag, run->cfg->iters, count, count == 1 ? "" : "s",
                           run->cfg->size / 8, offset, expected, actual, expected ^ actual);
    worker_log(run->ctx, "p2p: corrupted data %s (%s), %" PRIu64 " word%s", where,
               s_kind_text[kind], count, count == 1 ? "" : "s");
    free(part);
    return 0;
}

static void s_host_fill(u64 *p, size_t words, u64 key)
{
    u64 x = 0;
    for (size_t i = 0; i < words; i++, x += FB_RNG_GAMMA)
        p[i] = x ^ key;
}

/* Checks a received host buffer; a finding when it is wrong. */
static void s_host_check(p2p_run_t *run, const p2p_gpu_t *g, kind_t kind, const u64 *p,
                         size_t words, u64 key, uint64_t it)
{
    uint64_t x = 0, bad = 0, first = 0, exp = 0, got = 0;
    for (size_t i = 0; i < words; i++, x += FB_RNG_GAMMA)
        if (p[i] != (x ^ key)) {
            if (!bad++) {
                first = i;
                exp = x ^ key;
                got = p[i];
            }
        }
    if (!bad)
        return;
    run->corrupt_transfers++;
    char *part = xasprintf("%s/gpu%d", s_node(run), g->dev);
    fb_result_add_findingf(run->res, part, "gpu",
                           "%s/gpu%d->host (PCIe): %s transfer %" PRIu64 " of %" PRIu64
                           " delivered %" PRIu64 " corrupted 8-byte word%s of %zu; first at "
                           "offset 0x%" PRIx64 ": expected 0x%016" PRIx64 ", got 0x%016" PRIx64,
                           s_node(run), g->dev, s_kind_text[kind], it, run->cfg->iters, bad,
                           bad == 1 ? "" : "s", words, first * 8, exp, got);
    free(part);
}

/* ---- measurements ---------------------------------------------------------------------------- */

/* Whether this measurement carries the test-only corruption. */
static bool s_inject_here(p2p_run_t *run, kind_t kind, size_t a, size_t b, uint64_t it)
{
    if (!run->cfg->inject || run->injected || it != run->cfg->iters)
        return false;
    if (run->n >= 2)
        return kind == K_CE_UNI && a == 0 && b == 1;
    return kind == K_H2D;
}

static int s_inject(p2p_run_t *run, p2p_gpu_t *g, gpuStream_t s)
{
    size_t word = (size_t)(run->cfg->size / 8 / 3);
    k_corrupt<<<1, 1, 0, s>>>(g->dst, word, 1ULL << 17);
    P2P_TRY(run, gpuGetLastError(), "launching the corruption kernel");
    run->injected = true;
    worker_log(run->ctx, "p2p: corrupted one word received by gpu%d on purpose (inject_corrupt)",
               g->dev);
    return 0;
}

/* One timed transfer from GPU a to GPU b (and b to a when bidi), checked where it landed; the
 * time between the start and stop events on a's stream in *ms. */
static int s_pair_iteration(p2p_run_t *run, kind_t kind, size_t ia, size_t ib, uint64_t it,
                            float *ms)
{
    p2p_gpu_t *a = &run->g[ia], *b = &run->g[ib];
    bool bidi = kind == K_CE_BIDI || kind == K_SM_BIDI;
    bool sm = kind == K_SM_UNI || kind == K_SM_BIDI;
    size_t bytes = run->cfg->size, pairs = bytes / 16;
    u64 ka = s_key(run, kind, a->dev, b->dev, it), kb = s_key(run, kind, b->dev, a->dev, it);
    /* Sources filled; with bidi both streams wait for each other so the copies start together. */
    P2P_TRY(run, gpuSetDevice(a->dev), "gpuSetDevice");
    k_fill<<<s_grid(a), 256, 0, a->s>>>((ulonglong2 *)a->src, pairs, ka);
    P2P_TRY(run, gpuGetLastError(), "launching the fill kernel");
    P2P_TRY(run, gpuEventRecord(a->sync, a->s), "gpuEventRecord");
    if (bidi) {
        P2P_TRY(run, gpuSetDevice(b->dev), "gpuSetDevice");
        k_fill<<<s_grid(b), 256, 0, b->s>>>((ulonglong2 *)b->src, pairs, kb);
        P2P_TRY(run, gpuGetLastError(), "launching the fill kernel");
        P2P_TRY(run, gpuEventRecord(b->sync, b->s), "gpuEventRecord");
        P2P_TRY(run, gpuStreamWaitEvent(b->s, a->sync, 0), "gpuStreamWaitEvent");
        P2P_TRY(run, gpuSetDevice(a->dev), "gpuSetDevice");
        P2P_TRY(run, gpuStreamWaitEvent(a->s, b->sync, 0), "gpuStreamWaitEvent");
    }
    P2P_TRY(run, gpuEventRecord(a->start, a->s), "gpuEventRecord");
    if (sm) {
        k_copy<<<s_grid(a), 512, 0, a->s>>>((ulonglong2 *)b->dst, (const ulonglong2 *)a->src,
                                            pairs);
        P2P_TRY(run, gpuGetLastError(), "launching the SM copy kernel");
    } else {
        P2P_TRY(run, gpuMemcpyPeerAsync(b->dst, b->dev, a->src, a->dev, bytes, a->s),
                "gpuMemcpyPeerAsync");
    }
    if (bidi) {
        P2P_TRY(run, gpuSetDevice(b->dev), "gpuSetDevice");
        P2P_TRY(run, gpuStreamWaitEvent(b->s, a->start, 0), "gpuStreamWaitEvent");
        if (sm) {
            k_copy<<<s_grid(b), 512, 0, b->s>>>((ulonglong2 *)a->dst, (const ulonglong2 *)b->src,
                                                pairs);
            P2P_TRY(run, gpuGetLastError(), "launching the SM copy kernel");
        } else {
            P2P_TRY(run, gpuMemcpyPeerAsync(a->dst, a->dev, b->src, b->dev, bytes, b->s),
                    "gpuMemcpyPeerAsync");
        }
        P2P_TRY(run, gpuEventRecord(b->sync2, b->s), "gpuEventRecord");
        P2P_TRY(run, gpuSetDevice(a->dev), "gpuSetDevice");
        P2P_TRY(run, gpuStreamWaitEvent(a->s, b->sync2, 0), "gpuStreamWaitEvent");
    }
    P2P_TRY(run, gpuEventRecord(a->stop, a->s), "gpuEventRecord");
    /* Every received buffer is checked on the GPU it landed on, after the stop event. */
    if (bidi) {
        k_check<<<s_grid(a), 256, 0, a->s>>>((const ulonglong2 *)a->dst, pairs, kb, a->log, it);
        P2P_TRY(run, gpuGetLastError(), "launching the check kernel");
    }
    P2P_TRY(run, gpuSetDevice(b->dev), "gpuSetDevice");
    P2P_TRY(run, gpuStreamWaitEvent(b->s, a->stop, 0), "gpuStreamWaitEvent");
    if (s_inject_here(run, kind, ia, ib, it) && s_inject(run, b, b->s))
        return -EIO;
    k_check<<<s_grid(b), 256, 0, b->s>>>((const ulonglong2 *)b->dst, pairs, ka, b->log, it);
    P2P_TRY(run, gpuGetLastError(), "launching the check kernel");
    P2P_TRY(run, gpuStreamSynchronize(b->s), "transfer");
    P2P_TRY(run, gpuSetDevice(a->dev), "gpuSetDevice");
    P2P_TRY(run, gpuStreamSynchronize(a->s), "transfer");
    P2P_TRY(run, gpuEventElapsedTime(ms, a->start, a->stop), "gpuEventElapsedTime");
    return 0;
}

/* GPU a to GPU b, one direction (copy engine or SM copy), or both at once (bidi): the median
 * GB/s of the timed iterations in *gbs (iteration 0 warms up and is checked, not timed). */
static int s_measure_pair(p2p_run_t *run, kind_t kind, size_t ia, size_t ib, double *gbs)
{
    const p2p_config_t *cfg = run->cfg;
    bool bidi = kind == K_CE_BIDI || kind == K_SM_BIDI;
    double *v = (double *)xcalloc(cfg->iters, sizeof *v);
    int rc = 0;
    for (uint64_t it = 0; it <= cfg->iters && rc == 0; it++) {
        float ms = 0;
        rc = s_pair_iteration(run, kind, ia, ib, it, &ms);
        if (rc == 0 && it > 0)
            v[it - 1] = ms > 0 ? (bidi ? 2.0 : 1.0) * (double)cfg->size / (ms * 1e-3) / 1e9 : NAN;
    }
    *gbs = rc ? NAN : p2p_median(v, cfg->iters);
    free(v);
    if (rc)
        return rc;
    p2p_link_t link = run->link[ia * run->n + ib];
    if (s_collect(run, &run->g[ib], kind, run->g[ia].dev, link))
        return -EIO;
    if (bidi && s_collect(run, &run->g[ia], kind, run->g[ib].dev, link))
        return -EIO;
    return 0;
}

/* Read latency of GPU a through GPU b's memory: a pointer chase over 1 MiB of b, in µs per hop.
 * The chain's end is known in advance, so the loads are verified too. */
static int s_measure_latency(p2p_run_t *run, size_t ia, size_t ib, double *us)
{
    p2p_gpu_t *a = &run->g[ia], *b = &run->g[ib];
    size_t bytes = (size_t)P2P_CHASE_SLOTS * P2P_CHASE_STRIDE;
    *us = NAN;
    if (bytes > run->cfg->size)
        return 0;
    u64 *chain = (u64 *)xcalloc(bytes / 8, 8);
    unsigned *order = (unsigned *)xmalloc(P2P_CHASE_SLOTS * sizeof *order);
    for (unsigned i = 0; i < P2P_CHASE_SLOTS; i++)
        order[i] = i;
    /* One cycle through every slot (Sattolo): slot order[i] points to order[i+1]. */
    u64 r = s_key(run, K_N, a->dev, b->dev, 0);
    for (unsigned i = P2P_CHASE_SLOTS - 1; i > 0; i--) {
        r = fb_mix64(r);
        unsigned j = (unsigned)(r % i), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    for (unsigned i = 0; i < P2P_CHASE_SLOTS; i++)
        chain[(size_t)order[i] * (P2P_CHASE_STRIDE / 8)] =
            (u64)order[(i + 1) % P2P_CHASE_SLOTS] * P2P_CHASE_STRIDE;
    /* Where the chase from offset 0 ends after the timed hops. */
    uint64_t expect = 0;
    for (unsigned h = 0; h < P2P_CHASE_HOPS; h++)
        expect = chain[expect / 8];
    free(order);
    /* A copy from pageable memory may return before the data lands, and the chase runs on
     * another GPU, which nothing orders after b's copy: wait for b before starting it. */
    gpuError_t err = gpuSetDevice(b->dev);
    if (err == gpuSuccess)
        err = gpuMemcpy(b->dst, chain, bytes, gpuMemcpyHostToDevice);
    if (err == gpuSuccess)
        err = gpuDeviceSynchronize();
    free(chain);
    if (err != gpuSuccess)
        return p2p_fail(run, "writing the pointer chain", err);
    P2P_TRY(run, gpuSetDevice(a->dev), "gpuSetDevice");
    k_chase<<<1, 1, 0, a->s>>>((const char *)b->dst, P2P_CHASE_SLOTS, a->scratch); /* warm TLBs */
    P2P_TRY(run, gpuEventRecord(a->start, a->s), "gpuEventRecord");
    k_chase<<<1, 1, 0, a->s>>>((const char *)b->dst, P2P_CHASE_HOPS, a->scratch);
    P2P_TRY(run, gpuGetLastError(), "launching the pointer chase");
    P2P_TRY(run, gpuEventRecord(a->stop, a->s), "gpuEventRecord");
    P2P_TRY(run, gpuStreamSynchronize(a->s), "pointer chase");
    float ms = 0;
    uint64_t end = 0;
    P2P_TRY(run, gpuEventElapsedTime(&ms, a->start, a->stop), "gpuEventElapsedTime");
    P2P_TRY(run, gpuMemcpy(&end, a->scratch, sizeof end, gpuMemcpyDeviceToHost),
            "reading the chase");
    *us = (double)ms * 1e3 / P2P_CHASE_HOPS;
    if (end != expect) {
        run->corrupt_transfers++;
        char *part = xasprintf("%s/gpu%d<->gpu%d", s_node(run), a->dev < b->dev ? a->dev : b->dev,
                               a->dev < b->dev ? b->dev : a->dev);
        fb_result_add_findingf(run->res, part, "link",
                               "%s/gpu%d reading gpu%d (%s): the pointer chase through the peer's "
                               "memory ended at offset 0x%" PRIx64 " instead of 0x%" PRIx64
                               " (a load returned wrong data)",
                               s_node(run), a->dev, b->dev,
                               p2p_link_name(run->link[ia * run->n + ib]), end, expect);
        free(part);
    }
    return 0;
}

/* Host buffers on the GPU's NUMA node: the thread runs on the GPU's local CPUs while it allocates
 * (pinned pages are placed by first touch) and measures. */
static void s_pin_near(p2p_run_t *run, const p2p_gpu_t *g)
{
    char *path =
        xasprintf("%s/sys/bus/pci/devices/%s/local_cpulist", worker_sysfs_root(run->ctx), g->pci);
    char *text = fb_read_file(path, NULL);
    free(path);
    if (!text)
        return;
    unsigned char *mask = (unsigned char *)xcalloc(P2P_MAX_CPUS, 1);
    if (p2p_parse_cpulist(text, mask, P2P_MAX_CPUS) > 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c = 0; c < P2P_MAX_CPUS && c < CPU_SETSIZE; c++)
            if (mask[c])
                CPU_SET(c, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            worker_log(run->ctx, "p2p: cannot run near gpu%d (CPUs %s): %s", g->dev, text,
                       strerror(errno));
    }
    free(mask);
    free(text);
}

/* Host to device, device to host, and both at once, for GPU i. */
static int s_measure_host(p2p_run_t *run, size_t i, double out[3])
{
    p2p_gpu_t *g = &run->g[i];
    const p2p_config_t *cfg = run->cfg;
    size_t bytes = cfg->size, words = bytes / 8, pairs = bytes / 16;
    P2P_TRY(run, gpuSetDevice(g->dev), "gpuSetDevice");
    s_pin_near(run, g);
    P2P_TRY(run, gpuMallocHost((void **)&run->host_src, bytes), "allocating pinned host memory");
    P2P_TRY(run, gpuMallocHost((void **)&run->host_dst, bytes), "allocating pinned host memory");
    double *v = (double *)xcalloc(cfg->iters, sizeof *v);
    for (int k = K_H2D; k <= K_HBIDI; k++) {
        kind_t kind = (kind_t)k;
        bool up = kind != K_D2H, down = kind != K_H2D;
        for (uint64_t it = 0; it <= cfg->iters; it++) {
            u64 kup = s_key(run, kind, -1, g->dev, it), kdown = s_key(run, kind, g->dev, -1, it);
            gpuError_t err = gpuSuccess;
            if (up)
                s_host_fill(run->host_src, words, kup);
            if (down) {
                k_fill<<<s_grid(g), 256, 0, g->s>>>((ulonglong2 *)g->src, pairs, kdown);
                err = gpuGetLastError();
            }
            /* Both directions start at the start event: s2 waits for it. */
            if (err == gpuSuccess)
                err = gpuEventRecord(g->start, g->s);
            if (err == gpuSuccess && up && down)
                err = gpuStreamWaitEvent(g->s2, g->start, 0);
            if (err == gpuSuccess && up)
                err = gpuMemcpyAsync(g->dst, run->host_src, bytes, gpuMemcpyHostToDevice, g->s);
            if (err == gpuSuccess && down)
                err = gpuMemcpyAsync(run->host_dst, g->src, bytes, gpuMemcpyDeviceToHost,
                                     up ? g->s2 : g->s);
            if (err == gpuSuccess && up && down) {
                err = gpuEventRecord(g->sync2, g->s2);
                if (err == gpuSuccess)
                    err = gpuStreamWaitEvent(g->s, g->sync2, 0);
            }
            if (err == gpuSuccess)
                err = gpuEventRecord(g->stop, g->s);
            if (err == gpuSuccess && up && s_inject_here(run, kind, i, i, it) &&
                s_inject(run, g, g->s)) {
                free(v);
                return -EIO;
            }
            if (err == gpuSuccess && up) {
                k_check<<<s_grid(g), 256, 0, g->s>>>((const ulonglong2 *)g->dst, pairs, kup, g->log,
                                                     it);
                err = gpuGetLastError();
            }
            if (err == gpuSuccess)
                err = gpuStreamSynchronize(g->s);
            float ms = 0;
            if (err == gpuSuccess)
                err = gpuEventElapsedTime(&ms, g->start, g->stop);
            if (err != gpuSuccess) {
                free(v);
                return p2p_fail(run, s_kind_text[kind], err);
            }
            if (down)
                s_host_check(run, g, kind, run->host_dst, words, kdown, it);
            if (it > 0)
                v[it - 1] =
                    ms > 0 ? (up && down ? 2.0 : 1.0) * (double)bytes / (ms * 1e-3) / 1e9 : NAN;
        }
        out[k - K_H2D] = p2p_median(v, cfg->iters);
        if (up && s_collect(run, g, kind, -1, P2P_LINK_UNKNOWN)) {
            free(v);
            return -EIO;
        }
        s_step(run, s_kind_text[kind]);
    }
    free(v);
    (void)gpuFreeHost(run->host_src);
    (void)gpuFreeHost(run->host_dst);
    run->host_src = run->host_dst = NULL;
    return 0;
}

/* ---- topology -------------------------------------------------------------------------------- */

/* "0000:17:00.0" from whatever form the runtime gives ("00000000:17:00.0", upper case). */
/* ---- reporting ------------------------------------------------------------------------------- */

static void s_log_lines(worker_ctx_t *ctx, char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        worker_log(ctx, "%s", lines[i]);
    p2p_free_lines(lines, n);
}

static void s_log_matrix(p2p_run_t *run, const p2p_topo_t *t, const double *m, const char *title,
                         int decimals)
{
    size_t n = 0;
    char **lines = p2p_format_table(t, m, title, decimals, &n);
    s_log_lines(run->ctx, lines, n);
}

/* "NVLink 375.2" for every link type present in m. */
static void s_medians_text(const p2p_topo_t *t, const double *m, bool symmetric, char *buf,
                           size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int l = 0; l < P2P_LINK_N && o < len; l++) {
        double med = p2p_link_median(t, m, (p2p_link_t)l, symmetric);
        if (isfinite(med))
            o += (size_t)snprintf(buf + o, len - o, "%s%s %.1f", o ? ", " : "",
                                  p2p_link_name((p2p_link_t)l), med);
    }
    if (!o)
        snprintf(buf, len, "not measured");
}

fb_verdict_t p2p_run(worker_ctx_t *ctx)
{
    fb_result_t *res = worker_result(ctx);
    p2p_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    /* A refused test-only switch is reported before anything else, GPUs or not. */
    if (worker_param(ctx, "inject_corrupt") && !worker_fault_injection_allowed(ctx))
        return worker_error(ctx, "inject_corrupt refused: the agent was not started with "
                             "--allow-fault-injection");
    /* gpuN in findings must match the inventory and telemetry, which number GPUs in PCI order. */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    int n_visible = 0;
    gpuError_t err = gpuGetDeviceCount(&n_visible);
    if (err != gpuSuccess || n_visible <= 0)
        return gpu_no_devices(ctx, "p2p", FB_GPU_VENDOR,
                              err != gpuSuccess ? gpuGetErrorString(err) : "no devices");
    if (p2p_parse_config(ctx, &cfg, n_visible)) {
        free(cfg.devices);
        return FB_VERDICT_ERROR;
    }

    size_t n = cfg.n, nn = n * n;
    p2p_run_t run;
    memset(&run, 0, sizeof run);
    run.ctx = ctx;
    run.res = res;
    run.cfg = &cfg;
    run.n = n;
    run.g = (p2p_gpu_t *)xcalloc(n, sizeof *run.g);
    run.link = (p2p_link_t *)xcalloc(nn, sizeof *run.link);
    run.peer = (bool *)xcalloc(nn, sizeof *run.peer);
    run.seed = fb_mix64(fb_now_ms() ^ (u64)fb_mono_ms() << 20);
    run.steps_total = 3 * n + 3 * n * (n - 1) + (n * (n - 1) / 2) * 2;
    double *ce_uni = (double *)xmalloc(nn * sizeof(double));
    double *sm_uni = (double *)xmalloc(nn * sizeof(double));
    double *ce_bidi = (double *)xmalloc(nn * sizeof(double));
    double *sm_bidi = (double *)xmalloc(nn * sizeof(double));
    double *lat = (double *)xmalloc(nn * sizeof(double));
    double *host = (double *)xmalloc(3 * n * sizeof(double)); /* h2d[n], d2h[n], bidi[n] */
    for (size_t k = 0; k < nn; k++)
        ce_uni[k] = sm_uni[k] = ce_bidi[k] = sm_bidi[k] = lat[k] = NAN;
    for (size_t k = 0; k < 3 * n; k++)
        host[k] = NAN;
    int *dev = cfg.devices;
    p2p_topo_t topo = {worker_node(ctx), n, dev, run.link};
    cpu_set_t affinity;
    bool have_affinity = sched_getaffinity(0, sizeof affinity, &affinity) == 0;
    char sizetext[32];
    fb_format_bytes(cfg.size, sizetext, sizeof sizetext);
    worker_log(ctx,
               "p2p: %zu GPU%s, %s per transfer, %" PRIu64 " timed iterations (+1 warm-up), "
               "min_relative %.2f%s",
               n, n == 1 ? "" : "s", sizetext, cfg.iters, cfg.min_relative,
               cfg.min_gbs > 0 ? ", min_gbs set" : "");

    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        run.g[i].dev = dev[i];
        rc = p2p_setup_gpu(&run, &run.g[i]);
    }
    if (rc == 0)
        rc = p2p_enable_peers(&run);
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                run.link[i * n + j] = i == j ? P2P_LINK_UNKNOWN : p2p_classify_link(&run, i, j);
        for (size_t i = 0; i < n; i++)
            worker_log(ctx, "p2p: gpu%d %s PCI %s, %d SMs", run.g[i].dev, run.g[i].name,
                       run.g[i].pci, run.g[i].sms);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                if (i == j)
                    continue;
                int rank = -1;
                if (gpuDeviceGetP2PAttribute(&rank, gpuDevP2PAttrPerformanceRank, dev[i], dev[j]) !=
                    gpuSuccess)
                    (void)gpuGetLastError();
                worker_log(ctx, "p2p: gpu%d->gpu%d %s, peer access %s, performance rank %d", dev[i],
                           dev[j], p2p_link_name(run.link[i * n + j]),
                           run.peer[i * n + j] ? "yes" : "no", rank);
            }
    }
    /* Host <-> device, one GPU at a time so that shared PCIe switches do not mix in. */
    for (size_t i = 0; i < n && rc == 0; i++) {
        double out[3];
        rc = s_measure_host(&run, i, out);
        if (rc == 0) {
            host[i] = out[0];
            host[n + i] = out[1];
            host[2 * n + i] = out[2];
        }
    }
    if (have_affinity)
        (void)sched_setaffinity(0, sizeof affinity, &affinity);
    /* Every ordered pair: one direction at a time, then latency. */
    for (size_t i = 0; i < n && rc == 0; i++)
        for (size_t j = 0; j < n && rc == 0; j++) {
            if (i == j)
                continue;
            char what[64];
            snprintf(what, sizeof what, "gpu%d->gpu%d", dev[i], dev[j]);
            rc = s_measure_pair(&run, K_CE_UNI, i, j, &ce_uni[i * n + j]);
            s_step(&run, what);
            if (rc == 0 && run.peer[i * n + j]) {
                rc = s_measure_pair(&run, K_SM_UNI, i, j, &sm_uni[i * n + j]);
                if (rc == 0)
                    rc = s_measure_latency(&run, i, j, &lat[i * n + j]);
            }
            s_step(&run, what);
            s_step(&run, what);
        }
    /* Every unordered pair, both directions at once. */
    for (size_t i = 0; i < n && rc == 0; i++)
        for (size_t j = i + 1; j < n && rc == 0; j++) {
            char what[64];
            snprintf(what, sizeof what, "gpu%d<->gpu%d", dev[i], dev[j]);
            rc = s_measure_pair(&run, K_CE_BIDI, i, j, &ce_bidi[i * n + j]);
            s_step(&run, what);
            if (rc == 0 && run.peer[i * n + j] && run.peer[j * n + i])
                rc = s_measure_pair(&run, K_SM_BIDI, i, j, &sm_bidi[i * n + j]);
            s_step(&run, what);
        }
    if (run.host_src)
        (void)gpuFreeHost(run.host_src);
    if (run.host_dst)
        (void)gpuFreeHost(run.host_dst);
    for (size_t i = 0; i < n; i++)
        p2p_teardown_gpu(&run.g[i]);

    /* Metrics, tables and judgement of whatever was measured. */
    p2p_add_matrix_metrics(res, &topo, ce_uni, "p2p.ce_uni", "GB/s");
    p2p_add_matrix_metrics(res, &topo, ce_bidi, "p2p.ce_bidi", "GB/s");
    p2p_add_matrix_metrics(res, &topo, sm_uni, "p2p.sm_uni", "GB/s");
    p2p_add_matrix_metrics(res, &topo, sm_bidi, "p2p.sm_bidi", "GB/s");
    p2p_add_matrix_metrics(res, &topo, lat, "p2p.lat_us", "us");
    static const char *const host_names[3] = {"h2d", "d2h", "hd_bidi"};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            if (isfinite(host[k * n + i])) {
                char name[48];
                snprintf(name, sizeof name, "%s.%d", host_names[k], dev[i]);
                fb_result_set_metric(res, name, host[k * n + i], "GB/s");
            }
    fb_result_set_metric(res, "p2p.corrupt_transfers", (double)run.corrupt_transfers, "");
    if (n >= 2) {
        size_t lines_n = 0;
        s_log_lines(ctx, p2p_format_links(&topo, &lines_n), lines_n);
        s_log_matrix(&run, &topo, ce_uni,
                     "p2p.ce_uni GB/s (copy engine; row: source, column: destination)", 1);
        s_log_matrix(&run, &topo, ce_bidi,
                     "p2p.ce_bidi GB/s (copy engine, both directions at once)", 1);
        s_log_matrix(&run, &topo, sm_uni,
                     "p2p.sm_uni GB/s (SM copy kernel on the source writing to the peer)", 1);
        s_log_matrix(&run, &topo, sm_bidi, "p2p.sm_bidi GB/s (SM copies, both directions at once)",
                     1);
        s_log_matrix(&run, &topo, lat,
                     "p2p.lat_us (pointer chase; row: reader, column: memory owner)", 2);
    }
    for (size_t i = 0; i < n; i++)
        worker_log(ctx, "p2p: gpu%d host<->device GB/s: h2d %.1f, d2h %.1f, both at once %.1f",
                   dev[i], host[i], host[n + i], host[2 * n + i]);
    p2p_check_t checks[4] = {
        {"ce_uni", "unidirectional", "copy engine", false, cfg.min_gbs, cfg.min_relative},
        {"ce_bidi", "bidirectional", "copy engine", true, 0, cfg.min_relative},
        {"sm_uni", "unidirectional", "SM copy", false, 0, cfg.min_relative},
        {"sm_bidi", "bidirectional", "SM copy", true, 0, cfg.min_relative},
    };
    const double *mats[4] = {ce_uni, ce_bidi, sm_uni, sm_bidi};
    size_t slow = 0;
    for (int c = 0; c < 4; c++)
        slow += p2p_judge(res, &topo, mats[c], &checks[c]);
    slow += p2p_judge_host(res, &topo, host, "host-to-device", cfg.min_relative);
    slow += p2p_judge_host(res, &topo, host + n, "device-to-host", cfg.min_relative);

    fb_verdict_t verdict;
    if (run.corrupt_transfers || slow)
        verdict = FB_VERDICT_FAIL;
    else if (rc || res->error)
        verdict = FB_VERDICT_ERROR;
    else if (cfg.inject && !run.corrupt_transfers) {
        fb_result_set_error(res, "p2p: the corruption injected on purpose went unnoticed");
        verdict = FB_VERDICT_ERROR;
    } else
        verdict = FB_VERDICT_PASS;

    char ce[160], bidi[160], smu[160], lt[160];
    s_medians_text(&topo, ce_uni, false, ce, sizeof ce);
    s_medians_text(&topo, ce_bidi, true, bidi, sizeof bidi);
    s_medians_text(&topo, sm_uni, false, smu, sizeof smu);
    s_medians_text(&topo, lat, false, lt, sizeof lt);
    double h2d = p2p_median(host, n), d2h = p2p_median(host + n, n),
           hb = p2p_median(host + 2 * n, n);
    worker_progress(ctx, 1.0, "p2p: %s", fb_verdict_name(verdict));
    worker_log(ctx,
               "p2p %s: %zu GPU%s; median GB/s ce_uni [%s], ce_bidi [%s], sm_uni [%s]; latency us "
               "[%s]; host h2d %.1f, d2h %.1f, both %.1f; %" PRIu64 " corrupted transfer%s, %zu "
               "slow link%s%s%s",
               fb_verdict_name(verdict), n, n == 1 ? "" : "s", ce, bidi, smu, lt, h2d, d2h, hb,
               run.corrupt_transfers, run.corrupt_transfers == 1 ? "" : "s", slow,
               slow == 1 ? "" : "s", res->error ? "; error: " : "", res->error ? res->error : "");

    free(ce_uni);
    free(sm_uni);
    free(ce_bidi);
    free(sm_bidi);
    free(lat);
    free(host);
    free(run.g);
    free(run.link);
    free(run.peer);
    free(cfg.devices);
    return verdict;
}
