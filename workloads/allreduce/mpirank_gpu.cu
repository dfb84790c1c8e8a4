/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-mpirank-cuda: one GPU rank of allreduce under OpenMPI's mpirun, the way operators run
 * nccl-tests by hand. launch_mpirun.c starts it on GPU nodes with one slot per GPU:
 *
 *   mpirun -np N --host h0:g0,h1:g1 ... fleetburn-mpirank-cuda min_bytes=B max_bytes=B ...
 *
 * Each rank takes the GPU of its node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, else MPI's shared-
 * memory split), rank 0 creates NCCL's unique id and MPI_Bcast hands it to all, and every rank
 * runs the same sweep as launcher native (ar_gpu.h). MPI is only the bootstrap and the per-size
 * gather of times and errors to rank 0; the collectives are NCCL's. Rank 0 prints the ar.h lines:
 * one "fb-allreduce-rank" line per rank before the sweep (names "node/gpuN"), and per size an
 * "fb-allreduce-error" line per rank that saw wrong elements, then the "fb-allreduce" line.
 * A rank that cannot go on prints "fleetburn-mpirank-cuda: rank R (node/gpuN): why" on stderr
 * and aborts the job (MPI_Abort), since its peers would otherwise wait in NCCL forever.
 * Exit status: 0 after a full sweep (wrong elements are reported, not an exit status), 2 for bad
 * arguments, otherwise MPI_Abort's. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "gpu/gpu_runtime.h"

extern "C" {
#include "allreduce/ar_rank.h"
#include "common/util.h"
}
#include "allreduce/ar_gpu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define RANK_NAME_MAX 128
#define RANK_STALL_S 300.0

typedef struct {
    int rank, nranks, device;
    char name[RANK_NAME_MAX]; /* node/gpuN */
    ar_opts_t opts;
} mpi_rank_t;

/* What every rank sends rank 0 after a size. */
typedef struct {
    ar_size_result_t r;
    ar_rank_error_t bad;
} size_msg_t;

static void s_abort(const mpi_rank_t *rk, const char *why)
{
    fprintf(stderr, "fleetburn-mpirank-cuda: rank %d (%s): %s\n", rk->rank,
            *rk->name ? rk->name : "?", why);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* The rank's index among the ranks of its node. */
static int s_local_rank(void)
{
    const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (env && *env)
        return atoi(env);
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return local;
}

static int s_share_id(void *self, nccl_dl_id_t *id, char *err, size_t errlen)
{
    (void)self;
    int rc = MPI_Bcast(id, (int)sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        snprintf(err, errlen, "MPI_Bcast of the NCCL id failed (%d)", rc);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

static int s_joined(void *self, int version, char *err, size_t errlen)
{
    const mpi_rank_t *rk = (const mpi_rank_t *)self;
    if (rk->rank == 0) {
        char v[32];
        nccl_dl_version_text(version, v, sizeof v);
        fprintf(stderr, "fleetburn-mpirank-cuda: %d ranks joined, NCCL %s\n", rk->nranks, v);
    }
    return 0;
}

/* Gathers the size to rank 0, which merges it (times max, errors summed) and prints it. */
static int s_size_done(void *self, size_t index, const ar_size_result_t *r,
                       const ar_rank_error_t *bad, char *err, size_t errlen)
{
    const mpi_rank_t *rk = (const mpi_rank_t *)self;
    size_msg_t mine;
    memset(&mine, 0, sizeof mine);
    mine.r = *r;
    if (bad)
        mine.bad = *bad;
    size_msg_t *all = rk->rank == 0 ? (size_msg_t *)xcalloc((size_t)rk->nranks, sizeof *all) : NULL;
    int rc = MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0,
                        MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(all);
        snprintf(err, errlen, "MPI_Gather of size %zu failed (%d)", index, rc);
        return -EIO;
    }
    if (rk->rank != 0)
        return 0;
    ar_size_result_t merged = all[0].r;
    char line[512];
    for (int k = 0; k < rk->nranks; k++) {
        const size_msg_t *m = &all[k];
        if (k) {
            merged.avg_us = m->r.avg_us > merged.avg_us ? m->r.avg_us : merged.avg_us;
            merged.min_us = m->r.min_us > merged.min_us ? m->r.min_us : merged.min_us;
            merged.max_us = m->r.max_us > merged.max_us ? m->r.max_us : merged.max_us;
            merged.errors += m->r.errors;
            if (m->r.errors && merged.first_bad_rank < 0)
                merged.first_bad_rank = k;
        }
        if (m->r.errors) {
            ar_format_error_line(&m->bad, line, sizeof line);
            printf("%s\n", line);
        }
    }
    ar_format_line(&merged, line, sizeof line);
    printf("%s\n", line);
    fflush(stdout);
    free(all);
    return 0;
}

/* Rank 0 prints every rank's name so that the launcher can name ranks in findings. */
static void s_names(const mpi_rank_t *rk)
{
    char *all = rk->rank == 0 ? (char *)xcalloc((size_t)rk->nranks, RANK_NAME_MAX) : NULL;
    MPI_Gather(rk->name, RANK_NAME_MAX, MPI_CHAR, all, RANK_NAME_MAX, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int k = 0; all && k < rk->nranks; k++) {
        char line[RANK_NAME_MAX + 64];
        all[(size_t)k * RANK_NAME_MAX + RANK_NAME_MAX - 1] = '\0';
        ar_format_rank_line((unsigned)k, all + (size_t)k * RANK_NAME_MAX, line, sizeof line);
        printf("%s\n", line);
    }
    fflush(stdout);
    free(all);
}

/* The GPU of this rank; aborts the job when the node has fewer GPUs than ranks. */
static void s_pick_device(mpi_rank_t *rk)
{
    char node[RANK_NAME_MAX - 16] = "";
    ar_rank_node((unsigned)rk->rank, node, sizeof node);
    int local = s_local_rank(), visible = 0;
    rk->device = local;
    snprintf(rk->name, sizeof rk->name, "%s/gpu%d", node, local);
    gpuError_t e = gpuGetDeviceCount(&visible);
    if (e != gpuSuccess) {
        char why[256];
        snprintf(why, sizeof why, "no GPU: %s", gpuGetErrorString(e));
        s_abort(rk, why);
    }
    if (local >= visible) {
        char why[256];
        snprintf(why, sizeof why,
                 "node-local rank %d but the node has %d GPU(s): give mpirun "
                 "one slot per GPU",
                 local, visible);
        s_abort(rk, why);
    }
}

int main(int argc, char **argv)
{
    /* Ranks go with whoever started them (mpirun or orted), never outliving a killed task. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    MPI_Init(&argc, &argv);
    mpi_rank_t rk;
    memset(&rk, 0, sizeof rk);
    MPI_Comm_rank(MPI_COMM_WORLD, &rk.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rk.nranks);
    char err[1024];
    if (ar_opts_from_args(argc - 1, argv + 1, &rk.opts, err, sizeof err)) {
        if (rk.rank == 0)
            fprintf(stderr, "fleetburn-mpirank-cuda: %s\n", err);
        MPI_Finalize();
        return 2;
    }
    if ((unsigned)rk.nranks > ar_exact_ranks(rk.opts.dtype, rk.opts.op)) {
        if (rk.rank == 0)
            fprintf(stderr, "fleetburn-mpirank-cuda: %s %s over %d ranks is not exact\n",
                    ar_op_name(rk.opts.op), ar_dtype_name(rk.opts.dtype), rk.nranks);
        MPI_Finalize();
        return 2;
    }
    s_pick_device(&rk);
    s_names(&rk);
    uint64_t *sizes = NULL;
    size_t n = ar_sweep(&rk.opts, &sizes);
    const char *lib = getenv("FLEETBURN_NCCL_LIBRARY");
    ar_rank_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.opts = rk.opts;
    cfg.sizes = sizes;
    cfg.n_sizes = n;
    cfg.device = rk.device;
    cfg.rank = (unsigned)rk.rank;
    cfg.nranks = (unsigned)rk.nranks;
    cfg.inject = rk.opts.inject_corrupt;
    cfg.library = lib && *lib ? lib : ar_gpu.library;
    cfg.stall_s = RANK_STALL_S;
    ar_rank_link_t link = {&rk, s_share_id, s_joined, s_size_done};
    if (n == 0)
        s_abort(&rk, "empty sweep");
    if (ar_gpu.rank_run(&cfg, &link, err, sizeof err))
        s_abort(&rk, err);
    free(sizes);
    MPI_Finalize();
    return 0;
}
