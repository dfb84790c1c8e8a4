/* SPDX-License-Identifier: Apache-2.0 */
/* The memtest pattern engine. Every pattern is built from four primitives over 64-bit words:
 * fill (write what a generator says), verify (read and compare with the same generator), march
 * (read-compare-write one constant over another, up or down) and a read-modify-write operation.
 * Generators produce the expected words one block of MT_BLOCK at a time into an L1-resident
 * buffer; the loops over the tested memory then have a constant trip count, which is what lets gcc
 * vectorise them at -O2, and a miscompare can be reported with the value read and the value
 * expected without reading the word a second time. Fills use non-temporal stores where the CPU has
 * them, so the verify that follows reads DRAM rather than a cache that still holds the pattern,
 * and a fill does not first read every line it overwrites. */
#include "patterns.h"
#include "common/units.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* MT_NO_STREAM builds with ordinary stores for the fills, to measure what streaming buys. */
#if defined(__SSE2__) && !defined(MT_NO_STREAM)
#include <emmintrin.h>
#endif

/* The loops that touch every word are built for the baseline ISA and for AVX2 and AVX-512, picked
 * at load time (ifunc): one core verifying at SSE2 width cannot keep up with its memory channel. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MT_HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef MT_HOT
#define MT_HOT
#endif

/* Words per block: 2 KiB, small enough that a block and its expected copy stay in L1. */
#define MT_BLOCK 256

/* Stops the compiler from carrying what it knows about memory across a point: the reads of a
 * verify must go to memory, not be folded from the stores of the fill before it. */
#define MT_BARRIER() __asm__ __volatile__("" ::: "memory")

typedef enum { OP_NONE, OP_XOR, OP_SUB, OP_MUL, OP_DIV, OP_OR, OP_AND } op_t;

typedef struct gen gen_t;
/* Writes the MT_BLOCK expected words for indices first .. first+MT_BLOCK-1 (first is a multiple
 * of MT_BLOCK) into out. */
typedef void (*gen_fn)(gen_t *g, size_t first, uint64_t *restrict out);
struct gen {
    gen_fn fn;
    uint64_t a, b;         /* value (or mask) for even and odd words */
    uintptr_t base;        /* address of word 0 (address patterns) */
    uint64_t state;        /* xorshift state (random) */
    const uint64_t *table; /* MT_BLOCK words (compare_*) */
    uint64_t key_seed;     /* per-block key (compare_*) */
    op_t op;
    uint64_t q;         /* operand of op */
    size_t from, shift; /* block_move: words at index >= from hold the value of index - shift */
};

static uint64_t s_rotl(uint64_t x, unsigned k)
{
    k &= 63;
    return k ? (x << k) | (x >> (64 - k)) : x;
}

/* ---- generators ------------------------------------------------------------------------------ */

MT_HOT static void s_gen_alt(gen_t *g, size_t first, uint64_t *restrict out)
{
    (void)first; /* first is even, so word parity is the parity of i */
    for (size_t i = 0; i < MT_BLOCK; i += 2) {
        out[i] = g->a;
        out[i + 1] = g->b;
    }
}

MT_HOT static void s_gen_addr(gen_t *g, size_t first, uint64_t *restrict out)
{
    uint64_t addr = (uint64_t)(g->base + first * sizeof(uint64_t));
    for (size_t i = 0; i < MT_BLOCK; i += 2) {
        out[i] = (addr + i * 8) ^ g->a;
        out[i + 1] = (addr + i * 8 + 8) ^ g->b;
    }
}

/* xorshift64*: sequential, so a verify regenerates from the same starting state. */
static void s_gen_xorshift(gen_t *g, size_t first, uint64_t *restrict out)
{
    (void)first;
    uint64_t x = g->state;
    for (size_t i = 0; i < MT_BLOCK; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out[i] = x * 0x2545F4914F6CDD1DULL;
    }
    g->state = x;
}

static uint64_t s_apply(op_t op, uint64_t v, uint64_t q)
{
    switch (op) {
    case OP_XOR:
        return v ^ q;
    case OP_SUB:
        return v - q;
    case OP_MUL:
        return v * q;
    case OP_DIV:
        return v / q;
    case OP_OR:
        return v | q;
    case OP_AND:
        return v & q;
    case OP_NONE:
        break;
    }
    return v;
}

/* Random-looking data that can be regenerated at any block: a fixed table of random words XORed
 * with a key derived from the block number. */
MT_HOT static void s_gen_table(gen_t *g, size_t first, uint64_t *restrict out)
{
    uint64_t key = fb_mix64(g->key_seed + first / MT_BLOCK);
    for (size_t i = 0; i < MT_BLOCK; i++)
        out[i] = g->table[i] ^ key;
    if (g->op != OP_NONE)
        for (size_t i = 0; i < MT_BLOCK; i++)
            out[i] = s_apply(g->op, out[i], g->q);
}

MT_HOT static void s_gen_seq(gen_t *g, size_t first, uint64_t *restrict out)
{
    for (size_t i = 0; i < MT_BLOCK; i++)
        out[i] = g->a + first + i;
}

static uint64_t s_move_value(uint64_t index, uint64_t key)
{
    return (index * 0x9E3779B97F4A7C15ULL) ^ key;
}

MT_HOT static void s_gen_move(gen_t *g, size_t first, uint64_t *restrict out)
{
    for (size_t i = 0; i < MT_BLOCK; i++) {
        size_t j = first + i;
        out[i] = s_move_value(j >= g->from ? j - g->shift : j, g->a);
    }
}

/* ---- primitives ------------------------------------------------------------------------------ */

static void s_store(uint64_t *restrict dst, const uint64_t *restrict src, size_t len)
{
#if defined(__SSE2__) && !defined(MT_NO_STREAM)
    if (len == MT_BLOCK && ((uintptr_t)dst & 15) == 0) {
        for (size_t i = 0; i < MT_BLOCK; i += 2)
            _mm_stream_si128((__m128i *)(void *)(dst + i),
                             _mm_load_si128((const __m128i *)(const void *)(src + i)));
        return;
    }
#endif
    memcpy(dst, src, len * sizeof *dst);
}

/* Ends a run of non-temporal stores (orders them before what follows) and any compiler caching. */
static void s_store_fence(void)
{
#if defined(__SSE2__) && !defined(MT_NO_STREAM)
    _mm_sfence();
#endif
    MT_BARRIER();
}

static inline __attribute__((always_inline)) uint64_t s_xor_words(const uint64_t *restrict p,
                                                                  const uint64_t *restrict e,
                                                                  uint64_t *restrict x, size_t len)
{
    uint64_t diff = 0;
    for (size_t i = 0; i < len; i++) {
        x[i] = p[i] ^ e[i];
        diff |= x[i];
    }
    return diff;
}

/* x[i] = p[i] ^ e[i]; returns the OR of all x. A full block takes the constant-count loop. */
static inline __attribute__((always_inline)) uint64_t
s_xor_block(const uint64_t *p, const uint64_t *e, uint64_t *x, size_t len)
{
    if (len == MT_BLOCK)
        return s_xor_words(p, e, x, MT_BLOCK);
    return s_xor_words(p, e, x, len);
}

static void s_report(mt_ctx_t *c, const uint64_t *p, const uint64_t *e, const uint64_t *x,
                     size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (!x[i])
            continue;
        c->miscompares++;
        if (c->report) {
            mt_miscompare_t m = {.addr = p + i, .expected = e[i], .actual = e[i] ^ x[i]};
            c->report(c, &m);
        }
    }
}

static size_t s_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

MT_HOT static void s_fill(mt_ctx_t *c, uint64_t *p, size_t n, gen_t *g)
{
    _Alignas(64) uint64_t e[MT_BLOCK];
    for (size_t off = 0; off < n; off += MT_BLOCK) {
        g->fn(g, off, e);
        s_store(p + off, e, s_min(MT_BLOCK, n - off));
    }
    s_store_fence();
    c->bytes += n * sizeof *p;
}

/* Both halves get the same words: the half-buffer tests then read them back pairwise. */
MT_HOT static void s_fill_halves(mt_ctx_t *c, uint64_t *a, uint64_t *b, size_t h, gen_t *g)
{
    _Alignas(64) uint64_t e[MT_BLOCK];
    for (size_t off = 0; off < h; off += MT_BLOCK) {
        g->fn(g, off, e);
        s_store(a + off, e, s_min(MT_BLOCK, h - off));
        s_store(b + off, e, s_min(MT_BLOCK, h - off));
    }
    s_store_fence();
    c->bytes += 2 * h * sizeof *a;
}

/* Reads p block by block against the expected words. With b (the half-buffer tests), b is read
 * against the same words beside it, so a pair that differs is caught (as memtester's comparison
 * does) and so is a fault that hits both halves alike. */
MT_HOT static void s_verify(mt_ctx_t *c, const uint64_t *p, const uint64_t *b, size_t n, gen_t *g)
{
    _Alignas(64) uint64_t e[MT_BLOCK];
    _Alignas(64) uint64_t x[MT_BLOCK];
    MT_BARRIER();
    for (size_t off = 0; off < n; off += MT_BLOCK) {
        size_t len = s_min(MT_BLOCK, n - off);
        g->fn(g, off, e);
        if (s_xor_block(p + off, e, x, len))
            s_report(c, p + off, e, x, len);
        if (b && s_xor_block(b + off, e, x, len))
            s_report(c, b + off, e, x, len);
    }
    c->bytes += (b ? 2 : 1) * n * sizeof *p;
}

static inline __attribute__((always_inline)) void s_set_words(uint64_t *restrict p, uint64_t v,
                                                              size_t len)
{
    for (size_t i = 0; i < len; i++)
        p[i] = v;
}

/* One march element: every word must read `expect` and is then overwritten with `write`. Blocks
 * are visited upwards or downwards; inside a 2 KiB block the cache hides word order anyway. The
 * writes are ordinary stores: the line was just read into the cache. */
MT_HOT static void s_march(mt_ctx_t *c, uint64_t *p, size_t n, uint64_t expect, uint64_t write,
                           bool down)
{
    _Alignas(64) uint64_t e[MT_BLOCK];
    _Alignas(64) uint64_t x[MT_BLOCK];
    s_set_words(e, expect, MT_BLOCK);
    MT_BARRIER();
    size_t n_blocks = (n + MT_BLOCK - 1) / MT_BLOCK;
    for (size_t k = 0; k < n_blocks; k++) {
        size_t off = (down ? n_blocks - 1 - k : k) * MT_BLOCK;
        size_t len = s_min(MT_BLOCK, n - off);
        if (s_xor_block(p + off, e, x, len))
            s_report(c, p + off, e, x, len);
        if (len == MT_BLOCK)
            s_set_words(p + off, write, MT_BLOCK);
        else
            s_set_words(p + off, write, len);
    }
    MT_BARRIER();
    c->bytes += 2 * n * sizeof *p;
}

static inline __attribute__((always_inline)) void s_op_words(uint64_t *restrict p, op_t op,
                                                             uint64_t q, size_t len)
{
    /* One loop per operation keeps each loop body a single instruction the vectoriser knows. */
    switch (op) {
    case OP_XOR:
        for (size_t i = 0; i < len; i++)
            p[i] ^= q;
        break;
    case OP_SUB:
        for (size_t i = 0; i < len; i++)
            p[i] -= q;
        break;
    case OP_MUL:
        for (size_t i = 0; i < len; i++)
            p[i] *= q;
        break;
    case OP_DIV:
        for (size_t i = 0; i < len; i++)
            p[i] /= q;
        break;
    case OP_OR:
        for (size_t i = 0; i < len; i++)
            p[i] |= q;
        break;
    case OP_AND:
        for (size_t i = 0; i < len; i++)
            p[i] &= q;
        break;
    case OP_NONE:
        break;
    }
}

/* Read-modify-write of every word through op: the data the comparison tests then check passed
 * through the CPU and back. */
MT_HOT static void s_apply_op(mt_ctx_t *c, uint64_t *p, size_t n, op_t op, uint64_t q)
{
    MT_BARRIER();
    for (size_t off = 0; off < n; off += MT_BLOCK) {
        if (n - off >= MT_BLOCK)
            s_op_words(p + off, op, q, MT_BLOCK);
        else
            s_op_words(p + off, op, q, n - off);
    }
    MT_BARRIER();
    c->bytes += 2 * n * sizeof *p;
}

static void s_inject(mt_ctx_t *c, uint64_t *p, size_t n)
{
    if (!c->inject || c->injected)
        return;
    c->injected = true;
    c->inject(c, p, n);
    MT_BARRIER();
}

static void s_step(mt_ctx_t *c, unsigned done, unsigned total)
{
    if (c->progress)
        c->progress(c, (double)done / total);
}

/* Fill, inject (first time only), verify: the round every simple pattern repeats. */
static void s_round(mt_ctx_t *c, uint64_t *p, size_t n, gen_t *g)
{
    s_fill(c, p, n, g);
    s_inject(c, p, n);
    s_verify(c, p, NULL, n, g);
}

static void s_round_alt(mt_ctx_t *c, uint64_t *p, size_t n, uint64_t even, uint64_t odd)
{
    gen_t g = {.fn = s_gen_alt, .a = even, .b = odd};
    s_round(c, p, n, &g);
}

/* The half-buffer layout: two equal halves, each a multiple of two words so the second one stays
 * 16-byte aligned for the streaming stores. Up to three trailing words belong to neither; the
 * full-buffer patterns cover them. */
static size_t s_half(size_t n)
{
    return (n / 2) & ~(size_t)1;
}

static void s_round_halves(mt_ctx_t *c, uint64_t *p, size_t n, gen_t *g)
{
    size_t h = s_half(n);
    s_fill_halves(c, p, p + h, h, g);
    s_inject(c, p, 2 * h);
    s_verify(c, p, p + h, h, g);
}

static void s_round_halves_alt(mt_ctx_t *c, uint64_t *p, size_t n, uint64_t even, uint64_t odd)
{
    gen_t g = {.fn = s_gen_alt, .a = even, .b = odd};
    s_round_halves(c, p, n, &g);
}

/* ---- patterns -------------------------------------------------------------------------------- */

/* Even words hold their own address, odd words its complement, swapped every round: two address
 * lines shorted or stuck make two words alias, and one of them then holds the wrong address. */
static void s_stuck_address(mt_ctx_t *c, uint64_t *p, size_t n)
{
    for (unsigned r = 0; r < 16; r++) {
        uint64_t m = (r & 1) ? ~0ULL : 0;
        gen_t g = {.fn = s_gen_addr, .base = (uintptr_t)p, .a = m, .b = ~m};
        s_round(c, p, n, &g);
        s_step(c, r + 1, 16);
    }
}

/* Every word holds its own address, then its complement. */
static void s_own_address(mt_ctx_t *c, uint64_t *p, size_t n)
{
    for (unsigned r = 0; r < 2; r++) {
        uint64_t m = r ? ~0ULL : 0;
        gen_t g = {.fn = s_gen_addr, .base = (uintptr_t)p, .a = m, .b = m};
        s_round(c, p, n, &g);
        s_step(c, r + 1, 2);
    }
}

/* A single bit (or a single clear bit) walks up through the word and back down. */
static void s_walking(mt_ctx_t *c, uint64_t *p, size_t n, bool zeros)
{
    for (unsigned r = 0; r < 128; r++) {
        uint64_t v = 1ULL << (r < 64 ? r : 127 - r);
        if (zeros)
            v = ~v;
        s_round_alt(c, p, n, v, v);
        s_step(c, r + 1, 128);
    }
}

static void s_walking_ones(mt_ctx_t *c, uint64_t *p, size_t n)
{
    s_walking(c, p, n, false);
}

static void s_walking_zeros(mt_ctx_t *c, uint64_t *p, size_t n)
{
    s_walking(c, p, n, true);
}

/* Alternating 0101/1010 words, swapped every round: every bit next to its opposite. */
static void s_checkerboard(mt_ctx_t *c, uint64_t *p, size_t n)
{
    for (unsigned r = 0; r < 64; r++) {
        uint64_t v = (r & 1) ? 0xAAAAAAAAAAAAAAAAULL : 0x5555555555555555ULL;
        s_round_alt(c, p, n, v, ~v);
        s_step(c, r + 1, 64);
    }
}

/* Words of all ones next to words of all zeros, swapped every round. */
static void s_solid_bits(mt_ctx_t *c, uint64_t *p, size_t n)
{
    for (unsigned r = 0; r < 64; r++) {
        uint64_t v = (r & 1) ? ~0ULL : 0;
        s_round_alt(c, p, n, v, ~v);
        s_step(c, r + 1, 64);
    }
}

/* March C- over the log2(64)+1 data backgrounds that put every pair of bits of a word at
 * opposite values at least once: up (r P, w ~P), up (r ~P, w P), down (r P, w ~P),
 * down (r ~P, w P), then a final read. Catches stuck-at, transition and most coupling faults. */
static void s_moving_inversions(mt_ctx_t *c, uint64_t *p, size_t n)
{
    static const uint64_t backgrounds[] = {
        0x0000000000000000ULL, 0x5555555555555555ULL, 0x3333333333333333ULL, 0x0F0F0F0F0F0F0F0FULL,
        0x00FF00FF00FF00FFULL, 0x0000FFFF0000FFFFULL, 0x00000000FFFFFFFFULL,
    };
    const unsigned n_bg = (unsigned)FB_ARRAY_LEN(backgrounds);
    for (unsigned k = 0; k < n_bg; k++) {
        uint64_t v = backgrounds[k];
        gen_t g = {.fn = s_gen_alt, .a = v, .b = v};
        s_fill(c, p, n, &g);
        s_inject(c, p, n);
        s_march(c, p, n, v, ~v, false);
        s_march(c, p, n, ~v, v, false);
        s_march(c, p, n, v, ~v, true);
        s_march(c, p, n, ~v, v, true);
        s_verify(c, p, NULL, n, &g);
        s_step(c, k + 1, n_bg);
    }
}

/* Seeded pseudo-random words, regenerated from the seed to verify. */
static void s_random(mt_ctx_t *c, uint64_t *p, size_t n)
{
    uint64_t start = fb_mix64(c->seed ^ 0x72616E646F6DULL) | 1; /* xorshift state must be != 0 */
    gen_t g = {.fn = s_gen_xorshift, .state = start};
    s_fill(c, p, n, &g);
    s_inject(c, p, n);
    g.state = start;
    s_verify(c, p, NULL, n, &g);
    s_step(c, 1, 1);
}

static void s_move(mt_ctx_t *c, uint64_t *dst, const uint64_t *src, size_t n_words)
{
    MT_BARRIER();
    memmove(dst, src, n_words * sizeof *dst);
    MT_BARRIER();
    c->bytes += 2 * n_words * sizeof *dst;
}

/* Overlapping block moves with libc's memmove (wide, streaming, backwards and forwards copies):
 * the buffer is shifted up by s words and back down, and checked after each move. A word that read
 * back wrong after a move names its destination; a bad source cell also shows at the cell itself
 * in the other patterns. When the first check fails the move back is skipped, so that the bad
 * word is not copied elsewhere and reported a second time at an address that is not at fault. */
static void s_block_move(mt_ctx_t *c, uint64_t *p, size_t n)
{
    size_t shifts[] = {1, 67, n / 2};
    unsigned done = 0;
    for (size_t k = 0; k < FB_ARRAY_LEN(shifts); k++) {
        size_t s = shifts[k];
        if (s > n / 2 || (k > 0 && s <= shifts[k - 1]))
            continue; /* small buffers: skip shifts that do not fit or repeat */
        gen_t g = {.fn = s_gen_move, .a = fb_mix64(c->seed ^ (0x6D6F7665ULL + k)), .from = n};
        s_fill(c, p, n, &g);
        s_move(c, p + s, p, n - s); /* p[i] = v(i - s) for i >= s */
        s_inject(c, p, n);
        g.from = s;
        g.shift = s;
        uint64_t before = c->miscompares;
        s_verify(c, p, NULL, n, &g);
        if (c->miscompares != before)
            continue;
        s_move(c, p, p + s, n - s); /* p[i] = v(i) below n - s, v(i - s) from there */
        g.from = n - s;
        s_verify(c, p, NULL, n, &g);
        s_step(c, ++done, 3);
    }
    s_step(c, 1, 1);
}

/* memtester's comparison tests: both halves get the same random words, both go through the same
 * read-modify-write operation, and both are then checked. */
static void s_compare(mt_ctx_t *c, uint64_t *p, size_t n, op_t op)
{
    _Alignas(64) uint64_t table[MT_BLOCK];
    uint64_t seed = fb_mix64(c->seed ^ (0x636D70ULL << 8) ^ (uint64_t)op);
    for (size_t i = 0; i < MT_BLOCK; i++)
        table[i] = fb_mix64(seed + i);
    uint64_t q = fb_mix64(seed ^ 0x71);
    if (op == OP_MUL)
        q |= 1; /* odd: multiplication stays a bijection and keeps the low bits alive */
    if (op == OP_DIV)
        q = 3 + q % 65533; /* small divisor: quotients keep ~48 significant bits */
    size_t h = s_half(n);
    gen_t g = {.fn = s_gen_table, .table = table, .key_seed = seed, .op = OP_NONE};
    s_fill_halves(c, p, p + h, h, &g);
    s_apply_op(c, p, h, op, q);
    s_apply_op(c, p + h, h, op, q);
    s_inject(c, p, 2 * h);
    g.op = op;
    g.q = q;
    s_verify(c, p, p + h, h, &g);
    s_step(c, 1, 1);
}

/* Both halves count upwards from a random start. */
static void s_sequential_increment(mt_ctx_t *c, uint64_t *p, size_t n)
{
    gen_t g = {.fn = s_gen_seq, .a = fb_mix64(c->seed ^ 0x696E63ULL)};
    s_round_halves(c, p, n, &g);
    s_step(c, 1, 1);
}

/* Two set bits two apart walk up the word and back, next to words holding their complement. */
static void s_bit_spread(mt_ctx_t *c, uint64_t *p, size_t n)
{
    for (unsigned r = 0; r < 128; r++) {
        uint64_t v = s_rotl(0x5, r < 64 ? r : 127 - r);
        s_round_halves_alt(c, p, n, v, ~v);
        s_step(c, r + 1, 128);
    }
}

/* For each bit, eight rounds that flip the whole buffer between a word with that bit alone set
 * (or clear) and its complement: every cell toggles, eight times per bit position. */
static void s_bit_flip(mt_ctx_t *c, uint64_t *p, size_t n)
{
    for (unsigned bit = 0; bit < 64; bit++) {
        uint64_t v = 1ULL << bit;
        for (unsigned r = 0; r < 8; r++) {
            v = ~v;
            s_round_halves_alt(c, p, n, v, ~v);
            s_step(c, bit * 8 + r + 1, 512);
        }
    }
}

/* Every byte of every word holds the same value, for each of the 256 byte values. */
static void s_block_sequential(mt_ctx_t *c, uint64_t *p, size_t n)
{
    for (unsigned r = 0; r < 256; r++) {
        uint64_t v = 0x0101010101010101ULL * r;
        s_round_halves_alt(c, p, n, v, v);
        s_step(c, r + 1, 256);
    }
}

/* ---- table and entry points ------------------------------------------------------------------ */

typedef void (*pattern_fn)(mt_ctx_t *c, uint64_t *p, size_t n);

/* A pattern runs its function, or, where it has none, s_compare with its operator (the six
 * compare_* patterns differ only in the operator). */
static const struct {
    const char *name;
    pattern_fn run;
    unsigned sweeps;
    op_t compare_op;
} s_patterns[MT_N_PATTERNS] = {
    [MT_STUCK_ADDRESS] = {"stuck_address", s_stuck_address, 32},
    [MT_OWN_ADDRESS] = {"own_address", s_own_address, 4},
    [MT_WALKING_ONES] = {"walking_ones", s_walking_ones, 256},
    [MT_WALKING_ZEROS] = {"walking_zeros", s_walking_zeros, 256},
    [MT_CHECKERBOARD] = {"checkerboard", s_checkerboard, 128},
    [MT_SOLID_BITS] = {"solid_bits", s_solid_bits, 128},
    [MT_MOVING_INVERSIONS] = {"moving_inversions", s_moving_inversions, 70},
    [MT_RANDOM] = {"random", s_random, 2},
    [MT_BLOCK_MOVE] = {"block_move", s_block_move, 21},
    [MT_COMPARE_XOR] = {"compare_xor", NULL, 4, OP_XOR},
    [MT_COMPARE_SUB] = {"compare_sub", NULL, 4, OP_SUB},
    [MT_COMPARE_MUL] = {"compare_mul", NULL, 4, OP_MUL},
    [MT_COMPARE_DIV] = {"compare_div", NULL, 4, OP_DIV},
    [MT_COMPARE_OR] = {"compare_or", NULL, 4, OP_OR},
    [MT_COMPARE_AND] = {"compare_and", NULL, 4, OP_AND},
    [MT_SEQUENTIAL_INCREMENT] = {"sequential_increment", s_sequential_increment, 2},
    [MT_BIT_SPREAD] = {"bit_spread", s_bit_spread, 256},
    [MT_BIT_FLIP] = {"bit_flip", s_bit_flip, 1024},
    [MT_BLOCK_SEQUENTIAL] = {"block_sequential", s_block_sequential, 512},
};

const char *mt_pattern_name(mt_pattern_t p)
{
    assert((unsigned)p < MT_N_PATTERNS);
    return s_patterns[p].name;
}

int mt_pattern_from_name(const char *name)
{
    for (int i = 0; i < MT_N_PATTERNS; i++)
        if (name && !strcmp(s_patterns[i].name, name))
            return i;
    return -1;
}

unsigned mt_pattern_sweeps(mt_pattern_t p)
{
    assert((unsigned)p < MT_N_PATTERNS);
    return s_patterns[p].sweeps;
}

int mt_parse_patterns(const char *text, mt_pattern_t **list_out, size_t *n_out, char **bad_out)
{
    /* The shared list parser works on table indices, which are the pattern values. */
    const char *names[MT_N_PATTERNS];
    for (int i = 0; i < MT_N_PATTERNS; i++)
        names[i] = mt_pattern_name((mt_pattern_t)i);
    int *ids = NULL;
    int rc = fb_parse_name_list(text, names, MT_N_PATTERNS, &ids, n_out, bad_out);
    *list_out = NULL;
    if (rc == 0) {
        *list_out = xcalloc(*n_out, sizeof **list_out);
        for (size_t i = 0; i < *n_out; i++)
            (*list_out)[i] = (mt_pattern_t)ids[i];
    }
    free(ids);
    return rc;
}

uint64_t mt_run_pattern(mt_pattern_t p, uint64_t *buf, size_t n_words, mt_ctx_t *ctx)
{
    assert((unsigned)p < MT_N_PATTERNS);
    assert(buf && ((uintptr_t)buf & 7) == 0);
    assert(n_words >= MT_MIN_WORDS);
    uint64_t before = ctx->miscompares;
    ctx->injected = false;
    if (s_patterns[p].run)
        s_patterns[p].run(ctx, buf, n_words);
    else
        s_compare(ctx, buf, n_words, s_patterns[p].compare_op);
    return ctx->miscompares - before;
}

size_t mt_flip_bits(uint64_t *buf, size_t n_words, size_t n_flips, uint64_t seed, size_t *index_out,
                    unsigned *bit_out)
{
    if (n_flips > n_words)
        n_flips = n_words;
    if (n_flips == 0)
        return 0;
    /* One flip per slice keeps the words distinct (two flips of one bit would cancel out). */
    size_t slice = n_words / n_flips;
    for (size_t i = 0; i < n_flips; i++) {
        size_t lo = i * slice;
        size_t width = (i == n_flips - 1) ? n_words - lo : slice;
        uint64_t r = fb_mix64(seed + i);
        size_t word = lo + (size_t)(r % width);
        unsigned bit = (unsigned)(fb_mix64(r) & 63);
        volatile uint64_t *w = &buf[word];
        *w ^= 1ULL << bit;
        if (index_out)
            index_out[i] = word;
        if (bit_out)
            bit_out[i] = bit;
    }
    return n_flips;
}
