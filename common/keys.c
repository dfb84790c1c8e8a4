/* SPDX-License-Identifier: Apache-2.0 */
/* CurveZMQ key files: generation, writing without ever overwriting, loading with the checks an
 * operator needs (a secret key readable by others is refused, a public file that holds a secret
 * key is refused), and a parser that trusts nothing in the text. */
#include "keys.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

bool fb_key_valid_z85(const char *z85)
{
    static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   ".-:+=^!/*?&<>()[]{}@%$#";
    if (strlen(z85) != FB_KEY_Z85_LEN || strspn(z85, alphabet) != FB_KEY_Z85_LEN)
        return false;
    uint8_t raw[32];
    return zmq_z85_decode(raw, z85) != NULL;
}

/* One line's value with surrounding blanks removed, into out (outlen bytes). */
static void s_trim(const char *start, const char *end, char *out, size_t outlen)
{
    while (start < end && (*start == ' ' || *start == '\t'))
        start++;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    size_t n = (size_t)(end - start);
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, start, n);
    out[n] = '\0';
}

/* "name: value" or "name = value": the name and where its value starts, or NULL. */
static const char *s_split(const char *line, const char *end, char *name, size_t namelen)
{
    const char *sep = line;
    while (sep < end && *sep != ':' && *sep != '=')
        sep++;
    if (sep == end)
        return NULL;
    s_trim(line, sep, name, namelen);
    return sep + 1;
}

static int s_key_line(const char *name, const char *value, size_t lineno, fb_key_t *key,
                      char **nodes, char *err, size_t errlen)
{
    if (!strcmp(name, "public-key") || !strcmp(name, "secret-key")) {
        if (!fb_key_valid_z85(value))
            return fb_errf(err, errlen, -EINVAL,
                           "line %zu: %s is not a key (expected 40 Z85 characters)", lineno, name);
        char *dst = name[0] == 'p' ? key->public_key : key->secret_key;
        if (dst[0])
            return fb_errf(err, errlen, -EINVAL, "line %zu: a second %s", lineno, name);
        memcpy(dst, value, FB_KEY_Z85_LEN + 1);
        return 0;
    }
    if (!strcmp(name, "nodes")) {
        if (!value[0] || *nodes)
            return fb_errf(err, errlen, -EINVAL, "line %zu: %s nodes line", lineno,
                           value[0] ? "a second" : "an empty");
        *nodes = xstrdup(value);
        return 0;
    }
    return fb_errf(err, errlen, -EINVAL,
                   "line %zu: unknown name (expected public-key, secret-key or nodes)", lineno);
}

int fb_key_parse(const char *text, size_t len, fb_key_t *key, char **nodes_out, char *err,
                 size_t errlen)
{
    memset(key, 0, sizeof *key);
    if (nodes_out)
        *nodes_out = NULL;
    if (len > FB_KEY_FILE_MAX)
        return fb_errf(err, errlen, -EFBIG, "larger than %d bytes; expected a key file",
                       FB_KEY_FILE_MAX);
    char *nodes = NULL;
    int rc = 0;
    const char *p = text, *end = text + len;
    for (size_t lineno = 1; p < end && rc == 0; lineno++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if (memchr(p, '\0', (size_t)(eol - p))) {
            rc = fb_errf(err, errlen, -EINVAL, "line %zu: a NUL byte; expected text", lineno);
            break;
        }
        char probe[2];
        s_trim(p, eol, probe, sizeof probe);
        if (probe[0] && probe[0] != '#') {
            char name[32], value[FB_KEY_FILE_MAX + 1];
            const char *v = s_split(p, eol, name, sizeof name);
            if (!v) {
                rc = fb_errf(err, errlen, -EINVAL, "line %zu: expected 'name: value'", lineno);
                break;
            }
            s_trim(v, eol, value, sizeof value);
            rc = s_key_line(name, value, lineno, key, &nodes, err, errlen);
        }
        p = eol + 1;
    }
    if (rc == 0 && !key->public_key[0])
        rc = fb_errf(err, errlen, -EINVAL, "no public-key line");
    if (rc == 0 && key->secret_key[0]) {
        char derived[FB_KEY_Z85_LEN + 1];
        if (zmq_curve_public(derived, key->secret_key) != 0 || strcmp(derived, key->public_key))
            rc = fb_errf(err, errlen, -EINVAL, "the secret key does not belong to the public key");
    }
    if (rc) {
        free(nodes);
        memset(key, 0, sizeof *key);
        return rc;
    }
    if (nodes_out)
        *nodes_out = nodes;
    else
        free(nodes);
    return 0;
}

int fb_key_generate(fb_key_t *key)
{
    memset(key, 0, sizeof *key);
    return zmq_curve_keypair(key->public_key, key->secret_key) == 0 ? 0 : -errno;
}

static int s_write_new(const char *path, unsigned mode, const char *text, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return fb_errf(err, errlen, -errno, "cannot create %s: %s", path, strerror(errno));
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    int rc = (w == (ssize_t)len && fsync(fd) == 0) ? 0 : -(errno ? errno : EIO);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc) {
        unlink(path);
        return fb_errf(err, errlen, rc, "cannot write %s: %s", path, strerror(-rc));
    }
    return 0;
}

int fb_key_write(const char *path, const fb_key_t *key, char *err, size_t errlen)
{
    char *pub_path = xasprintf("%s.pub", path);
    struct stat st;
    int rc = 0;
    if (lstat(path, &st) == 0 || lstat(pub_path, &st) == 0) {
        rc = fb_errf(err, errlen, -EEXIST, "%s already exists; keys are never overwritten",
                     lstat(path, &st) == 0 ? path : pub_path);
        free(pub_path);
        return rc;
    }
    char *secret = xasprintf("# fleetburn CURVE secret key: keep it private (mode 0600)\n"
                             "public-key: %s\nsecret-key: %s\n",
                             key->public_key, key->secret_key);
    char *public = xasprintf("# fleetburn CURVE public key\npublic-key: %s\n", key->public_key);
    rc = s_write_new(path, 0600, secret, err, errlen);
    if (rc == 0) {
        rc = s_write_new(pub_path, 0644, public, err, errlen);
        if (rc)
            unlink(path);
    }
    memset(secret, 0, strlen(secret));
    free(secret);
    free(public);
    free(pub_path);
    return rc;
}

/* Reads a key file: regular, at most FB_KEY_FILE_MAX bytes. *st_out gets its status. */
static char *s_read(const char *path, size_t *len_out, struct stat *st_out, char *err,
                    size_t errlen, int *rc_out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        *rc_out = fb_errf(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, st_out) != 0 || !S_ISREG(st_out->st_mode) || st_out->st_size > FB_KEY_FILE_MAX) {
        *rc_out = fb_errf(
            err, errlen, S_ISREG(st_out->st_mode) ? -EFBIG : -EINVAL, "cannot read %s: %s", path,
            S_ISREG(st_out->st_mode) ? "larger than a key file can be" : "not a regular file");
        close(fd);
        return NULL;
    }
    char *buf = xmalloc((size_t)st_out->st_size + 1);
    ssize_t n = read(fd, buf, (size_t)st_out->st_size + 1);
    int e = errno;
    close(fd);
    if (n < 0 || n > st_out->st_size) {
        free(buf);
        *rc_out = fb_errf(err, errlen, n < 0 ? -e : -EIO, "cannot read %s: %s", path,
                          n < 0 ? strerror(e) : "it grew while being read");
        return NULL;
    }
    buf[n] = '\0';
    *len_out = (size_t)n;
    *rc_out = 0;
    return buf;
}

static int s_load(const char *path, fb_key_t *key, char **nodes_out, bool secret, char *err,
                  size_t errlen)
{
    size_t len = 0;
    struct stat st;
    int rc = 0;
    char *text = s_read(path, &len, &st, err, errlen, &rc);
    if (!text)
        return rc;
    if (secret && (st.st_mode & 077)) {
        free(text);
        return fb_errf(err, errlen, -EPERM,
                       "%s is readable or writable by others (mode %04o): run chmod 600 %s", path,
                       (unsigned)(st.st_mode & 07777), path);
    }
    char why[256];
    rc = fb_key_parse(text, len, key, nodes_out, why, sizeof why);
    memset(text, 0, len);
    free(text);
    if (rc)
        return fb_errf(err, errlen, rc, "%s: %s", path, why);
    if (secret && !key->secret_key[0])
        rc = fb_errf(err, errlen, -EINVAL, "%s holds no secret-key line: is it the .pub file?",
                     path);
    else if (!secret && key->secret_key[0])
        rc = fb_errf(err, errlen, -EINVAL,
                     "%s holds a secret key; a public key file must hold only public-key (and "
                     "nodes)",
                     path);
    if (rc && nodes_out) {
        free(*nodes_out);
        *nodes_out = NULL;
    }
    if (rc)
        memset(key, 0, sizeof *key);
    return rc;
}

int fb_key_load_secret(const char *path, fb_key_t *key, char *err, size_t errlen)
{
    return s_load(path, key, NULL, true, err, errlen);
}

int fb_key_load_public(const char *path, fb_key_t *key, char **nodes_out, char *err, size_t errlen)
{
    return s_load(path, key, nodes_out, false, err, errlen);
}

int fb_key_apply_client(void *socket, const char *key_file, const char *server_key_file, char *err,
                        size_t errlen)
{
    if (!key_file && !server_key_file)
        return 0;
    if (!key_file || !server_key_file)
        return fb_errf(err, errlen, -EINVAL,
                       "a key and the coordinator's public key go together (--key FILE "
                       "--server-key FILE)");
    fb_key_t own, server;
    int rc = fb_key_load_secret(key_file, &own, err, errlen);
    if (rc == 0)
        rc = fb_key_load_public(server_key_file, &server, NULL, err, errlen);
    if (rc == 0)
        rc = fb_key_apply_client_keys(socket, &own, &server, err, errlen);
    memset(&own, 0, sizeof own);
    return rc;
}

int fb_key_apply_client_keys(void *socket, const fb_key_t *own, const fb_key_t *server, char *err,
                             size_t errlen)
{
    if (zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, server->public_key, FB_KEY_Z85_LEN + 1) ||
        zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, own->public_key, FB_KEY_Z85_LEN + 1) ||
        zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, own->secret_key, FB_KEY_Z85_LEN + 1))
        return fb_errf(err, errlen, -errno, "cannot set CURVE keys: %s", zmq_strerror(errno));
    return 0;
}

const char *fb_key_handshake_failure(unsigned event, uint32_t value, bool have_keys)
{
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        return value == 400 ? "the coordinator does not know this key (it is in neither its "
                              "agents/ nor its operators/ directory)"
                            : "the coordinator refused this key";
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
        if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
            return "the coordinator and this side disagree on encryption (one has keys, the "
                   "other not): give --key and --server-key, or check that the coordinator "
                   "runs with --keys";
        if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC)
            return "the coordinator's key is not the pinned --server-key (or the traffic was "
                   "tampered with)";
        return "the handshake failed (protocol error)";
    }
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        return have_keys ? "the handshake failed: is --server-key the coordinator's public key?"
                         : "the handshake failed: a coordinator with keys talks only to peers "
                           "with keys (give --key and --server-key)";
    return NULL;
}
