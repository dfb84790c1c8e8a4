/* SPDX-License-Identifier: Apache-2.0 */
/* A campaign's webhook alert: the `actions.webhook` mapping of the campaign file, the syntax of
 * its URL, the triggers, the backoff schedule and how an attempt's HTTP answer is judged. Pure
 * logic, like the rest of scheduler/: it parses the YAML node it is handed and never touches the
 * network. Which hosts a coordinator may post to is the coordinator's decision (its
 * --webhook-allow list, coordinator/webhook_queue.c); this only says what a well-formed URL is. */
#include "scheduler/webhook.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S_KEYS "url, on, retry, timeout"
#define S_URL_EXPECTED                                                                             \
    "expected an http:// or https:// URL such as https://hooks.example.com/fleetburn"
#define S_ON_EXPECTED "expected bad, regression or error, or a list of them such as [bad, error]"
#define S_RETRY_EXPECTED                                                                           \
    "expected a list of waits between attempts, each from 1s to 1d, e.g. [5m, 10m, 20m, 40m, "     \
    "80m], or [] for none"
#define S_TIMEOUT_EXPECTED "expected a duration from 1s to 5m, e.g. 30s"

/* 5, 10, 20, 40 and 80 minutes: an outage of a couple of hours is ridden out, and a receiver
 * that is down for good is not hammered. */
static const uint64_t s_default_retry_ms[] = {300000, 600000, 1200000, 2400000, 4800000};

static const char *const s_trigger_names[] = {"bad", "regression", "error"};

const char *fb_alert_trigger_name(unsigned bit)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(s_trigger_names); i++)
        if (bit == 1u << i)
            return s_trigger_names[i];
    return "?";
}

const char *fb_alert_trigger_list(unsigned mask, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < FB_ARRAY_LEN(s_trigger_names) && len; i++)
        if (mask & (1u << i)) {
            int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", s_trigger_names[i]);
            if (n < 0 || (size_t)n >= len - used) {
                buf[used] = '\0'; /* whole names only */
                break;
            }
            used += (size_t)n;
        }
    return buf;
}

/* ---- the URL ---------------------------------------------------------------------------- */

/* Length of the scheme and "://" (7 or 8), or 0 when it is not http or https. */
static size_t s_scheme_len(const char *url)
{
    if (!strncasecmp(url, "http://", 7))
        return 7;
    if (!strncasecmp(url, "https://", 8))
        return 8;
    return 0;
}

static bool s_host_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

/* The host of an authority without user info: [v6] or a name; *rest points after it. */
static int s_host(const char *auth, size_t len, size_t *host_len, char *why, size_t whylen)
{
    if (len > 0 && auth[0] == '[') {
        const char *close = memchr(auth, ']', len);
        if (!close || close == auth + 1)
            return fb_errf(why, whylen, -EINVAL,
                           "an IPv6 address must be written in brackets, e.g. [fd00::1]");
        for (const char *p = auth + 1; p < close; p++)
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
                return fb_errf(why, whylen, -EINVAL, "'%c' in an IPv6 address", *p);
        *host_len = (size_t)(close - auth) + 1;
        return 0;
    }
    size_t n = 0;
    while (n < len && auth[n] != ':') {
        if (!s_host_char(auth[n]))
            return fb_errf(why, whylen, -EINVAL, "'%c' in the host name", auth[n]);
        n++;
    }
    if (n == 0)
        return fb_errf(why, whylen, -EINVAL, "no host");
    *host_len = n;
    return 0;
}

static int s_port(const char *text, size_t len, unsigned *port, char *why, size_t whylen)
{
    unsigned v = 0;
    if (len == 0 || len > 5)
        return fb_errf(why, whylen, -EINVAL, "the port must be a number from 1 to 65535");
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)text[i]))
            return fb_errf(why, whylen, -EINVAL, "the port must be a number from 1 to 65535");
        v = v * 10 + (unsigned)(text[i] - '0');
    }
    if (v == 0 || v > 65535)
        return fb_errf(why, whylen, -EINVAL, "the port must be a number from 1 to 65535");
    *port = v;
    return 0;
}

int fb_webhook_url_check(const char *url, char *host, size_t hostlen, unsigned *port, char *why,
                         size_t whylen)
{
    size_t n = strlen(url);
    if (n == 0)
        return fb_errf(why, whylen, -EINVAL, "empty");
    if (n > FB_WEBHOOK_URL_MAX)
        return fb_errf(why, whylen, -EINVAL, "longer than %d bytes", FB_WEBHOOK_URL_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
            return fb_errf(why, whylen, -EINVAL,
                           "a blank, a control character or a non-ASCII byte at byte %zu (write a "
                           "host in its ASCII form and escape the rest as %%XX)",
                           i + 1);
    size_t scheme = s_scheme_len(url);
    if (!scheme)
        return fb_errf(why, whylen, -EINVAL, "not an http:// or https:// URL");
    const char *auth = url + scheme;
    size_t auth_len = strcspn(auth, "/?#");
    if (memchr(auth, '@', auth_len))
        return fb_errf(why, whylen, -EINVAL,
                       "user:password@ in a URL is refused (it would be written wherever the URL "
                       "is); put a token in the path or the query");
    if (strchr(url, '#'))
        return fb_errf(why, whylen, -EINVAL, "a #fragment is never sent to the server; remove it");
    size_t host_len = 0;
    if (s_host(auth, auth_len, &host_len, why, whylen))
        return -EINVAL;
    unsigned p = 0;
    if (host_len < auth_len) {
        if (auth[host_len] != ':')
            return fb_errf(why, whylen, -EINVAL, "'%c' after the host", auth[host_len]);
        if (s_port(auth + host_len + 1, auth_len - host_len - 1, &p, why, whylen))
            return -EINVAL;
    }
    if (host && hostlen) {
        if (host_len >= hostlen)
            return fb_errf(why, whylen, -EINVAL, "the host is longer than %zu bytes", hostlen - 1);
        for (size_t i = 0; i < host_len; i++)
            host[i] = (char)tolower((unsigned char)auth[i]);
        host[host_len] = '\0';
    }
    if (port)
        *port = p;
    return 0;
}

char *fb_webhook_url_origin(const char *url)
{
    if (!url || fb_webhook_url_check(url, NULL, 0, NULL, NULL, 0))
        return xstrdup("(an invalid URL)");
    size_t scheme = s_scheme_len(url);
    return xstrndup(url, scheme + strcspn(url + scheme, "/?#"));
}

/* ---- schedule and answers --------------------------------------------------------------- */

bool fb_webhook_retry_delay(const uint64_t *retry_ms, size_t n_retry, unsigned attempts,
                            uint64_t *delay_ms)
{
    if (attempts == 0 || attempts > n_retry)
        return false;
    *delay_ms = retry_ms[attempts - 1];
    return true;
}

fb_webhook_outcome_t fb_webhook_judge(long http_status)
{
    if (http_status >= 200 && http_status <= 299)
        return FB_WEBHOOK_DELIVERED;
    /* No answer, a server error, or "try later" (Request Timeout, Too Many Requests). */
    if (http_status == 0 || http_status == 408 || http_status == 429 ||
        (http_status >= 500 && http_status <= 599))
        return FB_WEBHOOK_RETRY;
    return FB_WEBHOOK_PERMANENT;
}

/* ---- the `webhook:` mapping ------------------------------------------------------------- */

static int s_url(fb_yaml_t *y, const yaml_node_t *v, const char *path, fb_webhook_t *w)
{
    const char *text;
    if (fb_yaml_scalar(y, v, path, S_URL_EXPECTED, &text))
        return -EINVAL;
    char why[256], shown[64];
    if (fb_webhook_url_check(text, NULL, 0, NULL, why, sizeof why))
        return fb_yaml_fail(y, fb_yaml_line(v), path, "'%s': %s; %s",
                            fb_show_value(text, shown, sizeof shown), why, S_URL_EXPECTED);
    w->url = xstrdup(text);
    w->line = fb_yaml_line(v);
    return 0;
}

static int s_trigger(fb_yaml_t *y, const yaml_node_t *item, const char *path, unsigned *mask)
{
    const char *text;
    if (fb_yaml_scalar(y, item, path, S_ON_EXPECTED, &text))
        return -EINVAL;
    char shown[64];
    for (size_t i = 0; i < FB_ARRAY_LEN(s_trigger_names); i++) {
        if (strcmp(text, s_trigger_names[i]))
            continue;
        if (*mask & (1u << i))
            return fb_yaml_fail(y, fb_yaml_line(item), path, "'%s' given twice; %s", text,
                                "expected each trigger once");
        *mask |= 1u << i;
        return 0;
    }
    return fb_yaml_fail(y, fb_yaml_line(item), path, "unknown trigger '%s'; %s",
                        fb_show_value(text, shown, sizeof shown), S_ON_EXPECTED);
}

static int s_on(fb_yaml_t *y, const yaml_node_t *v, const char *path, fb_webhook_t *w)
{
    unsigned mask = 0;
    if (v->type != YAML_SEQUENCE_NODE) {
        if (s_trigger(y, v, path, &mask))
            return -EINVAL;
        w->on = mask;
        return 0;
    }
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n == 0)
        return fb_yaml_fail(y, fb_yaml_line(v), path,
                            "is an empty list (nothing would be sent); %s", S_ON_EXPECTED);
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *item = fb_yaml_node(y, v->data.sequence.items.start[i]);
        char *ipath = xasprintf("%s[%zu]", path, i);
        int rc = item ? s_trigger(y, item, ipath, &mask) : -EINVAL;
        free(ipath);
        if (rc)
            return rc;
    }
    w->on = mask;
    return 0;
}

static int s_retry(fb_yaml_t *y, const yaml_node_t *v, const char *path, fb_webhook_t *w)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return fb_yaml_fail(y, fb_yaml_line(v), path, "is %s; %s",
                            fb_yaml_is_null(v) ? "empty" : fb_yaml_kind(v), S_RETRY_EXPECTED);
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n > FB_WEBHOOK_RETRIES_MAX)
        return fb_yaml_fail(y, fb_yaml_line(v), path, "%zu waits are more than %d; %s", n,
                            FB_WEBHOOK_RETRIES_MAX, S_RETRY_EXPECTED);
    uint64_t *ms = xcalloc(n + 1, sizeof *ms);
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *item = fb_yaml_node(y, v->data.sequence.items.start[i]);
        char *ipath = xasprintf("%s[%zu]", path, i);
        int rc = item ? fb_yaml_duration_ms(y, item, ipath, FB_WEBHOOK_RETRY_MIN_MS,
                                            FB_WEBHOOK_RETRY_MAX_MS, S_RETRY_EXPECTED, &ms[i])
                      : -EINVAL;
        free(ipath);
        if (rc) {
            free(ms);
            return rc;
        }
    }
    free(w->retry_ms);
    w->retry_ms = ms;
    w->n_retry = n;
    return 0;
}

static int s_field(fb_yaml_t *y, const char *key, const yaml_node_t *k, const yaml_node_t *v,
                   const char *kpath, fb_webhook_t *w)
{
    if (!strcmp(key, "url"))
        return s_url(y, v, kpath, w);
    if (!strcmp(key, "on"))
        return s_on(y, v, kpath, w);
    if (!strcmp(key, "retry"))
        return s_retry(y, v, kpath, w);
    if (!strcmp(key, "timeout"))
        return fb_yaml_duration_ms(y, v, kpath, FB_WEBHOOK_TIMEOUT_MIN_MS,
                                   FB_WEBHOOK_TIMEOUT_MAX_MS, S_TIMEOUT_EXPECTED, &w->timeout_ms);
    return fb_yaml_fail(y, fb_yaml_line(k), kpath, "unknown key; expected one of %s", S_KEYS);
}

int fb_webhook_parse(fb_yaml_t *y, const yaml_node_t *node, const char *path, fb_webhook_t **out)
{
    *out = NULL;
    int rc = fb_yaml_mapping(y, node, path,
                             "expected a mapping with url and optionally on, retry, timeout, e.g. "
                             "{url: https://hooks.example.com/fleetburn, on: [bad]}");
    if (rc)
        return rc;
    fb_webhook_t *w = xcalloc(1, sizeof *w);
    w->on = FB_ALERT_ALL;
    w->timeout_ms = FB_WEBHOOK_TIMEOUT_DEFAULT_MS;
    w->n_retry = FB_ARRAY_LEN(s_default_retry_ms);
    w->retry_ms = xmalloc(sizeof s_default_retry_ms);
    memcpy(w->retry_ms, s_default_retry_ms, sizeof s_default_retry_ms);
    char seen[8][16] = {{0}};
    size_t n_seen = 0;
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top && !rc; pair++) {
        const yaml_node_t *k = fb_yaml_node(y, pair->key), *v = fb_yaml_node(y, pair->value);
        const char *key;
        if (!k || !v || fb_yaml_scalar(y, k, path, "expected one of " S_KEYS, &key)) {
            rc = -EINVAL;
            break;
        }
        char *kpath = fb_yaml_path(path, key);
        bool twice = false;
        for (size_t i = 0; i < n_seen && !twice; i++)
            twice = !strcmp(seen[i], key);
        if (twice)
            rc = fb_yaml_fail(y, fb_yaml_line(k), kpath, "key given twice; expected each key once");
        else
            rc = s_field(y, key, k, v, kpath, w);
        if (!rc && n_seen < FB_ARRAY_LEN(seen)) /* only known keys get here: all fit */
            fb_strlcpy(seen[n_seen++], key, sizeof seen[0]);
        free(kpath);
    }
    if (!rc && !w->url) {
        char *upath = fb_yaml_path(path, "url");
        rc = fb_yaml_fail(y, fb_yaml_line(node), upath, "missing; %s", S_URL_EXPECTED);
        free(upath);
    }
    if (rc) {
        fb_webhook_destroy(&w);
        return rc;
    }
    *out = w;
    return 0;
}

void fb_webhook_destroy(fb_webhook_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_webhook_t *w = *self_p;
    free(w->url);
    free(w->retry_ms);
    free(w);
    *self_p = NULL;
}
