/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing of the quantities campaign files and command lines use: byte sizes with binary and
 * decimal suffixes or a percentage, durations with units, and plain counts. All return 0 or
 * -EINVAL, and never accept trailing garbage. */
#ifndef FB_UNITS_H
#define FB_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "4096", "64MiB", "64M" (binary), "1.5GiB", "10GB" (decimal), "512KiB". */
int fb_parse_bytes(const char *text, uint64_t *out);
/* Like fb_parse_bytes, or "80%" which sets *percent (0 < p <= 100) and *out = 0. */
int fb_parse_bytes_or_percent(const char *text, uint64_t *out, double *percent);
/* "500ms", "90s", "30m", "2h", "1d", "1h30m", or a bare number of seconds. */
int fb_parse_duration_ms(const char *text, uint64_t *out_ms);
/* A non-negative decimal integer no larger than max. */
int fb_parse_uint(const char *text, uint64_t max, uint64_t *out);
/* A finite double. */
int fb_parse_double(const char *text, double *out);
/* "true/false/yes/no/on/off/1/0". */
int fb_parse_bool(const char *text, bool *out);
/* A comma-separated list of names from a table ("all" = every name, in table order; blanks
 * around names ignored; repeats kept). *ids_out gets table indices (caller frees). On an unknown
 * or empty name returns -EINVAL and, when bad_out is given, a heap copy of that name. */
int fb_parse_name_list(const char *text, const char *const *names, size_t n_names, int **ids_out,
                       size_t *n_out, char **bad_out);
/* Formats bytes with a binary suffix ("64.0 MiB") into buf. */
const char *fb_format_bytes(uint64_t bytes, char *buf, int len);
/* Formats a duration as "1h02m03s" / "4.2s" into buf. */
const char *fb_format_duration(uint64_t ms, char *buf, int len);

#endif
