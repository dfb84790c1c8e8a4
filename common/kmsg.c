/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel log parsing, classification and reading. The health sweep reads the whole buffer once to
 * find faults the node already logged; GPU telemetry follows it during a workload to catch Xids,
 * ECC, machine checks, PCIe AER errors and HCA link drops as they happen, and to name the part
 * (the GPU or HCA by PCI address, the DIMM by its EDAC label). /dev/kmsg hands out one record per
 * read(); files and FIFOs used in tests are read as streams of lines in the same format, so one
 * reader serves both. Every line is untrusted text: parsing is bounded and tolerant. */
#include "kmsg.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_READ_MAX 8192   /* a /dev/kmsg record never exceeds this (CONSOLE_EXT_LOG_MAX) */
#define S_LINE_MAX 16384  /* a longer line from a file is cut */
#define S_FILE_POLL_MS 50 /* how often a followed regular file is looked at again */

/* ---- small text helpers ---------------------------------------------------------------------- */

static bool s_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool s_xdigit(char c)
{
    return s_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Parses decimal digits at *p (at most 19, none at or past end; end NULL: the text ends at its
 * NUL) into *out and advances; false when none. */
static bool s_take_u64(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    int n = 0;
    while ((!end || s < end) && s_digit(*s) && n < 19) {
        v = v * 10 + (uint64_t)(*s - '0');
        s++, n++;
    }
    if (n == 0 || ((!end || s < end) && s_digit(*s)))
        return false;
    *out = v;
    *p = s;
    return true;
}

/* Copies at most len bytes of src into dst (cap bytes), control bytes as '?'. */
static void s_copy_text(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    dst[n] = '\0';
}

/* Case-insensitive substring search. */
static const char *s_find(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return hay;
    return NULL;
}

int fb_kmsg_pci_canon(const char *text, char out[16])
{
    /* domain: 4 or 8 hex digits; bus 2; device 2; optional .function */
    const char *p = text;
    size_t dlen = 0;
    while (s_xdigit(p[dlen]) && dlen < 9)
        dlen++;
    if ((dlen != 4 && dlen != 8) || p[dlen] != ':')
        return -EINVAL;
    if (dlen == 8 && strncmp(p, "0000", 4) != 0)
        return -EINVAL; /* a 32-bit domain that does not fit the canonical form */
    const char *dom = p + dlen - 4;
    p += dlen + 1;
    if (!s_xdigit(p[0]) || !s_xdigit(p[1]) || p[2] != ':' || !s_xdigit(p[3]) || !s_xdigit(p[4]))
        return -EINVAL;
    char fn = '0';
    bool has_fn = false;
    const char *after = p + 5;
    if (*after == '.') {
        if (after[1] < '0' || after[1] > '7')
            return -EINVAL;
        fn = after[1];
        has_fn = true;
        after += 2;
    }
    /* "0000:41:00:1f" is not an address; "0000:41:00.0: text" and "0000:41:00): 79" are. */
    if (s_xdigit(*after) || (*after == ':' && !has_fn))
        return -EINVAL;
    snprintf(out, 16, "%.4s:%.2s:%.2s.%c", dom, p, p + 3, fn);
    for (char *c = out; *c; c++)
        if (*c >= 'A' && *c <= 'F')
            *c = (char)(*c - 'A' + 'a');
    return 0;
}

/* ---- parsing --------------------------------------------------------------------------------- */

/* "PRI,SEQ,TS,FLAGS[,...];" at the start of s: fills rec and returns the text start, or NULL. */
static const char *s_kmsg_prefix(const char *s, const char *end, fb_kmsg_record_t *rec)
{
    const char *semi = memchr(s, ';', (size_t)(end - s));
    if (!semi || semi - s > 64)
        return NULL;
    const char *p = s;
    uint64_t pri = 0, seq = 0, ts = 0;
    if (!s_take_u64(&p, semi, &pri) || *p++ != ',' || !s_take_u64(&p, semi, &seq) ||
        *p++ != ',' || !s_take_u64(&p, semi, &ts) || *p++ != ',')
        return NULL;
    /* flags: '-' or 'c' (continuation), then optional ",key" fields up to ';' */
    if (p >= semi || (*p != '-' && *p != 'c' && *p != '+'))
        return NULL;
    if (pri > 1023)
        return NULL;
    rec->level = (int)(pri & 7);
    rec->facility = (int)(pri >> 3);
    rec->seq = seq;
    rec->ts_us = ts;
    rec->has_ts = true;
    return semi + 1;
}

/* "[  123.456789] " at s: fills the timestamp, returns what follows, or s. */
static const char *s_dmesg_time(const char *s, const char *end, fb_kmsg_record_t *rec)
{
    if (s >= end || *s != '[')
        return s;
    const char *p = s + 1;
    while (p < end && *p == ' ')
        p++;
    uint64_t sec = 0, frac = 0;
    const char *num = p;
    if (!s_take_u64(&p, end, &sec) || p >= end || *p != '.') {
        /* dmesg -T: "[Mon Nov 23 10:00:00 2026] " */
        const char *close = memchr(num, ']', (size_t)(end - num));
        if (close && close - s < 40 && close + 1 < end && close[1] == ' ')
            return close + 2;
        return s;
    }
    p++;
    const char *fs = p;
    if (!s_take_u64(&p, end, &frac) || p >= end || *p != ']')
        return s;
    size_t fd = (size_t)(p - fs);
    while (fd < 6)
        frac *= 10, fd++;
    while (fd > 6)
        frac /= 10, fd--;
    rec->ts_us = sec * 1000000 + frac;
    rec->has_ts = true;
    p++;
    while (p < end && *p == ' ')
        p++;
    return p;
}

/* True when s starts like a syslog or journal line: "Nov 23 10:00:00 " or "2026-11-23T". */
static bool s_syslog_stamp(const char *s, const char *end)
{
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (end - s < 16)
        return false;
    for (size_t i = 0; i < 12; i++)
        if (!strncmp(s, months[i], 3) && s[3] == ' ')
            return true;
    return s_digit(s[0]) && s_digit(s[1]) && s_digit(s[2]) && s_digit(s[3]) && s[4] == '-' &&
           s_digit(s[5]) && s_digit(s[6]) && s[7] == '-';
}

static int s_level_word(const char *w, size_t n)
{
    static const char *const levels[] = {"emerg", "alert",  "crit", "err",
                                         "warn",  "notice", "info", "debug"};
    for (int i = 0; i < 8; i++)
        if (strlen(levels[i]) == n && !strncmp(w, levels[i], n))
            return i;
    return -1;
}

/* The dmesg-style prefixes: "<3>" (dmesg -r), "kern  :err   : " (dmesg -x),
 * "Nov 23 10:00:00 host kernel: " (journalctl -k / syslog), then "[  123.4] ". */
static const char *s_dmesg_prefix(const char *s, const char *end, fb_kmsg_record_t *rec)
{
    if (end - s >= 3 && s[0] == '<' && s_digit(s[1])) {
        const char *p = s + 1;
        uint64_t pri = 0;
        if (s_take_u64(&p, end, &pri) && p < end && *p == '>' && pri <= 1023) {
            rec->level = (int)(pri & 7);
            rec->facility = (int)(pri >> 3);
            s = p + 1;
        }
    } else if (end - s > 8 && !strncmp(s, "kern", 4)) {
        const char *c1 = memchr(s, ':', (size_t)(end - s));
        if (c1 && c1 - s <= 8) {
            const char *w = c1 + 1;
            size_t n = 0;
            while (w + n < end && w[n] >= 'a' && w[n] <= 'z')
                n++;
            const char *c2 = w + n;
            while (c2 < end && *c2 == ' ')
                c2++;
            int lvl = s_level_word(w, n);
            if (lvl >= 0 && c2 < end && *c2 == ':') {
                rec->level = lvl;
                rec->facility = 0;
                s = c2 + 1;
                while (s < end && *s == ' ')
                    s++;
            }
        }
    } else if (s_syslog_stamp(s, end)) {
        size_t span = (size_t)(end - s) < 128 ? (size_t)(end - s) : 128;
        for (size_t k = 0; k + 9 <= span; k++)
            if (!memcmp(s + k, " kernel: ", 9)) {
                s += k + 9;
                break;
            }
    }
    return s_dmesg_time(s, end, rec);
}

int fb_kmsg_parse(const char *line, size_t len, fb_kmsg_record_t *out)
{
    memset(out, 0, sizeof *out);
    out->level = out->facility = -1;
    const char *end = line + len;
    /* The first line is the record; " KEY=VALUE" lines after it are its dictionary. */
    const char *nl = memchr(line, '\n', len);
    const char *text_end = nl ? nl : end;
    const char *text = s_kmsg_prefix(line, text_end, out);
    if (!text)
        text = s_dmesg_prefix(line, text_end, out);
    while (text < text_end && (*text == ' ' || *text == '\t'))
        text++;
    const char *te = text_end;
    while (te > text && (te[-1] == ' ' || te[-1] == '\r' || te[-1] == '\t'))
        te--;
    if (te <= text)
        return -EINVAL;
    s_copy_text(out->text, sizeof out->text, text, (size_t)(te - text));
    for (const char *p = nl; p && p < end;) {
        const char *q = p + 1;
        const char *next = memchr(q, '\n', (size_t)(end - q));
        const char *le = next ? next : end;
        if (le - q > 13 && q[0] == ' ' && !strncmp(q + 1, "DEVICE=+pci:", 12)) {
            char dev[64];
            s_copy_text(dev, sizeof dev, q + 13, (size_t)(le - q - 13));
            char canon[16];
            if (fb_kmsg_pci_canon(dev, canon) == 0)
                memcpy(out->device, canon, sizeof canon);
        }
        p = next;
    }
    return 0;
}

/* ---- classification -------------------------------------------------------------------------- */

const char *fb_kmsg_class_name(fb_kmsg_class_t c)
{
    static const char *const names[FB_KMSG_N_CLASSES] = {
        "none", "xid",         "gpu_thermal", "gpu_error", "edac_ce",   "edac_ue",
        "mce",  "cpu_thermal", "pcie_aer",    "link_down", "nic_error",
    };
    return (unsigned)c < FB_KMSG_N_CLASSES ? names[c] : "none";
}

bool fb_kmsg_xid_is_application(int xid)
{
    return xid == 13 || xid == 31 || xid == 43 || xid == 45 || xid == 68 || xid == 109;
}

const char *fb_kmsg_xid_text(int xid)
{
    static const struct {
        int xid;
        const char *text;
    } known[] = {
        {13, "graphics engine exception"},
        {31, "GPU memory page fault"},
        {32, "invalid or corrupted push buffer stream"},
        {38, "driver firmware error"},
        {43, "GPU stopped processing"},
        {45, "preemptive cleanup, due to previous errors"},
        {48, "double bit ECC error"},
        {54, "auxiliary power is not connected to the GPU board"},
        {61, "internal micro-controller breakpoint/warning"},
        {62, "internal micro-controller halt"},
        {63, "ECC page retirement or row remapping recording event"},
        {64, "ECC page retirement or row remapper recording failure"},
        {68, "video processor exception"},
        {74, "NVLink error"},
        {79, "GPU has fallen off the bus"},
        {92, "high single-bit ECC error rate"},
        {94, "contained ECC error"},
        {95, "uncontained ECC error"},
        {109, "context switch timeout"},
        {119, "GSP RPC timeout"},
        {120, "GSP error"},
        {123, "SPI PMU RPC write failure"},
        {143, "GPU initialization failure"},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(known); i++)
        if (known[i].xid == xid)
            return known[i].text;
    return NULL;
}

/* The PCI address of a dev_printk line "DRIVER 0000:41:00.0: ..." or "DRIVER 0000:41:00.0 NETDEV:
 * ...": the second word. Returns a pointer past the address, or NULL. */
static const char *s_dev_prefix(const char *text, char pci[16], const char **driver_end)
{
    const char *sp = strchr(text, ' ');
    if (!sp || sp == text || sp - text > 32)
        return NULL;
    for (const char *c = text; c < sp; c++)
        if (!(s_digit(*c) || (*c >= 'a' && *c <= 'z') || *c == '_' || *c == '-'))
            return NULL;
    const char *addr = sp + 1;
    if (fb_kmsg_pci_canon(addr, pci) < 0)
        return NULL;
    const char *after = addr;
    while (*after && *after != ' ' && !(after[0] == ':' && after[1] == ' '))
        after++;
    if (driver_end)
        *driver_end = sp;
    return after;
}

static bool s_starts(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

static void s_classify_xid(const char *text, fb_kmsg_event_t *ev)
{
    /* "NVRM: Xid (PCI:0000:41:00): 79, pid=1234, ..." */
    ev->cls = FB_KMSG_XID;
    ev->fatal = true;
    ev->xid = -1;
    const char *p = strstr(text, "(PCI:");
    if (!p)
        return;
    p += 5;
    if (fb_kmsg_pci_canon(p, ev->pci) < 0)
        ev->pci[0] = '\0';
    const char *close = strstr(p, "): ");
    if (!close || close - p > 24)
        return;
    p = close + 3;
    uint64_t x = 0;
    if (s_take_u64(&p, NULL, &x) && (*p == ',' || *p == '\0') && x < 100000)
        ev->xid = (int)x;
}

/* EDAC MC0: 1 CE memory read error on LABEL (details)  |  EDAC MC0: UE page 0x0, ... (old) */
static bool s_classify_edac(const char *text, fb_kmsg_event_t *ev)
{
    const char *mc = strstr(text, "MC");
    if (!s_starts(text, "EDAC ") || !mc || mc - text > 24 || !s_digit(mc[2]))
        return false;
    const char *p = mc + 2;
    uint64_t mcn = 0;
    if (!s_take_u64(&p, NULL, &mcn) || *p != ':')
        return false;
    p++;
    while (*p == ' ')
        p++;
    uint64_t count = 1;
    if (s_digit(*p) && (!s_take_u64(&p, NULL, &count) || *p++ != ' '))
        return false;
    bool ue;
    size_t tlen;
    if (s_starts(p, "CE "))
        ue = false, tlen = 2;
    else if (s_starts(p, "UE "))
        ue = true, tlen = 2;
    else if (s_starts(p, "Fatal "))
        ue = true, tlen = 5;
    else if (s_starts(p, "Deferred "))
        ue = true, tlen = 8;
    else
        return false;
    ev->cls = ue ? FB_KMSG_EDAC_UE : FB_KMSG_EDAC_CE;
    ev->fatal = ue;
    ev->count = count ? count : 1;
    ev->mc = mcn < 4096 ? (int)mcn : -1;
    const char *rest = p + tlen;
    /* The label: after the last " on " before the details in parentheses. */
    const char *paren = strstr(rest, " (");
    const char *stop = paren ? paren : rest + strlen(rest);
    const char *on = NULL;
    for (const char *q = strstr(rest, " on "); q && q < stop; q = strstr(q + 1, " on "))
        on = q;
    if (on && stop > on + 4)
        s_copy_text(ev->label, sizeof ev->label, on + 4, (size_t)(stop - on - 4));
    if (!strcmp(ev->label, "unknown memory"))
        ev->label[0] = '\0';
    return true;
}

/* Machine checks. Only the lines that report an error count (one error prints several lines:
 * bank, TSC/ADDR/MISC, PROCESSOR, "Run the above through mcelog"). Intel prints the bank status:
 * bit 61 (UC) set means uncorrected. AMD's decoder and APEI/GHES say the severity in words.
 * "Machine check events logged" is all a corrected error leaves when rasdaemon or mcelog takes
 * the details. */
static void s_classify_mce(const char *text, fb_kmsg_event_t *ev)
{
    const char *bank = strstr(text, " Bank ");
    bool report = bank || strstr(text, "event severity:") ||
                  strstr(text, "Machine Check Exception") ||
                  strstr(text, "Machine check events logged") || strstr(text, "Corrected error") ||
                  strstr(text, "Uncorrected") || strstr(text, "Deferred error");
    if (!report)
        return;
    ev->cls = FB_KMSG_MCE;
    if (strstr(text, "Machine Check Exception") || strstr(text, "Uncorrected") ||
        strstr(text, "event severity: fatal") || strstr(text, "event severity: recoverable"))
        ev->fatal = true;
    if (bank) {
        const char *colon = strstr(bank, ": ");
        if (colon && colon - bank < 12) {
            const char *h = colon + 2;
            size_t n = 0;
            while (s_xdigit(h[n]))
                n++;
            if (n == 16) {
                unsigned long long status = strtoull(h, NULL, 16);
                if (status >> 61 & 1)
                    ev->fatal = true;
            }
        }
    }
}

/* The first PCI address anywhere in text ("GPU 0000:41:00.0", "PCI:0000:41:00"). */
static bool s_scan_pci(const char *text, char pci[16])
{
    for (const char *p = text; *p; p++)
        if (s_xdigit(*p) && (p == text || !s_xdigit(p[-1])) && fb_kmsg_pci_canon(p, pci) == 0)
            return true;
    pci[0] = '\0';
    return false;
}

static void s_classify_amdgpu(const char *text, fb_kmsg_event_t *ev)
{
    if (s_find(text, "thermal throttling") || s_find(text, "over temperature")) {
        ev->cls = FB_KMSG_GPU_THERMAL;
        return;
    }
    if (s_find(text, "uncorrectable") || s_find(text, "GPU reset begin") ||
        s_find(text, "GPU reset(") || s_find(text, "timeout") || s_find(text, "GPU hang") ||
        s_find(text, "fatal")) {
        /* "1 uncorrectable hardware errors detected in umc block", "ring gfx timeout, ..." */
        ev->cls = FB_KMSG_GPU_ERROR;
        ev->fatal = true;
        return;
    }
    if (s_find(text, "page fault") || strstr(text, "*ERROR*") ||
        s_find(text, "correctable hardware errors") || s_find(text, "poison"))
        ev->cls = FB_KMSG_GPU_ERROR;
}

fb_kmsg_class_t fb_kmsg_classify(const fb_kmsg_record_t *rec, fb_kmsg_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->xid = -1;
    ev->mc = -1;
    const char *text = rec->text;
    char pci[16] = "";
    const char *drv_end = NULL;
    const char *after = s_dev_prefix(text, pci, &drv_end);
    size_t drv_len = after ? (size_t)(drv_end - text) : 0;

    if (s_starts(text, "NVRM: Xid")) {
        s_classify_xid(text, ev);
    } else if (s_starts(text, "NVRM: ") &&
               (strstr(text, "RmInitAdapter failed") || strstr(text, "fallen off the bus") ||
                strstr(text, "GPU is lost"))) {
        /* "NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x22:0x56:742)" */
        ev->cls = FB_KMSG_GPU_ERROR;
        ev->fatal = true;
        s_scan_pci(text, ev->pci);
    } else if (s_starts(text, "EDAC ")) {
        s_classify_edac(text, ev);
    } else if (s_find(text, "temperature above threshold") && s_find(text, "throttled")) {
        ev->cls = FB_KMSG_CPU_THERMAL;
    } else if (strstr(text, "[Hardware Error]")) {
        s_classify_mce(text, ev);
    } else if (strstr(text, "PCIe Bus Error: severity=")) {
        /* "nvidia 0000:41:00.0: AER: PCIe Bus Error: severity=Corrected, type=..." (older
         * kernels: "Uncorrected (Fatal)"; newer: "Correctable" / "Uncorrectable (Fatal)") */
        ev->cls = FB_KMSG_PCIE_AER;
        const char *sev = strstr(text, "severity=") + 9;
        ev->fatal = !strncasecmp(sev, "Uncorrect", 9);
        if (after)
            memcpy(ev->pci, pci, sizeof pci);
    } else if ((after && drv_len == 6 && !strncmp(text, "amdgpu", 6)) ||
               strstr(text, "[amdgpu]]") || s_starts(text, "amdgpu:")) {
        s_classify_amdgpu(text, ev);
        if (after)
            memcpy(ev->pci, pci, sizeof pci);
    } else if (after && drv_len == 9 && !strncmp(text, "mlx5_core", 9)) {
        /* "mlx5_core 0000:17:00.0 ibp23s0: Link down" (netdev_printk adds the interface) */
        if (after[0] == ' ' && strstr(after, ": Link down")) {
            const char *nd = after + 1;
            size_t n = strcspn(nd, ": ");
            if (nd[n] == ':' && n > 0 && n < sizeof ev->netdev) {
                ev->cls = FB_KMSG_LINK_DOWN;
                memcpy(ev->netdev, nd, n);
                ev->netdev[n] = '\0';
            }
        } else if (strstr(after, "Port module event")) {
            if (s_find(after, "unplugged") || strstr(after, "[error]") || s_find(after, "error"))
                ev->cls = FB_KMSG_LINK_DOWN;
        } else if (s_find(after, "health compromised") || s_find(after, "fatal") ||
                   s_find(after, "internal error") || s_find(after, "error state")) {
            ev->cls = FB_KMSG_NIC_ERROR;
        }
        if (ev->cls != FB_KMSG_NONE)
            memcpy(ev->pci, pci, sizeof pci);
    }
    /* The record's DEVICE= line names the device when the text did not. */
    if (ev->cls != FB_KMSG_NONE && !ev->pci[0] && rec->device[0] && ev->cls != FB_KMSG_EDAC_CE &&
        ev->cls != FB_KMSG_EDAC_UE && ev->cls != FB_KMSG_MCE && ev->cls != FB_KMSG_CPU_THERMAL)
        memcpy(ev->pci, rec->device, sizeof ev->pci);
    return ev->cls;
}

/* ---- reading --------------------------------------------------------------------------------- */

struct fb_kmsg {
    int fd;
    bool record_device; /* /dev/kmsg: one record per read() */
    bool regular;       /* a regular file: EOF means "nothing new yet" */
    uint64_t lost;
    char *buf;     /* read buffer */
    char *pending; /* a stream's record being assembled (first line + continuation lines) */
    size_t pending_len;
    char *partial; /* a stream's line without its newline yet */
    size_t partial_len;
};

int fb_kmsg_open(const char *path, fb_kmsg_from_t from, fb_kmsg_t **out)
{
    *out = NULL;
    if (!path)
        path = "/dev/kmsg";
    struct stat st;
    if (stat(path, &st) != 0)
        return -errno;
    /* A FIFO is opened read-write so that it never reports end-of-file between writers. */
    int flags = (S_ISFIFO(st.st_mode) ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC;
    int fd = open(path, flags);
    if (fd < 0)
        return -errno;
    fb_kmsg_t *k = xcalloc(1, sizeof *k);
    k->fd = fd;
    k->record_device = S_ISCHR(st.st_mode);
    k->regular = S_ISREG(st.st_mode);
    k->buf = xmalloc(S_READ_MAX + 1);
    k->pending = xmalloc(S_LINE_MAX);
    k->partial = xmalloc(S_LINE_MAX);
    if (from == FB_KMSG_FROM_END)
        (void)lseek(fd, 0, SEEK_END); /* FIFOs: ESPIPE, they only have new data anyway */
    else if (from == FB_KMSG_FROM_CLEAR && k->record_device)
        (void)lseek(fd, 0, SEEK_DATA); /* /dev/kmsg: the first record after `dmesg -C` */
    *out = k;
    return 0;
}

int fb_kmsg_fd(const fb_kmsg_t *k)
{
    return k->fd;
}

bool fb_kmsg_is_file(const fb_kmsg_t *k)
{
    return k->regular;
}

uint64_t fb_kmsg_lost(const fb_kmsg_t *k)
{
    return k->lost;
}

void fb_kmsg_close(fb_kmsg_t **k_p)
{
    if (!k_p || !*k_p)
        return;
    fb_kmsg_t *k = *k_p;
    close(k->fd);
    free(k->buf);
    free(k->pending);
    free(k->partial);
    free(k);
    *k_p = NULL;
}

static int s_emit(const char *rec, size_t len, fb_kmsg_fn fn, void *user)
{
    fb_kmsg_record_t *r = xmalloc(sizeof *r);
    int n = 0;
    if (fb_kmsg_parse(rec, len, r) == 0) {
        fn(r, user);
        n = 1;
    }
    free(r);
    return n;
}

static int s_flush_pending(fb_kmsg_t *k, fb_kmsg_fn fn, void *user)
{
    int n = 0;
    if (k->pending_len)
        n = s_emit(k->pending, k->pending_len, fn, user);
    k->pending_len = 0;
    return n;
}

/* One line of a stream: a continuation line joins the pending record, any other line ends it. */
static int s_stream_line(fb_kmsg_t *k, const char *line, size_t len, fb_kmsg_fn fn, void *user)
{
    int n = 0;
    bool continuation = len > 0 && line[0] == ' ' && k->pending_len > 0;
    if (!continuation)
        n = s_flush_pending(k, fn, user);
    size_t room = S_LINE_MAX - k->pending_len - 1;
    if (continuation && room > 0)
        k->pending[k->pending_len++] = '\n', room--;
    size_t take = len < room ? len : room;
    memcpy(k->pending + k->pending_len, line, take);
    k->pending_len += take;
    return n;
}

static int s_stream_chunk(fb_kmsg_t *k, const char *data, size_t len, fb_kmsg_fn fn, void *user)
{
    int n = 0;
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            size_t room = S_LINE_MAX - k->partial_len;
            size_t take = (size_t)(end - p) < room ? (size_t)(end - p) : room;
            memcpy(k->partial + k->partial_len, p, take);
            k->partial_len += take;
            break;
        }
        if (k->partial_len) {
            size_t room = S_LINE_MAX - k->partial_len;
            size_t take = (size_t)(nl - p) < room ? (size_t)(nl - p) : room;
            memcpy(k->partial + k->partial_len, p, take);
            k->partial_len += take;
            n += s_stream_line(k, k->partial, k->partial_len, fn, user);
            k->partial_len = 0;
        } else {
            n += s_stream_line(k, p, (size_t)(nl - p), fn, user);
        }
        p = nl + 1;
    }
    return n;
}

int fb_kmsg_read(fb_kmsg_t *k, fb_kmsg_fn fn, void *user)
{
    int n = 0;
    for (;;) {
        ssize_t got = read(k->fd, k->buf, S_READ_MAX);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE) { /* the kernel overwrote records before we read them */
                k->lost++;
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            return n ? n : -errno;
        }
        if (got == 0)
            break;
        if (k->record_device) {
            n += s_emit(k->buf, (size_t)got, fn, user);
        } else {
            n += s_stream_chunk(k, k->buf, (size_t)got, fn, user);
            if (k->regular && got < S_READ_MAX)
                break;
        }
    }
    /* Nothing more now: a stream's last record is complete (writers write whole records). */
    if (!k->record_device)
        n += s_flush_pending(k, fn, user);
    return n;
}

/* ---- following ------------------------------------------------------------------------------- */

struct fb_kmsg_watch {
    fb_kmsg_t *k;
    fb_kmsg_fn fn;
    void *user;
    int stop_pipe[2];
    pthread_t thread;
};

static void *s_watch_main(void *arg)
{
    fb_kmsg_watch_t *w = arg;
    bool file = fb_kmsg_is_file(w->k);
    for (;;) {
        struct pollfd pfd[2] = {{w->stop_pipe[0], POLLIN, 0}, {fb_kmsg_fd(w->k), POLLIN, 0}};
        int rc = poll(pfd, file ? 1 : 2, file ? S_FILE_POLL_MS : -1);
        if (rc < 0 && errno != EINTR)
            break;
        if (pfd[0].revents)
            break;
        if (file || (pfd[1].revents & (POLLIN | POLLERR)))
            if (fb_kmsg_read(w->k, w->fn, w->user) < 0 && !file)
                break;
        if (!file && (pfd[1].revents & (POLLHUP | POLLNVAL)))
            break;
    }
    (void)fb_kmsg_read(w->k, w->fn, w->user); /* what arrived just before the stop */
    return NULL;
}

int fb_kmsg_watch_start(const char *path, fb_kmsg_fn fn, void *user, fb_kmsg_watch_t **out)
{
    *out = NULL;
    fb_kmsg_t *k = NULL;
    int rc = fb_kmsg_open(path, FB_KMSG_FROM_END, &k);
    if (rc < 0)
        return rc;
    fb_kmsg_watch_t *w = xcalloc(1, sizeof *w);
    w->k = k;
    w->fn = fn;
    w->user = user;
    if (pipe2(w->stop_pipe, O_CLOEXEC) != 0) {
        rc = -errno;
        fb_kmsg_close(&w->k);
        free(w);
        return rc;
    }
    rc = pthread_create(&w->thread, NULL, s_watch_main, w);
    if (rc != 0) {
        close(w->stop_pipe[0]);
        close(w->stop_pipe[1]);
        fb_kmsg_close(&w->k);
        free(w);
        return -rc;
    }
    *out = w;
    return 0;
}

uint64_t fb_kmsg_watch_stop(fb_kmsg_watch_t **w_p)
{
    if (!w_p || !*w_p)
        return 0;
    fb_kmsg_watch_t *w = *w_p;
    char c = 1;
    while (write(w->stop_pipe[1], &c, 1) < 0 && errno == EINTR)
        ;
    pthread_join(w->thread, NULL);
    uint64_t lost = fb_kmsg_lost(w->k);
    close(w->stop_pipe[0]);
    close(w->stop_pipe[1]);
    fb_kmsg_close(&w->k);
    free(w);
    *w_p = NULL;
    return lost;
}
