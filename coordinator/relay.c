/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn relay` (relay.h): agents' connections on one side, one connection to the
 * coordinator on the other.
 *
 * Each agent connection that registered is a link: its ROUTER identity, the key it was accepted
 * with, the node its Hello named and a number of the relay's (new for every connection, so that
 * a reconnected agent is a new peer to the coordinator, as it is when it connects directly). A
 * node has at most one link: a newer Hello for it replaces the older link, as at the
 * coordinator. Links exist only for registered connections, so their number is bounded by the
 * nodes the relay's keys allow. */
#include "relay.h"
#include "auth.h"
#include "conns.h"
#include "warn_limited.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "common/strmap.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

/* One connection carries every message of the relay's agents: a stage's RunTask burst to all
 * its nodes is that many messages in one pipe. */
#define RELAY_UPSTREAM_HWM 200000
#define RELAY_LISTEN_BACKLOG 8192
/* Until an accepted Welcome passing through says otherwise: the coordinator's defaults. */
#define RELAY_HEARTBEAT_MS 1000
#define RELAY_LIVENESS 5
/* How often the status timer looks whether a RelayStatus is due. */
#define RELAY_TICK_MS 100

typedef struct {
    uint64_t id;
    uint8_t rid[256]; /* the agent connection's ROUTER identity */
    size_t rid_len;
    char *hex; /* rid in hex: the key of the links map */
    char *key; /* its CURVE key (Z85), or NULL without keys */
    char *node;
    conns_peer_fd_t conn; /* its connection, to end it when its key is revoked */
    bool heard;           /* a heartbeat answered here since the last RelayStatus */
    /* monotonic ms of the Hello forwarded and not answered yet; 0: none. The agent repeats its
     * Hello every second until Welcome: while one is on its way, repeats are not forwarded
     * (thousands of agents registering at once would otherwise queue several Hellos each at
     * the coordinator, and each makes the coordinator's answers later still). */
    uint64_t hello_sent;
} link_t;

struct relay {
    uv_loop_t *loop;
    void *zctx;
    auth_t *auth; /* NULL: no keys */
    conns_t *conns;
    fb_zsock_t *down;    /* ROUTER: the agents */
    fb_zsock_t *up;      /* DEALER: the coordinator */
    fb_zsock_t *monitor; /* the upstream connection's handshake failures */
    bool keyed;
    char endpoint[256];
    char *coordinator;
    fb_strmap_t *links;   /* identity hex -> link_t */
    fb_strmap_t *by_node; /* node -> link_t */
    uint64_t next_link;
    uint64_t n_dropped;
    /* Heartbeats of registered agents are answered here and summed up to the coordinator in
     * one RelayStatus a heartbeat interval; its answers name the agents it does not know. */
    uint32_t heartbeat_ms, liveness;
    uint64_t last_status; /* monotonic ms of the last RelayStatus sent */
    uv_timer_t status_timer;
    fb_ratelimit_t drop_log, refusal_log, handshake_log;
};

static void s_link_free(link_t *link)
{
    if (!link)
        return;
    free(link->hex);
    free(link->key);
    free(link->node);
    free(link);
}

/* The link leaves both maps and is freed. */
static void s_unlink(relay_t *self, link_t *link)
{
    if (fb_strmap_get(self->links, link->hex) == link)
        fb_strmap_remove(self->links, link->hex);
    if (fb_strmap_get(self->by_node, link->node) == link)
        fb_strmap_remove(self->by_node, link->node);
    s_link_free(link);
}

static void s_dropped(relay_t *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Messages dropped (invalid, unregistered, over a limit): one line per 10 s with the count. */
static void s_dropped(relay_t *self, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = warn_limited_vline(&self->drop_log, &self->n_dropped, "dropped", fmt, ap);
    va_end(ap);
    if (line)
        log_warn("%s", line);
    free(line);
}

/* --- towards the agents --------------------------------------------------------------------- */

static void s_send_down(relay_t *self, const uint8_t *rid, size_t rid_len, const void *data,
                        size_t len)
{
    const void *frames[] = {rid, data};
    size_t lens[] = {rid_len, len};
    int rc = fb_zsock_send(self->down, frames, lens, 2);
    if (rc && rc != -EHOSTUNREACH)
        s_dropped(self, "cannot send to an agent: %s", zmq_strerror(-rc));
}

/* Encodes env and sends it to the agent at rid. */
static void s_send_env_down(relay_t *self, const uint8_t *rid, size_t rid_len,
                            Fleetburn__Envelope *env)
{
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(env, &len);
    s_send_down(self, rid, rid_len, buf, len);
    free(buf);
}

/* A refused Hello is answered here, as the coordinator would answer it; nothing goes up. */
static void s_refuse(relay_t *self, const uint8_t *rid, size_t rid_len, const char *name,
                     const char *reason)
{
    uint64_t held = 0;
    if (fb_ratelimit_ok(&self->refusal_log, fb_mono_ms(), &held))
        log_warn("refused registration as %s from %s: %s (%llu lines held back)", name,
                 fb_zsock_peer_address(self->down), reason, (unsigned long long)held);
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Welcome w = FLEETBURN__WELCOME__INIT;
    w.accepted = false;
    w.reason = (char *)reason;
    w.protocol_version = FB_PROTOCOL_VERSION;
    env.body_case = FLEETBURN__ENVELOPE__BODY_WELCOME;
    env.welcome = &w;
    s_send_env_down(self, rid, rid_len, &env);
}

/* Why key may not register as name, or NULL when it may (heap). */
static char *s_hello_refusal(relay_t *self, const char *key, const char *name)
{
    if (!self->auth || (key && auth_agent_may(self->auth, key, name)))
        return NULL;
    const char *file = key ? auth_key_file(self->auth, key) : NULL;
    return file ? xasprintf("this agent's key (%s in the relay's %s) may not register as node "
                            "%s: that node's key is agents/%s.pub, or a nodes: line that lists it",
                            file, auth_dir(self->auth), name, name)
                : xasprintf("this agent's key is not an agent key of this relay");
}

/* An allowed Hello: the connection becomes the node's link (replacing an older one). */
static link_t *s_bind(relay_t *self, const char *hex, const uint8_t *rid, size_t rid_len,
                      const char *key, const char *node)
{
    link_t *old = fb_strmap_get(self->by_node, node);
    if (old)
        s_unlink(self, old);
    link_t *link = xcalloc(1, sizeof *link);
    link->id = ++self->next_link;
    memcpy(link->rid, rid, rid_len);
    link->rid_len = rid_len;
    link->hex = xstrdup(hex);
    link->key = key ? xstrdup(key) : NULL;
    link->node = xstrdup(node);
    conns_peer_fd_remember(&link->conn, fb_zsock_peer_fd(self->down));
    fb_strmap_put(self->links, link->hex, link);
    fb_strmap_put(self->by_node, link->node, link);
    return link;
}

/* What a relay forwards: an agent's messages, nothing a client sends. */
static bool s_agent_body(Fleetburn__Envelope__BodyCase body)
{
    return body == FLEETBURN__ENVELOPE__BODY_HELLO || body == FLEETBURN__ENVELOPE__BODY_HEARTBEAT ||
           body == FLEETBURN__ENVELOPE__BODY_TASK_EVENT ||
           body == FLEETBURN__ENVELOPE__BODY_TASK_RESULT ||
           body == FLEETBURN__ENVELOPE__BODY_EXCHANGE;
}

/* Sends an encoded envelope to the coordinator and frees it: 0 or -errno. */
static int s_send_up(relay_t *self, uint8_t *buf, size_t len)
{
    const void *frames[] = {buf};
    int rc = fb_zsock_send(self->up, frames, &len, 1);
    free(buf);
    return rc;
}

/* Encodes env and sends it to the coordinator: 0 or -errno. */
static int s_send_env_up(relay_t *self, Fleetburn__Envelope *env)
{
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(env, &len);
    return s_send_up(self, buf, len);
}

static void s_forward_up(relay_t *self, const link_t *link, const uint8_t *data, size_t len)
{
    size_t out_len = 0;
    uint8_t *buf = fb_wire_encode_relayed(link->node, link->key, link->id, data, len, &out_len);
    int rc = s_send_up(self, buf, out_len);
    if (rc)
        s_dropped(self, "cannot forward a message of %s to the coordinator: %s", link->node,
                  zmq_strerror(-rc));
}

/* How long a forwarded Hello may stay unanswered before a repeat of it is forwarded again (it
 * may have been lost with the relay's connection to the coordinator). */
static uint64_t s_patience_ms(const relay_t *self)
{
    return (uint64_t)self->heartbeat_ms * self->liveness;
}

/* A heartbeat answered here, as the coordinator would answer it; the coordinator hears of it in
 * the next RelayStatus. */
static void s_answer_heartbeat(relay_t *self, link_t *link)
{
    link->heard = true;
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Heartbeat hb = FLEETBURN__HEARTBEAT__INIT;
    hb.time_ms = fb_now_ms();
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    s_send_env_down(self, link->rid, link->rid_len, &env);
}

static void s_send_status(relay_t *self, char **nodes, uint64_t *links, size_t n)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__RelayStatus st = FLEETBURN__RELAY_STATUS__INIT;
    st.nodes = nodes;
    st.n_nodes = n;
    st.links = links;
    st.n_links = n;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RELAY_STATUS;
    env.relay_status = &st;
    int rc = s_send_env_up(self, &env);
    if (rc)
        s_dropped(self, "cannot send a status to the coordinator: %s", zmq_strerror(-rc));
}

/* Once a heartbeat interval: the agents heard since the last one, in messages of at most
 * FB_WIRE_MAX_ITEMS (at least one, so that the coordinator's answers keep coming). */
static void s_on_status_tick(uv_timer_t *h)
{
    relay_t *self = h->data;
    uint64_t now = fb_mono_ms();
    if (now - self->last_status < self->heartbeat_ms)
        return;
    self->last_status = now;
    size_t cap = fb_strmap_size(self->by_node) + 1, n = 0, pos = 0;
    char **nodes = xcalloc(cap, sizeof *nodes);
    uint64_t *links = xcalloc(cap, sizeof *links);
    void *value;
    while (fb_strmap_next(self->by_node, &pos, NULL, &value)) {
        link_t *link = value;
        if (!link->heard)
            continue;
        link->heard = false;
        nodes[n] = link->node;
        links[n++] = link->id;
    }
    size_t sent = 0;
    do {
        size_t chunk = n - sent < FB_WIRE_MAX_ITEMS ? n - sent : FB_WIRE_MAX_ITEMS;
        s_send_status(self, nodes + sent, links + sent, chunk);
        sent += chunk;
    } while (sent < n);
    free(nodes);
    free(links);
}

/* The coordinator's answer to a RelayStatus: the links it does not know stop being answered
 * for, so that their agents register again. */
static void s_on_status_answer(relay_t *self, const Fleetburn__RelayStatus *m)
{
    for (size_t i = 0; i < m->n_nodes; i++) {
        link_t *link = fb_strmap_get(self->by_node, m->nodes[i]);
        if (link && link->id == m->links[i]) {
            log_debug("agent %s: unknown to the coordinator; it registers again", link->node);
            s_unlink(self, link);
        }
    }
}

/* The link a Hello binds, or NULL when the Hello was refused (and answered). */
static link_t *s_on_hello(relay_t *self, const char *hex, const uint8_t *rid, size_t rid_len,
                          link_t *link, const Fleetburn__Hello *m)
{
    if (link && strcmp(link->node, m->name)) {
        char *reason = xasprintf("this connection registered as node %s; a connection speaks "
                                 "for one node",
                                 link->node);
        s_refuse(self, rid, rid_len, m->name, reason);
        free(reason);
        return NULL;
    }
    const char *key = fb_zsock_peer_user_id(self->down);
    char *reason = s_hello_refusal(self, key, m->name);
    if (reason) {
        s_refuse(self, rid, rid_len, m->name, reason);
        free(reason);
        return NULL;
    }
    if (link) /* a repeated Hello on the registered connection */
        return link;
    log_debug("agent %s connected (link %llu)", m->name, (unsigned long long)self->next_link + 1);
    return s_bind(self, hex, rid, rid_len, key, m->name);
}

static void s_on_agent(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                       void *arg)
{
    (void)zs;
    relay_t *self = arg;
    if (n != 2 || lens[0] == 0 || lens[0] > 255) {
        s_dropped(self, "dropped a message of %zu frames from %s", n,
                  fb_zsock_peer_address(self->down));
        return;
    }
    if (lens[1] > FB_WIRE_MAX_RELAYED) {
        s_dropped(self, "dropped a frame of %zu bytes from %s: over the %u a relay forwards",
                  lens[1], fb_zsock_peer_address(self->down), FB_WIRE_MAX_RELAYED);
        return;
    }
    char hex[520];
    fb_hex_encode(frames[0], lens[0], hex, sizeof hex);
    link_t *link = fb_strmap_get(self->links, hex);
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = fb_wire_decode(frames[1], lens[1], &env, err, sizeof err);
    if (rc == -EPROTONOSUPPORT && env->body_case == FLEETBURN__ENVELOPE__BODY_HELLO) {
        s_refuse(self, frames[0], lens[0], "?", err);
    } else if (rc) {
        s_dropped(self, "dropped an invalid message from %s: %s", fb_zsock_peer_address(self->down),
                  err);
    } else if (!s_agent_body(env->body_case)) {
        s_dropped(self,
                  "dropped a message (body %d) from %s: a relay forwards only agents' "
                  "messages",
                  (int)env->body_case, fb_zsock_peer_address(self->down));
    } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_HELLO) {
        link = s_on_hello(self, hex, frames[0], lens[0], link, env->hello);
        uint64_t now = fb_mono_ms();
        if (link && (!link->hello_sent || now - link->hello_sent >= s_patience_ms(self))) {
            link->hello_sent = now;
            s_forward_up(self, link, frames[1], lens[1]);
        }
    } else if (!link) {
        /* Not registered here (the relay restarted, or the coordinator does not know it): the
         * agent says Hello again when its heartbeats go unanswered. */
        log_debug("ignored a message from an unregistered agent connection");
    } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_HEARTBEAT &&
               !env->heartbeat->goodbye[0]) {
        s_answer_heartbeat(self, link);
    } else {
        s_forward_up(self, link, frames[1], lens[1]);
    }
    fb_wire_free(&env);
}

/* --- towards the coordinator ---------------------------------------------------------------- */

/* A Welcome on its way to an agent answers its Hello; an accepted one says how often agents
 * heartbeat and how many the coordinator lets them miss: the relay's status interval and its
 * patience with an unanswered Hello. */
static void s_on_welcome(relay_t *self, link_t *link, const Fleetburn__Relayed *m)
{
    Fleetburn__Envelope *inner = fleetburn__envelope__unpack(NULL, m->frame.len, m->frame.data);
    if (link && inner && inner->body_case == FLEETBURN__ENVELOPE__BODY_WELCOME)
        link->hello_sent = 0; /* answered: the next Hello (a re-registration) goes up */
    if (inner && inner->body_case == FLEETBURN__ENVELOPE__BODY_WELCOME && inner->welcome &&
        inner->welcome->accepted && inner->welcome->heartbeat_interval_ms >= 10 &&
        inner->welcome->heartbeat_interval_ms <= 600000 && inner->welcome->liveness >= 1 &&
        inner->welcome->liveness <= 100) {
        self->heartbeat_ms = inner->welcome->heartbeat_interval_ms;
        self->liveness = inner->welcome->liveness;
    }
    if (inner)
        fleetburn__envelope__free_unpacked(inner, NULL);
}

static void s_on_coordinator(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens,
                             size_t n, void *arg)
{
    (void)zs;
    relay_t *self = arg;
    if (n != 1) {
        s_dropped(self, "dropped a message of %zu frames from the coordinator", n);
        return;
    }
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = fb_wire_decode(frames[0], lens[0], &env, err, sizeof err);
    if (rc) {
        s_dropped(self, "dropped an invalid message from the coordinator: %s", err);
        fb_wire_free(&env);
        return;
    }
    if (env->body_case == FLEETBURN__ENVELOPE__BODY_RELAY_STATUS) {
        s_on_status_answer(self, env->relay_status);
        fb_wire_free(&env);
        return;
    }
    if (env->body_case != FLEETBURN__ENVELOPE__BODY_RELAYED) {
        s_dropped(self, "dropped a message (body %d) from the coordinator: not a Relayed",
                  (int)env->body_case);
        fb_wire_free(&env);
        return;
    }
    const Fleetburn__Relayed *m = env->relayed;
    link_t *link = fb_strmap_get(self->by_node, m->node);
    if (link && link->id != m->link)
        link = NULL;
    s_on_welcome(self, link, m);
    /* A message for an older connection of the node is not for the newer one (an Ack of a
     * result the newer connection may have re-sent is harmless, but a Welcome or a RunTask
     * meant for the old one would confuse it). */
    if (link) {
        s_send_down(self, link->rid, link->rid_len, m->frame.data, m->frame.len);
    } else {
        log_debug("dropped a message for %s (link %llu): that connection is gone", m->node,
                  (unsigned long long)m->link);
    }
    fb_wire_free(&env);
}

static void s_on_handshake(unsigned event, uint32_t value, const char *endpoint, void *arg)
{
    (void)endpoint;
    relay_t *self = arg;
    const char *why = fb_key_handshake_failure(event, value, self->keyed);
    uint64_t held = 0;
    if (why && fb_ratelimit_ok(&self->handshake_log, fb_mono_ms(), &held))
        log_error("the coordinator %s refused this relay's connection: %s", self->coordinator, why);
}

static void *s_upstream(relay_t *self, const relay_options_t *opts, char *err, size_t errlen)
{
    void *sock = fb_zsock_new_socket(self->zctx, ZMQ_DEALER);
    if (!sock) {
        snprintf(err, errlen, "cannot make a socket: %s", zmq_strerror(errno));
        return NULL;
    }
    int linger = 0, hwm = RELAY_UPSTREAM_HWM, ivl = 100, ivl_max = 2000;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    if (fb_key_apply_client(sock, opts->key_file, opts->server_key_file, err, errlen)) {
        zmq_close(sock);
        return NULL;
    }
    if (self->keyed) /* before the connection, so that the first refusal is seen */
        self->monitor = fb_zsock_monitor_new(self->loop, self->zctx, sock,
                                             FB_ZSOCK_HANDSHAKE_FAILED, s_on_handshake, self);
    if (zmq_connect(sock, opts->coordinator) != 0) {
        snprintf(err, errlen, "cannot connect to %s: %s", opts->coordinator, zmq_strerror(errno));
        fb_zsock_close(&self->monitor);
        zmq_close(sock);
        return NULL;
    }
    return sock;
}

static void *s_downstream(relay_t *self, const relay_options_t *opts, char *err, size_t errlen)
{
    void *sock = fb_zsock_new_socket(self->zctx, ZMQ_ROUTER);
    if (!sock) {
        snprintf(err, errlen, "cannot make a socket: %s", zmq_strerror(errno));
        return NULL;
    }
    if (self->auth) {
        int server = 1;
        zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &server, sizeof server);
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, auth_server_secret(self->auth), 41);
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "fleetburn", 9);
    }
    int one = 1, linger = 0, backlog = RELAY_LISTEN_BACKLOG;
    zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_BACKLOG, &backlog, sizeof backlog);
    conns_limits_t limits = {opts->max_connections, opts->max_per_address, opts->handshake_ms};
    self->conns = conns_new(self->loop, self->zctx, sock, &limits, err, errlen);
    if (!self->conns) {
        zmq_close(sock);
        return NULL;
    }
    if (zmq_bind(sock, opts->bind) != 0) {
        snprintf(err, errlen, "cannot bind %s: %s", opts->bind, zmq_strerror(errno));
        conns_destroy(&self->conns);
        zmq_close(sock);
        return NULL;
    }
    size_t len = sizeof self->endpoint;
    zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, self->endpoint, &len);
    return sock;
}

/* --- public --------------------------------------------------------------------------------- */

relay_t *relay_new(uv_loop_t *loop, const relay_options_t *opts, char *err, size_t errlen)
{
    err[0] = '\0';
    if (!opts->keys_dir != !opts->key_file || !opts->key_file != !opts->server_key_file) {
        snprintf(err, errlen, "--keys, --key and --server-key go together");
        return NULL;
    }
    relay_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->keyed = opts->key_file != NULL;
    self->coordinator = xstrdup(opts->coordinator);
    self->heartbeat_ms = RELAY_HEARTBEAT_MS;
    self->liveness = RELAY_LIVENESS;
    self->links = fb_strmap_new();
    self->by_node = fb_strmap_new();
    self->drop_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    self->refusal_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    self->handshake_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(60000);
    self->zctx = zmq_ctx_new();
    if (opts->keys_dir) {
        /* Agents authenticate with the relay's own key pair as the server's. */
        auth_options_t aopts = {opts->keys_dir, opts->key_file, true};
        self->auth = auth_new_opts(loop, self->zctx, &aopts, err, errlen);
        if (!self->auth) {
            relay_destroy(&self);
            return NULL;
        }
    }
    void *down = s_downstream(self, opts, err, errlen);
    if (!down) {
        relay_destroy(&self);
        return NULL;
    }
    self->down = fb_zsock_new(loop, down, s_on_agent, self);
    void *up = s_upstream(self, opts, err, errlen);
    if (!up) {
        relay_destroy(&self);
        return NULL;
    }
    self->up = fb_zsock_new(loop, up, s_on_coordinator, self);
    uv_timer_init(loop, &self->status_timer);
    self->status_timer.data = self;
    uv_timer_start(&self->status_timer, s_on_status_tick, RELAY_TICK_MS, RELAY_TICK_MS);
    return self;
}

void relay_destroy(relay_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    relay_t *self = *self_p;
    *self_p = NULL;
    if (self->status_timer.data)
        uv_close((uv_handle_t *)&self->status_timer, NULL);
    fb_zsock_close(&self->monitor);
    conns_destroy(&self->conns); /* its monitor goes before the socket it watches */
    fb_zsock_close(&self->down);
    fb_zsock_close(&self->up);
    auth_destroy(&self->auth);
    uv_run(self->loop, UV_RUN_NOWAIT); /* the close callbacks close the ZeroMQ sockets */
    if (self->zctx)
        zmq_ctx_term(self->zctx);
    size_t pos = 0;
    void *value;
    while (self->links && fb_strmap_next(self->links, &pos, NULL, &value))
        s_link_free(value);
    fb_strmap_destroy(&self->links);
    fb_strmap_destroy(&self->by_node);
    free(self->coordinator);
    free(self);
}

int relay_reload_keys(relay_t *self, char *err, size_t errlen)
{
    if (!self->auth) {
        snprintf(err, errlen, "no keys to reload: the relay runs without --keys");
        return -ENOTSUP;
    }
    int rc = auth_reload(self->auth, err, errlen);
    if (rc)
        return rc;
    size_t pos = 0, n = 0;
    void *value;
    link_t **revoked = xcalloc(fb_strmap_size(self->links) + 1, sizeof *revoked);
    while (fb_strmap_next(self->links, &pos, NULL, &value)) {
        link_t *link = value;
        if (!auth_agent_may(self->auth, link->key, link->node))
            revoked[n++] = link;
    }
    for (size_t i = 0; i < n; i++) {
        log_warn("agent %s: its key is no longer allowed; dropping its connection",
                 revoked[i]->node);
        conns_peer_fd_end(&revoked[i]->conn);
        s_unlink(self, revoked[i]);
    }
    free(revoked);
    return 0;
}

const char *relay_endpoint(const relay_t *self)
{
    return self->endpoint;
}

size_t relay_links(const relay_t *self)
{
    return fb_strmap_size(self->by_node);
}
