/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the host side of allreduce on GPUs, without a GPU: NCCL's enum values and version
 * codes, loading a library that is absent or is not NCCL, the member and results texts of
 * launcher native's exchanges (round trips and garbage), merging sizes, the memory cut of the
 * sweep, and launcher native end to end with a fake GPU table whose "ranks" are real forked
 * processes: the unique id handed out from rank 0 to every rank, ranks assigned across members
 * through a shared exchange directory, a member that never arrives, a rank that crashes or
 * hangs, an injected wrong element, and nodes without GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "allreduce/native.h"
#include "allreduce/nccl_dl.h"
#include "common/util.h"
#include "worker.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)

/* ---- NCCL by dlopen ---- */

static void test_nccl_tables(void **state)
{
    (void)state;
    /* nccl.h: ncclFloat32 7, ncclFloat16 6, ncclBfloat16 9, ncclFloat64 8, ncclInt32 2. */
    assert_int_equal(nccl_dl_dtype(AR_DT_FLOAT), 7);
    assert_int_equal(nccl_dl_dtype(AR_DT_HALF), 6);
    assert_int_equal(nccl_dl_dtype(AR_DT_BF16), 9);
    assert_int_equal(nccl_dl_dtype(AR_DT_DOUBLE), 8);
    assert_int_equal(nccl_dl_dtype(AR_DT_INT32), 2);
    assert_int_equal(nccl_dl_op(AR_OP_SUM), 0);
    assert_int_equal(nccl_dl_op(AR_OP_PROD), 1);
    assert_int_equal(nccl_dl_op(AR_OP_MAX), 2);
    assert_int_equal(nccl_dl_op(AR_OP_MIN), 3);
    assert_int_equal(sizeof(nccl_dl_id_t), 128);

    char v[32];
    nccl_dl_version_text(22809, v, sizeof v);
    assert_string_equal(v, "2.28.9");
    nccl_dl_version_text(21803, v, sizeof v);
    assert_string_equal(v, "2.18.3");
    nccl_dl_version_text(2708, v, sizeof v); /* before 2.9: X*1000 + Y*100 + Z */
    assert_string_equal(v, "2.7.8");
    nccl_dl_version_text(0, v, sizeof v);
    assert_string_equal(v, "unknown");
}

static void test_nccl_open_failures(void **state)
{
    (void)state;
    nccl_dl_t *dl = NULL;
    char why[512];
    assert_int_equal(nccl_dl_open("libfleetburn-no-such-nccl.so.2", &dl, why, sizeof why), -ENOENT);
    assert_null(dl);
    assert_non_null(strstr(why, "cannot load libfleetburn-no-such-nccl.so.2"));
    /* A library that loads but is not NCCL. */
    assert_int_equal(nccl_dl_open("libm.so.6", &dl, why, sizeof why), -ENOSYS);
    assert_null(dl);
    assert_non_null(strstr(why, "has no ncclGetVersion"));
    nccl_dl_close(&dl);
}

/* ---- exchange texts ---- */

static void test_member_roundtrip(void **state)
{
    (void)state;
    ar_member_t m = {AR_MEMBER_OK, 3, {0, 2, 7}, 22809, 80 * GIB, ""};
    char *line = ar_member_format(&m);
    ar_member_t back;
    assert_int_equal(ar_member_parse(line, strlen(line), &back), 0);
    assert_int_equal(back.state, AR_MEMBER_OK);
    assert_int_equal(back.n, 3);
    assert_int_equal(back.devices[1], 2);
    assert_int_equal(back.devices[2], 7);
    assert_int_equal(back.nccl_version, 22809);
    assert_true(back.min_mem_bytes == 80 * GIB);
    free(line);

    ar_member_t none = {AR_MEMBER_BROKEN, 0, {0}, 0, 0, "cannot load libnccl.so.2: not\nfound"};
    line = ar_member_format(&none);
    assert_null(strchr(line, '\n'));
    assert_int_equal(ar_member_parse(line, strlen(line), &back), 0);
    assert_int_equal(back.state, AR_MEMBER_BROKEN);
    assert_int_equal(back.n, 0);
    assert_string_equal(back.why, "cannot load libnccl.so.2: not found");
    free(line);
}

static void test_member_garbage(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "fbgpus2 0 1 0 22809 100 ",
        "fbgpus1 0 2 0 22809 100 ",   /* two GPUs, one index */
        "fbgpus1 0 1 0,1 22809 100 ", /* one GPU, two indices */
        "fbgpus1 0 0 - 22809 100 ",   /* OK with no GPU */
        "fbgpus1 1 1 0 22809 100 x",  /* no GPUs, yet one */
        "fbgpus1 3 0 - 0 0 why",      /* unknown state */
        "fbgpus1 0 1 x 22809 100 ",
        "fbgpus1 0 1 0 -5 100 ",
        "fbgpus1 0 1 0 22809",
        "fbgpus1 0 65 0 1 1 ",
    };
    ar_member_t m;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (ar_member_parse(bad[i], strlen(bad[i]), &m) != -EINVAL)
            fail_msg("accepted '%s'", bad[i]);
    }
    assert_int_equal(ar_member_parse(NULL, 0, &m), -EINVAL);
    assert_int_equal(ar_member_parse("fbgpus1 0 1 0 1 1 \0x", 20, &m), -EINVAL);
}

static ar_size_result_t s_size(uint64_t bytes, double avg, uint64_t errors, int bad)
{
    ar_size_result_t r = {bytes, bytes / 4, avg, avg * 0.9, avg * 1.2, 0, 0, errors, 5, bad};
    return r;
}

static void test_results_roundtrip(void **state)
{
    (void)state;
    ar_size_result_t sizes[2] = {s_size(MIB, 31.25, 0, -1), s_size(2 * MIB, 1.0 / 3, 4, 2)};
    ar_rank_error_t bad[1] = {{2 * MIB, 2, 4, 12345, 3, 5.0, 5.0000004768371582}};
    char *text =
        ar_results_format("node-b/gpu1 (rank 2): ncclAllReduce: remote error; x", sizes, 2, bad, 1);
    char *err = NULL;
    ar_size_result_t *back = NULL;
    ar_rank_error_t *bback = NULL;
    size_t n = 0, nb = 0;
    assert_int_equal(ar_results_parse(text, strlen(text), &err, &back, &n, &bback, &nb), 0);
    assert_string_equal(err, "node-b/gpu1 (rank 2): ncclAllReduce: remote error; x");
    assert_int_equal(n, 2);
    assert_true(back[0].avg_us == 31.25);
    assert_true(back[1].avg_us == 1.0 / 3); /* full precision: every member merges the same */
    assert_int_equal(back[1].errors, 4);
    assert_int_equal(back[1].first_bad_rank, 2);
    assert_int_equal(back[0].first_bad_rank, -1);
    assert_int_equal(nb, 1);
    assert_int_equal(bback[0].rank, 2);
    assert_int_equal(bback[0].index, 12345);
    assert_true(bback[0].got == 5.0000004768371582);
    free(err);
    free(back);
    free(bback);
    free(text);

    text = ar_results_format("", NULL, 0, NULL, 0);
    assert_int_equal(ar_results_parse(text, strlen(text), &err, &back, &n, &bback, &nb), 0);
    assert_string_equal(err, "");
    assert_int_equal(n, 0);
    free(err);
    free(back);
    free(bback);
    free(text);
}

static void test_results_garbage(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "error ",                                        /* no header */
        "fbresults1 1 0\nerror ",                        /* a size missing */
        "fbresults1 0 1\nerror ",                        /* an error line missing */
        "fbresults1 1 0\n1048576 262144 1 1 1 0 -1 5\n", /* no error line */
        "fbresults1 1 0\n1048576 262144 x 1 1 0 -1 5\nerror ",
        "fbresults1 1 0\n1048576 262144 1 1 1 0 -2 5\nerror ",
        "fbresults1 1 0\n1048576 262144 1 1 1 0 -1 5 9\nerror ",
        "fbresults1 0 1\nfb-allreduce bytes=1\nerror ",
        "fbresults1 99999 0\nerror ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *err = NULL;
        ar_size_result_t *sizes = NULL;
        ar_rank_error_t *b = NULL;
        size_t n = 0, nb = 0;
        if (ar_results_parse(bad[i], strlen(bad[i]), &err, &sizes, &n, &b, &nb) != -EINVAL)
            fail_msg("accepted '%s'", bad[i]);
        assert_null(err);
        assert_null(sizes);
        assert_null(b);
    }
}

static void test_merge(void **state)
{
    (void)state;
    ar_size_result_t a = s_size(MIB, 30, 0, -1), b = s_size(MIB, 32, 2, 3),
                     c = s_size(MIB, 31, 1, 1);
    assert_int_equal(ar_size_merge(&a, &b), 0);
    assert_int_equal(ar_size_merge(&a, &c), 0);
    assert_true(a.avg_us == 32);
    assert_true(a.max_us == 32 * 1.2);
    assert_int_equal(a.errors, 3);
    assert_int_equal(a.first_bad_rank, 1);
    ar_size_finish(&a, 2);
    /* 1 MiB in 32 us: algbw 32.77 GB/s, busbw = algbw for two ranks. */
    assert_true(fabs(a.algbw_gbs - 1048576 / 32e-6 / 1e9) < 1e-9);
    assert_true(fabs(a.busbw_gbs - a.algbw_gbs) < 1e-9);
    ar_size_result_t other = s_size(2 * MIB, 30, 0, -1);
    assert_int_equal(ar_size_merge(&a, &other), -EINVAL);
}

static void test_fit_and_sweep(void **state)
{
    (void)state;
    assert_true(ar_gpu_fit_bytes(80 * GIB) >= 8 * GIB); /* H100: the full default sweep */
    assert_true(ar_gpu_fit_bytes(16 * GIB) < 8 * GIB);  /* 16 GB boards stop earlier */
    assert_true(ar_gpu_fit_bytes(16 * GIB) >= 4 * GIB);
    assert_int_equal(ar_gpu_fit_bytes(GIB), 0);
    ar_opts_t o = {AR_LAUNCH_NATIVE, MIB, 8 * GIB, 2, AR_DT_FLOAT, AR_OP_SUM, 20, 5, false};
    uint64_t *sizes = NULL;
    size_t n = ar_gpu_sweep(&o, 8 * GIB, &sizes);
    assert_int_equal(n, 14);
    assert_true(sizes[13] == 8 * GIB);
    free(sizes);
    n = ar_gpu_sweep(&o, ar_gpu_fit_bytes(16 * GIB), &sizes);
    assert_int_equal(n, 13);
    assert_true(sizes[12] == 4 * GIB);
    free(sizes);
    assert_int_equal(ar_gpu_sweep(&o, MIB - 1, &sizes), 0);
    assert_null(sizes);
}

/* ---- launcher native with fake GPUs ---- */

/* The fake table's knobs, read in the probe and rank processes (set before each run):
 *   TEST_AR_GPUS  GPUs the fake runtime sees (default 2)
 *   TEST_AR_MODE  crash1 | hang1 | error1: what rank 1 does; anything else: all ranks pass
 *   TEST_AR_DIR   where every rank writes "rank nranks device id" to rank.R */
static int s_fake_devices(ar_gpu_dev_t *out, size_t max, size_t *n, char *err, size_t errlen)
{
    const char *v = getenv("TEST_AR_GPUS");
    size_t k = v ? (size_t)atoi(v) : 2;
    *n = 0;
    if (k == 0) {
        snprintf(err, errlen, "no CUDA-capable device is detected");
        return -ENODEV;
    }
    for (size_t i = 0; i < k && i < max; i++) {
        out[i].mem_bytes = 80 * GIB;
        snprintf(out[i].pci, sizeof out[i].pci, "0000:%02x:00.0", (unsigned)(0x40 + i) & 0xffu);
        *n = i + 1;
    }
    return 0;
}

static int s_fake_library(const char *library, int *version, char *why, size_t whylen)
{
    (void)library;
    (void)why;
    (void)whylen;
    *version = 22809;
    return 0;
}

static void s_record(const ar_rank_cfg_t *cfg, const nccl_dl_id_t *id)
{
    const char *dir = getenv("TEST_AR_DIR");
    if (!dir)
        return;
    char *path = xasprintf("%s/rank.%u", dir, cfg->rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%u %u %d %.32s\n", cfg->rank, cfg->nranks, cfg->device, id->internal);
        fclose(f);
    }
    free(path);
}

static int s_fake_rank(const ar_rank_cfg_t *cfg, const ar_rank_link_t *link, char *err,
                       size_t errlen)
{
    nccl_dl_id_t id;
    memset(&id, 0, sizeof id);
    if (cfg->rank == 0)
        snprintf(id.internal, sizeof id.internal, "fake-id-%d", (int)getpid());
    int rc = link->share_id(link->self, &id, err, errlen);
    if (rc)
        return rc;
    s_record(cfg, &id);
    const char *mode = getenv("TEST_AR_MODE");
    bool me = cfg->rank == 1;
    if (me && mode && !strcmp(mode, "error1")) {
        snprintf(err, errlen, "ncclCommInitRank: unhandled system error (fake)");
        return -EIO;
    }
    if ((rc = link->joined(link->self, 22809, err, errlen)))
        return rc;
    for (size_t k = 0; k < cfg->n_sizes; k++) {
        if (me && mode && !strcmp(mode, "crash1") && k == 1)
            raise(SIGSEGV);
        if (me && mode && !strcmp(mode, "hang1") && k == 1)
            pause();
        ar_size_result_t r;
        ar_rank_error_t bad;
        memset(&r, 0, sizeof r); /* padding too: the pipe carries whole structs */
        memset(&bad, 0, sizeof bad);
        r.bytes = bad.bytes = cfg->sizes[k];
        r.count = cfg->sizes[k] / 4;
        r.avg_us = 10.0 + cfg->rank;
        r.min_us = 9.0;
        r.max_us = 12.0 + cfg->rank;
        r.iters = cfg->opts.iters;
        r.first_bad_rank = -1;
        bad.rank = cfg->rank;
        if (cfg->inject && k + 1 == cfg->n_sizes) {
            r.errors = bad.errors = 1;
            r.first_bad_rank = (int)cfg->rank;
            bad.index = 7;
            bad.iter = 3;
            bad.expected = 5;
            bad.got = 5.0000004768371582;
        }
        if ((rc = link->size_done(link->self, k, &r, r.errors ? &bad : NULL, err, errlen)))
            return rc;
    }
    return 0;
}

static const ar_gpu_t s_fake_gpu = {"nvidia",       "libnccl-fake.so", NULL,
                                    s_fake_devices, s_fake_library,    s_fake_rank};

static const ar_native_limits_t s_fast = {5000, 5000, 2000};

static ar_opts_t s_native_opts(void)
{
    ar_opts_t o = {AR_LAUNCH_NATIVE, MIB, 4 * MIB, 2, AR_DT_FLOAT, AR_OP_SUM, 5, 1, false};
    return o;
}

/* A member of a group of size with the nodes node-a, node-b, ... */
static worker_ctx_t *s_member(unsigned rank, unsigned size)
{
    static const char *const nodes[] = {"node-a", "node-b", "node-c"};
    worker_ctx_t *ctx = worker_ctx_new("ar-native-test", nodes[rank], NULL, 0, true);
    worker_ctx_set_group(ctx, rank, size, nodes, NULL);
    return ctx;
}

typedef struct {
    char dir[64];
} tmp_t;

static void s_tmp(tmp_t *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/fb-argpu-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    setenv("TEST_AR_DIR", t->dir, 1);
    unsetenv("TEST_AR_MODE");
    unsetenv("TEST_AR_GPUS");
    unsetenv("FLEETBURN_GPU_VENDORS");
}

static void s_tmp_done(tmp_t *t)
{
    char *cmd = xasprintf("rm -rf '%s'", t->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    unsetenv("TEST_AR_DIR");
    unsetenv("FLEETBURN_EXCHANGE_DIR");
}

/* The line rank r recorded: its rank, the group's ranks, its device and the id it joined with. */
static void s_read_rank(const tmp_t *t, unsigned r, unsigned *nranks, int *device, char *id,
                        size_t idlen)
{
    char *path = xasprintf("%s/rank.%u", t->dir, r);
    char *text = fb_read_file(path, NULL);
    free(path);
    if (!text)
        fail_msg("rank %u never ran", r);
    unsigned rank = 0;
    char idbuf[64] = "";
    assert_int_equal(sscanf(text, "%u %u %d %63s", &rank, nranks, device, idbuf), 4);
    assert_int_equal(rank, r);
    snprintf(id, idlen, "%s", idbuf);
    free(text);
}

static void test_native_one_node(void **state)
{
    (void)state;
    tmp_t t;
    s_tmp(&t);
    worker_ctx_t *ctx = s_member(0, 1);
    ar_opts_t o = s_native_opts();
    assert_int_equal(ar_native_run_with(ctx, &o, &s_fake_gpu, &s_fast), FB_VERDICT_PASS);
    const fb_result_t *res = worker_result(ctx);
    assert_true(fb_result_metric(res, "allreduce.ranks")->value == 2);
    /* Times are the maximum over ranks: rank 1 reported 11 us. */
    assert_true(fb_result_metric(res, "allreduce.4194304.avg_us")->value == 11.0);
    assert_true(fb_result_metric(res, "allreduce.nccl_version")->value == 22809);
    char id0[64], id1[64];
    unsigned nranks;
    int dev;
    s_read_rank(&t, 0, &nranks, &dev, id0, sizeof id0);
    assert_int_equal(nranks, 2);
    assert_int_equal(dev, 0);
    s_read_rank(&t, 1, &nranks, &dev, id1, sizeof id1);
    assert_int_equal(dev, 1);
    assert_non_null(strstr(id0, "fake-id-"));
    assert_string_equal(id0, id1); /* rank 0's id reached rank 1 */
    worker_ctx_destroy(&ctx);
    s_tmp_done(&t);
}

/* Runs member `rank` of a group of `size` in a child; exits with its verdict. */
static pid_t s_spawn_member(unsigned rank, unsigned size, const char *gpus)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("TEST_AR_GPUS", gpus, 1);
        worker_ctx_t *ctx = s_member(rank, size);
        ar_opts_t o = s_native_opts();
        fb_verdict_t v = ar_native_run_with(ctx, &o, &s_fake_gpu, &s_fast);
        const fb_result_t *res = worker_result(ctx);
        if (res->error)
            fprintf(stderr, "member %u: %s\n", rank, res->error);
        _exit((int)v);
    }
    return pid;
}

static int s_wait_member(pid_t pid)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* Runs a group of two members in children, sharing the exchange folder t->dir, member 0 seeing
 * gpus_a and member 1 gpus_b; both must end with the verdict expected. */
static void s_run_group_of_two(const tmp_t *t, const char *gpus_a, const char *gpus_b,
                               fb_verdict_t expected)
{
    setenv("FLEETBURN_EXCHANGE_DIR", t->dir, 1);
    pid_t a = s_spawn_member(0, 2, gpus_a), b = s_spawn_member(1, 2, gpus_b);
    assert_int_equal(s_wait_member(a), expected);
    assert_int_equal(s_wait_member(b), expected);
}

static void test_native_group_ranks(void **state)
{
    (void)state;
    tmp_t t;
    s_tmp(&t);
    s_run_group_of_two(&t, "2", "1", FB_VERDICT_PASS);
    char id[3][64];
    unsigned nranks;
    int dev[3];
    for (unsigned r = 0; r < 3; r++) {
        s_read_rank(&t, r, &nranks, &dev[r], id[r], sizeof id[r]);
        assert_int_equal(nranks, 3);
        assert_string_equal(id[r], id[0]);
    }
    /* Member 0's GPUs hold ranks 0 and 1, member 1's GPU 0 holds rank 2. */
    assert_int_equal(dev[0], 0);
    assert_int_equal(dev[1], 1);
    assert_int_equal(dev[2], 0);
    s_tmp_done(&t);
}

static void test_native_missing_member(void **state)
{
    (void)state;
    tmp_t t;
    s_tmp(&t);
    setenv("FLEETBURN_EXCHANGE_DIR", t.dir, 1);
    worker_ctx_t *ctx = s_member(0, 2);
    ar_opts_t o = s_native_opts();
    ar_native_limits_t lim = {5000, 600, 2000};
    uint64_t t0 = fb_mono_ms();
    assert_int_equal(ar_native_run_with(ctx, &o, &s_fake_gpu, &lim), FB_VERDICT_ERROR);
    assert_true(fb_mono_ms() - t0 < 5000);
    const char *err = worker_result(ctx)->error;
    assert_non_null(strstr(err, "rank 1 (node-b)"));
    worker_ctx_destroy(&ctx);
    s_tmp_done(&t);
}

static fb_verdict_t s_run_one_node(const char *mode, bool inject, worker_ctx_t **ctx_out)
{
    if (mode)
        setenv("TEST_AR_MODE", mode, 1);
    worker_ctx_t *ctx = s_member(0, 1);
    ar_opts_t o = s_native_opts();
    o.inject_corrupt = inject;
    fb_verdict_t v = ar_native_run_with(ctx, &o, &s_fake_gpu, &s_fast);
    unsetenv("TEST_AR_MODE");
    *ctx_out = ctx;
    return v;
}

static void test_native_rank_failures(void **state)
{
    (void)state;
    tmp_t t;
    s_tmp(&t);
    worker_ctx_t *ctx = NULL;
    assert_int_equal(s_run_one_node("crash1", false, &ctx), FB_VERDICT_ERROR);
    const char *err = worker_result(ctx)->error;
    assert_non_null(strstr(err, "node-a/gpu1 (rank 1): rank process died: signal"));
    assert_null(strstr(err, "rank 0)")); /* the sibling killed afterwards is no failure */
    worker_ctx_destroy(&ctx);

    assert_int_equal(s_run_one_node("error1", false, &ctx), FB_VERDICT_ERROR);
    err = worker_result(ctx)->error;
    assert_non_null(strstr(err, "node-a/gpu1 (rank 1): ncclCommInitRank: unhandled system"));
    worker_ctx_destroy(&ctx);

    uint64_t t0 = fb_mono_ms();
    assert_int_equal(s_run_one_node("hang1", false, &ctx), FB_VERDICT_ERROR);
    assert_true(fb_mono_ms() - t0 < 10000);
    err = worker_result(ctx)->error;
    assert_non_null(strstr(err, "node-a/gpu1 (rank 1): no word from the rank"));
    worker_ctx_destroy(&ctx);
    s_tmp_done(&t);
}

static void test_native_inject(void **state)
{
    (void)state;
    tmp_t t;
    s_tmp(&t);
    worker_ctx_t *ctx = NULL;
    assert_int_equal(s_run_one_node(NULL, true, &ctx), FB_VERDICT_FAIL);
    const fb_result_t *res = worker_result(ctx);
    assert_true(res->n_findings >= 1);
    assert_string_equal(res->findings[0].part, "node-a/gpu0");
    assert_non_null(strstr(res->findings[0].what, "expected 5"));
    worker_ctx_destroy(&ctx);
    s_tmp_done(&t);
}

static void test_native_without_gpus(void **state)
{
    (void)state;
    tmp_t t;
    s_tmp(&t);
    worker_ctx_t *ctx = s_member(0, 1);
    ar_opts_t o = s_native_opts();
    /* The plain worker (no GPU table) on a node without GPUs: skipped. */
    assert_int_equal(ar_native_run_with(ctx, &o, NULL, &s_fast), FB_VERDICT_SKIPPED);
    worker_ctx_destroy(&ctx);
    /* ... on a node the agent saw GPUs on: an error, never a silent pass. */
    setenv("FLEETBURN_GPU_VENDORS", "nvidia", 1);
    ctx = s_member(0, 1);
    assert_int_equal(ar_native_run_with(ctx, &o, NULL, &s_fast), FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(ctx)->error, "install the fleetburn-agent-cuda"));
    worker_ctx_destroy(&ctx);
    /* The runtime sees none where the agent saw some. */
    setenv("TEST_AR_GPUS", "0", 1);
    ctx = s_member(0, 1);
    assert_int_equal(ar_native_run_with(ctx, &o, &s_fake_gpu, &s_fast), FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(ctx)->error, "the runtime sees none"));
    worker_ctx_destroy(&ctx);
    s_tmp_done(&t);
}

static void test_native_group_member_without_gpus(void **state)
{
    (void)state;
    tmp_t t;
    s_tmp(&t);
    /* Both end at once with the same reason; nobody waits for a member that cannot run. */
    s_run_group_of_two(&t, "2", "0", FB_VERDICT_ERROR);
    s_tmp_done(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nccl_tables),
        cmocka_unit_test(test_nccl_open_failures),
        cmocka_unit_test(test_member_roundtrip),
        cmocka_unit_test(test_member_garbage),
        cmocka_unit_test(test_results_roundtrip),
        cmocka_unit_test(test_results_garbage),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_fit_and_sweep),
        cmocka_unit_test(test_native_one_node),
        cmocka_unit_test(test_native_group_ranks),
        cmocka_unit_test(test_native_missing_member),
        cmocka_unit_test(test_native_rank_failures),
        cmocka_unit_test(test_native_inject),
        cmocka_unit_test(test_native_without_gpus),
        cmocka_unit_test(test_native_group_member_without_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
