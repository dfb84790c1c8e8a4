/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-mpirank-cuda: one GPU rank of allreduce under OpenMPI's mpirun, the way operators run
 * nccl-tests by hand. launch_mpirun.c starts it on GPU nodes with one slot per GPU:
 *
 *   mpirun -np N --host h0:g0,h1:g1 ... fleetburn-mpirank-cuda min_bytes=B max_bytes=B ...
 *
 * Each rank takes the GPU of its node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, else MPI's shared-
 * memory split), rank 0 creates NCCL's unique id and MPI_Bcast hands it to all, and every rank
 * runs the same sweep as launcher native (ar_gpu.h). MPI is only the bootstrap and the per-size
 * gather of times and errors to rank 0 (ar_mpi.h, shared with the host's fleetburn-mpirank); the
 * collectives are NCCL's. Rank 0 prints the ar.h lines:
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
#include "allreduce/ar_mpi.h"
#include "allreduce/ar_rank.h"
}
#include "allreduce/ar_gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANK_STALL_S 300.0

typedef struct {
    ar_mpi_t mpi; /* rank, nranks, opts */
    int device;
    char name[AR_MPI_NAME_MAX]; /* node/gpuN */
} mpi_rank_t;

static void s_abort(const mpi_rank_t *rk, const char *why)
{
    fprintf(stderr, "fleetburn-mpirank-cuda: rank %d (%s): %s\n", rk->mpi.rank,
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
    const ar_mpi_t *m = (const ar_mpi_t *)self;
    if (m->rank == 0) {
        char v[32];
        nccl_dl_version_text(version, v, sizeof v);
        fprintf(stderr, "fleetburn-mpirank-cuda: %d ranks joined, NCCL %s\n", m->nranks, v);
    }
    return 0;
}

/* The GPU of this rank; aborts the job when the node has fewer GPUs than ranks. */
static void s_pick_device(mpi_rank_t *rk)
{
    char node[AR_MPI_NAME_MAX - 16] = "";
    ar_rank_node((unsigned)rk->mpi.rank, node, sizeof node);
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
    mpi_rank_t rk;
    memset(&rk, 0, sizeof rk);
    char err[1024];
    int rc = ar_mpi_start(&argc, &argv, "fleetburn-mpirank-cuda", &rk.mpi, err, sizeof err);
    if (rc)
        return rc;
    s_pick_device(&rk);
    ar_mpi_print_names(&rk.mpi, rk.name);
    uint64_t *sizes = NULL;
    size_t n = ar_sweep(&rk.mpi.opts, &sizes);
    const char *lib = getenv("FLEETBURN_NCCL_LIBRARY");
    ar_rank_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.opts = rk.mpi.opts;
    cfg.sizes = sizes;
    cfg.n_sizes = n;
    cfg.device = rk.device;
    cfg.rank = (unsigned)rk.mpi.rank;
    cfg.nranks = (unsigned)rk.mpi.nranks;
    cfg.inject = rk.mpi.opts.inject_corrupt;
    cfg.library = lib && *lib ? lib : ar_gpu.library;
    cfg.stall_s = RANK_STALL_S;
    ar_rank_link_t link = {&rk.mpi, s_share_id, s_joined, ar_mpi_size_done};
    if (n == 0)
        s_abort(&rk, "empty sweep");
    if (ar_gpu.rank_run(&cfg, &link, err, sizeof err))
        s_abort(&rk, err);
    free(sizes);
    MPI_Finalize();
    return 0;
}
