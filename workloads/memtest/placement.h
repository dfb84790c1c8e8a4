/* SPDX-License-Identifier: Apache-2.0 */
/* Where memtest's threads run and where their memory lands: the CPUs this process may use, each
 * with its NUMA node from sysfs, ordered round-robin over the nodes; a thread pinned to one of
 * them maps, locks and first-touches its own chunk, so the pages come from that CPU's node.
 * memtest.c and the STREAM-like bound (bench/memstream.c) both place their threads with this, so
 * that a bandwidth measured by one can be compared with the other. */
#ifndef FB_MEMTEST_PLACEMENT_H
#define FB_MEMTEST_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_MAX_CPUS 8192 /* size of the CPU sets used for affinity */

typedef struct {
    int cpu, node;
} mt_cpu_slot_t;

/* Receives one line about sysfs content that was ignored (an unparsable cpulist). */
typedef void (*mt_note_fn)(void *user, const char *line);

/* The CPUs this process may run on (its affinity mask), each with its node from
 * ROOT/sys/devices/system/node/nodeN/cpulist, ordered so that any prefix of the list spreads over
 * every node. A CPU no node lists counts as node 0. Returns the count (0 when the affinity mask is
 * empty); *out is a heap array of at least one slot (caller frees). */
size_t mt_cpu_slots(const char *root, mt_note_fn note, void *user, mt_cpu_slot_t **out);

/* Distinct NUMA nodes among the first n slots. */
unsigned mt_count_nodes(const mt_cpu_slot_t *slots, size_t n);

/* Threads for size bytes: asked (0 = one per slot), never so many that a chunk is under a page. */
size_t mt_thread_count(uint64_t size, uint64_t asked, size_t n_slots, size_t page);

/* One thread's memory. */
typedef struct {
    void *buf; /* NULL until mapped */
    size_t bytes;
    int map_err;  /* errno of mmap, 0 when mapped */
    int lock_err; /* errno of mlock, 0 when locked or not asked */
    int pin_err;  /* errno of sched_setaffinity, 0 when pinned */
} mt_chunk_t;

/* From the thread that will use it: pins the calling thread to cpu, maps bytes (asking for
 * transparent huge pages), locks them when lock is set, and touches every page that is not locked
 * so that first touch places it on cpu's node. Errors are left in the chunk. */
void mt_chunk_setup(mt_chunk_t *c, int cpu, size_t bytes, bool lock);
/* Unmaps the chunk (NULL-safe on an unmapped one). */
void mt_chunk_release(mt_chunk_t *c);

#endif
