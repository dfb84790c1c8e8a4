/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the InfiniBand sysfs reading rdmabw (and the health sweep) relies on, against fixture
 * trees in the real mlx5 layout (tests/fixtures/sysfs/rdma-*): port state, rate and width, LID and
 * the GID a queue pair is addressed by (RoCE v2 with an IPv4 address preferred), the device
 * parameter's selection, port counters read before and after with a counter that moves between
 * the two snapshots, a counter stuck at its maximum, a rate that drops, a port slower than its
 * siblings, garbage content named by file, and the GPU nearest to each HCA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "common/result.h"
#include "common/util.h"
#include "rdma/ibcounters.h"
#include "rdma/ibport.h"
#include "rdma/rdma_gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *s_root(const char *tree)
{
    return xasprintf("%s/sysfs/%s", FB_FIXTURES, tree);
}

/* A writable copy of a fixture tree, for counters that move. */
static char *s_copy(const char *tree)
{
    char *src = s_root(tree);
    char *dir = tmpdir_copy("rdma", src);
    free(src);
    return dir;
}

static void s_remove(char *dir)
{
    char *cmd = xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

static void s_write(const char *root, const char *rel, const char *text)
{
    char *path = xasprintf("%s/sys/class/infiniband/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", text);
    fclose(f);
    free(path);
}

static const ib_port_t *s_find(const ib_port_t *ports, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ports[i].name, name))
            return &ports[i];
    fail_msg("port %s not listed", name);
    return NULL;
}

/* ---- parsing --------------------------------------------------------------------------------- */

static void test_parse_rate(void **state)
{
    (void)state;
    double g;
    unsigned w;
    char sp[12];
    assert_int_equal(ib_parse_rate("200 Gb/sec (4X HDR)", &g, &w, sp, sizeof sp), 0);
    assert_true(g == 200 && w == 4 && !strcmp(sp, "HDR"));
    assert_int_equal(ib_parse_rate("2.5 Gb/sec (1X SDR)", &g, &w, sp, sizeof sp), 0);
    assert_true(g == 2.5 && w == 1 && !strcmp(sp, "SDR"));
    assert_int_equal(ib_parse_rate("400 Gb/sec (4X NDR)", &g, &w, sp, sizeof sp), 0);
    assert_true(g == 400 && w == 4 && !strcmp(sp, "NDR"));
    assert_int_equal(ib_parse_rate("56 Gb/sec (4X FDR)", &g, NULL, NULL, 0), 0);
    assert_true(g == 56);
    assert_int_equal(ib_parse_rate("100 Gb/sec", &g, &w, sp, sizeof sp), 0);
    assert_true(g == 100 && w == 0 && sp[0] == '\0');
    const char *bad[] = {"",
                         "fast",
                         "200",
                         "200 Gb/s",
                         "-200 Gb/sec",
                         "200 Gb/sec (4X HDR",
                         "200 Gb/sec (X HDR)",
                         "200 Gb/sec (4 HDR)",
                         "200 Gb/sec (4X HDR) extra",
                         "200 Gb/sec (0X HDR)",
                         "200 Gb/sec (4X )",
                         "nan Gb/sec",
                         "1e400 Gb/sec"};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++)
        assert_int_equal(ib_parse_rate(bad[i], &g, &w, sp, sizeof sp), -EINVAL);
}

static void test_parse_state_gid(void **state)
{
    (void)state;
    char out[24];
    assert_int_equal(ib_parse_state("4: ACTIVE", out, sizeof out), 0);
    assert_string_equal(out, "ACTIVE");
    assert_int_equal(ib_parse_state("5: LinkUp", out, sizeof out), 0);
    assert_string_equal(out, "LinkUp");
    assert_int_equal(ib_parse_state("ACTIVE", out, sizeof out), -EINVAL);
    assert_int_equal(ib_parse_state("4:ACTIVE", out, sizeof out), -EINVAL);
    assert_int_equal(ib_parse_state("4: ACT IVE", out, sizeof out), -EINVAL);
    assert_int_equal(ib_parse_state("4: ", out, sizeof out), -EINVAL);
    uint8_t gid[16];
    assert_int_equal(ib_parse_gid("fe80:0000:0000:0000:0c42:a103:0065:7f2e", gid), 0);
    assert_int_equal(gid[0], 0xfe);
    assert_int_equal(gid[1], 0x80);
    assert_int_equal(gid[15], 0x2e);
    assert_int_equal(ib_parse_gid("fe80::0c42:a103:0065:7f2e", gid), -EINVAL);
    assert_int_equal(ib_parse_gid("fe80:0000:0000:0000:0c42:a103:0065:7f2g", gid), -EINVAL);
    assert_int_equal(ib_parse_gid("fe80-0000:0000:0000:0c42:a103:0065:7f2e", gid), -EINVAL);
}

/* ---- ports ----------------------------------------------------------------------------------- */

static void test_ports(void **state)
{
    (void)state;
    char *root = s_root("rdma-node");
    ib_port_t *ports = NULL;
    bool absent = true;
    size_t n = ib_ports_list(root, &ports, &absent);
    assert_false(absent);
    assert_int_equal(n, 4);
    const ib_port_t *p = s_find(ports, n, "mlx5_0:1");
    assert_true(p->active && p->ib && p->problem[0] == '\0');
    assert_string_equal(p->state, "ACTIVE");
    assert_string_equal(p->phys_state, "LinkUp");
    assert_true(p->gbps == 400 && p->width == 4);
    assert_string_equal(p->speed, "NDR");
    assert_string_equal(p->hca_type, "MT4129");
    assert_int_equal(p->lid, 7);
    assert_int_equal(p->gid_index, 0);
    assert_int_equal(p->gid[0], 0xfe);

    p = s_find(ports, n, "mlx5_2:1");
    assert_false(p->active);
    assert_string_equal(p->state, "DOWN");
    assert_string_equal(p->phys_state, "Polling");

    /* RoCE: the RoCE v2 entry of the IPv4 address, not the link-local or v1 ones. */
    p = s_find(ports, n, "mlx5_3:1");
    assert_false(p->ib);
    assert_int_equal(p->gid_index, 3);
    assert_int_equal(p->gid[10], 0xff);
    assert_int_equal(p->gid[12], 192);
    assert_int_equal(p->gid[15], 10);
    assert_int_equal(p->lid, 0);
    free(ports);
    free(root);

    root = s_root("cpu-node");
    n = ib_ports_list(root, &ports, &absent);
    assert_int_equal(n, 0);
    assert_true(absent);
    assert_null(ports);
    free(root);
    root = s_root("rdma-empty");
    n = ib_ports_list(root, &ports, &absent);
    assert_int_equal(n, 0);
    assert_false(absent);
    free(root);
}

/* ib_ports_select(spec) must select `count` ports, named names[0..count) in that order (names
 * NULL: any); returns the selection, which the caller frees. */
static size_t *s_select(const ib_port_t *ports, size_t n, const char *spec, int count,
                        const char *const *names)
{
    size_t *sel = NULL;
    char why[512];
    assert_int_equal(ib_ports_select(ports, n, spec, &sel, why, sizeof why), count);
    for (int i = 0; names && i < count; i++)
        assert_string_equal(ports[sel[i]].name, names[i]);
    return sel;
}

static void test_garbage(void **state)
{
    (void)state;
    char *root = s_root("rdma-garbage");
    ib_port_t p;
    assert_int_equal(ib_port_read(root, "mlx5_1", 1, &p), -EINVAL);
    assert_non_null(strstr(p.problem, "mlx5_1/ports/1/rate: 'fast'"));
    assert_true(p.active); /* what parsed is kept */
    assert_int_equal(ib_port_read(root, "mlx5_2", 1, &p), -EINVAL);
    assert_non_null(strstr(p.problem, "ports/1/state: 'ACTIVE'"));
    assert_false(p.active);
    assert_int_equal(ib_port_read(root, "mlx5_0", 9, &p), -ENOENT);

    /* A counter that is not a number fails the snapshot and names the file. */
    ib_snapshot_t *s = xcalloc(1, sizeof *s);
    char err[512];
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, s, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "mlx5_0/ports/1/counters/symbol_error: 'lots'"));
    assert_int_equal(ib_snapshot_read(root, "mlx5_1", 1, s, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "rate"));
    assert_int_equal(ib_snapshot_read(root, "mlx5_9", 1, s, err, sizeof err), -ENOENT);
    free(s);

    /* "all" takes active ports with problems too: the caller must refuse them by name. */
    ib_port_t *ports = NULL;
    size_t n = ib_ports_list(root, &ports, NULL);
    size_t *sel = s_select(ports, n, "all", 2, NULL);
    assert_string_equal(ports[sel[1]].name, "mlx5_1:1");
    assert_non_null(strstr(ports[sel[1]].problem, "rate"));
    free(sel);
    free(ports);
    free(root);
}

static void test_select(void **state)
{
    (void)state;
    char *root = s_root("rdma-node");
    ib_port_t *ports = NULL;
    size_t n = ib_ports_list(root, &ports, NULL);
    size_t *sel =
        s_select(ports, n, "all", 3, (const char *[]){"mlx5_0:1", "mlx5_1:1", "mlx5_3:1"});
    free(sel);
    sel = s_select(ports, n, "mlx5_1", 1, (const char *[]){"mlx5_1:1"});
    free(sel);
    sel = s_select(ports, n, " mlx5_3:1 , mlx5_0,mlx5_0:1", 2,
                   (const char *[]){"mlx5_3:1", "mlx5_0:1"});
    free(sel);
    /* A named port that is down is selected, for the caller to report. */
    sel = s_select(ports, n, "mlx5_2:1", 1, NULL);
    assert_false(ports[sel[0]].active);
    free(sel);
    /* So is every port of a named HCA without an active one. */
    sel = s_select(ports, n, "mlx5_2", 1, NULL);
    free(sel);
    char why[512];
    assert_int_equal(ib_ports_select(ports, n, "mlx5_7", &sel, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "mlx5_7 is not on this node (HCAs here: mlx5_0, mlx5_1, mlx5_2, "
                                "mlx5_3)"));
    assert_int_equal(ib_ports_select(ports, n, "mlx5_0:2", &sel, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "mlx5_0:2 is not on this node"));
    assert_int_equal(ib_ports_select(ports, n, "mlx5_0:x", &sel, why, sizeof why), -EINVAL);
    assert_int_equal(ib_ports_select(ports, n, "mlx5_0;rm", &sel, why, sizeof why), -EINVAL);
    assert_int_equal(ib_ports_select(ports, n, ",", &sel, why, sizeof why), 0);
    free(sel);

    char text[512];
    ib_ports_describe(ports, n, text, sizeof text);
    assert_string_equal(text, "mlx5_0:1 ACTIVE (LinkUp), mlx5_1:1 ACTIVE (LinkUp), mlx5_2:1 DOWN "
                              "(Polling), mlx5_3:1 ACTIVE (LinkUp) Ethernet");
    free(ports);
    free(root);
}

static void test_rate_judgement(void **state)
{
    (void)state;
    char *root = s_root("rdma-node");
    ib_port_t *ports = NULL;
    size_t n = ib_ports_list(root, &ports, NULL);
    fb_result_t *res = fb_result_new();
    /* mlx5_1 is the same HCA model as mlx5_0 but trained at 2X: 200 of 400 Gb/sec. */
    assert_int_equal(ib_port_judge_rate(ports, n, s_find(ports, n, "mlx5_1:1"), "node01", res), 1);
    assert_string_equal(res->findings[0].part, "node01/mlx5_1:1");
    assert_string_equal(res->findings[0].kind, "link");
    assert_non_null(strstr(res->findings[0].what, "200 Gb/sec (2X NDR), below the 400 Gb/sec 4X"));
    assert_non_null(strstr(res->findings[0].what, "degraded width"));
    assert_int_equal(ib_port_judge_rate(ports, n, s_find(ports, n, "mlx5_0:1"), "node01", res), 0);
    /* A different model (the RoCE NIC) is not held to the NDR ports' rate. */
    assert_int_equal(ib_port_judge_rate(ports, n, s_find(ports, n, "mlx5_3:1"), "node01", res), 0);
    assert_int_equal(res->n_findings, 1);
    fb_result_destroy(&res);
    free(ports);
    free(root);
}

/* ---- counters -------------------------------------------------------------------------------- */

typedef struct {
    char lines[8][512];
    size_t n;
} notes_t;

static void s_note(void *user, const char *line)
{
    notes_t *n = user;
    if (n->n < 8)
        snprintf(n->lines[n->n++], sizeof n->lines[0], "%s", line);
}

static void test_snapshot(void **state)
{
    (void)state;
    char *root = s_root("rdma-node");
    ib_snapshot_t *s = xcalloc(1, sizeof *s);
    char err[512];
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, s, err, sizeof err), 0);
    assert_int_equal(s->n, 21 + 30);
    assert_int_equal(ib_snapshot_counter(s, "link_downed")->value, 1);
    assert_int_equal(ib_snapshot_counter(s, "port_xmit_data")->value, 88231110144ull);
    assert_int_equal(ib_snapshot_counter(s, "hw_counters/rx_write_requests")->value, 2097152);
    assert_null(ib_snapshot_counter(s, "nonexistent"));
    assert_true(s->port.gbps == 400);

    /* Nothing moved: no finding, no note. */
    fb_result_t *res = fb_result_new();
    notes_t notes = {.n = 0};
    assert_int_equal(ib_snapshot_compare(s, s, "node01", "rdmabw", res, s_note, &notes), 0);
    assert_int_equal(res->n_findings, 0);
    assert_int_equal(notes.n, 0);
    fb_result_destroy(&res);
    free(s);
    free(root);

    uint64_t sat;
    assert_int_equal(ib_counter_class("symbol_error", &sat), IB_COUNTER_LINK);
    assert_int_equal(sat, 65535);
    assert_int_equal(ib_counter_class("link_downed", &sat), IB_COUNTER_LINK);
    assert_int_equal(sat, 255);
    assert_int_equal(ib_counter_class("local_link_integrity_errors", &sat), IB_COUNTER_LINK);
    assert_int_equal(sat, 15);
    assert_int_equal(ib_counter_class("port_rcv_constraint_errors", &sat), IB_COUNTER_NIC);
    assert_int_equal(ib_counter_class("VL15_dropped", &sat), IB_COUNTER_NOTE);
    assert_int_equal(ib_counter_class("hw_counters/local_ack_timeout_err", &sat), IB_COUNTER_LINK);
    assert_int_equal(sat, 0);
    assert_int_equal(ib_counter_class("hw_counters/req_cqe_error", NULL), IB_COUNTER_NIC);
    assert_int_equal(ib_counter_class("port_xmit_data", NULL), IB_COUNTER_IGNORED);
    assert_int_equal(ib_counter_class("hw_counters/lifespan", NULL), IB_COUNTER_IGNORED);
}

static void test_counters_move(void **state)
{
    (void)state;
    char *root = s_copy("rdma-node");
    ib_snapshot_t *before = xcalloc(1, sizeof *before), *after = xcalloc(1, sizeof *after);
    char err[512];
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, before, err, sizeof err), 0);
    /* During the run: symbol errors and a link down (the cable), an ACK timeout (a packet lost),
     * a CQE error (the HCA), SMPs dropped (harmless), and lots of traffic (ignored). */
    s_write(root, "mlx5_0/ports/1/counters/symbol_error", "12");
    s_write(root, "mlx5_0/ports/1/counters/link_downed", "2");
    s_write(root, "mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "3");
    s_write(root, "mlx5_0/ports/1/hw_counters/req_cqe_error", "1");
    s_write(root, "mlx5_0/ports/1/counters/VL15_dropped", "4");
    s_write(root, "mlx5_0/ports/1/counters/port_xmit_data", "99999999999");
    s_write(root, "mlx5_0/ports/1/hw_counters/rx_write_requests", "4194304");
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, after, err, sizeof err), 0);
    fb_result_t *res = fb_result_new();
    notes_t notes = {.n = 0};
    assert_int_equal(
        ib_snapshot_compare(before, after, "node01", "rdmabw with node02", res, s_note, &notes), 2);
    assert_string_equal(res->findings[0].part, "node01/mlx5_0:1");
    assert_string_equal(res->findings[0].kind, "link");
    assert_string_equal(res->findings[0].what,
                        "port error counters moved during rdmabw with node02: link_downed +1, "
                        "symbol_error +12, hw_counters/local_ack_timeout_err +3 (cable, "
                        "transceiver or switch port)");
    assert_string_equal(res->findings[1].kind, "nic");
    assert_string_equal(res->findings[1].what, "HCA error counters moved during rdmabw with "
                                               "node02: hw_counters/req_cqe_error +1");
    assert_int_equal(notes.n, 1);
    assert_non_null(strstr(notes.lines[0], "VL15_dropped +4 during rdmabw with node02 (not a "
                                           "fault)"));
    fb_result_destroy(&res);

    /* A counter cleared during the run, a counter stuck at its maximum, a rate that dropped. */
    s_write(root, "mlx5_0/ports/1/counters/symbol_error", "65535");
    s_write(root, "mlx5_0/ports/1/counters/link_downed", "2");
    s_write(root, "mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "0");
    s_write(root, "mlx5_0/ports/1/hw_counters/req_cqe_error", "0");
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, before, err, sizeof err), 0);
    s_write(root, "mlx5_0/ports/1/counters/link_downed", "1");
    s_write(root, "mlx5_0/ports/1/rate", "100 Gb/sec (1X NDR)");
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, after, err, sizeof err), 0);
    res = fb_result_new();
    notes.n = 0;
    assert_int_equal(ib_snapshot_compare(before, after, "node01", "rdmabw", res, s_note, &notes),
                     2);
    assert_non_null(strstr(res->findings[0].what,
                           "link_downed 1 (cleared during the run; at least that many)"));
    assert_null(strstr(res->findings[0].what, "symbol_error"));
    assert_string_equal(res->findings[1].what,
                        "port rate changed during rdmabw: 400 Gb/sec (4X NDR) before, "
                        "100 Gb/sec (1X NDR) after (the link retrained)");
    assert_int_equal(notes.n, 1);
    assert_non_null(strstr(notes.lines[0], "symbol_error is stuck at its maximum 65535"));
    fb_result_destroy(&res);

    /* A port that went down. */
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, before, err, sizeof err), 0);
    s_write(root, "mlx5_0/ports/1/state", "1: DOWN");
    s_write(root, "mlx5_0/ports/1/phys_state", "2: Polling");
    assert_int_equal(ib_snapshot_read(root, "mlx5_0", 1, after, err, sizeof err), 0);
    res = fb_result_new();
    assert_int_equal(ib_snapshot_compare(before, after, "node01", "rdmabw", res, NULL, NULL), 1);
    assert_string_equal(res->findings[0].what,
                        "port left ACTIVE during rdmabw: now DOWN (Polling)");
    fb_result_destroy(&res);
    free(before);
    free(after);
    s_remove(root);
}

/* ---- GPUs ------------------------------------------------------------------------------------ */

static void test_nearest_gpu(void **state)
{
    (void)state;
    char *root = s_root("rdma-node");
    char pci[16], why[256];
    unsigned idx = 99;
    assert_int_equal(rdma_gpu_nearest(root, "mlx5_0", pci, &idx, why, sizeof why), 0);
    assert_string_equal(pci, "0000:04:00.0"); /* behind the same PCIe switch */
    assert_int_equal(idx, 0);
    assert_int_equal(rdma_gpu_nearest(root, "mlx5_1", pci, &idx, why, sizeof why), 0);
    assert_string_equal(pci, "0000:84:00.0");
    assert_int_equal(idx, 1);
    /* mlx5_2 shares only the machine with both: the first in PCI order. */
    assert_int_equal(rdma_gpu_nearest(root, "mlx5_2", pci, &idx, why, sizeof why), 0);
    assert_string_equal(pci, "0000:04:00.0");
    assert_int_equal(rdma_gpu_nearest(root, "mlx5_9", pci, &idx, why, sizeof why), -ENODEV);
    assert_non_null(strstr(why, "mlx5_9 has no PCI device"));
    assert_string_equal(rdma_gpu_peermem_module(root), "nvidia_peermem");
    free(root);
    root = s_root("rdma-down");
    assert_int_equal(rdma_gpu_nearest(root, "mlx5_0", pci, &idx, why, sizeof why), -ENODEV);
    assert_string_equal(why, "no NVIDIA GPU on this node");
    assert_null(rdma_gpu_peermem_module(root));
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_rate),  cmocka_unit_test(test_parse_state_gid),
        cmocka_unit_test(test_ports),       cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_select),      cmocka_unit_test(test_rate_judgement),
        cmocka_unit_test(test_snapshot),    cmocka_unit_test(test_counters_move),
        cmocka_unit_test(test_nearest_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
