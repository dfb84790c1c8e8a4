/* SPDX-License-Identifier: Apache-2.0 */
/* systemd notification of the daemons (service.h): READY, STATUS and WATCHDOG from a timer on
 * the daemon's event loop, through libsystemd's sd_notify when the build has it. */
#include "service.h"
#include "log.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FB_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#define S_STATUS_MAX 512
#define S_TICK_MAX_MS 1000 /* the state is asked for at least this often */
#define S_TICK_MIN_MS 50

struct fb_service {
    uv_timer_t timer;
    fb_service_state_fn state;
    void *arg;
    bool ready;             /* READY=1 sent */
    uint64_t watchdog_usec; /* 0: systemd asked for no watchdog */
    char status[S_STATUS_MAX];
};

bool fb_service_supported(void)
{
#ifdef FB_HAVE_SYSTEMD
    return true;
#else
    return false;
#endif
}

#ifdef FB_HAVE_SYSTEMD

/* A status is one line: control characters (a newline would end the STATUS= assignment and
 * start another) become blanks. */
static void s_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

static void s_tick(uv_timer_t *t)
{
    fb_service_t *self = t->data;
    char status[S_STATUS_MAX] = "";
    bool ready = self->state(self->arg, status, sizeof status);
    s_one_line(status);
    char msg[S_STATUS_MAX + 64];
    size_t n = 0;
    /* Every tick proves that the loop turns: that is all the watchdog asks. */
    if (self->watchdog_usec)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "WATCHDOG=1\n");
    if (ready && !self->ready)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "READY=1\n");
    if (strcmp(status, self->status)) {
        n += (size_t)snprintf(msg + n, sizeof msg - n, "STATUS=%s\n", status);
        memcpy(self->status, status, sizeof status);
    }
    self->ready = self->ready || ready;
    if (n && sd_notify(0, msg) < 0)
        log_debug("sd_notify failed");
}

fb_service_t *fb_service_start(uv_loop_t *loop, fb_service_state_fn state, void *arg)
{
    const char *notify = getenv("NOTIFY_SOCKET");
    if (!notify || !*notify)
        return NULL;
    fb_service_t *self = xcalloc(1, sizeof *self);
    self->state = state;
    self->arg = arg;
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0)
        self->watchdog_usec = usec;
    /* Half the watchdog interval, as sd_watchdog_enabled(3) advises, and at least once a second
     * so that READY and STATUS follow the daemon's state closely. */
    uint64_t tick_ms = S_TICK_MAX_MS;
    if (self->watchdog_usec && self->watchdog_usec / 2000 < tick_ms)
        tick_ms = self->watchdog_usec / 2000;
    if (tick_ms < S_TICK_MIN_MS)
        tick_ms = S_TICK_MIN_MS;
    uv_timer_init(loop, &self->timer);
    self->timer.data = self;
    uv_timer_start(&self->timer, s_tick, 0, tick_ms);
    if (self->watchdog_usec)
        log_info("systemd watchdog: %llu ms, pinged every %llu ms from the event loop",
                 (unsigned long long)(self->watchdog_usec / 1000), (unsigned long long)tick_ms);
    return self;
}

static void s_free(uv_handle_t *h)
{
    free(h->data);
}

void fb_service_stop(fb_service_t **self_p)
{
    fb_service_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    *self_p = NULL;
    sd_notify(0, "STOPPING=1\nSTATUS=stopping");
    uv_timer_stop(&self->timer);
    uv_close((uv_handle_t *)&self->timer, s_free);
}

#else /* no libsystemd */

fb_service_t *fb_service_start(uv_loop_t *loop, fb_service_state_fn state, void *arg)
{
    (void)loop;
    (void)state;
    (void)arg;
    const char *notify = getenv("NOTIFY_SOCKET");
    if (notify && *notify)
        log_warn("this build has no libsystemd, so systemd is not told that the daemon is ready "
                 "(a Type=notify unit times out starting) and gets no watchdog pings: rebuild "
                 "with libsystemd-dev installed, or run the unit with Type=simple and without "
                 "WatchdogSec=");
    return NULL;
}

void fb_service_stop(fb_service_t **self_p)
{
    if (self_p)
        *self_p = NULL;
}

#endif
