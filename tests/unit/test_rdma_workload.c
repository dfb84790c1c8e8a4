/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the rdmabw workload up to the point where an HCA is needed, on fixture trees: bad
 * parameters are refused by name; the wrong group shape is refused; a node without an RDMA
 * device, or without an active port, is `skipped` with the reason; a port named in `device` that
 * is down is a link finding; garbage in sysfs is an error naming the file; an HCA without
 * libibverbs (or without a provider for it) is an error saying so, after the rate check has
 * already named a port slower than its siblings; and in a pair, members that give up still post
 * their part of the exchange, so the partner learns at once instead of waiting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rdma_pair_fixture.h"

#include "common/util.h"
#include "rdma/rdma_verbs.h"
#include "rdma/rdmabw.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static worker_ctx_t *s_ctx_on(const char *tree, const char *node, const char *const *params,
                              size_t n)
{
    char *root = xasprintf("%s/sysfs/%s", FB_FIXTURES, tree);
    setenv("FLEETBURN_SYSFS_ROOT", root, 1);
    worker_ctx_t *ctx = worker_ctx_new("t-rdma", node, params, n, false);
    unsetenv("FLEETBURN_SYSFS_ROOT");
    free(root);
    return ctx;
}

static worker_ctx_t *s_ctx(const char *tree, const char *const *params, size_t n)
{
    return s_ctx_on(tree, "node01", params, n);
}

static fb_verdict_t s_run(worker_ctx_t *ctx, const char *lib)
{
    rdmabw_opts_t opts = {lib, 5000, NULL};
    fb_verdict_t v = rdmabw_run_opts(ctx, &opts);
    fb_result_t *res = worker_result(ctx);
    assert_int_equal(res->verdict, v);
    print_message("  verdict %s: %s\n", fb_verdict_name(v), res->error ? res->error : "");
    for (size_t i = 0; i < res->n_findings; i++)
        print_message("  finding %s [%s]: %s\n", res->findings[i].part, res->findings[i].kind,
                      res->findings[i].what);
    return v;
}

static void s_expect_error(worker_ctx_t *ctx, const char *says)
{
    const char *e = worker_result(ctx)->error;
    if (!e || !strstr(e, says))
        fail_msg("error '%s' does not say '%s'", e ? e : "(none)", says);
}

static void test_params(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx("cpu-node", NULL, 0);
    rdmabw_params_t p;
    char err[256];
    assert_int_equal(rdmabw_params(ctx, &p, err, sizeof err), 0);
    assert_int_equal(p.n_modes, 3);
    assert_int_equal(p.n_sizes, 23);
    assert_int_equal(p.sizes[22], 8u << 20);
    assert_int_equal(p.iters, 1000);
    assert_int_equal(p.lat_iters, 10000);
    assert_string_equal(p.device, "all");
    assert_int_equal(p.gpu, RDMABW_GPU_AUTO);
    assert_false(p.loopback);
    assert_true(p.min_gbps == 0);
    worker_ctx_destroy(&ctx);

    const char *good[] = {"modes=read, send", "min_size=4KiB", "max_size=1MiB",
                          "iters=5",          "lat_iters=0",   "device=mlx5_0:1",
                          "gpu_memory=no",    "loopback=yes",  "min_gbps=180.5"};
    ctx = s_ctx("cpu-node", good, FB_ARRAY_LEN(good));
    assert_int_equal(rdmabw_params(ctx, &p, err, sizeof err), 0);
    assert_int_equal(p.n_modes, 2);
    assert_int_equal(p.modes[0], RDMA_MODE_READ);
    assert_int_equal(p.n_sizes, 9);
    assert_int_equal(p.lat_iters, 0);
    assert_int_equal(p.gpu, RDMABW_GPU_NO);
    assert_true(p.loopback && p.min_gbps == 180.5);
    worker_ctx_destroy(&ctx);

    static const struct {
        const char *param, *says;
    } bad[] = {
        {"modes=write,atomic", "modes 'atomic'"},
        {"min_size=0", "min_size '0'"},
        {"min_size=2GiB", "min_size"},
        {"max_size=1", "max_size '1' is not a message size from min_size"},
        {"max_size=4GiB", "max_size"},
        {"iters=0", "iters '0'"},
        {"iters=many", "iters"},
        {"lat_iters=-1", "lat_iters"},
        {"gpu_memory=maybe", "gpu_memory 'maybe' is not auto, yes or no"},
        {"loopback=perhaps", "loopback"},
        {"min_gbps=0", "min_gbps '0'"},
        {"min_gbps=nan", "min_gbps"},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++) {
        const char *one[] = {bad[i].param};
        ctx = s_ctx("rdma-node", one, 1);
        assert_int_equal(s_run(ctx, "/nonexistent/libibverbs.so.1"), FB_VERDICT_ERROR);
        s_expect_error(ctx, bad[i].says);
        worker_ctx_destroy(&ctx);
    }
}

static void test_group_shape(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx("rdma-node", NULL, 0);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_ERROR);
    s_expect_error(ctx, "run it with scope: pairs, or with loopback: true on scope: node");
    worker_ctx_destroy(&ctx);

    const char *lb[] = {"loopback=true"};
    ctx = s_ctx("rdma-node", lb, 1);
    const char *peers[] = {"node01", "node02"};
    worker_ctx_set_group(ctx, 0, 2, peers, NULL);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_ERROR);
    s_expect_error(ctx, "loopback: true measures each HCA against itself");
    worker_ctx_destroy(&ctx);
}

static void test_skipped(void **state)
{
    (void)state;
    const char *lb[] = {"loopback=true"};
    worker_ctx_t *ctx = s_ctx("cpu-node", lb, 1);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_SKIPPED);
    assert_string_equal(worker_result(ctx)->error,
                        "rdmabw skipped: no RDMA device: /sys/class/infiniband is absent");
    assert_float_equal(fb_result_metric(worker_result(ctx), "rdmabw.gpu_memory")->value, 0, 0);
    worker_ctx_destroy(&ctx);

    ctx = s_ctx("rdma-empty", lb, 1);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_SKIPPED);
    s_expect_error(ctx, "/sys/class/infiniband is empty");
    worker_ctx_destroy(&ctx);

    /* device: all and no port is up: nothing to measure here (health reports the port). */
    ctx = s_ctx("rdma-down", lb, 1);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_SKIPPED);
    s_expect_error(ctx, "no active RDMA port: mlx5_0:1 DOWN (Polling)");
    assert_int_equal(worker_result(ctx)->n_findings, 0);
    worker_ctx_destroy(&ctx);
}

static void test_named_port_down(void **state)
{
    (void)state;
    const char *params[] = {"loopback=true", "device=mlx5_0:1"};
    worker_ctx_t *ctx = s_ctx("rdma-down", params, 2);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_FAIL);
    fb_result_t *res = worker_result(ctx);
    assert_int_equal(res->n_findings, 1);
    assert_string_equal(res->findings[0].part, "node01/mlx5_0:1");
    assert_string_equal(res->findings[0].kind, "link");
    assert_string_equal(res->findings[0].what,
                        "InfiniBand port mlx5_0:1 is DOWN (Polling): no link to test");
    worker_ctx_destroy(&ctx);

    /* A device that is not on the node at all is a campaign mistake. */
    const char *wrong[] = {"loopback=true", "device=mlx5_4"};
    ctx = s_ctx("rdma-node", wrong, 2);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_ERROR);
    s_expect_error(ctx, "device mlx5_4 is not on this node (HCAs here: mlx5_0, mlx5_1, mlx5_2, "
                        "mlx5_3)");
    worker_ctx_destroy(&ctx);
}

static void test_garbage(void **state)
{
    (void)state;
    const char *lb[] = {"loopback=true"};
    worker_ctx_t *ctx = s_ctx("rdma-garbage", lb, 1);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_ERROR);
    s_expect_error(ctx, "mlx5_1/ports/1/rate: 'fast' is not a rate like \"200 Gb/sec (4X HDR)\"");
    worker_ctx_destroy(&ctx);
    /* Counters that do not read are refused before anything runs. */
    const char *one[] = {"loopback=true", "device=mlx5_0"};
    ctx = s_ctx("rdma-garbage", one, 2);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_ERROR);
    s_expect_error(ctx, "port counters of mlx5_0:1 unreadable: ");
    s_expect_error(ctx, "mlx5_0/ports/1/counters/symbol_error: 'lots' is not a counter value");
    worker_ctx_destroy(&ctx);
}

static void test_no_verbs(void **state)
{
    (void)state;
    const char *params[] = {"loopback=true", "device=mlx5_0,mlx5_1"};
    worker_ctx_t *ctx = s_ctx("rdma-node", params, 2);
    assert_int_equal(s_run(ctx, "/nonexistent/libibverbs.so.1"), FB_VERDICT_ERROR);
    if (rdma_verbs_built())
        s_expect_error(ctx, "rdmabw: mlx5_0 is here but libibverbs is missing: "
                            "/nonexistent/libibverbs.so.1 does not load");
    else
        s_expect_error(ctx, "mlx5_0 is here but this worker was built without verbs");
    /* The port rate was judged before: mlx5_1 at 2X is named whatever happens next. */
    fb_result_t *res = worker_result(ctx);
    assert_int_equal(res->n_findings, 1);
    assert_string_equal(res->findings[0].part, "node01/mlx5_1:1");
    worker_ctx_destroy(&ctx);

    /* libibverbs present (as on the development machine) but no provider lists the HCA. */
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || !rdma_verbs_built()) {
        print_message("  libibverbs.so.1 not here (or no verbs headers): provider case skipped\n");
        if (h)
            dlclose(h);
        return;
    }
    dlclose(h);
    const char *one[] = {"loopback=true", "device=mlx5_0"};
    ctx = s_ctx("rdma-node", one, 2);
    assert_int_equal(s_run(ctx, NULL), FB_VERDICT_ERROR);
    s_expect_error(ctx, "mlx5_0 is in sysfs but libibverbs lists no such device");
    worker_ctx_destroy(&ctx);
}

/* ---- pairs ----------------------------------------------------------------------------------- */

static void test_pair_gives_up_cleanly(void **state)
{
    (void)state;
    /* node01 has no HCA; node02 has one, whose named port is down. */
    const char *p0[] = {"device=mlx5_2:1"};
    rdma_pair_member_t m[2];
    m[0].ctx = s_ctx_on("cpu-node", "node01", p0, 1);
    m[1].ctx = s_ctx_on("rdma-node", "node02", p0, 1);
    rdmabw_opts_t opts = {"/nonexistent/libibverbs.so.1", 20000, NULL};
    double t0 = fb_mono_s();
    rdma_pair_run(m, &opts);
    /* Well inside the 20 s exchange timeout: each posted "none" and the other saw it. */
    assert_true(fb_mono_s() - t0 < 10);
    assert_int_equal(m[0].verdict, FB_VERDICT_SKIPPED);
    assert_int_equal(m[1].verdict, FB_VERDICT_FAIL);
    assert_string_equal(worker_result(m[1].ctx)->findings[0].part, "node02/mlx5_2:1");
    worker_ctx_destroy(&m[0].ctx);
    worker_ctx_destroy(&m[1].ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_group_shape),
        cmocka_unit_test(test_skipped),
        cmocka_unit_test(test_named_port_down),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_no_verbs),
        cmocka_unit_test(test_pair_gives_up_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
