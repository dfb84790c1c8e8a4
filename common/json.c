/* SPDX-License-Identifier: Apache-2.0 */
/* JSON writer used for reports, inventory snapshots and stored parameters. */
#include "json.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FB_JSON_MAX_DEPTH 64

struct fb_json {
    char *buf;
    size_t len, cap;
    bool pretty;
    int depth;
    bool first[FB_JSON_MAX_DEPTH]; /* no element written yet at this depth */
};

fb_json_t *fb_json_new(bool pretty)
{
    fb_json_t *self = xcalloc(1, sizeof *self);
    self->pretty = pretty;
    self->cap = 256;
    self->buf = xmalloc(self->cap);
    self->buf[0] = '\0';
    self->first[0] = true;
    return self;
}

void fb_json_destroy(fb_json_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->buf);
    free(*self_p);
    *self_p = NULL;
}

static void s_put(fb_json_t *self, const char *s, size_t n)
{
    if (self->len + n + 1 > self->cap) {
        while (self->len + n + 1 > self->cap)
            self->cap *= 2;
        self->buf = xrealloc(self->buf, self->cap);
    }
    memcpy(self->buf + self->len, s, n);
    self->len += n;
    self->buf[self->len] = '\0';
}

static void s_puts(fb_json_t *self, const char *s)
{
    s_put(self, s, strlen(s));
}

static void s_newline(fb_json_t *self)
{
    if (!self->pretty)
        return;
    s_put(self, "\n", 1);
    for (int i = 0; i < self->depth; i++)
        s_put(self, "  ", 2);
}

/* Length of a valid UTF-8 sequence starting at s, or 0 when invalid (RFC 3629: no overlong
 * forms, no UTF-16 surrogates, nothing above U+10FFFF), so strict decoders accept the output. */
static size_t s_utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3, lo = s[0] == 0xE0 ? 0xA0 : 0x80, hi = s[0] == 0xED ? 0x9F : 0xBF;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4, lo = s[0] == 0xF0 ? 0x90 : 0x80, hi = s[0] == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

static void s_quoted(fb_json_t *self, const char *text)
{
    s_put(self, "\"", 1);
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p;
            s_put(self, esc, 2);
            p++;
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            s_puts(self, esc);
            p++;
        } else {
            size_t n = s_utf8_len(p);
            if (n == 0) {
                s_puts(self, "\xEF\xBF\xBD");
                p++;
            } else {
                s_put(self, (const char *)p, n);
                p += n;
            }
        }
    }
    s_put(self, "\"", 1);
}

static void s_key(fb_json_t *self, const char *key)
{
    if (!self->first[self->depth])
        s_put(self, ",", 1);
    if (self->depth > 0)
        s_newline(self);
    self->first[self->depth] = false;
    if (key) {
        s_quoted(self, key);
        s_puts(self, self->pretty ? ": " : ":");
    }
}

static void s_open(fb_json_t *self, const char *key, const char *bracket)
{
    s_key(self, key);
    s_puts(self, bracket);
    if (self->depth + 1 < FB_JSON_MAX_DEPTH)
        self->depth++;
    self->first[self->depth] = true;
}

static void s_close(fb_json_t *self, const char *bracket)
{
    bool empty = self->first[self->depth];
    if (self->depth > 0)
        self->depth--;
    if (!empty)
        s_newline(self);
    s_puts(self, bracket);
}

void fb_json_object_begin(fb_json_t *self, const char *key)
{
    s_open(self, key, "{");
}

void fb_json_object_end(fb_json_t *self)
{
    s_close(self, "}");
}

void fb_json_array_begin(fb_json_t *self, const char *key)
{
    s_open(self, key, "[");
}

void fb_json_array_end(fb_json_t *self)
{
    s_close(self, "]");
}

void fb_json_string(fb_json_t *self, const char *key, const char *value)
{
    s_key(self, key);
    if (value)
        s_quoted(self, value);
    else
        s_puts(self, "null");
}

void fb_json_number(fb_json_t *self, const char *key, double value)
{
    s_key(self, key);
    if (!isfinite(value)) {
        s_puts(self, "null");
        return;
    }
    char num[40];
    snprintf(num, sizeof num, "%.17g", value);
    /* Prefer the shortest text that reads back the same. */
    for (int prec = 6; prec < 17; prec++) {
        char shorter[40];
        snprintf(shorter, sizeof shorter, "%.*g", prec, value);
        if (strtod(shorter, NULL) == value) {
            memcpy(num, shorter, sizeof num);
            break;
        }
    }
    s_puts(self, num);
}

void fb_json_int(fb_json_t *self, const char *key, int64_t value)
{
    s_key(self, key);
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)value);
    s_puts(self, num);
}

void fb_json_bool(fb_json_t *self, const char *key, bool value)
{
    s_key(self, key);
    s_puts(self, value ? "true" : "false");
}

void fb_json_null(fb_json_t *self, const char *key)
{
    s_key(self, key);
    s_puts(self, "null");
}

void fb_json_time(fb_json_t *self, const char *key, uint64_t epoch_ms)
{
    char text[40];
    if (epoch_ms)
        fb_json_string(self, key, fb_iso8601(epoch_ms, text, sizeof text));
    else
        fb_json_null(self, key);
}

void fb_json_raw(fb_json_t *self, const char *key, const char *json_text)
{
    s_key(self, key);
    s_puts(self, json_text ? json_text : "null");
}

const char *fb_json_text(const fb_json_t *self)
{
    return self->buf;
}

char *fb_json_take(fb_json_t *self)
{
    char *text = self->buf;
    self->cap = 256;
    self->buf = xmalloc(self->cap);
    self->buf[0] = '\0';
    self->len = 0;
    self->depth = 0;
    self->first[0] = true;
    return text;
}
