/* SPDX-License-Identifier: Apache-2.0 */
/* Log lines carry peer text: control characters must come out escaped, never raw. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_sanitize_escapes_controls(void **state)
{
    (void)state;
    char out[128];
    size_t n = fb_log_sanitize("node\n12:00:00 [error] forged\x1b[2Jx\x7f", out, sizeof out);
    assert_string_equal(out, "node\\x0a12:00:00 [error] forged\\x1b[2Jx\\x7f");
    assert_int_equal(n, strlen(out));
}

static void test_sanitize_cuts_without_splitting_escapes(void **state)
{
    (void)state;
    char out[8];
    fb_log_sanitize("ab\ncdef", out, sizeof out);
    /* "ab\x0a" is 6 bytes, "c" fits, then the buffer is full */
    assert_string_equal(out, "ab\\x0ac");
    fb_log_sanitize("abcde\n", out, sizeof out);
    assert_string_equal(out, "abcde"); /* the escape does not fit: nothing half-written */
}

/* A whole log line: one line on stderr, whatever the message holds. */
static void test_log_line_is_one_line(void **state)
{
    (void)state;
    char path[] = "/tmp/fb-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fb_log_init("test", FB_LOG_INFO);
    log_warn("peer said: %s", "ok\r\nfake [error] line\x1b]0;title\x07");
    dup2(saved, STDERR_FILENO);
    close(saved);
    char buf[512] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "peer said: ok\\x0d\\x0afake [error] line\\x1b]0;title\\x07"));
    assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
    assert_null(strchr(buf, '\x1b'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sanitize_escapes_controls),
        cmocka_unit_test(test_sanitize_cuts_without_splitting_escapes),
        cmocka_unit_test(test_log_line_is_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
