/* SPDX-License-Identifier: Apache-2.0 */
/* CurveZMQ key files (docs/security.md).
 *
 * A key pair is two files: PATH holds the secret key (mode 0600, never overwritten) and PATH.pub
 * the public one. Both are text, one "name: value" per line, '#' starts a comment:
 *
 *     public-key: <40 Z85 characters>
 *     secret-key: <40 Z85 characters>      (PATH only)
 *     nodes: gpu[001-128]                  (agents/NAME.pub only: a key shared by many nodes)
 *
 * Keys are kept as their Z85 text, which is what libzmq's CURVE options take and what ZAP's
 * User-Id carries, so a key is printed, compared and looked up as that text. */
#ifndef FB_KEYS_H
#define FB_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FB_KEY_Z85_LEN 40
#define FB_KEY_FILE_MAX 65536 /* bytes in a key file: a long nodes: line fits */

typedef struct {
    char public_key[FB_KEY_Z85_LEN + 1];
    char secret_key[FB_KEY_Z85_LEN + 1]; /* "" when the file held only a public key */
} fb_key_t;

/* Parses a key file's text (len bytes, need not be NUL-terminated). A public key is required;
 * a secret key, when present, must belong to it. *nodes_out (may be NULL) receives a heap copy
 * of the nodes: line, or NULL without one. 0, or -EINVAL with err naming the line. */
int fb_key_parse(const char *text, size_t len, fb_key_t *key, char **nodes_out, char *err,
                 size_t errlen);
/* True for 40 characters of the Z85 alphabet that decode to 32 bytes. */
bool fb_key_valid_z85(const char *z85);

/* A new key pair from libsodium's random source (through libzmq). 0 or -errno. */
int fb_key_generate(fb_key_t *key);
/* Writes PATH (secret, mode 0600) and PATH.pub (mode 0644); neither may exist already.
 * 0, or -EEXIST / -errno with err. */
int fb_key_write(const char *path, const fb_key_t *key, char *err, size_t errlen);
/* Loads a secret key file: a regular file of at most FB_KEY_FILE_MAX bytes, not readable by
 * group or others, with both keys. 0 or -errno with err naming the file. */
int fb_key_load_secret(const char *path, fb_key_t *key, char *err, size_t errlen);
/* Loads a public key file (PATH.pub, or a file from keys/agents, keys/operators). A secret key in
 * it is refused: it would not be secret any more. *nodes_out as for fb_key_parse. */
int fb_key_load_public(const char *path, fb_key_t *key, char **nodes_out, char *err, size_t errlen);

/* Makes a DEALER socket a CURVE client: key_file holds this side's secret key, server_key_file
 * the coordinator's public key, pinned (a coordinator with another key fails the handshake).
 * Both NULL: a plain socket (loopback). 0 or -errno with err. */
int fb_key_apply_client(void *socket, const char *key_file, const char *server_key_file, char *err,
                        size_t errlen);
/* The same with keys already loaded (own: both keys; server: its public key): for a process
 * that connects many sockets with one key (fleetburn-simfleet), which would otherwise read and
 * check both files at every connect. 0 or -errno with err. */
int fb_key_apply_client_keys(void *socket, const fb_key_t *own, const fb_key_t *server, char *err,
                             size_t errlen);
/* What a ZMQ_EVENT_HANDSHAKE_FAILED_* event from a client socket's monitor means for an
 * operator, for a client with or without keys; NULL for other events. */
const char *fb_key_handshake_failure(unsigned event, uint32_t value, bool have_keys);

#endif
