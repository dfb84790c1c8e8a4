/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the regression statistics (scheduler/regress), the metric table
 * (scheduler/metricrules) and the campaign's regress: key (scheduler/regress_config): one part
 * that lost speed is named and the rest of a noisy fleet is not; a fleet that moved as a whole is
 * one shift and names no part; fleets of one to three parts are judged on the tolerance alone;
 * counts, min_delta, directions; loopback measurements recorded on the 2-core development machine
 * (two identical runs) name nothing, and the same fleet with one node throttled to 1% names it; bad
 * globs and tolerances are refused with the line they are on. */
#include "scheduler/campaign.h"
#include "scheduler/metricrules.h"
#include "scheduler/regress.h"
#include "scheduler/regress_config.h"
#include "scheduler/robust.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const fb_regress_limits_t s_bw = {FB_BETTER_HIGHER, 0.10, 0}; /* netbw.tx_gbps */

static size_t s_count(const fb_call_t *calls, size_t n, fb_call_t what)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += calls[i] == what;
    return k;
}

static void test_change_score_loss(void **state)
{
    (void)state;
    assert_true(fabs(fb_regress_change(20, 15) + 0.25) < 1e-12);
    assert_true(isnan(fb_regress_change(0, 3)));
    assert_true(isnan(fb_regress_change(NAN, 3)));
    assert_true(fabs(fb_regress_score(10, 20, 0) - log(2)) < 1e-12);
    assert_true(fabs(fb_regress_score(20, 10, 0) + log(2)) < 1e-12); /* halving = -doubling */
    assert_true(fabs(fb_regress_score(0, 3, 1) - log(4)) < 1e-12);   /* counts: offset 1 */
    assert_true(fb_regress_score(5, 0, 0) == -FB_REGRESS_SCORE_CAP);
    assert_true(fb_regress_score(7, 7, 0) == 0);
    assert_true(fb_regress_loss(FB_BETTER_HIGHER, -0.2) == 0.2);
    assert_true(fb_regress_loss(FB_BETTER_LOWER, -0.2) == -0.2);
    assert_true(fb_regress_loss(FB_BETTER_NEITHER, -0.2) == 0.2);
}

/* One to three parts: the MAD says nothing, so each is held to its tolerance alone. */
static void test_tiny_fleets(void **state)
{
    (void)state;
    double base[3] = {20, 20, 20}, now[3] = {17, 19, 23};
    fb_call_t calls[3];
    fb_regress_fleet_t f;
    for (size_t n = 1; n <= 3; n++) {
        fb_regress_judge(&s_bw, base, now, n, &f, calls);
        assert_false(f.by_fleet);
        assert_int_equal(f.shift, FB_CALL_SAME);
        assert_int_equal(f.n, n);
        assert_int_equal(calls[0], FB_CALL_WORSE); /* -15%: beyond 10% */
        if (n >= 2)
            assert_int_equal(calls[1], FB_CALL_SAME); /* -5% */
        if (n == 3)
            assert_int_equal(calls[2], FB_CALL_BETTER); /* +15% */
    }
    /* Three parts that all dropped 15%: each one named (no fleet to blame it on). */
    double all[3] = {17, 17, 17};
    fb_regress_judge(&s_bw, base, all, 3, &f, calls);
    assert_int_equal(s_count(calls, 3, FB_CALL_WORSE), 3);
    assert_int_equal(f.shift, FB_CALL_SAME);
    fb_regress_judge(&s_bw, base, now, 0, &f, NULL);
    assert_int_equal(f.n, 0);
}

/* Twelve parts within a few percent of their past; one lost 40%: only that one is named. */
static void test_one_outlier_named(void **state)
{
    (void)state;
    double base[12], now[12];
    fb_call_t calls[12];
    for (size_t i = 0; i < 12; i++) {
        base[i] = 20 + (double)(i % 5) * 0.3;
        now[i] = base[i] * (1 + 0.03 * ((double)((i * 7) % 5) - 2) / 2);
    }
    now[5] = base[5] * 0.6;
    fb_regress_fleet_t f;
    fb_regress_judge(&s_bw, base, now, 12, &f, calls);
    assert_true(f.by_fleet);
    assert_int_equal(f.shift, FB_CALL_SAME);
    assert_int_equal(calls[5], FB_CALL_WORSE);
    assert_int_equal(s_count(calls, 12, FB_CALL_WORSE), 1);
    assert_int_equal(s_count(calls, 12, FB_CALL_BETTER), 0);
    assert_true(fabs(f.median) < 0.03);
    /* The same part 40% faster is an improvement, named the same way. */
    now[5] = base[5] * 1.4;
    fb_regress_judge(&s_bw, base, now, 12, &f, calls);
    assert_int_equal(calls[5], FB_CALL_BETTER);
    assert_int_equal(s_count(calls, 12, FB_CALL_WORSE), 0);
}

/* Every part 8% slower (a driver upgrade): one fleet-wide shift, no part named; one part that
 * lost 50% on top of the shift is still named. */
static void test_fleet_wide_shift(void **state)
{
    (void)state;
    double base[16], now[16];
    fb_call_t calls[16];
    for (size_t i = 0; i < 16; i++) {
        base[i] = 689 + (double)i;
        now[i] = base[i] * (0.92 + 0.002 * (double)(i % 3));
    }
    fb_regress_limits_t tflops = {FB_BETTER_HIGHER, 0.05, 0};
    fb_regress_fleet_t f;
    fb_regress_judge(&tflops, base, now, 16, &f, calls);
    assert_int_equal(f.shift, FB_CALL_WORSE);
    assert_int_equal(s_count(calls, 16, FB_CALL_WORSE), 0);
    assert_int_equal(f.n_worse, 16);
    assert_true(f.median < -0.07 && f.median > -0.09);
    now[3] = base[3] * 0.5;
    fb_regress_judge(&tflops, base, now, 16, &f, calls);
    assert_int_equal(f.shift, FB_CALL_WORSE);
    assert_int_equal(calls[3], FB_CALL_WORSE);
    assert_int_equal(s_count(calls, 16, FB_CALL_WORSE), 1);
    /* ... and 8% faster everywhere is a fleet-wide improvement. */
    for (size_t i = 0; i < 16; i++)
        now[i] = base[i] * 1.08;
    fb_regress_judge(&tflops, base, now, 16, &f, calls);
    assert_int_equal(f.shift, FB_CALL_BETTER);
    assert_int_equal(s_count(calls, 16, FB_CALL_BETTER), 0);
}

/* A median that wanders because the fleet is noisy is not a shift: four parts at -10%, -39%,
 * -46% and 0% (memtest bandwidth between two runs on the loaded 2-core machine). */
static void test_noisy_median_is_not_a_shift(void **state)
{
    (void)state;
    double base[4] = {3112.6, 4054.5, 4409.7, 4068.5}, now[4] = {2792.9, 2470.7, 2373.7, 4066.4};
    fb_call_t calls[4];
    fb_regress_fleet_t f;
    fb_regress_judge(&s_bw, base, now, 4, &f, calls);
    assert_true(f.median < -0.10);           /* beyond the tolerance ... */
    assert_int_equal(f.shift, FB_CALL_SAME); /* ... but not beyond chance */
    assert_int_equal(s_count(calls, 4, FB_CALL_WORSE), 0);
}

/* netbw.tx_gbps of the twelve (pair, member) values of a 4-node round-robin pair stage, three
 * runs of the same campaign in a row on the 2-core development machine while it compiled
 * (bench/results/compare-noise-2026-11-24.txt has more): scatter up to +-40% between runs. */
static const double s_loop[3][12] = {
    {21.22, 20.43, 21.10, 15.80, 21.25, 17.78, 19.90, 16.75, 22.04, 19.79, 18.95, 19.89},
    {21.49, 18.59, 21.20, 22.04, 20.75, 21.67, 19.80, 20.23, 21.36, 21.96, 21.18, 21.62},
    {20.85, 20.27, 23.95, 24.46, 20.95, 23.73, 20.94, 21.95, 20.83, 24.90, 23.00, 19.18},
};

static void test_loopback_noise_names_nothing(void **state)
{
    (void)state;
    fb_call_t calls[12];
    fb_regress_fleet_t f;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            if (a == b)
                continue;
            fb_regress_judge(&s_bw, s_loop[a], s_loop[b], 12, &f, calls);
            assert_int_equal(s_count(calls, 12, FB_CALL_WORSE), 0);
            assert_int_equal(s_count(calls, 12, FB_CALL_BETTER), 0);
            assert_int_equal(f.shift, FB_CALL_SAME);
        }
}

/* The same noisy fleet with one node's egress throttled to 1% (its three pairs): named. In
 * relative changes a drop cannot pass -100%, and a spread of +-40% would hide it; in log ratios
 * it is 4.6 away from the fleet. */
static void test_loopback_throttle_named(void **state)
{
    (void)state;
    double now[12];
    memcpy(now, s_loop[2], sizeof now);
    const size_t slow[3] = {1, 7, 8};
    for (size_t i = 0; i < 3; i++)
        now[slow[i]] = 0.2;
    /* Judged on relative changes, the first pair of runs would hide it: their MAD is 0.22, and
     * the throttled values sit 1.0 from the median, within 5 robust standard deviations. */
    double rel[12];
    for (size_t i = 0; i < 12; i++)
        rel[i] = fb_regress_change(s_loop[0][i], now[i]);
    double med = fb_robust_median(rel, 12), mad = fb_robust_mad(rel, 12);
    assert_true(mad > 0.2 && fabs(rel[1] - med) < FB_REGRESS_K * FB_ROBUST_MAD_SCALE * mad);
    fb_call_t calls[12];
    fb_regress_fleet_t f;
    for (int a = 0; a < 2; a++) {
        fb_regress_judge(&s_bw, s_loop[a], now, 12, &f, calls);
        assert_int_equal(s_count(calls, 12, FB_CALL_WORSE), 3);
        for (size_t i = 0; i < 3; i++)
            assert_int_equal(calls[slow[i]], FB_CALL_WORSE);
        assert_int_equal(f.shift, FB_CALL_SAME);
    }
}

/* Counts: 0 -> 3 errors on one node is a regression (any increase, min_delta 1); a fleet of zeros
 * has MAD 0 and the floor keeps the others quiet. */
static void test_counts(void **state)
{
    (void)state;
    const fb_metric_rule_t *r = fb_metric_rule_find("gpu3.errors");
    assert_non_null(r);
    fb_regress_limits_t lim = {r->better, r->tolerance, r->min_delta};
    double base[6] = {0, 0, 0, 0, 0, 2}, now[6] = {0, 3, 0, 0, 0, 0};
    fb_call_t calls[6];
    fb_regress_fleet_t f;
    fb_regress_judge(&lim, base, now, 6, &f, calls);
    assert_int_equal(calls[1], FB_CALL_WORSE);
    assert_int_equal(calls[5], FB_CALL_BETTER);
    assert_int_equal(s_count(calls, 6, FB_CALL_WORSE), 1);
    assert_int_equal(f.shift, FB_CALL_SAME);
    /* One value only: 0 -> 1 is a change of 1 = min_delta: worse. */
    double b1 = 0, n1 = 1;
    fb_regress_judge(&lim, &b1, &n1, 1, &f, calls);
    assert_int_equal(calls[0], FB_CALL_WORSE);
}

/* A change smaller than min_delta is never judged, however large relatively. */
static void test_min_delta(void **state)
{
    (void)state;
    const fb_metric_rule_t *r = fb_metric_rule_find("netbw.rtt_p50_us");
    assert_non_null(r);
    fb_regress_limits_t lim = {r->better, r->tolerance, r->min_delta};
    double base[2] = {18.0, 18.0}, now[2] = {46.0, 180.0};
    fb_call_t calls[2];
    fb_regress_fleet_t f;
    fb_regress_judge(&lim, base, now, 2, &f, calls);
    assert_int_equal(calls[0], FB_CALL_SAME);  /* +156% but 28 us */
    assert_int_equal(calls[1], FB_CALL_WORSE); /* +900%, 162 us */
}

/* When the fleet agrees exactly (MAD 0), the tolerance is the floor of how far a part must be
 * from the fleet. */
static void test_mad_floor(void **state)
{
    (void)state;
    fb_regress_limits_t lim = {FB_BETTER_HIGHER, 0.05, 0};
    double base[8] = {10, 10, 10, 10, 10, 10, 10, 10}, now[8] = {10, 10, 10, 10, 10, 10, 9.4, 9.6};
    fb_call_t calls[8];
    fb_regress_fleet_t f;
    fb_regress_judge(&lim, base, now, 8, &f, calls);
    assert_true(f.score_mad == 0);
    assert_true(fabs(f.threshold - log1p(0.05)) < 1e-12);
    assert_int_equal(calls[6], FB_CALL_WORSE); /* -6% */
    assert_int_equal(calls[7], FB_CALL_SAME);  /* -4% */
}

/* A metric with no direction (named only by the campaign): a change either way is worse. */
static void test_neither_direction(void **state)
{
    (void)state;
    fb_regress_limits_t lim = {FB_BETTER_NEITHER, 0.10, 0};
    double base[2] = {100, 100}, now[2] = {130, 75};
    fb_call_t calls[2];
    fb_regress_fleet_t f;
    fb_regress_judge(&lim, base, now, 2, &f, calls);
    assert_int_equal(calls[0], FB_CALL_WORSE);
    assert_int_equal(calls[1], FB_CALL_WORSE);
}

/* ---- the metric table ---- */

/* Every metric the workloads report (docs/workloads.md) has a row, every row is sane. */
static void test_table_covers_workload_metrics(void **state)
{
    (void)state;
    static const char *const known[] = {"bandwidth_mbs",
                                        "miscompares",
                                        "edac_ce_delta",
                                        "edac_ue_delta",
                                        "bytes_tested",
                                        "passes",
                                        "threads",
                                        "numa_nodes",
                                        "locked",
                                        "seed",
                                        "elapsed_s",
                                        "gpu0.tflops_median",
                                        "gpu7.tflops_min",
                                        "gpu1.blas_peak_tflops",
                                        "gpu1.burn_vs_peak",
                                        "gpu1.errors",
                                        "gpu1.nan_inf",
                                        "gpu1.kat_errors",
                                        "gpu1.gemms",
                                        "gpu1.c_buffers",
                                        "gpu1.intervals",
                                        "gpu1.mem_bytes",
                                        "gpu1.dtype_unsupported",
                                        "tflops_median",
                                        "gpus",
                                        "telemetry_faults",
                                        "gpu0.tested_bytes",
                                        "gpu0.tested_fraction",
                                        "gpu0.triad_gbs",
                                        "gpu0.samples",
                                        "gpu0.temp_max_c",
                                        "gpu0.mem_temp_max_c",
                                        "gpu0.power_mean_w",
                                        "gpu0.power_max_w",
                                        "gpu0.power_limit_w",
                                        "gpu0.sm_clock_min_mhz",
                                        "gpu0.sm_clock_median_mhz",
                                        "gpu0.throttle_reasons",
                                        "hcas",
                                        "ib_ports",
                                        "pcie_degraded",
                                        "ib_ports_down",
                                        "ib_ports_slow",
                                        "dimm_ue",
                                        "edac_ce_total",
                                        "edac_ue_total",
                                        "gpu_retired_pages",
                                        "gpu_retire_pending",
                                        "gpu_remap_failure",
                                        "gpu_remap_pending",
                                        "gpu_ecc_ue",
                                        "gpu_lost",
                                        "gpu_missing",
                                        "kmsg_xid",
                                        "kmsg_nic_error",
                                        "findings",
                                        "netbw.tx_gbps",
                                        "netbw.rx_gbps",
                                        "netbw.rtt_p50_us",
                                        "netbw.rtt_p99_us",
                                        "netbw.rtt_max_us",
                                        "netbw.streams",
                                        "netbw.tx_retransmits",
                                        "netbw.rx_corrupt_blocks",
                                        "rdmabw.tx_gbps",
                                        "rdmabw.rx_gbps",
                                        "rdmabw.mlx5_0.p1.tx_gbps",
                                        "rdmabw.mlx5_0.p1.rx_gbps",
                                        "rdmabw.write.avg_gbps",
                                        "rdmabw.write.min_gbps",
                                        "rdmabw.write.peak_gbps",
                                        "rdmabw.read.65536.avg_gbps",
                                        "rdmabw.send.rx_avg_gbps",
                                        "rdmabw.lat_min_us",
                                        "rdmabw.lat_avg_us",
                                        "rdmabw.lat_p50_us",
                                        "rdmabw.lat_p99_us",
                                        "rdmabw.lat_p999_us",
                                        "rdmabw.lat_max_us",
                                        "rdmabw.floor_gbps",
                                        "rdmabw.connections",
                                        "rdmabw.gpu_memory",
                                        "rdmabw.miscompare_bytes",
                                        "allreduce.1048576.busbw_gbs",
                                        "allreduce.1048576.algbw_gbs",
                                        "allreduce.8.avg_us",
                                        "allreduce.busbw_gbs",
                                        "allreduce.algbw_gbs",
                                        "allreduce.peak_busbw_gbs",
                                        "allreduce.lat_us",
                                        "allreduce.max_bytes",
                                        "allreduce.ranks",
                                        "allreduce.errors",
                                        "allreduce.nccl_version",
                                        "p2p.ce_uni.0_1",
                                        "p2p.ce_bidi.1_0",
                                        "p2p.sm_uni.0_1",
                                        "p2p.sm_bidi.0_1",
                                        "p2p.lat_us.0_1",
                                        "h2d.0",
                                        "d2h.1",
                                        "hd_bidi.0",
                                        "p2p.corrupt_transfers",
                                        "slept_ms",
                                        "sleep.group_size"};
    for (size_t i = 0; i < FB_ARRAY_LEN(known); i++) {
        const fb_metric_rule_t *r = fb_metric_rule_find(known[i]);
        if (!r)
            fail_msg("no rule for %s", known[i]);
    }
    size_t n;
    const fb_metric_rule_t *rules = fb_metric_rules(&n);
    for (size_t i = 0; i < n; i++) {
        const char *why = NULL;
        if (fb_regress_glob_check(rules[i].glob, &why))
            fail_msg("row %s: %s", rules[i].glob, why);
        assert_true(rules[i].tolerance >= 0 && rules[i].tolerance <= 1);
        assert_true(rules[i].min_delta >= 0);
        /* no row is hidden behind an earlier one */
        assert_ptr_equal(fb_metric_rule_find(rules[i].glob), &rules[i]);
    }
    /* Directions that matter. */
    assert_int_equal(fb_metric_rule_find("netbw.tx_gbps")->better, FB_BETTER_HIGHER);
    assert_int_equal(fb_metric_rule_find("allreduce.8.avg_us")->better, FB_BETTER_LOWER);
    assert_int_equal(fb_metric_rule_find("gpu2.temp_max_c")->better, FB_BETTER_LOWER);
    assert_int_equal(fb_metric_rule_find("gpus")->better, FB_BETTER_HIGHER);
    assert_true(fb_metric_rule_find("gpu5.tflops_median")->pooled);
    assert_false(fb_metric_rule_find("allreduce.1048576.busbw_gbs")->pooled);
    assert_false(fb_metric_rule_find("seed")->compared);
    assert_null(fb_metric_rule_find("mytool.score"));
}

/* docs/regressions.md "Default rules" is the table, row for row. */
static void test_docs_table_matches(void **state)
{
    (void)state;
    size_t len;
    char *doc = fb_read_file(FB_FIXTURES "/../../docs/regressions.md", &len);
    assert_non_null(doc);
    char *p = strstr(doc, "## Default rules");
    assert_non_null(p);
    char *end = strstr(p + 1, "\n## ");
    if (end)
        *end = '\0';
    size_t n;
    const fb_metric_rule_t *rules = fb_metric_rules(&n);
    size_t row = 0;
    for (char *line = strtok(p, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "| `", 3))
            continue;
        char glob[128], better[16], tol[32], min[16], pooled[8];
        int k = sscanf(line, "| `%127[^`]` | %15[^|]| %31[^|]| %15[^|]| %7[^|]|", glob, better,
                       tol, min, pooled);
        if (row >= n)
            fail_msg("docs list more rows than the table: %s", line);
        const fb_metric_rule_t *r = &rules[row++];
        if (strcmp(glob, r->glob))
            fail_msg("row %zu: docs %s, table %s", row, glob, r->glob);
        if (!r->compared) {
            if (!strstr(line, "| | not compared |"))
                fail_msg("%s: the table does not compare it: %s", r->glob, line);
            continue;
        }
        char want[160];
        snprintf(want, sizeof want, "| `%s` | %s | %g%% | %g | %s |", r->glob,
                 fb_better_name(r->better), r->tolerance * 100, r->min_delta,
                 r->pooled ? "yes" : "no");
        if (k != 5 || strncmp(line, want, strlen(want)))
            fail_msg("docs\n  %s\ntable\n  %s", line, want);
    }
    assert_int_equal(row, n);
    free(doc);
}

static fb_regress_config_t *s_config(const char *yaml)
{
    fb_regress_config_t *cfg = NULL;
    char *err = NULL;
    int rc = fb_regress_config_from_text(yaml, strlen(yaml), "t.yaml", &cfg, &err);
    if (rc)
        fail_msg("%s", err);
    return cfg;
}

static void test_plan_with_overrides(void **state)
{
    (void)state;
    fb_regress_config_t *cfg = s_config("name: x\n"
                                        "expect: {gpus: 8}\n" /* other keys are not looked at */
                                        "regress:\n"
                                        "  netbw.tx_gbps: 25%\n"
                                        "  \"netbw.*\": 3%\n"
                                        "  \"gpu*.tflops_median\": 2.5%\n"
                                        "  mytool.score: 5% lower\n"
                                        "  other.thing: 7%\n"
                                        "  netbw.rtt_p50_us: off\n"
                                        "  seed: 1%\n");
    assert_non_null(cfg);
    assert_int_equal(cfg->n, 7);
    fb_metric_plan_t p;
    fb_metric_plan(cfg, "netbw.tx_gbps", &p); /* the first entry that matches wins */
    assert_int_equal(p.use, FB_METRIC_COMPARED);
    assert_true(fabs(p.limits.tolerance - 0.25) < 1e-12);
    assert_int_equal(p.limits.better, FB_BETTER_HIGHER); /* kept from the table */
    assert_non_null(p.entry);
    fb_metric_plan(cfg, "netbw.rx_gbps", &p);
    assert_true(fabs(p.limits.tolerance - 0.03) < 1e-12);
    fb_metric_plan(cfg, "gpu3.tflops_median", &p);
    assert_true(fabs(p.limits.tolerance - 0.025) < 1e-12);
    assert_string_equal(p.family, "gpu*.tflops_median");
    fb_metric_plan(cfg, "mytool.score", &p);
    assert_int_equal(p.use, FB_METRIC_COMPARED);
    assert_int_equal(p.limits.better, FB_BETTER_LOWER);
    fb_metric_plan(cfg, "other.thing", &p); /* unknown, no direction: either way */
    assert_int_equal(p.limits.better, FB_BETTER_NEITHER);
    fb_metric_plan(cfg, "netbw.rtt_p99_us", &p); /* "netbw.*" names it: compared */
    assert_int_equal(p.use, FB_METRIC_COMPARED);
    fb_metric_plan(cfg, "seed", &p);
    assert_int_equal(p.use, FB_METRIC_COMPARED);
    fb_metric_plan(cfg, "unknown.metric", &p);
    assert_int_equal(p.use, FB_METRIC_UNKNOWN);
    fb_regress_config_destroy(&cfg);
    /* rtt_p50 is turned off only when its entry comes first */
    cfg = s_config("regress: {netbw.rtt_p50_us: off, \"netbw.*\": 3%}\n");
    fb_metric_plan(cfg, "netbw.rtt_p50_us", &p);
    assert_int_equal(p.use, FB_METRIC_NOT_COMPARED);
    fb_regress_config_destroy(&cfg);
    /* Defaults without a config. */
    fb_metric_plan(NULL, "seed", &p);
    assert_int_equal(p.use, FB_METRIC_NOT_COMPARED);
    fb_metric_plan(NULL, "mytool.score", &p);
    assert_int_equal(p.use, FB_METRIC_UNKNOWN);
    assert_null(s_config("name: x\nstages: []\n"));
}

/* ---- the regress: key in a campaign ---- */

static const char *s_head = "name: t\nstages:\n  - name: s\n    workload: sleep\n";

static void s_expect_error(const char *regress, const char *want)
{
    char *text = xasprintf("%s%s", s_head, regress);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err), -EINVAL);
    assert_null(c);
    if (!strstr(err, want))
        fail_msg("error\n  %s\ndoes not contain\n  %s", err, want);
    free(err);
    free(text);
}

static void test_campaign_regress_key(void **state)
{
    (void)state;
    char *text = xasprintf("%sregress:\n  netbw.tx_gbps: 10%%\n  \"gpu*.tflops_*\": 2.5%% "
                           "higher\n  netbw.rtt_p50_us: OFF\n",
                           s_head);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err), 0);
    assert_non_null(c->regress);
    assert_int_equal(c->regress->n, 3);
    assert_string_equal(c->regress->entries[1].glob, "gpu*.tflops_*");
    assert_true(c->regress->entries[1].has_better);
    assert_int_equal(c->regress->entries[1].line, 7);
    assert_true(c->regress->entries[2].off);
    char buf[32];
    assert_string_equal(fb_regress_entry_text(&c->regress->entries[1], buf, sizeof buf),
                        "2.5% higher");
    fb_campaign_destroy(&c);
    free(text);
    /* no regress: key */
    assert_int_equal(fb_campaign_parse(s_head, strlen(s_head), "t.yaml", &c, &err), 0);
    assert_null(c->regress);
    fb_campaign_destroy(&c);

    s_expect_error("regress:\n  \"[abc\": 5%\n",
                   "t.yaml:6: regress.[abc: the metric glob '[abc' has a bracket expression that "
                   "is not closed");
    s_expect_error("regress:\n  netbw.tx_gbps: 5\n",
                   "t.yaml:6: regress.netbw.tx_gbps: '5' is not a tolerance; expected a tolerance "
                   "from 0% to 1000% such as 5%");
    s_expect_error("regress:\n  netbw.tx_gbps: -5%\n", "'-5%' is not a tolerance");
    s_expect_error("regress:\n  netbw.tx_gbps: 2000%\n", "'2000%' is not a tolerance");
    s_expect_error("regress:\n  netbw.tx_gbps: 5% faster\n", "'5% faster' is not a tolerance");
    s_expect_error("regress:\n  netbw.tx_gbps: 5e1%\n", "'5e1%' is not a tolerance");
    s_expect_error("regress:\n  \"net bw\": 5%\n", "the metric glob 'net bw' holds a character");
    s_expect_error("regress:\n  \"a]\": 5%\n", "has a ']' without its '['");
    s_expect_error("regress:\n  \"\": 5%\n", "t.yaml:6: regress");
    s_expect_error("regress:\n  a: 5%\n  a: 6%\n",
                   "t.yaml:7: regress.a: given twice (also line 6)");
    s_expect_error(
        "regress: [a, b]\n",
        "t.yaml:5: regress: is a list; expected a mapping of metric globs to tolerances");
    s_expect_error("regress:\n", "t.yaml:5: regress: is empty; expected a mapping");
    s_expect_error("regress:\n  a: [5%]\n", "t.yaml:6: regress.a:");
    s_expect_error("regress: {a: 5%}\nregress: {b: 5%}\n", "regress: key given twice");
}

static void test_glob_check(void **state)
{
    (void)state;
    const char *why;
    assert_int_equal(fb_regress_glob_check("gpu[0-3].tflops_*", &why), 0);
    assert_int_equal(fb_regress_glob_check("gpu[!0].x", &why), 0);
    assert_int_equal(fb_regress_glob_check("a?b", &why), 0);
    assert_int_equal(fb_regress_glob_check("[]", &why), -EINVAL);
    assert_int_equal(fb_regress_glob_check("a[b[c]]", &why), -EINVAL);
    assert_int_equal(fb_regress_glob_check("a\tb", &why), -EINVAL);
    char long_glob[200];
    memset(long_glob, 'a', sizeof long_glob - 1);
    long_glob[sizeof long_glob - 1] = '\0';
    assert_int_equal(fb_regress_glob_check(long_glob, &why), -EINVAL);
    fb_regress_entry_t e;
    assert_int_equal(fb_regress_value_parse("0%", &e), 0);
    assert_true(e.tolerance == 0);
    assert_int_equal(fb_regress_value_parse("1000%", &e), 0);
    assert_int_equal(fb_regress_value_parse("12.5 %", &e), -EINVAL);
    assert_int_equal(fb_regress_value_parse("%", &e), -EINVAL);
    assert_int_equal(fb_regress_value_parse(".%", &e), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_change_score_loss),
        cmocka_unit_test(test_tiny_fleets),
        cmocka_unit_test(test_one_outlier_named),
        cmocka_unit_test(test_fleet_wide_shift),
        cmocka_unit_test(test_noisy_median_is_not_a_shift),
        cmocka_unit_test(test_loopback_noise_names_nothing),
        cmocka_unit_test(test_loopback_throttle_named),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_min_delta),
        cmocka_unit_test(test_mad_floor),
        cmocka_unit_test(test_neither_direction),
        cmocka_unit_test(test_table_covers_workload_metrics),
        cmocka_unit_test(test_docs_table_matches),
        cmocka_unit_test(test_plan_with_overrides),
        cmocka_unit_test(test_campaign_regress_key),
        cmocka_unit_test(test_glob_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
