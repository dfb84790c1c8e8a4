/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr with a timestamp, level and component. Daemons log; libraries return errors. */
#ifndef FB_LOG_H
#define FB_LOG_H

#include <stddef.h>

typedef enum { FB_LOG_DEBUG, FB_LOG_INFO, FB_LOG_WARN, FB_LOG_ERROR } fb_log_level_t;

/* Process-wide settings: the component name printed on every line ("agent local-0") and the
 * lowest level printed (FLEETBURN_LOG=debug|info|warn|error overrides at start-up). */
void fb_log_init(const char *component, fb_log_level_t level);
void fb_log_set_level(fb_log_level_t level);
void fb_log(fb_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* fn(arg) runs before each line is written (NULL: nothing): the command line's progress ends the
 * terminal line it rewrites in place, so that a warning starts on a line of its own. */
void fb_log_set_before(void (*fn)(void *arg), void *arg);

/* Copies text into out (outlen bytes, NUL-terminated, cut when full) with every control character
 * (below 0x20, and 0x7f) written as \xNN. Returns the length written. Every log line goes
 * through it. */
size_t fb_log_sanitize(const char *text, char *out, size_t outlen);

#define log_debug(...) fb_log(FB_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) fb_log(FB_LOG_INFO, __VA_ARGS__)
#define log_warn(...) fb_log(FB_LOG_WARN, __VA_ARGS__)
#define log_error(...) fb_log(FB_LOG_ERROR, __VA_ARGS__)

#endif
