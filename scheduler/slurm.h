/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm, as pure logic (docs/operations.md "Slurm"): the `nodes: slurm:...` selections of a
 * campaign file, what `sinfo` says about nodes (untrusted text, parsed here), the drain reasons
 * fleetburn writes, and the plan of what to drain and resume when a campaign ends. The
 * coordinator runs sinfo and scontrol (coordinator/slurm_client.c) and hands their output here;
 * nothing in this module runs a program or opens a file.
 *
 * Ownership of a drain: a drain is fleetburn's when its reason starts with "fleetburn:"
 * (FB_SLURM_REASON_PREFIX), as NHC owns the drains whose reason starts with "NHC:". fleetburn
 * resumes only its own drains and never changes a node that has any other reason. */
#ifndef FB_SLURM_H
#define FB_SLURM_H

#include "actions.h"

#include <stdbool.h>
#include <stddef.h>

struct fb_campaign;

/* ---- nodes: slurm:... ---------------------------------------------------------------------- */

#define FB_SLURM_SELECTION_PREFIX "slurm:"
/* Longest partition name a selection may write. */
#define FB_SLURM_PARTITION_MAX 64

/* Whether a node expression is a Slurm selection (starts with "slurm:"). */
bool fb_slurm_is_selection(const char *expr);
/* Parses "slurm:idle" (idle nodes of every partition), "slurm:PARTITION" (every node of the
 * partition, whatever its state) or "slurm:PARTITION:idle" (its idle nodes). A partition name
 * is [A-Za-z0-9._-], at most FB_SLURM_PARTITION_MAX characters; "idle" alone is the idle
 * selection, never a partition. 0 with *partition_out (heap; NULL for every partition) and
 * *idle_out, or -EINVAL with a message in err. Either output may be NULL to only check. */
int fb_slurm_selection_parse(const char *expr, char **partition_out, bool *idle_out, char *err,
                             size_t errlen);

/* A selection resolved by the coordinator when the campaign was submitted: expr as written
 * ("slurm:gpu:idle"), nodes the hostlist Slurm listed for it then. */
typedef struct fb_node_selection {
    char *expr;
    char *nodes;
} fb_node_selection_t;

/* The distinct Slurm selections campaign c writes (its own nodes, then its stages'), borrowed
 * from c, up to cap into exprs (may be NULL with cap 0). Returns how many there are. */
size_t fb_campaign_slurm_selections(const struct fb_campaign *c, const char **exprs, size_t cap);
/* Records that expr resolved to the hostlist nodes (replacing an earlier resolution of expr).
 * fb_stage_nodes then selects those nodes wherever expr is written. 0, or -EINVAL when nodes is
 * not hostlist notation or is empty. */
int fb_campaign_resolve_selection(struct fb_campaign *c, const char *expr, const char *nodes);
/* The hostlist expr resolved to, or NULL when it was not resolved (borrowed). */
const char *fb_campaign_selection(const struct fb_campaign *c, const char *expr);
/* Frees c's resolutions (fb_campaign_destroy calls it). */
void fb_campaign_selections_free(struct fb_campaign *c);

/* ---- what sinfo says --------------------------------------------------------------------- */

/* The format the coordinator asks sinfo for, one line per node and partition:
 *   sinfo --noheader --Node --format=%N|%T|%P|%E
 * name | state, long form with Slurm's suffixes ("idle", "drained*", "down~") | partition
 * ("gpu*" for the default one) | reason ("none" when there is none). The reason is the last
 * field: whatever it holds, '|' included, is the reason. */
#define FB_SLURM_SINFO_FORMAT "%N|%T|%P|%E"

typedef struct {
    char *name;
    char *state;  /* sinfo's %T, lower case, with its suffix */
    char *reason; /* NULL when none */
    char **partitions;
    size_t n_partitions;
} fb_slurm_node_t;

typedef struct {
    fb_slurm_node_t *v;
    size_t n;
    size_t n_ignored;  /* lines that did not parse (skipped: fleetburn never acts on them) */
    char ignored[160]; /* why the first of them did not: "line 3: node name 'a b' ..." */
} fb_slurm_nodes_t;

/* Parses sinfo output in FB_SLURM_SINFO_FORMAT (text[0..len), untrusted): lines merge by node
 * name (a node in two partitions is listed twice). A line without the four fields, with a node
 * name that is not a hostname ([A-Za-z0-9._-], at most 128 characters), or a state that is not
 * sinfo's, is skipped and counted in n_ignored; reasons keep printable characters only. Always
 * fills *out (free with fb_slurm_nodes_fini). */
void fb_slurm_nodes_parse(const char *text, size_t len, fb_slurm_nodes_t *out);
void fb_slurm_nodes_fini(fb_slurm_nodes_t *nodes);
/* The node called name, or NULL (borrowed). */
const fb_slurm_node_t *fb_slurm_nodes_find(const fb_slurm_nodes_t *nodes, const char *name);
/* The names of the nodes a selection takes from nodes (already limited to the partition by the
 * query, or not): every node, or with idle only those in state "idle" exactly (not drained, not
 * down, not powered off, responding). Heap array of heap strings in sinfo's order (free with
 * fb_hostlist_free); *n_out may be 0. */
char **fb_slurm_nodes_select(const fb_slurm_nodes_t *nodes, const char *partition, bool idle,
                             size_t *n_out);

/* A state with a drain (drained, draining, or any state with +drain), whatever its suffix. */
bool fb_slurm_state_drained(const char *state);
/* A state fleetburn may resume out of: drained or draining, not down or failed as well. */
bool fb_slurm_state_resumable(const char *state);

/* ---- drain reasons ------------------------------------------------------------------------- */

#define FB_SLURM_REASON_PREFIX "fleetburn:"
/* Longest reason fleetburn writes, in bytes. */
#define FB_SLURM_REASON_MAX 200

/* Whether a drain reason is fleetburn's (starts with FB_SLURM_REASON_PREFIX). */
bool fb_slurm_reason_ours(const char *reason);
/* "fleetburn: <campaign id>: <part> <what>" with every character outside printable ASCII, and
 * the quotes, backslash, '|' and '@' (sinfo and scontrol print "[user@time]" after a reason),
 * replaced by '_', runs of blanks folded, cut to FB_SLURM_REASON_MAX bytes. Heap. */
char *fb_slurm_reason(const char *campaign_id, const char *part, const char *what);
/* A reason as fb_slurm_reason writes them: fleetburn's prefix, at most FB_SLURM_REASON_MAX
 * bytes, printable ASCII without quotes, backslash, '|' or '@'. What may reach scontrol. */
bool fb_slurm_reason_ok(const char *reason);
/* A node name that may reach scontrol's argument vector: a hostname, [A-Za-z0-9._-], starting
 * with a letter or digit, at most 128 characters. */
bool fb_slurm_name_ok(const char *name);

/* ---- what to drain and resume ------------------------------------------------------------ */

/* A bad part and one of the nodes it names (a part naming two nodes, a cable, comes twice). */
typedef struct {
    const char *node;
    const char *part; /* as the report names it: "n17", "n17/mlx5_2", "n3<->n7" */
    const char *what; /* the evidence in one line: "memtest: 3 miscompares" */
} fb_slurm_bad_t;

typedef struct {
    const char *campaign_id;
    const fb_slurm_actions_t *conf;
    const char *const *nodes; /* every node of the campaign (those that had a task) */
    size_t n_nodes;
    const fb_slurm_bad_t *bad;
    size_t n_bad;
    const char *const *passed; /* nodes that passed every stage */
    size_t n_passed;
    const fb_slurm_nodes_t *slurm; /* what sinfo said about the campaign's nodes */
} fb_slurm_input_t;

typedef enum {
    FB_SLURM_OP_DRAIN,  /* scontrol update NodeName=node State=DRAIN Reason=reason */
    FB_SLURM_OP_RESUME, /* scontrol update NodeName=node State=RESUME */
    FB_SLURM_OP_NOTE,   /* nothing to run: why a node is left as it is */
} fb_slurm_op_kind_t;

typedef struct {
    fb_slurm_op_kind_t kind;
    char *node;
    char *reason;  /* drain: the reason to write; resume: the reason it had */
    char *message; /* note: one line for the timeline ("n2 is drained by someone else ...") */
} fb_slurm_op_t;

typedef struct {
    fb_slurm_op_t *ops; /* drains, then resumes, then notes, each in the campaign's order */
    size_t n_ops;
    size_t n_drain, n_resume;
    /* The breaker: drains refused (n_drain is 0, the drains fleetburn wanted are listed in
     * breaker_message), because they would have left more than max_fraction of the campaign's
     * nodes drained by fleetburn. */
    bool breaker;
    char *breaker_message;
} fb_slurm_plan_t;

/* Decides what to drain and resume (docs/operations.md "Slurm"):
 *   - drain (conf->drain): every node of a bad part that Slurm knows and that has no reason
 *     set (not drained, down or failed by anyone); reason fb_slurm_reason(first part), with
 *     "(+N more)" when several parts name it. A node drained by fleetburn already is left as it
 *     is, so is one with anyone else's reason (a note says so);
 *   - resume (conf->resume): every passed node in a resumable state whose reason is
 *     fleetburn's; a passed node drained with another reason gets a note and stays;
 *   - the breaker: when the drains plus the campaign's nodes that stay drained by fleetburn are
 *     more than conf->max_fraction of the campaign's nodes, no node is drained.
 * Names that may not reach scontrol (fb_slurm_name_ok) get a note and no operation. Fills *out
 * (free with fb_slurm_plan_fini). */
void fb_slurm_plan(const fb_slurm_input_t *in, fb_slurm_plan_t *out);
void fb_slurm_plan_fini(fb_slurm_plan_t *plan);

#endif
