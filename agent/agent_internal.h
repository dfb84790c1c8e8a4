/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's state, shared by agent.c (connection, registration, heartbeats, the spool's
 * re-sending, message dispatch, lifecycle) and agent_tasks.c (running tasks: RunTask and
 * CancelTask, their events, exchanges and results, and the default executor). Nothing outside
 * agent/agent*.c includes this. */
#ifndef FB_AGENT_INTERNAL_H
#define FB_AGENT_INTERNAL_H

#include "agent.h"
#include "spool.h"
#include "common/ratelimit.h"
#include "common/zsock.h"

#include <stdbool.h>

#define AGENT_TICK_MS 100
#define AGENT_HELLO_RETRY_MS 1000
#define AGENT_RESEND_MS 5000
#define AGENT_DEFAULT_HEARTBEAT_MS 1000
#define AGENT_DEFAULT_LIVENESS 5
/* How long a stopping agent waits for its goodbye to leave. */
#define AGENT_GOODBYE_LINGER_MS 500

typedef struct running {
    void *task; /* the executor's handle */
    char *id;
    char *result_id; /* the task id, or <task>@<node> for a member of a group task */
    unsigned rank;   /* in its group (0 for tasks of scope node) */
    struct running *next;
} running_t;

struct agent {
    uv_loop_t *loop;
    const agent_executor_t *exec;
    bool own_zctx, own_inventory;
    const char *key_file, *server_key_file; /* borrowed from the options: read at each connect */
    const fb_key_t *key, *server_key;       /* borrowed, loaded (simulated agents); else NULL */
    fb_zsock_t *monitor;                       /* handshake failures, for the log (real agents) */
    fb_ratelimit_t handshake_log;
    char *coordinator, *name, *worker_path, *sysfs_root;
    char *address; /* Hello.address: where peers reach this node */
    char work_dir[256];
    char gpu_vendors[64]; /* "nvidia", "amd", "nvidia,amd" or "" from the inventory */
    bool allow_fault_injection;
    char **inject; /* "WORKLOAD.KEY=VALUE" or "KEY=VALUE" */
    size_t n_inject;
    char **site; /* site settings for workers, "KEY=VALUE" (agent.h) */
    size_t n_site;
    void *zctx;
    fb_zsock_t *zs;
    spool_t *spool;
    Fleetburn__Inventory *inventory;
    uv_timer_t tick;
    bool welcomed;
    int fatal;
    uint32_t tick_ms;
    uint32_t heartbeat_ms, liveness;
    uint64_t last_heard, last_hello, last_heartbeat, last_resend;
    uint64_t last_tick; /* monotonic ms of the tick timer's last run; 0 before */
    running_t *running;
};

/* agent.c */
/* Sends one message to the coordinator; 0 or -errno (-EAGAIN: dropped at the high-water mark). */
int agent_send(agent_t *self, Fleetburn__Envelope *env);
/* Sends a spooled result again (it stays spooled until the coordinator acknowledges it). */
void agent_send_spooled_result(agent_t *self, const char *result_id);
/* agent_tasks.c */
void agent_on_run_task(agent_t *self, const Fleetburn__RunTask *m);
/* A RunTask that failed validation (why says how) but names a task: answered with an `error`
 * result naming the reason, so the coordinator never waits for a task nobody runs. */
void agent_refuse_run_task(agent_t *self, const Fleetburn__RunTask *m, const char *why);
void agent_on_cancel(agent_t *self, const Fleetburn__CancelTask *m);
void agent_on_exchange(agent_t *self, const Fleetburn__Exchange *m);
bool agent_is_spooled(agent_t *self, const char *id);
bool agent_is_running(agent_t *self, const char *id);
void agent_note_gpu_vendors(agent_t *self);
extern const agent_executor_t agent_worker_executor;

#endif
