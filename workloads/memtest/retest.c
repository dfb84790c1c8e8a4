/* SPDX-License-Identifier: Apache-2.0 */
/* The page retest of retest.h. Writes use ordinary stores and are then flushed line by line
 * (clflush on x86, dc civac on Arm), so that every read-back misses the caches: on a 4 KiB page
 * a read would otherwise be served by L1 and test nothing but the cache. */
#include "retest.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define MT_CAN_FLUSH 1
#elif defined(__aarch64__)
#define MT_CAN_FLUSH 1
#else
#define MT_CAN_FLUSH 0
#endif

#define S_LINE 64

/* Evicts the page from every cache level and waits until that is done. */
static void s_flush(uint64_t *page, size_t n_words)
{
    char *p = (char *)page;
    size_t bytes = n_words * sizeof *page;
#if defined(__x86_64__) || defined(__i386__)
    _mm_mfence();
    for (size_t off = 0; off < bytes; off += S_LINE)
        _mm_clflush(p + off);
    _mm_mfence();
#elif defined(__aarch64__)
    __asm__ __volatile__("dsb sy" ::: "memory");
    for (size_t off = 0; off < bytes; off += S_LINE)
        __asm__ __volatile__("dc civac, %0" ::"r"(p + off) : "memory");
    __asm__ __volatile__("dsb sy" ::: "memory");
#else
    (void)p;
    (void)bytes;
    __asm__ __volatile__("" ::: "memory");
#endif
}

typedef struct {
    mt_retest_t *out;
    const uint64_t *word;
    bool word_failed, any_failed;
    mt_retest_hook hook;
    void *user;
} round_t;

static void s_check(round_t *r, const volatile uint64_t *page, size_t n_words, uint64_t value)
{
    for (size_t i = 0; i < n_words; i++) {
        uint64_t x = page[i] ^ value;
        if (!x)
            continue;
        r->out->miscompares++;
        r->any_failed = true;
        if ((const uint64_t *)&page[i] == r->word) {
            r->word_failed = true;
            r->out->word_xor |= x;
        }
    }
}

static void s_background(round_t *r, uint64_t *page, size_t n_words, uint64_t value)
{
    volatile uint64_t *v = page;
    for (size_t i = 0; i < n_words; i++)
        v[i] = value;
    s_flush(page, n_words);
    if (r->hook) {
        r->hook(r->user, page, n_words);
        s_flush(page, n_words);
    }
    s_check(r, page, n_words, value);
}

/* The pattern's own miscompare reports, counted against the round. */
static void s_on_report(mt_ctx_t *c, const mt_miscompare_t *m)
{
    round_t *r = c->user;
    r->any_failed = true;
    r->out->miscompares++;
    if (m->addr == r->word) {
        r->word_failed = true;
        r->out->word_xor |= m->expected ^ m->actual;
    }
}

/* Between the pattern's first write and its first check: evict, inject, evict. */
static void s_on_inject(mt_ctx_t *c, uint64_t *buf, size_t n_words)
{
    round_t *r = c->user;
    s_flush(buf, n_words);
    if (r->hook) {
        r->hook(r->user, buf, n_words);
        s_flush(buf, n_words);
    }
}

void mt_retest_page(uint64_t *page, size_t n_words, size_t word, uint64_t expected,
                    mt_pattern_t pattern, uint64_t seed, unsigned rounds, mt_retest_hook hook,
                    void *user, mt_retest_t *out)
{
    memset(out, 0, sizeof *out);
    out->flushed = MT_CAN_FLUSH;
    const uint64_t backgrounds[] = {
        expected, ~expected, 0, ~UINT64_C(0), 0x5555555555555555ULL, 0xAAAAAAAAAAAAAAAAULL};
    for (unsigned k = 0; k < rounds; k++) {
        round_t r = {.out = out, .word = page + word, .hook = hook, .user = user};
        for (size_t b = 0; b < sizeof backgrounds / sizeof *backgrounds; b++)
            s_background(&r, page, n_words, backgrounds[b]);
        mt_ctx_t ctx = {.seed = seed, .inject = s_on_inject, .report = s_on_report, .user = &r};
        mt_run_pattern(pattern, page, n_words, &ctx);
        out->rounds++;
        out->failed_rounds += r.any_failed;
        out->word_rounds += r.word_failed;
    }
}

bool mt_retest_stuck(const mt_retest_t *r)
{
    return r->word_rounds > 0;
}
