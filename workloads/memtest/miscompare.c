/* SPDX-License-Identifier: Apache-2.0 */
/* From itemised miscompares to evidence (miscompare.h). The retest runs before the DIMM lookup:
 * the EDAC decoder counts a corrected error against the DIMM it names, and nothing the retest
 * sees should be mistaken for that. */
#include "miscompare.h"
#include "common/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t mt_phys_addr(int fd, const void *vaddr)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t entry = 0;
    if (fd < 0 || page <= 0)
        return 0;
    off_t off = (off_t)((uintptr_t)vaddr / (uintptr_t)page * sizeof entry);
    if (pread(fd, &entry, sizeof entry, off) != (ssize_t)sizeof entry || !(entry >> 63))
        return 0;
    uint64_t pfn = entry & ((1ULL << 55) - 1);
    return pfn ? pfn * (uint64_t)page + (uintptr_t)vaddr % (uintptr_t)page : 0;
}

const char *mt_bit_list(uint64_t mask, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned b = 0; b < 64 && used + 4 < len; b++)
        if (mask >> b & 1)
            used += (size_t)snprintf(buf + used, len - used, "%s%u", used ? "," : "", b);
    return buf;
}

static uint64_t *s_page_of(const mt_analysis_t *a, const uint64_t *vaddr)
{
    return (uint64_t *)((uintptr_t)vaddr & ~(uintptr_t)(a->page_size - 1));
}

/* The page's retest, unless it is off or the page no longer maps the same physical page. */
static void s_retest(const mt_analysis_t *a, const mt_detail_t *d, mt_page_t *p)
{
    if (!a->retests) {
        p->retest_state = MT_PAGE_NOT_RETESTED;
        return;
    }
    /* A page swapped out (unlocked memory) reads as PFN 0: not the page that failed either. */
    uint64_t now = mt_phys_addr(a->pagemap_fd, p->page);
    if (p->phys_page && now != p->phys_page) {
        p->retest_state = MT_PAGE_MOVED;
        p->moved_to = now;
        return;
    }
    size_t n_words = a->page_size / sizeof(uint64_t);
    size_t word = (size_t)(d->vaddr - p->page);
    mt_retest_page(p->page, n_words, word, d->expected, d->pattern, a->seed, a->retests, a->hook,
                   a->hook_user, &p->retest);
    p->retest_state = MT_PAGE_RETESTED;
    now = mt_phys_addr(a->pagemap_fd, p->page);
    if (p->phys_page && now != p->phys_page) { /* moved while retested: the counts are mixed */
        p->retest_state = MT_PAGE_MOVED;
        p->moved_to = now;
    }
}

size_t mt_analyse_pages(const mt_analysis_t *a, const mt_detail_t *details, size_t n,
                        mt_page_t *pages)
{
    size_t n_pages = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t *page = s_page_of(a, details[i].vaddr);
        size_t k = 0;
        while (k < n_pages && pages[k].page != page)
            k++;
        if (k == n_pages) {
            memset(&pages[k], 0, sizeof pages[k]);
            pages[k].page = page;
            pages[k].first = i;
            pages[k].phys_page = details[i].phys & ~(uint64_t)(a->page_size - 1);
            n_pages++;
        }
        pages[k].n_details++;
    }
    for (size_t k = 0; k < n_pages; k++)
        s_retest(a, &details[pages[k].first], &pages[k]);
    mt_dimmloc_cfg_t loc = a->loc;
    for (size_t k = 0; k < n_pages; k++) {
        mt_page_t *p = &pages[k];
        mt_dimmloc_locate(&loc, details[p->first].phys, &p->loc);
        loc.decoder_silent |= p->loc.decoder_silent; /* one timeout per run, not one per page */
        if (p->loc.used_decoder)
            worker_log(a->ctx,
                       "memtest: asked the kernel's EDAC address decoder for 0x%" PRIx64
                       "; it counts that as one corrected error on the DIMM it names (%s)",
                       details[p->first].phys, p->loc.named ? p->loc.label : "none named");
    }
    return n_pages;
}

/* "stuck (failed again in 8 of 8 retests)", "transient (...)", or why it was not retested. */
static const char *s_verdict(const mt_page_t *p, char *buf, size_t len)
{
    if (p->retest_state == MT_PAGE_NOT_RETESTED)
        snprintf(buf, len, "not retested (retests=0)");
    else if (p->retest_state == MT_PAGE_MOVED && p->moved_to)
        snprintf(buf, len, "not judged: the page moved to phys 0x%" PRIx64 " since", p->moved_to);
    else if (p->retest_state == MT_PAGE_MOVED)
        snprintf(buf, len, "not judged: the page was swapped out since (lock=false?)");
    else
        snprintf(buf, len, "%s (failed again in %u of %u retests)",
                 mt_retest_stuck(&p->retest) ? "stuck" : "transient", p->retest.word_rounds,
                 p->retest.rounds);
    return buf;
}

static const mt_page_t *s_page_with(const mt_analysis_t *a, const mt_page_t *pages, size_t n_pages,
                                    const uint64_t *vaddr)
{
    for (size_t k = 0; k < n_pages; k++)
        if (pages[k].page == s_page_of(a, vaddr))
            return &pages[k];
    return NULL;
}

static void s_word_finding(const mt_analysis_t *a, const mt_detail_t *d, const mt_page_t *p)
{
    uint64_t x = d->expected ^ d->actual;
    char phys[48], bits[200], verdict[96];
    if (d->phys)
        snprintf(phys, sizeof phys, "phys 0x%" PRIx64, d->phys);
    else
        snprintf(phys, sizeof phys, "phys unknown (pagemap needs root)");
    fb_result_add_findingf(
        worker_result(a->ctx), a->host, "memory",
        "miscompare in %s (pass %u) at virt %p, %s, NUMA node %d: expected 0x%016" PRIx64
        ", actual 0x%016" PRIx64 ", xor 0x%016" PRIx64 " (%d bit%s: %s); %s; DIMM %s",
        mt_pattern_name(d->pattern), d->pass + 1, (const void *)d->vaddr, phys, d->numa_node,
        d->expected, d->actual, x, __builtin_popcountll(x), __builtin_popcountll(x) == 1 ? "" : "s",
        mt_bit_list(x, bits, sizeof bits), s_verdict(p, verdict, sizeof verdict),
        p->loc.named ? p->loc.label : "not decodable here");
}

/* The retest's evidence: "24 words read back wrong over 8 rounds, bits 42 at the failing word,
 * read back from DRAM". */
static const char *s_retest_evidence(const mt_page_t *p, char *buf, size_t len)
{
    char bits[200];
    if (p->retest_state != MT_PAGE_RETESTED) {
        buf[0] = '\0';
        return buf;
    }
    snprintf(buf, len,
             "; %" PRIu64 " word%s of the page read back wrong over %u rounds (%u with a failure)"
             "%s%s%s",
             p->retest.miscompares, p->retest.miscompares == 1 ? "" : "s", p->retest.rounds,
             p->retest.failed_rounds, p->retest.word_xor ? ", bits " : "",
             p->retest.word_xor ? mt_bit_list(p->retest.word_xor, bits, sizeof bits) : "",
             p->retest.flushed ? "" : " (read back through the CPU caches: no flush on this CPU)");
    return buf;
}

static void s_page_findings(const mt_analysis_t *a, const mt_page_t *p)
{
    char verdict[96], evidence[400], where[64];
    if (p->phys_page)
        snprintf(where, sizeof where, "phys 0x%" PRIx64, p->phys_page);
    else
        snprintf(where, sizeof where, "virt %p", (void *)p->page);
    s_verdict(p, verdict, sizeof verdict);
    s_retest_evidence(p, evidence, sizeof evidence);
    if (p->loc.named) {
        fb_result_add_findingf(worker_result(a->ctx), a->host, "memory",
                               "page %s: %u miscompare%s itemised, %s%s; DIMM %s: %s", where,
                               p->n_details, p->n_details == 1 ? "" : "s", verdict, evidence,
                               p->loc.label, p->loc.detail);
        char *part = xasprintf("%s/%s", a->host, p->loc.label);
        fb_result_add_findingf(worker_result(a->ctx), part, "dimm",
                               "memtest miscompares in page %s on %s, %s; named by %s: %s", where,
                               a->host, verdict, p->loc.source, p->loc.detail);
        free(part);
    } else {
        fb_result_add_findingf(worker_result(a->ctx), a->host, "memory",
                               "page %s: %u miscompare%s itemised, %s%s; DIMM %s", where,
                               p->n_details, p->n_details == 1 ? "" : "s", verdict, evidence,
                               p->loc.why);
    }
}

void mt_report_miscompares(const mt_analysis_t *a, const mt_detail_t *details, size_t n,
                           const mt_page_t *pages, size_t n_pages, uint64_t total, uint64_t mask)
{
    fb_result_t *res = worker_result(a->ctx);
    for (size_t i = 0; i < n; i++)
        s_word_finding(a, &details[i], s_page_with(a, pages, n_pages, details[i].vaddr));
    if (total > n) {
        char bits[200];
        fb_result_add_findingf(res, a->host, "memory",
                               "%" PRIu64 " more miscompares not itemised; bits that differed in "
                               "any miscompare: %s",
                               total - n, mt_bit_list(mask, bits, sizeof bits));
    }
    unsigned stuck = 0, transient = 0, named = 0;
    for (size_t k = 0; k < n_pages; k++) {
        s_page_findings(a, &pages[k]);
        if (pages[k].retest_state == MT_PAGE_RETESTED)
            mt_retest_stuck(&pages[k].retest) ? stuck++ : transient++;
        named += pages[k].loc.named;
    }
    fb_result_set_metric(res, "miscompare_pages", (double)n_pages, "");
    fb_result_set_metric(res, "stuck_pages", stuck, "");
    fb_result_set_metric(res, "transient_pages", transient, "");
    fb_result_set_metric(res, "dimms_named", named, "");
}
