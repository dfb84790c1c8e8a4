/* SPDX-License-Identifier: Apache-2.0 */
/* What N ZeroMQ connections cost with nothing of fleetburn in the way: the floor under the
 * coordinator's registration time and memory (docs/simfleet.md, "16384 agents").
 *
 *   fleetburn-bench-zmqfloor server ENDPOINT [--curve] [--hwm N] [--sockbuf BYTES] [--io-threads N]
 *   fleetburn-bench-zmqfloor clients ENDPOINT N [--curve SERVER_PUBLIC_Z85] [--seconds S]
 *   fleetburn-bench-zmqfloor options     (which buffer settings this libzmq accepts)
 *
 * The server is a ROUTER (with --curve: a CURVE server whose ZAP handler, on the same thread,
 * accepts every key, as the coordinator's does after its lookup) that answers every message with
 * one of the same size; it prints its public key and runs until SIGTERM. The clients process
 * opens N DEALER connections at once (one I/O thread per 4096), sends a 64-byte "hello" on each
 * and prints how long it took until every one was answered; then each sends a 16-byte heartbeat
 * a second for S seconds (default 0), as an agent does, and exits. The server's CPU time and
 * resident memory are read from /proc by bench/zmq_floor.sh. Both sides take CURVE's secure
 * memory from fleetburn's allocator (common/securemem.h), as the coordinator and
 * fleetburn-simfleet do; FLEETBURN_SECUREMEM=libsodium measures libsodium's own. */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "common/securemem.h"

static volatile sig_atomic_t s_stop;

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int s_die(const char *what)
{
    fprintf(stderr, "fleetburn-bench-zmqfloor: %s: %s\n", what, zmq_strerror(errno));
    return 3;
}

/* ZAP (RFC 27): version, request id, domain, address, identity, mechanism, credentials; the
 * answer: version, request id, "200", "OK", user id, metadata. */
static void s_answer_zap(void *zap)
{
    zmq_msg_t parts[8];
    int n = 0, more = 1;
    while (more && n < 8) {
        zmq_msg_init(&parts[n]);
        if (zmq_msg_recv(&parts[n], zap, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&parts[n]);
            break;
        }
        more = zmq_msg_more(&parts[n]);
        n++;
    }
    if (n >= 2) {
        zmq_send(zap, "1.0", 3, ZMQ_SNDMORE);
        zmq_send(zap, zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), ZMQ_SNDMORE);
        zmq_send(zap, "200", 3, ZMQ_SNDMORE);
        zmq_send(zap, "OK", 2, ZMQ_SNDMORE);
        zmq_send(zap, "peer", 4, ZMQ_SNDMORE);
        zmq_send(zap, "", 0, 0);
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&parts[i]);
}

static void s_echo(void *router)
{
    for (;;) {
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        if (zmq_msg_recv(&id, router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&id);
            return;
        }
        zmq_msg_init(&body);
        zmq_msg_recv(&body, router, ZMQ_DONTWAIT);
        zmq_msg_send(&id, router, ZMQ_SNDMORE);
        zmq_msg_send(&body, router, 0);
    }
}

/* Per-socket settings of libzmq 4.3.4 that might bound a connection's memory (0: libzmq's
 * default): the high-water marks bound how many messages a pipe holds, the kernel buffers what
 * TCP keeps (not in the process's resident memory). */
typedef struct {
    int hwm, sockbuf, io_threads;
} server_opts_t;

static int s_server(const char *endpoint, int curve, server_opts_t o)
{
    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 70000);
    if (o.io_threads > 0)
        zmq_ctx_set(ctx, ZMQ_IO_THREADS, o.io_threads);
    void *zap = NULL;
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0, hwm = o.hwm ? o.hwm : 10000, backlog = 8192; /* the coordinator's (coord.c) */
    if (o.sockbuf) {
        zmq_setsockopt(router, ZMQ_SNDBUF, &o.sockbuf, sizeof o.sockbuf);
        zmq_setsockopt(router, ZMQ_RCVBUF, &o.sockbuf, sizeof o.sockbuf);
    }
    zmq_setsockopt(router, ZMQ_BACKLOG, &backlog, sizeof backlog);
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(router, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(router, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (curve) {
        char pub[41], sec[41];
        if (zmq_curve_keypair(pub, sec) != 0)
            return s_die("zmq_curve_keypair");
        zap = zmq_socket(ctx, ZMQ_REP);
        if (zmq_bind(zap, "inproc://zeromq.zap.01") != 0)
            return s_die("ZAP bind");
        int one = 1;
        zmq_setsockopt(router, ZMQ_CURVE_SERVER, &one, sizeof one);
        zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY, sec, 41);
        printf("%s\n", pub);
    } else {
        printf("plain\n");
    }
    fflush(stdout);
    if (zmq_bind(router, endpoint) != 0)
        return s_die(endpoint);
    zmq_pollitem_t items[2] = {{router, 0, ZMQ_POLLIN, 0}, {zap, 0, ZMQ_POLLIN, 0}};
    while (!s_stop) {
        if (zmq_poll(items, zap ? 2 : 1, 200) < 0 && errno != EINTR)
            return s_die("zmq_poll");
        if (items[0].revents & ZMQ_POLLIN)
            s_echo(router);
        if (zap && (items[1].revents & ZMQ_POLLIN))
            s_answer_zap(zap);
    }
    zmq_close(router);
    if (zap)
        zmq_close(zap);
    zmq_ctx_term(ctx);
    return 0;
}

/* Reads every answer waiting on sock; returns how many. ZMQ_FD is edge-triggered (it signals
 * only a change of ZMQ_EVENTS), so a socket is drained until ZMQ_EVENTS shows no input, as
 * fleetburn's sockets are (common/zsock.c). */
static int s_drain(void *sock)
{
    int got = 0;
    char buf[256];
    for (;;) {
        uint32_t events = 0;
        size_t size = sizeof events;
        if (zmq_getsockopt(sock, ZMQ_EVENTS, &events, &size) != 0 || !(events & ZMQ_POLLIN))
            return got;
        while (zmq_recv(sock, buf, sizeof buf, ZMQ_DONTWAIT) >= 0)
            got++;
    }
}

/* Waits up to timeout_ms for sockets to signal; drains each that did (answered[i] set and done
 * counted on its first answer). */
static void s_wait(int ep, void **socks, char *answered, int *done, int timeout_ms)
{
    struct epoll_event ev[256];
    int k = epoll_wait(ep, ev, 256, timeout_ms);
    for (int j = 0; j < k; j++) {
        int i = (int)ev[j].data.u32;
        if (s_drain(socks[i]) && !answered[i]) {
            answered[i] = 1;
            (*done)++;
        }
    }
}

static int s_clients(const char *endpoint, int n, const char *server_key, double seconds)
{
    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, n + 64);
    zmq_ctx_set(ctx, ZMQ_IO_THREADS, (n + 4095) / 4096);
    char pub[41], sec[41];
    if (server_key && zmq_curve_keypair(pub, sec) != 0)
        return s_die("zmq_curve_keypair");
    void **socks = calloc((size_t)n, sizeof *socks);
    char *answered = calloc((size_t)n, 1);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (!socks || !answered || ep < 0)
        return 3;
    char hello[64] = "hello", heartbeat[16] = "heartbeat";
    double t0 = s_now();
    for (int i = 0; i < n; i++) {
        socks[i] = zmq_socket(ctx, ZMQ_DEALER);
        if (!socks[i])
            return s_die("zmq_socket");
        int zero = 0, fd = -1;
        size_t fdlen = sizeof fd;
        zmq_setsockopt(socks[i], ZMQ_LINGER, &zero, sizeof zero);
        if (server_key) {
            zmq_setsockopt(socks[i], ZMQ_CURVE_SERVERKEY, server_key, 41);
            zmq_setsockopt(socks[i], ZMQ_CURVE_PUBLICKEY, pub, 41);
            zmq_setsockopt(socks[i], ZMQ_CURVE_SECRETKEY, sec, 41);
        }
        if (zmq_connect(socks[i], endpoint) != 0)
            return s_die(endpoint);
        zmq_getsockopt(socks[i], ZMQ_FD, &fd, &fdlen);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        zmq_send(socks[i], hello, sizeof hello, ZMQ_DONTWAIT);
    }
    int done = 0;
    double sweep = s_now() + 0.5;
    while (done < n && !s_stop) {
        s_wait(ep, socks, answered, &done, 100);
        if (s_now() >= sweep) { /* a send can take a socket's edge: look at the others too */
            for (int i = 0; i < n; i++)
                if (!answered[i] && s_drain(socks[i])) {
                    answered[i] = 1;
                    done++;
                }
            sweep = s_now() + 0.5;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("answered=%d\nall_answered_s=%.3f\ncpu_s=%.2f\n", done, s_now() - t0,
           (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    fflush(stdout);
    double next = s_now() + 1.0, end = s_now() + seconds;
    while (!s_stop && s_now() < end) {
        if (s_now() >= next) {
            for (int i = 0; i < n; i++) {
                zmq_send(socks[i], heartbeat, sizeof heartbeat, ZMQ_DONTWAIT);
                s_drain(socks[i]);
            }
            next += 1.0;
        }
        s_wait(ep, socks, answered, &done, 100);
    }
    for (int i = 0; i < n; i++)
        zmq_close(socks[i]);
    zmq_ctx_term(ctx);
    close(ep);
    free(socks);
    free(answered);
    return 0;
}

/* Which per-socket settings this libzmq accepts among those that could bound a connection's
 * buffers: the batch sizes (decoder and encoder buffers) are draft options, present only in a
 * libzmq built with the draft API. */
static int s_options(void)
{
    static const struct {
        int id;
        const char *name;
    } opts[] = {{101, "ZMQ_IN_BATCH_SIZE"},  {102, "ZMQ_OUT_BATCH_SIZE"}, {ZMQ_SNDHWM, "ZMQ_SNDHWM"},
                {ZMQ_RCVHWM, "ZMQ_RCVHWM"}, {ZMQ_SNDBUF, "ZMQ_SNDBUF"},       {ZMQ_RCVBUF, "ZMQ_RCVBUF"}};
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    int major, minor, patch, value = 1024;
    zmq_version(&major, &minor, &patch);
    printf("libzmq %d.%d.%d, draft API %s\n", major, minor, patch,
           zmq_has("draft") ? "present" : "absent");
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        int rc = zmq_setsockopt(router, opts[i].id, &value, sizeof value);
        printf("%s (%d) = 1024: %s\n", opts[i].name, opts[i].id, rc ? zmq_strerror(errno) : "accepted");
    }
    zmq_close(router);
    zmq_ctx_term(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    signal(SIGTERM, s_on_signal);
    signal(SIGINT, s_on_signal);
    fb_securemem_use();
    if (argc == 2 && !strcmp(argv[1], "options"))
        return s_options();
    if (argc >= 3 && !strcmp(argv[1], "server")) {
        server_opts_t o = {0, 0, 0};
        int curve = 0;
        for (int i = 3; i < argc; i++) {
            if (!strcmp(argv[i], "--curve"))
                curve = 1;
            else if (!strcmp(argv[i], "--hwm") && i + 1 < argc)
                o.hwm = atoi(argv[++i]);
            else if (!strcmp(argv[i], "--sockbuf") && i + 1 < argc)
                o.sockbuf = atoi(argv[++i]);
            else if (!strcmp(argv[i], "--io-threads") && i + 1 < argc)
                o.io_threads = atoi(argv[++i]);
        }
        return s_server(argv[2], curve, o);
    }
    if (argc >= 4 && !strcmp(argv[1], "clients")) {
        const char *key = NULL;
        double seconds = 0;
        for (int i = 4; i + 1 < argc; i += 2) {
            if (!strcmp(argv[i], "--curve"))
                key = argv[i + 1];
            else if (!strcmp(argv[i], "--seconds"))
                seconds = atof(argv[i + 1]);
        }
        int n = atoi(argv[3]);
        if (n < 1 || n > 65536 || (key && strlen(key) != 40)) {
            fprintf(stderr, "fleetburn-bench-zmqfloor: N from 1 to 65536, a 40-character key\n");
            return 2;
        }
        return s_clients(argv[2], n, key, seconds);
    }
    fprintf(stderr, "usage: fleetburn-bench-zmqfloor server ENDPOINT [--curve] [--hwm N] "
                    "[--sockbuf BYTES] [--io-threads N]\n"
                    "       fleetburn-bench-zmqfloor clients ENDPOINT N [--curve SERVER_PUBLIC] "
                    "[--seconds S]\n");
    return 2;
}
