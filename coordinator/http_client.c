/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP POSTs on the coordinator's libuv loop with libcurl's multi interface (http_client.h).
 *
 * libcurl tells which sockets to watch (CURLMOPT_SOCKETFUNCTION: one uv_poll_t per socket, made
 * when it first appears and closed when libcurl says it is done with it) and when to call it back
 * (CURLMOPT_TIMERFUNCTION: one uv_timer_t); the loop calls curl_multi_socket_action for each
 * event, then collects the requests that ended. Nothing here waits: names are resolved on
 * libcurl's resolver thread (AsynchDNS) and TLS handshakes advance with the socket's events. */
#include "http_client.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FB_HAVE_CURL

bool http_client_available(void)
{
    return false;
}

http_client_t *http_client_new(uv_loop_t *loop, const char *ca_file, char *err, size_t errlen)
{
    (void)loop;
    (void)ca_file;
    snprintf(err, errlen, "this fleetburn was built without libcurl (WITH_CURL)");
    return NULL;
}

void http_client_destroy(http_client_t **self_p)
{
    if (self_p)
        *self_p = NULL;
}

int http_client_post(http_client_t *self, const char *url, const char *body,
                     const char *const *headers, size_t n_headers, uint64_t timeout_ms,
                     http_done_cb cb, void *arg, char *err, size_t errlen)
{
    (void)self, (void)url, (void)body, (void)headers, (void)n_headers, (void)timeout_ms;
    (void)cb, (void)arg;
    snprintf(err, errlen, "this fleetburn was built without libcurl (WITH_CURL)");
    return -ENOTSUP;
}

size_t http_client_running(const http_client_t *self)
{
    (void)self;
    return 0;
}

int http_url_parts(const char *url, char *scheme, size_t schemelen, char *host, size_t hostlen,
                   unsigned *port, char *err, size_t errlen)
{
    (void)url, (void)scheme, (void)schemelen, (void)host, (void)hostlen, (void)port;
    snprintf(err, errlen, "this fleetburn was built without libcurl (WITH_CURL)");
    return -ENOTSUP;
}

#else

#include <ctype.h>
#include <curl/curl.h>

#define S_CONNECT_TIMEOUT_MS 10000

typedef struct http_req {
    http_client_t *client;
    CURL *easy;
    CURLU *url;
    struct curl_slist *headers;
    char *body;
    size_t body_read;
    bool body_cut; /* the answer's body passed HTTP_CLIENT_BODY_MAX: the transfer was ended */
    char errbuf[CURL_ERROR_SIZE];
    http_done_cb cb;
    void *arg;
    struct http_req *next;
} http_req_t;

/* A socket libcurl asked the loop to watch. */
typedef struct {
    uv_poll_t poll;
    curl_socket_t fd;
    http_client_t *client;
} s_sock_t;

struct http_client {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;
    char *ca_file;
    http_req_t *reqs;
    size_t n_reqs;
};

bool http_client_available(void)
{
    return true;
}

/* ---- requests ---------------------------------------------------------------------------- */

static void s_req_free(http_req_t *req)
{
    curl_easy_cleanup(req->easy);
    curl_url_cleanup(req->url);
    curl_slist_free_all(req->headers);
    free(req->body);
    free(req);
}

static void s_req_unlink(http_client_t *self, http_req_t *req)
{
    for (http_req_t **p = &self->reqs; *p; p = &(*p)->next)
        if (*p == req) {
            *p = req->next;
            self->n_reqs--;
            return;
        }
}

/* The answer's body: counted and dropped, and the transfer ended past the limit (returning less
 * than was given makes libcurl stop), so that a server cannot keep the coordinator reading. */
static size_t s_on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    (void)data;
    http_req_t *req = arg;
    size_t n = size * nmemb;
    if (req->body_read + n > HTTP_CLIENT_BODY_MAX) {
        req->body_cut = true;
        return 0;
    }
    req->body_read += n;
    return n;
}

/* Every request that ended: its callback, then it is freed. */
static void s_collect(http_client_t *self)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(self->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode rc = msg->data.result;
        http_req_t *req = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&req);
        http_result_t r = {0};
        /* An answer's status counts even when its body was cut or stalled: it was received. */
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r.status);
        if (rc != CURLE_OK && !(req->body_cut && r.status))
            r.error = req->errbuf[0] ? req->errbuf : curl_easy_strerror(rc);
        r.permanent = rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT;
        r.body_bytes = req->body_read;
        curl_multi_remove_handle(self->multi, easy);
        s_req_unlink(self, req);
        req->cb(&r, req->arg);
        s_req_free(req);
    }
}

/* ---- libcurl's sockets and timer on the loop ---------------------------------------------- */

static void s_on_poll(uv_poll_t *h, int status, int events)
{
    s_sock_t *sk = h->data;
    http_client_t *self = sk->client;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running = 0;
    curl_multi_socket_action(self->multi, sk->fd, flags, &running);
    s_collect(self);
}

static void s_sock_closed(uv_handle_t *h)
{
    free(h->data);
}

static int s_on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    (void)easy;
    http_client_t *self = userp;
    s_sock_t *sk = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (sk) {
            curl_multi_assign(self->multi, fd, NULL);
            uv_poll_stop(&sk->poll);
            uv_close((uv_handle_t *)&sk->poll, s_sock_closed);
        }
        return 0;
    }
    if (!sk) {
        sk = xcalloc(1, sizeof *sk);
        sk->fd = fd;
        sk->client = self;
        int rc = uv_poll_init_socket(self->loop, &sk->poll, fd);
        if (rc) {
            log_error("webhook: cannot watch a socket: %s", uv_strerror(rc));
            free(sk);
            return -1; /* libcurl ends the transfer */
        }
        sk->poll.data = sk;
        curl_multi_assign(self->multi, fd, sk);
    }
    int events = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
    uv_poll_start(&sk->poll, events, s_on_poll);
    return 0;
}

static void s_on_timeout(uv_timer_t *h)
{
    http_client_t *self = h->data;
    int running = 0;
    curl_multi_socket_action(self->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    s_collect(self);
}

/* libcurl wants to be called back after timeout_ms (-1: not at all). Never calls libcurl from
 * here: a timeout of 0 fires on the loop's next turn. */
static int s_on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    http_client_t *self = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&self->timer);
    else
        uv_timer_start(&self->timer, s_on_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

/* ---- public ------------------------------------------------------------------------------ */

http_client_t *http_client_new(uv_loop_t *loop, const char *ca_file, char *err, size_t errlen)
{
    static bool initialised;
    if (!initialised) {
        CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
        if (rc != CURLE_OK) {
            snprintf(err, errlen, "cannot set up libcurl: %s", curl_easy_strerror(rc));
            return NULL;
        }
        initialised = true;
    }
    http_client_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->multi = curl_multi_init();
    if (!self->multi) {
        snprintf(err, errlen, "cannot set up libcurl's multi interface");
        free(self);
        return NULL;
    }
    self->ca_file = xstrdup(ca_file);
    curl_multi_setopt(self->multi, CURLMOPT_SOCKETFUNCTION, s_on_socket);
    curl_multi_setopt(self->multi, CURLMOPT_SOCKETDATA, self);
    curl_multi_setopt(self->multi, CURLMOPT_TIMERFUNCTION, s_on_timer);
    curl_multi_setopt(self->multi, CURLMOPT_TIMERDATA, self);
    uv_timer_init(loop, &self->timer);
    self->timer.data = self;
    return self;
}

static void s_client_closed(uv_handle_t *h)
{
    http_client_t *self = h->data;
    free(self->ca_file);
    free(self);
}

void http_client_destroy(http_client_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    http_client_t *self = *self_p;
    *self_p = NULL;
    while (self->reqs) {
        http_req_t *req = self->reqs;
        self->reqs = req->next;
        curl_multi_remove_handle(self->multi, req->easy); /* closes its sockets (REMOVE) */
        s_req_free(req);
    }
    self->n_reqs = 0;
    curl_multi_cleanup(self->multi);
    uv_timer_stop(&self->timer);
    uv_close((uv_handle_t *)&self->timer, s_client_closed);
}

size_t http_client_running(const http_client_t *self)
{
    return self ? self->n_reqs : 0;
}

static void s_lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* url parsed by libcurl, http and https only. NULL with err. */
static CURLU *s_parse(const char *url, char *err, size_t errlen)
{
    CURLU *u = curl_url();
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    CURLUcode rc = curl_url_set(u, CURLUPART_URL, url, 0);
    char *scheme = NULL;
    if (rc == CURLUE_OK)
        rc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    if (rc != CURLUE_OK) {
        snprintf(err, errlen, "not a URL libcurl can use: %s", curl_url_strerror(rc));
        curl_url_cleanup(u);
        return NULL;
    }
    bool http = !strcmp(scheme, "http") || !strcmp(scheme, "https");
    curl_free(scheme);
    if (!http) {
        snprintf(err, errlen, "not an http:// or https:// URL");
        curl_url_cleanup(u);
        return NULL;
    }
    return u;
}

int http_url_parts(const char *url, char *scheme, size_t schemelen, char *host, size_t hostlen,
                   unsigned *port, char *err, size_t errlen)
{
    CURLU *u = s_parse(url, err, errlen);
    if (!u)
        return -EINVAL;
    char *s = NULL, *h = NULL, *p = NULL;
    int ret = 0;
    if (curl_url_get(u, CURLUPART_SCHEME, &s, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        snprintf(err, errlen, "no host or port in the URL");
        ret = -EINVAL;
    } else {
        fb_strlcpy(scheme, s, schemelen);
        fb_strlcpy(host, h, hostlen);
        s_lower(scheme);
        s_lower(host);
        *port = (unsigned)strtoul(p, NULL, 10);
    }
    curl_free(s);
    curl_free(h);
    curl_free(p);
    curl_url_cleanup(u);
    return ret;
}

/* The easy handle of req: the careful options of http_client.h. */
static void s_setup(http_client_t *self, http_req_t *req, uint64_t timeout_ms)
{
    CURL *e = req->easy;
    curl_easy_setopt(e, CURLOPT_CURLU, req->url);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the older option is deprecated from there on */
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(req->body));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, req->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "fleetburn/" FB_VERSION);
    long total = (long)timeout_ms;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, total);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     total < S_CONNECT_TIMEOUT_MS ? total : (long)S_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (self->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, self->ca_file);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, req);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, req->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, req);
}

int http_client_post(http_client_t *self, const char *url, const char *body,
                     const char *const *headers, size_t n_headers, uint64_t timeout_ms,
                     http_done_cb cb, void *arg, char *err, size_t errlen)
{
    CURLU *u = s_parse(url, err, errlen);
    if (!u)
        return -EINVAL;
    http_req_t *req = xcalloc(1, sizeof *req);
    req->client = self;
    req->url = u;
    req->body = xstrdup(body);
    req->cb = cb;
    req->arg = arg;
    req->easy = curl_easy_init();
    if (!req->easy) {
        snprintf(err, errlen, "cannot make a libcurl handle");
        s_req_free(req);
        return -ENOMEM;
    }
    /* No "Expect: 100-continue": it would cost a round trip (or a second's wait) per post. */
    req->headers = curl_slist_append(req->headers, "Content-Type: application/json");
    req->headers = curl_slist_append(req->headers, "Expect:");
    for (size_t i = 0; i < n_headers; i++)
        req->headers = curl_slist_append(req->headers, headers[i]);
    s_setup(self, req, timeout_ms);
    CURLMcode mrc = curl_multi_add_handle(self->multi, req->easy);
    if (mrc != CURLM_OK) {
        snprintf(err, errlen, "cannot start the request: %s", curl_multi_strerror(mrc));
        s_req_free(req);
        return -EIO;
    }
    req->next = self->reqs;
    self->reqs = req;
    self->n_reqs++;
    return 0;
}

#endif
