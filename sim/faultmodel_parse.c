/* SPDX-License-Identifier: Apache-2.0 */
/* The fault file: YAML text in, a fault model (sim/faultmodel_impl.h) or one error line out. It
 * shares common/yamldoc.h with scheduler/campaign.c: the same limits (size, nesting depth, alias
 * expansion), libyaml's document API for line numbers, one error line naming the key path, what
 * is wrong and what was expected. Every number is checked against the range its meaning allows
 * (a probability, a share of time, a multiplier), so that the model never has to guard against
 * a value it cannot simulate. */
#include "faultmodel_impl.h"

#include "common/units.h"
#include "common/util.h"
#include "common/yamldoc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define S_TOP_KEYS "seed, false_fail_rate, lost_rate, disagree_rate, noise, rails, faults"
#define S_FAULT_KEYS "node, nic, link, leaf, kind, q, burst, factor, sigma"
#define S_NOISE_KEYS "dist, sigma, width"
#define S_KINDS "hard, intermittent, slow or noisy"
#define S_NAME_MAX 128
#define S_LINK_SEP "<->"
#define S_SIGMA_MAX 1.0
#define S_WIDTH_MAX 0.5

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

/* The error for the value text at path that is not what it should be:
 * "'TEXT' is not WHAT; EXPECTED". */
static int s_not(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, const char *text,
                 const char *what, const char *expected)
{
    char shown[64];
    return fb_yaml_fail(ctx, fb_yaml_line(node), path, "'%s' is not %s; %s",
                        s_show(text, shown, sizeof shown), what, expected);
}

/* A number in a range whose ends are each open or closed; expected names the range. */
typedef struct {
    double min, max;
    bool min_open, max_open;
    const char *expected;
} s_range_t;

static int s_number(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                    const s_range_t *range, double *out)
{
    const char *text;
    if (fb_yaml_scalar(ctx, node, path, range->expected, &text))
        return -EINVAL;
    double v;
    char shown[64];
    if (fb_parse_double(text, &v))
        return s_not(ctx, node, path, text, "a number", range->expected);
    if (v < range->min || (v == range->min && range->min_open) || v > range->max ||
        (v == range->max && range->max_open))
        return fb_yaml_fail(ctx, fb_yaml_line(node), path, "%s is out of range; %s",
                            s_show(text, shown, sizeof shown), range->expected);
    *out = v;
    return 0;
}

/* The ranges of the file's numbers. */
static const s_range_t s_rate = {0, 1, false, true, "expected a probability from 0 to below 1"};
static const s_range_t s_q = {0, 1, true, false, "expected a probability above 0 and at most 1"};
static const s_range_t s_factor = {0, 1, true, true, "expected a number above 0 and below 1"};
static const s_range_t s_burst = {0, FB_FAULTMODEL_MAX_BURST_S, true, false,
                                  "expected seconds above 0 and at most 10000000"};
static const s_range_t s_sigma = {0, S_SIGMA_MAX, true, false,
                                  "expected a number above 0 and at most 1"};
static const s_range_t s_width = {0, S_WIDTH_MAX, false, false, "expected a number from 0 to 0.5"};

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

/* A key of a mapping as text, or an error when it is not a plain name. */
static int s_key(fb_yaml_t *ctx, const yaml_node_t *k, const char *path, const char *keys,
                 const char **out)
{
    if (k->type != YAML_SCALAR_NODE || fb_yaml_is_null(k))
        return fb_yaml_fail(ctx, fb_yaml_line(k), path, "a key is %s; expected one of %s",
                            k->type == YAML_SCALAR_NODE ? "not a name" : fb_yaml_kind(k), keys);
    *out = (const char *)k->data.scalar.value;
    return 0;
}

/* Looks key up in names[0..n); when found, stores v in slots[i] (an error if it is there
 * already) and returns 1; 0 when the key is not one of them. */
static int s_slot(fb_yaml_t *ctx, const yaml_node_t *k, const yaml_node_t *v, const char *path,
                  const char *key, const char *const *names, size_t n, const yaml_node_t **slots)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(key, names[i]))
            continue;
        if (slots[i])
            return fb_yaml_fail(ctx, fb_yaml_line(k), path, "%s given twice; expected it once",
                                key);
        slots[i] = v;
        return 1;
    }
    return 0;
}

/* ---- one fault ----------------------------------------------------------------------------- */

enum { S_F_KIND, S_F_Q, S_F_BURST, S_F_FACTOR, S_F_SIGMA, S_F_N };
static const char *const s_fault_value_keys[S_F_N] = {"kind", "q", "burst", "factor", "sigma"};
static const char *const s_site_keys[] = {"node", "nic", "link", "leaf"};

typedef struct {
    const yaml_node_t *site;
    const char *site_key;
    const yaml_node_t *v[S_F_N];
} s_fault_nodes_t;

/* Sorts a fault mapping's values into fields; unknown and repeated keys are errors. */
static int s_fault_keys(fb_yaml_t *ctx, const yaml_node_t *map, const char *path,
                        s_fault_nodes_t *f)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(ctx->doc, p->value);
        const char *key;
        if (s_key(ctx, k, path, S_FAULT_KEYS, &key))
            return -EINVAL;
        bool site = false;
        for (size_t i = 0; i < FB_ARRAY_LEN(s_site_keys); i++)
            site |= !strcmp(key, s_site_keys[i]);
        if (site) {
            if (f->site)
                return fb_yaml_fail(ctx, fb_yaml_line(k), path,
                                    "%s and %s both given; expected one of node, nic, link, leaf",
                                    f->site_key, key);
            f->site_key = key;
            f->site = v;
            continue;
        }
        int rc = s_slot(ctx, k, v, path, key, s_fault_value_keys, S_F_N, f->v);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            char shown[64];
            return fb_yaml_fail(ctx, fb_yaml_line(k), path, "unknown key '%s'; expected one of %s",
                                s_show(key, shown, sizeof shown), S_FAULT_KEYS);
        }
    }
    return 0;
}

/* A node or leaf name at path p; heap copy in *out. */
static int s_switch_or_node(fb_yaml_t *ctx, const yaml_node_t *node, const char *p,
                            const char *what, char **out)
{
    char expected[48], shown[64];
    snprintf(expected, sizeof expected, "expected a %s name", what);
    const char *text;
    if (fb_yaml_scalar(ctx, node, p, expected, &text))
        return -EINVAL;
    if (!s_valid_name(text))
        return fb_yaml_fail(ctx, fb_yaml_line(node), p,
                            "'%s' is not a %s name; expected letters, digits, '.', '_' and '-'",
                            s_show(text, shown, sizeof shown), what);
    *out = xstrdup(text);
    return 0;
}

static int s_nic(fb_yaml_t *ctx, const yaml_node_t *node, const char *p, fb_fault_t *f)
{
    const char *expected = "expected NODE/RAIL, e.g. sim-0100/1";
    const char *text;
    if (fb_yaml_scalar(ctx, node, p, expected, &text))
        return -EINVAL;
    const char *slash = strrchr(text, '/');
    uint64_t rail = 0;
    char *name = slash ? xstrndup(text, (size_t)(slash - text)) : NULL;
    if (!slash || !s_valid_name(name) ||
        fb_parse_uint(slash + 1, FB_FAULTMODEL_RAILS_MAX - 1, &rail)) {
        free(name);
        return s_not(ctx, node, p, text, "a NIC", expected);
    }
    f->a = name;
    f->rail = (unsigned)rail;
    return 0;
}

static int s_link(fb_yaml_t *ctx, const yaml_node_t *node, const char *p, fb_fault_t *f)
{
    const char *expected = "expected NODE<->LEAF or LEAF<->SPINE, e.g. leaf02<->spine01";
    const char *text;
    if (fb_yaml_scalar(ctx, node, p, expected, &text))
        return -EINVAL;
    const char *sep = strstr(text, S_LINK_SEP);
    char *a = sep ? xstrndup(text, (size_t)(sep - text)) : NULL;
    const char *b = sep ? sep + strlen(S_LINK_SEP) : NULL;
    if (!sep || !s_valid_name(a) || !s_valid_name(b) || !strcmp(a, b)) {
        free(a);
        return s_not(ctx, node, p, text, "a link", expected);
    }
    f->a = a;
    f->b = xstrdup(b);
    return 0;
}

static int s_fault_site(fb_yaml_t *ctx, const s_fault_nodes_t *n, const char *path, fb_fault_t *f)
{
    char *p = xasprintf("%s.%s", path, n->site_key);
    int rc;
    if (!strcmp(n->site_key, "node")) {
        f->site = FB_FAULT_AT_NODE;
        rc = s_switch_or_node(ctx, n->site, p, "node", &f->a);
    } else if (!strcmp(n->site_key, "nic")) {
        f->site = FB_FAULT_AT_NIC;
        rc = s_nic(ctx, n->site, p, f);
    } else if (!strcmp(n->site_key, "link")) {
        f->site = FB_FAULT_AT_LINK;
        rc = s_link(ctx, n->site, p, f);
    } else {
        f->site = FB_FAULT_AT_LEAF;
        rc = s_switch_or_node(ctx, n->site, p, "leaf", &f->a);
    }
    if (!rc)
        f->part = xstrdup((const char *)n->site->data.scalar.value);
    free(p);
    return rc;
}

static int s_fault_kind(fb_yaml_t *ctx, const s_fault_nodes_t *n, const char *path, fb_fault_t *f)
{
    const char *expected = "expected " S_KINDS;
    const yaml_node_t *node = n->v[S_F_KIND];
    char *p = xasprintf("%s.kind", path);
    const char *text;
    char shown[64];
    int rc = fb_yaml_scalar(ctx, node, p, expected, &text);
    if (!rc) {
        if (!strcmp(text, "hard"))
            f->kind = FB_FAULT_HARD;
        else if (!strcmp(text, "intermittent"))
            f->kind = FB_FAULT_INTERMITTENT;
        else if (!strcmp(text, "slow"))
            f->kind = FB_FAULT_SLOW;
        else if (!strcmp(text, "noisy"))
            f->kind = FB_FAULT_NOISY;
        else
            rc = fb_yaml_fail(ctx, fb_yaml_line(node), p, "unknown kind '%s'; %s",
                              s_show(text, shown, sizeof shown), expected);
    }
    /* Noise belongs to a machine's measurements, not to a NIC, cable or switch. */
    if (!rc && f->kind == FB_FAULT_NOISY && f->site != FB_FAULT_AT_NODE)
        rc = fb_yaml_fail(ctx, fb_yaml_line(node), p,
                          "noisy does not apply to a %s; expected kind noisy only at a node",
                          fb_fault_site_name(f->site));
    free(p);
    return rc;
}

/* Which kind each value key belongs to, and what the message calls it when it is missing. */
static const struct {
    int key;
    fb_fault_kind_t kind;
    bool required;
    const char *missing; /* "missing; expected ..." */
} s_value_rules[] = {
    {S_F_Q, FB_FAULT_INTERMITTENT, true,
     "expected q (the probability that the fault shows in a test) with kind intermittent"},
    {S_F_BURST, FB_FAULT_INTERMITTENT, false, NULL},
    {S_F_FACTOR, FB_FAULT_SLOW, true,
     "expected factor (the bandwidth multiplier, e.g. 0.6) with kind slow"},
    {S_F_SIGMA, FB_FAULT_NOISY, true,
     "expected sigma (the spread of its measurements, e.g. 0.2) with kind noisy"},
};

/* q and burst belong to intermittent faults, factor to slow ones, sigma to noisy ones; each is
 * required there (but burst, which is optional) and refused elsewhere. */
static int s_fault_numbers(fb_yaml_t *ctx, const s_fault_nodes_t *n, const yaml_node_t *map,
                           const char *path, fb_fault_t *f)
{
    f->q = f->kind == FB_FAULT_HARD ? 1.0 : 0.0;
    f->factor = 1.0;
    for (size_t i = 0; i < FB_ARRAY_LEN(s_value_rules); i++) {
        const yaml_node_t *v = n->v[s_value_rules[i].key];
        const char *key = s_fault_value_keys[s_value_rules[i].key];
        fb_fault_kind_t kind = s_value_rules[i].kind;
        if (!v && (kind != f->kind || !s_value_rules[i].required))
            continue;
        char *p = xasprintf("%s.%s", path, key);
        int rc;
        if (v && kind != f->kind)
            rc = fb_yaml_fail(ctx, fb_yaml_line(v), p,
                              "does not apply to kind %s; expected %s only with kind %s",
                              fb_fault_kind_name(f->kind), key, fb_fault_kind_name(kind));
        else if (!v)
            rc = fb_yaml_fail(ctx, fb_yaml_line(map), p, "missing; %s", s_value_rules[i].missing);
        else if (s_value_rules[i].key == S_F_Q)
            rc = s_number(ctx, v, p, &s_q, &f->q);
        else if (s_value_rules[i].key == S_F_BURST)
            rc = s_number(ctx, v, p, &s_burst, &f->burst_s);
        else if (s_value_rules[i].key == S_F_FACTOR)
            rc = s_number(ctx, v, p, &s_factor, &f->factor);
        else
            rc = s_number(ctx, v, p, &s_sigma, &f->sigma);
        free(p);
        if (rc)
            return rc;
    }
    return 0;
}

static int s_fault(fb_yaml_t *ctx, const yaml_node_t *map, const char *path, fb_fault_t *f)
{
    if (map->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(map), path,
                            "is %s; expected a mapping such as {node: NAME, kind: hard}",
                            fb_yaml_kind(map));
    f->line = fb_yaml_line(map);
    s_fault_nodes_t n = {0};
    if (s_fault_keys(ctx, map, path, &n))
        return -EINVAL;
    if (!n.site)
        return fb_yaml_fail(ctx, fb_yaml_line(map), path,
                            "no part; expected one of node, nic, link, leaf");
    if (!n.v[S_F_KIND]) {
        char *p = xasprintf("%s.kind", path);
        fb_yaml_fail(ctx, fb_yaml_line(map), p, "missing; expected " S_KINDS);
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

/* ---- noise --------------------------------------------------------------------------------- */

enum { S_N_DIST, S_N_SIGMA, S_N_WIDTH, S_N_N };
static const char *const s_noise_keys[S_N_N] = {"dist", "sigma", "width"};

/* noise: {dist: uniform, width: W} (width optional, default 0.01) or {dist: lognormal,
 * sigma: S}. */
static int s_noise(fb_yaml_t *ctx, const yaml_node_t *map, fb_faultmodel_t *m)
{
    if (map->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(map), "noise",
                            "is %s; expected a mapping such as {dist: lognormal, sigma: 0.05}",
                            fb_yaml_kind(map));
    const yaml_node_t *v[S_N_N] = {NULL, NULL, NULL};
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(ctx->doc, p->key);
        const char *key;
        if (s_key(ctx, k, "noise", S_NOISE_KEYS, &key))
            return -EINVAL;
        int rc = s_slot(ctx, k, yaml_document_get_node(ctx->doc, p->value), "noise", key,
                        s_noise_keys, S_N_N, v);
        char shown[64];
        if (rc == 0)
            return fb_yaml_fail(ctx, fb_yaml_line(k), "noise",
                                "unknown key '%s'; expected one of " S_NOISE_KEYS,
                                s_show(key, shown, sizeof shown));
        if (rc < 0)
            return rc;
    }
    const char *expected = "expected uniform or lognormal", *text;
    char shown[64];
    if (!v[S_N_DIST])
        return fb_yaml_fail(ctx, fb_yaml_line(map), "noise.dist", "missing; %s", expected);
    if (fb_yaml_scalar(ctx, v[S_N_DIST], "noise.dist", expected, &text))
        return -EINVAL;
    if (!strcmp(text, "lognormal")) {
        m->noise_dist = FB_NOISE_LOGNORMAL;
        if (v[S_N_WIDTH])
            return fb_yaml_fail(ctx, fb_yaml_line(v[S_N_WIDTH]), "noise.width",
                                "does not apply to dist lognormal; expected width only with "
                                "dist uniform");
        if (!v[S_N_SIGMA])
            return fb_yaml_fail(ctx, fb_yaml_line(map), "noise.sigma",
                                "missing; expected sigma (the standard deviation of the "
                                "logarithm of a measurement) with dist lognormal");
        return s_number(ctx, v[S_N_SIGMA], "noise.sigma", &s_sigma, &m->noise_param);
    }
    if (!strcmp(text, "uniform")) {
        m->noise_dist = FB_NOISE_UNIFORM;
        if (v[S_N_SIGMA])
            return fb_yaml_fail(ctx, fb_yaml_line(v[S_N_SIGMA]), "noise.sigma",
                                "does not apply to dist uniform; expected sigma only with "
                                "dist lognormal");
        return v[S_N_WIDTH] ? s_number(ctx, v[S_N_WIDTH], "noise.width", &s_width, &m->noise_param)
                            : 0;
    }
    return fb_yaml_fail(ctx, fb_yaml_line(v[S_N_DIST]), "noise.dist",
                        "unknown distribution '%s'; %s", s_show(text, shown, sizeof shown),
                        expected);
}

/* ---- the file ------------------------------------------------------------------------------ */

enum { S_T_SEED, S_T_FALSE, S_T_LOST, S_T_DISAGREE, S_T_NOISE, S_T_RAILS, S_T_FAULTS, S_T_N };
static const char *const s_top_keys[S_T_N] = {
    "seed", "false_fail_rate", "lost_rate", "disagree_rate", "noise", "rails", "faults"};

static int s_top_value(fb_yaml_t *ctx, int which, const yaml_node_t *v, fb_faultmodel_t *m)
{
    const char *key = s_top_keys[which];
    uint64_t u = 0;
    int rc;
    switch (which) {
    case S_T_SEED:
        return s_uint(ctx, v, key, 0, UINT64_MAX, &m->seed);
    case S_T_FALSE:
        return s_number(ctx, v, key, &s_rate, &m->false_fail_rate);
    case S_T_LOST:
        return s_number(ctx, v, key, &s_rate, &m->lost_rate);
    case S_T_DISAGREE:
        return s_number(ctx, v, key, &s_rate, &m->disagree_rate);
    case S_T_NOISE:
        return s_noise(ctx, v, m);
    case S_T_RAILS:
        rc = s_uint(ctx, v, key, 1, FB_FAULTMODEL_RAILS_MAX, &u);
        m->rails = (unsigned)u;
        return rc;
    default:
        return s_faults(ctx, v, m);
    }
}

static int s_top(fb_yaml_t *ctx, const yaml_node_t *root, fb_faultmodel_t *m)
{
    if (root->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(root), "(top level)",
                            "is %s; expected a mapping with keys %s", fb_yaml_kind(root),
                            S_TOP_KEYS);
    bool seen[S_T_N] = {false};
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(ctx->doc, p->value);
        const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
        int which = 0;
        while (which < S_T_N && strcmp(key, s_top_keys[which]))
            which++;
        char shown[64];
        if (which == S_T_N)
            return fb_yaml_fail(ctx, fb_yaml_line(k), "(top level)",
                                "unknown key '%s'; expected one of %s",
                                s_show(key, shown, sizeof shown), S_TOP_KEYS);
        if (seen[which])
            return fb_yaml_fail(ctx, fb_yaml_line(k), key, "given twice; expected it once");
        seen[which] = true;
        int rc = s_top_value(ctx, which, v, m);
        if (rc)
            return rc;
    }
    return 0;
}

static fb_faultmodel_t *s_model_new(const char *source)
{
    fb_faultmodel_t *m = xcalloc(1, sizeof *m);
    m->source = xstrdup(source);
    m->seed = FB_FAULTMODEL_DEFAULT_SEED;
    m->rails = FB_FAULTMODEL_DEFAULT_RAILS;
    m->noise_dist = FB_NOISE_UNIFORM;
    m->noise_param = FB_FAULTMODEL_DEFAULT_NOISE_WIDTH;
    return m;
}

/* The root of a fault file (fb_yaml_parse_text) into the model arg. */
static int s_root(fb_yaml_t *ctx, yaml_node_t *root, void *arg)
{
    if (!root || fb_yaml_is_null(root))
        return fb_yaml_fail(ctx, fb_yaml_line(root), "(top level)",
                            "empty fault file; expected a mapping with keys %s", S_TOP_KEYS);
    return s_top(ctx, root, arg);
}

int fb_faultmodel_parse(const char *text, size_t len, const char *source, fb_faultmodel_t **out,
                        char **error_out)
{
    *out = NULL;
    const char *name = source ? source : "<faults>";
    fb_faultmodel_t *m = s_model_new(name);
    int rc = fb_yaml_parse_text(text, len, name, FB_FAULTMODEL_MAX_BYTES, "fault file", s_root, m,
                                error_out);
    if (rc) {
        fb_faultmodel_destroy(&m);
        return rc;
    }
    *out = m;
    return 0;
}
