/* SPDX-License-Identifier: Apache-2.0 */
/* The subnet manager's routes: ibnetdiscover output (ports and LIDs) with the switches' linear
 * forwarding tables (ibroute or ibdiagnet2.fdbs), read into which spine a flow crosses. The formats
 * and the errors: routes.h. */
#include "routes.h"
#include "common/strmap.h"
#include "common/util.h"
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_LID_MAX 0xBFFFu /* the last unicast LID; above are multicast LIDs */
#define S_PORT_MAX 254u   /* a switch has at most 254 ports; 255 means "no route" */
#define S_PORT_NONE 255u

typedef struct {
    unsigned port;
    uint64_t peer;  /* the peer's GUID */
    size_t peer_sw; /* index of the peer switch, SIZE_MAX for an adapter or one not described */
} s_port_t;

typedef struct {
    uint32_t lid;
    unsigned port;
    unsigned line;
} s_entry_t;

typedef struct {
    uint64_t guid;
    unsigned line; /* its header, for messages */
    s_entry_t *entries;
    size_t n, cap;
} s_table_t;

typedef struct {
    uint64_t guid;
    char *name;
    unsigned line;
    bool leaf; /* an adapter is attached */
    s_port_t *ports;
    size_t n_ports, cap_ports;
    const s_table_t *table; /* its forwarding table, or NULL */
} s_switch_t;

typedef struct {
    char *node, *hca; /* "node01", "mlx5_0" (hca "" when the description has one word) */
    uint32_t lid;
    size_t sw; /* the leaf it is attached to */
} s_adapter_t;

struct fb_routes {
    s_switch_t *sw;
    size_t n_sw, cap_sw;
    s_table_t *tables;
    size_t n_tables, cap_tables;
    s_adapter_t *ca;
    size_t n_ca, cap_ca;
    fb_strmap_t *by_guid;    /* "%016x" switch GUID -> index + 1 */
    fb_strmap_t *by_name;    /* switch names in use */
    fb_strmap_t *by_node;    /* node -> its first adapter's index + 1 */
    fb_strmap_t *by_adapter; /* "node hca" -> index + 1 */
    size_t *leaves, *spines; /* switch indices by kind, file order */
    size_t n_leaves, n_spines;
};

/* ---- helpers -------------------------------------------------------------------------------- */

static void *s_grow(void *array, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return array;
    *cap = *cap ? *cap * 2 : 8;
    return xrealloc(array, *cap * elem);
}

static const char *s_skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static bool s_starts_word(const char *s, const char *word)
{
    size_t len = strlen(word);
    return !strncmp(s, word, len) && (s[len] == ' ' || s[len] == '\t');
}

/* An unsigned number at *p: 0x-prefixed hex or decimal, at most max. Advances *p. */
static bool s_number(const char **p, uint64_t max, uint64_t *out)
{
    const char *s = *p;
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    uint64_t v = 0;
    const char *start = s;
    for (;; s++) {
        int d = isdigit((unsigned char)*s)                  ? *s - '0'
                : base == 16 && isxdigit((unsigned char)*s) ? tolower((unsigned char)*s) - 'a' + 10
                                                            : -1;
        if (d < 0)
            break;
        if (v > (max - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (s == start)
        return false;
    *p = s;
    *out = v;
    return true;
}

/* A GUID written "S-0002c90200410001", "H-...", "0x0002c90200410001" or bare hex. */
static bool s_guid(const char *s, uint64_t *out)
{
    if ((s[0] == 'S' || s[0] == 'H' || s[0] == 'R') && s[1] == '-')
        s += 2;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    const char *p = s;
    uint64_t v = 0;
    size_t digits = 0;
    for (; isxdigit((unsigned char)*p); p++, digits++)
        v = v * 16 + (uint64_t)(isdigit((unsigned char)*p) ? *p - '0'
                                                           : tolower((unsigned char)*p) - 'a' + 10);
    if (digits == 0 || digits > 16)
        return false;
    *out = v;
    return true;
}

static char *s_guid_key(uint64_t guid, char *buf, size_t len)
{
    snprintf(buf, len, "%016" PRIx64, guid);
    return buf;
}

/* A "..." token at *p (after blanks): heap copy, *p after the closing quote; NULL if none. */
static char *s_quoted(const char **p)
{
    const char *s = s_skip_blank(*p);
    if (*s != '"')
        return NULL;
    const char *end = strchr(s + 1, '"');
    if (!end)
        return NULL;
    *p = end + 1;
    return xstrndup(s + 1, (size_t)(end - s - 1));
}

/* The number after the word "lid" in s (the first one), or false. */
static bool s_lid_after(const char *s, uint32_t *lid)
{
    for (const char *p = s; (p = strstr(p, "lid ")) != NULL; p += 4) {
        if (p > s && !isspace((unsigned char)p[-1]))
            continue;
        const char *q = s_skip_blank(p + 4);
        uint64_t v;
        if (s_number(&q, S_LID_MAX, &v)) {
            *lid = (uint32_t)v;
            return true;
        }
    }
    return false;
}

/* "MF0;leaf01:MQM8700/U1" -> "leaf01"; otherwise the description without outer blanks; as
 * scheduler/topology.c names switches. */
static char *s_switch_name(const char *desc)
{
    const char *semi = strchr(desc, ';');
    const char *colon = semi ? strchr(semi, ':') : NULL;
    if (semi && colon && colon > semi + 1)
        return xstrndup(semi + 1, (size_t)(colon - semi - 1));
    const char *s = s_skip_blank(desc);
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    return xstrndup(s, len);
}

/* The token at s (up to a blank or ':'), printable and shortened, for a message: a message
 * quotes the offending word of a file, never its line. */
static const char *s_show_token(const char *s, char *buf, size_t len)
{
    char *token = xstrndup(s, strcspn(s, " \t:"));
    fb_show_value(token, buf, len);
    free(token);
    return buf;
}

/* ---- the parse state ------------------------------------------------------------------------ */

typedef struct {
    fb_routes_t *r;
    char *err;
    size_t errlen;
    unsigned line;
    size_t block;         /* the Switch block being read, SIZE_MAX outside one */
    size_t table;         /* the forwarding table being read, SIZE_MAX outside one */
    s_adapter_t *pending; /* adapters seen on switch ports, attached once switches are known */
    unsigned *pending_line;
    size_t n_pending, cap_pending;
} s_parse_t;

static size_t s_switch_index(const fb_routes_t *r, uint64_t guid)
{
    char key[24];
    uintptr_t v = (uintptr_t)fb_strmap_get(r->by_guid, s_guid_key(guid, key, sizeof key));
    return v ? (size_t)v - 1 : SIZE_MAX;
}

/* "Switch 40 \"S-<guid>\" # \"<desc>\" enhanced port 0 lid 1 lmc 0" */
static int s_switch_header(s_parse_t *ps, const char *s)
{
    fb_routes_t *r = ps->r;
    const char *p = s_skip_blank(s + strlen("Switch"));
    while (isdigit((unsigned char)*p))
        p++;
    char *guid_text = s_quoted(&p);
    uint64_t guid;
    bool ok = guid_text && s_guid(guid_text, &guid);
    free(guid_text);
    if (!ok)
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "line %u: Switch line without a quoted GUID; expected ibnetdiscover's "
                       "'Switch 40 \"S-0002c90200410001\" # \"...\"'",
                       ps->line);
    if (s_switch_index(r, guid) != SIZE_MAX)
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "line %u: switch 0x%016" PRIx64 " is described twice", ps->line, guid);
    const char *hash = strchr(p, '#');
    const char *q = hash ? hash + 1 : NULL;
    char *desc = q ? s_quoted(&q) : NULL;
    char *name = desc ? s_switch_name(desc) : NULL;
    free(desc);
    if (!name || !*name || fb_strmap_get(r->by_name, name)) {
        free(name); /* unnamed, or a description used twice: named by its GUID, as the topology */
        name = xasprintf("S-%016" PRIx64, guid);
    }
    fb_strmap_put(r->by_name, name, (void *)1);
    r->sw = s_grow(r->sw, r->n_sw, &r->cap_sw, sizeof *r->sw);
    r->sw[r->n_sw] = (s_switch_t){.guid = guid, .name = name, .line = ps->line};
    char key[24];
    fb_strmap_put(r->by_guid, s_guid_key(guid, key, sizeof key), (void *)(uintptr_t)(r->n_sw + 1));
    ps->block = r->n_sw++;
    return 0;
}

/* "[1]  \"H-0c42a103001b2c10\"[1](0c42a103001b2c11)  # \"node01 mlx5_0\" lid 101 4xHDR" */
static int s_port_line(s_parse_t *ps, const char *s)
{
    const char *p = s + 1;
    uint64_t port;
    if (!s_number(&p, S_PORT_MAX, &port) || *p != ']')
        return fb_errf(
            ps->err, ps->errlen, -EINVAL,
            "line %u: expected a port line '[PORT] \"PEER-GUID\"[PEER-PORT] # ...' with a "
            "port from 0 to %u",
            ps->line, S_PORT_MAX);
    p++;
    if (*p == '(') { /* the port's own GUID */
        const char *close = strchr(p, ')');
        p = close ? close + 1 : p;
    }
    char *peer_text = s_quoted(&p);
    uint64_t peer;
    bool ok = peer_text && s_guid(peer_text, &peer);
    bool adapter = ok && peer_text[0] == 'H';
    free(peer_text);
    if (!ok)
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "line %u: port line without a quoted peer GUID; expected '[%" PRIu64
                       "] \"S-...\"[PORT]' or '\"H-...\"[PORT]'",
                       ps->line, port);
    s_switch_t *sw = &ps->r->sw[ps->block];
    sw->ports = s_grow(sw->ports, sw->n_ports, &sw->cap_ports, sizeof *sw->ports);
    sw->ports[sw->n_ports++] = (s_port_t){(unsigned)port, peer, SIZE_MAX};
    if (!adapter)
        return 0;
    sw->leaf = true;
    const char *hash = strchr(p, '#');
    const char *q = hash ? hash + 1 : NULL;
    char *desc = q ? s_quoted(&q) : NULL;
    uint32_t lid = 0;
    if (!desc || !s_lid_after(q, &lid) || lid == 0) {
        free(desc);
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "line %u: adapter port without its description and LID; expected '# "
                       "\"node01 mlx5_0\" lid 101 ...' as ibnetdiscover prints it",
                       ps->line);
    }
    const char *d = s_skip_blank(desc);
    size_t nlen = strcspn(d, " \t");
    const char *h = s_skip_blank(d + nlen);
    size_t hlen = strcspn(h, " \t");
    if (nlen == 0) {
        free(desc);
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "line %u: adapter with an empty description; expected \"NODE HCA\"",
                       ps->line);
    }
    ps->pending = s_grow(ps->pending, ps->n_pending, &ps->cap_pending, sizeof *ps->pending);
    ps->pending[ps->n_pending++] =
        (s_adapter_t){xstrndup(d, nlen), xstrndup(h, hlen), lid, ps->block};
    free(desc);
    return 0;
}

/* "Unicast lids [0x0-0x8] of switch DR path slid 0; dlid 0; 0,1 guid 0x0002c9...(desc):" or
 * "osm_ucast_mgr_dump_ucast_routes: Switch 0x0002c9..." */
static int s_table_header(s_parse_t *ps, const char *s, bool ibroute)
{
    const char *g = ibroute ? strstr(s, " guid ") : strstr(s, "Switch ");
    uint64_t guid;
    if (!g || !s_guid(s_skip_blank(g + (ibroute ? 6 : 7)), &guid))
        return fb_errf(ps->err, ps->errlen, -EINVAL, "line %u: forwarding table header without %s",
                       ps->line,
                       ibroute ? "'guid 0x<16 hex digits>'" : "'Switch 0x<16 hex digits>'");
    fb_routes_t *r = ps->r;
    for (size_t i = 0; i < r->n_tables; i++)
        if (r->tables[i].guid == guid)
            return fb_errf(ps->err, ps->errlen, -EINVAL,
                           "line %u: a second forwarding table of switch 0x%016" PRIx64
                           " (the first at line %u); expected one table per switch",
                           ps->line, guid, r->tables[i].line);
    r->tables = s_grow(r->tables, r->n_tables, &r->cap_tables, sizeof *r->tables);
    r->tables[r->n_tables] = (s_table_t){.guid = guid, .line = ps->line};
    ps->table = r->n_tables++;
    return 0;
}

/* "0x0004 001 : (Channel Adapter ...)" (ibroute) or "0x0004 : 001  : 00   : yes" (fdbs). */
static int s_table_entry(s_parse_t *ps, const char *s)
{
    const char *p = s;
    uint64_t lid, port;
    char shown[48];
    if (!s_number(&p, UINT32_MAX, &lid) || lid > S_LID_MAX)
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "line %u: expected a unicast LID (1 to 0x%X) at the start of a forwarding "
                       "entry, got '%s'",
                       ps->line, S_LID_MAX, s_show_token(s, shown, sizeof shown));
    p = s_skip_blank(p);
    if (*p == ':')
        p = s_skip_blank(p + 1);
    if (!strncmp(p, "UNREACHABLE", 11))
        return 0; /* no route to that LID */
    const char *port_text = p;
    if (!s_number(&p, UINT32_MAX, &port) || port > S_PORT_NONE)
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "line %u: expected 'LID PORT' (0x0004 001, or 0x0004 : 001 : 00 : yes) "
                       "with a port from 0 to %u, got '%s'",
                       ps->line, S_PORT_MAX, s_show_token(port_text, shown, sizeof shown));
    if (lid == 0 || port == S_PORT_NONE)
        return 0; /* the reserved LID, or an entry that routes nowhere */
    s_table_t *t = &ps->r->tables[ps->table];
    t->entries = s_grow(t->entries, t->n, &t->cap, sizeof *t->entries);
    t->entries[t->n++] = (s_entry_t){(uint32_t)lid, (unsigned)port, ps->line};
    return 0;
}

/* One line of either output. */
static int s_line(s_parse_t *ps, const char *s)
{
    if (!*s) { /* a blank line ends a block and an ibdiagnet table */
        ps->block = ps->table = SIZE_MAX;
        return 0;
    }
    if (s_starts_word(s, "Switch")) {
        ps->table = SIZE_MAX;
        return s_switch_header(ps, s);
    }
    if (s_starts_word(s, "Ca") || s_starts_word(s, "Rt")) {
        ps->block = ps->table = SIZE_MAX; /* adapters are read from their switch's ports */
        return 0;
    }
    bool ibroute = !strncmp(s, "Unicast lids [", 14);
    if (ibroute || strstr(s, "dump_ucast_routes: Switch ")) {
        ps->block = SIZE_MAX;
        return s_table_header(ps, s, ibroute);
    }
    if (s[0] == '[')
        return ps->block == SIZE_MAX ? 0 : s_port_line(ps, s); /* Ca/Rt ports: not needed */
    if (ps->table != SIZE_MAX) {
        if (strstr(s, "lids dumped")) {
            ps->table = SIZE_MAX;
            return 0;
        }
        if (isdigit((unsigned char)s[0]))
            return s_table_entry(ps, s);
        return 0; /* "Lid  Out   Destination", "LID    : Port : Hops : Optimal", "PLFT_NUM: 0" */
    }
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return fb_errf(
            ps->err, ps->errlen, -EINVAL,
            "line %u: forwarding entry outside a switch's table; expected a header "
            "'Unicast lids [...] of switch ... guid 0x...' (ibroute) or "
            "'osm_ucast_mgr_dump_ucast_routes: Switch 0x...' (ibdiagnet2.fdbs) before it",
            ps->line);
    return 0; /* vendid=, switchguid=, comments, "Topology file: ..." */
}

/* ---- after the text ------------------------------------------------------------------------- */

static int s_entry_cmp(const void *a, const void *b)
{
    const s_entry_t *x = a, *y = b;
    return x->lid < y->lid ? -1 : x->lid > y->lid ? 1 : x->line < y->line ? -1 : x->line > y->line;
}

/* Tables to their switches, sorted by LID; peers to switch indices; adapters to the maps. */
static int s_resolve(s_parse_t *ps)
{
    fb_routes_t *r = ps->r;
    if (r->n_sw == 0)
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "no ibnetdiscover output (Switch blocks); expected ibnetdiscover's output "
                       "followed by the forwarding tables (ibroute, or ibdiagnet2.fdbs)");
    for (size_t i = 0; i < r->n_tables; i++) {
        s_table_t *t = &r->tables[i];
        size_t k = s_switch_index(r, t->guid);
        if (k == SIZE_MAX)
            return fb_errf(ps->err, ps->errlen, -EINVAL,
                           "line %u: forwarding table of switch 0x%016" PRIx64
                           ", which the ibnetdiscover output does not describe; expected the "
                           "tables and ibnetdiscover output of one fabric",
                           t->line, t->guid);
        if (t->n) /* a table may be empty (every LID unreachable) */
            qsort(t->entries, t->n, sizeof *t->entries, s_entry_cmp);
        for (size_t e = 1; e < t->n; e++)
            if (t->entries[e].lid == t->entries[e - 1].lid)
                return fb_errf(ps->err, ps->errlen, -EINVAL,
                               "line %u: LID 0x%04X is routed twice by switch 0x%016" PRIx64
                               " (first at line %u)",
                               t->entries[e].line, t->entries[e].lid, t->guid,
                               t->entries[e - 1].line);
        r->sw[k].table = t;
    }
    bool leaf_table = false;
    for (size_t i = 0; i < r->n_sw; i++) {
        s_switch_t *sw = &r->sw[i];
        for (size_t p = 0; p < sw->n_ports; p++)
            sw->ports[p].peer_sw = s_switch_index(r, sw->ports[p].peer);
        size_t **list = sw->leaf ? &r->leaves : &r->spines;
        size_t *n = sw->leaf ? &r->n_leaves : &r->n_spines;
        *list = xrealloc(*list, (*n + 1) * sizeof **list);
        (*list)[(*n)++] = i;
        leaf_table |= sw->leaf && sw->table;
    }
    if (!leaf_table)
        return fb_errf(ps->err, ps->errlen, -EINVAL,
                       "no forwarding table of a leaf switch (one with nodes attached); expected "
                       "ibroute or ibdiagnet2.fdbs tables after the ibnetdiscover output");
    for (size_t i = 0; i < ps->n_pending; i++) {
        s_adapter_t *a = &ps->pending[i];
        r->ca = s_grow(r->ca, r->n_ca, &r->cap_ca, sizeof *r->ca);
        r->ca[r->n_ca] = *a;
        a->node = a->hca = NULL;
        void *idx = (void *)(uintptr_t)(r->n_ca + 1);
        if (!fb_strmap_get(r->by_node, r->ca[r->n_ca].node))
            fb_strmap_put(r->by_node, r->ca[r->n_ca].node, idx);
        char *key = xasprintf("%s %s", r->ca[r->n_ca].node, r->ca[r->n_ca].hca);
        if (!fb_strmap_get(r->by_adapter, key))
            fb_strmap_put(r->by_adapter, key, idx);
        free(key);
        r->n_ca++;
    }
    return 0;
}

int fb_routes_parse(const char *text, fb_routes_t **out, char *err, size_t errlen)
{
    assert(out);
    *out = NULL;
    if (!text)
        return fb_errf(err, errlen, -EINVAL, "no routes text");
    fb_routes_t *r = xcalloc(1, sizeof *r);
    r->by_guid = fb_strmap_new();
    r->by_name = fb_strmap_new();
    r->by_node = fb_strmap_new();
    r->by_adapter = fb_strmap_new();
    s_parse_t ps = {.r = r, .err = err, .errlen = errlen, .block = SIZE_MAX, .table = SIZE_MAX};
    int rc = 0;
    for (const char *cursor = text; rc == 0 && *cursor;) {
        const char *end = strchr(cursor, '\n');
        size_t len = end ? (size_t)(end - cursor) : strlen(cursor);
        char *line = xstrndup(cursor, len);
        cursor += len + (end ? 1 : 0);
        ps.line++;
        char *s = line;
        while (*s && isspace((unsigned char)*s))
            s++;
        size_t n = strlen(s);
        while (n && isspace((unsigned char)s[n - 1]))
            s[--n] = '\0';
        rc = s_line(&ps, s);
        free(line);
    }
    if (rc == 0)
        rc = s_resolve(&ps);
    for (size_t i = 0; i < ps.n_pending; i++) {
        free(ps.pending[i].node);
        free(ps.pending[i].hca);
    }
    free(ps.pending);
    if (rc) {
        fb_routes_destroy(&r);
        return rc;
    }
    *out = r;
    return 0;
}

void fb_routes_destroy(fb_routes_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_routes_t *r = *self_p;
    for (size_t i = 0; i < r->n_sw; i++) {
        free(r->sw[i].name);
        free(r->sw[i].ports);
    }
    free(r->sw);
    for (size_t i = 0; i < r->n_tables; i++)
        free(r->tables[i].entries);
    free(r->tables);
    for (size_t i = 0; i < r->n_ca; i++) {
        free(r->ca[i].node);
        free(r->ca[i].hca);
    }
    free(r->ca);
    fb_strmap_destroy(&r->by_guid);
    fb_strmap_destroy(&r->by_name);
    fb_strmap_destroy(&r->by_node);
    fb_strmap_destroy(&r->by_adapter);
    free(r->leaves);
    free(r->spines);
    free(r);
    *self_p = NULL;
}

/* ---- lookups -------------------------------------------------------------------------------- */

static const s_adapter_t *s_adapter(const fb_routes_t *r, const char *node, const char *rail)
{
    uintptr_t v = 0;
    if (rail) {
        char *key = xasprintf("%s %s", node, rail);
        v = (uintptr_t)fb_strmap_get(r->by_adapter, key);
        free(key);
    }
    if (!v)
        v = (uintptr_t)fb_strmap_get(r->by_node, node);
    return v ? &r->ca[v - 1] : NULL;
}

static int s_port_of(const s_table_t *t, uint32_t lid)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->entries[mid].lid < lid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && t->entries[lo].lid == lid ? (int)t->entries[lo].port : -1;
}

const char *fb_routes_spine(const fb_routes_t *self, const char *src, const char *dst,
                            const char *rail)
{
    if (!self || !src || !dst)
        return NULL;
    const s_adapter_t *a = s_adapter(self, src, rail), *b = s_adapter(self, dst, rail);
    if (!a || !b || a->sw == b->sw)
        return NULL;
    const s_switch_t *leaf = &self->sw[a->sw];
    int port = leaf->table ? s_port_of(leaf->table, b->lid) : -1;
    for (size_t p = 0; port >= 0 && p < leaf->n_ports; p++) {
        const s_port_t *lp = &leaf->ports[p];
        if (lp->port == (unsigned)port)
            return lp->peer_sw != SIZE_MAX && !self->sw[lp->peer_sw].leaf
                       ? self->sw[lp->peer_sw].name
                       : NULL;
    }
    return NULL;
}

size_t fb_routes_n_leaves(const fb_routes_t *self)
{
    return self ? self->n_leaves : 0;
}

size_t fb_routes_n_spines(const fb_routes_t *self)
{
    return self ? self->n_spines : 0;
}

const char *fb_routes_leaf_name(const fb_routes_t *self, size_t i)
{
    return self && i < self->n_leaves ? self->sw[self->leaves[i]].name : NULL;
}

const char *fb_routes_spine_name(const fb_routes_t *self, size_t i)
{
    return self && i < self->n_spines ? self->sw[self->spines[i]].name : NULL;
}

size_t fb_routes_n_entries(const fb_routes_t *self)
{
    size_t n = 0;
    for (size_t i = 0; self && i < self->n_tables; i++)
        n += self->tables[i].n;
    return n;
}

size_t fb_routes_n_adapters(const fb_routes_t *self)
{
    return self ? self->n_ca : 0;
}
