/* SPDX-License-Identifier: Apache-2.0 */
/* systemd notification (common/service.h) through a real notification socket, as systemd reads
 * it: READY=1 once and only when the daemon says it is ready, STATUS= when the status changes,
 * WATCHDOG=1 at half the interval WATCHDOG_USEC asks for, STOPPING=1 at the end; nothing at all
 * outside systemd. Skipped in builds without libsystemd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct {
    int calls;
    int ready_after; /* ready from this call on */
} s_daemon_t;

static bool s_state(void *arg, char *status, size_t len)
{
    s_daemon_t *d = arg;
    d->calls++;
    bool ready = d->calls >= d->ready_after;
    /* The status changes once, when it becomes ready; a newline in it must not split it. */
    snprintf(status, len, ready ? "registered\nas n1" : "connecting");
    return ready;
}

static void s_on_stop_timer(uv_timer_t *t)
{
    uv_stop(t->loop);
}

/* A datagram socket standing in for systemd's; its path goes into NOTIFY_SOCKET. */
static int s_notify_socket(char *path, size_t len)
{
    snprintf(path, len, "/tmp/fbtest-notify-%d.sock", (int)getpid());
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof addr.sun_path);
    memcpy(addr.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    setenv("NOTIFY_SOCKET", path, 1);
    return fd;
}

/* Runs a service on a loop for run_ms and returns every message it sent, joined by '|'. */
static char *s_run(s_daemon_t *d, unsigned run_ms)
{
    char path[64];
    int fd = s_notify_socket(path, sizeof path);
    uv_loop_t loop;
    uv_loop_init(&loop);
    fb_service_t *svc = fb_service_start(&loop, s_state, d);
    assert_non_null(svc);
    uv_timer_t stop;
    uv_timer_init(&loop, &stop);
    uv_timer_start(&stop, s_on_stop_timer, run_ms, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    fb_service_stop(&svc);
    assert_null(svc);
    uv_close((uv_handle_t *)&stop, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0); /* the service's timer is closed and freed */
    size_t cap = 1 << 16, n = 0;
    char *all = calloc(1, cap);
    char buf[1024];
    ssize_t got;
    while ((got = recv(fd, buf, sizeof buf - 1, 0)) > 0) {
        buf[got] = '\0';
        n += (size_t)snprintf(all + n, cap - n, "%s|", buf);
    }
    close(fd);
    unlink(path);
    unsetenv("NOTIFY_SOCKET");
    return all;
}

static size_t s_count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void test_ready_status_watchdog(void **state)
{
    (void)state;
    if (!fb_service_supported())
        skip();
    setenv("WATCHDOG_USEC", "200000", 1); /* 200 ms: a ping every 100 ms */
    unsetenv("WATCHDOG_PID");
    s_daemon_t d = {.ready_after = 3};
    char *msgs = s_run(&d, 550);
    unsetenv("WATCHDOG_USEC");
    /* The first tick at once: not ready yet, its status. */
    assert_true(!strncmp(msgs, "WATCHDOG=1\nSTATUS=connecting\n|", 30));
    assert_int_equal(s_count(msgs, "READY=1"), 1);
    assert_non_null(strstr(msgs, "READY=1\nSTATUS=registered as n1\n|"));
    assert_int_equal(s_count(msgs, "STATUS=connecting"), 1); /* sent when it changes only */
    /* 550 ms at 100 ms: 6 ticks (the first at once), give or take a late timer */
    size_t pings = s_count(msgs, "WATCHDOG=1");
    if (pings < 4 || pings > 7)
        fail_msg("%zu watchdog pings in 550 ms at 100 ms: %s", pings, msgs);
    assert_true(d.calls >= 4);
    const char *last = msgs + strlen(msgs) - strlen("STOPPING=1\nSTATUS=stopping|");
    assert_string_equal(last, "STOPPING=1\nSTATUS=stopping|");
    free(msgs);
}

static void test_no_watchdog(void **state)
{
    (void)state;
    if (!fb_service_supported())
        skip();
    unsetenv("WATCHDOG_USEC");
    s_daemon_t d = {.ready_after = 1};
    char *msgs = s_run(&d, 300);
    assert_int_equal(s_count(msgs, "WATCHDOG=1"), 0);
    assert_true(!strncmp(msgs, "READY=1\nSTATUS=registered as n1\n|", 33));
    free(msgs);
}

static void test_outside_systemd(void **state)
{
    (void)state;
    unsetenv("NOTIFY_SOCKET");
    uv_loop_t loop;
    uv_loop_init(&loop);
    s_daemon_t d = {.ready_after = 1};
    fb_service_t *svc = fb_service_start(&loop, s_state, &d);
    assert_null(svc);
    fb_service_stop(&svc); /* NULL-safe */
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(d.calls, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_status_watchdog),
        cmocka_unit_test(test_no_watchdog),
        cmocka_unit_test(test_outside_systemd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
