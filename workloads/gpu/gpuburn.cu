/* SPDX-License-Identifier: Apache-2.0 */
/* The gpuburn workload: sustained GEMM load on the matrix units of every selected GPU at once,
 * one host thread per GPU, with the results verified three ways once per interval.
 *
 * Each GPU holds two random operands A and B (uniform in [-1, 1), every mantissa bit toggling)
 * and as many result matrices C[0..] as fit in mem_fraction of its free memory, and runs the same
 * GEMM C[i] = A^T B into C[0], C[1], ... round robin through blas.h (cuBLASLt or rocBLAS), in
 * batches of about 50 ms kept two deep so the GPU never waits for the host. At the end of every
 * interval, on the GPU, with the results reduced to a few counters:
 *   1. every C buffer is scanned for NaN/Inf;
 *   2. every C[i] is compared with C[0]: repeats of one GEMM must agree (within a tolerance far
 *      below any corruption worth reporting), so a transient fault shows as a disagreement;
 *   3. a known-answer GEMM runs through the same plan on integer operands whose product is exact
 *      in fp32, and is compared with a reference computed once at start by an independent simple
 *      kernel on the ordinary cores: a fault that repeats identically every time (which 2 cannot
 *      see) shows here.
 * Beyond these, every burn GEMM's result is checked by block checksums against references from
 * the operands before its buffer is written again (abft.h; abft=false turns it off), and once per
 * interval the SDC probe (sdc.h) runs identical deterministic work on every SM, whose results must
 * agree bit for bit between the SMs and between the GPUs of a model (sdc_probe=false turns it
 * off). TFLOPS per interval come from events around the burn GEMMs (with their checks when these
 * run on the GEMM stream). Before the burn every GPU times a plain loop of the same GEMM into one
 * buffer for about 2 s, unchecked, on all SMs (gpuN.blas_peak_tflops), so the burn rate with its
 * checks can be read against the library's own peak. Setup, peak and burn phases start on
 * all GPUs together. The decisions (tolerances, floors, metrics, findings, verdict) are plain C in
 * host/burn_verify.c, host/burn_abft.c, host/sdc_vote.c, host/burn_judge.c and
 * host/burn_fidelity.c; test-only corruption (inject_corrupt) goes into the first selected GPU so
 * the finding must name that one. A GPU's setup is in gpuburn_setup.cu, the kernels in
 * gpuburn_kernels.cu (gpuburn_internal.h); this file has the peak, the burn and the threads. */
#include "gpuburn_internal.h"

/* ---- small helpers --------------------------------------------------------------------------- */

static void s_gate_wait(gate_t *g)
{
    pthread_mutex_lock(&g->lock);
    unsigned gen = g->generation;
    if (++g->arrived >= g->expected) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cond);
    } else {
        while (gen == g->generation)
            pthread_cond_wait(&g->cond, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
}

static void s_gate_expect(gate_t *g, size_t n)
{
    pthread_mutex_lock(&g->lock);
    g->expected = n;
    if (g->arrived && g->arrived >= n) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cond);
    }
    pthread_mutex_unlock(&g->lock);
}

static void s_sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

static double s_gemm_flops(uint64_t n)
{
    return 2.0 * (double)n * (double)n * (double)n;
}

/* ---- peak and burn --------------------------------------------------------------------------- */

/* Queues count GEMMs into buffers next, next+1, ... (round robin); returns 0 or -EIO. */
static int s_queue(gpu_thread_t *t, size_t count, size_t *next, bool one_buffer)
{
    blas_gemm_t *gemm = one_buffer ? t->gemm : t->gemm_burn;
    const bool check = !one_buffer && t->abft;
    for (size_t i = 0; i < count; i++) {
        const size_t b = one_buffer ? 0 : *next;
        void *c = t->c[b];
        if (check)
            TRY_RUN(t, abft_before_gemm(t->abft, t->seq), "ordering a GEMM after its buffer's check");
        if (blas_gemm_run(gemm, t->a, t->b, c)) {
            t->g->state = BURN_GPU_RUN_ERROR;
            snprintf(t->g->error, sizeof t->g->error, "%s", blas_gemm_error(gemm));
            return -EIO;
        }
        if (check)
            TRY_RUN(t, abft_after_gemm(t->abft, c, t->seq, (uint32_t)b), "queuing a GEMM check");
        if (!one_buffer) {
            t->seq++;
            *next = (*next + 1) % t->n_c;
        }
    }
    return 0;
}

/* Runs GEMM batches until the monotonic clock reaches until_s, never more than two batches in
 * flight; *count gets the GEMMs queued. ev_start/ev_stop bracket them. */
static int s_run_until(gpu_thread_t *t, double until_s, size_t *next, bool one_buffer,
                       uint64_t *count, float *ms)
{
    *count = 0;
    TRY_RUN(t, gpuEventRecord(t->ev_start, t->stream), "recording an event");
    for (unsigned j = 0;; j++) {
        if (s_queue(t, t->batch, next, one_buffer))
            return -EIO;
        *count += t->batch;
        TRY_RUN(t, gpuEventRecord(t->ev_batch[j & 1], t->stream), "recording an event");
        if (j > 0)
            TRY_RUN(t, gpuEventSynchronize(t->ev_batch[(j - 1) & 1]), "running GEMMs");
        if (fb_mono_s() >= until_s)
            break;
    }
    TRY_RUN(t, gpuEventRecord(t->ev_stop, t->stream), "recording an event");
    TRY_RUN(t, gpuEventSynchronize(t->ev_stop), "running GEMMs");
    TRY_RUN(t, gpuEventElapsedTime(ms, t->ev_start, t->ev_stop), "timing GEMMs");
    return 0;
}

static int s_peak(gpu_thread_t *t)
{
    size_t next = 0;
    uint64_t count = 0;
    float ms = 0;
    t->phase = PHASE_PEAK;
    if (s_run_until(t, fb_mono_s() + BURN_PEAK_WARM_S, &next, true, &count, &ms) ||
        s_run_until(t, fb_mono_s() + BURN_PEAK_S, &next, true, &count, &ms))
        return -EIO;
    if (ms > 0)
        t->g->peak_tflops = (double)count * s_gemm_flops(t->run->cfg.matrix) / (ms * 1e-3) / 1e12;
    return 0;
}

/* "C[3] row 5 col 9 = 1.5, C[0] has 0.75" for a mismatch key: reads the two elements back. */
static void s_describe(gpu_thread_t *t, uint64_t key, const void *ref_buf, burn_storage_t ref_st,
                       const char *ref_name, bool kat, char *out, size_t len)
{
    const burn_config_t *cfg = &t->run->cfg;
    burn_storage_t st = burn_out_storage(cfg->dtype);
    size_t esz = burn_storage_size(st), e = burn_key_element(key), b = burn_key_buffer(key);
    uint64_t got_raw = 0, ref_raw = 0;
    const void *got_buf = kat ? t->kout : t->c[b < t->n_c ? b : 0];
    char where[96];
    burn_format_key(key, cfg->matrix, where, sizeof where);
    if (kat) /* the known-answer result is one buffer of its own */
        snprintf(where, sizeof where, "row %" PRIu64 " col %" PRIu64, (uint64_t)(e % cfg->matrix),
                 (uint64_t)(e / cfg->matrix));
    bool read = gpuMemcpy(&got_raw, (const char *)got_buf + e * esz, esz, gpuMemcpyDeviceToHost) ==
                gpuSuccess;
    if (ref_buf)
        read = read && gpuMemcpy(&ref_raw, (const char *)ref_buf + e * burn_storage_size(ref_st),
                                 burn_storage_size(ref_st), gpuMemcpyDeviceToHost) == gpuSuccess;
    if (!read) {
        snprintf(out, len, "%s", where);
        return;
    }
    double got = burn_load(&got_raw, 0, st);
    if (ref_buf)
        snprintf(out, len, "%s%s = %.9g, %s %.9g", kat ? "known-answer " : "", where, got, ref_name,
                 burn_load(&ref_raw, 0, ref_st));
    else
        snprintf(out, len, "%s%s = %.9g", kat ? "known-answer " : "", where, got);
}

/* The interval's checksum counters and test-only flips into g, with a log line per flip. */
static int s_collect_checksums(gpu_thread_t *t, unsigned interval)
{
    burn_gpu_t *g = t->g;
    burn_abft_state_t *state = (burn_abft_state_t *)xmalloc(sizeof *state); /* 4.6 KB */
    burn_abft_injection_t inj[BURN_ABFT_MAX_INJECTIONS];
    size_t n_inj = 0;
    gpuError_t err = abft_collect(t->abft, state, inj, &n_inj);
    if (err != gpuSuccess) {
        free(state);
        return burn__gpu_fail(t, BURN_GPU_RUN_ERROR, "reading the checksum counters", err);
    }
    burn_gpu_add_abft(g, interval, t->run->cfg.matrix, state, inj, n_inj);
    for (size_t i = 0; i < n_inj; i++) {
        if (inj[i].bit < 0)
            worker_log(t->run->ctx, "gpu%d: inject_corrupt=gemm: GEMM %" PRIu64 " has no element "
                       "with a suitable bit near the chosen one; not corrupted", g->device,
                       inj[i].gemm);
        else
            worker_log(t->run->ctx, "gpu%d: inject_corrupt=gemm: GEMM %" PRIu64 " (C[%u]) row %"
                       PRIu64 " col %" PRIu64 ": bit %d flipped, %.9g -> %.9g (by %.4g; tolerance "
                       "there %.4g)", g->device, inj[i].gemm, inj[i].buffer, inj[i].row,
                       inj[i].col, inj[i].bit, inj[i].before, inj[i].after,
                       fabs(inj[i].after - inj[i].before), inj[i].bound);
    }
    t->last_checked = state->checked;
    t->last_bad = state->gemms_bad;
    memcpy(&t->last_ratio, &state->max_ratio_bits, sizeof t->last_ratio);
    free(state);
    return 0;
}

/* inject_corrupt=gemm: picks cfg.inject_gemms (interval, GEMM) pairs from the seed; a GEMM is
 * taken among the first quarter of the interval's expected GEMMs, so it is reached even when the
 * GPU slows down. */
static void s_plan_injections(gpu_thread_t *t, unsigned n_intervals)
{
    const burn_config_t *cfg = &t->run->cfg;
    burn_gpu_t *g = t->g;
    for (unsigned k = 0; k < cfg->inject_gemms; k++) {
        uint64_t h = fb_mix64(cfg->inject_seed + k + 1);
        unsigned it = (unsigned)(h % n_intervals);
        double len_ms = (double)cfg->interval_ms;
        if (len_ms > (double)cfg->duration_ms - (double)it * (double)cfg->interval_ms)
            len_ms = (double)cfg->duration_ms - (double)it * (double)cfg->interval_ms;
        double expect = 0.25 * len_ms / (t->burn_ms > 0 ? t->burn_ms : 1);
        uint64_t span = expect < 1 ? 1 : (uint64_t)expect;
        t->inj_interval[k] = it;
        t->inj_offset[k] = fb_mix64(h) % span;
    }
    g->abft_planned = cfg->inject_gemms;
    g->injected = BURN_INJECT_GEMM;
    worker_log(t->run->ctx, "gpu%d: inject_corrupt=gemm: %u GEMM(s) of random intervals get one "
               "flipped bit before their check (inject_seed=%" PRIu64 ")", g->device,
               cfg->inject_gemms, cfg->inject_seed);
}

/* Arms the planned flips of interval it, relative to the GEMMs queued so far. */
static void s_arm_injections(gpu_thread_t *t, unsigned it)
{
    const burn_config_t *cfg = &t->run->cfg;
    for (unsigned k = 0; k < cfg->inject_gemms; k++)
        if (t->inj_interval[k] == it)
            abft_arm_injection(t->abft, t->seq + t->inj_offset[k], cfg->inject_seed ^ (k + 1));
}

/* The verification at the end of an interval; written = GEMMs since the burn began. */
static int s_verify(gpu_thread_t *t, unsigned interval, uint64_t written, size_t last)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    const uint64_t n = cfg->matrix, n2 = n * n;
    const burn_storage_t out = burn_out_storage(cfg->dtype);
    const size_t valid = written < t->n_c ? (size_t)written : t->n_c;

    if (t->abft && s_collect_checksums(t, interval))
        return -EIO;
    burn__reset_counters(t);
    if (t->inject && interval == 0 &&
        (cfg->inject == BURN_INJECT_FLIP || cfg->inject == BURN_INJECT_NAN)) {
        /* Into the last buffer written, never C[0] (the one the others are compared with). */
        size_t victim = last == 0 && valid > 1 ? 1 : last;
        burn__inject(t, out, t->c[victim], n2, (int)cfg->inject, burn_result_rms(n) / 2,
                     (size_t)(n2 / 2 + 12345) % n2, (uint32_t)victim, &t->d_cnt[0]);
        g->injected = cfg->inject;
    }
    burn_tol_t tol = burn_tol_repeat(cfg->dtype, n);
    burn__launch_check(t, out, false, t->c[0], NULL, n2, tol, 0, &t->d_cnt[0]);
    for (size_t i = 1; i < valid; i++)
        burn__launch_check(t, out, false, t->c[i], t->c[0], n2, tol, (uint32_t)i, &t->d_cnt[0]);
    if (blas_gemm_run(t->gemm_burn, t->ka, t->kb, t->kout)) {
        g->state = BURN_GPU_RUN_ERROR;
        snprintf(g->error, sizeof g->error, "known-answer GEMM: %s",
                 blas_gemm_error(t->gemm_burn));
        return -EIO;
    }
    burn__launch_check(t, out, true, t->kout, t->kref, n2, burn_tol_kat(cfg->dtype), 0, &t->d_cnt[1]);
    TRY_RUN(t, gpuGetLastError(), "launching verification kernels");
    TRY_RUN(t,
            gpuMemcpyAsync(t->h_cnt, t->d_cnt, 2 * sizeof(burn_counters_t), gpuMemcpyDeviceToHost,
                           t->stream),
            "reading verification counters");
    TRY_RUN(t, gpuEventRecord(t->ev_done, t->stream), "recording an event");
    TRY_RUN(t, gpuEventSynchronize(t->ev_done), "verifying results");

    const burn_counters_t *rep = &t->h_cnt[0], *kat = &t->h_cnt[1];
    if (rep->mismatches && !g->repeat_detail[0])
        s_describe(t, rep->first_mismatch, t->c[0], out, "C[0] has", false, g->repeat_detail,
                   sizeof g->repeat_detail);
    if (rep->nonfinite && !g->nonfinite_detail[0])
        s_describe(t, rep->first_nonfinite, NULL, out, "", false, g->nonfinite_detail,
                   sizeof g->nonfinite_detail);
    else if (kat->nonfinite && !g->nonfinite_detail[0])
        s_describe(t, kat->first_nonfinite, NULL, out, "", true, g->nonfinite_detail,
                   sizeof g->nonfinite_detail);
    if (kat->mismatches && !g->kat_detail[0])
        s_describe(t, kat->first_mismatch, t->kref, BURN_ST_FP32, "exact answer", true,
                   g->kat_detail, sizeof g->kat_detail);
    burn_counters_add(&g->repeat, rep);
    burn_counters_add(&g->kat, kat);
    g->kat_checked++;
    if (t->sdc) {
        const sdc_sample_t *samples = NULL;
        size_t n_samples = 0;
        TRY_RUN(t,
                sdc_probe_run(t->sdc, t->stream, BURN_SEED_SDC + interval, g->sdc_inject_sm,
                              &samples, &n_samples, &g->sdc_ms),
                "running the SDC probe");
        burn_gpu_add_sdc(g, samples, n_samples);
    }
    return 0;
}

/* SMs the SDC probe has named so far. */
static unsigned s_odd_sms(const burn_gpu_t *g)
{
    unsigned n = 0;
    for (unsigned sm = 0; sm < g->sdc_sm_cap; sm++)
        n += g->sdc_sm_off[sm] > 0;
    return n;
}

static void s_burn(gpu_thread_t *t)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    const double t0 = fb_mono_s(), end = t0 + (double)cfg->duration_ms / 1000.0;
    const double interval_s = (double)cfg->interval_ms / 1000.0;
    const unsigned n_intervals =
        (unsigned)((cfg->duration_ms + cfg->interval_ms - 1) / cfg->interval_ms);
    size_t next = 0;
    uint64_t written = 0;
    t->phase = PHASE_BURN;
    if (t->inject && cfg->inject == BURN_INJECT_GEMM && t->abft)
        s_plan_injections(t, n_intervals);
    for (unsigned it = 0; it < n_intervals; it++) {
        if (t->inject && cfg->inject == BURN_INJECT_GEMM && t->abft)
            s_arm_injections(t, it);
        double until = t0 + interval_s * (it + 1);
        if (until > end || it + 1 == n_intervals)
            until = end;
        uint64_t count = 0;
        float ms = 0;
        if (s_run_until(t, until, &next, false, &count, &ms))
            return;
        written += count;
        g->gemms += count;
        double tflops = ms > 0 ? (double)count * s_gemm_flops(cfg->matrix) / (ms * 1e-3) / 1e12 : 0;
        burn_gpu_add_interval(g, tflops);
        t->last_tflops = tflops;
        uint64_t before_rep = g->repeat.mismatches,
                 before_nan = g->repeat.nonfinite + g->kat.nonfinite,
                 before_kat = g->kat.mismatches;
        if (s_verify(t, it, written, (next + t->n_c - 1) % t->n_c))
            return;
        char checks[160] = "", sdc[96] = "";
        if (t->abft)
            snprintf(checks, sizeof checks,
                     "; checksums of %" PRIu64 " GEMMs: %" PRIu64 " bad (largest %.3f of "
                     "tolerance)",
                     t->last_checked, t->last_bad, (double)t->last_ratio);
        if (t->sdc)
            snprintf(sdc, sizeof sdc, "; SDC probe %.1f ms over %u SMs, %u odd SM(s) so far",
                     g->sdc_ms, g->sdc_sms, s_odd_sms(g));
        worker_log(run->ctx,
                   "gpu%d interval %u/%u: %.1f TFLOPS (%" PRIu64 " GEMMs in %.2f s); %" PRIu64
                   " miscompares over %zu buffers, %" PRIu64 " NaN/Inf, known answer %s%s%s",
                   g->device, it + 1, n_intervals, tflops, count, ms / 1000.0,
                   g->repeat.mismatches - before_rep, (size_t)(written < t->n_c ? written : t->n_c),
                   g->repeat.nonfinite + g->kat.nonfinite - before_nan,
                   g->kat.mismatches == before_kat ? "ok" : "WRONG", checks, sdc);
    }
}

/* ---- threads --------------------------------------------------------------------------------- */

static void s_teardown(gpu_thread_t *t)
{
    if (t->stream)
        (void)gpuStreamSynchronize(t->stream);
    abft_destroy(&t->abft);
    sdc_probe_destroy(&t->sdc);
    if (t->gemm_burn != t->gemm)
        blas_gemm_destroy(&t->gemm_burn);
    t->gemm_burn = NULL;
    blas_gemm_destroy(&t->gemm);
    blas_close(&t->blas);
    for (size_t i = 0; t->c && i < t->n_c; i++)
        (void)gpuFree(t->c[i]);
    free(t->c);
    t->c = NULL;
    void *bufs[] = {t->a, t->b, t->ka, t->kb, t->kout, t->kref, t->d_cnt};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            (void)gpuFree(bufs[i]);
    if (t->h_cnt)
        (void)gpuFreeHost(t->h_cnt);
    gpuEvent_t evs[] = {t->ev_start, t->ev_stop, t->ev_batch[0], t->ev_batch[1], t->ev_done};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            (void)gpuEventDestroy(evs[i]);
    if (t->stream)
        (void)gpuStreamDestroy(t->stream);
    (void)gpuGetLastError();
}

static void *s_gpu_main(void *arg)
{
    gpu_thread_t *t = (gpu_thread_t *)arg;
    run_t *run = t->run;
    bool ok = burn__setup(t) == 0;
    if (!ok)
        t->phase = PHASE_DONE; /* for progress: nothing more from this GPU */
    s_gate_wait(&run->gate);   /* everyone set up: peak together */
    if (ok)
        ok = s_peak(t) == 0;
    if (!ok)
        t->phase = PHASE_DONE;
    s_gate_wait(&run->gate); /* burn together */
    if (ok)
        s_burn(t);
    s_teardown(t);
    t->phase = PHASE_DONE;
    run->finished++;
    return NULL;
}

/* Reports progress until every GPU thread is done. */
static void s_watch(run_t *run)
{
    const char *dt = burn_dtype_name(run->cfg.dtype);
    double burn_start = 0, duration = (double)run->cfg.duration_ms / 1000.0;
    while (run->finished.load() < run->n) {
        int phase = PHASE_DONE;
        double sum = 0;
        size_t burning = 0;
        for (size_t i = 0; i < run->n; i++) {
            int p = run->threads[i].phase.load();
            if (p < phase)
                phase = p;
            if (p == PHASE_BURN) {
                burning++;
                sum += run->threads[i].last_tflops.load();
            }
        }
        if (burning && burn_start == 0)
            burn_start = fb_mono_s();
        if (phase == PHASE_SETUP)
            worker_progress(run->ctx, 0, "gpuburn %s: setting up %zu GPU(s)", dt, run->n);
        else if (phase == PHASE_PEAK)
            worker_progress(run->ctx, 0, "gpuburn %s: measuring the BLAS peak", dt);
        else if (burning) {
            double f = (fb_mono_s() - burn_start) / duration;
            worker_progress(run->ctx, f < 0.99 ? f : 0.99,
                            "gpuburn %s on %zu GPU(s): %.1f TFLOPS (sum of the last intervals)", dt,
                            burning, sum);
        }
        s_sleep_s(0.5);
    }
}

static fb_verdict_t s_run(worker_ctx_t *ctx)
{
    fb_result_t *res = worker_result(ctx);
    /* gpuN is the PCI bus order index, as nvidia-smi, NVML and the inventory number GPUs. */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    run_t *run = new run_t();
    run->ctx = ctx;
    if (burn_config_parse(ctx, &run->cfg)) {
        delete run;
        return FB_VERDICT_ERROR;
    }
    int visible = 0;
    gpuError_t err = gpuGetDeviceCount(&visible);
    if (err != gpuSuccess || visible <= 0) {
        delete run;
        return gpu_no_devices(ctx, "gpuburn", FB_GPU_VENDOR, err != gpuSuccess ? gpuGetErrorString(err) : "no devices");
    }
    int *devs = NULL;
    size_t n = 0;
    int rc = gpu_parse_devices(run->cfg.devices, visible, &devs, &n);
    if (rc) {
        fb_result_set_error(res, "gpuburn: devices '%s' %s (%d GPU(s) visible: 0-%d)",
                            run->cfg.devices,
                            rc == -ENODEV ? "names a GPU that is not there"
                                          : "must be all or a list of distinct indices",
                            visible, visible - 1);
        delete run;
        return FB_VERDICT_ERROR;
    }
    run->n = n;
    run->gpus = (burn_gpu_t *)xcalloc(n, sizeof *run->gpus);
    run->threads = new gpu_thread_t[n]();
    pthread_mutex_init(&run->gate.lock, NULL);
    pthread_cond_init(&run->gate.cond, NULL);
    run->gate.expected = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        run->gpus[i].device = devs[i];
        run->gpus[i].sdc_inject_sm = -1;
        run->threads[i].run = run;
        run->threads[i].g = &run->gpus[i];
        run->threads[i].inject = i == 0 && run->cfg.inject != BURN_INJECT_NONE;
    }
    free(devs);
    worker_log(ctx,
               "gpuburn: %s %" PRIu64 "^3 on %zu GPU(s) for %.0f s, verified every %.1f s; "
               "mem_fraction %.2f; checksums of every GEMM %s; SDC probe %s%s%s",
               burn_dtype_name(run->cfg.dtype), run->cfg.matrix, n,
               (double)run->cfg.duration_ms / 1000.0, (double)run->cfg.interval_ms / 1000.0,
               run->cfg.mem_fraction, run->cfg.abft ? "on" : "off (abft=false)",
               run->cfg.sdc ? "on" : "off (sdc_probe=false)",
               run->cfg.inject ? "; inject_corrupt=" : "",
               run->cfg.inject ? burn_inject_name(run->cfg.inject) : "");

#ifdef BURN_TELEMETRY
    telemetry_t *telemetry = telemetry_start(ctx, 1.0);
#endif
    size_t started = 0;
    for (size_t i = 0; i < n; i++) {
        if (pthread_create(&run->threads[i].tid, NULL, s_gpu_main, &run->threads[i])) {
            burn_gpu_t *g = &run->gpus[i];
            g->state = BURN_GPU_SETUP_ERROR;
            snprintf(g->error, sizeof g->error, "cannot start a host thread for it");
            run->threads[i].phase = PHASE_DONE;
            run->finished++;
            continue;
        }
        run->threads[i].started = true;
        started++;
    }
    s_gate_expect(&run->gate, started);
    s_watch(run);
    for (size_t i = 0; i < n; i++)
        if (run->threads[i].started)
            pthread_join(run->threads[i].tid, NULL);
    int faults = 0;
#ifdef BURN_TELEMETRY
    faults = telemetry_stop(&telemetry, ctx);
    if (faults < 0) {
        worker_log(ctx, "gpuburn: telemetry unavailable (%s)", strerror(-faults));
        faults = 0;
    }
#endif

    fb_verdict_t verdict = burn_judge(res, worker_node(ctx), &run->cfg, run->gpus, n, faults);
    char *summary = burn_summary(&run->cfg, run->gpus, n, verdict);
    worker_log(ctx, "%s", summary);
    free(summary);

    for (size_t i = 0; i < n; i++)
        burn_gpu_clear(&run->gpus[i]);
    free(run->gpus);
    delete[] run->threads;
    pthread_mutex_destroy(&run->gate.lock);
    pthread_cond_destroy(&run->gate.cond);
    delete run;
    return verdict;
}

/* Metrics as "gpu0: tflops_median=689.3 TFLOPS, ..." lines, one per GPU and one for the rest, so
 * that a run read from stdout alone shows everything the result file holds. */
static void s_log_metrics(worker_ctx_t *ctx, const fb_result_t *res)
{
    char *lines[65] = {NULL}; /* gpu0..gpu63, then the overall ones */
    for (size_t i = 0; i < res->n_metrics; i++) {
        const fb_metric_t *m = &res->metrics[i];
        int gpu = -1, used = 0;
        const char *name = m->name;
        if (sscanf(m->name, "gpu%d.%n", &gpu, &used) == 1 && used > 0 && gpu >= 0 && gpu < 64)
            name += used;
        else
            gpu = 64;
        char *line = lines[gpu];
        lines[gpu] = xasprintf("%s%s%s=%.6g%s%s", line ? line : "", line ? ", " : "", name,
                               m->value, m->unit && *m->unit ? " " : "", m->unit ? m->unit : "");
        free(line);
    }
    for (int i = 0; i <= 64; i++) {
        if (!lines[i])
            continue;
        if (i < 64)
            worker_log(ctx, "gpuburn metrics gpu%d: %s", i, lines[i]);
        else
            worker_log(ctx, "gpuburn metrics: %s", lines[i]);
        free(lines[i]);
    }
}

fb_verdict_t gpuburn_run(worker_ctx_t *ctx)
{
    fb_verdict_t verdict = s_run(ctx);
    fb_result_t *res = worker_result(ctx);
    s_log_metrics(ctx, res);
    for (size_t i = 0; i < res->n_findings; i++)
        worker_log(ctx, "gpuburn finding %s: %s", res->findings[i].part, res->findings[i].what);
    worker_log(ctx, "gpuburn verdict %s%s%s", fb_verdict_name(verdict), res->error ? ": " : "",
               res->error ? res->error : "");
    worker_progress(ctx, 1.0, "gpuburn %s", fb_verdict_name(verdict));
    return verdict;
}
