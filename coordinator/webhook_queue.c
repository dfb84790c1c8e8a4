/* SPDX-License-Identifier: Apache-2.0 */
/* Webhook alerts: the delivery queue on the coordinator's loop (webhook_queue.h; docs/operations.md
 * "Alerts").
 *
 * Every delivery is a row of the store's webhook_deliveries table first, then an entry here: the
 * row says how many attempts were made and when the next one is due, so a coordinator killed at
 * any moment and started again on the same database makes the next attempt when it is due. An
 * attempt that was in flight when the coordinator died was not recorded, and is made again at
 * start: receivers may see an alert twice (its X-Fleetburn-Campaign header tells them apart), and
 * never lose one. One timer drives the queue: it fires when the earliest pending delivery is due.
 *
 * An attempt is judged by scheduler/webhook.h's rules (2xx delivered; 5xx, 408, 429 and no answer
 * retried; any other status refused for good), and its outcome goes to the campaign's timeline.
 * Logs and events name the URL's origin only (scheme, host, port): the path of a chat webhook is
 * its secret. The answer's body is never kept or shown (http_client.h). */
#include "webhook_queue.h"
#include "http_client.h"
#include "common/log.h"
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_HOST_MAX 256

/* One entry of the --webhook-allow list. */
typedef struct {
    char *host;    /* lower case; an IPv6 address in brackets */
    bool domain;   /* *.host: the hosts under host, not host itself */
    unsigned port; /* 0: any */
} s_allow_t;

typedef struct delivery {
    struct webhook *w;
    int64_t id;
    char *campaign_id, *url, *origin, *payload;
    uint64_t *retry_ms;
    size_t n_retry;
    uint64_t timeout_ms;
    unsigned attempts; /* made and recorded */
    uint64_t due_ms;   /* epoch ms of the next attempt */
    bool in_flight;
    struct delivery *next;
} delivery_t;

struct webhook {
    uv_loop_t *loop;
    store_t *store;
    http_client_t *http;  /* NULL without libcurl */
    char http_error[256]; /* why there is none */
    s_allow_t *allow;
    size_t n_allow;
    bool allow_any;
    uv_timer_t timer;
    delivery_t *deliveries; /* pending ones */
    size_t n_in_flight;
};

/* ---- the allow-list ----------------------------------------------------------------------- */

static void s_allow_free(s_allow_t *allow, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(allow[i].host);
    free(allow);
}

static bool s_host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

/* One entry: HOST[:PORT], [V6][:PORT] or *.DOMAIN[:PORT]. */
static int s_allow_entry(const char *text, s_allow_t *out, char *err, size_t errlen)
{
    char shown[64];
    const char *p = text;
    *out = (s_allow_t){0};
    if (!strncmp(p, "*.", 2)) {
        out->domain = true;
        p += 2;
    }
    size_t n;
    if (*p == '[') {
        const char *close = strchr(p, ']');
        n = close ? (size_t)(close - p) + 1 : 0;
        for (size_t i = 1; close && i + 1 < n; i++)
            if (!strchr("0123456789abcdefABCDEF:.", p[i]))
                n = 0;
    } else {
        n = 0;
        while (s_host_char(p[n]))
            n++;
    }
    if (n == 0 || n >= S_HOST_MAX || (p[n] && p[n] != ':')) {
        snprintf(err, errlen,
                 "--webhook-allow: '%s' is not a host; expected hosts such as hooks.example.com, "
                 "10.1.2.3:8080, [fd00::1], *.example.com, separated by commas, or *",
                 fb_show_value(text, shown, sizeof shown));
        return -EINVAL;
    }
    if (p[n] == ':') {
        uint64_t port = 0;
        if (fb_parse_uint(p + n + 1, 65535, &port) || port == 0) {
            snprintf(err, errlen, "--webhook-allow: '%s': the port is not a number from 1 to 65535",
                     fb_show_value(text, shown, sizeof shown));
            return -EINVAL;
        }
        out->port = (unsigned)port;
    }
    out->host = xstrndup(p, n);
    for (char *c = out->host; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    return 0;
}

/* The list of --webhook-allow: entries separated by commas or blanks; "*" sets *any. */
static int s_allow_parse(const char *text, s_allow_t **out, size_t *n_out, bool *any, char *err,
                         size_t errlen)
{
    *out = NULL;
    *n_out = 0;
    *any = false;
    if (!text)
        return 0;
    char *copy = xstrdup(text), *save = NULL;
    s_allow_t *allow = NULL;
    size_t n = 0;
    int rc = 0;
    for (char *tok = strtok_r(copy, ", \t", &save); tok && !rc;
         tok = strtok_r(NULL, ", \t", &save)) {
        if (!strcmp(tok, "*")) {
            *any = true;
            continue;
        }
        allow = xrealloc(allow, (n + 1) * sizeof *allow);
        rc = s_allow_entry(tok, &allow[n], err, errlen);
        if (!rc)
            n++;
    }
    free(copy);
    if (!rc && n == 0 && !*any) {
        snprintf(err, errlen,
                 "--webhook-allow: no host given; expected hosts such as "
                 "hooks.example.com,*.example.com, or *");
        rc = -EINVAL;
    }
    if (rc) {
        s_allow_free(allow, n);
        return rc;
    }
    *out = allow;
    *n_out = n;
    return 0;
}

static bool s_allowed(const webhook_queue_t *self, const char *host, unsigned port)
{
    if (self->allow_any)
        return true;
    size_t hl = strlen(host);
    for (size_t i = 0; i < self->n_allow; i++) {
        const s_allow_t *a = &self->allow[i];
        size_t al = strlen(a->host);
        bool match =
            a->domain ? hl > al + 1 && host[hl - al - 1] == '.' && !strcmp(host + hl - al, a->host)
                      : !strcmp(host, a->host);
        if (match && (!a->port || a->port == port))
            return true;
    }
    return false;
}

int webhook_options_check(const webhook_options_t *opts, char *err, size_t errlen)
{
    s_allow_t *allow = NULL;
    size_t n = 0;
    bool any = false;
    int rc = s_allow_parse(opts->allow, &allow, &n, &any, err, errlen);
    s_allow_free(allow, n);
    if (rc)
        return rc;
    if (opts->ca_file) {
        int fd = open(opts->ca_file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            snprintf(err, errlen, "--webhook-ca: %s: %s; expected a readable CA bundle (PEM)",
                     opts->ca_file, fd < 0 ? strerror(errno) : "not a regular file");
            if (fd >= 0)
                close(fd);
            return -EINVAL;
        }
        close(fd);
    }
    if ((opts->allow || opts->ca_file) && !http_client_available()) {
        snprintf(err, errlen,
                 "--webhook-allow, --webhook-ca: this fleetburn was built without "
                 "libcurl and cannot post webhooks; expected a build with libcurl "
                 "(libcurl4-openssl-dev)");
        return -EINVAL;
    }
    return 0;
}

int webhook_queue_may_post(const webhook_queue_t *self, const char *url, char *why, size_t whylen)
{
    if (!self->http) {
        snprintf(why, whylen, "this coordinator cannot post webhooks: %s", self->http_error);
        return -ENOTSUP;
    }
    char scheme[16], host[S_HOST_MAX], err[256];
    unsigned port = 0;
    if (http_url_parts(url, scheme, sizeof scheme, host, sizeof host, &port, err, sizeof err)) {
        snprintf(why, whylen, "%s", err);
        return -EINVAL;
    }
    if (!s_allowed(self, host, port)) {
        snprintf(why, whylen,
                 "this coordinator may not post to %s port %u: its administrator allows webhooks "
                 "to %s (fleetburn serve --webhook-allow)",
                 host, port, self->n_allow ? "the hosts of its --webhook-allow list" : "no host");
        return -EPERM;
    }
    return 0;
}

/* ---- deliveries --------------------------------------------------------------------------- */

static void s_delivery_free(delivery_t *d)
{
    free(d->campaign_id);
    free(d->url);
    free(d->origin);
    free(d->payload);
    free(d->retry_ms);
    free(d);
}

static void s_unlink(webhook_queue_t *self, delivery_t *d)
{
    for (delivery_t **p = &self->deliveries; *p; p = &(*p)->next)
        if (*p == d) {
            *p = d->next;
            return;
        }
}

static delivery_t *s_add(webhook_queue_t *self, int64_t id, const char *campaign_id,
                         const char *url, const char *payload, const uint64_t *retry_ms,
                         size_t n_retry, uint64_t timeout_ms, unsigned attempts, uint64_t due_ms)
{
    delivery_t *d = xcalloc(1, sizeof *d);
    d->w = self;
    d->id = id;
    d->campaign_id = xstrdup(campaign_id);
    d->url = xstrdup(url);
    d->origin = fb_webhook_url_origin(url);
    d->payload = xstrdup(payload);
    d->retry_ms = xcalloc(n_retry + 1, sizeof *d->retry_ms);
    if (n_retry)
        memcpy(d->retry_ms, retry_ms, n_retry * sizeof *retry_ms);
    d->n_retry = n_retry;
    d->timeout_ms = timeout_ms ? timeout_ms : FB_WEBHOOK_TIMEOUT_DEFAULT_MS;
    d->attempts = attempts;
    d->due_ms = due_ms;
    d->next = self->deliveries;
    self->deliveries = d;
    return d;
}

static void s_event(webhook_queue_t *self, const delivery_t *d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An event on the campaign's timeline, and the same line in the log. */
static void s_event(webhook_queue_t *self, const delivery_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    if (store_event(self->store, fb_now_ms(), d->campaign_id, NULL, NULL, "webhook", msg))
        log_error("cannot store a webhook event: %s", store_errmsg(self->store));
    log_info("campaign %s: %s", d->campaign_id, msg);
    free(msg);
}

/* The store's record of attempt d->attempts; the delivery leaves the queue unless pending. */
static void s_record(webhook_queue_t *self, delivery_t *d, const char *state, const char *error)
{
    uint64_t now = fb_now_ms();
    if (store_webhook_attempted(self->store, d->id, d->attempts, state, d->due_ms, error, now))
        log_error("campaign %s: cannot record a webhook attempt: %s", d->campaign_id,
                  store_errmsg(self->store));
    if (strcmp(state, "pending")) {
        s_unlink(self, d);
        s_delivery_free(d);
    }
}

static void s_schedule(webhook_queue_t *self);

/* The outcome of attempt d->attempts, said as "HTTP 503" or the transfer's error; refused: why a
 * permanent failure is not retried. */
static void s_outcome(webhook_queue_t *self, delivery_t *d, fb_webhook_outcome_t outcome,
                      const char *what, const char *refused)
{
    unsigned n = d->attempts, total = (unsigned)d->n_retry + 1;
    uint64_t delay = 0;
    if (outcome == FB_WEBHOOK_DELIVERED) {
        s_event(self, d, "webhook to %s delivered on attempt %u (%s)", d->origin, n, what);
        s_record(self, d, "delivered", NULL);
    } else if (outcome == FB_WEBHOOK_PERMANENT) {
        s_event(self, d, "webhook to %s failed on attempt %u: %s; not retried: %s", d->origin, n,
                what, refused);
        s_record(self, d, "failed", what);
    } else if (fb_webhook_retry_delay(d->retry_ms, d->n_retry, n, &delay)) {
        char in[32];
        d->due_ms = fb_now_ms() + delay;
        s_event(self, d, "webhook to %s: attempt %u of %u failed: %s; next attempt in %s",
                d->origin, n, total, what, fb_format_duration(delay, in, sizeof in));
        s_record(self, d, "pending", what);
    } else {
        s_event(self, d, "webhook to %s given up after %u attempt%s: %s", d->origin, n,
                n > 1 ? "s" : "", what);
        s_record(self, d, "failed", what);
    }
}

static void s_on_done(const http_result_t *r, void *arg)
{
    delivery_t *d = arg;
    webhook_queue_t *self = d->w;
    d->in_flight = false;
    self->n_in_flight--;
    d->attempts++;
    char what[320];
    if (r->status)
        snprintf(what, sizeof what, "HTTP %ld", r->status);
    else
        fb_log_sanitize(r->error ? r->error : "no answer", what, sizeof what);
    fb_webhook_outcome_t outcome =
        r->permanent ? FB_WEBHOOK_PERMANENT : fb_webhook_judge(r->status);
    const char *refused = r->permanent ? "the URL cannot be used"
                          : r->status >= 300 && r->status <= 399
                              ? "redirects are not followed (set url to the final address)"
                              : "the receiver refuses the request itself";
    s_outcome(self, d, outcome, what, refused);
    s_schedule(self);
}

static void s_attempt(webhook_queue_t *self, delivery_t *d)
{
    char why[512];
    int rc = webhook_queue_may_post(self, d->url, why, sizeof why);
    if (rc == 0) {
        char campaign[300], attempt[48];
        snprintf(campaign, sizeof campaign, "X-Fleetburn-Campaign: %s", d->campaign_id);
        snprintf(attempt, sizeof attempt, "X-Fleetburn-Attempt: %u", d->attempts + 1);
        const char *headers[] = {campaign, attempt};
        rc = http_client_post(self->http, d->url, d->payload, headers, 2, d->timeout_ms, s_on_done,
                              d, why, sizeof why);
        if (rc == 0) {
            d->in_flight = true;
            self->n_in_flight++;
            return;
        }
    }
    /* Refused before anything was sent: the URL, or a host this coordinator does not allow. */
    d->attempts++;
    s_outcome(self, d, FB_WEBHOOK_PERMANENT, why, "nothing was sent");
}

static void s_on_timer(uv_timer_t *h)
{
    webhook_queue_t *self = h->data;
    webhook_queue_kick(self);
}

/* The timer for the earliest pending delivery not in flight. */
static void s_schedule(webhook_queue_t *self)
{
    if (!self->http)
        return;
    uint64_t now = fb_now_ms(), next = UINT64_MAX;
    for (const delivery_t *d = self->deliveries; d; d = d->next)
        if (!d->in_flight && d->due_ms < next)
            next = d->due_ms;
    if (next == UINT64_MAX)
        uv_timer_stop(&self->timer);
    else
        uv_timer_start(&self->timer, s_on_timer, next > now ? next - now : 0, 0);
}

static int s_load_pending(const store_webhook_t *w, void *arg);

void webhook_queue_kick(webhook_queue_t *self)
{
    if (!self->http)
        return;
    if (store_webhook_foreach(self->store, NULL, s_load_pending, self) < 0)
        log_error("cannot read the pending webhook deliveries: %s", store_errmsg(self->store));
    uint64_t now = fb_now_ms();
    size_t n = 0;
    for (const delivery_t *d = self->deliveries; d; d = d->next)
        n++;
    /* The due ones first: an attempt refused at once frees its own delivery, never another. */
    delivery_t **due = xcalloc(n + 1, sizeof *due);
    size_t n_due = 0;
    for (delivery_t *d = self->deliveries; d; d = d->next)
        if (!d->in_flight && d->due_ms <= now)
            due[n_due++] = d;
    for (size_t i = 0; i < n_due; i++)
        s_attempt(self, due[i]);
    free(due);
    s_schedule(self);
}

/* ---- life --------------------------------------------------------------------------------- */

/* A pending row of the store joins the queue, unless it is there already. */
static int s_load_pending(const store_webhook_t *w, void *arg)
{
    webhook_queue_t *self = arg;
    for (const delivery_t *d = self->deliveries; d; d = d->next)
        if (d->id == w->id)
            return 0;
    s_add(self, w->id, w->campaign_id, w->url, w->payload, w->retry_ms, w->n_retry, w->timeout_ms,
          w->attempts, w->next_attempt_ms);
    return 0;
}

webhook_queue_t *webhook_queue_new(uv_loop_t *loop, store_t *store, const webhook_options_t *opts,
                                   char *err, size_t errlen)
{
    webhook_queue_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->store = store;
    if (s_allow_parse(opts->allow, &self->allow, &self->n_allow, &self->allow_any, err, errlen)) {
        free(self);
        return NULL;
    }
    self->allow_any |= opts->allow_any;
    self->http = http_client_new(loop, opts->ca_file, self->http_error, sizeof self->http_error);
    if (self->http && !opts->allow_any)
        log_info("webhook alerts may be posted to %s",
                 opts->allow ? opts->allow : "no host (--webhook-allow)");
    uv_timer_init(loop, &self->timer);
    self->timer.data = self;
    if (store_webhook_foreach(store, NULL, s_load_pending, self) < 0)
        log_error("cannot read the pending webhook deliveries: %s", store_errmsg(store));
    size_t n = 0;
    for (const delivery_t *d = self->deliveries; d; d = d->next)
        n++;
    if (n && !self->http)
        log_warn("%zu webhook alert(s) wait in the database, and this coordinator cannot post "
                 "them: %s",
                 n, self->http_error);
    else if (n)
        log_info("%zu webhook alert(s) wait in the database; each is tried again when it is due",
                 n);
    s_schedule(self);
    return self;
}

/* Deliveries still pending when the coordinator goes: said once each, with where they wait. */
static void s_say_pending(webhook_queue_t *self)
{
    for (const delivery_t *d = self->deliveries; d; d = d->next)
        log_warn("campaign %s: the webhook alert to %s is not delivered yet (%u attempt%s made); "
                 "it waits in %s for the next `fleetburn serve --db %s`",
                 d->campaign_id, d->origin, d->attempts, d->attempts == 1 ? "" : "s",
                 store_path(self->store), store_path(self->store));
}

static void s_closed(uv_handle_t *h)
{
    webhook_queue_t *self = h->data;
    while (self->deliveries) {
        delivery_t *d = self->deliveries;
        self->deliveries = d->next;
        s_delivery_free(d);
    }
    s_allow_free(self->allow, self->n_allow);
    free(self);
}

void webhook_queue_destroy(webhook_queue_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    webhook_queue_t *self = *self_p;
    *self_p = NULL;
    s_say_pending(self);
    http_client_destroy(&self->http); /* attempts in flight end, unrecorded: made again later */
    uv_timer_stop(&self->timer);
    uv_close((uv_handle_t *)&self->timer, s_closed);
}

int webhook_queue_enqueue(webhook_queue_t *self, const char *campaign_id, const fb_webhook_t *hook,
                          const char *payload)
{
    return store_webhook_enqueue(self->store, campaign_id, hook->url, payload, hook->retry_ms,
                                 hook->n_retry, hook->timeout_ms, fb_now_ms(), NULL);
}

size_t webhook_queue_in_flight(const webhook_queue_t *self)
{
    return self ? self->n_in_flight : 0;
}
