/* SPDX-License-Identifier: Apache-2.0 */
/* The memtest workload: tests host DRAM with the patterns of patterns.c on as much memory as the
 * campaign asks for. One thread per CPU (or as asked), each pinned to a CPU taken round-robin from
 * the NUMA nodes, maps, locks and first-touches its own chunk so the chunk lands on that CPU's
 * node and every node's memory controllers are loaded at once. Threads run the same pattern at the
 * same time and meet at a barrier after each one. A miscompare is reported with its virtual and
 * (as root) physical address, the bits that differed and the pattern; EDAC counters read before
 * and after the run name DIMMs that logged errors the patterns themselves did not see. */
#include "memtest.h"
#include "patterns.h"
#include "common/units.h"
#include "common/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MEMTEST_MAX_DETAILS 32 /* miscompares itemised as findings; the rest are counted */
#define MEMTEST_MAX_THREADS 4096
#define MEMTEST_MAX_CPUS 8192     /* size of the CPU sets used for affinity */
#define MEMTEST_MAX_FLIPS 1000000 /* inject_bitflips upper bound */
#define MEMTEST_SEED_BITS 53      /* generated seeds fit a double metric exactly */

typedef struct {
    uint64_t size; /* bytes to test, all threads together */
    uint64_t passes;
    uint64_t threads; /* 0: one per usable CPU */
    mt_pattern_t *patterns;
    size_t n_patterns;
    uint64_t seed;
    bool lock;
    uint64_t inject_flips; /* 0: no injection */
} config_t;

typedef struct {
    int cpu, node;
} cpu_slot_t;

typedef struct {
    const uint64_t *vaddr;
    uint64_t phys; /* 0 when pagemap did not tell */
    uint64_t expected, actual;
    mt_pattern_t pattern;
    unsigned pass;
    int numa_node;
} detail_t;

typedef struct run run_t;

typedef struct {
    run_t *run;
    pthread_t tid;
    unsigned index;
    int cpu, node;
    uint64_t *buf;
    size_t bytes;
    int map_err;  /* errno of mmap, 0 when mapped */
    int lock_err; /* errno of mlock, 0 when locked or not asked */
    int pin_err;  /* errno of sched_setaffinity */
    size_t flips; /* bits this thread injects */
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
    detail_t details[MEMTEST_MAX_DETAILS];
    int pagemap_fd;
    uint64_t total_sweeps;
    atomic_size_t flipped;
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

static int s_parse_config(worker_ctx_t *ctx, config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    /* Injection is checked first: a refused switch must never be mistaken for a bad size. */
    if (worker_param(ctx, "inject_bitflips")) {
        if (!worker_fault_injection_allowed(ctx))
            return s_fail(ctx, "inject_bitflips refused: the agent was not started with "
                               "--allow-fault-injection");
        if (s_parse_count(ctx, "inject_bitflips", "0", 0, MEMTEST_MAX_FLIPS, &cfg->inject_flips))
            return -EINVAL;
    }
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

/* ---- topology -------------------------------------------------------------------------------- */

/* Parses a kernel CPU list ("0-3,8-11") and marks its CPUs as belonging to node. */
static int s_parse_cpulist(const char *text, int node, int *node_of)
{
    const char *p = text;
    while (*p) {
        char *end = NULL;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (end == p)
            return -EINVAL;
        if (*end == '-') {
            p = end + 1;
            hi = strtoul(p, &end, 10);
            if (end == p || hi < lo)
                return -EINVAL;
        }
        for (unsigned long c = lo; c <= hi && c < MEMTEST_MAX_CPUS; c++)
            node_of[c] = node;
        p = end;
        if (*p == ',')
            p++;
        else if (*p && !isspace((unsigned char)*p))
            return -EINVAL;
        while (isspace((unsigned char)*p))
            p++;
    }
    return 0;
}

/* Marks every CPU with its NUMA node from ROOT/sys/devices/system/node/nodeN/cpulist. Returns the
 * number of nodes found (0 without NUMA information). */
static int s_read_nodes(worker_ctx_t *ctx, int *node_of)
{
    char *dir_path = xasprintf("%s/sys/devices/system/node", worker_sysfs_root(ctx));
    DIR *dir = opendir(dir_path);
    int n_nodes = 0;
    struct dirent *de;
    while (dir && (de = readdir(dir))) {
        int node;
        char tail;
        if (sscanf(de->d_name, "node%d%c", &node, &tail) != 1 || node < 0)
            continue;
        char *path = xasprintf("%s/%s/cpulist", dir_path, de->d_name);
        char *list = fb_read_file(path, NULL);
        if (list && s_parse_cpulist(list, node, node_of))
            worker_log(ctx, "memtest: ignoring unparsable %s ('%s')", path, list);
        else if (list)
            n_nodes++;
        free(list);
        free(path);
    }
    if (dir)
        closedir(dir);
    free(dir_path);
    return n_nodes;
}

/* The CPUs this process may run on, each with its node, ordered round-robin over the nodes so that
 * any prefix of the list spreads over every node. */
static size_t s_cpu_slots(worker_ctx_t *ctx, cpu_slot_t **out)
{
    int *node_of = xmalloc(MEMTEST_MAX_CPUS * sizeof *node_of);
    for (int c = 0; c < MEMTEST_MAX_CPUS; c++)
        node_of[c] = -1;
    s_read_nodes(ctx, node_of);
    cpu_set_t *allowed = CPU_ALLOC(MEMTEST_MAX_CPUS);
    size_t set_size = CPU_ALLOC_SIZE(MEMTEST_MAX_CPUS);
    CPU_ZERO_S(set_size, allowed);
    if (sched_getaffinity(0, set_size, allowed))
        for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < MEMTEST_MAX_CPUS; c++)
            CPU_SET_S((size_t)c, set_size, allowed);
    int max_node = 0;
    size_t n = 0;
    cpu_slot_t *cpus = xcalloc(MEMTEST_MAX_CPUS, sizeof *cpus);
    for (int c = 0; c < MEMTEST_MAX_CPUS; c++) {
        if (!CPU_ISSET_S((size_t)c, set_size, allowed))
            continue;
        /* A CPU no node lists (no NUMA in this sysfs) counts as node 0. */
        cpus[n].cpu = c;
        cpus[n].node = node_of[c] < 0 ? 0 : node_of[c];
        if (cpus[n].node > max_node)
            max_node = cpus[n].node;
        n++;
    }
    CPU_FREE(allowed);
    free(node_of);
    /* Round-robin: pass k takes the k-th CPU of every node that has one. */
    cpu_slot_t *slots = xcalloc(n ? n : 1, sizeof *slots);
    bool *used = xcalloc(n ? n : 1, sizeof *used);
    size_t m = 0;
    while (m < n) {
        for (int node = 0; node <= max_node; node++)
            for (size_t i = 0; i < n; i++)
                if (!used[i] && cpus[i].node == node) {
                    used[i] = true;
                    slots[m++] = cpus[i];
                    break;
                }
    }
    free(used);
    free(cpus);
    *out = slots;
    return n;
}

/* Distinct NUMA nodes among the first n slots (the CPUs the threads get). */
static unsigned s_count_nodes(const cpu_slot_t *slots, size_t n)
{
    unsigned count = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && slots[j].node != slots[i].node)
            j++;
        count += j == i;
    }
    return count;
}

/* ---- per-thread work ------------------------------------------------------------------------- */

/* Physical address of vaddr from /proc/self/pagemap: needs CAP_SYS_ADMIN, otherwise the kernel
 * reports PFN 0 and this returns 0. */
static uint64_t s_phys_addr(int fd, const void *vaddr)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t entry = 0;
    if (fd < 0 || page <= 0)
        return 0;
    off_t off = (off_t)((uintptr_t)vaddr / (uintptr_t)page * sizeof entry);
    if (pread(fd, &entry, sizeof entry, off) != (ssize_t)sizeof entry || !(entry >> 63))
        return 0;
    uint64_t pfn = entry & ((1ULL << 55) - 1);
    return pfn ? pfn * (uint64_t)page + (uintptr_t)vaddr % (uintptr_t)page : 0;
}

static void s_on_miscompare(mt_ctx_t *mt, const mt_miscompare_t *m)
{
    thread_t *t = mt->user;
    run_t *run = t->run;
    t->xor_mask |= m->expected ^ m->actual;
    size_t i = atomic_fetch_add(&run->n_details, 1);
    if (i >= MEMTEST_MAX_DETAILS)
        return;
    run->details[i] = (detail_t){
        .vaddr = m->addr,
        .phys = s_phys_addr(run->pagemap_fd, m->addr),
        .expected = m->expected,
        .actual = m->actual,
        .pattern = t->pattern,
        .pass = t->pass,
        .numa_node = t->node,
    };
}

static void s_on_inject(mt_ctx_t *mt, uint64_t *buf, size_t n_words)
{
    thread_t *t = mt->user;
    uint64_t seed = fb_mix64(t->run->cfg->seed ^ 0x666C6970ULL ^ ((uint64_t)t->index << 40));
    atomic_fetch_add(&t->run->flipped, mt_flip_bits(buf, n_words, t->flips, seed, NULL, NULL));
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

static void s_pin(thread_t *t)
{
    cpu_set_t *set = CPU_ALLOC(MEMTEST_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(MEMTEST_MAX_CPUS);
    CPU_ZERO_S(size, set);
    CPU_SET_S((size_t)t->cpu, size, set);
    t->pin_err = sched_setaffinity(0, size, set) ? errno : 0;
    CPU_FREE(set);
}

/* Maps, locks and touches this thread's chunk from its pinned CPU: with the default first-touch
 * policy the pages come from that CPU's node. */
static void s_setup(thread_t *t)
{
    s_pin(t);
    void *p = mmap(NULL, t->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        t->map_err = errno;
        return;
    }
    t->buf = p;
    /* Huge pages cut TLB misses on big chunks; pagemap still resolves every 4 KiB page. */
    (void)madvise(p, t->bytes, MADV_HUGEPAGE);
    if (t->run->cfg->lock && mlock(p, t->bytes))
        t->lock_err = errno;
    if (!t->run->cfg->lock || t->lock_err) {
        long page = sysconf(_SC_PAGESIZE);
        for (size_t off = 0; off < t->bytes; off += (size_t)(page > 0 ? page : 4096))
            ((volatile char *)p)[off] = 0;
    }
}

static void s_test(thread_t *t)
{
    run_t *run = t->run;
    const config_t *cfg = run->cfg;
    size_t n_words = t->bytes / sizeof(uint64_t);
    for (unsigned pass = 0; pass < cfg->passes; pass++) {
        for (size_t k = 0; k < cfg->n_patterns; k++) {
            t->pass = pass;
            t->pattern = cfg->patterns[k];
            /* Injection goes into the first pattern of the first pass, after its fill. */
            t->mt.inject = (pass == 0 && k == 0 && t->flips) ? s_on_inject : NULL;
            t->mt.seed = fb_mix64(cfg->seed ^ ((uint64_t)t->index << 32) ^ pass);
            mt_run_pattern(t->pattern, t->buf, n_words, &t->mt);
            t->done_sweeps += mt_pattern_sweeps(t->pattern);
            pthread_barrier_wait(&run->step);
        }
    }
}

static void *s_thread_main(void *arg)
{
    thread_t *t = arg;
    run_t *run = t->run;
    s_setup(t);
    pthread_barrier_wait(&run->gate); /* setup done: main checks every thread */
    pthread_barrier_wait(&run->gate); /* go, or abort */
    if (!atomic_load(&run->abort))
        s_test(t);
    if (t->buf)
        munmap(t->buf, t->bytes);
    t->buf = NULL;
    return NULL;
}

/* ---- reporting ------------------------------------------------------------------------------- */

static const char *s_host(worker_ctx_t *ctx)
{
    const char *node = worker_node(ctx);
    return node && *node ? node : "localhost";
}

/* "3,17" for the set bits of mask, into buf. */
static const char *s_bit_list(uint64_t mask, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned b = 0; b < 64 && used + 4 < len; b++)
        if (mask >> b & 1)
            used += (size_t)snprintf(buf + used, len - used, "%s%u", used ? "," : "", b);
    return buf;
}

static void s_add_miscompare_findings(run_t *run, uint64_t total, uint64_t mask)
{
    fb_result_t *res = worker_result(run->ctx);
    size_t n = atomic_load(&run->n_details);
    if (n > MEMTEST_MAX_DETAILS)
        n = MEMTEST_MAX_DETAILS;
    for (size_t i = 0; i < n; i++) {
        const detail_t *d = &run->details[i];
        uint64_t x = d->expected ^ d->actual;
        char phys[48], bits[200];
        if (d->phys)
            snprintf(phys, sizeof phys, "phys 0x%" PRIx64, d->phys);
        else
            snprintf(phys, sizeof phys, "phys unknown (pagemap needs root)");
        fb_result_add_findingf(res, s_host(run->ctx), "memory",
                               "miscompare in %s (pass %u) at virt %p, %s, NUMA node %d: "
                               "expected 0x%016" PRIx64 ", actual 0x%016" PRIx64
                               ", xor 0x%016" PRIx64 " (%d bit%s: %s)",
                               mt_pattern_name(d->pattern), d->pass + 1, (const void *)d->vaddr,
                               phys, d->numa_node, d->expected, d->actual, x,
                               __builtin_popcountll(x), __builtin_popcountll(x) == 1 ? "" : "s",
                               s_bit_list(x, bits, sizeof bits));
    }
    if (total > n) {
        char bits[200];
        fb_result_add_findingf(res, s_host(run->ctx), "memory",
                               "%" PRIu64 " more miscompares not itemised; bits that differed in "
                               "any miscompare: %s",
                               total - n, s_bit_list(mask, bits, sizeof bits));
    }
}

size_t memtest_edac_report(fb_result_t *result, const char *host, const fb_edac_t *before,
                           const fb_edac_t *after)
{
    size_t cap = after->n_dimms ? after->n_dimms : 1, found = 0;
    fb_edac_change_t *changes = xcalloc(cap, sizeof *changes);
    size_t n = fb_edac_diff(before, after, changes, cap);
    uint64_t ce_dimms = 0, ue_dimms = 0;
    for (size_t i = 0; i < n; i++, found++) {
        fb_result_add_findingf(result, changes[i].dimm->label, "dimm",
                               "EDAC corrected errors +%" PRIu64 ", uncorrected +%" PRIu64
                               " during memtest (%s on %s)",
                               changes[i].ce_delta, changes[i].ue_delta, changes[i].dimm->location,
                               host);
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
        err = run->threads[i].lock_err;
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

static void s_start_threads(run_t *run, const cpu_slot_t *slots, size_t n_slots, size_t chunk)
{
    const config_t *cfg = run->cfg;
    for (size_t i = 0; i < run->n_threads; i++) {
        thread_t *t = &run->threads[i];
        t->run = run;
        t->index = (unsigned)i;
        t->cpu = slots[i % n_slots].cpu;
        t->node = slots[i % n_slots].node;
        t->bytes = chunk;
        t->flips =
            (size_t)(cfg->inject_flips / run->n_threads + (i < cfg->inject_flips % run->n_threads));
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
        err = run->threads[i].map_err;
    bool pin_failed = false;
    for (size_t i = 0; i < run->n_threads; i++)
        pin_failed |= run->threads[i].pin_err != 0;
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
        if (run->threads[i].lock_err)
            return false;
    return true;
}

/* Runs the threads; fills bytes moved, miscompares and the OR of differing bits. Returns 0 or the
 * mmap errno that stopped the run. */
static int s_run_threads(run_t *run, size_t chunk, const cpu_slot_t *slots, size_t n_slots,
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

/* Threads: as asked, or one per usable CPU; never so many that a chunk is under a page. */
static size_t s_thread_count(const config_t *cfg, size_t n_slots, size_t page)
{
    size_t n = cfg->threads ? (size_t)cfg->threads : n_slots;
    if (n == 0)
        n = 1;
    if (cfg->size / n < page)
        n = (size_t)(cfg->size / page);
    return n ? n : 1;
}

/* Tests memory with the threads and turns what they saw into findings; returns the failures. */
static uint64_t s_test_memory(run_t *run, const cpu_slot_t *slots, size_t n_slots, unsigned n_nodes,
                              size_t chunk, double started, int *err_out)
{
    const config_t *cfg = run->cfg;
    for (size_t k = 0; k < cfg->n_patterns; k++)
        run->total_sweeps += mt_pattern_sweeps(cfg->patterns[k]) * cfg->passes;
    run->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    double test_s = 0;
    *err_out = s_run_threads(run, chunk, slots, n_slots, &test_s);
    if (run->pagemap_fd >= 0)
        close(run->pagemap_fd);
    if (*err_out)
        return 0;
    uint64_t bytes = 0, miscompares = 0, mask = 0;
    for (size_t i = 0; i < run->n_threads; i++) {
        bytes += run->threads[i].mt.bytes;
        miscompares += run->threads[i].mt.miscompares;
        mask |= run->threads[i].xor_mask;
    }
    if (cfg->inject_flips)
        worker_log(run->ctx,
                   "memtest: fault injection flipped %zu bits in %s of pass 1, "
                   "between its fill and its verify",
                   atomic_load(&run->flipped), mt_pattern_name(cfg->patterns[0]));
    s_add_miscompare_findings(run, miscompares, mask);
    s_set_metrics(run, (uint64_t)chunk * run->n_threads, bytes, miscompares, test_s,
                  fb_mono_s() - started, n_nodes);
    char bits[200];
    worker_log(run->ctx, "memtest: %" PRIu64 " miscompares%s%s%s, %.0f MB/s over %.1f s",
               miscompares, miscompares ? " (bits that differed: " : "",
               miscompares ? s_bit_list(mask, bits, sizeof bits) : "", miscompares ? ")" : "",
               test_s > 0 ? (double)bytes / 1e6 / test_s : 0, test_s);
    return miscompares;
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
    if (cfg->inject_flips)
        worker_log(run->ctx,
                   "memtest: fault injection armed (test-only): %" PRIu64
                   " bit flips into %s of pass 1",
                   cfg->inject_flips, mt_pattern_name(cfg->patterns[0]));
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
    cpu_slot_t *slots = NULL;
    size_t n_slots = s_cpu_slots(ctx, &slots);
    if (n_slots == 0) {
        slots[0] = (cpu_slot_t){0, 0}; /* no usable CPU reported: one thread on CPU 0 */
        n_slots = 1;
    }
    run_t *run = xcalloc(1, sizeof *run);
    run->ctx = ctx;
    run->cfg = &cfg;
    run->n_threads = s_thread_count(&cfg, n_slots, page);
    run->threads = xcalloc(run->n_threads, sizeof *run->threads);
    size_t chunk = (size_t)(cfg.size / run->n_threads) / page * page;
    unsigned used_nodes = s_count_nodes(slots, run->n_threads < n_slots ? run->n_threads : n_slots);
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
    } else if (edac_rc == 0 && s_edac_after(ctx, &before)) {
        v = FB_VERDICT_FAIL;
    }
    if (edac_rc == 0)
        fb_edac_clear(&before);
    free(run->threads);
    free(run);
    free(slots);
    free(cfg.patterns);
    return s_finish(ctx, v);
}
