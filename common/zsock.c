/* SPDX-License-Identifier: Apache-2.0 */
/* libuv integration for ZeroMQ sockets: a uv_poll on ZMQ_FD plus a uv_idle that drains after
 * sends, and a slow safety timer, because a missed edge would otherwise stall a peer forever.
 * Every socket of the project is created here too, so none lacks the frame-size limit. */
#include "zsock.h"
#include "log.h"
#include "ratelimit.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define ZSOCK_MAX_FRAMES 8

struct fb_zsock {
    uv_loop_t *loop;
    void *socket;
    fb_zsock_recv_cb cb;
    void *arg;
    uv_poll_t poll;
    uv_idle_t idle;
    uv_timer_t safety;
    int open_handles;
    zmq_msg_t *current; /* the last frame of the message being handled, during the callback */
    void *owned_arg;    /* freed with the socket (a monitor's state) */
    void *watched;      /* a monitor: the socket it watches, whose monitoring stops first */
    int draining;
    int closing;
    uint64_t n_overflow;         /* messages of too many frames dropped */
    fb_ratelimit_t overflow_log; /* a peer sends those at will: one line per 10 s */
};

static void s_drain(fb_zsock_t *zs)
{
    if (zs->draining || zs->closing)
        return;
    zs->draining = 1;
    for (;;) {
        uint32_t events = 0;
        size_t size = sizeof events;
        if (zmq_getsockopt(zs->socket, ZMQ_EVENTS, &events, &size) != 0 || !(events & ZMQ_POLLIN))
            break;
        zmq_msg_t msgs[ZSOCK_MAX_FRAMES];
        const uint8_t *frames[ZSOCK_MAX_FRAMES];
        size_t lens[ZSOCK_MAX_FRAMES];
        size_t n = 0;
        int more = 1, overflow = 0;
        while (more) {
            zmq_msg_t msg;
            zmq_msg_init(&msg);
            if (zmq_msg_recv(&msg, zs->socket, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&msg);
                break;
            }
            more = zmq_msg_more(&msg);
            if (n < ZSOCK_MAX_FRAMES) {
                msgs[n] = msg;
                frames[n] = zmq_msg_data(&msgs[n]);
                lens[n] = zmq_msg_size(&msgs[n]);
                n++;
            } else {
                overflow = 1;
                zmq_msg_close(&msg);
            }
        }
        if (overflow) {
            uint64_t held = 0;
            if (zs->n_overflow++, fb_ratelimit_ok(&zs->overflow_log, fb_mono_ms(), &held))
                log_warn("dropped a message of more than %d frames (%llu in all, %llu lines "
                         "held back)",
                         ZSOCK_MAX_FRAMES, (unsigned long long)zs->n_overflow,
                         (unsigned long long)held);
        } else if (n > 0) {
            zs->current = &msgs[n - 1];
            zs->cb(zs, frames, lens, n, zs->arg);
            zs->current = NULL;
        }
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&msgs[i]);
        if (zs->closing)
            break;
    }
    zs->draining = 0;
}

static void s_on_poll(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    s_drain(h->data);
}

static void s_on_idle(uv_idle_t *h)
{
    uv_idle_stop(h);
    s_drain(h->data);
}

static void s_on_safety(uv_timer_t *h)
{
    s_drain(h->data);
}

void *fb_zsock_new_socket(void *zctx, int type)
{
    void *sock = zmq_socket(zctx, type);
    if (!sock)
        return NULL;
    int64_t max = FB_WIRE_MAX_FRAME;
    if (zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max, sizeof max) != 0) {
        int err = errno;
        zmq_close(sock);
        errno = err;
        return NULL;
    }
    return sock;
}

fb_zsock_t *fb_zsock_new(uv_loop_t *loop, void *zsocket, fb_zsock_recv_cb cb, void *arg)
{
    fb_zsock_t *zs = xcalloc(1, sizeof *zs);
    zs->overflow_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(10000);
    zs->loop = loop;
    zs->socket = zsocket;
    zs->cb = cb;
    zs->arg = arg;
    int fd = -1;
    size_t size = sizeof fd;
    zmq_getsockopt(zsocket, ZMQ_FD, &fd, &size);
    uv_poll_init(loop, &zs->poll, fd);
    uv_idle_init(loop, &zs->idle);
    uv_timer_init(loop, &zs->safety);
    zs->poll.data = zs->idle.data = zs->safety.data = zs;
    zs->open_handles = 3;
    uv_poll_start(&zs->poll, UV_READABLE, s_on_poll);
    uv_timer_start(&zs->safety, s_on_safety, 100, 100);
    /* Messages may already be queued before the first edge. */
    uv_idle_start(&zs->idle, s_on_idle);
    return zs;
}

static void s_on_closed(uv_handle_t *h)
{
    fb_zsock_t *zs = h->data;
    /* libuv requires the watched fd (owned by the ZeroMQ socket) to stay open until the poll
     * handle is closed. */
    if (h == (uv_handle_t *)&zs->poll) {
        zmq_close(zs->socket);
        zs->socket = NULL;
    }
    if (--zs->open_handles == 0) {
        free(zs->owned_arg);
        free(zs);
    }
}

void fb_zsock_close(fb_zsock_t **zs_p)
{
    fb_zsock_close_linger(zs_p, 0);
}

void fb_zsock_close_linger(fb_zsock_t **zs_p, int linger_ms)
{
    if (!zs_p || !*zs_p)
        return;
    fb_zsock_t *zs = *zs_p;
    *zs_p = NULL;
    if (zs->watched)
        zmq_socket_monitor(zs->watched, NULL, 0);
    zs->closing = 1;
    int linger = linger_ms > 0 ? linger_ms : 0;
    zmq_setsockopt(zs->socket, ZMQ_LINGER, &linger, sizeof linger);
    uv_close((uv_handle_t *)&zs->poll, s_on_closed);
    uv_close((uv_handle_t *)&zs->idle, s_on_closed);
    uv_close((uv_handle_t *)&zs->safety, s_on_closed);
}

int fb_zsock_send(fb_zsock_t *zs, const void *const *frames, const size_t *lens, size_t n_frames)
{
    if (zs->closing)
        return -ESHUTDOWN;
    int rc = 0;
    for (size_t i = 0; i < n_frames; i++) {
        int flags = ZMQ_DONTWAIT | (i + 1 < n_frames ? ZMQ_SNDMORE : 0);
        if (zmq_send(zs->socket, frames[i], lens[i], flags) < 0) {
            rc = -errno;
            break;
        }
    }
    /* The send may have consumed the edge that announced input: drain on the next iteration. */
    uv_idle_start(&zs->idle, s_on_idle);
    return rc;
}

void fb_zsock_drain(fb_zsock_t *zs)
{
    if (zs)
        s_drain(zs);
}

void *fb_zsock_socket(fb_zsock_t *zs)
{
    return zs->socket;
}

void fb_zsock_set_safety_ms(fb_zsock_t *zs, uint64_t ms)
{
    if (zs->closing)
        return;
    if (ms > 0)
        uv_timer_start(&zs->safety, s_on_safety, ms, ms);
    else
        uv_timer_stop(&zs->safety);
}

const char *fb_zsock_peer_user_id(fb_zsock_t *zs)
{
    if (!zs->current)
        return NULL;
    const char *id = zmq_msg_gets(zs->current, "User-Id");
    return id && id[0] ? id : NULL;
}

const char *fb_zsock_peer_address(fb_zsock_t *zs)
{
    const char *addr = zs->current ? zmq_msg_gets(zs->current, "Peer-Address") : NULL;
    return addr ? addr : "?";
}

int fb_zsock_peer_fd(fb_zsock_t *zs)
{
    /* ZMQ_SRCFD is deprecated for lack of a better way, and still answers in libzmq 4.3: it is
     * what lets the coordinator end one connection of its ROUTER (a revoked key). */
    return zs->current ? zmq_msg_get(zs->current, ZMQ_SRCFD) : -1;
}

/* --- socket monitor ------------------------------------------------------------------------- */

typedef struct {
    fb_zsock_event_cb cb;
    void *arg;
} monitor_t;

static void s_on_monitor(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                         void *arg)
{
    (void)zs;
    monitor_t *m = arg;
    if (n != 2 || lens[0] != 6)
        return;
    uint16_t event;
    uint32_t value;
    memcpy(&event, frames[0], sizeof event);
    memcpy(&value, frames[0] + 2, sizeof value);
    char endpoint[256];
    size_t len = lens[1] < sizeof endpoint - 1 ? lens[1] : sizeof endpoint - 1;
    memcpy(endpoint, frames[1], len);
    endpoint[len] = '\0';
    m->cb(event, value, endpoint, m->arg);
}

fb_zsock_t *fb_zsock_monitor_new(uv_loop_t *loop, void *zctx, void *watched, int events,
                           fb_zsock_event_cb cb, void *arg)
{
    static unsigned long serial;
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "inproc://fb-monitor-%lu-%p", ++serial, watched);
    if (zmq_socket_monitor(watched, endpoint, events) != 0)
        return NULL;
    /* No high-water mark on the event queue: on a full one libzmq's I/O thread would wait for
     * the loop, holding the watched socket's monitor lock. */
    void *pair = fb_zsock_new_socket(zctx, ZMQ_PAIR);
    int hwm = 0;
    if (!pair || zmq_setsockopt(pair, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        zmq_connect(pair, endpoint) != 0) {
        if (pair)
            zmq_close(pair);
        zmq_socket_monitor(watched, NULL, 0);
        return NULL;
    }
    monitor_t *m = xcalloc(1, sizeof *m);
    m->cb = cb;
    m->arg = arg;
    fb_zsock_t *zs = fb_zsock_new(loop, pair, s_on_monitor, m);
    zs->owned_arg = m;
    zs->watched = watched;
    return zs;
}
