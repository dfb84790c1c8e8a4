/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes the quantity parsers of common/units.c that campaign values and command-line arguments
 * go through: sizes, percentages, durations, counts, doubles, booleans and name lists. The input
 * is one value; it goes through each parser. Whatever parses is in range and, for sizes and
 * durations, formats without trouble. */
#include "fuzz.h"

#include "common/units.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>

FZ_INITIALIZE()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    char buf[64];
    uint64_t u = 0;
    double d = 0, pct = 0;
    bool b = false;
    if (fb_parse_bytes(text, &u) == 0)
        FZ_CHECK(fb_format_bytes(u, buf, sizeof buf) == buf && strlen(buf) < sizeof buf);
    pct = 0;
    if (fb_parse_bytes_or_percent(text, &u, &pct) == 0 && pct != 0)
        FZ_CHECK(u == 0 && pct > 0 && pct <= 100);
    if (fb_parse_duration_ms(text, &u) == 0)
        FZ_CHECK(fb_format_duration(u, buf, sizeof buf) == buf && strlen(buf) < sizeof buf);
    if (fb_parse_uint(text, 1000000, &u) == 0)
        FZ_CHECK(u <= 1000000);
    if (fb_parse_uint(text, UINT64_MAX, &u) == 0) {
        char again[32];
        snprintf(again, sizeof again, "%llu", (unsigned long long)u);
        /* The number parsed is the number written (up to leading zeros and blanks). */
        const char *p = text;
        while (*p == ' ' || *p == '\t' || *p == '+')
            p++;
        while (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
            p++;
        FZ_CHECK(strcmp(p, again) == 0);
    }
    if (fb_parse_double(text, &d) == 0)
        FZ_CHECK(isfinite(d));
    (void)fb_parse_bool(text, &b);
    static const char *const names[] = {"walking_ones", "walking_zeros", "random", "checkerboard"};
    int *ids = NULL;
    size_t n = 0;
    char *bad = NULL;
    if (fb_parse_name_list(text, names, 4, &ids, &n, &bad) == 0) {
        FZ_CHECK(bad == NULL);
        for (size_t i = 0; i < n; i++)
            FZ_CHECK(ids[i] >= 0 && ids[i] < 4);
    }
    free(ids);
    free(bad);
    free(text);
    return 0;
}
