/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign runner: runs stages in order; places each stage's tasks by its scope (one task
 * per node, per group, or per pair, round after round: docs/scheduling.md); decides each task's
 * verdict from its members' results, lost agents and deadlines; ends a stage when every task has
 * a verdict or its deadline passed, judges pair stages as a whole, and honours on_fail. */
#ifndef FB_RUNNER_H
#define FB_RUNNER_H

#include "coord.h"

typedef struct runner runner_t;

runner_t *runner_new(coord_t *coord, struct fb_campaign **campaign, const char *id,
                     const char *yaml, coord_progress_cb cb, void *arg);
/* Frees the runner (it must have finished, or the coordinator is shutting down). */
void runner_destroy(runner_t **self_p);
/* Begins the first stage on the next loop iteration. */
void runner_start(runner_t *self);
const char *runner_id(const runner_t *self);
bool runner_finished(const runner_t *self);

/* Events from the coordinator. */
/* A result was stored (result is borrowed for the call): a member's verdict and, for pair
 * stages, its judged metrics. result->node is the agent that sent it. */
void runner_on_result(runner_t *self, const fb_result_t *result);
void runner_on_node_lost(runner_t *self, const char *node, const char *why);
/* An agent (re)registered: tasks assigned to it that it neither runs nor has a result for
 * (result id = task id, or <task id>@<node> for a group member) were lost with its previous
 * incarnation. */
void runner_on_hello(runner_t *self, const char *node, char **running, size_t n_running,
                     char **unacked, size_t n_unacked);

/* The members of group task task_id, node names by rank (borrowed, valid until the runner next
 * handles an event), while the task is undecided; NULL when there is no such running group task
 * (an unknown id, a task of scope node, or one that already has a verdict). */
const char *const *runner_group(const runner_t *self, const char *task_id, size_t *n_out);

#endif
