/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for memtest: every pattern passes on good memory and catches a bit flipped between its
 * fill and its verify with the right address, values and mask; the workload runs end to end
 * through a worker context, fails on injected bit flips, refuses injection without the switch and
 * bad parameters; EDAC counter changes become DIMM findings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "memtest/memtest.h"
#include "memtest/patterns.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Odd sizes on purpose: a partial block at the end, halves that leave words over. */
static const size_t s_sizes[] = {MT_MIN_WORDS, 5, 805, 3 * 256 + 1};

#define MAX_SEEN 64

typedef struct {
    size_t index; /* word to flip */
    unsigned bit;
    uint64_t before; /* its value when the hook ran */
    uint64_t *buf;
    mt_miscompare_t seen[MAX_SEEN];
    size_t n_seen;
    int injections;
} probe_t;

static void s_flip_hook(mt_ctx_t *ctx, uint64_t *buf, size_t n_words)
{
    probe_t *p = ctx->user;
    assert_true(p->index < n_words);
    p->injections++;
    p->buf = buf;
    p->before = buf[p->index];
    buf[p->index] ^= 1ULL << p->bit;
}

static void s_record(mt_ctx_t *ctx, const mt_miscompare_t *m)
{
    probe_t *p = ctx->user;
    if (p->n_seen < MAX_SEEN)
        p->seen[p->n_seen++] = *m;
}

static uint64_t *s_buffer(size_t n_words)
{
    uint64_t *buf = aligned_alloc(4096, (n_words * sizeof *buf + 4095) / 4096 * 4096);
    assert_non_null(buf);
    memset(buf, 0xA5, n_words * sizeof *buf);
    return buf;
}

static void test_patterns_clean(void **state)
{
    (void)state;
    for (size_t s = 0; s < FB_ARRAY_LEN(s_sizes); s++) {
        size_t n = s_sizes[s];
        uint64_t *buf = s_buffer(n);
        for (int p = 0; p < MT_N_PATTERNS; p++) {
            probe_t probe = {0};
            mt_ctx_t ctx = {.seed = 42, .report = s_record, .user = &probe};
            uint64_t bad = mt_run_pattern((mt_pattern_t)p, buf, n, &ctx);
            if (bad)
                print_error("%s on %zu words: %llu miscompares\n", mt_pattern_name((mt_pattern_t)p),
                            n, (unsigned long long)bad);
            assert_int_equal(bad, 0);
            assert_int_equal(probe.n_seen, 0);
            /* Written and read at least once each (the half tests may leave three words over). */
            assert_true(ctx.bytes >= 2 * (n - 3) * sizeof(uint64_t));
        }
        free(buf);
    }
}

/* Flips one bit at index after the pattern's fill and checks the report names that word. */
static void s_check_detects(mt_pattern_t pattern, size_t n, size_t index, unsigned bit)
{
    uint64_t *buf = s_buffer(n);
    probe_t probe = {.index = index, .bit = bit};
    mt_ctx_t ctx = {.seed = 7, .inject = s_flip_hook, .report = s_record, .user = &probe};
    uint64_t bad = mt_run_pattern(pattern, buf, n, &ctx);
    assert_int_equal(probe.injections, 1);
    if (bad == 0)
        print_error("%s missed a flip of bit %u at word %zu of %zu\n", mt_pattern_name(pattern),
                    bit, index, n);
    assert_true(bad >= 1);
    /* One flipped bit is one miscompare: no pattern copies the bad word elsewhere first. */
    assert_int_equal(bad, 1);
    assert_int_equal(ctx.miscompares, bad);
    bool found = false;
    for (size_t i = 0; i < probe.n_seen; i++) {
        const mt_miscompare_t *m = &probe.seen[i];
        if (m->addr != &buf[index])
            continue;
        found = true;
        assert_int_equal(m->expected, probe.before);
        assert_int_equal(m->actual, probe.before ^ (1ULL << bit));
        assert_int_equal(m->expected ^ m->actual, 1ULL << bit);
    }
    if (!found)
        print_error("%s reported no miscompare at the flipped word\n", mt_pattern_name(pattern));
    assert_true(found);
    free(buf);
}

static void test_patterns_detect_flip(void **state)
{
    (void)state;
    const size_t n = 805; /* halves of 402 words: indices below 804 belong to every pattern */
    const size_t indices[] = {0, 257, 401, 402, 803};
    const unsigned bits[] = {0, 13, 63};
    for (int p = 0; p < MT_N_PATTERNS; p++)
        for (size_t i = 0; i < FB_ARRAY_LEN(indices); i++)
            s_check_detects((mt_pattern_t)p, n, indices[i], bits[i % FB_ARRAY_LEN(bits)]);
}

static void test_flip_bits_spread(void **state)
{
    (void)state;
    uint64_t buf[100] = {0};
    size_t idx[10];
    unsigned bits[10];
    assert_int_equal(mt_flip_bits(buf, 100, 10, 99, idx, bits), 10);
    size_t set = 0;
    for (size_t i = 0; i < 100; i++)
        set += (size_t)__builtin_popcountll(buf[i]);
    assert_int_equal(set, 10); /* distinct words: no flip undid another */
    for (size_t i = 0; i < 10; i++) {
        assert_true(idx[i] >= i * 10 && idx[i] < i * 10 + 10); /* one per slice */
        assert_int_equal(buf[idx[i]], 1ULL << bits[i]);
    }
    uint64_t small[3] = {0};
    assert_int_equal(mt_flip_bits(small, 3, 5, 1, NULL, NULL), 3);
    assert_int_equal(mt_flip_bits(small, 3, 0, 1, NULL, NULL), 0);
}

static void test_parse_patterns(void **state)
{
    (void)state;
    mt_pattern_t *list = NULL;
    size_t n = 0;
    char *bad = NULL;
    assert_int_equal(mt_parse_patterns("all", &list, &n, &bad), 0);
    assert_int_equal(n, MT_N_PATTERNS);
    assert_int_equal(list[0], MT_STUCK_ADDRESS);
    assert_int_equal(list[MT_N_PATTERNS - 1], MT_BLOCK_SEQUENTIAL);
    free(list);
    assert_int_equal(mt_parse_patterns("random, bit_flip,random", &list, &n, &bad), 0);
    assert_int_equal(n, 3);
    assert_int_equal(list[1], MT_BIT_FLIP);
    free(list);
    assert_int_equal(mt_parse_patterns("random,bogus", &list, &n, &bad), -EINVAL);
    assert_null(list);
    assert_string_equal(bad, "bogus");
    free(bad);
    assert_int_equal(mt_parse_patterns("random,", &list, &n, &bad), -EINVAL);
    assert_string_equal(bad, "");
    free(bad);
    assert_int_equal(mt_parse_patterns("", &list, &n, NULL), -EINVAL);
    assert_int_equal(mt_pattern_from_name("moving_inversions"), MT_MOVING_INVERSIONS);
    assert_int_equal(mt_pattern_from_name("memtest86"), -1);
    assert_string_equal(mt_pattern_name(MT_COMPARE_DIV), "compare_div");
}

/* ---- the workload through a worker context --------------------------------------------------- */

static worker_ctx_t *s_ctx(const char *const *params, size_t n, bool allow_injection)
{
    return worker_ctx_new("t1", "node07", params, n, allow_injection);
}

static double s_metric(worker_ctx_t *ctx, const char *name)
{
    const fb_metric_t *m = fb_result_metric(worker_result(ctx), name);
    if (!m)
        print_error("metric %s missing\n", name);
    assert_non_null(m);
    return m->value;
}

static void test_run_passes(void **state)
{
    (void)state;
    const char *params[] = {"size=4MiB", "passes=1", "threads=2", "seed=12345"};
    worker_ctx_t *ctx = s_ctx(params, FB_ARRAY_LEN(params), false);
    fb_verdict_t v = memtest_run(ctx);
    fb_result_t *res = worker_result(ctx);
    if (v != FB_VERDICT_PASS)
        print_error("verdict %s, error %s\n", fb_verdict_name(v), res->error ? res->error : "-");
    assert_int_equal(v, FB_VERDICT_PASS);
    assert_int_equal(res->n_findings, 0);
    assert_true(s_metric(ctx, "bytes_tested") == 4.0 * 1024 * 1024);
    assert_true(s_metric(ctx, "miscompares") == 0);
    assert_true(s_metric(ctx, "threads") == 2);
    assert_true(s_metric(ctx, "passes") == 1);
    assert_true(s_metric(ctx, "seed") == 12345);
    assert_true(s_metric(ctx, "numa_nodes") >= 1);
    assert_true(s_metric(ctx, "bandwidth_mbs") > 0);
    assert_true(s_metric(ctx, "elapsed_s") > 0);
    double locked = s_metric(ctx, "locked");
    assert_true(locked == 0 || locked == 1);
    worker_ctx_destroy(&ctx);
    assert_null(ctx);
}

static void test_run_injected_flips_fail(void **state)
{
    (void)state;
    const char *params[] = {"size=4MiB",
                            "passes=1",
                            "threads=2",
                            "inject_bitflips=3",
                            "patterns=moving_inversions,random",
                            "lock=false",
                            "dimm_decode=passive"};
    worker_ctx_t *ctx = s_ctx(params, FB_ARRAY_LEN(params), true);
    assert_int_equal(memtest_run(ctx), FB_VERDICT_FAIL);
    fb_result_t *res = worker_result(ctx);
    assert_int_equal(res->verdict, FB_VERDICT_FAIL);
    assert_int_equal(s_metric(ctx, "miscompares"), 3);
    /* One finding per word, then one per page (the three flips are in three pages). */
    assert_int_equal(res->n_findings, 6);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(res->findings[i].part, "node07");
        assert_string_equal(res->findings[i].kind, "memory");
        assert_non_null(strstr(res->findings[i].what, "moving_inversions"));
        assert_non_null(strstr(res->findings[i].what, "xor 0x"));
        assert_non_null(strstr(res->findings[i].what, "(1 bit: "));
        /* A flip made once does not come back when the page is written again. */
        assert_non_null(
            strstr(res->findings[i].what, "transient (failed again in 0 of 8 retests)"));
    }
    for (size_t i = 3; i < 6; i++) {
        assert_string_equal(res->findings[i].kind, "memory");
        assert_non_null(strstr(res->findings[i].what, "not decodable here: "));
    }
    assert_true(s_metric(ctx, "transient_pages") == 3);
    assert_true(s_metric(ctx, "stuck_pages") == 0);
    assert_true(s_metric(ctx, "locked") == 0);
    worker_ctx_destroy(&ctx);
}

static void test_run_injection_refused(void **state)
{
    (void)state;
    const char *params[] = {"size=4MiB", "inject_bitflips=3"};
    worker_ctx_t *ctx = s_ctx(params, FB_ARRAY_LEN(params), false);
    assert_int_equal(memtest_run(ctx), FB_VERDICT_ERROR);
    fb_result_t *res = worker_result(ctx);
    assert_non_null(res->error);
    assert_non_null(strstr(res->error, "--allow-fault-injection"));
    assert_non_null(strstr(res->error, "inject_bitflips refused"));
    worker_ctx_destroy(&ctx);
}

static void s_expect_error(const char *param, const char *needle)
{
    const char *params[] = {param, "threads=1", "patterns=random"};
    worker_ctx_t *ctx = s_ctx(params, FB_ARRAY_LEN(params), false);
    assert_int_equal(memtest_run(ctx), FB_VERDICT_ERROR);
    fb_result_t *res = worker_result(ctx);
    assert_non_null(res->error);
    if (!strstr(res->error, needle))
        print_error("%s: error '%s' lacks '%s'\n", param, res->error, needle);
    assert_non_null(strstr(res->error, needle));
    worker_ctx_destroy(&ctx);
}

static void test_run_bad_parameters(void **state)
{
    (void)state;
    s_expect_error("size=12parsecs", "size '12parsecs'");
    s_expect_error("size=0", "4 KiB minimum");
    s_expect_error("size=-5MiB", "size '-5MiB'");
    s_expect_error("size=150%", "size '150%'");
    s_expect_error("size=900TiB", "exceeds MemAvailable");
    s_expect_error("passes=0", "passes '0'");
    s_expect_error("threads=many", "threads 'many'");
    s_expect_error("lock=perhaps", "lock 'perhaps'");
    s_expect_error("seed=0x", "seed '0x'");
    const char *params[] = {"size=1MiB", "patterns=random,galpat"};
    worker_ctx_t *ctx = s_ctx(params, FB_ARRAY_LEN(params), false);
    assert_int_equal(memtest_run(ctx), FB_VERDICT_ERROR);
    assert_non_null(strstr(worker_result(ctx)->error, "unknown pattern 'galpat'"));
    worker_ctx_destroy(&ctx);
}

/* A fixture root: MemAvailable 40960 kB (so 10% is 4 MiB), one NUMA node, EDAC DIMMs. */
static void test_run_fixture_root(void **state)
{
    (void)state;
    char *root = xasprintf("%s/edac/dimm", FB_FIXTURES);
    setenv("FLEETBURN_SYSFS_ROOT", root, 1);
    const char *params[] = {"size=10%", "threads=auto", "patterns=own_address,compare_xor"};
    worker_ctx_t *ctx = s_ctx(params, FB_ARRAY_LEN(params), false);
    unsetenv("FLEETBURN_SYSFS_ROOT");
    assert_int_equal(memtest_run(ctx), FB_VERDICT_PASS);
    double tested = s_metric(ctx, "bytes_tested");
    assert_true(tested <= 4194304.0 && tested > 4194304.0 - 4096 * s_metric(ctx, "threads"));
    assert_true(s_metric(ctx, "numa_nodes") == 1);
    assert_true(s_metric(ctx, "edac_ce_delta") == 0);
    assert_true(s_metric(ctx, "edac_ue_delta") == 0);
    worker_ctx_destroy(&ctx);
    free(root);
}

static void test_edac_report(void **state)
{
    (void)state;
    fb_dimm_t d0[] = {
        {.label = "CPU_SrcID#0_MC#0_Chan#0_DIMM#0", .location = "mc0/dimm0", .ce_count = 1},
        {.label = "CPU_SrcID#0_MC#0_Chan#1_DIMM#0", .location = "mc0/dimm1", .ce_count = 4},
    };
    fb_dimm_t d1[] = {
        {.label = "CPU_SrcID#0_MC#0_Chan#0_DIMM#0", .location = "mc0/dimm0", .ce_count = 1},
        {.label = "CPU_SrcID#0_MC#0_Chan#1_DIMM#0", .location = "mc0/dimm1", .ce_count = 7},
    };
    fb_edac_t before = {.dimms = d0, .n_dimms = 2, .ce_total = 5, .ue_total = 0};
    fb_edac_t after = {.dimms = d1, .n_dimms = 2, .ce_total = 8, .ue_total = 0};
    fb_result_t *res = fb_result_new();
    assert_int_equal(memtest_edac_report(res, "node07", &before, &after), 1);
    assert_int_equal(res->n_findings, 1);
    assert_string_equal(res->findings[0].part, "node07/CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_string_equal(res->findings[0].kind, "dimm");
    assert_non_null(
        strstr(res->findings[0].what, "EDAC corrected errors +3, uncorrected +0 during memtest"));
    assert_true(fb_result_metric(res, "edac_ce_delta")->value == 3);
    assert_true(fb_result_metric(res, "edac_ue_delta")->value == 0);
    fb_result_destroy(&res);

    /* Controller totals moved with no DIMM moving: the host is named instead. */
    after.dimms = d0;
    after.ue_total = 1;
    res = fb_result_new();
    assert_int_equal(memtest_edac_report(res, "node07", &before, &after), 1);
    assert_string_equal(res->findings[0].part, "node07");
    assert_non_null(strstr(res->findings[0].what, "not attributed to any DIMM"));
    assert_true(fb_result_metric(res, "edac_ue_delta")->value == 1);
    fb_result_destroy(&res);

    /* Nothing moved: no findings, zero deltas. */
    res = fb_result_new();
    assert_int_equal(memtest_edac_report(res, "node07", &before, &before), 0);
    assert_int_equal(res->n_findings, 0);
    assert_true(fb_result_metric(res, "edac_ce_delta")->value == 0);
    fb_result_destroy(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns_clean),
        cmocka_unit_test(test_patterns_detect_flip),
        cmocka_unit_test(test_flip_bits_spread),
        cmocka_unit_test(test_parse_patterns),
        cmocka_unit_test(test_run_passes),
        cmocka_unit_test(test_run_injected_flips_fail),
        cmocka_unit_test(test_run_injection_refused),
        cmocka_unit_test(test_run_bad_parameters),
        cmocka_unit_test(test_run_fixture_root),
        cmocka_unit_test(test_edac_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
