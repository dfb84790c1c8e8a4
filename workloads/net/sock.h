/* SPDX-License-Identifier: Apache-2.0 */
/* TCP helpers for the network workloads: listening on an ephemeral port of one address,
 * connecting from a given local address, accepting and moving whole buffers, each bounded by a
 * deadline (fb_mono_ms clock) so that a partner that vanishes ends a call with -ETIMEDOUT instead
 * of hanging a worker. Sockets are blocking and close-on-exec; every send uses MSG_NOSIGNAL.
 * Functions return a descriptor or 0 on success and a negative errno on failure; those that can
 * fail for reasons a person must read also write a sentence into err. */
#ifndef FB_NET_SOCK_H
#define FB_NET_SOCK_H

#include <stddef.h>
#include <stdint.h>

/* Listens on address ("" or NULL: every address, IPv6 and IPv4) on a port the kernel picks.
 * Returns the descriptor and sets *port. */
int nsock_listen(const char *address, int backlog, uint16_t *port, char *err, size_t errlen);

/* Connects to host:port (a literal or a name) within timeout_ms. When local is not empty the
 * socket is bound to that address first, so traffic leaves through the interface that holds
 * it. Returns the descriptor. */
int nsock_connect(const char *host, uint16_t port, const char *local, uint64_t timeout_ms,
                  char *err, size_t errlen);

/* Accepts one connection before deadline_ms; peer gets its address as text. Returns the
 * descriptor, -ETIMEDOUT, or another negative errno. */
int nsock_accept(int lfd, uint64_t deadline_ms, char *peer, size_t peerlen);

/* Sends / receives exactly len bytes before deadline_ms. Returns 0, -ETIMEDOUT, -ECONNRESET
 * when the other end closed the connection (recv: end of stream), or another negative errno. */
int nsock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ms);
int nsock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ms);

/* Waits up to timeout_ms for fd to become readable: 1 readable (or closed), 0 not yet,
 * negative errno. */
int nsock_wait_readable(int fd, uint64_t timeout_ms);

/* Sets SO_RCVTIMEO and SO_SNDTIMEO (so that worker threads look at their stop flags),
 * TCP_USER_TIMEOUT (so that a peer that disappears without closing is given up) and
 * TCP_NODELAY as asked. Returns 0 or a negative errno. */
int nsock_tune(int fd, unsigned io_timeout_ms, unsigned user_timeout_ms, int nodelay);

#endif
