/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP POSTs from the coordinator's loop without blocking it: libcurl's multi interface driven
 * by the libuv loop (its sockets watched with uv_poll, its timeouts with a uv_timer; names are
 * resolved on libcurl's resolver thread). Used by the webhook alerts (webhook_queue.h).
 *
 * Every request is made the same careful way: http:// and https:// only, no redirect followed,
 * TLS peers verified (against the system's CA store, or the site's bundle given to
 * http_client_new), a connect timeout and a total timeout, a new connection per request, and the
 * answer's body read up to HTTP_CLIENT_BODY_MAX bytes and dropped: it is never kept, logged or
 * stored (it could be anything the server holds), only counted.
 *
 * Built without libcurl (WITH_CURL=OFF, or libcurl not found), http_client_new returns NULL and
 * says so; nothing else here may be called then. */
#ifndef FB_HTTP_CLIENT_H
#define FB_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define HTTP_CLIENT_BODY_MAX (64u << 10)

typedef struct http_client http_client_t;

typedef struct {
    long status;       /* the HTTP status, 0 when no answer came */
    const char *error; /* how the transfer failed (libcurl's words), NULL when it did not */
    bool permanent;    /* the request cannot succeed as made (its URL is refused) */
    size_t body_bytes; /* bytes of the answer's body read, then dropped */
} http_result_t;

/* Called once per request, from the loop, when it ended; the result is borrowed for the call. */
typedef void (*http_done_cb)(const http_result_t *result, void *arg);

/* Whether this build has libcurl. */
bool http_client_available(void);
/* A client on loop; ca_file: a CA bundle (PEM) to verify TLS peers against instead of the
 * system's, or NULL. NULL with err when libcurl is missing or cannot be set up. */
http_client_t *http_client_new(uv_loop_t *loop, const char *ca_file, char *err, size_t errlen);
/* Ends every request still running (their callbacks are not called) and frees the client once
 * the loop has closed its handles. NULL-safe; nulls the pointer. */
void http_client_destroy(http_client_t **self_p);

/* Posts body (application/json) to url with the extra header lines given ("Name: value"),
 * giving up after timeout_ms in all (connecting takes at most 10 s of it). 0 when the request is
 * on its way (cb is called once, later), or -EINVAL with err when url is refused. */
int http_client_post(http_client_t *self, const char *url, const char *body,
                     const char *const *headers, size_t n_headers, uint64_t timeout_ms,
                     http_done_cb cb, void *arg, char *err, size_t errlen);
/* Requests still running. */
size_t http_client_running(const http_client_t *self);

/* The scheme ("http", "https"), host (lower case; an IPv6 address in brackets) and port (the
 * scheme's default when none is written) libcurl would connect to for url: its own reading of
 * the URL, which is what an allow-list must judge. 0, or -EINVAL with err (-ENOTSUP without
 * libcurl). */
int http_url_parts(const char *url, char *scheme, size_t schemelen, char *host, size_t hostlen,
                   unsigned *port, char *err, size_t errlen);

#endif
