/* SPDX-License-Identifier: Apache-2.0 */
/* The MPI side of the rank programs (ar_mpi.h). */
#include "ar_mpi.h"

#include "common/util.h"

#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

/* What every rank sends rank 0 after a size. */
typedef struct {
    ar_size_result_t r;
    ar_rank_error_t bad;
} size_msg_t;

int ar_mpi_start(int *argc, char ***argv, const char *prog, ar_mpi_t *m, char *err, size_t errlen)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    MPI_Init(argc, argv);
    memset(m, 0, sizeof *m);
    m->prog = prog;
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->nranks);
    if (ar_opts_from_args(*argc - 1, *argv + 1, &m->opts, err, errlen)) {
        if (m->rank == 0)
            fprintf(stderr, "%s: %s\n", prog, err);
        MPI_Finalize();
        return 2;
    }
    if ((unsigned)m->nranks > ar_exact_ranks(m->opts.dtype, m->opts.op)) {
        if (m->rank == 0)
            fprintf(stderr, "%s: %s %s over %d ranks is not exact\n", prog, ar_op_name(m->opts.op),
                    ar_dtype_name(m->opts.dtype), m->nranks);
        MPI_Finalize();
        return 2;
    }
    return 0;
}

void ar_mpi_print_names(const ar_mpi_t *m, const char name[AR_MPI_NAME_MAX])
{
    char *all = m->rank == 0 ? xcalloc((size_t)m->nranks, AR_MPI_NAME_MAX) : NULL;
    MPI_Gather(name, AR_MPI_NAME_MAX, MPI_CHAR, all, AR_MPI_NAME_MAX, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int k = 0; all && k < m->nranks; k++) {
        char line[AR_MPI_NAME_MAX + 64];
        all[(size_t)k * AR_MPI_NAME_MAX + AR_MPI_NAME_MAX - 1] = '\0';
        ar_format_rank_line((unsigned)k, all + (size_t)k * AR_MPI_NAME_MAX, line, sizeof line);
        printf("%s\n", line);
    }
    fflush(stdout);
    free(all);
}

/* Rank 0: the ranks' results of one size as one, and the error line of each rank that had one. */
static void s_merge_print(const size_msg_t *all, int nranks)
{
    ar_size_result_t merged = all[0].r;
    char line[512];
    for (int k = 0; k < nranks; k++) {
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
}

int ar_mpi_size_done(void *self, size_t index, const ar_size_result_t *r,
                     const ar_rank_error_t *bad, char *err, size_t errlen)
{
    const ar_mpi_t *m = self;
    size_msg_t mine;
    memset(&mine, 0, sizeof mine);
    mine.r = *r;
    if (bad)
        mine.bad = *bad;
    size_msg_t *all = m->rank == 0 ? xcalloc((size_t)m->nranks, sizeof *all) : NULL;
    int rc = MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0,
                        MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(all);
        snprintf(err, errlen, "MPI_Gather of size %zu failed (%d)", index, rc);
        return -EIO;
    }
    if (all)
        s_merge_print(all, m->nranks);
    free(all);
    return 0;
}
