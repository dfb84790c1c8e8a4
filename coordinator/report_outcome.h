/* SPDX-License-Identifier: Apache-2.0 */
/* What an ended campaign says about each of its nodes, for what follows it (the Slurm drain and
 * resume of coordinator/slurm_actions.c; docs/operations.md "Slurm"): the nodes its bad parts
 * name, with the evidence in one line, the nodes that passed every stage, and the failures that
 * name no node to act on. Built from the same diagnosis as the reports (report.c), so a node is
 * drained for exactly what the report calls bad.
 *
 * Definitions:
 *   - the campaign's nodes: every node of a task of the campaign;
 *   - bad: every node a bad part names, as a whole word of the part ("n17", "n17/mlx5_2",
 *     "n3<->n7" names n3 and n7, "n1,n2,n3" each), or, for a part that names none of the
 *     campaign's nodes (a DIMM label), the node whose result reported it; and the node of a
 *     node task that failed or timed out without a finding. A bad part naming none of the
 *     campaign's nodes (an uplink leaf02<->spine01) is a note, so is a failure of a task of
 *     several nodes that no part explains, and a task lost or in error (it says nothing sure
 *     about the hardware);
 *   - passed: a node that had at least one task, every stage of the campaign started, every
 *     stage whose plan selected it gave it a task, every task it was in passed or was skipped
 *     (in a stage with on_fail: bisect a failed test is explained by the diagnosis instead), and
 *     no bad or undecided part names it. */
#ifndef FB_REPORT_OUTCOME_H
#define FB_REPORT_OUTCOME_H

#include "store.h"

#include <stddef.h>

typedef struct {
    char *node;
    char *part; /* as the report names it */
    char *what; /* "<stage>: <evidence>", one line */
} report_bad_node_t;

typedef struct {
    char **nodes; /* the campaign's nodes, in the order of their first task */
    size_t n_nodes;
    report_bad_node_t *bad; /* one per node and part, in the diagnosis' order */
    size_t n_bad;
    char **passed;
    size_t n_passed;
    char **notes; /* at most REPORT_OUTCOME_MAX_NOTES, then one that counts the rest */
    size_t n_notes;
} report_outcome_t;

#define REPORT_OUTCOME_MAX_NOTES 20

/* Fills *out from c (a campaign loaded with store_campaign_load). Free with
 * report_outcome_free. */
void report_outcome_build(const store_campaign_t *c, report_outcome_t *out);
void report_outcome_free(report_outcome_t *o);

#endif
