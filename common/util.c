/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation, string and clock helpers. Host out-of-memory is not recoverable for the daemons,
 * so the x* allocators abort with a message instead of returning NULL to every caller. */
#include "util.h"

#include "fileload.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

static void s_oom(size_t n)
{
    fprintf(stderr, "fleetburn: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        s_oom(n);
    return p;
}

void *xcalloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);
    if (!p)
        s_oom(count * n);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        s_oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    return s ? xstrndup(s, strlen(s)) : NULL;
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        n = 0;
    char *p = xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

int fb_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

uint64_t fb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t fb_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

double fb_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *fb_iso8601(uint64_t epoch_ms, char *buf, size_t len)
{
    if (epoch_ms == 0) {
        fb_strlcpy(buf, "", len);
        return buf;
    }
    time_t secs = (time_t)(epoch_ms / 1000u);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char date[24];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03uZ", date, (unsigned)(epoch_ms % 1000u));
    return buf;
}

char *fb_strjoin(char *const *items, size_t n, const char *sep)
{
    size_t seplen = strlen(sep), len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(items[i]) + (i ? seplen : 0);
    char *out = xmalloc(len + 1), *p = out;
    for (size_t i = 0; i < n; i++) {
        if (i) {
            memcpy(p, sep, seplen);
            p += seplen;
        }
        size_t k = strlen(items[i]);
        memcpy(p, items[i], k);
        p += k;
    }
    *p = '\0';
    return out;
}

size_t fb_strlcpy(char *dst, const char *src, size_t len)
{
    size_t n = strlen(src);
    if (len) {
        size_t copy = n < len - 1 ? n : len - 1;
        memcpy(dst, src, copy);
        dst[copy] = '\0';
    }
    return n;
}

char *fb_read_file(const char *path, size_t *len_out)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = fb_load_file(path, FB_READ_FILE_MAX, &buf, &len, NULL);
    if (rc) {
        errno = -rc;
        return NULL;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        len--;
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

int fb_read_u64(const char *path, uint64_t *out)
{
    char *text = fb_read_file(path, NULL);
    if (!text)
        return -errno;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    int rc = (errno || end == text || *end != '\0' || text[0] == '-') ? -EINVAL : 0;
    free(text);
    if (rc == 0)
        *out = (uint64_t)v;
    return rc;
}

int fb_mkdir_p(const char *path, unsigned mode)
{
    char *copy = xstrdup(path);
    int rc = 0;
    for (char *p = copy + 1; rc == 0; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(copy, (mode_t)mode) != 0 && errno != EEXIST)
            rc = -errno;
        *p = saved;
        if (saved == '\0')
            break;
    }
    free(copy);
    return rc;
}

char *fb_exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
    return xstrdup(buf);
}

#ifndef FB_LIBEXEC_REL
#define FB_LIBEXEC_REL "../libexec/fleetburn"
#endif

char *fb_program_path(const char *name)
{
    char *dir = fb_exe_dir();
    const char *base = dir ? dir : ".";
    char *beside = xasprintf("%s/%s", base, name);
    char *libexec_dir = xasprintf("%s/%s", base, FB_LIBEXEC_REL);
    char *installed = xasprintf("%s/%s", libexec_dir, name);
    struct stat st;
    char *path = access(beside, X_OK) == 0                            ? beside
                 : access(installed, X_OK) == 0                       ? installed
                 : stat(libexec_dir, &st) == 0 && S_ISDIR(st.st_mode) ? installed
                                                                      : beside;
    free(path == beside ? installed : beside);
    free(libexec_dir);
    free(dir);
    return path;
}

const char *fb_show_value(const char *text, char *buf, size_t buflen)
{
    size_t o = 0;
    for (size_t i = 0; text[i] && o + 8 < buflen; i++) {
        unsigned char c = (unsigned char)text[i];
        if (i >= 48) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\'')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x", c);
    }
    buf[o] = '\0';
    return buf;
}

static int s_version_cmp(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

size_t fb_list_dir(const char *path, char ***names_out)
{
    *names_out = NULL;
    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(de->d_name);
    }
    closedir(dir);
    if (n > 1)
        qsort(names, n, sizeof *names, s_version_cmp);
    *names_out = names;
    return n;
}

void fb_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

bool fb_endpoint_is_local(const char *endpoint)
{
    if (!strncmp(endpoint, "ipc://", 6) || !strncmp(endpoint, "inproc://", 9))
        return true;
    if (strncmp(endpoint, "tcp://", 6))
        return false;
    const char *host = endpoint + 6;
    const char *colon = strrchr(host, ':');
    size_t len = colon ? (size_t)(colon - host) : strlen(host);
    char h[64];
    if (len == 0 || len >= sizeof h)
        return false;
    memcpy(h, host, len);
    h[len] = '\0';
    if (!strcmp(h, "localhost") || !strcmp(h, "lo") || !strcmp(h, "[::1]") || !strcmp(h, "::1"))
        return true;
    unsigned a, b, c, d;
    char extra;
    return sscanf(h, "%u.%u.%u.%u%c", &a, &b, &c, &d, &extra) == 4 && a == 127 && b < 256 &&
           c < 256 && d < 256;
}

void fb_hex_encode(const uint8_t *data, size_t len, char *out, size_t outlen)
{
    static const char digits[] = "0123456789abcdef";
    size_t j = 0;
    if (!outlen)
        return;
    for (size_t i = 0; i < len && j + 2 < outlen; i++) {
        out[j++] = digits[data[i] >> 4];
        out[j++] = digits[data[i] & 15];
    }
    out[j] = '\0';
}

static int s_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t fb_hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i + 1 < hexlen && hex[i] && hex[i + 1] && n < max; i += 2) {
        int hi = s_hex_digit(hex[i]), lo = s_hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0)
            break;
        out[n++] = (uint8_t)(hi << 4 | lo);
    }
    return n;
}
