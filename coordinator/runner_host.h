/* SPDX-License-Identifier: Apache-2.0 */
/* What the campaign runner needs from the coordinator that hosts it, and all it may use: the
 * store, the loop, the agents' registry, sending tasks and cancels, the timeline, the exchange
 * relay, and what a campaign's watchers see. The coordinator (coord*.c) implements it and drives
 * the runner through runner.h; the runner never sees the coordinator's own header, so the
 * dependency goes one way. */
#ifndef FB_RUNNER_HOST_H
#define FB_RUNNER_HOST_H

#include "common/result.h"
#include "fleetburn.pb-c.h"
#include "store.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

typedef struct coord coord_t;

/* What a campaign's watchers see. */
typedef struct {
    const char *campaign_id;
    const char *campaign_name;
    const char *stage;
    unsigned stage_index, stage_count;
    unsigned tasks_total, tasks_done, tasks_failed;
    uint64_t elapsed_ms;
    bool finished;
    fb_verdict_t verdict;
    const char *state; /* running | finished | cancelled | error */
} coord_progress_t;

typedef void (*coord_progress_cb)(const coord_progress_t *progress, void *arg);

store_t *coord_store(coord_t *self);
bool coord_node_alive(const coord_t *self, const char *name);
/* Names of alive agents, sorted. Free with fb_hostlist_free. */
size_t coord_alive_names(const coord_t *self, char ***names_out);
/* The alive agents a stage of campaign_id with `nodes: all` may use, sorted: those it holds and
 * those nobody holds (which it holds from now on). Free with fb_hostlist_free. */
size_t coord_campaign_alive_nodes(coord_t *self, const char *campaign_id, char ***names_out);
int coord_send_run_task(coord_t *self, const char *node, Fleetburn__RunTask *task);
int coord_send_cancel(coord_t *self, const char *node, const char *task_id, const char *reason);
void coord_event(coord_t *self, const char *campaign_id, const char *task_id, const char *node,
                 const char *kind, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
uv_loop_t *coord_loop(coord_t *self);
/* Reads and handles every message already queued on the socket (before a deadline is judged). */
void coord_read_pending(coord_t *self);
/* How long agents take at most to notice a coordinator restart and register again (their
 * liveness window, twice, and a margin): a resumed campaign waits that long for them. */
uint64_t coord_reregister_ms(const coord_t *self);
/* Where peers reach node name (its Hello.address); "" when unknown. Borrowed. */
const char *coord_node_address(const coord_t *self, const char *name);
/* A group task was decided: its pending exchanges fail with why (the members that posted are
 * told), and the exchange broker forgets the task. */
void coord_exchange_task_ended(coord_t *self, const char *task_id, const char *why);
/* A member (rank) of a running group task ended: the exchanges it never posted to fail with
 * why; the others may still complete. */
void coord_exchange_member_ended(coord_t *self, const char *task_id, unsigned rank,
                                 const char *why);

/* actions.slurm of a campaign that ended (coordinator/slurm_actions.c): drains and resumes run off
 * the loop, and done(arg) is called on the loop once what they did is on the timeline. Returns
 * NULL when there is nothing to run (no actions.slurm, or it could not start: the timeline says
 * why), and done is not called. */
typedef struct coord_slurm_actions coord_slurm_actions_t;
struct fb_campaign;
coord_slurm_actions_t *coord_slurm_actions_start(coord_t *self, const char *campaign_id,
                                                 const struct fb_campaign *campaign,
                                                 void (*done)(void *arg), void *arg);
/* done will not be called (the runner is going away); the actions still end on their own. */
void coord_slurm_actions_forget(coord_slurm_actions_t *actions);

#endif
