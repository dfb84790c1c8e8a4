/* SPDX-License-Identifier: Apache-2.0 */
/* One GPU rank of allreduce (ar_gpu.h): the sweep over message sizes on one device through
 * NCCL/RCCL, every result checked on the device, and the `ar_gpu` table that makes the GPU
 * workers (fleetburn-worker-cuda / -hip) and fleetburn-mpirank-cuda able to run ranks.
 *
 * Why two passes per size: bandwidth is measured exactly as nccl-tests does it (back-to-back
 * collectives on one stream, nothing in between), so that the busbw figures compare with
 * all_reduce_perf at every size; a fill or check kernel between timed collectives would add gaps
 * that cost small messages several percent. Correctness is proven in a second pass of the same
 * number of collectives in which every iteration gets its own input and its whole output is
 * compared with the exact expected values. Both passes, their checks and the error counter are
 * enqueued without any host wait; the host synchronises once per size. Kernels use only the
 * gpu_runtime.h dialect and plain integer bit handling for half and bfloat16 (burn_verify.h),
 * so hipcc builds the same source. */
#include "gpu/gpu_runtime.h"

extern "C" {
#include "common/util.h"
#include "gpu/host/burn_verify.h"
}
#include "allreduce/ar_gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Not (yet) in gpu_runtime.h: what this file needs beyond it. */
#ifndef gpuStreamQuery
#if FB_GPU_HIP
#define gpuStreamQuery hipStreamQuery
#define gpuErrorNotReady hipErrorNotReady
#else
#define gpuStreamQuery cudaStreamQuery
#define gpuErrorNotReady cudaErrorNotReady
#endif
#endif

#define AR_THREADS 256
#define AR_POISON 0xff /* every byte: NaN in each float format, -1 in int32 */
#define AR_NO_KEY (~0ull)

/* What the check kernels reduce a size to, on the device. */
typedef struct {
    unsigned long long errors; /* wrong elements, all iterations */
    unsigned long long key;    /* one wrong element: iteration << 40 | index; AR_NO_KEY none */
    double got;                /* its value */
} ar_check_t;

/* The four possible exact results of (op, nranks) (ar_expect_table), by value into kernels. */
typedef struct {
    double v[4];
} ar_table_t;

typedef struct {
    const ar_rank_cfg_t *cfg;
    char *err;
    size_t errlen;
    nccl_dl_t *nccl;
    nccl_dl_comm_t comm;
    gpuStream_t stream;
    gpuEvent_t ev_start, ev_stop;
    gpuEvent_t *ev_it; /* 2 per checked iteration */
    void *send, *recv;
    ar_check_t *d_check, *h_check;
    ar_table_t table;
    int sms;
} rank_t;

/* Records "what: runtime error" and returns -EIO. */
static int s_fail(rank_t *r, const char *what, gpuError_t e)
{
    snprintf(r->err, r->errlen, "%s: %s", what, gpuGetErrorString(e));
    return -EIO;
}

#define TRY(r, call, what)                                                                         \
    do {                                                                                           \
        gpuError_t try_err_ = (call);                                                              \
        if (try_err_ != gpuSuccess)                                                                \
            return s_fail((r), (what), try_err_);                                                  \
    } while (0)

/* ---- kernels --------------------------------------------------------------------------------- */

__device__ __forceinline__ size_t s_first(void)
{
    return blockIdx.x * (size_t)blockDim.x + threadIdx.x;
}

__device__ __forceinline__ size_t s_step(void)
{
    return (size_t)gridDim.x * blockDim.x;
}

/* Element i of a dtype-DT array as a double (exact for every value allreduce produces). */
template <int DT> __device__ __forceinline__ double s_load(const void *p, size_t i)
{
    if (DT == AR_DT_HALF)
        return burn_fp16_to_f32(((const uint16_t *)p)[i]);
    if (DT == AR_DT_BF16)
        return burn_bf16_to_f32(((const uint16_t *)p)[i]);
    if (DT == AR_DT_DOUBLE)
        return ((const double *)p)[i];
    if (DT == AR_DT_INT32)
        return (double)((const int32_t *)p)[i];
    return ((const float *)p)[i];
}

/* Stores the small integer v (exact in every dtype) as element i. */
template <int DT> __device__ __forceinline__ void s_store(void *p, size_t i, int v)
{
    if (DT == AR_DT_HALF)
        ((uint16_t *)p)[i] = burn_f32_to_fp16((float)v);
    else if (DT == AR_DT_BF16)
        ((uint16_t *)p)[i] = burn_f32_to_bf16((float)v);
    else if (DT == AR_DT_DOUBLE)
        ((double *)p)[i] = (double)v;
    else if (DT == AR_DT_INT32)
        ((int32_t *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* send[i] = this rank's input of iteration it. */
template <int DT> __global__ void s_fill(void *send, size_t n, int op, unsigned rank, unsigned it)
{
    for (size_t i = s_first(); i < n; i += s_step())
        s_store<DT>(send, i, ar_input((ar_op_t)op, rank, i, it));
}

/* Counts the elements of recv that differ from the exact reduction of iteration it. The first
 * thread to see one in a size keeps it (index, value): a wrong value says more than a count. */
template <int DT>
__global__ void s_check(const void *recv, size_t n, int op, ar_table_t table, unsigned it,
                        ar_check_t *check)
{
    unsigned long long bad = 0;
    size_t first = 0;
    double first_got = 0;
    for (size_t i = s_first(); i < n; i += s_step()) {
        double got = s_load<DT>(recv, i);
        if (got != table.v[ar_expect_index((ar_op_t)op, i, it)]) {
            if (!bad++) {
                first = i;
                first_got = got;
            }
        }
    }
    if (!bad)
        return;
    atomicAdd(&check->errors, bad);
    unsigned long long key = (unsigned long long)it << 40 | first;
    if (check->key == AR_NO_KEY && atomicCAS(&check->key, AR_NO_KEY, key) == AR_NO_KEY)
        check->got = first_got;
}

/* Test-only: flips the lowest bit of element i (the last mantissa bit in the float formats),
 * the smallest change a check must still see. */
__global__ void s_corrupt(void *recv, size_t i, size_t esize)
{
    ((unsigned char *)recv)[i * esize] ^= 1u;
}

#define AR_DISPATCH(dt, KERNEL, grid, stream, ...)                                                 \
    do {                                                                                           \
        switch (dt) {                                                                              \
        case AR_DT_HALF:                                                                           \
            KERNEL<AR_DT_HALF><<<grid, AR_THREADS, 0, stream>>>(__VA_ARGS__);                      \
            break;                                                                                 \
        case AR_DT_BF16:                                                                           \
            KERNEL<AR_DT_BF16><<<grid, AR_THREADS, 0, stream>>>(__VA_ARGS__);                      \
            break;                                                                                 \
        case AR_DT_DOUBLE:                                                                         \
            KERNEL<AR_DT_DOUBLE><<<grid, AR_THREADS, 0, stream>>>(__VA_ARGS__);                    \
            break;                                                                                 \
        case AR_DT_INT32:                                                                          \
            KERNEL<AR_DT_INT32><<<grid, AR_THREADS, 0, stream>>>(__VA_ARGS__);                     \
            break;                                                                                 \
        default:                                                                                   \
            KERNEL<AR_DT_FLOAT><<<grid, AR_THREADS, 0, stream>>>(__VA_ARGS__);                     \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

static unsigned s_blocks(const rank_t *r, size_t n)
{
    size_t want = (n + AR_THREADS - 1) / AR_THREADS, cap = (size_t)(r->sms > 0 ? r->sms : 32) * 8;
    return (unsigned)(want < cap ? (want ? want : 1) : cap);
}

/* ---- one size -------------------------------------------------------------------------------- */

static int s_collective(rank_t *r, size_t count)
{
    const ar_opts_t *o = &r->cfg->opts;
    return nccl_dl_allreduce(r->nccl, r->send, r->recv, count, o->dtype, o->op, r->comm,
                             (void *)r->stream, r->err, r->errlen);
}

static int s_fill_send(rank_t *r, size_t count, unsigned it)
{
    const ar_opts_t *o = &r->cfg->opts;
    AR_DISPATCH(o->dtype, s_fill, s_blocks(r, count), r->stream, r->send, count, (int)o->op,
                r->cfg->rank, it);
    TRY(r, gpuGetLastError(), "fill kernel");
    return 0;
}

/* Checks the output of iteration it, then poisons it for the next collective. */
static int s_check_recv(rank_t *r, size_t count, unsigned it)
{
    const ar_opts_t *o = &r->cfg->opts;
    AR_DISPATCH(o->dtype, s_check, s_blocks(r, count), r->stream, r->recv, count, (int)o->op,
                r->table, it, r->d_check);
    TRY(r, gpuGetLastError(), "check kernel");
    TRY(r, gpuMemsetAsync(r->recv, AR_POISON, count * ar_dtype_size(o->dtype), r->stream),
        "poisoning the output");
    return 0;
}

/* Pass 1: warm-ups, then iters collectives back to back between one event pair. The send
 * buffer holds iteration 0's input; the last output is checked afterwards. */
static int s_bandwidth_pass(rank_t *r, size_t count)
{
    const ar_opts_t *o = &r->cfg->opts;
    int rc = s_fill_send(r, count, 0);
    for (unsigned w = 0; rc == 0 && w < o->warmup; w++)
        rc = s_collective(r, count);
    if (rc)
        return rc;
    TRY(r, gpuEventRecord(r->ev_start, r->stream), "event record");
    for (unsigned i = 0; rc == 0 && i < o->iters; i++)
        rc = s_collective(r, count);
    if (rc)
        return rc;
    TRY(r, gpuEventRecord(r->ev_stop, r->stream), "event record");
    return s_check_recv(r, count, 0);
}

/* Pass 2: iterations 1..iters, each with its own input, timed alone and checked. */
static int s_checked_pass(rank_t *r, size_t count, bool inject)
{
    const ar_opts_t *o = &r->cfg->opts;
    for (unsigned k = 0; k < o->iters; k++) {
        unsigned it = k + 1;
        int rc = s_fill_send(r, count, it);
        if (rc)
            return rc;
        TRY(r, gpuEventRecord(r->ev_it[2 * k], r->stream), "event record");
        if ((rc = s_collective(r, count)))
            return rc;
        TRY(r, gpuEventRecord(r->ev_it[2 * k + 1], r->stream), "event record");
        if (inject && it == (o->iters + 1) / 2) {
            s_corrupt<<<1, 1, 0, r->stream>>>(r->recv, count / 2, ar_dtype_size(o->dtype));
            TRY(r, gpuGetLastError(), "corrupt kernel");
        }
        if ((rc = s_check_recv(r, count, it)))
            return rc;
    }
    return 0;
}

/* Waits for the stream while watching the communicator: a peer that died or a broken link shows
 * as NCCL's asynchronous error, a hang as no completion within stall_s. */
static int s_wait(rank_t *r, uint64_t bytes)
{
    double t0 = fb_mono_s();
    for (;;) {
        gpuError_t e = gpuStreamQuery(r->stream);
        if (e == gpuSuccess)
            return 0;
        if (e != gpuErrorNotReady)
            return s_fail(r, "waiting for the collectives", e);
        if (nccl_dl_async_error(r->nccl, r->comm, r->err, r->errlen))
            return -EIO;
        if (fb_mono_s() - t0 > r->cfg->stall_s) {
            snprintf(r->err, r->errlen,
                     "size %llu B: not done within %.0f s (a peer stopped, or a link or this GPU "
                     "hung)",
                     (unsigned long long)bytes, r->cfg->stall_s);
            return -ETIMEDOUT;
        }
        usleep(50);
    }
}

/* The counter of a size back to zero, no element kept. */
static int s_reset_check(rank_t *r)
{
    TRY(r, gpuMemsetAsync(&r->d_check->errors, 0, sizeof r->d_check->errors, r->stream),
        "clearing the error counter");
    TRY(r, gpuMemsetAsync(&r->d_check->key, 0xff, sizeof r->d_check->key, r->stream),
        "clearing the error counter");
    return 0;
}

/* Times and errors of a finished size from the events and the counter. */
static int s_collect(rank_t *r, uint64_t bytes, size_t count, ar_size_result_t *out,
                     ar_rank_error_t *bad)
{
    const ar_opts_t *o = &r->cfg->opts;
    float ms = 0;
    TRY(r, gpuEventElapsedTime(&ms, r->ev_start, r->ev_stop), "event time");
    memset(out, 0, sizeof *out);
    out->bytes = bytes;
    out->count = count;
    out->iters = o->iters;
    out->avg_us = (double)ms * 1e3 / o->iters;
    out->min_us = 1e300;
    for (unsigned k = 0; k < o->iters; k++) {
        TRY(r, gpuEventElapsedTime(&ms, r->ev_it[2 * k], r->ev_it[2 * k + 1]), "event time");
        double us = (double)ms * 1e3;
        out->min_us = us < out->min_us ? us : out->min_us;
        out->max_us = us > out->max_us ? us : out->max_us;
    }
    out->algbw_gbs = ar_algbw_gbs(bytes, out->avg_us * 1e-6);
    out->busbw_gbs = ar_busbw_gbs(bytes, out->avg_us * 1e-6, r->cfg->nranks);
    out->errors = r->h_check->errors;
    out->first_bad_rank = out->errors ? (int)r->cfg->rank : -1;
    memset(bad, 0, sizeof *bad);
    bad->bytes = bytes;
    bad->rank = r->cfg->rank;
    bad->errors = out->errors;
    if (out->errors && r->h_check->key != AR_NO_KEY) {
        bad->iter = (unsigned)(r->h_check->key >> 40);
        bad->index = r->h_check->key & ((1ull << 40) - 1);
        bad->expected = r->table.v[ar_expect_index(o->op, bad->index, bad->iter)];
        bad->got = r->h_check->got;
    }
    return 0;
}

/* ar_run_size_fn: both passes of one size, one wait, then its times and errors. */
static int s_run_size(void *self, uint64_t bytes, bool inject, ar_size_result_t *out,
                      ar_rank_error_t *bad)
{
    rank_t *r = (rank_t *)self;
    const ar_opts_t *o = &r->cfg->opts;
    size_t count = (size_t)(bytes / ar_dtype_size(o->dtype));
    int rc = s_reset_check(r);
    if (rc == 0)
        rc = s_bandwidth_pass(r, count);
    if (rc == 0)
        rc = s_checked_pass(r, count, inject);
    if (rc)
        return rc;
    TRY(r,
        gpuMemcpyAsync(r->h_check, r->d_check, sizeof *r->h_check, gpuMemcpyDeviceToHost,
                       r->stream),
        "reading the error counter");
    if ((rc = s_wait(r, bytes)))
        return rc;
    return s_collect(r, bytes, count, out, bad);
}

/* ---- setup and the whole rank ---------------------------------------------------------------- */

static int s_alloc(rank_t *r, void **p, uint64_t bytes, const char *what)
{
    gpuError_t e = gpuMalloc(p, (size_t)bytes);
    if (e == gpuSuccess)
        return 0;
    *p = NULL;
    char text[96];
    snprintf(text, sizeof text, "allocating the %s buffer (%.2f GiB)", what,
             (double)bytes / (1024.0 * 1024 * 1024));
    return s_fail(r, text, e);
}

static int s_setup(rank_t *r)
{
    const ar_rank_cfg_t *cfg = r->cfg;
    TRY(r, gpuSetDevice(cfg->device), "selecting the GPU");
    TRY(r, gpuDeviceGetAttribute(&r->sms, gpuDevAttrMultiProcessorCount, cfg->device),
        "reading the multiprocessor count");
    TRY(r, gpuStreamCreateWithFlags(&r->stream, gpuStreamNonBlocking), "creating a stream");
    TRY(r, gpuEventCreate(&r->ev_start), "creating an event");
    TRY(r, gpuEventCreate(&r->ev_stop), "creating an event");
    r->ev_it = (gpuEvent_t *)xcalloc(2 * (size_t)cfg->opts.iters, sizeof *r->ev_it);
    for (size_t k = 0; k < 2 * (size_t)cfg->opts.iters; k++)
        TRY(r, gpuEventCreate(&r->ev_it[k]), "creating an event");
    uint64_t max_bytes = cfg->sizes[cfg->n_sizes - 1];
    int rc = s_alloc(r, &r->send, max_bytes, "send");
    if (rc == 0)
        rc = s_alloc(r, &r->recv, max_bytes, "receive");
    if (rc == 0)
        rc = s_alloc(r, (void **)&r->d_check, sizeof *r->d_check, "counter");
    if (rc)
        return rc;
    TRY(r, gpuMallocHost((void **)&r->h_check, sizeof *r->h_check), "allocating host memory");
    ar_expect_table(cfg->opts.op, cfg->nranks, r->table.v);
    TRY(r, gpuMemsetAsync(r->recv, AR_POISON, (size_t)max_bytes, r->stream),
        "poisoning the output");
    return 0;
}

/* Frees what s_setup made; teardown errors change nothing, so they are ignored. */
static void s_teardown(rank_t *r, bool failed)
{
    /* After a failure the peers may be gone: abort rather than wait for them. */
    nccl_dl_comm_end(r->nccl, &r->comm, failed);
    if (r->ev_it) {
        for (size_t k = 0; k < 2 * (size_t)r->cfg->opts.iters; k++)
            if (r->ev_it[k])
                (void)gpuEventDestroy(r->ev_it[k]);
        free(r->ev_it);
    }
    if (r->ev_start)
        (void)gpuEventDestroy(r->ev_start);
    if (r->ev_stop)
        (void)gpuEventDestroy(r->ev_stop);
    (void)gpuFree(r->send);
    (void)gpuFree(r->recv);
    (void)gpuFree(r->d_check);
    if (r->h_check)
        (void)gpuFreeHost(r->h_check);
    if (r->stream)
        (void)gpuStreamDestroy(r->stream);
    nccl_dl_close(&r->nccl);
}

/* Loads the library, sets up the GPU, agrees on the id with the launcher and joins. */
static int s_join(rank_t *r, const ar_rank_link_t *link)
{
    const ar_rank_cfg_t *cfg = r->cfg;
    int rc = nccl_dl_open(cfg->library, &r->nccl, r->err, r->errlen);
    if (rc == 0)
        rc = s_setup(r);
    nccl_dl_id_t id;
    memset(&id, 0, sizeof id);
    if (rc == 0 && cfg->rank == 0)
        rc = nccl_dl_unique_id(r->nccl, &id, r->err, r->errlen);
    if (rc == 0)
        rc = link->share_id(link->self, &id, r->err, r->errlen);
    if (rc == 0)
        rc = nccl_dl_comm_init(r->nccl, &r->comm, (int)cfg->nranks, &id, (int)cfg->rank, r->err,
                               r->errlen);
    if (rc == 0)
        rc = link->joined(link->self, nccl_dl_version(r->nccl), r->err, r->errlen);
    return rc;
}

int ar_gpu_rank_run(const ar_rank_cfg_t *cfg, const ar_rank_link_t *link, char *err, size_t errlen)
{
    rank_t r;
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.err = err;
    r.errlen = errlen;
    int rc = s_join(&r, link);
    if (rc == 0) {
        ar_rank_sweep_t sweep = {cfg->sizes, cfg->n_sizes, cfg->rank,       cfg->inject,
                                 s_run_size, &r,           link->size_done, link->self};
        rc = ar_rank_sweep(&sweep, err, errlen);
    }
    s_teardown(&r, rc != 0);
    return rc;
}

int ar_gpu_devices(ar_gpu_dev_t *out, size_t max, size_t *n_out, char *err, size_t errlen)
{
    *n_out = 0;
    int n = 0;
    gpuError_t e = gpuGetDeviceCount(&n);
    if (e != gpuSuccess) {
        snprintf(err, errlen, "%s", gpuGetErrorString(e));
        return -ENODEV;
    }
    for (int i = 0; i < n && (size_t)i < max; i++) {
        gpuDeviceProp prop;
        memset(&out[i], 0, sizeof out[i]);
        if ((e = gpuGetDeviceProperties(&prop, i)) != gpuSuccess) {
            snprintf(err, errlen, "GPU %d: %s", i, gpuGetErrorString(e));
            return -EIO;
        }
        out[i].mem_bytes = (uint64_t)prop.totalGlobalMem;
        if (gpuDeviceGetPCIBusId(out[i].pci, (int)sizeof out[i].pci, i) != gpuSuccess)
            out[i].pci[0] = '\0';
        *n_out = (size_t)i + 1;
    }
    return 0;
}

int ar_gpu_library_version(const char *library, int *version, char *why, size_t whylen)
{
    nccl_dl_t *nccl = NULL;
    int rc = nccl_dl_open(library, &nccl, why, whylen);
    if (rc == 0)
        *version = nccl_dl_version(nccl);
    nccl_dl_close(&nccl);
    return rc;
}

/* Host only: hipcc's device pass would otherwise keep this constant table, and with it
 * references to host functions, on the GPU side. */
#if !defined(__HIP_DEVICE_COMPILE__)
extern "C" const ar_gpu_t ar_gpu = {
    FB_GPU_VENDOR,
    FB_GPU_HIP ? NCCL_DL_AMD : NCCL_DL_NVIDIA,
    FB_GPU_HIP ? NULL : "fleetburn-mpirank-cuda",
    ar_gpu_devices,
    ar_gpu_library_version,
    ar_gpu_rank_run,
};
#endif
