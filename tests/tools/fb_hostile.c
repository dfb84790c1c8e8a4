/* SPDX-License-Identifier: Apache-2.0 */
/* fb_hostile: a hostile peer of fleetburn's control plane, for tests. It speaks raw TCP and
 * ZMTP 3.0 (the ZeroMQ wire protocol) the way an attacker would, without libzmq, so nothing on
 * this side is limited:
 *
 *   bigframe   completes a NULL handshake, announces one frame of --frame-size bytes (2 GiB)
 *              and sends up to --send bytes of it (--rate bytes/s; default as fast as it goes)
 *   idle       opens --count connections and holds them, sending nothing (--reconnect reopens
 *              the ones the server ends)
 *   garbage    sends --send random bytes on each of --count connections
 *   hello      completes the handshake and registers --count agent names PREFIX-N (Hello
 *              messages) on one connection, then holds it
 *   multipart  completes the handshake and sends --count frames of --frame-size bytes, each with
 *              the MORE flag, so the message never ends
 *
 * The handshake modes wait for the server's greeting and READY before they send a message, as
 * a ZeroMQ client does. Every mode holds what it opened for --hold seconds (or until every
 * connection is gone) and prints one summary line of key=value pairs: connections opened, ended by
 * the peer, still open, bytes sent. Test equipment only: it is built with the tests and installed
 * nowhere. */
#include "common/util.h"
#include "common/rng.h"
#include "common/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
    int fd;
    uint64_t sent;      /* payload bytes sent (after any handshake) */
    uint64_t opened_ms; /* when it connected */
    uint64_t ended_ms;  /* when the peer ended it; 0 while open */
    uint8_t *out;       /* bytes queued to send */
    size_t out_len, out_pos;
} conn_t;

typedef struct {
    const char *mode;
    struct sockaddr_in target, source;
    bool has_source;
    unsigned count;
    uint64_t frame_size, send, rate;
    double hold_s;
    double settle_s; /* after --hold: reopen nothing, let the server end what it will */
    bool reconnect;
    const char *prefix;
} opts_t;

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;

static uint64_t s_next(void)
{
    return fb_splitmix64(&s_rng);
}

static void s_usage(void)
{
    fprintf(stderr,
            "usage: fb_hostile MODE --connect HOST:PORT [options]\n"
            "modes: bigframe idle garbage hello multipart\n"
            "  --count N        connections (idle, garbage), names (hello) or frames (multipart)\n"
            "  --source ADDR    local address to connect from (e.g. 127.0.0.2)\n"
            "  --frame-size B   announced frame size (bigframe: 2147483648; multipart: 1048576)\n"
            "  --send B         payload bytes to send (bigframe: 67108864; garbage: 65536)\n"
            "  --rate B         bytes per second per connection (default: unlimited)\n"
            "  --hold S         seconds to hold the connections (default 5)\n"
            "  --reconnect      idle: reopen connections the server ends\n"
            "  --settle S       then S seconds more without reopening, so that connections still\n"
            "                   in the server's listen queue are accepted and judged (default 0)\n"
            "  --prefix P       hello: name prefix (default fake)\n");
}

static int s_parse_addr(const char *text, struct sockaddr_in *out, bool with_port)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    if (!strncmp(text, "tcp://", 6))
        text += 6;
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    if (with_port) {
        if (!colon || (size_t)(colon - text) >= sizeof host)
            return -1;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        out->sin_port = htons((uint16_t)atoi(colon + 1));
    } else {
        fb_strlcpy(host, text, sizeof host);
    }
    return inet_pton(AF_INET, host, &out->sin_addr) == 1 ? 0 : -1;
}

/* Connects (non-blocking socket, up to 5 s); -1 when it cannot. */
static int s_connect(const opts_t *o)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (o->has_source && bind(fd, (const struct sockaddr *)&o->source, sizeof o->source) != 0) {
        close(fd);
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)&o->target, sizeof o->target) != 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    struct pollfd p = {fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (poll(&p, 1, 5000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
        close(fd);
        return -1;
    }
    return fd;
}

static void s_queue(conn_t *c, const void *data, size_t len)
{
    c->out = xrealloc(c->out, c->out_len + len);
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
}

/* The ZMTP 3.0 greeting of a NULL-mechanism client, and its READY command (a DEALER). */
static void s_queue_handshake(conn_t *c)
{
    uint8_t greeting[64] = {0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 3, 0, 'N', 'U', 'L', 'L'};
    s_queue(c, greeting, sizeof greeting);
    static const uint8_t ready[] = {0x04, 28,  5,   'R', 'E', 'A', 'D', 'Y', 11,  'S',
                                    'o',  'c', 'k', 'e', 't', '-', 'T', 'y', 'p', 'e',
                                    0,    0,   0,   6,   'D', 'E', 'A', 'L', 'E', 'R'};
    s_queue(c, ready, sizeof ready);
}

/* A frame header: short or long, with the MORE flag when more. */
static void s_queue_frame_header(conn_t *c, uint64_t size, bool more)
{
    uint8_t h[9];
    if (size < 256) {
        h[0] = more ? 1 : 0;
        h[1] = (uint8_t)size;
        s_queue(c, h, 2);
        return;
    }
    h[0] = (uint8_t)(0x02 | (more ? 1 : 0));
    for (int i = 0; i < 8; i++)
        h[1 + i] = (uint8_t)(size >> (56 - 8 * i));
    s_queue(c, h, 9);
}

static void s_queue_hello(conn_t *c, const char *name)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    Fleetburn__Inventory inv = FLEETBURN__INVENTORY__INIT;
    inv.hostname = (char *)name;
    hello.name = (char *)name;
    hello.inventory = &inv;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(&env, &len);
    s_queue_frame_header(c, len, false);
    s_queue(c, buf, len);
    free(buf);
}

static void s_end(conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->ended_ms = fb_mono_ms();
}

/* Sends what is queued, without blocking; -1 when the peer ended the connection. */
static int s_flush(conn_t *c)
{
    while (c->out_pos < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_pos, c->out_len - c->out_pos, MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        c->out_pos += (size_t)n;
    }
    c->out_pos = c->out_len = 0;
    return 0;
}

/* Reads and discards what the peer sent; -1 when it ended the connection. */
static int s_drain(conn_t *c)
{
    uint8_t buf[4096];
    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n > 0)
            continue;
        if (n == 0)
            return -1;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

/* Completes the handshake as a client would: sends what is queued (greeting and READY), then
 * reads the server's greeting and its first command (READY) before anything else goes out
 * (libzmq 4.3 ends a connection whose first message arrives in one read with the handshake).
 * -1 when the server ends the connection or does not answer within 5 s. */
static int s_handshake(conn_t *c)
{
    uint8_t in[512];
    size_t got = 0, need = 64 + 2;
    uint64_t until = fb_mono_ms() + 5000;
    while (fb_mono_ms() < until) {
        if (s_flush(c) < 0)
            return -1;
        struct pollfd p = {c->fd, (short)(POLLIN | (c->out_len ? POLLOUT : 0)), 0};
        poll(&p, 1, 50);
        ssize_t n = recv(c->fd, in + got, sizeof in - got, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return -1;
        if (n > 0)
            got += (size_t)n;
        if (got >= 64 + 2 && need == 64 + 2)
            need = 64 + 2 + in[65]; /* a short command frame: flags, size, body */
        if (got >= need && c->out_len == 0)
            return 0;
        if (got == sizeof in)
            return -1;
    }
    return -1;
}

static void s_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"connect", required_argument, 0, 'c'}, {"count", required_argument, 0, 'n'},
        {"source", required_argument, 0, 's'},  {"frame-size", required_argument, 0, 'f'},
        {"send", required_argument, 0, 'b'},    {"rate", required_argument, 0, 'r'},
        {"hold", required_argument, 0, 'h'},    {"reconnect", no_argument, 0, 'R'},
        {"prefix", required_argument, 0, 'p'},  {"settle", required_argument, 0, 'S'},
        {0, 0, 0, 0}};
    if (argc < 2) {
        s_usage();
        return 2;
    }
    opts_t o = {0};
    o.mode = argv[1];
    o.count = 1;
    o.hold_s = 5;
    o.prefix = "fake";
    bool bigframe = !strcmp(o.mode, "bigframe"), idle = !strcmp(o.mode, "idle"),
         garbage = !strcmp(o.mode, "garbage"), hello = !strcmp(o.mode, "hello"),
         multipart = !strcmp(o.mode, "multipart");
    if (!bigframe && !idle && !garbage && !hello && !multipart) {
        s_usage();
        return 2;
    }
    o.frame_size = bigframe ? (2ull << 30) : (1u << 20);
    o.send = bigframe ? (64u << 20) : garbage ? 65536 : 0;
    bool have_target = false;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (s_parse_addr(optarg, &o.target, true)) {
                fprintf(stderr, "fb_hostile: --connect: expected IPv4:PORT, got '%s'\n", optarg);
                return 2;
            }
            have_target = true;
            break;
        case 's':
            if (s_parse_addr(optarg, &o.source, false)) {
                fprintf(stderr, "fb_hostile: --source: expected an IPv4 address\n");
                return 2;
            }
            o.has_source = true;
            break;
        case 'n':
            o.count = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'f':
            o.frame_size = strtoull(optarg, NULL, 10);
            break;
        case 'b':
            o.send = strtoull(optarg, NULL, 10);
            break;
        case 'r':
            o.rate = strtoull(optarg, NULL, 10);
            break;
        case 'h':
            o.hold_s = strtod(optarg, NULL);
            break;
        case 'S':
            o.settle_s = strtod(optarg, NULL);
            break;
        case 'R':
            o.reconnect = true;
            break;
        case 'p':
            o.prefix = optarg;
            break;
        default:
            s_usage();
            return 2;
        }
    }
    if (!have_target || o.count == 0) {
        s_usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    s_raise_fd_limit();
    /* One connection carries the hello and multipart modes; the others open count of them. */
    unsigned n_conns = hello || multipart ? 1 : o.count;
    conn_t *conns = xcalloc(n_conns, sizeof *conns);
    struct pollfd *pfds = xcalloc(n_conns, sizeof *pfds);
    uint64_t opened = 0, failed = 0, ended = 0, t0 = fb_mono_ms();
    uint8_t chunk[65536];
    for (unsigned i = 0; i < n_conns; i++) {
        conn_t *k = &conns[i];
        k->fd = s_connect(&o);
        if (k->fd < 0) {
            failed++;
            k->ended_ms = fb_mono_ms();
            continue;
        }
        opened++;
        k->opened_ms = fb_mono_ms();
        if (bigframe || hello || multipart) {
            s_queue_handshake(k);
            if (s_handshake(k) != 0) {
                s_end(k);
                ended++;
                continue;
            }
        }
        if (bigframe) {
            s_queue_frame_header(k, o.frame_size, false);
        } else if (hello) {
            for (unsigned j = 0; j < o.count; j++) {
                char name[96];
                snprintf(name, sizeof name, "%s-%u", o.prefix, j);
                s_queue_hello(k, name);
            }
        }
    }
    /* Scripts wait for this line before they measure. */
    fprintf(stderr, "fb_hostile: %llu connections made\n", (unsigned long long)opened);
    fflush(stderr);
    uint64_t hold_until = fb_mono_ms() + (uint64_t)(o.hold_s * 1000);
    uint64_t settle_until = hold_until + (uint64_t)(o.settle_s * 1000);
    unsigned frames_sent = 0;
    for (;;) {
        uint64_t now = fb_mono_ms();
        unsigned open = 0;
        for (unsigned i = 0; i < n_conns; i++) {
            conn_t *k = &conns[i];
            if (k->fd < 0 && o.reconnect && idle && now < hold_until) {
                k->fd = s_connect(&o);
                if (k->fd >= 0) {
                    opened++;
                    k->opened_ms = now;
                    k->ended_ms = 0;
                }
            }
            if (k->fd < 0)
                continue;
            /* Payload: what the rate allows so far, up to --send. */
            if ((bigframe || garbage) && k->out_len == 0 && k->sent < o.send) {
                uint64_t allowed = o.rate ? (now - k->opened_ms) * o.rate / 1000 + 1 : o.send;
                if (allowed > o.send)
                    allowed = o.send;
                if (allowed > k->sent) {
                    size_t n = allowed - k->sent < sizeof chunk ? allowed - k->sent : sizeof chunk;
                    if (bigframe)
                        memset(chunk, 'x', n);
                    else
                        for (size_t j = 0; j < n; j += 8) {
                            uint64_t r = s_next();
                            memcpy(chunk + j, &r, n - j < 8 ? n - j : 8);
                        }
                    s_queue(k, chunk, n);
                    k->sent += n;
                }
            }
            if (multipart && k->out_len == 0 && frames_sent < o.count) {
                s_queue_frame_header(k, o.frame_size, true);
                for (uint64_t left = o.frame_size; left > 0;) {
                    size_t n = left < sizeof chunk ? left : sizeof chunk;
                    memset(chunk, 'm', n);
                    s_queue(k, chunk, n);
                    left -= n;
                }
                k->sent += o.frame_size;
                frames_sent++;
            }
            if (s_flush(k) < 0 || s_drain(k) < 0) {
                s_end(k);
                ended++;
                continue;
            }
            open++;
        }
        if ((open == 0 && !(o.reconnect && idle && now < hold_until)) || now >= settle_until)
            break;
        /* Wait for the peer (or for the rate to allow more). */
        unsigned n = 0;
        for (unsigned i = 0; i < n_conns; i++)
            if (conns[i].fd >= 0) {
                pfds[n].fd = conns[i].fd;
                bool more = conns[i].out_len ||
                            ((bigframe || garbage) && !o.rate && conns[i].sent < o.send) ||
                            (multipart && frames_sent < o.count);
                pfds[n].events = (short)(POLLIN | (more ? POLLOUT : 0));
                pfds[n].revents = 0;
                n++;
            }
        poll(pfds, n, o.rate || o.reconnect ? 10 : 100);
    }
    unsigned still_open = 0;
    uint64_t sent = 0, last_end_ms = 0;
    for (unsigned i = 0; i < n_conns; i++) {
        conn_t *k = &conns[i];
        sent += k->sent;
        if (k->fd >= 0) {
            still_open++;
            close(k->fd);
        } else if (k->opened_ms) {
            uint64_t after = k->ended_ms - k->opened_ms;
            if (after > last_end_ms)
                last_end_ms = after;
        }
        free(k->out);
    }
    printf("mode=%s opened=%llu failed=%llu ended_by_peer=%llu open_at_end=%u sent=%llu "
           "frames=%u ended_after_ms_max=%llu elapsed_ms=%llu\n",
           o.mode, (unsigned long long)opened, (unsigned long long)failed,
           (unsigned long long)ended, still_open, (unsigned long long)sent, frames_sent,
           (unsigned long long)last_end_ms, (unsigned long long)(fb_mono_ms() - t0));
    fflush(stdout);
    free(conns);
    free(pfds);
    return 0;
}
