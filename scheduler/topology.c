/* SPDX-License-Identifier: Apache-2.0 */
/* The two-level fabric model (nodes -> leaf switches -> spine switches) behind topology-aware
 * pairing and link diagnosis: parsers for fleetburn's topology text format and for
 * `ibnetdiscover` output, and the links a pair's traffic crosses (pair rounds and the scoring of
 * slow pairs are in topology_pairs.c). Pure logic over text and memory: whoever has the text read
 * it (fileload.h). Error messages quote at most the offending token of the text, never a whole
 * line: a topology may come from anywhere the submitter could read, and its errors travel back over
 * the network. */
#include "topology.h"
#include "topology_internal.h"

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

static const char s_any_spine[] = "*";

/* Room for one more element in an array of n that holds *cap: doubles the capacity when full
 * (growing by one would copy the array on every element: quadratic in the size of the text). */
void *topology__grow(void *array, size_t n, size_t *cap, size_t elem)
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
    topology__leaf_t *leaf = &self->leaves[self->n_leaves];
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
    self->nodes = topology__grow(self->nodes, self->n_nodes, &cap, sizeof *self->nodes);
    self->node_leaf =
        topology__grow(self->node_leaf, self->n_nodes, &self->cap_nodes, sizeof *self->node_leaf);
    self->nodes[self->n_nodes] = xstrdup(node);
    self->node_leaf[self->n_nodes] = leaf;
    self->n_nodes++;
    fb_strmap_put(self->node_index, node, (void *)(uintptr_t)self->n_nodes);
    topology__leaf_t *l = &self->leaves[leaf];
    l->nodes = topology__grow(l->nodes, l->n_nodes, &l->cap_nodes, sizeof *l->nodes);
    l->nodes[l->n_nodes++] = self->nodes[self->n_nodes - 1];
    return 0;
}

static void s_link(fb_topology_t *self, size_t leaf, size_t spine)
{
    topology__leaf_t *l = &self->leaves[leaf];
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
size_t topology__node(const fb_topology_t *self, const char *node)
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
    size_t k = topology__node(self, node);
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
                    recs = topology__grow(recs, n, &cap_recs, sizeof *recs);
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
                ents = topology__grow(ents, n_ents, &cap_ents, sizeof *ents);
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
                    links = topology__grow(links, n_links, &cap_links, sizeof *links);
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
    size_t ka = topology__node(self, a), kb = topology__node(self, b);
    if (!ka || !kb)
        return -ENOENT;
    if (ka == kb)
        return -EINVAL;
    const topology__leaf_t *la = &self->leaves[self->node_leaf[ka - 1]];
    const topology__leaf_t *lb = &self->leaves[self->node_leaf[kb - 1]];
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
