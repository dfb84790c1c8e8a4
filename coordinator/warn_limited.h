/* SPDX-License-Identifier: Apache-2.0 */
/* Warnings about events a peer can cause at will (relayed messages refused, messages dropped):
 * at most one line per interval of the rate limiter, each saying how many such events there were
 * in all and how many lines were held back, so that a hostile peer cannot flood the log and the
 * operator still learns the count. */
#ifndef FB_WARN_LIMITED_H
#define FB_WARN_LIMITED_H

#include "common/ratelimit.h"

#include <stdarg.h>
#include <stdint.h>

/* Counts one event in *count. When rl lets a line through, returns the message formatted from
 * fmt and ap followed by " (<*count> <counted> in all, <held> lines held back)", heap text the
 * caller logs and frees; NULL while lines are held back (nothing is formatted then). */
char *warn_limited_vline(fb_ratelimit_t *rl, uint64_t *count, const char *counted, const char *fmt,
                         va_list ap) __attribute__((format(printf, 4, 0)));

#endif
