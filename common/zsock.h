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

typedef struct fb_zsock fb_zsock_t;

/* Called once per received message. For a ROUTER the first frame is the peer identity:
 * frames[0]/lens[0] identity, frames[1] payload. Frames are valid only during the call. */
typedef void (*fb_zsock_recv_cb)(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens,
                              size_t n_frames, void *arg);

/* Creates a ZeroMQ socket of type with the limits every fleetburn socket carries:
 * ZMQ_MAXMSGSIZE = FB_WIRE_MAX_FRAME, so a peer that announces a bigger frame is disconnected by
 * libzmq before its payload is buffered. Every socket of the project is made here (never with
 * zmq_socket directly); options apply to the endpoints bound or connected afterwards. NULL with
 * errno when libzmq refuses. */
void *fb_zsock_new_socket(void *zctx, int type);
/* Wraps an existing ZeroMQ socket (ownership of zsocket passes to zs: closed in fb_zsock_close). */
fb_zsock_t *fb_zsock_new(uv_loop_t *loop, void *zsocket, fb_zsock_recv_cb cb, void *arg);
/* Stops watching, closes the ZeroMQ socket (linger 0) and frees zs once libuv has closed its
 * handles. NULL-safe; nulls the pointer. */
void fb_zsock_close(fb_zsock_t **zs_p);
/* The same, but libzmq keeps sending what is queued for up to linger_ms after the close (the
 * context's termination waits for it): for a last message such as an agent's goodbye. */
void fb_zsock_close_linger(fb_zsock_t **zs_p, int linger_ms);
/* Sends one message of n frames without blocking. Returns 0, -EAGAIN when the high-water mark
 * is reached (the message is dropped), -EHOSTUNREACH for an unknown ROUTER peer, or -errno. */
int fb_zsock_send(fb_zsock_t *zs, const void *const *frames, const size_t *lens, size_t n_frames);
void *fb_zsock_socket(fb_zsock_t *zs);
/* Handles every message already queued on the socket now (the receive callback runs for each),
 * without waiting for the loop to notice them: a timer that judges a peer's silence reads what
 * the peer sent before it judges. Does nothing inside a receive callback or once closing. */
void fb_zsock_drain(fb_zsock_t *zs);
/* How often the safety timer drains (default 100 ms): the longest a lost edge can delay a
 * message. A process with thousands of sockets (a simulated fleet) spends less on it with a
 * longer interval. 0 stops it: for an owner that calls fb_zsock_drain on a timer of its own. */
void fb_zsock_set_safety_ms(fb_zsock_t *zs, uint64_t ms);

/* During a receive callback, about the message being handled: the ZAP User-Id its connection was
 * accepted with (the peer's CURVE public key in Z85 on a keyed coordinator; NULL without one),
 * the peer's address ("?" when unknown), and the file descriptor of its connection (-1 when
 * unknown). */
const char *fb_zsock_peer_user_id(fb_zsock_t *zs);
const char *fb_zsock_peer_address(fb_zsock_t *zs);
int fb_zsock_peer_fd(fb_zsock_t *zs);

/* A socket monitor (zmq_socket_monitor) read on the loop: cb gets each event among events
 * (ZMQ_EVENT_* bits) with its value (a file descriptor, an error or ZAP status code) and the
 * endpoint. Make it before the watched socket connects: libzmq drops the events of a socket
 * nobody watches yet (a lost "connected" hides the disconnect that follows, a lost refusal the
 * reason). Close it with fb_zsock_close before the watched socket. NULL with errno on failure. */
/* The events of a refused handshake (keys, protocol), for a monitor that explains refusals; the
 * includer includes zmq.h. */
#define FB_ZSOCK_HANDSHAKE_FAILED                                                                  \
    (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |                  \
     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
typedef void (*fb_zsock_event_cb)(unsigned event, uint32_t value, const char *endpoint, void *arg);
fb_zsock_t *fb_zsock_monitor_new(uv_loop_t *loop, void *zctx, void *watched, int events,
                           fb_zsock_event_cb cb, void *arg);

#endif
