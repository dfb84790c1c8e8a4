/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the host half of p2p (workloads/gpu/host/p2p_matrix.c): PCIe path classification from
 * sysfs device paths, CPU lists, medians per link type, findings for pairs below the absolute and
 * the relative floor (and none for healthy or unmeasured pairs), host<->device outliers, metric
 * names, and the text tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "gpu/host/p2p_matrix.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_pcie_relation(void **state)
{
    (void)state;
    const char *sw_a =
        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0";
    const char *sw_b =
        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0";
    const char *hb_c = "/sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0";
    const char *sys_d = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";
    assert_int_equal(p2p_pcie_relation(sw_a, sw_b), P2P_LINK_PCIE_SWITCH);
    assert_int_equal(p2p_pcie_relation(sw_a, hb_c), P2P_LINK_PCIE_HOSTBRIDGE);
    assert_int_equal(p2p_pcie_relation(hb_c, sys_d), P2P_LINK_PCIE_SYSTEM);
    /* A fixture root prefix does not matter. */
    assert_int_equal(p2p_pcie_relation("/tmp/fx/sys/devices/pci0000:00/0000:00:02.0/0000:07:00.0",
                                       "/tmp/fx/sys/devices/pci0000:00/0000:00:03.0/0000:08:00.0"),
                     P2P_LINK_PCIE_HOSTBRIDGE);
    /* Two devices directly on the root bus (VMs): host bridge. */
    assert_int_equal(p2p_pcie_relation("/sys/devices/pci0000:00/0000:00:05.0",
                                       "/sys/devices/pci0000:00/0000:00:06.0"),
                     P2P_LINK_PCIE_HOSTBRIDGE);
    assert_int_equal(p2p_pcie_relation("/sys/devices/platform/foo", sw_a), P2P_LINK_UNKNOWN);
    assert_int_equal(p2p_pcie_relation("/sys/devices/pci0000:00", sw_a), P2P_LINK_UNKNOWN);
    assert_int_equal(p2p_pcie_relation(NULL, sw_a), P2P_LINK_UNKNOWN);
    assert_string_equal(p2p_link_name(P2P_LINK_NVLINK), "NVLink");
    assert_string_equal(p2p_link_name(P2P_LINK_XGMI), "xGMI");
    assert_string_equal(p2p_link_short(P2P_LINK_PCIE_SYSTEM), "PCIe-SYS");
    assert_string_equal(p2p_link_name((p2p_link_t)77), "unknown link");
}

static void test_cpulist(void **state)
{
    (void)state;
    unsigned char mask[64];
    memset(mask, 0, sizeof mask);
    assert_int_equal(p2p_parse_cpulist("0-3,8,10-11\n", mask, sizeof mask), 7);
    assert_true(mask[0] && mask[3] && mask[8] && mask[11]);
    assert_false(mask[4] || mask[9] || mask[12]);
    memset(mask, 0, sizeof mask);
    /* CPUs beyond the mask are ignored, not an error. */
    assert_int_equal(p2p_parse_cpulist("60-70", mask, sizeof mask), 4);
    assert_int_equal(p2p_parse_cpulist("", mask, sizeof mask), 0);
    assert_int_equal(p2p_parse_cpulist("3-1", mask, sizeof mask), -EINVAL);
    assert_int_equal(p2p_parse_cpulist("1-", mask, sizeof mask), -EINVAL);
    assert_int_equal(p2p_parse_cpulist("a", mask, sizeof mask), -EINVAL);
    assert_int_equal(p2p_parse_cpulist("1;2", mask, sizeof mask), -EINVAL);
    assert_int_equal(p2p_parse_cpulist(NULL, mask, sizeof mask), -EINVAL);
}

static void test_median(void **state)
{
    (void)state;
    double v[] = {5, NAN, 1, 3, 2};
    assert_true(p2p_median(v, 5) == 2.5);
    assert_true(p2p_median(v, 1) == 5);
    assert_true(isnan(p2p_median(v + 1, 1)));
    assert_true(isnan(p2p_median(NULL, 0)));
}

/* Four GPUs: 0-1 and 2-3 on NVLink, the rest over PCIe across root complexes. */
static const int s_dev[4] = {0, 1, 2, 3};
static p2p_link_t s_links[16];

static p2p_topo_t s_topo(const char *node)
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            s_links[i * 4 + j] = (i / 2 == j / 2) ? P2P_LINK_NVLINK : P2P_LINK_PCIE_SYSTEM;
    p2p_topo_t t = {node, 4, s_dev, s_links};
    return t;
}

static void s_fill(double *m, double nv, double pcie)
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            m[i * 4 + j] = i == j ? NAN : (i / 2 == j / 2) ? nv : pcie;
}

static void test_judge(void **state)
{
    (void)state;
    p2p_topo_t t = s_topo("node07");
    double m[16];
    s_fill(m, 370, 50);
    p2p_check_t uni = {"ce_uni", "unidirectional", "copy engine", false, 0, 0.9};
    fb_result_t *res = fb_result_new();
    /* Uniform: nothing to say. */
    assert_int_equal(p2p_judge(res, &t, m, &uni), 0);
    assert_true(p2p_link_median(&t, m, P2P_LINK_NVLINK, false) == 370);
    assert_true(p2p_link_median(&t, m, P2P_LINK_PCIE_SYSTEM, false) == 50);
    assert_true(isnan(p2p_link_median(&t, m, P2P_LINK_XGMI, false)));

    /* One slow NVLink direction: named with both GPUs and the link type; PCIe pairs at 50 GB/s
     * are not compared with NVLink ones. */
    m[1 * 4 + 0] = 180;
    m[2 * 4 + 3] = 365;
    assert_int_equal(p2p_judge(res, &t, m, &uni), 1);
    assert_string_equal(res->findings[0].part, "node07/gpu0<->gpu1");
    assert_string_equal(res->findings[0].kind, "link");
    assert_string_equal(res->findings[0].what,
                        "node07/gpu0<->gpu1 (NVLink): 180 GB/s unidirectional (gpu1->gpu0, copy "
                        "engine), 49% of the NVLink median 368 GB/s");
    fb_result_destroy(&res);

    /* The absolute floor applies to every pair; both reasons in one finding. */
    res = fb_result_new();
    uni.min_gbs = 200;
    assert_int_equal(p2p_judge(res, &t, m, &uni), 9); /* 8 PCIe directions + the slow one */
    int slow = -1;
    for (size_t i = 0; i < res->n_findings; i++)
        if (strstr(res->findings[i].what, "180 GB/s"))
            slow = (int)i;
    assert_true(slow >= 0);
    assert_non_null(strstr(res->findings[slow].what, "median 368 GB/s, below min_gbs 200 GB/s"));
    assert_non_null(strstr(res->findings[0].what,
                           "node07/gpu0<->gpu2 (PCIe across root complexes): 50 GB/s "
                           "unidirectional (gpu0->gpu2, copy engine), 100% of the PCIe across "
                           "root complexes median 50 GB/s, below min_gbs 200 GB/s"));
    fb_result_destroy(&res);

    /* Bidirectional matrices are symmetric: one finding per pair, not two. */
    s_fill(m, 740, 90);
    m[0 * 4 + 1] = m[1 * 4 + 0] = 400;
    p2p_check_t bidi = {"ce_bidi", "bidirectional", "copy engine", true, 0, 0.9};
    res = fb_result_new();
    assert_int_equal(p2p_judge(res, &t, m, &bidi), 1);
    assert_non_null(strstr(res->findings[0].what,
                           "(NVLink): 400 GB/s bidirectional (gpu0<->gpu1, copy engine), 70% of "
                           "the NVLink median 570 GB/s"));
    fb_result_destroy(&res);

    /* Unmeasured cells (NAN) are neither judged nor part of a median; no node: localhost. */
    t.node = NULL;
    s_fill(m, NAN, 20);
    m[0 * 4 + 2] = 5;
    res = fb_result_new();
    assert_int_equal(p2p_judge(res, &t, m, &uni), 8);
    assert_string_equal(res->findings[0].part, "localhost/gpu0<->gpu2");
    uni.min_gbs = 0;
    uni.min_relative = 0;
    assert_int_equal(p2p_judge(res, &t, m, &uni), 0);
    fb_result_destroy(&res);
}

static void test_judge_two_gpus(void **state)
{
    (void)state;
    /* The device's two NVLink H200s: 2 ordered pairs; a pair far below its reverse fails. */
    int dev[2] = {0, 1};
    p2p_link_t link[4] = {P2P_LINK_NVLINK, P2P_LINK_NVLINK, P2P_LINK_NVLINK, P2P_LINK_NVLINK};
    p2p_topo_t t = {"h200", 2, dev, link};
    double m[4] = {NAN, 380, 376, NAN};
    p2p_check_t uni = {"ce_uni", "unidirectional", "copy engine", false, 0, 0.9};
    fb_result_t *res = fb_result_new();
    assert_int_equal(p2p_judge(res, &t, m, &uni), 0);
    m[2] = 150;
    assert_int_equal(p2p_judge(res, &t, m, &uni), 1);
    assert_string_equal(res->findings[0].part, "h200/gpu0<->gpu1");
    fb_result_destroy(&res);
}

static void test_judge_host(void **state)
{
    (void)state;
    p2p_topo_t t = s_topo("node07");
    double v[4] = {55, 54.5, 27, 55.2};
    fb_result_t *res = fb_result_new();
    assert_int_equal(p2p_judge_host(res, &t, v, "host-to-device", 0.9), 1);
    assert_string_equal(res->findings[0].part, "node07/gpu2");
    assert_string_equal(res->findings[0].kind, "gpu");
    assert_non_null(strstr(res->findings[0].what,
                           "node07/gpu2: 27.0 GB/s host-to-device, 49% of the median 54.8 GB/s"));
    /* One GPU: nothing to compare with. */
    t.n = 1;
    v[0] = 1;
    assert_int_equal(p2p_judge_host(res, &t, v, "host-to-device", 0.9), 0);
    fb_result_destroy(&res);
}

static void test_metrics_and_tables(void **state)
{
    (void)state;
    int dev[2] = {1, 3}; /* devices=1,3: metrics and tables use device indices */
    p2p_link_t link[4] = {P2P_LINK_NVLINK, P2P_LINK_NVLINK, P2P_LINK_NVLINK, P2P_LINK_NVLINK};
    p2p_topo_t t = {"n", 2, dev, link};
    double m[4] = {NAN, 377.25, NAN, NAN};
    fb_result_t *res = fb_result_new();
    p2p_add_matrix_metrics(res, &t, m, "p2p.ce_uni", "GB/s");
    assert_int_equal(res->n_metrics, 1);
    assert_string_equal(res->metrics[0].name, "p2p.ce_uni.1_3");
    assert_true(res->metrics[0].value == 377.25);
    assert_string_equal(res->metrics[0].unit, "GB/s");
    fb_result_destroy(&res);

    size_t n = 0;
    char **lines = p2p_format_table(&t, m, "p2p.ce_uni GB/s", 1, &n);
    assert_int_equal(n, 4);
    assert_string_equal(lines[0], "p2p.ce_uni GB/s");
    assert_string_equal(lines[1], "              gpu1      gpu3");
    assert_string_equal(lines[2], "gpu1             -     377.2");
    assert_string_equal(lines[3], "gpu3             -         -");
    p2p_free_lines(lines, n);

    link[1] = P2P_LINK_PCIE_SWITCH;
    link[2] = P2P_LINK_HOST;
    lines = p2p_format_links(&t, &n);
    assert_int_equal(n, 4);
    assert_string_equal(lines[2], "gpu1             -   PCIe-SW");
    assert_string_equal(lines[3], "gpu3          host         -");
    p2p_free_lines(lines, n);
    p2p_free_lines(NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pcie_relation),
        cmocka_unit_test(test_cpulist),
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_judge_two_gpus),
        cmocka_unit_test(test_judge_host),
        cmocka_unit_test(test_metrics_and_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
