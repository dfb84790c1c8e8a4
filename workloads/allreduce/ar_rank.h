/* SPDX-License-Identifier: Apache-2.0 */
/* Where a rank of an mpirun launch runs: which member of the group (and so which fleetburn node)
 * holds it. mpirun starts ranks by host address; findings must name nodes as the coordinator
 * knows them. The launcher exports the group to every rank (-x):
 *   FLEETBURN_AR_NODES  member node names by group rank, comma-separated
 *   FLEETBURN_AR_ADDRS  the addresses mpirun was given for them ("" for localhost)
 *   FLEETBURN_AR_SLOTS  ranks per member
 * A rank finds its member by its own interface addresses, then by host name, then by its place
 * in the slot order (the launcher passes --map-by slot). Used by fleetburn-mpirank and the GPU
 * rank binaries. */
#ifndef FB_AR_RANK_H
#define FB_AR_RANK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The decision itself, without I/O (unit-tested): the member index for world rank `rank`, or -1
 * when nothing identifies it. local_addrs: this host's numeric addresses; hostname may be NULL. */
int ar_rank_pick_member(unsigned rank, const char *nodes, const char *addrs, const char *slots,
                        const char *const *local_addrs, size_t n_local, const char *hostname);

/* This process's node name from the environment above, into node (len bytes): the member's
 * name, or the host name when the variables are absent (a manual mpirun). */
void ar_rank_node(unsigned rank, char *node, size_t len);

#ifdef __cplusplus
}
#endif

#endif
