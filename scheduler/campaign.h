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
 * Parsing validates everything it can without I/O (this module never opens a file): keys,
 * workload names, every parameter against the workload schema (scheduler/workload.h),
 * durations, hostlists. The result holds effective values: absent parameters with a default
 * are filled in (fault-injection ones never are), in schema order; list values are stored
 * comma-joined ("walking_ones,random"), scalars as written. A former parameter that is now a
 * site setting of the agent (allreduce's mpirun, mpirun_args, rsh_agent) is refused with a
 * message that says so.
 *
 * Errors are one line, `FILE:LINE: KEYPATH: what is wrong; expected WHAT`, e.g.
 *   rack.yaml:9: stages[0].params.sise: unknown parameter for workload memtest; expected one of ...
 * with 1-based lines; YAML syntax errors carry libyaml's problem text, line and column. The first
 * error found is reported. */
#ifndef FB_CAMPAIGN_H
#define FB_CAMPAIGN_H

#include "actions.h"
#include "pairing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fb_topology;
struct fb_routes;
struct fb_expect;
struct fb_regress_config;

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
    char *nodes_expr; /* "all", hostlist notation or a Slurm selection; NULL = the campaign's */
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
    char *topology_path;          /* pairing topology: the file's name as written; NULL otherwise */
    int topology_line;            /* where topology_path was written */
    struct fb_topology *topology; /* owned; set by fb_campaign_attach_files, NULL before */
    char *routes_path;            /* routes: the subnet manager's routes (with topology); or NULL */
    int routes_line;              /* where routes_path was written */
    struct fb_routes *routes;     /* owned; set by fb_campaign_attach_files, NULL before */
    /* on_fail: bisect (docs/campaign-file.md) */
    unsigned bisect_rounds;    /* follow-up rounds at most: bisect_budget.rounds, or its
                                * older spelling bisect_rounds (default 24) */
    uint64_t bisect_budget_ms; /* bisect_budget.time: time the follow-up rounds may take (0:
                                * none; scheduler/bisect_budget.h) */
    unsigned bisect_repeat;    /* scope group: runs of every part of a split (default 2) */
    double bisect_slow; /* scope pairs: a slowdown that matters, as the fraction of its class's
                         * median bandwidth at or below which a part counts as slow (0:
                         * flowjudge's default, 0.93) */
    char **rails;       /* scope pairs: rails every node has (the workload's device), or NULL */
    size_t n_rails;
    char *bisect_prior; /* scope pairs: an earlier node-scope stage whose verdicts seed the
                         * suspicion, or NULL */
} fb_stage_t;

/* Tagged so that other headers can forward-declare it as struct fb_campaign. */
typedef struct fb_campaign {
    char *name;
    char *nodes_expr; /* "all", hostlist notation, or a Slurm selection "slurm:..." */
    fb_stage_t *stages;
    size_t n_stages;          /* >= 1 */
    char *source;             /* the name used in messages: the source given to fb_campaign_parse */
    struct fb_expect *expect; /* the hardware its nodes must have (scheduler/expect.h), or NULL */
    /* what the coordinator does with the verdicts when the campaign ends (scheduler/actions.h) */
    fb_actions_t actions;
    /* Slurm selections resolved by the coordinator (scheduler/slurm.h); none after parsing */
    struct fb_node_selection *selections;
    size_t n_selections;
    struct fb_regress_config *regress; /* regress: tolerances (regress_config.h), or NULL */
} fb_campaign_t;

/* Largest campaign text fb_campaign_parse takes (a submission over the wire is limited to
 * FB_WIRE_MAX_YAML before that). */
#define FB_CAMPAIGN_MAX_BYTES (16u << 20)

/* Parses text[0..len) (YAML; need not be NUL-terminated). source names it in messages (NULL:
 * "<campaign>"). The YAML is loaded under common/yamldoc.h's limits (size, nesting depth, alias
 * expansion), so any input is refused or accepted in time linear in its size. Returns 0 with a
 * new campaign in *out, or -EINVAL (-EFBIG past FB_CAMPAIGN_MAX_BYTES) with *out = NULL and, when
 * error_out is not NULL, a one-line heap message in *error_out (caller frees; NULL on success).
 * The files the campaign names are not loaded: see fb_campaign_attach_files. */
int fb_campaign_parse(const char *text, size_t len, const char *source, fb_campaign_t **out,
                      char **error_out);

/* A file a campaign names (the topology of a stage with pairing: topology, its routes), handed to
 * the scheduler by whoever read it: the CLI reads it from disk relative to the campaign file
 * (coordinator/campaign_file.h), the coordinator takes it from the submission (Submit.files).
 * The scheduler never opens a file. */
typedef struct {
    const char *name;    /* exactly as the campaign writes it */
    const char *content; /* content[0..len) */
    size_t len;
} fb_campaign_file_t;

/* The names of the files c names, each once, in the order first written: up to cap into names
 * (borrowed from c; names may be NULL with cap 0). Returns how many there are. */
size_t fb_campaign_file_names(const fb_campaign_t *c, const char **names, size_t cap);

/* Resolves the files c names from files[0..n) only, and parses them: every stage with pairing
 * topology gets its topology from the file of that name, and its routes (scheduler/routes.h,
 * checked against the topology: stage_routes.c) from theirs. Returns 0, or -EINVAL with a one-line
 * heap message in *error_out (when not NULL) in the parser's format, for a name no file was
 * attached for, a file attached twice or not named by the campaign, a topology with a NUL byte
 * or one that does not parse:
 *   rack.yaml:7: stages[1].topology: cannot load 'fabric.topo': line 3: ...; expected ...
 * Messages about a file's content quote at most the offending token of it. */
int fb_campaign_attach_files(fb_campaign_t *c, const fb_campaign_file_t *files, size_t n,
                             char **error_out);

/* NULL-safe; nulls the pointer. */
void fb_campaign_destroy(fb_campaign_t **self_p);

/* The effective value of parameter key of stage s, or NULL (borrowed). */
const char *fb_stage_param(const fb_stage_t *s, const char *key);

/* Node selection of a stage (its own nodes, else the campaign's): sets *all = true with
 * *names = NULL, *n = 0 for "all"; else *all = false and expands the hostlist (for a Slurm
 * selection, the hostlist it was resolved to: fb_campaign_resolve_selection) into *names (free
 * with fb_hostlist_free). Returns 0 or -EINVAL with a message in err (a Slurm selection that was
 * not resolved). */
int fb_stage_nodes(const fb_campaign_t *c, const fb_stage_t *s, bool *all, char ***names, size_t *n,
                   char *err, size_t errlen);

/* "continue", "stop", "bisect". */
const char *fb_on_fail_name(fb_on_fail_t on_fail);

#endif
