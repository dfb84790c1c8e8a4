/* SPDX-License-Identifier: Apache-2.0 */
/* The threads that move data in one netbw direction. A sender sends 128 KiB chunks whose block
 * stamps it rewrites before each chunk; a partial send resumes inside the chunk, so the stream
 * is the pattern byte for byte whatever the kernel accepts. A receiver reads 256 KiB at a time,
 * checks it and adds it to its counter. Every stream has its own counter, in its own
 * allocation, so that the threads do not share a cache line. */
#include "streams.h"

#include "common/util.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NB_CHUNK (128u * 1024u)
#define NB_RXBUF (256u * 1024u)
#define NB_BLOCKS_PER_CHUNK (NB_CHUNK / NP_BLOCK)
/* Where an injected bit flip goes: inside the body of the chunk's second block. */
#define NB_FLIP_AT (NP_BLOCK + 100u)
#define NB_INJECT_AFTER_CHUNKS 8u

typedef struct group group_t;

typedef struct {
    _Atomic uint64_t bytes;
    _Atomic bool ended; /* receiver: the thread has returned */
    group_t *g;
    int fd;
    unsigned index;
    unsigned inject; /* sender, test-only */
    pthread_t thread;
    bool started;
    int err;          /* negative errno, written by the thread before it returns */
    const char *what; /* what failed, static text */
    bool syscall;     /* what names a system call: err's text follows it */
    unsigned err_seq; /* order among the group's failures: the first is the cause */
    uint64_t retransmits;
    np_pattern_t pattern;
    np_check_t check;
} stream_t;

struct group {
    stream_t **s;
    unsigned n;
    atomic_bool stop;       /* sender: set by nb_tx_finish; receiver: give up */
    atomic_bool expect_end; /* receiver: the end of a stream is no longer an error */
    atomic_bool failed;
    atomic_uint failures;
};

struct nb_tx {
    group_t g;
};

struct nb_rx {
    group_t g;
};

static void s_fail(stream_t *s, int err, const char *what, bool syscall)
{
    s->err = err;
    s->what = what;
    s->syscall = syscall;
    s->err_seq = atomic_fetch_add(&s->g->failures, 1);
    atomic_store(&s->g->failed, true);
}

static void s_group_init(group_t *g, const int *fds, unsigned n, uint64_t seed)
{
    g->s = xcalloc(n, sizeof *g->s);
    g->n = n;
    atomic_init(&g->stop, false);
    atomic_init(&g->expect_end, false);
    atomic_init(&g->failed, false);
    atomic_init(&g->failures, 0);
    for (unsigned i = 0; i < n; i++) {
        stream_t *s = xcalloc(1, sizeof *s);
        atomic_init(&s->bytes, 0);
        atomic_init(&s->ended, false);
        s->g = g;
        s->fd = fds[i];
        s->index = i;
        np_init(&s->pattern, seed + i);
        g->s[i] = s;
    }
}

static void s_group_start(group_t *g, void *(*fn)(void *))
{
    for (unsigned i = 0; i < g->n; i++) {
        stream_t *s = g->s[i];
        s->started = pthread_create(&s->thread, NULL, fn, s) == 0;
        if (!s->started) {
            s_fail(s, -EAGAIN, "cannot start a thread", false);
            atomic_store(&s->ended, true);
        }
    }
}

static uint64_t s_group_bytes(group_t *g)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < g->n; i++)
        sum += atomic_load_explicit(&g->s[i]->bytes, memory_order_relaxed);
    return sum;
}

/* Joins the threads, closes the sockets, and describes the error that came first (the others
 * are usually its consequences). */
static int s_group_join(group_t *g, char *err, size_t errlen)
{
    stream_t *first = NULL;
    for (unsigned i = 0; i < g->n; i++) {
        stream_t *s = g->s[i];
        if (s->started)
            pthread_join(s->thread, NULL);
        s->started = false;
        if (s->fd >= 0)
            close(s->fd);
        s->fd = -1;
        if (s->err && (!first || s->err_seq < first->err_seq))
            first = s;
    }
    if (!first)
        return 0;
    snprintf(err, errlen, "stream %u: %s%s%s", first->index, first->what,
             first->syscall ? ": " : "", first->syscall ? strerror(-first->err) : "");
    return first->err;
}

static void s_group_destroy(group_t *g)
{
    char unused[8];
    atomic_store(&g->stop, true);
    s_group_join(g, unused, sizeof unused);
    for (unsigned i = 0; i < g->n; i++)
        free(g->s[i]);
    free(g->s);
}

/* ---- sending ----------------------------------------------------------------------------- */

static uint64_t s_retransmits(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
        return 0;
    return info.tcpi_total_retrans;
}

/* Rewrites the chunk for its next position in the stream: stamps, and the test-only flip. */
static void s_next_chunk(stream_t *s, uint8_t *buf, uint64_t chunk, bool *flipped,
                         unsigned *injected)
{
    if (*flipped)
        buf[NB_FLIP_AT] ^= 0x10;
    *flipped = false;
    np_stamp_chunk(&s->pattern, buf, NB_CHUNK, chunk * NB_BLOCKS_PER_CHUNK);
    if (s->index == 0 && *injected < s->inject && chunk >= NB_INJECT_AFTER_CHUNKS) {
        buf[NB_FLIP_AT] ^= 0x10;
        *flipped = true;
        (*injected)++;
    }
}

static void *s_tx_main(void *arg)
{
    stream_t *s = arg;
    uint8_t *buf = xmalloc(NB_CHUNK);
    np_fill(&s->pattern, buf, NB_CHUNK);
    uint64_t chunk = 0;
    size_t off = 0;
    bool flipped = false;
    unsigned injected = 0;
    s_next_chunk(s, buf, chunk, &flipped, &injected);
    while (!atomic_load_explicit(&s->g->stop, memory_order_relaxed)) {
        ssize_t n = send(s->fd, buf + off, NB_CHUNK - off, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue; /* SO_SNDTIMEO: look at the stop flag */
        if (n < 0) {
            s_fail(s, errno == EPIPE ? -ECONNRESET : -errno, "send", true);
            break;
        }
        atomic_fetch_add_explicit(&s->bytes, (uint64_t)n, memory_order_relaxed);
        off += (size_t)n;
        if (off == NB_CHUNK) {
            off = 0;
            s_next_chunk(s, buf, ++chunk, &flipped, &injected);
        }
    }
    s->retransmits = s_retransmits(s->fd);
    /* FIN after the data: the receiver reads to the end of the stream and checks all of it. */
    shutdown(s->fd, SHUT_WR);
    free(buf);
    return NULL;
}

nb_tx_t *nb_tx_start(const int *fds, unsigned n, uint64_t seed, unsigned inject_corrupt)
{
    nb_tx_t *self = xcalloc(1, sizeof *self);
    s_group_init(&self->g, fds, n, seed);
    if (n)
        self->g.s[0]->inject = inject_corrupt;
    s_group_start(&self->g, s_tx_main);
    return self;
}

uint64_t nb_tx_bytes(nb_tx_t *tx)
{
    return s_group_bytes(&tx->g);
}

bool nb_tx_failed(nb_tx_t *tx)
{
    return atomic_load(&tx->g.failed);
}

int nb_tx_finish(nb_tx_t *tx, char *err, size_t errlen)
{
    atomic_store(&tx->g.stop, true);
    return s_group_join(&tx->g, err, errlen);
}

uint64_t nb_tx_retransmits(const nb_tx_t *tx)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < tx->g.n; i++)
        sum += tx->g.s[i]->retransmits;
    return sum;
}

void nb_tx_destroy(nb_tx_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    s_group_destroy(&(*self_p)->g);
    free(*self_p);
    *self_p = NULL;
}

/* ---- receiving --------------------------------------------------------------------------- */

static void *s_rx_main(void *arg)
{
    stream_t *s = arg;
    uint8_t *buf = xmalloc(NB_RXBUF);
    for (;;) {
        ssize_t n = recv(s->fd, buf, NB_RXBUF, 0);
        if (n > 0) {
            np_check(&s->pattern, &s->check, buf, (size_t)n);
            atomic_fetch_add_explicit(&s->bytes, (uint64_t)n, memory_order_relaxed);
            continue;
        }
        if (n == 0) {
            if (!atomic_load(&s->g->expect_end))
                s_fail(s, -ECONNRESET, "the sender closed the stream before it was told to stop",
                       false);
            break;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            if (atomic_load_explicit(&s->g->stop, memory_order_relaxed)) {
                s_fail(s, -ETIMEDOUT, "the stream did not end after the sender was told to stop",
                       false);
                break;
            }
            continue; /* SO_RCVTIMEO: look at the abort flag */
        }
        s_fail(s, -errno, "recv", true);
        break;
    }
    free(buf);
    atomic_store(&s->ended, true);
    return NULL;
}

nb_rx_t *nb_rx_start(const int *fds, unsigned n, uint64_t seed)
{
    nb_rx_t *self = xcalloc(1, sizeof *self);
    s_group_init(&self->g, fds, n, seed);
    s_group_start(&self->g, s_rx_main);
    return self;
}

uint64_t nb_rx_bytes(nb_rx_t *rx)
{
    return s_group_bytes(&rx->g);
}

bool nb_rx_failed(nb_rx_t *rx)
{
    return atomic_load(&rx->g.failed);
}

void nb_rx_expect_end(nb_rx_t *rx)
{
    atomic_store(&rx->g.expect_end, true);
}

static bool s_all_ended(group_t *g)
{
    for (unsigned i = 0; i < g->n; i++)
        if (!atomic_load(&g->s[i]->ended))
            return false;
    return true;
}

int nb_rx_finish(nb_rx_t *rx, uint64_t deadline_ms, char *err, size_t errlen)
{
    while (!s_all_ended(&rx->g) && !atomic_load(&rx->g.failed) && fb_mono_ms() < deadline_ms)
        usleep(10 * 1000);
    atomic_store(&rx->g.stop, true);
    return s_group_join(&rx->g, err, errlen);
}

uint64_t nb_rx_corruption(const nb_rx_t *rx, np_check_t *first, unsigned *stream)
{
    uint64_t sum = 0;
    bool have_first = false;
    for (unsigned i = 0; i < rx->g.n; i++) {
        const np_check_t *c = &rx->g.s[i]->check;
        sum += c->corrupt_blocks;
        if (c->corrupt_blocks && !have_first) {
            have_first = true;
            if (first)
                *first = *c;
            if (stream)
                *stream = i;
        }
    }
    return sum;
}

void nb_rx_destroy(nb_rx_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    s_group_destroy(&(*self_p)->g);
    free(*self_p);
    *self_p = NULL;
}
