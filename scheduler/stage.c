/* SPDX-License-Identifier: Apache-2.0 */
/* Stage verdicts, group task verdicts and deadlines (pure functions, unit-tested). */
#include "stage.h"

#include <stdbool.h>

fb_verdict_t fb_stage_verdict(const fb_verdict_t *verdicts, size_t n)
{
    if (n == 0)
        return FB_VERDICT_ERROR;
    size_t skipped = 0;
    for (size_t i = 0; i < n; i++) {
        if (verdicts[i] == FB_VERDICT_SKIPPED)
            skipped++;
        else if (verdicts[i] != FB_VERDICT_PASS)
            return FB_VERDICT_FAIL;
    }
    return skipped == n ? FB_VERDICT_SKIPPED : FB_VERDICT_PASS;
}

fb_verdict_t fb_group_verdict(const fb_verdict_t *members, size_t n, size_t *member_out)
{
    if (n == 0)
        return FB_VERDICT_ERROR;
    bool pending = false, skipped = false;
    for (size_t i = 0; i < n; i++) {
        switch (members[i]) {
        case FB_VERDICT_NONE:
            pending = true;
            break;
        case FB_VERDICT_PASS:
            break;
        case FB_VERDICT_SKIPPED:
            skipped = true;
            break;
        default: /* fail, timeout, lost, error */
            if (member_out)
                *member_out = i;
            return members[i];
        }
    }
    if (pending)
        return FB_VERDICT_NONE;
    return skipped ? FB_VERDICT_SKIPPED : FB_VERDICT_PASS;
}

uint64_t fb_stage_deadline_ms(uint64_t timeout_ms)
{
    uint64_t grace = 5000 + timeout_ms / 20;
    if (grace > 300000)
        grace = 300000;
    return timeout_ms + grace;
}
