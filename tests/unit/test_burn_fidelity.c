/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for what gpuburn makes of its per-GEMM checksums and SDC probe (workloads/gpu/host/
 * burn_fidelity.c, burn_judge.c): the parameters (abft, abft_sms, sdc_probe, and the test-only
 * inject_corrupt=gemm|sdc, inject_gemms, inject_seed, refused without the switch); an interval's
 * counters and records folded into a GPU, with each injected flip matched to the GEMM the checks
 * flagged and to its row and column; a bad GEMM failing the task with a finding that names the
 * GPU, the GEMM and its interval; checks that did not cover every GEMM making the task an error;
 * an SM off the majority of the probe named in a finding of kind sdc, as is a probe without a
 * majority; the odd GPU of a model named across GPUs, and two GPUs that disagree both named; and
 * every injection judged seen only when what was injected was named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "burn_fixture.h"

#include "common/util.h"
#include "gpu/host/burn_fidelity.h"
#include "gpu/host/burn_judge.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOOD 0x600d600d600dull

static worker_ctx_t *s_ctx(const char *const *params, size_t n, bool inject)
{
    return worker_ctx_new("t1", "node1", params, n, inject);
}

static int s_parse(const char *const *params, size_t n, bool inject, burn_config_t *cfg,
                   char *error, size_t len)
{
    worker_ctx_t *ctx = s_ctx(params, n, inject);
    int rc = burn_config_parse(ctx, cfg);
    fb_result_t *r = worker_result(ctx);
    snprintf(error, len, "%s", r->error ? r->error : "");
    worker_ctx_destroy(&ctx);
    return rc;
}

static burn_gpu_t *s_gpus(size_t n)
{
    burn_gpu_t *g = burn_fixture_gpus(n, "NVIDIA H100 80GB HBM3", 700, 559, 3600, 3);
    for (size_t i = 0; i < n; i++) {
        g[i].abft = true;
        g[i].abft_checked = 3600;
        g[i].abft_sms = 4;
        g[i].sdc_inject_sm = -1;
        for (int k = 0; k < 3; k++)
            burn_gpu_add_interval(&g[i], 690 + k);
    }
    return g;
}

static burn_config_t s_cfg(void)
{
    burn_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.dtype = BURN_BF16;
    cfg.matrix = 8192;
    cfg.min_relative = 0.9;
    cfg.abft = cfg.sdc = true;
    cfg.abft_sms = -1;
    return cfg;
}

static double s_metric(const fb_result_t *r, const char *name)
{
    for (size_t i = 0; i < r->n_metrics; i++)
        if (!strcmp(r->metrics[i].name, name))
            return r->metrics[i].value;
    return -1;
}

/* Findings of `kind` on `part`. */
static size_t s_count(const fb_result_t *r, const char *part, const char *kind)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_findings; i++)
        n += !strcmp(r->findings[i].part, part) && !strcmp(r->findings[i].kind, kind);
    return n;
}

static const char *s_finding(const fb_result_t *r, const char *part, const char *kind)
{
    for (size_t i = 0; i < r->n_findings; i++)
        if (!strcmp(r->findings[i].part, part) && !strcmp(r->findings[i].kind, kind))
            return r->findings[i].what;
    return "";
}

/* ---- parameters ------------------------------------------------------------------------------ */

static void test_config(void **state)
{
    (void)state;
    burn_config_t cfg;
    char err[256];
    assert_int_equal(s_parse(NULL, 0, false, &cfg, err, sizeof err), 0);
    assert_true(cfg.abft && cfg.sdc);
    assert_int_equal(cfg.abft_sms, -1);
    const char *off[] = {"abft=false", "sdc_probe=false", "abft_sms=0"};
    assert_int_equal(s_parse(off, 3, false, &cfg, err, sizeof err), 0);
    assert_false(cfg.abft || cfg.sdc);
    assert_int_equal(cfg.abft_sms, 0);
    const char *four[] = {"abft_sms=4"};
    assert_int_equal(s_parse(four, 1, false, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.abft_sms, 4);
    const char *bad[][1] = {{"abft=maybe"}, {"abft_sms=65"}, {"sdc_probe=2"}, {"abft_sms=-1"}};
    const char *why[] = {"abft 'maybe' must be true or false",
                         "abft_sms '65' must be auto or a whole number from 0 to 64",
                         "sdc_probe '2' must be true or false", "abft_sms '-1'"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(s_parse(bad[i], 1, false, &cfg, err, sizeof err), -EINVAL);
        assert_non_null(strstr(err, why[i]));
    }
}

static void test_config_injection(void **state)
{
    (void)state;
    burn_config_t cfg;
    char err[256];
    const char *gemm[] = {"inject_corrupt=gemm", "inject_gemms=20", "inject_seed=77"};
    assert_int_equal(s_parse(gemm, 3, true, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.inject, BURN_INJECT_GEMM);
    assert_int_equal(cfg.inject_gemms, 20);
    assert_true(cfg.inject_seed == 77);
    assert_string_equal(burn_inject_name(cfg.inject), "gemm");
    const char *sdc[] = {"inject_corrupt=sdc"};
    assert_int_equal(s_parse(sdc, 1, true, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.inject, BURN_INJECT_SDC);
    assert_int_equal(cfg.inject_gemms, 1);
    /* Every test-only parameter is refused without the switch, before anything runs. */
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(s_parse(&gemm[i], 1, false, &cfg, err, sizeof err), -EPERM);
        assert_non_null(strstr(err, "refused: the agent was not started with "
                                    "--allow-fault-injection"));
    }
    const char *many[] = {"inject_gemms=33"};
    assert_int_equal(s_parse(many, 1, true, &cfg, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "inject_gemms '33' must be a whole number from 1 to 32"));
    const char *nocheck[] = {"inject_corrupt=gemm", "abft=false"};
    assert_int_equal(s_parse(nocheck, 2, true, &cfg, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "needs abft=true"));
    const char *noprobe[] = {"inject_corrupt=sdc", "sdc_probe=false"};
    assert_int_equal(s_parse(noprobe, 2, true, &cfg, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "needs sdc_probe=true"));
    const char *melt[] = {"inject_corrupt=melt"};
    assert_int_equal(s_parse(melt, 1, true, &cfg, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "must be flip, nan, systematic, gemm or sdc"));
}

/* ---- checksums ------------------------------------------------------------------------------- */

/* One interval: 1200 GEMMs checked, two bad ones recorded; three flips, two of which the checks
 * flagged (one at its element, one elsewhere in its GEMM) and one in a GEMM they passed. */
static void s_interval(burn_abft_state_t *st, burn_abft_injection_t inj[3])
{
    const uint64_t n = 8192;
    memset(st, 0, sizeof *st);
    st->checked = 1200;
    st->gemms_bad = 2;
    st->sums_off = 4;
    float ratio = 3.5f;
    memcpy(&st->max_ratio_bits, &ratio, sizeof ratio);
    st->n_bad = 2;
    st->bad[0] = (burn_abft_bad_t){.gemm = 1433, .buffer = 315, .col_off = 1, .row_off = 1,
                                   .col_key = burn_abft_key(6584 / 256, 819, n),
                                   .row_key = burn_abft_key(819 / 256, 6584, n),
                                   .col_got = 59.0, .col_ref = 92.0, .row_got = -447.5,
                                   .row_ref = -414.5};
    st->bad[1] = (burn_abft_bad_t){.gemm = 1500, .buffer = 382, .col_off = 1, .row_off = 0,
                                   .col_key = burn_abft_key(0, 5, n), .row_key = BURN_NO_KEY};
    inj[0] = (burn_abft_injection_t){.gemm = 1433, .buffer = 315, .bit = 15, .row = 6584,
                                     .col = 819, .before = -18, .after = 18, .bound = 15};
    inj[1] = (burn_abft_injection_t){.gemm = 1500, .buffer = 382, .bit = 7, .row = 9, .col = 9};
    inj[2] = (burn_abft_injection_t){.gemm = 1600, .buffer = 482, .bit = 7, .row = 1, .col = 1};
}

static void test_add_abft(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(1);
    g->abft_checked = 0;
    burn_abft_state_t st;
    burn_abft_injection_t inj[3];
    s_interval(&st, inj);
    burn_gpu_add_abft(g, 2, 8192, &st, inj, 3);
    assert_int_equal(g->abft_checked, 1200);
    assert_int_equal(g->abft_gemms_bad, 2);
    assert_int_equal(g->abft_sums_off, 4);
    assert_true(g->abft_max_ratio == 3.5);
    assert_int_equal(g->abft_injected, 3);
    assert_int_equal(g->abft_found, 2);
    assert_int_equal(g->abft_located, 1);
    assert_non_null(strstr(g->abft_detail, "interval 3, GEMM 1433 (C[315]): 1 column-block and "
                                           "1 row-block sum(s) off, first at row 6584 col 819"));
    /* A flip that found no element (bit -1) is not counted as done. */
    inj[0].bit = -1;
    st.n_bad = 0;
    burn_gpu_add_abft(g, 3, 8192, &st, inj, 1);
    assert_int_equal(g->abft_injected, 3);
    /* More bad GEMMs than the log holds: counted, the first kept. */
    st.n_bad = BURN_ABFT_LOG + 10;
    burn_gpu_add_abft(g, 4, 8192, &st, inj, 0);
    assert_non_null(strstr(g->abft_detail, "interval 3,"));
    burn_fixture_free_gpus(g, 1);
}

static void test_judge_abft(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(2);
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_PASS);
    assert_true(s_metric(r, "gpu0.abft_checked") == 3600);
    assert_true(s_metric(r, "gpu1.abft_gemms_bad") == 0);
    assert_true(s_metric(r, "gpu1.abft_sms") == 4);
    /* The node's figures: GEMMs, how many checked, the worst GPU against its own peak. */
    assert_true(s_metric(r, "gemms") == 7200);
    assert_true(s_metric(r, "gemms_checked") == 7200);
    assert_float_equal(s_metric(r, "overhead_vs_peak_pct"), 100 * (1 - 691.0 / 700), 1e-9);
    fb_result_destroy(&r);
    g[1].peak_tflops = 705; /* gpu1 now the worst */
    g[0].abft_checked = 3000;
    g[0].abft = false; /* its count is not the node's */
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_PASS);
    assert_true(s_metric(r, "gemms_checked") == 3600);
    assert_float_equal(s_metric(r, "overhead_vs_peak_pct"), 100 * (1 - 691.0 / 705), 1e-9);
    fb_result_destroy(&r);
    g[0].abft = true;
    g[0].abft_checked = 3600;

    burn_abft_state_t st;
    burn_abft_injection_t inj[3];
    s_interval(&st, inj);
    g[1].abft_checked = 2400;
    burn_gpu_add_abft(&g[1], 0, 8192, &st, inj, 0);
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_FAIL);
    /* Its own kind, on the GPU's part; nothing on the other GPU. */
    assert_int_equal(s_count(r, "node1/gpu1", "checksum"), 1);
    assert_int_equal(s_count(r, "node1/gpu1", "gpu"), 0);
    assert_int_equal(s_count(r, "node1/gpu0", "checksum"), 0);
    const char *what = s_finding(r, "node1/gpu1", "checksum");
    assert_non_null(strstr(what, "gpu1 (NVIDIA H100 80GB HBM3, PCI 0000:1a:00.0): 2 of 3600 "
                                 "bf16 GEMMs gave a result whose block checksums disagree"));
    assert_non_null(strstr(what, "first interval 1, GEMM 1433 (C[315])"));
    assert_true(s_metric(r, "gpu1.abft_gemms_bad") == 2);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);
}

/* Checks that missed GEMMs (a kernel that never ran) make the task an error, not a pass. */
static void test_judge_abft_incomplete(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(1);
    g->abft_checked = 3599;
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_ERROR);
    assert_non_null(strstr(r->error, "checksums ran for 3599 of 3600 burn GEMMs"));
    fb_result_destroy(&r);
    /* With the checks off nothing is expected of them. */
    g->abft = false;
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_PASS);
    assert_true(s_metric(r, "gpu0.abft_checked") == -1);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 1);
}

static void test_injection_gemm(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(1);
    burn_config_t cfg = s_cfg();
    cfg.inject = BURN_INJECT_GEMM;
    g->injected = BURN_INJECT_GEMM;
    g->abft_planned = 3;
    g->abft_injected = g->abft_found = 3;
    g->abft_gemms_bad = 3;
    assert_true(burn_abft_injection_seen(g));
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_FAIL);
    assert_null(r->error);
    fb_result_destroy(&r);
    /* One flip not flagged: the injection went unseen, the task is an error. */
    g->abft_found = 2;
    g->abft_gemms_bad = 0;
    assert_false(burn_abft_injection_seen(g));
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_ERROR);
    assert_non_null(strstr(r->error, "inject_corrupt=gemm was not detected (a corrupted GEMM was "
                                     "not flagged)"));
    fb_result_destroy(&r);
    /* A planned flip never done (the GEMM was never reached) is not a detection either. */
    g->abft_injected = g->abft_found = 2;
    assert_false(burn_abft_injection_seen(g));
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_ERROR);
    assert_non_null(strstr(r->error, "not every planned GEMM was corrupted"));
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 1);
}

/* ---- SDC probe ------------------------------------------------------------------------------- */

/* One probe: 4 blocks on each of 132 SMs, every one GOOD but `bad_sm`'s (-1: none). */
static void s_probe(burn_gpu_t *g, int bad_sm, uint64_t good)
{
    sdc_sample_t s[528];
    for (uint32_t i = 0; i < 528; i++)
        s[i] = (sdc_sample_t){i % 132, 0, (int)(i % 132) == bad_sm ? good ^ 1 : good};
    burn_gpu_add_sdc(g, s, 528);
}

static void test_sdc_sm(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(1);
    burn_config_t cfg = s_cfg();
    for (int p = 0; p < 3; p++)
        s_probe(g, -1, GOOD + p);
    assert_int_equal(g->sdc_probes, 3);
    assert_int_equal(g->sdc_sms, 132);
    assert_int_equal(g->sdc_blocks, 3 * 528);
    assert_int_equal(g->sdc_blocks_off, 0);
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_PASS);
    assert_true(s_metric(r, "gpu0.sdc_sms") == 132);
    assert_true(s_metric(r, "gpu0.sdc_odd_sms") == 0);
    fb_result_destroy(&r);
    /* SM 123 wrong in two probes: named in one finding of kind sdc on the GPU. */
    s_probe(g, 123, GOOD);
    s_probe(g, 123, GOOD);
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_FAIL);
    assert_int_equal(s_count(r, "node1/gpu0", "sdc"), 1);
    assert_non_null(strstr(s_finding(r, "node1/gpu0", "sdc"),
                           "1 SM(s) computed a different result from the majority of its 132 "
                           "SMs on identical deterministic work (SM 123 in 2 of 5 probes; 8 of "
                           "2640 probe blocks off)"));
    assert_true(s_metric(r, "gpu0.sdc_odd_sms") == 1);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 1);
}

static void test_sdc_no_majority(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(1);
    burn_config_t cfg = s_cfg();
    sdc_sample_t s[8];
    for (uint32_t i = 0; i < 8; i++)
        s[i] = (sdc_sample_t){i, 0, i < 4 ? GOOD : GOOD + 9};
    burn_gpu_add_sdc(g, s, 8);
    assert_int_equal(g->sdc_no_majority, 1);
    assert_true(g->sdc_digest[0] == 0); /* this probe takes no part in comparing GPUs */
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_FAIL);
    assert_non_null(strstr(s_finding(r, "node1/gpu0", "sdc"),
                           "in 1 of 1 SDC probes no result had a majority"));
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 1);
}

/* Eight GPUs of one model: gpu5's probes agree among its SMs but not with the other GPUs. */
static void test_sdc_gpus(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(8);
    burn_config_t cfg = s_cfg();
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 8; i++)
            s_probe(&g[i], -1, i == 5 && p >= 1 ? GOOD + 100 + p : GOOD + p);
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 8, 0), FB_VERDICT_FAIL);
    assert_int_equal(r->n_findings, 1);
    assert_non_null(strstr(s_finding(r, "node1/gpu5", "sdc"),
                           "gpu5 (NVIDIA H100 80GB HBM3, PCI 0000:1e:00.0): its SDC probe result "
                           "differs from the other 7 NVIDIA H100 80GB HBM3 GPUs of this task in 3 "
                           "of 4 probes"));
    fb_result_destroy(&r);
    /* A GPU of another model is compared only with its own kind. */
    snprintf(g[5].name, sizeof g[5].name, "NVIDIA H200");
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 8, 0), FB_VERDICT_PASS);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 8);
}

/* Two GPUs that disagree: no majority, both named as undecided. */
static void test_sdc_two_gpus(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(2);
    burn_config_t cfg = s_cfg();
    s_probe(&g[0], -1, GOOD);
    s_probe(&g[1], -1, GOOD + 1);
    s_probe(&g[0], -1, GOOD + 7);
    s_probe(&g[1], -1, GOOD + 7);
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_FAIL);
    for (int i = 0; i < 2; i++) {
        char part[32];
        snprintf(part, sizeof part, "node1/gpu%d", i);
        assert_non_null(strstr(s_finding(r, part, "sdc"),
                               "GPUs of this task disagree on the SDC probe's result in 1 of 2 "
                               "probes with no majority"));
    }
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);
}

static void test_injection_sdc(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(1);
    burn_config_t cfg = s_cfg();
    cfg.inject = BURN_INJECT_SDC;
    g->injected = BURN_INJECT_SDC;
    g->sdc_inject_sm = 17;
    s_probe(g, 17, GOOD);
    assert_true(burn_sdc_injection_seen(g));
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_FAIL);
    assert_null(r->error);
    fb_result_destroy(&r);
    /* Another SM named (or none): the injected one went unseen. */
    burn_gpu_clear(g);
    free(g);
    g = s_gpus(1);
    g->injected = BURN_INJECT_SDC;
    g->sdc_inject_sm = 17;
    s_probe(g, 90, GOOD);
    assert_false(burn_sdc_injection_seen(g));
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 1, 0), FB_VERDICT_FAIL);
    assert_non_null(strstr(r->error, "inject_corrupt=sdc was not detected (its SM was not named)"));
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 1);
}

static void test_summary(void **state)
{
    (void)state;
    burn_gpu_t *g = s_gpus(1);
    burn_config_t cfg = s_cfg();
    s_probe(g, -1, GOOD);
    char *line = burn_summary(&cfg, g, 1, FB_VERDICT_PASS);
    assert_non_null(strstr(line, "3600 of 3600 GEMMs checksummed (0 bad), SDC probe 132 SMs x 1: "
                                 "0 blocks off"));
    free(line);
    burn_fixture_free_gpus(g, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),         cmocka_unit_test(test_config_injection),
        cmocka_unit_test(test_add_abft),       cmocka_unit_test(test_judge_abft),
        cmocka_unit_test(test_judge_abft_incomplete), cmocka_unit_test(test_injection_gemm),
        cmocka_unit_test(test_sdc_sm),         cmocka_unit_test(test_sdc_no_majority),
        cmocka_unit_test(test_sdc_gpus),       cmocka_unit_test(test_sdc_two_gpus),
        cmocka_unit_test(test_injection_sdc),  cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
