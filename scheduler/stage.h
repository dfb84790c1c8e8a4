/* SPDX-License-Identifier: Apache-2.0 */
/* Pure stage logic: a stage's verdict from its tasks' verdicts, and the stage deadline. */
#ifndef FB_STAGE_H
#define FB_STAGE_H

#include "common/result.h"

#include <stddef.h>
#include <stdint.h>

/* PASS when every task passed (some may be skipped), SKIPPED when all were skipped, ERROR when
 * there were no tasks (nothing was tested), FAIL otherwise. */
fb_verdict_t fb_stage_verdict(const fb_verdict_t *verdicts, size_t n);
/* How long the coordinator waits for a stage whose tasks have timeout_ms each: the agents kill
 * workers at timeout_ms and report `timeout`, so the coordinator allows a grace period for that
 * report (5 s plus 5%, at most 5 min) before it gives up on a task itself. */
uint64_t fb_stage_deadline_ms(uint64_t timeout_ms);

#endif
