/* SPDX-License-Identifier: Apache-2.0 */
/* Who may talk to the coordinator (docs/security.md): the key directory and the ZAP handler.
 *
 *   DIR/coordinator          the coordinator's secret key (DIR/coordinator.pub: its public key)
 *   DIR/agents/NAME.pub      the key of the agent that may register as node NAME; with a
 *                            "nodes: HOSTLIST" line, the key of every node of the hostlist
 *   DIR/operators/NAME.pub   keys that may submit, cancel and follow campaigns
 *   DIR/relays/NAME.pub      the key of a `fleetburn relay`, with a required "nodes: HOSTLIST"
 *                            line: the nodes it may speak for (docs/security.md "Relays")
 *
 * libzmq asks the ZAP handler (an inproc REP socket read on the loop) about every CURVE
 * handshake: a key in neither directory is refused there, before any message of that peer is
 * decoded, with one rate-limited log line naming the peer address and the key. An accepted
 * connection's messages carry the key as ZAP User-Id (fb_zsock_peer_user_id), which the coordinator
 * checks against the node name an agent claims and against the operator list. */
#ifndef FB_AUTH_H
#define FB_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

typedef struct auth auth_t;

/* Loads DIR and binds the ZAP handler in zctx; call before the coordinator's socket binds.
 * NULL with err when a key file is missing or bad. */
auth_t *auth_new(uv_loop_t *loop, void *zctx, const char *dir, char *err, size_t errlen);
typedef struct {
    const char *dir;
    const char *server_key; /* this side's secret key file; NULL: DIR/coordinator */
    bool agents_only;       /* a relay's: only DIR/agents/ (operators and relays are refused) */
} auth_options_t;
auth_t *auth_new_opts(uv_loop_t *loop, void *zctx, const auth_options_t *opts, char *err,
                      size_t errlen);
/* Stops the handler (its socket closes on the loop). NULL-safe; nulls the pointer. */
void auth_destroy(auth_t **self_p);
/* Reads DIR again (SIGHUP). On an error the keys in use stay as they were. 0 or -errno with
 * err. */
int auth_reload(auth_t *self, char *err, size_t errlen);

/* The coordinator's own keys (Z85), for ZMQ_CURVE_SECRETKEY. Borrowed. */
const char *auth_server_secret(const auth_t *self);
const char *auth_server_public(const auth_t *self);
const char *auth_dir(const auth_t *self);
/* Whether the agent key (Z85) may register as node name. */
bool auth_agent_may(const auth_t *self, const char *key, const char *name);
/* Whether key (Z85) is a relay's (DIR/relays/), and whether that relay may speak for node name
 * (its nodes: line). */
bool auth_is_relay(const auth_t *self, const char *key);
bool auth_relay_may(const auth_t *self, const char *relay_key, const char *name);
/* Whether key (Z85) is an operator's. */
bool auth_is_operator(const auth_t *self, const char *key);
/* Where key is listed ("agents/g1.pub"), or NULL for an unknown key. Borrowed until reload. */
const char *auth_key_file(const auth_t *self, const char *key);
/* Handshakes refused since start. */
unsigned long auth_refused(const auth_t *self);

#endif
