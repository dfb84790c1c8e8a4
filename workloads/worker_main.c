/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-worker: hosts one workload run in its own process, started by the agent.
 *
 *   fleetburn-worker --workload NAME --task-id ID --result FILE [--node NAME]
 *                    [--allow-fault-injection] [--site KEY=VALUE ...] [key=value ...]
 *   fleetburn-worker --probe      (GPU facts and versions for the agent's inventory, probe.h)
 *
 * --site passes a site setting from the agent's local configuration (mpirun, mpirun_args,
 * rsh_agent, mpirun_allow_run_as_root; docs/security.md "Site settings"); key=value are the
 * campaign's parameters, which come from the network.
 *
 * Progress and log lines go to stdout (worker.c); the result goes to FILE as a TaskResult message,
 * written to FILE.tmp and renamed so the agent never reads half a result. The worker dies with
 * the agent (PR_SET_PDEATHSIG) so a killed agent never leaves a GPU or DRAM burner behind.
 * Exit status: 0 when a result was written, 2 for usage errors, 3 when writing the result failed. */
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "probe.h"
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

void worker_ctx_set_emit(worker_ctx_t *self, bool emit);

static int s_write_result(const char *path, const fb_result_t *result)
{
    size_t len = 0;
    uint8_t *buf = fb_wire_result_pack(result, &len);
    char *tmp = xasprintf("%s.tmp", path);
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = -errno;
    } else {
        size_t off = 0;
        while (off < len && rc == 0) {
            ssize_t n = write(fd, buf + off, len - off);
            if (n < 0 && errno != EINTR)
                rc = -errno;
            else if (n > 0)
                off += (size_t)n;
        }
        if (rc == 0 && fsync(fd) != 0)
            rc = -errno;
        close(fd);
        if (rc == 0 && rename(tmp, path) != 0)
            rc = -errno;
    }
    if (rc)
        log_error("cannot write result to %s: %s", path, strerror(-rc));
    free(tmp);
    free(buf);
    return rc;
}

/* Splits "a,b,c" into exactly n heap strings (empty items allowed); -EINVAL on another count. */
static int s_split(const char *text, unsigned n, char ***out)
{
    char **items = xcalloc(n, sizeof(char *));
    const char *p = text;
    unsigned i = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (i == n) {
            fb_names_free(items, n);
            return -EINVAL;
        }
        items[i++] = xstrndup(p, len);
        if (!p[len])
            break;
        p += len + 1;
    }
    if (i != n) {
        fb_names_free(items, n);
        return -EINVAL;
    }
    *out = items;
    return 0;
}

/* --rank/--size/--peers/--addresses: all or none. */
static int s_set_group(worker_ctx_t *ctx, const char *rank_arg, const char *size_arg,
                       const char *peers_arg, const char *addresses_arg)
{
    if (!rank_arg && !size_arg && !peers_arg && !addresses_arg)
        return 0;
    char *end = NULL;
    unsigned long rank = rank_arg ? strtoul(rank_arg, &end, 10) : 0;
    bool rank_ok = rank_arg && end && !*end;
    unsigned long size = size_arg ? strtoul(size_arg, &end, 10) : 0;
    bool size_ok = size_arg && end && !*end && size >= 1 && size <= 4096;
    char **peers = NULL, **addresses = NULL;
    if (!rank_ok || !size_ok || rank >= size || !peers_arg ||
        s_split(peers_arg, (unsigned)size, &peers) ||
        (addresses_arg && s_split(addresses_arg, (unsigned)size, &addresses))) {
        fprintf(stderr, "fleetburn-worker: --rank R --size N --peers P0,... [--addresses A0,...] "
                        "must agree (R < N, N names)\n");
        if (peers)
            fb_names_free(peers, size);
        return -EINVAL;
    }
    worker_ctx_set_group(ctx, (unsigned)rank, (unsigned)size, (const char *const *)peers,
                         (const char *const *)addresses);
    fb_names_free(peers, size);
    if (addresses)
        fb_names_free(addresses, size);
    return 0;
}

static void s_usage(void)
{
    fprintf(stderr, "usage: fleetburn-worker --workload NAME --task-id ID --result FILE "
                    "[--node NAME] [--rank R --size N --peers P0,... [--addresses A0,...]] "
                    "[--allow-fault-injection] [--site KEY=VALUE ...] [key=value ...]\n");
}

int main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc == 2 && !strcmp(argv[1], "--probe"))
        return worker_probe(stdout); /* the agent's inventory (probe.h) */
    const char *workload = NULL, *task_id = "manual", *result_path = NULL, *node = "";
    const char *rank_arg = NULL, *size_arg = NULL, *peers_arg = NULL, *addresses_arg = NULL;
    bool allow_injection = false;
    const char **params = xcalloc((size_t)argc, sizeof(char *));
    size_t n_params = 0;
    const char **site = xcalloc((size_t)argc, sizeof(char *));
    size_t n_site = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--workload") && i + 1 < argc)
            workload = argv[++i];
        else if (!strcmp(a, "--task-id") && i + 1 < argc)
            task_id = argv[++i];
        else if (!strcmp(a, "--result") && i + 1 < argc)
            result_path = argv[++i];
        else if (!strcmp(a, "--node") && i + 1 < argc)
            node = argv[++i];
        else if (!strcmp(a, "--rank") && i + 1 < argc)
            rank_arg = argv[++i];
        else if (!strcmp(a, "--size") && i + 1 < argc)
            size_arg = argv[++i];
        else if (!strcmp(a, "--peers") && i + 1 < argc)
            peers_arg = argv[++i];
        else if (!strcmp(a, "--addresses") && i + 1 < argc)
            addresses_arg = argv[++i];
        else if (!strcmp(a, "--allow-fault-injection"))
            allow_injection = true;
        else if (!strcmp(a, "--site") && i + 1 < argc && strchr(argv[i + 1], '=') &&
                 argv[i + 1][0] != '=')
            site[n_site++] = argv[++i];
        else if (a[0] != '-' && strchr(a, '='))
            params[n_params++] = a;
        else {
            fprintf(stderr, "fleetburn-worker: unexpected argument '%s'\n", a);
            s_usage();
            free(params);
            free(site);
            return 2;
        }
    }
    if (!workload || !result_path) {
        s_usage();
        free(params);
        free(site);
        return 2;
    }
    char component[160];
    snprintf(component, sizeof component, "worker %s", workload);
    fb_log_init(component, FB_LOG_INFO);

    worker_ctx_t *ctx = worker_ctx_new(task_id, node, params, n_params, allow_injection);
    worker_ctx_set_emit(ctx, true);
    worker_ctx_set_site(ctx, site, n_site);
    free(site);
    if (s_set_group(ctx, rank_arg, size_arg, peers_arg, addresses_arg)) {
        worker_ctx_destroy(&ctx);
        free(params);
        return 2;
    }
    fb_result_t *result = worker_result(ctx);
    result->started_ms = fb_now_ms();
    const workload_entry_t *entry = worker_find(workload);
    if (!entry) {
        result->verdict = FB_VERDICT_ERROR;
        fb_result_set_error(result, "workload '%s' is not built into this fleetburn-worker",
                            workload);
    } else {
        result->verdict = entry->run(ctx);
    }
    if (result->verdict == FB_VERDICT_NONE) {
        result->verdict = FB_VERDICT_ERROR;
        fb_result_set_error(result, "workload %s returned no verdict", workload);
    }
    result->finished_ms = fb_now_ms();
    /* The agent's result id is the task id: one result per task makes delivery idempotent. A
     * group task has one result per member: the member's node is part of the id. */
    if (size_arg) {
        char *result_id = xasprintf("%s@%s", task_id, node);
        fb_result_set_ids(result, result_id, task_id, node);
        free(result_id);
    } else {
        fb_result_set_ids(result, task_id, task_id, node);
    }
    int rc = s_write_result(result_path, result);
    worker_ctx_destroy(&ctx);
    free(params);
    return rc ? 3 : 0;
}
