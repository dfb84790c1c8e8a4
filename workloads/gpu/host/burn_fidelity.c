/* SPDX-License-Identifier: Apache-2.0 */
/* burn_fidelity.h, and the per-interval accumulation of what the checksums and the SDC probe
 * found (burn_gpu_add_abft, burn_gpu_add_sdc). A GPU is named on its own evidence: a GEMM whose
 * checksums disagree with the references computed from the operands, an SM whose probe result
 * differs from the other SMs of the same GPU, or a GPU whose probe result differs from the other
 * GPUs of its model in the same task. */
#include "burn_fidelity.h"

#include "common/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- accumulation ---------------------------------------------------------------------------- */

static bool s_injection_at(const burn_abft_bad_t *b, const burn_abft_injection_t *in, uint64_t n)
{
    return b->col_key == burn_abft_key(in->row / BURN_ABFT_BLOCK, in->col, n) &&
           b->row_key == burn_abft_key(in->col / BURN_ABFT_BLOCK, in->row, n);
}

void burn_gpu_add_abft(burn_gpu_t *g, unsigned interval, uint64_t n, const burn_abft_state_t *st,
                       const burn_abft_injection_t *inj, size_t n_inj)
{
    g->abft_checked += st->checked;
    g->abft_gemms_bad += st->gemms_bad;
    g->abft_sums_off += st->sums_off;
    float ratio;
    memcpy(&ratio, &st->max_ratio_bits, sizeof ratio);
    if (ratio > g->abft_max_ratio)
        g->abft_max_ratio = ratio;
    size_t kept = st->n_bad < BURN_ABFT_LOG ? st->n_bad : BURN_ABFT_LOG;
    if (kept && !g->abft_detail[0]) {
        char what[280];
        burn_abft_describe(&st->bad[0], n, BURN_ABFT_BLOCK, what, sizeof what);
        snprintf(g->abft_detail, sizeof g->abft_detail, "interval %u, %s", interval + 1, what);
    }
    for (size_t i = 0; i < n_inj; i++) {
        if (inj[i].bit < 0) /* no element with such a bit near its start: not done */
            continue;
        g->abft_injected++;
        for (size_t b = 0; b < kept; b++)
            if (st->bad[b].gemm == inj[i].gemm) {
                g->abft_found++;
                g->abft_located += s_injection_at(&st->bad[b], &inj[i], n);
                break;
            }
    }
}

void burn_gpu_add_sdc(burn_gpu_t *g, const sdc_sample_t *samples, size_t n)
{
    sdc_vote_t v;
    sdc_vote(samples, n, &v);
    g->sdc_digest = xrealloc(g->sdc_digest, (g->sdc_probes + 1) * sizeof *g->sdc_digest);
    g->sdc_digest[g->sdc_probes++] = v.majority ? v.digest : 0;
    if (v.units > g->sdc_sms)
        g->sdc_sms = (unsigned)v.units;
    g->sdc_blocks += n;
    if (!v.majority)
        g->sdc_no_majority++;
    else
        g->sdc_blocks_off += n - v.agree;
    for (size_t i = 0; i < v.n_odd; i++) {
        uint32_t sm = v.odd[i].unit;
        if (sm >= g->sdc_sm_cap) {
            unsigned cap = sm + 64;
            g->sdc_sm_off = xrealloc(g->sdc_sm_off, cap * sizeof *g->sdc_sm_off);
            memset(g->sdc_sm_off + g->sdc_sm_cap, 0, (cap - g->sdc_sm_cap) * sizeof *g->sdc_sm_off);
            g->sdc_sm_cap = cap;
        }
        g->sdc_sm_off[sm]++;
    }
    sdc_vote_clear(&v);
}

/* ---- checksums ------------------------------------------------------------------------------- */

static void s_metric(fb_result_t *res, const burn_gpu_t *g, const char *what, double value,
                     const char *unit)
{
    char name[64];
    snprintf(name, sizeof name, "gpu%d.%s", g->device, what);
    fb_result_set_metric(res, name, value, unit);
}

void burn_node_figures_add(burn_node_figures_t *fig, const burn_gpu_t *g)
{
    fig->gemms += g->gemms;
    if (g->abft) {
        fig->checked += g->abft_checked;
        fig->gpus_checked++;
    }
    double med = burn_median(g->tflops, g->n_intervals);
    if (g->n_intervals && g->peak_tflops > 0) {
        double ratio = med / g->peak_tflops;
        if (fig->worst_vs_peak <= 0 || ratio < fig->worst_vs_peak)
            fig->worst_vs_peak = ratio;
    }
}

void burn_node_figures_set(fb_result_t *res, const burn_node_figures_t *fig)
{
    fb_result_set_metric(res, "gemms", (double)fig->gemms, "");
    if (fig->gpus_checked)
        fb_result_set_metric(res, "gemms_checked", (double)fig->checked, "");
    if (fig->worst_vs_peak > 0)
        fb_result_set_metric(res, "overhead_vs_peak_pct", 100 * (1 - fig->worst_vs_peak), "%");
}

char *burn_judge_abft(fb_result_t *res, const char *part, const char *who, const burn_gpu_t *g,
                      const burn_config_t *cfg, bool *fail)
{
    if (!g->abft)
        return NULL;
    s_metric(res, g, "abft_checked", (double)g->abft_checked, "");
    s_metric(res, g, "abft_gemms_bad", (double)g->abft_gemms_bad, "");
    s_metric(res, g, "abft_sums_off", (double)g->abft_sums_off, "");
    s_metric(res, g, "abft_max_ratio", g->abft_max_ratio, "");
    s_metric(res, g, "abft_sms", g->abft_sms, "");
    s_metric(res, g, "abft_threshold_rms", g->abft_threshold, "");
    if (g->abft_planned) {
        s_metric(res, g, "abft_injected", g->abft_injected, "");
        s_metric(res, g, "abft_injections_found", g->abft_found, "");
        s_metric(res, g, "abft_injections_located", g->abft_located, "");
    }
    if (g->abft_gemms_bad) {
        *fail = true;
        fb_result_add_findingf(res, part, "checksum",
                               "%s: %" PRIu64 " of %" PRIu64 " %s GEMMs gave a result whose "
                               "block checksums disagree with the sums (e^T A)B and A(Be) "
                               "computed from the operands (%" PRIu64 " checksum(s) beyond "
                               "tolerance); first %s. Every GEMM is checked before its buffer "
                               "is written again, so this is a wrong result the end-of-interval "
                               "checks may never see",
                               who, g->abft_gemms_bad, g->abft_checked,
                               burn_dtype_name(cfg->dtype), g->abft_sums_off,
                               g->abft_detail[0] ? g->abft_detail : "?");
    }
    if (g->state == BURN_GPU_OK && g->abft_checked != g->gemms)
        return xasprintf("%s: checksums ran for %" PRIu64 " of %" PRIu64 " burn GEMMs", who,
                         g->abft_checked, g->gemms);
    return NULL;
}

bool burn_abft_injection_seen(const burn_gpu_t *g)
{
    return g->abft_planned && g->abft_injected == g->abft_planned &&
           g->abft_found == g->abft_injected;
}

/* ---- SDC probe: one GPU ---------------------------------------------------------------------- */

/* "SM 17 in 3, SM 90 in 1" (of the probes) into a heap string; *count gets the SMs. */
static char *s_odd_sms(const burn_gpu_t *g, unsigned *count)
{
    char *list = NULL;
    *count = 0;
    for (unsigned sm = 0; sm < g->sdc_sm_cap; sm++) {
        if (!g->sdc_sm_off[sm])
            continue;
        char *more = xasprintf("%s%sSM %u in %u", list ? list : "", list ? ", " : "", sm,
                               g->sdc_sm_off[sm]);
        free(list);
        list = more;
        (*count)++;
    }
    return list;
}

void burn_judge_sdc(fb_result_t *res, const char *part, const char *who, const burn_gpu_t *g,
                    bool *fail)
{
    if (!g->sdc_probes)
        return;
    unsigned odd = 0;
    char *list = s_odd_sms(g, &odd);
    s_metric(res, g, "sdc_probes", g->sdc_probes, "");
    s_metric(res, g, "sdc_sms", g->sdc_sms, "");
    s_metric(res, g, "sdc_blocks", (double)g->sdc_blocks, "");
    s_metric(res, g, "sdc_blocks_off", (double)g->sdc_blocks_off, "");
    s_metric(res, g, "sdc_odd_sms", odd, "");
    s_metric(res, g, "sdc_probe_ms", g->sdc_ms, "ms");
    if (odd) {
        *fail = true;
        fb_result_add_findingf(res, part, "sdc",
                               "%s: %u SM(s) computed a different result from the majority of "
                               "its %u SMs on identical deterministic work (%s of %u probes; "
                               "%" PRIu64 " of %" PRIu64 " probe blocks off): silent data "
                               "corruption on those SMs",
                               who, odd, g->sdc_sms, list, g->sdc_probes, g->sdc_blocks_off,
                               g->sdc_blocks);
    }
    if (g->sdc_no_majority) {
        *fail = true;
        fb_result_add_findingf(res, part, "sdc",
                               "%s: in %u of %u SDC probes no result had a majority among the "
                               "blocks of identical deterministic work: the GPU computes "
                               "inconsistently (which SMs are right cannot be told)",
                               who, g->sdc_no_majority, g->sdc_probes);
    }
    free(list);
}

bool burn_sdc_injection_seen(const burn_gpu_t *g)
{
    return g->sdc_inject_sm >= 0 && (unsigned)g->sdc_inject_sm < g->sdc_sm_cap &&
           g->sdc_sm_off[g->sdc_inject_sm] > 0;
}

/* ---- SDC probe: the GPUs of a model ---------------------------------------------------------- */

/* Votes over the GPUs in idx (one model) probe by probe; counts per GPU the probes in which it
 * was the odd one out (odd) or in which the GPUs disagreed without a majority (split). */
static void s_vote_gpus(const burn_gpu_t *gpus, const size_t *idx, size_t k, unsigned *odd,
                        unsigned *split, unsigned *probes)
{
    unsigned common = UINT32_MAX;
    for (size_t i = 0; i < k; i++)
        if (gpus[idx[i]].sdc_probes < common)
            common = gpus[idx[i]].sdc_probes;
    *probes = common;
    sdc_sample_t *s = xcalloc(k, sizeof *s);
    for (unsigned p = 0; p < common; p++) {
        size_t m = 0;
        for (size_t i = 0; i < k; i++)
            if (gpus[idx[i]].sdc_digest[p]) /* a GPU without its own majority sits this out */
                s[m++] = (sdc_sample_t){(uint32_t)i, 0, gpus[idx[i]].sdc_digest[p]};
        sdc_vote_t v;
        sdc_vote(s, m, &v);
        for (size_t o = 0; o < v.n_odd; o++)
            odd[v.odd[o].unit]++;
        if (!v.majority && v.agree < m)
            for (size_t i = 0; i < m; i++)
                split[s[i].unit]++;
        sdc_vote_clear(&v);
    }
    free(s);
}

void burn_judge_sdc_gpus(fb_result_t *res, const char *host, const burn_gpu_t *gpus, size_t n,
                         bool *fail)
{
    bool *done = xcalloc(n ? n : 1, sizeof *done);
    size_t *idx = xcalloc(n ? n : 1, sizeof *idx);
    unsigned *odd = xcalloc(n ? n : 1, sizeof *odd), *split = xcalloc(n ? n : 1, sizeof *split);
    for (size_t a = 0; a < n; a++) {
        if (done[a] || !gpus[a].sdc_probes)
            continue;
        size_t k = 0;
        for (size_t b = a; b < n; b++)
            if (!done[b] && gpus[b].sdc_probes && !strcmp(gpus[a].name, gpus[b].name)) {
                done[b] = true;
                idx[k++] = b;
            }
        if (k < 2)
            continue;
        unsigned probes = 0;
        memset(odd, 0, n * sizeof *odd);
        memset(split, 0, n * sizeof *split);
        s_vote_gpus(gpus, idx, k, odd, split, &probes);
        for (size_t i = 0; i < k; i++) {
            const burn_gpu_t *g = &gpus[idx[i]];
            char part[160];
            snprintf(part, sizeof part, "%s/gpu%d", host, g->device);
            if (odd[i]) {
                *fail = true;
                fb_result_add_findingf(res, part, "sdc",
                                       "gpu%d (%s, PCI %s): its SDC probe result differs from "
                                       "the other %zu %s GPUs of this task in %u of %u probes "
                                       "(identical deterministic work and inputs on every GPU)",
                                       g->device, g->name, g->pci, k - 1, g->name, odd[i], probes);
            } else if (split[i]) {
                *fail = true;
                fb_result_add_findingf(res, part, "sdc",
                                       "gpu%d (%s, PCI %s): the %zu %s GPUs of this task disagree "
                                       "on the SDC probe's result in %u of %u probes with no "
                                       "majority; one of them computes wrong, which cannot be told "
                                       "with so few GPUs",
                                       g->device, g->name, g->pci, k, g->name, split[i], probes);
            }
        }
    }
    free(done);
    free(idx);
    free(odd);
    free(split);
}
