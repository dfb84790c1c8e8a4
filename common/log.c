/* SPDX-License-Identifier: Apache-2.0 */
/* stderr logger. One line per call, written with a single write so that lines from the agent and
 * its workers do not interleave mid-line. */
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

    char line[2048];
    int n = snprintf(line, sizeof line, "%s.%03u %s [%s] ", stamp, (unsigned)(now % 1000u),
                     s_component, names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line - 1)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
