/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign runner: runs stages in order; places each stage's tasks by its scope (one task
 * per node, per group, or per pair, round after round: docs/scheduling.md); decides each task's
 * verdict from its members' results, lost agents and deadlines; ends a stage when every task has
 * a verdict or its deadline passed, judges pair stages as a whole, and honours on_fail. */
#ifndef FB_RUNNER_H
#define FB_RUNNER_H

#include "runner_host.h"
#include "scheduler/campaign.h"

typedef struct runner runner_t;

/* A new campaign: stored (its text, the files it names, its stages) before runner_start. NULL
 * when the store refused it. */
runner_t *runner_new(coord_t *coord, struct fb_campaign **campaign, const char *id,
                     const char *yaml, const fb_campaign_file_t *files, size_t n_files,
                     coord_progress_cb cb, void *arg);
/* A campaign an earlier coordinator left running, rebuilt from the store (c) and its parsed text
 * (*campaign, ownership passes): finished stages keep their verdicts, the running stage is
 * planned again from its stored plan and its rounds replayed (a bisect session included), and
 * it waits for its agents to register again before anything advances (runner_resume.c). NULL
 * with err when it cannot be resumed. Then runner_start is not called. */
runner_t *runner_resume(coord_t *coord, struct fb_campaign **campaign,
                        const struct store_campaign *c, coord_progress_cb cb, void *arg, char *err,
                        size_t errlen);
/* Frees the runner (it must have finished, or the coordinator is shutting down). */
void runner_destroy(runner_t **self_p);
/* Begins the first stage on the next loop iteration. */
void runner_start(runner_t *self);
const char *runner_id(const runner_t *self);
/* The campaign it runs (borrowed, valid while the runner lives). */
const struct fb_campaign *runner_campaign(const runner_t *self);
bool runner_finished(const runner_t *self);
/* The campaign's progress now (what its watchers were last told). */
void runner_progress(const runner_t *self, coord_progress_t *out);
/* Ends the campaign `cancelled`: undecided tasks end `error` with why, members still running
 * are sent CancelTask, stages not begun are skipped. Its watchers get the final progress. */
void runner_cancel(runner_t *self, const char *why);
/* The store lost what was written since the last commit: the runner stops (no timer fires, it
 * takes no event) until it is destroyed and the campaign resumed from the store. */
void runner_freeze(runner_t *self);
/* A frozen campaign given up: members still running are sent CancelTask; nothing is stored. */
void runner_abandon(runner_t *self, const char *why);

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
