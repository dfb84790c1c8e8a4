/* SPDX-License-Identifier: Apache-2.0 */
/* The memtest pattern engine: each pattern writes a buffer of 64-bit words, reads it back and
 * reports every word that differs from what was written. It knows nothing about threads, NUMA or
 * results; memtest.c runs it on each thread's chunk, and the unit tests run it on small buffers.
 *
 * Contract for every pattern: the buffer is 8-byte aligned and at least MT_MIN_WORDS long; every
 * word of it is verified at least once (the half-buffer tests leave up to three words at the end
 * to the other patterns); a difference is reported with the exact value read (no re-read, so a
 * transient error is reported as seen); the injection hook, when set, runs once per pattern
 * between its first write of the buffer and the first read that checks it. */
#ifndef FB_MEMTEST_PATTERNS_H
#define FB_MEMTEST_PATTERNS_H

#include "common/rng.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The patterns, in the order `patterns=all` runs them. */
typedef enum {
    MT_STUCK_ADDRESS,
    MT_OWN_ADDRESS,
    MT_WALKING_ONES,
    MT_WALKING_ZEROS,
    MT_CHECKERBOARD,
    MT_SOLID_BITS,
    MT_MOVING_INVERSIONS,
    MT_RANDOM,
    MT_BLOCK_MOVE,
    MT_COMPARE_XOR,
    MT_COMPARE_SUB,
    MT_COMPARE_MUL,
    MT_COMPARE_DIV,
    MT_COMPARE_OR,
    MT_COMPARE_AND,
    MT_SEQUENTIAL_INCREMENT,
    MT_BIT_SPREAD,
    MT_BIT_FLIP,
    MT_BLOCK_SEQUENTIAL,
    MT_N_PATTERNS
} mt_pattern_t;

/* Smallest buffer a pattern accepts (the half-buffer tests need two aligned halves). */
#define MT_MIN_WORDS 4

/* One word that read back differently from what was written. */
typedef struct {
    const uint64_t *addr; /* the word, in the tested buffer */
    uint64_t expected, actual;
} mt_miscompare_t;

typedef struct mt_ctx mt_ctx_t;
struct mt_ctx {
    /* Inputs, set by the caller. */
    uint64_t seed; /* drives random, block_move and compare_* data, and their operands */
    /* Fault injection (tests and the inject_bitflips switch): called once per pattern run, after
     * the buffer is written and before it is first verified. NULL: no injection. */
    void (*inject)(mt_ctx_t *ctx, uint64_t *buf, size_t n_words);
    /* Called for every miscompare, from the thread running the pattern. NULL: count only. */
    void (*report)(mt_ctx_t *ctx, const mt_miscompare_t *m);
    /* Called after each sweep over the buffer with the fraction of this pattern done. */
    void (*progress)(mt_ctx_t *ctx, double fraction);
    void *user;
    /* Outputs, accumulated over runs. */
    uint64_t bytes;       /* bytes written plus bytes read by the patterns */
    uint64_t miscompares; /* words reported */
    /* Private to patterns.c. */
    bool injected;
};

/* The pattern's name as campaigns spell it ("moving_inversions"). */
const char *mt_pattern_name(mt_pattern_t p);
/* The pattern called name, or -1. */
int mt_pattern_from_name(const char *name);
/* How many times the pattern sweeps its buffer (a write, a read, or a read-modify-write counted
 * as two): relative run time, for progress. */
unsigned mt_pattern_sweeps(mt_pattern_t p);

/* Parses "all" or a comma-separated list of names into a heap array the caller frees. Returns 0,
 * or -EINVAL with *bad_out (caller frees, may be NULL) set to the first name not understood. */
int mt_parse_patterns(const char *text, mt_pattern_t **list_out, size_t *n_out, char **bad_out);

/* Runs one pattern over buf[0..n_words) (n_words >= MT_MIN_WORDS). Returns the number of
 * miscompares found by this run (also added to ctx->miscompares). */
uint64_t mt_run_pattern(mt_pattern_t p, uint64_t *buf, size_t n_words, mt_ctx_t *ctx);

/* Fault injection: flips one bit in each of n_flips distinct words of buf, spread over the buffer
 * (one random word and bit in each of n_flips equal slices), chosen from seed. Returns the number
 * of bits flipped (n_flips, or n_words when the buffer is smaller). The word indices and bits go to
 * index_out / bit_out when not NULL (arrays of n_flips). */
size_t mt_flip_bits(uint64_t *buf, size_t n_words, size_t n_flips, uint64_t seed, size_t *index_out,
                    unsigned *bit_out);

#endif
