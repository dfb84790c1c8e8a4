/* SPDX-License-Identifier: Apache-2.0 */
/* The contract between a workload and the fleetburn-worker process that hosts it.
 *
 * The agent starts `fleetburn-worker --workload NAME --task-id ID --result FILE [--node NAME]
 * [--allow-fault-injection] [--site KEY=VALUE ...] key=value ...` in a new process group with
 * its deadline. A workload is a
 * function that reads its parameters from the context, reports progress and log lines (written to
 * stdout as lines the agent turns into TaskEvents), and fills the result: metrics, findings and a
 * verdict. worker_main writes the result to FILE (a TaskResult message, written to a temporary file
 * and renamed) when the function returns. A worker that dies leaves no file; the agent then
 * reports `error` with the signal or exit status.
 *
 * Parameters arrive already validated against the workload schema by the campaign parser
 * (scheduler/workload.h); a workload still checks what it converts and fails with `error`. */
#ifndef FB_WORKER_H
#define FB_WORKER_H

#include "common/result.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct worker_ctx worker_ctx_t;

/* A workload entry point: fills ctx's result and returns its verdict. */
typedef fb_verdict_t (*workload_fn)(worker_ctx_t *ctx);

typedef struct {
    const char *name;
    workload_fn run;
} workload_entry_t;

/* The parameter called key as given in the campaign, or NULL when absent (borrowed). Parameters
 * come from the network: a workload never makes a program, a path or an environment variable
 * of one (docs/security.md). */
const char *worker_param(const worker_ctx_t *ctx, const char *key);
/* The site setting called key, or NULL when the site does not set it (borrowed). Site settings
 * come from the agent's local configuration (fleetburn-agent --config, docs/security.md "Site
 * settings"), handed to the worker as --site KEY=VALUE: mpirun, mpirun_args, rsh_agent,
 * mpirun_allow_run_as_root. They are what may choose a program a workload runs. */
const char *worker_site(const worker_ctx_t *ctx, const char *key);
/* True when the agent was started with --allow-fault-injection (test-only switch). */
bool worker_fault_injection_allowed(const worker_ctx_t *ctx);
const char *worker_task_id(const worker_ctx_t *ctx);
const char *worker_node(const worker_ctx_t *ctx);
/* The result being built (borrowed; add metrics and findings to it). */
fb_result_t *worker_result(worker_ctx_t *ctx);
/* Root prefix for sysfs/procfs reads; "" normally, a fixture tree in tests (FLEETBURN_SYSFS_ROOT). */
const char *worker_sysfs_root(const worker_ctx_t *ctx);

/* Progress in [0,1] with a short status; rate-limited to a few lines a second. Thread-safe. */
void worker_progress(worker_ctx_t *ctx, double fraction, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A log line that goes to the coordinator's timeline. Thread-safe. */
void worker_log(worker_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the result's error text, logs it, and returns FB_VERDICT_ERROR: the one way a workload
 * refuses bad parameters or reports a setup failure. */
fb_verdict_t worker_error(worker_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A telemetry sample set (e.g. per GPU: temperature, power, clocks) for the timeline. Names use
 * the metric charset ([A-Za-z0-9._-]), e.g. "gpu0.temp_c". Thread-safe; not rate-limited. */
void worker_telemetry(worker_ctx_t *ctx, const fb_metric_t *samples, size_t n);

/* ---- Group tasks (scope: group | pairs) ------------------------------------------------------
 *
 * A member of a group task is started with `--rank R --size N --peers NODE,... --addresses
 * ADDR,...` (peers and addresses by rank; an address is where peers reach that node: an IP
 * literal or host name, "" when unknown). A task of scope node is a group of one: rank 0, size 1,
 * peers = {its node}. */
unsigned worker_rank(const worker_ctx_t *ctx);
unsigned worker_size(const worker_ctx_t *ctx);
/* Node name / address of rank r < worker_size (borrowed; address "" when unknown). */
const char *worker_peer(const worker_ctx_t *ctx, unsigned r);
const char *worker_peer_address(const worker_ctx_t *ctx, unsigned r);

/* One rank's value in an exchange. */
typedef struct {
    void *data; /* owned by the array given back by worker_exchange */
    size_t len;
} worker_blob_t;

/* An all-gather among the members of the group: posts value[0..len) (len <= 64 KiB; len 0 is
 * fine) under key ([A-Za-z0-9._-], each key used once per task) and waits until every rank has
 * posted, then *values_out gets worker_size() blobs by rank (free with worker_blobs_free).
 * Goes through the agent and the coordinator (docs/protocol.md, Exchange); without an agent,
 * when FLEETBURN_EXCHANGE_DIR names a directory shared by the ranks, through files there (tests
 * and manual runs). A group of one returns at once with its own value.
 * Returns 0, -ETIMEDOUT when the others did not all post within timeout_ms (err names the ranks
 * and nodes missing when known), -ECONNABORTED when the coordinator ended the exchange (a member
 * was lost; err says which), -ENOTCONN when there is no channel, -EINVAL for a bad key or
 * length. Thread-safe, but one exchange at a time per worker. */
int worker_exchange(worker_ctx_t *ctx, const char *key, const void *value, size_t len,
                    uint64_t timeout_ms, worker_blob_t **values_out, char *err, size_t errlen);
void worker_blobs_free(worker_blob_t **blobs_p, size_t n);

/* For tests: a context with the given key=value parameters and no output channel. */
worker_ctx_t *worker_ctx_new(const char *task_id, const char *node, const char *const *params,
                             size_t n_params, bool allow_fault_injection);
void worker_ctx_destroy(worker_ctx_t **self_p);
/* For tests and worker_main: sets the site settings ("KEY=VALUE" strings, copied; replaces
 * earlier ones). */
void worker_ctx_set_site(worker_ctx_t *ctx, const char *const *site, size_t n_site);
/* For tests and worker_main: sets the group (copies; peers/addresses may be NULL for a group of
 * one, addresses may be NULL). */
void worker_ctx_set_group(worker_ctx_t *ctx, unsigned rank, unsigned size,
                          const char *const *peers, const char *const *addresses);

/* Looks up a workload by name in the table of workloads this worker was built with. */
const workload_entry_t *worker_find(const char *name);

#endif
