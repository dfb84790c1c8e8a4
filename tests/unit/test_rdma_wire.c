/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for what rdmabw members send each other and for the arithmetic of their results: the
 * queue-pair details round trip exactly and hostile variants are refused with the line and key
 * named; the result summary and the control messages round trip; the size sweep, the lockstep
 * plan, the data pattern and its check, bandwidth from completion timestamps (average as
 * ib_write_bw computes it, min and peak over windows) and latency percentiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "rdma/rdma_sweep.h"
#include "rdma/rdma_wire.h"
#include "rdma/rdmabw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rdma_endpoint_t s_endpoint(unsigned i)
{
    rdma_endpoint_t e;
    memset(&e, 0, sizeof e);
    snprintf(e.port, sizeof e.port, "mlx5_%u:1", i);
    e.lid = (uint16_t)(7 + i);
    for (int k = 0; k < 16; k++)
        e.gid[k] = (uint8_t)(0xf0 + k + i);
    e.mtu = 4096;
    e.qpn = 0xabcdef - i;
    e.psn = 0x123456 + i;
    e.ctl_qpn = 4711 + i;
    e.ctl_psn = 99;
    e.rkey = 0xfedcba98u;
    e.src_addr = 0x7f1234560000ull + i;
    e.sink_addr = 0x7f1234d60000ull;
    e.region = 8u << 20;
    e.lat_rkey = 12345;
    e.lat_addr = 0xffffffffffffffffull;
    e.gbps = 400;
    e.roce = i % 2;
    e.gpu = true;
    return e;
}

static void test_endpoints_round_trip(void **state)
{
    (void)state;
    rdma_endpoint_t eps[3] = {s_endpoint(0), s_endpoint(1), s_endpoint(2)}, back[4];
    char *msg = rdma_endpoints_encode(eps, 3, NULL);
    bool none = true;
    char reason[64], err[256];
    assert_int_equal(rdma_endpoints_decode(msg, strlen(msg), back, 4, &none, reason, sizeof reason,
                                           err, sizeof err),
                     3);
    assert_false(none);
    for (int i = 0; i < 3; i++)
        assert_memory_equal(&eps[i], &back[i], sizeof eps[i]);
    /* The message need not be terminated. */
    char *copy = xmalloc(strlen(msg));
    memcpy(copy, msg, strlen(msg));
    assert_int_equal(rdma_endpoints_decode(copy, strlen(msg), back, 4, &none, reason, sizeof reason,
                                           err, sizeof err),
                     3);
    free(copy);
    free(msg);

    msg = rdma_endpoints_encode(NULL, 0, "no RDMA device:\n/sys/class/infiniband is absent");
    assert_int_equal(rdma_endpoints_decode(msg, strlen(msg), back, 4, &none, reason, sizeof reason,
                                           err, sizeof err),
                     0);
    assert_true(none);
    assert_string_equal(reason, "no RDMA device: /sys/class/infiniband is absent");
    free(msg);
}

/* Replaces the first occurrence of from in the encoding of one endpoint and decodes it. */
static int s_decode_mutated(const char *from, const char *to, char *err, size_t errlen)
{
    rdma_endpoint_t e = s_endpoint(0), back[2];
    char *msg = rdma_endpoints_encode(&e, 1, NULL);
    char *at = strstr(msg, from);
    assert_non_null(at);
    char *mutated = xasprintf("%.*s%s%s", (int)(at - msg), msg, to, at + strlen(from));
    bool none;
    char reason[32];
    int rc = rdma_endpoints_decode(mutated, strlen(mutated), back, 2, &none, reason, sizeof reason,
                                   err, errlen);
    free(mutated);
    free(msg);
    return rc;
}

static void test_endpoints_hostile(void **state)
{
    (void)state;
    char err[256];
    static const struct {
        const char *from, *to, *says;
    } cases[] = {
        {"fbrdma 1", "fbrdma 2", "not an rdmabw endpoint message"},
        {"qpn=11259375", "qpn=16777216", "qpn='16777216' is out of range"},
        {"qpn=11259375", "qpn=-1", "qpn='-1'"},
        {"psn=1193046", "psn=", "psn=''"},
        {"lid=7", "lid=65536", "lid='65536'"},
        {"mtu=4096", "mtu=3000", "mtu='3000'"},
        {"region=8388608", "region=0", "region='0'"},
        {"region=8388608", "region=1099511627777", "region="},
        {"gid=f0", "gid=g0", "gid="},
        {"gbps=400", "gbps=nan", "gbps='nan'"},
        {"gbps=400", "gbps=1e999", "gbps="},
        {"roce=0", "roce=2", "roce='2'"},
        {"port=mlx5_0:1", "port=mlx5_0;rm", "port="},
        {"port=mlx5_0:1 ", "", "key port is missing"},
        {" gpu=1", "", "key gpu is missing"},
        {"lid=7", "lid7", "'lid7' is not key=value"},
        {"ep ", "xp ", "line 2: expected 'ep ...'"},
        {"src=7f1234560000", "src=7f12345600000000000", "src="},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(cases); i++) {
        err[0] = '\0';
        assert_int_equal(s_decode_mutated(cases[i].from, cases[i].to, err, sizeof err), -EINVAL);
        if (!strstr(err, cases[i].says))
            fail_msg("case %zu: error '%s' does not say '%s'", i, err, cases[i].says);
    }
    /* Unknown keys from a newer peer are ignored. */
    assert_int_equal(s_decode_mutated(" gpu=1", " gpu=1 ece=7", err, sizeof err), 1);

    rdma_endpoint_t back[2];
    bool none;
    char reason[32];
    assert_int_equal(
        rdma_endpoints_decode("", 0, back, 2, &none, reason, sizeof reason, err, sizeof err),
        -EINVAL);
    assert_int_equal(rdma_endpoints_decode("fbrdma 1\n\0ep", 11, back, 2, &none, reason,
                                           sizeof reason, err, sizeof err),
                     -EINVAL);
    assert_non_null(strstr(err, "NUL"));
    /* More endpoints than the caller has room for. */
    rdma_endpoint_t eps[3] = {s_endpoint(0), s_endpoint(1), s_endpoint(2)};
    char *msg = rdma_endpoints_encode(eps, 3, NULL);
    assert_int_equal(rdma_endpoints_decode(msg, strlen(msg), back, 2, &none, reason, sizeof reason,
                                           err, sizeof err),
                     -EINVAL);
    free(msg);
    /* Garbage of every byte value never crashes and never decodes. */
    unsigned char junk[300];
    uint64_t x = 88172645463325252ull;
    for (int round = 0; round < 2000; round++) {
        size_t len = (size_t)(x % sizeof junk);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            junk[k] = (unsigned char)x;
        }
        assert_true(rdma_endpoints_decode(junk, len, back, 2, &none, reason, sizeof reason, err,
                                          sizeof err) < 0);
    }
}

static void test_summary(void **state)
{
    (void)state;
    rdma_summary_t s, back;
    memset(&s, 0, sizeof s);
    s.n = 3;
    s.tx_gbps[0] = 392.125;
    s.tx_gbps[1] = -1;
    s.tx_gbps[2] = 0.1;
    snprintf(s.error, sizeof s.error, "write on mlx5_1:1:\nretry exceeded");
    char *msg = rdma_summary_encode(&s);
    char err[128];
    assert_int_equal(rdma_summary_decode(msg, strlen(msg), &back, err, sizeof err), 0);
    assert_int_equal(back.n, 3);
    assert_true(back.tx_gbps[0] == 392.125 && back.tx_gbps[1] == -1 && back.tx_gbps[2] == 0.1);
    assert_string_equal(back.error, "write on mlx5_1:1: retry exceeded");
    free(msg);
    const char *bad[] = {"fbrdma-result 1\ntx 1 3\n", "fbrdma-result 1\ntx 0 x\n",
                         "fbrdma-result 1\ntx 0 3 4\n", "fbrdma 1\n",
                         "fbrdma-result 1\ntx 0 inf\n"};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++)
        assert_int_equal(rdma_summary_decode(bad[i], strlen(bad[i]), &back, err, sizeof err),
                         -EINVAL);
}

static void test_ctl(void **state)
{
    (void)state;
    rdma_ctl_t m = {RDMA_CTL_DONE, 4242, -5, 0x0102030405060708ull}, back;
    uint8_t buf[RDMA_CTL_BYTES];
    rdma_ctl_encode(&m, buf);
    assert_int_equal(buf[0], 'F'); /* little-endian "FBRC" */
    assert_int_equal(buf[16], 0x08);
    assert_int_equal(rdma_ctl_decode(buf, &back), 0);
    assert_true(back.kind == m.kind && back.step == m.step && back.status == m.status &&
                back.value == m.value);
    buf[4] = 9;
    assert_int_equal(rdma_ctl_decode(buf, &back), -EINVAL);
    buf[4] = RDMA_CTL_READY;
    buf[0] = 'X';
    assert_int_equal(rdma_ctl_decode(buf, &back), -EINVAL);
}

/* ---- the plan -------------------------------------------------------------------------------- */

static void test_sizes_and_plan(void **state)
{
    (void)state;
    uint64_t sizes[RDMA_MAX_SIZES];
    /* ib_write_bw -a: 2 B to 8 MiB. */
    assert_int_equal(rdma_sizes(2, 8u << 20, sizes, RDMA_MAX_SIZES), 23);
    assert_int_equal(sizes[0], 2);
    assert_int_equal(sizes[22], 8u << 20);
    assert_int_equal(rdma_sizes(3, 100, sizes, RDMA_MAX_SIZES), 7);
    assert_int_equal(sizes[5], 96);
    assert_int_equal(sizes[6], 100);
    assert_int_equal(rdma_sizes(4096, 4096, sizes, RDMA_MAX_SIZES), 1);
    assert_int_equal(rdma_sizes(1, RDMA_MAX_MESSAGE, sizes, RDMA_MAX_SIZES), 31);
    assert_int_equal(rdma_sizes(0, 8, sizes, RDMA_MAX_SIZES), -EINVAL);
    assert_int_equal(rdma_sizes(9, 8, sizes, RDMA_MAX_SIZES), -EINVAL);
    assert_int_equal(rdma_sizes(1, RDMA_MAX_MESSAGE + 1, sizes, RDMA_MAX_SIZES), -EINVAL);

    rdma_mode_t modes[] = {RDMA_MODE_WRITE, RDMA_MODE_SEND};
    uint64_t sz[] = {64, 4096, 65536};
    rdma_step_t steps[32];
    size_t n = rdma_schedule(modes, 2, sz, 3, false, true, 2, steps, 32);
    assert_int_equal(n, 2 * 2 * 3 + 1);
    assert_int_equal(steps[0].mode, RDMA_MODE_WRITE);
    assert_int_equal(steps[0].active, 0);
    assert_int_equal(steps[3].active, 1); /* then the other way */
    assert_int_equal(steps[3].size, 64);
    assert_int_equal(steps[6].mode, RDMA_MODE_SEND);
    assert_int_equal(steps[12].mode, RDMA_MODE_LAT);
    assert_int_equal(steps[12].size, 2);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            assert_true(steps[i].seed != steps[j].seed);
    /* Both members compute the same plan. */
    rdma_step_t again[32];
    assert_int_equal(rdma_schedule(modes, 2, sz, 3, false, true, 2, again, 32), n);
    assert_memory_equal(steps, again, n * sizeof *steps);
    assert_int_equal(rdma_schedule(modes, 2, sz, 3, true, false, 2, steps, 32), 6);
    assert_int_equal(rdma_schedule(modes, 2, sz, 3, false, true, 2, steps, 5), 5);

    assert_int_equal(rdma_slots(8u << 20, 8u << 20, 128), 1);
    assert_int_equal(rdma_slots(1u << 20, 4096, 128), 128);
    assert_int_equal(rdma_slots(1u << 20, 65536, 128), 16);
    assert_int_equal(rdma_slots(1u << 20, 3u << 20, 128), 1);
}

static void test_pattern(void **state)
{
    (void)state;
    uint8_t buf[1003];
    rdma_pattern_fill(buf, sizeof buf, 77, false);
    assert_int_equal(rdma_pattern_check(buf, sizeof buf, 77, NULL, NULL, NULL), 0);
    /* Another step's data, or the poison, is caught at (nearly) every byte. */
    assert_true(rdma_pattern_check(buf, sizeof buf, 78, NULL, NULL, NULL) > 900);
    rdma_pattern_fill(buf, sizeof buf, 77, true);
    assert_int_equal(rdma_pattern_check(buf, sizeof buf, 77, NULL, NULL, NULL), sizeof buf);
    rdma_pattern_fill(buf, sizeof buf, 77, false);
    buf[517] ^= 0x10;
    buf[900] ^= 0xff;
    uint64_t first = 0;
    uint8_t want = 0, got = 0;
    assert_int_equal(rdma_pattern_check(buf, sizeof buf, 77, &first, &want, &got), 2);
    assert_int_equal(first, 517);
    assert_int_equal(want ^ got, 0x10);
}

/* ---- arithmetic ------------------------------------------------------------------------------ */

static void test_bandwidth(void **state)
{
    (void)state;
    rdma_bw_t bw;
    /* 1000 writes of 1 MiB at exactly 100 Gb/s after a 5 us start: a stamp every 64. */
    uint64_t size = 1u << 20, t0 = 1000000;
    double ns_per_op = (double)size * 8 / 100.0;
    uint64_t t[20], ops[20];
    size_t n = 0;
    for (uint64_t done = 64; done <= 1000;
         done = done + 64 > 1000 && done < 1000 ? 1000 : done + 64) {
        ops[n] = done;
        t[n] = t0 + 5000 + (uint64_t)llround((double)done * ns_per_op);
        n++;
    }
    rdma_bw_compute(size, t0, t, ops, n, 32, 20000, &bw);
    assert_int_equal(bw.bytes, 1000ull * size);
    assert_true(fabs(bw.peak_gbps - 100) < 0.01);
    assert_true(fabs(bw.min_gbps - 100) < 0.01);
    /* The average counts the start: a little under. */
    assert_true(bw.avg_gbps < 100 && bw.avg_gbps > 99.9);
    assert_true(fabs(bw.msg_rate_mps - 1000.0 / (bw.seconds * 1e6)) < 1e-9);

    /* One window at half speed: min shows it, peak does not. */
    for (size_t k = 5; k < n; k++)
        t[k] += (uint64_t)(64 * ns_per_op);
    rdma_bw_compute(size, t0, t, ops, n, 32, 20000, &bw);
    assert_true(fabs(bw.min_gbps - 50) < 0.01);
    assert_true(fabs(bw.peak_gbps - 100) < 0.01);
    assert_true(bw.avg_gbps < 95);

    /* Windows grow until they span the minimum time. */
    uint64_t ts[] = {100, 200, 300, 400, 500}, os[] = {64, 128, 192, 256, 320};
    rdma_bw_compute(1024, 0, ts, os, 5, 32, 150, &bw);
    assert_true(fabs(bw.peak_gbps - 128.0 * 1024 * 8 / 200) < 1e-9);
    assert_true(fabs(bw.min_gbps - bw.peak_gbps) < 1e-9);
    /* A burst (completions acknowledged at once, reaped 1 ns apart) is never a window of its
     * own: it is averaged over at least the minimum window, not measured over 1 ns. */
    uint64_t tb[] = {0, 40000, 40001, 80000}, ob[] = {64, 128, 192, 256};
    rdma_bw_compute(65536, 0, tb, ob, 4, 32, 20000, &bw);
    assert_true(fabs(bw.min_gbps - 64.0 * 65536 * 8 / 40000) < 1e-9);
    assert_true(fabs(bw.peak_gbps - 128.0 * 65536 * 8 / 40000) < 1e-9);
    /* One stamp, or no whole window: min and peak are the average. */
    rdma_bw_compute(1024, 0, ts, os, 1, 32, 1, &bw);
    assert_true(bw.min_gbps == bw.avg_gbps && bw.peak_gbps == bw.avg_gbps);
    assert_true(fabs(bw.avg_gbps - 64.0 * 1024 * 8 / 100) < 1e-9);
    rdma_bw_compute(1024, 0, ts, os, 5, 32, 1000000, &bw);
    assert_true(bw.min_gbps == bw.avg_gbps && bw.peak_gbps == bw.avg_gbps);
    rdma_bw_compute(1024, 0, ts, os, 0, 32, 1, &bw);
    assert_true(bw.avg_gbps == 0 && bw.bytes == 0);
}

static void test_latency(void **state)
{
    (void)state;
    double s[1000];
    for (int i = 0; i < 1000; i++)
        s[i] = (double)(1000 - i) / 100.0; /* 10.00 .. 0.01, reversed */
    rdma_lat_t l;
    rdma_lat_compute(s, 1000, &l);
    assert_int_equal(l.n, 1000);
    assert_true(l.min_us == 0.01 && l.max_us == 10.0);
    assert_true(l.p50_us == 5.0);   /* the 500th of 1000 */
    assert_true(l.p99_us == 9.9);   /* the 990th */
    assert_true(l.p999_us == 9.99); /* the 999th */
    assert_true(fabs(l.avg_us - 5.005) < 1e-9);
    double one = 3.5;
    rdma_lat_compute(&one, 1, &l);
    assert_true(l.p50_us == 3.5 && l.p999_us == 3.5 && l.max_us == 3.5);
    rdma_lat_compute(NULL, 0, &l);
    assert_true(l.n == 0 && l.max_us == 0);
    /* 100 samples: p99 is the 99th, not the 100th (0.99 * 100 is not exact in doubles). */
    double h[100];
    for (int i = 0; i < 100; i++)
        h[i] = i + 1;
    rdma_lat_compute(h, 100, &l);
    assert_true(l.p99_us == 99 && l.p999_us == 100 && l.p50_us == 50);
}

static void test_floor(void **state)
{
    (void)state;
    assert_true(rdmabw_floor_gbps(0, 400, 400) == 360);
    assert_true(rdmabw_floor_gbps(0, 400, 200) == 180);
    assert_true(rdmabw_floor_gbps(0, 200, 0) == 180);
    assert_true(rdmabw_floor_gbps(0, 0, 0) == 0);
    assert_true(rdmabw_floor_gbps(350, 400, 200) == 350);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoints_round_trip),
        cmocka_unit_test(test_endpoints_hostile),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_ctl),
        cmocka_unit_test(test_sizes_and_plan),
        cmocka_unit_test(test_pattern),
        cmocka_unit_test(test_bandwidth),
        cmocka_unit_test(test_latency),
        cmocka_unit_test(test_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
