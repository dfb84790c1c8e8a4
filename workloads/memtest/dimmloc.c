/* SPDX-License-Identifier: Apache-2.0 */
/* The chain of dimmloc.h: each source either names one DIMM, with what it said, or gives the
 * reason it cannot, and the reasons are kept for the "not decodable here" answer. */
#include "dimmloc.h"
#include "edacdecode.h"
#include "rasdb.h"
#include "common/smbios.h"
#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mt_dimmloc_parse_mode(const char *text, mt_dimmloc_mode_t *out)
{
    if (!strcmp(text, "auto"))
        *out = MT_DIMMLOC_AUTO;
    else if (!strcmp(text, "passive"))
        *out = MT_DIMMLOC_PASSIVE;
    else if (!strcmp(text, "off"))
        *out = MT_DIMMLOC_OFF;
    else
        return -EINVAL;
    return 0;
}

/* Appends "; source: reason" to the answer's reasons. */
static void s_reason(mt_dimmloc_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_reason(mt_dimmloc_t *out, const char *fmt, ...)
{
    size_t used = strlen(out->why);
    if (used + 3 >= sizeof out->why)
        return;
    if (used)
        used += (size_t)snprintf(out->why + used, sizeof out->why - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why + used, sizeof out->why - used, fmt, ap);
    va_end(ap);
}

static void s_name(mt_dimmloc_t *out, const char *label, const char *source)
{
    out->named = true;
    snprintf(out->label, sizeof out->label, "%s", label);
    snprintf(out->source, sizeof out->source, "%s", source);
}

/* rasdaemon: the errors recorded in this page during the task. Named when they all carry one
 * and the same DIMM label. */
static bool s_from_rasdaemon(const mt_dimmloc_cfg_t *cfg, uint64_t phys, mt_dimmloc_t *out)
{
    uint64_t page = (uint64_t)1 << cfg->page_shift;
    uint64_t first = phys & ~(page - 1), last = first + page - 1;
    mt_ras_event_t ev[16];
    char err[300];
    int n = mt_ras_lookup(cfg->ras_db, first, last, cfg->from, cfg->to, ev, 16, err, sizeof err);
    if (n < 0) {
        s_reason(out, "rasdaemon: %s", err);
        return false;
    }
    if (n == 0) {
        s_reason(out,
                 "rasdaemon: no corrected or uncorrected error recorded in page 0x%" PRIx64
                 " during the task",
                 first);
        return false;
    }
    uint64_t count = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(ev[i].label, ev[0].label) || !mt_edac_label_is_one_dimm(ev[i].label)) {
            s_reason(out,
                     "rasdaemon: the %d errors recorded in page 0x%" PRIx64 " name '%s' and "
                     "'%s', not one DIMM",
                     n, first, ev[0].label, ev[i].label);
            return false;
        }
        count += ev[i].count;
    }
    s_name(out, ev[0].label, "rasdaemon");
    snprintf(out->detail, sizeof out->detail,
             "rasdaemon recorded %" PRIu64 " %s error%s in page 0x%" PRIx64
             " during the task (first at 0x%" PRIx64 ")",
             count, ev[0].type, count == 1 ? "" : "s", first, ev[0].address);
    return true;
}

static bool s_from_decoder(const mt_dimmloc_cfg_t *cfg, uint64_t phys, mt_dimmloc_t *out)
{
    char *addr_path = NULL, driver[32], why[300];
    if (mt_edac_decoder_find(cfg->root, &addr_path, driver, sizeof driver, why, sizeof why)) {
        s_reason(out, "EDAC address decoder: %s", why);
        return false;
    }
    mt_edac_decoded_t d;
    int rc = mt_edac_decode(addr_path, cfg->kmsg_path, phys, cfg->page_shift,
                            cfg->decode_timeout_ms, &d, &out->used_decoder, why, sizeof why);
    free(addr_path);
    out->decoder_silent = rc == -ETIMEDOUT;
    if (rc) {
        s_reason(out, "%s decoder: %s", driver, why);
        return false;
    }
    if (!mt_edac_label_is_one_dimm(d.label)) {
        s_reason(out, "%s decoder: decoded 0x%" PRIx64 " to '%s', not one DIMM", driver, phys,
                 d.label);
        return false;
    }
    char source[48], parts[300];
    snprintf(source, sizeof source, "%s decoder", driver);
    s_name(out, d.label, source);
    snprintf(out->detail, sizeof out->detail, "%s decoded 0x%" PRIx64 " to EDAC MC%d: %s", driver,
             phys, d.mc, mt_edac_describe(&d, parts, sizeof parts));
    return true;
}

static bool s_from_smbios(const mt_dimmloc_cfg_t *cfg, uint64_t phys, mt_dimmloc_t *out)
{
    fb_smbios_t s;
    char why[400];
    if (fb_smbios_read(cfg->root, &s, why, sizeof why)) {
        s_reason(out, "SMBIOS: %s", why);
        return false;
    }
    const fb_smbios_dimm_t *d = fb_smbios_locate(&s, phys, why, sizeof why);
    if (d) {
        s_name(out, d->locator, "SMBIOS");
        snprintf(out->detail, sizeof out->detail,
                 "SMBIOS type 20 maps 0x%" PRIx64 " to %s (bank '%s', %s %s, serial %s), not "
                 "interleaved",
                 phys, d->locator, d->bank, d->manufacturer, d->part, d->serial);
    } else {
        s_reason(out, "SMBIOS: %s", why);
    }
    fb_smbios_clear(&s);
    return d != NULL;
}

void mt_dimmloc_locate(const mt_dimmloc_cfg_t *cfg, uint64_t phys, mt_dimmloc_t *out)
{
    memset(out, 0, sizeof *out);
    if (cfg->mode == MT_DIMMLOC_OFF) {
        snprintf(out->why, sizeof out->why,
                 "not decodable here: DIMM lookup is off (dimm_decode=off)");
        return;
    }
    if (!phys) {
        snprintf(out->why, sizeof out->why,
                 "not decodable here: the physical address is unknown (reading "
                 "/proc/self/pagemap needs CAP_SYS_ADMIN)");
        return;
    }
    if (s_from_rasdaemon(cfg, phys, out))
        return;
    if (cfg->mode == MT_DIMMLOC_AUTO && !cfg->decoder_silent && s_from_decoder(cfg, phys, out))
        return;
    if (cfg->mode == MT_DIMMLOC_PASSIVE)
        s_reason(out, "EDAC address decoder: not asked (dimm_decode=passive)");
    else if (cfg->decoder_silent)
        s_reason(out, "EDAC address decoder: not asked (it logged no answer for an earlier page)");
    if (s_from_smbios(cfg, phys, out))
        return;
    static const char prefix[] = "not decodable here: ";
    size_t len = strlen(out->why), room = sizeof out->why - sizeof prefix;
    if (len > room)
        len = room;
    memmove(out->why + sizeof prefix - 1, out->why, len);
    memcpy(out->why, prefix, sizeof prefix - 1);
    out->why[sizeof prefix - 1 + len] = '\0';
}
