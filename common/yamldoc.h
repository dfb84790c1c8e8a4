/* SPDX-License-Identifier: Apache-2.0 */
/* The one YAML helper layer: how fleetburn's YAML readers (campaign files, scheduler/campaign.c;
 * fault files, sim/faultmodel.c) load a document under limits and report errors.
 *
 * Input is untrusted (a campaign arrives over the network), so a document is loaded only after
 * a streaming pass over its events has checked, in time linear in the input:
 *   - its size (max_bytes);
 *   - its nesting depth: mappings and lists inside each other at most FB_YAML_MAX_DEPTH deep
 *     (libyaml's scanner spends time quadratic in the depth: 1 MB of '[' took minutes);
 *   - what aliases expand to: every scalar byte and node, counting what each alias stands for,
 *     at most FB_YAML_MAX_EXPANDED, so a few anchors cannot make a reader walk gigabytes.
 * The pass stops at the first limit passed, before libyaml has read further.
 *
 * Errors are one line, `SOURCE:LINE: KEYPATH: what is wrong; expected WHAT`, control characters
 * replaced; only the first error is kept. Messages quote at most the offending value, shortened
 * (fb_show_value). */
#ifndef FB_YAMLDOC_H
#define FB_YAMLDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#define FB_YAML_MAX_DEPTH 32
#define FB_YAML_MAX_EXPANDED (16u << 20)

typedef struct {
    const char *source; /* the name used in messages */
    const char *text;   /* the input, text[0..len) */
    size_t len;
    yaml_document_t *doc;    /* the loaded document (fb_yaml_load), borrowed */
    char *error;             /* the first error, heap; NULL while there is none */
    int extra_document_line; /* set by fb_yaml_load: the line of a second document's first
                                node, or 0 when there is none */
} fb_yaml_t;

/* Loads the first document of y->text into *doc after the limit pass (see above); a syntax
 * error anywhere in the input is reported. what names the kind of file in messages ("campaign
 * file", "fault file"). Sets y->extra_document_line when the input holds a second document (the
 * caller decides whether that is an error). Returns 0 with *doc loaded (delete it with
 * yaml_document_delete), or -EINVAL (-EFBIG past max_bytes) with y->error set and nothing to
 * delete. An empty input gives 0 and a document without a root node. Aborts on out of memory. */
int fb_yaml_load(fb_yaml_t *y, yaml_document_t *doc, size_t max_bytes, const char *what);

/* What a reader makes of a loaded document's root node (NULL for an empty input): 0 or the error
 * it recorded in y. */
typedef int (*fb_yaml_root_fn)(fb_yaml_t *y, yaml_node_t *root, void *arg);

/* Loads text[0..len) (source: the name in messages) with fb_yaml_load (max_bytes, what), hands
 * the root to fn and deletes the document: the frame every reader of a whole file shares. fn
 * decides what an empty input or a second document means. Returns 0, or the loader's or fn's
 * error with the message in *error_out (heap; freed when error_out is NULL); *error_out is NULL
 * on success. */
int fb_yaml_parse_text(const char *text, size_t len, const char *source, size_t max_bytes,
                       const char *what, fb_yaml_root_fn fn, void *arg, char **error_out);

/* Records the first error as "SOURCE:LINE: PATH: message" and returns -EINVAL (also when an
 * error was recorded before, which it keeps). */
int fb_yaml_fail(fb_yaml_t *y, int line, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The node with this index in y->doc, or NULL. */
yaml_node_t *fb_yaml_node(const fb_yaml_t *y, int index);
/* 1-based line where node starts (1 for NULL). */
int fb_yaml_line(const yaml_node_t *node);
/* "a single value", "a list", "a mapping", "empty": what a node is, for messages. */
const char *fb_yaml_kind(const yaml_node_t *node);
/* A plain scalar that YAML reads as null: "", "~", "null", "Null", "NULL". */
bool fb_yaml_is_null(const yaml_node_t *node);
/* The text of a scalar node (borrowed), or an error naming path when node is not a non-empty
 * scalar without NUL bytes. expected: the "expected ..." part of the message. */
int fb_yaml_scalar(fb_yaml_t *y, const yaml_node_t *node, const char *path, const char *expected,
                   const char **out);
/* 0 when node is a mapping, else an error naming path: "is KIND; EXPECTED", a null scalar being
 * "empty". expected: the "expected ..." part of the message. */
int fb_yaml_mapping(fb_yaml_t *y, const yaml_node_t *node, const char *path, const char *expected);
/* An unsigned integer (decimal, fb_parse_uint) from min to max, or an error naming path:
 * "'TEXT' is not an integer; EXPECTED" or "'TEXT' is out of range; EXPECTED" (expected: the
 * whole "expected ..." text, which should say the range). */
int fb_yaml_uint(fb_yaml_t *y, const yaml_node_t *node, const char *path, uint64_t min,
                 uint64_t max, const char *expected, uint64_t *out);
/* A duration (fb_parse_duration_ms: 90s, 30m, 2h) from min_ms to max_ms, in milliseconds, or an
 * error as fb_yaml_uint's ("is not a duration", "is out of range"). */
int fb_yaml_duration_ms(fb_yaml_t *y, const yaml_node_t *node, const char *path, uint64_t min_ms,
                        uint64_t max_ms, const char *expected, uint64_t *out_ms);
/* The text of a mapping key (borrowed), or an error at path ("(top level)" when path is "")
 * when key is missing, not a scalar, null or holds a NUL byte: "a key is ...; expected one of
 * EXPECTED" (expected: the keys the mapping takes). */
int fb_yaml_key(fb_yaml_t *y, const yaml_node_t *key, const char *path, const char *expected,
                const char **out);
/* The key path of key under parent, for messages: "parent.key", or "key" when parent is "";
 * the key made printable and shortened (fb_show_value). Heap. */
char *fb_yaml_path(const char *parent, const char *key);

#endif
