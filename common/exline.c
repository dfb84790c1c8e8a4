/* SPDX-License-Identifier: Apache-2.0 */
/* Exchange lines between worker and agent: hex framing of binary values on a text channel, so
 * that the worker's stdout stays one line per message like its progress and log lines. */
#include "exline.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXLINE_PREFIX "exchange "
#define EXLINE_KEY_MAX 64

bool fb_exline_valid_key(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > EXLINE_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

/* Appends the hex of data (or "-") at out; returns the end. out needs 2*len+1 bytes (or 2). */
static char *s_put_hex(char *out, const uint8_t *data, size_t len)
{
    if (len == 0) {
        *out++ = '-';
        return out;
    }
    fb_hex_encode(data, len, out, 2 * len + 1);
    return out + 2 * len;
}

/* Decodes the token text[0..n) ("-" or hex). */
static int s_get_hex(const char *text, size_t n, uint8_t **out, size_t *len_out)
{
    *out = NULL;
    *len_out = 0;
    if (n == 1 && text[0] == '-')
        return 0;
    if (n == 0 || n % 2)
        return -EINVAL;
    uint8_t *buf = xmalloc(n / 2);
    if (fb_hex_decode(text, n, buf, n / 2) != n / 2) { /* stopped early at a non-hex digit */
        free(buf);
        return -EINVAL;
    }
    *out = buf;
    *len_out = n / 2;
    return 0;
}

/* Splits off the next space-separated token of *p: start and length; -EINVAL when none. */
static int s_token(const char **p, const char **start, size_t *len)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    size_t n = strcspn(s, " \n");
    if (n == 0)
        return -EINVAL;
    *start = s;
    *len = n;
    *p = s + n;
    return 0;
}

static const char *s_skip_prefix(const char *line)
{
    return strncmp(line, EXLINE_PREFIX, strlen(EXLINE_PREFIX)) ? line
                                                               : line + strlen(EXLINE_PREFIX);
}

static int s_key(const char **p, char **key_out)
{
    const char *t;
    size_t n;
    if (s_token(p, &t, &n) || n > EXLINE_KEY_MAX)
        return -EINVAL;
    char *key = xstrndup(t, n);
    if (!fb_exline_valid_key(key)) {
        free(key);
        return -EINVAL;
    }
    *key_out = key;
    return 0;
}

char *fb_exline_post_format(const char *key, uint64_t timeout_ms, const void *value, size_t len)
{
    char head[128];
    int h = snprintf(head, sizeof head, EXLINE_PREFIX "%s %llu ", key,
                     (unsigned long long)timeout_ms);
    char *line = xmalloc((size_t)h + 2 * len + 3);
    memcpy(line, head, (size_t)h);
    char *end = s_put_hex(line + h, value, len);
    *end++ = '\n';
    *end = '\0';
    return line;
}

int fb_exline_post_parse(const char *line, char **key_out, uint64_t *timeout_ms_out,
                      uint8_t **value_out, size_t *len_out)
{
    *key_out = NULL;
    *value_out = NULL;
    *len_out = 0;
    const char *p = s_skip_prefix(line), *t;
    size_t n;
    char *key = NULL;
    if (s_key(&p, &key))
        return -EINVAL;
    if (s_token(&p, &t, &n) || n > 20 || strspn(t, "0123456789") < n)
        goto bad;
    errno = 0;
    *timeout_ms_out = strtoull(t, NULL, 10);
    if (errno) /* past UINT64_MAX: not the number written */
        goto bad;
    if (s_token(&p, &t, &n) || s_get_hex(t, n, value_out, len_out))
        goto bad;
    while (*p == ' ' || *p == '\n')
        p++;
    if (*p) {
        free(*value_out);
        *value_out = NULL;
        *len_out = 0;
        goto bad;
    }
    *key_out = key;
    return 0;
bad:
    free(key);
    return -EINVAL;
}

char *fb_exline_reply_ok_format(const char *key, const fb_exline_blob_t *values, size_t n)
{
    size_t cap = strlen(EXLINE_PREFIX) + strlen(key) + 8;
    for (size_t i = 0; i < n; i++)
        cap += 2 * values[i].len + 2;
    char *line = xmalloc(cap);
    char *p = line + sprintf(line, EXLINE_PREFIX "%s ok", key);
    for (size_t i = 0; i < n; i++) {
        *p++ = ' ';
        p = s_put_hex(p, values[i].data, values[i].len);
    }
    *p++ = '\n';
    *p = '\0';
    return line;
}

char *fb_exline_reply_error_format(const char *key, const char *error)
{
    char *line = xasprintf(EXLINE_PREFIX "%s error %s\n", key, error && *error ? error : "failed");
    /* The text must stay on one line. */
    for (char *p = line; p[1]; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return line;
}

void fb_exline_blobs_free(fb_exline_blob_t **blobs_p, size_t n)
{
    if (!blobs_p || !*blobs_p)
        return;
    for (size_t i = 0; i < n; i++)
        free((*blobs_p)[i].data);
    free(*blobs_p);
    *blobs_p = NULL;
}

int fb_exline_reply_parse(const char *line, char **key_out, bool *ok, fb_exline_blob_t **values_out,
                       size_t *n_out, char **error_out)
{
    *key_out = NULL;
    *values_out = NULL;
    *n_out = 0;
    *error_out = NULL;
    const char *p = s_skip_prefix(line), *t;
    size_t n;
    char *key = NULL;
    if (s_key(&p, &key))
        return -EINVAL;
    if (s_token(&p, &t, &n))
        goto bad;
    if (n == 5 && !strncmp(t, "error", 5)) {
        while (*p == ' ')
            p++;
        *ok = false;
        *error_out = xstrndup(p, strcspn(p, "\n"));
        *key_out = key;
        return 0;
    }
    if (n != 2 || strncmp(t, "ok", 2))
        goto bad;
    fb_exline_blob_t *values = NULL;
    size_t count = 0, cap = 0;
    while (s_token(&p, &t, &n) == 0) {
        if (count == cap) {
            cap = cap ? 2 * cap : 8;
            values = xrealloc(values, cap * sizeof *values);
        }
        if (s_get_hex(t, n, &values[count].data, &values[count].len)) {
            fb_exline_blobs_free(&values, count);
            goto bad;
        }
        count++;
    }
    *ok = true;
    *values_out = values;
    *n_out = count;
    *key_out = key;
    return 0;
bad:
    free(key);
    return -EINVAL;
}
