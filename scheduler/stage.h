/* SPDX-License-Identifier: Apache-2.0 */
/* Pure stage logic: a stage's verdict from its tasks' verdicts, a group task's verdict from its
 * members' results, and the stage deadline. */
#ifndef FB_STAGE_H
#define FB_STAGE_H

#include "common/result.h"

#include <stddef.h>
#include <stdint.h>

/* PASS when every task passed (some may be skipped), SKIPPED when all were skipped, ERROR when
 * there were no tasks (nothing was tested), FAIL otherwise. */
fb_verdict_t fb_stage_verdict(const fb_verdict_t *verdicts, size_t n);
/* The verdict of a task run by n members (a group or pair; n == 1 for scope node) from the
 * members' verdicts so far, FB_VERDICT_NONE for a member that has not ended. A member that
 * fails, or ends in error, timeout or lost, decides the task at once with its verdict (the
 * first such member by rank; *member_out, when not NULL, gets its index): the group cannot pass
 * any more, and its other members should not be left waiting for it. Otherwise the task stays
 * undecided (NONE) until every member has ended: PASS when all passed, SKIPPED when any skipped
 * (the group did not run as a whole). n == 0 is ERROR. */
fb_verdict_t fb_group_verdict(const fb_verdict_t *members, size_t n, size_t *member_out);
/* How long the coordinator waits for a stage whose tasks have timeout_ms each: the agents kill
 * workers at timeout_ms and report `timeout`, so the coordinator allows a grace period for that
 * report (5 s plus 5%, at most 5 min) before it gives up on a task itself. */
uint64_t fb_stage_deadline_ms(uint64_t timeout_ms);

#endif
