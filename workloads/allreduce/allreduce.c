/* SPDX-License-Identifier: Apache-2.0 */
/* The `allreduce` workload: decides how this member takes part, then hands over to a launcher.
 *   launcher native: native.c (NCCL/RCCL ranks started by every member; `skipped` when the group
 *     has no GPUs, because native is NCCL/RCCL by definition);
 *   launcher mpirun on GPUs this worker drives: one rank per GPU, fleetburn-mpirank-cuda/-hip;
 *   launcher mpirun without GPUs: the host MPI_Allreduce, fleetburn-mpirank, ranks_per_node ranks;
 *   GPUs this worker cannot count or drive: error, because measuring the host path there would
 *     hide that the GPUs were never tested.
 * A problem found here still goes through the mpirun exchange, so the group's other members end
 * at once with the reason instead of waiting for a member that gave up. */
#include "allreduce.h"
#include "ar.h"
#include "common/util.h"
#include "launch_mpirun.h"
#include "native.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AR_HOST_RANK_BINARY "fleetburn-mpirank"

/* MemAvailable in bytes, 0 when unknown. */
static uint64_t s_mem_available(const worker_ctx_t *ctx)
{
    char *path = xasprintf("%s/proc/meminfo", worker_sysfs_root(ctx));
    char *text = fb_read_file(path, NULL);
    free(path);
    uint64_t bytes = 0;
    const char *line = text ? strstr(text, "MemAvailable:") : NULL;
    unsigned long long kb = 0;
    if (line && sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
        bytes = (uint64_t)kb * 1024;
    free(text);
    return bytes;
}

/* GPUs on this node that this worker drives: > 0, 0, or -errno with the reason in err. */
static int s_count_gpus(worker_ctx_t *ctx, char *err, size_t errlen)
{
    unsigned n = 0;
    int rc = ar_gpu_local_count(ctx, &n, err, errlen);
    if (rc < 0)
        return rc;
    if (n > 0 && !ar_gpu_rank_program()) {
        snprintf(err, errlen,
                 "this worker drives the node's GPUs but has no mpirun rank program "
                 "for them");
        return -ENOTSUP;
    }
    if (n > 0)
        return (int)n;
    const char *vendors = getenv("FLEETBURN_GPU_VENDORS");
    if (!vendors || !*vendors)
        return 0;
    snprintf(err, errlen,
             "this node has %s GPUs but this worker cannot drive them (install the "
             "fleetburn-agent-%s package, or fleetburn-worker-%s next to fleetburn-worker)",
             vendors, strstr(vendors, "nvidia") ? "cuda" : "hip",
             strstr(vendors, "nvidia") ? "cuda" : "hip");
    return -ENODEV;
}

/* The rank binary next to this worker; error text in me->error when it is not there. */
static void s_rank_binary(mpirun_member_t *me, const char *name)
{
#ifndef FB_HAVE_MPI
    if (!me->gpu) {
        snprintf(me->error, sizeof me->error,
                 "launcher mpirun: fleetburn was built without MPI (install libopenmpi-dev and "
                 "rebuild), so the host path has no %s",
                 name);
        return;
    }
#endif
    char *path = fb_program_path(name);
    fb_strlcpy(me->rank_path, path, sizeof me->rank_path);
    free(path);
    if (access(me->rank_path, X_OK) != 0)
        snprintf(me->error, sizeof me->error,
                 "launcher mpirun: %.300s is not installed next to the worker (%s; built "
                 "without MPI?)",
                 me->rank_path, strerror(errno));
}

static unsigned s_ranks_per_node(const worker_ctx_t *ctx)
{
    const char *v = worker_param(ctx, "ranks_per_node");
    unsigned long n = v ? strtoul(v, NULL, 10) : 1;
    return n >= 1 && n <= 1024 ? (unsigned)n : 1;
}

fb_verdict_t allreduce_run(worker_ctx_t *ctx)
{
    const char *launcher = worker_param(ctx, "launcher");
    if (launcher && !strcmp(launcher, "native")) {
        ar_opts_t opts;
        char err[512];
        /* GPU defaults: native runs only on GPUs (native.c cuts sizes to what they hold). */
        if (ar_opts_from_params(ctx, true, 0, 1, &opts, err, sizeof err))
            return worker_error(ctx, "allreduce: %s", err);
        return ar_native_run(ctx, &opts);
    }
    mpirun_member_t me = {0};
    char err[MPIRUN_MEMBER_ERROR_MAX] = "";
    int ngpus = s_count_gpus(ctx, err, sizeof err);
    if (ngpus < 0)
        fb_strlcpy(me.error, err, sizeof me.error);
    me.gpu = ngpus > 0;
    me.slots = me.gpu ? (unsigned)ngpus : s_ranks_per_node(ctx);
    me.mem_bytes = s_mem_available(ctx);
    ar_opts_t opts;
    /* Validated on every member, so that a bad parameter ends the whole group at once. */
    if (ar_opts_from_params(ctx, me.gpu, me.mem_bytes, me.slots, &opts, err, sizeof err) &&
        !me.error[0])
        fb_strlcpy(me.error, err, sizeof me.error);
    if (!me.error[0])
        s_rank_binary(&me, me.gpu ? ar_gpu_rank_program() : AR_HOST_RANK_BINARY);
    return launch_mpirun(ctx, &me);
}
