/* SPDX-License-Identifier: Apache-2.0 */
/* The agent daemon's core: registers with the coordinator, heartbeats, runs tasks through
 * task.h, spools results until acknowledged and re-sends them after reconnecting. */
#ifndef FB_AGENT_H
#define FB_AGENT_H

#include "task.h"
#include "fleetburn.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* How the agent runs tasks. The default (executor NULL in agent_options_t) runs each in a
 * fleetburn-worker process (task.h); fleetburn-simfleet plugs in simulated tasks (sim/simtask.h).
 * An executor keeps task.h's contract: start returns a handle, or NULL with *result_out set (the
 * agent reports that result); a started task calls cb->on_done exactly once, never from inside
 * start, unless abort came first; cancel makes it end with verdict error and the reason; abort
 * frees it without on_done (agent shutdown); write_line hands it an exchange reply line. Handles
 * are the executor's own (void *). The agent sets the result's ids itself (task id, result id,
 * node), so executors need not. */
typedef struct {
    void *(*start)(void *arg, uv_loop_t *loop, const task_env_t *env, const char *task_id,
                   const char *workload, const char *const *params, size_t n_params,
                   uint64_t timeout_ms, const task_callbacks_t *cb, fb_result_t **result_out);
    void (*cancel)(void *task, const char *reason);
    void (*abort)(void *task);
    void (*write_line)(void *task, const char *line);
    void *arg;
} agent_executor_t;

typedef struct {
    const char *coordinator;    /* tcp://HOST:PORT */
    const char *name;           /* node name; validated by the caller */
    const char *spool_dir;      /* results waiting for an Ack; NULL: kept in memory only
                                   (spool_open_memory, simulated agents) */
    const char *worker_path;    /* fleetburn-worker */
    const char *sysfs_root;     /* "" for the live machine */
    const char *address;        /* where peers reach this node; NULL: the route to the coordinator */
    /* CURVE (docs/security.md): this agent's secret key file and the coordinator's public key
     * file, pinned; both NULL for a loopback coordinator without keys. */
    const char *key_file;
    const char *server_key_file;
    bool allow_fault_injection; /* test-only: honour inject_* parameters */
    /* Test-only: parameters added to tasks, "KEY=VALUE" for every task or
     * "WORKLOAD.KEY=VALUE" for one workload; needs allow_fault_injection. */
    const char *const *inject;
    size_t n_inject;
    /* Site settings for the workers, "KEY=VALUE" (copied): handed to every fleetburn-worker as
     * --site KEY=VALUE. They come from the agent's local configuration (agent/main.c), never
     * from the coordinator. */
    const char *const *site;
    size_t n_site;
    /* For many agents in one process (fleetburn-simfleet); all NULL for a real agent. */
    const agent_executor_t *executor; /* borrowed; NULL: fleetburn-worker processes */
    void *zmq_context;                /* borrowed, shared; NULL: the agent makes its own */
    const Fleetburn__Inventory *inventory; /* borrowed; NULL: read under sysfs_root */
    /* How often the agent checks its timers and its socket (0: 100 ms). Thousands of agents in
     * one process spend less with a longer one; heartbeats keep their interval within it. */
    uint32_t tick_ms;
} agent_options_t;

typedef struct agent agent_t;

/* Creates the agent on loop and starts connecting. NULL with err on failure (bad spool dir,
 * bad endpoint). */
agent_t *agent_new(uv_loop_t *loop, const agent_options_t *opts, char *err, size_t errlen);
/* Kills running workers, closes the socket and frees the agent once the loop has closed its
 * handles. Spooled results stay on disk for the next start. An agent with its own ZeroMQ context
 * runs the loop until its handles are closed and terminates the context before returning; one
 * with a borrowed context only closes them: the caller runs the loop afterwards, then terminates
 * the shared context. */
void agent_destroy(agent_t **self_p);
/* Nonzero when the coordinator refused this agent for good (protocol version): the exit status
 * main should use. */
int agent_fatal(const agent_t *self);
/* Whether the coordinator has welcomed the current connection. */
bool agent_registered(const agent_t *self);
/* Results spooled and not yet acknowledged. */
size_t agent_unacked(const agent_t *self);
/* Tasks running now. */
size_t agent_running_count(const agent_t *self);

#endif
