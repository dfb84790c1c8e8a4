/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel CPU lists ("0-3,8,10-11"), as sysfs shows them (devices/system/cpu/online, a NUMA
 * node's cpulist, a PCI device's local_cpulist): one reader of their syntax for the agent's
 * inventory and the workers' placement of threads and buffers. */
#ifndef FB_CPULIST_H
#define FB_CPULIST_H

/* Calls fn with each range lo..hi of text in order (a single CPU is lo == hi). White space before
 * and after the list is allowed; an empty list has no ranges. Returns 0, the first value other
 * than 0 that fn returned, or -EINVAL when text is NULL or not a CPU list (a bound that is not a
 * decimal number, hi below lo, anything else); ranges before the bad one have been passed on. */
int fb_cpulist_foreach(const char *text, int (*fn)(unsigned long lo, unsigned long hi, void *arg),
                       void *arg);

#endif
