/* SPDX-License-Identifier: Apache-2.0 */
/* The `bisect_budget` key of a stage with on_fail: bisect (docs/campaign-file.md): how long its
 * diagnosis may re-test what it has not decided, in follow-up rounds, in time, or both; whichever
 * runs out first ends it. Pure: parses the YAML node it is handed, never opens files or prints. */
#ifndef FB_BISECT_BUDGET_H
#define FB_BISECT_BUDGET_H

#include "common/yamldoc.h"

#include <stdint.h>

#define FB_BISECT_BUDGET_ROUNDS_MAX 1000
#define FB_BISECT_BUDGET_TIME_MAX_MS (30ull * 24 * 3600 * 1000) /* 30 days */

/* Parses `v`, the value at kpath: a mapping of `rounds` (1 - 1000) and `time` (a duration above
 * zero, at most 30d), at least one of them. Sets *rounds when given (else leaves it) and *time_ms
 * (0 when not given). 0, or -EINVAL after fb_yaml_fail with the line and the key path of what is
 * wrong:
 *   rack.yaml:9: stages[1].bisect_budget.time: '3 weeks' is not a duration; expected e.g. 30m,
 *   2h, 1d */
int fb_bisect_budget_parse(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath,
                           unsigned *rounds, uint64_t *time_ms);

#endif
