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
 *     - name: net
 *       workload: netbw
 *       scope: pairs            # node (default) | group | pairs
 *       pairing: round-robin    # pairs: random | round-robin (default) | topology
 *       rounds: 3               # pairs: successive matchings, each after the last has ended
 *
 * Multi-node keys (docs/campaign-file.md): scope; group_size (scope group); pairing and rounds
 * (scope pairs); seed (pairing random); topology (pairing topology, required there). A key that
 * does not apply to the stage's scope or pairing is an error, wherever it is written.
 * on_fail: bisect applies to scope group and pairs only, with its keys bisect_rounds; rails and
 * bisect_prior (pairs; rails only for a workload with a device parameter); bisect_repeat
 * (group).
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

#include "pairing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fb_topology;

/* What follows a stage that failed: go on, stop the campaign, or (scope group or pairs) diagnose
 * it with follow-up rounds until the bad part is named (scheduler/bisect.h), then go on. */
typedef enum { FB_ON_FAIL_CONTINUE, FB_ON_FAIL_STOP, FB_ON_FAIL_BISECT } fb_on_fail_t;

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
    /* How nodes are put together (scheduler/pairing.h, docs/scheduling.md). */
    fb_scope_t scope;     /* default FB_SCOPE_NODE */
    size_t group_size;    /* scope group: 0 = every selected node in one group, else >= 2 */
    fb_pairing_t pairing; /* scope pairs: default FB_PAIRING_ROUND_ROBIN */
    unsigned rounds;      /* scope pairs: matchings run one after the other, >= 1; 1 otherwise */
    bool has_seed;        /* pairing random: seed given; absent, the runner picks one */
    uint64_t seed;
    char *topology_path;          /* pairing topology: the file as written; NULL otherwise */
    int topology_line;            /* where topology_path was written */
    struct fb_topology *topology; /* owned; loaded by fb_campaign_load_files, NULL before */
    /* on_fail: bisect (docs/campaign-file.md) */
    unsigned bisect_rounds; /* follow-up rounds at most (default 12) */
    unsigned bisect_repeat; /* scope group: runs of every part of a split (default 2) */
    char **rails;           /* scope pairs: rails every node has (the workload's device), or NULL */
    size_t n_rails;
    char *bisect_prior; /* scope pairs: an earlier node-scope stage whose verdicts seed the
                         * suspicion, or NULL */
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

/* Reads and parses the file at path, then loads the files it refers to (fb_campaign_load_files,
 * relative to the directory of path). Besides fb_campaign_parse's results, returns a negative
 * errno from opening or reading the file (message "PATH: cannot read: ..."), or -EFBIG past
 * FB_CAMPAIGN_MAX_BYTES. */
int fb_campaign_load(const char *path, fb_campaign_t **out, char **error_out);

/* Loads the files a parsed campaign refers to: the topology of every stage with pairing
 * topology that has none loaded yet. A relative path is taken relative to base_dir (the
 * campaign file's directory; NULL or "" = the current directory). The only I/O of this module
 * besides fb_campaign_load. Returns 0, or -EINVAL (or the errno of reading) with a one-line
 * heap message in *error_out (when not NULL) in the parser's format:
 *   rack.yaml:7: stages[1].topology: cannot load /racks/fabric.topo: line 3: ...; expected ... */
int fb_campaign_load_files(fb_campaign_t *c, const char *base_dir, char **error_out);

/* NULL-safe; nulls the pointer. */
void fb_campaign_destroy(fb_campaign_t **self_p);

/* The effective value of parameter key of stage s, or NULL (borrowed). */
const char *fb_stage_param(const fb_stage_t *s, const char *key);

/* Node selection of a stage (its own nodes, else the campaign's): sets *all = true with
 * *names = NULL, *n = 0 for "all"; else *all = false and expands the hostlist into *names
 * (free with hostlist_free). Returns 0 or -EINVAL with a message in err. */
int fb_stage_nodes(const fb_campaign_t *c, const fb_stage_t *s, bool *all, char ***names, size_t *n,
                   char *err, size_t errlen);

/* "continue", "stop", "bisect". */
const char *fb_on_fail_name(fb_on_fail_t on_fail);

#endif
