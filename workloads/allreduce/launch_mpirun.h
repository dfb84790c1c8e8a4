/* SPDX-License-Identifier: Apache-2.0 */
/* `launcher: mpirun` for the allreduce workload: the way operators run nccl-tests by hand, done
 * by the group's rank 0 member.
 *
 * Every member posts what it brings (exchange "slots": host or GPU path, ranks, memory, the rank
 * binary's path). Rank 0's worker then runs OpenMPI's mpirun over the members' addresses with
 * those slots, reads the ranks' lines (ar.h) from its output, judges the sweep (ar_report) and
 * posts its verdict (exchange "done"). The other members wait for it and then pass: the group's
 * verdict, metrics and findings are rank 0's result (a member failing first would make the
 * coordinator cancel rank 0 before its findings arrive). A member that loses rank 0 ends with an
 * error naming it.
 *
 * mpirun stays in the worker's process group, so the agent's deadline kill and a cancel reach
 * it, and it gets SIGTERM if the worker dies alone (PR_SET_PDEATHSIG), which makes it stop the
 * ranks on every node. */
#ifndef FB_LAUNCH_MPIRUN_H
#define FB_LAUNCH_MPIRUN_H

#include "ar.h"
#include "worker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIRUN_MEMBER_PATH_MAX 512
#define MPIRUN_MEMBER_ERROR_MAX 512

/* What one member brings to the group (posted as one text line, "slots" exchange). */
typedef struct {
    bool gpu;                               /* GPU path (one rank per GPU) or host path */
    unsigned slots;                         /* ranks on this member */
    uint64_t mem_bytes;                     /* MemAvailable: the host path's default max_size */
    char rank_path[MPIRUN_MEMBER_PATH_MAX]; /* the rank binary, absolute */
    char error[MPIRUN_MEMBER_ERROR_MAX];    /* non-empty: this member cannot take part, and why */
} mpirun_member_t;

/* "gpu=0 slots=1 mem=B path=/usr/bin/fleetburn-mpirank" or "error=TEXT" into a heap string. */
char *mpirun_member_format(const mpirun_member_t *m);
/* 0, or -EINVAL for anything else. */
int mpirun_member_parse(const char *text, size_t len, mpirun_member_t *out);

/* Everything mpirun's command line depends on. mpirun, rsh_agent, extra_args and as_root come
 * from the agent's site configuration (worker_site), never from the campaign. */
typedef struct {
    const char *mpirun;       /* program name or path (site setting mpirun) */
    const char *rank_path;    /* the rank binary, absolute */
    const char *const *hosts; /* n host addresses as mpirun reaches them */
    const unsigned *slots;    /* n: ranks per host */
    size_t n;
    const char *rsh_agent;  /* site setting rsh_agent; NULL or "": mpirun's default (ssh) */
    const char *extra_args; /* site setting mpirun_args, split on blanks; NULL for none */
    bool as_root;           /* adds --allow-run-as-root: running as root, and the site's
                               mpirun_allow_run_as_root says yes (else mpirun is not run) */
    bool yield_when_idle;   /* host path: ranks yield the CPU while they wait (see .c) */
    const char *const *env; /* names of variables to export to the ranks (-x) */
    size_t n_env;
    const ar_opts_t *opts; /* the sweep handed to the ranks */
} mpirun_plan_t;

/* Whether h may go on mpirun's command line as a host (and from there to its remote shell): a
 * host name or IP literal that cannot be read as an option ("-oProxyCommand=..."): it starts with
 * a letter, a digit or ':' (IPv6) and holds only [A-Za-z0-9.:_%-]. Node names and addresses come
 * from the network; rank 0 refuses a group with another host before it starts mpirun. */
bool mpirun_host_ok(const char *h);

/* The command line, NULL-terminated (heap; free with mpirun_argv_free):
 *   mpirun --host h0:s0,h1:s1 -np S [--allow-run-as-root] --leave-session-attached
 *          [--mca plm_rsh_agent A]
 *          [--map-by slot] [--bind-to none] [--mca mpi_yield_when_idle 1] -x NAME ...
 *          EXTRA... RANK_PATH key=value ...
 * --map-by, --bind-to and mpi_yield_when_idle are left to the extra arguments when they name
 * them. */
char **mpirun_argv(const mpirun_plan_t *plan, size_t *argc_out);
void mpirun_argv_free(char ***argv_p);

/* The whole run on this member (every member calls it; rank 0 runs mpirun). `me` describes this
 * member; me->error set makes it tell the group and end with error. Fills ctx's result. */
fb_verdict_t launch_mpirun(worker_ctx_t *ctx, const mpirun_member_t *me);

#ifdef __cplusplus
}
#endif

#endif
