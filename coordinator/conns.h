/* SPDX-License-Identifier: Apache-2.0 */
/* Connection limits of the coordinator's ROUTER socket: how many connections it holds at once,
 * in total and from one peer address, and how long a connection may take to complete its
 * ZeroMQ handshake. libzmq has no such limits itself; this module watches the socket's monitor
 * (ZMQ_EVENT_ACCEPTED / ZMQ_EVENT_DISCONNECTED, read on the loop through zsock) and ends a
 * connection over a limit with shutdown(2) on its descriptor, which libzmq then closes as a
 * disconnect. docs/security.md ("Limits") says what each limit is for. */
#ifndef FB_CONNS_H
#define FB_CONNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#define CONNS_DEFAULT_PER_ADDRESS 64
/* The derived default of the total limit never exceeds this (an idle connection costs libzmq
 * buffers; a larger fleet sets --max-connections). */
#define CONNS_DEFAULT_MAX 65536
/* Descriptors kept for everything else of the process: database and its journal, logs, the
 * loop's and libzmq's own descriptors, campaign files being read. */
#define CONNS_FD_RESERVE 128
/* Fewer connections than this fitting the descriptor limit earns a warning at start. */
#define CONNS_WARN_BELOW 1024
#define CONNS_HANDSHAKE_MS 5000
/* At most one log line about refused connections per interval; the rest are counted. */
#define CONNS_LOG_INTERVAL_MS 10000

typedef struct conns conns_t;

/* A peer's connection descriptor, to end the connection later (a revoked key): the descriptor's
 * number alone is not enough, because once the connection closes libzmq's next accepted
 * connection may get the same number. */
typedef struct {
    int fd; /* -1: unknown */
    struct sockaddr_storage peer;
    socklen_t peer_len; /* 0: unknown */
} conns_peer_fd_t;

/* Remembers fd (may be -1) and where it leads now. */
void conns_peer_fd_remember(conns_peer_fd_t *self, int fd);
/* Ends the connection with shutdown(2) if the descriptor still leads to the peer it did when
 * remembered; true if it did. Forgets the descriptor either way. */
bool conns_peer_fd_end(conns_peer_fd_t *self);

typedef struct {
    unsigned max_total;       /* 0: derived from the descriptor limit (conns_fit_total) */
    unsigned max_per_address; /* 0: no limit per address */
    unsigned handshake_ms;    /* 0: CONNS_HANDSHAKE_MS */
} conns_limits_t;

/* Puts limits on router, a ROUTER socket of zctx that is not bound yet (libzmq copies socket
 * options at bind): sets ZMQ_HANDSHAKE_IVL, raises RLIMIT_NOFILE's soft limit to its hard limit
 * and fits the total limit into it (logging a warning that says what to raise where it does not
 * fit), and starts watching the socket's monitor on loop. The context must have one I/O thread
 * (the default), so that a connection's events arrive in order. NULL with err when the monitor
 * cannot be set up. */
conns_t *conns_new(uv_loop_t *loop, void *zctx, void *router, const conns_limits_t *limits,
                   char *err, size_t errlen);
/* Stops the monitor (call while router is still open) and frees self once the loop has closed
 * its handles. NULL-safe; nulls the pointer. */
void conns_destroy(conns_t **self_p);
/* Connections admitted and still open. */
size_t conns_open(const conns_t *self);
/* The total limit in force. */
unsigned conns_max_total(const conns_t *self);

/* The total limit that fits fd_limit descriptors with a reserve kept for the rest of the
 * process: requested (0: the default, at most CONNS_DEFAULT_MAX) or less. Returns 1 with a
 * warning in warn when requested had to be lowered, or when fewer than CONNS_WARN_BELOW
 * connections fit; else 0. */
int conns_fit_total(unsigned requested, uint64_t fd_limit, unsigned *total_out, char *warn,
                    size_t warnlen);

#endif
