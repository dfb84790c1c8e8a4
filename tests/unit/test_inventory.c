/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of agent/inventory against fixture trees in the real procfs/sysfs layout
 * (tests/fixtures/sysfs/: a GPU node, a CPU-only node, a node with garbage in its files), plus one
 * read of this machine. The fixtures use relative symlinks as sysfs does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "inventory.h"
#include "inventory_check.h"
#include "log.h"
#include "util.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_ROOT(name) FB_FIXTURES "/sysfs/" name

/* Packs and unpacks the inventory: the hand-built message must be a valid one, and a Hello
 * carrying it must pass the coordinator's validation. */
static void s_check_wire_round_trip(Fleetburn__Inventory *inv)
{
    inventory_check_hello(inv);

    size_t len = fleetburn__inventory__get_packed_size(inv);
    uint8_t *buf = xmalloc(len);
    assert_int_equal(fleetburn__inventory__pack(inv, buf), len);
    Fleetburn__Inventory *back = fleetburn__inventory__unpack(NULL, len, buf);
    assert_non_null(back);
    assert_string_equal(back->hostname, inv->hostname);
    assert_int_equal(back->cpus, inv->cpus);
    assert_int_equal(back->n_gpus, inv->n_gpus);
    assert_int_equal(back->n_nics, inv->n_nics);
    assert_int_equal(back->n_dimms, inv->n_dimms);
    assert_int_equal(back->n_software, inv->n_software);
    for (size_t i = 0; i < inv->n_gpus; i++)
        assert_string_equal(back->gpus[i]->pci_address, inv->gpus[i]->pci_address);
    /* inventory_free also frees an unpacked inventory. */
    inventory_free(&back);
    assert_null(back);
    free(buf);
}

/* A GPU's PCI address, vendor and link as read from sysfs. */
static void s_assert_gpu(const Fleetburn__Gpu *g, const char *pci, const char *vendor,
                         const char *device_id, const char *link_speed, unsigned link_width,
                         const char *max_link_speed, unsigned max_link_width, int numa_node)
{
    assert_string_equal(g->pci_address, pci);
    assert_string_equal(g->vendor, vendor);
    assert_string_equal(g->device_id, device_id);
    assert_string_equal(g->link_speed, link_speed);
    assert_int_equal(g->link_width, link_width);
    assert_string_equal(g->max_link_speed, max_link_speed);
    assert_int_equal(g->max_link_width, max_link_width);
    assert_int_equal(g->numa_node, numa_node);
}

static void test_gpu_node(void **state)
{
    Fleetburn__Inventory *inv = inventory_read(S_ROOT("gpu-node"));
    assert_non_null(inv);
    assert_string_equal(inv->hostname, "gpu17");
    assert_string_equal(inv->kernel, "6.8.0-45-generic");
    assert_string_equal(inv->cpu_model, "AMD EPYC 7313 16-Core Processor");
    assert_int_equal(inv->cpus, 16);
    assert_int_equal(inv->numa_nodes, 2);
    assert_int_equal(inv->mem_total_bytes, 528280416ull * 1024);
    assert_string_equal(inv->agent_version, FB_VERSION);

    /* DIMMs through the EDAC reader. */
    assert_int_equal(inv->n_dimms, 2);
    assert_string_equal(inv->dimms[0]->label, "CPU_SrcID#0_MC#0_Chan#0_DIMM#0");
    assert_string_equal(inv->dimms[1]->label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_string_equal(inv->dimms[1]->location, "mc0/dimm1");
    assert_int_equal(inv->dimms[1]->size_mb, 32768);
    assert_int_equal(inv->dimms[1]->ce_count, 3);
    assert_int_equal(inv->dimms[1]->ue_count, 0);

    /* Two NVIDIA GPUs in PCI order; the ASPEED VGA, the GPU's audio function, the HCA and the
     * NIC are not GPUs. */
    assert_int_equal(inv->n_gpus, 2);
    const Fleetburn__Gpu *g0 = inv->gpus[0], *g1 = inv->gpus[1];
    s_assert_gpu(g0, "0000:41:00.0", "nvidia", "0x2335", "32.0 GT/s PCIe", 16, "32.0 GT/s PCIe", 16,
                 0);
    assert_string_equal(g0->vendor_id, "0x10de");
    assert_string_equal(g1->pci_address, "0000:c1:00.0");
    assert_int_equal(g1->link_width, 8); /* downgraded link */
    assert_int_equal(g1->max_link_width, 16);
    assert_int_equal(g1->numa_node, 1);

    /* eth0, then the HCA port; lo and the docker0 bridge are virtual. */
    assert_int_equal(inv->n_nics, 2);
    const Fleetburn__Nic *eth = inv->nics[0], *ib = inv->nics[1];
    assert_string_equal(eth->name, "eth0");
    assert_string_equal(eth->kind, "ethernet");
    assert_int_equal(eth->port, 0);
    assert_string_equal(eth->state, "up");
    assert_int_equal(eth->speed_mbps, 25000);
    assert_string_equal(eth->rate, "25000 Mb/s");
    assert_string_equal(eth->address, "0c:42:a1:5e:77:10");
    assert_string_equal(ib->name, "mlx5_0");
    assert_string_equal(ib->kind, "infiniband");
    assert_int_equal(ib->port, 1);
    assert_string_equal(ib->state, "ACTIVE");
    assert_string_equal(ib->rate, "200 Gb/sec (4X HDR)");
    assert_int_equal(ib->speed_mbps, 200000);
    assert_string_equal(ib->address, "fe80:0000:0000:0000:0c42:a103:0012:3456");

    assert_string_equal(inventory_check_software(inv, "kernel"), "6.8.0-45-generic");
    assert_string_equal(inventory_check_software(inv, "nvidia_driver"), "580.65.06");
    assert_null(inventory_check_software(inv, "amdgpu"));

    char *summary = fb_inventory_summary(inv);
    assert_string_equal(summary,
                        "16 CPUs/2 NUMA, 503.8 GiB, 2 DIMMs, 2 GPU (nvidia), 1 HCA, 1 NIC");
    free(summary);

    char *json = fb_inventory_to_json(inv);
    assert_non_null(strstr(json, "\"hostname\":\"gpu17\""));
    assert_non_null(strstr(json, "\"pci_address\":\"0000:c1:00.0\""));
    assert_non_null(strstr(json, "\"link_width\":8"));
    assert_non_null(strstr(json, "\"label\":\"CPU_SrcID#0_MC#0_Chan#1_DIMM#0\""));
    assert_non_null(strstr(json, "\"software\":{\"kernel\":\"6.8.0-45-generic\","
                                 "\"nvidia_driver\":\"580.65.06\"}"));
    assert_true(json[0] == '{' && json[strlen(json) - 1] == '}');
    free(json);

    s_check_wire_round_trip(inv);
    inventory_free(&inv);
    assert_null(inv);
    inventory_free(&inv); /* NULL-safe */
    inventory_free(NULL);
}

static void test_cpu_node(void **state)
{
    Fleetburn__Inventory *inv = inventory_read(S_ROOT("cpu-node"));
    assert_string_equal(inv->hostname, "login01");
    assert_string_equal(inv->cpu_model, "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz");
    assert_int_equal(inv->cpus, 2);
    assert_int_equal(inv->numa_nodes, 1);
    assert_int_equal(inv->mem_total_bytes, 8039868ull * 1024);
    assert_int_equal(inv->n_dimms, 0); /* no EDAC driver */
    assert_int_equal(inv->n_gpus, 0);  /* the BMC's VGA is not a GPU */
    assert_int_equal(inv->n_nics, 1);
    assert_string_equal(inv->nics[0]->name, "eno1");
    assert_string_equal(inv->nics[0]->state, "down");
    assert_int_equal(inv->nics[0]->speed_mbps, 0); /* no speed file while down */
    assert_string_equal(inv->nics[0]->rate, "");
    assert_int_equal(inv->n_software, 1);
    assert_string_equal(inventory_check_software(inv, "kernel"), "5.14.0-427.13.1.el9_4.x86_64");

    char *summary = fb_inventory_summary(inv);
    assert_string_equal(summary, "2 CPUs/1 NUMA, 7.7 GiB, 0 DIMMs, 0 GPU, 0 HCA, 1 NIC");
    free(summary);
    char *json = fb_inventory_to_json(inv);
    assert_non_null(strstr(json, "\"gpus\":[]"));
    assert_non_null(strstr(json, "\"dimms\":[]"));
    free(json);
    s_check_wire_round_trip(inv);
    inventory_free(&inv);
}

/* Runs inventory_read with stderr captured; returns the log text (heap). */
static char *s_read_capturing_log(const char *root, Fleetburn__Inventory **inv)
{
    char path[] = "/tmp/fb-test-inventory-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    *inv = inventory_read(root);
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    close(fd);
    char *log = fb_read_file(path, NULL);
    unlink(path);
    assert_non_null(log);
    return log;
}

static void test_garbage_node(void **state)
{
    Fleetburn__Inventory *inv = NULL;
    char *log = s_read_capturing_log(S_ROOT("garbage-node"), &inv);
    assert_non_null(inv);

    assert_string_equal(inv->hostname, ""); /* control character */
    assert_string_equal(inv->kernel, "6.8.0");
    assert_string_equal(inv->cpu_model, "");
    assert_int_equal(inv->cpus, 3);       /* bad online list: cpuinfo's count */
    assert_int_equal(inv->numa_nodes, 1); /* nodeX is not a node */
    assert_int_equal(inv->mem_total_bytes, 0);
    assert_int_equal(inv->n_dimms, 0); /* malformed EDAC counter: no DIMMs, a warning */

    /* One GPU: the device with a garbage class and the one with an oversized class are skipped. */
    assert_int_equal(inv->n_gpus, 1);
    const Fleetburn__Gpu *g = inv->gpus[0];
    s_assert_gpu(g, "0000:01:00.0", "nvidia", "", "", 0, "32.0 GT/s PCIe", 0, 0);

    assert_int_equal(inv->n_nics, 3);
    const Fleetburn__Nic *eth = inv->nics[0];
    assert_string_equal(eth->name, "eth0");
    assert_string_equal(eth->kind, "ethernet");
    assert_string_equal(eth->state, "");
    assert_int_equal(eth->speed_mbps, 0);
    assert_string_equal(eth->rate, "");
    for (size_t i = 1; i < 3; i++) {
        const Fleetburn__Nic *ib = inv->nics[i];
        assert_string_equal(ib->name, "mlx5_0");
        assert_int_equal(ib->port, i); /* ports 1 and 2; "x" is not a port */
        assert_string_equal(ib->state, "");
        assert_string_equal(ib->rate, "");
        assert_int_equal(ib->speed_mbps, 0);
    }
    assert_null(inventory_check_software(inv, "nvidia_driver"));
    assert_string_equal(inventory_check_software(inv, "amdgpu"), "6.8.5");

    /* Each bad value is named in a warning. */
    const char *named[] = {"kernel/hostname",     "cpu/online",         "meminfo",
                           "current_link_width",  "max_link_width",     "current_link_speed",
                           "0000:01:00.0/device", "numa_node",          "eth0/operstate",
                           "eth0/speed",          "ports/1/state",      "ports/1/rate",
                           "ports/2/state",       "ports/2/rate",       "ports/x",
                           "nvidia/version",      "0000:02:00.0/class", "0000:03:00.0/class"};
    for (size_t i = 0; i < FB_ARRAY_LEN(named); i++) {
        if (!strstr(log, named[i]))
            fail_msg("no warning names %s in:\n%s", named[i], log);
    }
    free(log);

    char *summary = fb_inventory_summary(inv);
    assert_string_equal(summary, "3 CPUs/1 NUMA, 0 B, 0 DIMMs, 1 GPU (nvidia), 1 HCA, 1 NIC");
    free(summary);
    char *json = fb_inventory_to_json(inv);
    assert_non_null(json);
    free(json);
    s_check_wire_round_trip(inv);
    inventory_free(&inv);
}

static void test_missing_root(void **state)
{
    Fleetburn__Inventory *inv = inventory_read("/nonexistent/fleetburn-root");
    assert_non_null(inv);
    assert_string_equal(inv->hostname, "");
    assert_int_equal(inv->cpus, 0);
    assert_int_equal(inv->n_gpus + inv->n_nics + inv->n_dimms + inv->n_software, 0);
    char *summary = fb_inventory_summary(inv);
    assert_string_equal(summary, "0 CPUs, 0 B, 0 DIMMs, 0 GPU, 0 HCA, 0 NIC");
    free(summary);
    s_check_wire_round_trip(inv);
    inventory_free(&inv);
}

static void test_summary_mixed(void **state)
{
    Fleetburn__Gpu gpus[4];
    Fleetburn__Gpu *gpu_ptrs[4];
    const char *vendors[] = {"nvidia", "amd", "nvidia", "amd"};
    for (int i = 0; i < 4; i++) {
        fleetburn__gpu__init(&gpus[i]);
        gpus[i].vendor = (char *)vendors[i];
        gpu_ptrs[i] = &gpus[i];
    }
    Fleetburn__Nic nics[4];
    Fleetburn__Nic *nic_ptrs[4];
    const char *names[] = {"eth0", "mlx5_0", "mlx5_0", "mlx5_1"};
    const char *kinds[] = {"ethernet", "infiniband", "infiniband", "infiniband"};
    for (int i = 0; i < 4; i++) {
        fleetburn__nic__init(&nics[i]);
        nics[i].name = (char *)names[i];
        nics[i].kind = (char *)kinds[i];
        nic_ptrs[i] = &nics[i];
    }
    Fleetburn__Inventory inv;
    fleetburn__inventory__init(&inv);
    inv.cpus = 1;
    inv.numa_nodes = 1;
    inv.mem_total_bytes = 512ull << 30;
    inv.n_gpus = 4;
    inv.gpus = gpu_ptrs;
    inv.n_nics = 4;
    inv.nics = nic_ptrs;
    char *summary = fb_inventory_summary(&inv);
    assert_string_equal(summary,
                        "1 CPU/1 NUMA, 512.0 GiB, 0 DIMMs, 4 GPU (2 nvidia, 2 amd), 2 HCA, 1 NIC");
    free(summary);

    summary = fb_inventory_summary(NULL);
    assert_string_equal(summary, "no inventory");
    free(summary);
    char *json = fb_inventory_to_json(NULL);
    assert_string_equal(json, "null");
    free(json);
}

static void test_live_machine(void **state)
{
    Fleetburn__Inventory *inv = inventory_read("");
    assert_true(inv->cpus >= 1);
    assert_true(inv->mem_total_bytes > 0);
    assert_true(inv->hostname[0] != '\0');
    assert_true(inv->kernel[0] != '\0');
    char *summary = fb_inventory_summary(inv);
    char *json = fb_inventory_to_json(inv);
    assert_non_null(summary);
    assert_non_null(json);
    print_message("live: %s %s\n", inv->hostname, summary);
    free(summary);
    free(json);
    s_check_wire_round_trip(inv);
    inventory_free(&inv);
}

int main(void)
{
    fb_log_init("test", FB_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_node),      cmocka_unit_test(test_cpu_node),
        cmocka_unit_test(test_garbage_node),  cmocka_unit_test(test_missing_root),
        cmocka_unit_test(test_summary_mixed), cmocka_unit_test(test_live_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
