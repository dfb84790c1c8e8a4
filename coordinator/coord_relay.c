/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's side of `fleetburn relay` (relay.c; docs/security.md "Relays").
 *
 * A relay holds the connections of many agents and speaks for them over one connection of its
 * own, each agent message wrapped in a Relayed tagged with the node the agent registered as at
 * the relay, the agent's key and the relay's number for the agent's connection (its link). Here
 * every such message is checked again (the relay key is a relay's, the node is within its
 * nodes: line, the agent key is allowed for the node in KEYS/agents/, the frame is an agent's
 * message) and then handled exactly as a direct agent's message: the coordinator's identity for
 * the agent is "RELAY/LINK/NODE" (RELAY: the relay connection's ROUTER identity in hex), so
 * the registry, the result and event checks, acknowledgements and the exchange relay need no
 * change; coord_send_to wraps what goes to such an identity in a Relayed for the relay. */
#include "coord_internal.h"
#include "warn_limited.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RELAY (hex of at most 255 bytes) / LINK (20 digits) / NODE */
#define COORD_RELAY_IDENTITY_MAX (520 + 24 + FB_WIRE_MAX_NAME + 2)

bool coord_relay_identity(const char *identity)
{
    return strchr(identity, '/') != NULL;
}

/* One rate-limited line for everything a relay is refused, with the count. */
static void s_refused(coord_t *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void s_refused(coord_t *self, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = warn_limited_vline(&self->relay_log, &self->n_relay_refused, "refused", fmt, ap);
    va_end(ap);
    if (line)
        log_warn("refused a relayed message from %s: %s", fb_zsock_peer_address(self->zs), line);
    free(line);
}

static const char *s_key_file(coord_t *self, const char *key)
{
    const char *file = key && key[0] ? auth_key_file(self->auth, key) : NULL;
    return file ? file : "an unknown key";
}

/* What a relay may forward: an agent's messages, never a client's or another Relayed. */
static bool s_agent_body(Fleetburn__Envelope__BodyCase body)
{
    return body == FLEETBURN__ENVELOPE__BODY_HELLO || body == FLEETBURN__ENVELOPE__BODY_HEARTBEAT ||
           body == FLEETBURN__ENVELOPE__BODY_TASK_EVENT ||
           body == FLEETBURN__ENVELOPE__BODY_TASK_RESULT ||
           body == FLEETBURN__ENVELOPE__BODY_EXCHANGE;
}

/* The relay key and the agent key may both speak for node (with keys); what is not is logged. A
 * Hello that is not is answered by the registry instead (s_hello_allowed in coord.c), so that the
 * agent hears why. */
static bool s_relayed_allowed(coord_t *self, const char *relay_key, const char *agent_key,
                              const char *node)
{
    if (!self->auth)
        return true;
    if (!auth_relay_may(self->auth, relay_key, node)) {
        s_refused(self, "relay %s may not speak for node %s (not in its nodes: line)",
                  s_key_file(self, relay_key), node);
        return false;
    }
    if (!auth_agent_may(self->auth, agent_key, node)) {
        s_refused(self,
                  "relay %s forwarded node %s with agent key %s, which may not register "
                  "as %s",
                  s_key_file(self, relay_key), node, s_key_file(self, agent_key), node);
        return false;
    }
    return true;
}

/* A Relayed from the connection being handled: checked, then its frame handled as a message of
 * the agent behind it. */
static void s_on_relayed(coord_t *self, const char *identity, const Fleetburn__Relayed *m)
{
    const char *relay_key = self->peer.key;
    if (self->auth && !auth_is_relay(self->auth, relay_key)) {
        s_refused(self, "the key is %s, not a relay's (KEYS/relays/NAME.pub)",
                  s_key_file(self, relay_key));
        return;
    }
    /* The frame is decoded in coord_handle_frame; its body is checked there (peer.node set). */
    char agent_identity[COORD_RELAY_IDENTITY_MAX];
    snprintf(agent_identity, sizeof agent_identity, "%s/%" PRIu64 "/%s", identity, m->link,
             m->node);
    coord_peer_t relay = self->peer;
    self->peer = (coord_peer_t){m->agent_key[0] ? m->agent_key : NULL, relay_key ? relay_key : "",
                                m->node, relay.fd};
    coord_handle_frame(self, agent_identity, m->frame.data, m->frame.len);
    self->peer = relay;
}

static void s_send_status(coord_t *self, const char *identity, char **nodes, uint64_t *links,
                          size_t n)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__RelayStatus st = FLEETBURN__RELAY_STATUS__INIT;
    st.nodes = nodes;
    st.n_nodes = n;
    st.links = links;
    st.n_links = n;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RELAY_STATUS;
    env.relay_status = &st;
    coord_send_to(self, identity, &env);
}

/* A relay heard these agents (it answered their heartbeats): each is heard here as if its
 * heartbeat had come through. The answer lists those this coordinator does not know on that
 * link (it restarted, the agent said goodbye, its key was revoked), so that the relay stops
 * answering for them and they register again. */
static void s_on_status(coord_t *self, const char *identity, const Fleetburn__RelayStatus *m)
{
    if (self->auth && !auth_is_relay(self->auth, self->peer.key)) {
        s_refused(self, "a relay status from %s, not a relay's key",
                  s_key_file(self, self->peer.key));
        return;
    }
    char **unknown = xcalloc(m->n_nodes + 1, sizeof *unknown);
    uint64_t *unknown_links = xcalloc(m->n_nodes + 1, sizeof *unknown_links);
    size_t n_unknown = 0;
    char agent_identity[COORD_RELAY_IDENTITY_MAX];
    for (size_t i = 0; i < m->n_nodes; i++) {
        snprintf(agent_identity, sizeof agent_identity, "%s/%" PRIu64 "/%s", identity, m->links[i],
                 m->nodes[i]);
        node_t *node = fb_strmap_get(self->identities, agent_identity);
        if (node) {
            coord_node_heard(self, node);
        } else {
            unknown[n_unknown] = m->nodes[i];
            unknown_links[n_unknown++] = m->links[i];
        }
    }
    s_send_status(self, identity, unknown, unknown_links, n_unknown);
    free(unknown);
    free(unknown_links);
}

bool coord_relay_filter(coord_t *self, const char *identity, const Fleetburn__Envelope *env)
{
    if (self->peer.node) { /* the frame inside a Relayed */
        if (!s_agent_body(env->body_case)) {
            s_refused(self, "node %s: a relay forwards only agents' messages (body %d)",
                      self->peer.node, (int)env->body_case);
            return true;
        }
        return env->body_case != FLEETBURN__ENVELOPE__BODY_HELLO &&
               !s_relayed_allowed(self, self->peer.relay_key, self->peer.key, self->peer.node);
    }
    if (env->body_case == FLEETBURN__ENVELOPE__BODY_RELAYED) {
        s_on_relayed(self, identity, env->relayed);
        return true;
    }
    if (env->body_case == FLEETBURN__ENVELOPE__BODY_RELAY_STATUS) {
        s_on_status(self, identity, env->relay_status);
        return true;
    }
    if (self->auth && auth_is_relay(self->auth, self->peer.key)) {
        s_refused(self,
                  "relay %s sent a message of its own (body %d): a relay key may only "
                  "forward its agents' messages",
                  s_key_file(self, self->peer.key), (int)env->body_case);
        return true;
    }
    return false;
}

char *coord_relay_refusal(coord_t *self, const char *name)
{
    if (strcmp(self->peer.node, name))
        return xasprintf("this agent's relay registered its connection as node %s, not %s",
                         self->peer.node, name);
    if (self->auth && !auth_relay_may(self->auth, self->peer.relay_key, name))
        return xasprintf("the relay this agent connects through may not speak for node %s (its "
                         "key %s has no nodes: entry for it)",
                         name, s_key_file(self, self->peer.relay_key));
    return xasprintf("this agent's key (%s) may not register as node %s: that node's key is "
                     "%s/agents/%s.pub, or a nodes: line that lists it",
                     s_key_file(self, self->peer.key), name, self->auth ? auth_dir(self->auth) : "",
                     name);
}

int coord_relay_send(coord_t *self, const char *identity, Fleetburn__Envelope *env)
{
    const char *slash = strchr(identity, '/');
    const char *node = slash ? strchr(slash + 1, '/') : NULL;
    if (!node)
        return -EINVAL;
    uint8_t relay_id[256];
    size_t relay_len =
        fb_hex_decode(identity, (size_t)(slash - identity), relay_id, sizeof relay_id);
    size_t inner_len = 0;
    uint8_t *inner = fb_wire_encode(env, &inner_len);
    size_t len = 0;
    uint8_t *buf = fb_wire_encode_relayed(node + 1, NULL, strtoull(slash + 1, NULL, 10), inner,
                                          inner_len, &len);
    free(inner);
    const void *frames[] = {relay_id, buf};
    size_t lens[] = {relay_len, len};
    int rc = fb_zsock_send(self->zs, frames, lens, 2);
    free(buf);
    return rc;
}
