/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the summary table's headline figures (coordinator/report_headline.c, the fb_headline_t
 * lists in scheduler/workload.c): a gpuburn task of an H200 node shows TFLOPS, the share of the
 * same-run peak and power (not samples and temperature), gpumemtest GiB tested and errors,
 * allreduce busbw at the largest size, netbw per-direction Gb/s for each member of a pair, and a
 * workload without figures falls back (NULL). */
#include "report_internal.h"
#include "util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static fb_result_t *s_result(const char *node)
{
    fb_result_t *r = fb_result_new();
    fb_result_set_ids(r, node, "t", node);
    r->verdict = FB_VERDICT_PASS;
    return r;
}

static char *s_headline(const char *workload, fb_result_t **results, size_t n)
{
    store_result_t rs[4] = {{0}};
    for (size_t i = 0; i < n; i++)
        rs[i].result = results[i];
    store_task_t task = {.id = "t", .results = rs, .n_results = n};
    char *text = report__headline(workload, &task);
    for (size_t i = 0; i < n; i++)
        fb_result_destroy(&results[i]);
    return text;
}

static void test_gpuburn(void **state)
{
    (void)state;
    fb_result_t *r = s_result("h200a");
    for (int g = 0; g < 2; g++) {
        char name[64];
        snprintf(name, sizeof name, "gpu%d.samples", g);
        fb_result_add_metric(r, name, 50, "");
        snprintf(name, sizeof name, "gpu%d.temp_max_c", g);
        fb_result_add_metric(r, name, 62, "C");
        snprintf(name, sizeof name, "gpu%d.tflops_median", g);
        fb_result_add_metric(r, name, g ? 696.4 : 689.1, "TFLOPS");
        snprintf(name, sizeof name, "gpu%d.burn_vs_peak", g);
        fb_result_add_metric(r, name, g ? 0.994 : 0.981, "");
        snprintf(name, sizeof name, "gpu%d.power_mean_w", g);
        fb_result_add_metric(r, name, 650, "W");
        snprintf(name, sizeof name, "gpu%d.errors", g);
        fb_result_add_metric(r, name, g, "");
    }
    char *text = s_headline("gpuburn", &r, 1);
    assert_string_equal(text, "689.1..696.4 TFLOPS, 98.1..99.4% of same-run peak, power 650 W, "
                              "errors 1");
    free(text);
}

static void test_gpumemtest_and_memtest(void **state)
{
    (void)state;
    fb_result_t *r = s_result("n1");
    fb_result_add_metric(r, "gpu0.tested_bytes", 64.0 * 1073741824.0, "B");
    fb_result_add_metric(r, "gpu1.tested_bytes", 64.0 * 1073741824.0, "B");
    fb_result_add_metric(r, "gpu0.errors", 0, "");
    fb_result_add_metric(r, "gpu1.errors", 3, "");
    fb_result_add_metric(r, "gpu0.samples", 10, "");
    char *text = s_headline("gpumemtest", &r, 1);
    assert_string_equal(text, "tested 128 GiB, errors 3");
    free(text);
    r = s_result("n1");
    fb_result_add_metric(r, "bytes_tested", 8.0 * 1073741824.0, "B");
    fb_result_add_metric(r, "miscompares", 0, "");
    fb_result_add_metric(r, "bandwidth_mbs", 10234.5, "MB/s");
    text = s_headline("memtest", &r, 1);
    assert_string_equal(text, "tested 8 GiB, errors 0, 10234.5 MB/s");
    free(text);
}

static void test_allreduce_largest_size(void **state)
{
    (void)state;
    fb_result_t *r = s_result("n1");
    fb_result_add_metric(r, "allreduce.8.busbw_gbs", 0.01, "GB/s");
    fb_result_add_metric(r, "allreduce.1073741824.busbw_gbs", 361.2, "GB/s");
    fb_result_add_metric(r, "allreduce.busbw_gbs", 361.2, "GB/s");
    fb_result_add_metric(r, "allreduce.max_bytes", 1073741824.0, "B");
    fb_result_add_metric(r, "allreduce.errors", 0, "");
    char *text = s_headline("allreduce", &r, 1);
    assert_string_equal(text, "busbw 361.2 GB/s, at 1024 MiB, errors 0");
    free(text);
}

static void test_pair_each_member(void **state)
{
    (void)state;
    fb_result_t *r[2] = {s_result("n1"), s_result("n2")};
    fb_result_add_metric(r[0], "netbw.tx_gbps", 93.1, "Gb/s");
    fb_result_add_metric(r[0], "netbw.rx_gbps", 92.8, "Gb/s");
    fb_result_add_metric(r[1], "netbw.tx_gbps", 41.0, "Gb/s");
    fb_result_add_metric(r[1], "netbw.rx_gbps", 93.0, "Gb/s");
    char *text = s_headline("netbw", r, 2);
    assert_string_equal(text,
                        "n1: tx 93.1 Gb/s, rx 92.8 Gb/s; n2: tx 41 Gb/s, rx 93 Gb/s");
    free(text);
}

static void test_no_figures(void **state)
{
    (void)state;
    fb_result_t *r = s_result("n1");
    fb_result_add_metric(r, "something", 1, "");
    assert_null(s_headline("gpuburn", &r, 1));
    r = s_result("n1");
    assert_null(s_headline("nosuchworkload", &r, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpuburn),
        cmocka_unit_test(test_gpumemtest_and_memtest),
        cmocka_unit_test(test_allreduce_largest_size),
        cmocka_unit_test(test_pair_each_member),
        cmocka_unit_test(test_no_figures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
