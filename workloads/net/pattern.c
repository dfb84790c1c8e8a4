/* SPDX-License-Identifier: Apache-2.0 */
/* The netbw data pattern: a seeded 4 KiB reference block whose first 8 bytes are replaced by a
 * per-block stamp. Generating and checking cost one store per block on the sender and one
 * memcmp per block on the receiver; a mismatch is located to the byte only when memcmp has
 * already said that there is one. */
#include "pattern.h"

#include "common/rng.h"
#include <string.h>

void np_init(np_pattern_t *p, uint64_t seed)
{
    p->seed = seed;
    uint64_t state = seed;
    for (size_t i = 0; i < NP_BLOCK; i += 8) {
        uint64_t w = fb_splitmix64(&state);
        memcpy(p->ref + i, &w, 8);
    }
}

uint64_t np_stamp(const np_pattern_t *p, uint64_t k)
{
    /* Odd multiplier: distinct blocks get distinct stamps. */
    return p->seed ^ (k * 0xd6e8feb86659fd93ull + 0x5bd1e9955bd1e995ull);
}

void np_fill(const np_pattern_t *p, uint8_t *buf, size_t len)
{
    for (size_t off = 0; off + NP_BLOCK <= len; off += NP_BLOCK)
        memcpy(buf + off, p->ref, NP_BLOCK);
}

void np_stamp_chunk(const np_pattern_t *p, uint8_t *buf, size_t len, uint64_t first_block)
{
    for (size_t off = 0, k = 0; off + NP_BLOCK <= len; off += NP_BLOCK, k++) {
        uint64_t s = np_stamp(p, first_block + k);
        memcpy(buf + off, &s, NP_STAMP);
    }
}

/* The expected bytes of a block from offset `in` on, for n bytes within the block. */
static void s_expected(const np_pattern_t *p, uint64_t block, size_t in, size_t n, uint8_t *out)
{
    uint8_t stamp[NP_STAMP];
    uint64_t s = np_stamp(p, block);
    memcpy(stamp, &s, NP_STAMP);
    for (size_t i = 0; i < n; i++)
        out[i] = in + i < NP_STAMP ? stamp[in + i] : p->ref[in + i];
}

/* Records the first wrong byte of the piece data[0..n) that starts at block offset `in`. */
static void s_locate(const np_pattern_t *p, np_check_t *c, uint64_t block, size_t in,
                     const uint8_t *data, size_t n)
{
    uint8_t exp[NP_BLOCK];
    s_expected(p, block, in, n, exp);
    size_t i = 0;
    while (i < n && exp[i] == data[i])
        i++;
    size_t w = n - i < 8 ? n - i : 8;
    uint64_t e = 0, a = 0;
    memcpy(&e, exp + i, w);
    memcpy(&a, data + i, w);
    c->first_offset = c->pos + i;
    c->first_expected = e;
    c->first_actual = a;
}

/* Checks data[0..n), which lies inside one block starting at block offset `in`. */
static bool s_piece_ok(const np_pattern_t *p, uint64_t block, size_t in, const uint8_t *data,
                       size_t n)
{
    size_t done = 0;
    if (in < NP_STAMP) {
        uint8_t stamp[NP_STAMP];
        uint64_t s = np_stamp(p, block);
        memcpy(stamp, &s, NP_STAMP);
        done = NP_STAMP - in < n ? NP_STAMP - in : n;
        if (memcmp(data, stamp + in, done))
            return false;
    }
    return memcmp(data + done, p->ref + in + done, n - done) == 0;
}

uint64_t np_check(const np_pattern_t *p, np_check_t *c, const uint8_t *data, size_t len)
{
    uint64_t found = 0;
    while (len) {
        uint64_t block = c->pos / NP_BLOCK;
        size_t in = (size_t)(c->pos % NP_BLOCK);
        size_t n = NP_BLOCK - in < len ? NP_BLOCK - in : len;
        if (!s_piece_ok(p, block, in, data, n)) {
            /* A block split over two reads is counted once. */
            if (!c->corrupt_blocks || c->last_bad_block != block) {
                if (!c->corrupt_blocks)
                    s_locate(p, c, block, in, data, n);
                c->corrupt_blocks++;
                c->last_bad_block = block;
                found++;
            }
        }
        c->pos += n;
        data += n;
        len -= n;
    }
    return found;
}
