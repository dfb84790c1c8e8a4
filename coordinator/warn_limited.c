/* SPDX-License-Identifier: Apache-2.0 */
#include "warn_limited.h"

#include "common/util.h"

#include <stdlib.h>

char *warn_limited_vline(fb_ratelimit_t *rl, uint64_t *count, const char *counted, const char *fmt,
                         va_list ap)
{
    ++*count;
    uint64_t held = 0;
    if (!fb_ratelimit_ok(rl, fb_mono_ms(), &held))
        return NULL;
    char *what = xvasprintf(fmt, ap);
    char *line = xasprintf("%s (%llu %s in all, %llu lines held back)", what,
                           (unsigned long long)*count, counted, (unsigned long long)held);
    free(what);
    return line;
}
