/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's key directory and its ZAP handler (auth.h). The handler answers on the loop
 * thread: a lookup in a hash map per handshake, so thousands of agents registering at once cost
 * little. The key directory is read whole into a new keyring and swapped in only when every file
 * in it is good, so a typo during a SIGHUP reload never locks the fleet out. */
#include "auth.h"
#include "common/hostlist.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "common/strmap.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define AUTH_ZAP_ENDPOINT "inproc://zeromq.zap.01"

typedef struct {
    char *file;      /* where the key was first seen: "agents/g1.pub" */
    fb_strmap_t *names; /* node names it may register as (values unused); NULL: none */
    bool operator;
    fb_strmap_t *relay_nodes; /* a relay's key: the nodes it may speak for; NULL: not a relay */
} key_entry_t;

typedef struct {
    fb_strmap_t *keys; /* Z85 public key -> key_entry_t */
    fb_key_t server;
} keyring_t;

struct auth {
    char *dir;
    char *server_key; /* the secret key file when not DIR/coordinator; NULL */
    bool agents_only;
    keyring_t *ring;
    fb_zsock_t *zap;
    fb_ratelimit_t refusal_log;
    unsigned long refused, accepted;
};

static void s_entry_free(key_entry_t *e)
{
    if (!e)
        return;
    free(e->file);
    fb_strmap_destroy(&e->names);
    fb_strmap_destroy(&e->relay_nodes);
    free(e);
}

static void s_ring_free(keyring_t **ring_p)
{
    keyring_t *ring = *ring_p;
    if (!ring)
        return;
    size_t pos = 0;
    void *value;
    while (ring->keys && fb_strmap_next(ring->keys, &pos, NULL, &value))
        s_entry_free(value);
    fb_strmap_destroy(&ring->keys);
    memset(&ring->server, 0, sizeof ring->server);
    free(ring);
    *ring_p = NULL;
}

static key_entry_t *s_entry(keyring_t *ring, const char *key, const char *file)
{
    key_entry_t *e = fb_strmap_get(ring->keys, key);
    if (!e) {
        e = xcalloc(1, sizeof *e);
        e->file = xstrdup(file);
        fb_strmap_put(ring->keys, key, e);
    }
    return e;
}

/* The names an agents/NAME.pub file allows: its nodes: hostlist, else NAME. */
static int s_add_agent(keyring_t *ring, const char *file, const char *stem, const fb_key_t *key,
                       const char *nodes, char *err, size_t errlen)
{
    char **names = NULL;
    size_t n = 0;
    if (nodes) {
        char why[256];
        if (fb_hostlist_expand(nodes, &names, &n, why, sizeof why)) {
            snprintf(err, errlen, "%s: nodes: %s", file, why);
            return -EINVAL;
        }
    } else {
        if (!fb_wire_valid_name(stem)) {
            snprintf(err, errlen,
                     "%s: '%s' is not a node name; name the file NODE.pub or give "
                     "a nodes: line",
                     file, stem);
            return -EINVAL;
        }
        names = xcalloc(1, sizeof *names);
        names[0] = xstrdup(stem);
        n = 1;
    }
    key_entry_t *e = s_entry(ring, key->public_key, file);
    if (!e->names)
        e->names = fb_strmap_new();
    for (size_t i = 0; i < n; i++)
        fb_strmap_put(e->names, names[i], e);
    fb_hostlist_free(names, n);
    return 0;
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.pub files of DIR/sub, sorted (so that "first seen" does not depend on the file
 * system's order). A missing directory is an empty one. */
static int s_list_pub(const char *dir, const char *sub, char ***out, size_t *n_out, char *err,
                      size_t errlen)
{
    char *path = xasprintf("%s/%s", dir, sub);
    DIR *d = opendir(path);
    *out = NULL;
    *n_out = 0;
    if (!d) {
        int e = errno;
        free(path);
        if (e == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read %s/%s: %s", dir, sub, strerror(e));
        return -e;
    }
    size_t n = 0, cap = 16;
    char **names = xcalloc(cap, sizeof *names);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".pub"))
            continue;
        if (n == cap)
            names = xrealloc(names, (cap *= 2) * sizeof *names);
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    free(path);
    qsort(names, n, sizeof *names, s_cmp_str);
    *out = names;
    *n_out = n;
    return 0;
}

/* A relay key (relays/NAME.pub) must say which nodes it speaks for: without a nodes: line a
 * relay could not be held to any. */
static int s_add_relay(keyring_t *ring, const char *file, const fb_key_t *key, const char *nodes,
                       char *err, size_t errlen)
{
    if (!nodes) {
        snprintf(err, errlen,
                 "%s: a relay key needs a nodes: line (the nodes this relay may speak for)", file);
        return -EINVAL;
    }
    char **names = NULL;
    size_t n = 0;
    char why[256];
    if (fb_hostlist_expand(nodes, &names, &n, why, sizeof why)) {
        snprintf(err, errlen, "%s: nodes: %s", file, why);
        return -EINVAL;
    }
    key_entry_t *e = s_entry(ring, key->public_key, file);
    if (e->names || e->operator) {
        snprintf(err, errlen, "%s: this key is also %s; a relay needs a key of its own", file,
                 e->file);
        fb_hostlist_free(names, n);
        return -EINVAL;
    }
    if (!e->relay_nodes)
        e->relay_nodes = fb_strmap_new();
    for (size_t i = 0; i < n; i++)
        fb_strmap_put(e->relay_nodes, names[i], e);
    fb_hostlist_free(names, n);
    return 0;
}

typedef enum { S_AGENTS, S_OPERATORS, S_RELAYS } key_kind_t;

static int s_load_sub(keyring_t *ring, const char *dir, const char *sub, key_kind_t kind,
                      char *err, size_t errlen)
{
    char **files = NULL;
    size_t n = 0;
    int rc = s_list_pub(dir, sub, &files, &n, err, errlen);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *path = xasprintf("%s/%s/%s", dir, sub, files[i]);
        char *label = xasprintf("%s/%s", sub, files[i]);
        fb_key_t key;
        char *nodes = NULL;
        rc = fb_key_load_public(path, &key, &nodes, err, errlen);
        const key_entry_t *seen = rc == 0 ? fb_strmap_get(ring->keys, key.public_key) : NULL;
        if (rc == 0 && kind != S_RELAYS && seen && seen->relay_nodes) {
            snprintf(err, errlen, "%s: this key is also %s; a relay needs a key of its own", path,
                     seen->file);
            rc = -EINVAL;
        } else if (rc == 0 && kind == S_RELAYS) {
            rc = s_add_relay(ring, label, &key, nodes, err, errlen);
        } else if (rc == 0 && kind == S_OPERATORS) {
            if (nodes) {
                snprintf(err, errlen, "%s: a nodes: line belongs in agents/, not operators/", path);
                rc = -EINVAL;
            } else {
                s_entry(ring, key.public_key, label)->operator= true;
            }
        } else if (rc == 0) {
            files[i][strlen(files[i]) - 4] = '\0';
            rc = s_add_agent(ring, label, files[i], &key, nodes, err, errlen);
        }
        free(nodes);
        free(path);
        free(label);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

static keyring_t *s_ring_load(const auth_options_t *opts, char *err, size_t errlen)
{
    keyring_t *ring = xcalloc(1, sizeof *ring);
    ring->keys = fb_strmap_new();
    const char *dir = opts->dir;
    char *path = opts->server_key ? xstrdup(opts->server_key) : xasprintf("%s/coordinator", dir);
    int rc = fb_key_load_secret(path, &ring->server, err, errlen);
    if (rc == -ENOENT)
        snprintf(err, errlen, "%s: no %s key; make one with: fleetburn keygen %s", path,
                 opts->server_key ? "such" : "coordinator", path);
    free(path);
    if (rc == 0)
        rc = s_load_sub(ring, dir, "agents", S_AGENTS, err, errlen);
    if (rc == 0 && !opts->agents_only)
        rc = s_load_sub(ring, dir, "operators", S_OPERATORS, err, errlen);
    if (rc == 0 && !opts->agents_only)
        rc = s_load_sub(ring, dir, "relays", S_RELAYS, err, errlen);
    if (rc)
        s_ring_free(&ring);
    return ring;
}

/* --- ZAP (RFC 27) --------------------------------------------------------------------------- */

static void s_zap_reply(fb_zsock_t *zs, const uint8_t *request_id, size_t id_len, const char *status,
                        const char *text, const char *user_id)
{
    const void *frames[] = {"1.0", request_id, status, text, user_id, ""};
    size_t lens[] = {3, id_len, strlen(status), strlen(text), strlen(user_id), 0};
    fb_zsock_send(zs, frames, lens, 6);
}

static void s_on_zap(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                     void *arg)
{
    auth_t *self = arg;
    /* version, request id, domain, address, identity, mechanism, credentials */
    if (n < 6) {
        log_warn("ZAP: dropped a request of %zu frames", n);
        return;
    }
    char address[64] = "", mechanism[16] = "";
    snprintf(address, sizeof address, "%.*s", (int)(lens[3] < 63 ? lens[3] : 63),
             (const char *)frames[3]);
    snprintf(mechanism, sizeof mechanism, "%.*s", (int)(lens[5] < 15 ? lens[5] : 15),
             (const char *)frames[5]);
    char key[FB_KEY_Z85_LEN + 1] = "";
    if (!strcmp(mechanism, "CURVE") && n >= 7 && lens[6] == 32)
        zmq_z85_encode(key, frames[6], 32);
    if (key[0] && fb_strmap_get(self->ring->keys, key)) {
        self->accepted++;
        log_debug("ZAP: accepted %s from %s (%lu handshakes accepted)", key, address,
                  self->accepted);
        s_zap_reply(zs, frames[1], lens[1], "200", "OK", key);
        return;
    }
    self->refused++;
    uint64_t held = 0;
    if (fb_ratelimit_ok(&self->refusal_log, fb_mono_ms(), &held))
        log_warn("refused a connection from %s: %s%s (not in %s/agents%s; %lu "
                 "refused in all, %llu lines held back)",
                 address, key[0] ? "unknown key " : "no CURVE key, mechanism ",
                 key[0] ? key : mechanism, self->dir,
                 self->agents_only ? "" : ", operators or relays", self->refused,
                 (unsigned long long)held);
    s_zap_reply(zs, frames[1], lens[1], "400", "unknown key", "");
}

/* --- public --------------------------------------------------------------------------------- */

static auth_options_t s_options(const auth_t *self)
{
    return (auth_options_t){self->dir, self->server_key, self->agents_only};
}

auth_t *auth_new(uv_loop_t *loop, void *zctx, const char *dir, char *err, size_t errlen)
{
    auth_options_t opts = {dir, NULL, false};
    return auth_new_opts(loop, zctx, &opts, err, errlen);
}

auth_t *auth_new_opts(uv_loop_t *loop, void *zctx, const auth_options_t *opts, char *err,
                      size_t errlen)
{
    const char *dir = opts->dir;
    keyring_t *ring = s_ring_load(opts, err, errlen);
    if (!ring)
        return NULL;
    void *sock = fb_zsock_new_socket(zctx, ZMQ_REP);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(sock, AUTH_ZAP_ENDPOINT) != 0) {
        snprintf(err, errlen, "cannot bind the ZAP handler: %s", zmq_strerror(errno));
        zmq_close(sock);
        s_ring_free(&ring);
        return NULL;
    }
    auth_t *self = xcalloc(1, sizeof *self);
    self->dir = xstrdup(dir);
    self->server_key = opts->server_key ? xstrdup(opts->server_key) : NULL;
    self->agents_only = opts->agents_only;
    self->ring = ring;
    self->refusal_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    self->zap = fb_zsock_new(loop, sock, s_on_zap, self);
    log_info("keys from %s: %zu agent and operator keys", dir, fb_strmap_size(ring->keys));
    return self;
}

void auth_destroy(auth_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    auth_t *self = *self_p;
    *self_p = NULL;
    fb_zsock_close(&self->zap);
    s_ring_free(&self->ring);
    free(self->dir);
    free(self->server_key);
    free(self);
}

int auth_reload(auth_t *self, char *err, size_t errlen)
{
    auth_options_t opts = s_options(self);
    keyring_t *ring = s_ring_load(&opts, err, errlen);
    if (!ring)
        return -EINVAL;
    if (strcmp(ring->server.public_key, self->ring->server.public_key))
        log_warn("%s changed; it takes effect at the next start",
                 self->server_key ? self->server_key : "the coordinator key");
    memcpy(&ring->server, &self->ring->server, sizeof ring->server);
    s_ring_free(&self->ring);
    self->ring = ring;
    log_info("keys from %s reloaded: %zu agent and operator keys", self->dir,
             fb_strmap_size(ring->keys));
    return 0;
}

const char *auth_server_secret(const auth_t *self)
{
    return self->ring->server.secret_key;
}

const char *auth_server_public(const auth_t *self)
{
    return self->ring->server.public_key;
}

const char *auth_dir(const auth_t *self)
{
    return self->dir;
}

bool auth_agent_may(const auth_t *self, const char *key, const char *name)
{
    const key_entry_t *e = key ? fb_strmap_get(self->ring->keys, key) : NULL;
    return e && e->names && fb_strmap_get(e->names, name);
}

bool auth_is_relay(const auth_t *self, const char *key)
{
    const key_entry_t *e = key ? fb_strmap_get(self->ring->keys, key) : NULL;
    return e && e->relay_nodes;
}

bool auth_relay_may(const auth_t *self, const char *relay_key, const char *name)
{
    const key_entry_t *e = relay_key ? fb_strmap_get(self->ring->keys, relay_key) : NULL;
    return e && e->relay_nodes && fb_strmap_get(e->relay_nodes, name);
}

bool auth_is_operator(const auth_t *self, const char *key)
{
    const key_entry_t *e = key ? fb_strmap_get(self->ring->keys, key) : NULL;
    return e && e->operator;
}

const char *auth_key_file(const auth_t *self, const char *key)
{
    const key_entry_t *e = key ? fb_strmap_get(self->ring->keys, key) : NULL;
    return e ? e->file : NULL;
}

unsigned long auth_refused(const auth_t *self)
{
    return self->refused;
}
