/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's state, shared by the files that make it up: coord.c (socket, registry,
 * message dispatch, agents' results), coord_exchange.c (the exchange relay of group tasks) and
 * coord_submit.c (campaigns handed in by clients, and their progress). Nothing outside
 * coordinator/coord*.c includes this. */
#ifndef FB_COORD_INTERNAL_H
#define FB_COORD_INTERNAL_H

#include "coord.h"
#include "auth.h"
#include "conns.h"
#include "runner.h"
#include "common/ratelimit.h"
#include "common/strmap.h"
#include "common/zsock.h"
#include "scheduler/rendezvous.h"

typedef struct {
    char *name;
    char *identity; /* hex of the ROUTER identity of the current connection */
    char *address;  /* Hello.address: where peers reach it */
    bool alive;
    uint64_t last_seen;        /* monotonic ms */
    uint64_t last_progress_ms; /* last progress event stored */
    uint64_t last_seen_stored; /* last time last_seen went to the store */
    char *key;                 /* the CURVE key it registered with (Z85); NULL without keys */
    int fd; /* its connection's descriptor, to end it when its key is revoked; -1 unknown */
} node_t;

typedef struct {
    char *identity;
    coord_t *coord;
    uint64_t last_sent;
} client_t;

struct coord {
    uv_loop_t *loop;
    void *zctx;
    zsock_t *zs;
    auth_t *auth;   /* NULL: no keys (loopback) */
    conns_t *conns; /* connection limits of the ROUTER */
    uint64_t forget_after_ms;
    fb_ratelimit_t refusal_log;
    char endpoint[256];
    store_t *store;
    strmap_t *nodes;      /* name -> node_t */
    strmap_t *identities; /* identity hex -> node_t */
    uint32_t heartbeat_ms, liveness;
    uv_timer_t liveness_timer;
    uint64_t last_liveness_tick; /* monotonic ms of the liveness timer's last run; 0 before */
    fb_rendezvous_t *rendezvous; /* exchanges of group tasks */
    uv_timer_t exchange_timer;
    runner_t *runner;
    client_t *client;               /* the CLI that submitted the running campaign, if any */
    struct submit_job *submit_jobs; /* submissions being parsed on the thread pool */
    /* The store commits once per loop iteration (store_defer_commits), not once per record:
     * results stored since the last commit are acknowledged only after it. */
    uv_prepare_t flush;
    char **ack_identities, **ack_ids;
    size_t n_acks, cap_acks;
    bool dispatched;    /* a RunTask went out since the last commit */
    uint64_t n_foreign; /* results and events dropped: for tasks not given to their sender */
    fb_ratelimit_t foreign_log;
    uint64_t n_bad;         /* messages dropped before they reached a handler */
    fb_ratelimit_t bad_log; /* their log lines */
};

/* Sends env to the peer with the given ROUTER identity (hex). 0 or -errno. */
int coord_send_to(coord_t *self, const char *identity, Fleetburn__Envelope *env);
/* Commits what the store deferred and acknowledges the results it held. */
void coord_flush(coord_t *self);
/* coord_exchange.c */
void coord_on_exchange(coord_t *self, node_t *node, const Fleetburn__Exchange *m);
void coord_on_exchange_tick(uv_timer_t *h);
/* coord_submit.c */
void coord_on_submit(coord_t *self, const char *identity, const Fleetburn__Submit *m);
/* The coordinator is going away: submissions still being parsed are dropped when they end. */
void coord_submit_jobs_orphan(coord_t *self);
/* A Progress to a client; p NULL for a refusal (error says why). */
void coord_send_progress(coord_t *self, const char *identity, const coord_progress_t *p,
                         const char *error, const char *summary);

#endif
