/* SPDX-License-Identifier: Apache-2.0 */
/* One running task on an agent: a fleetburn-worker child process in its own process group, its
 * deadline, its stdout progress stream, and the turning of however it ended (a written result,
 * a crash, a deadline, a cancel) into exactly one fb_result_t. */
#ifndef FB_TASK_H
#define FB_TASK_H

#include "common/result.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

typedef struct task task_t;

typedef struct {
    const char *worker_path;
    const char *work_dir; /* where the worker writes its result file */
    const char *node;
    const char *stage; /* the stage's name, from RunTask */
    bool allow_fault_injection;
    /* A member of a group task: rank, size, peers and addresses by rank (size entries each;
     * addresses may be NULL). group false: a task of scope node. */
    bool group;
    unsigned rank, size;
    const char *const *peers;
    const char *const *addresses;
    /* Site settings from the agent's local configuration, "KEY=VALUE": passed to the worker as
     * --site KEY=VALUE, never from the network. */
    const char *const *site;
    size_t n_site;
} task_env_t;

/* Tasks are named by their id in callbacks, so that other executors (agent.h) share them. */
typedef struct {
    /* A line from the worker: kind is "progress", "log", "telemetry" (text then holds
     * "name=value:unit ..." samples) or "exchange" (text is the whole post line, common/exline.h). */
    void (*on_line)(const char *task_id, const char *kind, double progress, const char *text,
                    void *arg);
    /* The task ended; result ownership passes to the callee. The task is closed right after. */
    void (*on_done)(const char *task_id, fb_result_t **result, void *arg);
    void *arg;
} task_callbacks_t;

/* Starts the worker. params are "key=value" strings. Returns a task, or NULL with *result_out set
 * to an error result when the worker cannot start (the caller reports it like any result). */
task_t *task_start(uv_loop_t *loop, const task_env_t *env, const char *task_id,
                   const char *workload, const char *const *params, size_t n_params,
                   uint64_t timeout_ms, const task_callbacks_t *cb, fb_result_t **result_out);
/* Kills the worker's process group; the task ends with verdict error and this reason. */
void task_cancel(task_t *task, const char *reason);
/* Kills the worker without reporting (agent shutdown). Frees the task. */
void task_abort(task_t *task);
const char *task_id(const task_t *task);
/* Writes one line (ending in '\n') to the worker's stdin: an exchange reply (common/exline.h).
 * Copied; dropped silently once the worker has exited. */
void task_write_line(task_t *task, const char *line);

#endif
