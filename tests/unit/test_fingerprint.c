/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of scheduler/fingerprint: setting and reading components in their fixed order, the
 * diff of two fingerprints (changed, appeared, gone), and the grouping of the same change on
 * many nodes into one hostlist line, with nodes that have no previous campaign left out. */
#include "scheduler/fingerprint.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_set_get(void **state)
{
    (void)state;
    fb_fingerprint_t fp = {0};
    fb_fingerprint_set(&fp, "nccl", "2.27.3");
    fb_fingerprint_set(&fp, "kernel", "6.8.0-45-generic");
    fb_fingerprint_set(&fp, "fleetburn", "0.9.0");
    fb_fingerprint_set(&fp, "kernel", "6.8.0-47-generic"); /* replaces */
    fb_fingerprint_set(&fp, "uptime", "5 days");           /* not a component */
    fb_fingerprint_set(&fp, "os", "");                     /* empty: absent */
    assert_int_equal(fp.n, 3);
    assert_string_equal(fp.items[0].component, "fleetburn");
    assert_string_equal(fp.items[1].component, "kernel");
    assert_string_equal(fp.items[1].version, "6.8.0-47-generic");
    assert_string_equal(fp.items[2].component, "nccl");
    assert_string_equal(fb_fingerprint_get(&fp, "nccl"), "2.27.3");
    assert_null(fb_fingerprint_get(&fp, "os"));
    assert_true(fb_fingerprint_component("hca_fw"));
    assert_false(fb_fingerprint_component("uptime"));
    fb_fingerprint_clear(&fp);
    assert_int_equal(fp.n, 0);
}

static void test_diff(void **state)
{
    (void)state;
    fb_fingerprint_t a = {0}, b = {0};
    fb_fingerprint_set(&a, "kernel", "6.8.0-45");
    fb_fingerprint_set(&a, "nvidia_driver", "570.86.15");
    fb_fingerprint_set(&a, "rccl", "2.18");
    fb_fingerprint_set(&b, "kernel", "6.8.0-45");
    fb_fingerprint_set(&b, "nvidia_driver", "580.159.04");
    fb_fingerprint_set(&b, "nccl", "2.27.3");
    fb_fp_change_t *ch;
    size_t n = fb_fingerprint_diff(&a, &b, &ch);
    assert_int_equal(n, 3);
    assert_string_equal(ch[0].component, "nvidia_driver");
    assert_string_equal(ch[0].before, "570.86.15");
    assert_string_equal(ch[0].after, "580.159.04");
    assert_string_equal(ch[1].component, "nccl");
    assert_null(ch[1].before);
    assert_string_equal(ch[1].after, "2.27.3");
    assert_string_equal(ch[2].component, "rccl");
    assert_null(ch[2].after);
    free(ch);
    assert_int_equal(fb_fingerprint_diff(&a, &a, &ch), 0);
    assert_null(ch);
    fb_fingerprint_clear(&a);
    fb_fingerprint_clear(&b);
}

#define N_NODES 70

static void test_group(void **state)
{
    (void)state;
    /* gpu001-064 upgraded their driver; gpu065-068 did not; gpu033 and gpu034 also got a new
     * kernel, and gpu069 its first NCCL; gpu070 has no previous campaign. */
    fb_fingerprint_t before[N_NODES], after[N_NODES];
    fb_fp_node_t nodes[N_NODES];
    char names[N_NODES][16];
    for (int i = 0; i < N_NODES; i++) {
        memset(&before[i], 0, sizeof before[i]);
        memset(&after[i], 0, sizeof after[i]);
        snprintf(names[i], sizeof names[i], "gpu%03d", N_NODES - i); /* any order */
        int num = N_NODES - i;
        fb_fingerprint_set(&before[i], "kernel", "6.8.0-45");
        fb_fingerprint_set(&before[i], "nvidia_driver", "570.86");
        fb_fingerprint_set(&after[i], "kernel", num == 33 || num == 34 ? "6.8.0-47" : "6.8.0-45");
        fb_fingerprint_set(&after[i], "nvidia_driver", num <= 64 ? "580.159" : "570.86");
        if (num == 69)
            fb_fingerprint_set(&after[i], "nccl", "2.27.3");
        nodes[i] = (fb_fp_node_t){names[i], num == 70 ? NULL : &before[i], &after[i]};
    }
    fb_fp_group_t *g;
    size_t n = fb_fingerprint_group(nodes, N_NODES, &g);
    assert_int_equal(n, 3);
    const char *want[] = {"kernel 6.8.0-45 \xe2\x86\x92 6.8.0-47 on gpu[033-034]",
                          "nvidia_driver 570.86 \xe2\x86\x92 580.159 on gpu[001-064]",
                          "nccl (none) \xe2\x86\x92 2.27.3 on gpu069"};
    for (size_t i = 0; i < n; i++) {
        char *line = fb_fp_group_line(&g[i]);
        assert_string_equal(line, want[i]);
        free(line);
    }
    assert_int_equal(g[1].n_nodes, 64);
    assert_string_equal(g[1].nodes[0], "gpu001");
    assert_string_equal(g[1].nodes[63], "gpu064");
    fb_fp_groups_free(g, n);

    /* Two different upgrades of one component: the larger group first. */
    fb_fingerprint_set(&after[0], "nvidia_driver", "575.51"); /* gpu070: no previous, ignored */
    fb_fingerprint_set(&after[1], "nvidia_driver", "575.51"); /* gpu069 */
    fb_fingerprint_set(&after[2], "nvidia_driver", "575.51"); /* gpu068 */
    n = fb_fingerprint_group(nodes, N_NODES, &g);
    assert_int_equal(n, 4);
    char *line = fb_fp_group_line(&g[1]);
    assert_string_equal(line, "nvidia_driver 570.86 \xe2\x86\x92 580.159 on gpu[001-064]");
    free(line);
    line = fb_fp_group_line(&g[2]);
    assert_string_equal(line, "nvidia_driver 570.86 \xe2\x86\x92 575.51 on gpu[068-069]");
    free(line);
    fb_fp_groups_free(g, n);

    /* Nothing changed: no groups. */
    assert_int_equal(fb_fingerprint_group(nodes + 5, 1, &g), 0);
    assert_null(g);
    for (int i = 0; i < N_NODES; i++) {
        fb_fingerprint_clear(&before[i]);
        fb_fingerprint_clear(&after[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_get),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
