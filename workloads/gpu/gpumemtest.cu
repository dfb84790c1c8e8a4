/* SPDX-License-Identifier: Apache-2.0 */
/* The gpumemtest workload: tests the memory (HBM/GDDR) of every selected GPU at once, one host
 * thread per GPU. Each thread first measures STREAM-triad bandwidth, then allocates mem_fraction
 * of the free memory (in smaller chunks when one allocation is refused) and runs the pattern tests
 * over all of it: walking ones and zeros, own address, moving inversions with 8-bit, 32-bit and
 * random patterns, modulo-20 and bit fade. Write kernels fill memory from a pattern generator;
 * verification kernels regenerate the expected value of every 8-byte word, count miscompares and
 * record the first ones (address, expected, actual) into a small device log with atomics. The
 * host coalesces the records into address ranges (gpu/host/gpumem_report.c) and names each range
 * on "<node>/gpuN". GPU telemetry (gpu/host/telemetry.h) runs around the test, so that XIDs,
 * uncorrectable ECC errors and pages retired or rows remapped while the patterns ran fail the GPU
 * even when every word read back right. inject_bitflips (test-only) flips bits between the
 * first write and verify of the first pattern on the first GPU to prove detection end to end.
 * It stays one file of about 850 lines because the pattern generators are templates that the write
 * and verify kernels instantiate, and a kernel is launched from the file it is compiled in (the
 * worker is built without relocatable device code); what is not kernels or their launches (the
 * parameters, the entry) is about 120 lines. */
extern "C" {
#include "common/result.h"
#include "common/rng.h"
#include "common/units.h"
#include "common/util.h"
#include "gpu/host/gpu_devices.h"
#include "gpu/host/gpumem_report.h"
#include "worker.h"
#if __has_include("gpu/host/telemetry.h")
#include "gpu/host/telemetry.h"
#define GM_TELEMETRY 1
#endif
}
#include "gpu/gpu.h"
#include "gpu/gpu_runtime.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GM_MAX_RECORDS 1024        /* device log entries per GPU between two collections */
#define GM_HOST_RECORDS 8192       /* miscompares kept per GPU for the report */
#define GM_ALIGN (2ULL << 20)      /* allocation granule */
#define GM_MIN_CHUNK (64ULL << 20) /* smaller allocations are not worth it */
#define GM_MAX_CHUNKS 256
#define GM_TRIAD_BYTES (1ULL << 30) /* per array; far beyond any L2 */
#define GM_TRIAD_REPS 10
#define GM_SWEEP_MS 30.0 /* rough time of one sweep, to weigh bit-fade waits in progress */

/* ---- device side ----------------------------------------------------------------------------- */

namespace
{

typedef unsigned long long u64;

struct gm_record {
    u64 addr, expected, actual;
};

struct gm_log {
    u64 count;      /* every miscompare */
    unsigned int n; /* records claimed; may run past GM_MAX_RECORDS */
    unsigned int pad;
    gm_record rec[GM_MAX_RECORDS];
};

__device__ __forceinline__ void s_report(gm_log *log, const void *addr, u64 expected, u64 actual)
{
    atomicAdd(&log->count, 1ULL);
    unsigned int i = atomicAdd(&log->n, 1u);
    if (i < GM_MAX_RECORDS) {
        log->rec[i].addr = (u64)(uintptr_t)addr;
        log->rec[i].expected = expected;
        log->rec[i].actual = actual;
    }
}

__device__ __forceinline__ u64 s_rotl(u64 x, unsigned s)
{
    s &= 63;
    return s ? (x << s) | (x >> (64 - s)) : x;
}

/* Pattern generators: the value of the word at global index i and address addr. */
struct g_const {
    u64 c;
    __device__ u64 operator()(u64, const void *) const
    {
        return c;
    }
};
struct g_walk { /* one bit (or one zero) walking across consecutive words */
    unsigned shift;
    u64 invert;
    __device__ u64 operator()(u64 i, const void *) const
    {
        return s_rotl(1ULL, (unsigned)(i + shift)) ^ invert;
    }
};
struct g_address {
    u64 invert;
    __device__ u64 operator()(u64, const void *a) const
    {
        return (u64)(uintptr_t)a ^ invert;
    }
};
struct g_walk32 { /* a 32-bit walking one, shifted by one bit per 32-bit half-word */
    unsigned shift;
    __device__ u64 operator()(u64 i, const void *) const
    {
        unsigned lo = 1u << ((unsigned)(2 * i + shift) & 31);
        unsigned hi = 1u << ((unsigned)(2 * i + 1 + shift) & 31);
        return (u64)hi << 32 | lo;
    }
};
struct g_random {
    u64 seed;
    __device__ u64 operator()(u64 i, const void *) const
    {
        return fb_mix64(seed ^ (i * 0xD6E8FEB86659FD93ULL));
    }
};
struct g_modulo20 {
    u64 p;
    unsigned offset;
    __device__ u64 operator()(u64 i, const void *) const
    {
        return i % 20 == offset ? p : ~p;
    }
};
template <class G> struct g_inverted {
    G g;
    __device__ u64 operator()(u64 i, const void *a) const
    {
        return ~g(i, a);
    }
};

/* Kernels work on pairs of words (16-byte accesses); chunks hold an even number of words. */
template <class G> __global__ void k_write(u64 *p, size_t pairs, u64 base, G g)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < pairs; k += stride) {
        u64 i = base + 2 * k;
        ulonglong2 v;
        v.x = g(i, p + 2 * k);
        v.y = g(i + 1, p + 2 * k + 1);
        reinterpret_cast<ulonglong2 *>(p)[k] = v;
    }
}

template <class G> __global__ void k_verify(const u64 *p, size_t pairs, u64 base, G g, gm_log *log)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < pairs; k += stride) {
        u64 i = base + 2 * k;
        ulonglong2 v = reinterpret_cast<const ulonglong2 *>(p)[k];
        u64 e0 = g(i, p + 2 * k), e1 = g(i + 1, p + 2 * k + 1);
        if (v.x != e0)
            s_report(log, p + 2 * k, e0, v.x);
        if (v.y != e1)
            s_report(log, p + 2 * k + 1, e1, v.y);
    }
}

/* Checks every word against g and writes its complement; descending walks memory from the top. */
template <class G>
__global__ void k_verify_invert(u64 *p, size_t pairs, u64 base, G g, int descending, gm_log *log)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < pairs; t += stride) {
        size_t k = descending ? pairs - 1 - t : t;
        u64 i = base + 2 * k;
        ulonglong2 v = reinterpret_cast<ulonglong2 *>(p)[k];
        u64 e0 = g(i, p + 2 * k), e1 = g(i + 1, p + 2 * k + 1);
        if (v.x != e0)
            s_report(log, p + 2 * k, e0, v.x);
        if (v.y != e1)
            s_report(log, p + 2 * k + 1, e1, v.y);
        ulonglong2 w;
        w.x = ~e0;
        w.y = ~e1;
        reinterpret_cast<ulonglong2 *>(p)[k] = w;
    }
}

/* Test-only: flips count bits at positions drawn from seed. */
__global__ void k_flip(u64 *p, size_t words, u64 seed, unsigned count)
{
    unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count)
        return;
    u64 h = fb_mix64(seed + k);
    atomicXor(&p[h % words], 1ULL << (fb_mix64(h) & 63));
}

__global__ void k_triad_init(double *a, double *b, double *c, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        a[i] = 0.0;
        b[i] = (double)(i & 1023);
        c[i] = 0.5 * (double)(i & 7);
    }
}

/* a = b + s*c on pairs of doubles. */
__global__ void k_triad(double2 *a, const double2 *b, const double2 *c, double s, size_t pairs)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += stride) {
        double2 x = b[i], y = c[i], r;
        r.x = x.x + s * y.x;
        r.y = x.y + s * y.y;
        a[i] = r;
    }
}

/* The inputs are small multiples of 1/2, so b + s*c is exact however it is computed. */
__global__ void k_triad_check(const double *a, size_t n, double s, gm_log *log)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double want = (double)(i & 1023) + s * (0.5 * (double)(i & 7));
        if (a[i] != want)
            s_report(log, &a[i], (u64)__double_as_longlong(want), (u64)__double_as_longlong(a[i]));
    }
}

} // namespace

/* ---- host side ------------------------------------------------------------------------------- */

typedef struct {
    double mem_fraction;
    uint64_t passes;
    gpumem_pattern_t *patterns;
    size_t n_patterns;
    uint64_t fade_ms;
    int *devices;
    size_t n_devices;
    uint64_t inject; /* bits to flip on the first GPU, 0: none */
    uint64_t seed;
} gm_config_t;

typedef struct {
    u64 *ptr;
    size_t words; /* even */
    u64 base;     /* global index of its first word */
} gm_chunk_t;

typedef struct gm_run gm_run_t;

typedef struct {
    gm_run_t *run;
    pthread_t tid;
    gpumem_gpu_t g; /* what is reported */
    gm_chunk_t chunks[GM_MAX_CHUNKS];
    gm_log *log; /* device */
    unsigned grid, block;
    bool inject_pending;
    double sweeps_done, sweeps_total; /* progress */
    bool started;
    int finished; /* under run->lock */
} gm_gpu_t;

struct gm_run {
    worker_ctx_t *ctx;
    const gm_config_t *cfg;
    gm_gpu_t *gpus;
    size_t n;
    pthread_mutex_t lock; /* progress counters */
};

/* Records "gpuN: what: error" as this GPU's error (first one wins). */
static void s_gpu_error(gm_gpu_t *t, const char *what, gpuError_t err)
{
    if (!t->g.error[0])
        snprintf(t->g.error, sizeof t->g.error, "gpu%d: %s: %s", t->g.device, what,
                 gpuGetErrorString(err));
}

#define GM_TRY(t, call, what)                                                                      \
    do {                                                                                           \
        gpuError_t gm_err_ = (call);                                                               \
        if (gm_err_ != gpuSuccess) {                                                               \
            s_gpu_error((t), (what), gm_err_);                                                     \
            return -EIO;                                                                           \
        }                                                                                          \
    } while (0)

static void s_progress(gm_gpu_t *t, double sweeps)
{
    pthread_mutex_lock(&t->run->lock);
    t->sweeps_done += sweeps;
    pthread_mutex_unlock(&t->run->lock);
}

/* Moves what the device log holds into the host list, then empties the log. */
static int s_collect(gm_gpu_t *t, gpumem_pattern_t pattern, unsigned pass)
{
    struct {
        u64 count;
        unsigned int n, pad;
    } head;
    GM_TRY(t, gpuDeviceSynchronize(), "kernel");
    GM_TRY(t, gpuMemcpy(&head, t->log, sizeof head, gpuMemcpyDeviceToHost),
           "reading the error log");
    if (!head.count)
        return 0;
    t->g.errors += head.count;
    size_t n = head.n < GM_MAX_RECORDS ? head.n : GM_MAX_RECORDS;
    size_t room = GM_HOST_RECORDS - t->g.n_records;
    if (n > room)
        n = room;
    if (n) {
        gm_record *rec = (gm_record *)xmalloc(n * sizeof *rec);
        const char *dev_rec = (const char *)t->log + offsetof(gm_log, rec);
        gpuError_t err = gpuMemcpy(rec, dev_rec, n * sizeof *rec, gpuMemcpyDeviceToHost);
        if (err != gpuSuccess) {
            free(rec);
            s_gpu_error(t, "reading the error log", err);
            return -EIO;
        }
        for (size_t i = 0; i < n; i++) {
            gpumem_miscompare_t *m = &t->g.records[t->g.n_records++];
            m->addr = rec[i].addr;
            m->expected = rec[i].expected;
            m->actual = rec[i].actual;
            m->pattern = pattern;
            m->pass = pass;
        }
        free(rec);
    }
    GM_TRY(t, gpuMemset(t->log, 0, sizeof head), "clearing the error log");
    return 0;
}

template <class G> static int s_write(gm_gpu_t *t, G g)
{
    for (unsigned c = 0; c < t->g.chunks; c++) {
        const gm_chunk_t *ch = &t->chunks[c];
        k_write<G><<<t->grid, t->block>>>(ch->ptr, ch->words / 2, ch->base, g);
        GM_TRY(t, gpuGetLastError(), "launching a write kernel");
    }
    s_progress(t, 1);
    return 0;
}

template <class G> static int s_verify(gm_gpu_t *t, G g, gpumem_pattern_t pattern, unsigned pass)
{
    for (unsigned c = 0; c < t->g.chunks; c++) {
        const gm_chunk_t *ch = &t->chunks[c];
        k_verify<G><<<t->grid, t->block>>>(ch->ptr, ch->words / 2, ch->base, g, t->log);
        GM_TRY(t, gpuGetLastError(), "launching a verify kernel");
    }
    s_progress(t, 1);
    return s_collect(t, pattern, pass);
}

template <class G>
static int s_verify_invert(gm_gpu_t *t, G g, int descending, gpumem_pattern_t pattern,
                           unsigned pass)
{
    for (unsigned c = 0; c < t->g.chunks; c++) {
        unsigned ci = descending ? t->g.chunks - 1 - c : c;
        const gm_chunk_t *ch = &t->chunks[ci];
        k_verify_invert<G>
            <<<t->grid, t->block>>>(ch->ptr, ch->words / 2, ch->base, g, descending, t->log);
        GM_TRY(t, gpuGetLastError(), "launching a verify kernel");
    }
    s_progress(t, 2);
    return s_collect(t, pattern, pass);
}

/* Test-only: the flips go between the first write and its verification. */
static int s_maybe_inject(gm_gpu_t *t)
{
    if (!t->inject_pending)
        return 0;
    t->inject_pending = false;
    const gm_chunk_t *ch = &t->chunks[0];
    unsigned count = (unsigned)t->run->cfg->inject;
    k_flip<<<(count + 255) / 256, 256>>>(ch->ptr, ch->words, fb_mix64(t->run->cfg->seed ^ 0xF11Bu),
                                         count);
    GM_TRY(t, gpuGetLastError(), "launching the bit-flip injection");
    GM_TRY(t, gpuDeviceSynchronize(), "bit-flip injection");
    t->g.injected = count;
    worker_log(t->run->ctx, "gpu%d: flipped %u bits on purpose (inject_bitflips)", t->g.device,
               count);
    return 0;
}

/* write p; verify p, write ~p ascending; verify ~p, write p descending; verify p. */
template <class G>
static int s_moving_inversions(gm_gpu_t *t, G g, gpumem_pattern_t pat, unsigned pass)
{
    g_inverted<G> inv = {g};
    if (s_write(t, g) || s_maybe_inject(t) || s_verify_invert(t, g, 0, pat, pass) ||
        s_verify_invert(t, inv, 1, pat, pass) || s_verify(t, g, pat, pass))
        return -EIO;
    return 0;
}

/* Sleeps ms in slices, counting the time towards progress. */
static void s_fade_wait(gm_gpu_t *t, uint64_t ms)
{
    uint64_t left = ms;
    while (left) {
        uint64_t step = left < 200 ? left : 200;
        struct timespec ts = {(time_t)(step / 1000), (long)(step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        left -= step;
        s_progress(t, (double)step / GM_SWEEP_MS);
    }
}

static int s_run_pattern(gm_gpu_t *t, gpumem_pattern_t p, unsigned pass)
{
    const gm_config_t *cfg = t->run->cfg;
    u64 seed = fb_mix64(cfg->seed + 0x100ULL * pass + (u64)p);
    switch (p) {
    case GPUMEM_WALKING_ONES:
    case GPUMEM_WALKING_ZEROS:
        for (unsigned s = 0; s < 64; s++) {
            g_walk g = {s, p == GPUMEM_WALKING_ZEROS ? ~0ULL : 0ULL};
            if (s_write(t, g) || s_maybe_inject(t) || s_verify(t, g, p, pass))
                return -EIO;
        }
        return 0;
    case GPUMEM_OWN_ADDRESS:
        for (int inv = 0; inv < 2; inv++) {
            g_address g = {inv ? ~0ULL : 0ULL};
            if (s_write(t, g) || s_maybe_inject(t) || s_verify(t, g, p, pass))
                return -EIO;
        }
        return 0;
    case GPUMEM_MOVING_INV_8:
        for (unsigned b = 0; b < 8; b++)
            if (s_moving_inversions(t, g_const{0x0101010101010101ULL << b}, p, pass))
                return -EIO;
        return 0;
    case GPUMEM_MOVING_INV_32:
        for (unsigned s = 0; s < 32; s++)
            if (s_moving_inversions(t, g_walk32{s}, p, pass))
                return -EIO;
        return 0;
    case GPUMEM_MOVING_INV_RANDOM:
        for (unsigned r = 0; r < 2; r++)
            if (s_moving_inversions(t, g_random{fb_mix64(seed + r)}, p, pass))
                return -EIO;
        return 0;
    case GPUMEM_MODULO20:
        for (unsigned off = 0; off < 20; off++) {
            /* The neighbours of every 20th word are written twice after it, then all checked. */
            g_modulo20 g = {off & 1 ? ~seed : seed, off};
            if (s_write(t, g) || s_maybe_inject(t) || s_write(t, g) || s_verify(t, g, p, pass))
                return -EIO;
        }
        return 0;
    case GPUMEM_BIT_FADE:
        for (int ones = 0; ones < 2; ones++) {
            g_const g = {ones ? ~0ULL : 0ULL};
            if (s_write(t, g) || s_maybe_inject(t))
                return -EIO;
            GM_TRY(t, gpuDeviceSynchronize(), "bit fade write");
            s_fade_wait(t, cfg->fade_ms);
            if (s_verify(t, g, p, pass))
                return -EIO;
        }
        return 0;
    default:
        return 0;
    }
}

static double s_pattern_sweeps(gpumem_pattern_t p, uint64_t fade_ms)
{
    switch (p) {
    case GPUMEM_WALKING_ONES:
    case GPUMEM_WALKING_ZEROS:
        return 64 * 2;
    case GPUMEM_OWN_ADDRESS:
        return 4;
    case GPUMEM_MOVING_INV_8:
        return 8 * 6;
    case GPUMEM_MOVING_INV_32:
        return 32 * 6;
    case GPUMEM_MOVING_INV_RANDOM:
        return 2 * 6;
    case GPUMEM_MODULO20:
        return 20 * 3;
    case GPUMEM_BIT_FADE:
        return 4 + 2 * (double)fade_ms / GM_SWEEP_MS;
    default:
        return 0;
    }
}

/* STREAM triad over three arrays of up to 1 GiB each; best of GM_TRIAD_REPS, as STREAM reports.
 * No memory for the arrays is not an error: bandwidth is then simply not measured. */
static int s_triad(gm_gpu_t *t)
{
    size_t free_b = 0, total_b = 0;
    GM_TRY(t, gpuMemGetInfo(&free_b, &total_b), "gpuMemGetInfo");
    uint64_t bytes = GM_TRIAD_BYTES;
    while (bytes > GM_MIN_CHUNK && bytes * 3 > free_b / 2)
        bytes /= 2;
    const size_t n = bytes / sizeof(double);
    const double s = 3.0;
    double *a = NULL, *b = NULL, *c = NULL;
    gpuEvent_t ev[2] = {NULL, NULL};
    float best_ms = 0;
    gpuError_t err = gpuSuccess;
    const char *what = "allocating the triad arrays";
    if (gpuMalloc((void **)&a, bytes) != gpuSuccess ||
        gpuMalloc((void **)&b, bytes) != gpuSuccess ||
        gpuMalloc((void **)&c, bytes) != gpuSuccess) {
        (void)gpuGetLastError();
        worker_log(t->run->ctx, "gpu%d: no memory for the triad arrays; bandwidth not measured",
                   t->g.device);
    } else {
        what = "triad";
        err = gpuEventCreate(&ev[0]);
        if (err == gpuSuccess)
            err = gpuEventCreate(&ev[1]);
        if (err == gpuSuccess) {
            k_triad_init<<<t->grid, t->block>>>(a, b, c, n);
            k_triad<<<t->grid, t->block>>>((double2 *)a, (const double2 *)b, (const double2 *)c, s,
                                           n / 2);
            err = gpuGetLastError();
        }
        for (int r = 0; r < GM_TRIAD_REPS && err == gpuSuccess; r++) {
            float ms = 0;
            err = gpuEventRecord(ev[0], 0);
            k_triad<<<t->grid, t->block>>>((double2 *)a, (const double2 *)b, (const double2 *)c, s,
                                           n / 2);
            if (err == gpuSuccess)
                err = gpuGetLastError();
            if (err == gpuSuccess)
                err = gpuEventRecord(ev[1], 0);
            if (err == gpuSuccess)
                err = gpuEventSynchronize(ev[1]);
            if (err == gpuSuccess)
                err = gpuEventElapsedTime(&ms, ev[0], ev[1]);
            if (err == gpuSuccess && ms > 0 && (best_ms == 0 || ms < best_ms))
                best_ms = ms;
        }
        if (err == gpuSuccess) {
            k_triad_check<<<t->grid, t->block>>>(a, n, s, t->log);
            err = gpuGetLastError();
        }
        if (err == gpuSuccess && best_ms > 0)
            t->g.triad_gbs = 3.0 * (double)bytes / ((double)best_ms * 1e-3) / 1e9;
    }
    int rc = 0;
    if (err != gpuSuccess) {
        s_gpu_error(t, what, err);
        rc = -EIO;
    } else if (a && b && c) {
        rc = s_collect(t, GPUMEM_TRIAD, 0);
    }
    for (int i = 0; i < 2; i++)
        if (ev[i])
            (void)gpuEventDestroy(ev[i]);
    (void)gpuFree(a);
    (void)gpuFree(b);
    (void)gpuFree(c);
    return rc;
}

/* mem_fraction of free memory in as few allocations as the driver grants. */
static int s_allocate(gm_gpu_t *t)
{
    size_t free_b = 0, total_b = 0;
    GM_TRY(t, gpuMemGetInfo(&free_b, &total_b), "gpuMemGetInfo");
    t->g.free_bytes = free_b;
    t->g.total_bytes = total_b;
    uint64_t target = (uint64_t)((double)free_b * t->run->cfg->mem_fraction) / GM_ALIGN * GM_ALIGN;
    uint64_t remaining = target, chunk = target, base = 0;
    while (remaining >= GM_MIN_CHUNK && t->g.chunks < GM_MAX_CHUNKS) {
        if (chunk > remaining)
            chunk = remaining;
        chunk = chunk / GM_ALIGN * GM_ALIGN;
        void *p = NULL;
        if (gpuMalloc(&p, chunk) == gpuSuccess) {
            gm_chunk_t *ch = &t->chunks[t->g.chunks++];
            ch->ptr = (u64 *)p;
            ch->words = chunk / sizeof(u64);
            ch->base = base;
            base += ch->words;
            remaining -= chunk;
            t->g.tested_bytes += chunk;
        } else {
            (void)gpuGetLastError();
            chunk = chunk / 2 / GM_ALIGN * GM_ALIGN;
            if (chunk < GM_MIN_CHUNK)
                break;
        }
    }
    char tested[32], freetext[32], total[32];
    fb_format_bytes(t->g.tested_bytes, tested, sizeof tested);
    fb_format_bytes(free_b, freetext, sizeof freetext);
    fb_format_bytes(total_b, total, sizeof total);
    if (!t->g.tested_bytes) {
        snprintf(t->g.error, sizeof t->g.error,
                 "gpu%d: could not allocate any test memory (%s free of %s)", t->g.device, freetext,
                 total);
        return -ENOMEM;
    }
    worker_log(t->run->ctx,
               "gpu%d (%s, PCI %s): testing %s = %.1f%% of %s free, %.1f%% of %s total, in %u "
               "allocation%s",
               t->g.device, t->g.name, t->g.pci, tested,
               100.0 * (double)t->g.tested_bytes / (double)free_b, freetext,
               100.0 * (double)t->g.tested_bytes / (double)total_b, total, t->g.chunks,
               t->g.chunks == 1 ? "" : "s");
    if (t->g.tested_bytes + GM_MIN_CHUNK < target)
        worker_log(t->run->ctx, "gpu%d: the driver refused part of the memory asked for",
                   t->g.device);
    return 0;
}

static void *s_gpu_thread(void *arg)
{
    gm_gpu_t *t = (gm_gpu_t *)arg;
    const gm_config_t *cfg = t->run->cfg;
    int dev = t->g.device, sms = 0;
    gpuDeviceProp prop;
    if (gpuSetDevice(dev) != gpuSuccess || gpuGetDeviceProperties(&prop, dev) != gpuSuccess) {
        s_gpu_error(t, "opening the device", gpuGetLastError());
        goto done;
    }
    fb_strlcpy(t->g.name, prop.name, sizeof t->g.name);
    if (gpuDeviceGetPCIBusId(t->g.pci, (int)sizeof t->g.pci, dev) != gpuSuccess)
        fb_strlcpy(t->g.pci, "unknown", sizeof t->g.pci);
    if (gpuDeviceGetAttribute(&sms, gpuDevAttrMultiProcessorCount, dev) != gpuSuccess || sms <= 0)
        sms = 1;
    t->block = 256;
    t->grid = (unsigned)sms * 8;
    if (gpuMalloc((void **)&t->log, sizeof(gm_log)) != gpuSuccess ||
        gpuMemset(t->log, 0, sizeof(gm_log)) != gpuSuccess) {
        s_gpu_error(t, "allocating the error log", gpuGetLastError());
        t->log = NULL;
        goto done;
    }
    if (s_triad(t) || s_allocate(t))
        goto done;
    for (unsigned pass = 0; pass < cfg->passes; pass++)
        for (size_t i = 0; i < cfg->n_patterns; i++) {
            if (s_run_pattern(t, cfg->patterns[i], pass))
                goto done;
            worker_log(t->run->ctx, "gpu%d: %s pass %u done, %" PRIu64 " miscompare%s so far", dev,
                       gpumem_pattern_name(cfg->patterns[i]), pass + 1, t->g.errors,
                       t->g.errors == 1 ? "" : "s");
        }
done:
    for (unsigned c = 0; c < t->g.chunks; c++)
        (void)gpuFree(t->chunks[c].ptr);
    if (t->log)
        (void)gpuFree(t->log);
    pthread_mutex_lock(&t->run->lock);
    t->finished = 1;
    pthread_mutex_unlock(&t->run->lock);
    return NULL;
}

/* ---- parameters ------------------------------------------------------------------------------ */

static int s_parse(worker_ctx_t *ctx, gm_config_t *cfg, int n_visible)
{
    const char *text;
    if ((text = worker_param(ctx, "inject_bitflips"))) {
        if (!worker_fault_injection_allowed(ctx)) {
            worker_error(ctx, "inject_bitflips refused: the agent was not started with "
                          "--allow-fault-injection");
            return -EPERM;
        }
        if (fb_parse_uint(text, 1000000, &cfg->inject) || !cfg->inject) {
            worker_error(ctx,
                     "gpumemtest: inject_bitflips '%s' must be a whole number from 1 to 1000000",
                     text);
            return -EINVAL;
        }
    }
    text = worker_param(ctx, "mem_fraction");
    if (!text)
        text = "0.92";
    if (fb_parse_double(text, &cfg->mem_fraction) || !(cfg->mem_fraction > 0) ||
        cfg->mem_fraction > 0.99) {
        worker_error(ctx, "gpumemtest: mem_fraction '%s' must be a number above 0 and at most 0.99",
                 text);
        return -EINVAL;
    }
    text = worker_param(ctx, "passes");
    if (!text)
        text = "1";
    if (fb_parse_uint(text, 1000000, &cfg->passes) || !cfg->passes) {
        worker_error(ctx, "gpumemtest: passes '%s' must be a whole number from 1 to 1000000", text);
        return -EINVAL;
    }
    text = worker_param(ctx, "bit_fade_delay");
    if (!text)
        text = "30s";
    if (fb_parse_duration_ms(text, &cfg->fade_ms) || cfg->fade_ms > 24ULL * 3600 * 1000) {
        worker_error(ctx, "gpumemtest: bit_fade_delay '%s' must be a duration up to 24h (30s, 2m)",
                 text);
        return -EINVAL;
    }
    text = worker_param(ctx, "patterns");
    char *bad = NULL;
    if (gpumem_parse_patterns(text ? text : "all", &cfg->patterns, &cfg->n_patterns, &bad)) {
        worker_error(ctx, "gpumemtest: unknown pattern '%s' in patterns '%s'", bad ? bad : "",
                 text ? text : "all");
        free(bad);
        return -EINVAL;
    }
    text = worker_param(ctx, "devices");
    if (!text)
        text = "all";
    int rc = gpu_parse_devices(text, n_visible, &cfg->devices, &cfg->n_devices);
    if (rc) {
        worker_error(ctx, "gpumemtest: devices '%s' %s (%d GPU%s visible)", text,
                 rc == -ENODEV ? "names a GPU that is not there"
                               : "is not 'all' or a list of indices",
                 n_visible, n_visible == 1 ? "" : "s");
        return rc;
    }
    return 0;
}

fb_verdict_t gpumemtest_run(worker_ctx_t *ctx)
{
    fb_result_t *res = worker_result(ctx);
    gm_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    /* A refused test-only switch is reported before anything else, GPUs or not. */
    if (worker_param(ctx, "inject_bitflips") && !worker_fault_injection_allowed(ctx))
        return worker_error(ctx, "inject_bitflips refused: the agent was not started with "
                             "--allow-fault-injection");
    /* gpuN in findings must match the inventory and telemetry, which number GPUs in PCI order. */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    int n_visible = 0;
    gpuError_t err = gpuGetDeviceCount(&n_visible);
    if (err != gpuSuccess || n_visible <= 0)
        return gpu_no_devices(ctx, "gpumemtest", FB_GPU_VENDOR,
                              err != gpuSuccess ? gpuGetErrorString(err) : "no devices");
    if (s_parse(ctx, &cfg, n_visible)) {
        free(cfg.patterns);
        free(cfg.devices);
        return FB_VERDICT_ERROR;
    }
    cfg.seed = fb_mix64(fb_now_ms() ^ (u64)fb_mono_ms() << 20);
    worker_log(ctx,
               "gpumemtest: %zu GPU%s, mem_fraction %.3f, %" PRIu64 " pass%s, %zu pattern%s, "
               "bit_fade_delay %" PRIu64 " ms, seed 0x%016" PRIx64,
               cfg.n_devices, cfg.n_devices == 1 ? "" : "s", cfg.mem_fraction, cfg.passes,
               cfg.passes == 1 ? "" : "es", cfg.n_patterns, cfg.n_patterns == 1 ? "" : "s",
               cfg.fade_ms, cfg.seed);

    gm_run_t run;
    run.ctx = ctx;
    run.cfg = &cfg;
    run.n = cfg.n_devices;
    run.gpus = (gm_gpu_t *)xcalloc(run.n, sizeof *run.gpus);
    pthread_mutex_init(&run.lock, NULL);
    double per_pass = 0;
    for (size_t i = 0; i < cfg.n_patterns; i++)
        per_pass += s_pattern_sweeps(cfg.patterns[i], cfg.fade_ms);

#ifdef GM_TELEMETRY
    telemetry_t *telemetry = telemetry_start(ctx, 1.0);
#else
    worker_log(ctx,
               "gpumemtest: built without GPU telemetry; ECC, XID and retired pages not watched");
#endif
    for (size_t i = 0; i < run.n; i++) {
        gm_gpu_t *t = &run.gpus[i];
        t->run = &run;
        t->g.device = cfg.devices[i];
        t->g.records = (gpumem_miscompare_t *)xcalloc(GM_HOST_RECORDS, sizeof *t->g.records);
        t->inject_pending = cfg.inject && i == 0;
        t->sweeps_total = per_pass * (double)cfg.passes;
        int rc = pthread_create(&t->tid, NULL, s_gpu_thread, t);
        if (rc) {
            snprintf(t->g.error, sizeof t->g.error, "gpu%d: cannot start its thread: %s",
                     t->g.device, strerror(rc));
            t->finished = 1;
        } else {
            t->started = true;
        }
    }
    for (;;) {
        size_t done = 0;
        double frac = 0;
        pthread_mutex_lock(&run.lock);
        for (size_t i = 0; i < run.n; i++) {
            const gm_gpu_t *t = &run.gpus[i];
            done += t->finished != 0;
            double f = t->finished           ? 1.0
                       : t->sweeps_total > 0 ? t->sweeps_done / t->sweeps_total
                                             : 0.0;
            frac += f > 1 ? 1 : f;
        }
        pthread_mutex_unlock(&run.lock);
        if (done == run.n)
            break;
        worker_progress(ctx, frac / (double)run.n * 0.99, "gpumemtest: %zu of %zu GPUs done", done,
                        run.n);
        struct timespec ts = {0, 250 * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < run.n; i++)
        if (run.gpus[i].started)
            pthread_join(run.gpus[i].tid, NULL);
#ifdef GM_TELEMETRY
    int faults = telemetry_stop(&telemetry, ctx);
#else
    int faults = -ENOSYS;
#endif

    gpumem_gpu_t *gs = (gpumem_gpu_t *)xcalloc(run.n, sizeof *gs);
    for (size_t i = 0; i < run.n; i++) {
        gs[i] = run.gpus[i].g;
        gpumem_report_gpu(res, worker_node(ctx), &gs[i]);
    }
    fb_verdict_t verdict = gpumem_verdict(gs, run.n, faults);
    if (verdict == FB_VERDICT_ERROR) {
        for (size_t i = 0; i < run.n && !res->error; i++)
            if (gs[i].error[0])
                fb_result_set_error(res, "%s", gs[i].error);
        for (size_t i = 0; i < run.n && !res->error; i++)
            if (gs[i].injected && !gs[i].errors)
                fb_result_set_error(res,
                                    "gpu%d: %" PRIu64 " bits flipped on purpose went unnoticed",
                                    gs[i].device, gs[i].injected);
    }
    char *line = gpumem_summary(gs, run.n, verdict, faults);
    worker_progress(ctx, 1.0, "gpumemtest: %s", fb_verdict_name(verdict));
    worker_log(ctx, "%s", line);
    free(line);

    for (size_t i = 0; i < run.n; i++)
        free(run.gpus[i].g.records);
    free(gs);
    free(run.gpus);
    pthread_mutex_destroy(&run.lock);
    free(cfg.patterns);
    free(cfg.devices);
    return verdict;
}
