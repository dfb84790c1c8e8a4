/* SPDX-License-Identifier: Apache-2.0 */
/* What memtest makes of its miscompares once the patterns are done: the itemised words grouped
 * by page; each page retested (stuck or transient, retest.h) and its physical address taken to a
 * DIMM (dimmloc.h); then the findings an operator reads: one per word, one per page with the
 * evidence, and one "dimm" finding per page whose DIMM was named (part = "host/label", as the
 * health sweep names DIMMs: the same label names a slot on every node). */
#ifndef FB_MEMTEST_MISCOMPARE_H
#define FB_MEMTEST_MISCOMPARE_H

#include "dimmloc.h"
#include "patterns.h"
#include "retest.h"
#include "worker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One itemised miscompare. */
typedef struct {
    const uint64_t *vaddr;
    uint64_t phys; /* 0 when pagemap did not tell */
    uint64_t expected, actual;
    mt_pattern_t pattern;
    unsigned pass;
    int numa_node;
} mt_detail_t;

/* One page holding itemised miscompares, and what was found out about it. */
typedef struct {
    uint64_t *page;     /* the virtual page (still mapped while analysed) */
    uint64_t phys_page; /* its physical address at the miscompare; 0 unknown */
    size_t first;       /* the first detail in it (the one retested and located) */
    unsigned n_details;
    enum { MT_PAGE_RETESTED, MT_PAGE_NOT_RETESTED, MT_PAGE_MOVED } retest_state;
    uint64_t moved_to; /* MT_PAGE_MOVED: where the page is now */
    mt_retest_t retest;
    mt_dimmloc_t loc;
} mt_page_t;

typedef struct {
    worker_ctx_t *ctx;
    const char *host;
    mt_dimmloc_cfg_t loc;
    unsigned retests; /* rounds per page; 0: no retest */
    uint64_t seed;
    int pagemap_fd; /* -1 when not open */
    size_t page_size;
    mt_retest_hook hook; /* test-only fault injection into the retests, or NULL */
    void *hook_user;
} mt_analysis_t;

/* Physical address of vaddr from /proc/self/pagemap (fd), or 0: the kernel reports PFN 0 to a
 * process without CAP_SYS_ADMIN. */
uint64_t mt_phys_addr(int pagemap_fd, const void *vaddr);

/* Groups details[0..n) by page into pages (room for n), retests and locates each page. Returns
 * the number of pages. */
size_t mt_analyse_pages(const mt_analysis_t *a, const mt_detail_t *details, size_t n,
                        mt_page_t *pages);

/* Adds the findings and the metrics miscompare_pages, stuck_pages, transient_pages and
 * dimms_named. total and mask: every miscompare of the run and the OR of their XORs. */
void mt_report_miscompares(const mt_analysis_t *a, const mt_detail_t *details, size_t n,
                           const mt_page_t *pages, size_t n_pages, uint64_t total, uint64_t mask);

/* "3,17" for the set bits of mask, into buf. */
const char *mt_bit_list(uint64_t mask, char *buf, size_t len);

#endif
