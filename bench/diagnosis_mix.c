/* SPDX-License-Identifier: Apache-2.0 */
/* The fault mix of the diagnosis benchmark. The categories and their shares are those of a real
 * fleet (Llama 3 on 16k H100s: 419 unexpected interruptions in 54 days), renormalised over the
 * six hardware categories the issue lists (66.4% of all interruptions; software, maintenance
 * and the smaller categories are left out). Each category maps to the simulator's fault kinds by
 * how its faults show to a burn-in: a GPU that falls off the bus is a hard node fault, one that
 * throws Xid errors under load an intermittent one, an ECC storm a burst; a switch takes its
 * leaf, a cable flaps on one rail, an uplink degrades; a host is down, throttled (slow) or stalls
 * in bursts. The split inside a category and the parameter ranges are this benchmark's
 * assumptions, stated here and in docs/diagnosis.md, not measurements. */
#include "diagnosis_mix.h"

#include "common/rng.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_type_names[DMIX_N] = {"node-hard", "node-intermittent", "node-bursty",
                                                 "node-slow", "node-slow-mild",    "sdc",
                                                 "nic-hard",  "nic-intermittent",  "nic-bursty",
                                                 "leaf-hard", "leaf-intermittent", "uplink-slow"};

/* A category of the real fleet: its share (percent of all interruptions) and how its faults
 * split over the simulator's types. */
typedef struct {
    const char *name;
    double percent;
    struct {
        dmix_type_t type;
        double weight;
    } split[4];
    const char *how; /* the mapping, for people */
} s_category_t;

static const s_category_t s_categories[] = {
    {"GPU",
     30.0,
     {{DMIX_NODE_HARD, 0.4}, {DMIX_NODE_INTERMITTENT, 0.4}, {DMIX_NODE_BURSTY, 0.2}},
     "a node: off the bus (hard) 40%, Xid errors under load (intermittent) 40%, in bursts 20%"},
    {"HBM",
     17.0,
     {{DMIX_NODE_INTERMITTENT, 0.6}, {DMIX_NODE_BURSTY, 0.4}},
     "a node: uncorrectable ECC errors now and then (intermittent) 60%, ECC storms (bursty) 40%"},
    {"switch/cable",
     8.0,
     {{DMIX_LEAF_HARD, 0.125},
      {DMIX_LEAF_INTERMITTENT, 0.125},
      {DMIX_NIC_INTERMITTENT, 0.25},
      {DMIX_NIC_BURSTY, 0.25}},
     "a leaf switch (hard 12.5%, intermittent 12.5%), a flapping cable on one rail "
     "(intermittent 25%, bursty 25%); a degraded leaf-spine uplink 25% (below)"},
    {"host",
     8.0,
     {{DMIX_NODE_HARD, 0.25},
      {DMIX_NODE_BURSTY, 0.25},
      {DMIX_NODE_SLOW, 0.25},
      {DMIX_NODE_SLOW_MILD, 0.25}},
     "a node: down (hard) 25%, stalls in bursts 25%, throttled 0.6-0.8x 25%, 0.8-0.9x 25%"},
    {"NIC",
     2.0,
     {{DMIX_NIC_HARD, 0.5}, {DMIX_NIC_INTERMITTENT, 0.5}},
     "one rail: hard 50%, "
     "intermittent 50%"},
    {"SDC", 1.4, {{DMIX_SDC, 1.0}}, "a node whose fault shows rarely (q 0.05-0.2)"},
};
/* The uplink share of switch/cable (the split above has four slots). */
#define S_UPLINK_OF_SWITCH 0.25

static double s_total_percent(void)
{
    double t = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(s_categories); i++)
        t += s_categories[i].percent;
    return t;
}

double dmix_type_share(dmix_type_t t)
{
    double share = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(s_categories); i++) {
        const s_category_t *c = &s_categories[i];
        for (size_t k = 0; k < 4; k++)
            if (c->split[k].weight > 0 && c->split[k].type == t)
                share += c->percent * c->split[k].weight;
        if (t == DMIX_UPLINK_SLOW && !strcmp(c->name, "switch/cable"))
            share += c->percent * S_UPLINK_OF_SWITCH;
    }
    return share / s_total_percent();
}

const char *dmix_type_name(dmix_type_t t)
{
    return t < DMIX_N ? s_type_names[t] : "?";
}

int dmix_type_parse(const char *name)
{
    for (int t = 0; t < DMIX_N; t++)
        if (!strcmp(name, s_type_names[t]))
            return t;
    return -1;
}

dmix_site_t dmix_type_site(dmix_type_t t)
{
    switch (t) {
    case DMIX_NIC_HARD:
    case DMIX_NIC_INTERMITTENT:
    case DMIX_NIC_BURSTY:
        return DMIX_AT_NIC;
    case DMIX_LEAF_HARD:
    case DMIX_LEAF_INTERMITTENT:
        return DMIX_AT_LEAF;
    case DMIX_UPLINK_SLOW:
        return DMIX_AT_UPLINK;
    default:
        return DMIX_AT_NODE;
    }
}

bool dmix_type_never_cleared(dmix_type_t t)
{
    return t != DMIX_NODE_SLOW && t != DMIX_NODE_SLOW_MILD && t != DMIX_SDC &&
           t != DMIX_UPLINK_SLOW;
}

void dmix_describe(FILE *out, const char *prefix)
{
    fprintf(out, "%sfault mix (share of faults; Llama 3 on 16k H100s, renormalised over %.1f%%):\n",
            prefix, s_total_percent());
    for (size_t i = 0; i < FB_ARRAY_LEN(s_categories); i++)
        fprintf(out, "%s  %-12s %5.1f%%  %s\n", prefix, s_categories[i].name,
                100.0 * s_categories[i].percent / s_total_percent(), s_categories[i].how);
    fprintf(out,
            "%sparameters: intermittent q ~ U[0.3, 0.9); bursty: active q ~ U[0.1, 0.5), mean "
            "burst log-uniform 60 s - 1 h;\n",
            prefix);
    fprintf(out,
            "%s  slow x U[0.6, 0.8), mild x U[0.8, 0.9], uplink x U[0.5, 0.8), SDC q ~ "
            "U[0.05, 0.2)\n",
            prefix);
    for (int t = 0; t < DMIX_N; t++)
        fprintf(out, "%s%s%s %.1f%%%s", t % 4 ? "" : prefix,
                t % 4 ? ", " : "  by type: ", s_type_names[t],
                100.0 * dmix_type_share((dmix_type_t)t), t % 4 == 3 || t == DMIX_N - 1 ? "\n" : "");
    fprintf(out,
            "%snot represented: a GPU, HBM stack or DIMM as a part of its own (the node "
            "stands for it); SDC that only\n",
            prefix);
    fprintf(out,
            "%s  a compute check sees (here every test of the node sees it, rarely); "
            "software, maintenance, power\n",
            prefix);
}

/* ---- drawing ------------------------------------------------------------------------------- */

static double s_uniform(uint64_t *rng, double lo, double hi)
{
    return lo + (hi - lo) * fb_rng_unit(fb_splitmix64(rng));
}

/* A category by its share, then a type by the category's split; *category its name. */
static dmix_type_t s_draw_type(uint64_t *rng, const char **category)
{
    double u = fb_rng_unit(fb_splitmix64(rng)) * s_total_percent(), acc = 0;
    size_t c = 0;
    while (c + 1 < FB_ARRAY_LEN(s_categories) && u >= (acc += s_categories[c].percent))
        c++;
    const s_category_t *cat = &s_categories[c];
    *category = cat->name;
    double v = fb_rng_unit(fb_splitmix64(rng));
    if (!strcmp(cat->name, "switch/cable")) { /* the uplink first, the split's slots after it */
        if (v < S_UPLINK_OF_SWITCH)
            return DMIX_UPLINK_SLOW;
        v -= S_UPLINK_OF_SWITCH;
    }
    double w = 0;
    for (size_t k = 0; k < 4 && cat->split[k].weight > 0; k++)
        if (v < (w += cat->split[k].weight))
            return cat->split[k].type;
    return cat->split[0].type;
}

typedef struct {
    const dmix_opts_t *o;
    const dmix_fabric_t *fab;
    uint64_t *rng;
    dmix_world_t *w;
    bool *node_taken, *leaf_taken, *uplink_taken;
    unsigned leaves;
} s_draw_t;

static void s_yaml_add(dmix_world_t *w, char *line)
{
    char *y = xasprintf("%s%s", w->yaml ? w->yaml : "", line);
    free(w->yaml);
    free(line);
    w->yaml = y;
}

static dmix_fault_t *s_fault_add(dmix_world_t *w, dmix_type_t t, const char *category)
{
    w->faults = xrealloc(w->faults, (w->n_faults + 1) * sizeof *w->faults);
    dmix_fault_t *f = &w->faults[w->n_faults++];
    memset(f, 0, sizeof *f);
    f->type = t;
    f->category = category;
    f->factor = 1.0;
    return f;
}

/* An option's fixed value (> 0), else one drawn from [lo, hi). */
static double s_fixed_or_drawn(s_draw_t *d, double fixed, double lo, double hi)
{
    return fixed > 0 ? fixed : s_uniform(d->rng, lo, hi);
}

/* q, burst and factor of a fault of type t: the options' fixed values, else drawn. */
static void s_parameters(s_draw_t *d, dmix_fault_t *f)
{
    const dmix_opts_t *o = d->o;
    switch (f->type) {
    case DMIX_NODE_HARD:
    case DMIX_NIC_HARD:
    case DMIX_LEAF_HARD:
        f->q = 1.0;
        break;
    case DMIX_NODE_BURSTY:
    case DMIX_NIC_BURSTY:
        f->q = s_fixed_or_drawn(d, o->q, 0.1, 0.5);
        f->burst_s = o->burst_s > 0 ? o->burst_s : 60.0 * exp(s_uniform(d->rng, 0, log(60.0)));
        break;
    case DMIX_SDC:
        f->q = s_fixed_or_drawn(d, o->q, 0.05, 0.2);
        break;
    case DMIX_NODE_SLOW:
        f->factor = s_fixed_or_drawn(d, o->factor, 0.6, 0.8);
        break;
    case DMIX_NODE_SLOW_MILD:
        f->factor = s_fixed_or_drawn(d, o->factor, 0.8, 0.9);
        break;
    case DMIX_UPLINK_SLOW:
        f->factor = s_fixed_or_drawn(d, o->factor, 0.5, 0.8);
        break;
    default: /* intermittent */
        f->q = s_fixed_or_drawn(d, o->q, 0.3, 0.9);
    }
}

/* The fault-file line of f at its site. */
static char *s_line(const dmix_fault_t *f, const char *site)
{
    switch (f->type) {
    case DMIX_NODE_HARD:
    case DMIX_NIC_HARD:
    case DMIX_LEAF_HARD:
        return xasprintf("  - {%s, kind: hard}\n", site);
    case DMIX_NODE_SLOW:
    case DMIX_NODE_SLOW_MILD:
    case DMIX_UPLINK_SLOW:
        return xasprintf("  - {%s, kind: slow, factor: %.4f}\n", site, f->factor);
    case DMIX_NODE_BURSTY:
    case DMIX_NIC_BURSTY:
        return xasprintf("  - {%s, kind: intermittent, q: %.4f, burst: %.1f}\n", site, f->q,
                         f->burst_s);
    default:
        return xasprintf("  - {%s, kind: intermittent, q: %.4f}\n", site, f->q);
    }
}

static unsigned s_free_node(s_draw_t *d)
{
    unsigned node;
    do
        node = (unsigned)fb_rng_below(d->rng, d->fab->n);
    while (d->node_taken[node]);
    d->node_taken[node] = true;
    return node;
}

static const char *s_leaf_name(unsigned l, char *buf, size_t len)
{
    snprintf(buf, len, "leaf%03u", l + 1);
    return buf;
}

static void s_place_node(s_draw_t *d, dmix_fault_t *f, unsigned node)
{
    char leaf[16], *site = xasprintf("node: %s", d->fab->names[node]);
    f->node = xstrdup(d->fab->names[node]);
    f->part = xstrdup(f->node);
    f->leaf = xstrdup(s_leaf_name(node / d->fab->leaf_size, leaf, sizeof leaf));
    s_yaml_add(d->w, s_line(f, site));
    free(site);
}

/* One fault of type t on a part nobody has; -EINVAL when no such part is left. */
static int s_place(s_draw_t *d, dmix_type_t t, const char *category)
{
    const dmix_fabric_t *fab = d->fab;
    dmix_fault_t *f = s_fault_add(d->w, t, category);
    s_parameters(d, f);
    char leaf[16];
    switch (dmix_type_site(t)) {
    case DMIX_AT_NODE:
        s_place_node(d, f, s_free_node(d));
        return 0;
    case DMIX_AT_NIC: {
        unsigned node = s_free_node(d), rail = (unsigned)fb_rng_below(d->rng, fab->rails);
        f->node = xstrdup(fab->names[node]);
        f->part = xasprintf("%s/mlx5_%u", f->node, rail);
        f->leaf = xstrdup(s_leaf_name(node / fab->leaf_size, leaf, sizeof leaf));
        char *site = xasprintf("nic: %s/%u", f->node, rail);
        s_yaml_add(d->w, s_line(f, site));
        free(site);
        return 0;
    }
    case DMIX_AT_LEAF: {
        unsigned l, tries = 0;
        do
            l = (unsigned)fb_rng_below(d->rng, d->leaves);
        while (d->leaf_taken[l] && ++tries < 1000);
        if (d->leaf_taken[l])
            return -EINVAL;
        d->leaf_taken[l] = true;
        f->leaf = xstrdup(s_leaf_name(l, leaf, sizeof leaf));
        f->part = xstrdup(f->leaf);
        char *site = xasprintf("leaf: %s", f->leaf);
        s_yaml_add(d->w, s_line(f, site));
        free(site);
        return 0;
    }
    default: {
        unsigned u, tries = 0, n_up = d->leaves * fab->spines;
        do
            u = (unsigned)fb_rng_below(d->rng, n_up);
        while (d->uplink_taken[u] && ++tries < 1000);
        if (d->uplink_taken[u])
            return -EINVAL;
        d->uplink_taken[u] = true;
        f->leaf = xstrdup(s_leaf_name(u / fab->spines, leaf, sizeof leaf));
        f->part = xasprintf("%s<->spine%02u", f->leaf, u % fab->spines + 1);
        char *site = xasprintf("link: %s", f->part);
        s_yaml_add(d->w, s_line(f, site));
        free(site);
        return 0;
    }
    }
}

/* A second fault on the node of node fault i: a mild slowdown, or (on a slow node) an
 * intermittent fault. */
static void s_second(s_draw_t *d, size_t i)
{
    dmix_type_t t =
        d->w->faults[i].type == DMIX_NODE_SLOW || d->w->faults[i].type == DMIX_NODE_SLOW_MILD
            ? DMIX_NODE_INTERMITTENT
            : DMIX_NODE_SLOW_MILD;
    unsigned node = 0;
    while (strcmp(d->fab->names[node], d->w->faults[i].node))
        node++;
    dmix_fault_t *f = s_fault_add(d->w, t, "second fault");
    f->second = true;
    dmix_opts_t fixed = *d->o; /* a second fault draws its own values */
    fixed.q = fixed.factor = fixed.burst_s = 0;
    const dmix_opts_t *o = d->o;
    d->o = &fixed;
    s_parameters(d, f);
    d->o = o;
    s_place_node(d, f, node);
}

int dmix_draw(const dmix_opts_t *o, const dmix_fabric_t *fab, uint64_t *rng, dmix_world_t *out)
{
    memset(out, 0, sizeof *out);
    out->yaml = xstrdup("");
    s_draw_t d = {o,    fab,  rng,  out,
                  NULL, NULL, NULL, (fab->n + fab->leaf_size - 1) / fab->leaf_size};
    if (o->faults_max * 2 > fab->n)
        return -EINVAL;
    d.node_taken = xcalloc(fab->n, sizeof *d.node_taken);
    d.leaf_taken = xcalloc(d.leaves, sizeof *d.leaf_taken);
    d.uplink_taken = xcalloc((size_t)d.leaves * fab->spines, sizeof *d.uplink_taken);
    unsigned n = o->faults_min + (unsigned)fb_rng_below(rng, o->faults_max - o->faults_min + 1);
    int rc = 0;
    for (unsigned i = 0; i < n && !rc; i++) {
        const char *category = "(one type)";
        dmix_type_t t = o->only >= 0 ? (dmix_type_t)o->only : s_draw_type(rng, &category);
        rc = s_place(&d, t, category);
    }
    size_t placed = out->n_faults;
    for (size_t i = 0; i < placed && !rc; i++)
        if (dmix_type_site(out->faults[i].type) == DMIX_AT_NODE &&
            fb_rng_unit(fb_splitmix64(rng)) < o->second_share)
            s_second(&d, i);
    for (unsigned i = 0; i < fab->n && !rc && o->noisy_share > 0; i++) {
        if (d.node_taken[i] || fb_rng_unit(fb_splitmix64(rng)) >= o->noisy_share)
            continue;
        out->noisy = xrealloc(out->noisy, (out->n_noisy + 1) * sizeof *out->noisy);
        out->noisy[out->n_noisy++] = xstrdup(fab->names[i]);
        s_yaml_add(out, xasprintf("  - {node: %s, kind: noisy, sigma: %.3f}\n", fab->names[i],
                                  o->noisy_sigma));
    }
    free(d.node_taken);
    free(d.leaf_taken);
    free(d.uplink_taken);
    if (rc)
        dmix_world_free(out);
    return rc;
}

void dmix_world_free(dmix_world_t *w)
{
    for (size_t i = 0; i < w->n_faults; i++) {
        free(w->faults[i].part);
        free(w->faults[i].node);
        free(w->faults[i].leaf);
    }
    free(w->faults);
    for (size_t i = 0; i < w->n_noisy; i++)
        free(w->noisy[i]);
    free(w->noisy);
    free(w->yaml);
    memset(w, 0, sizeof *w);
}
