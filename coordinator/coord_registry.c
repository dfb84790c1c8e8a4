/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's agent registry (coord_internal.h): agents by name, registration (Hello and
 * Welcome, with the check of the agent's key against the name it asks for), liveness and what
 * happens to an agent that goes quiet, says goodbye or stays away, and the queries the runner and
 * the CLI make of the registry.
 *
 * Agents are known by name; the ROUTER identity of their current connection maps to the name.
 * A Hello from a name already known replaces the old connection (the agent restarted or
 * reconnected). Every message refreshes liveness; missing liveness x heartbeat intervals makes
 * an agent `lost` and the runner gives its unfinished tasks the verdict `lost`. An agent away for
 * --forget-after leaves the registry; the store keeps its history.
 *
 * Separate from coord.c, which decodes and dispatches messages and handles the agents' tasks and
 * results: this file is the state of the agents themselves, whatever they send. */
#include "coord_internal.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "common/strmap.h"
#include "common/units.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "common/inventory_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* How often an agent's last-seen time is written: fresh enough for `fleetburn nodes`, few
 * enough writes for thousands of agents. */
#define COORD_SEEN_STORE_MS 30000

/* --- registry ------------------------------------------------------------------------------- */

node_t *coord__node_by_identity(coord_t *self, const char *identity)
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
void coord__node_gone(coord_t *self, node_t *node, const char *why)
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
    node->conn.fd = -1;
    char *reason = xasprintf("said goodbye: %s", why);
    coord_campaigns_node_lost(self, node->name, reason);
    free(reason);
}

void coord__node_free(node_t *node)
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
    coord__node_free(node);
}

/* The liveness timer's period. */
uint64_t coord__liveness_tick_ms(const coord_t *self)
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
    uint64_t tick = coord__liveness_tick_ms(self), last = self->last_liveness_tick;
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

void coord__on_liveness(uv_timer_t *h)
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

void coord__send_welcome(coord_t *self, const char *identity, bool accepted, const char *reason)
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
    bool relay_ok =
        !self->peer.node || (!strcmp(self->peer.node, m->name) &&
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
    coord__send_welcome(self, identity, false, reason);
    free(reason);
    return false;
}

void coord__on_hello(coord_t *self, const char *identity, const Fleetburn__Hello *m)
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
        coord__send_welcome(self, identity, true, NULL);
        return;
    }
    if (!node) {
        node = xcalloc(1, sizeof *node);
        node->name = xstrdup(m->name);
        node->conn.fd = -1;
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
    conns_peer_fd_remember(&node->conn, self->peer.fd);
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
    coord__send_welcome(self, identity, true, NULL);
    coord_campaigns_hello(self, node->name, m->running_task_ids, m->n_running_task_ids,
                          m->unacked_result_ids, m->n_unacked_result_ids);
}

/* --- liveness and queries ------------------------------------------------------------------- */

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

/* --- keys ----------------------------------------------------------------------------------- */

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
        if (!node->identity ||
            (auth_agent_may(self->auth, node->key, node->name) &&
             (!node->relay_key || auth_relay_may(self->auth, node->relay_key, node->name))))
            continue;
        log_warn("agent %s: its key%s no longer allowed; dropping its connection", node->name,
                 node->relay_key ? " or its relay's is" : " is");
        fb_strmap_remove(self->identities, node->identity);
        free(node->identity);
        node->identity = NULL;
        /* A relay's connection carries other nodes: it ends only when its key is gone. */
        if (!node->relay_key || !auth_is_relay(self->auth, node->relay_key))
            conns_peer_fd_end(&node->conn);
        node->conn.fd = -1;
        if (node->alive)
            s_node_lost(self, node, "its key was revoked");
    }
    return 0;
}
