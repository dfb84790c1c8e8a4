/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's HTTP listener (`fleetburn serve --http ADDR`, docs/operations.md "Metrics and
 * the live view", docs/security.md "HTTP listener"): GET /metrics in the Prometheus text
 * exposition format (http_metrics.c), GET / the campaigns, GET /campaigns/ID the live HTML report
 * of one (report_html.c). Nothing else: no method but GET and HEAD, no request body, and nothing
 * of the request path becomes a file path (a campaign id is checked as a wire id and looked up in
 * the store).
 *
 * It runs on its own thread (libmicrohttpd's internal polling thread) with its own read-only use
 * of the store, so a slow scrape or a large report never holds the coordinator's loop. What only
 * the loop knows (coord_health_t) it publishes with http_serve_publish; the listener shows the
 * last copy and its age.
 *
 * Exposure: a listener bound to a non-loopback address requires a bearer token (refused at
 * start otherwise); with a token every request must carry "Authorization: Bearer TOKEN",
 * compared in constant time. Connections, time per connection and memory per connection are
 * bounded. Built without libmicrohttpd, http_serve_start fails with -ENOTSUP and says so. */
#ifndef FB_HTTP_SERVE_H
#define FB_HTTP_SERVE_H

#include "coord.h"

#include <stddef.h>
#include <stdio.h>

/* Shortest token accepted: guessing it must be hopeless. */
#define HTTP_TOKEN_MIN 16
/* Largest token file read. */
#define HTTP_TOKEN_FILE_MAX 4096
/* Connections at once, from one address at once, seconds a connection may idle. */
#define HTTP_MAX_CONNECTIONS 64
#define HTTP_MAX_PER_ADDRESS 16
#define HTTP_CONNECTION_TIMEOUT_S 10

typedef struct http_serve http_serve_t;

typedef struct {
    const char *addr;    /* HOST:PORT, [V6]:PORT or *:PORT (PORT 0: any free port) */
    const char *db_path; /* the coordinator's database */
    const char *token;   /* bearer token, NULL: none (then addr must be loopback) */
} http_serve_options_t;

/* Reads a bearer token from path: the file's first line without surrounding blanks, at least
 * HTTP_TOKEN_MIN characters, printable ASCII. A file others may read is refused: the token is a
 * secret. 0 with *token_out (heap, the caller frees), or -errno with a message in err. */
int http_token_load(const char *path, char **token_out, char *err, size_t errlen);

/* Whether addr (as accepted by http_serve_start) binds a loopback address only. */
bool http_addr_is_loopback(const char *addr);

/* Whether this build has the listener (libmicrohttpd). */
bool http_serve_supported(void);
/* The message http_serve_start gives in a build without it. */
#define HTTP_UNSUPPORTED                                                                           \
    "--http: this fleetburn was built without libmicrohttpd (libmicrohttpd-dev, "                  \
    "WITH_MICROHTTPD)"

/* Starts the listener. NULL with a message in err: a malformed address, a non-loopback address
 * without a token, the port taken, a build without libmicrohttpd. */
http_serve_t *http_serve_start(const http_serve_options_t *opts, char *err, size_t errlen);
/* The address bound, with the port resolved ("127.0.0.1:9108"). Borrowed. */
const char *http_serve_address(const http_serve_t *self);
/* Publishes the coordinator's health for /metrics (copied; any thread). */
void http_serve_publish(http_serve_t *self, const coord_health_t *health);
/* Stops the listener and waits for its thread. NULL-safe; nulls *self_p. */
void http_serve_stop(http_serve_t **self_p);

/* ---- /metrics (http_metrics.c) --------------------------------------------------------------- */

/* The exposition of the store's state and the coordinator's health (health NULL: not published
 * yet; health_age_ms: how old the copy is). Heap text, *len_out its length; NULL with err set
 * when the store cannot be read. */
char *http_metrics_render(store_t *store, const coord_health_t *health, uint64_t health_age_ms,
                          size_t *len_out, char *err, size_t errlen);

/* The telemetry gauges: each GPU's latest sample of each quantity (http_metrics_telemetry.c).
 * 0 or the store's error. */
int http_metrics_telemetry(FILE *out, store_t *store);

#endif
