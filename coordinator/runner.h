/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign runner: runs stages in order, places one task per selected node, decides each
 * task's verdict from results, lost agents and deadlines, ends a stage when every task has a
 * verdict or its deadline passed, and honours on_fail. */
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
void runner_on_result(runner_t *self, const char *task_id, fb_verdict_t verdict);
void runner_on_node_lost(runner_t *self, const char *node, const char *why);
/* An agent (re)registered: tasks assigned to it that it neither runs nor has a result for
 * were lost with its previous incarnation. */
void runner_on_hello(runner_t *self, const char *node, char **running, size_t n_running,
                     char **unacked, size_t n_unacked);

#endif
