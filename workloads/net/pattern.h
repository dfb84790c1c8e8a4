/* SPDX-License-Identifier: Apache-2.0 */
/* The checked data pattern netbw streams carry, so that a receiver can tell a corrupted byte
 * from a good one without a second copy of the data.
 *
 * A stream is a sequence of 4 KiB blocks. Block k starts with an 8-byte stamp derived from the
 * stream's seed and k (so a block that arrives twice, is lost or lands in the wrong stream
 * fails), and the remaining bytes come from one 4 KiB reference block generated from the seed.
 * The sender stamps the blocks of a chunk before it sends it (one store per block); the receiver
 * compares what it reads against the reference with memcmp, which keeps checking far cheaper
 * than the copy out of the socket. */
#ifndef FB_NET_PATTERN_H
#define FB_NET_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NP_BLOCK 4096u
#define NP_STAMP 8u

typedef struct {
    uint64_t seed;
    uint8_t ref[NP_BLOCK]; /* bytes [NP_STAMP, NP_BLOCK) are the body of every block */
} np_pattern_t;

/* Fills the reference block of a stream from seed. */
void np_init(np_pattern_t *p, uint64_t seed);
/* The stamp of block k. */
uint64_t np_stamp(const np_pattern_t *p, uint64_t k);
/* Fills buf (len a multiple of NP_BLOCK) with bodies; stamps come from np_stamp_chunk. */
void np_fill(const np_pattern_t *p, uint8_t *buf, size_t len);
/* Writes the stamps of blocks first_block, first_block+1, ... into buf (len a multiple of
 * NP_BLOCK). */
void np_stamp_chunk(const np_pattern_t *p, uint8_t *buf, size_t len, uint64_t first_block);

/* The receiving side's position in a stream and what it has found. */
typedef struct {
    uint64_t pos;            /* stream bytes checked so far */
    uint64_t corrupt_blocks; /* blocks with at least one wrong byte */
    uint64_t last_bad_block; /* last block counted (valid when corrupt_blocks > 0) */
    /* The first wrong byte: stream offset, and the 8 bytes from there as expected and as read
     * (fewer when the read ended first; both zero-padded, little-endian). */
    uint64_t first_offset, first_expected, first_actual;
} np_check_t;

/* Checks the next len bytes of the stream (any split of the stream into reads gives the same
 * answer). Returns the number of blocks newly found corrupt by this call. */
uint64_t np_check(const np_pattern_t *p, np_check_t *c, const uint8_t *data, size_t len);

#endif
