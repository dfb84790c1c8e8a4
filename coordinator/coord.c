/* SPDX-License-Identifier: Apache-2.0 */
/* Coordinator: the ROUTER socket and the message handling that feeds the store (the timeline)
 * and the campaign runner.
 *
 * Every message is decoded and dispatched here: a Hello to the registry, a submission or
 * campaign request to coord_submit.c, and an agent's messages (heartbeats, task events,
 * results, exchange posts) once its identity maps to a registered node. Results are stored once
 * per result id and always acknowledged, after the commit that holds them, so a re-sent result
 * is harmless. This file also creates and destroys the coordinator.
 *
 * The agent registry with liveness and registration is in coord_registry.c, the exchange relay
 * in coord_exchange.c, client submissions in coord_submit.c; the state they share is in
 * coord_internal.h. */
#include "coord_internal.h"
#include "report.h"
#include "runner.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "common/strmap.h"
#include "common/units.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "scheduler/campaign.h"
#include "scheduler/rendezvous.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define COORD_PROGRESS_STORE_MS 5000
/* Connections the kernel queues before the coordinator accepts them (ZMQ_BACKLOG). */
#define COORD_LISTEN_BACKLOG 8192
/* How often exchange deadlines are checked. */
#define COORD_EXCHANGE_TICK_MS 250
/* How long an agent may stay away before it leaves the live registry (--forget-after). */
#define COORD_FORGET_AFTER_MS 3600000
/* Campaigns are held this long while the database cannot be written (coord_store_health.c). */
#define COORD_STORE_GIVE_UP_MS 60000

int coord_send_to(coord_t *self, const char *identity, Fleetburn__Envelope *env)
{
    if (coord_relay_identity(identity))
        return coord_relay_send(self, identity, env); /* an agent behind a relay */
    uint8_t id[256];
    size_t id_len = fb_hex_decode(identity, strlen(identity), id, sizeof id);
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(env, &len);
    const void *frames[] = {id, buf};
    size_t lens[] = {id_len, len};
    int rc = fb_zsock_send(self->zs, frames, lens, 2);
    free(buf);
    return rc;
}

void coord_event(coord_t *self, const char *campaign_id, const char *task_id, const char *node,
                 const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    if (store_event(self->store, fb_now_ms(), campaign_id, task_id, node, kind, msg))
        log_error("cannot store event: %s", store_errmsg(self->store));
    free(msg);
}

static void s_on_heartbeat(coord_t *self, const char *identity)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Heartbeat hb = FLEETBURN__HEARTBEAT__INIT;
    hb.time_ms = fb_now_ms();
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    coord_send_to(self, identity, &env);
}

/* A node speaks only for tasks the coordinator gave it: the task must list the node, and a
 * result's id must be the node's own (the task id, or <task>@<node> for a group member), so that
 * no peer can take the result id another node will use. Anything else is dropped, counted and
 * logged naming the node; it changes nothing. */
/* The id of the campaign task_id belongs to, for its timeline events (NULL: none running). */
static const char *s_campaign_of(coord_t *self, const char *task_id)
{
    campaign_slot_t *slot = coord_campaign_of_task(self, task_id);
    return slot ? slot->id : NULL;
}

static bool s_task_is_nodes(coord_t *self, node_t *node, const char *task_id, const char *what)
{
    int rank = store_task_member(self->store, task_id, node->name);
    if (rank >= 0)
        return true;
    self->n_foreign++;
    uint64_t held = 0;
    if (fb_ratelimit_ok(&self->foreign_log, fb_mono_ms(), &held))
        log_warn("dropped a %s from %s for task %s: %s (%llu dropped in all, %llu lines held "
                 "back)",
                 what, node->name, task_id,
                 rank == -EPERM    ? "the task was given to other nodes"
                 : rank == -ENOENT ? "no such task"
                                   : "the task could not be looked up",
                 (unsigned long long)self->n_foreign, (unsigned long long)held);
    return false;
}

static bool s_result_id_is_nodes(const char *result_id, const char *task_id, const char *node)
{
    size_t tlen = strlen(task_id);
    if (!strcmp(result_id, task_id))
        return true;
    return !strncmp(result_id, task_id, tlen) && result_id[tlen] == '@' &&
           !strcmp(result_id + tlen + 1, node);
}

static void s_on_task_event(coord_t *self, node_t *node, const Fleetburn__TaskEvent *ev)
{
    static const char *kinds[] = {"", "started", "progress", "log", "telemetry"};
    const char *kind = kinds[ev->kind];
    if (!s_task_is_nodes(self, node, ev->task_id, "task event"))
        return;
    if (ev->kind == FLEETBURN__TASK_EVENT__KIND__KIND_PROGRESS ||
        ev->kind == FLEETBURN__TASK_EVENT__KIND__KIND_STARTED)
        coord_progress_event(node, ev);
    if (ev->kind == FLEETBURN__TASK_EVENT__KIND__KIND_PROGRESS) {
        uint64_t now = fb_mono_ms();
        if (now - node->last_progress_ms < COORD_PROGRESS_STORE_MS && ev->progress < 1.0)
            return;
        node->last_progress_ms = now;
        coord_event(self, s_campaign_of(self, ev->task_id), ev->task_id, node->name, kind,
                    "%.0f%% %s", ev->progress * 100.0, ev->message);
        return;
    }
    if (ev->kind == FLEETBURN__TASK_EVENT__KIND__KIND_TELEMETRY) {
        coord_telemetry_event(self, s_campaign_of(self, ev->task_id), node->name, ev);
        return;
    }
    coord_event(self, s_campaign_of(self, ev->task_id), ev->task_id, node->name, kind, "%s",
                ev->message);
}

static void s_on_task_result(coord_t *self, const char *identity, node_t *node,
                             const Fleetburn__TaskResult *m)
{
    if (self->store_down)
        return; /* not acknowledged: the agent sends it again once the store takes writes */
    if (!s_task_is_nodes(self, node, m->task_id, "result"))
        return;
    if (!s_result_id_is_nodes(m->result_id, m->task_id, node->name)) {
        self->n_foreign++;
        log_warn("dropped a result from %s for task %s: result id %s is not %s's (%llu dropped so "
                 "far)",
                 node->name, m->task_id, m->result_id, node->name,
                 (unsigned long long)self->n_foreign);
        return;
    }
    coord_telemetry_node_done(self, s_campaign_of(self, m->task_id), node->name);
    fb_result_t *r = fb_wire_result_from_proto(m);
    if (!r->node || !r->node[0] || strcmp(r->node, node->name)) {
        free(r->node);
        r->node = xstrdup(node->name);
    }
    coord_expect_result(self, r); /* the campaign's expected hardware (coord_expect.c) */
    int rc = store_result_insert(self->store, r, fb_now_ms());
    if (rc == 0) {
        log_info("result %s from %s: %s%s%s", r->task_id, node->name, fb_verdict_name(r->verdict),
                 r->error ? ": " : "", r->error ? r->error : "");
        coord_event(self, s_campaign_of(self, r->task_id), r->task_id, node->name, "result",
                    "%s%s%s", fb_verdict_name(r->verdict), r->error ? ": " : "",
                    r->error ? r->error : "");
        coord_campaigns_result(self, r);
    } else if (rc == -EEXIST) {
        log_debug("result %s from %s already stored", r->result_id, node->name);
    } else {
        /* Not acknowledged: the agent keeps it and sends it again. */
        log_error("cannot store result %s from %s: %s", r->result_id, node->name,
                  store_errmsg(self->store));
        fb_result_destroy(&r);
        return;
    }
    if (self->n_acks == self->cap_acks) {
        self->cap_acks = self->cap_acks ? self->cap_acks * 2 : 256;
        self->ack_identities = xrealloc(self->ack_identities, self->cap_acks * sizeof(char *));
        self->ack_ids = xrealloc(self->ack_ids, self->cap_acks * sizeof(char *));
    }
    self->ack_identities[self->n_acks] = xstrdup(identity);
    self->ack_ids[self->n_acks++] = xstrdup(r->result_id);
    fb_result_destroy(&r);
}

/* Commits what was stored since the last commit, then acknowledges the results among it: an Ack
 * must never reach an agent (which then deletes its copy) before the result is on disk. A failed
 * commit loses those writes; their results stay unacknowledged and are sent again. */
void coord_flush(coord_t *self)
{
    int rc = store_flush(self->store);
    if (rc) {
        log_error("cannot commit to the store: %s; %zu result(s) will be sent again",
                  store_errmsg(self->store), self->n_acks);
        coord_store_failed(self, rc);
    } else if (self->webhooks_queued) {
        self->webhooks_queued = false; /* their rows are on disk: they may be posted now */
        webhook_queue_kick(self->webhooks);
    }
    for (size_t i = 0; i < self->n_acks; i++) {
        if (!rc) {
            Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
            Fleetburn__Ack ack = FLEETBURN__ACK__INIT;
            ack.result_ids = &self->ack_ids[i];
            ack.n_result_ids = 1;
            env.body_case = FLEETBURN__ENVELOPE__BODY_ACK;
            env.ack = &ack;
            coord_send_to(self, self->ack_identities[i], &env);
        }
        free(self->ack_identities[i]);
        free(self->ack_ids[i]);
    }
    self->n_acks = 0;
    self->dispatched = false;
}

static void s_on_flush(uv_prepare_t *h)
{
    coord_campaigns_reap(h->data);
    coord_flush(h->data);
}

/* --- dispatch ------------------------------------------------------------------------------- */

/* A message that never reaches a handler: any peer can send those at will (garbage makes one
 * every few kilobytes), so they are logged at most once per 10 s, with the count. */
static void s_bad_message(coord_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void s_bad_message(coord_t *self, const char *fmt, ...)
{
    uint64_t held = 0;
    self->n_bad++;
    if (!fb_ratelimit_ok(&self->bad_log, fb_mono_ms(), &held))
        return;
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    log_warn("%s, from %s (%llu such messages in all, %llu lines held back)", what,
             fb_zsock_peer_address(self->zs), (unsigned long long)self->n_bad,
             (unsigned long long)held);
    free(what);
}

static void s_on_message(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                         void *arg)
{
    (void)zs;
    coord_t *self = arg;
    if (n != 2 || lens[0] == 0 || lens[0] > 255) {
        s_bad_message(self, "dropped a message of %zu frames", n);
        return;
    }
    char identity[520];
    fb_hex_encode(frames[0], lens[0], identity, sizeof identity);
    self->peer =
        (coord_peer_t){fb_zsock_peer_user_id(self->zs), NULL, NULL, fb_zsock_peer_fd(self->zs)};
    coord_handle_frame(self, identity, frames[1], lens[1]);
}

void coord_handle_frame(coord_t *self, const char *identity, const uint8_t *data, size_t len)
{
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = fb_wire_decode(data, len, &env, err, sizeof err);
    if (rc == -EPROTONOSUPPORT) {
        s_bad_message(self, "refused a peer: %s", err);
        if (env->body_case == FLEETBURN__ENVELOPE__BODY_HELLO)
            coord__send_welcome(self, identity, false, err);
        else if (env->body_case == FLEETBURN__ENVELOPE__BODY_SUBMIT ||
                 env->body_case == FLEETBURN__ENVELOPE__BODY_CAMPAIGN_REQUEST)
            coord_send_progress(self, identity, NULL, err, NULL);
        fb_wire_free(&env);
        return;
    }
    if (rc) {
        s_bad_message(self, "dropped an invalid message: %s", err);
        return;
    }
    if (coord_relay_filter(self, identity, env)) { /* Relayed, or what a relay may not send */
        fb_wire_free(&env);
        return;
    }
    if (env->body_case == FLEETBURN__ENVELOPE__BODY_HELLO) {
        coord__on_hello(self, identity, env->hello);
    } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_SUBMIT) {
        coord_on_submit(self, identity, env->submit);
    } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_CAMPAIGN_REQUEST) {
        coord_on_campaign_request(self, identity, env->campaign_request);
    } else {
        node_t *node = coord__node_by_identity(self, identity);
        if (!node) {
            /* An agent from before a coordinator restart: it re-registers when it notices
             * that its heartbeats go unanswered. */
            log_debug("ignored a message from an unregistered peer");
        } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_HEARTBEAT &&
                   env->heartbeat->goodbye && env->heartbeat->goodbye[0]) {
            node->last_seen = fb_mono_ms();
            coord__node_gone(self, node, env->heartbeat->goodbye);
        } else {
            coord_node_heard(self, node);
            switch (env->body_case) {
            case FLEETBURN__ENVELOPE__BODY_HEARTBEAT:
                s_on_heartbeat(self, identity);
                break;
            case FLEETBURN__ENVELOPE__BODY_TASK_EVENT:
                s_on_task_event(self, node, env->task_event);
                break;
            case FLEETBURN__ENVELOPE__BODY_TASK_RESULT:
                s_on_task_result(self, identity, node, env->task_result);
                break;
            case FLEETBURN__ENVELOPE__BODY_EXCHANGE:
                coord_on_exchange(self, node, env->exchange);
                break;
            default:
                log_warn("agent %s sent an unexpected message (body %d)", node->name,
                         (int)env->body_case);
            }
        }
    }
    fb_wire_free(&env);
}

/* --- public --------------------------------------------------------------------------------- */

coord_t *coord_new(uv_loop_t *loop, const coord_options_t *opts, char *err, size_t errlen)
{
    coord_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->slurm_bin = xstrdup(opts->slurm_bin);
    self->heartbeat_ms = opts->heartbeat_ms ? opts->heartbeat_ms : 1000;
    self->liveness = opts->liveness ? opts->liveness : 5;
    self->forget_after_ms = opts->forget_after_ms ? opts->forget_after_ms : COORD_FORGET_AFTER_MS;
    self->nodes = fb_strmap_new();
    self->identities = fb_strmap_new();
    self->held = fb_strmap_new();
    self->foreign_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    self->refusal_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    self->bad_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    self->relay_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    char *store_err = NULL;
    if (store_open(opts->db_path, &self->store, &store_err)) {
        snprintf(err, errlen, "cannot open database %s: %s", opts->db_path,
                 store_err ? store_err : "unknown error");
        free(store_err);
        coord_destroy(&self);
        return NULL;
    }
    int unheard = store_agents_mark_unheard(self->store, fb_now_ms());
    if (unheard > 0)
        log_info("%d agent(s) recorded alive by an earlier coordinator are 'unheard' until they "
                 "register again",
                 unheard);
    int stale = opts->resume ? 0 : store_campaign_interrupt_stale(self->store, fb_now_ms());
    if (stale > 0)
        log_warn("marked %d campaign(s) left running by an earlier coordinator as interrupted",
                 stale);
    store_defer_commits(self->store, true);
    self->webhooks = webhook_queue_new(loop, self->store, &opts->webhooks, err, errlen);
    if (!self->webhooks) {
        coord_destroy(&self);
        return NULL;
    }
    coord_telemetry_init(self);
    uv_prepare_init(loop, &self->flush);
    self->flush.data = self;
    uv_prepare_start(&self->flush, s_on_flush);
    self->zctx = zmq_ctx_new();
    /* The handshakes of a fleet connecting at once are public-key work on the I/O threads; libzmq
     * hands each new connection to its least loaded one. Must be set before the first socket. */
    if (opts->io_threads > 1)
        zmq_ctx_set(self->zctx, ZMQ_IO_THREADS, (int)opts->io_threads);
    if (opts->keys_dir) {
        self->auth = auth_new(loop, self->zctx, opts->keys_dir, err, errlen);
        if (!self->auth) {
            coord_destroy(&self);
            return NULL;
        }
    }
    void *sock = fb_zsock_new_socket(self->zctx, ZMQ_ROUTER);
    if (self->auth) {
        int server = 1;
        zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &server, sizeof server);
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, auth_server_secret(self->auth), 41);
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "fleetburn", 9);
    }
    int one = 1, linger = 0, hwm = 100000;
    zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    /* A fleet reconnects at once after a coordinator restart: with libzmq's listen backlog of
     * 100, thousands of SYNs overflow the queue and their senders retry after 1, 3, 7, 15 s.
     * The kernel caps this at net.core.somaxconn. */
    int backlog = COORD_LISTEN_BACKLOG;
    zmq_setsockopt(sock, ZMQ_BACKLOG, &backlog, sizeof backlog);
    /* Before the bind: libzmq copies socket options into the listener when it binds. */
    conns_limits_t limits = {opts->max_connections, opts->max_connections_per_address,
                             opts->handshake_ms};
    self->conns = conns_new(loop, self->zctx, sock, &limits, err, errlen);
    if (!self->conns) {
        zmq_close(sock);
        coord_destroy(&self);
        return NULL;
    }
    if (zmq_bind(sock, opts->bind) != 0) {
        snprintf(err, errlen, "cannot bind %s: %s", opts->bind, zmq_strerror(errno));
        conns_destroy(&self->conns);
        zmq_close(sock);
        coord_destroy(&self);
        return NULL;
    }
    size_t len = sizeof self->endpoint;
    zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, self->endpoint, &len);
    self->zs = fb_zsock_new(loop, sock, s_on_message, self);
    uv_timer_init(loop, &self->liveness_timer);
    self->liveness_timer.data = self;
    uv_timer_start(&self->liveness_timer, coord__on_liveness, coord__liveness_tick_ms(self),
                   coord__liveness_tick_ms(self));
    self->rendezvous = fb_rendezvous_new();
    self->store_give_up_ms =
        opts->store_give_up_ms ? opts->store_give_up_ms : COORD_STORE_GIVE_UP_MS;
    uv_timer_init(loop, &self->store_retry);
    self->store_retry.data = self;
    uv_timer_init(loop, &self->exchange_timer);
    self->exchange_timer.data = self;
    uv_timer_start(&self->exchange_timer, coord_on_exchange_tick, COORD_EXCHANGE_TICK_MS,
                   COORD_EXCHANGE_TICK_MS);
    if (opts->resume)
        coord_campaigns_resume(self);
    return self;
}

static void s_noop_close(uv_handle_t *h)
{
    (void)h;
}

void coord_destroy(coord_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    coord_t *self = *self_p;
    *self_p = NULL;
    coord_submit_jobs_orphan(self);
    coord_slurm_jobs_orphan(self);
    coord_campaigns_destroy(self);
    if (self->liveness_timer.data)
        uv_close((uv_handle_t *)&self->liveness_timer, s_noop_close);
    if (self->exchange_timer.data)
        uv_close((uv_handle_t *)&self->exchange_timer, s_noop_close);
    if (self->store_retry.data)
        uv_close((uv_handle_t *)&self->store_retry, s_noop_close);
    fb_hostlist_free(self->given_up, self->n_given_up);
    coord_telemetry_close(self);
    if (self->flush.data) {
        coord_flush(self);
        uv_close((uv_handle_t *)&self->flush, s_noop_close);
    }
    free(self->ack_identities);
    free(self->ack_ids);
    webhook_queue_destroy(&self->webhooks);
    conns_destroy(&self->conns); /* its monitor goes before the socket it watches */
    fb_zsock_close(&self->zs);
    auth_destroy(&self->auth);
    /* Let the loop run the close callbacks (which close the ZeroMQ socket) before the context
     * is terminated. */
    uv_run(self->loop, UV_RUN_NOWAIT);
    if (self->zctx)
        zmq_ctx_term(self->zctx);
    size_t pos = 0;
    void *value;
    while (self->nodes && fb_strmap_next(self->nodes, &pos, NULL, &value))
        coord__node_free(value);
    fb_strmap_destroy(&self->nodes);
    fb_strmap_destroy(&self->identities);
    coord_expect_destroy(self);
    store_destroy(&self->store);
    fb_rendezvous_destroy(&self->rendezvous);
    free(self->slurm_bin);
    free(self);
}

const char *coord_endpoint(const coord_t *self)
{
    return self->endpoint;
}

store_t *coord_store(coord_t *self)
{
    return self->store;
}

uv_loop_t *coord_loop(coord_t *self)
{
    return self->loop;
}

void coord_read_pending(coord_t *self)
{
    fb_zsock_drain(self->zs);
}

int coord_send_run_task(coord_t *self, const char *name, Fleetburn__RunTask *task)
{
    node_t *node = fb_strmap_get(self->nodes, name);
    if (!node || !node->alive)
        return -EHOSTUNREACH;
    coord_fingerprint_dispatch(self, task->campaign_id, name); /* coord_expect.c */
    /* Tasks are on disk before the first agent hears of them (the runner's promise to the
     * timeline); the rest of the burst shares that commit. */
    if (!self->dispatched) {
        coord_flush(self);
        self->dispatched = true;
    }
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RUN_TASK;
    env.run_task = task;
    return coord_send_to(self, node->identity, &env);
}

int coord_send_cancel(coord_t *self, const char *name, const char *task_id, const char *reason)
{
    node_t *node = fb_strmap_get(self->nodes, name);
    if (!node || !node->alive)
        return -EHOSTUNREACH;
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__CancelTask c = FLEETBURN__CANCEL_TASK__INIT;
    c.task_id = (char *)task_id;
    c.reason = (char *)reason;
    env.body_case = FLEETBURN__ENVELOPE__BODY_CANCEL_TASK;
    env.cancel_task = &c;
    return coord_send_to(self, node->identity, &env);
}
