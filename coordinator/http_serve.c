/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn serve --http ADDR` (http_serve.h): /metrics, the campaigns and their live HTML
 * reports over libmicrohttpd, on its own thread with its own connection to the store.
 *
 * The request path is matched against three fixed routes; the one variable part, a campaign id,
 * must be a wire id (letters, digits, '-', '_', '.', '/' rules of fb_wire_valid_id) and is only
 * ever a key looked up in the store. Every answer is built in memory and handed over whole
 * (MHD_RESPMEM_MUST_FREE), so a client that reads slowly holds a buffer, not the store. */
#include "http_serve.h"
#include "fileload.h"
#include "log.h"
#include "report.h"
#include "util.h"
#include "wire.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* ---- Addresses and tokens (no libmicrohttpd needed) --------------------------------------- */

/* Parses HOST:PORT, [V6]:PORT, *:PORT or localhost:PORT into sa. No name is resolved: an address
 * to listen on is a literal. */
static int s_parse_addr(const char *addr, struct sockaddr_storage *sa, socklen_t *len, char *err,
                        size_t errlen)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    unsigned long port;
    char *end;
    if (!colon || colon == addr || !colon[1] || (port = strtoul(colon + 1, &end, 10)) > 65535 ||
        *end || (size_t)(colon - addr) >= sizeof host) {
        snprintf(err, errlen,
                 "--http: '%s' is not HOST:PORT (127.0.0.1:9108, [::1]:9108, "
                 "*:9108)",
                 addr);
        return -EINVAL;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
    size_t hl = strlen(host);
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &v6->sin6_addr) != 1)
            goto bad_host;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return 0;
    }
    if (!strcmp(host, "*"))
        snprintf(host, sizeof host, "0.0.0.0");
    else if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
        goto bad_host;
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *len = sizeof *v4;
    return 0;
bad_host:
    snprintf(err, errlen, "--http: '%s' is not an IPv4 address, [IPv6 address], localhost or *",
             host);
    return -EINVAL;
}

static bool s_sa_loopback(const struct sockaddr_storage *sa)
{
    if (sa->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->ss_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &in6addr_loopback,
                       sizeof in6addr_loopback);
    return false;
}

bool http_addr_is_loopback(const char *addr)
{
    struct sockaddr_storage sa;
    socklen_t len;
    char err[256];
    return s_parse_addr(addr, &sa, &len, err, sizeof err) == 0 && s_sa_loopback(&sa);
}

int http_token_load(const char *path, char **token_out, char *err, size_t errlen)
{
    char *text = NULL, *why = NULL;
    struct stat st;
    *token_out = NULL;
    int rc = fb_load_file_stat(path, HTTP_TOKEN_FILE_MAX, &text, NULL, &st, &why);
    if (rc) {
        snprintf(err, errlen, "--http-token-file: %s", why ? why : strerror(-rc));
        free(why);
        return rc;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(err, errlen,
                 "--http-token-file: %s: group or others may read it (mode %03o); "
                 "chmod 600 it",
                 path, (unsigned)(st.st_mode & 0777));
        free(text);
        return -EPERM;
    }
    char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strcspn(p, "\r\n");
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)p[i])) {
            snprintf(err, errlen,
                     "--http-token-file: %s: the token holds a character that is not "
                     "printable ASCII",
                     path);
            free(text);
            return -EINVAL;
        }
    if (n < HTTP_TOKEN_MIN) {
        snprintf(err, errlen,
                 "--http-token-file: %s: the token has %zu characters, at least %d "
                 "expected (e.g. openssl rand -hex 32)",
                 path, n, HTTP_TOKEN_MIN);
        free(text);
        return -EINVAL;
    }
    *token_out = xstrndup(p, n);
    memset(text, 0, strlen(text));
    free(text);
    return 0;
}

#ifndef FB_HAVE_MHD

bool http_serve_supported(void)
{
    return false;
}

http_serve_t *http_serve_start(const http_serve_options_t *opts, char *err, size_t errlen)
{
    (void)opts;
    snprintf(err, errlen, "%s", HTTP_UNSUPPORTED);
    return NULL;
}

const char *http_serve_address(const http_serve_t *self)
{
    (void)self;
    return "";
}

void http_serve_publish(http_serve_t *self, const coord_health_t *health)
{
    (void)self;
    (void)health;
}

void http_serve_stop(http_serve_t **self_p)
{
    if (self_p)
        *self_p = NULL;
}

#else

#include <microhttpd.h>
#include <pthread.h>

/* Per-connection memory libmicrohttpd may use (request line and headers included). */
#define S_CONNECTION_MEMORY (32 * 1024)
/* Campaigns the index lists. */
#define S_INDEX_MAX 50

struct http_serve {
    struct MHD_Daemon *daemon;
    char *db_path;
    char *token;
    size_t token_len;
    char address[80];
    store_t *store; /* opened by the listener's thread on first use, used only there */
    pthread_mutex_t lock;
    bool have_health;
    coord_health_t health;
    uint64_t health_ms; /* monotonic ms of the last publish */
};

bool http_serve_supported(void)
{
    return true;
}

/* Equal in time that depends only on the expected token's length. */
static bool s_token_equal(const char *given, const char *want, size_t want_len)
{
    size_t given_len = strlen(given);
    unsigned char diff = given_len != want_len;
    for (size_t i = 0; i < want_len; i++)
        diff |= (unsigned char)(want[i] ^ (i < given_len ? given[i] : 0));
    return diff == 0;
}

static bool s_authorized(const http_serve_t *self, struct MHD_Connection *conn)
{
    if (!self->token)
        return true;
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7))
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    return s_token_equal(h, self->token, self->token_len);
}

static enum MHD_Result s_answer(struct MHD_Connection *conn, unsigned status, const char *type,
                                char *body, size_t len, bool html)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (html)
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                                "frame-ancestors 'none'");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"fleetburn\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result s_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    return s_answer(conn, status, "text/plain; charset=utf-8", xasprintf("%s\n", text),
                    strlen(text) + 1, false);
}

/* The listener's own connection to the store, opened on first use. */
static store_t *s_store(http_serve_t *self, char *err, size_t errlen)
{
    if (self->store)
        return self->store;
    char *why = NULL;
    if (store_open_existing(self->db_path, &self->store, &why)) {
        snprintf(err, errlen, "cannot open %s: %s", self->db_path, why ? why : "unknown error");
        free(why);
        return NULL;
    }
    return self->store;
}

static enum MHD_Result s_metrics(http_serve_t *self, struct MHD_Connection *conn)
{
    char err[512];
    store_t *store = s_store(self, err, sizeof err);
    coord_health_t health;
    bool have;
    uint64_t age;
    pthread_mutex_lock(&self->lock);
    have = self->have_health;
    health = self->health;
    age = fb_mono_ms() - self->health_ms;
    pthread_mutex_unlock(&self->lock);
    size_t len = 0;
    char *body = store
                     ? http_metrics_render(store, have ? &health : NULL, age, &len, err, sizeof err)
                     : NULL;
    if (!body) {
        log_warn("http: /metrics: %s", err);
        return s_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, err);
    }
    return s_answer(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len,
                    false);
}

/* Runs write(store, arg, f) into memory and answers with it as HTML. */
static enum MHD_Result s_html(http_serve_t *self, struct MHD_Connection *conn,
                              int (*write)(store_t *, const char *, FILE *), const char *arg)
{
    char err[512], *buf = NULL;
    size_t len = 0;
    store_t *store = s_store(self, err, sizeof err);
    if (!store)
        return s_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, err);
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return s_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    int rc = write(store, arg, f);
    fclose(f);
    if (rc == -ENOENT) {
        free(buf);
        return s_text(conn, MHD_HTTP_NOT_FOUND, "no such campaign");
    }
    if (rc) {
        log_warn("http: cannot render %s: %s", arg ? arg : "/", store_errmsg(store));
        free(buf);
        return s_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "the store cannot be read now");
    }
    return s_answer(conn, MHD_HTTP_OK, "text/html; charset=utf-8", buf, len, true);
}

static int s_write_report(store_t *store, const char *id, FILE *f)
{
    report_html_options_t opts = {.live = true};
    return report_write_html(store, id, &opts, f);
}

static int s_write_index(store_t *store, const char *unused, FILE *f)
{
    (void)unused;
    return report_write_html_campaigns(store, S_INDEX_MAX, f);
}

static enum MHD_Result s_route(http_serve_t *self, struct MHD_Connection *conn, const char *url)
{
    static const char campaigns[] = "/campaigns/";
    if (!strcmp(url, "/metrics"))
        return s_metrics(self, conn);
    if (!strcmp(url, "/"))
        return s_html(self, conn, s_write_index, NULL);
    if (!strncmp(url, campaigns, sizeof campaigns - 1)) {
        const char *id = url + sizeof campaigns - 1;
        if (!fb_wire_valid_id(id))
            return s_text(conn, MHD_HTTP_NOT_FOUND, "no such campaign");
        return s_html(self, conn, s_write_report, id);
    }
    return s_text(conn, MHD_HTTP_NOT_FOUND, "not found: try /metrics or /");
}

static enum MHD_Result s_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
    (void)version;
    (void)upload_data;
    (void)con_cls;
    http_serve_t *self = cls;
    if (*upload_data_size) /* a body nobody asked for: answered already, dropped */
        return MHD_NO;
    if (!s_authorized(self, conn))
        return s_text(conn, MHD_HTTP_UNAUTHORIZED, "a bearer token is required");
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return s_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD");
    return s_route(self, conn, url);
}

static void s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_warn("http: %s", line);
}

static void s_bound_address(http_serve_t *self)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[INET6_ADDRSTRLEN] = "?";
    if (!info || getsockname(info->listen_fd, (struct sockaddr *)&sa, &len))
        return;
    if (sa.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof host);
        snprintf(self->address, sizeof self->address, "[%s]:%u", host,
                 ntohs(((struct sockaddr_in6 *)&sa)->sin6_port));
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
        snprintf(self->address, sizeof self->address, "%s:%u", host,
                 ntohs(((struct sockaddr_in *)&sa)->sin_port));
    }
}

http_serve_t *http_serve_start(const http_serve_options_t *opts, char *err, size_t errlen)
{
    struct sockaddr_storage sa;
    socklen_t len;
    if (s_parse_addr(opts->addr, &sa, &len, err, errlen))
        return NULL;
    if (!s_sa_loopback(&sa) && !opts->token) {
        snprintf(err, errlen,
                 "--http %s is reachable from other hosts: give a bearer token with "
                 "--http-token-file FILE (docs/security.md \"HTTP listener\"), or "
                 "bind 127.0.0.1",
                 opts->addr);
        return NULL;
    }
    http_serve_t *self = xcalloc(1, sizeof *self);
    self->db_path = xstrdup(opts->db_path);
    if (opts->token) {
        self->token = xstrdup(opts->token);
        self->token_len = strlen(opts->token);
    }
    pthread_mutex_init(&self->lock, NULL);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                     (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    self->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, s_on_request, self, MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)HTTP_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)HTTP_MAX_PER_ADDRESS, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)HTTP_CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)S_CONNECTION_MEMORY, MHD_OPTION_END);
    if (!self->daemon) {
        snprintf(err, errlen, "--http: cannot listen on %s (address in use, or not this host's)",
                 opts->addr);
        http_serve_stop(&self);
        return NULL;
    }
    s_bound_address(self);
    return self;
}

const char *http_serve_address(const http_serve_t *self)
{
    return self->address;
}

void http_serve_publish(http_serve_t *self, const coord_health_t *health)
{
    pthread_mutex_lock(&self->lock);
    self->health = *health;
    self->have_health = true;
    self->health_ms = fb_mono_ms();
    pthread_mutex_unlock(&self->lock);
}

void http_serve_stop(http_serve_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    http_serve_t *self = *self_p;
    if (self->daemon)
        MHD_stop_daemon(self->daemon); /* joins the thread: the store is ours again */
    store_destroy(&self->store);
    pthread_mutex_destroy(&self->lock);
    if (self->token) {
        memset(self->token, 0, self->token_len);
        free(self->token);
    }
    free(self->db_path);
    free(self);
    *self_p = NULL;
}

#endif
