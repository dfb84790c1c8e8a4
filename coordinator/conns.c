/* SPDX-License-Identifier: Apache-2.0 */
/* Connection limits of the coordinator's ROUTER socket, enforced from its monitor.
 *
 * libzmq accepts every TCP connection and keeps it until the peer goes; it has no limit on how
 * many. Here a socket monitor (an inproc PAIR read on the loop) reports each accepted connection
 * with its descriptor and each disconnect. A connection is judged once the monitor's queue is
 * empty, so that a later disconnect of the same descriptor is already known: still open, it is
 * admitted, or, over the total or the per-address limit, ended with shutdown(2). libzmq owns the
 * descriptor, so it is never closed here; after the shutdown libzmq's read sees the end, closes
 * the connection and reports the disconnect like any other. libzmq reports a disconnect before
 * it closes the descriptor (stream_engine_base_t::error, libzmq 4.3), so a descriptor this table
 * holds as open has not been reused yet; the short window between the last event read and the
 * shutdown is narrowed further by checking that the descriptor is still a connected socket on
 * the port the connection was accepted on. */
#include "conns.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "common/strmap.h"
#include "common/util.h"
#include "common/zsock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <zmq.h>

enum { C_FREE, C_PENDING, C_ADMITTED, C_REFUSED };

typedef struct {
    char *key; /* the peer's address, as text */
    size_t open;
} peer_addr_t;

typedef struct {
    uint8_t state;
    uint16_t local_port; /* the port it was accepted on; 0 for non-TCP */
    peer_addr_t *addr;   /* while admitted */
} conn_t;

struct conns {
    void *router;
    fb_zsock_t *monitor;
    conns_limits_t limits;
    conn_t *fds; /* indexed by descriptor */
    size_t n_fds;
    int *pending; /* accepted descriptors not judged yet */
    size_t n_pending, cap_pending;
    fb_strmap_t *addrs; /* address text -> peer_addr_t */
    size_t open;
    uint64_t n_accepted, n_refused; /* in all, for the line at the end */
    fb_ratelimit_t refused_log;     /* one line per CONNS_LOG_INTERVAL_MS */
};

int conns_fit_total(unsigned requested, uint64_t fd_limit, unsigned *total_out, char *warn,
                    size_t warnlen)
{
    uint64_t reserve = fd_limit / 2 < CONNS_FD_RESERVE ? fd_limit / 2 : CONNS_FD_RESERVE;
    uint64_t fits = fd_limit > reserve ? fd_limit - reserve : 0;
    if (fits < 1)
        fits = 1;
    if (fits > UINT32_MAX)
        fits = UINT32_MAX;
    if (requested && requested <= fits) {
        *total_out = requested;
        return 0;
    }
    if (requested) {
        *total_out = (unsigned)fits;
        snprintf(warn, warnlen,
                 "--max-connections %u does not fit the descriptor limit of %" PRIu64 " (%" PRIu64
                 " are kept for the database, logs and timers): at most %u "
                 "connections; raise the limit to %" PRIu64
                 " or more (ulimit -n, or LimitNOFILE= in a systemd unit)",
                 requested, fd_limit, reserve, *total_out, (uint64_t)requested + reserve);
        return 1;
    }
    *total_out = fits < CONNS_DEFAULT_MAX ? (unsigned)fits : CONNS_DEFAULT_MAX;
    if (*total_out >= CONNS_WARN_BELOW)
        return 0;
    snprintf(warn, warnlen,
             "the descriptor limit of %" PRIu64 " leaves room for %u connections (%" PRIu64
             " are kept for the database, logs and timers); for a larger fleet raise it to %" PRIu64
             " or more (ulimit -n, or LimitNOFILE= in a systemd unit)",
             fd_limit, *total_out, reserve, (uint64_t)CONNS_WARN_BELOW + CONNS_FD_RESERVE);
    return 1;
}

/* Raises the soft descriptor limit to the hard one; returns the limit now in force. */
static uint64_t s_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur != rl.rlim_max) {
        struct rlimit want = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl.rlim_cur = rl.rlim_max;
        else
            log_warn("cannot raise the descriptor limit from %llu to %llu: %s",
                     (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
                     strerror(errno));
    }
    return rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : (uint64_t)rl.rlim_cur;
}

/* The peer's address as text ("192.0.2.7", "2001:db8::1", "local" for a Unix socket); -1 when
 * fd is no longer a connected socket. *port: the local port (0 when not TCP). */
static int s_peer(int fd, char *out, size_t outlen, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    *port = ss.ss_family == AF_INET    ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
            : ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : 0;
    len = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, out, (socklen_t)outlen);
    } else if (ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)outlen);
        else
            inet_ntop(AF_INET6, a, out, (socklen_t)outlen);
    } else {
        snprintf(out, outlen, "local");
    }
    return 0;
}

static uint16_t s_endpoint_port(const char *text)
{
    size_t len = strlen(text);
    if (len < 6 || memcmp(text, "tcp://", 6))
        return 0;
    size_t i = len;
    while (i > 6 && text[i - 1] != ':')
        i--;
    if (i == 6 || i == len || len - i > 5)
        return 0;
    unsigned port = 0;
    for (; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return 0;
        port = port * 10 + (unsigned)(text[i] - '0');
    }
    return port <= 65535 ? (uint16_t)port : 0;
}

static void s_log_refused(conns_t *self, const char *addr, const char *why)
{
    uint64_t now = fb_mono_ms(), since = now - self->refused_log.last_ms, held = 0;
    self->n_refused++;
    if (!fb_ratelimit_ok(&self->refused_log, now, &held))
        return;
    if (held)
        log_warn("refused a connection from %s: %s (%" PRIu64 " more refused in the last %.0f s "
                 "were not logged)",
                 addr, why, held, (double)since / 1e3);
    else
        log_warn("refused a connection from %s: %s", addr, why);
}

static void s_release(conns_t *self, conn_t *c)
{
    if (c->state == C_ADMITTED) {
        self->open--;
        if (--c->addr->open == 0) {
            fb_strmap_remove(self->addrs, c->addr->key);
            free(c->addr->key);
            free(c->addr);
        }
    }
    c->state = C_FREE;
    c->addr = NULL;
}

static void s_judge(conns_t *self, int fd)
{
    conn_t *c = &self->fds[fd];
    if (c->state != C_PENDING)
        return; /* gone already, or a duplicate entry */
    char addr[INET6_ADDRSTRLEN + 8];
    uint16_t port = 0;
    if (s_peer(fd, addr, sizeof addr, &port) != 0 || (c->local_port && port != c->local_port)) {
        /* Ended in the meantime; its disconnect is on the way. */
        c->state = C_FREE;
        return;
    }
    peer_addr_t *pa = fb_strmap_get(self->addrs, addr);
    char why[160];
    why[0] = '\0';
    if (self->open >= self->limits.max_total)
        snprintf(why, sizeof why, "%zu connections are open (--max-connections %u)", self->open,
                 self->limits.max_total);
    else if (self->limits.max_per_address && pa && pa->open >= self->limits.max_per_address)
        snprintf(why, sizeof why,
                 "%zu connections from this address are open "
                 "(--max-connections-per-address %u)",
                 pa->open, self->limits.max_per_address);
    if (why[0]) {
        if (shutdown(fd, SHUT_RDWR) != 0)
            log_debug("shutdown of descriptor %d: %s", fd, strerror(errno));
        c->state = C_REFUSED;
        s_log_refused(self, addr, why);
        return;
    }
    if (!pa) {
        pa = xcalloc(1, sizeof *pa);
        pa->key = xstrdup(addr);
        fb_strmap_put(self->addrs, pa->key, pa);
    }
    pa->open++;
    self->open++;
    c->addr = pa;
    c->state = C_ADMITTED;
}

static void s_on_accepted(conns_t *self, int fd, const char *endpoint)
{
    if ((size_t)fd >= self->n_fds) {
        size_t n_fds = self->n_fds ? self->n_fds : 256;
        while (n_fds <= (size_t)fd)
            n_fds *= 2;
        self->fds = xrealloc(self->fds, n_fds * sizeof *self->fds);
        memset(self->fds + self->n_fds, 0, (n_fds - self->n_fds) * sizeof *self->fds);
        self->n_fds = n_fds;
    }
    conn_t *c = &self->fds[fd];
    if (c->state != C_FREE) /* a disconnect this table missed */
        s_release(self, c);
    c->state = C_PENDING;
    c->local_port = s_endpoint_port(endpoint);
    self->n_accepted++;
    if (self->n_pending == self->cap_pending) {
        self->cap_pending = self->cap_pending ? self->cap_pending * 2 : 64;
        self->pending = xrealloc(self->pending, self->cap_pending * sizeof(int));
    }
    self->pending[self->n_pending++] = fd;
}

static void s_on_event(unsigned event, uint32_t value, const char *endpoint, void *arg)
{
    conns_t *self = arg;
    if (value < (1u << 30)) {
        int fd = (int)value;
        if (event == ZMQ_EVENT_ACCEPTED)
            s_on_accepted(self, fd, endpoint);
        else if ((event == ZMQ_EVENT_DISCONNECTED || event == ZMQ_EVENT_CLOSED) &&
                 (size_t)fd < self->n_fds)
            s_release(self, &self->fds[fd]);
    }
    /* Judge only with the queue empty: a disconnect still queued would otherwise be missed. */
    uint32_t events = 0;
    size_t size = sizeof events;
    if (self->n_pending &&
        (zmq_getsockopt(fb_zsock_socket(self->monitor), ZMQ_EVENTS, &events, &size) != 0 ||
         !(events & ZMQ_POLLIN))) {
        for (size_t i = 0; i < self->n_pending; i++)
            s_judge(self, self->pending[i]);
        self->n_pending = 0;
    }
}

conns_t *conns_new(uv_loop_t *loop, void *zctx, void *router, const conns_limits_t *limits,
                   char *err, size_t errlen)
{
    conns_t *self = xcalloc(1, sizeof *self);
    self->router = router;
    self->limits = *limits;
    self->refused_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(CONNS_LOG_INTERVAL_MS);
    if (!self->limits.handshake_ms)
        self->limits.handshake_ms = CONNS_HANDSHAKE_MS;
    char warn[512];
    if (conns_fit_total(limits->max_total, s_raise_fd_limit(), &self->limits.max_total, warn,
                        sizeof warn))
        log_warn("%s", warn);
    int ivl = (int)self->limits.handshake_ms;
    zmq_setsockopt(router, ZMQ_HANDSHAKE_IVL, &ivl, sizeof ivl);
    self->addrs = fb_strmap_new();

    self->monitor = fb_zsock_monitor_new(
        loop, zctx, router, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED,
        s_on_event, self);
    if (!self->monitor) {
        snprintf(err, errlen, "cannot monitor the coordinator's socket: %s", zmq_strerror(errno));
        fb_strmap_destroy(&self->addrs);
        free(self);
        return NULL;
    }
    if (self->limits.max_per_address)
        log_info("connection limits: %u in all, %u per address, handshake within %.1f s",
                 self->limits.max_total, self->limits.max_per_address,
                 self->limits.handshake_ms / 1e3);
    else
        log_info("connection limits: %u in all, handshake within %.1f s", self->limits.max_total,
                 self->limits.handshake_ms / 1e3);
    return self;
}

void conns_destroy(conns_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    conns_t *self = *self_p;
    *self_p = NULL;
    log_info("connections: %" PRIu64 " accepted, %" PRIu64 " of them refused over a limit",
             self->n_accepted, self->n_refused);
    zmq_socket_monitor(self->router, NULL, 0); /* libzmq's end first: it never sends again */
    fb_zsock_close(&self->monitor);
    size_t pos = 0;
    void *value;
    while (fb_strmap_next(self->addrs, &pos, NULL, &value)) {
        free(((peer_addr_t *)value)->key);
        free(value);
    }
    fb_strmap_destroy(&self->addrs);
    free(self->fds);
    free(self->pending);
    free(self);
}

size_t conns_open(const conns_t *self)
{
    return self->open;
}

unsigned conns_max_total(const conns_t *self)
{
    return self->limits.max_total;
}

void conns_peer_fd_remember(conns_peer_fd_t *self, int fd)
{
    self->fd = fd;
    self->peer_len = sizeof self->peer;
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&self->peer, &self->peer_len) != 0)
        self->peer_len = 0;
}

bool conns_peer_fd_end(conns_peer_fd_t *self)
{
    bool same = false;
    if (self->fd >= 0 && self->peer_len) {
        struct sockaddr_storage now;
        socklen_t len = sizeof now;
        same = getpeername(self->fd, (struct sockaddr *)&now, &len) == 0 && len == self->peer_len &&
               !memcmp(&now, &self->peer, len);
    }
    if (same)
        shutdown(self->fd, SHUT_RDWR);
    self->fd = -1;
    self->peer_len = 0;
    return same;
}
