/* SPDX-License-Identifier: Apache-2.0 */
/* Host-side logic of the gpumemtest workload, in plain C so it is unit-tested without a GPU:
 * the pattern names and their parsing, the `devices` selection, coalescing of the miscompares the
 * verification kernels recorded into address ranges, the finding text for each range, the metrics
 * of each GPU, and the verdict. The kernels and the threads that drive them are gpumemtest.cu. */
#ifndef FB_GPUMEM_REPORT_H
#define FB_GPUMEM_REPORT_H

#include "common/result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The patterns as campaigns name them (scheduler/workload.c), in their default order. */
typedef enum {
    GPUMEM_WALKING_ONES = 0,
    GPUMEM_WALKING_ZEROS,
    GPUMEM_OWN_ADDRESS,
    GPUMEM_MOVING_INV_8,
    GPUMEM_MOVING_INV_32,
    GPUMEM_MOVING_INV_RANDOM,
    GPUMEM_MODULO20,
    GPUMEM_BIT_FADE,
    GPUMEM_N_PATTERNS,
    /* Not selectable: the result check of the STREAM-triad bandwidth kernel. */
    GPUMEM_TRIAD = GPUMEM_N_PATTERNS,
    GPUMEM_N_CHECKS
} gpumem_pattern_t;

/* "walking_ones" ... "bit_fade", "triad"; "unknown" out of range. */
const char *gpumem_pattern_name(gpumem_pattern_t p);
/* The pattern called name, or -1. */
int gpumem_pattern_from_name(const char *name);
/* Parses "all" or a comma-separated list of names (whitespace around items allowed) into a heap
 * array the caller frees. Returns 0, or -EINVAL with *bad_out (caller frees, may be NULL) set to
 * the first item not understood. */
int gpumem_parse_patterns(const char *text, gpumem_pattern_t **list_out, size_t *n_out,
                          char **bad_out);


/* One miscompare a verification kernel recorded. */
typedef struct {
    uint64_t addr; /* device virtual address of the 8-byte word */
    uint64_t expected, actual;
    gpumem_pattern_t pattern;
    unsigned pass; /* 0-based */
} gpumem_miscompare_t;

/* Miscompares close together, as one address range. */
typedef struct {
    uint64_t first, last;          /* inclusive, granule-aligned: [first, last] */
    uint64_t errors;               /* recorded miscompares inside */
    uint64_t bits;                 /* every bit that differed (OR of expected ^ actual) */
    unsigned patterns;             /* bit p set when pattern p saw a miscompare here */
    unsigned passes_lo, passes_hi; /* first and last pass that saw one (0-based) */
} gpumem_range_t;

/* Each miscompare covers its granule-aligned block (granule a power of two, at least 8); blocks
 * separated by less than gap bytes merge into one range. Returns a heap array sorted by address
 * that the caller frees (NULL when n is 0) and its length in *n_ranges. */
gpumem_range_t *gpumem_coalesce(const gpumem_miscompare_t *m, size_t n, uint64_t granule,
                                uint64_t gap, size_t *n_ranges);

/* "gpu0 0x3f2000000-0x3f2000fff: 12 errors, bits 0x0000000000000004 (own_address, pass 1)"
 * into buf; returns buf. label names the GPU ("gpu0"). */
const char *gpumem_format_range(const gpumem_range_t *r, const char *label, char *buf, size_t len);

/* What one GPU's test found, filled by gpumemtest.cu and read by the functions below. */
typedef struct {
    int device;    /* runtime index */
    char pci[32];  /* PCI bus id, "0000:17:00.0" */
    char name[96]; /* model */
    uint64_t total_bytes, free_bytes, tested_bytes;
    unsigned chunks;              /* allocations the tested memory came in */
    double triad_gbs;             /* STREAM-triad bandwidth, 0 when not measured */
    uint64_t errors;              /* every miscompare counted, recorded or not */
    uint64_t injected;            /* bits flipped on purpose (inject_bitflips) */
    gpumem_miscompare_t *records; /* the first ones recorded (owned by the caller) */
    size_t n_records;
    char error[256]; /* non-empty when this GPU could not be (fully) tested */
} gpumem_gpu_t;

/* Ranges itemised as findings per GPU; the rest are summed up in one more finding. */
#define GPUMEM_MAX_RANGE_FINDINGS 32
/* Coalescing: 4 KiB blocks, merged when less than 64 KiB apart. */
#define GPUMEM_GRANULE 4096
#define GPUMEM_GAP 65536

/* Adds gpuN.tested_bytes, gpuN.tested_fraction (of total memory), gpuN.errors and, when measured,
 * gpuN.triad_gbs to res, and one finding on "<node>/gpuN" per miscompare range (node "" is
 * written "localhost"). Returns the number of findings added. */
size_t gpumem_report_gpu(fb_result_t *res, const char *node, const gpumem_gpu_t *g);

/* fail when any GPU miscompared or telemetry saw new GPU faults (faults > 0); error when a GPU
 * could not be tested or injected flips went unnoticed; pass otherwise. */
fb_verdict_t gpumem_verdict(const gpumem_gpu_t *gpus, size_t n, int telemetry_faults);

/* One line for stdout and the timeline: "gpumemtest fail: gpu0 72.1 GiB (91.8% of 79.2 GiB), 12
 * errors, triad 3012 GB/s; gpu1 ..." (heap string the caller frees). */
char *gpumem_summary(const gpumem_gpu_t *gpus, size_t n, fb_verdict_t verdict,
                     int telemetry_faults);

#ifdef __cplusplus
}
#endif

#endif
