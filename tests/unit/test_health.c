/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the health sweep on fixture trees (tests/fixtures/sysfs/health-*), one per finding
 * class, with the kernel log from recorded fixtures and GPU counters from a fake management
 * library: a clean node passes (an idle GPU's low link speed and a slot-limited GPU are not
 * faults); a narrow GPU link and a slow HCA link, InfiniBand ports that are down, unconfigured
 * or slower than expected, a DIMM with uncorrected errors, GPUs with retired pages, failed remaps,
 * uncorrected ECC or missing from the library, and unrepaired faults left in the kernel log each
 * fail with a finding that names the part; the versions line carries what the fleet compares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "gpu/host/telemetry.h"
#include "health/health.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake management library ----------------------------------------------------------------
 */

typedef struct {
    tel_backend_t base;
    tel_gpu_info_t info[2];
    tel_counters_t counters[2];
} fake_t;

static void s_fake_info(tel_backend_t *b, size_t i, tel_gpu_info_t *out)
{
    *out = ((fake_t *)b)->info[i];
}

static void s_fake_sample(tel_backend_t *b, size_t i, tel_sample_t *out)
{
    (void)b;
    (void)i;
    memset(out, 0, sizeof *out);
}

static void s_fake_counters(tel_backend_t *b, size_t i, tel_counters_t *out)
{
    *out = ((fake_t *)b)->counters[i];
}

static void s_fake_versions(tel_backend_t *b, char *buf, size_t len)
{
    (void)b;
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, " nvidia_driver=580.65.06 cuda_driver=13.0 gpu_vbios=96.00");
}

static void s_fake_destroy(tel_backend_t *b)
{
    free(b);
}

/* n NVIDIA GPUs at the fixtures' addresses, with clean counters. */
static fake_t *s_fake(size_t n)
{
    fake_t *f = xcalloc(1, sizeof *f);
    f->base = (tel_backend_t){"NVML",          n,    s_fake_info,     s_fake_sample,
                              s_fake_counters, NULL, s_fake_versions, s_fake_destroy};
    static const char *const pci[] = {"0000:41:00.0", "0000:c1:00.0"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(f->info[i].pci, sizeof f->info[i].pci, "%s", pci[i]);
        f->info[i].vendor = "nvidia";
        for (tel_counter_t k = 0; k < TEL_N_COUNTERS; k++) {
            f->counters[i].value[k] = 0;
            f->counters[i].known |= 1u << k;
        }
    }
    return f;
}

/* ---- running the sweep ------------------------------------------------------------------------
 */

typedef struct {
    worker_ctx_t *ctx;
    fb_verdict_t verdict;
} run_t;

/* Runs health on a fixture tree with a kernel-log fixture and an optional fake library. */
static run_t s_run(const char *tree, const char *kmsg, fake_t *fake, const char *param)
{
    char *root = xasprintf("%s/sysfs/%s", FB_FIXTURES, tree);
    char *kpath = xasprintf("%s/kmsg/%s", FB_FIXTURES, kmsg ? kmsg : "clean.txt");
    setenv("FLEETBURN_SYSFS_ROOT", root, 1);
    const char *params[1] = {param};
    run_t r;
    r.ctx = worker_ctx_new("t", "node17", params, param ? 1 : 0, false);
    unsetenv("FLEETBURN_SYSFS_ROOT");
    health_opts_t opts = {kpath, fake ? &fake->base : NULL, true};
    r.verdict = health_run_opts(r.ctx, &opts);
    fb_result_t *res = worker_result(r.ctx);
    assert_int_equal(res->verdict, r.verdict);
    for (size_t i = 0; i < res->n_findings; i++)
        print_message("  %s finding %s [%s]: %s\n", tree, res->findings[i].part,
                      res->findings[i].kind, res->findings[i].what);
    free(root);
    free(kpath);
    return r;
}

static double s_metric(const run_t *r, const char *name)
{
    const fb_metric_t *m = fb_result_metric(worker_result(r->ctx), name);
    assert_non_null(m);
    return m->value;
}

static const fb_finding_t *s_finding(const run_t *r, const char *part, const char *word)
{
    const fb_result_t *res = worker_result(r->ctx);
    for (size_t i = 0; i < res->n_findings; i++)
        if (!strcmp(res->findings[i].part, part) && (!word || strstr(res->findings[i].what, word)))
            return &res->findings[i];
    return NULL;
}

static size_t s_n(const run_t *r)
{
    return worker_result(r->ctx)->n_findings;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_clean(void **state)
{
    (void)state;
    /* gpu0 idles at 2.5 GT/s, gpu1 is a Gen5 GPU at Gen4 in a Gen4 slot: neither is a fault. */
    run_t r = s_run("health-clean", "clean.txt", s_fake(2), NULL);
    assert_int_equal(r.verdict, FB_VERDICT_PASS);
    assert_int_equal(s_n(&r), 0);
    assert_true(s_metric(&r, "gpus") == 2);
    assert_true(s_metric(&r, "hcas") == 1);
    assert_true(s_metric(&r, "ib_ports") == 1);
    assert_true(s_metric(&r, "pcie_degraded") == 0);
    assert_true(s_metric(&r, "edac_ce_total") == 2); /* corrected errors are logged, not failed */
    assert_true(s_metric(&r, "kmsg_xid") == 0);
    assert_true(s_metric(&r, "findings") == 0);
    worker_ctx_destroy(&r.ctx);

    /* Without any library: the sysfs and kernel-log parts alone. */
    r = s_run("health-clean", "clean.txt", NULL, "ib_rate=400 Gb/sec");
    assert_int_equal(r.verdict, FB_VERDICT_PASS);
    worker_ctx_destroy(&r.ctx);
}

static void test_pcie(void **state)
{
    (void)state;
    run_t r = s_run("health-pcie", NULL, s_fake(2), NULL);
    assert_int_equal(r.verdict, FB_VERDICT_FAIL);
    assert_int_equal(s_n(&r), 2);
    const fb_finding_t *f = s_finding(&r, "node17/gpu0", "x8, below its 32 GT/s (Gen5) x16");
    assert_non_null(f);
    assert_string_equal(f->kind, "link");
    assert_non_null(strstr(f->what, "0000:41:00.0"));
    f = s_finding(&r, "node17/mlx5_0", "8 GT/s (Gen3) x16, below its 32 GT/s (Gen5) x16");
    assert_non_null(f);
    assert_true(s_metric(&r, "pcie_degraded") == 2);
    worker_ctx_destroy(&r.ctx);
}

static void test_ib(void **state)
{
    (void)state;
    /* No expected rate: the rate most active ports run at. */
    run_t r = s_run("health-ib", NULL, NULL, NULL);
    assert_int_equal(r.verdict, FB_VERDICT_FAIL);
    assert_int_equal(s_n(&r), 3);
    assert_non_null(s_finding(&r, "node17/mlx5_2:1", "100 Gb/sec (1X NDR), below the 400 Gb/sec"));
    const fb_finding_t *f = s_finding(&r, "node17/mlx5_3:1", "DOWN, physical state Polling");
    assert_non_null(f);
    assert_string_equal(f->kind, "link");
    assert_non_null(strstr(f->what, "no link partner"));
    assert_non_null(s_finding(&r, "node17/mlx5_5:1", "no subnet manager"));
    assert_null(s_finding(&r, "node17/mlx5_4:1", NULL)); /* Ethernet: logged only */
    assert_true(s_metric(&r, "ib_ports") == 6);
    assert_true(s_metric(&r, "ib_ports_down") == 2);
    assert_true(s_metric(&r, "ib_ports_slow") == 1);
    worker_ctx_destroy(&r.ctx);

    /* An expected rate above what every port runs at. */
    r = s_run("health-ib", NULL, NULL, "ib_rate=800");
    assert_int_equal(s_n(&r), 5);
    assert_non_null(s_finding(&r, "node17/mlx5_0:1", "below the expected 800 Gb/sec"));
    worker_ctx_destroy(&r.ctx);
    r = s_run("health-ib", NULL, NULL, "ib_rate=200 Gb/sec");
    assert_int_equal(s_n(&r), 3);
    worker_ctx_destroy(&r.ctx);

    /* A rate that is not one is the campaign's error, not the node's. */
    r = s_run("health-ib", NULL, s_fake(2), "ib_rate=fast");
    assert_int_equal(r.verdict, FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(r.ctx)->error, "ib_rate 'fast'"));
    worker_ctx_destroy(&r.ctx);
}

static void test_edac(void **state)
{
    (void)state;
    run_t r = s_run("health-edac", NULL, NULL, NULL);
    assert_int_equal(r.verdict, FB_VERDICT_FAIL);
    assert_int_equal(s_n(&r), 1);
    const fb_finding_t *f =
        s_finding(&r, "node17/CPU_SrcID#0_MC#0_Chan#1_DIMM#0", "2 uncorrected and 12 corrected");
    assert_non_null(f);
    assert_string_equal(f->kind, "dimm");
    assert_true(s_metric(&r, "dimm_ue") == 1);
    assert_true(s_metric(&r, "edac_ue_total") == 2);
    worker_ctx_destroy(&r.ctx);
}

static void test_gpu_counters(void **state)
{
    (void)state;
    fake_t *f = s_fake(1); /* gpu1 is on the bus but the library does not list it */
    tel_counters_t *c = &f->counters[0];
    c->value[TEL_RETIRED_DBE] = 3;
    c->value[TEL_RETIRED_SBE] = 1;
    c->value[TEL_REMAP_FAILURE] = 1;
    c->value[TEL_REMAP_PENDING] = 1;
    c->value[TEL_ECC_UE_VOLATILE] = 2;
    c->value[TEL_REMAP_UNCORRECTABLE] = 5; /* repaired rows: logged only */
    run_t r = s_run("health-clean", NULL, f, NULL);
    assert_int_equal(r.verdict, FB_VERDICT_FAIL);
    assert_int_equal(s_n(&r), 5);
    assert_non_null(s_finding(&r, "node17/gpu0", "4 memory pages retired (3 for double-bit"));
    assert_non_null(s_finding(&r, "node17/gpu0", "no spare rows left"));
    assert_non_null(s_finding(&r, "node17/gpu0", "row remap pending"));
    assert_non_null(s_finding(&r, "node17/gpu0", "2 uncorrected ECC errors"));
    const fb_finding_t *m = s_finding(&r, "node17/gpu1", "NVML does not list it");
    assert_non_null(m);
    assert_non_null(strstr(m->what, "0000:c1:00.0"));
    assert_true(s_metric(&r, "gpu_missing") == 1);
    assert_true(s_metric(&r, "gpu_retired_pages") == 1);
    worker_ctx_destroy(&r.ctx);

    /* A GPU that no longer answers. */
    f = s_fake(2);
    f->counters[1].lost = true;
    r = s_run("health-clean", NULL, f, NULL);
    assert_int_equal(s_n(&r), 1);
    assert_non_null(s_finding(&r, "node17/gpu1", "does not answer"));
    worker_ctx_destroy(&r.ctx);
}

static void test_kmsg(void **state)
{
    (void)state;
    run_t r = s_run("health-clean", "nvidia.txt", s_fake(2), NULL);
    assert_int_equal(r.verdict, FB_VERDICT_FAIL);
    /* Xids 79 and 119 on gpu0, 48 and a failed init on gpu1, 94 on a GPU not on this bus; the
     * application Xid 13 left by an earlier job is logged only. */
    assert_int_equal(s_n(&r), 5);
    assert_non_null(s_finding(&r, "node17/gpu0", "Xid 79"));
    assert_non_null(s_finding(&r, "node17/gpu0", "Xid 119"));
    assert_null(s_finding(&r, "node17/gpu0", "Xid 13"));
    assert_non_null(s_finding(&r, "node17/gpu1", "Xid 48"));
    assert_non_null(s_finding(&r, "node17/gpu1", "RmInitAdapter"));
    assert_true(s_metric(&r, "kmsg_xid") == 5);
    worker_ctx_destroy(&r.ctx);

    /* Corrected machine checks, thermal events and link flaps in the log are history. */
    r = s_run("health-clean", "mce.txt", NULL, NULL);
    assert_int_equal(s_n(&r), 1);
    assert_non_null(s_finding(&r, "node17", "machine check (uncorrected)"));
    assert_true(s_metric(&r, "kmsg_mce") == 6);
    assert_true(s_metric(&r, "kmsg_cpu_thermal") == 1);
    worker_ctx_destroy(&r.ctx);
    r = s_run("health-clean", "amdgpu.txt", NULL, NULL);
    assert_int_equal(s_n(&r), 2); /* uncorrectable RAS on gpu1; ring timeout + reset on 4b */
    worker_ctx_destroy(&r.ctx);

    /* A log that cannot be opened is said and skipped, not failed. */
    char *root = xasprintf("%s/sysfs/health-clean", FB_FIXTURES);
    setenv("FLEETBURN_SYSFS_ROOT", root, 1);
    worker_ctx_t *ctx = worker_ctx_new("t", "n", NULL, 0, false);
    unsetenv("FLEETBURN_SYSFS_ROOT");
    health_opts_t opts = {"/nonexistent/kmsg", NULL, true};
    assert_int_equal(health_run_opts(ctx, &opts), FB_VERDICT_PASS);
    worker_ctx_destroy(&ctx);
    free(root);
}

static void test_versions(void **state)
{
    (void)state;
    char *root = xasprintf("%s/sysfs/health-ib", FB_FIXTURES);
    char *v = health_versions(root, NULL, false);
    assert_string_equal(v, "kernel=6.8.0-45-generic nvidia_driver=580.65.06 "
                           "hca_fw=mlx5_0:28.39.1002,mlx5_1:28.39.1002,mlx5_2:28.39.1002,"
                           "mlx5_3:28.39.1002,mlx5_4:28.39.1002,mlx5_5:28.41.1000");
    free(v);
    free(root);
    root = xasprintf("%s/sysfs/health-clean", FB_FIXTURES);
    fake_t *f = s_fake(2);
    v = health_versions(root, &f->base, false);
    assert_string_equal(v, "kernel=6.8.0-45-generic nvidia_driver=580.65.06 cuda_driver=13.0 "
                           "gpu_vbios=96.00 hca_fw=28.39.1002");
    free(v);
    f->base.destroy(&f->base);
    free(root);
    /* Nothing to find: an empty line, never a crash. */
    v = health_versions("/nonexistent", NULL, false);
    assert_string_equal(v, "");
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),        cmocka_unit_test(test_pcie),
        cmocka_unit_test(test_ib),           cmocka_unit_test(test_edac),
        cmocka_unit_test(test_gpu_counters), cmocka_unit_test(test_kmsg),
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
