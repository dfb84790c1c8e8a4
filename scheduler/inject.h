/* SPDX-License-Identifier: Apache-2.0 */
/* Test-only fault injection given on a command line, checked before anything runs:
 *   fleetburn run --local N --inject NODE:[WORKLOAD.]KEY=VALUE   (coordinator/cli_inject.c)
 *   fleetburn-agent --allow-fault-injection --inject [WORKLOAD.]KEY=VALUE
 * A misspelt key, a workload the campaign does not run or a value the parameter does not take
 * would otherwise inject nothing, and the run would pass: proof of nothing. Checked against the
 * workload schema (workload.h) and, when there is one, the campaign. Pure: no I/O. */
#ifndef FB_INJECT_H
#define FB_INJECT_H

#include <stddef.h>

struct fb_campaign;

/* Checks spec, "[WORKLOAD.]KEY=VALUE":
 *  - WORKLOAD is a workload, and with c, one that a stage of c runs;
 *  - KEY is a parameter of WORKLOAD (fault-injection ones included); without WORKLOAD, a
 *    parameter of at least one workload (of c's, with c);
 *  - VALUE is valid for every such parameter.
 * 0, or -EINVAL with what is wrong and what is expected in err, e.g.
 *   "memtest has no parameter 'inject_bitflip'; expected one of size, ..., inject_bitflips" */
int fb_inject_check(const char *spec, const struct fb_campaign *c, char *err, size_t errlen);

#endif
