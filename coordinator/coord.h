/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator: the ROUTER socket, the registry of agents and their liveness, message
 * handling, the exchange relay of group tasks, and the campaigns that run. One loop
 * thread owns all of it. */
#ifndef FB_COORD_H
#define FB_COORD_H

#include "common/result.h"
#include "fleetburn.pb-c.h"
#include "store.h"
#include "runner_host.h"
#include "webhook_queue.h"
#include "scheduler/campaign.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct fb_campaign;

#define COORD_MAX_IO_THREADS 16 /* serve --io-threads */

typedef struct {
    const char *bind; /* e.g. tcp://0.0.0.0:7755, or port "*" for an ephemeral one */
    const char *db_path;
    uint32_t heartbeat_ms; /* interval agents heartbeat at */
    uint32_t liveness;     /* heartbeats missed before an agent is lost */
    const char *keys_dir;  /* CURVE keys (auth.h); NULL: no authentication (loopback only) */
    /* Connection limits (conns.h): 0 derives the total from the descriptor limit; 0 per address
     * is no limit per address. */
    uint32_t max_connections, max_connections_per_address;
    uint32_t handshake_ms;    /* a connection's ZeroMQ handshake must end within; 0: 5 s */
    unsigned io_threads;      /* ZeroMQ I/O threads (TCP and CURVE handshakes, framing); 0: 1 */
    uint64_t forget_after_ms; /* an agent away this long leaves the live registry; 0: 1 h */
    /* Campaigns an earlier coordinator left running: resumed (serve), or marked interrupted
     * (`run --local`, whose agents are new). */
    bool resume;
    /* how long campaigns are held while the database cannot be written before they end `error`
     * for their watchers; 0: COORD_STORE_GIVE_UP_MS */
    uint64_t store_give_up_ms;
    webhook_options_t webhooks; /* where webhook alerts may go (webhook_queue.h) */
    /* where sinfo and scontrol are (serve --slurm-bin); NULL: the PATH (docs/operations.md
     * "Slurm") */
    const char *slurm_bin;
} coord_options_t;

coord_t *coord_new(uv_loop_t *loop, const coord_options_t *opts, char *err, size_t errlen);
/* Closes the socket and the store; an unfinished campaign stays 'running' in the store and is
 * resumed by the next coordinator that opens it. */
void coord_destroy(coord_t **self_p);
/* Reads the key directory again (SIGHUP): agents whose key no longer allows their node name
 * are dropped, and their connections closed. 0, -ENOTSUP without keys, or -errno with err (the
 * keys in use stay as they were). */
int coord_reload_keys(coord_t *self, char *err, size_t errlen);
/* The endpoint actually bound (with the port resolved), borrowed. */
const char *coord_endpoint(const coord_t *self);
size_t coord_alive_count(const coord_t *self);

/* The campaign of a submission: its text parsed and the files it names resolved from the
 * files attached to it (Submit.files) only; no path from a submission is ever opened. 0 with
 * *out, or -EINVAL with a one-line heap message in *error_out (caller frees): a campaign that
 * does not parse, or names a file that was not attached. */
int coord_campaign_from_submit(const Fleetburn__Submit *m, struct fb_campaign **out,
                               char **error_out);

/* How a campaign is started: who watches it, and whether it may wait for held nodes. */
typedef struct {
    coord_progress_cb cb; /* in-process watcher, or NULL */
    void *cb_arg;
    const char *watcher; /* ROUTER identity (hex) of a client to send Progress to, or NULL */
    bool queue;          /* wait for nodes other campaigns hold instead of being refused */
    const fb_campaign_file_t *files; /* the files its text names, as submitted (copied) */
    size_t n_files;
} coord_start_t;

/* Starts a campaign (ownership of *campaign passes) on the nodes it selects, which it holds
 * until it ends. -EBUSY when another campaign holds some of them (and how->queue is not set),
 * with *error_out naming the holders and nodes; queued, it starts when they are free. yaml is
 * the file's text, kept on the timeline. *id_out: heap copy of the new campaign id. *error_out
 * (may be NULL): heap message on failure. */
int coord_start_campaign(coord_t *self, struct fb_campaign **campaign, const char *yaml,
                         const coord_start_t *how, char **id_out, char **error_out);
/* Webhook alerts being posted now (`run --local` waits for them before it exits). */
size_t coord_webhooks_in_flight(const coord_t *self);
/* Campaigns running (not queued) now. */
size_t coord_running_count(const coord_t *self);
/* The coordinator's health as `fleetburn serve --http` exports it on /metrics (coord_health.c):
 * a snapshot taken on the loop thread, plain numbers only, so another thread may read a copy. */
typedef struct {
    size_t agents_connected;      /* registered and alive now */
    size_t agents_known;          /* in the live registry (any state) */
    size_t campaigns_running, campaigns_queued;
    bool store_up;                /* the store takes writes */
    uint64_t store_down_ms;       /* how long it has not (0 when up) */
    size_t results_unacknowledged; /* stored, waiting for the next commit to be acknowledged */
    size_t webhooks_in_flight;
    uint64_t messages_dropped;  /* malformed or unexpected messages */
    uint64_t messages_foreign;  /* results and events for tasks not given to their sender */
} coord_health_t;
void coord_health(const coord_t *self, coord_health_t *out);
/* The id of the campaign holding node, or NULL. Borrowed. */
const char *coord_campaign_holding(const coord_t *self, const char *node);

#endif
