/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-bench-memstream: a STREAM-like bandwidth bound for host memtest. The triad of STREAM
 * (a[i] = b[i] + s * c[i], doubles) run by the same threads on the same CPUs, with the same
 * memory placement, as memtest: workloads/memtest/placement.c picks the CPUs round-robin over the
 * NUMA nodes, pins each thread, and maps, locks and first-touches its chunk from that thread.
 * Each thread's chunk holds its three arrays. STREAM's rules: arrays far larger than the
 * last-level cache, every repetition timed between barriers, the best repetition reported, the
 * bytes counted as STREAM counts them (24 per element: two reads, one write; write-allocate
 * traffic not counted), and the results checked at the end. The triad runs twice, with ordinary
 * stores (what STREAM built with gcc does) and with non-temporal stores (what memtest's fills
 * use); the bound is the better of the two.
 *
 *   fleetburn-bench-memstream [--size BYTES] [--threads N] [--reps N] [--no-lock]
 *
 * --size: all arrays of all threads together (default 4GiB); --threads: default one per CPU of
 * the affinity mask, as memtest's threads=auto; --reps: repetitions per kernel (default 20).
 * bench/memtest_vs_stream.sh runs it next to memtest and writes the comparison. */
#include "common/units.h"
#include "common/util.h"
#include "memtest/placement.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define MS_HAVE_NT 1
#else
#define MS_HAVE_NT 0
#endif

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MS_HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef MS_HOT
#define MS_HOT
#endif

#define MS_SCALAR 3.0
#define MS_MAX_REPS 1000

typedef enum { K_TRIAD, K_TRIAD_NT, K_COUNT } kernel_t;
static const char *const s_kernel_names[K_COUNT] = {"triad", "triad_nt"};

typedef struct {
    uint64_t size, threads;
    unsigned reps;
    bool lock;
} options_t;

typedef struct shared shared_t;

typedef struct {
    shared_t *sh;
    pthread_t tid;
    int cpu;
    mt_chunk_t chunk;
    double *a, *b, *c;
    size_t n;     /* elements per array */
    size_t wrong; /* elements of a that did not hold the expected value at the end */
} worker_t;

struct shared {
    const options_t *opt;
    worker_t *w;
    size_t n_threads, chunk;
    pthread_barrier_t bar;
    double times[K_COUNT][MS_MAX_REPS]; /* written by thread 0 */
    bool failed;                        /* some thread has no memory */
};

MS_HOT static void s_triad(double *restrict a, const double *restrict b, const double *restrict c,
                           size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + MS_SCALAR * c[i];
}

static void s_triad_nt(double *restrict a, const double *restrict b, const double *restrict c,
                       size_t n)
{
#if MS_HAVE_NT
    const __m128d s = _mm_set1_pd(MS_SCALAR);
    size_t i = 0;
    for (; i + 2 <= n; i += 2)
        _mm_stream_pd(a + i, _mm_add_pd(_mm_load_pd(b + i), _mm_mul_pd(s, _mm_load_pd(c + i))));
    for (; i < n; i++)
        a[i] = b[i] + MS_SCALAR * c[i];
    _mm_sfence();
#else
    s_triad(a, b, c, n);
#endif
}

/* The three arrays in the chunk, each 64-byte aligned. */
static void s_arrays(worker_t *w)
{
    size_t per = (w->chunk.bytes / 3) / 64 * 64;
    char *base = w->chunk.buf;
    w->n = per / sizeof(double);
    w->a = (double *)(void *)base;
    w->b = (double *)(void *)(base + per);
    w->c = (double *)(void *)(base + 2 * per);
    for (size_t i = 0; i < w->n; i++) {
        w->a[i] = 0.0;
        w->b[i] = 1.0;
        w->c[i] = 2.0;
    }
}

static void *s_thread_main(void *arg)
{
    worker_t *w = arg;
    shared_t *sh = w->sh;
    bool first = w == &sh->w[0];
    mt_chunk_setup(&w->chunk, w->cpu, sh->chunk, sh->opt->lock);
    if (w->chunk.buf)
        s_arrays(w);
    else
        sh->failed = true; /* read only after the barrier below */
    pthread_barrier_wait(&sh->bar);
    for (int k = 0; k < K_COUNT && !sh->failed; k++) {
        for (unsigned r = 0; r < sh->opt->reps; r++) {
            pthread_barrier_wait(&sh->bar);
            double t0 = fb_mono_s();
            if (k == K_TRIAD)
                s_triad(w->a, w->b, w->c, w->n);
            else
                s_triad_nt(w->a, w->b, w->c, w->n);
            pthread_barrier_wait(&sh->bar);
            if (first)
                sh->times[k][r] = fb_mono_s() - t0;
        }
    }
    const double expect = 1.0 + MS_SCALAR * 2.0;
    for (size_t i = 0; w->chunk.buf && i < w->n; i++)
        w->wrong += w->a[i] != expect;
    return NULL;
}

static int s_usage(const char *why)
{
    fprintf(stderr,
            "fleetburn-bench-memstream: %s\nusage: fleetburn-bench-memstream [--size BYTES] "
            "[--threads N] [--reps N] [--no-lock]\n",
            why);
    return 2;
}

static int s_parse(int argc, char **argv, options_t *opt)
{
    *opt = (options_t){.size = 4ULL << 30, .threads = 0, .reps = 20, .lock = true};
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n = 0;
        if (!strcmp(argv[i], "--no-lock")) {
            opt->lock = false;
        } else if (!strcmp(argv[i], "--size") && v && !fb_parse_bytes(v, &opt->size)) {
            i++;
        } else if (!strcmp(argv[i], "--threads") && v && !fb_parse_uint(v, 4096, &opt->threads)) {
            i++;
        } else if (!strcmp(argv[i], "--reps") && v && !fb_parse_uint(v, MS_MAX_REPS, &n) && n) {
            opt->reps = (unsigned)n;
            i++;
        } else {
            char *why = xasprintf("bad or incomplete argument '%s'", argv[i]);
            int rc = s_usage(why);
            free(why);
            return rc;
        }
    }
    if (opt->size < (1u << 20))
        return s_usage("--size must be at least 1MiB");
    return 0;
}

static void s_note(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "%s\n", line);
}

/* Prints the threads' CPUs and nodes, as memtest places them. */
static void s_print_placement(const shared_t *sh, const mt_cpu_slot_t *slots, size_t n_slots)
{
    unsigned nodes = mt_count_nodes(slots, sh->n_threads < n_slots ? sh->n_threads : n_slots);
    printf("memstream: %zu threads on %u NUMA node%s, CPUs (cpu:node)", sh->n_threads, nodes,
           nodes == 1 ? "" : "s");
    for (size_t i = 0; i < sh->n_threads; i++)
        printf(" %d:%d", slots[i % n_slots].cpu, slots[i % n_slots].node);
    printf("\n");
}

/* Best, mean and worst of one kernel, as MB/s (10^6 bytes). */
static double s_report(const shared_t *sh, kernel_t k, uint64_t bytes)
{
    double best = 1e30, worst = 0, sum = 0;
    /* STREAM drops the first repetition: it pays for page faults and cold TLBs. */
    unsigned first = sh->opt->reps > 1 ? 1 : 0;
    for (unsigned r = first; r < sh->opt->reps; r++) {
        double t = sh->times[k][r];
        best = t < best ? t : best;
        worst = t > worst ? t : worst;
        sum += t;
    }
    double mean = sum / (sh->opt->reps - first);
    printf("memstream: %-8s best %9.0f MB/s  mean %9.0f MB/s  worst %9.0f MB/s  (best %.4f s, "
           "%u reps, first dropped)\n",
           s_kernel_names[k], (double)bytes / best / 1e6, (double)bytes / mean / 1e6,
           (double)bytes / worst / 1e6, best, sh->opt->reps);
    return (double)bytes / best / 1e6;
}

int main(int argc, char **argv)
{
    options_t opt;
    int rc = s_parse(argc, argv, &opt);
    if (rc)
        return rc;
    long page_l = sysconf(_SC_PAGESIZE);
    size_t page = page_l > 0 ? (size_t)page_l : 4096;
    mt_cpu_slot_t *slots = NULL;
    size_t n_slots = mt_cpu_slots("", s_note, NULL, &slots);
    if (n_slots == 0) {
        slots[0] = (mt_cpu_slot_t){0, 0};
        n_slots = 1;
    }
    shared_t *sh = xcalloc(1, sizeof *sh);
    sh->opt = &opt;
    sh->n_threads = mt_thread_count(opt.size, opt.threads, n_slots, page * 3);
    sh->chunk = (size_t)(opt.size / sh->n_threads) / page * page;
    sh->w = xcalloc(sh->n_threads, sizeof *sh->w);
    pthread_barrier_init(&sh->bar, NULL, (unsigned)sh->n_threads);
    s_print_placement(sh, slots, n_slots);
    for (size_t i = 0; i < sh->n_threads; i++) {
        sh->w[i].sh = sh;
        sh->w[i].cpu = slots[i % n_slots].cpu;
        if (pthread_create(&sh->w[i].tid, NULL, s_thread_main, &sh->w[i]))
            abort();
    }
    for (size_t i = 0; i < sh->n_threads; i++)
        pthread_join(sh->w[i].tid, NULL);
    size_t n = sh->w[0].n, wrong = 0;
    bool locked = opt.lock, pinned = true;
    for (size_t i = 0; i < sh->n_threads; i++) {
        wrong += sh->w[i].wrong;
        locked &= sh->w[i].chunk.lock_err == 0;
        pinned &= sh->w[i].chunk.pin_err == 0;
    }
    char per[32], all[32];
    fb_format_bytes((uint64_t)n * sizeof(double), per, sizeof per);
    fb_format_bytes((uint64_t)n * sizeof(double) * 3 * sh->n_threads, all, sizeof all);
    printf("memstream: 3 arrays of %zu doubles (%s) per thread, %s in all, %s, %s, %s stores "
           "available\n",
           n, per, all, locked ? "locked" : "not locked", pinned ? "pinned" : "NOT pinned",
           MS_HAVE_NT ? "non-temporal" : "no non-temporal");
    rc = 0;
    if (sh->failed) {
        fprintf(stderr, "fleetburn-bench-memstream: a thread could not map its %zu bytes\n",
                sh->chunk);
        rc = 1;
    } else {
        uint64_t bytes = (uint64_t)n * 24 * sh->n_threads;
        double best = 0;
        int best_k = 0;
        for (int k = 0; k < K_COUNT; k++) {
            double mbs = s_report(sh, (kernel_t)k, bytes);
            if (mbs > best) {
                best = mbs;
                best_k = k;
            }
        }
        printf("memstream: bound %.0f MB/s (%s)\n", best, s_kernel_names[best_k]);
        if (wrong) {
            fprintf(stderr, "fleetburn-bench-memstream: %zu elements hold a wrong result\n", wrong);
            rc = 1;
        }
    }
    for (size_t i = 0; i < sh->n_threads; i++)
        mt_chunk_release(&sh->w[i].chunk);
    pthread_barrier_destroy(&sh->bar);
    free(sh->w);
    free(sh);
    free(slots);
    return rc;
}
