/* SPDX-License-Identifier: Apache-2.0 */
/* A campaign's webhook alert (`actions.webhook`, docs/campaign-file.md): where the alert goes,
 * when it is sent, and how failed deliveries are retried. Pure logic: the parser of the
 * `webhook:` mapping (handed its YAML node by scheduler/actions.c), the URL's syntax, the
 * triggers, the backoff schedule and how an HTTP answer is judged. Delivery (libcurl, the
 * durable queue) is the coordinator's: coordinator/webhook.h.
 *
 *   actions:
 *     webhook:
 *       url: https://hooks.example.com/fleetburn   # http:// or https:// only
 *       on: [bad, regression, error]              # default: all three
 *       retry: [5m, 10m, 20m, 40m, 80m]           # default; [] never retries
 *       timeout: 30s                              # one attempt, default 30s
 */
#ifndef FB_WEBHOOK_H
#define FB_WEBHOOK_H

#include "common/yamldoc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What makes a campaign's end worth an alert (a mask of these). */
enum {
    FB_ALERT_BAD = 1u << 0,        /* it named a bad part, or a stage failed */
    FB_ALERT_REGRESSION = 1u << 1, /* the end-of-run baseline comparison found a regression */
    FB_ALERT_ERROR = 1u << 2,      /* it ended cancelled, interrupted or error */
};
#define FB_ALERT_ALL (FB_ALERT_BAD | FB_ALERT_REGRESSION | FB_ALERT_ERROR)

#define FB_WEBHOOK_URL_MAX 2048
#define FB_WEBHOOK_RETRIES_MAX 20
#define FB_WEBHOOK_RETRY_MIN_MS 1000ull        /* 1s: never hammer a receiver */
#define FB_WEBHOOK_RETRY_MAX_MS 86400000ull    /* 1d */
#define FB_WEBHOOK_TIMEOUT_DEFAULT_MS 30000ull /* one attempt, connection included */
#define FB_WEBHOOK_TIMEOUT_MIN_MS 1000ull
#define FB_WEBHOOK_TIMEOUT_MAX_MS 300000ull
#define FB_WEBHOOK_CONNECT_TIMEOUT_MS 10000ull /* capped by the attempt's timeout */

typedef struct fb_webhook {
    char *url;
    unsigned on;        /* FB_ALERT_* mask, never 0 */
    uint64_t *retry_ms; /* the wait before attempt 2, 3, ...; n_retry may be 0 */
    size_t n_retry;
    uint64_t timeout_ms; /* one attempt */
    int line;            /* where url is written, for messages about it */
} fb_webhook_t;

/* Parses the `webhook:` mapping (node) at path ("actions.webhook"). 0 with a new webhook in *out,
 * or -EINVAL with the error recorded in y (`FILE:LINE: actions.webhook.url: ...; expected ...`). */
int fb_webhook_parse(fb_yaml_t *y, const yaml_node_t *node, const char *path, fb_webhook_t **out);
/* NULL-safe; nulls the pointer. */
void fb_webhook_destroy(fb_webhook_t **self_p);

/* Checks the syntax of a webhook URL: http:// or https://, a host (a name, an IPv4 address or a
 * bracketed IPv6 address), an optional port 1-65535, then an optional path and query; printable
 * ASCII only, at most FB_WEBHOOK_URL_MAX bytes; no user:password@ and no #fragment. 0 with the
 * host (lower case, brackets kept) in host[0..hostlen) and the port (0 when not written) in
 * *port, or -EINVAL with why in why[0..whylen). Any of the outputs may be NULL. */
int fb_webhook_url_check(const char *url, char *host, size_t hostlen, unsigned *port, char *why,
                         size_t whylen);
/* "https://hooks.example.com:8443" of a URL: what logs and the timeline show of it (its path and
 * query often hold a secret token). Heap. */
char *fb_webhook_url_origin(const char *url);

/* The wait after failed attempt number `attempts` (1-based) before the next one: true with
 * *delay_ms, or false when the schedule is spent (the delivery is given up). */
bool fb_webhook_retry_delay(const uint64_t *retry_ms, size_t n_retry, unsigned attempts,
                            uint64_t *delay_ms);

/* How one attempt ended. */
typedef enum {
    FB_WEBHOOK_DELIVERED, /* 2xx */
    FB_WEBHOOK_RETRY,     /* 5xx, 408, 429, no answer (refused, timed out, reset) */
    FB_WEBHOOK_PERMANENT, /* any other status: 3xx (redirects are not followed), 4xx */
} fb_webhook_outcome_t;
/* Judges an attempt by its HTTP status; 0 means no HTTP answer came. */
fb_webhook_outcome_t fb_webhook_judge(long http_status);

/* "bad", "regression", "error" for one FB_ALERT_ bit; "?" otherwise. */
const char *fb_alert_trigger_name(unsigned bit);
/* "bad, error" of a mask, into buf. Returns buf. */
const char *fb_alert_trigger_list(unsigned mask, char *buf, size_t len);

#endif
