/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers every module uses: allocation that aborts on host out-of-memory (the one place
 * fleetburn does so), formatted strings, clocks and string copies. */
#ifndef FB_UTIL_H
#define FB_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t n);
void *xrealloc(void *p, size_t n);
/* Returns a heap copy the caller owns; xstrdup(NULL) returns NULL. */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new heap string the caller owns. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);
/* The caller's-buffer error shape (docs/architecture.md "Errors"): printf into err, truncated to
 * errlen, when err is not NULL and errlen not 0; returns rc, so that one statement reports and
 * fails: `return fb_errf(err, errlen, -EINVAL, "...", ...)`. Never allocates. */
int fb_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Wall clock, milliseconds since the epoch (timeline timestamps). */
uint64_t fb_now_ms(void);
/* Monotonic clock in milliseconds and seconds (durations, deadlines). */
uint64_t fb_mono_ms(void);
double fb_mono_s(void);
/* Formats epoch milliseconds as ISO 8601 UTC (2026-11-22T03:17:00.123Z) into buf (>= 32 bytes). */
const char *fb_iso8601(uint64_t epoch_ms, char *buf, size_t len);

/* The n strings of items joined with sep between them ("" when n is 0), a heap string the
 * caller owns. */
char *fb_strjoin(char *const *items, size_t n, const char *sep);

/* Copies at most len-1 bytes and always terminates; returns strlen(src). */
size_t fb_strlcpy(char *dst, const char *src, size_t len);

/* data as lowercase hex into out (at most outlen - 1 digits, always terminated); ZeroMQ routing
 * identities travel as text this way. */
void fb_hex_encode(const uint8_t *data, size_t len, char *out, size_t outlen);
/* The bytes of the first hexlen characters of hex (pairs of digits, up to the first that is
 * not), at most max of them; returns how many. */
size_t fb_hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t max);
/* Reads a whole (small) regular file, e.g. a sysfs attribute, through fb_load_file (fileload.h):
 * at most FB_READ_FILE_MAX bytes, FIFOs and devices refused (EINVAL), larger files EFBIG;
 * trailing newlines and blanks stripped. NULL on error with errno set. Caller frees. */
#define FB_READ_FILE_MAX (64u << 20)
char *fb_read_file(const char *path, size_t *len_out);
/* Reads a sysfs-style file holding one unsigned integer. Returns 0 or negative errno
 * (-EINVAL when the content is not a number). */
int fb_read_u64(const char *path, uint64_t *out);

/* A printable, shortened copy of text for one-line messages: at most 48 characters, then
 * "..."; control bytes, non-ASCII bytes and quotes as \xHH. Returns buf. */
const char *fb_show_value(const char *text, char *buf, size_t buflen);
/* The entries of a directory, without those starting with '.', sorted in version order (eth2
 * before eth10). Returns the count; *names_out is a heap array of heap strings, NULL when the
 * directory is empty or absent. Free with fb_names_free. */
size_t fb_list_dir(const char *path, char ***names_out);
void fb_names_free(char **names, size_t n);
/* mkdir -p with the given mode for created directories. 0 or negative errno. */
int fb_mkdir_p(const char *path, unsigned mode);
/* Directory holding the running executable (from /proc/self/exe), heap string; NULL on error. */
char *fb_exe_dir(void);
/* Where another fleetburn program called name is (heap string): next to the running executable
 * (a build tree, a bundle: everything in one directory), else in the libexec directory of an
 * installed tree, found relative to the executable (bin/../libexec/fleetburn: FB_LIBEXEC_REL),
 * so that any install prefix works. When neither is executable: the installed tree's path when
 * its directory exists, else the one next to the executable, for the caller's error message. */
char *fb_program_path(const char *name);
/* True when a ZeroMQ endpoint can be reached only from this host: ipc:// and inproc://, or tcp://
 * on a loopback address (127.0.0.0/8, ::1, localhost, the interface lo). False for tcp://\*,
 * 0.0.0.0 and every other address. */
bool fb_endpoint_is_local(const char *endpoint);

#endif
