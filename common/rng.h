/* SPDX-License-Identifier: Apache-2.0 */
/* The one pseudo-random generator of fleetburn: SplitMix64 (Steele, Lea and Flood, 2014).
 *
 * Every use needs the same three things: output that depends only on the seed (a campaign, a
 * pattern or a simulated fleet replays exactly on every platform), words that differ in every
 * bit between neighbouring inputs (test patterns, step seeds), and speed on a GPU as well as on a
 * host. None needs cryptographic strength; keys come from libsodium, never from here.
 *
 * fb_mix64(x) is a stateless hash of x (the generator's output for state x), for patterns
 * computed from (seed, index) in any order and on any thread; fb_splitmix64(&state) is the
 * generator itself. The header is plain C and also compiles in CUDA and HIP sources, where both
 * functions are callable from device code. */
#ifndef FB_RNG_H
#define FB_RNG_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define FB_RNG_HD __host__ __device__
#else
#define FB_RNG_HD
#endif

/* The generator's increment, 2^64 / golden ratio: odd, so the state visits every value. */
#define FB_RNG_GAMMA 0x9e3779b97f4a7c15ull

/* SplitMix64's output for state x: a bijection of 64-bit words with full avalanche. */
static inline FB_RNG_HD uint64_t fb_mix64(uint64_t x)
{
    x += FB_RNG_GAMMA;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The next word of the sequence seeded with *state. */
static inline FB_RNG_HD uint64_t fb_splitmix64(uint64_t *state)
{
    uint64_t x = *state;
    *state = x + FB_RNG_GAMMA;
    return fb_mix64(x);
}

/* A word as a double uniform in [0, 1): its top 53 bits, every value a multiple of 2^-53. */
static inline FB_RNG_HD double fb_rng_unit(uint64_t word)
{
    return (double)(word >> 11) * 0x1.0p-53;
}

/* Uniform in [0, bound), bound > 0, without modulo bias (rejection sampling: the loop runs
 * more than once with probability below bound / 2^64). */
static inline uint64_t fb_rng_below(uint64_t *state, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do
        x = fb_splitmix64(state);
    while (x >= limit);
    return x % bound;
}

#endif
