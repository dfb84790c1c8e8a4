/* SPDX-License-Identifier: Apache-2.0 */
/* GPU telemetry around a workload, the backend-neutral core. A sampler thread reads every GPU's
 * sensors through a tel_backend_t (NVML or ROCm SMI: telemetry_nvml.c, telemetry_rocm_smi.c) once
 * per interval and sends them to the timeline, waiting for Xid events between samples where the
 * backend has them; a kernel-log watcher (telemetry_klog.c) keeps the lines that name a fault.
 * Error counters are read at start and at stop, and the difference, the log lines and the sensor
 * records become metrics and findings that name the part — a GPU by index and PCI address. The
 * same pieces serve the health sweep, which reads the counters and the log as they are before any
 * load. The helpers the backends share are here too (telemetry_impl.h). */
#include "telemetry_impl.h"

#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S_CLOCK_BINS 8192     /* SM clock histogram, 1 MHz bins, for the median */
#define S_XID_WAIT_MS 200     /* longest wait for an Xid event before looking at the stop flag */
#define S_LOADED_FRACTION 0.5 /* a sample at >= half the power limit counts as "under load" */

/* ---- throttle reasons ------------------------------------------------------------------------ */

const char *telemetry_throttle_names(uint64_t mask, char *buf, size_t len)
{
    static const char *const names[] = {
        "gpu_idle",       "applications_clocks", "sw_power_cap",        "hw_slowdown",
        "sync_boost",     "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake",
        "display_clocks",
    };
    size_t used = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (mask == 0) {
        fb_strlcpy(buf, "none", len);
        return buf;
    }
    for (unsigned b = 0; b < 64; b++) {
        if (!(mask >> b & 1))
            continue;
        char unknown[24];
        const char *name = b < FB_ARRAY_LEN(names) ? names[b] : NULL;
        if (!name) {
            snprintf(unknown, sizeof unknown, "0x%llx", 1ULL << b);
            name = unknown;
        }
        int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", name);
        if (n < 0 || (size_t)n >= len - used) {
            buf[used] = '\0';
            break;
        }
        used += (size_t)n;
    }
    return buf;
}

/* ---- counter diffs --------------------------------------------------------------------------- */

static bool s_known(const tel_counters_t *c, tel_counter_t k)
{
    return c->known >> k & 1;
}

/* The increase of counter k, 0 when it is not known in both or went down (a driver reload). */
static uint64_t s_delta(const tel_counters_t *b, const tel_counters_t *a, tel_counter_t k)
{
    if (!s_known(b, k) || !s_known(a, k) || a->value[k] <= b->value[k])
        return 0;
    return a->value[k] - b->value[k];
}

int telemetry_counters_diff(fb_result_t *r, const char *part, const char *pci,
                            const tel_counters_t *b, const tel_counters_t *a, const char *during)
{
    int fatal = 0;
    if (!during)
        during = "during the run";
    if (a->lost && !b->lost) {
        fb_result_add_findingf(r, part, "gpu",
                               "GPU at PCI %s became inaccessible %s (fallen off the bus or lost)",
                               pci, during);
        fatal++;
    }
    /* Uncorrected ECC: the volatile count where known, else the lifetime count. */
    bool vol = s_known(b, TEL_ECC_UE_VOLATILE) && s_known(a, TEL_ECC_UE_VOLATILE);
    uint64_t ue = s_delta(b, a, vol ? TEL_ECC_UE_VOLATILE : TEL_ECC_UE_AGGREGATE);
    uint64_t ce = s_delta(b, a, vol ? TEL_ECC_CE_VOLATILE : TEL_ECC_CE_AGGREGATE);
    if (ue) {
        fb_result_add_findingf(r, part, "gpu",
                               "uncorrectable ECC errors +%" PRIu64
                               " %s (PCI %s; corrected +%" PRIu64 ")",
                               ue, during, pci, ce);
        fatal++;
    } else if (ce) {
        fb_result_add_findingf(r, part, "gpu", "corrected ECC errors +%" PRIu64 " %s (PCI %s)", ce,
                               during, pci);
    }
    uint64_t sbe = s_delta(b, a, TEL_RETIRED_SBE), dbe = s_delta(b, a, TEL_RETIRED_DBE);
    if (sbe || dbe) {
        fb_result_add_findingf(r, part, "gpu",
                               "memory pages retired %s: +%" PRIu64 " for double-bit/uncorrected "
                               "errors, +%" PRIu64 " for repeated single-bit errors (PCI %s)",
                               during, dbe, sbe, pci);
        fatal++;
    }
    if (s_delta(b, a, TEL_RETIRED_PENDING)) {
        fb_result_add_findingf(r, part, "gpu",
                               "a page retirement became pending %s: it takes effect at the next "
                               "GPU reset (PCI %s)",
                               during, pci);
        fatal++;
    }
    uint64_t failed = s_delta(b, a, TEL_RETIRED_FAILED);
    if (failed) {
        fb_result_add_findingf(r, part, "gpu",
                               "%" PRIu64 " bad memory pages could not be retired %s (PCI %s)",
                               failed, during, pci);
        fatal++;
    }
    uint64_t rc = s_delta(b, a, TEL_REMAP_CORRECTABLE), ru = s_delta(b, a, TEL_REMAP_UNCORRECTABLE);
    if (ru) {
        fb_result_add_findingf(r, part, "gpu",
                               "memory rows remapped %s: +%" PRIu64
                               " for uncorrectable errors, +%" PRIu64
                               " for correctable errors (PCI %s)",
                               during, ru, rc, pci);
        fatal++;
    } else if (rc) {
        fb_result_add_findingf(
            r, part, "gpu", "memory rows remapped for correctable errors +%" PRIu64 " %s (PCI %s)",
            rc, during, pci);
    }
    if (s_delta(b, a, TEL_REMAP_PENDING)) {
        fb_result_add_findingf(r, part, "gpu",
                               "a row remap became pending %s: the GPU needs a reset (PCI %s)",
                               during, pci);
        fatal++;
    }
    if (s_delta(b, a, TEL_REMAP_FAILURE)) {
        fb_result_add_findingf(r, part, "gpu",
                               "a row remap failed %s: the GPU has no spare rows left (PCI %s)",
                               during, pci);
        fatal++;
    }
    uint64_t replay = s_delta(b, a, TEL_PCIE_REPLAY);
    if (replay)
        fb_result_add_findingf(r, part, "link",
                               "PCIe replays +%" PRIu64 " %s on the link of PCI %s (CRC errors on "
                               "the link: riser, slot or cable)",
                               replay, during, pci);
    static const char *const nv_names[TEL_NVLINK_N] = {"replays", "recoveries", "CRC flit errors",
                                                       "CRC data errors"};
    for (unsigned l = 0; l < TEL_MAX_NVLINKS; l++) {
        char what[256];
        size_t used = 0;
        what[0] = '\0';
        for (unsigned k = 0; k < TEL_NVLINK_N; k++) {
            if (!(b->nvlink_known[l] >> k & 1) || !(a->nvlink_known[l] >> k & 1) ||
                a->nvlink[l][k] <= b->nvlink[l][k])
                continue;
            int n = snprintf(what + used, sizeof what - used, "%s%s +%" PRIu64, used ? ", " : "",
                             nv_names[k], a->nvlink[l][k] - b->nvlink[l][k]);
            if (n > 0 && (size_t)n < sizeof what - used)
                used += (size_t)n;
        }
        if (used) {
            char *lpart = xasprintf("%s/nvlink%u", part, l);
            fb_result_add_findingf(r, lpart, "link", "NVLink %u of PCI %s: %s %s", l, pci, what,
                                   during);
            free(lpart);
        }
    }
    return fatal;
}

/* ---- for the backends ----------------------------------------------------------------------- */

void tel_sample_unknown(tel_sample_t *s)
{
    *s = (tel_sample_t){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0, false, false};
}

void tel_counter_set(tel_counters_t *c, tel_counter_t k, uint64_t v)
{
    c->value[k] = v;
    c->known |= 1u << k;
}

static void s_swap_bytes(unsigned char *a, unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

/* Orders the first n GPUs of info by PCI address, moving the handles along. An insertion sort:
 * a few dozen GPUs at most, and qsort cannot move two arrays together. */
static void s_sort_by_pci(tel_gpu_info_t *info, void *handles, size_t handle_size, size_t n)
{
    unsigned char *h = handles;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(info[j - 1].pci, info[j].pci) > 0; j--) {
            tel_gpu_info_t t = info[j];
            info[j] = info[j - 1];
            info[j - 1] = t;
            s_swap_bytes(h + (j - 1) * handle_size, h + j * handle_size, handle_size);
        }
}

bool tel_backend_fill(tel_backend_t *b, int count_rc, unsigned count,
                      bool (*found)(tel_backend_t *b, unsigned index, size_t slot),
                      tel_gpu_info_t *info, void *handles, size_t handle_size, char *why,
                      size_t whylen)
{
    if (count_rc < 0 || count == 0) {
        if (why && whylen)
            snprintf(why, whylen, "%s sees no GPU", b->name);
        return false;
    }
    if (count > TEL_MAX_GPUS)
        count = TEL_MAX_GPUS;
    size_t got = 0;
    for (unsigned i = 0; i < count; i++)
        if (found(b, i, got))
            got++;
    s_sort_by_pci(info, handles, handle_size, got);
    b->n_gpus = got;
    return true;
}

/* Appends " key=value" to buf when value is non-empty; blanks become '_'. */
void tel_append_kv(char *buf, size_t len, const char *key, const char *value)
{
    size_t used = strlen(buf);
    if (!value || !*value || used + 3 >= len)
        return;
    int n = snprintf(buf + used, len - used, " %s=%s", key, value);
    if (n < 0 || (size_t)n >= len - used) {
        buf[used] = '\0';
        return;
    }
    for (char *p = buf + used + 1 + strlen(key) + 1; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = '_';
}

/* The distinct values of per-GPU strings, comma-separated, into out. */
static void s_distinct(char (*values)[64], size_t n, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!values[i][0])
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(values[i], values[j]);
        size_t used = strlen(out);
        if (!seen && used + strlen(values[i]) + 2 < len)
            snprintf(out + used, len - used, "%s%s", used ? "," : "", values[i]);
    }
}

void tel_append_vbios(tel_backend_t *b, char *buf, size_t len,
                      void (*vbios)(tel_backend_t *b, size_t gpu, char *out, size_t outlen))
{
    char(*vb)[64] = xcalloc(b->n_gpus ? b->n_gpus : 1, sizeof *vb);
    for (size_t i = 0; i < b->n_gpus; i++)
        vbios(b, i, vb[i], sizeof vb[i]);
    char all[256];
    s_distinct(vb, b->n_gpus, all, sizeof all);
    tel_append_kv(buf, len, "gpu_vbios", all);
    free(vb);
}

/* ---- opening a backend ----------------------------------------------------------------------- */

tel_backend_t *telemetry_backend_open(char *why, size_t whylen)
{
    char nv[256] = "", rs[256] = "";
    tel_backend_t *b = telemetry_nvml_backend(NULL, nv, sizeof nv);
    if (!b)
        b = telemetry_rocm_backend(NULL, rs, sizeof rs);
    if (!b && why && whylen)
        snprintf(why, whylen, "%s; %s", nv, rs);
    return b;
}

void telemetry_backend_destroy(tel_backend_t **b_p)
{
    if (!b_p || !*b_p)
        return;
    (*b_p)->destroy(*b_p);
    *b_p = NULL;
}

/* ---- the telemetry object -------------------------------------------------------------------- */

typedef struct {
    int backend; /* index in the backend, -1 when the library does not see this GPU */
    tel_gpu_info_t info;
    tel_counters_t before;
    size_t samples;
    double temp_max, mem_temp_max, power_sum, power_max, power_limit;
    size_t power_n;
    double sm_min;
    uint32_t *sm_hist;
    size_t sm_n;
    uint64_t throttle_or;
    size_t throttle_fault_samples, throttle_samples;
    size_t loaded; /* samples at >= S_LOADED_FRACTION of the power limit */
    unsigned loaded_gen_max, loaded_width_min;
    bool lost_seen;
} gpu_stats_t;

struct telemetry {
    worker_ctx_t *ctx;
    double interval_s;
    tel_backend_t *backend;
    tel_pci_t gpus[TEL_MAX_GPUS];
    gpu_stats_t stats[TEL_MAX_GPUS];
    size_t n_gpus;
    tel_klog_t *klog;
    tel_klog_watch_t *watch;
    pthread_t sampler;
    bool sampler_running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    double started_s;
};

static void s_metric(fb_metric_t *m, size_t *n, const char *name, double v, const char *unit)
{
    if (isnan(v))
        return;
    m[*n].name = (char *)name;
    m[*n].value = v;
    m[*n].unit = (char *)unit;
    (*n)++;
}

static void s_sample_gpu(telemetry_t *t, size_t i)
{
    gpu_stats_t *g = &t->stats[i];
    if (g->backend < 0)
        return;
    tel_sample_t s;
    t->backend->sample(t->backend, (size_t)g->backend, &s);
    if (s.lost) {
        if (!g->lost_seen)
            worker_log(t->ctx, "telemetry: gpu%zu (PCI %s) does not answer: lost", i, g->info.pci);
        g->lost_seen = true;
        return;
    }
    g->samples++;
    static const char *const keys[] = {"temp_c",       "mem_temp_c",    "power_w",  "power_limit_w",
                                       "sm_clock_mhz", "mem_clock_mhz", "throttle", "pcie_replay",
                                       "pcie_gen",     "pcie_width"};
    char names[FB_ARRAY_LEN(keys)][48];
    for (size_t k = 0; k < FB_ARRAY_LEN(keys); k++)
        snprintf(names[k], sizeof names[k], "gpu%zu.%s", i, keys[k]);
    fb_metric_t m[FB_ARRAY_LEN(keys)];
    size_t n = 0;
    s_metric(m, &n, names[0], s.temp_c, "C");
    s_metric(m, &n, names[1], s.mem_temp_c, "C");
    s_metric(m, &n, names[2], s.power_w, "W");
    s_metric(m, &n, names[3], s.power_limit_w, "W");
    s_metric(m, &n, names[4], s.sm_clock_mhz, "MHz");
    s_metric(m, &n, names[5], s.mem_clock_mhz, "MHz");
    if (s.has_throttle)
        s_metric(m, &n, names[6], (double)s.throttle, "");
    s_metric(m, &n, names[7], s.pcie_replay, "");
    s_metric(m, &n, names[8], s.pcie_gen, "");
    s_metric(m, &n, names[9], s.pcie_width, "");
    worker_telemetry(t->ctx, m, n);

    if (!isnan(s.temp_c) && s.temp_c > g->temp_max)
        g->temp_max = s.temp_c;
    if (!isnan(s.mem_temp_c) && s.mem_temp_c > g->mem_temp_max)
        g->mem_temp_max = s.mem_temp_c;
    if (!isnan(s.power_w)) {
        g->power_sum += s.power_w;
        g->power_n++;
        if (s.power_w > g->power_max)
            g->power_max = s.power_w;
    }
    if (!isnan(s.power_limit_w))
        g->power_limit = s.power_limit_w;
    if (!isnan(s.sm_clock_mhz)) {
        if (g->sm_n == 0 || s.sm_clock_mhz < g->sm_min)
            g->sm_min = s.sm_clock_mhz;
        long bin = lround(s.sm_clock_mhz);
        g->sm_hist[bin < 0 ? 0 : bin >= S_CLOCK_BINS ? S_CLOCK_BINS - 1 : bin]++;
        g->sm_n++;
    }
    if (s.has_throttle) {
        g->throttle_samples++;
        g->throttle_or |= s.throttle;
        if (s.throttle & TEL_THROTTLE_FAULTS)
            g->throttle_fault_samples++;
    }
    bool loaded = !isnan(s.power_w) && !isnan(s.power_limit_w) && s.power_limit_w > 0 &&
                  s.power_w >= S_LOADED_FRACTION * s.power_limit_w;
    if (loaded) {
        g->loaded++;
        if (!isnan(s.pcie_gen) && s.pcie_gen > g->loaded_gen_max)
            g->loaded_gen_max = (unsigned)s.pcie_gen;
        if (!isnan(s.pcie_width) &&
            (g->loaded_width_min == 0 || s.pcie_width < g->loaded_width_min))
            g->loaded_width_min = (unsigned)s.pcie_width;
    }
}

static bool s_stopping(telemetry_t *t)
{
    pthread_mutex_lock(&t->lock);
    bool stop = t->stop;
    pthread_mutex_unlock(&t->lock);
    return stop;
}

/* Sleeps until the deadline (monotonic seconds) or the stop flag. */
static void s_sleep_until(telemetry_t *t, double deadline)
{
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        double left = deadline - fb_mono_s();
        if (left <= 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double wake = (double)ts.tv_sec + ts.tv_nsec / 1e9 + (left < 0.2 ? left : 0.2);
        ts.tv_sec = (time_t)wake;
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&t->cond, &t->lock, &ts);
    }
    pthread_mutex_unlock(&t->lock);
}

static void *s_sampler_main(void *arg)
{
    telemetry_t *t = arg;
    bool events = t->backend && t->backend->wait_xid;
    double next = fb_mono_s();
    while (!s_stopping(t)) {
        for (size_t i = 0; i < t->n_gpus; i++)
            s_sample_gpu(t, i);
        next += t->interval_s;
        while (!s_stopping(t) && fb_mono_s() < next) {
            if (!events) {
                s_sleep_until(t, next);
                continue;
            }
            double left = next - fb_mono_s();
            int ms = left * 1000 < S_XID_WAIT_MS ? (int)(left * 1000) + 1 : S_XID_WAIT_MS;
            size_t gpu = 0;
            int xid = 0;
            int rc = t->backend->wait_xid(t->backend, ms, &gpu, &xid);
            if (rc == 1) {
                for (size_t i = 0; i < t->n_gpus; i++)
                    if (t->stats[i].backend == (int)gpu) {
                        tel_klog_add_xid(t->klog, i, xid);
                        worker_log(t->ctx, "telemetry: %s reports Xid %d on gpu%zu (PCI %s)",
                                   t->backend->name, xid, i, t->stats[i].info.pci);
                    }
            } else if (rc < 0) {
                events = false;
                worker_log(t->ctx,
                           "telemetry: %s gives no Xid events (%s); Xids come from the "
                           "kernel log only",
                           t->backend->name, strerror(-rc));
            }
        }
        if (fb_mono_s() > next + t->interval_s)
            next = fb_mono_s(); /* fell behind (a slow library call): do not burst */
    }
    return NULL;
}

/* The GPU list: sysfs order, with GPUs only the library sees appended. */
static void s_setup_gpus(telemetry_t *t)
{
    t->n_gpus = telemetry_sysfs_gpus(worker_sysfs_root(t->ctx), t->gpus, TEL_MAX_GPUS);
    for (size_t i = 0; i < t->n_gpus; i++) {
        t->stats[i].backend = -1;
        memcpy(t->stats[i].info.pci, t->gpus[i].pci, sizeof t->gpus[i].pci);
    }
    for (size_t b = 0; t->backend && b < t->backend->n_gpus; b++) {
        tel_gpu_info_t info;
        t->backend->info(t->backend, b, &info);
        size_t slot = t->n_gpus;
        for (size_t i = 0; i < t->n_gpus; i++)
            if (!strcmp(t->gpus[i].pci, info.pci))
                slot = i;
        if (slot == t->n_gpus) {
            if (t->n_gpus == TEL_MAX_GPUS)
                continue;
            memcpy(t->gpus[t->n_gpus++].pci, info.pci, sizeof info.pci);
        }
        t->stats[slot].info = info;
        t->stats[slot].backend = (int)b;
    }
    for (size_t i = 0; i < t->n_gpus; i++)
        t->stats[i].sm_hist = xcalloc(S_CLOCK_BINS, sizeof(uint32_t));
}

telemetry_t *telemetry_start_opts(worker_ctx_t *ctx, const telemetry_opts_t *opts)
{
    telemetry_t *t = xcalloc(1, sizeof *t);
    t->ctx = ctx;
    t->interval_s = opts->interval_s > 0 ? opts->interval_s : 1.0;
    t->started_s = fb_mono_s();
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);

    char why[600] = "";
    t->backend = opts->backend;
    if (!t->backend && !opts->no_libraries)
        t->backend = telemetry_backend_open(why, sizeof why);
    if (!t->backend && !opts->no_libraries)
        worker_log(ctx, "telemetry: no GPU management library (%s); following the kernel log only",
                   why);
    s_setup_gpus(t);
    for (size_t i = 0; i < t->n_gpus; i++)
        if (t->stats[i].backend >= 0)
            t->backend->counters(t->backend, (size_t)t->stats[i].backend, &t->stats[i].before);
    if (t->backend)
        worker_log(ctx, "telemetry: %s, %zu GPU%s, every %.3g s", t->backend->name,
                   t->backend->n_gpus, t->backend->n_gpus == 1 ? "" : "s", t->interval_s);

    t->klog = tel_klog_new(worker_node(ctx), worker_sysfs_root(ctx), t->gpus, t->n_gpus);
    t->watch = tel_klog_watch_start(t->klog, ctx, opts->kmsg_path);

    if (t->backend && t->backend->n_gpus &&
        pthread_create(&t->sampler, NULL, s_sampler_main, t) == 0)
        t->sampler_running = true;
    return t;
}

telemetry_t *telemetry_start(worker_ctx_t *ctx, double interval_s)
{
    telemetry_opts_t opts = {interval_s, NULL, NULL, false};
    return telemetry_start_opts(ctx, &opts);
}

static double s_median(const gpu_stats_t *g)
{
    size_t half = (g->sm_n + 1) / 2, seen = 0;
    for (size_t b = 0; b < S_CLOCK_BINS; b++) {
        seen += g->sm_hist[b];
        if (seen >= half)
            return (double)b;
    }
    return NAN;
}

static void s_set_metric(fb_result_t *r, size_t i, const char *key, double v, const char *unit)
{
    if (isnan(v))
        return;
    char name[64];
    snprintf(name, sizeof name, "gpu%zu.%s", i, key);
    fb_result_set_metric(r, name, v, unit);
}

/* Summary metrics and sensor findings of one GPU. */
static void s_summarise(telemetry_t *t, size_t i, const char *part)
{
    gpu_stats_t *g = &t->stats[i];
    fb_result_t *r = worker_result(t->ctx);
    if (g->samples == 0)
        return;
    s_set_metric(r, i, "samples", (double)g->samples, "");
    s_set_metric(r, i, "temp_max_c", g->temp_max > 0 ? g->temp_max : NAN, "C");
    s_set_metric(r, i, "mem_temp_max_c", g->mem_temp_max > 0 ? g->mem_temp_max : NAN, "C");
    s_set_metric(r, i, "power_mean_w", g->power_n ? g->power_sum / (double)g->power_n : NAN, "W");
    s_set_metric(r, i, "power_max_w", g->power_n ? g->power_max : NAN, "W");
    s_set_metric(r, i, "power_limit_w", g->power_limit > 0 ? g->power_limit : NAN, "W");
    s_set_metric(r, i, "sm_clock_min_mhz", g->sm_n ? g->sm_min : NAN, "MHz");
    s_set_metric(r, i, "sm_clock_median_mhz", g->sm_n ? s_median(g) : NAN, "MHz");
    if (g->throttle_samples) {
        s_set_metric(r, i, "throttle_reasons", (double)g->throttle_or, "");
        char names[256];
        telemetry_throttle_names(g->throttle_or, names, sizeof names);
        worker_log(t->ctx, "telemetry: gpu%zu throttle reasons seen: %s", i, names);
        if (g->throttle_fault_samples) {
            char bad[256];
            telemetry_throttle_names(g->throttle_or & TEL_THROTTLE_FAULTS, bad, sizeof bad);
            fb_result_add_findingf(r, part, "gpu",
                                   "thermal or power-brake throttling (%s) in %zu of %zu samples "
                                   "(PCI %s; max %.0f C, SM clock min %.0f MHz)",
                                   bad, g->throttle_fault_samples, g->throttle_samples, g->info.pci,
                                   g->temp_max, g->sm_n ? g->sm_min : 0.0);
        }
    }
    /* The link under load: idle GPUs lower their PCIe speed, loaded ones must not. */
    if (g->loaded && g->info.pcie_max_gen && g->loaded_gen_max &&
        g->loaded_gen_max < g->info.pcie_max_gen)
        fb_result_add_findingf(r, part, "link",
                               "PCIe link of PCI %s reached only Gen%u under load, below its "
                               "Gen%u (GPU and slot)",
                               g->info.pci, g->loaded_gen_max, g->info.pcie_max_gen);
    if (g->loaded && g->info.pcie_max_width && g->loaded_width_min &&
        g->loaded_width_min < g->info.pcie_max_width)
        fb_result_add_findingf(r, part, "link",
                               "PCIe link of PCI %s ran at x%u under load, below its x%u",
                               g->info.pci, g->loaded_width_min, g->info.pcie_max_width);
}

int telemetry_stop(telemetry_t **t_p, worker_ctx_t *ctx)
{
    if (!t_p || !*t_p)
        return 0;
    telemetry_t *t = *t_p;
    if (!ctx)
        ctx = t->ctx;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    if (t->sampler_running)
        pthread_join(t->sampler, NULL);
    tel_klog_watch_stop(&t->watch, ctx);
    int fatal = 0;
    fb_result_t *r = worker_result(ctx);
    size_t first_finding = r->n_findings;
    const char *node = tel_host(worker_node(ctx));
    for (size_t i = 0; i < t->n_gpus; i++) {
        gpu_stats_t *g = &t->stats[i];
        char *part = xasprintf("%s/gpu%zu", node, i);
        if (g->backend >= 0) {
            s_sample_gpu(t, i); /* one last look: short runs get two samples */
            tel_counters_t after;
            t->backend->counters(t->backend, (size_t)g->backend, &after);
            if (g->lost_seen)
                after.lost = true;
            fatal +=
                telemetry_counters_diff(r, part, g->info.pci, &g->before, &after, "during the run");
            s_summarise(t, i, part);
        }
        free(part);
        free(g->sm_hist);
    }
    fatal += tel_klog_report(t->klog, ctx, TEL_KLOG_LIVE, NULL);
    for (size_t i = first_finding; i < r->n_findings; i++)
        worker_log(ctx, "telemetry: finding %s [%s]: %s", r->findings[i].part, r->findings[i].kind,
                   r->findings[i].what);
    worker_log(ctx, "telemetry: %zu finding%s, %d failing the task", r->n_findings - first_finding,
               r->n_findings - first_finding == 1 ? "" : "s", fatal);
    tel_klog_destroy(&t->klog);
    telemetry_backend_destroy(&t->backend);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
    *t_p = NULL;
    return fatal;
}
