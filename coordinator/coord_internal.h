/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's state, shared by the files that make it up: coord.c (socket, message
 * dispatch, agents' results), coord_registry.c (agents, registration, liveness),
 * coord_exchange.c (the exchange relay of group tasks) and coord_submit.c (campaigns handed in
 * by clients, and their progress), among others. Nothing outside coordinator/coord*.c includes
 * this. */
#ifndef FB_COORD_INTERNAL_H
#define FB_COORD_INTERNAL_H

#include "coord.h"
#include "auth.h"
#include "conns.h"
#include "runner.h"
#include "common/ratelimit.h"
#include "common/strmap.h"
#include "common/zsock.h"
#include "scheduler/campaign.h"
#include "scheduler/rendezvous.h"

typedef struct {
    char *name;
    char *identity; /* hex of the ROUTER identity of the current connection */
    char *address;  /* Hello.address: where peers reach it */
    bool alive;
    uint64_t last_seen;        /* monotonic ms */
    uint64_t last_progress_ms; /* last progress event stored */
    /* its running task as its worker last told (coord_progress.c): shown while a stage runs */
    char *task_id;             /* the task of the latest started/progress event; NULL before */
    uint64_t task_started;     /* monotonic ms of that task's first event */
    double fraction;           /* 0..1 */
    char *phase;               /* the worker's words, made safe for a terminal */
    uint64_t last_seen_stored; /* last time last_seen went to the store */
    char *key;                 /* the CURVE key it registered with (Z85); NULL without keys */
    conns_peer_fd_t conn;      /* its connection, to end it when its key is revoked */
    char *relay_key;           /* the key of the relay it registered through (Z85); NULL: direct */
} node_t;

/* Who the message being handled came from, set for every message: a direct peer's key and
 * connection, or for a message a relay forwarded (coord_relay.c), the agent's key as the relay
 * authenticated it, the relay's key, the node the relay tagged it with and the relay's
 * connection. Valid during the message's handling only. */
typedef struct {
    const char *key;       /* the peer's CURVE key (Z85); NULL without keys */
    const char *relay_key; /* NULL: a direct peer */
    const char *node;      /* the relay's tag; NULL: a direct peer */
    int fd;                /* the connection's descriptor; -1 unknown */
} coord_peer_t;

/* A client following a campaign (it submitted it, or `fleetburn follow`). */
typedef struct watcher {
    char *identity;
    uint64_t last_sent;
    struct watcher *next;
} watcher_t;

/* A campaign of this coordinator (coord_campaigns.c): running, or queued for held nodes. */
typedef struct campaign_slot {
    coord_t *coord;
    char *id;
    runner_t *runner;       /* NULL while queued */
    bool queued;            /* waits for nodes another campaign holds */
    bool ended;             /* finished or cancelled: reaped on the next loop iteration */
    bool frozen;            /* held while the store cannot be written (coord_store_health.c) */
    fb_campaign_t *pending; /* queued: the campaign and its text, until it starts */
    char *pending_yaml;
    fb_campaign_file_t *files; /* the files its text names (owned copies), stored when it starts */
    size_t n_files;
    char **held; /* the nodes it holds */
    size_t n_held;
    coord_progress_cb cb; /* an in-process watcher (`run --local`), or NULL */
    void *cb_arg;
    watcher_t *watchers;
    struct campaign_slot *next;
} campaign_slot_t;

struct coord {
    uv_loop_t *loop;
    void *zctx;
    fb_zsock_t *zs;
    auth_t *auth;   /* NULL: no keys (loopback) */
    conns_t *conns; /* connection limits of the ROUTER */
    uint64_t forget_after_ms;
    fb_ratelimit_t refusal_log;
    char endpoint[256];
    store_t *store;
    fb_strmap_t *nodes;      /* name -> node_t */
    fb_strmap_t *identities; /* identity hex -> node_t */
    uint32_t heartbeat_ms, liveness;
    uv_timer_t liveness_timer;
    uint64_t last_liveness_tick; /* monotonic ms of the liveness timer's last run; 0 before */
    fb_rendezvous_t *rendezvous; /* exchanges of group tasks */
    uv_timer_t exchange_timer;
    campaign_slot_t *campaigns;     /* in the order they came */
    fb_strmap_t *held;              /* node name -> the campaign_slot_t holding it */
    struct submit_job *submit_jobs; /* submissions being parsed on the thread pool */
    /* The store commits once per loop iteration (store_defer_commits), not once per record:
     * results stored since the last commit are acknowledged only after it. */
    uv_prepare_t flush;
    char **ack_identities, **ack_ids;
    size_t n_acks, cap_acks;
    bool dispatched;    /* a RunTask went out since the last commit */
    uint64_t n_foreign; /* results and events dropped: for tasks not given to their sender */
    fb_ratelimit_t foreign_log;
    /* the store cannot be written (coord_store_health.c) */
    bool store_down;
    uint64_t store_down_since; /* monotonic ms */
    uint64_t store_give_up_ms;
    char store_error[512];
    uv_timer_t store_retry;
    char **given_up; /* campaigns ended for their watchers while it was down */
    size_t n_given_up;
    char *slurm_bin;                        /* coord_options_t.slurm_bin, or NULL */
    struct coord_slurm_actions *slurm_jobs; /* actions.slurm running on the thread pool */

    uint64_t n_bad;         /* messages dropped before they reached a handler */
    fb_ratelimit_t bad_log; /* their log lines */

    /* webhook alerts (webhook_queue.h, coord_webhook.c) */
    webhook_queue_t *webhooks;
    bool webhooks_queued;       /* alerts were queued: posted after the next commit */
    fb_strmap_t *fingerprinted; /* node -> its fingerprint from its Hello and the campaign it was
                                last recorded for (coord_expect.c) */
    struct coord_telemetry *telemetry; /* samples on their way to the store (coord_telemetry.c) */
    coord_peer_t peer;                 /* the sender of the message being handled */
    uint64_t n_relay_refused;          /* Relayed messages refused (coord_relay.c) */
    fb_ratelimit_t relay_log;          /* their log lines */
};

/* Sends env to the peer with the given ROUTER identity (hex). 0 or -errno. */
int coord_send_to(coord_t *self, const char *identity, Fleetburn__Envelope *env);
/* Decodes and handles one message of the peer self->peer describes, whose replies go to
 * identity (a ROUTER identity in hex, or a relayed peer's, coord_relay.c). */
void coord_handle_frame(coord_t *self, const char *identity, const uint8_t *data, size_t len);
/* coord_registry.c */
/* The node was heard from (any message, or a relay's RelayStatus): liveness refreshed, and a
 * node that was lost is alive again. */
void coord_node_heard(coord_t *self, node_t *node);
/* The registered node whose current connection has this identity, or NULL. */
node_t *coord__node_by_identity(coord_t *self, const char *identity);
/* A Hello: the node registers (or its refusal goes back in a Welcome). */
void coord__on_hello(coord_t *self, const char *identity, const Fleetburn__Hello *m);
/* A Welcome to identity: accepted, or refused saying why (reason may be NULL when accepted). */
void coord__send_welcome(coord_t *self, const char *identity, bool accepted, const char *reason);
/* The agent said goodbye (why: its words): it is `gone`, its tasks end as lost ones do. */
void coord__node_gone(coord_t *self, node_t *node, const char *why);
/* Frees a node that is no longer in the registry's maps. */
void coord__node_free(node_t *node);
/* The liveness timer's callback (h->data: the coordinator) and its period. */
void coord__on_liveness(uv_timer_t *h);
uint64_t coord__liveness_tick_ms(const coord_t *self);
/* coord_relay.c: agents behind a `fleetburn relay` */
/* True for the identity of a peer behind a relay ("RELAY/LINK/NODE"). */
bool coord_relay_identity(const char *identity);
/* Sends env to a peer behind a relay, wrapped in a Relayed. 0 or -errno. */
int coord_relay_send(coord_t *self, const char *identity, Fleetburn__Envelope *env);
/* Before a decoded message is dispatched: handles a Relayed (checked, then its frame handled as
 * from its node) and refuses what a relay may not send and what a non-relay may not (Relayed).
 * True when env was taken care of here. */
bool coord_relay_filter(coord_t *self, const char *identity, const Fleetburn__Envelope *env);
/* Why a relayed Hello as name is refused, for the Welcome (heap). */
char *coord_relay_refusal(coord_t *self, const char *name);
/* Commits what the store deferred and acknowledges the results it held. */
void coord_flush(coord_t *self);
/* coord_exchange.c */
void coord_on_exchange(coord_t *self, node_t *node, const Fleetburn__Exchange *m);
void coord_on_exchange_tick(uv_timer_t *h);
/* coord_campaigns.c */
campaign_slot_t *coord_campaign_find(coord_t *self, const char *id);
/* The campaign a task id belongs to ("<campaign>/..."), or NULL. */
campaign_slot_t *coord_campaign_of_task(coord_t *self, const char *task_id);
void coord_campaign_watch(coord_t *self, campaign_slot_t *slot, const char *identity);
/* Cancels a running or queued campaign: -EALREADY when it has ended. */
int coord_campaign_cancel(coord_t *self, campaign_slot_t *slot, const char *why);
/* The campaign's text report for its final Progress (cut to fit a message). Heap. */
char *coord_campaign_summary(coord_t *self, const char *campaign_id);
/* A campaign resumed from the store: a slot holding nodes, its runner attached after. */
campaign_slot_t *coord_campaign_adopt(coord_t *self, const char *id, char **nodes, size_t n);
void coord_campaign_attach(campaign_slot_t *slot, runner_t *runner);
coord_progress_cb coord_campaign_progress_cb(campaign_slot_t *slot, void **arg_out);
/* Frees campaigns that ended, then starts queued ones whose nodes are free. */
void coord_campaigns_reap(coord_t *self);
void coord_campaigns_destroy(coord_t *self);
/* Campaigns an earlier coordinator left running continue (runner_resume); one that cannot ends
 * `interrupted`, saying why. */
void coord_campaigns_resume(coord_t *self);
void coord_campaigns_node_lost(coord_t *self, const char *node, const char *why);
void coord_campaigns_result(coord_t *self, const fb_result_t *r);
void coord_campaigns_hello(coord_t *self, const char *node, char **running, size_t n_running,
                           char **unacked, size_t n_unacked);
/* A frozen campaign rebuilt from the store (after the store was unwritable for `down`). */
void coord_campaign_reload(coord_t *self, campaign_slot_t *slot, const char *down);
/* coord_expect.c */
/* A result about to be stored, of a campaign with an expect section: a health result gets the
 * node's mismatches as findings (and fails), a GPU workload skipped on a node expected to have
 * GPUs fails. */
void coord_expect_result(coord_t *self, fb_result_t *r);
/* A node registered: its fingerprint (from inv) is kept for the campaigns it will run. */
void coord_fingerprint_hello(coord_t *self, const char *node, const Fleetburn__Inventory *inv);
/* A task of campaign_id goes to node: its fingerprint is recorded, once per campaign. */
void coord_fingerprint_dispatch(coord_t *self, const char *campaign_id, const char *node);
void coord_expect_destroy(coord_t *self);
/* coord_progress.c */
/* A started or progress event of node's task: what the stage's progress shows of the node. */
void coord_progress_event(node_t *node, const Fleetburn__TaskEvent *ev);
/* coord_telemetry.c */
void coord_telemetry_init(coord_t *self);
/* Writes the open buckets and stops. */
void coord_telemetry_close(coord_t *self);
/* The samples of a TELEMETRY event of node's task in campaign_id (NULL: dropped). */
void coord_telemetry_event(coord_t *self, const char *campaign_id, const char *node,
                           const Fleetburn__TaskEvent *ev);
/* node sent a result in campaign_id: its open buckets are written now, for the reports. */
void coord_telemetry_node_done(coord_t *self, const char *campaign_id, const char *node);
/* coord_store_health.c */
/* A commit failed (rc): results stay unacknowledged, campaigns are held, the store is retried. */
void coord_store_failed(coord_t *self, int rc);
bool coord_store_down(const coord_t *self);
/* coord_webhook.c */
/* A campaign ended, its end recorded in the store: its webhook alert is queued and sent when its
 * actions.webhook asks for one and the end meets its triggers (or an event says why not). */
void coord_campaign_alert(coord_t *self, const char *campaign_id);
/* Before a campaign is accepted: 0, or -EINVAL with a heap message in *error_out (may be NULL)
 * when it asks for a webhook this coordinator cannot post. */
int coord_campaign_alert_check(coord_t *self, const fb_campaign_t *campaign, char **error_out);
/* coord_submit.c */
void coord_on_submit(coord_t *self, const char *identity, const Fleetburn__Submit *m);
/* follow, cancel, list */
void coord_on_campaign_request(coord_t *self, const char *identity,
                               const Fleetburn__CampaignRequest *m);
/* The coordinator is going away: submissions still being parsed are dropped when they end. */
void coord_submit_jobs_orphan(coord_t *self);
/* slurm_actions.c: the coordinator is going away; Slurm actions still running end unheard. */
void coord_slurm_jobs_orphan(coord_t *self);
/* A Progress to a client; p NULL for a refusal (error says why). 0, or -EHOSTUNREACH when the
 * client is gone. */
int coord_send_progress(coord_t *self, const char *identity, const coord_progress_t *p,
                        const char *error, const char *summary);

#endif
