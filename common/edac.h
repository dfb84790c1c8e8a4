/* SPDX-License-Identifier: Apache-2.0 */
/* EDAC per-DIMM error counters from /sys/devices/system/edac: the DIMM labels the inventory
 * reports and the corrected/uncorrected counts memtest compares before and after a run.
 * Reads both layouts the kernel has used: mcN/dimmN/ (dimm_label, dimm_ce_count, dimm_ue_count,
 * size) and the older mcN/csrowN/chK_{dimm_label,ce_count} with csrow ue_count. */
#ifndef FB_EDAC_H
#define FB_EDAC_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *label;    /* dimm_label, or "mc0/dimm3" when the label is empty */
    char *location; /* "mc0/dimm3" or "mc0/csrow2/ch1" */
    uint64_t size_mb;
    uint64_t ce_count, ue_count;
} fb_dimm_t;

/* In the csrow layout the kernel counts uncorrected errors per csrow, not per channel: every
 * channel DIMM of a csrow carries that csrow's ue_count (the error was on one of them). Its size
 * is the csrow's size_mb split evenly over its channels. The mcN/rankN layout of chip-select
 * based drivers is read like mcN/dimmN (location "mc0/rank3"). */
typedef struct {
    fb_dimm_t *dimms;
    size_t n_dimms;
    /* Controller totals (mcN/ce_count and mcN/ue_count summed): unlike the DIMM counters they also
     * count errors the driver could not attribute to a DIMM. The sum of the DIMM counters where a
     * controller lacks the files. */
    uint64_t ce_total, ue_total;
} fb_edac_t;

/* Reads every DIMM under ROOT/sys/devices/system/edac/mc (root "" for the live system).
 * Returns 0, -ENOENT when the machine has no EDAC driver loaded, or another negative errno.
 * Malformed counter files are an error naming nothing silently: they yield -EINVAL. */
int fb_edac_read(const char *root, fb_edac_t *out);
void fb_edac_clear(fb_edac_t *edac);

typedef struct {
    const fb_dimm_t *dimm; /* borrowed from the `after` snapshot */
    uint64_t ce_delta, ue_delta;
} fb_edac_change_t;

/* Lists DIMMs (matched by location) whose counters went up between two snapshots. Returns the
 * number of changes written to out (at most max). */
size_t fb_edac_diff(const fb_edac_t *before, const fb_edac_t *after, fb_edac_change_t *out,
                    size_t max);

#endif
