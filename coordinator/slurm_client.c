/* SPDX-License-Identifier: Apache-2.0 */
/* sinfo and scontrol for the coordinator (slurm_client.h): argument vectors built from fixed
 * words and checked values only, run through subprocess_run, their output parsed by
 * scheduler/slurm.c as untrusted text. */
#include "slurm_client.h"

#include "subprocess.h"
#include "common/hostlist.h"
#include "common/util.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S_SINFO_MAX_OUTPUT (16u << 20)
#define S_SCONTROL_MAX_OUTPUT (64u << 10)

/* "DIR/name", or name to be found in PATH. Heap. */
static char *s_program(const char *bin_dir, const char *name)
{
    return bin_dir && *bin_dir ? xasprintf("%s/%s", bin_dir, name) : xstrdup(name);
}

static char *s_failed(const char *const *argv, const subprocess_result_t *res)
{
    char *cmd = subprocess_argv_text(argv),
         *why = subprocess_failure(res, SLURM_COMMAND_TIMEOUT_MS);
    char *msg = xasprintf("`%s` failed: %s", cmd, why);
    free(cmd);
    free(why);
    return msg;
}

int slurm_sinfo(const char *bin_dir, const char *nodes, const char *partition,
                fb_slurm_nodes_t *out, char **error_out)
{
    *error_out = NULL;
    memset(out, 0, sizeof *out);
    char *program = s_program(bin_dir, "sinfo");
    char *nodes_arg = nodes ? xasprintf("--nodes=%s", nodes) : NULL;
    char *part_arg = partition ? xasprintf("--partition=%s", partition) : NULL;
    const char *argv[7] = {program, "--noheader", "--Node", "--format=" FB_SLURM_SINFO_FORMAT};
    size_t n = 4;
    if (nodes_arg)
        argv[n++] = nodes_arg;
    if (part_arg)
        argv[n++] = part_arg;
    argv[n] = NULL;
    subprocess_result_t res;
    int rc = subprocess_run(argv, SLURM_COMMAND_TIMEOUT_MS, S_SINFO_MAX_OUTPUT, &res);
    if (rc == 0 && res.out_cut) {
        *error_out =
            xasprintf("`sinfo` wrote more than %u MiB; not read", S_SINFO_MAX_OUTPUT >> 20);
        rc = -1;
    } else if (rc == 0) {
        fb_slurm_nodes_parse(res.out, res.out_len, out);
    } else {
        *error_out = s_failed(argv, &res);
    }
    subprocess_result_fini(&res);
    free(program);
    free(nodes_arg);
    free(part_arg);
    return rc ? -EIO : 0;
}

int slurm_update_node(const char *bin_dir, const char *node, const char *reason, char **error_out)
{
    *error_out = NULL;
    if (!fb_slurm_name_ok(node)) {
        *error_out = xstrdup("the node's name cannot be given to scontrol");
        return -EINVAL;
    }
    /* What fb_slurm_reason writes, and nothing else: one line, printable, no quotes */
    if (reason && !fb_slurm_reason_ok(reason)) {
        *error_out = xstrdup("the reason is not one fleetburn writes");
        return -EINVAL;
    }
    char *program = s_program(bin_dir, "scontrol");
    char *name_arg = xasprintf("NodeName=%s", node);
    char *reason_arg = reason ? xasprintf("Reason=%s", reason) : NULL;
    const char *argv[] = {program,    "update", name_arg, reason ? "State=DRAIN" : "State=RESUME",
                          reason_arg, NULL};
    subprocess_result_t res;
    int rc = subprocess_run(argv, SLURM_COMMAND_TIMEOUT_MS, S_SCONTROL_MAX_OUTPUT, &res);
    if (rc) {
        *error_out = s_failed(argv, &res);
        rc = res.spawn_error                                         ? -ENOENT
             : res.timed_out                                         ? -ETIMEDOUT
             : strstr(res.err, "Unable to contact slurm controller") ? -ECONNREFUSED
                                                                     : -EIO;
    }
    subprocess_result_fini(&res);
    free(program);
    free(name_arg);
    free(reason_arg);
    return rc;
}

/* What a selection found nothing in, for the message. */
static char *s_empty_why(const char *partition, bool idle, const fb_slurm_nodes_t *listed)
{
    if (!idle)
        return xasprintf("Slurm lists no node in partition %s (is there such a partition?)",
                         partition);
    return xasprintf("Slurm lists no idle node%s%s (%zu node(s) listed, none in state idle: "
                     "allocated, drained, down or not responding)",
                     partition ? " in partition " : "", partition ? partition : "", listed->n);
}

static int s_resolve_one(const char *bin_dir, fb_campaign_t *c, const char *expr, char **error_out)
{
    char *partition = NULL, err[256];
    bool idle = false;
    if (fb_slurm_selection_parse(expr, &partition, &idle, err, sizeof err)) {
        *error_out = xasprintf("cannot start the campaign: nodes: %s: %s", expr, err);
        return -EIO;
    }
    fb_slurm_nodes_t listed;
    char *why = NULL;
    int rc = slurm_sinfo(bin_dir, NULL, partition, &listed, &why);
    if (rc == 0) {
        size_t n = 0;
        char **names = fb_slurm_nodes_select(&listed, partition, idle, &n);
        char *hostlist = fb_hostlist_compress((const char *const *)names, n);
        if (n == 0 || fb_campaign_resolve_selection(c, expr, hostlist)) {
            why = n ? xasprintf("Slurm listed nodes that are not hostlist notation: %s", hostlist)
                    : s_empty_why(partition, idle, &listed);
            rc = -EIO;
        }
        free(hostlist);
        fb_hostlist_free(names, n);
        fb_slurm_nodes_fini(&listed);
    } else {
        char *asked = xasprintf("cannot ask Slurm: %s", why);
        free(why);
        why = asked;
    }
    if (rc)
        *error_out = xasprintf("cannot start the campaign: nodes: %s: %s", expr, why);
    free(why);
    free(partition);
    return rc;
}

int slurm_resolve_selections(const char *bin_dir, fb_campaign_t *c, char **error_out)
{
    *error_out = NULL;
    size_t n = fb_campaign_slurm_selections(c, NULL, 0);
    if (n == 0)
        return 0;
    const char **exprs = xcalloc(n, sizeof *exprs);
    fb_campaign_slurm_selections(c, exprs, n);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = s_resolve_one(bin_dir, c, exprs[i], error_out);
    free(exprs);
    return rc;
}
