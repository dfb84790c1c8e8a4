/* SPDX-License-Identifier: Apache-2.0 */
/* Routing identities travel as hex text between the coordinator's parts and the relay: what is
 * encoded must decode to the same bytes, and text that is not hex must stop the decoding rather
 * than produce bytes from garbage (the identity comes from the network). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util.h"

#include <string.h>

static void test_hex_round_trip(void **state)
{
    (void)state;
    const uint8_t id[] = {0x00, 0x6b, 0x8b, 0x45, 0xff, 0x10};
    char text[32];
    fb_hex_encode(id, sizeof id, text, sizeof text);
    assert_string_equal(text, "006b8b45ff10");
    uint8_t back[16];
    assert_int_equal(fb_hex_decode(text, strlen(text), back, sizeof back), sizeof id);
    assert_memory_equal(back, id, sizeof id);
    assert_int_equal(fb_hex_decode("6B8b", 4, back, sizeof back), 2);
    assert_int_equal(back[0], 0x6b);
    assert_int_equal(back[1], 0x8b);
}

static void test_hex_bounds(void **state)
{
    (void)state;
    const uint8_t id[] = {1, 2, 3, 4};
    char small[6]; /* room for two bytes and the terminator */
    fb_hex_encode(id, sizeof id, small, sizeof small);
    assert_string_equal(small, "0102");
    uint8_t out[2];
    assert_int_equal(fb_hex_decode("01020304", 8, out, sizeof out), 2); /* at most max */
    assert_int_equal(fb_hex_decode("010203", 4, out, sizeof out), 2);   /* only hexlen */
    assert_int_equal(fb_hex_decode("0", 1, out, sizeof out), 0);        /* half a byte */
}

static void test_hex_stops_at_garbage(void **state)
{
    (void)state;
    uint8_t out[8];
    assert_int_equal(fb_hex_decode("01zz02", 6, out, sizeof out), 1);
    assert_int_equal(fb_hex_decode("0x12", 4, out, sizeof out), 0);
    assert_int_equal(fb_hex_decode("12/ab", 5, out, sizeof out), 1);
    assert_int_equal(fb_hex_decode("", 4, out, sizeof out), 0); /* the string ends first */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex_round_trip),
        cmocka_unit_test(test_hex_bounds),
        cmocka_unit_test(test_hex_stops_at_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
