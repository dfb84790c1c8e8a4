/* SPDX-License-Identifier: Apache-2.0 */
/* One direction of a netbw bandwidth test: a thread per TCP stream on each side. Senders push
 * the checked pattern (pattern.h) until told to stop; receivers count and check every byte
 * until the sender closes. Byte counters are read while the threads run, which is how the
 * caller measures a window that leaves the warm-up out.
 *
 * Stream i is seeded with seed + i on both sides. Threads look at their flags at least every
 * NB_IO_TICK_MS, so stopping never waits on a blocked socket for longer than that. */
#ifndef FB_NET_STREAMS_H
#define FB_NET_STREAMS_H

#include "pattern.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NB_IO_TICK_MS 200u

typedef struct nb_tx nb_tx_t;
typedef struct nb_rx nb_rx_t;

/* Starts n sending threads, one per connected socket in fds (taken over: closed by
 * nb_tx_finish). inject_corrupt (test-only) flips one bit in that many blocks of stream 0, one
 * per 128 KiB chunk, after the first 8 chunks. */
nb_tx_t *nb_tx_start(const int *fds, unsigned n, uint64_t seed, unsigned inject_corrupt);
/* Bytes handed to the kernel so far by all streams. */
uint64_t nb_tx_bytes(nb_tx_t *tx);
/* True once a stream has failed (its error comes from nb_tx_finish). */
bool nb_tx_failed(nb_tx_t *tx);
/* Stops the senders, closes the sockets (after reading their retransmission counts) and joins
 * the threads. Returns 0 or the first stream's error, described in err. */
int nb_tx_finish(nb_tx_t *tx, char *err, size_t errlen);
/* Segments retransmitted over all streams (TCP_INFO; valid after nb_tx_finish). */
uint64_t nb_tx_retransmits(const nb_tx_t *tx);
void nb_tx_destroy(nb_tx_t **self_p);

/* Starts n receiving threads over fds (taken over). */
nb_rx_t *nb_rx_start(const int *fds, unsigned n, uint64_t seed);
/* Bytes received so far by all streams. */
uint64_t nb_rx_bytes(nb_rx_t *rx);
/* True once a stream has failed or ended before nb_rx_expect_end. */
bool nb_rx_failed(nb_rx_t *rx);
/* From now on the end of a stream is expected (the sender was told to stop). */
void nb_rx_expect_end(nb_rx_t *rx);
/* Waits until every stream has ended, at most until deadline_ms, then joins the threads and
 * closes the sockets. Returns 0, or the first error (-ETIMEDOUT when a stream did not end). */
int nb_rx_finish(nb_rx_t *rx, uint64_t deadline_ms, char *err, size_t errlen);
/* Corrupt blocks over all streams; *first (when not NULL and some) gets the check state of the
 * first stream that had any, and *stream its index. Valid after nb_rx_finish. */
uint64_t nb_rx_corruption(const nb_rx_t *rx, np_check_t *first, unsigned *stream);
void nb_rx_destroy(nb_rx_t **self_p);

#endif
