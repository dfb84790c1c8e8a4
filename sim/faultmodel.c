/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated fleet's fault model: a fault file in, and for any test over any members a
 * verdict and bandwidth factors out. It has to be deterministic in what members can agree on
 * without talking (seed, test id, sorted member names), because every member of a simulated
 * group computes the group's verdict by itself; and it has to route flows the way a fat tree
 * does, because telling a bad uplink from a bad node is what the diagnosis it feeds is tested on.
 * The YAML reading shares common/yamldoc.h with scheduler/campaign.c: the same limits (size,
 * nesting depth, alias expansion), libyaml's document API for line numbers, one error line
 * naming the key path and what was expected. */
#include "faultmodel.h"

#include "scheduler/topology.h"
#include "common/rng.h"
#include "common/strmap.h"
#include "common/units.h"
#include "common/util.h"
#include "common/yamldoc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define S_TOP_KEYS "seed, false_fail_rate, rails, faults"
#define S_FAULT_KEYS "node, nic, link, kind, q, factor"
#define S_RAILS_MAX 64
#define S_NAME_MAX 128
#define S_LINK_SEP "<->"

struct fb_faultmodel {
    char *source;
    uint64_t seed;
    double false_fail_rate;
    unsigned rails;
    fb_fault_t *faults;
    size_t n_faults;
    const fb_topology_t *topo; /* borrowed; NULL until bound */
    fb_strmap_t *leaf_index;      /* leaf name -> index + 1 */
};

/* ---- hashing: the one source of randomness ------------------------------------------------ */

/* FNV-1a over the bytes and a terminator, so "ab"+"c" and "a"+"bc" differ. */
static uint64_t s_hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull;
}

static double s_unit(uint64_t h)
{
    return fb_rng_unit(fb_mix64(h));
}

double fb_faultmodel_uniform(const fb_faultmodel_t *self, const char *key, const char *salt)
{
    uint64_t h = s_hash_str(s_hash_str(0xcbf29ce484222325ull ^ fb_mix64(self->seed), key), salt);
    return s_unit(h);
}

static const char *s_show(const char *text, char *buf, size_t len)
{
    return fb_show_value(text, buf, len);
}

/* ---- values -------------------------------------------------------------------------------- */

static bool s_valid_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= S_NAME_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int s_probability(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, bool zero_ok,
                         bool one_ok, double *out)
{
    const char *expected = zero_ok  ? "expected a probability from 0 to below 1"
                           : one_ok ? "expected a probability above 0 and at most 1"
                                    : "expected a number above 0 and below 1";
    const char *text;
    if (fb_yaml_scalar(ctx, node, path, expected, &text))
        return -EINVAL;
    double v;
    char shown[64];
    if (fb_parse_double(text, &v))
        return fb_yaml_fail(ctx, fb_yaml_line(node), path, "'%s' is not a number; %s",
                            s_show(text, shown, sizeof shown), expected);
    if (v < 0 || (v == 0 && !zero_ok) || v > 1 || (v == 1 && !one_ok))
        return fb_yaml_fail(ctx, fb_yaml_line(node), path, "%s is out of range; %s",
                            s_show(text, shown, sizeof shown), expected);
    *out = v;
    return 0;
}

static int s_uint(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, uint64_t min,
                  uint64_t max, uint64_t *out)
{
    char expected[96];
    snprintf(expected, sizeof expected, "expected an integer from %llu to %llu",
             (unsigned long long)min, (unsigned long long)max);
    const char *text;
    if (fb_yaml_scalar(ctx, node, path, expected, &text))
        return -EINVAL;
    char shown[64];
    if (fb_parse_uint(text, max, out) || *out < min)
        return fb_yaml_fail(ctx, fb_yaml_line(node), path, "'%s' is not in range; %s",
                            s_show(text, shown, sizeof shown), expected);
    return 0;
}

/* ---- one fault ----------------------------------------------------------------------------- */

typedef struct {
    const yaml_node_t *site, *kind, *q, *factor;
    const char *site_key;
} s_fault_nodes_t;

/* Sorts a fault mapping's values into fields; unknown and repeated keys are errors. */
static int s_fault_keys(fb_yaml_t *ctx, const yaml_node_t *map, const char *path,
                        s_fault_nodes_t *f)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(ctx->doc, p->value);
        if (k->type != YAML_SCALAR_NODE || fb_yaml_is_null(k))
            return fb_yaml_fail(ctx, fb_yaml_line(k), path, "a key is %s; expected one of %s",
                                k->type == YAML_SCALAR_NODE ? "not a name" : fb_yaml_kind(k),
                                S_FAULT_KEYS);
        const char *key = (const char *)k->data.scalar.value;
        const yaml_node_t **slot = NULL;
        if (!strcmp(key, "node") || !strcmp(key, "nic") || !strcmp(key, "link")) {
            if (f->site)
                return fb_yaml_fail(ctx, fb_yaml_line(k), path,
                                    "%s and %s both given; expected one of node, nic, link",
                                    f->site_key, key);
            f->site_key = key;
            slot = &f->site;
        } else if (!strcmp(key, "kind")) {
            slot = &f->kind;
        } else if (!strcmp(key, "q")) {
            slot = &f->q;
        } else if (!strcmp(key, "factor")) {
            slot = &f->factor;
        } else {
            char shown[64];
            return fb_yaml_fail(ctx, fb_yaml_line(k), path, "unknown key '%s'; expected one of %s",
                                s_show(key, shown, sizeof shown), S_FAULT_KEYS);
        }
        if (*slot)
            return fb_yaml_fail(ctx, fb_yaml_line(k), path, "%s given twice; expected it once",
                                key);
        *slot = v;
    }
    return 0;
}

static int s_fault_site(fb_yaml_t *ctx, const s_fault_nodes_t *n, const char *path, fb_fault_t *f)
{
    char *p = xasprintf("%s.%s", path, n->site_key);
    const char *text;
    char shown[64];
    int rc = 0;
    if (!strcmp(n->site_key, "node")) {
        f->site = FB_FAULT_AT_NODE;
        rc = fb_yaml_scalar(ctx, n->site, p, "expected a node name", &text);
        if (!rc && !s_valid_name(text))
            rc = fb_yaml_fail(ctx, fb_yaml_line(n->site), p,
                              "'%s' is not a node name; expected letters, "
                              "digits, '.', '_' and '-'",
                              s_show(text, shown, sizeof shown));
        if (!rc)
            f->a = xstrdup(text);
    } else if (!strcmp(n->site_key, "nic")) {
        f->site = FB_FAULT_AT_NIC;
        const char *expected = "expected NODE/RAIL, e.g. sim-0100/1";
        rc = fb_yaml_scalar(ctx, n->site, p, expected, &text);
        const char *slash = rc ? NULL : strrchr(text, '/');
        uint64_t rail = 0;
        char *node = slash ? xstrndup(text, (size_t)(slash - text)) : NULL;
        if (!rc &&
            (!slash || !s_valid_name(node) || fb_parse_uint(slash + 1, S_RAILS_MAX - 1, &rail)))
            rc = fb_yaml_fail(ctx, fb_yaml_line(n->site), p, "'%s' is not a NIC; %s",
                              s_show(text, shown, sizeof shown), expected);
        if (!rc) {
            f->a = node;
            node = NULL;
            f->rail = (unsigned)rail;
        }
        free(node);
    } else {
        f->site = FB_FAULT_AT_LINK;
        const char *expected = "expected NODE<->LEAF or LEAF<->SPINE, e.g. leaf02<->spine01";
        rc = fb_yaml_scalar(ctx, n->site, p, expected, &text);
        const char *sep = rc ? NULL : strstr(text, S_LINK_SEP);
        char *a = sep ? xstrndup(text, (size_t)(sep - text)) : NULL;
        const char *b = sep ? sep + strlen(S_LINK_SEP) : NULL;
        if (!rc && (!sep || !s_valid_name(a) || !s_valid_name(b) || !strcmp(a, b)))
            rc = fb_yaml_fail(ctx, fb_yaml_line(n->site), p, "'%s' is not a link; %s",
                              s_show(text, shown, sizeof shown), expected);
        if (!rc) {
            f->a = a;
            a = NULL;
            f->b = xstrdup(b);
        }
        free(a);
    }
    if (!rc)
        f->part = xstrdup(text);
    free(p);
    return rc;
}

static int s_fault_kind(fb_yaml_t *ctx, const s_fault_nodes_t *n, const char *path, fb_fault_t *f)
{
    const char *expected = "expected hard, intermittent or slow";
    char *p = xasprintf("%s.kind", path);
    const char *text;
    char shown[64];
    int rc = fb_yaml_scalar(ctx, n->kind, p, expected, &text);
    if (!rc) {
        if (!strcmp(text, "hard"))
            f->kind = FB_FAULT_HARD;
        else if (!strcmp(text, "intermittent"))
            f->kind = FB_FAULT_INTERMITTENT;
        else if (!strcmp(text, "slow"))
            f->kind = FB_FAULT_SLOW;
        else
            rc = fb_yaml_fail(ctx, fb_yaml_line(n->kind), p, "unknown kind '%s'; %s",
                              s_show(text, shown, sizeof shown), expected);
    }
    free(p);
    return rc;
}

/* q belongs to intermittent faults and factor to slow ones, and each is required there. */
static int s_fault_numbers(fb_yaml_t *ctx, const s_fault_nodes_t *n, const yaml_node_t *map,
                           const char *path, fb_fault_t *f)
{
    f->q = f->kind == FB_FAULT_HARD ? 1.0 : 0.0;
    f->factor = 1.0;
    const char *kind = fb_fault_kind_name(f->kind);
    char *p = NULL;
    int rc = 0;
    if (n->q && f->kind != FB_FAULT_INTERMITTENT) {
        p = xasprintf("%s.q", path);
        rc = fb_yaml_fail(ctx, fb_yaml_line(n->q), p,
                          "does not apply to kind %s; expected q only with kind "
                          "intermittent",
                          kind);
    } else if (n->factor && f->kind != FB_FAULT_SLOW) {
        p = xasprintf("%s.factor", path);
        rc = fb_yaml_fail(ctx, fb_yaml_line(n->factor), p,
                          "does not apply to kind %s; expected factor only "
                          "with kind slow",
                          kind);
    } else if (f->kind == FB_FAULT_INTERMITTENT) {
        p = xasprintf("%s.q", path);
        rc = n->q ? s_probability(ctx, n->q, p, false, true, &f->q)
                  : fb_yaml_fail(ctx, fb_yaml_line(map), p,
                                 "missing; expected q (the probability that the "
                                 "fault shows in a test) with kind intermittent");
    } else if (f->kind == FB_FAULT_SLOW) {
        p = xasprintf("%s.factor", path);
        rc = n->factor ? s_probability(ctx, n->factor, p, false, false, &f->factor)
                       : fb_yaml_fail(ctx, fb_yaml_line(map), p,
                                      "missing; expected factor (the bandwidth "
                                      "multiplier, e.g. 0.6) with kind slow");
    }
    free(p);
    return rc;
}

static int s_fault(fb_yaml_t *ctx, const yaml_node_t *map, const char *path, fb_fault_t *f)
{
    if (map->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(map), path,
                            "is %s; expected a mapping such as {node: NAME, "
                            "kind: hard}",
                            fb_yaml_kind(map));
    f->line = fb_yaml_line(map);
    s_fault_nodes_t n = {0};
    if (s_fault_keys(ctx, map, path, &n))
        return -EINVAL;
    if (!n.site)
        return fb_yaml_fail(ctx, fb_yaml_line(map), path,
                            "no part; expected one of node, nic, link");
    if (!n.kind) {
        char *p = xasprintf("%s.kind", path);
        fb_yaml_fail(ctx, fb_yaml_line(map), p, "missing; expected hard, intermittent or slow");
        free(p);
        return -EINVAL;
    }
    if (s_fault_site(ctx, &n, path, f) || s_fault_kind(ctx, &n, path, f))
        return -EINVAL;
    return s_fault_numbers(ctx, &n, map, path, f);
}

static int s_faults(fb_yaml_t *ctx, const yaml_node_t *seq, fb_faultmodel_t *m)
{
    if (fb_yaml_is_null(seq))
        return 0;
    if (seq->type != YAML_SEQUENCE_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(seq), "faults", "is %s; expected a list of faults",
                            fb_yaml_kind(seq));
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    m->faults = xcalloc(n ? n : 1, sizeof *m->faults);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yaml_document_get_node(ctx->doc, seq->data.sequence.items.start[i]);
        char path[32];
        snprintf(path, sizeof path, "faults[%zu]", i);
        fb_fault_t *f = &m->faults[m->n_faults++];
        if (s_fault(ctx, item, path, f))
            return -EINVAL;
    }
    return 0;
}

/* ---- the file ------------------------------------------------------------------------------ */

static int s_top(fb_yaml_t *ctx, const yaml_node_t *root, fb_faultmodel_t *m)
{
    if (root->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(root), "(top level)",
                            "is %s; expected a mapping with keys %s", fb_yaml_kind(root),
                            S_TOP_KEYS);
    bool seen[4] = {false, false, false, false};
    static const char *const keys[] = {"seed", "false_fail_rate", "rails", "faults"};
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(ctx->doc, p->value);
        const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
        size_t which = 0;
        while (which < 4 && strcmp(key, keys[which]))
            which++;
        char shown[64];
        if (which == 4)
            return fb_yaml_fail(ctx, fb_yaml_line(k), "(top level)",
                                "unknown key '%s'; expected one of %s",
                                s_show(key, shown, sizeof shown), S_TOP_KEYS);
        if (seen[which])
            return fb_yaml_fail(ctx, fb_yaml_line(k), key, "given twice; expected it once");
        seen[which] = true;
        uint64_t u = 0;
        int rc = 0;
        switch (which) {
        case 0:
            rc = s_uint(ctx, v, key, 0, UINT64_MAX, &m->seed);
            break;
        case 1:
            rc = s_probability(ctx, v, key, true, false, &m->false_fail_rate);
            break;
        case 2:
            rc = s_uint(ctx, v, key, 1, S_RAILS_MAX, &u);
            m->rails = (unsigned)u;
            break;
        default:
            rc = s_faults(ctx, v, m);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static fb_faultmodel_t *s_model_new(const char *source)
{
    fb_faultmodel_t *m = xcalloc(1, sizeof *m);
    m->source = xstrdup(source);
    m->seed = 1;
    m->rails = 8;
    return m;
}

int fb_faultmodel_parse(const char *text, size_t len, const char *source, fb_faultmodel_t **out,
                        char **error_out)
{
    *out = NULL;
    if (error_out)
        *error_out = NULL;
    fb_yaml_t ctx = {source ? source : "<faults>", text ? text : "", text ? len : 0, NULL, NULL, 0};
    yaml_document_t doc;
    fb_faultmodel_t *m = s_model_new(ctx.source);
    int rc = fb_yaml_load(&ctx, &doc, FB_FAULTMODEL_MAX_BYTES, "fault file");
    if (rc == 0) {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (!root || fb_yaml_is_null(root))
            rc = fb_yaml_fail(&ctx, fb_yaml_line(root), "(top level)",
                              "empty fault file; expected a mapping with keys %s", S_TOP_KEYS);
        else
            rc = s_top(&ctx, root, m);
        yaml_document_delete(&doc);
    }
    if (rc) {
        fb_faultmodel_destroy(&m);
        if (error_out)
            *error_out = ctx.error;
        else
            free(ctx.error);
        return rc;
    }
    *out = m;
    return 0;
}

void fb_faultmodel_destroy(fb_faultmodel_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_faultmodel_t *self = *self_p;
    *self_p = NULL;
    for (size_t i = 0; i < self->n_faults; i++) {
        free(self->faults[i].part);
        free(self->faults[i].a);
        free(self->faults[i].b);
    }
    free(self->faults);
    fb_strmap_destroy(&self->leaf_index);
    free(self->source);
    free(self);
}

/* ---- binding to the fabric ----------------------------------------------------------------- */

static size_t s_leaf_index(const fb_faultmodel_t *self, const char *leaf)
{
    return leaf && self->leaf_index ? (size_t)(uintptr_t)fb_strmap_get(self->leaf_index, leaf) : 0;
}

static bool s_leaf_has_spine(const fb_faultmodel_t *self, size_t leaf_plus1, const char *spine)
{
    size_t n = 0;
    const char *const *spines = fb_topology_leaf_spines(self->topo, leaf_plus1 - 1, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(spines[i], spine))
            return true;
    return false;
}

/* True when the two ends name a link of the topology: node and its leaf, or leaf and spine. */
static bool s_is_link(const fb_faultmodel_t *self, const char *x, const char *y)
{
    const char *leaf = fb_topology_leaf_of(self->topo, x);
    if (leaf)
        return !strcmp(leaf, y);
    size_t li = s_leaf_index(self, x);
    return li && s_leaf_has_spine(self, li, y);
}

static int s_check_fault(const fb_faultmodel_t *self, fb_yaml_t *ctx, size_t i)
{
    const fb_fault_t *f = &self->faults[i];
    char path[48];
    snprintf(path, sizeof path, "faults[%zu].%s", i, fb_fault_site_name(f->site));
    if (f->site != FB_FAULT_AT_LINK) {
        if (!fb_topology_leaf_of(self->topo, f->a))
            return fb_yaml_fail(ctx, f->line, path,
                                "%s is not a node of the fleet; expected a node of "
                                "the topology",
                                f->a);
        if (f->site == FB_FAULT_AT_NIC && f->rail >= self->rails)
            return fb_yaml_fail(ctx, f->line, path,
                                "rail %u of %s does not exist; expected a rail "
                                "from 0 to %u (rails: %u)",
                                f->rail, f->a, self->rails - 1, self->rails);
        return 0;
    }
    if (s_is_link(self, f->a, f->b) || s_is_link(self, f->b, f->a))
        return 0;
    return fb_yaml_fail(ctx, f->line, path,
                        "%s is not a link of the topology; expected NODE<->LEAF "
                        "(a node and its leaf) or LEAF<->SPINE (a leaf and one of its spines)",
                        f->part);
}

int fb_faultmodel_bind(fb_faultmodel_t *self, const fb_topology_t *topo, char **error_out)
{
    if (error_out)
        *error_out = NULL;
    self->topo = topo;
    fb_strmap_destroy(&self->leaf_index);
    self->leaf_index = fb_strmap_new();
    for (size_t i = 0; i < fb_topology_n_leaves(topo); i++)
        fb_strmap_put(self->leaf_index, fb_topology_leaf_name(topo, i), (void *)(uintptr_t)(i + 1));
    fb_yaml_t ctx = {self->source, "", 0, NULL, NULL, 0};
    for (size_t i = 0; i < self->n_faults; i++) {
        if (s_check_fault(self, &ctx, i)) {
            self->topo = NULL;
            fb_strmap_destroy(&self->leaf_index);
            if (error_out)
                *error_out = ctx.error;
            else
                free(ctx.error);
            return -EINVAL;
        }
    }
    return 0;
}

/* ---- routes -------------------------------------------------------------------------------- */

typedef struct {
    const char *a, *b;
} s_hop_t;

/* The links of the flow src -> dst (at most 4), or 0 when not bound or a node is unknown. */
static size_t s_route(const fb_faultmodel_t *self, const char *src, const char *dst, s_hop_t *hops)
{
    if (!self->topo)
        return 0;
    const char *ls = fb_topology_leaf_of(self->topo, src),
               *ld = fb_topology_leaf_of(self->topo, dst);
    if (!ls || !ld)
        return 0;
    size_t n = 0;
    hops[n++] = (s_hop_t){src, ls};
    if (strcmp(ls, ld)) {
        size_t is = s_leaf_index(self, ls), id = s_leaf_index(self, ld), ns = 0, nd = 0;
        const char *const *ss = fb_topology_leaf_spines(self->topo, is - 1, &ns);
        const char *const *sd = fb_topology_leaf_spines(self->topo, id - 1, &nd);
        const char *common[64];
        size_t nc = 0;
        for (size_t i = 0; i < ns && nc < FB_ARRAY_LEN(common); i++)
            for (size_t j = 0; j < nd; j++)
                if (!strcmp(ss[i], sd[j])) {
                    common[nc++] = ss[i];
                    break;
                }
        if (nc) {
            const char *spine = common[fb_mix64(s_hash_str(0, dst)) % nc];
            hops[n++] = (s_hop_t){ls, spine};
            hops[n++] = (s_hop_t){ld, spine};
        }
    }
    hops[n++] = (s_hop_t){dst, ld};
    return n;
}

static bool s_link_is(const fb_fault_t *f, const s_hop_t *h)
{
    return (!strcmp(f->a, h->a) && !strcmp(f->b, h->b)) ||
           (!strcmp(f->a, h->b) && !strcmp(f->b, h->a));
}

static bool s_rail_matches(const fb_fault_t *f, int rail)
{
    return rail < 0 || (unsigned)rail == f->rail;
}

/* Whether fault f lies on the flow src -> dst on rail. */
static bool s_on_flow(const fb_fault_t *f, const char *src, const char *dst, int rail,
                      const s_hop_t *hops, size_t n_hops)
{
    switch (f->site) {
    case FB_FAULT_AT_NODE:
        return !strcmp(f->a, src) || !strcmp(f->a, dst);
    case FB_FAULT_AT_NIC:
        return s_rail_matches(f, rail) && (!strcmp(f->a, src) || !strcmp(f->a, dst));
    default:
        for (size_t i = 0; i < n_hops; i++)
            if (s_link_is(f, &hops[i]))
                return true;
        return false;
    }
}

double fb_faultmodel_flow_factor(const fb_faultmodel_t *self, const char *src, const char *dst,
                                 int rail)
{
    s_hop_t hops[4];
    size_t n_hops = s_route(self, src, dst, hops);
    double factor = 1.0;
    for (size_t i = 0; i < self->n_faults; i++) {
        const fb_fault_t *f = &self->faults[i];
        if (f->kind == FB_FAULT_SLOW && f->factor < factor &&
            s_on_flow(f, src, dst, rail, hops, n_hops))
            factor = f->factor;
    }
    return factor;
}

const char *fb_faultmodel_spine(const fb_faultmodel_t *self, const char *src, const char *dst)
{
    s_hop_t hops[4];
    return s_route(self, src, dst, hops) == 4 ? hops[1].b : NULL;
}

double fb_faultmodel_node_factor(const fb_faultmodel_t *self, const char *node)
{
    double factor = 1.0;
    for (size_t i = 0; i < self->n_faults; i++) {
        const fb_fault_t *f = &self->faults[i];
        if (f->kind == FB_FAULT_SLOW && f->site == FB_FAULT_AT_NODE && f->factor < factor &&
            !strcmp(f->a, node))
            factor = f->factor;
    }
    return factor;
}

/* ---- judging ------------------------------------------------------------------------------- */

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Which faults lie in the test (in[i]) and the smallest slow factor over its flows. */
static double s_faults_in(const fb_faultmodel_t *self, const fb_sim_test_t *t,
                          const char *const *sorted, bool *in)
{
    size_t n = t->n_members;
    double factor = 1.0;
    if (n == 1) {
        for (size_t i = 0; i < self->n_faults; i++) {
            const fb_fault_t *f = &self->faults[i];
            in[i] = f->site == FB_FAULT_AT_NODE && !strcmp(f->a, sorted[0]);
            if (in[i] && f->kind == FB_FAULT_SLOW && f->factor < factor)
                factor = f->factor;
        }
        return factor;
    }
    /* A pair has one flow each way; a ring of n > 2 has n neighbour links, each both ways. */
    size_t n_links = n == 2 ? 1 : n;
    for (size_t k = 0; k < n_links; k++) {
        const char *x = sorted[k], *y = sorted[(k + 1) % n];
        for (int dir = 0; dir < 2; dir++) {
            const char *src = dir ? y : x, *dst = dir ? x : y;
            s_hop_t hops[4];
            size_t n_hops = s_route(self, src, dst, hops);
            for (size_t i = 0; i < self->n_faults; i++) {
                const fb_fault_t *f = &self->faults[i];
                if (!s_on_flow(f, src, dst, t->rail, hops, n_hops))
                    continue;
                in[i] = true;
                if (f->kind == FB_FAULT_SLOW && f->factor < factor)
                    factor = f->factor;
            }
        }
    }
    return factor;
}

int fb_faultmodel_judge(const fb_faultmodel_t *self, const fb_sim_test_t *t, fb_sim_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    out->factor = 1.0;
    if (!t || !t->test_id || !t->members || t->n_members == 0)
        return -EINVAL;
    const char **sorted = xmalloc(t->n_members * sizeof *sorted);
    memcpy(sorted, t->members, t->n_members * sizeof *sorted);
    qsort(sorted, t->n_members, sizeof *sorted, s_cmp_str);
    /* Every draw of this test hashes the same key: seed, test id and the sorted members. */
    uint64_t key = s_hash_str(0xcbf29ce484222325ull ^ fb_mix64(self->seed), t->test_id);
    for (size_t i = 0; i < t->n_members; i++)
        key = s_hash_str(key, sorted[i]);
    bool *in = xcalloc(self->n_faults ? self->n_faults : 1, sizeof *in);
    out->factor = s_faults_in(self, t, sorted, in);
    for (size_t i = 0; i < self->n_faults; i++) {
        const fb_fault_t *f = &self->faults[i];
        if (!in[i] || f->kind == FB_FAULT_SLOW)
            continue;
        if (f->kind == FB_FAULT_HARD || s_unit(key ^ fb_mix64(i + 1)) < f->q) {
            if (out->n_causes < FB_SIM_CAUSES_MAX)
                out->causes[out->n_causes] = i;
            out->n_causes++;
        }
    }
    bool spurious = s_unit(key ^ fb_mix64(0)) < self->false_fail_rate;
    out->failed = out->n_causes > 0 || spurious;
    out->spurious = spurious && out->n_causes == 0;
    free(in);
    free(sorted);
    return 0;
}

/* ---- accessors ----------------------------------------------------------------------------- */

uint64_t fb_faultmodel_seed(const fb_faultmodel_t *self)
{
    return self->seed;
}

void fb_faultmodel_set_seed(fb_faultmodel_t *self, uint64_t seed)
{
    self->seed = seed;
}

double fb_faultmodel_false_fail_rate(const fb_faultmodel_t *self)
{
    return self->false_fail_rate;
}

unsigned fb_faultmodel_rails(const fb_faultmodel_t *self)
{
    return self->rails;
}

size_t fb_faultmodel_count(const fb_faultmodel_t *self)
{
    return self->n_faults;
}

const fb_fault_t *fb_faultmodel_fault(const fb_faultmodel_t *self, size_t i)
{
    return i < self->n_faults ? &self->faults[i] : NULL;
}

const char *fb_fault_kind_name(fb_fault_kind_t kind)
{
    switch (kind) {
    case FB_FAULT_HARD:
        return "hard";
    case FB_FAULT_INTERMITTENT:
        return "intermittent";
    default:
        return "slow";
    }
}

const char *fb_fault_site_name(fb_fault_site_t site)
{
    switch (site) {
    case FB_FAULT_AT_NODE:
        return "node";
    case FB_FAULT_AT_NIC:
        return "nic";
    default:
        return "link";
    }
}
