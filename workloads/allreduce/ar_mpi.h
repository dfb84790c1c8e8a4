/* SPDX-License-Identifier: Apache-2.0 */
/* What the MPI rank programs share: fleetburn-mpirank (host memory, MPI_Allreduce) and
 * fleetburn-mpirank-cuda (one GPU per rank, NCCL). Both start a rank the same way, print the same
 * rank lines and gather every size to rank 0 the same way; each keeps only its run_size step of
 * ar_rank_sweep (ar.h). MPI is only the bootstrap and the per-size gather here: the reduction
 * under test is the run_size step's. Compiled into each rank program, not into the workers,
 * which have no MPI. */
#ifndef FB_AR_MPI_H
#define FB_AR_MPI_H

#include "allreduce/ar.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AR_MPI_NAME_MAX 128 /* a rank's name as gathered, NUL included */

typedef struct {
    const char *prog; /* "fleetburn-mpirank", the start of every message */
    int rank, nranks;
    ar_opts_t opts;
} ar_mpi_t;

/* Ties the rank to whoever started it (mpirun or orted: it never outlives a killed task), joins
 * MPI and reads the sweep from the words after the program's name. 0, or 2 once MPI is finalised
 * when the words are wrong or the group is too large for the result to be exact (rank 0 says why
 * on stderr; err, errlen bytes, is the buffer for it). */
int ar_mpi_start(int *argc, char ***argv, const char *prog, ar_mpi_t *m, char *err, size_t errlen);

/* Rank 0 prints every rank's name, one "fb-allreduce-rank" line each, so that the launcher can
 * name ranks in findings. name: this rank's, a buffer of AR_MPI_NAME_MAX bytes. Collective. */
void ar_mpi_print_names(const ar_mpi_t *m, const char name[AR_MPI_NAME_MAX]);

/* ar_size_done_fn over MPI (self: the ar_mpi_t): gathers one size to rank 0, which merges it
 * (times: the slowest rank's; errors summed; first_bad_rank the lowest) and prints an
 * "fb-allreduce-error" line per rank that saw wrong elements, then the "fb-allreduce" line,
 * flushed (mpirun forwards them as they come). Collective. */
int ar_mpi_size_done(void *self, size_t index, const ar_size_result_t *r,
                     const ar_rank_error_t *bad, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
