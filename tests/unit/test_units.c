/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of common/units: byte sizes (binary and decimal suffixes, exact large integers),
 * percentages, durations, counts, doubles, booleans, and the formatters. Every parser must reject
 * trailing garbage, signs, exponents and hex, so that a typo never becomes a different value. */
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_bytes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } good[] = {
        {"0", 0},
        {"4096", 4096},
        {"64MiB", 64ull << 20},
        {"64M", 64ull << 20},
        {"64m", 64ull << 20},
        {"64 MiB", 64ull << 20},
        {"64MB", 64000000},
        {"1.5GiB", 3ull << 29},
        {"10GB", 10000000000ull},
        {"512KiB", 512ull << 10},
        {"512K", 512ull << 10},
        {"1KB", 1000},
        {"2TiB", 2ull << 40},
        {"3T", 3ull << 40},
        {"5TB", 5000000000000ull},
        {"7B", 7},
        {".5KiB", 512},
        {"2.KiB", 2048},
        {"0.5", 1}, /* fractions of a byte round to nearest */
        /* integers stay exact beyond 2^53 and up to the last representable byte */
        {"9007199254740993", 9007199254740993ull},
        {"18446744073709551615", UINT64_MAX},
        {"16777215TiB", 16777215ull << 40},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(good); i++) {
        uint64_t v = 12345;
        if (fb_parse_bytes(good[i].text, &v))
            fail_msg("'%s' rejected", good[i].text);
        if (v != good[i].bytes)
            fail_msg("'%s' = %llu, expected %llu", good[i].text, (unsigned long long)v,
                     (unsigned long long)good[i].bytes);
    }
    static const char *const bad[] = {
        "",
        " 64MiB",
        "64MiB ",
        "64XB",
        "64MiBs",
        "-1",
        "+1",
        "1e3",
        "0x10",
        "0x1p4",
        "inf",
        "nan",
        "MiB",
        ".",
        "1..5",
        "1,5",
        "80%",
        "64 M B",
        "16777216TiB",
        "18446744073709551616",
        "99999999999999999999999",
        "1.0e1KiB",
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++) {
        uint64_t v = 777;
        if (fb_parse_bytes(bad[i], &v) != -EINVAL)
            fail_msg("'%s' accepted as %llu", bad[i], (unsigned long long)v);
        assert_int_equal(v, 777);
    }
    uint64_t v;
    assert_int_equal(fb_parse_bytes(NULL, &v), -EINVAL);
}

static void test_bytes_or_percent(void **state)
{
    (void)state;
    uint64_t v = 1;
    double p = -1;
    assert_int_equal(fb_parse_bytes_or_percent("80%", &v, &p), 0);
    assert_int_equal(v, 0);
    assert_true(p == 80.0);
    assert_int_equal(fb_parse_bytes_or_percent("100%", &v, &p), 0);
    assert_true(p == 100.0);
    assert_int_equal(fb_parse_bytes_or_percent("0.5%", &v, &p), 0);
    assert_true(p == 0.5);
    assert_int_equal(fb_parse_bytes_or_percent("64MiB", &v, &p), 0);
    assert_int_equal(v, 64ull << 20);
    assert_true(p == 0);
    static const char *const bad[] = {"0%",   "100.1%", "%",    "-5%",  " 80%", "80 %", "0x50%",
                                      "1e2%", "80%%",   "abc%", "nan%", "80%x", "",     NULL};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++)
        if (fb_parse_bytes_or_percent(bad[i], &v, &p) != -EINVAL)
            fail_msg("'%s' accepted", bad[i] ? bad[i] : "(null)");
}

static void test_duration(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t ms;
    } good[] = {
        {"500ms", 500},      {"90s", 90000},       {"30m", 1800000},  {"2h", 7200000},
        {"1d", 86400000},    {"1h30m", 5400000},   {"1m30s", 90000},  {"90", 90000},
        {"1.5", 1500},       {"1.5h", 5400000},    {".5s", 500},      {"0s", 0},
        {"1h0m1s", 3601000}, {"2d12h", 216000000}, {"1s500ms", 1500}, {"0.0005s", 1},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(good); i++) {
        uint64_t v = 12345;
        if (fb_parse_duration_ms(good[i].text, &v))
            fail_msg("'%s' rejected", good[i].text);
        if (v != good[i].ms)
            fail_msg("'%s' = %llu ms, expected %llu", good[i].text, (unsigned long long)v,
                     (unsigned long long)good[i].ms);
    }
    static const char *const bad[] = {
        "",      "30x", "30 m", "m",   "-5s", "1h30",   " 5s",           "5s ", "1e3s",
        "0x10s", "1H",  "5min", "inf", "nan", "1.5.5s", "100000000000d", "s5"};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++) {
        uint64_t v = 777;
        if (fb_parse_duration_ms(bad[i], &v) != -EINVAL)
            fail_msg("'%s' accepted as %llu", bad[i], (unsigned long long)v);
        assert_int_equal(v, 777);
    }
    uint64_t v;
    assert_int_equal(fb_parse_duration_ms(NULL, &v), -EINVAL);
}

static void test_uint_double_bool(void **state)
{
    (void)state;
    uint64_t u = 0;
    assert_int_equal(fb_parse_uint("0", 10, &u), 0);
    assert_int_equal(u, 0);
    assert_int_equal(fb_parse_uint("10", 10, &u), 0);
    assert_int_equal(u, 10);
    assert_int_equal(fb_parse_uint("007", 10, &u), 0);
    assert_int_equal(u, 7);
    assert_int_equal(fb_parse_uint("18446744073709551615", UINT64_MAX, &u), 0);
    assert_true(u == UINT64_MAX);
    static const char *const bad_uint[] = {
        "11", "-1", "+1", " 1", "1 ", "1.0", "0x1", "", "a", "18446744073709551616", NULL};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad_uint); i++)
        if (fb_parse_uint(bad_uint[i], i == 9 ? UINT64_MAX : 10, &u) != -EINVAL)
            fail_msg("'%s' accepted", bad_uint[i] ? bad_uint[i] : "(null)");

    double d = 0;
    assert_int_equal(fb_parse_double("0.25", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(fb_parse_double("-3", &d), 0);
    assert_true(d == -3);
    assert_int_equal(fb_parse_double("1e-3", &d), 0);
    assert_true(d == 1e-3);
    assert_int_equal(fb_parse_double("+2.5", &d), 0);
    assert_true(d == 2.5);
    static const char *const bad_double[] = {"",      " 1",   "1 ",     "inf", "-inf", "nan",
                                             "1e999", "0x10", "-0x1p3", "1,5", "abc",  NULL};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad_double); i++)
        if (fb_parse_double(bad_double[i], &d) != -EINVAL)
            fail_msg("'%s' accepted", bad_double[i] ? bad_double[i] : "(null)");

    bool b = false;
    static const char *const yes[] = {"true", "yes", "on", "1", "TRUE", "Yes"};
    static const char *const no[] = {"false", "no", "off", "0", "False", "NO"};
    for (size_t i = 0; i < FB_ARRAY_LEN(yes); i++) {
        b = false;
        assert_int_equal(fb_parse_bool(yes[i], &b), 0);
        assert_true(b);
        b = true;
        assert_int_equal(fb_parse_bool(no[i], &b), 0);
        assert_false(b);
    }
    static const char *const bad_bool[] = {"", "y", "n", "2", "truee", " true", NULL};
    for (size_t i = 0; i < FB_ARRAY_LEN(bad_bool); i++)
        assert_int_equal(fb_parse_bool(bad_bool[i], &b), -EINVAL);
}

static void test_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(fb_format_bytes(0, buf, sizeof buf), "0 B");
    assert_string_equal(fb_format_bytes(1023, buf, sizeof buf), "1023 B");
    assert_string_equal(fb_format_bytes(1024, buf, sizeof buf), "1.0 KiB");
    assert_string_equal(fb_format_bytes(64ull << 20, buf, sizeof buf), "64.0 MiB");
    assert_string_equal(fb_format_bytes(3ull << 29, buf, sizeof buf), "1.5 GiB");
    assert_string_equal(fb_format_bytes(UINT64_MAX, buf, sizeof buf), "16384.0 PiB");
    assert_string_equal(fb_format_bytes(64ull << 20, buf, 5), "64.0");

    assert_string_equal(fb_format_duration(0, buf, sizeof buf), "0.0s");
    assert_string_equal(fb_format_duration(4200, buf, sizeof buf), "4.2s");
    assert_string_equal(fb_format_duration(4249, buf, sizeof buf), "4.2s");
    assert_string_equal(fb_format_duration(4250, buf, sizeof buf), "4.3s");
    assert_string_equal(fb_format_duration(59949, buf, sizeof buf), "59.9s");
    /* rounds up to a minute: not "60.0s" */
    assert_string_equal(fb_format_duration(59950, buf, sizeof buf), "1m00s");
    assert_string_equal(fb_format_duration(60000, buf, sizeof buf), "1m00s");
    assert_string_equal(fb_format_duration(65000, buf, sizeof buf), "1m05s");
    assert_string_equal(fb_format_duration(3723000, buf, sizeof buf), "1h02m03s");
    assert_string_equal(fb_format_duration(90000000, buf, sizeof buf), "25h00m00s");
    assert_string_equal(fb_format_duration(UINT64_MAX, buf, sizeof buf), "5124095576030h25m51s");

    /* what is formatted parses back */
    uint64_t v;
    assert_int_equal(fb_parse_duration_ms("1h02m03s", &v), 0);
    assert_int_equal(v, 3723000);
}


static void test_name_list(void **state)
{
    (void)state;
    static const char *const names[] = {"alpha", "beta", "gamma"};
    int *ids = NULL;
    size_t n = 0;
    char *bad = NULL;
    assert_int_equal(fb_parse_name_list(" all ", names, 3, &ids, &n, &bad), 0);
    assert_int_equal(n, 3);
    assert_int_equal(ids[2], 2);
    free(ids);
    assert_int_equal(fb_parse_name_list("gamma, alpha,gamma", names, 3, &ids, &n, &bad), 0);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 0);
    free(ids);
    assert_int_equal(fb_parse_name_list("beta,delta", names, 3, &ids, &n, &bad), -EINVAL);
    assert_string_equal(bad, "delta");
    assert_null(ids);
    free(bad);
    assert_int_equal(fb_parse_name_list("beta,", names, 3, &ids, &n, &bad), -EINVAL);
    assert_string_equal(bad, "");
    free(bad);
    assert_int_equal(fb_parse_name_list(NULL, names, 3, &ids, &n, NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_list),
        cmocka_unit_test(test_bytes),    cmocka_unit_test(test_bytes_or_percent),
        cmocka_unit_test(test_duration), cmocka_unit_test(test_uint_double_bool),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
