/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign file: a named list of stages, each a workload with parameters, a timeout, a
 * failure policy and a node selection. docs/campaign-file.md describes the format.
 *
 *   name: rack12-burnin
 *   nodes: all                  # or hostlist notation: node[01-16,20],gpu-a[1-4]
 *   stages:
 *     - name: dram
 *       workload: memtest
 *       timeout: 30m            # default 1h
 *       on_fail: continue       # continue (default) | stop
 *       nodes: local-[0-1]      # optional; default: the campaign's nodes
 *       params: {size: 80%, passes: 2}
 *
 * Parsing validates everything it can without I/O: keys, workload names, every parameter against
 * the workload schema (scheduler/workload.h), durations, hostlists. The result holds effective
 * values: absent parameters with a default are filled in (fault-injection ones never are), in
 * schema order; list values are stored comma-joined ("walking_ones,random"), scalars as written.
 *
 * Errors are one line, `FILE:LINE: KEYPATH: what is wrong; expected WHAT`, e.g.
 *   rack.yaml:9: stages[0].params.sise: unknown parameter for workload memtest; expected one of ...
 * with 1-based lines; YAML syntax errors carry libyaml's problem text, line and column. The first
 * error found is reported. */
#ifndef FB_CAMPAIGN_H
#define FB_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { FB_ON_FAIL_CONTINUE, FB_ON_FAIL_STOP } fb_on_fail_t;

typedef struct fb_kv {
    char *key;
    char *value;
} fb_kv_t;

typedef struct fb_stage {
    char *name;          /* unique within the campaign; [A-Za-z0-9._-], at most 64 characters */
    char *workload;      /* a name fb_workload_find() knows */
    uint64_t timeout_ms; /* > 0 */
    fb_on_fail_t on_fail;
    char *nodes_expr; /* "all" or hostlist notation; NULL = the campaign's */
    fb_kv_t *params;  /* effective parameters, in the workload's schema order */
    size_t n_params;
    int line; /* 1-based line where the stage starts in the source */
} fb_stage_t;

/* Tagged so that other headers can forward-declare it as struct fb_campaign. */
typedef struct fb_campaign {
    char *name;
    char *nodes_expr; /* "all" or hostlist notation */
    fb_stage_t *stages;
    size_t n_stages; /* >= 1 */
    char *source;    /* the name used in messages: the path given to fb_campaign_load */
} fb_campaign_t;

/* Largest campaign file fb_campaign_load reads. */
#define FB_CAMPAIGN_MAX_BYTES (16u << 20)

/* Parses text[0..len) (YAML; need not be NUL-terminated). source names it in messages (NULL:
 * "<campaign>"). Returns 0 with a new campaign in *out, or -EINVAL with *out = NULL and, when
 * error_out is not NULL, a one-line heap message in *error_out (caller frees; NULL on success). */
int fb_campaign_parse(const char *text, size_t len, const char *source, fb_campaign_t **out,
                      char **error_out);

/* Reads and parses the file at path. Besides fb_campaign_parse's results, returns a negative
 * errno from opening or reading the file (message "PATH: cannot read: ..."), or -EFBIG past
 * FB_CAMPAIGN_MAX_BYTES. */
int fb_campaign_load(const char *path, fb_campaign_t **out, char **error_out);

/* NULL-safe; nulls the pointer. */
void fb_campaign_destroy(fb_campaign_t **self_p);

/* The effective value of parameter key of stage s, or NULL (borrowed). */
const char *fb_stage_param(const fb_stage_t *s, const char *key);

/* Node selection of a stage (its own nodes, else the campaign's): sets *all = true with
 * *names = NULL, *n = 0 for "all"; else *all = false and expands the hostlist into *names
 * (free with hostlist_free). Returns 0 or -EINVAL with a message in err. */
int fb_stage_nodes(const fb_campaign_t *c, const fb_stage_t *s, bool *all, char ***names, size_t *n,
                   char *err, size_t errlen);

/* "continue", "stop". */
const char *fb_on_fail_name(fb_on_fail_t on_fail);

#endif
