/* SPDX-License-Identifier: Apache-2.0 */
/* The decisions of the gpuburn workload that need no GPU: parameters, device selection, TFLOPS
 * statistics, the floors, and the metrics, findings and verdict of a run. A GPU is judged on
 * evidence it produced itself (results that disagree between repeats, NaN/Inf, a known answer
 * it got wrong, a runtime failure under load) and on its speed: below an absolute floor, or below
 * a fraction of the median of the GPUs of the same model in the same task, which is how a
 * throttling or degraded part stands out among its identical neighbours. */
#include "burn_judge.h"
#include "burn_fidelity.h"

#include "common/units.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const s_inject_names[] = {"none", "flip", "nan", "systematic", "gemm", "sdc"};

const char *burn_inject_name(burn_inject_t inject)
{
    return (int)inject >= 0 && inject <= BURN_INJECT_SDC ? s_inject_names[inject] : "unknown";
}

/* ---- parameters ------------------------------------------------------------------------------ */

static int s_refuse(worker_ctx_t *ctx, const char *key, const char *value, const char *expected)
{
    char shown[64];
    fb_result_set_error(worker_result(ctx), "gpuburn: %s '%s' %s", key,
                        fb_show_value(value, shown, sizeof shown), expected);
    return -EINVAL;
}

static int s_duration(worker_ctx_t *ctx, const char *key, const char *dflt, uint64_t min_ms,
                      uint64_t *out)
{
    const char *text = worker_param(ctx, key);
    if (!text)
        text = dflt;
    if (fb_parse_duration_ms(text, out) || *out < min_ms) {
        char expected[96];
        snprintf(expected, sizeof expected, "must be a duration of at least %" PRIu64 " ms",
                 min_ms);
        return s_refuse(ctx, key, text, expected);
    }
    return 0;
}

static int s_double(worker_ctx_t *ctx, const char *key, const char *dflt, double lo, double hi,
                    bool lo_open, double *out)
{
    const char *text = worker_param(ctx, key);
    if (!text)
        text = dflt;
    if (fb_parse_double(text, out) || *out > hi || *out < lo || (lo_open && *out == lo)) {
        char expected[96];
        snprintf(expected, sizeof expected, "must be a number %s %g and at most %g",
                 lo_open ? "above" : "from", lo, hi);
        return s_refuse(ctx, key, text, expected);
    }
    return 0;
}

static int s_bool(worker_ctx_t *ctx, const char *key, bool dflt, bool *out)
{
    const char *text = worker_param(ctx, key);
    *out = dflt;
    if (text && fb_parse_bool(text, out))
        return s_refuse(ctx, key, text, "must be true or false");
    return 0;
}

/* The test-only parameters; a refused injection must never run as a plain burn. */
static int s_injection(worker_ctx_t *ctx, burn_config_t *cfg)
{
    static const char *const keys[] = {"inject_corrupt", "inject_gemms", "inject_seed"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (worker_param(ctx, keys[k]) && !worker_fault_injection_allowed(ctx)) {
            fb_result_set_error(worker_result(ctx),
                                "%s refused: the agent was not started with "
                                "--allow-fault-injection",
                                keys[k]);
            return -EPERM;
        }
    const char *inject = worker_param(ctx, "inject_corrupt");
    if (inject) {
        int i;
        for (i = BURN_INJECT_FLIP; i <= BURN_INJECT_SDC; i++)
            if (!strcmp(inject, s_inject_names[i]))
                break;
        if (i > BURN_INJECT_SDC)
            return s_refuse(ctx, "inject_corrupt", inject,
                            "must be flip, nan, systematic, gemm or sdc");
        cfg->inject = (burn_inject_t)i;
    }
    const char *gemms = worker_param(ctx, "inject_gemms");
    uint64_t count = 1;
    if (gemms && (fb_parse_uint(gemms, BURN_MAX_INJECT_GEMMS, &count) || count < 1))
        return s_refuse(ctx, "inject_gemms", gemms, "must be a whole number from 1 to 32");
    cfg->inject_gemms = (unsigned)count;
    const char *seed = worker_param(ctx, "inject_seed");
    if (seed && fb_parse_uint(seed, UINT64_MAX, &cfg->inject_seed))
        return s_refuse(ctx, "inject_seed", seed, "must be a whole number");
    if (!seed)
        cfg->inject_seed = fb_mix64((uint64_t)time(NULL) ^ (uint64_t)getpid() << 32);
    return 0;
}

int burn_config_parse(worker_ctx_t *ctx, burn_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    int rc = s_injection(ctx, cfg);
    if (rc)
        return rc;
    const char *dtype = worker_param(ctx, "dtype");
    int dt = burn_dtype_from_name(dtype ? dtype : "bf16");
    if (dt < 0)
        return s_refuse(ctx, "dtype", dtype, "must be bf16, fp16, tf32, fp32, fp64 or fp8");
    cfg->dtype = (burn_dtype_t)dt;
    if (s_duration(ctx, "duration", "60s", 1000, &cfg->duration_ms) ||
        s_duration(ctx, "interval", "5s", 100, &cfg->interval_ms))
        return -EINVAL;
    if (cfg->interval_ms > cfg->duration_ms)
        cfg->interval_ms = cfg->duration_ms;
    if (cfg->duration_ms / cfg->interval_ms > BURN_MAX_INTERVALS)
        return s_refuse(ctx, "interval", worker_param(ctx, "interval"),
                        "is too short for the duration (at most 100000 intervals)");
    const char *matrix = worker_param(ctx, "matrix");
    if (!matrix) /* fp8: see BURN_FP8_MATRIX */
        matrix = cfg->dtype == BURN_FP8 ? BURN_FP8_MATRIX : "8192";
    if (fb_parse_uint(matrix, 65536, &cfg->matrix) || cfg->matrix < 256)
        return s_refuse(ctx, "matrix", matrix, "must be a whole number from 256 to 65536");
    if (cfg->matrix % 16) {
        uint64_t rounded = cfg->matrix / 16 * 16;
        worker_log(ctx,
                   "gpuburn: matrix %" PRIu64 " rounded down to %" PRIu64 " (a multiple of 16)",
                   cfg->matrix, rounded);
        cfg->matrix = rounded;
    }
    if (s_double(ctx, "mem_fraction", "0.9", 0, 1, true, &cfg->mem_fraction) ||
        s_double(ctx, "min_relative", "0.9", 0, 1, false, &cfg->min_relative))
        return -EINVAL;
    if (worker_param(ctx, "min_tflops")) {
        if (s_double(ctx, "min_tflops", NULL, 0, 1e9, false, &cfg->min_tflops))
            return -EINVAL;
        cfg->has_min_tflops = true;
    }
    cfg->devices = worker_param(ctx, "devices");
    if (!cfg->devices)
        cfg->devices = "all";
    if (s_bool(ctx, "abft", true, &cfg->abft) || s_bool(ctx, "sdc_probe", true, &cfg->sdc))
        return -EINVAL;
    const char *sms = worker_param(ctx, "abft_sms");
    uint64_t reserved = 0;
    cfg->abft_sms = -1;
    if (sms && strcmp(sms, "auto")) {
        if (fb_parse_uint(sms, 64, &reserved))
            return s_refuse(ctx, "abft_sms", sms, "must be auto or a whole number from 0 to 64");
        cfg->abft_sms = (int)reserved;
    }
    if (cfg->inject == BURN_INJECT_GEMM && !cfg->abft)
        return s_refuse(ctx, "inject_corrupt", "gemm", "needs abft=true");
    if (cfg->inject == BURN_INJECT_SDC && !cfg->sdc)
        return s_refuse(ctx, "inject_corrupt", "sdc", "needs sdc_probe=true");
    return 0;
}

/* ---- statistics ------------------------------------------------------------------------------ */

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double burn_median(const double *v, size_t n)
{
    if (n == 0)
        return NAN;
    double *s = xmalloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, s_cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

double burn_min(const double *v, size_t n)
{
    if (n == 0)
        return NAN;
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

void burn_gpu_add_interval(burn_gpu_t *g, double tflops)
{
    if (g->n_intervals == g->cap_intervals) {
        g->cap_intervals = g->cap_intervals ? 2 * g->cap_intervals : 16;
        g->tflops = xrealloc(g->tflops, g->cap_intervals * sizeof *g->tflops);
    }
    g->tflops[g->n_intervals++] = tflops;
}

void burn_gpu_clear(burn_gpu_t *g)
{
    free(g->tflops);
    free(g->sdc_sm_off);
    free(g->sdc_digest);
    memset(g, 0, sizeof *g);
}

/* ---- judging --------------------------------------------------------------------------------- */

static bool s_measured(const burn_gpu_t *g)
{
    return (g->state == BURN_GPU_OK || g->state == BURN_GPU_RUN_ERROR) && g->n_intervals > 0;
}

/* Median TFLOPS of the measured GPUs of g's model. *count gets their number. */
static double s_class_median(const burn_gpu_t *gpus, size_t n, const burn_gpu_t *g, size_t *count)
{
    double *med = xcalloc(n ? n : 1, sizeof *med);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s_measured(&gpus[i]) && !strcmp(gpus[i].name, g->name))
            med[k++] = burn_median(gpus[i].tflops, gpus[i].n_intervals);
    double m = burn_median(med, k);
    free(med);
    *count = k;
    return m;
}

static void s_metric(fb_result_t *res, const burn_gpu_t *g, const char *what, double value,
                     const char *unit)
{
    char name[64];
    snprintf(name, sizeof name, "gpu%d.%s", g->device, what);
    fb_result_set_metric(res, name, value, unit);
}

/* "gpu0 (NVIDIA H200, PCI 0000:19:00.0)" into buf. */
static const char *s_who(const burn_gpu_t *g, char *buf, size_t len)
{
    snprintf(buf, len, "gpu%d (%s, PCI %s)", g->device, g->name[0] ? g->name : "unknown model",
             g->pci[0] ? g->pci : "unknown");
    return buf;
}

/* True when the corruption injected into g shows in the counter it is meant to move. */
static bool s_injection_seen(const burn_gpu_t *g)
{
    switch (g->injected) {
    case BURN_INJECT_FLIP:
        return g->repeat.mismatches > 0;
    case BURN_INJECT_NAN:
        return g->repeat.nonfinite > 0 || g->kat.nonfinite > 0;
    case BURN_INJECT_SYSTEMATIC:
        return g->kat.mismatches > 0;
    case BURN_INJECT_GEMM:
        return burn_abft_injection_seen(g);
    case BURN_INJECT_SDC:
        return burn_sdc_injection_seen(g);
    default:
        return true;
    }
}

/* Why an injection went unseen, where more can be said (static text). */
static const char *s_injection_shortfall(const burn_gpu_t *g)
{
    if (g->injected == BURN_INJECT_GEMM && g->abft_injected < g->abft_planned)
        return " (not every planned GEMM was corrupted)";
    if (g->injected == BURN_INJECT_GEMM)
        return " (a corrupted GEMM was not flagged)";
    if (g->injected == BURN_INJECT_SDC && g->sdc_inject_sm >= 0 &&
        ((unsigned)g->sdc_inject_sm >= g->sdc_sm_cap || !g->sdc_sm_off[g->sdc_inject_sm]))
        return " (its SM was not named)";
    return "";
}

/* Appends "; text" (or text) to a heap string. */
static void s_append(char **s, const char *text)
{
    char *joined = *s ? xasprintf("%s; %s", *s, text) : xstrdup(text);
    free(*s);
    *s = joined;
}

fb_verdict_t burn_judge(fb_result_t *res, const char *node, const burn_config_t *cfg,
                        const burn_gpu_t *gpus, size_t n, int telemetry_faults)
{
    const char *host = node && *node ? node : "localhost";
    const char *dt = burn_dtype_name(cfg->dtype);
    bool fail = false;
    size_t n_unsupported = 0;
    char *errors = NULL;
    double *medians = xcalloc(n ? n : 1, sizeof *medians);
    size_t n_medians = 0;
    burn_node_figures_t fig = {0};
    for (size_t i = 0; i < n; i++) {
        const burn_gpu_t *g = &gpus[i];
        char who[160], part[160];
        s_who(g, who, sizeof who);
        snprintf(part, sizeof part, "%s/gpu%d", host, g->device);
        if (g->state == BURN_GPU_UNSUPPORTED) {
            n_unsupported++;
            s_metric(res, g, "dtype_unsupported", 1, "");
            continue;
        }
        if (g->state == BURN_GPU_SETUP_ERROR) {
            char *text = xasprintf("%s: %s", who, g->error);
            s_append(&errors, text);
            free(text);
            continue;
        }
        double med = burn_median(g->tflops, g->n_intervals);
        double min = burn_min(g->tflops, g->n_intervals);
        if (g->n_intervals) {
            s_metric(res, g, "tflops_median", med, "TFLOPS");
            s_metric(res, g, "tflops_min", min, "TFLOPS");
            medians[n_medians++] = med;
        }
        if (g->peak_tflops > 0) {
            s_metric(res, g, "blas_peak_tflops", g->peak_tflops, "TFLOPS");
            if (g->n_intervals)
                s_metric(res, g, "burn_vs_peak", med / g->peak_tflops, "");
        }
        s_metric(res, g, "errors", (double)g->repeat.mismatches, "");
        s_metric(res, g, "nan_inf", (double)(g->repeat.nonfinite + g->kat.nonfinite), "");
        s_metric(res, g, "kat_errors", (double)g->kat.mismatches, "");
        s_metric(res, g, "gemms", (double)g->gemms, "");
        burn_node_figures_add(&fig, g);
        s_metric(res, g, "c_buffers", (double)g->c_buffers, "");
        s_metric(res, g, "intervals", (double)g->n_intervals, "");
        s_metric(res, g, "mem_bytes", (double)g->mem_bytes, "bytes");

        if (g->repeat.mismatches) {
            fail = true;
            fb_result_add_findingf(res, part, "gpu",
                                   "%s: %" PRIu64 " result element(s) differ between repeats of "
                                   "the same %s GEMM (%" PRIu64 "x%" PRIu64 ", %" PRIu64
                                   " buffers); first %s. Identical inputs must give identical "
                                   "results: a matrix-unit or HBM error",
                                   who, g->repeat.mismatches, dt, g->matrix, g->matrix,
                                   g->c_buffers, g->repeat_detail[0] ? g->repeat_detail : "?");
        }
        uint64_t nonfinite = g->repeat.nonfinite + g->kat.nonfinite;
        if (nonfinite) {
            fail = true;
            fb_result_add_findingf(res, part, "gpu",
                                   "%s: %" PRIu64 " NaN/Inf result element(s) from finite %s "
                                   "operands; first %s",
                                   who, nonfinite, dt,
                                   g->nonfinite_detail[0] ? g->nonfinite_detail : "?");
        }
        if (g->kat.mismatches) {
            fail = true;
            fb_result_add_findingf(res, part, "gpu",
                                   "%s: %" PRIu64 " element(s) of the known-answer %s GEMM differ "
                                   "from the exact answer over %" PRIu64 " check(s); first %s. "
                                   "An error that repeats identically, invisible to repeat "
                                   "comparison",
                                   who, g->kat.mismatches, dt, g->kat_checked,
                                   g->kat_detail[0] ? g->kat_detail : "?");
        }
        char *incomplete = burn_judge_abft(res, part, who, g, cfg, &fail);
        if (incomplete) {
            s_append(&errors, incomplete);
            free(incomplete);
        }
        burn_judge_sdc(res, part, who, g, &fail);
        if (g->state == BURN_GPU_RUN_ERROR) {
            fail = true;
            fb_result_add_findingf(res, part, "gpu", "%s failed under %s GEMM load: %s", who, dt,
                                   g->error);
        }
        if (cfg->has_min_tflops && g->n_intervals && med < cfg->min_tflops) {
            fail = true;
            fb_result_add_findingf(res, part, "gpu",
                                   "%s: median %.1f TFLOPS (%s, min %.1f) below the floor "
                                   "min_tflops=%g",
                                   who, med, dt, min, cfg->min_tflops);
        }
        size_t peers = 0;
        double cls = g->n_intervals ? s_class_median(gpus, n, g, &peers) : NAN;
        if (cfg->min_relative > 0 && peers >= 2 && med < cfg->min_relative * cls) {
            fail = true;
            fb_result_add_findingf(res, part, "gpu",
                                   "%s: median %.1f TFLOPS (%s) is %.0f%% of the median %.1f of "
                                   "the %zu %s GPUs in this task (floor min_relative=%g)",
                                   who, med, dt, 100.0 * med / cls, cls, peers, g->name,
                                   cfg->min_relative);
        }
        if (g->injected != BURN_INJECT_NONE && g->state == BURN_GPU_OK && !s_injection_seen(g)) {
            char *text = xasprintf("%s: inject_corrupt=%s was not detected%s", who,
                                   burn_inject_name(g->injected), s_injection_shortfall(g));
            s_append(&errors, text);
            free(text);
        }
    }
    burn_judge_sdc_gpus(res, host, gpus, n, &fail);
    if (n_medians)
        fb_result_set_metric(res, "tflops_median", burn_median(medians, n_medians), "TFLOPS");
    free(medians);
    fb_result_set_metric(res, "gpus", (double)n, "");
    burn_node_figures_set(res, &fig);
    if (telemetry_faults > 0) {
        fail = true;
        /* telemetry_stop has added the findings that name each GPU. */
        fb_result_set_metric(res, "telemetry_faults", telemetry_faults, "");
    }

    fb_verdict_t verdict = FB_VERDICT_PASS;
    if (fail) {
        verdict = FB_VERDICT_FAIL;
        if (errors)
            fb_result_set_error(res, "%s", errors);
    } else if (errors) {
        verdict = FB_VERDICT_ERROR;
        fb_result_set_error(res, "gpuburn: %s", errors);
    } else if (n == 0) {
        verdict = FB_VERDICT_SKIPPED;
        fb_result_set_error(res, "gpuburn skipped: no GPU visible");
    } else if (n_unsupported == n) {
        verdict = FB_VERDICT_SKIPPED;
        fb_result_set_error(res, "gpuburn skipped: dtype %s does not run on %s: %s", dt,
                            gpus[0].name, gpus[0].error);
    }
    free(errors);
    return verdict;
}

char *burn_summary(const burn_config_t *cfg, const burn_gpu_t *gpus, size_t n, fb_verdict_t verdict)
{
    char *line = xasprintf("gpuburn %s %s %" PRIu64 ":", fb_verdict_name(verdict),
                           burn_dtype_name(cfg->dtype), cfg->matrix);
    if (n == 0) {
        char *more = xasprintf("%s no GPU", line);
        free(line);
        return more;
    }
    for (size_t i = 0; i < n; i++) {
        const burn_gpu_t *g = &gpus[i];
        char *part;
        if (g->state == BURN_GPU_UNSUPPORTED || g->state == BURN_GPU_SETUP_ERROR) {
            part = xasprintf("gpu%d %s %s: %s", g->device, g->name,
                             g->state == BURN_GPU_UNSUPPORTED ? "skipped" : "error", g->error);
        } else {
            double med = burn_median(g->tflops, g->n_intervals);
            double min = burn_min(g->tflops, g->n_intervals);
            double pct = g->peak_tflops > 0 ? 100.0 * med / g->peak_tflops : NAN;
            char checks[160] = "", sdc[96] = "";
            if (g->abft)
                snprintf(checks, sizeof checks,
                         ", %" PRIu64 " of %" PRIu64 " GEMMs checksummed (%" PRIu64 " bad)",
                         g->abft_checked, g->gemms, g->abft_gemms_bad);
            if (g->sdc_probes)
                snprintf(sdc, sizeof sdc, ", SDC probe %u SMs x %u: %" PRIu64 " blocks off",
                         g->sdc_sms, g->sdc_probes, g->sdc_blocks_off);
            part = xasprintf("gpu%d %s %.1f TFLOPS median (min %.1f, peak %.1f = %.1f%%), "
                             "%" PRIu64 " miscompares, %" PRIu64 " NaN/Inf, %" PRIu64
                             " known-answer errors%s%s%s%s",
                             g->device, g->name, med, min, g->peak_tflops, pct,
                             g->repeat.mismatches, g->repeat.nonfinite + g->kat.nonfinite,
                             g->kat.mismatches, checks, sdc,
                             g->state == BURN_GPU_RUN_ERROR ? ", failed: " : "",
                             g->state == BURN_GPU_RUN_ERROR ? g->error : "");
        }
        char *more = xasprintf("%s%s %s", line, i ? ";" : "", part);
        free(line);
        free(part);
        line = more;
    }
    return line;
}
