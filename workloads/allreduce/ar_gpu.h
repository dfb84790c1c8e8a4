/* SPDX-License-Identifier: Apache-2.0 */
/* One GPU rank of allreduce, and the table by which host code reaches it.
 *
 * ar_gpu.cu holds the rank: it drives one GPU through NCCL/RCCL (nccl_dl.h) over the whole
 * message-size sweep (the run_size step of ar_rank_sweep, ar.h, the loop the host rank uses too)
 * and hands each size's result to its launcher through an ar_rank_link_t. Two
 * launchers use it: launcher native (native.c: one forked process per local GPU, links over
 * pipes) and launcher mpirun (mpirank_gpu.cu: one MPI process per GPU, links over MPI).
 *
 * Per size, on one stream (docs/workloads.md, allreduce on GPUs):
 *   1. bandwidth pass: `warmup` collectives, then `iters` back-to-back collectives between one
 *      event pair, the way nccl-tests' all_reduce_perf times them; avg_us comes from here;
 *   2. checked pass: `iters` more collectives, iteration it (1..iters) with its own input
 *      ar_input(op, rank, i, it) filled by a kernel, an event pair around the collective only
 *      (min_us, max_us), then a kernel comparing every element of the output with the exact
 *      expected value (ar_expect_table / ar_expect_index, equal to ar_expected) into a device
 *      counter that also keeps one wrong element (the first iteration that had one), then the
 *      output poisoned (all bits set: NaN, or -1 for int32) so a
 *      collective that writes nothing cannot pass. The last output of pass 1 is checked too;
 *   3. one host synchronisation, polling NCCL's asynchronous error while it waits.
 *
 * The table: fleetburn-worker-cuda / -hip define `ar_gpu` (ar_gpu.cu); every other program
 * (the plain worker, unit tests) leaves the weak reference NULL, which is how native.c knows
 * that this worker drives no GPU. */
#ifndef FB_AR_GPU_H
#define FB_AR_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "allreduce/ar.h"
#include "allreduce/nccl_dl.h"

/* What a launcher hands one rank. */
typedef struct {
    ar_opts_t opts;        /* dtype, op, iters, warmup */
    const uint64_t *sizes; /* the sweep as run, ascending (ar_gpu_sweep), borrowed */
    size_t n_sizes;        /* >= 1 */
    int device;            /* runtime device index */
    unsigned rank, nranks;
    bool inject;         /* test-only: corrupt one output element (largest size, one checked
                            iteration) before it is checked */
    const char *library; /* NCCL/RCCL to dlopen */
    double stall_s;      /* one size not done in this long: the communicator is aborted */
} ar_rank_cfg_t;

/* How a rank talks to its launcher. Each returns 0, or a negative errno with err set; an error
 * ends the rank. */
typedef struct {
    void *self;
    /* Rank 0 passes the id it created in *id; every rank gets back in *id the id to join. */
    int (*share_id)(void *self, nccl_dl_id_t *id, char *err, size_t errlen);
    /* After ncclCommInitRank returned: the library's version code. */
    int (*joined)(void *self, int nccl_version, char *err, size_t errlen);
    /* Size index (in sweep order) done: this rank's times, its own errors, first_bad_rank this
     * rank or -1; bad (NULL when no element was wrong) its first wrong element. */
    ar_size_done_fn size_done;
} ar_rank_link_t;

/* One GPU as a launcher sees it before starting ranks. */
typedef struct {
    uint64_t mem_bytes; /* total memory */
    char pci[16];       /* "0000:41:00.0" */
} ar_gpu_dev_t;

typedef struct {
    const char *vendor;       /* "nvidia" | "amd" (FLEETBURN_GPU_VENDORS spelling) */
    const char *library;      /* the collective library by default (NCCL_DL_NVIDIA/AMD) */
    const char *rank_program; /* the rank program of launcher mpirun, NULL when none */
    /* The devices the runtime sees (at most max into out). Initialises the runtime: call it in a
     * process that runs nothing else on the GPU. */
    int (*devices)(ar_gpu_dev_t *out, size_t max, size_t *n, char *err, size_t errlen);
    /* Loads the collective library to read its version code (why: the reason it cannot). */
    int (*library_version)(const char *library, int *version, char *why, size_t whylen);
    /* Runs one rank to the end (0) or to its first error (negative errno, err says what). */
    int (*rank_run)(const ar_rank_cfg_t *cfg, const ar_rank_link_t *link, char *err, size_t errlen);
} ar_gpu_t;

extern const ar_gpu_t ar_gpu;
/* Its entries (ar_gpu.cu only: plain C code reaches them through the table). */
int ar_gpu_devices(ar_gpu_dev_t *out, size_t max, size_t *n, char *err, size_t errlen);
int ar_gpu_library_version(const char *library, int *version, char *why, size_t whylen);
int ar_gpu_rank_run(const ar_rank_cfg_t *cfg, const ar_rank_link_t *link, char *err, size_t errlen);

/* Sizes of the sweep that are run: ar_sweep cut at max_bytes. *sizes_out: heap (caller frees). */
size_t ar_gpu_sweep(const ar_opts_t *opts, uint64_t max_bytes, uint64_t **sizes_out);

#ifdef __cplusplus
}
#endif

#endif
