/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for GPU telemetry without a GPU: throttle bitmask names, counter diffs into findings,
 * PCIe links and GPUs from sysfs fixture trees, kernel-log findings (attribution, de-duplication
 * of an Xid seen in the log and as an NVML event, live and history modes), the whole
 * start/sample/stop cycle against a fake management library and a kernel log in a file, the
 * absent-library paths of the NVML and ROCm SMI loaders, and ROCm SMI's two frequency-table
 * layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "gpu/host/nvml.h"
#include "gpu/host/rocm_smi.h"
#include "gpu/host/telemetry.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- a fake management library ----------------------------------------------------------------
 */

typedef struct {
    tel_backend_t base;
    tel_gpu_info_t info[4];
    tel_counters_t counters[4];
    tel_sample_t sample[4];
    bool xid_pending; /* deliver one Xid (gpu 0, 79) on the first wait */
    int *destroyed;
    pthread_mutex_t lock; /* a test changes a sample while the sampler reads it */
} fake_t;

static void s_fake_info(tel_backend_t *b, size_t i, tel_gpu_info_t *out)
{
    *out = ((fake_t *)b)->info[i];
}

static void s_fake_sample(tel_backend_t *b, size_t i, tel_sample_t *out)
{
    fake_t *f = (fake_t *)b;
    pthread_mutex_lock(&f->lock);
    *out = f->sample[i];
    pthread_mutex_unlock(&f->lock);
}

static void s_fake_set_sample(fake_t *f, size_t i, tel_sample_t sample)
{
    pthread_mutex_lock(&f->lock);
    f->sample[i] = sample;
    pthread_mutex_unlock(&f->lock);
}

static void s_fake_counters(tel_backend_t *b, size_t i, tel_counters_t *out)
{
    *out = ((fake_t *)b)->counters[i];
}

static int s_fake_wait_xid(tel_backend_t *b, int timeout_ms, size_t *gpu, int *xid)
{
    fake_t *f = (fake_t *)b;
    if (f->xid_pending) {
        f->xid_pending = false;
        *gpu = 0;
        *xid = 79;
        return 1;
    }
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return 0;
}

static void s_fake_versions(tel_backend_t *b, char *buf, size_t len)
{
    (void)b;
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, " nvidia_driver=580.65.06 cuda_driver=13.0");
}

static void s_fake_destroy(tel_backend_t *b)
{
    fake_t *f = (fake_t *)b;
    if (f->destroyed)
        (*f->destroyed)++;
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void s_set(tel_counters_t *c, tel_counter_t k, uint64_t v)
{
    c->value[k] = v;
    c->known |= 1u << k;
}

/* Two H100s at the addresses of the health fixtures, idle and clean. */
static fake_t *s_fake(size_t n)
{
    fake_t *f = xcalloc(1, sizeof *f);
    pthread_mutex_init(&f->lock, NULL);
    f->base = (tel_backend_t){"fake",          n,
                              s_fake_info,     s_fake_sample,
                              s_fake_counters, s_fake_wait_xid,
                              s_fake_versions, s_fake_destroy};
    static const char *const pci[] = {"0000:41:00.0", "0000:c1:00.0", "0000:d1:00.0",
                                      "0000:e1:00.0"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(f->info[i].pci, sizeof f->info[i].pci, "%s", pci[i]);
        snprintf(f->info[i].name, sizeof f->info[i].name, "NVIDIA H100 80GB HBM3");
        f->info[i].vendor = "nvidia";
        f->info[i].pcie_max_gen = 5;
        f->info[i].pcie_max_width = 16;
        for (tel_counter_t k = 0; k < TEL_N_COUNTERS; k++)
            s_set(&f->counters[i], k, 0);
        f->sample[i] = (tel_sample_t){45, 50, 120, 700, 1980, 2619, 5, 16, 0, 0, true, false};
    }
    return f;
}

static const fb_finding_t *s_finding(const fb_result_t *r, const char *part, const char *word)
{
    for (size_t i = 0; i < r->n_findings; i++)
        if (!strcmp(r->findings[i].part, part) && (!word || strstr(r->findings[i].what, word)))
            return &r->findings[i];
    return NULL;
}

static void s_dump(const fb_result_t *r)
{
    for (size_t i = 0; i < r->n_findings; i++)
        print_message("  finding %s [%s]: %s\n", r->findings[i].part, r->findings[i].kind,
                      r->findings[i].what);
}

static char *s_fixture(const char *name)
{
    return xasprintf("%s/sysfs/%s", FB_FIXTURES, name);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_throttle_names(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(telemetry_throttle_names(0, buf, sizeof buf), "none");
    assert_string_equal(telemetry_throttle_names(0x4 | 0x40, buf, sizeof buf),
                        "sw_power_cap,hw_thermal_slowdown");
    assert_string_equal(telemetry_throttle_names(0x80 | 0x200, buf, sizeof buf),
                        "hw_power_brake,0x200");
    assert_string_equal(telemetry_throttle_names(0x1, buf, sizeof buf), "gpu_idle");
    /* A short buffer gets whole names only. */
    char small[16];
    assert_string_equal(telemetry_throttle_names(0x4 | 0x40, small, sizeof small), "sw_power_cap");
    assert_true(TEL_THROTTLE_FAULTS & 0x40);
    assert_false(TEL_THROTTLE_FAULTS & 0x4);
}

static void test_counters_diff(void **state)
{
    (void)state;
    tel_counters_t b, a;
    memset(&b, 0, sizeof b);
    for (tel_counter_t k = 0; k < TEL_N_COUNTERS; k++)
        s_set(&b, k, 10);
    a = b;
    fb_result_t *r = fb_result_new();
    /* Nothing changed: nothing to say. */
    assert_int_equal(telemetry_counters_diff(r, "n/gpu0", "0000:41:00.0", &b, &a, NULL), 0);
    assert_int_equal(r->n_findings, 0);

    /* Corrected errors and replays are findings that do not fail. */
    a.value[TEL_ECC_CE_VOLATILE] = 14;
    a.value[TEL_PCIE_REPLAY] = 110;
    b.nvlink_known[3] = a.nvlink_known[3] = 0xf;
    a.nvlink[3][TEL_NVLINK_CRC_FLIT] = 5;
    assert_int_equal(telemetry_counters_diff(r, "n/gpu0", "0000:41:00.0", &b, &a, NULL), 0);
    assert_int_equal(r->n_findings, 3);
    assert_non_null(s_finding(r, "n/gpu0", "corrected ECC errors +4"));
    assert_non_null(s_finding(r, "n/gpu0", "PCIe replays +100"));
    const fb_finding_t *f = s_finding(r, "n/gpu0/nvlink3", "CRC flit errors +5");
    assert_non_null(f);
    assert_string_equal(f->kind, "link");
    fb_result_destroy(&r);

    /* Uncorrected ECC, retirements, remaps and a lost GPU fail. */
    r = fb_result_new();
    a = b;
    a.value[TEL_ECC_UE_VOLATILE] = 12;
    a.value[TEL_RETIRED_DBE] = 11;
    a.value[TEL_RETIRED_PENDING] = 11;
    a.value[TEL_REMAP_UNCORRECTABLE] = 11;
    a.value[TEL_REMAP_FAILURE] = 11;
    a.lost = true;
    assert_int_equal(telemetry_counters_diff(r, "n/gpu1", "0000:c1:00.0", &b, &a, "during x"), 6);
    assert_non_null(s_finding(r, "n/gpu1", "uncorrectable ECC errors +2 during x"));
    assert_non_null(s_finding(r, "n/gpu1", "inaccessible"));
    assert_non_null(s_finding(r, "n/gpu1", "no spare rows"));
    for (size_t i = 0; i < r->n_findings; i++)
        assert_non_null(strstr(r->findings[i].what, "0000:c1:00.0"));
    fb_result_destroy(&r);

    /* Unknown in either snapshot, or lower after (a driver reload): not compared. */
    r = fb_result_new();
    a = b;
    a.known &= ~(1u << TEL_ECC_UE_VOLATILE);
    a.value[TEL_ECC_UE_VOLATILE] = 99;
    a.value[TEL_RETIRED_DBE] = 0;
    assert_int_equal(telemetry_counters_diff(r, "n/gpu0", "p", &b, &a, NULL), 0);
    assert_int_equal(r->n_findings, 0);
    /* The lifetime count stands in when the volatile one is not known. */
    a.value[TEL_ECC_UE_AGGREGATE] = 13;
    assert_int_equal(telemetry_counters_diff(r, "n/gpu0", "p", &b, &a, NULL), 1);
    fb_result_destroy(&r);
}

static void test_sysfs(void **state)
{
    (void)state;
    char *root = s_fixture("health-clean");
    tel_pci_t gpus[8];
    assert_int_equal(telemetry_sysfs_gpus(root, gpus, 8), 2); /* not the BMC's VGA */
    assert_string_equal(gpus[0].pci, "0000:41:00.0");
    assert_string_equal(gpus[1].pci, "0000:c1:00.0");
    assert_int_equal(telemetry_sysfs_gpus(root, gpus, 1), 1);

    tel_pcie_link_t l;
    assert_int_equal(telemetry_sysfs_link(root, "0000:41:00.0", &l), 0);
    assert_int_equal(l.gen, 1); /* idle */
    assert_int_equal(l.max_gen, 5);
    assert_int_equal(l.width, 16);
    assert_int_equal(l.max_width, 16);
    assert_false(l.slot_limited);
    /* A Gen5 GPU in a Gen4 slot: Gen4 is its best there. */
    assert_int_equal(telemetry_sysfs_link(root, "0000:c1:00.0", &l), 0);
    assert_int_equal(l.gen, 4);
    assert_int_equal(l.max_gen, 4);
    assert_true(l.slot_limited);
    assert_int_equal(telemetry_sysfs_link(root, "0000:99:00.0", &l), -ENOENT);
    free(root);

    root = s_fixture("health-pcie");
    assert_int_equal(telemetry_sysfs_link(root, "0000:41:00.0", &l), 0);
    assert_int_equal(l.width, 8);
    assert_int_equal(l.max_width, 16);
    free(root);

    /* The inventory's garbage tree: values that do not parse are an error, never a crash. */
    root = xasprintf("%s/sysfs/garbage-node", FB_FIXTURES);
    tel_pci_t g[8];
    size_t n = telemetry_sysfs_gpus(root, g, 8);
    for (size_t i = 0; i < n; i++)
        (void)telemetry_sysfs_link(root, g[i].pci, &l);
    free(root);

    assert_int_equal(telemetry_pcie_gen(2.5), 1);
    assert_int_equal(telemetry_pcie_gen(32), 5);
    assert_int_equal(telemetry_pcie_gen(64), 6);
    assert_int_equal(telemetry_pcie_gen(3), 0);
}

static void s_add(const fb_kmsg_record_t *rec, void *user)
{
    tel_klog_add(user, rec);
}

static void s_feed(tel_klog_t *k, const char *fixture)
{
    char *path = xasprintf("%s/kmsg/%s", FB_FIXTURES, fixture);
    fb_kmsg_t *km = NULL;
    assert_int_equal(fb_kmsg_open(path, FB_KMSG_FROM_START, &km), 0);
    assert_true(fb_kmsg_read(km, s_add, k) > 0);
    fb_kmsg_close(&km);
    free(path);
}

static void test_klog(void **state)
{
    (void)state;
    tel_pci_t gpus[2] = {{"0000:41:00.0"}, {"0000:c1:00.0"}};
    char *root = s_fixture("health-ib");
    worker_ctx_t *ctx = worker_ctx_new("t", "node17", NULL, 0, false);

    /* Live: every class is a finding; Xids and uncorrected errors fail. */
    tel_klog_t *k = tel_klog_new("node17", root, gpus, 2);
    s_feed(k, "nvidia.txt");
    tel_klog_add_xid(k, 0, 79); /* the same Xid from NVML: one finding, both sources */
    size_t counts[FB_KMSG_N_CLASSES];
    int fatal = tel_klog_report(k, ctx, TEL_KLOG_LIVE, counts);
    fb_result_t *r = worker_result(ctx);
    s_dump(r);
    assert_int_equal(counts[FB_KMSG_XID], 5);
    assert_int_equal(counts[FB_KMSG_GPU_ERROR], 1);
    /* Xid 79 and 13 and 119 on gpu0, 48 and RmInitAdapter on gpu1, 94 on an unknown GPU */
    assert_int_equal(r->n_findings, 6);
    assert_int_equal(fatal, 6);
    const fb_finding_t *f = s_finding(r, "node17/gpu0", "Xid 79 (GPU has fallen off the bus)");
    assert_non_null(f);
    assert_string_equal(f->kind, "gpu");
    assert_non_null(strstr(f->what, "1 kernel log line and 1 NVML event"));
    assert_non_null(strstr(f->what, "at PCI 0000:41:00.0"));
    assert_non_null(s_finding(r, "node17/gpu1", "Xid 48"));
    assert_non_null(s_finding(r, "node17/gpu1", "RmInitAdapter"));
    assert_non_null(s_finding(r, "node17/0000:1b:00.0", "Xid 94"));
    tel_klog_destroy(&k);
    assert_null(k);
    worker_ctx_destroy(&ctx);

    /* History: application Xids are only logged. */
    ctx = worker_ctx_new("t", "node17", NULL, 0, false);
    k = tel_klog_new("node17", root, gpus, 2);
    s_feed(k, "nvidia.txt");
    fatal = tel_klog_report(k, ctx, TEL_KLOG_HISTORY, NULL);
    r = worker_result(ctx);
    assert_int_equal(r->n_findings, 5);
    assert_int_equal(fatal, 5);
    assert_null(s_finding(r, "node17/gpu0", "Xid 13"));
    tel_klog_destroy(&k);
    worker_ctx_destroy(&ctx);

    /* HCAs by PCI address, DIMMs by label, the node for machine checks. */
    ctx = worker_ctx_new("t", "node17", NULL, 0, false);
    k = tel_klog_new("node17", root, gpus, 2);
    s_feed(k, "edac.txt");
    s_feed(k, "mce.txt");
    s_feed(k, "pcie-ib.txt");
    fatal = tel_klog_report(k, ctx, TEL_KLOG_LIVE, counts);
    r = worker_result(ctx);
    s_dump(r);
    f = s_finding(r, "node17/CPU_SrcID#1_MC#0_Chan#0_DIMM#0", "1 uncorrected memory error");
    assert_non_null(f);
    assert_string_equal(f->kind, "dimm");
    assert_non_null(s_finding(r, "node17/CPU_SrcID#0_MC#0_Chan#1_DIMM#0", "corrected"));
    f = s_finding(r, "node17", "machine check (uncorrected)");
    assert_non_null(f);
    assert_non_null(strstr(f->what, "3 kernel log lines"));
    assert_non_null(s_finding(r, "node17", "CPU thermal throttling"));
    assert_non_null(s_finding(r, "node17/gpu0", "PCIe AER corrected"));
    assert_non_null(s_finding(r, "node17/0000:17:00.0", "PCIe AER uncorrected"));
    assert_non_null(s_finding(r, "node17/ibp23s0", "link down"));
    assert_int_equal(counts[FB_KMSG_EDAC_CE], 3);
    assert_int_equal(counts[FB_KMSG_LINK_DOWN], 3);
    /* UE on 2 DIMMs, uncorrected MCE, uncorrected AER */
    assert_int_equal(fatal, 4);
    tel_klog_destroy(&k);
    worker_ctx_destroy(&ctx);
    free(root);
}

static void test_klog_hca(void **state)
{
    (void)state;
    char *root = s_fixture("health-ib");
    worker_ctx_t *ctx = worker_ctx_new("t", "n", NULL, 0, false);
    tel_klog_t *k = tel_klog_new("n", root, NULL, 0);
    fb_kmsg_record_t rec;
    const char *l1 = "6,1,1,-;mlx5_core 0000:23:00.0 ibp35s0: Link down";
    const char *l2 = "3,2,2,-;mlx5_core 0000:24:00.0: poll_health:800:(pid 0): device's health "
                     "compromised - reached miss count";
    assert_int_equal(fb_kmsg_parse(l1, strlen(l1), &rec), 0);
    assert_int_equal(tel_klog_add(k, &rec), FB_KMSG_LINK_DOWN);
    assert_int_equal(tel_klog_add(k, &rec), FB_KMSG_LINK_DOWN);
    assert_int_equal(fb_kmsg_parse(l2, strlen(l2), &rec), 0);
    assert_int_equal(tel_klog_add(k, &rec), FB_KMSG_NIC_ERROR);
    assert_int_equal(tel_klog_report(k, ctx, TEL_KLOG_LIVE, NULL), 0);
    fb_result_t *r = worker_result(ctx);
    s_dump(r);
    const fb_finding_t *f = s_finding(r, "n/mlx5_2:1", "2 kernel log lines");
    assert_non_null(f);
    assert_string_equal(f->kind, "link");
    f = s_finding(r, "n/mlx5_3:1", "HCA/NIC error");
    assert_non_null(f);
    assert_string_equal(f->kind, "nic");
    tel_klog_destroy(&k);
    worker_ctx_destroy(&ctx);
    free(root);
}

static void s_append(const char *path, const char *text)
{
    FILE *fp = fopen(path, "a");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void s_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_telemetry_fake(void **state)
{
    (void)state;
    char *root = s_fixture("health-clean");
    setenv("FLEETBURN_SYSFS_ROOT", root, 1);
    worker_ctx_t *ctx = worker_ctx_new("t", "node17", NULL, 0, false);
    unsetenv("FLEETBURN_SYSFS_ROOT");
    char dir[] = "/tmp/fb-tel-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *kpath = xasprintf("%s/kmsg", dir);
    s_append(kpath, "4,1,1,-;NVRM: Xid (PCI:0000:41:00): 79, pid=1, old line before the start.\n");

    fake_t *f = s_fake(2);
    int destroyed = 0;
    f->destroyed = &destroyed;
    f->xid_pending = true;
    /* gpu0 under load, thermally throttled, its link stuck at Gen4 */
    f->sample[0] = (tel_sample_t){83, 88, 690, 700, 1500, 2619, 4, 16, 0, 0x44, true, false};
    f->sample[1] = (tel_sample_t){60, 70, 650, 700, 1980, 2619, 5, 16, 0, 0x4, true, false};
    telemetry_opts_t opts = {0.05, kpath, &f->base, false};
    telemetry_t *t = telemetry_start_opts(ctx, &opts);
    assert_non_null(t);
    s_append(kpath, "4,2,2,-;NVRM: Xid (PCI:0000:41:00): 79, pid=1, GPU has fallen off the bus.\n");
    f->counters[1].value[TEL_ECC_UE_VOLATILE] = 3; /* only read again at stop */
    s_sleep_ms(300);
    int fatal = telemetry_stop(&t, ctx);
    assert_null(t);
    assert_int_equal(destroyed, 1);
    fb_result_t *r = worker_result(ctx);
    s_dump(r);
    assert_int_equal(fatal, 2); /* the Xid and the uncorrected ECC errors */
    const fb_finding_t *x = s_finding(r, "node17/gpu0", "Xid 79");
    assert_non_null(x);
    assert_non_null(strstr(x->what, "1 kernel log line and 1 NVML event"));
    assert_non_null(strstr(x->what, "GPU has fallen off the bus."));
    assert_non_null(s_finding(r, "node17/gpu1", "uncorrectable ECC errors +3"));
    assert_non_null(s_finding(r, "node17/gpu0", "hw_thermal_slowdown"));
    assert_non_null(s_finding(r, "node17/gpu0", "reached only Gen4 under load"));
    assert_null(s_finding(r, "node17/gpu1", "throttling")); /* a power cap is normal */
    assert_int_equal(r->n_findings, 4);

    const fb_metric_t *m = fb_result_metric(r, "gpu0.temp_max_c");
    assert_non_null(m);
    assert_true(m->value == 83);
    assert_non_null(m = fb_result_metric(r, "gpu1.power_mean_w"));
    assert_true(fabs(m->value - 650) < 1e-9);
    assert_non_null(m = fb_result_metric(r, "gpu0.sm_clock_median_mhz"));
    assert_true(m->value == 1500);
    assert_non_null(m = fb_result_metric(r, "gpu0.throttle_reasons"));
    assert_true(m->value == 0x44);
    assert_non_null(m = fb_result_metric(r, "gpu0.samples"));
    assert_true(m->value >= 2);
    worker_ctx_destroy(&ctx);
    unlink(kpath);
    rmdir(dir);
    free(kpath);
    free(root);
}

/* The lowest SM clock is the lowest under load: a GPU idles at 345 MHz until the burn ramps it
 * up, which is not throttling (and must not read as an improvement when the next campaign starts
 * on a warm GPU). A GPU never loaded keeps the lowest of every sample. */
static void test_telemetry_clock_min_under_load(void **state)
{
    (void)state;
    worker_ctx_t *ctx = worker_ctx_new("t", "node17", NULL, 0, false);
    fake_t *f = s_fake(2);
    f->sample[0] = (tel_sample_t){33, 35, 70, 700, 345, 2619, 5, 16, 0, 0x1, true, false};
    f->sample[1] = (tel_sample_t){33, 35, 70, 700, 345, 2619, 5, 16, 0, 0x1, true, false};
    telemetry_opts_t opts = {0.02, "/nonexistent/kmsg", &f->base, false};
    telemetry_t *t = telemetry_start_opts(ctx, &opts);
    assert_non_null(t);
    s_sleep_ms(150);
    s_fake_set_sample(f, 0, (tel_sample_t){60, 70, 650, 700, 1755, 2619, 5, 16, 0, 0x4, true, false});
    s_sleep_ms(150);
    s_fake_set_sample(f, 0, (tel_sample_t){62, 72, 690, 700, 1410, 2619, 5, 16, 0, 0x4, true, false});
    s_sleep_ms(150);
    telemetry_stop(&t, ctx);
    fb_result_t *r = worker_result(ctx);
    const fb_metric_t *m = fb_result_metric(r, "gpu0.sm_clock_min_mhz");
    assert_non_null(m);
    assert_true(m->value == 1410);
    assert_non_null(m = fb_result_metric(r, "gpu1.sm_clock_min_mhz"));
    assert_true(m->value == 345);
    worker_ctx_destroy(&ctx);
}

static void test_telemetry_nothing(void **state)
{
    (void)state;
    worker_ctx_t *ctx = worker_ctx_new("t", "", NULL, 0, false);
    telemetry_opts_t opts = {0, "/nonexistent/kmsg", NULL, true};
    telemetry_t *t = telemetry_start_opts(ctx, &opts);
    assert_non_null(t);
    assert_int_equal(telemetry_stop(&t, ctx), 0);
    assert_int_equal(worker_result(ctx)->n_findings, 0);
    assert_int_equal(telemetry_stop(&t, ctx), 0); /* NULL-safe */
    assert_int_equal(telemetry_stop(NULL, ctx), 0);

    /* The real thing on this machine: whatever it has, it never fails. */
    t = telemetry_start(ctx, 0.05);
    assert_non_null(t);
    s_sleep_ms(120);
    assert_true(telemetry_stop(&t, ctx) >= 0);
    worker_ctx_destroy(&ctx);
}

static void test_loaders_absent(void **state)
{
    (void)state;
    char why[256] = "";
    nvml_t *n = (nvml_t *)1;
    assert_int_equal(nvml_open("/nonexistent/libnvidia-ml.so.1", &n, why, sizeof why), -ENOENT);
    assert_null(n);
    assert_non_null(strstr(why, "not loadable"));
    nvml_close(&n);
    rocm_smi_t *r = (rocm_smi_t *)1;
    assert_int_equal(rocm_smi_open("/nonexistent/librocm_smi64.so", &r, why, sizeof why), -ENOENT);
    assert_null(r);
    rocm_smi_close(&r);
    /* A library that is not NVML at all. */
    assert_int_equal(nvml_open("libm.so.6", &n, why, sizeof why), -ENOENT);
    assert_null(telemetry_nvml_backend("/nonexistent/x.so", why, sizeof why));
    assert_null(telemetry_rocm_backend("/nonexistent/x.so", why, sizeof why));
}

static void test_rocm_freqs(void **state)
{
    (void)state;
    uint64_t buf[64];
    double mhz = 0;
    /* ROCm 6: {bool has_deep_sleep; u32 num; u32 current; u64 freq[33]} */
    memset(buf, 0, sizeof buf);
    unsigned char *b = (unsigned char *)buf;
    uint32_t num = 3, cur = 2;
    b[0] = 1;
    memcpy(b + 4, &num, 4);
    memcpy(b + 8, &cur, 4);
    uint64_t f[3] = {500000000ULL, 1000000000ULL, 1700000000ULL};
    memcpy(b + 16, f, sizeof f);
    assert_int_equal(rocm_smi_decode_freqs(buf, sizeof buf, &mhz), 0);
    assert_true(fabs(mhz - 1700) < 1e-9);
    /* Before: {u32 num; u32 current; u64 freq[32]} */
    memset(buf, 0, sizeof buf);
    cur = 1;
    memcpy(b, &num, 4);
    memcpy(b + 4, &cur, 4);
    memcpy(b + 8, f, sizeof f);
    assert_int_equal(rocm_smi_decode_freqs(buf, sizeof buf, &mhz), 0);
    assert_true(fabs(mhz - 1000) < 1e-9);
    /* Nonsense in either layout. */
    memset(buf, 0xff, sizeof buf);
    assert_int_equal(rocm_smi_decode_freqs(buf, sizeof buf, &mhz), -EIO);
    memset(buf, 0, sizeof buf);
    assert_int_equal(rocm_smi_decode_freqs(buf, sizeof buf, &mhz), -EIO);
    assert_int_equal(rocm_smi_decode_freqs(buf, 8, &mhz), -EIO);
}

/* Used by worker_main; declared here to see the telemetry lines a worker would send. */
void worker_ctx_set_emit(worker_ctx_t *self, bool emit);

/* On a GPU machine: FB_TELEMETRY_PROBE_S=6 test_telemetry samples the real GPUs through NVML or
 * ROCm SMI for that long and prints what telemetry reports. Skipped otherwise. */
static void test_live_probe(void **state)
{
    (void)state;
    const char *env = getenv("FB_TELEMETRY_PROBE_S");
    if (!env || atof(env) <= 0)
        skip();
    char host[256] = "probe";
    gethostname(host, sizeof host - 1);
    worker_ctx_t *ctx = worker_ctx_new("probe", host, NULL, 0, false);
    worker_ctx_set_emit(ctx, true);
    telemetry_t *t = telemetry_start(ctx, 0.5);
    assert_non_null(t);
    s_sleep_ms((long)(atof(env) * 1000));
    int fatal = telemetry_stop(&t, ctx);
    fb_result_t *r = worker_result(ctx);
    for (size_t i = 0; i < r->n_metrics; i++)
        print_message("probe metric %s = %g %s\n", r->metrics[i].name, r->metrics[i].value,
                      r->metrics[i].unit ? r->metrics[i].unit : "");
    s_dump(r);
    print_message("probe: %d fault(s) that would fail the task, %zu finding(s)\n", fatal,
                  r->n_findings);
    assert_true(fatal >= 0);
    worker_ctx_destroy(&ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_throttle_names),
        cmocka_unit_test(test_counters_diff),
        cmocka_unit_test(test_sysfs),
        cmocka_unit_test(test_klog),
        cmocka_unit_test(test_klog_hca),
        cmocka_unit_test(test_telemetry_fake),
        cmocka_unit_test(test_telemetry_clock_min_under_load),
        cmocka_unit_test(test_telemetry_nothing),
        cmocka_unit_test(test_loaders_absent),
        cmocka_unit_test(test_rocm_freqs),
    };
    /* The probe alone needs no fixtures, so it runs from a copy of the binary on a GPU machine. */
    const struct CMUnitTest probe[] = {cmocka_unit_test(test_live_probe)};
    if (getenv("FB_TELEMETRY_PROBE_S"))
        return cmocka_run_group_tests(probe, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
