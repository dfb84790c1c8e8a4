/* SPDX-License-Identifier: Apache-2.0 */
/* allreduce: the parts shared by every way of running it — parameters, the message-size sweep,
 * the nccl-tests bandwidth formulas, the input pattern and its exact expected result, the line
 * format ranks report in, and the judging of a sweep into metrics, findings and a verdict.
 *
 * Ways of running (docs/workloads.md, allreduce):
 *   launcher: mpirun  the group's rank 0 member runs OpenMPI's mpirun over the group's addresses;
 *                     the ranks are fleetburn-mpirank (host MPI_Allreduce, CPU-only nodes) or
 *                     fleetburn-mpirank-cuda (one rank per GPU, NCCL, unique id by MPI_Bcast).
 *   launcher: native  every member's worker starts one process per local GPU; NCCL's unique id
 *                     travels through the coordinator (worker_exchange). Needs GPUs.
 * Every rank fills its send buffer with ar_input() of (rank, element, iteration) and checks every
 * element of every iteration's output against ar_expected(); the values are small integers, exact
 * in every dtype, so any difference is a real error, never rounding.
 *
 * Pure C, no I/O except through worker_ctx (ar_report); the inline pattern functions compile in
 * CUDA/HIP device code too. */
#ifndef FB_AR_H
#define FB_AR_H

#include "common/result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define AR_HD __host__ __device__
#else
#define AR_HD
#endif

typedef enum { AR_DT_FLOAT = 0, AR_DT_HALF, AR_DT_BF16, AR_DT_DOUBLE, AR_DT_INT32 } ar_dtype_t;
typedef enum { AR_OP_SUM = 0, AR_OP_PROD, AR_OP_MAX, AR_OP_MIN } ar_op_t;
typedef enum { AR_LAUNCH_MPIRUN = 0, AR_LAUNCH_NATIVE } ar_launcher_t;

typedef struct {
    ar_launcher_t launcher;
    uint64_t min_bytes, max_bytes; /* max_bytes 0: the default for the path (GPU or CPU) */
    unsigned factor;               /* >= 2 */
    ar_dtype_t dtype;
    ar_op_t op;
    unsigned iters, warmup; /* timed iterations per size (each checked), untimed warm-ups */
    bool inject_corrupt;    /* test-only: rank 0 corrupts one element of one result */
} ar_opts_t;

/* Input of rank r at element i in iteration it: an integer in [1, 4] (prod: 1 or 2), so that the
 * reduction stays exact in the dtype up to ar_exact_ranks() ranks. */
AR_HD static inline int ar_input(ar_op_t op, unsigned r, uint64_t i, unsigned it)
{
    uint64_t h = (i * 2654435761u) ^ ((uint64_t)r * 40503u) ^ ((uint64_t)it * 97u);
    h ^= h >> 13;
    if (op == AR_OP_PROD)
        return 1 + (int)((h >> 3) & 1u);
    return 1 + (int)(h & 3u);
}

/* The exact reduction of ar_input over ranks 0..nranks-1. */
AR_HD static inline double ar_expected(ar_op_t op, unsigned nranks, uint64_t i, unsigned it)
{
    double acc = op == AR_OP_PROD ? 1.0 : op == AR_OP_MAX ? -1e300 : op == AR_OP_MIN ? 1e300 : 0.0;
    for (unsigned r = 0; r < nranks; r++) {
        double v = (double)ar_input(op, r, i, it);
        if (op == AR_OP_SUM)
            acc += v;
        else if (op == AR_OP_PROD)
            acc *= v;
        else if (op == AR_OP_MAX)
            acc = v > acc ? v : acc;
        else
            acc = v < acc ? v : acc;
    }
    return acc;
}

/* ar_expected in constant time per element. ar_input's hash is linear over XOR, so the rank's
 * part and the element's part separate: ar_expect_table fills the four possible results once per
 * (op, nranks), and ar_expect_index picks the entry of element i in iteration it:
 *   ar_expected(op, n, i, it) == table[ar_expect_index(op, i, it)]   for every i and it. */
AR_HD static inline unsigned ar_expect_index(ar_op_t op, uint64_t i, unsigned it)
{
    uint64_t h = (i * 2654435761u) ^ ((uint64_t)it * 97u);
    h ^= h >> 13;
    return op == AR_OP_PROD ? (unsigned)((h >> 3) & 1u) : (unsigned)(h & 3u);
}
void ar_expect_table(ar_op_t op, unsigned nranks, double table[4]);

/* Ranks up to which ar_expected is exact in dtype for op (a sum stays below 4 * ranks, exact in
 * bfloat16 up to 64 ranks, half 512, float 2^22; a product is a power of two up to 2^ranks: half
 * 15 ranks, int32 30). The launchers refuse larger groups with a message naming a dtype that
 * works. */
unsigned ar_exact_ranks(ar_dtype_t dtype, ar_op_t op);

size_t ar_dtype_size(ar_dtype_t dtype);
const char *ar_dtype_name(ar_dtype_t dtype);
const char *ar_op_name(ar_op_t op);

struct worker_ctx;
/* Reads launcher, min_size, max_size, factor, dtype, op, iters, warmup and inject_corrupt (refused
 * unless the worker allows fault injection) from the task's params.
 * gpu selects the default max_size (8 GiB on GPUs; on the CPU path the smaller of 1 GiB and
 * host_mem_bytes / (4 * ranks on this node)). 0, or -EINVAL with a message in err. */
int ar_opts_from_params(const struct worker_ctx *ctx, bool gpu, uint64_t host_mem_bytes,
                        unsigned ranks_per_node, ar_opts_t *out, char *err, size_t errlen);

/* The sweep: min_bytes, *factor, ... up to max_bytes, each rounded down to a whole number of
 * elements (at least one). *sizes_out is a heap array (caller frees); returns the count. */
size_t ar_sweep(const ar_opts_t *opts, uint64_t **sizes_out);

/* nccl-tests: algbw = bytes / time; busbw = algbw * 2 (n-1) / n for all-reduce. GB/s = 1e9 B/s. */
double ar_algbw_gbs(uint64_t bytes, double seconds);
double ar_busbw_gbs(uint64_t bytes, double seconds, unsigned nranks);

/* One size of a sweep, from one rank (times) merged over ranks (errors summed, times max). */
typedef struct {
    uint64_t bytes, count;
    double avg_us, min_us, max_us; /* per iteration */
    double algbw_gbs, busbw_gbs;   /* from avg_us (ar_report computes them itself) */
    uint64_t errors;               /* wrong elements summed over iterations and ranks */
    unsigned iters;
    int first_bad_rank; /* -1 when none: the lowest rank that saw a wrong element */
} ar_size_result_t;

/* The line a rank 0 prints per size so that the launching worker can read it from mpirun's output:
 *   "fb-allreduce bytes=B count=C avg_us=.. min_us=.. max_us=.. errors=E bad_rank=R iters=I"
 * ar_parse_line returns 0 for such a line, -EINVAL for anything else. */
void ar_format_line(const ar_size_result_t *r, char *buf, size_t len);
int ar_parse_line(const char *line, ar_size_result_t *out);

/* Fills the result from a finished sweep: per-size metrics (allreduce.<bytes>.busbw_gbs,
 * .algbw_gbs, .avg_us), headline metrics (busbw at the largest size, peak busbw, latency at the
 * smallest size), a per-size table in the log, and findings for wrong results naming the rank's
 * node and GPU (rank_names[r], e.g. "node-3/gpu1"). Returns pass, or fail when any element was
 * wrong or the busbw at the largest size fell below the min_busbw_gbs parameter (when given; a
 * group spread over several nodes gets no finding for that, since one run cannot tell which node is
 * slow). algbw/busbw are computed here from avg_us. */
fb_verdict_t ar_report(struct worker_ctx *ctx, const ar_size_result_t *sizes, size_t n,
                       unsigned nranks, const char *const *rank_names);

/* ---- rank binaries (fleetburn-mpirank, fleetburn-mpirank-cuda/-hip) --------------------------
 *
 * The launcher hands the sweep to the ranks as words "key=value" after the binary's name
 * (min_bytes, max_bytes, factor, dtype, op, iters, warmup, inject_corrupt), so that every rank
 * binary runs the sweep the worker decided. max_bytes is always resolved (never 0). */
#define AR_ARGS_N 8
#define AR_ARG_MAX 48
void ar_opts_to_args(const ar_opts_t *opts, char words[AR_ARGS_N][AR_ARG_MAX]);
/* Parses such words (other words are ignored; absent ones keep the defaults of the schema).
 * 0, or -EINVAL with a message in err. */
int ar_opts_from_args(int argc, char *const *argv, ar_opts_t *out, char *err, size_t errlen);

/* Which group member a rank runs on: the launcher exports FLEETBURN_AR_NODES (member node names
 * by group rank, comma-separated), FLEETBURN_AR_ADDRS (their addresses) and FLEETBURN_AR_SLOTS
 * (ranks per member) to every rank. ar_rank.h finds the member by the rank's own interface
 * addresses, then by host name, then by its place in the slot order (mpirun --map-by slot). */

/* Rank 0 prints one line per rank before the sweep so the launcher can name ranks in findings:
 *   "fb-allreduce-rank rank=R name=NAME"  (NAME: node, or node/gpuN; no spaces)
 * ar_parse_rank_line returns 0 and copies the name (truncated to namelen), -EINVAL otherwise. */
void ar_format_rank_line(unsigned rank, const char *name, char *buf, size_t len);
int ar_parse_rank_line(const char *line, unsigned *rank, char *name, size_t namelen);

/* Where a rank saw wrong elements (optional: rank 0 prints at most one line per rank and size
 * with errors, before that size's "fb-allreduce" line):
 *   "fb-allreduce-error bytes=B rank=R errors=E index=I iter=T expected=X got=Y" */
typedef struct {
    uint64_t bytes;
    unsigned rank;
    uint64_t errors; /* wrong elements of this rank at this size, over all iterations */
    uint64_t index;  /* its first wrong element */
    unsigned iter;
    double expected, got;
} ar_rank_error_t;
void ar_format_error_line(const ar_rank_error_t *e, char *buf, size_t len);
int ar_parse_error_line(const char *line, ar_rank_error_t *out);

/* ---- one rank's sweep: the loop of every rank program (host and GPU) ------------------------ */

/* Measures and checks one size on this rank; what differs between ranks lives here: the buffers,
 * the reduction and the synchronisation (fleetburn-mpirank: host memory, MPI_Allreduce per
 * iteration; a GPU rank: device memory, NCCL passes, one wait per size). r gets this rank's times
 * and errors (first_bad_rank: this rank or -1), bad its first wrong element when there was one.
 * inject (test-only): corrupt one element of one checked iteration. 0, or a negative errno with
 * the reason kept by the rank. */
typedef int (*ar_run_size_fn)(void *rank, uint64_t bytes, bool inject, ar_size_result_t *r,
                              ar_rank_error_t *bad);
/* Hands size `index` (in sweep order) to the launcher; bad is NULL when no element was wrong.
 * 0, or a negative errno with err set. */
typedef int (*ar_size_done_fn)(void *self, size_t index, const ar_size_result_t *r,
                               const ar_rank_error_t *bad, char *err, size_t errlen);

typedef struct {
    const uint64_t *sizes; /* ascending, borrowed */
    size_t n_sizes;
    unsigned rank;
    bool inject; /* test-only: rank 0 corrupts one element at the largest size */
    ar_run_size_fn run_size;
    void *rank_self;
    ar_size_done_fn size_done;
    void *done_self;
} ar_rank_sweep_t;

/* Runs every size in order and hands each to size_done; stops at the first error (returned). */
int ar_rank_sweep(const ar_rank_sweep_t *s, char *err, size_t errlen);

/* ar_report with per-rank details: the findings then name every rank that saw wrong elements
 * (not only the lowest) with its first wrong element; ar_report is ar_report_detail(.., NULL,
 * 0). */
fb_verdict_t ar_report_detail(struct worker_ctx *ctx, const ar_size_result_t *sizes, size_t n,
                              unsigned nranks, const char *const *rank_names,
                              const ar_rank_error_t *errors, size_t n_errors);

/* The GPU side: allreduce_run (allreduce.c, every worker) asks native.h which GPUs this node's
 * ranks use (ar_gpu_local_count) and which rank program launcher mpirun starts on them
 * (ar_gpu_rank_program), and hands launcher native to ar_native_run. */

#ifdef __cplusplus
}
#endif

#endif
