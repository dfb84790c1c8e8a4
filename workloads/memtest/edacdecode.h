/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel's own physical-address-to-DIMM decoder, where it exposes one: skx_edac and
 * i10nm_edac (Intel Xeon Skylake through Sapphire Rapids), built with CONFIG_EDAC_DEBUG, create
 * /sys/kernel/debug/edac/skx_test/addr or .../i10nm_test/addr (drivers/edac/skx_common.c,
 * skx_setup_debug). Writing a physical address there runs the driver's decode as if the memory
 * controller had reported a corrected error at that address: the kernel logs
 *
 *   EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0
 *   page:0x30aa905 offset:0xa80 grain:32 syndrome:0x0 - err_code:0x0000:0x0090
 *   ProcessorSocketId:0x0 MemoryControllerId:0x0 PhysicalRankId:0x1 Row:0x442a Column:0x440
 *   Bank:0x1 BankGroup:0x1)
 *
 * (with firmware (ADXL) decoding: SystemAddress, ChannelId, DimmSlotId, ChipSelect... instead),
 * which mt_edac_decode reads back from the kernel log. The cost: the decode is counted as one
 * corrected error on that DIMM (EDAC's dimm_ce_count goes up, and rasdaemon records it), so the
 * caller takes its EDAC snapshots and rasdaemon lookups first and says so in its log. Other EDAC
 * drivers (amd64_edac, ghes_edac, igen6...) have no such interface. */
#ifndef FB_MEMTEST_EDACDECODE_H
#define FB_MEMTEST_EDACDECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_EDAC_UNKNOWN (-1)

/* What one EDAC error line says. Fields the line does not carry are MT_EDAC_UNKNOWN. */
typedef struct {
    int mc;          /* EDAC MC number of the "EDAC MCn:" prefix */
    bool corrected;  /* CE (else UE) */
    uint64_t count;  /* errors the line reports */
    char label[128]; /* "CPU_SrcID#0_MC#0_Chan#1_DIMM#0"; "a or b" when the driver could not
                        tell two DIMMs apart; "any memory" when it knew none */
    bool has_page;
    uint64_t page, offset;  /* page frame number and offset in it */
    int64_t system_address; /* SystemAddress (firmware decode) */
    int64_t socket, imc;    /* ProcessorSocketId, MemoryControllerId */
    int64_t channel, dimm;  /* ChannelId / "channel:" layer, DimmSlotId / "slot:" layer */
    int64_t rank, row, column, bank, bank_group, chip_select;
} mt_edac_decoded_t;

/* Parses the text of one kernel log record of the form above (the "EDAC MCn: " prefix first,
 * leading blanks allowed). Returns 0, or -EINVAL when it is not an EDAC error line. */
int mt_edac_parse_line(const char *text, mt_edac_decoded_t *out);

/* The physical address the line reports (page << page_shift | offset, or SystemAddress), or
 * false when it carries none. */
bool mt_edac_line_address(const mt_edac_decoded_t *d, unsigned page_shift, uint64_t *out);

/* True when the label names exactly one DIMM (not "any memory", not "a or b", not empty). */
bool mt_edac_label_is_one_dimm(const char *label);

/* "socket 0, memory controller 0, channel 1, DIMM 0, rank 1, row 0x442a, column 0x440, bank 1,
 * bank group 1": the parts the line carries, into buf. */
const char *mt_edac_describe(const mt_edac_decoded_t *d, char *buf, size_t len);

/* Finds the decoder under ROOT/sys/kernel/debug/edac. Returns 0 with a heap path in *addr_path
 * and the driver ("skx_edac", "i10nm_edac") in driver; otherwise a negative errno and why (one
 * line: debugfs not mounted, not readable, no EDAC debugfs, or an EDAC driver without the
 * interface, named from ROOT/sys/devices/system/edac/mc/mc0/mc_name). */
int mt_edac_decoder_find(const char *root, char **addr_path, char *driver, size_t driver_len,
                         char *why, size_t why_len);

/* Writes phys to addr_path and waits up to timeout_ms for the kernel's EDAC line reporting that
 * very address in the kernel log (kmsg_path; NULL for /dev/kmsg), opened at its end before the
 * write so that only the answer can match. Returns 0 with the decode in out, or a negative errno
 * and why: -ETIMEDOUT when the driver logged nothing for the address (outside the ranges it
 * decodes, or CE logging off), -EACCES/-EPERM when the log or the decoder is closed to us. *wrote
 * says whether the address reached the decoder (and so was counted as a corrected error). */
int mt_edac_decode(const char *addr_path, const char *kmsg_path, uint64_t phys, unsigned page_shift,
                   unsigned timeout_ms, mt_edac_decoded_t *out, bool *wrote, char *why,
                   size_t why_len);

#endif
