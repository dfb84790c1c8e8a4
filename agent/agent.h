/* SPDX-License-Identifier: Apache-2.0 */
/* The agent daemon's core: registers with the coordinator, heartbeats, runs tasks through
 * task.h, spools results until acknowledged and re-sends them after reconnecting. */
#ifndef FB_AGENT_H
#define FB_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

typedef struct {
    const char *coordinator;    /* tcp://HOST:PORT */
    const char *name;           /* node name; validated by the caller */
    const char *spool_dir;      /* results waiting for an Ack */
    const char *worker_path;    /* fleetburn-worker */
    const char *sysfs_root;     /* "" for the live machine */
    const char *address;        /* where peers reach this node; NULL: the route to the coordinator */
    bool allow_fault_injection; /* test-only: honour inject_* parameters */
    /* Test-only: parameters added to tasks, "KEY=VALUE" for every task or
     * "WORKLOAD.KEY=VALUE" for one workload; needs allow_fault_injection. */
    const char *const *inject;
    size_t n_inject;
} agent_options_t;

typedef struct agent agent_t;

/* Creates the agent on loop and starts connecting. NULL with err on failure (bad spool dir,
 * bad endpoint). */
agent_t *agent_new(uv_loop_t *loop, const agent_options_t *opts, char *err, size_t errlen);
/* Kills running workers, closes the socket and frees the agent once the loop has closed its
 * handles. Spooled results stay on disk for the next start. */
void agent_destroy(agent_t **self_p);
/* Nonzero when the coordinator refused this agent for good (protocol version): the exit status
 * main should use. */
int agent_fatal(const agent_t *self);

#endif
