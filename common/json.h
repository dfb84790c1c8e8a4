/* SPDX-License-Identifier: Apache-2.0 */
/* A streaming JSON writer into a growing buffer. Keys are given with each value; pass NULL as
 * the key inside arrays and at the top level. Strings are escaped (control characters, quotes,
 * backslashes; invalid UTF-8 bytes become U+FFFD) so any text from a node is safe to emit. */
#ifndef FB_JSON_H
#define FB_JSON_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fb_json fb_json_t;

fb_json_t *fb_json_new(bool pretty);
void fb_json_destroy(fb_json_t **self_p);

void fb_json_object_begin(fb_json_t *self, const char *key);
void fb_json_object_end(fb_json_t *self);
void fb_json_array_begin(fb_json_t *self, const char *key);
void fb_json_array_end(fb_json_t *self);
/* NULL value writes null. */
void fb_json_string(fb_json_t *self, const char *key, const char *value);
/* Non-finite numbers write null (JSON has no NaN). */
void fb_json_number(fb_json_t *self, const char *key, double value);
void fb_json_int(fb_json_t *self, const char *key, int64_t value);
void fb_json_bool(fb_json_t *self, const char *key, bool value);
void fb_json_null(fb_json_t *self, const char *key);
/* A timestamp (epoch milliseconds) as ISO 8601 UTC text (fb_iso8601); 0, "never", writes null. */
void fb_json_time(fb_json_t *self, const char *key, uint64_t epoch_ms);
/* Writes json_text verbatim as the value (e.g. a stored JSON object). The caller guarantees it
 * is one complete, valid JSON value; it is not checked. NULL writes null. */
void fb_json_raw(fb_json_t *self, const char *key, const char *json_text);

/* The text so far (borrowed). */
const char *fb_json_text(const fb_json_t *self);
/* Takes the text out (caller frees) and resets the writer. */
char *fb_json_take(fb_json_t *self);

#endif
