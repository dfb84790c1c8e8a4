/* SPDX-License-Identifier: Apache-2.0 */
/* Endpoints as operators write them (common/endpoint.h): HOST:PORT and a bare HOST become
 * tcp:// endpoints, ZeroMQ endpoints pass as they are, and anything else is refused with what is
 * wrong and what is expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/endpoint.h"

#include <errno.h>
#include <string.h>

static void s_ok(const char *text, const char *expected)
{
    char out[FB_ENDPOINT_MAX], err[256] = "";
    if (fb_endpoint_normalize(text, out, sizeof out, err, sizeof err))
        fail_msg("'%s' refused: %s", text, err);
    assert_string_equal(out, expected);
}

static void s_refused(const char *text, const char *expected_err)
{
    char out[FB_ENDPOINT_MAX], err[256] = "";
    assert_int_equal(fb_endpoint_normalize(text, out, sizeof out, err, sizeof err), -EINVAL);
    if (strcmp(err, expected_err))
        fail_msg("for '%s':\n got      '%s'\n expected '%s'", text, err, expected_err);
}

static void test_host_port(void **state)
{
    (void)state;
    s_ok("coord:7755", "tcp://coord:7755");
    s_ok("10.1.2.3:9000", "tcp://10.1.2.3:9000");
    s_ok("coord.example.com:1", "tcp://coord.example.com:1");
    s_ok("[::1]:7755", "tcp://[::1]:7755");
    s_ok("[fe80::1%eth0]:65535", "tcp://[fe80::1%eth0]:65535");
    s_ok("*:7755", "tcp://*:7755"); /* serve --bind: every interface */
    s_ok("127.0.0.1:*", "tcp://127.0.0.1:*");
}

static void test_bare_host(void **state)
{
    (void)state;
    s_ok("coord", "tcp://coord:7755");
    s_ok("10.1.2.3", "tcp://10.1.2.3:7755");
    s_ok("[::1]", "tcp://[::1]:7755");
}

static void test_zmq_endpoints_unchanged(void **state)
{
    (void)state;
    s_ok("tcp://coord:7755", "tcp://coord:7755");
    s_ok("tcp://*:7755", "tcp://*:7755");
    s_ok("ipc:///run/fleetburn.sock", "ipc:///run/fleetburn.sock");
    s_ok("inproc://x", "inproc://x");
}

static void test_refused(void **state)
{
    (void)state;
    s_refused("", "an empty endpoint; expected tcp://HOST:PORT, HOST:PORT or HOST (port 7755)");
    s_refused("coord:77x", "'coord:77x': '77x' is not a port from 1 to 65535; expected "
                           "tcp://HOST:PORT, HOST:PORT or HOST (port 7755)");
    s_refused("coord:0", "'coord:0': '0' is not a port from 1 to 65535; expected "
                         "tcp://HOST:PORT, HOST:PORT or HOST (port 7755)");
    s_refused("coord:65536", "'coord:65536': '65536' is not a port from 1 to 65535; expected "
                             "tcp://HOST:PORT, HOST:PORT or HOST (port 7755)");
    s_refused("coord:", "'coord:': '' is not a port from 1 to 65535; expected "
                        "tcp://HOST:PORT, HOST:PORT or HOST (port 7755)");
    s_refused("udp://coord:7755", "'udp://coord:7755': unknown transport; expected "
                                  "tcp://HOST:PORT, HOST:PORT or HOST (port 7755) (or ipc://PATH)");
    s_refused("::1:7755", "'::1:7755': an IPv6 address goes in brackets, e.g. [::1]:7755; "
                          "expected tcp://HOST:PORT, HOST:PORT or HOST (port 7755)");
    s_refused("co ord:7755", "'co ord:7755' is not a host; expected tcp://HOST:PORT, HOST:PORT "
                             "or HOST (port 7755)");
    s_refused(":7755", "':7755' is not a host; expected tcp://HOST:PORT, HOST:PORT or HOST "
                       "(port 7755)");
    s_refused("[::1:7755", "'[::1:7755' is not a host; expected tcp://HOST:PORT, HOST:PORT or "
                           "HOST (port 7755)");
}

static void test_too_long(void **state)
{
    (void)state;
    char host[400];
    memset(host, 'a', sizeof host - 1);
    host[sizeof host - 1] = '\0';
    char out[FB_ENDPOINT_MAX], err[256];
    assert_int_equal(fb_endpoint_normalize(host, out, sizeof out, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "is not a host"));
    /* A long but valid host that does not fit the caller's buffer */
    assert_int_equal(fb_endpoint_normalize("coord:7755", out, 10, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "too long"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_port),
        cmocka_unit_test(test_bare_host),
        cmocka_unit_test(test_zmq_endpoints_unchanged),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
