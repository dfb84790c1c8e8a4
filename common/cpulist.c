/* SPDX-License-Identifier: Apache-2.0 */
/* The syntax of kernel CPU lists (cpulist.h). */
#include "cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

int fb_cpulist_foreach(const char *text, int (*fn)(unsigned long lo, unsigned long hi, void *arg),
                       void *arg)
{
    if (!text)
        return -EINVAL;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    while (*p && !isspace((unsigned char)*p)) {
        if (!isdigit((unsigned char)*p))
            return -EINVAL;
        char *end = NULL;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (*end == '-') {
            p = end + 1;
            if (!isdigit((unsigned char)*p))
                return -EINVAL;
            hi = strtoul(p, &end, 10);
        }
        if (hi < lo)
            return -EINVAL;
        int rc = fn(lo, hi, arg);
        if (rc)
            return rc;
        p = end;
        if (*p == ',')
            p++;
        else if (*p && !isspace((unsigned char)*p))
            return -EINVAL;
    }
    while (isspace((unsigned char)*p))
        p++;
    return *p ? -EINVAL : 0;
}
