/* SPDX-License-Identifier: Apache-2.0 */
/* Reads InfiniBand and RoCE ports from /sys/class/infiniband under a root prefix: state, physical
 * state, link layer, rate and width, LID and the GID a queue pair is addressed by. The rdmabw
 * workload picks its ports here and the health sweep judges them from the same reading. sysfs
 * text is untrusted: each attribute is parsed strictly, and one that does not parse leaves a
 * problem naming the file instead of a zero that would look like a real value. */
#include "ibport.h"

#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ib_parse_rate(const char *text, double *gbps, unsigned *width, char *speed, size_t speed_len)
{
    if (!text || *text < '0' || *text > '9')
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !(v > 0 && v < 1e6) || strncmp(end, " Gb/sec", 7) != 0)
        return -EINVAL;
    end += 7;
    unsigned w = 0;
    char sp[12] = "";
    if (*end) {
        /* " (4X HDR)": lanes, 'X', one blank, a speed name of letters. */
        unsigned long lanes;
        char *after;
        if (strncmp(end, " (", 2) != 0 || end[2] < '1' || end[2] > '9')
            return -EINVAL;
        errno = 0;
        lanes = strtoul(end + 2, &after, 10);
        if (errno || lanes == 0 || lanes > 32 || after[0] != 'X' || after[1] != ' ')
            return -EINVAL;
        const char *name = after + 2;
        size_t nlen = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
        if (nlen == 0 || nlen >= sizeof sp || strcmp(name + nlen, ")") != 0)
            return -EINVAL;
        memcpy(sp, name, nlen);
        sp[nlen] = '\0';
        w = (unsigned)lanes;
    }
    *gbps = v;
    if (width)
        *width = w;
    if (speed && speed_len)
        fb_strlcpy(speed, sp, speed_len);
    return 0;
}

int ib_parse_state(const char *text, char *out, size_t len)
{
    size_t digits = text ? strspn(text, "0123456789") : 0;
    if (digits == 0 || digits > 3 || text[digits] != ':' || text[digits + 1] != ' ')
        return -EINVAL;
    const char *word = text + digits + 2;
    size_t wlen = strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    if (wlen == 0 || word[wlen] != '\0' || wlen >= len)
        return -EINVAL;
    memcpy(out, word, wlen + 1);
    return 0;
}

int ib_parse_gid(const char *text, uint8_t gid[16])
{
    /* Eight groups of four hex digits separated by ':', exactly as the kernel prints them. */
    if (!text || strlen(text) != 39)
        return -EINVAL;
    for (int g = 0; g < 8; g++) {
        const char *p = text + g * 5;
        if (g < 7 && p[4] != ':')
            return -EINVAL;
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
            char c = p[i];
            unsigned d;
            if (c >= '0' && c <= '9')
                d = (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = (unsigned)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = (unsigned)(c - 'A' + 10);
            else
                return -EINVAL;
            v = v << 4 | d;
        }
        gid[2 * g] = (uint8_t)(v >> 8);
        gid[2 * g + 1] = (uint8_t)v;
    }
    return 0;
}

/* ---- reading one port ------------------------------------------------------------------------ */

/* The text of dir/name, trailing newline stripped; NULL when absent or unreadable. */
static char *s_read(const char *dir, const char *name)
{
    char *path = xasprintf("%s/%s", dir, name);
    char *text = fb_read_file(path, NULL);
    free(path);
    return text;
}

/* Records the first problem only: it names the file, and one is enough to act on. */
static void s_problem(ib_port_t *p, const char *dir, const char *file, const char *text,
                      const char *expected)
{
    if (p->problem[0])
        return;
    char shown[64];
    snprintf(p->problem, sizeof p->problem, "%s/%s: '%s' is not %s", dir, file,
             fb_show_value(text, shown, sizeof shown), expected);
}

static bool s_is_zero(const uint8_t gid[16])
{
    for (int i = 0; i < 16; i++)
        if (gid[i])
            return false;
    return true;
}

/* ::ffff:a.b.c.d, the form RoCE v2 uses for IPv4 addresses. */
static bool s_is_v4_mapped(const uint8_t gid[16])
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(gid, prefix, sizeof prefix) == 0;
}

/* GID index 0 on InfiniBand. On RoCE: the first non-zero "RoCE v2" entry with an IPv4-mapped
 * address, else the first non-zero RoCE v2 entry, else the first non-zero entry (RoCE v1 only).
 * Unreadable entries are skipped: the kernel refuses reads of unused table slots. */
static void s_choose_gid(ib_port_t *p, const char *dir)
{
    p->gid_index = -1;
    char *gdir = xasprintf("%s/gids", dir);
    char **names;
    size_t n = fb_list_dir(gdir, &names);
    int v2_mapped = -1, v2 = -1, any = -1;
    uint8_t g_v2_mapped[16] = {0}, g_v2[16] = {0}, g_any[16] = {0};
    for (size_t i = 0; i < n; i++) {
        uint64_t idx;
        if (fb_parse_uint(names[i], 1u << 16, &idx) < 0)
            continue;
        char *text = s_read(gdir, names[i]);
        uint8_t gid[16];
        bool ok = text && ib_parse_gid(text, gid) == 0 && !s_is_zero(gid);
        free(text);
        if (!ok)
            continue;
        if (p->ib) {
            if (idx == 0) {
                memcpy(p->gid, gid, 16);
                p->gid_index = 0;
                break;
            }
            continue;
        }
        char *tpath = xasprintf("gid_attrs/types/%s", names[i]);
        char *type = s_read(dir, tpath);
        free(tpath);
        bool is_v2 = type && strcasecmp(type, "RoCE v2") == 0;
        free(type);
        if (is_v2 && s_is_v4_mapped(gid) && v2_mapped < 0)
            v2_mapped = (int)idx, memcpy(g_v2_mapped, gid, 16);
        else if (is_v2 && v2 < 0)
            v2 = (int)idx, memcpy(g_v2, gid, 16);
        else if (any < 0)
            any = (int)idx, memcpy(g_any, gid, 16);
    }
    if (!p->ib) {
        if (v2_mapped >= 0)
            p->gid_index = v2_mapped, memcpy(p->gid, g_v2_mapped, 16);
        else if (v2 >= 0)
            p->gid_index = v2, memcpy(p->gid, g_v2, 16);
        else if (any >= 0)
            p->gid_index = any, memcpy(p->gid, g_any, 16);
    }
    fb_names_free(names, n);
    free(gdir);
}

int ib_port_read(const char *root, const char *hca, unsigned port, ib_port_t *out)
{
    memset(out, 0, sizeof *out);
    out->gid_index = -1;
    fb_strlcpy(out->hca, hca, sizeof out->hca);
    out->port = port;
    snprintf(out->name, sizeof out->name, "%s:%u", hca, port);
    char *dir = xasprintf("%s/sys/class/infiniband/%s/ports/%u", root, hca, port);
    char *hdir = xasprintf("%s/sys/class/infiniband/%s", root, hca);

    char *text = s_read(dir, "state");
    if (!text) {
        free(dir);
        free(hdir);
        return -ENOENT;
    }
    if (ib_parse_state(text, out->state, sizeof out->state) < 0) {
        s_problem(out, dir, "state", text, "a port state like \"4: ACTIVE\"");
        out->state[0] = '\0';
    }
    free(text);
    out->active = strcmp(out->state, "ACTIVE") == 0;

    text = s_read(dir, "phys_state");
    if (text && ib_parse_state(text, out->phys_state, sizeof out->phys_state) < 0) {
        s_problem(out, dir, "phys_state", text, "a physical state like \"5: LinkUp\"");
        out->phys_state[0] = '\0';
    }
    free(text);

    text = s_read(dir, "link_layer");
    if (!text || !strcmp(text, "InfiniBand") || !strcmp(text, "Ethernet"))
        fb_strlcpy(out->link_layer, text ? text : "InfiniBand", sizeof out->link_layer);
    else
        s_problem(out, dir, "link_layer", text, "InfiniBand or Ethernet");
    free(text);
    out->ib = strcmp(out->link_layer, "Ethernet") != 0;

    text = s_read(dir, "rate");
    if (text) {
        if (ib_parse_rate(text, &out->gbps, &out->width, out->speed, sizeof out->speed) == 0)
            fb_strlcpy(out->rate, text, sizeof out->rate);
        else
            s_problem(out, dir, "rate", text, "a rate like \"200 Gb/sec (4X HDR)\"");
    }
    free(text);

    /* The LID is hexadecimal ("0x1a"); RoCE ports show 0x0. */
    text = s_read(dir, "lid");
    if (text) {
        char *end = NULL;
        errno = 0;
        unsigned long lid = strncmp(text, "0x", 2) == 0 ? strtoul(text + 2, &end, 16) : 0;
        if (strncmp(text, "0x", 2) != 0 || errno || end == text + 2 || *end || lid > 0xffff)
            s_problem(out, dir, "lid", text, "a LID like \"0x1a\"");
        else
            out->lid = (uint16_t)lid;
    }
    free(text);

    text = s_read(hdir, "hca_type");
    if (text) {
        char shown[64];
        fb_strlcpy(out->hca_type, fb_show_value(text, shown, sizeof shown), sizeof out->hca_type);
    }
    free(text);

    s_choose_gid(out, dir);
    free(dir);
    free(hdir);
    return out->problem[0] ? -EINVAL : 0;
}

/* ---- every port ------------------------------------------------------------------------------ */

size_t ib_ports_list(const char *root, ib_port_t **ports_out, bool *absent_out)
{
    *ports_out = NULL;
    char *base = xasprintf("%s/sys/class/infiniband", root);
    char *probe = xasprintf("%s/.", base);
    FILE *f = fopen(probe, "r");
    bool absent = !f && errno == ENOENT;
    if (f)
        fclose(f);
    free(probe);
    if (absent_out)
        *absent_out = absent;
    char **hcas;
    size_t n_hcas = fb_list_dir(base, &hcas);
    ib_port_t *ports = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < n_hcas; i++) {
        if (strlen(hcas[i]) >= IB_NAME_MAX)
            continue;
        char *pdir = xasprintf("%s/%s/ports", base, hcas[i]);
        char **names;
        size_t np = fb_list_dir(pdir, &names);
        for (size_t j = 0; j < np; j++) {
            uint64_t num;
            if (fb_parse_uint(names[j], 255, &num) < 0 || num == 0)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                ports = xrealloc(ports, cap * sizeof *ports);
            }
            if (ib_port_read(root, hcas[i], (unsigned)num, &ports[n]) != -ENOENT)
                n++;
        }
        fb_names_free(names, np);
        free(pdir);
    }
    fb_names_free(hcas, n_hcas);
    free(base);
    *ports_out = ports;
    return n;
}

/* ---- selection ------------------------------------------------------------------------------- */

static void s_why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* "mlx5_0, mlx5_1" or "none" for error messages. */
static void s_hca_names(const ib_port_t *ports, size_t n, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i && !strcmp(ports[i].hca, ports[i - 1].hca))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? ", " : "", ports[i].hca);
    }
    if (!out[0])
        fb_strlcpy(out, "none", len);
}

static void s_add(size_t *sel, size_t *n_sel, size_t idx)
{
    for (size_t i = 0; i < *n_sel; i++)
        if (sel[i] == idx)
            return;
    sel[(*n_sel)++] = idx;
}

static bool s_usable(const ib_port_t *p)
{
    return p->active && !p->problem[0];
}

int ib_ports_select(const ib_port_t *ports, size_t n, const char *device, size_t **sel_out,
                    char *why, size_t why_len)
{
    size_t *sel = xcalloc(n ? n : 1, sizeof *sel);
    size_t n_sel = 0;
    *sel_out = NULL;
    if (!device || !strcmp(device, "all") || !*device) {
        for (size_t i = 0; i < n; i++)
            if (ports[i].active)
                s_add(sel, &n_sel, i);
        *sel_out = sel;
        return (int)n_sel;
    }
    char *list = xstrdup(device);
    char *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(list, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char *e = tok + strlen(tok);
        while (e > tok && e[-1] == ' ')
            *--e = '\0';
        char *colon = strchr(tok, ':');
        uint64_t num = 0;
        if (colon) {
            *colon = '\0';
            if (fb_parse_uint(colon + 1, 255, &num) < 0 || num == 0) {
                s_why(why, why_len, "device '%s:%s': the port is not a number from 1 to 255", tok,
                      colon + 1);
                rc = -EINVAL;
                break;
            }
        }
        if (!*tok ||
            strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") !=
                strlen(tok)) {
            s_why(why, why_len, "device '%s' is not an HCA name like mlx5_0 or mlx5_0:1", device);
            rc = -EINVAL;
            break;
        }
        bool hca_seen = false, port_seen = false, hca_usable = false;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(ports[i].hca, tok) != 0)
                continue;
            hca_seen = true;
            if (colon && ports[i].port == num) {
                port_seen = true;
                s_add(sel, &n_sel, i);
            } else if (!colon && ports[i].active) {
                hca_usable = true;
                s_add(sel, &n_sel, i);
            }
        }
        /* A named HCA without an active port: all of its ports, for the caller to judge. */
        for (size_t i = 0; i < n && hca_seen && !colon && !hca_usable; i++)
            if (!strcmp(ports[i].hca, tok))
                s_add(sel, &n_sel, i);
        if (!hca_seen || (colon && !port_seen)) {
            char have[512];
            s_hca_names(ports, n, have, sizeof have);
            if (colon)
                s_why(why, why_len, "device %s:%u is not on this node (HCAs here: %s)", tok,
                      (unsigned)num, have);
            else
                s_why(why, why_len, "device %s is not on this node (HCAs here: %s)", tok, have);
            rc = -EINVAL;
        }
    }
    free(list);
    if (rc < 0) {
        free(sel);
        return rc;
    }
    *sel_out = sel;
    return (int)n_sel;
}

void ib_ports_describe(const ib_port_t *ports, size_t n, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const ib_port_t *p = &ports[i];
        size_t used = strlen(out);
        if (used + 1 >= len)
            break;
        if (p->problem[0])
            snprintf(out + used, len - used, "%s%s unreadable", used ? ", " : "", p->name);
        else
            snprintf(out + used, len - used, "%s%s %s (%s)%s", used ? ", " : "", p->name, p->state,
                     p->phys_state[0] ? p->phys_state : "?", p->ib ? "" : " Ethernet");
    }
    if (!out[0])
        fb_strlcpy(out, "no ports", len);
}

void ib_ports_best(const ib_port_t *ports, size_t n, const ib_port_t *p, double *gbps,
                   unsigned *width)
{
    *gbps = p->gbps;
    *width = p->width;
    for (size_t i = 0; i < n; i++) {
        const ib_port_t *q = &ports[i];
        if (!s_usable(q) || q->ib != p->ib || strcmp(q->hca_type, p->hca_type) != 0)
            continue;
        if (q->gbps > *gbps)
            *gbps = q->gbps;
        if (q->width > *width)
            *width = q->width;
    }
}
