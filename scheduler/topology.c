/* SPDX-License-Identifier: Apache-2.0 */
/* The two-level fabric model (nodes -> leaf switches -> spine switches) behind topology-aware
 * pairing and link diagnosis: parsers for fleetburn's topology text format and for
 * `ibnetdiscover` output, the links a pair's traffic crosses, cross-leaf pair rounds that load
 * every leaf-spine uplink, and the scoring that turns slow pairs into a suspect leaf, uplink or
 * node link. Pure logic over text and memory: whoever has the text read it (fileload.h). Error
 * messages quote at most the offending token of the text, never a whole line: a topology may
 * come from anywhere the submitter could read, and its errors travel back over the network. */
#include "topology.h"

#include "common/hostlist.h"
#include "common/strmap.h"
#include "common/util.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    const char **nodes; /* borrowed from fb_topology.nodes */
    size_t n_nodes, cap_nodes;
    const char **spines; /* borrowed from fb_topology.spines */
    size_t *spine_idx;
    size_t n_spines;
} s_leaf_t;

struct fb_topology {
    s_leaf_t *leaves;
    size_t n_leaves;
    char **spines;
    size_t n_spines;
    char **nodes; /* every node, in the order added */
    size_t *node_leaf;
    size_t n_nodes, cap_nodes;
    fb_strmap_t *node_index; /* node name -> index + 1 */
};

static const char s_any_spine[] = "*";

/* Room for one more element in an array of n that holds *cap: doubles the capacity when full
 * (growing by one would copy the array on every element: quadratic in the size of the text). */
static void *s_grow(void *array, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return array;
    *cap = *cap ? *cap * 2 : 8;
    return xrealloc(array, *cap * elem);
}

/* --- model ------------------------------------------------------------------------------- */

static fb_topology_t *s_topology_new(void)
{
    fb_topology_t *self = xcalloc(1, sizeof *self);
    self->node_index = fb_strmap_new();
    return self;
}

void fb_topology_destroy(fb_topology_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_topology_t *self = *self_p;
    for (size_t i = 0; i < self->n_leaves; i++) {
        free(self->leaves[i].name);
        free(self->leaves[i].nodes);
        free(self->leaves[i].spines);
        free(self->leaves[i].spine_idx);
    }
    free(self->leaves);
    for (size_t i = 0; i < self->n_spines; i++)
        free(self->spines[i]);
    free(self->spines);
    for (size_t i = 0; i < self->n_nodes; i++)
        free(self->nodes[i]);
    free(self->nodes);
    free(self->node_leaf);
    fb_strmap_destroy(&self->node_index);
    free(self);
    *self_p = NULL;
}

static size_t s_add_leaf(fb_topology_t *self, const char *name)
{
    self->leaves = xrealloc(self->leaves, (self->n_leaves + 1) * sizeof *self->leaves);
    s_leaf_t *leaf = &self->leaves[self->n_leaves];
    memset(leaf, 0, sizeof *leaf);
    leaf->name = xstrdup(name);
    return self->n_leaves++;
}

static size_t s_add_spine(fb_topology_t *self, const char *name)
{
    self->spines = xrealloc(self->spines, (self->n_spines + 1) * sizeof *self->spines);
    self->spines[self->n_spines] = xstrdup(name);
    return self->n_spines++;
}

/* Returns 0, or the index + 1 of the leaf the node is already on (it is not moved). */
static size_t s_add_node(fb_topology_t *self, size_t leaf, const char *node)
{
    uintptr_t have = (uintptr_t)fb_strmap_get(self->node_index, node);
    if (have)
        return self->node_leaf[have - 1] + 1;
    size_t cap = self->cap_nodes;
    self->nodes = s_grow(self->nodes, self->n_nodes, &cap, sizeof *self->nodes);
    self->node_leaf =
        s_grow(self->node_leaf, self->n_nodes, &self->cap_nodes, sizeof *self->node_leaf);
    self->nodes[self->n_nodes] = xstrdup(node);
    self->node_leaf[self->n_nodes] = leaf;
    self->n_nodes++;
    fb_strmap_put(self->node_index, node, (void *)(uintptr_t)self->n_nodes);
    s_leaf_t *l = &self->leaves[leaf];
    l->nodes = s_grow(l->nodes, l->n_nodes, &l->cap_nodes, sizeof *l->nodes);
    l->nodes[l->n_nodes++] = self->nodes[self->n_nodes - 1];
    return 0;
}

static void s_link(fb_topology_t *self, size_t leaf, size_t spine)
{
    s_leaf_t *l = &self->leaves[leaf];
    for (size_t i = 0; i < l->n_spines; i++)
        if (l->spine_idx[i] == spine)
            return;
    l->spines = xrealloc(l->spines, (l->n_spines + 1) * sizeof *l->spines);
    l->spine_idx = xrealloc(l->spine_idx, (l->n_spines + 1) * sizeof *l->spine_idx);
    l->spines[l->n_spines] = self->spines[spine];
    l->spine_idx[l->n_spines] = spine;
    l->n_spines++;
}

/* Index of the node + 1, or 0. */
static size_t s_node(const fb_topology_t *self, const char *node)
{
    return node ? (size_t)(uintptr_t)fb_strmap_get(self->node_index, node) : 0;
}

size_t fb_topology_n_leaves(const fb_topology_t *self)
{
    return self->n_leaves;
}

size_t fb_topology_n_spines(const fb_topology_t *self)
{
    return self->n_spines;
}

size_t fb_topology_n_nodes(const fb_topology_t *self)
{
    return self->n_nodes;
}

const char *fb_topology_leaf_name(const fb_topology_t *self, size_t i)
{
    return i < self->n_leaves ? self->leaves[i].name : NULL;
}

const char *fb_topology_spine_name(const fb_topology_t *self, size_t i)
{
    return i < self->n_spines ? self->spines[i] : NULL;
}

const char *const *fb_topology_leaf_nodes(const fb_topology_t *self, size_t i, size_t *n)
{
    *n = i < self->n_leaves ? self->leaves[i].n_nodes : 0;
    return i < self->n_leaves ? (const char *const *)self->leaves[i].nodes : NULL;
}

const char *const *fb_topology_leaf_spines(const fb_topology_t *self, size_t i, size_t *n)
{
    *n = i < self->n_leaves ? self->leaves[i].n_spines : 0;
    return i < self->n_leaves ? (const char *const *)self->leaves[i].spines : NULL;
}

const char *fb_topology_leaf_of(const fb_topology_t *self, const char *node)
{
    size_t k = s_node(self, node);
    return k ? self->leaves[self->node_leaf[k - 1]].name : NULL;
}

/* --- parsing helpers --------------------------------------------------------------------- */

/* Next line of *cursor as a heap copy (without the newline), or NULL at the end. */
static char *s_next_line(const char **cursor)
{
    const char *p = *cursor;
    if (!*p)
        return NULL;
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    *cursor = end ? end + 1 : p + len;
    if (len && p[len - 1] == '\r')
        len--;
    return xstrndup(p, len);
}

static char *s_trim(char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

static bool s_valid_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
            return false;
    return true;
}

/* The characters hostlist notation is written with, and blanks between members. */
#define S_MEMBER_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-,[] \t"

/* The first blank-separated word of s, printable and shortened (fb_show_value), into buf. */
static const char *s_show_word(const char *s, char *buf, size_t len)
{
    size_t n = strcspn(s, " \t");
    char *word = xstrndup(s, n);
    fb_show_value(word, buf, len);
    free(word);
    return buf;
}

/* One character for a message: 'x', or the byte as 0xHH when not printable. */
static const char *s_show_char(char c, char *buf, size_t len)
{
    unsigned char u = (unsigned char)c;
    if (u > 0x20 && u < 0x7f && u != '\'')
        snprintf(buf, len, "'%c'", c);
    else
        snprintf(buf, len, "0x%02x", u);
    return buf;
}

/* --- text format ------------------------------------------------------------------------- */

typedef struct {
    unsigned line;
    char *name;
    char **members;
    size_t n_members;
    bool spine;
} s_record_t;

static void s_records_free(s_record_t *recs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(recs[i].name);
        fb_hostlist_free(recs[i].members, recs[i].n_members);
    }
    free(recs);
}

/* Index + 1 of the record or entity called name in an index (strmap of index + 1), or 0.
 * Lookups by name go through maps so that parsing stays linear in the size of the text. */
static size_t s_find(const fb_strmap_t *index, const char *name)
{
    return (size_t)(uintptr_t)fb_strmap_get(index, name);
}

int fb_topology_parse(const char *text, fb_topology_t **out, char *err, size_t errlen)
{
    assert(out);
    *out = NULL;
    if (!text)
        return fb_errf(err, errlen, -EINVAL, "no topology text");
    s_record_t *recs = NULL;
    size_t n = 0, cap_recs = 0, listed = 0; /* members of all lines so far */
    fb_strmap_t *index = fb_strmap_new();   /* record name -> index + 1 */
    int rc = 0;
    unsigned lineno = 0;
    const char *cursor = text;
    char *line;
    char sbuf[64], cbuf[16];
    while (rc == 0 && (line = s_next_line(&cursor)) != NULL) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = s_trim(line);
        if (*s) {
            char *colon = strchr(s, ':');
            if (!colon) {
                rc = fb_errf(err, errlen, -EINVAL,
                             "line %u: no ':' after '%s'; expected 'switch: members'", lineno,
                             s_show_word(s, sbuf, sizeof sbuf));
            } else {
                *colon = '\0';
                char *name = s_trim(s);
                char *rhs = s_trim(colon + 1);
                char herr[160];
                char **members = NULL;
                size_t n_members = 0;
                if (!s_valid_name(name))
                    rc = fb_errf(err, errlen, -EINVAL, "line %u: bad switch name '%s'", lineno,
                                 fb_show_value(name, sbuf, sizeof sbuf));
                else if (s_find(index, name))
                    rc = fb_errf(err, errlen, -EINVAL,
                                 "line %u: switch %s is already defined on line %u", lineno, name,
                                 recs[s_find(index, name) - 1].line);
                else if (!*rhs)
                    rc = fb_errf(err, errlen, -EINVAL, "line %u: switch %s lists no members",
                                 lineno, name);
                else if (rhs[strspn(rhs, S_MEMBER_CHARS)])
                    rc = fb_errf(err, errlen, -EINVAL,
                                 "line %u: %s: a member holds the character %s; expected node "
                                 "names in hostlist notation (letters, digits, '.', '_', '-', "
                                 "',', '[', ']')",
                                 lineno, name,
                                 s_show_char(rhs[strspn(rhs, S_MEMBER_CHARS)], cbuf, sizeof cbuf));
                else if (fb_hostlist_check(rhs, &n_members, herr, sizeof herr) < 0)
                    rc = fb_errf(err, errlen, -EINVAL, "line %u: %s: %s", lineno, name, herr);
                else if ((listed += n_members) > FB_TOPOLOGY_MAX_MEMBERS)
                    rc = fb_errf(err, errlen, -EINVAL,
                                 "line %u: %s: the lines up to here list more than %u members; "
                                 "expected a two-level fabric",
                                 lineno, name, FB_TOPOLOGY_MAX_MEMBERS);
                else if (fb_hostlist_expand(rhs, &members, &n_members, herr, sizeof herr) < 0)
                    rc = fb_errf(err, errlen, -EINVAL, "line %u: %s: %s", lineno, name, herr);
                if (rc == 0) {
                    recs = s_grow(recs, n, &cap_recs, sizeof *recs);
                    recs[n++] = (s_record_t){.line = lineno,
                                             .name = xstrdup(name),
                                             .members = members,
                                             .n_members = n_members};
                    fb_strmap_put(index, name, (void *)(uintptr_t)n);
                }
            }
        }
        free(line);
    }
    /* Classify: members that are all switches make a spine, none a leaf. */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t sw = 0;
        const char *node = NULL, *swname = NULL;
        for (size_t j = 0; j < recs[i].n_members; j++) {
            if (s_find(index, recs[i].members[j])) {
                sw++;
                swname = recs[i].members[j];
            } else if (!node) {
                node = recs[i].members[j];
            }
        }
        if (sw && sw != recs[i].n_members)
            rc = fb_errf(err, errlen, -EINVAL,
                         "line %u: %s lists switch %s and %s, which is not a switch defined in "
                         "this file (a line lists either nodes or leaves)",
                         recs[i].line, recs[i].name, swname, node);
        recs[i].spine = sw > 0;
    }
    fb_topology_t *self = rc == 0 ? s_topology_new() : NULL;
    fb_strmap_t *leaf_index = fb_strmap_new(); /* leaf name -> index + 1 */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (recs[i].spine)
            continue;
        size_t leaf = s_add_leaf(self, recs[i].name);
        fb_strmap_put(leaf_index, recs[i].name, (void *)(uintptr_t)(leaf + 1));
        for (size_t j = 0; rc == 0 && j < recs[i].n_members; j++) {
            size_t other = s_add_node(self, leaf, recs[i].members[j]);
            if (other)
                rc = fb_errf(err, errlen, -EINVAL, "line %u: %s is on %s and %s", recs[i].line,
                             recs[i].members[j], self->leaves[other - 1].name, recs[i].name);
        }
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!recs[i].spine)
            continue;
        size_t spine = s_add_spine(self, recs[i].name);
        for (size_t j = 0; rc == 0 && j < recs[i].n_members; j++) {
            size_t k = s_find(index, recs[i].members[j]) - 1;
            if (recs[k].spine) {
                rc = fb_errf(err, errlen, -EINVAL,
                             "line %u: spine %s lists spine %s (only leaves and spines, two "
                             "levels, are modelled)",
                             recs[i].line, recs[i].name, recs[k].name);
                break;
            }
            size_t l = s_find(leaf_index, recs[k].name);
            if (l)
                s_link(self, l - 1, spine);
        }
    }
    s_records_free(recs, n);
    fb_strmap_destroy(&index);
    fb_strmap_destroy(&leaf_index);
    if (rc == 0 && self->n_leaves == 0)
        rc = fb_errf(err, errlen, -EINVAL, "no leaf switches with nodes in the topology");
    if (rc < 0) {
        fb_topology_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

/* --- ibnetdiscover ----------------------------------------------------------------------- */

typedef struct {
    char *guid; /* "S-0002c9020040f0d0" / "H-0002c903000a1b2c" */
    char *desc; /* node description, may be NULL */
    bool is_switch;
    unsigned line;
    bool has_ca; /* switch: links to a CA */
    size_t idx;  /* leaf or spine index once classified */
} s_ent_t;

typedef struct {
    size_t from; /* entity index */
    char *peer;  /* peer GUID */
    char *peer_desc;
    unsigned line;
} s_iblink_t;

/* Reads a "..." token at *p (after spaces); heap copy or NULL. */
static char *s_quoted(const char **p)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s != '"')
        return NULL;
    const char *end = strchr(s + 1, '"');
    if (!end)
        return NULL;
    *p = end + 1;
    return xstrndup(s + 1, (size_t)(end - s - 1));
}

/* The first quoted string after '#' in line, or NULL. */
static char *s_comment_desc(const char *line)
{
    const char *hash = strchr(line, '#');
    if (!hash)
        return NULL;
    const char *q = strchr(hash, '"');
    if (!q)
        return NULL;
    return s_quoted(&q);
}

/* "MF0;leaf01:SX6036/U1" -> "leaf01"; otherwise the trimmed description. */
static char *s_switch_name(const char *desc)
{
    const char *semi = strchr(desc, ';');
    const char *colon = semi ? strchr(semi, ':') : NULL;
    if (semi && colon && colon > semi + 1)
        return xstrndup(semi + 1, (size_t)(colon - semi - 1));
    char *copy = xstrdup(desc);
    char *t = s_trim(copy);
    char *res = xstrdup(t);
    free(copy);
    return res;
}

/* "node01 mlx5_0" -> "node01". NULL when empty. */
static char *s_ca_host(const char *desc)
{
    while (*desc && isspace((unsigned char)*desc))
        desc++;
    size_t len = 0;
    while (desc[len] && !isspace((unsigned char)desc[len]))
        len++;
    return len ? xstrndup(desc, len) : NULL;
}

static bool s_starts(const char *s, const char *word)
{
    size_t len = strlen(word);
    return strncmp(s, word, len) == 0 && (s[len] == ' ' || s[len] == '\t');
}

int fb_topology_parse_ibnetdiscover(const char *text, fb_topology_t **out, char *err, size_t errlen)
{
    assert(out);
    *out = NULL;
    if (!text)
        return fb_errf(err, errlen, -EINVAL, "no ibnetdiscover text");
    s_ent_t *ents = NULL;
    size_t n_ents = 0, cap_ents = 0;
    fb_strmap_t *ent_index = fb_strmap_new(); /* GUID -> index + 1 */
    s_iblink_t *links = NULL;
    size_t n_links = 0, cap_links = 0;
    int rc = 0;
    unsigned lineno = 0;
    size_t cur = SIZE_MAX; /* current Switch/Ca block; SIZE_MAX outside (or in another kind) */
    bool in_other = false; /* inside an Rt (router) block: its links are skipped */
    const char *cursor = text;
    char *line;
    while (rc == 0 && (line = s_next_line(&cursor)) != NULL) {
        lineno++;
        char *s = s_trim(line);
        bool sw = s_starts(s, "Switch");
        if (sw || s_starts(s, "Ca")) {
            const char *p = s + (sw ? 6 : 2);
            while (*p == ' ' || *p == '\t')
                p++;
            while (isdigit((unsigned char)*p))
                p++;
            char *guid = s_quoted(&p);
            if (!guid) {
                rc = fb_errf(err, errlen, -EINVAL, "line %u: %s line without a quoted GUID", lineno,
                             sw ? "Switch" : "Ca");
            } else if (s_find(ent_index, guid)) {
                char gbuf[64];
                rc = fb_errf(err, errlen, -EINVAL, "line %u: %s is described twice", lineno,
                             fb_show_value(guid, gbuf, sizeof gbuf));
                free(guid);
            } else {
                ents = s_grow(ents, n_ents, &cap_ents, sizeof *ents);
                ents[n_ents] = (s_ent_t){
                    .guid = guid, .desc = s_comment_desc(p), .is_switch = sw, .line = lineno};
                cur = n_ents++;
                fb_strmap_put(ent_index, guid, (void *)(uintptr_t)n_ents);
                in_other = false;
            }
        } else if (s_starts(s, "Rt")) {
            cur = SIZE_MAX;
            in_other = true;
        } else if (s[0] == '[') {
            if (in_other) {
                /* router ports: not part of the leaf/spine model */
            } else if (cur == SIZE_MAX) {
                rc = fb_errf(err, errlen, -EINVAL,
                             "line %u: port line outside a Switch or Ca block", lineno);
            } else {
                const char *p = strchr(s, ']');
                if (p) {
                    p++;
                    if (*p == '(') {
                        const char *close = strchr(p, ')');
                        p = close ? close + 1 : p;
                    }
                }
                char *peer = p ? s_quoted(&p) : NULL;
                if (!peer) {
                    rc = fb_errf(err, errlen, -EINVAL,
                                 "line %u: port line without a quoted peer GUID", lineno);
                } else {
                    links = s_grow(links, n_links, &cap_links, sizeof *links);
                    links[n_links++] = (s_iblink_t){
                        .from = cur, .peer = peer, .peer_desc = s_comment_desc(p), .line = lineno};
                }
            }
        } else if (*s == '\0') {
            cur = SIZE_MAX; /* a blank line ends a block */
            in_other = false;
        }
        /* vendid=, devid=, sysimgguid=, switchguid=, caguid=, comments: not needed */
        free(line);
    }
    /* Classify switches: one with a link to a CA is a leaf. */
    for (size_t i = 0; rc == 0 && i < n_links; i++) {
        s_ent_t *from = &ents[links[i].from];
        size_t k = s_find(ent_index, links[i].peer);
        bool peer_ca = k ? !ents[k - 1].is_switch : links[i].peer[0] == 'H';
        if (from->is_switch && peer_ca)
            from->has_ca = true;
        if (!from->is_switch && k && ents[k - 1].is_switch)
            ents[k - 1].has_ca = true;
    }
    fb_topology_t *self = rc == 0 ? s_topology_new() : NULL;
    fb_strmap_t *names = fb_strmap_new(); /* switch names in use */
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        for (size_t i = 0; i < n_ents; i++) {
            s_ent_t *e = &ents[i];
            if (!e->is_switch || e->has_ca != (pass == 0))
                continue;
            char *name = e->desc ? s_switch_name(e->desc) : NULL;
            if (!name || !*name || fb_strmap_get(names, name)) {
                free(name);
                name = xstrdup(e->guid); /* unnamed or duplicate description */
            }
            fb_strmap_put(names, name, e);
            e->idx = pass == 0 ? s_add_leaf(self, name) : s_add_spine(self, name);
            free(name);
        }
    }
    fb_strmap_destroy(&names);
    /* Nodes on leaves, and leaf-spine links, in file order. */
    char gbuf[64];
    for (size_t i = 0; rc == 0 && i < n_links; i++) {
        const s_ent_t *from = &ents[links[i].from];
        size_t k = s_find(ent_index, links[i].peer);
        const s_ent_t *peer = k ? &ents[k - 1] : NULL;
        if (from->is_switch && from->has_ca &&
            (peer ? !peer->is_switch : links[i].peer[0] == 'H')) {
            const char *desc = links[i].peer_desc ? links[i].peer_desc : peer ? peer->desc : NULL;
            char *host = desc ? s_ca_host(desc) : NULL;
            if (!host)
                rc = fb_errf(err, errlen, -EINVAL, "line %u: no node description for CA %s",
                             links[i].line, fb_show_value(links[i].peer, gbuf, sizeof gbuf));
            else
                s_add_node(self, from->idx, host); /* a second HCA on another leaf: first wins */
            free(host);
        } else if (from->is_switch && peer && peer->is_switch && from->has_ca != peer->has_ca) {
            const s_ent_t *leaf = from->has_ca ? from : peer;
            const s_ent_t *spine = from->has_ca ? peer : from;
            s_link(self, leaf->idx, spine->idx);
        }
    }
    for (size_t i = 0; i < n_ents; i++) {
        free(ents[i].guid);
        free(ents[i].desc);
    }
    free(ents);
    fb_strmap_destroy(&ent_index);
    for (size_t i = 0; i < n_links; i++) {
        free(links[i].peer);
        free(links[i].peer_desc);
    }
    free(links);
    if (rc == 0 && self->n_leaves == 0)
        rc = fb_errf(err, errlen, -EINVAL, "no switch with a channel adapter (node) attached");
    if (rc < 0) {
        fb_topology_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

int fb_topology_parse_any(const char *text, fb_topology_t **out, char *err, size_t errlen)
{
    assert(out);
    *out = NULL;
    bool ib = false;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (s_starts(p, "Switch") || s_starts(p, "Ca")) {
            ib = true;
            break;
        }
    return ib ? fb_topology_parse_ibnetdiscover(text, out, err, errlen)
              : fb_topology_parse(text, out, err, errlen);
}

/* --- paths ------------------------------------------------------------------------------- */

int fb_topology_path(const fb_topology_t *self, const char *a, const char *b, fb_link_t *links,
                     size_t cap)
{
    size_t ka = s_node(self, a), kb = s_node(self, b);
    if (!ka || !kb)
        return -ENOENT;
    if (ka == kb)
        return -EINVAL;
    const s_leaf_t *la = &self->leaves[self->node_leaf[ka - 1]];
    const s_leaf_t *lb = &self->leaves[self->node_leaf[kb - 1]];
    fb_link_t path[4];
    int n = 0;
    path[n++] = (fb_link_t){FB_LINK_NODE_LEAF, self->nodes[ka - 1], la->name};
    if (la != lb) {
        size_t common = 0;
        const char *spine = NULL;
        for (size_t i = 0; i < la->n_spines; i++)
            for (size_t j = 0; j < lb->n_spines; j++)
                if (la->spine_idx[i] == lb->spine_idx[j]) {
                    common++;
                    spine = la->spines[i];
                }
        if (common == 0)
            return -EHOSTUNREACH;
        if (common > 1)
            spine = s_any_spine;
        path[n++] = (fb_link_t){FB_LINK_LEAF_SPINE, la->name, spine};
        path[n++] = (fb_link_t){FB_LINK_LEAF_SPINE, lb->name, spine};
    }
    path[n++] = (fb_link_t){FB_LINK_NODE_LEAF, self->nodes[kb - 1], lb->name};
    for (int i = 0; i < n && (size_t)i < cap; i++)
        links[i] = path[i];
    return n;
}

/* --- topology pairing -------------------------------------------------------------------- */

typedef struct {
    size_t leaf;   /* topology leaf index */
    size_t *nodes; /* indices into the input node list */
    size_t n_nodes, cap_nodes;
} s_active_t;

/* Leaves that hold selected nodes, in topology order. -ENOENT for an unknown node unless
 * skip_unknown. */
static int s_active_leaves(const fb_topology_t *self, const char *const *nodes, size_t n,
                           bool skip_unknown, s_active_t **out, size_t *n_out)
{
    s_active_t *act = xcalloc(self->n_leaves ? self->n_leaves : 1, sizeof *act);
    for (size_t l = 0; l < self->n_leaves; l++)
        act[l].leaf = l;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = s_node(self, nodes[i]);
        if (!k) {
            if (!skip_unknown) {
                rc = -ENOENT;
                break;
            }
            continue;
        }
        s_active_t *a = &act[self->node_leaf[k - 1]];
        a->nodes = s_grow(a->nodes, a->n_nodes, &a->cap_nodes, sizeof *a->nodes);
        a->nodes[a->n_nodes++] = i;
    }
    size_t m = 0;
    for (size_t l = 0; l < self->n_leaves; l++) {
        if (act[l].n_nodes && rc == 0)
            act[m++] = act[l];
        else
            free(act[l].nodes);
    }
    *out = act;
    *n_out = m;
    return rc;
}

static void s_active_free(s_active_t *act, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(act[i].nodes);
    free(act);
}

unsigned fb_topology_pair_rounds(const fb_topology_t *self, const char *const *nodes, size_t n)
{
    s_active_t *act;
    size_t m;
    s_active_leaves(self, nodes, n, true, &act, &m);
    s_active_free(act, m);
    return fb_round_robin_rounds(m);
}

static void s_pair(fb_plan_t *out, const char *const *nodes, size_t i, size_t j, bool *used)
{
    const char *pair[2] = {nodes[i < j ? i : j], nodes[i < j ? j : i]};
    fb_plan_add_group(out, pair, 2);
    used[i] = used[j] = true;
}

/* The most cross-leaf pairs that leaves with these unpaired counts still allow: all but the
 * excess of the largest leaf, at most half of them. */
static size_t s_achievable(const size_t *left, size_t m)
{
    size_t total = 0, max = 0;
    for (size_t l = 0; l < m; l++) {
        total += left[l];
        if (left[l] > max)
            max = left[l];
    }
    return total / 2 < total - max ? total / 2 : total - max;
}

/* The first unused node of leaf a at or after position start (cyclically), as an index into
 * a->nodes, or SIZE_MAX. */
static size_t s_first_unused(const s_active_t *a, size_t start, const bool *used)
{
    for (size_t k = 0; k < a->n_nodes; k++) {
        size_t i = (start + k) % a->n_nodes;
        if (!used[a->nodes[i]])
            return i;
    }
    return SIZE_MAX;
}

int fb_plan_pairs_topology(const fb_topology_t *topo, const char *const *nodes, size_t n,
                           unsigned round, fb_plan_t *out)
{
    assert(topo && out);
    memset(out, 0, sizeof *out);
    int rc = fb_plan_check_nodes(nodes, n);
    if (rc < 0)
        return rc;
    s_active_t *act;
    size_t m;
    rc = s_active_leaves(topo, nodes, n, false, &act, &m);
    if (rc < 0) {
        s_active_free(act, m);
        return rc;
    }
    bool *used = xcalloc(n ? n : 1, sizeof *used);
    size_t *partner = xcalloc(m ? m : 1, sizeof *partner);
    size_t *left = xcalloc(m ? m : 1, sizeof *left);
    for (size_t l = 0; l < m; l++) {
        partner[l] = SIZE_MAX;
        left[l] = act[l].n_nodes;
    }
    unsigned rounds = fb_round_robin_rounds(m);
    size_t cycle = rounds ? round / rounds : 0;
    /* Which leaves meet this round: a round-robin tournament over the active leaves. */
    for (size_t l = 0; l < m && rounds; l++)
        partner[l] = fb_round_robin_partner(m, round % rounds, l);
    /* Each step pairs one node of leaf x with one of leaf y and must keep the matching as
     * large as the leaf sizes allow (s_achievable drops by exactly one). Preferred: two leaves
     * that meet in this round's tournament, the pair with the most unpaired nodes first; else
     * the largest leaf with the next largest (which always keeps the matching maximal). Within
     * two leaves, node i of one meets node i + cycle of the other, so partners change from
     * cycle to cycle. */
    size_t *next = xcalloc(m ? m : 1, sizeof *next);
    for (;;) {
        size_t goal = s_achievable(left, m);
        if (goal == 0)
            break;
        size_t x = SIZE_MAX, y = SIZE_MAX;
        for (size_t l = 0; l < m; l++) {
            size_t p = partner[l];
            if (p == SIZE_MAX || p < l || !left[l] || !left[p])
                continue;
            if (x != SIZE_MAX && left[l] + left[p] <= left[x] + left[y])
                continue;
            left[l]--, left[p]--;
            bool keeps = s_achievable(left, m) + 1 == goal;
            left[l]++, left[p]++;
            if (keeps) {
                x = left[l] >= left[p] ? l : p;
                y = x == l ? p : l;
            }
        }
        if (x == SIZE_MAX) {
            for (size_t l = 0; l < m; l++) {
                if (!left[l])
                    continue;
                if (x == SIZE_MAX || left[l] > left[x]) {
                    y = x;
                    x = l;
                } else if (y == SIZE_MAX || left[l] > left[y]) {
                    y = l;
                }
            }
        }
        assert(x != SIZE_MAX && y != SIZE_MAX);
        size_t ix = s_first_unused(&act[x], next[x], used);
        size_t iy = s_first_unused(&act[y], ix + cycle, used);
        assert(ix != SIZE_MAX && iy != SIZE_MAX);
        s_pair(out, nodes, act[x].nodes[ix], act[y].nodes[iy], used);
        next[x] = ix + 1;
        left[x]--;
        left[y]--;
    }
    for (size_t i = 0; i < n; i++)
        if (!used[i])
            fb_plan_add_idle(out, nodes[i]);
    free(next);
    free(left);
    free(partner);
    free(used);
    s_active_free(act, m);
    return 0;
}

/* --- diagnosis --------------------------------------------------------------------------- */

const char *fb_suspect_kind_name(fb_suspect_kind_t kind)
{
    switch (kind) {
    case FB_SUSPECT_NODE_LINK:
        return "node link";
    case FB_SUSPECT_LEAF_UPLINK:
        return "leaf uplink";
    case FB_SUSPECT_LEAF:
        return "leaf";
    }
    return "?";
}

static int s_suspect_cmp(const void *pa, const void *pb)
{
    const fb_suspect_t *a = pa, *b = pb;
    if (a->passed != b->passed)
        return a->passed < b->passed ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return strcmp(a->name, b->name);
}

int fb_topology_implicate(const fb_topology_t *self, const fb_pair_result_t *results, size_t n,
                          fb_suspect_t *out, size_t cap)
{
    /* Parts: node links [0, N), leaf uplinks [N, N+L), leaves [N+L, N+2L). */
    size_t N = self->n_nodes, L = self->n_leaves, parts = N + 2 * L;
    size_t *slow = xcalloc(parts ? parts : 1, sizeof *slow);
    size_t *passed = xcalloc(parts ? parts : 1, sizeof *passed);
    size_t n_slow = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ka = s_node(self, results[i].a), kb = s_node(self, results[i].b);
        if (!ka || !kb) {
            rc = -ENOENT;
            break;
        }
        size_t la = self->node_leaf[ka - 1], lb = self->node_leaf[kb - 1];
        size_t crossed[6], c = 0;
        crossed[c++] = ka - 1;
        if (kb != ka)
            crossed[c++] = kb - 1;
        crossed[c++] = N + L + la;
        if (la != lb) {
            crossed[c++] = N + L + lb;
            crossed[c++] = N + la;
            crossed[c++] = N + lb;
        }
        size_t *count = results[i].slow ? slow : passed;
        for (size_t j = 0; j < c; j++)
            count[crossed[j]]++;
        n_slow += results[i].slow;
    }
    size_t found = 0;
    if (rc == 0 && n_slow) {
        fb_suspect_t *all = xcalloc(parts, sizeof *all);
        for (size_t p = 0; p < parts; p++) {
            if (slow[p] != n_slow)
                continue;
            fb_suspect_t *s = &all[found++];
            s->slow = slow[p];
            s->passed = passed[p];
            if (p < N) {
                s->kind = FB_SUSPECT_NODE_LINK;
                s->name = self->nodes[p];
            } else if (p < N + L) {
                s->kind = FB_SUSPECT_LEAF_UPLINK;
                s->name = self->leaves[p - N].name;
            } else {
                s->kind = FB_SUSPECT_LEAF;
                s->name = self->leaves[p - N - L].name;
            }
        }
        qsort(all, found, sizeof *all, s_suspect_cmp);
        for (size_t i = 0; i < found && i < cap; i++)
            out[i] = all[i];
        free(all);
    }
    free(slow);
    free(passed);
    return rc < 0 ? rc : (int)found;
}
