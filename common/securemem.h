/* SPDX-License-Identifier: Apache-2.0 */
/* Secure memory for libzmq's CURVE in the processes that hold thousands of connections: the
 * coordinator and fleetburn-simfleet.
 *
 * libzmq keeps CURVE secrets (long-term and session keys, handshake plaintext) in memory from
 * libsodium's sodium_malloc, which maps every allocation with guard pages of its own: about six
 * mmap/mprotect/munmap rounds per handshake, each a TLB shootdown on every core the process runs
 * on. With 4096 agents registering at once that cost dominated the coordinator's CPU time
 * (bench/results, docs/security.md "Secure memory"). A process that calls fb_securemem_use()
 * provides sodium_malloc, sodium_allocarray and sodium_free itself (the dynamic linker resolves
 * libzmq's calls to the executable's definitions first): blocks of a few size classes carved from
 * chunks that are locked in RAM (mlock, where RLIMIT_MEMLOCK allows), excluded from core dumps
 * (MADV_DONTDUMP) and zeroed when freed. What is given up is the per-allocation guard page and
 * canary, which catch overflows inside libzmq. Larger requests go to libsodium's own allocator,
 * and so does everything with FLEETBURN_SECUREMEM=libsodium in the environment.
 * Thread-safe: libzmq's I/O threads allocate concurrently. */
#ifndef FB_SECUREMEM_H
#define FB_SECUREMEM_H

#include <stdbool.h>
#include <stddef.h>

/* Links the allocator into the program (call once from main); returns whether its chunks can
 * be locked in RAM (false: RLIMIT_MEMLOCK too low; they are still zeroed and not dumped). */
bool fb_securemem_use(void);
/* Whether p came from this allocator (tests). */
bool fb_securemem_owns(const void *p);
/* Blocks handed out and not yet freed; blocks handed out since the start. */
size_t fb_securemem_in_use(void);
size_t fb_securemem_served(void);

/* The libsodium entry points this module provides (same contracts as libsodium's). */
void *sodium_malloc(size_t size);
void *sodium_allocarray(size_t count, size_t size);
void sodium_free(void *ptr);

#endif
