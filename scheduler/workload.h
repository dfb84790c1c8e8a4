/* SPDX-License-Identifier: Apache-2.0 */
/* The workload schema: which workloads exist and which parameters each takes, with types,
 * defaults, bounds and help. Pure data and validation, no I/O. The campaign parser validates
 * every parameter of a campaign file against it, the CLI prints it, and workers read parameters
 * that it has already checked.
 *
 * Adding a workload: write its fb_param_spec_t array and one FB_WORKLOAD() line in workload.c,
 * and for one that runs across nodes (scope group or pairs) a line in s_scopes there. */
#ifndef FB_WORKLOAD_H
#define FB_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    FB_PARAM_BYTES,            /* "4096", "64MiB", "1.5GiB", "10GB" (fb_parse_bytes) */
    FB_PARAM_BYTES_OR_PERCENT, /* a byte size, or "80%" of the node's (available) memory */
    FB_PARAM_UINT,             /* a non-negative integer within [min, max] */
    FB_PARAM_UINT_OR_AUTO,     /* "auto" or a non-negative integer within [min, max] */
    FB_PARAM_DOUBLE,           /* a finite number */
    FB_PARAM_DURATION,         /* "500ms", "90s", "30m", "2h", "1h30m" (fb_parse_duration_ms) */
    FB_PARAM_BOOL,             /* true/false/yes/no/on/off/1/0 */
    FB_PARAM_ENUM,             /* one of choices */
    FB_PARAM_ENUM_LIST,        /* "all", or a comma-separated list of choices */
    FB_PARAM_STRING,           /* any text */
} fb_param_type_t;

typedef struct {
    const char *name;
    fb_param_type_t type;
    const char *default_value;  /* NULL = none: the parameter is absent unless given */
    const char *const *choices; /* NULL-terminated, ENUM/ENUM_LIST; ENUM_LIST also accepts "all" */
    uint64_t min, max;          /* UINT / UINT_OR_AUTO bounds; 0,0 = unbounded */
    bool fault_injection;       /* test-only: the worker honours it only with fault injection
                                   allowed; never filled in by default, not listed to users */
    const char *help;
} fb_param_spec_t;

typedef struct {
    const char *name;
    const char *summary;
    const fb_param_spec_t *params;
    size_t n_params;
} fb_workload_spec_t;

/* The workload called name, or NULL (borrowed, static). */
const fb_workload_spec_t *fb_workload_find(const char *name);
/* Number of workloads and the i-th one (i < count; in table order) for listings. */
size_t fb_workload_count(void);
const fb_workload_spec_t *fb_workload_at(size_t i);
/* The parameter called key of workload w, or NULL (borrowed, static). */
const fb_param_spec_t *fb_workload_param(const fb_workload_spec_t *w, const char *key);

/* A key that was a parameter of w and is now a site setting of the agent's configuration
 * (fleetburn-agent --config, docs/security.md): what it sets, e.g. "the mpirun program"; NULL for
 * any other key. The campaign parser refuses such a key with a message saying where it went. */
const char *fb_workload_site_setting(const fb_workload_spec_t *w, const char *key);

/* Validates one value; on error returns -EINVAL and writes "expected ..." text into err, e.g.
 * "expected an integer from 1 to 1000000". Lists (ENUM_LIST) are comma-separated; whitespace
 * around items is allowed. NULL value is an error. err may be NULL when errlen is 0. */
int fb_param_validate(const fb_param_spec_t *p, const char *value, char *err, size_t errlen);

/* Like fb_param_validate, and also writes what is wrong into problem, e.g. "'0' is out of range",
 * "'30x' is not a duration", "unknown value 'foo'" (value shown printable, shortened). Both
 * buffers may be NULL with length 0. */
int fb_param_check(const fb_param_spec_t *p, const char *value, char *problem, size_t problemlen,
                   char *expected, size_t expectedlen);

/* "a byte size", "a duration", ... : what a value of type t is, for messages. */
const char *fb_param_type_noun(fb_param_type_t t);

/* Writes the names of w's parameters that users may set (fault-injection ones left out) as
 * "size, passes, threads" into buf; returns buf. */
const char *fb_workload_param_names(const fb_workload_spec_t *w, char *buf, size_t len);
/* Writes every workload name as "memtest, sleep" into buf; returns buf. */
const char *fb_workload_names(char *buf, size_t len);

/* The stage scopes (scheduler/pairing.h) w runs in, for listings and messages: "scope: pairs",
 * "scope: pairs, scope: group or scope: node", "scope: pairs, or scope: node with loopback: true".
 * Workloads that test one node run with scope: node only. Returns buf. */
const char *fb_workload_scopes(const fb_workload_spec_t *w, char *buf, size_t len);
/* Whether w runs in a stage with scope (an fb_scope_t) and the stage's effective parameters,
 * which param(arg, KEY) gives (NULL: absent): 0, or -EINVAL with what is wrong and what is
 * expected in msg, e.g. "netbw runs only with scope: pairs (it measures between two nodes), and
 * this stage has scope: node (the default); expected scope: pairs". scope_written: the stage
 * wrote its scope (else it has the default, and the message says so). The campaign parser
 * refuses such a stage when the campaign loads, not when its tasks fail. */
int fb_workload_check_scope(const fb_workload_spec_t *w, int scope, bool scope_written,
                            const char *(*param)(const void *arg, const char *key),
                            const void *arg, char *msg, size_t len);

/* True for workloads that run in a vendor GPU worker (fleetburn-worker-cuda / -hip). */
bool fb_workload_needs_gpu(const char *name);

#endif
