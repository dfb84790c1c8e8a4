/* SPDX-License-Identifier: Apache-2.0 */
/* Quantity parsing for campaign files and command lines. Strict: an unknown suffix or trailing
 * characters are an error, so a typo never silently becomes a different size or timeout. */
#include "units.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A plain decimal number at the start of text: digits with an optional fraction ("64", "1.5",
 * ".5", "2."). No sign, exponent, hex or leading space: strtod alone would take "0x10" as 16 and
 * "1e3" as 1000. *exact is set when there is no fraction and the integer fits, with its exact
 * value in *ivalue (doubles lose integers above 2^53). */
static int s_number_prefix(const char *text, double *value, uint64_t *ivalue, bool *exact,
                           const char **rest)
{
    if (!text)
        return -EINVAL;
    const char *p = text;
    size_t int_digits = 0, frac_digits = 0;
    uint64_t iv = 0;
    bool fits = true;
    for (; isdigit((unsigned char)*p); p++, int_digits++) {
        unsigned d = (unsigned)(*p - '0');
        if (iv > (UINT64_MAX - d) / 10)
            fits = false;
        else
            iv = iv * 10 + d;
    }
    bool has_point = *p == '.';
    if (has_point)
        for (p++; isdigit((unsigned char)*p); p++)
            frac_digits++;
    if (int_digits + frac_digits == 0)
        return -EINVAL;
    char buf[512];
    size_t len = (size_t)(p - text);
    if (len >= sizeof buf)
        return -EINVAL;
    memcpy(buf, text, len);
    buf[len] = '\0';
    errno = 0;
    double v = strtod(buf, NULL);
    if (errno || !isfinite(v))
        return -EINVAL;
    *value = v;
    if (ivalue)
        *ivalue = iv;
    if (exact)
        *exact = fits && frac_digits == 0;
    *rest = p;
    return 0;
}

int fb_parse_bytes(const char *text, uint64_t *out)
{
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {
        {"", 1},       {"B", 1},       {"K", 1024.0},    {"KiB", 1024.0},        {"KB", 1e3},
        {"M", 1048576.0}, {"MiB", 1048576.0}, {"MB", 1e6}, {"G", 1073741824.0},
        {"GiB", 1073741824.0}, {"GB", 1e9}, {"T", 1099511627776.0}, {"TiB", 1099511627776.0},
        {"TB", 1e12},
    };
    double v;
    uint64_t iv;
    bool exact;
    const char *rest;
    if (s_number_prefix(text, &v, &iv, &exact, &rest))
        return -EINVAL;
    while (*rest == ' ')
        rest++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!strcasecmp(rest, units[i].suffix)) {
            if (exact) { /* integers stay exact up to UINT64_MAX */
                uint64_t bytes;
                if (__builtin_mul_overflow(iv, (uint64_t)units[i].mult, &bytes))
                    return -EINVAL;
                *out = bytes;
                return 0;
            }
            double bytes = v * units[i].mult;
            if (bytes >= 18446744073709551615.0 || bytes != bytes)
                return -EINVAL;
            *out = (uint64_t)(bytes + 0.5);
            return 0;
        }
    }
    return -EINVAL;
}

int fb_parse_bytes_or_percent(const char *text, uint64_t *out, double *percent)
{
    size_t len = text ? strlen(text) : 0;
    if (len > 1 && text[len - 1] == '%') {
        double p;
        const char *rest;
        if (s_number_prefix(text, &p, NULL, NULL, &rest) || strcmp(rest, "%") || p <= 0 || p > 100)
            return -EINVAL;
        *percent = p;
        *out = 0;
        return 0;
    }
    *percent = 0;
    return fb_parse_bytes(text, out);
}

int fb_parse_duration_ms(const char *text, uint64_t *out_ms)
{
    if (!text || !*text)
        return -EINVAL;
    double total = 0;
    const char *p = text;
    while (*p) {
        double v;
        const char *rest;
        if (s_number_prefix(p, &v, NULL, NULL, &rest))
            return -EINVAL;
        double mult;
        size_t ulen;
        if (!strncmp(rest, "ms", 2)) {
            mult = 1, ulen = 2;
        } else if (*rest == 's') {
            mult = 1e3, ulen = 1;
        } else if (*rest == 'm') {
            mult = 60e3, ulen = 1;
        } else if (*rest == 'h') {
            mult = 3600e3, ulen = 1;
        } else if (*rest == 'd') {
            mult = 86400e3, ulen = 1;
        } else if (*rest == '\0' && p == text) {
            mult = 1e3, ulen = 0; /* bare number: seconds */
        } else {
            return -EINVAL;
        }
        total += v * mult;
        p = rest + ulen;
    }
    if (total > 1e15)
        return -EINVAL;
    *out_ms = (uint64_t)(total + 0.5);
    return 0;
}

int fb_parse_uint(const char *text, uint64_t max, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)text[0]))
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end != '\0' || v > max)
        return -EINVAL;
    *out = (uint64_t)v;
    return 0;
}

int fb_parse_double(const char *text, double *out)
{
    /* strtod would also skip leading space and read hex ("0x1p3"): neither is a number here */
    if (!text || !*text || isspace((unsigned char)text[0]))
        return -EINVAL;
    const char *digits = text + (text[0] == '-' || text[0] == '+');
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || *end != '\0' || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

int fb_parse_bool(const char *text, bool *out)
{
    static const char *yes[] = {"true", "yes", "on", "1"};
    static const char *no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; text && i < 4; i++) {
        if (!strcasecmp(text, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcasecmp(text, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

const char *fb_format_bytes(uint64_t bytes, char *buf, int len)
{
    static const char *suffix[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int i = 0;
    while (v >= 1024.0 && i < 5) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, (size_t)len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, (size_t)len, "%.1f %s", v, suffix[i]);
    return buf;
}

const char *fb_format_duration(uint64_t ms, char *buf, int len)
{
    if (ms < 59950) { /* below a minute after rounding: 59999 ms is "1m00s", not "60.0s" */
        uint64_t tenths = (ms + 50) / 100;
        snprintf(buf, (size_t)len, "%llu.%llus", (unsigned long long)(tenths / 10),
                 (unsigned long long)(tenths % 10));
    } else {
        uint64_t s = ms < 60000 ? 60 : ms / 1000;
        if (s >= 3600)
            snprintf(buf, (size_t)len, "%lluh%02llum%02llus", (unsigned long long)(s / 3600),
                     (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
        else
            snprintf(buf, (size_t)len, "%llum%02llus", (unsigned long long)(s / 60),
                     (unsigned long long)(s % 60));
    }
    return buf;
}

/* Copies text[0..len) without surrounding blanks into a new heap string. */
static char *s_trimmed(const char *text, size_t len)
{
    while (len && (*text == ' ' || *text == '\t'))
        text++, len--;
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    char *copy = malloc(len + 1);
    if (!copy)
        abort();
    memcpy(copy, text, len);
    copy[len] = '\0';
    return copy;
}

static int s_name_index(const char *name, const char *const *names, size_t n_names)
{
    for (size_t i = 0; i < n_names; i++)
        if (names[i] && !strcmp(name, names[i]))
            return (int)i;
    return -1;
}

int fb_parse_name_list(const char *text, const char *const *names, size_t n_names, int **ids_out,
                       size_t *n_out, char **bad_out)
{
    *ids_out = NULL;
    *n_out = 0;
    if (bad_out)
        *bad_out = NULL;
    if (!text)
        return -EINVAL;
    char *whole = s_trimmed(text, strlen(text));
    bool all = !strcmp(whole, "all");
    free(whole);
    size_t cap = all ? n_names : 1;
    for (const char *c = text; !all && *c; c++)
        cap += *c == ',';
    int *ids = calloc(cap ? cap : 1, sizeof *ids);
    if (!ids)
        abort();
    size_t n = 0;
    if (all) {
        for (; n < n_names; n++)
            ids[n] = (int)n;
    } else {
        for (const char *c = text;;) {
            const char *end = strchr(c, ',');
            char *name = s_trimmed(c, end ? (size_t)(end - c) : strlen(c));
            int id = s_name_index(name, names, n_names);
            if (id < 0) {
                free(ids);
                if (bad_out)
                    *bad_out = name;
                else
                    free(name);
                return -EINVAL;
            }
            free(name);
            ids[n++] = id;
            if (!end)
                break;
            c = end + 1;
        }
    }
    *ids_out = ids;
    *n_out = n;
    return 0;
}
