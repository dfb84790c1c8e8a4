/* SPDX-License-Identifier: Apache-2.0 */
/* gpuburn's setup of one GPU (gpuburn_internal.h): its memory (operands, as many result
 * buffers as mem_fraction allows), the operands and the known-answer reference, the library's
 * plan tuned for this GEMM, where the per-GEMM checksums run (beside the GEMMs on a few SMs, or
 * after each GEMM) and the SDC probe. */
#include "gpuburn_internal.h"

/* ---- setup ----------------------------------------------------------------------------------- */

static int s_alloc(gpu_thread_t *t, void **p, size_t bytes, const char *what)
{
    gpuError_t err = gpuMalloc(p, bytes);
    if (err != gpuSuccess) {
        (void)gpuGetLastError();
        *p = NULL;
        char text[96];
        snprintf(text, sizeof text, "allocating %s (%.1f MiB)", what, (double)bytes / 1048576.0);
        return burn__gpu_fail(t, BURN_GPU_SETUP_ERROR, text, err);
    }
    t->g->mem_bytes += bytes;
    return 0;
}

/* Times up to BURN_TUNE_CANDIDATES algorithms of plan gemm on the burn operands and keeps the
 * fastest; *ms gets one GEMM's time. -EIO when none runs (blas_gemm_error says why). */
static int s_tune(gpu_thread_t *t, blas_gemm_t *gemm, double *ms_out)
{
    int n_cand = blas_gemm_candidates(gemm);
    if (n_cand > BURN_TUNE_CANDIDATES)
        n_cand = BURN_TUNE_CANDIDATES;
    int best = -1;
    float best_ms = 0;
    for (int i = 0; i < n_cand; i++) {
        blas_gemm_choose(gemm, i);
        int rc = blas_gemm_run(gemm, t->a, t->b, t->c[0]); /* warm-up */
        TRY_SETUP(t, gpuEventRecord(t->ev_start, t->stream), "recording an event");
        for (int r = 0; rc == 0 && r < 3; r++)
            rc = blas_gemm_run(gemm, t->a, t->b, t->c[0]);
        TRY_SETUP(t, gpuEventRecord(t->ev_stop, t->stream), "recording an event");
        TRY_SETUP(t, gpuEventSynchronize(t->ev_stop), "timing GEMM algorithms");
        float ms = 0;
        TRY_SETUP(t, gpuEventElapsedTime(&ms, t->ev_start, t->ev_stop), "timing GEMM algorithms");
        if (rc == 0 && (best < 0 || ms < best_ms)) {
            best = i;
            best_ms = ms;
        }
    }
    if (best < 0)
        return -EIO;
    blas_gemm_choose(gemm, best);
    *ms_out = best_ms / 3;
    return 0;
}

/* GEMMs per batch: about BURN_BATCH_S of GPU time. */
static void s_set_batch(gpu_thread_t *t, double gemm_ms)
{
    double per_batch = BURN_BATCH_S * 1000.0 / (gemm_ms > 0 ? gemm_ms : 1);
    t->batch = per_batch < 1 ? 1 : (size_t)per_batch;
}

/* The fewest SMs to try giving the checksums beside the GEMMs, from one check's time on one SM
 * (0: after each GEMM on the GEMM stream). Auto: the fewest that finish a check in 70% of a
 * GEMM's time, so the checks keep up with the GEMMs also when the clocks drop under load; none
 * when that takes more than 1/8 of the SMs. Explicit: abft_sms, up to half the SMs. */
static unsigned s_checks_sms(const gpu_thread_t *t, double one_sm_ms)
{
    const burn_config_t *cfg = &t->run->cfg;
    if (cfg->abft_sms >= 0)
        return (unsigned)(cfg->abft_sms < t->sms / 2 ? cfg->abft_sms : t->sms / 2);
    if (FB_GPU_HIP || t->gemm_ms <= 0 || t->sms < 16)
        return 0;
    double need = ceil(one_sm_ms / (0.7 * t->gemm_ms));
    unsigned s = need < 1 ? 1u : (unsigned)need;
    return s <= (unsigned)t->sms / 8 ? s : 0;
}

/* The GEMM plan on all SMs but `reserved`, tuned; NULL (and why) when the library cannot. */
static blas_gemm_t *s_narrow_plan(gpu_thread_t *t, unsigned reserved, double *ms, char *why,
                                  size_t len)
{
    const burn_config_t *cfg = &t->run->cfg;
    blas_gemm_t *narrow = NULL;
    if (blas_gemm_new_on_sms(t->blas, cfg->dtype, cfg->matrix, t->sms - (int)reserved, &narrow,
                             why, len))
        return NULL;
    if (s_tune(t, narrow, ms)) {
        snprintf(why, len, "%s", blas_gemm_error(narrow));
        blas_gemm_destroy(&narrow);
    }
    return narrow;
}

/* Auto: among the first few SM counts from `fewest` up, the one whose GEMM plan is fastest (the
 * GEMM often loses nothing on a few SMs less, when its tiles still take the same number of waves,
 * and much on one SM more); *ms its GEMM time. Returns that plan, NULL when none could be made. */
static blas_gemm_t *s_best_narrow_plan(gpu_thread_t *t, unsigned *reserved, double *ms, char *why,
                                       size_t len)
{
    const burn_config_t *cfg = &t->run->cfg;
    unsigned last = cfg->abft_sms >= 0 ? *reserved : *reserved + 4;
    if (last > (unsigned)t->sms / 8 && cfg->abft_sms < 0)
        last = (unsigned)t->sms / 8;
    blas_gemm_t *best = NULL;
    for (unsigned s = *reserved; s <= last; s++) {
        double s_ms = 0;
        blas_gemm_t *plan = s_narrow_plan(t, s, &s_ms, why, len);
        if (!plan)
            continue;
        worker_log(t->run->ctx, "gpu%d checksums: GEMM on %d SMs %.3f ms (%+.2f%% against all %d)",
                   t->g->device, t->sms - (int)s, s_ms, 100 * (s_ms / t->gemm_ms - 1), t->sms);
        if (!best || s_ms < 0.998 * *ms) { /* fewer SMs for the checks unless clearly faster */
            blas_gemm_destroy(&best);
            best = plan;
            *ms = s_ms;
            *reserved = s;
        } else {
            blas_gemm_destroy(&plan);
        }
    }
    return best;
}

/* The per-GEMM checksums: references of the operands, then where the checks run and the burn's
 * plan (one that leaves SMs to them, tuned again). */
static int s_setup_abft(gpu_thread_t *t)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    char why[256] = "";
    int rc = abft_new(t->stream, cfg->dtype, cfg->matrix, t->a, t->b, t->sms, &t->abft, why,
                      sizeof why);
    if (rc) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return rc;
    }
    g->mem_bytes += abft_bytes(t->abft);
    double one = 0, all = 0;
    TRY_SETUP(t, abft_time(t->abft, t->c[0], 1, &one), "timing a GEMM check");
    TRY_SETUP(t, abft_time(t->abft, t->c[0], (unsigned)t->sms, &all), "timing a GEMM check");
    unsigned reserved = s_checks_sms(t, one);
    t->burn_ms = t->gemm_ms;
    if (reserved) {
        /* Kept when the GEMM on fewer SMs loses less than a check after each GEMM would cost. */
        double narrow_ms = 0;
        blas_gemm_t *narrow = s_best_narrow_plan(t, &reserved, &narrow_ms, why, sizeof why);
        double loss = narrow ? narrow_ms / t->gemm_ms - 1 : 0, inline_cost = all / t->gemm_ms;
        if (!narrow) {
            worker_log(run->ctx, "gpu%d checksums: the GEMM cannot leave SMs free (%s); checks "
                       "run after each GEMM", g->device, why);
            reserved = 0;
        } else if (cfg->abft_sms < 0 && loss >= inline_cost) {
            worker_log(run->ctx, "gpu%d checksums: the GEMM on %d SMs loses %.2f%%, a check after "
                       "each GEMM costs about %.2f%%: checks run after each GEMM", g->device,
                       t->sms - (int)reserved, 100 * loss, 100 * inline_cost);
            blas_gemm_destroy(&narrow);
            reserved = 0;
        } else {
            t->gemm_burn = narrow;
            t->burn_ms = narrow_ms;
        }
    }
    TRY_SETUP(t, abft_start(t->abft, reserved, t->n_c), "starting the checksums");
    g->abft = true;
    g->abft_sms = reserved;
    double rms_a, rms_b;
    abft_operand_rms(t->abft, &rms_a, &rms_b);
    burn_tol_t tol = abft_tol(t->abft);
    double elem = sqrt((double)cfg->matrix) * rms_a * rms_b;
    double sum = burn_abft_sum_rms(cfg->matrix, BURN_ABFT_BLOCK, rms_a, rms_b);
    g->abft_threshold = burn_abft_threshold(tol, sum) / elem;
    char where[160];
    if (reserved)
        snprintf(where, sizeof where, "on %u SMs beside the GEMMs, which get the other %d "
                 "(GEMM %.3f ms there, %.3f ms on all)", reserved, t->sms - (int)reserved,
                 t->burn_ms, t->gemm_ms);
    else
        snprintf(where, sizeof where, "after each GEMM on its stream (GEMM %.3f ms)", t->gemm_ms);
    worker_log(run->ctx,
               "gpu%d checksums of every burn GEMM: sums of %u rows and of %u columns against "
               "(e^T A)B and A(Be), tolerance %.4g + %.3g |ref| (operand RMS %.4f, %.4f): a "
               "single-element error above %.4g = %.3f of an element's RMS is always found; one "
               "check %.3f ms on 1 SM, %.3f ms on %d; checks run %s",
               g->device, BURN_ABFT_BLOCK, BURN_ABFT_BLOCK, tol.atol, tol.rtol, rms_a, rms_b,
               g->abft_threshold * elem, g->abft_threshold, one, all, t->sms, where);
    return 0;
}

static int s_setup_sdc(gpu_thread_t *t)
{
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &t->run->cfg;
    char why[256] = "";
    int rc = sdc_probe_new(t->sms, &t->sdc, why, sizeof why);
    if (rc) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return rc;
    }
    g->sdc_gpu_sms = (unsigned)t->sms;
    if (t->inject && cfg->inject == BURN_INJECT_SDC) {
        g->sdc_inject_sm = (int)(fb_mix64(cfg->inject_seed) % (uint64_t)(t->sms > 0 ? t->sms : 1));
        g->injected = BURN_INJECT_SDC;
        worker_log(t->run->ctx, "gpu%d: inject_corrupt=sdc: the probe's blocks on SM %d report a "
                   "wrong result", g->device, g->sdc_inject_sm);
    }
    return 0;
}

int burn__setup(gpu_thread_t *t)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    const uint64_t n = cfg->matrix, n2 = n * n;
    const burn_storage_t in = burn_in_storage(cfg->dtype), out = burn_out_storage(cfg->dtype);
    g->matrix = n;

    TRY_SETUP(t, gpuSetDevice(g->device), "selecting the GPU");
    gpuDeviceProp prop;
    TRY_SETUP(t, gpuGetDeviceProperties(&prop, g->device), "reading GPU properties");
    fb_strlcpy(g->name, prop.name, sizeof g->name);
    if (gpuDeviceGetPCIBusId(g->pci, (int)sizeof g->pci, g->device) != gpuSuccess)
        snprintf(g->pci, sizeof g->pci, "unknown");
    for (char *p = g->pci; *p; p++) /* the runtimes differ in case; sysfs writes lower case */
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p - 'A' + 'a');
    (void)gpuDeviceGetAttribute(&t->sms, gpuDevAttrMultiProcessorCount, g->device);
    TRY_SETUP(t, gpuStreamCreateWithFlags(&t->stream, gpuStreamNonBlocking), "creating a stream");
    TRY_SETUP(t, gpuEventCreate(&t->ev_start), "creating an event");
    TRY_SETUP(t, gpuEventCreate(&t->ev_stop), "creating an event");
    for (int i = 0; i < 2; i++)
        TRY_SETUP(
            t,
            gpuEventCreateWithFlags(&t->ev_batch[i], gpuEventBlockingSync | gpuEventDisableTiming),
            "creating an event");
    TRY_SETUP(t, gpuEventCreateWithFlags(&t->ev_done, gpuEventBlockingSync | gpuEventDisableTiming),
              "creating an event");

    char why[256] = "";
    if (blas_open(t->stream, &t->blas, why, sizeof why)) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return -EIO;
    }
    const char *unsupported = blas_unsupported(t->blas, cfg->dtype);
    if (unsupported) {
        g->state = BURN_GPU_UNSUPPORTED;
        snprintf(g->error, sizeof g->error, "%s", unsupported);
        return -ENOTSUP;
    }
    int rc = blas_gemm_new(t->blas, cfg->dtype, n, &t->gemm, why, sizeof why);
    if (rc) {
        g->state = rc == -ENOTSUP ? BURN_GPU_UNSUPPORTED : BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return rc;
    }

    /* Memory: the fixed buffers, then as many results as fit in mem_fraction of what was free. */
    size_t free_b = 0, total_b = 0;
    TRY_SETUP(t, gpuMemGetInfo(&free_b, &total_b), "reading free GPU memory");
    const size_t in_bytes = n2 * burn_storage_size(in), out_bytes = n2 * burn_storage_size(out);
    const size_t fixed = 4 * in_bytes + out_bytes + n2 * sizeof(float) +
                         2 * sizeof(burn_counters_t) +
                         (cfg->abft ? abft_bytes_needed(cfg->dtype, n) : 0);
    const double budget = (double)free_b * cfg->mem_fraction;
    double room = (budget - (double)fixed) / (double)out_bytes;
    if (room < 2) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error,
                 "%.1f GiB free x mem_fraction %.2f leaves no room for 2 result matrices of "
                 "%.0f MiB next to the operands (%.0f MiB): lower matrix",
                 (double)free_b / 1073741824.0, cfg->mem_fraction, (double)out_bytes / 1048576.0,
                 (double)fixed / 1048576.0);
        return -ENOMEM;
    }
    if (s_alloc(t, &t->a, in_bytes, "operand A") || s_alloc(t, &t->b, in_bytes, "operand B") ||
        s_alloc(t, &t->ka, in_bytes, "known-answer A") ||
        s_alloc(t, &t->kb, in_bytes, "known-answer B") ||
        s_alloc(t, (void **)&t->kref, n2 * sizeof(float), "known-answer reference") ||
        s_alloc(t, &t->kout, out_bytes, "known-answer result") ||
        s_alloc(t, (void **)&t->d_cnt, 2 * sizeof(burn_counters_t), "counters"))
        return -ENOMEM;
    TRY_SETUP(t, gpuMallocHost((void **)&t->h_cnt, 2 * sizeof(burn_counters_t)),
              "allocating pinned host memory");
    size_t want = (size_t)room;
    t->c = (void **)xcalloc(want, sizeof *t->c);
    while (t->n_c < want) {
        if (gpuMalloc(&t->c[t->n_c], out_bytes) != gpuSuccess) {
            (void)gpuGetLastError(); /* fewer buffers than computed: take what there is */
            t->c[t->n_c] = NULL;
            break;
        }
        t->n_c++;
        g->mem_bytes += out_bytes;
    }
    g->c_buffers = t->n_c;
    if (t->n_c < 2) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error,
                 "only %zu result matrices of %.0f MiB could be allocated: lower matrix", t->n_c,
                 (double)out_bytes / 1048576.0);
        return -ENOMEM;
    }

    /* Operands, known-answer operands and their reference. */
    const int range = burn_kat_range(cfg->dtype, n);
    const unsigned stride = burn_kat_row_stride(n);
    burn__fill_operands(t, in, n, range, stride);
    TRY_SETUP(t, gpuGetLastError(), "launching the setup kernels");
    TRY_SETUP(t, gpuStreamSynchronize(t->stream), "filling the operands");
    if (t->inject && run->cfg.inject == BURN_INJECT_SYSTEMATIC) {
        /* After the reference: every known-answer GEMM from now on is identically wrong. */
        burn__reset_counters(t);
        burn__inject(t, in, t->ka, n2, (int)BURN_INJECT_SYSTEMATIC, 0.0, (size_t)(n2 / 3), 0u,
                     &t->d_cnt[1]);
        TRY_SETUP(t, gpuStreamSynchronize(t->stream), "injecting a systematic error");
        g->injected = BURN_INJECT_SYSTEMATIC;
        worker_log(run->ctx, "gpu%d: inject_corrupt=systematic: one known-answer operand changed",
                   g->device);
    }
    if (s_tune(t, t->gemm, &t->gemm_ms)) {
        if (g->state == BURN_GPU_OK) {
            g->state = BURN_GPU_SETUP_ERROR;
            snprintf(g->error, sizeof g->error, "no GEMM algorithm runs: %s",
                     blas_gemm_error(t->gemm));
        }
        return -EIO;
    }
    t->gemm_burn = t->gemm;
    t->burn_ms = t->gemm_ms;
    if ((cfg->abft && s_setup_abft(t)) || (cfg->sdc && s_setup_sdc(t)))
        return -EIO;
    s_set_batch(t, t->burn_ms);
    snprintf(g->blas, sizeof g->blas, "%s, %s", blas_name(t->blas),
             blas_gemm_describe(t->gemm_burn));
    worker_log(run->ctx,
               "gpu%d %s (PCI %s): %s %" PRIu64 "^3 via %s; %zu result matrices of %.0f MiB "
               "(%.1f of %.1f GiB free), known-answer integers up to %d%s",
               g->device, g->name, g->pci, burn_dtype_name(cfg->dtype), n, g->blas, t->n_c,
               (double)out_bytes / 1048576.0, (double)g->mem_bytes / 1073741824.0,
               (double)free_b / 1073741824.0, range,
               stride > 1 ? " (reference on a subset of rows)" : "");
    return 0;
}
