/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the host half of gpumemtest (workloads/gpu/host/gpumem_report.c) with synthetic
 * miscompare lists: pattern and device parsing, coalescing of nearby miscompares into ranges and
 * their text, per-GPU metrics and findings (including the summary of what was not itemised), and
 * the verdict with telemetry faults and unnoticed injections. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gpu/host/gpu_devices.h"

#include "common/util.h"
#include "gpu/host/gpumem_report.h"
#include "scheduler/workload.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_parse_patterns(void **state)
{
    (void)state;
    gpumem_pattern_t *list = NULL;
    size_t n = 0;
    char *bad = NULL;
    assert_int_equal(gpumem_parse_patterns(" all ", &list, &n, &bad), 0);
    assert_int_equal(n, GPUMEM_N_PATTERNS);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(list[i], (int)i);
    free(list);

    assert_int_equal(gpumem_parse_patterns("bit_fade, own_address,modulo20", &list, &n, &bad), 0);
    assert_int_equal(n, 3);
    assert_int_equal(list[0], GPUMEM_BIT_FADE);
    assert_int_equal(list[1], GPUMEM_OWN_ADDRESS);
    assert_int_equal(list[2], GPUMEM_MODULO20);
    free(list);

    assert_int_equal(gpumem_parse_patterns("walking_ones,triad", &list, &n, &bad), -EINVAL);
    assert_null(list);
    assert_string_equal(bad, "triad"); /* internal check, not selectable */
    free(bad);
    assert_int_equal(gpumem_parse_patterns("walking_ones,", &list, &n, &bad), -EINVAL);
    assert_string_equal(bad, "");
    free(bad);
    assert_int_equal(gpumem_parse_patterns(NULL, &list, &n, NULL), -EINVAL);

    /* The campaign schema's list is the enum's, name for name. */
    assert_string_equal(fb_workload_gpumem_patterns[GPUMEM_BIT_FADE], "bit_fade");
    assert_null(fb_workload_gpumem_patterns[GPUMEM_N_PATTERNS]);
    /* Every name the campaign schema accepts round-trips. */
    for (int p = 0; p < GPUMEM_N_PATTERNS; p++)
        assert_int_equal(gpumem_pattern_from_name(gpumem_pattern_name((gpumem_pattern_t)p)), p);
    assert_string_equal(gpumem_pattern_name(GPUMEM_MOVING_INV_RANDOM), "moving_inversions_random");
    assert_string_equal(gpumem_pattern_name(GPUMEM_TRIAD), "triad");
    assert_string_equal(gpumem_pattern_name((gpumem_pattern_t)99), "unknown");
}

/* gpu_parse_devices, shared by every GPU workload (burn, gpumem, allreduce): each spec with the
 * return code and, when it succeeds, the list in the order written. */
static void test_parse_devices(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int n_visible, rc;
        size_t n;
        int list[4];
    } cases[] = {
        {"all", 4, 0, 4, {0, 1, 2, 3}},
        {"3, 1", 4, 0, 2, {3, 1}},
        {" 3 , 1 ", 4, 0, 2, {3, 1}},
        {"4", 4, -ENODEV, 0, {0}},
        {"all", 0, -ENODEV, 0, {0}},
        {"1,1", 4, -EINVAL, 0, {0}},
        {"0,0", 4, -EINVAL, 0, {0}},
        {"-1", 4, -EINVAL, 0, {0}},
        {"0,,1", 4, -EINVAL, 0, {0}},
        {"1,", 4, -EINVAL, 0, {0}},
        {"1 2", 4, -EINVAL, 0, {0}},
        {"gpu0", 4, -EINVAL, 0, {0}},
        {"", 4, -EINVAL, 0, {0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int *list = NULL;
        size_t n = 0;
        printf("gpu_parse_devices(\"%s\", %d)\n", cases[c].text, cases[c].n_visible);
        assert_int_equal(gpu_parse_devices(cases[c].text, cases[c].n_visible, &list, &n),
                         cases[c].rc);
        assert_int_equal(n, cases[c].n);
        if (cases[c].rc)
            assert_null(list);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(list[i], cases[c].list[i]);
        free(list);
    }
}

static gpumem_miscompare_t s_mc(uint64_t addr, uint64_t xor_bits, gpumem_pattern_t p, unsigned pass)
{
    gpumem_miscompare_t m = {addr, 0x5555555555555555ULL, 0x5555555555555555ULL ^ xor_bits, p,
                             pass};
    return m;
}

static void test_coalesce(void **state)
{
    (void)state;
    size_t n = 0;
    assert_null(gpumem_coalesce(NULL, 0, 4096, 65536, &n));
    assert_int_equal(n, 0);

    /* Unsorted: 12 errors in one 4 KiB block, one 8 KiB further on (merges: gap < 64 KiB), and
     * one far away (its own range). */
    gpumem_miscompare_t m[16];
    size_t k = 0;
    for (int i = 0; i < 12; i++)
        m[k++] = s_mc(0x3f2000000ULL + (uint64_t)(11 - i) * 256, 0x4, GPUMEM_OWN_ADDRESS, 0);
    m[k++] = s_mc(0x3f2003008ULL, 0x100000000ULL, GPUMEM_MODULO20, 1);
    m[k++] = s_mc(0x500000010ULL, 0x1, GPUMEM_BIT_FADE, 2);
    gpumem_range_t *r = gpumem_coalesce(m, k, 4096, 65536, &n);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].first, 0x3f2000000ULL);
    assert_int_equal(r[0].last, 0x3f2003fffULL);
    assert_int_equal(r[0].errors, 13);
    assert_int_equal(r[0].bits, 0x100000004ULL);
    assert_int_equal(r[0].patterns, (1u << GPUMEM_OWN_ADDRESS) | (1u << GPUMEM_MODULO20));
    assert_int_equal(r[0].passes_lo, 0);
    assert_int_equal(r[0].passes_hi, 1);
    assert_int_equal(r[1].first, 0x500000000ULL);
    assert_int_equal(r[1].last, 0x500000fffULL);
    assert_int_equal(r[1].errors, 1);

    char text[256];
    gpumem_format_range(&r[0], "gpu0", text, sizeof text);
    assert_string_equal(text, "gpu0 0x3f2000000-0x3f2003fff: 13 errors, bits 0x0000000100000004 "
                              "(own_address, modulo20, passes 1-2)");
    gpumem_format_range(&r[1], "gpu3", text, sizeof text);
    assert_string_equal(text, "gpu3 0x500000000-0x500000fff: 1 error, bits 0x0000000000000001 "
                              "(bit_fade, pass 3)");
    /* A short buffer is truncated, never overrun. */
    char small[12];
    gpumem_format_range(&r[0], "gpu0", small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    free(r);

    /* Without a gap every block is its own range; blocks exactly gap apart stay apart. */
    gpumem_miscompare_t pair[2] = {s_mc(0x10000, 1, GPUMEM_WALKING_ONES, 0),
                                   s_mc(0x10000 + 4096 + 65536, 2, GPUMEM_WALKING_ONES, 0)};
    r = gpumem_coalesce(pair, 2, 4096, 65536, &n);
    assert_int_equal(n, 2);
    free(r);
    pair[1].addr -= 8;
    r = gpumem_coalesce(pair, 2, 4096, 65536, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].last, 0x10000 + 4096 + 65536 - 1);
    free(r);

    /* A bad granule falls back to single words; the top of the address space does not wrap. */
    gpumem_miscompare_t top[2] = {s_mc(UINT64_MAX - 7, 1, GPUMEM_WALKING_ONES, 0),
                                  s_mc(0, 1, GPUMEM_WALKING_ONES, 0)};
    r = gpumem_coalesce(top, 2, 3000, 0, &n);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].first, 0);
    assert_int_equal(r[0].last, 7);
    assert_int_equal(r[1].last, UINT64_MAX);
    free(r);
}

static gpumem_gpu_t s_gpu(int dev)
{
    gpumem_gpu_t g;
    memset(&g, 0, sizeof g);
    g.device = dev;
    snprintf(g.pci, sizeof g.pci, "0000:%02x:00.0", 0x17 + dev);
    snprintf(g.name, sizeof g.name, "NVIDIA H200");
    g.total_bytes = 150ULL << 30;
    g.free_bytes = 149ULL << 30;
    g.tested_bytes = 137ULL << 30;
    g.chunks = 1;
    g.triad_gbs = 4210.5;
    return g;
}

static void test_report_clean(void **state)
{
    (void)state;
    fb_result_t *res = fb_result_new();
    gpumem_gpu_t g = s_gpu(1);
    assert_int_equal(gpumem_report_gpu(res, "node07", &g), 0);
    assert_int_equal(res->n_findings, 0);
    assert_true(fb_result_metric(res, "gpu1.tested_bytes")->value == (double)(137ULL << 30));
    assert_true(fb_result_metric(res, "gpu1.tested_fraction")->value > 0.913);
    assert_true(fb_result_metric(res, "gpu1.tested_fraction")->value < 0.914);
    assert_true(fb_result_metric(res, "gpu1.errors")->value == 0);
    assert_true(fb_result_metric(res, "gpu1.triad_gbs")->value == 4210.5);
    assert_string_equal(fb_result_metric(res, "gpu1.triad_gbs")->unit, "GB/s");
    assert_int_equal(gpumem_verdict(&g, 1, 0), FB_VERDICT_PASS);

    char *line = gpumem_summary(&g, 1, FB_VERDICT_PASS, 0);
    assert_string_equal(line,
                        "gpumemtest pass: gpu1 137.0 GiB (91.3% of 150.0 GiB), 0 errors, triad "
                        "4210 GB/s");
    free(line);
    fb_result_destroy(&res);

    /* Triad not measured: no metric. */
    res = fb_result_new();
    g.triad_gbs = 0;
    gpumem_report_gpu(res, "", &g);
    assert_null(fb_result_metric(res, "gpu1.triad_gbs"));
    fb_result_destroy(&res);
}

static void test_report_errors(void **state)
{
    (void)state;
    fb_result_t *res = fb_result_new();
    gpumem_gpu_t g = s_gpu(0);
    gpumem_miscompare_t m[3] = {s_mc(0x7f3f2000010ULL, 0x4, GPUMEM_WALKING_ONES, 0),
                                s_mc(0x7f3f2000800ULL, 0x4, GPUMEM_WALKING_ONES, 0),
                                s_mc(0x7f400000000ULL, 0x80, GPUMEM_MOVING_INV_8, 0)};
    g.records = m;
    g.n_records = 3;
    g.errors = 3;
    assert_int_equal(gpumem_report_gpu(res, "", &g), 2);
    assert_string_equal(res->findings[0].part, "localhost/gpu0");
    assert_string_equal(res->findings[0].kind, "gpu");
    assert_string_equal(res->findings[0].what,
                        "gpu0 0x7f3f2000000-0x7f3f2000fff: 2 errors, bits 0x0000000000000004 "
                        "(walking_ones, pass 1) [PCI 0000:17:00.0, NVIDIA H200]");
    assert_non_null(strstr(res->findings[1].what, "gpu0 0x7f400000000-0x7f400000fff: 1 error"));
    assert_true(fb_result_metric(res, "gpu0.errors")->value == 3);
    assert_int_equal(gpumem_verdict(&g, 1, 0), FB_VERDICT_FAIL);
    fb_result_destroy(&res);

    /* More miscompares than recorded: the rest are summed up in one finding. */
    res = fb_result_new();
    g.errors = 1000;
    assert_int_equal(gpumem_report_gpu(res, "node07", &g), 3);
    assert_string_equal(res->findings[2].part, "node07/gpu0");
    assert_non_null(strstr(res->findings[2].what,
                           "gpu0: 997 more miscompares not itemised (1000 in all); bits seen in "
                           "recorded ones 0x0000000000000084"));
    fb_result_destroy(&res);

    /* Far more ranges than findings allowed: the limit holds and the rest is summed up. */
    size_t many = GPUMEM_MAX_RANGE_FINDINGS + 10;
    gpumem_miscompare_t *spread = xcalloc(many, sizeof *spread);
    for (size_t i = 0; i < many; i++)
        spread[i] = s_mc(0x100000000ULL + i * (1ULL << 24), 1ULL << (i % 64), GPUMEM_MODULO20, 0);
    g.records = spread;
    g.n_records = many;
    g.errors = many;
    res = fb_result_new();
    assert_int_equal(gpumem_report_gpu(res, "n", &g), GPUMEM_MAX_RANGE_FINDINGS + 1);
    assert_non_null(strstr(res->findings[GPUMEM_MAX_RANGE_FINDINGS].what,
                           "10 more miscompares not itemised (42 in all)"));
    fb_result_destroy(&res);
    free(spread);
}

static void test_verdict(void **state)
{
    (void)state;
    gpumem_gpu_t g[2] = {s_gpu(0), s_gpu(1)};
    assert_int_equal(gpumem_verdict(g, 2, 0), FB_VERDICT_PASS);
    /* New XID / ECC / retired pages during the run fail it even without miscompares. */
    assert_int_equal(gpumem_verdict(g, 2, 2), FB_VERDICT_FAIL);
    /* Telemetry that could not run is not a failure. */
    assert_int_equal(gpumem_verdict(g, 2, -ENOENT), FB_VERDICT_PASS);
    char *line = gpumem_summary(g, 2, FB_VERDICT_FAIL, 2);
    assert_non_null(strstr(line, "; gpu1 137.0 GiB"));
    assert_non_null(strstr(line, "; 2 new GPU faults in telemetry"));
    free(line);

    /* A GPU that could not be tested is an error, unless another one failed. */
    snprintf(g[1].error, sizeof g[1].error, "cudaMalloc: out of memory");
    assert_int_equal(gpumem_verdict(g, 2, 0), FB_VERDICT_ERROR);
    line = gpumem_summary(g, 2, FB_VERDICT_ERROR, 0);
    assert_non_null(strstr(line, "not fully tested: cudaMalloc: out of memory"));
    free(line);
    g[0].errors = 1;
    assert_int_equal(gpumem_verdict(g, 2, 0), FB_VERDICT_FAIL);

    /* Injected flips that nobody noticed: the test is broken, never a pass. */
    gpumem_gpu_t h = s_gpu(0);
    h.injected = 4;
    assert_int_equal(gpumem_verdict(&h, 1, 0), FB_VERDICT_ERROR);
    h.errors = 4;
    assert_int_equal(gpumem_verdict(&h, 1, 0), FB_VERDICT_FAIL);
    assert_int_equal(gpumem_verdict(NULL, 0, 0), FB_VERDICT_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_patterns), cmocka_unit_test(test_parse_devices),
        cmocka_unit_test(test_coalesce),       cmocka_unit_test(test_report_clean),
        cmocka_unit_test(test_report_errors),  cmocka_unit_test(test_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
