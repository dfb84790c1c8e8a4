/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of what the agent adds to its inventory for expected hardware and fingerprints: the OS,
 * BIOS and HCA firmware read from a fixture tree (tests/fixtures/sysfs/expect-node), the GPU
 * probe's output merged into it (agent/gpuprobe.c: models, memory, VBIOS, InfoROM, library
 * versions), hostile probe output left out field by field, the real probe run against the
 * stand-in NVML library (tests/fakes/fake_nvml.c) and against a probe that hangs, and per-device
 * versions folded into one value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpuprobe.h"
#include "inventory.h"
#include "util.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_ROOT FB_FIXTURES "/sysfs/expect-node"

static const char *s_sw(const Fleetburn__Inventory *inv, const char *key)
{
    for (size_t i = 0; i < inv->n_software; i++)
        if (!strcmp(inv->software[i]->key, key))
            return inv->software[i]->value;
    return NULL;
}

static void s_valid_hello(Fleetburn__Inventory *inv)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    hello.name = (char *)"node17";
    hello.inventory = inv;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    char err[256] = "";
    if (fb_wire_validate(&env, err, sizeof err) != 0)
        fail_msg("a Hello with this inventory is refused: %s", err);
}

static void test_environment_fields(void **state)
{
    (void)state;
    Fleetburn__Inventory *inv = inventory_read(S_ROOT);
    assert_string_equal(s_sw(inv, "os"), "Ubuntu 24.04.1 LTS");
    assert_string_equal(s_sw(inv, "bios"), "R13");
    assert_string_equal(s_sw(inv, "bios_date"), "06/12/2025");
    assert_string_equal(s_sw(inv, "hca_fw"), "28.39.1002");
    assert_string_equal(s_sw(inv, "nvidia_driver"), "580.65.06");
    assert_int_equal(inv->mem_total_bytes, 2113233548ull * 1024);
    assert_int_equal(inv->n_gpus, 2);
    assert_string_equal(inv->gpus[0]->model, ""); /* no probe yet */
    inventory_free(&inv);

    /* The firmware of every HCA of health-ib: one differs, so each is named. */
    inv = inventory_read(FB_FIXTURES "/sysfs/health-ib");
    const char *fw = s_sw(inv, "hca_fw");
    assert_non_null(fw);
    assert_non_null(strstr(fw, "mlx5_0:"));
    assert_non_null(strchr(fw, ','));
    inventory_free(&inv);
}

/* Writes text to root/rel, making the directories. */
static void s_put(const char *root, const char *rel, const char *text, size_t len)
{
    char *path = xasprintf("%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(text, 1, len, f);
    fclose(f);
    free(path);
}

/* os-release, DMI and fw_ver are untrusted like any sysfs file: bad content is left out. */
static void test_environment_hostile(void **state)
{
    (void)state;
    char root[] = "/tmp/fbenv-XXXXXX";
    assert_non_null(mkdtemp(root));
    const char *os = "NAME=x\nPRETTY_NAME=\"Evil\x1b[2J OS\"\n";
    s_put(root, "etc/os-release", os, strlen(os));
    const char *bios = "R13\x01\n";
    s_put(root, "sys/class/dmi/id/bios_version", bios, strlen(bios));
    char big[300];
    memset(big, '9', sizeof big);
    s_put(root, "sys/class/dmi/id/bios_date", big, sizeof big);
    s_put(root, "sys/class/infiniband/mlx5_0/fw_ver", "28.1\0x\n", 6);
    const char *fw = "22.31.1014\n";
    s_put(root, "sys/class/infiniband/mlx5_1/fw_ver", fw, strlen(fw));
    Fleetburn__Inventory *inv = inventory_read(root);
    assert_null(s_sw(inv, "os"));
    assert_null(s_sw(inv, "bios"));
    assert_null(s_sw(inv, "bios_date"));
    assert_string_equal(s_sw(inv, "hca_fw"), "mlx5_0:?,mlx5_1:22.31.1014");
    s_valid_hello(inv);
    inventory_free(&inv);
    /* a quoted name with single quotes, and os-release under /usr/lib when /etc has none */
    const char *os2 = "PRETTY_NAME='Rocky Linux 9.4 (Blue Onyx)'\n";
    char *etc = xasprintf("%s/etc/os-release", root);
    unlink(etc);
    free(etc);
    s_put(root, "usr/lib/os-release", os2, strlen(os2));
    inv = inventory_read(root);
    assert_string_equal(s_sw(inv, "os"), "Rocky Linux 9.4 (Blue Onyx)");
    inventory_free(&inv);
    char *cmd = xasprintf("rm -rf %s", root);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_per_device(void **state)
{
    (void)state;
    const char *devs[] = {"gpu0", "gpu1", "gpu2"};
    const char *same[] = {"96.00.99.00.01", "96.00.99.00.01", "96.00.99.00.01"};
    const char *differ[] = {"96.00.99.00.01", "96.00.A5.00.1A", NULL};
    const char *none[] = {NULL, "", NULL};
    char *v = inventory_per_device(devs, same, 3);
    assert_string_equal(v, "96.00.99.00.01");
    free(v);
    v = inventory_per_device(devs, differ, 3);
    assert_string_equal(v, "gpu0:96.00.99.00.01,gpu1:96.00.A5.00.1A,gpu2:?");
    free(v);
    assert_null(inventory_per_device(devs, none, 3));
    /* 64 devices with long versions stay within the wire's 255 bytes, and say they were cut */
    const char *many_devs[64], *many_vals[64];
    char names[64][16], vals[64][40];
    for (int i = 0; i < 64; i++) {
        snprintf(names[i], sizeof names[i], "gpu%d", i);
        snprintf(vals[i], sizeof vals[i], "96.00.99.00.%02d-long-version", i);
        many_devs[i] = names[i];
        many_vals[i] = vals[i];
    }
    v = inventory_per_device(many_devs, many_vals, 64);
    assert_true(strlen(v) <= 255);
    assert_non_null(strstr(v, ",..."));
    free(v);
}

static const char *s_probe_text =
    "gpu 0000:41:00.0 memory=85520809984 vbios=96.00.99.00.01 inforom=G520.0200.00.05 "
    "name=NVIDIA H100 80GB HBM3\n"
    "gpu 0000:C1:00.0 memory=85520809984 vbios=96.00.99.00.02 name=NVIDIA H100 80GB HBM3\n"
    "versions: kernel=9.9 nvidia_driver=999.1 cuda_driver=13.0 nvml=13.580.65.06 "
    "gpu_vbios=x nccl=2.27.3 rocm=6.4.1\n";

static void test_merge(void **state)
{
    (void)state;
    Fleetburn__Inventory *inv = inventory_read(S_ROOT);
    assert_int_equal(gpuprobe_merge(inv, s_probe_text, strlen(s_probe_text)), 2);
    assert_string_equal(inv->gpus[0]->model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(inv->gpus[0]->memory_bytes, 85520809984ull);
    assert_string_equal(inv->gpus[1]->model, "NVIDIA H100 80GB HBM3"); /* PCI in any case */
    assert_string_equal(s_sw(inv, "gpu_vbios"), "gpu0:96.00.99.00.01,gpu1:96.00.99.00.02");
    assert_string_equal(s_sw(inv, "gpu_inforom"), "gpu0:G520.0200.00.05,gpu1:?");
    assert_string_equal(s_sw(inv, "cuda_driver"), "13.0");
    assert_string_equal(s_sw(inv, "nccl"), "2.27.3");
    assert_string_equal(s_sw(inv, "rocm"), "6.4.1");
    /* what the agent read itself stands */
    assert_string_equal(s_sw(inv, "kernel"), "6.8.0-45-generic");
    assert_string_equal(s_sw(inv, "nvidia_driver"), "580.65.06");
    assert_null(s_sw(inv, "nvml")); /* not a key the inventory takes */
    char *json = fb_inventory_to_json(inv);
    assert_non_null(
        strstr(json, "\"model\":\"NVIDIA H100 80GB HBM3\",\"memory_bytes\":85520809984"));
    free(json);
    s_valid_hello(inv);
    inventory_free(&inv);
}

static void test_merge_hostile(void **state)
{
    (void)state;
    Fleetburn__Inventory *inv = inventory_read(S_ROOT);
    char *big = xmalloc(8192), mid[201];
    memset(big, 'A', 8191);
    big[8191] = '\0';
    memset(mid, 'B', 200);
    mid[200] = '\0';
    char *text = xasprintf(
        "gpu 0000:41:00.0 memory=lots vbios=a\x01z inforom=%s name=NVIDIA \x1b[31mH100\n"
        "gpu 0000:99:00.0 memory=1 name=not a GPU of this node\n"
        "gpu 0000:c1:00.0 memory=18446744073709551615 name=%s\n"
        "gpu\n"
        "gpu 0000:c1:00.0\n"
        "versions: cuda_driver=\x7f nccl=%s rccl=\n"
        "%s\n"
        "gpu 0000:c1:00.0 name=fine after all\n",
        "0123456789012345678901234567890123456789012345678901234567890123456789", mid, mid, big);
    gpuprobe_merge(inv, text, strlen(text) + 40); /* a NUL byte ends the text */
    assert_string_equal(inv->gpus[0]->model, "");
    assert_int_equal(inv->gpus[0]->memory_bytes, 0);
    assert_string_equal(inv->gpus[1]->model, "fine after all");
    assert_int_equal(inv->gpus[1]->memory_bytes, 18446744073709551615ull);
    assert_null(s_sw(inv, "gpu_vbios"));
    assert_null(s_sw(inv, "gpu_inforom"));
    assert_null(s_sw(inv, "cuda_driver"));
    assert_null(s_sw(inv, "nccl"));
    assert_null(s_sw(inv, "rccl"));
    s_valid_hello(inv);
    inventory_free(&inv);
    free(text);
    free(big);
}

static char s_dir[64];

/* A probe program (a shell script) in s_dir. */
static char *s_script(const char *name, const char *body)
{
    char *path = xasprintf("%s/%s", s_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(path, 0755);
    return path;
}

static void test_run(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/fbprobe-XXXXXX");
    assert_non_null(mkdtemp(s_dir));

    /* The real worker against the stand-in NVML: what the agent does at start-up. */
    char *worker = xasprintf("%s/bin/fleetburn-worker", FB_BUILD_DIR);
    setenv("LD_LIBRARY_PATH", FB_BUILD_DIR "/fake-nvml", 1);
    setenv("FLEETBURN_FAKE_NVML", FB_FIXTURES "/nvml/expect-node.txt", 1);
    setenv("FLEETBURN_SYSFS_ROOT", S_ROOT, 1);
    Fleetburn__Inventory *inv = inventory_read(S_ROOT);
    gpuprobe_run(inv, worker, GPUPROBE_TIMEOUT_MS);
    assert_string_equal(inv->gpus[1]->model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(inv->gpus[1]->memory_bytes, 85520809984ull);
    assert_string_equal(s_sw(inv, "gpu_vbios"), "96.00.99.00.01");
    assert_string_equal(s_sw(inv, "gpu_inforom"), "G520.0200.00.05");
    assert_string_equal(s_sw(inv, "cuda_driver"), "13.0");
    inventory_free(&inv);
    unsetenv("FLEETBURN_FAKE_NVML"); /* the driver "not loaded": nothing added */
    inv = inventory_read(S_ROOT);
    gpuprobe_run(inv, worker, GPUPROBE_TIMEOUT_MS);
    assert_string_equal(inv->gpus[0]->model, "");
    assert_null(s_sw(inv, "gpu_vbios"));
    inventory_free(&inv);
    free(worker);
    unsetenv("LD_LIBRARY_PATH");
    unsetenv("FLEETBURN_SYSFS_ROOT");

    /* A probe that hangs is killed at the deadline, with what it had printed ignored; one that
     * fails or cannot start changes nothing. */
    char *hang = s_script("hang", "echo 'gpu 0000:41:00.0 name=half'; exec sleep 60");
    inv = inventory_read(S_ROOT);
    uint64_t t0 = fb_mono_ms();
    gpuprobe_run(inv, hang, 300);
    assert_true(fb_mono_ms() - t0 < 5000);
    assert_string_equal(inv->gpus[0]->model, "");
    char *failing = s_script("fail", "echo 'gpu 0000:41:00.0 name=x'; exit 3");
    gpuprobe_run(inv, failing, 5000);
    assert_string_equal(inv->gpus[0]->model, "");
    gpuprobe_run(inv, "/nonexistent/fleetburn-worker", 5000);
    assert_string_equal(inv->gpus[0]->model, "");
    inventory_free(&inv);
    /* No GPUs: the probe is not run at all. */
    inv = inventory_read(FB_FIXTURES "/sysfs/cpu-node");
    gpuprobe_run(inv, hang, 60000);
    assert_int_equal(inv->n_gpus, 0);
    inventory_free(&inv);
    unlink(hang);
    unlink(failing);
    free(hang);
    free(failing);
    rmdir(s_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_environment_fields), cmocka_unit_test(test_environment_hostile),
        cmocka_unit_test(test_per_device),         cmocka_unit_test(test_merge),
        cmocka_unit_test(test_merge_hostile),      cmocka_unit_test(test_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
