/* SPDX-License-Identifier: Apache-2.0 */
/* The text lines that carry an Exchange between a worker and its agent (docs/protocol.md).
 *
 *   worker -> agent (stdout):  exchange KEY TIMEOUT_MS HEX
 *   agent -> worker (stdin):   exchange KEY ok HEX0 HEX1 ...      (one value per rank, by rank)
 *                              exchange KEY error TEXT
 *
 * HEX is lower-case hex of the bytes, "-" for an empty value; KEY is [A-Za-z0-9._-]. Lines end in
 * "\n" (the formatters add it; the parsers accept it absent). Pure string work, no I/O. */
#ifndef FB_EXLINE_H
#define FB_EXLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One value. */
typedef struct {
    uint8_t *data; /* owned where an array of these is returned */
    size_t len;
} fb_exline_blob_t;

/* Heap line "exchange KEY TIMEOUT_MS HEX\n". */
char *fb_exline_post_format(const char *key, uint64_t timeout_ms, const void *value, size_t len);
/* Parses a post line (with or without the leading "exchange "). On 0, *key_out and *value_out
 * are heap (free them; value may be NULL when len is 0). -EINVAL on anything malformed. */
int fb_exline_post_parse(const char *line, char **key_out, uint64_t *timeout_ms_out,
                      uint8_t **value_out, size_t *len_out);

/* Heap reply lines. */
char *fb_exline_reply_ok_format(const char *key, const fb_exline_blob_t *values, size_t n);
char *fb_exline_reply_error_format(const char *key, const char *error);
/* Parses a reply line. On 0: *key_out heap; *ok true with *values_out (heap array of n blobs,
 * free with fb_exline_blobs_free) or false with *error_out heap. -EINVAL when malformed. */
int fb_exline_reply_parse(const char *line, char **key_out, bool *ok, fb_exline_blob_t **values_out,
                       size_t *n_out, char **error_out);
void fb_exline_blobs_free(fb_exline_blob_t **blobs_p, size_t n);

/* True for a valid exchange key: [A-Za-z0-9._-], 1..64 characters. */
bool fb_exline_valid_key(const char *key);

#endif
