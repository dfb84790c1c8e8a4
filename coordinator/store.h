/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline: everything a campaign did, in one SQLite database (docs/timeline-store.md).
 *
 * One store_t is one connection; it is not thread-safe and belongs to the thread that opened it
 * (the coordinator's loop thread). Other processes may open the same file at the same time
 * (`fleetburn report` reads while a campaign writes): the database runs in WAL mode with a busy
 * timeout, writes that belong together are one transaction, and each read function sees one
 * consistent snapshot.
 *
 * Errors are 0 or negative errno. A failure inside SQLite returns -EIO (-EBUSY when the
 * database stayed locked past the busy timeout, -ENOSPC when the disk is full, -EROFS when it
 * is read-only) and leaves the SQLite message in store_errmsg(). Strings passed in are copied;
 * NULL is allowed wherever a column is optional and is stored as NULL. Timestamps are epoch
 * milliseconds; 0 in an optional timestamp means "not set". */
#ifndef FB_STORE_H
#define FB_STORE_H

#include "result.h"
#include "scheduler/expect.h"
#include "scheduler/fingerprint.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The schema version this build writes (PRAGMA user_version and meta.schema_version). */
#define STORE_SCHEMA_VERSION 7
/* PRAGMA application_id of a fleetburn timeline ("FLBN"). */
#define STORE_APPLICATION_ID 0x464c424e
/* How long a statement waits for a lock held by another process. */
#define STORE_BUSY_TIMEOUT_MS 5000

typedef struct store store_t;

/* Opens the database at path, creating it when absent, and brings its schema to
 * STORE_SCHEMA_VERSION (older versions are migrated in one transaction). Refuses (-ENOTSUP) a
 * database written by a newer schema, with a message naming both versions, and (-EINVAL) a
 * SQLite file that is not a fleetburn timeline. On failure *out is NULL and, when error_out is
 * not NULL, *error_out is a heap string the caller frees; on success *error_out is NULL. */
int store_open(const char *path, store_t **out, char **error_out);
/* Like store_open, but never creates: -ENOENT when path does not exist (for readers such as
 * `fleetburn report` and `fleetburn nodes`). */
int store_open_existing(const char *path, store_t **out, char **error_out);
/* Closes the connection. NULL-safe; nulls *self_p. */
void store_destroy(store_t **self_p);
/* Deferred commits, for a writer that stores thousands of small records per second (the
 * coordinator with thousands of agents): while on, every write joins one transaction, opened by
 * the first write after the last store_flush, and each call's own transaction becomes a savepoint
 * in it (a failing call still changes nothing). One commit per burst instead of one per record.
 * Until store_flush returns 0 nothing written since the last flush is durable or visible to other
 * connections (reads through this one see it): acknowledge what was stored only after the flush.
 * Turning it off flushes. Returns 0 or the flush's error. */
int store_defer_commits(store_t *self, bool on);
/* Commits the open transaction of deferred commits (0 when there is none, or when deferral is
 * off). On failure everything since the last flush is rolled back and the error returned. */
int store_flush(store_t *self);
/* The message of the last failure ("" when none). Borrowed, valid until the next call. */
const char *store_errmsg(const store_t *self);
/* The path the store was opened with (borrowed). */
const char *store_path(const store_t *self);

/* ---- Agents ---------------------------------------------------------------------------- */

/* Inserts or updates an agent: state and last_seen_ms are set; summary and inventory_json are
 * replaced when not NULL (kept otherwise). A new inventory_snapshots row is written, in the same
 * transaction, only when inventory_json differs from the agent's latest snapshot, so the
 * inventory JSON should hold no volatile values (uptime, temperatures). */
int store_agent_upsert(store_t *self, const char *name, const char *state, const char *summary,
                       const char *inventory_json, uint64_t now_ms);
/* Sets an agent's state; state_since_ms moves to now_ms when the state changes. last_seen_ms is
 * NOT touched (marking an agent lost must not make it look recently seen): see store_agent_seen.
 * -ENOENT for an unknown agent. */
int store_agent_set_state(store_t *self, const char *name, const char *state, uint64_t now_ms);
/* Records that an agent was heard from at now_ms (never moves last_seen_ms backwards).
 * -ENOENT for an unknown agent. */
int store_agent_seen(store_t *self, const char *name, uint64_t now_ms);
/* A coordinator starting on a database: agents it recorded 'alive' were alive for an earlier
 * coordinator only, so they become 'unheard' (not heard since this coordinator started) until
 * they register again; state_since_ms moves to now_ms, last_seen_ms stays. Returns how many, or
 * -errno. Agent states: alive, unheard, gone (said goodbye), lost (went silent). */
int store_agents_mark_unheard(store_t *self, uint64_t now_ms);

/* ---- Campaigns, stages, tasks ------------------------------------------------------------ */

/* A new campaign in state 'running'. -EEXIST when id is taken. */
int store_campaign_create(store_t *self, const char *id, const char *name, const char *source,
                          const char *yaml, uint64_t started_ms);
/* Sets state 'finished', the verdict and finished_ms. -ENOENT for an unknown campaign,
 * -EINVAL for FB_VERDICT_NONE. */
int store_campaign_finish(store_t *self, const char *id, fb_verdict_t verdict,
                          uint64_t finished_ms);
/* Whether state is one a campaign ends in: finished, cancelled, interrupted or error. */
bool store_campaign_state_ended(const char *state);
/* Ends a campaign in state (finished | cancelled | interrupted | error) with verdict at
 * finished_ms. -ENOENT for an unknown campaign, -EINVAL for FB_VERDICT_NONE or another state. */
int store_campaign_end(store_t *self, const char *id, const char *state, fb_verdict_t verdict,
                       uint64_t finished_ms);
/* Marks campaigns still 'running' (a coordinator died) as 'interrupted', verdict error,
 * finished_ms now_ms; returns how many, or -errno. Their tasks are left as they are: a result
 * spooled on an agent may still arrive and is stored normally. */
int store_campaign_interrupt_stale(store_t *self, uint64_t now_ms);
/* Latest campaign id (by start time), or -ENOENT. *id_out heap string the caller frees. */
int store_latest_campaign(store_t *self, char **id_out);

/* A file the campaign's text names (a stage's topology), as it was submitted: a resumed
 * campaign is built again from exactly what ran. A name stored already is replaced; -ENOENT for
 * an unknown campaign. */
int store_campaign_add_file(store_t *self, const char *campaign_id, const char *name,
                            const char *content, size_t len);
typedef struct {
    char *name, *content; /* content[0..len), NUL-terminated for convenience */
    size_t len;
} store_file_t;
/* The files of campaign_id in the order they were added. *files_out heap array (free with
 * store_files_free), possibly empty. */
int store_campaign_files(store_t *self, const char *campaign_id, store_file_t **files_out,
                         size_t *n_out);
void store_files_free(store_file_t *files, size_t n);

/* What a `nodes: slurm:...` selection of the campaign (expr as written) resolved to when it was
 * submitted: a hostlist (store_selections.c). A selection stored already is replaced; -ENOENT
 * for an unknown campaign. */
int store_node_selection_add(store_t *self, const char *campaign_id, const char *expr,
                             const char *nodes);
/* Calls cb(expr, nodes, arg) for every selection of campaign_id stored with
 * store_node_selection_add; borrowed for the call; cb must not call into the store. A nonzero
 * return of cb stops and is returned. */
int store_node_selection_foreach(store_t *self, const char *campaign_id,
                                 int (*cb)(const char *expr, const char *nodes, void *arg),
                                 void *arg);

/* A stage of a campaign; *stage_id_out (may be NULL) receives its id. params_json must be a
 * JSON object text or NULL (-EINVAL otherwise); it is stored as given. -ENOENT for an unknown
 * campaign. */
int store_stage_create(store_t *self, const char *campaign_id, int idx, const char *name,
                       const char *workload, const char *params_json, const char *on_fail,
                       uint64_t timeout_ms, int64_t *stage_id_out);
/* The plan of a stage that starts: the seed of its random choices and the nodes it selected
 * (for `nodes: all`, those alive then), from which it is planned again when resumed. -ENOENT for
 * an unknown stage. */
int store_stage_plan(store_t *self, int64_t stage_id, uint64_t seed, const char *const *nodes,
                     size_t n);
/* -ENOENT for an unknown stage. */
int store_stage_start(store_t *self, int64_t stage_id, uint64_t now_ms);
int store_stage_finish(store_t *self, int64_t stage_id, fb_verdict_t verdict, uint64_t now_ms);

/* A task placed on n_nodes nodes, state 'running', started at now_ms. -EEXIST when task_id is
 * taken; -ENOENT when stage_id is not a stage of campaign_id. */
int store_task_create(store_t *self, const char *task_id, const char *campaign_id, int64_t stage_id,
                      const char *const *nodes, size_t n_nodes, uint64_t now_ms);
/* Sets the verdict of a task that has none yet (lost, timeout, error decided by the
 * coordinator); error may be NULL. Returns 0, or -EALREADY when it already had a verdict.
 * One exception, so that a group task is never reported as passed when some of its nodes never
 * answered: a pass/skipped verdict set from results of fewer nodes than the task has is
 * replaced by a failing verdict (returns 0). -ENOENT for an unknown task, -EINVAL for
 * FB_VERDICT_NONE. */
int store_task_finish(store_t *self, const char *task_id, fb_verdict_t verdict, const char *error,
                      uint64_t now_ms);

/* Whether node was given task_id: its rank in the task's nodes (0 for a node task), -EPERM when
 * the task exists but node is not one of its nodes, -ENOENT when there is no such task, or
 * -errno. A node may speak only for its own tasks (docs/security.md). */
int store_task_member(store_t *self, const char *task_id, const char *node);

/* Stores a result with its metrics and findings in one transaction and sets the task's verdict
 * (and error) from it if the task has none yet. A failing result also replaces a pass/skipped
 * task verdict (a group task fails when any node fails), and a skipped result a pass (a group
 * that did not run as a whole is skipped); a failing task verdict is never replaced. On a task
 * with several nodes the task's error names the member: "node07: <the result's error>" (unless
 * the error already starts with "node07:"). Idempotent on result_id: a result id already stored
 * returns -EEXIST and changes nothing. A result for a task the store does not know is stored all
 * the same (nothing is lost) and changes no task. -EINVAL when result_id or task_id is missing or
 * the verdict is NONE. */
int store_result_insert(store_t *self, const fb_result_t *result, uint64_t received_ms);

/* Appends an event to the timeline. kind is required; the others may be NULL. */
int store_event(store_t *self, uint64_t time_ms, const char *campaign_id, const char *task_id,
                const char *node, const char *kind, const char *message);

/* ---- Reading ----------------------------------------------------------------------------- */

typedef struct {
    fb_result_t *result; /* ids, node, verdict, error, times, metrics, findings */
    uint64_t received_ms;
} store_result_t;

typedef struct {
    char *id;
    char **nodes;
    size_t n_nodes;
    char *state;          /* running | finished */
    fb_verdict_t verdict; /* FB_VERDICT_NONE while undecided */
    char *error;          /* NULL when none */
    uint64_t started_ms, finished_ms;
    store_result_t *results; /* in the order received */
    size_t n_results;
} store_task_t;

typedef struct {
    int64_t id;
    int idx;
    char *name, *workload, *on_fail;
    char *params_json; /* as stored; NULL when none */
    uint64_t timeout_ms, started_ms, finished_ms;
    fb_verdict_t verdict;
    bool planned;  /* its plan was stored (store_stage_plan) */
    uint64_t seed; /* the plan: the seed of its random choices ... */
    char **nodes;  /* ... and the nodes it selected */
    size_t n_nodes;
    store_task_t *tasks; /* in creation order */
    size_t n_tasks;
} store_stage_t;

typedef struct store_campaign {
    char *id, *name, *source, *yaml;
    char *state; /* running | finished | cancelled | interrupted */
    fb_verdict_t verdict;
    uint64_t started_ms, finished_ms;
    store_stage_t *stages; /* by idx, then creation order */
    size_t n_stages;
} store_campaign_t;

/* Loads a whole campaign (stages, tasks, results with metrics and findings) from one snapshot.
 * *out is owned by the caller: free it with store_campaign_destroy. -ENOENT unknown campaign. */
int store_campaign_load(store_t *self, const char *id, store_campaign_t **out);
/* NULL-safe; nulls *self_p. */
void store_campaign_destroy(store_campaign_t **self_p);

/* Calls cb for every campaign, newest first, with stages not loaded (n_stages 0) and yaml NULL.
 * The row is borrowed for the call. A nonzero return of cb stops and is returned. cb must not
 * call into the store. */
int store_campaign_foreach(store_t *self, int (*cb)(const store_campaign_t *campaign, void *arg),
                           void *arg);

typedef struct {
    const char *name, *state, *summary, *inventory_json; /* summary/inventory may be NULL */
    uint64_t first_seen_ms, last_seen_ms, state_since_ms;
} store_agent_t;

/* Calls cb for every agent by name; borrowed for the call; cb must not call into the store.
 * A nonzero return of cb stops and is returned. */
int store_agent_foreach(store_t *self, int (*cb)(const store_agent_t *agent, void *arg), void *arg);

typedef struct {
    int64_t id;
    uint64_t time_ms;
    const char *campaign_id, *task_id, *node, *kind, *message; /* NULL when not set */
} store_event_t;

/* Calls cb for the events of campaign_id (all events when NULL) in time order; borrowed for the
 * call; cb must not call into the store. A nonzero return of cb stops and is returned. */
int store_event_foreach(store_t *self, const char *campaign_id,
                        int (*cb)(const store_event_t *event, void *arg), void *arg);

/* Calls cb(component, version, node) for the software versions in the latest inventory of every
 * agent that had a task in campaign_id (kernel, driver, ...), ordered by component, version,
 * node; borrowed for the call; cb must not call into the store. A nonzero return of cb stops and
 * is returned. */
int store_software_foreach(store_t *self, const char *campaign_id,
                           int (*cb)(const char *component, const char *version, const char *node,
                                     void *arg),
                           void *arg);

/* ---- Webhook deliveries (store_webhook.c) ------------------------------------------------ */

/* The durable queue of webhook alerts (webhook_queue.h, docs/operations.md "Alerts"). */
typedef struct {
    int64_t id;
    char *campaign_id, *url, *payload;
    uint64_t *retry_ms; /* the waits between attempts */
    size_t n_retry;
    uint64_t timeout_ms;
    unsigned attempts;        /* made so far */
    uint64_t next_attempt_ms; /* epoch ms the next attempt is due; 0 when none */
    char *state;              /* pending | delivered | failed */
    char *last_error;         /* how the last attempt failed, NULL when none */
    uint64_t created_ms, finished_ms;
} store_webhook_t;

/* Queues the alert of campaign_id for url, pending, its first attempt due at now_ms. *id_out
 * (may be NULL) gets its id. -EEXIST when the campaign already has a delivery to url (an alert is
 * queued once), -ENOENT for an unknown campaign. */
int store_webhook_enqueue(store_t *self, const char *campaign_id, const char *url,
                          const char *payload, const uint64_t *retry_ms, size_t n_retry,
                          uint64_t timeout_ms, uint64_t now_ms, int64_t *id_out);
/* Records an attempt's outcome: attempts made, the state (pending, delivered, failed), when the
 * next attempt is due (pending only; 0 otherwise), the error (NULL when delivered) and, when it is
 * no longer pending, finished_ms. -ENOENT for an unknown id, -EINVAL for another state. */
int store_webhook_attempted(store_t *self, int64_t id, unsigned attempts, const char *state,
                            uint64_t next_attempt_ms, const char *error, uint64_t finished_ms);
/* Calls cb for every pending delivery, the earliest due first (campaign_id NULL), or for every
 * delivery of campaign_id in the order queued. The row is borrowed for the call; cb must not call
 * into the store. A nonzero return of cb stops and is returned. */
int store_webhook_foreach(store_t *self, const char *campaign_id,
                          int (*cb)(const store_webhook_t *w, void *arg), void *arg);
/* ---- Expected hardware and fingerprints (store_fingerprint.c) ---------------------------- */

/* The facts of node's latest inventory, for the check of a campaign's expect section
 * (scheduler/expect.h): memory, GPUs in PCI order (model, memory, link), HCA ports. earlier (may
 * be NULL) gets the latest earlier inventory of the node that listed more GPUs than it has now
 * (zeroed when there is none), from which missing GPUs are named; *time_ms (may be NULL) when
 * the latest inventory was first recorded. Free both with fb_node_facts_clear. -ENOENT for a
 * node without a stored inventory. */
int store_agent_facts(store_t *self, const char *node, fb_node_facts_t *now,
                      fb_node_facts_t *earlier, uint64_t *time_ms);

/* Records the environment fingerprint (scheduler/fingerprint.h) of node in campaign_id from the
 * node's latest inventory: one row per component. Once per node and campaign: a later call
 * changes nothing and returns 0. -ENOENT for an unknown campaign or a node without inventory. */
int store_fingerprint_record(store_t *self, const char *campaign_id, const char *node,
                             uint64_t now_ms);

/* Records fp as node's fingerprint in campaign_id (the coordinator keeps each registered node's
 * fingerprint from its Hello), once per node and campaign as store_fingerprint_record. An empty
 * fp is recorded as fleetburn = unknown. */
int store_fingerprint_insert(store_t *self, const char *campaign_id, const char *node,
                             const fb_fingerprint_t *fp, uint64_t now_ms);

typedef struct {
    char *node;
    fb_fingerprint_t fingerprint; /* in this campaign */
    char *previous_campaign;      /* the node's latest campaign that started before this one and
                                     recorded its fingerprint; NULL when none */
    fb_fingerprint_t previous;    /* its fingerprint there; empty when none */
} store_node_fingerprint_t;

/* The fingerprints recorded in campaign_id, one per node, sorted by node name, each with the
 * node's fingerprint in its previous campaign. *out is a heap array (NULL when none; free with
 * store_node_fingerprints_free). -ENOENT for an unknown campaign. */
int store_campaign_fingerprints(store_t *self, const char *campaign_id,
                                store_node_fingerprint_t **out, size_t *n_out);
void store_node_fingerprints_free(store_node_fingerprint_t *v, size_t n);

/* What changed in the nodes' environment up to campaign_id, one group per identical change
 * (fb_fingerprint_group: "nvidia_driver 570.86 → 580.159 on gpu[001-064]"): since base_id for
 * the nodes both recorded, or, when base_id is NULL, since each node's previous campaign.
 * *n_compared (may be NULL): how many nodes had something to compare with. Free the groups with
 * fb_fp_groups_free. -ENOENT for an unknown campaign. */
int store_fingerprint_changes(store_t *self, const char *base_id, const char *campaign_id,
                              fb_fp_group_t **out, size_t *n_out, size_t *n_compared);
/* ---- Baselines and comparisons (store_compare.c, docs/regressions.md) -------------------- */

/* The campaign's name, state and start (a light read). *name_out and *state_out are heap strings
 * (either pointer may be NULL). -ENOENT for an unknown campaign. */
int store_campaign_head(store_t *self, const char *id, char **name_out, char **state_out,
                        uint64_t *started_ms_out);
/* The latest campaign called name that finished (state finished, whatever its verdict) and
 * started before before_ms, other than exclude_id (may be NULL): the baseline `latest` stands
 * for. -ENOENT when there is none. *id_out heap string. */
int store_campaign_previous(store_t *self, const char *name, uint64_t before_ms,
                            const char *exclude_id, char **id_out);
/* Keeps campaign_id as the baseline called name, replacing what the name meant before
 * (*previous_out: that campaign id, heap, or NULL; the pointer may be NULL). -ENOENT for an
 * unknown campaign. The caller checks the name and the campaign's state. */
int store_baseline_set(store_t *self, const char *name, const char *campaign_id, uint64_t now_ms,
                       char **previous_out);
/* The campaign id of the baseline called name (heap), or -ENOENT. */
int store_baseline_get(store_t *self, const char *name, char **campaign_id_out);
/* Forgets the baseline called name (the campaign stays). -ENOENT when there is none. */
int store_baseline_delete(store_t *self, const char *name);

typedef struct {
    const char *name, *campaign_id;
    const char *campaign_name, *campaign_state; /* NULL when not known */
    uint64_t set_ms, campaign_started_ms;
} store_baseline_t;

/* Calls cb for every named baseline, by name; borrowed for the call; cb must not call into the
 * store. A nonzero return of cb stops and is returned. */
int store_baseline_foreach(store_t *self, int (*cb)(const store_baseline_t *baseline, void *arg),
                           void *arg);

/* The environment fingerprint of every node that had a task in campaign_id:
 * cb(node, component, version) for each component, ordered by node and component. From the
 * fingerprints the campaign recorded (store_fingerprint_record: driver, CUDA, NCCL, VBIOS,
 * firmware, kernel, BIOS, OS, fleetburn); for a campaign run before they were recorded, from
 * the node's latest inventory snapshot at or before the campaign's start (the software map,
 * kernel included, and agent_version; the first snapshot after it when there is none before).
 * Borrowed for the call; cb must not call into the store; a nonzero return stops and is returned.
 * The one place that says where fingerprints come from. */
int store_node_fingerprint_foreach(store_t *self, const char *campaign_id,
                                   int (*cb)(const char *node, const char *component,
                                             const char *version, void *arg),
                                   void *arg);

/* ---- Node views (store_views.c) ------------------------------------------------------------ */

/* A node's recent result, as `fleetburn serve --http` exports it. */
typedef struct {
    char *node, *result_id, *campaign_id, *stage, *workload; /* workload "" when unknown */
    fb_verdict_t verdict;                                    /* the node's own result's */
    uint64_t received_ms;
    bool last;            /* the node's last result (else the last of this workload) */
    fb_result_t *metrics; /* its metrics only (ids, findings not filled) */
} store_node_result_t;

/* For every agent (by name), its last result and the last result of each other workload among
 * its `window` latest, from any campaign, read in one snapshot. *out heap array (free with
 * store_node_results_free), possibly empty. */
int store_node_results(store_t *self, size_t window, store_node_result_t **out, size_t *n_out);
void store_node_results_free(store_node_result_t *v, size_t n);

#endif
