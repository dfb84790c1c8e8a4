/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for gpuburn's parameters and judging (workloads/gpu/host/burn_verify.c's configuration,
 * burn_judge.c): defaults, values and refusals of the parameters, fault injection's switches,
 * statistics, floors, and the findings and verdict of a run. The checks themselves:
 * test_burn_verify.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "burn_fixture.h"
#include "common/util.h"
#include "gpu/host/burn_judge.h"
#include "gpu/host/burn_verify.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameters ------------------------------------------------------------------------------ */

static worker_ctx_t *s_ctx(const char *const *params, size_t n, bool inject)
{
    return worker_ctx_new("t1", "node1", params, n, inject);
}

static void test_config_defaults(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx(NULL, 0, false);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.dtype, BURN_BF16);
    assert_int_equal(cfg.duration_ms, 60000);
    assert_int_equal(cfg.interval_ms, 5000);
    assert_int_equal(cfg.matrix, 8192);
    assert_true(cfg.mem_fraction == 0.9);
    assert_true(cfg.min_relative == 0.9);
    assert_false(cfg.has_min_tflops);
    assert_int_equal(cfg.inject, BURN_INJECT_NONE);
    assert_string_equal(cfg.devices, "all");
    worker_ctx_destroy(&ctx);
    const char *fp8[] = {"dtype=fp8"}; /* its GEMMs long enough for the checksums' read of C */
    ctx = s_ctx(fp8, 1, false);
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.matrix, 24576);
    worker_ctx_destroy(&ctx);
    const char *fp8_set[] = {"dtype=fp8", "matrix=8192"};
    ctx = s_ctx(fp8_set, 2, false);
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.matrix, 8192);
    worker_ctx_destroy(&ctx);
}

static void test_config_values(void **state)
{
    (void)state;
    const char *p[] = {"dtype=fp64",       "duration=20s", "interval=30s",  "matrix=1000",
                       "mem_fraction=0.5", "devices=0,1",  "min_tflops=40", "min_relative=0"};
    worker_ctx_t *ctx = s_ctx(p, 8, false);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.dtype, BURN_FP64);
    assert_int_equal(cfg.duration_ms, 20000);
    assert_int_equal(cfg.interval_ms, 20000); /* not longer than the run */
    assert_int_equal(cfg.matrix, 992);        /* a multiple of 16 */
    assert_true(cfg.mem_fraction == 0.5);
    assert_string_equal(cfg.devices, "0,1");
    assert_true(cfg.has_min_tflops && cfg.min_tflops == 40);
    assert_true(cfg.min_relative == 0);
    worker_ctx_destroy(&ctx);
}

static void s_expect_bad(const char *param, int rc, const char *needle)
{
    const char *p[] = {param};
    worker_ctx_t *ctx = s_ctx(p, 1, false);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), rc);
    const char *err = worker_result(ctx)->error;
    assert_non_null(err);
    if (!strstr(err, needle))
        fail_msg("'%s': error '%s' lacks '%s'", param, err, needle);
    worker_ctx_destroy(&ctx);
}

static void test_config_bad(void **state)
{
    (void)state;
    s_expect_bad("dtype=int8", -EINVAL, "dtype 'int8'");
    s_expect_bad("duration=0s", -EINVAL, "duration");
    s_expect_bad("interval=1ms", -EINVAL, "interval");
    s_expect_bad("matrix=100", -EINVAL, "matrix");
    s_expect_bad("matrix=70000", -EINVAL, "matrix");
    s_expect_bad("mem_fraction=0", -EINVAL, "mem_fraction");
    s_expect_bad("mem_fraction=1.5", -EINVAL, "mem_fraction");
    s_expect_bad("min_relative=2", -EINVAL, "min_relative");
    s_expect_bad("min_tflops=-1", -EINVAL, "min_tflops");
    s_expect_bad("inject_corrupt=flip", -EPERM, "--allow-fault-injection");
}

static void test_config_inject(void **state)
{
    (void)state;
    const char *modes[] = {"flip", "nan", "systematic"};
    for (int i = 0; i < 3; i++) {
        char param[64];
        snprintf(param, sizeof param, "inject_corrupt=%s", modes[i]);
        const char *p[] = {param};
        worker_ctx_t *ctx = s_ctx(p, 1, true);
        burn_config_t cfg;
        assert_int_equal(burn_config_parse(ctx, &cfg), 0);
        assert_int_equal(cfg.inject, BURN_INJECT_FLIP + i);
        assert_string_equal(burn_inject_name(cfg.inject), modes[i]);
        worker_ctx_destroy(&ctx);
    }
    const char *p[] = {"inject_corrupt=melt"};
    worker_ctx_t *ctx = s_ctx(p, 1, true);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), -EINVAL);
    worker_ctx_destroy(&ctx);
}

static void test_statistics(void **state)
{
    (void)state;
    double v[] = {5, 1, 4, 2, 3};
    assert_true(burn_median(v, 5) == 3);
    assert_true(burn_median(v, 4) == 3); /* 5 1 4 2 -> (2 + 4) / 2 */
    assert_true(burn_min(v, 5) == 1);
    assert_true(isnan(burn_median(v, 0)));
    assert_true(isnan(burn_min(v, 0)));
    assert_true(v[0] == 5); /* untouched */
}

/* ---- judging --------------------------------------------------------------------------------- */

static burn_config_t s_cfg(void)
{
    burn_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.dtype = BURN_BF16;
    cfg.duration_ms = 60000;
    cfg.interval_ms = 5000;
    cfg.matrix = 8192;
    cfg.mem_fraction = 0.9;
    cfg.min_relative = 0.9;
    cfg.devices = "all";
    return cfg;
}

/* n GPUs of one model, each burning at the given TFLOPS for 4 intervals. */
static burn_gpu_t *s_gpus(size_t n, const double *tflops)
{
    burn_gpu_t *g = burn_fixture_gpus(n, "NVIDIA H200", 690, 990, 12000, 4);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            burn_gpu_add_interval(&g[i], tflops[i] + k);
    return g;
}

static double s_metric(const fb_result_t *r, const char *name)
{
    const fb_metric_t *m = fb_result_metric(r, name);
    if (!m)
        fail_msg("no metric %s", name);
    return m->value;
}

/* The one finding of r (there must be exactly one) on part, containing needle. */
static void s_one_finding(const fb_result_t *r, const char *part, const char *needle)
{
    assert_int_equal(r->n_findings, 1);
    assert_string_equal(r->findings[0].part, part);
    assert_string_equal(r->findings[0].kind, "gpu");
    if (!strstr(r->findings[0].what, needle))
        fail_msg("finding '%s' lacks '%s'", r->findings[0].what, needle);
}

static void test_judge_pass(void **state)
{
    (void)state;
    double tf[] = {680, 684};
    burn_gpu_t *g = s_gpus(2, tf);
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_PASS);
    assert_int_equal(r->n_findings, 0);
    assert_null(r->error);
    assert_true(s_metric(r, "gpu0.tflops_median") == 681.5);
    assert_true(s_metric(r, "gpu0.tflops_min") == 680);
    assert_true(s_metric(r, "gpu1.blas_peak_tflops") == 690);
    assert_true(fabs(s_metric(r, "gpu1.burn_vs_peak") - 685.5 / 690) < 1e-12);
    assert_true(s_metric(r, "gpu1.errors") == 0);
    assert_true(s_metric(r, "gpu1.nan_inf") == 0);
    assert_true(s_metric(r, "gpu1.kat_errors") == 0);
    assert_true(s_metric(r, "tflops_median") == (681.5 + 685.5) / 2);
    assert_true(s_metric(r, "gpus") == 2);
    char *line = burn_summary(&cfg, g, 2, FB_VERDICT_PASS);
    assert_non_null(strstr(line, "gpuburn pass bf16 8192: gpu0 NVIDIA H200 681.5 TFLOPS median"));
    assert_non_null(strstr(line, "; gpu1 NVIDIA H200 685.5 TFLOPS median (min 684.0, peak 690.0"));
    free(line);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);
}

static void test_judge_miscompare(void **state)
{
    (void)state;
    double tf[] = {680, 684};
    burn_gpu_t *g = s_gpus(2, tf);
    g[1].repeat.mismatches = 1;
    g[1].repeat.first_mismatch = burn_key(17, 5);
    snprintf(g[1].repeat_detail, sizeof g[1].repeat_detail,
             "C[17] row 5 col 0 = 1.5, C[0] has 0.75");
    g[1].injected = BURN_INJECT_FLIP;
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu1",
                  "gpu1 (NVIDIA H200, PCI 0000:1a:00.0): 1 result element(s) "
                  "differ between repeats");
    assert_non_null(strstr(r->findings[0].what, "C[17] row 5 col 0 = 1.5, C[0] has 0.75"));
    assert_true(s_metric(r, "gpu1.errors") == 1);
    assert_true(s_metric(r, "gpu0.errors") == 0);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);
}

static void test_judge_nan(void **state)
{
    (void)state;
    double tf[] = {680};
    burn_gpu_t *g = s_gpus(1, tf);
    g[0].repeat.nonfinite = 1;
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "", &cfg, g, 1, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "localhost/gpu0", "1 NaN/Inf result element(s)");
    assert_true(s_metric(r, "gpu0.nan_inf") == 1);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 1);
}

static void test_judge_kat(void **state)
{
    (void)state;
    double tf[] = {680, 681, 682};
    burn_gpu_t *g = s_gpus(3, tf);
    g[2].kat.mismatches = 8000;
    g[2].injected = BURN_INJECT_SYSTEMATIC;
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "n7", &cfg, g, 3, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "n7/gpu2", "8000 element(s) of the known-answer bf16 GEMM");
    assert_true(s_metric(r, "gpu2.kat_errors") == 8000);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 3);
}

static void test_judge_floors(void **state)
{
    (void)state;
    double tf[] = {680, 682, 500, 684};
    burn_gpu_t *g = s_gpus(4, tf);
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 4, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu2", "of the median");
    assert_non_null(strstr(r->findings[0].what, "the 4 NVIDIA H200 GPUs"));
    fb_result_destroy(&r);

    /* Relative floor off, absolute floor on. */
    cfg.min_relative = 0;
    cfg.has_min_tflops = true;
    cfg.min_tflops = 600;
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 4, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu2", "below the floor min_tflops=600");
    fb_result_destroy(&r);

    /* A different model is not compared with the H200s. */
    cfg.has_min_tflops = false;
    cfg.min_relative = 0.9;
    snprintf(g[2].name, sizeof g[2].name, "NVIDIA H100 PCIe");
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 4, 0), FB_VERDICT_PASS);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 4);
}

static void test_judge_states(void **state)
{
    (void)state;
    double tf[] = {680, 681};
    burn_config_t cfg = s_cfg();

    /* fp8 before sm_89 on every GPU: skipped with the reason, and a metric per GPU. */
    burn_gpu_t *g = s_gpus(2, tf);
    cfg.dtype = BURN_FP8;
    for (int i = 0; i < 2; i++) {
        g[i].state = BURN_GPU_UNSUPPORTED;
        snprintf(g[i].error, sizeof g[i].error, "fp8 needs compute capability 8.9");
    }
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_SKIPPED);
    assert_non_null(strstr(r->error, "dtype fp8 does not run on NVIDIA H200"));
    assert_true(s_metric(r, "gpu1.dtype_unsupported") == 1);
    fb_result_destroy(&r);

    /* A GPU that could not be set up: error (an allocation failure is a result). */
    cfg.dtype = BURN_BF16;
    g[0].state = BURN_GPU_OK;
    g[1].state = BURN_GPU_SETUP_ERROR;
    snprintf(g[1].error, sizeof g[1].error, "allocating operand A (128.0 MiB): out of memory");
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_ERROR);
    assert_non_null(strstr(r->error, "gpu1 (NVIDIA H200, PCI 0000:1a:00.0): allocating operand A"));
    assert_int_equal(r->n_findings, 0);
    fb_result_destroy(&r);

    /* A GPU that failed under load is the suspect. */
    g[1].state = BURN_GPU_RUN_ERROR;
    snprintf(g[1].error, sizeof g[1].error, "running GEMMs: unspecified launch failure");
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu1", "failed under bf16 GEMM load: running GEMMs");
    fb_result_destroy(&r);

    /* New GPU faults from telemetry fail the task (telemetry names the GPU). */
    g[1].state = BURN_GPU_OK;
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 2), FB_VERDICT_FAIL);
    assert_true(s_metric(r, "telemetry_faults") == 2);
    fb_result_destroy(&r);

    /* An injection nobody noticed is an error, never a pass. */
    g[0].injected = BURN_INJECT_NAN;
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_ERROR);
    assert_non_null(strstr(r->error, "inject_corrupt=nan was not detected"));
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);

    /* No GPU at all. */
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, NULL, 0, 0), FB_VERDICT_SKIPPED);
    fb_result_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),  cmocka_unit_test(test_config_values),
        cmocka_unit_test(test_config_bad),       cmocka_unit_test(test_config_inject),
        cmocka_unit_test(test_statistics),       cmocka_unit_test(test_judge_pass),
        cmocka_unit_test(test_judge_miscompare), cmocka_unit_test(test_judge_nan),
        cmocka_unit_test(test_judge_kat),        cmocka_unit_test(test_judge_floors),
        cmocka_unit_test(test_judge_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
