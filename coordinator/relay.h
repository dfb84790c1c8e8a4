/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn relay`: holds the connections of many agents and speaks for them to the
 * coordinator over one connection of its own (docs/security.md "Relays", docs/operations.md
 * "Relays").
 *
 * Agents connect to the relay exactly as to a coordinator (a ROUTER with CURVE, the same ZAP
 * handler and connection limits, auth.c and conns.c): their keys are checked in the handshake
 * against the relay's copy of KEYS/agents/, and a Hello is checked against the key's name or
 * nodes: line (auth_agent_may). A refused Hello is answered here and never forwarded. An
 * allowed one binds the agent's connection (its link) to the node, and from then on every
 * message of that connection goes up in a Relayed tagged with the node, the agent's key and the
 * link's number; what the coordinator sends back in a Relayed goes to that link only. Results
 * and acknowledgements pass through (the relay keeps nothing an agent does not keep as well).
 * Heartbeats of registered agents are answered here and summed up to the coordinator in one
 * RelayStatus a heartbeat interval, naming the agents heard since the last one: the coordinator
 * judges each agent's liveness by it as if its heartbeats had come through, and its answer names
 * the agents it does not know (it restarted), which the relay then stops answering for so that
 * they register again. */
#ifndef FB_RELAY_H
#define FB_RELAY_H

#include <stddef.h>
#include <uv.h>

typedef struct relay relay_t;

typedef struct {
    const char *coordinator;     /* the coordinator's endpoint */
    const char *bind;            /* where agents connect */
    const char *keys_dir;        /* agents' keys (DIR/agents/); NULL: no keys (loopback) */
    const char *key_file;        /* the relay's secret key: to the coordinator and to agents */
    const char *server_key_file; /* the coordinator's public key, pinned */
    unsigned max_connections;    /* 0: fitted to the descriptor limit (conns.h) */
    unsigned max_per_address;    /* 0: CONNS_DEFAULT_PER_ADDRESS */
    unsigned handshake_ms;       /* 0: CONNS_HANDSHAKE_MS */
} relay_options_t;

/* Binds, connects and starts handling messages on loop. NULL with err. */
relay_t *relay_new(uv_loop_t *loop, const relay_options_t *opts, char *err, size_t errlen);
/* NULL-safe; nulls the pointer. Run the loop once more afterwards to close its handles. */
void relay_destroy(relay_t **self_p);
/* Reads the key directory again (SIGHUP); agents whose key no longer allows their node are
 * disconnected. 0 or -errno with err (the keys in use stay). */
int relay_reload_keys(relay_t *self, char *err, size_t errlen);
/* The endpoint agents connect to (the bound one, with the port chosen). */
const char *relay_endpoint(const relay_t *self);
/* Agents' connections bound to a node now. */
size_t relay_links(const relay_t *self);

#endif
