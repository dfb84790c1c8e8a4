/* SPDX-License-Identifier: Apache-2.0 */
/* Which DIMM holds a physical address, asked of every source the machine has, in order of trust:
 *   1. rasdaemon's database: corrected/uncorrected errors the memory controller reported in the
 *      same page while the task ran, with the DIMM label EDAC gave them (rasdb.h);
 *   2. the kernel's EDAC address decoder (skx_edac / i10nm_edac debugfs, edacdecode.h), which
 *      counts one corrected error against the DIMM it names: used only in mode auto;
 *   3. SMBIOS type 20 ranges, where the firmware says the range is not interleaved (smbios.h).
 * The first source that names one DIMM answers; when none does, the answer is "not decodable
 * here" with every source's reason. */
#ifndef FB_MEMTEST_DIMMLOC_H
#define FB_MEMTEST_DIMMLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    MT_DIMMLOC_OFF,     /* do not look */
    MT_DIMMLOC_PASSIVE, /* rasdaemon and SMBIOS only: nothing on the machine changes */
    MT_DIMMLOC_AUTO,    /* also the EDAC decoder (one counted corrected error per address) */
} mt_dimmloc_mode_t;

typedef struct {
    mt_dimmloc_mode_t mode;
    const char *root;      /* sysfs/debugfs/firmware root: "" for the live system */
    const char *kmsg_path; /* kernel log for the decoder's answer; NULL: /dev/kmsg */
    const char *ras_db;    /* rasdaemon database path */
    int64_t from, to;      /* the task's window, seconds since the epoch */
    unsigned page_shift;   /* the kernel's PAGE_SHIFT */
    unsigned decode_timeout_ms;
    bool decoder_silent; /* the decoder did not answer for an earlier address: do not ask */
} mt_dimmloc_cfg_t;

typedef struct {
    bool named;          /* one DIMM named */
    char label[160];     /* its label: EDAC's ("CPU_SrcID#0_MC#0_Chan#1_DIMM#0") or SMBIOS's
                            Device Locator ("ChannelB-DIMM0") */
    char source[48];     /* "rasdaemon", "skx_edac decoder", "i10nm_edac decoder", "SMBIOS" */
    char detail[400];    /* what the source said about it */
    char why[1200];      /* not named: "not decodable here: " and each source's reason */
    bool used_decoder;   /* the EDAC decoder ran (its corrected-error count went up by one) */
    bool decoder_silent; /* it ran and logged no answer within the timeout */
} mt_dimmloc_t;

/* Names the DIMM of phys (0: unknown). */
void mt_dimmloc_locate(const mt_dimmloc_cfg_t *cfg, uint64_t phys, mt_dimmloc_t *out);

/* "auto", "passive", "off" into *out; -EINVAL otherwise. */
int mt_dimmloc_parse_mode(const char *text, mt_dimmloc_mode_t *out);

#endif
