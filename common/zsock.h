/* SPDX-License-Identifier: Apache-2.0 */
/* A ZeroMQ socket driven by a libuv loop.
 *
 * ZMQ_FD is edge-triggered: it signals only when ZMQ_EVENTS changed, and a zmq_send can consume
 * the edge for pending input. So every readable callback drains until ZMQ_EVENTS shows no POLLIN,
 * and every send schedules another drain on the next loop iteration (never re-entering the
 * receive callback from inside a send). The socket belongs to the loop's thread. */
#ifndef FB_ZSOCK_H
#define FB_ZSOCK_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct zsock zsock_t;

/* Called once per received message. For a ROUTER the first frame is the peer identity:
 * frames[0]/lens[0] identity, frames[1] payload. Frames are valid only during the call. */
typedef void (*zsock_recv_cb)(zsock_t *zs, const uint8_t *const *frames, const size_t *lens,
                              size_t n_frames, void *arg);

/* Wraps an existing ZeroMQ socket (ownership of zsocket passes to zs: closed in zsock_close). */
zsock_t *zsock_new(uv_loop_t *loop, void *zsocket, zsock_recv_cb cb, void *arg);
/* Stops watching, closes the ZeroMQ socket (linger 0) and frees zs once libuv has closed its
 * handles. NULL-safe; nulls the pointer. */
void zsock_close(zsock_t **zs_p);
/* Sends one message of n frames without blocking. Returns 0, -EAGAIN when the high-water mark
 * is reached (the message is dropped), -EHOSTUNREACH for an unknown ROUTER peer, or -errno. */
int zsock_send(zsock_t *zs, const void *const *frames, const size_t *lens, size_t n_frames);
void *zsock_socket(zsock_t *zs);
/* How often the safety timer drains (default 100 ms): the longest a lost edge can delay a
 * message. A process with thousands of sockets (a simulated fleet) spends less on it with a
 * longer interval. */
void zsock_set_safety_ms(zsock_t *zs, uint64_t ms);

#endif
