/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's webhook alerts (docs/operations.md "Alerts"): a durable queue of alert
 * documents in the store (store_webhook.c), posted with http_client.h from the loop, retried on
 * the campaign's schedule (5, 10, 20, 40, 80 minutes by default), each attempt's outcome an event
 * on the campaign's timeline (kind "webhook"). A coordinator started on a database with
 * deliveries still pending makes their next attempts when they are due.
 *
 * Which hosts the coordinator posts to is its own decision, not the campaign's: the URL comes
 * from whoever holds an operator key, and a post from the coordinator reaches what the
 * coordinator's network position reaches (SSRF). `serve` posts only to the hosts of its
 * --webhook-allow list (none by default); `run --local` posts anywhere (it runs as the operator).
 *
 * One webhook_queue_t per coordinator, on its loop thread, sharing its store. */
#ifndef FB_WEBHOOK_QUEUE_H
#define FB_WEBHOOK_QUEUE_H

#include "store.h"
#include "scheduler/webhook.h"

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

typedef struct webhook webhook_queue_t;

typedef struct {
    /* Hosts the coordinator may post to, comma-separated: a name or an address
     * (hooks.example.com, 10.1.2.3, [fd00::1]), a domain's hosts (*.example.com), each with an
     * optional :PORT (any port when none), or * for any host. NULL: none. */
    const char *allow;
    bool allow_any;      /* any host (run --local: the operator's own process) */
    const char *ca_file; /* a CA bundle to verify TLS peers against, or NULL: the system's */
} webhook_options_t;

/* Checks opts (the allow-list's syntax; the CA bundle is a readable regular file): 0, or -EINVAL
 * with err naming the option and what is wrong. */
int webhook_options_check(const webhook_options_t *opts, char *err, size_t errlen);

/* The alerts of a coordinator: its pending deliveries are read from store and their attempts
 * scheduled. NULL with err when opts are wrong. Built without libcurl it still opens (pending
 * deliveries stay queued, and every post is refused, saying why). */
webhook_queue_t *webhook_queue_new(uv_loop_t *loop, store_t *store, const webhook_options_t *opts,
                                   char *err, size_t errlen);
/* Ends the attempts in flight (their deliveries stay pending, for the next coordinator on the
 * database) and frees everything once the loop has closed its handles. NULL-safe. */
void webhook_queue_destroy(webhook_queue_t **self_p);

/* Whether this coordinator may post to url: 0, -EPERM when its host is not allowed, -ENOTSUP
 * when built without libcurl, -EINVAL when the URL is refused; why says which, in a sentence. */
int webhook_queue_may_post(const webhook_queue_t *self, const char *url, char *why, size_t whylen);

/* Queues the alert (payload, a JSON document) of campaign_id to hook->url with hook's schedule,
 * in the store only: its first attempt is made by webhook_queue_kick, once the store has committed
 * it. 0, or the store's error (-EEXIST when the campaign's alert to that URL was queued already).
 */
int webhook_queue_enqueue(webhook_queue_t *self, const char *campaign_id, const fb_webhook_t *hook,
                          const char *payload);
/* Takes the pending deliveries the store holds into the queue and makes every attempt that is due
 * now. Call it after a commit: nothing is posted that the store could still lose. */
void webhook_queue_kick(webhook_queue_t *self);
/* Attempts in flight now. */
size_t webhook_queue_in_flight(const webhook_queue_t *self);

#endif
