/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of coordinator/conns: how the total connection limit is fitted into the descriptor
 * limit (the default, an explicit limit that fits, one that is lowered with a warning naming the
 * number to raise the limit to, tiny limits), and the limits of a live ROUTER: a peer from an
 * address over its limit is ended, one under it is kept, and a disconnect frees its place. */
#include "conns.h"
#include "common/util.h"
#include "common/zsock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include <cmocka.h>

/* conns_fit_total(requested, limit) returns rc and sets total to want; warn keeps its warning. */
static void s_fit(unsigned requested, uint64_t limit, int rc, unsigned want, char *warn,
                  size_t warn_len)
{
    unsigned total = 0;
    assert_int_equal(conns_fit_total(requested, limit, &total, warn, warn_len), rc);
    assert_int_equal(total, want);
}

static void test_fit_default(void **state)
{
    (void)state;
    char warn[512] = "";
    /* A generous limit: the default cap, no warning. */
    s_fit(0, 1048576, 0, CONNS_DEFAULT_MAX, warn, sizeof warn);
    /* A middling one: what fits after the reserve. */
    s_fit(0, 4096, 0, 4096 - CONNS_FD_RESERVE, warn, sizeof warn);
    /* A small one: what fits, and a warning that says what to raise. */
    s_fit(0, 1024, 1, 1024 - CONNS_FD_RESERVE, warn, sizeof warn);
    assert_non_null(strstr(warn, "descriptor limit of 1024 leaves room for 896 connections"));
    assert_non_null(strstr(warn, "ulimit -n"));
}

static void test_fit_requested(void **state)
{
    (void)state;
    char warn[512] = "";
    s_fit(5000, 65536, 0, 5000, warn, sizeof warn);
    /* Requested exactly what fits. */
    s_fit(896, 1024, 0, 896, warn, sizeof warn);
    /* More than fits: lowered, and the warning names the limit that would fit it. */
    s_fit(1000, 512, 1, 512 - CONNS_FD_RESERVE, warn, sizeof warn);
    assert_non_null(strstr(warn, "--max-connections 1000 does not fit"));
    assert_non_null(strstr(warn, "raise the limit to 1128 or more"));
    /* Explicit limits above the default cap are kept when they fit. */
    s_fit(100000, 1048576, 0, 100000, warn, sizeof warn);
}

static void test_fit_tiny(void **state)
{
    (void)state;
    char warn[512] = "";
    /* Below twice the reserve, half is kept: the process still serves a few. */
    s_fit(0, 100, 1, 50, warn, sizeof warn);
    s_fit(0, 1, 1, 1, warn, sizeof warn);
    s_fit(0, 0, 1, 1, warn, sizeof warn);
}

/* --- a live ROUTER on loopback ------------------------------------------------------------- */

static int s_tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* True when the peer ended fd within ms (reads and discards what libzmq sent first). */
static bool s_ended_within(uv_loop_t *loop, int fd, int ms)
{
    uint64_t until = fb_mono_ms() + (uint64_t)ms;
    while (fb_mono_ms() < until) {
        uv_run(loop, UV_RUN_NOWAIT);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 10) == 1) {
            char buf[256];
            ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN))
                return true;
        }
    }
    return false;
}

static void s_no_message(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                         void *arg)
{
    (void)zs, (void)frames, (void)lens, (void)n, (void)arg;
    fail_msg("a raw TCP peer sent a message");
}

static void test_router_limits(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    void *zctx = zmq_ctx_new();
    void *router = fb_zsock_new_socket(zctx, ZMQ_ROUTER);
    int64_t max = -1;
    size_t len = sizeof max;
    assert_int_equal(zmq_getsockopt(router, ZMQ_MAXMSGSIZE, &max, &len), 0);
    assert_true(max > 0); /* every socket made by fb_zsock_new_socket has the frame limit */
    conns_limits_t limits = {10, 2, 60000}; /* no handshake deadline within the test */
    char err[256];
    conns_t *conns = conns_new(&loop, zctx, router, &limits, err, sizeof err);
    assert_non_null(conns);
    assert_int_equal(conns_max_total(conns), 10);
    assert_int_equal(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
    char endpoint[64];
    len = sizeof endpoint;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &len);
    int port = atoi(strrchr(endpoint, ':') + 1);
    fb_zsock_t *zs = fb_zsock_new(&loop, router, s_no_message, NULL);

    int a = s_tcp_connect(port), b = s_tcp_connect(port);
    for (int i = 0; i < 100 && conns_open(conns) < 2; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(10000);
    }
    assert_int_equal(conns_open(conns), 2);
    int c = s_tcp_connect(port);
    assert_true(s_ended_within(&loop, c, 3000)); /* a third from 127.0.0.1: ended */
    assert_false(s_ended_within(&loop, a, 300)); /* the first two stay */
    assert_int_equal(conns_open(conns), 2);
    close(a);
    for (int i = 0; i < 100 && conns_open(conns) > 1; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(10000);
    }
    assert_int_equal(conns_open(conns), 1);
    int d = s_tcp_connect(port); /* a's place is free again */
    assert_false(s_ended_within(&loop, d, 500));
    assert_int_equal(conns_open(conns), 2);
    close(b);
    close(c);
    close(d);

    conns_destroy(&conns);
    fb_zsock_close(&zs);
    uv_run(&loop, UV_RUN_DEFAULT);
    zmq_ctx_term(zctx);
    uv_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_default),
        cmocka_unit_test(test_fit_requested),
        cmocka_unit_test(test_fit_tiny),
        cmocka_unit_test(test_router_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
