/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the netbw workload. The pattern check finds every flipped bit whatever the split of
 * the stream into reads, counts a corrupt block once, and locates the first wrong byte; hellos
 * and results survive encoding. Then two real members run over loopback in threads of this
 * process, meeting through FLEETBURN_EXCHANGE_DIR: a clean pair passes with both directions and
 * latency measured; injected corruption and a min_gbps nobody reaches fail with findings on the
 * sending member naming the direction; a group of 1 or 3, a partner that never posts, one that
 * posts a port nobody listens on, one that never connects, and one killed in the middle all end
 * in `error` within their timeouts, naming the partner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "net/control.h"
#include "net/netbw.h"
#include "net/pattern.h"
#include "net/sock.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the pattern ----------------------------------------------------------------------------- */

static uint8_t *s_stream(const np_pattern_t *p, size_t len)
{
    uint8_t *buf = xmalloc(len);
    np_fill(p, buf, len);
    np_stamp_chunk(p, buf, len, 0);
    return buf;
}

static void test_pattern_clean_any_split(void **state)
{
    (void)state;
    np_pattern_t p;
    np_init(&p, 42);
    size_t len = 64 * NP_BLOCK;
    uint8_t *buf = s_stream(&p, len);
    const size_t splits[] = {1, 3, 7, 8, 9, 4095, 4096, 4097, 65536, len};
    for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
        np_check_t c = {0};
        for (size_t off = 0; off < len; off += splits[s])
            np_check(&p, &c, buf + off, len - off < splits[s] ? len - off : splits[s]);
        assert_int_equal(c.pos, len);
        assert_int_equal(c.corrupt_blocks, 0);
    }
    /* Another stream's seed is not this stream. */
    np_pattern_t q;
    np_init(&q, 43);
    np_check_t c = {0};
    assert_int_equal(np_check(&q, &c, buf, len), 64);
    free(buf);
}

static void test_pattern_finds_flips(void **state)
{
    (void)state;
    np_pattern_t p;
    np_init(&p, 7);
    size_t len = 16 * NP_BLOCK;
    uint8_t *buf = s_stream(&p, len);
    /* A flip in a stamp, one in a body, two in the same block across a read boundary. */
    const size_t flips[] = {5 * NP_BLOCK + 3, 9 * NP_BLOCK + 2000, 12 * NP_BLOCK + 100,
                            12 * NP_BLOCK + 3000};
    for (size_t i = 0; i < 4; i++)
        buf[flips[i]] ^= 0x04;
    np_check_t c = {0};
    size_t cut = 12 * NP_BLOCK + 2000;
    np_check(&p, &c, buf, cut);
    np_check(&p, &c, buf + cut, len - cut);
    assert_int_equal(c.corrupt_blocks, 3);
    assert_int_equal(c.first_offset, 5 * NP_BLOCK + 3);
    assert_int_equal((c.first_expected ^ c.first_actual) & 0xff, 0x04);
    free(buf);
}

static void test_pattern_block_out_of_place(void **state)
{
    (void)state;
    np_pattern_t p;
    np_init(&p, 9);
    uint8_t *buf = s_stream(&p, 8 * NP_BLOCK);
    /* Block 3 arrives twice and block 4 never: the stamps give it away. */
    memcpy(buf + 4 * NP_BLOCK, buf + 3 * NP_BLOCK, NP_BLOCK);
    np_check_t c = {0};
    np_check(&p, &c, buf, 8 * NP_BLOCK);
    assert_int_equal(c.corrupt_blocks, 1);
    assert_int_equal(c.first_offset, 4 * NP_BLOCK);
    free(buf);
}

/* ---- the wire -------------------------------------------------------------------------------- */

static void test_control_encoding(void **state)
{
    (void)state;
    nbc_hello_t h = {NBC_CONN_DATA, 1, 255, 0x0123456789abcdefull}, back;
    uint8_t buf[NBC_HELLO_LEN];
    nbc_hello_encode(&h, buf);
    assert_int_equal(nbc_hello_decode(buf, &back), 0);
    assert_int_equal(back.kind, NBC_CONN_DATA);
    assert_int_equal(back.sender, 1);
    assert_int_equal(back.stream, 255);
    assert_true(back.nonce == h.nonce);
    buf[0] ^= 1;
    assert_int_equal(nbc_hello_decode(buf, &back), -EPROTO);
    h.kind = 9;
    nbc_hello_encode(&h, buf);
    assert_int_equal(nbc_hello_decode(buf, &back), -EPROTO);

    nbc_result_t r = {3, 2, 123456789, 0xdeadbeefull, 0xdeadbeafull}, rb;
    uint8_t rbuf[NBC_RESULT_LEN];
    nbc_result_encode(&r, rbuf);
    nbc_result_decode(rbuf, &rb);
    assert_memory_equal(&r, &rb, sizeof r);
}

static void test_control_frames(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    uint64_t deadline = fb_mono_ms() + 2000;
    assert_int_equal(nbc_send(sv[0], NBC_ERROR, "boom", 4, deadline), 0);
    uint32_t type = 0;
    uint8_t payload[NBC_MAX_PAYLOAD + 1];
    size_t len = 0;
    assert_int_equal(nbc_recv(sv[1], &type, payload, &len, deadline), 0);
    assert_int_equal(type, NBC_ERROR);
    assert_string_equal((char *)payload, "boom");
    /* An oversized frame is refused, a closed peer is -ECONNRESET, silence is -ETIMEDOUT. */
    uint8_t bad[NBC_HEADER_LEN] = {'F', 'B', 'N', 'M', 0, 0, 0, 1, 0, 1, 0, 0};
    assert_int_equal(write(sv[0], bad, sizeof bad), (ssize_t)sizeof bad);
    assert_int_equal(nbc_recv(sv[1], &type, payload, &len, deadline), -EPROTO);
    assert_int_equal(nbc_recv(sv[1], &type, payload, &len, fb_mono_ms() + 50), -ETIMEDOUT);
    close(sv[0]);
    assert_int_equal(nbc_recv(sv[1], &type, payload, &len, deadline), -ECONNRESET);
    close(sv[1]);
}

static void test_percentile(void **state)
{
    (void)state;
    double v[100];
    for (int i = 0; i < 100; i++)
        v[i] = i + 1;
    assert_true(netbw_percentile(v, 100, 0.5) == 50);
    assert_true(netbw_percentile(v, 100, 0.99) == 99);
    assert_true(netbw_percentile(v, 100, 1.0) == 100);
    assert_true(netbw_percentile(v, 100, 0.0) == 1);
    double one = 7;
    assert_true(netbw_percentile(&one, 1, 0.99) == 7);
}

/* ---- pairs over loopback --------------------------------------------------------------------- */

static const char *const s_peers[] = {"node-a", "node-b"};
static const char *const s_addrs[] = {"127.0.0.1", "127.0.0.1"};

typedef struct {
    worker_ctx_t *ctx;
    netbw_opts_t opts;
    fb_verdict_t verdict;
    pthread_t thread;
} member_t;

static char s_dir[64];

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/fb-netbw-XXXXXX");
    assert_non_null(mkdtemp(s_dir));
    setenv("FLEETBURN_EXCHANGE_DIR", s_dir, 1);
    return 0;
}

static int s_teardown(void **state)
{
    (void)state;
    char *cmd = xasprintf("rm -rf '%s'", s_dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    unsetenv("FLEETBURN_EXCHANGE_DIR");
    return 0;
}

static worker_ctx_t *s_ctx(unsigned rank, unsigned size, const char *const *params, size_t n,
                           bool inject)
{
    static const char *const peers3[] = {"node-a", "node-b", "node-c"};
    worker_ctx_t *ctx =
        worker_ctx_new("t1", size == 3 ? peers3[rank] : s_peers[rank], params, n, inject);
    worker_ctx_set_group(ctx, rank, size, size == 3 ? peers3 : s_peers, size == 3 ? NULL : s_addrs);
    return ctx;
}

static void *s_member_main(void *arg)
{
    member_t *m = arg;
    m->verdict = netbw_run_opts(m->ctx, &m->opts);
    return NULL;
}

/* Runs both members with the same parameters; m[r].ctx holds each result afterwards. */
static void s_run_pair(member_t m[2], const char *const *params, size_t n, bool inject)
{
    for (unsigned r = 0; r < 2; r++) {
        m[r].ctx = s_ctx(r, 2, params, n, inject);
        m[r].opts = (netbw_opts_t){5000, 5000};
        assert_int_equal(pthread_create(&m[r].thread, NULL, s_member_main, &m[r]), 0);
    }
    for (unsigned r = 0; r < 2; r++)
        pthread_join(m[r].thread, NULL);
}

static double s_metric(worker_ctx_t *ctx, const char *name)
{
    const fb_metric_t *m = fb_result_metric(worker_result(ctx), name);
    assert_non_null(m);
    return m->value;
}

static void s_free_pair(member_t m[2])
{
    worker_ctx_destroy(&m[0].ctx);
    worker_ctx_destroy(&m[1].ctx);
}

static void test_pair_passes(void **state)
{
    (void)state;
    const char *params[] = {"duration=300ms", "streams=3", "lat_iters=200", "min_gbps=0.01"};
    member_t m[2];
    s_run_pair(m, params, 4, false);
    for (unsigned r = 0; r < 2; r++) {
        fb_result_t *res = worker_result(m[r].ctx);
        if (m[r].verdict != FB_VERDICT_PASS)
            fail_msg("rank %u: %s %s", r, fb_verdict_name(m[r].verdict),
                     res->error ? res->error : "");
        assert_true(s_metric(m[r].ctx, "netbw.tx_gbps") > 0.01);
        assert_true(s_metric(m[r].ctx, "netbw.rx_gbps") > 0.01);
        double p50 = s_metric(m[r].ctx, "netbw.rtt_p50_us");
        double p99 = s_metric(m[r].ctx, "netbw.rtt_p99_us");
        double max = s_metric(m[r].ctx, "netbw.rtt_max_us");
        assert_true(p50 > 0 && p50 <= p99 && p99 <= max);
        assert_true(s_metric(m[r].ctx, "netbw.streams") == 3);
        assert_true(s_metric(m[r].ctx, "netbw.rx_corrupt_blocks") == 0);
        assert_int_equal(res->n_findings, 0);
    }
    /* One member's tx is the other's rx: the same measurement, made once by the receiver. */
    assert_true(s_metric(m[0].ctx, "netbw.tx_gbps") == s_metric(m[1].ctx, "netbw.rx_gbps"));
    assert_true(s_metric(m[1].ctx, "netbw.tx_gbps") == s_metric(m[0].ctx, "netbw.rx_gbps"));
    s_free_pair(m);
}

static void test_pair_corruption_is_a_finding(void **state)
{
    (void)state;
    const char *params[] = {"duration=300ms", "streams=2", "lat_iters=0", "inject_corrupt=3"};
    member_t m[2];
    s_run_pair(m, params, 4, true);
    for (unsigned r = 0; r < 2; r++) {
        fb_result_t *res = worker_result(m[r].ctx);
        assert_int_equal(m[r].verdict, FB_VERDICT_FAIL);
        assert_true(s_metric(m[r].ctx, "netbw.rx_corrupt_blocks") == 3);
        assert_int_equal(res->n_findings, 1);
        char part[64];
        snprintf(part, sizeof part, "%s->%s", s_peers[r], s_peers[1 - r]);
        assert_string_equal(res->findings[0].part, part);
        assert_string_equal(res->findings[0].kind, "link");
        assert_non_null(strstr(res->findings[0].what, "3 corrupt 4 KiB block"));
        assert_non_null(strstr(res->findings[0].what, "of stream 0"));
    }
    s_free_pair(m);

    /* Without the switch the parameter is refused. */
    worker_ctx_t *ctx = s_ctx(0, 2, params, 4, false);
    assert_int_equal(netbw_run(ctx), FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(ctx)->error, "--allow-fault-injection"));
    worker_ctx_destroy(&ctx);
}

static void test_pair_below_min_gbps(void **state)
{
    (void)state;
    const char *params[] = {"duration=200ms", "streams=1", "lat_iters=5", "min_gbps=100000"};
    member_t m[2];
    s_run_pair(m, params, 4, false);
    for (unsigned r = 0; r < 2; r++) {
        fb_result_t *res = worker_result(m[r].ctx);
        assert_int_equal(m[r].verdict, FB_VERDICT_FAIL);
        assert_int_equal(res->n_findings, 1);
        char part[64], sender[64];
        snprintf(part, sizeof part, "%s->%s", s_peers[r], s_peers[1 - r]);
        snprintf(sender, sizeof sender, "sent by %s", s_peers[r]);
        assert_string_equal(res->findings[0].part, part);
        assert_non_null(strstr(res->findings[0].what, "below min_gbps 100000"));
        assert_non_null(strstr(res->findings[0].what, sender));
    }
    s_free_pair(m);
}

static void test_group_size_refused(void **state)
{
    (void)state;
    worker_ctx_t *ctx = worker_ctx_new("t1", "node-a", NULL, 0, false);
    assert_int_equal(netbw_run(ctx), FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(ctx)->error, "scope: pairs"));
    assert_non_null(strstr(worker_result(ctx)->error, "1 member"));
    worker_ctx_destroy(&ctx);
    ctx = s_ctx(2, 3, NULL, 0, false);
    assert_int_equal(netbw_run(ctx), FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(ctx)->error, "3 members"));
    worker_ctx_destroy(&ctx);

    const char *bad[] = {"streams=0"};
    ctx = s_ctx(0, 2, bad, 1, false);
    assert_int_equal(netbw_run(ctx), FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(ctx)->error, "streams"));
    worker_ctx_destroy(&ctx);
}

static void test_partner_never_posts(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx(0, 2, NULL, 0, false);
    netbw_opts_t opts = {300, 300};
    assert_int_equal(netbw_run_opts(ctx, &opts), FB_VERDICT_ERROR);
    const char *err = worker_result(ctx)->error;
    assert_non_null(strstr(err, "rendezvous with partner node-b"));
    assert_non_null(strstr(err, "rank 1 (node-b)"));
    worker_ctx_destroy(&ctx);
}

typedef struct {
    unsigned port;
    int rc;
} fake_post_t;

/* A fake rank 1 posts port and nonce, then does nothing (no cmocka asserts off the main
 * thread: rc is checked there). */
static void *s_fake_post_main(void *arg)
{
    fake_post_t *f = arg;
    worker_ctx_t *fake = s_ctx(1, 2, NULL, 0, false);
    char value[64], err[256];
    int n = snprintf(value, sizeof value, "%u 00000000000000ff", f->port);
    worker_blob_t *values = NULL;
    f->rc = worker_exchange(fake, "netbw.port", value, (size_t)n, 5000, &values, err, sizeof err);
    worker_blobs_free(&values, 2);
    worker_ctx_destroy(&fake);
    return NULL;
}

static void test_partner_port_closed(void **state)
{
    (void)state;
    /* A port that was just free: nothing listens there. */
    char err[128];
    uint16_t port = 0;
    int fd = nsock_listen("127.0.0.1", 1, &port, err, sizeof err);
    assert_true(fd >= 0);
    close(fd);
    fake_post_t f = {port, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, s_fake_post_main, &f), 0);
    worker_ctx_t *ctx = s_ctx(0, 2, NULL, 0, false);
    netbw_opts_t opts = {5000, 1000};
    assert_int_equal(netbw_run_opts(ctx, &opts), FB_VERDICT_ERROR);
    pthread_join(t, NULL);
    assert_int_equal(f.rc, 0);
    const char *e = worker_result(ctx)->error;
    char want[96];
    snprintf(want, sizeof want, "partner node-b: cannot connect to 127.0.0.1 port %u", port);
    if (!strstr(e, want))
        fail_msg("error '%s' lacks '%s'", e, want);
    worker_ctx_destroy(&ctx);
}

static void test_partner_never_connects(void **state)
{
    (void)state;
    /* Rank 1 waits for rank 0's control connection, which never comes. */
    worker_ctx_t *ctx = s_ctx(1, 2, NULL, 0, false);
    worker_ctx_t *fake = s_ctx(0, 2, NULL, 0, false);
    char err[256];
    worker_blob_t *values = NULL;
    assert_int_equal(worker_exchange(fake, "netbw.port", "1 0", 3, 100, &values, err, sizeof err),
                     -ETIMEDOUT);
    netbw_opts_t opts = {5000, 500};
    uint64_t t0 = fb_mono_ms();
    assert_int_equal(netbw_run_opts(ctx, &opts), FB_VERDICT_ERROR);
    assert_true(fb_mono_ms() - t0 < 3000);
    const char *e = worker_result(ctx)->error;
    if (!strstr(e, "0 of 1 connections from partner node-a (127.0.0.1)"))
        fail_msg("error: %s", e);
    worker_ctx_destroy(&ctx);
    worker_ctx_destroy(&fake);
}

/* Rank 1 runs in a child process that is killed while data flows: rank 0 must end at once with
 * an error naming it, not at its timeouts. */
static void test_partner_killed(void **state)
{
    (void)state;
    const char *params[] = {"duration=20s", "streams=2"};
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        worker_ctx_t *ctx = s_ctx(1, 2, params, 2, false);
        netbw_run(ctx);
        _exit(0);
    }
    worker_ctx_t *ctx = s_ctx(0, 2, params, 2, false);
    netbw_opts_t opts = {5000, 15000};
    member_t m = {.ctx = ctx, .opts = opts};
    assert_int_equal(pthread_create(&m.thread, NULL, s_member_main, &m), 0);
    usleep(800 * 1000);
    kill(child, SIGKILL);
    uint64_t t0 = fb_mono_ms();
    waitpid(child, NULL, 0);
    pthread_join(m.thread, NULL);
    uint64_t took = fb_mono_ms() - t0;
    assert_int_equal(m.verdict, FB_VERDICT_ERROR);
    const char *e = worker_result(ctx)->error;
    if (took > 3000 || !strstr(e, "node-b"))
        fail_msg("after %llu ms: %s", (unsigned long long)took, e);
    worker_ctx_destroy(&ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pattern_clean_any_split),
        cmocka_unit_test(test_pattern_finds_flips),
        cmocka_unit_test(test_pattern_block_out_of_place),
        cmocka_unit_test(test_control_encoding),
        cmocka_unit_test(test_control_frames),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test_setup_teardown(test_pair_passes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_pair_corruption_is_a_finding, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_pair_below_min_gbps, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_group_size_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_partner_never_posts, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_partner_port_closed, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_partner_never_connects, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_partner_killed, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
