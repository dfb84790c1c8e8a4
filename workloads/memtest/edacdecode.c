/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding a physical address to a DIMM through the skx/i10nm EDAC drivers' debugfs test
 * interface, and parsing the EDAC error lines the kernel logs (edac_mc.c edac_ce_error and
 * edac_ue_error; the details after " - " from skx_common.c skx_mce_output_error). The log line is
 * untrusted text: every number is range-checked, the label is cut to its buffer, and anything
 * that is not the expected shape is "not an EDAC line", never a guess. */
#include "edacdecode.h"
#include "common/fileload.h"
#include "common/kmsg.h"
#include "common/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_VALUE_MAX (UINT64_C(1) << 62) /* larger numbers in a line are not believed */

/* An unsigned number at p (0x hex or decimal), up to S_VALUE_MAX; end past it. */
static bool s_number(const char *p, uint64_t *out, const char **end)
{
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    if (!(base == 16 ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)))
        return false;
    uint64_t v = 0;
    while (base == 16 ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)) {
        unsigned digit = isdigit((unsigned char)*p)
                             ? (unsigned)(*p - '0')
                             : (unsigned)(tolower((unsigned char)*p) - 'a' + 10);
        if (v > (S_VALUE_MAX - digit) / (unsigned)base)
            return false;
        v = v * (unsigned)base + digit;
        p++;
    }
    *out = v;
    *end = p;
    return true;
}

typedef struct {
    const char *key;
    size_t field; /* offsetof into mt_edac_decoded_t of an int64_t */
} key_field_t;

/* The "Key:value" details of the skx/i10nm drivers and EDAC's location layers. Later keys of the
 * same field (ChannelId after "channel:") win: the firmware decode is the more specific. */
static const key_field_t s_keys[] = {
    {"channel", offsetof(mt_edac_decoded_t, channel)},
    {"slot", offsetof(mt_edac_decoded_t, dimm)},
    {"SystemAddress", offsetof(mt_edac_decoded_t, system_address)},
    {"ProcessorSocketId", offsetof(mt_edac_decoded_t, socket)},
    {"MemoryControllerId", offsetof(mt_edac_decoded_t, imc)},
    {"ChannelId", offsetof(mt_edac_decoded_t, channel)},
    {"DimmSlotId", offsetof(mt_edac_decoded_t, dimm)},
    {"PhysicalRankId", offsetof(mt_edac_decoded_t, rank)},
    {"Row", offsetof(mt_edac_decoded_t, row)},
    {"Column", offsetof(mt_edac_decoded_t, column)},
    {"Bank", offsetof(mt_edac_decoded_t, bank)},
    {"BankGroup", offsetof(mt_edac_decoded_t, bank_group)},
    {"ChipSelect", offsetof(mt_edac_decoded_t, chip_select)},
};

static void s_reset(mt_edac_decoded_t *d)
{
    memset(d, 0, sizeof *d);
    d->mc = MT_EDAC_UNKNOWN;
    int64_t *fields[] = {&d->system_address, &d->socket,     &d->imc,        &d->channel,
                         &d->dimm,           &d->rank,       &d->row,        &d->column,
                         &d->bank,           &d->bank_group, &d->chip_select};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        *fields[i] = MT_EDAC_UNKNOWN;
}

/* One "key:value" token of the parenthesised part (page:, offset: and the table above). */
static void s_token(mt_edac_decoded_t *d, const char *tok, size_t len, bool *page, bool *off)
{
    const char *colon = memchr(tok, ':', len);
    if (!colon)
        return;
    size_t klen = (size_t)(colon - tok);
    uint64_t v;
    const char *end;
    if (!s_number(colon + 1, &v, &end) || end != tok + len)
        return;
    if (klen == 4 && !memcmp(tok, "page", 4)) {
        d->page = v;
        *page = true;
    } else if (klen == 6 && !memcmp(tok, "offset", 6)) {
        d->offset = v;
        *off = true;
    }
    for (size_t i = 0; i < sizeof s_keys / sizeof *s_keys; i++)
        if (strlen(s_keys[i].key) == klen && !memcmp(tok, s_keys[i].key, klen))
            *(int64_t *)(void *)((char *)d + s_keys[i].field) = (int64_t)v;
}

/* The details between the label's " (" and the line's last ")". */
static void s_details(mt_edac_decoded_t *d, const char *p, const char *end)
{
    bool page = false, off = false;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        const char *tok = p;
        while (p < end && *p != ' ')
            p++;
        if (p > tok)
            s_token(d, tok, (size_t)(p - tok), &page, &off);
    }
    d->has_page = page && off;
}

int mt_edac_parse_line(const char *text, mt_edac_decoded_t *out)
{
    s_reset(out);
    const char *p = text;
    while (*p == ' ')
        p++;
    uint64_t mc, count;
    const char *end;
    if (strncmp(p, "EDAC MC", 7) || !s_number(p + 7, &mc, &end) || mc > 4095 ||
        strncmp(end, ": ", 2))
        return -EINVAL;
    p = end + 2;
    if (!s_number(p, &count, &end) || *end != ' ')
        return -EINVAL;
    p = end + 1;
    if (!strncmp(p, "CE ", 3))
        out->corrected = true;
    else if (strncmp(p, "UE ", 3))
        return -EINVAL;
    const char *on = strstr(p, " on ");
    const char *open = on ? strstr(on + 4, " (") : NULL;
    const char *close = open ? strrchr(open, ')') : NULL;
    if (!close)
        return -EINVAL;
    size_t label_len = (size_t)(open - (on + 4));
    if (label_len >= sizeof out->label)
        label_len = sizeof out->label - 1;
    for (size_t i = 0; i < label_len; i++) {
        unsigned char c = (unsigned char)on[4 + i];
        out->label[i] = c >= 0x20 && c < 0x7F ? (char)c : '?';
    }
    out->label[label_len] = '\0';
    out->mc = (int)mc;
    out->count = count;
    s_details(out, open + 2, close);
    return 0;
}

bool mt_edac_line_address(const mt_edac_decoded_t *d, unsigned page_shift, uint64_t *out)
{
    if (d->has_page && page_shift < 32 && d->page < (UINT64_C(1) << (63 - page_shift))) {
        *out = d->page << page_shift | d->offset;
        return true;
    }
    if (d->system_address != MT_EDAC_UNKNOWN) {
        *out = (uint64_t)d->system_address;
        return true;
    }
    return false;
}

bool mt_edac_label_is_one_dimm(const char *label)
{
    return *label && strcmp(label, "any memory") && strcmp(label, "unknown memory") &&
           !strstr(label, " or ");
}

const char *mt_edac_describe(const mt_edac_decoded_t *d, char *buf, size_t len)
{
    struct {
        const char *name;
        int64_t v;
        bool hex;
    } parts[] = {
        {"socket", d->socket, false},   {"memory controller", d->imc, false},
        {"channel", d->channel, false}, {"DIMM", d->dimm, false},
        {"rank", d->rank, false},       {"chip select", d->chip_select, false},
        {"row", d->row, true},          {"column", d->column, true},
        {"bank", d->bank, false},       {"bank group", d->bank_group, false},
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof parts / sizeof *parts && used + 1 < len; i++) {
        if (parts[i].v == MT_EDAC_UNKNOWN)
            continue;
        int n = snprintf(buf + used, len - used, parts[i].hex ? "%s%s 0x%" PRIx64 : "%s%s %" PRId64,
                         used ? ", " : "", parts[i].name, parts[i].v);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    return buf;
}

/* ---- the debugfs interface ------------------------------------------------------------------- */

/* The first controller's name ("Skylake Socket#0 IMC#0", "F19h"), for saying which driver lacks
 * the interface; "" when unknown. */
static void s_mc_name(const char *root, char *buf, size_t len)
{
    char *path = xasprintf("%s/sys/devices/system/edac/mc/mc0/mc_name", root);
    char *text = NULL;
    buf[0] = '\0';
    if (fb_load_file(path, 256, &text, NULL, NULL) == 0) {
        text[strcspn(text, "\n")] = '\0';
        fb_show_value(text, buf, len);
    }
    free(text);
    free(path);
}

static bool s_dir_has_entries(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *de;
    bool any = false;
    while (!any && (de = readdir(d)))
        any = strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return any;
}

int mt_edac_decoder_find(const char *root, char **addr_path, char *driver, size_t driver_len,
                         char *why, size_t why_len)
{
    static const struct {
        const char *dir, *driver;
    } decoders[] = {{"i10nm_test", "i10nm_edac"}, {"skx_test", "skx_edac"}};
    *addr_path = NULL;
    root = root ? root : "";
    char *debug = xasprintf("%s/sys/kernel/debug", root);
    char *edac = xasprintf("%s/edac", debug);
    struct stat st;
    int rc = stat(edac, &st) ? -errno : 0;
    for (size_t i = 0; rc == 0 && i < sizeof decoders / sizeof *decoders; i++) {
        char *path = xasprintf("%s/%s/addr", edac, decoders[i].dir);
        if (stat(path, &st) == 0) {
            *addr_path = path;
            snprintf(driver, driver_len, "%s", decoders[i].driver);
            break;
        }
        free(path);
    }
    if (rc == -EACCES || rc == -EPERM) {
        snprintf(why, why_len, "%s is readable by root only", debug);
    } else if (rc == -ENOENT && !s_dir_has_entries(debug)) {
        snprintf(why, why_len, "debugfs is not mounted at %s", debug);
    } else if (rc) {
        snprintf(why, why_len,
                 "no %s: no EDAC driver loaded, or one built without CONFIG_EDAC_DEBUG", edac);
    } else if (!*addr_path) {
        char name[64];
        s_mc_name(root, name, sizeof name);
        snprintf(why, why_len,
                 "the EDAC driver here%s%s%s has no address decoder interface (only skx_edac and "
                 "i10nm_edac, on Intel Xeon, have one)",
                 *name ? " (" : "", name, *name ? ")" : "");
        rc = -ENOTSUP;
    }
    free(edac);
    free(debug);
    return rc;
}

typedef struct {
    uint64_t phys;
    unsigned page_shift;
    bool found;
    mt_edac_decoded_t *out;
} wait_t;

static void s_on_record(const fb_kmsg_record_t *rec, void *user)
{
    wait_t *w = user;
    mt_edac_decoded_t d;
    uint64_t addr;
    if (w->found || mt_edac_parse_line(rec->text, &d) || !d.corrected ||
        !mt_edac_line_address(&d, w->page_shift, &addr) || addr != w->phys)
        return;
    *w->out = d;
    w->found = true;
}

static int s_write_address(const char *addr_path, uint64_t phys, char *why, size_t why_len)
{
    int fd = open(addr_path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        snprintf(why, why_len, "%s: cannot open for writing: %s", addr_path, strerror(err));
        return -err;
    }
    char text[32];
    int n = snprintf(text, sizeof text, "%" PRIu64 "\n", phys);
    ssize_t w = write(fd, text, (size_t)n);
    int err = w == n ? 0 : w < 0 ? errno : EIO;
    close(fd);
    if (err)
        snprintf(why, why_len, "%s: writing the address failed: %s", addr_path, strerror(err));
    return -err;
}

/* Reads the log until the answer came or the deadline passed. */
static void s_wait_answer(fb_kmsg_t *k, wait_t *w, unsigned timeout_ms)
{
    double deadline = fb_mono_s() + timeout_ms / 1000.0;
    for (;;) {
        fb_kmsg_read(k, s_on_record, w);
        double left = deadline - fb_mono_s();
        if (w->found || left <= 0)
            return;
        int wait_ms = fb_kmsg_is_file(k) ? 10 : (int)(left * 1000) + 1;
        struct pollfd pfd = {.fd = fb_kmsg_fd(k), .events = POLLIN};
        if (fb_kmsg_is_file(k))
            poll(NULL, 0, wait_ms);
        else
            poll(&pfd, 1, wait_ms);
    }
}

int mt_edac_decode(const char *addr_path, const char *kmsg_path, uint64_t phys, unsigned page_shift,
                   unsigned timeout_ms, mt_edac_decoded_t *out, bool *wrote, char *why,
                   size_t why_len)
{
    *wrote = false;
    fb_kmsg_t *k = NULL;
    int rc = fb_kmsg_open(kmsg_path, FB_KMSG_FROM_END, &k);
    if (rc) {
        snprintf(why, why_len, "the kernel log (%s) is not readable: %s",
                 kmsg_path ? kmsg_path : "/dev/kmsg", strerror(-rc));
        return rc;
    }
    rc = s_write_address(addr_path, phys, why, why_len);
    *wrote = rc == 0;
    wait_t w = {.phys = phys, .page_shift = page_shift, .out = out};
    if (rc == 0)
        s_wait_answer(k, &w, timeout_ms);
    fb_kmsg_close(&k);
    if (rc == 0 && !w.found) {
        snprintf(why, why_len,
                 "the EDAC decoder logged no decode of 0x%" PRIx64 " within %u ms (outside the "
                 "ranges it decodes, or corrected-error logging is off: edac_mc_log_ce=0)",
                 phys, timeout_ms);
        rc = -ETIMEDOUT;
    }
    return rc;
}
