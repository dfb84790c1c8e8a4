/* SPDX-License-Identifier: Apache-2.0 */
/* The p2p workload's insides, shared by its two files (p2p.cu has the whole picture): p2p.cu (the
 * kernels and their launches, the measurements, the workload's entry and report) and p2p_setup.cu
 * (the parameters, one GPU's buffers and streams, peer access, how each pair is linked). The
 * kernels stay in p2p.cu because a kernel is launched from the file it is compiled in (the worker
 * is built without relocatable device code). Nothing else includes it. */
#ifndef FB_P2P_INTERNAL_H
#define FB_P2P_INTERNAL_H

extern "C" {
#include "common/result.h"
#include "gpu/host/p2p_matrix.h"
#include "worker.h"
}
#include "gpu/gpu_runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define P2P_MAX_RECORDS 16 /* miscompares recorded per GPU per measurement */
#define P2P_MIN_SIZE 4096
#define P2P_MAX_SIZE (16ULL << 30)
#define P2P_CHASE_SLOTS 4096 /* pointer-chase nodes, 256 B apart: 1 MiB of the peer */
#define P2P_CHASE_STRIDE 256
#define P2P_CHASE_HOPS 20000
#define P2P_MAX_CPUS 8192

typedef unsigned long long u64;

struct p2p_record {
    u64 offset, expected, actual, tag;
};

struct p2p_log {
    u64 count;
    unsigned int n, pad;
    p2p_record rec[P2P_MAX_RECORDS];
};

typedef struct {
    uint64_t size, iters;
    int *devices;
    size_t n;
    double min_gbs, min_relative;
    bool inject;
} p2p_config_t;

typedef struct {
    int dev;
    char pci[32]; /* normalised "0000:17:00.0" */
    char name[96];
    int sms;
    u64 *src, *dst; /* size bytes each */
    p2p_log *log;
    u64 *scratch; /* pointer-chase result */
    gpuStream_t s, s2;
    gpuEvent_t start, stop, sync, sync2;
} p2p_gpu_t;

typedef struct {
    worker_ctx_t *ctx;
    fb_result_t *res;
    const p2p_config_t *cfg;
    p2p_gpu_t *g;
    size_t n;
    p2p_link_t *link; /* n*n */
    bool *peer;       /* n*n: i can access j's memory */
    u64 seed;
    size_t steps, steps_total;
    uint64_t corrupt_transfers; /* transfers that delivered wrong data */
    bool injected;
    u64 *host_src, *host_dst; /* pinned, per GPU in turn */
} p2p_run_t;

/* Sets the run's error from a failed runtime call (the first one wins) and returns -EIO. */
int p2p_fail(p2p_run_t *run, const char *what, gpuError_t err);

#define P2P_TRY(run, call, what)                                                                   \
    do {                                                                                           \
        gpuError_t p2p_err_ = (call);                                                              \
        if (p2p_err_ != gpuSuccess)                                                                \
            return p2p_fail((run), (what), p2p_err_);                                              \
    } while (0)

/* The workload's parameters; an error names the parameter and what it takes. */
int p2p_parse_config(worker_ctx_t *ctx, p2p_config_t *cfg, int n_visible);
/* One GPU's properties, buffers, check log, streams and events. */
int p2p_setup_gpu(p2p_run_t *run, p2p_gpu_t *g);
void p2p_teardown_gpu(p2p_gpu_t *g);
/* Peer access for every ordered pair that offers it (run->peer). */
int p2p_enable_peers(p2p_run_t *run);
/* How GPU i reaches GPU j: xGMI, NVLink, a PCIe relation from sysfs, or via host. */
p2p_link_t p2p_classify_link(p2p_run_t *run, size_t i, size_t j);

#endif
