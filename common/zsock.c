/* SPDX-License-Identifier: Apache-2.0 */
/* libuv integration for ZeroMQ sockets: a uv_poll on ZMQ_FD plus a uv_idle that drains after
 * sends, and a slow safety timer, because a missed edge would otherwise stall a peer forever. */
#include "zsock.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <zmq.h>

#define ZSOCK_MAX_FRAMES 8

struct zsock {
    uv_loop_t *loop;
    void *socket;
    zsock_recv_cb cb;
    void *arg;
    uv_poll_t poll;
    uv_idle_t idle;
    uv_timer_t safety;
    int open_handles;
    int draining;
    int closing;
};

static void s_drain(zsock_t *zs)
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
        if (overflow)
            log_warn("dropped a message of more than %d frames", ZSOCK_MAX_FRAMES);
        else if (n > 0)
            zs->cb(zs, frames, lens, n, zs->arg);
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

zsock_t *zsock_new(uv_loop_t *loop, void *zsocket, zsock_recv_cb cb, void *arg)
{
    zsock_t *zs = xcalloc(1, sizeof *zs);
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
    zsock_t *zs = h->data;
    /* libuv requires the watched fd (owned by the ZeroMQ socket) to stay open until the poll
     * handle is closed. */
    if (h == (uv_handle_t *)&zs->poll) {
        zmq_close(zs->socket);
        zs->socket = NULL;
    }
    if (--zs->open_handles == 0)
        free(zs);
}

void zsock_close(zsock_t **zs_p)
{
    if (!zs_p || !*zs_p)
        return;
    zsock_t *zs = *zs_p;
    *zs_p = NULL;
    zs->closing = 1;
    int linger = 0;
    zmq_setsockopt(zs->socket, ZMQ_LINGER, &linger, sizeof linger);
    uv_close((uv_handle_t *)&zs->poll, s_on_closed);
    uv_close((uv_handle_t *)&zs->idle, s_on_closed);
    uv_close((uv_handle_t *)&zs->safety, s_on_closed);
}

int zsock_send(zsock_t *zs, const void *const *frames, const size_t *lens, size_t n_frames)
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

void *zsock_socket(zsock_t *zs)
{
    return zs->socket;
}

void zsock_set_safety_ms(zsock_t *zs, uint64_t ms)
{
    if (!zs->closing && ms > 0)
        uv_timer_start(&zs->safety, s_on_safety, ms, ms);
}
