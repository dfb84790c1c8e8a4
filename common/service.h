/* SPDX-License-Identifier: Apache-2.0 */
/* Telling systemd how a daemon is doing (sd_notify(3)), for the units in deploy/systemd/, which
 * are Type=notify with WatchdogSec=:
 *   READY=1     once the daemon is of use: the coordinator listening, the agent registered;
 *   STATUS=...  its state in one line, shown by `systemctl status`, sent when it changes;
 *   WATCHDOG=1  from a timer on the daemon's own event loop, at half the interval systemd asks
 *               for (WATCHDOG_USEC): a loop that stops turning stops the pings, and systemd
 *               kills and restarts the daemon;
 *   STOPPING=1  when it stops.
 * The daemon's state is asked for at every tick of that timer (at least once a second), so the
 * daemon's code needs no call of its own where its state changes.
 *
 * Nothing is sent outside systemd (NOTIFY_SOCKET unset): fb_service_start returns NULL. A build
 * without libsystemd (FB_HAVE_SYSTEMD unset; Debian's libsystemd-dev at build time) sends
 * nothing either; when NOTIFY_SOCKET says that systemd waits for a READY=1 it will never get,
 * fb_service_start logs a warning saying so. */
#ifndef FB_SERVICE_H
#define FB_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

typedef struct fb_service fb_service_t;

/* The daemon's state: writes its status line into status (len bytes) and returns whether it is
 * ready. Called on the loop's thread. */
typedef bool (*fb_service_state_fn)(void *arg, char *status, size_t len);

/* Starts notifying systemd from a timer on loop; state and arg are borrowed until
 * fb_service_stop. The first tick runs at once. NULL when there is nothing to notify (not under
 * systemd, or built without libsystemd). */
fb_service_t *fb_service_start(uv_loop_t *loop, fb_service_state_fn state, void *arg);
/* Sends STOPPING=1 and closes the timer; the memory is freed when the loop has closed it, so the
 * caller runs the loop afterwards (uv_run) as it does for its other handles. NULL-safe; nulls the
 * pointer. */
void fb_service_stop(fb_service_t **self_p);
/* True when this build can notify systemd (linked with libsystemd). */
bool fb_service_supported(void);

#endif
