/* SPDX-License-Identifier: Apache-2.0 */
/* The rdmabw workload: RDMA RC bandwidth (write, read, send) and write latency between the two
 * members of a pair task (scope: pairs), or between two queue pairs on the same HCA port
 * (loopback: true, scope: node), with the port error counters read before and after and every
 * byte received checked. Queue-pair details travel through worker_exchange; libibverbs and the
 * CUDA driver are loaded at run time, so every worker carries it. A node without an RDMA device
 * is `skipped` with the reason. See docs/workloads.md#rdmabw. */
#ifndef FB_RDMABW_H
#define FB_RDMABW_H

#include "rdma_sweep.h"
#include "worker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

fb_verdict_t rdmabw_run(worker_ctx_t *ctx);

typedef enum { RDMABW_GPU_AUTO, RDMABW_GPU_YES, RDMABW_GPU_NO } rdmabw_gpu_mode_t;

typedef struct {
    rdma_mode_t modes[RDMA_N_MODES * 4];
    size_t n_modes;
    uint64_t sizes[RDMA_MAX_SIZES];
    size_t n_sizes;
    uint64_t iters, lat_iters;
    const char *device; /* borrowed from the context */
    rdmabw_gpu_mode_t gpu;
    bool loopback;
    double min_gbps; /* 0: 90% of the port rate */
} rdmabw_params_t;

/* Reads and checks the parameters (defaults as in scheduler/workload.c when absent). Returns 0,
 * or -EINVAL with err naming the parameter and its value. */
int rdmabw_params(const worker_ctx_t *ctx, rdmabw_params_t *out, char *err, size_t errlen);

typedef struct rdma_verbs rdma_verbs_t;

/* For tests: where libibverbs comes from, and how long exchanges wait. */
typedef struct {
    const char *verbs_lib;        /* NULL: libibverbs.so.1 */
    uint64_t exchange_timeout_ms; /* 0: 300 s */
    rdma_verbs_t *verbs;          /* non-NULL: used instead of loading a library (borrowed; a
                                     test's in-process transport) */
} rdmabw_opts_t;
fb_verdict_t rdmabw_run_opts(worker_ctx_t *ctx, const rdmabw_opts_t *opts);

/* The floor for a connection's write bandwidth: min_gbps when given, else 90% of the slower of
 * the two port rates (0: no floor, the rate is unknown). */
double rdmabw_floor_gbps(double min_gbps, double local_port_gbps, double remote_port_gbps);

#endif
