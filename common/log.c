/* SPDX-License-Identifier: Apache-2.0 */
/* stderr logger. One line per call, written with a single write so that lines from the agent and
 * its workers do not interleave mid-line. Messages often carry text a peer sent (node names,
 * errors, worker output), so control characters are escaped before the line is written: a peer
 * cannot forge log lines with newlines or rewrite a terminal with escape sequences. */
#include "log.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char s_component[64] = "fleetburn";
static fb_log_level_t s_level = FB_LOG_INFO;
static void (*s_before)(void *arg);
static void *s_before_arg;

static fb_log_level_t s_level_from_env(fb_log_level_t fallback)
{
    const char *env = getenv("FLEETBURN_LOG");
    if (!env)
        return fallback;
    if (!strcmp(env, "debug"))
        return FB_LOG_DEBUG;
    if (!strcmp(env, "info"))
        return FB_LOG_INFO;
    if (!strcmp(env, "warn"))
        return FB_LOG_WARN;
    if (!strcmp(env, "error"))
        return FB_LOG_ERROR;
    return fallback;
}

void fb_log_init(const char *component, fb_log_level_t level)
{
    fb_strlcpy(s_component, component, sizeof s_component);
    s_level = s_level_from_env(level);
}

void fb_log_set_level(fb_log_level_t level)
{
    s_level = level;
}

void fb_log(fb_log_level_t level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < s_level)
        return;
    char stamp[32];
    uint64_t now = fb_now_ms();
    time_t secs = (time_t)(now / 1000u);
    struct tm tm;
    localtime_r(&secs, &tm);
    strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);

    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    char line[2048 * 4 + 128];
    int n = snprintf(line, sizeof line, "%s.%03u %s [%s] ", stamp, (unsigned)(now % 1000u),
                     s_component, names[level]);
    if (n < 0)
        return;
    size_t len = (size_t)n + fb_log_sanitize(msg, line + n, sizeof line - (size_t)n - 1);
    line[len++] = '\n';
    if (s_before)
        s_before(s_before_arg);
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void fb_log_set_before(void (*fn)(void *arg), void *arg)
{
    s_before = fn;
    s_before_arg = arg;
}

size_t fb_log_sanitize(const char *text, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;
    if (outlen == 0)
        return 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            if (j + 1 >= outlen)
                break;
            out[j++] = (char)*p;
        } else {
            if (j + 4 >= outlen)
                break;
            out[j++] = '\\';
            out[j++] = 'x';
            out[j++] = hex[*p >> 4];
            out[j++] = hex[*p & 15];
        }
    }
    out[j] = '\0';
    return j;
}
