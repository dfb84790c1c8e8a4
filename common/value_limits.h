/* SPDX-License-Identifier: Apache-2.0 */
/* The limits a campaign's values must stay within, in one place for every side that checks them:
 * the campaign checker (scheduler/campaign_stage.c, scheduler/workload.c) refuses what is over them
 * with FILE:LINE naming the key and the limit, the wire (common/wire.c) refuses a message over
 * them, and an agent that still refuses a task answers with an `error` result, never silence.
 * docs/campaign-file.md ("Limits") lists the same table; tests/unit/test_limits.c checks both
 * sides against FB_LIMITS. */
#ifndef FB_VALUE_LIMITS_H
#define FB_VALUE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* A stage's `timeout` (RunTask.timeout_ms): 1 ms .. 30 days. */
#define FB_LIMIT_TIMEOUT_MS_MIN 1ull
#define FB_LIMIT_TIMEOUT_MS_MAX (30ull * 86400 * 1000)
/* A duration parameter of a workload (sleep duration, gpuburn interval, ...): at most 30 days. */
#define FB_LIMIT_DURATION_MS_MAX (30ull * 86400 * 1000)
/* netbw `duration`: at least 100 ms (a shorter measurement is noise). */
#define FB_LIMIT_NETBW_DURATION_MS_MIN 100ull
/* One parameter's value as a task carries it (RunTask.params[].value): at most 4096 bytes. */
#define FB_LIMIT_PARAM_VALUE_BYTES 4096u
/* Parameters one task carries (RunTask.params). */
#define FB_LIMIT_PARAMS 256u
/* Node, workload, stage and parameter names on the wire. */
#define FB_LIMIT_NAME 128u
/* Members of one group task (RunTask.group.size) and any repeated field. */
#define FB_LIMIT_GROUP_SIZE 4096u
/* A submitted campaign file (Submit.yaml) and the files attached to it. */
#define FB_LIMIT_CAMPAIGN_BYTES (1u << 20)
#define FB_LIMIT_CAMPAIGN_FILES 16u

/* The table, for listings and for tests that check every side against it. */
typedef struct {
    const char *what;  /* "stage timeout" */
    const char *where; /* "stages[].timeout" */
    uint64_t min, max; /* inclusive; 0 min = none */
    const char *unit;  /* "ms", "bytes", "" */
} fb_limit_t;

#define FB_LIMITS_ROWS(X)                                                                          \
    X("stage timeout", "stages[].timeout", FB_LIMIT_TIMEOUT_MS_MIN, FB_LIMIT_TIMEOUT_MS_MAX, "ms") \
    X("duration parameter", "stages[].params.<duration>", 0, FB_LIMIT_DURATION_MS_MAX, "ms")       \
    X("netbw duration", "stages[].params.duration (netbw)", FB_LIMIT_NETBW_DURATION_MS_MIN,        \
      FB_LIMIT_DURATION_MS_MAX, "ms")                                                              \
    X("parameter value", "stages[].params.<any>", 0, FB_LIMIT_PARAM_VALUE_BYTES, "bytes")          \
    X("parameters per task", "stages[].params", 0, FB_LIMIT_PARAMS, "")                            \
    X("group size", "stages[].group_size", 1, FB_LIMIT_GROUP_SIZE, "")                             \
    X("campaign file", "(the whole file)", 0, FB_LIMIT_CAMPAIGN_BYTES, "bytes")

#endif
