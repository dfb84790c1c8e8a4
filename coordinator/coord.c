/* SPDX-License-Identifier: Apache-2.0 */
/* Coordinator: agent registry with liveness, and the message handling that feeds the store
 * (the timeline) and the campaign runner.
 *
 * Agents are known by name; the ROUTER identity of their current connection maps to the name.
 * A Hello from a name already known replaces the old connection (the agent restarted or
 * reconnected). Every message refreshes liveness; missing liveness x heartbeat intervals makes
 * an agent `lost` and the runner gives its unfinished tasks the verdict `lost`. Results are
 * stored once per result id and always acknowledged, so a re-sent result is harmless.
 *
 * The exchange relay is in coord_exchange.c, client submissions in coord_submit.c; the state they
 * share is in coord_internal.h. */
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
#include "common/inventory_format.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#define COORD_PROGRESS_STORE_MS 5000
/* How often an agent's last-seen time is written: fresh enough for `fleetburn nodes`, few
 * enough writes for thousands of agents. */
#define COORD_SEEN_STORE_MS 30000
/* Connections the kernel queues before the coordinator accepts them (ZMQ_BACKLOG). */
#define COORD_LISTEN_BACKLOG 8192
/* How often exchange deadlines are checked. */
#define COORD_EXCHANGE_TICK_MS 250
/* How long an agent may stay away before it leaves the live registry (--forget-after). */
#define COORD_FORGET_AFTER_MS 3600000
/* Campaigns are held this long while the database cannot be written (coord_store_health.c). */
#define COORD_STORE_GIVE_UP_MS 60000

static void s_hex(const uint8_t *data, size_t len, char *out, size_t outlen)
{
    static const char digits[] = "0123456789abcdef";
    size_t j = 0;
    for (size_t i = 0; i < len && j + 2 < outlen; i++) {
        out[j++] = digits[data[i] >> 4];
        out[j++] = digits[data[i] & 15];
    }
    out[j] = '\0';
}

static size_t s_unhex(const char *hex, uint8_t *out, size_t max)
{
    size_t n = 0;
    for (; hex[0] && hex[1] && n < max; hex += 2) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        out[n++] = (uint8_t)v;
    }
    return n;
}

int coord_send_to(coord_t *self, const char *identity, Fleetburn__Envelope *env)
{
    if (coord_relay_identity(identity))
        return coord_relay_send(self, identity, env); /* an agent behind a relay */
    uint8_t id[256];
    size_t id_len = s_unhex(identity, id, sizeof id);
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

/* --- registry ------------------------------------------------------------------------------- */

static node_t *s_node_by_identity(coord_t *self, const char *identity)
{
    return fb_strmap_get(self->identities, identity);
}

/* The wall-clock time a node was last heard from (its last_seen is monotonic). */
static uint64_t s_seen_wall_ms(const node_t *node)
{
    uint64_t mono = fb_mono_ms(), wall = fb_now_ms();
    uint64_t ago = mono > node->last_seen ? mono - node->last_seen : 0;
    return wall > ago ? wall - ago : wall;
}

static void s_node_lost(coord_t *self, node_t *node, const char *why)
{
    node->alive = false;
    log_warn("agent %s lost: %s", node->name, why);
    store_agent_seen(self->store, node->name, s_seen_wall_ms(node));
    store_agent_set_state(self->store, node->name, "lost", fb_now_ms());
    coord_event(self, coord_campaign_holding(self, node->name), NULL, node->name, "agent",
                "lost: %s", why);
    coord_campaigns_node_lost(self, node->name, why);
}

/* The agent said goodbye: it is `gone`, not `lost`; the tasks it still had end as lost ones do
 * (the runner cannot tell a stop from a death), with the reason saying which. Its connection no
 * longer speaks for it: a message from it after the goodbye is one from an unregistered peer. */
static void s_node_gone(coord_t *self, node_t *node, const char *why)
{
    node->alive = false;
    log_info("agent %s gone: said goodbye (%s)", node->name, why);
    store_agent_seen(self->store, node->name, fb_now_ms());
    store_agent_set_state(self->store, node->name, "gone", fb_now_ms());
    coord_event(self, coord_campaign_holding(self, node->name), NULL, node->name, "agent",
                "gone: said goodbye (%s)", why);
    if (node->identity && fb_strmap_get(self->identities, node->identity) == node)
        fb_strmap_remove(self->identities, node->identity);
    free(node->identity);
    node->identity = NULL;
    node->fd = -1;
    char *reason = xasprintf("said goodbye: %s", why);
    coord_campaigns_node_lost(self, node->name, reason);
    free(reason);
}

static void s_node_free(node_t *node)
{
    free(node->name);
    free(node->identity);
    free(node->address);
    free(node->key);
    free(node->relay_key);
    free(node->task_id);
    free(node->phase);
    free(node);
}

/* An agent away for forget_after leaves the live registry (so names that never come back do not
 * pile up); the store keeps its history and state, and it registers anew when it returns. */
static void s_node_forget(coord_t *self, node_t *node, uint64_t now)
{
    char away[32];
    fb_format_duration(now - node->last_seen, away, sizeof away);
    log_info("agent %s forgotten: away for %s (the database keeps its history)", node->name, away);
    coord_event(self, coord_campaign_holding(self, node->name), NULL, node->name, "agent",
                "forgotten: away for %s", away);
    fb_strmap_remove(self->nodes, node->name);
    if (node->identity && fb_strmap_get(self->identities, node->identity) == node)
        fb_strmap_remove(self->identities, node->identity);
    s_node_free(node);
}

/* The liveness timer's period. */
static uint64_t s_liveness_tick_ms(const coord_t *self)
{
    return self->heartbeat_ms / 2 + 1;
}

/* Time the loop did not run (the process was stopped, the machine paused, a slow write held the
 * loop) is the coordinator's own silence, not the agents': when the timer runs later than two of
 * its periods after its last run, the lateness moves every agent's deadline by as much. An agent
 * that is really gone is still declared lost after liveness x heartbeat of the loop's running
 * time. */
static void s_forgive_own_stall(coord_t *self, uint64_t now)
{
    uint64_t tick = s_liveness_tick_ms(self), last = self->last_liveness_tick;
    self->last_liveness_tick = now;
    if (!last || now - last <= 2 * tick)
        return;
    uint64_t stall = now - last - tick;
    if (stall >= self->heartbeat_ms)
        log_warn("the coordinator's loop did not run for %.1f s (stopped or stalled); agents' "
                 "silence during it does not count against them",
                 (double)stall / 1e3);
    size_t pos = 0;
    void *value;
    while (fb_strmap_next(self->nodes, &pos, NULL, &value)) {
        node_t *node = value;
        if (node->alive)
            node->last_seen = node->last_seen + stall < now ? node->last_seen + stall : now;
    }
}

static void s_on_liveness(uv_timer_t *h)
{
    coord_t *self = h->data;
    /* What the agents sent while the loop was away is read before anyone is judged. */
    fb_zsock_drain(self->zs);
    uint64_t now = fb_mono_ms(), limit = (uint64_t)self->heartbeat_ms * self->liveness;
    s_forgive_own_stall(self, now);
    size_t pos = 0, n_away = 0, cap_away = 0;
    void *value;
    node_t **away = NULL;
    while (fb_strmap_next(self->nodes, &pos, NULL, &value)) {
        node_t *node = value;
        if (node->alive && now - node->last_seen > limit) {
            char why[96];
            snprintf(why, sizeof why, "no heartbeat for %.1f s",
                     (double)(now - node->last_seen) / 1e3);
            s_node_lost(self, node, why);
        } else if (!node->alive && now - node->last_seen >= self->forget_after_ms) {
            if (n_away == cap_away) {
                cap_away = cap_away ? cap_away * 2 : 16;
                away = xrealloc(away, cap_away * sizeof *away);
            }
            away[n_away++] = node;
        }
    }
    for (size_t i = 0; i < n_away; i++)
        s_node_forget(self, away[i], now);
    free(away);
}

static void s_send_welcome(coord_t *self, const char *identity, bool accepted, const char *reason)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Welcome w = FLEETBURN__WELCOME__INIT;
    w.accepted = accepted;
    w.reason = (char *)(reason ? reason : "");
    w.heartbeat_interval_ms = self->heartbeat_ms;
    w.liveness = self->liveness;
    w.protocol_version = FB_PROTOCOL_VERSION;
    env.body_case = FLEETBURN__ENVELOPE__BODY_WELCOME;
    env.welcome = &w;
    coord_send_to(self, identity, &env);
}

/* With keys, an agent registers only under a name its key allows; the node that holds the name
 * keeps its connection and its tasks. */
static bool s_hello_allowed(coord_t *self, const char *identity, const Fleetburn__Hello *m)
{
    const char *key = self->peer.key, *relay = self->peer.relay_key;
    /* Through a relay, the Hello must also be for the node the relay tagged it with, and within
     * the relay's nodes: line (coord_relay.c). */
    bool relay_ok = !self->peer.node ||
                    (!strcmp(self->peer.node, m->name) &&
                     (!self->auth || auth_relay_may(self->auth, relay, m->name)));
    if (relay_ok && (!self->auth || (key && auth_agent_may(self->auth, key, m->name))))
        return true;
    const char *file = key && self->auth ? auth_key_file(self->auth, key) : NULL;
    char *reason =
        self->peer.node ? coord_relay_refusal(self, m->name)
        : file ? xasprintf("this agent's key (%s in %s) may not register as node %s: that node's "
                         "key is %s/agents/%s.pub, or a nodes: line that lists it",
                         file, auth_dir(self->auth), m->name, auth_dir(self->auth), m->name)
             : xasprintf("this agent's key is not an agent key of this coordinator");
    uint64_t held = 0;
    if (fb_ratelimit_ok(&self->refusal_log, fb_mono_ms(), &held))
        log_warn("refused registration as %s from %s: %s (%llu lines held back)", m->name,
                 fb_zsock_peer_address(self->zs), reason, (unsigned long long)held);
    s_send_welcome(self, identity, false, reason);
    free(reason);
    return false;
}

static void s_on_hello(coord_t *self, const char *identity, const Fleetburn__Hello *m)
{
    if (!s_hello_allowed(self, identity, m))
        return;
    node_t *node = fb_strmap_get(self->nodes, m->name);
    if (node && node->alive && node->identity && !strcmp(node->identity, identity)) {
        /* The same connection again: a Hello the agent repeated before our Welcome reached it
         * (thousands of agents registering at once queue up for more than its one-second
         * retry). Nothing changed; registering again would cost a store write and make the
         * runner take tasks sent since then for lost. */
        node->last_seen = fb_mono_ms();
        s_send_welcome(self, identity, true, NULL);
        return;
    }
    if (!node) {
        node = xcalloc(1, sizeof *node);
        node->name = xstrdup(m->name);
        node->fd = -1;
        fb_strmap_put(self->nodes, node->name, node);
    } else if (node->identity && strcmp(node->identity, identity)) {
        fb_strmap_remove(self->identities, node->identity);
        log_info("agent %s reconnected%s", node->name,
                 node->alive ? " (replacing its old connection)" : "");
    }
    free(node->identity);
    node->identity = xstrdup(identity);
    fb_strmap_put(self->identities, identity, node);
    free(node->address);
    node->address = xstrdup(m->address ? m->address : "");
    free(node->key);
    node->key = self->peer.key ? xstrdup(self->peer.key) : NULL;
    free(node->relay_key);
    node->relay_key = self->peer.relay_key ? xstrdup(self->peer.relay_key) : NULL;
    node->fd = self->peer.fd;
    bool was_alive = node->alive;
    node->alive = true;
    node->last_seen = node->last_seen_stored = fb_mono_ms();

    char *summary = fb_inventory_summary(m->inventory);
    char *json = fb_inventory_to_json(m->inventory);
    if (store_agent_upsert(self->store, node->name, "alive", summary, json, fb_now_ms()))
        log_error("cannot store agent %s: %s", node->name, store_errmsg(self->store));
    coord_fingerprint_hello(self, node->name, m->inventory); /* coord_expect.c */
    coord_event(self, coord_campaign_holding(self, node->name), NULL, node->name, "agent",
                "registered: %s (%zu unacknowledged results, %zu running tasks)", summary,
                m->n_unacked_result_ids, m->n_running_task_ids);
    if (!was_alive)
        log_info("agent %s registered: %s", node->name, summary);
    free(summary);
    free(json);
    s_send_welcome(self, identity, true, NULL);
    coord_campaigns_hello(self, node->name, m->running_task_ids, m->n_running_task_ids,
                          m->unacked_result_ids, m->n_unacked_result_ids);
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

const char *coord_node_address(const coord_t *self, const char *name)
{
    node_t *node = fb_strmap_get(self->nodes, name);
    return node && node->address ? node->address : "";
}

void coord_node_heard(coord_t *self, node_t *node)
{
    node->last_seen = fb_mono_ms();
    if (node->last_seen - node->last_seen_stored >= COORD_SEEN_STORE_MS) {
        node->last_seen_stored = node->last_seen;
        store_agent_seen(self->store, node->name, fb_now_ms());
    }
    if (!node->alive) {
        node->alive = true;
        store_agent_set_state(self->store, node->name, "alive", fb_now_ms());
        log_info("agent %s is back", node->name);
    }
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
    s_hex(frames[0], lens[0], identity, sizeof identity);
    self->peer = (coord_peer_t){fb_zsock_peer_user_id(self->zs), NULL, NULL,
                                fb_zsock_peer_fd(self->zs)};
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
            s_send_welcome(self, identity, false, err);
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
        s_on_hello(self, identity, env->hello);
    } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_SUBMIT) {
        coord_on_submit(self, identity, env->submit);
    } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_CAMPAIGN_REQUEST) {
        coord_on_campaign_request(self, identity, env->campaign_request);
    } else {
        node_t *node = s_node_by_identity(self, identity);
        if (!node) {
            /* An agent from before a coordinator restart: it re-registers when it notices
             * that its heartbeats go unanswered. */
            log_debug("ignored a message from an unregistered peer");
        } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_HEARTBEAT &&
                   env->heartbeat->goodbye && env->heartbeat->goodbye[0]) {
            node->last_seen = fb_mono_ms();
            s_node_gone(self, node, env->heartbeat->goodbye);
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
    uv_timer_start(&self->liveness_timer, s_on_liveness, s_liveness_tick_ms(self),
                   s_liveness_tick_ms(self));
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
        s_node_free(value);
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

uint64_t coord_reregister_ms(const coord_t *self)
{
    return 2ull * self->heartbeat_ms * self->liveness + 2000;
}

size_t coord_alive_count(const coord_t *self)
{
    size_t n = 0, pos = 0;
    void *value;
    while (fb_strmap_next(self->nodes, &pos, NULL, &value))
        n += ((node_t *)value)->alive;
    return n;
}

bool coord_node_alive(const coord_t *self, const char *name)
{
    node_t *node = fb_strmap_get(self->nodes, name);
    return node && node->alive;
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t coord_alive_names(const coord_t *self, char ***names_out)
{
    char **names = xcalloc(fb_strmap_size(self->nodes) + 1, sizeof(char *));
    size_t n = 0, pos = 0;
    void *value;
    while (fb_strmap_next(self->nodes, &pos, NULL, &value))
        if (((node_t *)value)->alive)
            names[n++] = xstrdup(((node_t *)value)->name);
    qsort(names, n, sizeof(char *), s_cmp_str);
    *names_out = names;
    return n;
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

int coord_reload_keys(coord_t *self, char *err, size_t errlen)
{
    if (!self->auth) {
        snprintf(err, errlen, "no keys to reload: serve runs without --keys");
        return -ENOTSUP;
    }
    int rc = auth_reload(self->auth, err, errlen);
    if (rc)
        return rc;
    size_t pos = 0;
    void *value;
    while (fb_strmap_next(self->nodes, &pos, NULL, &value)) {
        node_t *node = value;
        if (!node->identity || (auth_agent_may(self->auth, node->key, node->name) &&
                                (!node->relay_key ||
                                 auth_relay_may(self->auth, node->relay_key, node->name))))
            continue;
        log_warn("agent %s: its key%s no longer allowed; dropping its connection", node->name,
                 node->relay_key ? " or its relay's is" : " is");
        fb_strmap_remove(self->identities, node->identity);
        free(node->identity);
        node->identity = NULL;
        /* A relay's connection carries other nodes: it ends only when its key is gone. */
        if (node->fd >= 0 && (!node->relay_key || !auth_is_relay(self->auth, node->relay_key)))
            shutdown(node->fd, SHUT_RDWR);
        node->fd = -1;
        if (node->alive)
            s_node_lost(self, node, "its key was revoked");
    }
    return 0;
}
