/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes the decoders memtest uses to name the DIMM of a miscompare, each on what the machine
 * hands it: the first byte selects
 *   0  fb_smbios_parse (common/smbios.c) on the rest as a DMI table, then fb_smbios_locate at
 *      addresses taken from the table's own ranges and from the input;
 *   1  mt_edac_parse_line (workloads/memtest/edacdecode.c) on the rest as a kernel log text;
 *   2  mt_ras_event_from_row (workloads/memtest/rasdb.c) on the rest as the text columns of a
 *      rasdaemon mc_event row, "timestamp\terr_type\tlabel".
 * Checked besides crashes, leaks and sanitizer reports: strings come out printable and within
 * their bounds, a DIMM is named only from a range that alone covers the address and says it is
 * not interleaved, a parsed line's address is the one its page and offset give, and a parsed
 * timestamp prints back to the same time. */
#include "fuzz.h"

#include "common/smbios.h"
#include "memtest/edacdecode.h"
#include "memtest/rasdb.h"

#include <inttypes.h>
#include <time.h>

FZ_INITIALIZE()

static void s_check_string(const char *s, size_t max)
{
    FZ_CHECK(s && strlen(s) <= max);
    for (const char *p = s; *p; p++)
        FZ_CHECK((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
}

/* The one range that may have named the DIMM at phys. */
static void s_check_locate(const fb_smbios_t *s, uint64_t phys)
{
    char why[400];
    const fb_smbios_dimm_t *d = fb_smbios_locate(s, phys, why, sizeof why);
    if (!d) {
        FZ_CHECK(why[0] != '\0');
        return;
    }
    size_t covering = 0;
    const fb_smbios_range_t *hit = NULL;
    for (size_t i = 0; i < s->n_ranges; i++)
        if (phys >= s->ranges[i].start && phys <= s->ranges[i].end) {
            covering++;
            hit = &s->ranges[i];
        }
    FZ_CHECK(covering == 1 && hit->position == 0 && hit->depth == 0);
    FZ_CHECK(hit->device == d->handle && d->size_mb != 0);
}

static void s_smbios(const uint8_t *data, size_t size)
{
    fb_smbios_t s;
    char err[300];
    if (fb_smbios_parse(data, size, &s, err, sizeof err)) {
        FZ_CHECK(err[0] != '\0' && s.n_dimms == 0 && s.n_ranges == 0);
        return;
    }
    for (size_t i = 0; i < s.n_dimms; i++) {
        const fb_smbios_dimm_t *d = &s.dimms[i];
        s_check_string(d->locator, FB_SMBIOS_STR_MAX);
        s_check_string(d->bank, FB_SMBIOS_STR_MAX);
        s_check_string(d->manufacturer, FB_SMBIOS_STR_MAX);
        s_check_string(d->serial, FB_SMBIOS_STR_MAX);
        s_check_string(d->part, FB_SMBIOS_STR_MAX);
    }
    for (size_t i = 0; i < s.n_ranges; i++) {
        FZ_CHECK(s.ranges[i].start <= s.ranges[i].end);
        s_check_locate(&s, s.ranges[i].start);
        s_check_locate(&s, s.ranges[i].end);
    }
    uint64_t probe = 0;
    memcpy(&probe, data, size < sizeof probe ? size : sizeof probe);
    s_check_locate(&s, probe);
    s_check_locate(&s, 0x140000000ULL);
    fb_smbios_clear(&s);
}

static void s_edac_line(const char *text)
{
    mt_edac_decoded_t d;
    if (mt_edac_parse_line(text, &d))
        return;
    s_check_string(d.label, sizeof d.label - 1);
    FZ_CHECK(d.mc >= 0 && d.mc <= 4095);
    char parts[300];
    FZ_CHECK(strlen(mt_edac_describe(&d, parts, sizeof parts)) < sizeof parts);
    uint64_t addr;
    if (d.has_page && d.page < (UINT64_C(1) << 51)) {
        FZ_CHECK(mt_edac_line_address(&d, 12, &addr));
        FZ_CHECK(addr == (d.page << 12 | d.offset));
    }
    (void)mt_edac_label_is_one_dimm(d.label);
}

static void s_ras_row(char *text)
{
    char *fields[3] = {text, NULL, NULL};
    for (int i = 1; i < 3 && fields[i - 1]; i++) {
        char *tab = strchr(fields[i - 1], '\t');
        if (tab) {
            *tab = '\0';
            fields[i] = tab + 1;
        }
    }
    mt_ras_event_t ev;
    if (mt_ras_event_from_row(fields[0], 1, fields[1], fields[2], 0x1000, &ev))
        return;
    s_check_string(ev.label, sizeof ev.label - 1);
    FZ_CHECK(!strcmp(ev.type, "Corrected") || !strcmp(ev.type, "Uncorrected") ||
             !strcmp(ev.type, "Deferred") || !strcmp(ev.type, "Fatal") || !strcmp(ev.type, "Info"));
    /* The time prints back (in UTC) to a timestamp that parses to the same second. */
    time_t t = (time_t)ev.when;
    struct tm tm;
    char again[40];
    FZ_CHECK(gmtime_r(&t, &tm) != NULL);
    FZ_CHECK(strftime(again, sizeof again, "%Y-%m-%d %H:%M:%S +0000", &tm) > 0);
    int64_t back = 0;
    if (tm.tm_year + 1900 >= 1970 && tm.tm_year + 1900 <= 9999) {
        FZ_CHECK(mt_ras_parse_time(again, &back) == 0);
        FZ_CHECK(back == ev.when);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t selector = data[0] % 3;
    data++;
    size--;
    if (selector == 0) {
        uint8_t *copy = xmalloc(size ? size : 1); /* exactly the input: overreads are caught */
        memcpy(copy, data, size);
        s_smbios(copy, size);
        free(copy);
        return 0;
    }
    char *text = fz_cstr(data, size);
    if (selector == 1)
        s_edac_line(text);
    else
        s_ras_row(text);
    free(text);
    return 0;
}
