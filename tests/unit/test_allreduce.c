/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the allreduce core and launcher mpirun's pure parts: the size sweep, the nccl-tests
 * formulas against numbers all_reduce_perf printed, the exactness of the expected values (and the
 * constant-time table against the reference loop), the rank line formats with round trips and
 * garbage, parameter parsing and the rank binaries' words, judging a sweep with an injected wrong
 * element, finding a rank's member, and mpirun's command line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "allreduce/ar.h"
#include "allreduce/ar_rank.h"
#include "allreduce/launch_mpirun.h"
#include "common/util.h"
#include "worker.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static worker_ctx_t *s_ctx(const char *const *params, size_t n, bool inject)
{
    return worker_ctx_new("t1", "node-a", params, n, inject);
}

static ar_opts_t s_opts(uint64_t min, uint64_t max, unsigned factor, ar_dtype_t dt)
{
    ar_opts_t o = {AR_LAUNCH_MPIRUN, min, max, factor, dt, AR_OP_SUM, 5, 1, false};
    return o;
}

/* ---- sweep ---- */

/* The sweep of s_opts(min, max, factor, dt), which must hold n sizes; the caller frees it. */
static uint64_t *s_sweep(uint64_t min, uint64_t max, unsigned factor, ar_dtype_t dt, size_t n)
{
    ar_opts_t o = s_opts(min, max, factor, dt);
    uint64_t *sizes = NULL;
    assert_int_equal(ar_sweep(&o, &sizes), n);
    return sizes;
}

static void test_sweep_powers_of_two(void **state)
{
    (void)state;
    uint64_t *sizes = s_sweep(8, 64, 2, AR_DT_FLOAT, 4);
    assert_int_equal(sizes[0], 8);
    assert_int_equal(sizes[3], 64);
    free(sizes);

    /* nccl-tests' -b 8 -e 8G -f 2: 31 sizes. */
    sizes = s_sweep(8, 8ull << 30, 2, AR_DT_FLOAT, 31);
    assert_int_equal(sizes[30], 8ull << 30);
    free(sizes);
}

static void test_sweep_whole_elements(void **state)
{
    (void)state;
    /* 1, 2, 4 B of float are all one element: listed once. 6 B of double is not a whole element. */
    uint64_t *sizes = s_sweep(1, 16, 2, AR_DT_FLOAT, 3);
    assert_int_equal(sizes[0], 4);
    assert_int_equal(sizes[1], 8);
    assert_int_equal(sizes[2], 16);
    free(sizes);

    sizes = s_sweep(12, 100, 3, AR_DT_DOUBLE, 2); /* 12, 36, 108>100: 8, 32 */
    assert_int_equal(sizes[0], 8);
    assert_int_equal(sizes[1], 32);
    free(sizes);

    sizes = s_sweep(1, 1, 2, AR_DT_DOUBLE, 1); /* below one element: that one element */
    assert_int_equal(sizes[0], 8);
    free(sizes);

    sizes = s_sweep(1ull << 62, UINT64_MAX, 1024, AR_DT_HALF, 1); /* no overflow past the top */
    free(sizes);
}

/* ---- formulas ---- */

static void test_formulas_match_nccl_tests(void **state)
{
    (void)state;
    /* all_reduce_perf lines (size, time us, algbw, busbw) as it prints them:
     * 8 ranks:    1073741824  4637.2  231.55  405.21
     * 8 ranks:    8589934592   36963  232.39  406.68
     * 2 ranks:    8589934592   24806  346.29  346.29 */
    assert_true(fabs(ar_algbw_gbs(1073741824ull, 4637.2e-6) - 231.55) < 0.01);
    assert_true(fabs(ar_busbw_gbs(1073741824ull, 4637.2e-6, 8) - 405.21) < 0.01);
    assert_true(fabs(ar_algbw_gbs(8589934592ull, 36963e-6) - 232.39) < 0.01);
    assert_true(fabs(ar_busbw_gbs(8589934592ull, 36963e-6, 8) - 406.68) < 0.02);
    assert_true(fabs(ar_busbw_gbs(8589934592ull, 24806e-6, 2) - 346.29) < 0.01);
    assert_true(ar_busbw_gbs(1024, 1e-6, 2) == ar_algbw_gbs(1024, 1e-6));
    assert_true(ar_busbw_gbs(1024, 1e-6, 1) == 0.0); /* one rank moves nothing */
    assert_true(ar_algbw_gbs(1024, 0) == 0.0);
}

/* ---- exactness ---- */

static void test_expect_table_equals_reference(void **state)
{
    (void)state;
    static const unsigned ranks[] = {1, 2, 3, 7, 8, 16, 64, 257};
    for (int op = AR_OP_SUM; op <= AR_OP_MIN; op++)
        for (size_t k = 0; k < sizeof ranks / sizeof ranks[0]; k++) {
            double table[4];
            ar_expect_table((ar_op_t)op, ranks[k], table);
            for (uint64_t i = 0; i < 3000; i += 7)
                for (unsigned it = 0; it < 40; it += 3) {
                    uint64_t e = i * 1000003u + (uint64_t)it * 65537u; /* spread over 64 bits */
                    double want = ar_expected((ar_op_t)op, ranks[k], e, it);
                    assert_true(table[ar_expect_index((ar_op_t)op, e, it)] == want);
                }
        }
}

static void test_inputs_in_range(void **state)
{
    (void)state;
    for (unsigned r = 0; r < 50; r++)
        for (uint64_t i = 0; i < 500; i++) {
            int s = ar_input(AR_OP_SUM, r, i, (unsigned)(i % 9));
            int p = ar_input(AR_OP_PROD, r, i, (unsigned)(i % 9));
            assert_true(s >= 1 && s <= 4);
            assert_true(p == 1 || p == 2);
        }
}

static void test_exact_ranks(void **state)
{
    (void)state;
    assert_int_equal(ar_exact_ranks(AR_DT_BF16, AR_OP_SUM), 64);  /* 4 * 64 = 256 = 2^8 */
    assert_int_equal(ar_exact_ranks(AR_DT_HALF, AR_OP_SUM), 512); /* 2048 = 2^11 */
    assert_int_equal(ar_exact_ranks(AR_DT_FLOAT, AR_OP_SUM), 1u << 22);
    assert_int_equal(ar_exact_ranks(AR_DT_HALF, AR_OP_PROD), 15); /* 2^15 < 65504 */
    assert_int_equal(ar_exact_ranks(AR_DT_INT32, AR_OP_PROD), 30);
    assert_int_equal(ar_exact_ranks(AR_DT_HALF, AR_OP_MAX), UINT32_MAX);
    /* The bound holds: the largest possible sum at the bound is a float that bf16 keeps. */
    double worst = 4.0 * ar_exact_ranks(AR_DT_BF16, AR_OP_SUM);
    assert_true(worst <= 256.0);
    assert_int_equal(ar_dtype_size(AR_DT_BF16), 2);
    assert_string_equal(ar_dtype_name(AR_DT_BF16), "bfloat16");
    assert_string_equal(ar_op_name(AR_OP_MIN), "min");
}

/* ---- lines ---- */

static void test_size_line_round_trip(void **state)
{
    (void)state;
    ar_size_result_t r = {1048576, 262144, 41.25, 39.5, 60.125, 0, 0, 3, 20, 1}, back;
    char line[512];
    ar_format_line(&r, line, sizeof line);
    assert_int_equal(ar_parse_line(line, &back), 0);
    assert_int_equal(back.bytes, r.bytes);
    assert_int_equal(back.count, r.count);
    assert_true(back.avg_us == r.avg_us && back.min_us == r.min_us && back.max_us == r.max_us);
    assert_int_equal(back.errors, 3);
    assert_int_equal(back.first_bad_rank, 1);
    assert_int_equal(back.iters, 20);
    /* Trailing CR/LF as mpirun may forward them. */
    strcat(line, "\r\n");
    assert_int_equal(ar_parse_line(line, &back), 0);
}

static void test_size_line_garbage(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "fb-allreduce",
        "fb-allreduce ",
        "hello world",
        "fb-allreduce bytes=8",
        "fb-allreduce bytes=x count=2 avg_us=1 min_us=1 max_us=1 errors=0 bad_rank=-1 iters=1",
        "fb-allreduce bytes=8 count=2 avg_us=1 min_us=1 max_us=1 errors=0 bad_rank=-1 iters=1 x",
        "fb-allreduce bytes=8 count=2 avg_us=1 min_us=1 max_us=1 errors=0 bad_rank=-2 iters=1",
        "fb-allreduce bytes=8 count=2 avg_us=-1 min_us=1 max_us=1 errors=0 bad_rank=-1 iters=1",
        "fb-allreduce bytes=8 count=2 avg_us=nan min_us=1 max_us=1 errors=0 bad_rank=-1 iters=1",
        "fb-allreduce bytes=0 count=2 avg_us=1 min_us=1 max_us=1 errors=0 bad_rank=-1 iters=1",
        /* errors without a bad rank, and a bad rank without errors */
        "fb-allreduce bytes=8 count=2 avg_us=1 min_us=1 max_us=1 errors=2 bad_rank=-1 iters=1",
        "fb-allreduce bytes=8 count=2 avg_us=1 min_us=1 max_us=1 errors=0 bad_rank=0 iters=1",
        "fb-allreduce count=2 bytes=8 avg_us=1 min_us=1 max_us=1 errors=0 bad_rank=-1 iters=1",
        "fb-allreduce-rank rank=0 name=a",
        "fb-allreduce bytes=99999999999999999999999 count=2 avg_us=1 min_us=1 max_us=1 errors=0 "
        "bad_rank=-1 iters=1",
        /* a time no iteration takes, which ar_format_line could not write back (libFuzzer,
         * tests/fuzz/corpus/peer/crash-ar-line-huge-time) */
        "fb-allreduce bytes=8 count=2 avg_us=2.0044e46 min_us=1 max_us=1 errors=0 bad_rank=-1 "
        "iters=1",
    };
    ar_size_result_t r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ar_parse_line(bad[i], &r), -EINVAL);
    assert_int_equal(ar_parse_line(NULL, &r), -EINVAL);
}

static void test_rank_and_error_lines(void **state)
{
    (void)state;
    char line[512], name[64];
    unsigned rank = 99;
    ar_format_rank_line(3, "node-b/gpu1", line, sizeof line);
    assert_string_equal(line, "fb-allreduce-rank rank=3 name=node-b/gpu1");
    assert_int_equal(ar_parse_rank_line(line, &rank, name, sizeof name), 0);
    assert_int_equal(rank, 3);
    assert_string_equal(name, "node-b/gpu1");
    ar_format_rank_line(0, "has space", line, sizeof line); /* one word on the line */
    assert_int_equal(ar_parse_rank_line(line, &rank, name, sizeof name), 0);
    assert_string_equal(name, "has_space");
    assert_int_equal(ar_parse_rank_line("fb-allreduce-rank rank=x name=a", &rank, name, 64),
                     -EINVAL);
    assert_int_equal(ar_parse_rank_line("fb-allreduce-rank rank=1", &rank, name, 64), -EINVAL);

    ar_rank_error_t e = {4096, 1, 7, 512, 6, 9, NAN}, back;
    ar_format_error_line(&e, line, sizeof line);
    assert_int_equal(ar_parse_error_line(line, &back), 0);
    assert_int_equal(back.bytes, 4096);
    assert_int_equal(back.rank, 1);
    assert_int_equal(back.errors, 7);
    assert_int_equal(back.index, 512);
    assert_int_equal(back.iter, 6);
    assert_true(back.expected == 9 && isnan(back.got));
    assert_int_equal(ar_parse_error_line("fb-allreduce-error bytes=8 rank=0 errors=0 index=0 "
                                         "iter=0 expected=1 got=2",
                                         &back),
                     -EINVAL);
    assert_int_equal(ar_parse_error_line(line + 1, &back), -EINVAL);
}

/* ---- parameters ---- */

static void test_opts_defaults(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx(NULL, 0, false);
    ar_opts_t o;
    char err[256];
    assert_int_equal(ar_opts_from_params(ctx, true, 0, 1, &o, err, sizeof err), 0);
    assert_int_equal(o.launcher, AR_LAUNCH_MPIRUN);
    assert_int_equal(o.min_bytes, 8);
    assert_int_equal(o.max_bytes, 8ull << 30);
    assert_int_equal(o.factor, 2);
    assert_int_equal(o.dtype, AR_DT_FLOAT);
    assert_int_equal(o.op, AR_OP_SUM);
    assert_int_equal(o.iters, 20);
    assert_int_equal(o.warmup, 5);
    assert_false(o.inject_corrupt);
    /* CPU: the smaller of 1 GiB and a quarter of memory per rank. */
    assert_int_equal(ar_opts_from_params(ctx, false, 64ull << 30, 2, &o, err, sizeof err), 0);
    assert_int_equal(o.max_bytes, 1ull << 30);
    assert_int_equal(ar_opts_from_params(ctx, false, 2ull << 30, 4, &o, err, sizeof err), 0);
    assert_int_equal(o.max_bytes, 128ull << 20);
    assert_int_equal(ar_opts_from_params(ctx, false, 0, 4, &o, err, sizeof err), 0);
    assert_int_equal(o.max_bytes, 1ull << 30); /* memory unknown */
    worker_ctx_destroy(&ctx);
}

static void test_opts_given_and_bad(void **state)
{
    (void)state;
    const char *good[] = {"launcher=native", "min_size=1KiB",  "max_size=4MiB",
                          "factor=4",        "dtype=bfloat16", "op=max",
                          "iters=3",         "warmup=0",       "min_busbw_gbs=1.5"};
    worker_ctx_t *ctx = s_ctx(good, 9, false);
    ar_opts_t o;
    char err[256];
    assert_int_equal(ar_opts_from_params(ctx, false, 1ull << 30, 1, &o, err, sizeof err), 0);
    assert_int_equal(o.launcher, AR_LAUNCH_NATIVE);
    assert_int_equal(o.min_bytes, 1024);
    assert_int_equal(o.max_bytes, 4ull << 20);
    assert_int_equal(o.factor, 4);
    assert_int_equal(o.dtype, AR_DT_BF16);
    assert_int_equal(o.op, AR_OP_MAX);
    assert_int_equal(o.iters, 3);
    assert_int_equal(o.warmup, 0);
    worker_ctx_destroy(&ctx);

    static const char *const bad[][2] = {
        {"dtype=float8", "dtype"},
        {"op=avg", "op"},
        {"factor=1", "factor"},
        {"iters=0", "iters"},
        {"min_size=0", "min_size"},
        {"max_size=3x", "max_size"},
        {"launcher=ssh", "launcher"},
        {"min_busbw_gbs=-1", "min_busbw_gbs"},
        {"inject_corrupt=maybe", "inject_corrupt"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ctx = s_ctx(bad[i], 1, true);
        assert_int_equal(ar_opts_from_params(ctx, true, 0, 1, &o, err, sizeof err), -EINVAL);
        assert_non_null(strstr(err, bad[i][1]));
        worker_ctx_destroy(&ctx);
    }
    const char *inverted[] = {"min_size=1MiB", "max_size=1KiB"};
    ctx = s_ctx(inverted, 2, false);
    assert_int_equal(ar_opts_from_params(ctx, true, 0, 1, &o, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "larger than"));
    worker_ctx_destroy(&ctx);
}

static void test_opts_injection_switch(void **state)
{
    (void)state;
    const char *p[] = {"inject_corrupt=true"};
    ar_opts_t o;
    char err[256];
    worker_ctx_t *ctx = s_ctx(p, 1, false);
    assert_int_equal(ar_opts_from_params(ctx, true, 0, 1, &o, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "--allow-fault-injection"));
    worker_ctx_destroy(&ctx);
    ctx = s_ctx(p, 1, true);
    assert_int_equal(ar_opts_from_params(ctx, true, 0, 1, &o, err, sizeof err), 0);
    assert_true(o.inject_corrupt);
    worker_ctx_destroy(&ctx);
}

static void test_opts_args_round_trip(void **state)
{
    (void)state;
    ar_opts_t o = {AR_LAUNCH_MPIRUN, 16, 1ull << 33, 8, AR_DT_HALF, AR_OP_PROD, 7, 2, true}, back;
    char words[AR_ARGS_N][AR_ARG_MAX], err[256];
    ar_opts_to_args(&o, words);
    char *argv[AR_ARGS_N + 1];
    for (int i = 0; i < AR_ARGS_N; i++)
        argv[i] = words[i];
    argv[AR_ARGS_N] = "unrelated=1"; /* ignored */
    assert_int_equal(ar_opts_from_args(AR_ARGS_N + 1, argv, &back, err, sizeof err), 0);
    assert_int_equal(back.min_bytes, o.min_bytes);
    assert_int_equal(back.max_bytes, o.max_bytes);
    assert_int_equal(back.factor, o.factor);
    assert_int_equal(back.dtype, o.dtype);
    assert_int_equal(back.op, o.op);
    assert_int_equal(back.iters, o.iters);
    assert_int_equal(back.warmup, o.warmup);
    assert_true(back.inject_corrupt);
    char *no_max[] = {"min_bytes=8"};
    assert_int_equal(ar_opts_from_args(1, no_max, &back, err, sizeof err), -EINVAL);
    char *bad[] = {"max_bytes=64", "dtype=fp8"};
    assert_int_equal(ar_opts_from_args(2, bad, &back, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "dtype"));
}

/* ---- judging ---- */

static ar_size_result_t s_size(uint64_t bytes, double us, uint64_t errors, int bad)
{
    ar_size_result_t r = {bytes, bytes / 4, us, us * 0.9, us * 1.5, 0, 0, errors, 20, bad};
    return r;
}

static void test_report_pass_metrics(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx(NULL, 0, false);
    ar_size_result_t sizes[] = {s_size(8, 20.0, 0, -1), s_size(1 << 20, 100.0, 0, -1),
                                s_size(1 << 24, 1000.0, 0, -1)};
    const char *names[] = {"node-a", "node-b"};
    assert_int_equal(ar_report(ctx, sizes, 3, 2, names), FB_VERDICT_PASS);
    fb_result_t *res = worker_result(ctx);
    const fb_metric_t *m = fb_result_metric(res, "allreduce.busbw_gbs");
    assert_non_null(m);
    assert_true(fabs(m->value - 16.777216) < 1e-6); /* 16 MiB in 1 ms, 2 ranks */
    m = fb_result_metric(res, "allreduce.peak_busbw_gbs");
    assert_true(fabs(m->value - 16.777216) < 1e-6);
    assert_true(fb_result_metric(res, "allreduce.lat_us")->value == 20.0);
    assert_non_null(fb_result_metric(res, "allreduce.1048576.busbw_gbs"));
    assert_non_null(fb_result_metric(res, "allreduce.8.avg_us"));
    assert_int_equal(res->n_findings, 0);
    worker_ctx_destroy(&ctx);
}

static void test_report_wrong_element_names_rank(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx(NULL, 0, false);
    ar_size_result_t sizes[] = {s_size(8, 20.0, 0, -1), s_size(4096, 30.0, 1, 2)};
    const char *names[] = {"node-a/gpu0", "node-a/gpu1", "node-b/gpu0", "node-b/gpu1"};
    assert_int_equal(ar_report(ctx, sizes, 2, 4, names), FB_VERDICT_FAIL);
    fb_result_t *res = worker_result(ctx);
    assert_int_equal(res->n_findings, 1);
    assert_string_equal(res->findings[0].part, "node-b/gpu0");
    assert_string_equal(res->findings[0].kind, "gpu");
    assert_non_null(strstr(res->findings[0].what, "rank 2"));
    assert_true(fb_result_metric(res, "allreduce.errors")->value == 1);
    assert_non_null(res->error);
    worker_ctx_destroy(&ctx);

    /* With the per-rank details every rank that saw wrong data is named, with its element. */
    ctx = s_ctx(NULL, 0, false);
    ar_size_result_t sizes2[] = {s_size(4096, 30.0, 3, 0)};
    ar_rank_error_t errs[] = {{4096, 0, 2, 17, 5, 7, 8}, {4096, 3, 1, 9, 6, 5, NAN}};
    const char *hosts[] = {"n0", "n1", "n2", "n3"};
    assert_int_equal(ar_report_detail(ctx, sizes2, 1, 4, hosts, errs, 2), FB_VERDICT_FAIL);
    res = worker_result(ctx);
    assert_int_equal(res->n_findings, 2);
    assert_string_equal(res->findings[0].part, "n0");
    assert_string_equal(res->findings[0].kind, "node");
    assert_non_null(strstr(res->findings[0].what, "element 17"));
    assert_non_null(strstr(res->findings[0].what, "expected 7, got 8"));
    assert_string_equal(res->findings[1].part, "n3");
    worker_ctx_destroy(&ctx);
}

static void test_report_min_busbw(void **state)
{
    (void)state;
    const char *p[] = {"min_busbw_gbs=100"};
    worker_ctx_t *ctx = s_ctx(p, 1, false);
    ar_size_result_t sizes[] = {s_size(1 << 24, 1000.0, 0, -1)};
    const char *one_node[] = {"node-a/gpu0", "node-a/gpu1"};
    assert_int_equal(ar_report(ctx, sizes, 1, 2, one_node), FB_VERDICT_FAIL);
    fb_result_t *res = worker_result(ctx);
    assert_int_equal(res->n_findings, 1); /* all ranks on one node: that node */
    assert_string_equal(res->findings[0].part, "node-a");
    assert_non_null(strstr(res->error, "min_busbw_gbs"));
    worker_ctx_destroy(&ctx);

    ctx = s_ctx(p, 1, false);
    const char *two_nodes[] = {"node-a", "node-b"};
    assert_int_equal(ar_report(ctx, sizes, 1, 2, two_nodes), FB_VERDICT_FAIL);
    assert_int_equal(worker_result(ctx)->n_findings, 0); /* a group: pair rounds decide */
    worker_ctx_destroy(&ctx);

    ctx = s_ctx(NULL, 0, false);
    assert_int_equal(ar_report(ctx, NULL, 0, 2, two_nodes), FB_VERDICT_ERROR);
    worker_ctx_destroy(&ctx);
}

/* ---- which member a rank runs on ---- */

static void test_rank_member(void **state)
{
    (void)state;
    const char *nodes = "ns-a,ns-b,ns-c", *addrs = "10.9.0.1,10.9.0.2,10.9.0.3";
    const char *mine[] = {"127.0.0.1", "10.9.0.2"};
    assert_int_equal(ar_rank_pick_member(0, nodes, addrs, "1,1,1", mine, 2, "box"), 1);
    /* Host names, with or without the domain. */
    assert_int_equal(ar_rank_pick_member(0, "a,b", "a,b", "1,1", NULL, 0, "b.example.org"), 1);
    assert_int_equal(ar_rank_pick_member(0, "n1,n2", "", "1,1", NULL, 0, "n2"), 1);
    /* Every member on one address (loopback tests): the slot order decides. */
    const char *lo[] = {"127.0.0.1"};
    const char *same = "127.0.0.1,127.0.0.1";
    assert_int_equal(ar_rank_pick_member(0, "l0,l1", same, "2,2", lo, 1, "box"), 0);
    assert_int_equal(ar_rank_pick_member(1, "l0,l1", same, "2,2", lo, 1, "box"), 0);
    assert_int_equal(ar_rank_pick_member(2, "l0,l1", same, "2,2", lo, 1, "box"), 1);
    assert_int_equal(ar_rank_pick_member(4, "l0,l1", same, "2,2", lo, 1, "box"), -1);
    assert_int_equal(ar_rank_pick_member(5, "only", NULL, NULL, NULL, 0, NULL), 0);
    assert_int_equal(ar_rank_pick_member(0, NULL, NULL, NULL, NULL, 0, "x"), -1);
}

/* ---- mpirun ---- */

static char *s_join(char **argv)
{
    char *s = xstrdup("");
    for (char **a = argv; *a; a++) {
        char *n = xasprintf("%s%s%s", s, *s ? " " : "", *a);
        free(s);
        s = n;
    }
    return s;
}

static void test_mpirun_argv(void **state)
{
    (void)state;
    const char *hosts[] = {"10.9.0.1", "10.9.0.2"};
    const unsigned slots[] = {1, 2};
    const char *env[] = {"FLEETBURN_AR_NODES", "LD_LIBRARY_PATH"};
    ar_opts_t o = {AR_LAUNCH_MPIRUN, 8, 1024, 2, AR_DT_FLOAT, AR_OP_SUM, 5, 1, false};
    mpirun_plan_t plan = {.mpirun = "mpirun",
                          .rank_path = "/opt/fb/bin/fleetburn-mpirank",
                          .hosts = hosts,
                          .slots = slots,
                          .n = 2,
                          .rsh_agent = "/x/netns-rsh.sh",
                          .extra_args = "--mca btl tcp,self  --mca oob_tcp_if_include 10.9.0.0/24",
                          .as_root = true,
                          .yield_when_idle = true,
                          .env = env,
                          .n_env = 2,
                          .opts = &o};
    size_t argc = 0;
    char **argv = mpirun_argv(&plan, &argc);
    char *cmd = s_join(argv);
    assert_string_equal(cmd, "mpirun --host 10.9.0.1:1,10.9.0.2:2 -np 3 --allow-run-as-root "
                             "--leave-session-attached "
                             "--mca plm_rsh_agent /x/netns-rsh.sh --map-by slot --bind-to none "
                             "--mca mpi_yield_when_idle 1 "
                             "-x FLEETBURN_AR_NODES -x LD_LIBRARY_PATH --mca btl tcp,self --mca "
                             "oob_tcp_if_include 10.9.0.0/24 /opt/fb/bin/fleetburn-mpirank "
                             "min_bytes=8 max_bytes=1024 factor=2 dtype=float op=sum iters=5 "
                             "warmup=1 inject_corrupt=0");
    assert_null(argv[argc]);
    free(cmd);
    mpirun_argv_free(&argv);
    assert_null(argv);

    /* The operator's mapping and binding win; no rsh agent, not root. */
    plan.extra_args = "--map-by ppr:1:node --bind-to=core --mca mpi_yield_when_idle 0";
    plan.rsh_agent = NULL;
    plan.as_root = false;
    plan.n_env = 0;
    argv = mpirun_argv(&plan, NULL);
    cmd = s_join(argv);
    assert_null(strstr(cmd, "--map-by slot"));
    assert_null(strstr(cmd, "--bind-to none"));
    assert_null(strstr(cmd, "plm_rsh_agent"));
    assert_null(strstr(cmd, "allow-run-as-root"));
    assert_non_null(strstr(cmd, "--bind-to=core --mca mpi_yield_when_idle 0 /opt"));
    assert_null(strstr(cmd, "mpi_yield_when_idle 1"));
    free(cmd);
    mpirun_argv_free(&argv);

    /* Hosts come from the network (node names, addresses): none may read as an option. */
    assert_true(mpirun_host_ok("10.9.0.1"));
    assert_true(mpirun_host_ok("node-01.rack7"));
    assert_true(mpirun_host_ok("::1"));
    assert_true(mpirun_host_ok("fe80::1%eth0"));
    assert_false(mpirun_host_ok("-oProxyCommand"));
    assert_false(mpirun_host_ok("-Elog"));
    assert_false(mpirun_host_ok(".hidden"));
    assert_false(mpirun_host_ok(""));
    assert_false(mpirun_host_ok("a b"));
    assert_false(mpirun_host_ok("a/b"));
}

/* Which mpirun runs, and whether as root, are site settings (worker_site, from the agent's
 * configuration); a campaign parameter of the same name is never looked at. */
static void test_site_settings(void **state)
{
    (void)state;
    const char *params[] = {"max_size=4096", "mpirun=/nonexistent/from-the-campaign",
                            "rsh_agent=/nonexistent/campaign-rsh"};
    worker_ctx_t *ctx = worker_ctx_new("t1", "node-a", params, 3, false);
    assert_null(worker_site(ctx, "mpirun"));
    const char *site[] = {"mpirun=/nonexistent/site-mpirun", "mpirun_args=--mca btl self",
                          "bad-no-equals"};
    worker_ctx_set_site(ctx, site, 3);
    assert_string_equal(worker_site(ctx, "mpirun"), "/nonexistent/site-mpirun");
    assert_string_equal(worker_site(ctx, "mpirun_args"), "--mca btl self");
    assert_null(worker_site(ctx, "rsh_agent"));
    assert_string_equal(worker_param(ctx, "mpirun"), "/nonexistent/from-the-campaign");
    mpirun_member_t me = {false, 1, 1u << 30, "/nonexistent/fleetburn-mpirank", ""};
    fb_verdict_t v = launch_mpirun(ctx, &me);
    assert_int_equal(v, FB_VERDICT_ERROR);
    const char *why = worker_result(ctx)->error;
    if (geteuid() == 0) {
        /* Root without the site's consent: mpirun is not started at all. */
        assert_non_null(strstr(why, "mpirun_allow_run_as_root = yes"));
        const char *allow[] = {"mpirun=/nonexistent/site-mpirun", "mpirun_allow_run_as_root=yes"};
        worker_ctx_destroy(&ctx);
        ctx = worker_ctx_new("t1", "node-a", params, 3, false);
        worker_ctx_set_site(ctx, allow, 2);
        v = launch_mpirun(ctx, &me);
        assert_int_equal(v, FB_VERDICT_ERROR);
        why = worker_result(ctx)->error;
    }
    /* The site's mpirun was tried, the campaign's never. */
    assert_non_null(strstr(why, "/nonexistent/site-mpirun"));
    assert_null(strstr(why, "from-the-campaign"));
    assert_non_null(strstr(why, "site configuration"));
    worker_ctx_destroy(&ctx);
}

static void test_member_lines(void **state)
{
    (void)state;
    mpirun_member_t m = {true, 8, 1ull << 40, "/usr/bin/fleetburn-mpirank-cuda", ""}, back;
    char *line = mpirun_member_format(&m);
    assert_int_equal(mpirun_member_parse(line, strlen(line), &back), 0);
    assert_true(back.gpu);
    assert_int_equal(back.slots, 8);
    assert_int_equal(back.mem_bytes, 1ull << 40);
    assert_string_equal(back.rank_path, m.rank_path);
    free(line);
    mpirun_member_t e = {0};
    snprintf(e.error, sizeof e.error, "no GPUs visible");
    line = mpirun_member_format(&e);
    assert_int_equal(mpirun_member_parse(line, strlen(line), &back), 0);
    assert_string_equal(back.error, "no GPUs visible");
    free(line);
    static const char *const bad[] = {"",
                                      "gpu=0",
                                      "gpu=2 slots=1 mem=0 path=/x",
                                      "gpu=0 slots=0 mem=0 path=/x",
                                      "gpu=0 slots=1 mem=0 path=x",
                                      "gpu=0 slots=1 mem=0 path=/a b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(mpirun_member_parse(bad[i], strlen(bad[i]), &back), -EINVAL);
    assert_int_equal(mpirun_member_parse(NULL, 0, &back), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_powers_of_two),
        cmocka_unit_test(test_sweep_whole_elements),
        cmocka_unit_test(test_formulas_match_nccl_tests),
        cmocka_unit_test(test_expect_table_equals_reference),
        cmocka_unit_test(test_inputs_in_range),
        cmocka_unit_test(test_exact_ranks),
        cmocka_unit_test(test_size_line_round_trip),
        cmocka_unit_test(test_size_line_garbage),
        cmocka_unit_test(test_rank_and_error_lines),
        cmocka_unit_test(test_opts_defaults),
        cmocka_unit_test(test_opts_given_and_bad),
        cmocka_unit_test(test_opts_injection_switch),
        cmocka_unit_test(test_opts_args_round_trip),
        cmocka_unit_test(test_report_pass_metrics),
        cmocka_unit_test(test_report_wrong_element_names_rank),
        cmocka_unit_test(test_report_min_busbw),
        cmocka_unit_test(test_rank_member),
        cmocka_unit_test(test_mpirun_argv),
        cmocka_unit_test(test_site_settings),
        cmocka_unit_test(test_member_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
