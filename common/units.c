/* SPDX-License-Identifier: Apache-2.0 */
/* Quantity parsing for campaign files and command lines. Strict: an unknown suffix or trailing
 * characters are an error, so a typo never silently becomes a different size or timeout. */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int s_number_prefix(const char *text, double *value, const char **rest)
{
    if (!text || (!isdigit((unsigned char)text[0]) && text[0] != '.'))
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !isfinite(v) || v < 0)
        return -EINVAL;
    *value = v;
    *rest = end;
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
    const char *rest;
    if (s_number_prefix(text, &v, &rest))
        return -EINVAL;
    while (*rest == ' ')
        rest++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!strcasecmp(rest, units[i].suffix)) {
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
        char buf[64];
        if (len >= sizeof buf)
            return -EINVAL;
        memcpy(buf, text, len - 1);
        buf[len - 1] = '\0';
        double p;
        if (fb_parse_double(buf, &p) || p <= 0 || p > 100)
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
        if (s_number_prefix(p, &v, &rest))
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
    if (!text || !*text)
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
    if (ms < 60000) {
        snprintf(buf, (size_t)len, "%.1fs", (double)ms / 1000.0);
    } else {
        uint64_t s = ms / 1000;
        if (s >= 3600)
            snprintf(buf, (size_t)len, "%lluh%02llum%02llus", (unsigned long long)(s / 3600),
                     (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
        else
            snprintf(buf, (size_t)len, "%llum%02llus", (unsigned long long)(s / 60),
                     (unsigned long long)(s % 60));
    }
    return buf;
}
