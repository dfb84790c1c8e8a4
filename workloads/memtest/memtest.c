/* SPDX-License-Identifier: Apache-2.0 */
/* The memtest workload: tests host DRAM with the patterns of patterns.c on as much memory as the
 * campaign asks for. One thread per CPU (or as asked), each pinned to a CPU taken round-robin from
 * the NUMA nodes, maps, locks and first-touches its own chunk so the chunk lands on that CPU's
 * node and every node's memory controllers are loaded at once. Threads run the same pattern at the
 * same time and meet at a barrier after each one. A miscompare is reported with its virtual and
 * (as root) physical address, the bits that differed and the pattern; the pages of the
 * miscompares are then retested (stuck or transient) and taken to a DIMM where the machine can say
 * (miscompare.c). EDAC counters read before and after the run name DIMMs that logged errors the
 * patterns themselves did not see. */
#include "memtest.h"
#include "miscompare.h"
#include "patterns.h"
#include "placement.h"
#include "rasdb.h"
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MEMTEST_MAX_DETAILS 32 /* miscompares itemised as findings; the rest are counted */
#define MEMTEST_MAX_THREADS 4096
#define MEMTEST_MAX_FLIPS 1000000 /* inject_bitflips upper bound */
#define MEMTEST_MAX_STUCK 64      /* inject_stuck_bits upper bound */
#define MEMTEST_MAX_RETESTS 1000
#define MEMTEST_DECODE_TIMEOUT_MS 1000
#define MEMTEST_SEED_BITS 53 /* generated seeds fit a double metric exactly */

typedef struct {
    uint64_t size; /* bytes to test, all threads together */
    uint64_t passes;
    uint64_t threads; /* 0: one per usable CPU */
    mt_pattern_t *patterns;
    size_t n_patterns;
    uint64_t seed;
    bool lock;
    uint64_t retests; /* retest rounds per page with miscompares */
    mt_dimmloc_mode_t dimm_mode;
    uint64_t inject_flips; /* 0: no injection */
    uint64_t inject_stuck; /* test-only stuck bits: 0 none */
} config_t;

/* A test-only stuck bit: the word keeps this bit at value whatever is written. */
typedef struct {
    uint64_t *word;
    uint64_t bit, value;
} stuck_t;

typedef struct run run_t;

typedef struct {
    run_t *run;
    pthread_t tid;
    unsigned index;
    int cpu, node;
    size_t bytes; /* the chunk asked for */
    mt_chunk_t chunk;
    size_t flips;   /* bits this thread flips once (test-only) */
    size_t n_stuck; /* bits this thread makes stuck (test-only) */
    stuck_t *stuck;
    mt_ctx_t mt;
    unsigned pass;
    mt_pattern_t pattern;
    uint64_t xor_mask;    /* every bit that differed in any miscompare */
    uint64_t done_sweeps; /* progress bookkeeping (thread 0) */
} thread_t;

struct run {
    worker_ctx_t *ctx;
    const config_t *cfg;
    thread_t *threads;
    size_t n_threads;
    pthread_barrier_t gate; /* threads + main: setup done, then go */
    pthread_barrier_t step; /* threads: one pattern done everywhere */
    atomic_bool abort;
    atomic_size_t n_details;
    mt_detail_t details[MEMTEST_MAX_DETAILS];
    int pagemap_fd;
    uint64_t total_sweeps;
    atomic_size_t flipped;
    uint64_t miscompares, mask; /* all of them, and the OR of their XORs */
    int64_t started_epoch;      /* the task's start, for rasdaemon's records */
};

/* ---- parameters ------------------------------------------------------------------------------ */

/* MemAvailable from ROOT/proc/meminfo, in bytes. */
static int s_mem_available(const char *root, uint64_t *out)
{
    char *path = xasprintf("%s/proc/meminfo", root);
    char *text = fb_read_file(path, NULL);
    int err = errno;
    free(path);
    if (!text)
        return -err;
    int rc = -EINVAL;
    const char *line = strstr(text, "MemAvailable:");
    if (line) {
        char *end = NULL;
        unsigned long long kb = strtoull(line + strlen("MemAvailable:"), &end, 10);
        while (*end == ' ')
            end++;
        if (end != line + strlen("MemAvailable:") && !strncmp(end, "kB", 2)) {
            *out = (uint64_t)kb * 1024;
            rc = 0;
        }
    }
    free(text);
    return rc;
}

/* Records why the parameters were refused; returns -EINVAL for the caller to pass on. */
static int s_fail(worker_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int s_fail(worker_ctx_t *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = xvasprintf(fmt, ap);
    va_end(ap);
    fb_result_set_error(worker_result(ctx), "%s", text);
    free(text);
    return -EINVAL;
}

static int s_parse_size(worker_ctx_t *ctx, config_t *cfg)
{
    const char *text = worker_param(ctx, "size");
    if (!text)
        text = "80%";
    double percent = 0;
    uint64_t bytes = 0, avail = 0;
    if (fb_parse_bytes_or_percent(text, &bytes, &percent))
        return s_fail(ctx,
                      "memtest: size '%s' is neither a byte size (64MiB) nor a percent of "
                      "MemAvailable (80%%)",
                      text);
    int rc = s_mem_available(worker_sysfs_root(ctx), &avail);
    if (percent > 0) {
        if (rc)
            return s_fail(ctx,
                          "memtest: size '%s' needs MemAvailable from %s/proc/meminfo, which "
                          "could not be read",
                          text, worker_sysfs_root(ctx));
        bytes = (uint64_t)((double)avail * percent / 100.0);
    } else if (rc == 0 && bytes > avail) {
        char want[32], have[32];
        fb_format_bytes(bytes, want, sizeof want);
        fb_format_bytes(avail, have, sizeof have);
        return s_fail(ctx,
                      "memtest: size %s exceeds MemAvailable %s; testing it would only "
                      "start swapping or the OOM killer",
                      want, have);
    }
    if (bytes < 4096)
        return s_fail(ctx, "memtest: size '%s' is below the 4 KiB minimum", text);
    cfg->size = bytes;
    return 0;
}

static int s_parse_count(worker_ctx_t *ctx, const char *key, const char *dflt, uint64_t min,
                         uint64_t max, uint64_t *out)
{
    const char *text = worker_param(ctx, key);
    if (!text)
        text = dflt;
    if (fb_parse_uint(text, max, out) || *out < min) {
        return s_fail(ctx, "memtest: %s '%s' must be a whole number from %" PRIu64 " to %" PRIu64,
                      key, text, min, max);
    }
    return 0;
}

/* A test-only injection switch: refused without --allow-fault-injection. */
static int s_parse_injection(worker_ctx_t *ctx, const char *key, uint64_t max, uint64_t *out)
{
    if (!worker_param(ctx, key))
        return 0;
    if (!worker_fault_injection_allowed(ctx))
        return s_fail(ctx, "%s refused: the agent was not started with --allow-fault-injection",
                      key);
    return s_parse_count(ctx, key, "0", 0, max, out);
}

static int s_parse_config(worker_ctx_t *ctx, config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    /* Injection is checked first: a refused switch must never be mistaken for a bad size. */
    if (s_parse_injection(ctx, "inject_bitflips", MEMTEST_MAX_FLIPS, &cfg->inject_flips) ||
        s_parse_injection(ctx, "inject_stuck_bits", MEMTEST_MAX_STUCK, &cfg->inject_stuck))
        return -EINVAL;
    if (s_parse_size(ctx, cfg) || s_parse_count(ctx, "passes", "1", 1, 1000000, &cfg->passes))
        return -EINVAL;
    const char *threads = worker_param(ctx, "threads");
    if (threads && strcmp(threads, "auto") &&
        s_parse_count(ctx, "threads", "auto", 1, MEMTEST_MAX_THREADS, &cfg->threads))
        return -EINVAL;
    const char *seed = worker_param(ctx, "seed");
    if (seed) {
        if (s_parse_count(ctx, "seed", "0", 0, UINT64_MAX, &cfg->seed))
            return -EINVAL;
    } else {
        cfg->seed = fb_mix64(fb_now_ms() ^ ((uint64_t)getpid() << 32) ^ fb_mono_ms()) &
                    ((1ULL << MEMTEST_SEED_BITS) - 1);
    }
    const char *lock = worker_param(ctx, "lock");
    cfg->lock = true;
    if (lock && fb_parse_bool(lock, &cfg->lock))
        return s_fail(ctx, "memtest: lock '%s' must be true or false", lock);
    if (s_parse_count(ctx, "retests", "8", 0, MEMTEST_MAX_RETESTS, &cfg->retests))
        return -EINVAL;
    const char *mode = worker_param(ctx, "dimm_decode");
    cfg->dimm_mode = MT_DIMMLOC_AUTO;
    if (mode && mt_dimmloc_parse_mode(mode, &cfg->dimm_mode))
        return s_fail(ctx, "memtest: dimm_decode '%s' must be auto, passive or off", mode);
    const char *patterns = worker_param(ctx, "patterns");
    char *bad = NULL;
    if (mt_parse_patterns(patterns ? patterns : "all", &cfg->patterns, &cfg->n_patterns, &bad)) {
        char known[512] = "";
        for (int i = 0; i < MT_N_PATTERNS; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? "," : "",
                     mt_pattern_name((mt_pattern_t)i));
        s_fail(ctx, "memtest: unknown pattern '%s' in patterns '%s' (use 'all' or names from %s)",
               bad ? bad : "", patterns, known);
        free(bad);
        return -EINVAL;
    }
    return 0;
}

/* ---- per-thread work ------------------------------------------------------------------------- */

static void s_on_miscompare(mt_ctx_t *mt, const mt_miscompare_t *m)
{
    thread_t *t = mt->user;
    run_t *run = t->run;
    t->xor_mask |= m->expected ^ m->actual;
    size_t i = atomic_fetch_add(&run->n_details, 1);
    if (i >= MEMTEST_MAX_DETAILS)
        return;
    run->details[i] = (mt_detail_t){
        .vaddr = m->addr,
        .phys = mt_phys_addr(run->pagemap_fd, m->addr),
        .expected = m->expected,
        .actual = m->actual,
        .pattern = t->pattern,
        .pass = t->pass,
        .numa_node = t->node,
    };
}

/* Flips this thread's bits; the first n_stuck of them are remembered as stuck, so that the
 * retest finds them again (s_reapply_stuck). */
static void s_on_inject(mt_ctx_t *mt, uint64_t *buf, size_t n_words)
{
    thread_t *t = mt->user;
    uint64_t seed = fb_mix64(t->run->cfg->seed ^ 0x666C6970ULL ^ ((uint64_t)t->index << 40));
    size_t n = t->flips + t->n_stuck;
    size_t *index = xcalloc(n ? n : 1, sizeof *index);
    unsigned *bit = xcalloc(n ? n : 1, sizeof *bit);
    size_t flipped = mt_flip_bits(buf, n_words, n, seed, index, bit);
    for (size_t i = 0; i < t->n_stuck && i < flipped; i++)
        t->stuck[i] = (stuck_t){.word = buf + index[i],
                                .bit = 1ULL << bit[i],
                                .value = buf[index[i]] & (1ULL << bit[i])};
    atomic_fetch_add(&t->run->flipped, flipped);
    free(index);
    free(bit);
}

/* Retest hook (test-only): every stuck bit in the page goes back to its stuck value. */
static void s_reapply_stuck(void *user, uint64_t *page, size_t n_words)
{
    run_t *run = user;
    for (size_t i = 0; i < run->n_threads; i++)
        for (size_t k = 0; k < run->threads[i].n_stuck; k++) {
            const stuck_t *st = &run->threads[i].stuck[k];
            if (st->word && st->word >= page && st->word < page + n_words)
                *st->word = (*st->word & ~st->bit) | st->value;
        }
}

/* Thread 0 speaks for all: the threads run in step, one pattern at a time. */
static void s_on_progress(mt_ctx_t *mt, double fraction)
{
    thread_t *t = mt->user;
    run_t *run = t->run;
    double done = (double)t->done_sweeps + fraction * mt_pattern_sweeps(t->pattern);
    worker_progress(run->ctx, done / (double)run->total_sweeps, "pass %u/%" PRIu64 " %s",
                    t->pass + 1, run->cfg->passes, mt_pattern_name(t->pattern));
}

static void s_test(thread_t *t)
{
    run_t *run = t->run;
    const config_t *cfg = run->cfg;
    size_t n_words = t->chunk.bytes / sizeof(uint64_t);
    for (unsigned pass = 0; pass < cfg->passes; pass++) {
        for (size_t k = 0; k < cfg->n_patterns; k++) {
            t->pass = pass;
            t->pattern = cfg->patterns[k];
            /* Injection goes into the first pattern of the first pass, after its fill. */
            t->mt.inject = (pass == 0 && k == 0 && t->flips + t->n_stuck) ? s_on_inject : NULL;
            t->mt.seed = fb_mix64(cfg->seed ^ ((uint64_t)t->index << 32) ^ pass);
            mt_run_pattern(t->pattern, t->chunk.buf, n_words, &t->mt);
            t->done_sweeps += mt_pattern_sweeps(t->pattern);
            pthread_barrier_wait(&run->step);
        }
    }
}

static void *s_thread_main(void *arg)
{
    thread_t *t = arg;
    run_t *run = t->run;
    mt_chunk_setup(&t->chunk, t->cpu, t->bytes, run->cfg->lock);
    pthread_barrier_wait(&run->gate); /* setup done: main checks every thread */
    pthread_barrier_wait(&run->gate); /* go, or abort */
    if (!atomic_load(&run->abort))
        s_test(t);
    /* The chunk stays mapped: the pages of miscompares are retested from it (s_release). */
    return NULL;
}

/* ---- reporting ------------------------------------------------------------------------------- */

static const char *s_host(worker_ctx_t *ctx)
{
    const char *node = worker_node(ctx);
    return node && *node ? node : "localhost";
}

size_t memtest_edac_report(fb_result_t *result, const char *host, const fb_edac_t *before,
                           const fb_edac_t *after)
{
    size_t cap = after->n_dimms ? after->n_dimms : 1, found = 0;
    fb_edac_change_t *changes = xcalloc(cap, sizeof *changes);
    size_t n = fb_edac_diff(before, after, changes, cap);
    uint64_t ce_dimms = 0, ue_dimms = 0;
    for (size_t i = 0; i < n; i++, found++) {
        /* node/label: the same label names a DIMM slot on every node of a fleet. */
        char *part = xasprintf("%s/%s", host, changes[i].dimm->label);
        fb_result_add_findingf(result, part, "dimm",
                               "EDAC corrected errors +%" PRIu64 ", uncorrected +%" PRIu64
                               " during memtest (%s on %s)",
                               changes[i].ce_delta, changes[i].ue_delta, changes[i].dimm->location,
                               host);
        free(part);
        ce_dimms += changes[i].ce_delta;
        ue_dimms += changes[i].ue_delta;
    }
    free(changes);
    uint64_t ce = after->ce_total > before->ce_total ? after->ce_total - before->ce_total : 0;
    uint64_t ue = after->ue_total > before->ue_total ? after->ue_total - before->ue_total : 0;
    /* Errors the driver could not pin on a DIMM still fail the host. In the csrow layout the DIMM
     * uncorrected counts repeat per channel, so their sum may exceed the total: not unattributed.
     */
    if (ce > ce_dimms || ue > ue_dimms) {
        fb_result_add_findingf(result, host, "node",
                               "EDAC corrected errors +%" PRIu64 ", uncorrected +%" PRIu64
                               " during memtest not attributed to any DIMM",
                               ce > ce_dimms ? ce - ce_dimms : 0,
                               ue > ue_dimms ? ue - ue_dimms : 0);
        found++;
    }
    fb_result_set_metric(result, "edac_ce_delta", (double)ce, "");
    fb_result_set_metric(result, "edac_ue_delta", (double)ue, "");
    return found;
}

static void s_log_lock_failure(run_t *run)
{
    int err = 0;
    for (size_t i = 0; i < run->n_threads && !err; i++)
        err = run->threads[i].chunk.lock_err;
    if (!err)
        return;
    struct rlimit rl = {0, 0};
    char limit[32] = "unknown";
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        if (rl.rlim_cur == RLIM_INFINITY)
            snprintf(limit, sizeof limit, "unlimited");
        else
            fb_format_bytes((uint64_t)rl.rlim_cur, limit, sizeof limit);
    }
    worker_log(run->ctx,
               "memtest: mlock failed (%s) with RLIMIT_MEMLOCK %s; the run continues with "
               "unlocked memory, which the kernel may swap or migrate (raise LimitMEMLOCK or "
               "grant CAP_IPC_LOCK)",
               strerror(err), limit);
}

/* ---- the run --------------------------------------------------------------------------------- */

/* n split over the threads: thread i's share. */
static size_t s_share(uint64_t n, size_t threads, size_t i)
{
    return (size_t)(n / threads + (i < n % threads));
}

static void s_start_threads(run_t *run, const mt_cpu_slot_t *slots, size_t n_slots, size_t chunk)
{
    const config_t *cfg = run->cfg;
    for (size_t i = 0; i < run->n_threads; i++) {
        thread_t *t = &run->threads[i];
        t->run = run;
        t->index = (unsigned)i;
        t->cpu = slots[i % n_slots].cpu;
        t->node = slots[i % n_slots].node;
        t->bytes = chunk;
        t->flips = s_share(cfg->inject_flips, run->n_threads, i);
        t->n_stuck = s_share(cfg->inject_stuck, run->n_threads, i);
        t->stuck = t->n_stuck ? xcalloc(t->n_stuck, sizeof *t->stuck) : NULL;
        t->mt.user = t;
        t->mt.report = s_on_miscompare;
        t->mt.progress = i == 0 ? s_on_progress : NULL;
        if (pthread_create(&t->tid, NULL, s_thread_main, t))
            abort(); /* thread creation failing is host resource exhaustion, like OOM */
    }
}

/* Waits for every thread's setup; returns 0 when all have memory, else the first mmap errno. */
static int s_check_setup(run_t *run)
{
    pthread_barrier_wait(&run->gate);
    int err = 0;
    for (size_t i = 0; i < run->n_threads && !err; i++)
        err = run->threads[i].chunk.map_err;
    bool pin_failed = false;
    for (size_t i = 0; i < run->n_threads; i++)
        pin_failed |= run->threads[i].chunk.pin_err != 0;
    if (pin_failed)
        worker_log(run->ctx, "memtest: could not pin every thread to its CPU; memory may not "
                             "land on the intended NUMA nodes");
    s_log_lock_failure(run);
    return err;
}

static bool s_all_locked(const run_t *run)
{
    if (!run->cfg->lock)
        return false;
    for (size_t i = 0; i < run->n_threads; i++)
        if (run->threads[i].chunk.lock_err)
            return false;
    return true;
}

/* Runs the threads; fills bytes moved, miscompares and the OR of differing bits. Returns 0 or the
 * mmap errno that stopped the run. */
static int s_run_threads(run_t *run, size_t chunk, const mt_cpu_slot_t *slots, size_t n_slots,
                         double *test_s)
{
    pthread_barrier_init(&run->gate, NULL, (unsigned)run->n_threads + 1);
    pthread_barrier_init(&run->step, NULL, (unsigned)run->n_threads);
    s_start_threads(run, slots, n_slots, chunk);
    int err = s_check_setup(run);
    atomic_store(&run->abort, err != 0);
    double t0 = fb_mono_s();
    pthread_barrier_wait(&run->gate);
    for (size_t i = 0; i < run->n_threads; i++)
        pthread_join(run->threads[i].tid, NULL);
    *test_s = fb_mono_s() - t0;
    pthread_barrier_destroy(&run->gate);
    pthread_barrier_destroy(&run->step);
    return err;
}

static void s_set_metrics(run_t *run, uint64_t tested, uint64_t bytes, uint64_t miscompares,
                          double test_s, double elapsed_s, unsigned n_nodes)
{
    fb_result_t *res = worker_result(run->ctx);
    fb_result_set_metric(res, "bytes_tested", (double)tested, "bytes");
    fb_result_set_metric(res, "bandwidth_mbs", test_s > 0 ? (double)bytes / 1e6 / test_s : 0,
                         "MB/s");
    fb_result_set_metric(res, "miscompares", (double)miscompares, "");
    fb_result_set_metric(res, "passes", (double)run->cfg->passes, "");
    fb_result_set_metric(res, "threads", (double)run->n_threads, "");
    fb_result_set_metric(res, "numa_nodes", n_nodes, "");
    fb_result_set_metric(res, "locked", s_all_locked(run) ? 1 : 0, "");
    fb_result_set_metric(res, "seed", (double)run->cfg->seed, "");
    fb_result_set_metric(res, "elapsed_s", elapsed_s, "s");
}

static fb_verdict_t s_finish(worker_ctx_t *ctx, fb_verdict_t v)
{
    worker_result(ctx)->verdict = v;
    return v;
}

/* Tests memory with the threads; returns the miscompares (run->miscompares and run->mask hold
 * them and their bits). The chunks stay mapped for the analysis. */
static uint64_t s_test_memory(run_t *run, const mt_cpu_slot_t *slots, size_t n_slots,
                              unsigned n_nodes, size_t chunk, double started, int *err_out)
{
    const config_t *cfg = run->cfg;
    for (size_t k = 0; k < cfg->n_patterns; k++)
        run->total_sweeps += mt_pattern_sweeps(cfg->patterns[k]) * cfg->passes;
    double test_s = 0;
    *err_out = s_run_threads(run, chunk, slots, n_slots, &test_s);
    if (*err_out)
        return 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < run->n_threads; i++) {
        bytes += run->threads[i].mt.bytes;
        run->miscompares += run->threads[i].mt.miscompares;
        run->mask |= run->threads[i].xor_mask;
    }
    if (cfg->inject_flips || cfg->inject_stuck)
        worker_log(run->ctx,
                   "memtest: fault injection flipped %zu bits in %s of pass 1, "
                   "between its fill and its verify",
                   atomic_load(&run->flipped), mt_pattern_name(cfg->patterns[0]));
    s_set_metrics(run, (uint64_t)chunk * run->n_threads, bytes, run->miscompares, test_s,
                  fb_mono_s() - started, n_nodes);
    char bits[200];
    worker_log(run->ctx, "memtest: %" PRIu64 " miscompares%s%s%s, %.0f MB/s over %.1f s",
               run->miscompares, run->miscompares ? " (bits that differed: " : "",
               run->miscompares ? mt_bit_list(run->mask, bits, sizeof bits) : "",
               run->miscompares ? ")" : "", test_s > 0 ? (double)bytes / 1e6 / test_s : 0, test_s);
    return run->miscompares;
}

/* Retests and locates the pages of the itemised miscompares, then reports them. Runs after the
 * EDAC counters were read: the EDAC decoder adds a corrected error per address it decodes. */
static void s_analyse(run_t *run, size_t page)
{
    const config_t *cfg = run->cfg;
    worker_ctx_t *ctx = run->ctx;
    const char *root = worker_sysfs_root(ctx);
    char *ras_db = xasprintf("%s%s", root, MT_RAS_DB_PATH);
    char *kmsg = *root ? xasprintf("%s/dev/kmsg", root) : NULL;
    mt_analysis_t a = {
        .ctx = ctx,
        .host = s_host(ctx),
        .loc = {.mode = cfg->dimm_mode,
                .root = root,
                .kmsg_path = kmsg,
                .ras_db = ras_db,
                .from = run->started_epoch - 2,
                .to = (int64_t)(fb_now_ms() / 1000) + 2,
                .page_shift = (unsigned)__builtin_ctzll(page),
                .decode_timeout_ms = MEMTEST_DECODE_TIMEOUT_MS},
        .retests = (unsigned)cfg->retests,
        .seed = cfg->seed,
        .pagemap_fd = run->pagemap_fd,
        .page_size = page,
        .hook = cfg->inject_stuck ? s_reapply_stuck : NULL,
        .hook_user = run,
    };
    size_t n = atomic_load(&run->n_details);
    if (n > MEMTEST_MAX_DETAILS)
        n = MEMTEST_MAX_DETAILS;
    mt_page_t *pages = xcalloc(n ? n : 1, sizeof *pages);
    size_t n_pages = mt_analyse_pages(&a, run->details, n, pages);
    mt_report_miscompares(&a, run->details, n, pages, n_pages, run->miscompares, run->mask);
    free(pages);
    free(kmsg);
    free(ras_db);
}

static void s_log_start(run_t *run, size_t chunk, unsigned n_nodes)
{
    const config_t *cfg = run->cfg;
    char size[32];
    fb_format_bytes((uint64_t)chunk * run->n_threads, size, sizeof size);
    worker_log(run->ctx,
               "memtest: %s in %zu threads on %u NUMA node%s, %zu pattern%s, %" PRIu64
               " pass%s, seed %" PRIu64 " (rerun with seed=%" PRIu64 ")",
               size, run->n_threads, n_nodes, n_nodes == 1 ? "" : "s", cfg->n_patterns,
               cfg->n_patterns == 1 ? "" : "s", cfg->passes, cfg->passes == 1 ? "" : "es",
               cfg->seed, cfg->seed);
    if (cfg->inject_flips || cfg->inject_stuck)
        worker_log(run->ctx,
                   "memtest: fault injection armed (test-only): %" PRIu64 " bit flips and %" PRIu64
                   " stuck bits into %s of pass 1",
                   cfg->inject_flips, cfg->inject_stuck, mt_pattern_name(cfg->patterns[0]));
}

/* EDAC snapshot before the run; -ENOENT (no driver) is logged once and is not an error. */
static int s_edac_before(worker_ctx_t *ctx, fb_edac_t *before)
{
    int rc = fb_edac_read(worker_sysfs_root(ctx), before);
    if (rc == -ENOENT)
        worker_log(ctx, "memtest: no EDAC driver loaded; DIMM error counters not compared");
    else if (rc)
        worker_log(ctx,
                   "memtest: EDAC counters unreadable (%s); DIMM error counters not "
                   "compared",
                   strerror(-rc));
    return rc;
}

static size_t s_edac_after(worker_ctx_t *ctx, const fb_edac_t *before)
{
    fb_edac_t after;
    int rc = fb_edac_read(worker_sysfs_root(ctx), &after);
    if (rc) {
        worker_log(ctx, "memtest: EDAC counters unreadable after the run (%s)", strerror(-rc));
        return 0;
    }
    size_t found = memtest_edac_report(worker_result(ctx), s_host(ctx), before, &after);
    fb_edac_clear(&after);
    return found;
}

static void s_note(void *user, const char *line)
{
    worker_log(user, "%s", line);
}

static void s_release(run_t *run)
{
    for (size_t i = 0; i < run->n_threads; i++) {
        mt_chunk_release(&run->threads[i].chunk);
        free(run->threads[i].stuck);
    }
    if (run->pagemap_fd >= 0)
        close(run->pagemap_fd);
    free(run->threads);
    free(run);
}

fb_verdict_t memtest_run(worker_ctx_t *ctx)
{
    double started = fb_mono_s();
    config_t cfg;
    if (s_parse_config(ctx, &cfg)) {
        free(cfg.patterns);
        return s_finish(ctx, FB_VERDICT_ERROR);
    }
    long page_l = sysconf(_SC_PAGESIZE);
    size_t page = page_l > 0 ? (size_t)page_l : 4096;
    mt_cpu_slot_t *slots = NULL;
    size_t n_slots = mt_cpu_slots(worker_sysfs_root(ctx), s_note, ctx, &slots);
    if (n_slots == 0) {
        slots[0] = (mt_cpu_slot_t){0, 0}; /* no usable CPU reported: one thread on CPU 0 */
        n_slots = 1;
    }
    run_t *run = xcalloc(1, sizeof *run);
    run->ctx = ctx;
    run->cfg = &cfg;
    run->started_epoch = (int64_t)(fb_now_ms() / 1000);
    run->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    run->n_threads = mt_thread_count(cfg.size, cfg.threads, n_slots, page);
    run->threads = xcalloc(run->n_threads, sizeof *run->threads);
    size_t chunk = (size_t)(cfg.size / run->n_threads) / page * page;
    unsigned used_nodes =
        mt_count_nodes(slots, run->n_threads < n_slots ? run->n_threads : n_slots);
    s_log_start(run, chunk, used_nodes);
    fb_edac_t before;
    int edac_rc = s_edac_before(ctx, &before);
    int err = 0;
    uint64_t bad = s_test_memory(run, slots, n_slots, used_nodes, chunk, started, &err);
    fb_verdict_t v = bad ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
    if (err) {
        char size[32];
        fb_format_bytes(chunk, size, sizeof size);
        fb_result_set_error(worker_result(ctx), "memtest: could not map %s per thread: %s", size,
                            strerror(err));
        v = FB_VERDICT_ERROR;
    } else {
        if (edac_rc == 0 && s_edac_after(ctx, &before))
            v = FB_VERDICT_FAIL;
        if (bad)
            s_analyse(run, page);
    }
    if (edac_rc == 0)
        fb_edac_clear(&before);
    s_release(run);
    free(slots);
    free(cfg.patterns);
    return s_finish(ctx, v);
}
