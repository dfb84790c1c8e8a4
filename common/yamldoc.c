/* SPDX-License-Identifier: Apache-2.0 */
/* The YAML helper layer (yamldoc.h). libyaml's document API gives every node its line, which
 * the readers' messages need; it has no limits of its own, so a streaming pass over the events
 * checks depth and alias expansion first and stops at the first limit passed. The pass costs
 * a second parse of documents that are small by construction (campaign files, fault files),
 * and it keeps libyaml's scanner out of its quadratic case: the scanner walks its stack of
 * possible simple keys, one per open flow collection, for every token, so unbounded '[' nesting
 * costs depth x tokens (1 MB of '[' took minutes before this pass existed). */
#include "yamldoc.h"

#include "strmap.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fb_yaml_fail(fb_yaml_t *y, int line, const char *path, const char *fmt, ...)
{
    if (y->error)
        return -EINVAL;
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    y->error = xasprintf("%s:%d: %s: %s", y->source ? y->source : "<yaml>", line, path, what);
    free(what);
    for (char *p = y->error; *p; p++) /* one line, whatever the file name or text held */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return -EINVAL;
}

yaml_node_t *fb_yaml_node(const fb_yaml_t *y, int index)
{
    return y->doc ? yaml_document_get_node(y->doc, index) : NULL;
}

int fb_yaml_line(const yaml_node_t *node)
{
    return node ? (int)node->start_mark.line + 1 : 1;
}

const char *fb_yaml_kind(const yaml_node_t *node)
{
    switch (node ? node->type : YAML_NO_NODE) {
    case YAML_SCALAR_NODE:
        return "a single value";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "empty";
    }
}

bool fb_yaml_is_null(const yaml_node_t *node)
{
    if (!node || node->type != YAML_SCALAR_NODE ||
        node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)node->data.scalar.value;
    size_t n = node->data.scalar.length;
    return n == 0 || (n == 1 && v[0] == '~') ||
           (n == 4 && (!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) || !memcmp(v, "NULL", 4)));
}

int fb_yaml_scalar(fb_yaml_t *y, const yaml_node_t *node, const char *path, const char *expected,
                   const char **out)
{
    if (node->type != YAML_SCALAR_NODE)
        return fb_yaml_fail(y, fb_yaml_line(node), path, "is %s; %s", fb_yaml_kind(node), expected);
    if (fb_yaml_is_null(node))
        return fb_yaml_fail(y, fb_yaml_line(node), path, "no value; %s", expected);
    if (memchr(node->data.scalar.value, 0, node->data.scalar.length))
        return fb_yaml_fail(y, fb_yaml_line(node), path, "contains a NUL character; %s", expected);
    *out = (const char *)node->data.scalar.value;
    return 0;
}

int fb_yaml_mapping(fb_yaml_t *y, const yaml_node_t *node, const char *path, const char *expected)
{
    if (node->type == YAML_MAPPING_NODE)
        return 0;
    return fb_yaml_fail(y, fb_yaml_line(node), path, "is %s; %s",
                        fb_yaml_is_null(node) ? "empty" : fb_yaml_kind(node), expected);
}

/* fb_parse_uint over the whole uint64_t range, in the shape s_ranged takes. */
static int s_parse_uint(const char *text, uint64_t *out)
{
    return fb_parse_uint(text, UINT64_MAX, out);
}

/* A scalar that parse reads (what: "an integer", "a duration": what it is not when parse
 * refuses it) and that lies in [min, max]; the integer and duration readers differ only there. */
static int s_ranged(fb_yaml_t *y, const yaml_node_t *node, const char *path, uint64_t min,
                    uint64_t max, const char *expected, int (*parse)(const char *, uint64_t *),
                    const char *what, uint64_t *out)
{
    const char *text;
    char shown[256];
    uint64_t n;
    if (fb_yaml_scalar(y, node, path, expected, &text))
        return -EINVAL;
    if (parse(text, &n))
        return fb_yaml_fail(y, fb_yaml_line(node), path, "'%s' is not %s; %s",
                            fb_show_value(text, shown, sizeof shown), what, expected);
    if (n < min || n > max)
        return fb_yaml_fail(y, fb_yaml_line(node), path, "'%s' is out of range; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    *out = n;
    return 0;
}

int fb_yaml_uint(fb_yaml_t *y, const yaml_node_t *node, const char *path, uint64_t min,
                 uint64_t max, const char *expected, uint64_t *out)
{
    return s_ranged(y, node, path, min, max, expected, s_parse_uint, "an integer", out);
}

int fb_yaml_duration_ms(fb_yaml_t *y, const yaml_node_t *node, const char *path, uint64_t min_ms,
                        uint64_t max_ms, const char *expected, uint64_t *out_ms)
{
    return s_ranged(y, node, path, min_ms, max_ms, expected, fb_parse_duration_ms, "a duration",
                    out_ms);
}

/* ---- loading ----------------------------------------------------------------------------------
 */

static void s_oom(void)
{
    fprintf(stderr, "fleetburn: out of memory parsing YAML\n");
    abort();
}

/* The 1-based line of byte offset off (reader errors carry no line). */
static int s_offset_line(const fb_yaml_t *y, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && i < y->len; i++)
        if (y->text[i] == '\n')
            line++;
    return line;
}

/* libyaml's problem and context texts are its own fixed strings, never the input's. */
static int s_syntax_error(fb_yaml_t *y, const yaml_parser_t *parser)
{
    const char *problem = parser->problem ? parser->problem : "unknown error";
    if (parser->error == YAML_MEMORY_ERROR)
        s_oom();
    if (parser->error == YAML_READER_ERROR) {
        if (parser->problem_value != -1)
            return fb_yaml_fail(y, s_offset_line(y, parser->problem_offset), "YAML syntax error",
                                "%s (byte #x%02x at offset %zu); expected UTF-8 text", problem,
                                parser->problem_value, parser->problem_offset);
        return fb_yaml_fail(y, s_offset_line(y, parser->problem_offset), "YAML syntax error",
                            "%s at offset %zu; expected UTF-8 text", problem,
                            parser->problem_offset);
    }
    int line = (int)parser->problem_mark.line + 1, col = (int)parser->problem_mark.column + 1;
    if (parser->context)
        return fb_yaml_fail(y, line, "YAML syntax error",
                            "%s at column %d (%s at line %d, column %d); expected valid YAML "
                            "(check indentation, quoting and ': ' after keys)",
                            problem, col, parser->context, (int)parser->context_mark.line + 1,
                            (int)parser->context_mark.column + 1);
    return fb_yaml_fail(y, line, "YAML syntax error",
                        "%s at column %d; expected valid YAML (check indentation, quoting and ': ' "
                        "after keys)",
                        problem, col);
}

typedef struct {
    char *anchor;      /* of the open collection, or NULL */
    size_t cost_start; /* the cost when it opened */
} s_frame_t;

/* What an anchor stands for, in expansion units, kept as value + 1 (0 = unknown). */
static void s_anchor_set(fb_strmap_t *anchors, const char *name, size_t cost)
{
    fb_strmap_put(anchors, name, (void *)(uintptr_t)(cost + 1));
}

static size_t s_anchor_cost(const fb_strmap_t *anchors, const char *name)
{
    uintptr_t v = (uintptr_t)fb_strmap_get(anchors, name);
    return v ? (size_t)(v - 1) : 1; /* an undefined alias: the load reports it */
}

/* The limit pass. Costs: a scalar, its length + 1; a collection, 1; an alias, what its anchor
 * cost where it was defined. */
static int s_check_limits(fb_yaml_t *y, const char *what)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        s_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)y->text, y->len);
    fb_strmap_t *anchors = fb_strmap_new();
    s_frame_t stack[FB_YAML_MAX_DEPTH];
    size_t depth = 0, cost = 0, documents = 0;
    int rc = 0;
    bool done = false;
    while (!done && rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = s_syntax_error(y, &parser);
            break;
        }
        int line = (int)ev.start_mark.line + 1;
        const char *anchor = NULL;
        bool node = ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
                    ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT;
        if (node && documents >= 2 && !y->extra_document_line)
            y->extra_document_line = line; /* the second document's first node */
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            documents++;
            break;
        case YAML_SCALAR_EVENT:
            cost += ev.data.scalar.length + 1;
            if (ev.data.scalar.anchor)
                s_anchor_set(anchors, (const char *)ev.data.scalar.anchor,
                             ev.data.scalar.length + 1);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            anchor =
                (const char *)(ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
                                                                    : ev.data.mapping_start.anchor);
            if (depth == FB_YAML_MAX_DEPTH) {
                rc = fb_yaml_fail(y, line, "YAML nesting",
                                  "mappings and lists nested more than %d levels deep; expected "
                                  "a %s of a few levels",
                                  FB_YAML_MAX_DEPTH, what);
                break;
            }
            stack[depth].anchor = anchor ? xstrdup(anchor) : NULL;
            stack[depth].cost_start = cost;
            depth++;
            cost += 1;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) {
                depth--;
                if (stack[depth].anchor) {
                    s_anchor_set(anchors, stack[depth].anchor, cost - stack[depth].cost_start);
                    free(stack[depth].anchor);
                }
            }
            break;
        case YAML_ALIAS_EVENT: {
            size_t c = s_anchor_cost(anchors, (const char *)ev.data.alias.anchor);
            cost = c > SIZE_MAX - cost ? SIZE_MAX : cost + c;
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
        if (rc == 0 && cost > FB_YAML_MAX_EXPANDED)
            rc = fb_yaml_fail(y, line, "YAML aliases",
                              "the document expands to more than %u bytes through its aliases "
                              "(*name); expected a %s that repeats less",
                              FB_YAML_MAX_EXPANDED, what);
    }
    while (depth > 0)
        free(stack[--depth].anchor);
    fb_strmap_destroy(&anchors);
    yaml_parser_delete(&parser);
    return rc;
}

int fb_yaml_load(fb_yaml_t *y, yaml_document_t *doc, size_t max_bytes, const char *what)
{
    if (!y->text)
        y->len = 0;
    if (!y->text)
        y->text = "";
    y->extra_document_line = 0;
    if (y->len > max_bytes) {
        fb_yaml_fail(y, 1, "(top level)",
                     "larger than %zu bytes; expected a %s of at most %zu "
                     "bytes",
                     max_bytes, what, max_bytes);
        return -EFBIG;
    }
    if (s_check_limits(y, what))
        return -EINVAL;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        s_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)y->text, y->len);
    int rc = 0;
    if (!yaml_parser_load(&parser, doc))
        rc = s_syntax_error(y, &parser);
    yaml_parser_delete(&parser);
    if (rc == 0)
        y->doc = doc;
    return rc;
}

int fb_yaml_parse_text(const char *text, size_t len, const char *source, size_t max_bytes,
                       const char *what, fb_yaml_root_fn fn, void *arg, char **error_out)
{
    if (error_out)
        *error_out = NULL;
    fb_yaml_t y = {source, text ? text : "", text ? len : 0, NULL, NULL, 0};
    yaml_document_t doc;
    int rc = fb_yaml_load(&y, &doc, max_bytes, what);
    if (rc == 0) {
        rc = fn(&y, yaml_document_get_root_node(&doc), arg);
        yaml_document_delete(&doc);
    }
    if (rc && error_out)
        *error_out = y.error;
    else
        free(y.error);
    return rc;
}

int fb_yaml_key(fb_yaml_t *y, const yaml_node_t *key, const char *path, const char *expected,
                const char **out)
{
    if (!key || key->type != YAML_SCALAR_NODE || fb_yaml_is_null(key) ||
        memchr(key->data.scalar.value, 0, key->data.scalar.length))
        return fb_yaml_fail(y, fb_yaml_line(key), path[0] ? path : "(top level)",
                            "a key is %s; expected one of %s",
                            key && key->type == YAML_SCALAR_NODE ? "not a name"
                                                                 : fb_yaml_kind(key),
                            expected);
    *out = (const char *)key->data.scalar.value;
    return 0;
}

char *fb_yaml_path(const char *parent, const char *key)
{
    char shown[256];
    fb_show_value(key, shown, sizeof shown);
    return parent[0] ? xasprintf("%s.%s", parent, shown) : xstrdup(shown);
}
