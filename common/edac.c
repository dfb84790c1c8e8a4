/* SPDX-License-Identifier: Apache-2.0 */
/* Reads the kernel's EDAC error counters per DIMM so that the inventory can name DIMMs by their
 * board labels and memtest can tell which DIMM logged corrected or uncorrected errors while it
 * ran. The tree is walked under a root prefix so tests run against fixture copies of real sysfs
 * layouts. A counter that is missing or not a number is an error, never a silent zero: a zero
 * would hide exactly the DIMM the operator is looking for. */
#include "edac.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The snapshot being built, with its growth capacity. */
typedef struct {
    fb_edac_t *edac;
    size_t cap;
} builder_t;

/* Per-controller sums of the DIMM counters: the totals where mcN/ce_count is absent. */
typedef struct {
    uint64_t ce, ue;
} sums_t;

static int s_cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

/* Numbers N of the entries of dir named PREFIX N SUFFIX ("dimm3", "ch1_ce_count"), ascending so
 * that dimm10 follows dimm9. Returns how many (into a heap array) or a negative errno. */
static int s_list_numbered(const char *dir, const char *prefix, const char *suffix, unsigned **out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    size_t plen = strlen(prefix), n = 0, cap = 0;
    unsigned *nums = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *digits = de->d_name + plen;
        if (strncmp(de->d_name, prefix, plen) || !isdigit((unsigned char)*digits))
            continue;
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(digits, &end, 10);
        if (errno || v > UINT_MAX || strcmp(end, suffix))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            nums = xrealloc(nums, cap * sizeof *nums);
        }
        nums[n++] = (unsigned)v;
    }
    closedir(d);
    if (n)
        qsort(nums, n, sizeof *nums, s_cmp_unsigned);
    *out = nums;
    return (int)n;
}

/* A counter the layout promises: absent or unparsable means a malformed tree (-EINVAL), which
 * callers must not confuse with "no EDAC here" (-ENOENT). */
static int s_read_count(const char *dir, const char *name, uint64_t *out)
{
    char *path = xasprintf("%s/%s", dir, name);
    int rc = fb_read_u64(path, out);
    free(path);
    return rc == -ENOENT ? -EINVAL : rc;
}

/* An attribute that older kernels or some drivers lack: absent leaves *out and returns 1. */
static int s_read_optional(const char *dir, const char *name, uint64_t *out)
{
    char *path = xasprintf("%s/%s", dir, name);
    int rc = fb_read_u64(path, out);
    free(path);
    return rc == -ENOENT ? 1 : rc;
}

/* The label text, or NULL when absent or blank (the caller then uses the location). */
static int s_read_label(const char *dir, const char *name, char **out)
{
    *out = NULL;
    char *path = xasprintf("%s/%s", dir, name);
    char *text = fb_read_file(path, NULL);
    int err = errno;
    free(path);
    if (!text)
        return err == ENOENT ? 0 : -err;
    if (text[0] == '\0') {
        free(text);
        return 0;
    }
    *out = text;
    return 0;
}

/* Appends a DIMM; takes ownership of label (may be NULL) and location. */
static void s_add(builder_t *b, char *label, char *location, uint64_t size_mb, uint64_t ce,
                  uint64_t ue)
{
    fb_edac_t *e = b->edac;
    if (e->n_dimms == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8;
        e->dimms = xrealloc(e->dimms, b->cap * sizeof *e->dimms);
    }
    fb_dimm_t *d = &e->dimms[e->n_dimms++];
    d->location = location;
    d->label = label ? label : xstrdup(location);
    d->size_mb = size_mb;
    d->ce_count = ce;
    d->ue_count = ue;
}

/* mcN/dimmK or mcN/rankK: dimm_label, dimm_ce_count, dimm_ue_count, size (MB). */
static int s_read_dimm(builder_t *b, const char *mc_path, unsigned mc, const char *kind, unsigned k,
                       sums_t *sums)
{
    char *dir = xasprintf("%s/%s%u", mc_path, kind, k);
    uint64_t ce = 0, ue = 0, size = 0;
    char *label = NULL;
    int rc = s_read_count(dir, "dimm_ce_count", &ce);
    if (!rc)
        rc = s_read_count(dir, "dimm_ue_count", &ue);
    if (!rc)
        rc = s_read_optional(dir, "size", &size);
    if (rc >= 0)
        rc = s_read_label(dir, "dimm_label", &label);
    free(dir);
    if (rc < 0)
        return rc;
    s_add(b, label, xasprintf("mc%u/%s%u", mc, kind, k), size, ce, ue);
    sums->ce += ce;
    sums->ue += ue;
    return 0;
}

/* mcN/csrowK: one DIMM per chC_ce_count, all sharing the csrow's ue_count and size_mb. */
static int s_read_csrow(builder_t *b, const char *mc_path, unsigned mc, unsigned k, sums_t *sums)
{
    char *dir = xasprintf("%s/csrow%u", mc_path, k);
    uint64_t ue = 0, size = 0;
    unsigned *chans = NULL;
    int rc = s_read_count(dir, "ue_count", &ue);
    if (!rc)
        rc = s_read_optional(dir, "size_mb", &size);
    int n_chans = rc >= 0 ? s_list_numbered(dir, "ch", "_ce_count", &chans) : 0;
    if (rc >= 0 && n_chans <= 0)
        rc = n_chans < 0 ? n_chans : -EINVAL; /* a csrow without channel counters is malformed */
    for (int i = 0; rc >= 0 && i < n_chans; i++) {
        char name[48];
        uint64_t ce = 0;
        char *label = NULL;
        snprintf(name, sizeof name, "ch%u_ce_count", chans[i]);
        rc = s_read_count(dir, name, &ce);
        snprintf(name, sizeof name, "ch%u_dimm_label", chans[i]);
        if (rc >= 0)
            rc = s_read_label(dir, name, &label);
        if (rc < 0)
            break;
        s_add(b, label, xasprintf("mc%u/csrow%u/ch%u", mc, k, chans[i]), size / (uint64_t)n_chans,
              ce, ue);
        sums->ce += ce;
    }
    sums->ue += ue; /* once per csrow: its channels share the counter */
    free(chans);
    free(dir);
    return rc < 0 ? rc : 0;
}

/* Reads the DIMMs of every entry named kind ("dimm", "rank", "csrow") of one controller. Returns
 * how many entries there were, or a negative errno. */
static int s_read_kind(builder_t *b, const char *mc_path, unsigned mc, const char *kind,
                       sums_t *sums)
{
    unsigned *nums = NULL;
    int n = s_list_numbered(mc_path, kind, "", &nums);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = strcmp(kind, "csrow") ? s_read_dimm(b, mc_path, mc, kind, nums[i], sums)
                                   : s_read_csrow(b, mc_path, mc, nums[i], sums);
    free(nums);
    return rc < 0 ? rc : n;
}

static int s_read_mc(builder_t *b, const char *mc_root, unsigned mc)
{
    char *path = xasprintf("%s/mc%u", mc_root, mc);
    sums_t sums = {0, 0};
    /* Kernels with legacy csrow files also have dimmN/rankN: prefer those, they are per DIMM. */
    int n = s_read_kind(b, path, mc, "dimm", &sums);
    int n_rank = n >= 0 ? s_read_kind(b, path, mc, "rank", &sums) : 0;
    int rc = n < 0 ? n : n_rank < 0 ? n_rank : 0;
    if (rc == 0 && n + n_rank == 0) {
        int n_csrow = s_read_kind(b, path, mc, "csrow", &sums);
        rc = n_csrow < 0 ? n_csrow : 0;
    }
    uint64_t ce = sums.ce, ue = sums.ue;
    if (rc == 0)
        rc = s_read_optional(path, "ce_count", &ce);
    if (rc >= 0)
        rc = s_read_optional(path, "ue_count", &ue);
    free(path);
    if (rc < 0)
        return rc;
    b->edac->ce_total += ce;
    b->edac->ue_total += ue;
    return 0;
}

int fb_edac_read(const char *root, fb_edac_t *out)
{
    memset(out, 0, sizeof *out);
    char *mc_root = xasprintf("%s/sys/devices/system/edac/mc", root ? root : "");
    unsigned *mcs = NULL;
    int n = s_list_numbered(mc_root, "mc", "", &mcs);
    int rc = n < 0 ? n : n == 0 ? -ENOENT : 0; /* edac_core without a driver: an empty mc/ */
    if (rc == -ENOTDIR)
        rc = -ENOENT;
    builder_t b = {out, 0};
    for (int i = 0; rc == 0 && i < n; i++)
        rc = s_read_mc(&b, mc_root, mcs[i]);
    free(mcs);
    free(mc_root);
    if (rc)
        fb_edac_clear(out);
    return rc;
}

void fb_edac_clear(fb_edac_t *edac)
{
    if (!edac)
        return;
    for (size_t i = 0; i < edac->n_dimms; i++) {
        free(edac->dimms[i].label);
        free(edac->dimms[i].location);
    }
    free(edac->dimms);
    memset(edac, 0, sizeof *edac);
}

static const fb_dimm_t *s_find(const fb_edac_t *edac, const char *location)
{
    for (size_t i = 0; i < edac->n_dimms; i++)
        if (!strcmp(edac->dimms[i].location, location))
            return &edac->dimms[i];
    return NULL;
}

size_t fb_edac_diff(const fb_edac_t *before, const fb_edac_t *after, fb_edac_change_t *out,
                    size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < after->n_dimms && n < max; i++) {
        const fb_dimm_t *now = &after->dimms[i];
        const fb_dimm_t *then = s_find(before, now->location);
        /* A DIMM that appeared (driver loaded meanwhile) has no baseline; a counter that went
         * down was reset. Neither says anything about errors during the interval. */
        if (!then)
            continue;
        uint64_t ce = now->ce_count > then->ce_count ? now->ce_count - then->ce_count : 0;
        uint64_t ue = now->ue_count > then->ue_count ? now->ue_count - then->ue_count : 0;
        if (!ce && !ue)
            continue;
        out[n].dimm = now;
        out[n].ce_delta = ce;
        out[n].ue_delta = ue;
        n++;
    }
    return n;
}
