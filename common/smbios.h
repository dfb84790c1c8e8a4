/* SPDX-License-Identifier: Apache-2.0 */
/* The memory devices of the SMBIOS (DMI) table: type 17 (Memory Device: the slot's Device
 * Locator and Bank Locator as printed on the board, size, manufacturer, serial and part number)
 * and type 20 (Memory Device Mapped Address: a physical address range served by one device, with
 * its Interleave Position and Interleaved Data Depth). Read from ROOT/sys/firmware/dmi/tables/DMI,
 * the table as the firmware published it (what `dmidecode --from-dump` reads after its header).
 *
 * Type 20 names the DIMM behind an address only where the layout is not interleaved: with
 * interleave, consecutive cache lines go to different DIMMs by address bits the table does not
 * describe, and every interleaved device's range covers the same addresses. fb_smbios_locate
 * therefore answers only from a range that says it is not interleaved (position 0, depth 0) and
 * that no other range overlaps; it refuses, saying why, otherwise. Most servers publish no type 20
 * at all (it is optional since SMBIOS 2.5); that is a refusal too.
 *
 * The table is untrusted input: lengths, string references and handles are checked, strings are
 * cut to FB_SMBIOS_STR_MAX and made printable, and a malformed table is an error that says at
 * which byte offset and what was wrong. */
#ifndef FB_SMBIOS_H
#define FB_SMBIOS_H

#include <stddef.h>
#include <stdint.h>

#define FB_SMBIOS_STR_MAX 64            /* longest string kept, in bytes */
#define FB_SMBIOS_TABLE_MAX (16u << 20) /* largest table read (SMBIOS 3 allows 4 GiB) */

typedef struct {
    uint16_t handle;
    char *locator; /* Device Locator ("DIMM_A1", "P1-DIMMA1"); "" when the table has none */
    char *bank;    /* Bank Locator ("P0_Node0_Channel0_Dimm0", "BANK 2"); "" when none */
    char *manufacturer, *serial, *part;
    uint64_t size_mb; /* 0: no module installed; UINT64_MAX: unknown */
} fb_smbios_dimm_t;

#define FB_SMBIOS_UNKNOWN 0xFF /* interleave position / depth / row the firmware did not know */

typedef struct {
    uint16_t handle;
    uint16_t device;  /* the type 17 handle this range belongs to */
    uint64_t start;   /* first byte */
    uint64_t end;     /* last byte (inclusive) */
    uint8_t row;      /* Partition Row Position */
    uint8_t position; /* Interleave Position: 0 not interleaved, 1.. position, 0xFF unknown */
    uint8_t depth;    /* Interleaved Data Depth: 0 not interleaved, 0xFF unknown */
} fb_smbios_range_t;

typedef struct {
    fb_smbios_dimm_t *dimms;
    size_t n_dimms;
    fb_smbios_range_t *ranges;
    size_t n_ranges;
} fb_smbios_t;

/* Parses a DMI table (structures back to back, each a formatted area and a string set, up to
 * type 127 or the end of the buffer). Returns 0, or -EINVAL with a one-line reason in err
 * ("offset 0x1a4: structure type 17 length 3 is below the 4-byte header"). On error out is
 * empty. Structures other than 17 and 20 are skipped. */
int fb_smbios_parse(const uint8_t *table, size_t len, fb_smbios_t *out, char *err, size_t errlen);

/* Reads and parses ROOT/sys/firmware/dmi/tables/DMI (root "" for the live system). Returns 0,
 * -ENOENT when there is no table, -EACCES when it is not readable (root only), or another
 * negative errno; err says which file and why. */
int fb_smbios_read(const char *root, fb_smbios_t *out, char *err, size_t errlen);

void fb_smbios_clear(fb_smbios_t *s);

/* The type 17 entry with this handle, or NULL. */
const fb_smbios_dimm_t *fb_smbios_dimm(const fb_smbios_t *s, uint16_t handle);

/* The DIMM serving physical address phys, where the table can say: one type 20 range covers it,
 * that range is marked not interleaved, no other range overlaps the address, and its device is a
 * type 17 entry. Returns that DIMM, or NULL with the reason in why ("no type 20 range covers
 * 0x80000000", "interleaved: type 20 handle 0x003B puts ChannelA-DIMM0 at position 1 of depth
 * 2", "the type 20 ranges of 'DIMM 0' and 'DIMM 1' both cover 0x1000: interleaved"). */
const fb_smbios_dimm_t *fb_smbios_locate(const fb_smbios_t *s, uint64_t phys, char *why,
                                         size_t whylen);

#endif
