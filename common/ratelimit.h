/* SPDX-License-Identifier: Apache-2.0 */
/* A log line per interval for events a peer can cause at will (refused keys, dropped messages):
 * a hostile peer must not be able to flood the log, and the operator still learns how many
 * were held back. */
#ifndef FB_RATELIMIT_H
#define FB_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint64_t interval_ms; /* at most one line per interval */
    uint64_t last_ms;     /* when the last line was allowed; 0: never */
    uint64_t held;        /* lines held back since then */
} fb_ratelimit_t;

#define FB_RATELIMIT_INIT(ms)                                                                      \
    {                                                                                              \
        (ms), 0, 0                                                                                 \
    }

/* True when a line may be written at now_ms (monotonic); then *held_out receives how many were
 * held back since the previous one and the count restarts. */
static inline bool fb_ratelimit_ok(fb_ratelimit_t *rl, uint64_t now_ms, uint64_t *held_out)
{
    if (rl->last_ms != 0 && now_ms - rl->last_ms < rl->interval_ms) {
        rl->held++;
        return false;
    }
    rl->last_ms = now_ms ? now_ms : 1;
    *held_out = rl->held;
    rl->held = 0;
    return true;
}

#endif
