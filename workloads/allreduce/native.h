/* SPDX-License-Identifier: Apache-2.0 */
/* launcher: native — every member's worker starts one rank process per local GPU itself, and
 * NCCL's unique id travels through the coordinator. No ssh, no mpirun: it works in containers.
 *
 * The worker never initialises the GPU runtime itself (a forked child could not use it, and a
 * hung GPU must not hang the worker). The steps, every member taking part in every exchange in
 * the same order whatever happens locally, so that nobody waits for a member that gave up:
 *   1. a probe child counts the GPUs (the `devices` parameter when given, else all the runtime
 *      sees) and loads NCCL/RCCL for its version;
 *   2. exchange "gpus": every member's GPUs, NCCL version and GPU memory, or why it has none.
 *      Global ranks follow member order (member m's first rank = GPUs of members below m); the
 *      largest size run is cut to what the smallest GPU holds; a member without GPUs stops the
 *      group (`skipped` when no member has GPUs, `error` otherwise);
 *   3. one child per local GPU; the group's member 0 has its first child create the id, and
 *      exchange "ncclid" carries it (the others post nothing); each child gets it over a pipe;
 *   4. children run the sweep (ar_gpu.h) and send each size's result over their pipe; the worker
 *      merges its children (times max, errors summed) and reports progress per size. A child
 *      that dies, reports an error, or stays silent too long ends the local run; its siblings
 *      are killed, and the error names the GPU, its rank and the node;
 *   5. exchange "results": every member's sizes and error, merged the same way on every member,
 *      so every member reports the same sweep. Member 0's result is the group's (all wrong
 *      elements, findings naming the first bad rank of each size); the others report the same
 *      bandwidth with only their own wrong elements, so each bad GPU's node fails by itself. */
#ifndef FB_AR_NATIVE_H
#define FB_AR_NATIVE_H

#include "allreduce/ar.h"
#include "allreduce/ar_gpu.h"
#include "worker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- what allreduce_run calls (every worker) --------------------------------------------------
 */

/* launcher native, start to end. In a worker without a GPU runtime it still takes part in the
 * "gpus" exchange (posting none), so a mixed group ends cleanly. */
fb_verdict_t ar_native_run(worker_ctx_t *ctx, const ar_opts_t *opts);
/* The rank program launcher mpirun starts on GPU nodes ("fleetburn-mpirank-cuda"), or NULL in a
 * worker without a GPU runtime or a vendor without one (borrowed). */
const char *ar_gpu_rank_program(void);
/* GPUs this node's ranks would use (the `devices` parameter, else all the runtime sees), counted
 * in a child process. 0 with *n = 0 when there are none or this worker has no GPU runtime; a
 * negative errno when counting failed (why says so). */
int ar_gpu_local_count(worker_ctx_t *ctx, unsigned *n, char *why, size_t whylen);

/* ---- the parts, exposed for tests ------------------------------------------------------------ */

typedef struct {
    uint64_t probe_ms;    /* the device probe must answer within this (60 s) */
    uint64_t exchange_ms; /* "gpus" and "ncclid" exchanges (180 s) */
    uint64_t stall_ms;    /* a size not done in this long is a hang (300 s): the rank aborts
                             NCCL; the worker gives a silent rank min(stall, 60 s) more */
} ar_native_limits_t;

/* ar_native_run with a given GPU table (NULL: none) and limits (NULL: the defaults). */
fb_verdict_t ar_native_run_with(worker_ctx_t *ctx, const ar_opts_t *opts, const ar_gpu_t *gpu,
                                const ar_native_limits_t *limits);

#define AR_MAX_LOCAL_GPUS 64

typedef enum {
    AR_MEMBER_OK = 0,  /* n GPUs ready */
    AR_MEMBER_NO_GPUS, /* a node without GPUs: a reason to skip */
    AR_MEMBER_BROKEN,  /* GPUs that cannot run: no NCCL, runtime error, bad parameter */
} ar_member_state_t;

/* One member's entry in exchange "gpus". */
typedef struct {
    ar_member_state_t state;
    unsigned n;                     /* GPUs (state OK) */
    int devices[AR_MAX_LOCAL_GPUS]; /* their runtime indices */
    int nccl_version;               /* NCCL_VERSION_CODE, 0 unknown */
    uint64_t min_mem_bytes;         /* the smallest of their memories */
    char why[256];                  /* state not OK: the reason */
} ar_member_t;

/* "fbgpus1 STATE N DEV,DEV|- NCCL MEM WHY": a line, returned heap. */
char *ar_member_format(const ar_member_t *m);
/* Parses a posted value; -EINVAL for anything malformed. */
int ar_member_parse(const void *data, size_t len, ar_member_t *out);

/* The largest buffer a rank allocates (twice: send and receive) on a GPU of mem_bytes, leaving
 * room for the runtime and NCCL. */
uint64_t ar_gpu_fit_bytes(uint64_t mem_bytes);

/* Merges one rank's (or member's) size into the running merge: times max, errors summed, the
 * lowest bad rank. -EINVAL when the two describe different sizes. */
int ar_size_merge(ar_size_result_t *into, const ar_size_result_t *from);
/* Recomputes algbw/busbw of a merged size from its avg_us for nranks ranks. */
void ar_size_finish(ar_size_result_t *r, unsigned nranks);

/* Exchange "results": a member's merged sizes, the wrong elements its ranks saw (ar.h error
 * lines) and its error ("" none), as text lines. Heap. */
char *ar_results_format(const char *error, const ar_size_result_t *sizes, size_t n,
                        const ar_rank_error_t *bad, size_t n_bad);
/* The outputs are heap (caller frees all three). 0 or -EINVAL. */
int ar_results_parse(const void *data, size_t len, char **error_out, ar_size_result_t **sizes_out,
                     size_t *n_out, ar_rank_error_t **bad_out, size_t *n_bad_out);

#endif
