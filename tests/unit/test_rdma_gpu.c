/* SPDX-License-Identifier: Apache-2.0 */
/* GPU memory for rdmabw through the CUDA driver API loaded at run time, on a real GPU: the
 * nearest-GPU choice against this machine's sysfs, opening the GPU by PCI address, allocating with
 * synchronous memory operations, the test pattern copied in and read back intact, and a dma-buf
 * exported where the driver supports it (what ibv_reg_dmabuf_mr registers). Without libcuda or an
 * NVIDIA GPU it says so and passes: registration with an HCA needs one too, and that part runs
 * only where RDMA hardware is (bench/rdmabw_vs_perftest.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "gpu/host/telemetry.h"
#include "rdma/rdma_gpu.h"
#include "rdma/rdma_sweep.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool s_nvidia_gpu(char pci[16])
{
    tel_pci_t gpus[TEL_MAX_GPUS];
    size_t n = telemetry_sysfs_gpus("", gpus, TEL_MAX_GPUS);
    for (size_t i = 0; i < n; i++) {
        char *path = xasprintf("/sys/bus/pci/devices/%s/vendor", gpus[i].pci);
        char *v = fb_read_file(path, NULL);
        free(path);
        bool nv = v && !strcmp(v, "0x10de");
        free(v);
        if (nv) {
            memcpy(pci, gpus[i].pci, 16);
            return true;
        }
    }
    return false;
}

static void test_gpu_memory(void **state)
{
    (void)state;
    char pci[16];
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !s_nvidia_gpu(pci)) {
        print_message("  no libcuda.so.1 or no NVIDIA GPU here: nothing to test\n");
        if (lib)
            dlclose(lib);
        return;
    }
    rdma_gpu_t *g = NULL;
    char err[512];
    int rc = rdma_gpu_open(pci, &g, err, sizeof err);
    if (rc < 0)
        fail_msg("rdma_gpu_open(%s): %s", pci, err);
    print_message("  %s at %s, dma-buf export %s, peer-memory module %s\n", rdma_gpu_name(g), pci,
                  rdma_gpu_dmabuf_supported(g) ? "supported" : "not supported",
                  rdma_gpu_peermem_module("") ? rdma_gpu_peermem_module("") : "not loaded");
    uint64_t dptr = 0;
    size_t bytes = 0;
    assert_int_equal(rdma_gpu_alloc(g, 3u << 20, &dptr, &bytes, err, sizeof err), 0);
    assert_int_equal(bytes, 4u << 20); /* rounded up to the 2 MiB GPU page */
    assert_true(dptr % (2u << 20) == 0);

    /* What rdmabw does around a step: a message pattern in, poison next to it, read back. */
    size_t msg = 1000003;
    uint8_t *host = xmalloc(msg), *back = xmalloc(msg);
    rdma_pattern_fill(host, msg, 42, false);
    assert_int_equal(rdma_gpu_to_device(g, dptr + 12345, host, msg), 0);
    rdma_pattern_fill(host, msg, 42, true);
    assert_int_equal(rdma_gpu_to_device(g, dptr + 12345 + msg, host, msg), 0);
    assert_int_equal(rdma_gpu_to_host(g, back, dptr + 12345, msg), 0);
    assert_int_equal(rdma_pattern_check(back, msg, 42, NULL, NULL, NULL), 0);
    assert_int_equal(rdma_gpu_to_host(g, back, dptr + 12345 + msg, msg), 0);
    assert_int_equal(rdma_pattern_check(back, msg, 42, NULL, NULL, NULL), msg);

    if (rdma_gpu_dmabuf_supported(g)) {
        int fd = rdma_gpu_dmabuf_fd(g, dptr, bytes, err, sizeof err);
        if (fd < 0)
            fail_msg("dma-buf export: %s", err);
        print_message("  dma-buf fd %d for %zu bytes at 0x%llx\n", fd, bytes,
                      (unsigned long long)dptr);
        close(fd);
    }
    rdma_gpu_free(g, dptr);
    rdma_gpu_close(&g);
    free(host);
    free(back);
    dlclose(lib);
}

static void test_gpu_absent(void **state)
{
    (void)state;
    rdma_gpu_t *g = NULL;
    char err[256];
    /* A PCI address the driver does not have: refused with a reason, no abort. */
    int rc = rdma_gpu_open("0000:ff:1f.7", &g, err, sizeof err);
    assert_true(rc < 0);
    assert_null(g);
    print_message("  %s\n", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_memory),
        cmocka_unit_test(test_gpu_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
