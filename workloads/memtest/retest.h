/* SPDX-License-Identifier: Apache-2.0 */
/* Retesting the page of a miscompare to tell a cell that fails every time (stuck) from one that
 * failed once (transient: a soft error, or a fault that needs the whole buffer's access pattern
 * to show). The page is the same virtual page the pattern failed in, still mapped and locked, so
 * it is the same physical page unless the kernel moved it (the caller checks with pagemap). Each
 * round writes the page with six backgrounds in turn (the value expected at the failing word, its
 * complement, all zeros, all ones, 0x55.. and 0xAA..), evicts it from the CPU caches so that the
 * read-back comes from DRAM, and compares every word; then it re-runs the pattern that failed
 * over the page. */
#ifndef FB_MEMTEST_RETEST_H
#define FB_MEMTEST_RETEST_H

#include "patterns.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Test-only fault injection: called after every write of the page and before its read-back. */
typedef void (*mt_retest_hook)(void *user, uint64_t *page, size_t n_words);

typedef struct {
    unsigned rounds;        /* rounds run */
    unsigned failed_rounds; /* rounds in which any word of the page read back wrong */
    unsigned word_rounds; /* rounds in which the word of the original miscompare read back wrong */
    uint64_t miscompares; /* words that read back wrong, all rounds and checks together */
    uint64_t word_xor;    /* bits that differed at the original word, all rounds */
    bool flushed;         /* the read-backs came from DRAM (false: this CPU has no cache-line
                             eviction fleetburn knows, so they may have come from the cache) */
} mt_retest_t;

/* Retests page[0..n_words) (n_words >= MT_MIN_WORDS), where word index word failed with expected
 * value expected in pattern (run again with seed). hook may be NULL. */
void mt_retest_page(uint64_t *page, size_t n_words, size_t word, uint64_t expected,
                    mt_pattern_t pattern, uint64_t seed, unsigned rounds, mt_retest_hook hook,
                    void *user, mt_retest_t *out);

/* True when the retest reproduced the failure at the same word: a stuck (hard) fault. */
bool mt_retest_stuck(const mt_retest_t *r);

#endif
