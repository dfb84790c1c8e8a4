/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's Slurm client: sinfo and scontrol run as child processes with fixed argument
 * vectors (coordinator/subprocess.h: no shell), each within SLURM_COMMAND_TIMEOUT_MS. The
 * programs are `sinfo` and `scontrol` from the coordinator's PATH, or from the directory given
 * with `fleetburn serve --slurm-bin DIR`; never from a campaign. They talk to slurmctld as
 * configured on the coordinator's host (SLURM_CONF, the munge key). Node names reach argv only
 * when fb_slurm_name_ok accepts them, reasons only as fb_slurm_reason wrote them.
 *
 * Every function blocks for as long as the programs run: call them from the thread pool. */
#ifndef FB_SLURM_CLIENT_H
#define FB_SLURM_CLIENT_H

#include "scheduler/slurm.h"

#include <stdbool.h>

/* How long one sinfo or scontrol may run before it is killed. */
#define SLURM_COMMAND_TIMEOUT_MS 30000

/* What sinfo says about nodes (a hostlist; NULL: every node) or about the nodes of a partition
 * (NULL: every partition). 0 with *out filled (free with fb_slurm_nodes_fini), or -EIO with
 * *error_out (heap): "`sinfo --noheader ...` failed: exit status 1: ...". */
int slurm_sinfo(const char *bin_dir, const char *nodes, const char *partition,
                fb_slurm_nodes_t *out, char **error_out);

/* scontrol update NodeName=node State=DRAIN Reason=reason, or with reason NULL State=RESUME.
 * 0, or -EINVAL (a name or reason that may not reach argv), -EIO (scontrol failed: it answered
 * with an error), -ETIMEDOUT, -ECONNREFUSED (it says it cannot reach slurmctld) or -ENOENT (it
 * could not be run), with
 * *error_out (heap) naming the command and what it said. */
int slurm_update_node(const char *bin_dir, const char *node, const char *reason, char **error_out);

/* Resolves every `nodes: slurm:...` selection of c with sinfo (fb_campaign_resolve_selection).
 * 0 (also when c has none), or -EIO with *error_out (heap), starting "cannot start the
 * campaign: nodes: slurm:...: ": Slurm could not be asked, or listed no node for a selection. */
int slurm_resolve_selections(const char *bin_dir, struct fb_campaign *c, char **error_out);

#endif
