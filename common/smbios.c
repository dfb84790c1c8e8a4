/* SPDX-License-Identifier: Apache-2.0 */
/* SMBIOS type 17 and 20 decoding for naming the DIMM behind a physical address (memtest) where
 * the firmware's table can say it. Field offsets follow the SMBIOS Reference Specification
 * (DSP0134) sections 7.18 (Memory Device) and 7.20 (Memory Device Mapped Address); both
 * structures have grown over the versions, so every field is read only when the structure's
 * length includes it. */
#include "smbios.h"
#include "fileload.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMBIOS_HEADER 4
#define SMBIOS_END_OF_TABLE 127
#define SMBIOS_MAX_ENTRIES 65536 /* dimms and ranges each: far above any real machine */

/* Type 17 (Memory Device) offsets. */
#define T17_SIZE 0x0C
#define T17_LOCATOR 0x10
#define T17_BANK 0x11
#define T17_MANUFACTURER 0x17
#define T17_SERIAL 0x18
#define T17_PART 0x1A
#define T17_EXTENDED_SIZE 0x1C
#define T17_MIN_LENGTH 0x15 /* SMBIOS 2.1 */

/* Type 20 (Memory Device Mapped Address) offsets. */
#define T20_START 0x04
#define T20_END 0x08
#define T20_DEVICE 0x0C
#define T20_ROW 0x10
#define T20_POSITION 0x11
#define T20_DEPTH 0x12
#define T20_EXT_START 0x13
#define T20_EXT_END 0x1B
#define T20_MIN_LENGTH 0x13 /* SMBIOS 2.1 */
#define T20_EXT_LENGTH 0x23 /* SMBIOS 2.7: 64-bit byte addresses */

typedef struct {
    const uint8_t *p; /* the structure */
    uint8_t type, length;
    uint16_t handle;
    const uint8_t *strings; /* its string set */
    size_t strings_len;     /* bytes of the string set, without the final double NUL */
} structure_t;

static uint16_t s_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t s_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t s_u64(const uint8_t *p)
{
    return (uint64_t)s_u32(p) | (uint64_t)s_u32(p + 4) << 32;
}

/* String number n (1-based) of the structure, printable and cut to FB_SMBIOS_STR_MAX, trailing
 * blanks removed; "" for 0 or a number past the set (firmware does publish those). */
static char *s_string(const structure_t *st, unsigned n)
{
    const uint8_t *p = st->strings, *end = st->strings + st->strings_len;
    for (unsigned i = 1; n && i < n && p < end; i++)
        p += strnlen((const char *)p, (size_t)(end - p)) + 1;
    if (!n || p >= end)
        return xstrdup("");
    size_t len = strnlen((const char *)p, (size_t)(end - p));
    if (len > FB_SMBIOS_STR_MAX)
        len = FB_SMBIOS_STR_MAX;
    char *s = xmalloc(len + 1);
    for (size_t i = 0; i < len; i++)
        s[i] = p[i] >= 0x20 && p[i] < 0x7F ? (char)p[i] : '?';
    while (len && s[len - 1] == ' ')
        len--;
    s[len] = '\0';
    return s;
}

/* The structure at off: checks its header and finds its string set. Returns the offset of the
 * next structure, or 0 with err set. */
static size_t s_structure(const uint8_t *t, size_t len, size_t off, structure_t *st, char *err,
                          size_t errlen)
{
    if (len - off < SMBIOS_HEADER) {
        snprintf(err, errlen, "offset 0x%zx: %zu bytes left, too few for a structure header", off,
                 len - off);
        return 0;
    }
    st->p = t + off;
    st->type = t[off];
    st->length = t[off + 1];
    st->handle = s_u16(t + off + 2);
    if (st->length < SMBIOS_HEADER || st->length > len - off) {
        snprintf(err, errlen,
                 "offset 0x%zx: structure type %u length %u does not fit (header 4 bytes, %zu "
                 "bytes left)",
                 off, st->type, st->length, len - off);
        return 0;
    }
    /* The string set runs to the first double NUL after the formatted area. */
    size_t s = off + st->length, q = s;
    while (q + 1 < len && (t[q] || t[q + 1]))
        q++;
    if (q + 1 >= len) {
        snprintf(err, errlen,
                 "offset 0x%zx: structure type %u (handle 0x%04X) has no double-NUL end of its "
                 "strings before the end of the table",
                 off, st->type, st->handle);
        return 0;
    }
    st->strings = t + s;
    st->strings_len = q - s;
    return q + 2;
}

static uint64_t s_dimm_size_mb(const structure_t *st)
{
    if (st->length < T17_SIZE + 2)
        return UINT64_MAX;
    uint16_t size = s_u16(st->p + T17_SIZE);
    if (size == 0xFFFF)
        return UINT64_MAX;
    if (size == 0x7FFF && st->length >= T17_EXTENDED_SIZE + 4)
        return s_u32(st->p + T17_EXTENDED_SIZE) & 0x7FFFFFFFu;
    if (size & 0x8000) /* KiB granularity */
        return (uint64_t)(size & 0x7FFF) / 1024;
    return size;
}

static void s_add_dimm(fb_smbios_t *s, size_t *cap, const structure_t *st)
{
    if (st->length < T17_MIN_LENGTH || s->n_dimms >= SMBIOS_MAX_ENTRIES)
        return;
    if (s->n_dimms == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        s->dimms = xrealloc(s->dimms, *cap * sizeof *s->dimms);
    }
    fb_smbios_dimm_t *d = &s->dimms[s->n_dimms++];
    bool v23 = st->length > T17_PART;
    d->handle = st->handle;
    d->size_mb = s_dimm_size_mb(st);
    d->locator = s_string(st, st->p[T17_LOCATOR]);
    d->bank = s_string(st, st->p[T17_BANK]);
    d->manufacturer = s_string(st, v23 ? st->p[T17_MANUFACTURER] : 0);
    d->serial = s_string(st, v23 ? st->p[T17_SERIAL] : 0);
    d->part = s_string(st, v23 ? st->p[T17_PART] : 0);
}

static void s_add_range(fb_smbios_t *s, size_t *cap, const structure_t *st)
{
    if (st->length < T20_MIN_LENGTH || s->n_ranges >= SMBIOS_MAX_ENTRIES)
        return;
    uint32_t start_kb = s_u32(st->p + T20_START), end_kb = s_u32(st->p + T20_END);
    uint64_t start, end;
    if (start_kb == 0xFFFFFFFFu && st->length >= T20_EXT_LENGTH) {
        start = s_u64(st->p + T20_EXT_START);
        end = s_u64(st->p + T20_EXT_END);
    } else if (start_kb == 0xFFFFFFFFu) {
        return; /* "see the extended address" in a structure too short to hold one */
    } else {
        start = (uint64_t)start_kb * 1024;
        end = (uint64_t)end_kb * 1024 + 1023; /* the ending address is that of the last KiB */
    }
    if (end < start)
        return; /* an empty or inverted range covers nothing */
    if (s->n_ranges == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        s->ranges = xrealloc(s->ranges, *cap * sizeof *s->ranges);
    }
    s->ranges[s->n_ranges++] = (fb_smbios_range_t){
        .handle = st->handle,
        .device = s_u16(st->p + T20_DEVICE),
        .start = start,
        .end = end,
        .row = st->p[T20_ROW],
        .position = st->p[T20_POSITION],
        .depth = st->p[T20_DEPTH],
    };
}

int fb_smbios_parse(const uint8_t *table, size_t len, fb_smbios_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t dimm_cap = 0, range_cap = 0, off = 0;
    while (off < len) {
        structure_t st;
        size_t next = s_structure(table, len, off, &st, err, errlen);
        if (!next) {
            fb_smbios_clear(out);
            return -EINVAL;
        }
        if (st.type == SMBIOS_END_OF_TABLE)
            break;
        if (st.type == 17)
            s_add_dimm(out, &dimm_cap, &st);
        else if (st.type == 20)
            s_add_range(out, &range_cap, &st);
        off = next;
    }
    return 0;
}

int fb_smbios_read(const char *root, fb_smbios_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *path = xasprintf("%s/sys/firmware/dmi/tables/DMI", root ? root : "");
    char *text = NULL, *lerr = NULL;
    size_t len = 0;
    int rc = fb_load_file(path, FB_SMBIOS_TABLE_MAX, &text, &len, &lerr);
    if (rc == -ENOENT) {
        snprintf(err, errlen, "%s is absent: the firmware published no SMBIOS table", path);
    } else if (rc) {
        snprintf(err, errlen, "%s", lerr ? lerr : path);
    } else {
        char perr[200];
        rc = fb_smbios_parse((const uint8_t *)text, len, out, perr, sizeof perr);
        if (rc)
            snprintf(err, errlen, "%s: %s", path, perr);
    }
    free(lerr);
    free(text);
    free(path);
    return rc;
}

void fb_smbios_clear(fb_smbios_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_dimms; i++) {
        fb_smbios_dimm_t *d = &s->dimms[i];
        free(d->locator);
        free(d->bank);
        free(d->manufacturer);
        free(d->serial);
        free(d->part);
    }
    free(s->dimms);
    free(s->ranges);
    memset(s, 0, sizeof *s);
}

const fb_smbios_dimm_t *fb_smbios_dimm(const fb_smbios_t *s, uint16_t handle)
{
    for (size_t i = 0; i < s->n_dimms; i++)
        if (s->dimms[i].handle == handle)
            return &s->dimms[i];
    return NULL;
}

/* "'ChannelA-DIMM0'" or "handle 0x0038" for messages. */
static const char *s_device_name(const fb_smbios_t *s, uint16_t handle, char *buf, size_t len)
{
    const fb_smbios_dimm_t *d = fb_smbios_dimm(s, handle);
    if (d && *d->locator)
        snprintf(buf, len, "'%s'", d->locator);
    else
        snprintf(buf, len, "device handle 0x%04X", handle);
    return buf;
}

/* Why a range that alone covers the address still cannot name its DIMM; "" when it can. */
static void s_interleave_reason(const fb_smbios_t *s, const fb_smbios_range_t *r, char *why,
                                size_t len)
{
    char name[FB_SMBIOS_STR_MAX + 32];
    s_device_name(s, r->device, name, sizeof name);
    if (r->position == FB_SMBIOS_UNKNOWN || r->depth == FB_SMBIOS_UNKNOWN)
        snprintf(why, len,
                 "type 20 handle 0x%04X (%s) does not say whether it is interleaved (interleave "
                 "position and data depth unknown)",
                 r->handle, name);
    else if (r->position || r->depth)
        snprintf(why, len,
                 "interleaved: type 20 handle 0x%04X puts %s at interleave position %u of data "
                 "depth %u, and the table does not say which address bits choose the DIMM",
                 r->handle, name, r->position, r->depth);
    else
        why[0] = '\0';
}

const fb_smbios_dimm_t *fb_smbios_locate(const fb_smbios_t *s, uint64_t phys, char *why,
                                         size_t whylen)
{
    const fb_smbios_range_t *hit = NULL;
    for (size_t i = 0; i < s->n_ranges; i++) {
        const fb_smbios_range_t *r = &s->ranges[i];
        if (phys < r->start || phys > r->end)
            continue;
        if (hit) {
            char a[FB_SMBIOS_STR_MAX + 32], b[FB_SMBIOS_STR_MAX + 32];
            snprintf(why, whylen,
                     "the type 20 ranges of %s and %s both cover 0x%" PRIx64
                     ": interleaved, and the table cannot say which DIMM holds the address",
                     s_device_name(s, hit->device, a, sizeof a),
                     s_device_name(s, r->device, b, sizeof b), phys);
            return NULL;
        }
        hit = r;
    }
    if (!hit) {
        if (s->n_ranges == 0)
            snprintf(why, whylen,
                     "the SMBIOS table has no type 20 (memory device mapped address) entries: "
                     "the firmware does not map addresses to DIMMs");
        else
            snprintf(why, whylen, "no SMBIOS type 20 range covers 0x%" PRIx64, phys);
        return NULL;
    }
    s_interleave_reason(s, hit, why, whylen);
    if (*why)
        return NULL;
    const fb_smbios_dimm_t *d = fb_smbios_dimm(s, hit->device);
    if (!d) {
        snprintf(why, whylen,
                 "type 20 handle 0x%04X names device handle 0x%04X, which has no type 17 entry",
                 hit->handle, hit->device);
        return NULL;
    }
    if (d->size_mb == 0) {
        snprintf(why, whylen,
                 "type 20 handle 0x%04X maps the address to '%s', a slot the table lists as empty: "
                 "the table is wrong",
                 hit->handle, d->locator);
        return NULL;
    }
    return d;
}
