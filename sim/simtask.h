/* SPDX-License-Identifier: Apache-2.0 */
/* Simulated tasks: an agent executor (agent.h) for fleetburn-simfleet. A task waits a short real
 * delay, then reports what the fault model (sim/faultmodel.h) says about it: the verdict of
 * the test over its members (the node itself, or every member of its group, so that all members
 * agree), bandwidth metrics scaled by the slow parts on its flows, and the simulated time the test
 * stands for (metric sim.duration_s). docs/simfleet.md lists the metrics and how they are derived.
 *
 * One executor serves every simulated agent of a process (all on one loop thread) and counts
 * tasks per stage for the fleet's progress and timing report. */
#ifndef FB_SIMTASK_H
#define FB_SIMTASK_H

#include "agent/agent.h"

#include <stddef.h>
#include <stdint.h>

struct fb_faultmodel;

typedef struct simtask_exec simtask_exec_t;

typedef struct {
    const struct fb_faultmodel *model; /* borrowed; outlives the executor */
    uint32_t delay_min_ms;             /* real delay before a result: uniform in [min, max] */
    uint32_t delay_max_ms;
} simtask_options_t;

/* What the fleet did in one stage (times monotonic ms, 0 while nothing happened). */
typedef struct {
    const char *stage; /* borrowed from the executor */
    size_t started, done, failed;
    uint64_t first_start_ms, last_start_ms, last_done_ms;
    double sim_duration_s; /* the longest simulated duration of its tasks */
} simtask_stage_stats_t;

simtask_exec_t *simtask_exec_new(const simtask_options_t *opts);
/* Frees the executor; every task it started must have ended or been aborted (agents destroyed),
 * and the loop must have run their close callbacks. NULL-safe; nulls the pointer. */
void simtask_exec_destroy(simtask_exec_t **self_p);
/* The executor to put in agent_options_t (borrowed from self). */
const agent_executor_t *simtask_exec_executor(simtask_exec_t *self);
/* Stages in the order their first task started; *stats borrowed until the next task starts. */
size_t simtask_exec_stages(const simtask_exec_t *self, const simtask_stage_stats_t **stats);
/* Tasks started and not ended. */
size_t simtask_exec_running(const simtask_exec_t *self);

#endif
