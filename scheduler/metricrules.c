/* SPDX-License-Identifier: Apache-2.0 */
/* The one table of metric directions and default tolerances (metricrules.h). The names are
 * those the workloads report (docs/workloads.md, "Results" of each workload); docs/regressions.md
 * has the same table with the reason for every tolerance. A new metric gets a row here and there,
 * or it is skipped by `fleetburn compare` and counted as unknown. */
#include "metricrules.h"

#include "common/util.h"

#include <fnmatch.h>
#include <math.h>
#include <string.h>

#define H FB_BETTER_HIGHER
#define L FB_BETTER_LOWER
#define N FB_BETTER_NEITHER
/* clang-format off */
#define PERF(g, b, tol, min) {g, true, b, tol, min, false}
#define POOL(g, b, tol, min) {g, true, b, tol, min, true}
/* Counts of things that must not go up (errors) or down (GPUs present): any change of 1. */
#define MORE_BAD(g) {g, true, L, 0, 1, false}
#define LESS_BAD(g) {g, true, H, 0, 1, false}
#define INFO(g) {g, false, N, 0, 0, false}

static const fb_metric_rule_t s_rules[] = {
    /* memtest */
    PERF("bandwidth_mbs", H, 0.10, 0),
    MORE_BAD("miscompares"), MORE_BAD("edac_ce_delta"), MORE_BAD("edac_ue_delta"),
    INFO("bytes_tested"), INFO("passes"), INFO("threads"), INFO("numa_nodes"), INFO("locked"),
    INFO("seed"), INFO("elapsed_s"),
    /* gpuburn, gpumemtest: per GPU, the GPUs of a node pooled into the fleet */
    POOL("gpu*.tflops_median", H, 0.05, 0), POOL("gpu*.tflops_min", H, 0.10, 0),
    POOL("gpu*.blas_peak_tflops", H, 0.05, 0), POOL("gpu*.burn_vs_peak", H, 0.05, 0),
    POOL("gpu*.triad_gbs", H, 0.05, 0),
    {"gpu*.errors", true, L, 0, 1, true}, {"gpu*.nan_inf", true, L, 0, 1, true},
    {"gpu*.kat_errors", true, L, 0, 1, true}, {"gpu*.dtype_unsupported", true, L, 0, 1, true},
    INFO("gpu*.gemms"), INFO("gpu*.c_buffers"), INFO("gpu*.intervals"), INFO("gpu*.mem_bytes"),
    INFO("gpu*.tested_bytes"), INFO("gpu*.tested_fraction"),
    /* telemetry summaries, per GPU */
    POOL("gpu*.temp_max_c", L, 0.10, 5), POOL("gpu*.mem_temp_max_c", L, 0.10, 5),
    POOL("gpu*.power_limit_w", H, 0.01, 1), POOL("gpu*.sm_clock_min_mhz", H, 0.10, 50),
    POOL("gpu*.sm_clock_median_mhz", H, 0.05, 30),
    INFO("gpu*.samples"), INFO("gpu*.power_mean_w"), INFO("gpu*.power_max_w"),
    INFO("gpu*.throttle_reasons"),
    /* gpuburn, per node */
    PERF("tflops_median", H, 0.05, 0), LESS_BAD("gpus"), MORE_BAD("telemetry_faults"),
    /* health */
    LESS_BAD("hcas"), LESS_BAD("ib_ports"),
    MORE_BAD("pcie_degraded"), MORE_BAD("ib_ports_down"), MORE_BAD("ib_ports_slow"),
    MORE_BAD("dimm_ue"), MORE_BAD("edac_ce_total"), MORE_BAD("edac_ue_total"),
    MORE_BAD("gpu_retired_pages"), MORE_BAD("gpu_retire_pending"), MORE_BAD("gpu_remap_failure"),
    MORE_BAD("gpu_remap_pending"), MORE_BAD("gpu_ecc_ue"), MORE_BAD("gpu_lost"),
    MORE_BAD("gpu_missing"), MORE_BAD("kmsg_*"), MORE_BAD("findings"),
    /* netbw */
    PERF("netbw.tx_gbps", H, 0.10, 0), PERF("netbw.rx_gbps", H, 0.10, 0),
    PERF("netbw.rtt_p50_us", L, 0.50, 50),
    INFO("netbw.rtt_p99_us"), INFO("netbw.rtt_max_us"),
    PERF("netbw.tx_retransmits", L, 1.0, 1000), MORE_BAD("netbw.rx_corrupt_blocks"),
    INFO("netbw.streams"),
    /* rdmabw */
    PERF("rdmabw.tx_gbps", H, 0.05, 0), PERF("rdmabw.rx_gbps", H, 0.05, 0),
    POOL("rdmabw.*.p*.tx_gbps", H, 0.05, 0), POOL("rdmabw.*.p*.rx_gbps", H, 0.05, 0),
    PERF("rdmabw.send.rx_avg_gbps", H, 0.10, 0),
    PERF("rdmabw.lat_min_us", L, 0.10, 0.2), PERF("rdmabw.lat_avg_us", L, 0.10, 0.2),
    PERF("rdmabw.lat_p50_us", L, 0.10, 0.2), PERF("rdmabw.lat_p99_us", L, 0.25, 0.5),
    INFO("rdmabw.lat_p999_us"), INFO("rdmabw.lat_max_us"),
    LESS_BAD("rdmabw.gpu_memory"), MORE_BAD("rdmabw.miscompare_bytes"),
    INFO("rdmabw.floor_gbps"), INFO("rdmabw.connections"),
    PERF("rdmabw.*.avg_gbps", H, 0.10, 0), PERF("rdmabw.*.min_gbps", H, 0.20, 0),
    INFO("rdmabw.*.peak_gbps"),
    /* allreduce: the headline, then every size on its own (sizes behave differently) */
    MORE_BAD("allreduce.errors"),
    PERF("allreduce.busbw_gbs", H, 0.05, 0), PERF("allreduce.peak_busbw_gbs", H, 0.05, 0),
    PERF("allreduce.lat_us", L, 0.20, 2), INFO("allreduce.algbw_gbs"),
    INFO("allreduce.max_bytes"), INFO("allreduce.ranks"), INFO("allreduce.nccl_version"),
    PERF("allreduce.*.busbw_gbs", H, 0.10, 0), PERF("allreduce.*.avg_us", L, 0.20, 2),
    INFO("allreduce.*.algbw_gbs"),
    /* p2p: each matrix one fleet over the GPU pairs of every node */
    POOL("p2p.ce_uni.*", H, 0.05, 0), POOL("p2p.ce_bidi.*", H, 0.05, 0),
    POOL("p2p.sm_uni.*", H, 0.05, 0), POOL("p2p.sm_bidi.*", H, 0.05, 0),
    POOL("p2p.lat_us.*", L, 0.20, 0.5),
    POOL("h2d.*", H, 0.05, 0), POOL("d2h.*", H, 0.05, 0), POOL("hd_bidi.*", H, 0.05, 0),
    MORE_BAD("p2p.corrupt_transfers"),
    /* sleep (the test workload) */
    INFO("slept_ms"), INFO("sleep.group_size"),
};
/* clang-format on */
#undef H
#undef L
#undef N

const fb_metric_rule_t *fb_metric_rules(size_t *n)
{
    *n = FB_ARRAY_LEN(s_rules);
    return s_rules;
}

const fb_metric_rule_t *fb_metric_rule_find(const char *name)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(s_rules); i++)
        if (!strcmp(s_rules[i].glob, name) || !fnmatch(s_rules[i].glob, name, 0))
            return &s_rules[i];
    return NULL;
}

void fb_metric_plan(const fb_regress_config_t *cfg, const char *name, fb_metric_plan_t *out)
{
    const fb_metric_rule_t *row = fb_metric_rule_find(name);
    const fb_regress_entry_t *e = fb_regress_config_match(cfg, name);
    *out = (fb_metric_plan_t){.use = FB_METRIC_UNKNOWN, .family = name, .entry = e};
    if (row) {
        out->limits = (fb_regress_limits_t){row->better, row->tolerance, row->min_delta};
        out->use = row->compared ? FB_METRIC_COMPARED : FB_METRIC_NOT_COMPARED;
        if (row->pooled)
            out->family = row->glob;
    }
    if (!e)
        return;
    if (e->off) {
        out->use = FB_METRIC_NOT_COMPARED;
        return;
    }
    /* Named by the campaign: compared, whatever the table says. A row that is not compared has
     * no direction worth keeping. */
    if (!row || !row->compared)
        out->limits = (fb_regress_limits_t){FB_BETTER_NEITHER, 0, 0};
    out->limits.tolerance = e->tolerance;
    if (e->has_better)
        out->limits.better = e->better;
    out->use = FB_METRIC_COMPARED;
}

const char *fb_better_name(fb_better_t better)
{
    return better == FB_BETTER_HIGHER ? "higher" : better == FB_BETTER_LOWER ? "lower" : "either";
}
