/* SPDX-License-Identifier: Apache-2.0 */
/* The rdmabw data path on libibverbs: one connection = a reliable-connected (RC) data queue pair
 * with its buffers, plus a small RC control queue pair that keeps the two ends in lockstep. The
 * measurement loops follow perftest's: a window of outstanding operations (send queue depth 128),
 * every 64th operation signalled, timestamps at signalled completions; RDMA write, RDMA read and
 * send/receive bandwidth, write ping-pong latency. After each bandwidth step the receiving side
 * checks every byte it was sent against the step's pattern.
 *
 * Without verbs headers at build time, rdma_conn_open fails with -ENOSYS and nothing else is
 * reachable. */
#ifndef FB_RDMA_ENGINE_H
#define FB_RDMA_ENGINE_H

#include "ibport.h"
#include "rdma_gpu.h"
#include "rdma_sweep.h"
#include "rdma_verbs.h"
#include "rdma_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RDMA_TX_DEPTH 128
#define RDMA_RX_DEPTH 512
#define RDMA_SIGNAL_EVERY 64

typedef struct rdma_conn rdma_conn_t;

typedef struct {
    const ib_port_t *port; /* the local port (borrowed for the call) */
    uint64_t region;       /* bytes of the source and of the sink region, each */
    rdma_gpu_t *gpu;       /* NULL: host memory; else source and sink in this GPU (borrowed
                              for the connection's life) */
    bool gpu_dmabuf;       /* register GPU memory through dma-buf (else nvidia_peermem) */
} rdma_conn_opts_t;

/* Opens the HCA, allocates and registers the buffers, creates both queue pairs and moves them
 * to INIT. 0 or negative errno with err in words (an allocation or registration that failed
 * names the limit that is usually at fault, RLIMIT_MEMLOCK). */
int rdma_conn_open(rdma_verbs_t *v, const rdma_conn_opts_t *o, rdma_conn_t **out, char *err,
                   size_t errlen);
void rdma_conn_close(rdma_conn_t **self_p);

/* What the other end needs to connect to this one. */
void rdma_conn_endpoint(const rdma_conn_t *c, rdma_endpoint_t *out);

/* Moves both queue pairs to RTR and RTS toward remote. 0 or negative errno with err. */
int rdma_conn_connect(rdma_conn_t *c, const rdma_endpoint_t *remote, char *err, size_t errlen);

/* What one step gave on this side. */
typedef struct {
    bool ran;           /* this side took part */
    bool active;        /* this side posted the operations */
    rdma_bw_t bw;       /* active: what it posted; send receiver: what it received */
    bool checked;       /* this side checked data (the sink's owner) */
    uint64_t bad_bytes; /* bytes that differed from the pattern */
    uint64_t bad_slot, bad_offset;
    uint8_t expected, actual;
    rdma_lat_t lat; /* latency step: half round trips */
} rdma_step_result_t;

typedef struct {
    unsigned rank;      /* pair: 0 or 1; which steps this side is active in */
    uint64_t iters;     /* operations per bandwidth step */
    uint64_t lat_iters; /* ping-pongs in the latency step */
    /* Called before each step (may be NULL). */
    void (*on_step)(void *user, size_t index, size_t n_steps, const rdma_step_t *step);
    void *user;
} rdma_run_opts_t;

/* How a run ended. */
typedef struct {
    int rc;             /* 0, or negative errno */
    bool fault;         /* the hardware or the partner failed (a work completion error, the
                           partner went silent): a finding, not a setup error */
    size_t failed_step; /* the step it stopped in when rc != 0 */
    char what[512];     /* in words when rc != 0 */
} rdma_run_status_t;

/* Runs steps[0..n) on a connected pair, the partner running the same steps with the other rank.
 * results[i] gets step i. */
void rdma_run_pair(rdma_conn_t *c, const rdma_step_t *steps, size_t n, const rdma_run_opts_t *o,
                   rdma_step_result_t *results, rdma_run_status_t *status);

/* Runs steps[0..n) between two connections of this process connected to each other (loopback
 * through the HCA): a is active, b passive. results[i] holds both views merged: a's bandwidth,
 * b's check (the receiver's bandwidth for send). */
void rdma_run_loopback(rdma_conn_t *a, rdma_conn_t *b, const rdma_step_t *steps, size_t n,
                       const rdma_run_opts_t *o, rdma_step_result_t *results,
                       rdma_run_status_t *status);

/* Pins the calling thread to the CPUs local to hca (/sys/class/infiniband/<hca>/device/
 * local_cpulist), so that buffers allocated afterwards are on the HCA's NUMA node. Returns the
 * number of CPUs, 0 when the list is unknown, or negative errno. */
int rdma_pin_to_hca(const char *root, const char *hca);

#endif
