/* SPDX-License-Identifier: Apache-2.0 */
/* Exchange lines between worker and agent: round trips of binary values (empty, NUL bytes, the
 * largest allowed), replies with many ranks, error replies, and malformed lines refused. */
#include "common/exline.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A line must stay one line on the channel: exactly one '\n', at its end. */
static int s_newlines(const char *line)
{
    int n = 0;
    for (const char *p = line; *p; p++)
        n += *p == '\n';
    return line[strlen(line) - 1] == '\n' ? n : -1;
}

static void test_post_round_trip(void **state)
{
    (void)state;
    size_t sizes[] = {0, 1, 128, 65536};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint8_t *value = malloc(sizes[k] + 1);
        for (size_t i = 0; i < sizes[k]; i++)
            value[i] = (uint8_t)(i * 31 + 7); /* includes 0x00 and 0x0a */
        char *line = fb_exline_post_format("ncclid", 1500, value, sizes[k]);
        assert_int_equal(line[strlen(line) - 1], '\n');
        assert_int_equal(s_newlines(line), 1);
        char *key = NULL;
        uint64_t timeout = 0;
        uint8_t *back = NULL;
        size_t len = 99;
        assert_int_equal(fb_exline_post_parse(line, &key, &timeout, &back, &len), 0);
        assert_string_equal(key, "ncclid");
        assert_int_equal(timeout, 1500);
        assert_int_equal(len, sizes[k]);
        if (len)
            assert_memory_equal(back, value, len);
        else
            assert_null(back);
        free(key);
        free(back);
        free(line);
        free(value);
    }
}

static void test_reply_round_trip(void **state)
{
    (void)state;
    fb_exline_blob_t values[5] = {{(uint8_t *)"a", 1}, {NULL, 0}, {(uint8_t *)"\0\n\xff", 3},
                               {(uint8_t *)"node-3", 6}, {NULL, 0}};
    char *line = fb_exline_reply_ok_format("qp", values, 5);
    char *key = NULL, *error = NULL;
    bool ok = false;
    fb_exline_blob_t *back = NULL;
    size_t n = 0;
    assert_int_equal(fb_exline_reply_parse(line, &key, &ok, &back, &n, &error), 0);
    assert_true(ok);
    assert_string_equal(key, "qp");
    assert_int_equal(n, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(back[i].len, values[i].len);
        if (values[i].len)
            assert_memory_equal(back[i].data, values[i].data, values[i].len);
    }
    assert_null(error);
    fb_exline_blobs_free(&back, n);
    assert_null(back);
    free(key);
    free(line);

    line = fb_exline_reply_error_format("qp", "rank 1 (node-b) was lost\nagent gone");
    assert_int_equal(s_newlines(line), 1);
    assert_int_equal(fb_exline_reply_parse(line, &key, &ok, &back, &n, &error), 0);
    assert_false(ok);
    assert_string_equal(error, "rank 1 (node-b) was lost agent gone");
    free(key);
    free(error);
    free(line);
}

static void test_malformed(void **state)
{
    (void)state;
    const char *posts[] = {"", "exchange", "exchange key", "exchange key 10", "exchange key x 00",
                           "exchange key 10 0", "exchange key 10 zz", "exchange k/y 10 00",
                           "exchange key 10 00 extra", "exchange key 123456789012345678901 00",
                           /* found by libFuzzer: 2^64 (20 digits) read as UINT64_MAX; a value
                            * before trailing garbage left its length behind */
                           "exchange key 18446744073709551616 00", "xte  0 Ae  0 A"};
    for (size_t i = 0; i < sizeof posts / sizeof posts[0]; i++) {
        char *key = (char *)1;
        uint64_t t;
        uint8_t *v = (uint8_t *)1;
        size_t len = 7;
        assert_int_equal(fb_exline_post_parse(posts[i], &key, &t, &v, &len), -EINVAL);
        assert_null(key);
        assert_null(v);
        assert_int_equal(len, 0);
    }
    const char *replies[] = {"exchange key", "exchange key maybe", "exchange key ok 0",
                             "exchange key ok 00 g0", "exchange  ok 00"};
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
        char *key = NULL, *error = NULL;
        bool ok;
        fb_exline_blob_t *b = NULL;
        size_t n = 0;
        assert_int_equal(fb_exline_reply_parse(replies[i], &key, &ok, &b, &n, &error), -EINVAL);
        assert_null(key);
        assert_null(b);
    }
    assert_true(fb_exline_valid_key("ncclid"));
    assert_false(fb_exline_valid_key(""));
    assert_false(fb_exline_valid_key("a b"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_post_round_trip),
        cmocka_unit_test(test_reply_round_trip),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
