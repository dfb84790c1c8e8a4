/* SPDX-License-Identifier: Apache-2.0 */
/* Expected hardware (expect.h): the `expect` section of a campaign file, parsed into typed
 * fields with the file's line for every error; which entry applies to a node (the first that
 * names it); the check of a node's facts against an entry, one mismatch per field (GPUs that
 * differ alike folded into one line, missing GPUs named from an earlier inventory of the node);
 * and the expectation a known-good node meets, written back as YAML. */
#include "expect.h"

#include "campaign.h"
#include "common/hostlist.h"
#include "common/units.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S_MODEL_MAX 96
#define S_MIN_SIZE (1ull << 20) /* a size below 1 MiB is a size written without its unit */

/* ---- parsing -------------------------------------------------------------------------------- */

static char *s_kpath(const char *parent, const char *key)
{
    char shown[128];
    fb_show_value(key, shown, sizeof shown);
    return xasprintf("%s.%s", parent, shown);
}

static int s_uint(fb_yaml_t *y, const yaml_node_t *v, const char *path, unsigned max,
                  const char *what, unsigned *out)
{
    char expected[128];
    snprintf(expected, sizeof expected, "expected %s, an integer from 0 to %u", what, max);
    const char *text;
    uint64_t n;
    if (fb_yaml_scalar(y, v, path, expected, &text))
        return -EINVAL;
    if (fb_parse_uint(text, max, &n)) {
        char shown[64];
        return fb_yaml_fail(y, fb_yaml_line(v), path, "'%s' is not a count; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    }
    *out = (unsigned)n;
    return 0;
}

static int s_size(fb_yaml_t *y, const yaml_node_t *v, const char *path, uint64_t *out,
                  char **text_out)
{
    const char *expected = "expected a size such as 141GiB or 2TiB (GiB, TiB: 1024-based; GB, "
                           "TB: 1000-based)";
    const char *text;
    if (fb_yaml_scalar(y, v, path, expected, &text))
        return -EINVAL;
    char shown[64];
    uint64_t n;
    if (fb_parse_bytes(text, &n))
        return fb_yaml_fail(y, fb_yaml_line(v), path, "'%s' is not a size; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    if (n < S_MIN_SIZE)
        return fb_yaml_fail(
            y, fb_yaml_line(v), path, "'%s' is %llu bytes (a size without its unit?); %s",
            fb_show_value(text, shown, sizeof shown), (unsigned long long)n, expected);
    *out = n;
    *text_out = xstrdup(text);
    return 0;
}

static int s_model(fb_yaml_t *y, const yaml_node_t *v, const char *path, char **out)
{
    const char *expected = "expected a word of the GPU's name, e.g. H200 or \"NVIDIA H100 80GB "
                           "HBM3\" (at most 96 printable characters)";
    const char *text;
    if (fb_yaml_scalar(y, v, path, expected, &text))
        return -EINVAL;
    size_t n = strlen(text);
    bool ok = n <= S_MODEL_MAX && text[0] != ' ' && text[n - 1] != ' ';
    for (const char *p = text; ok && *p; p++)
        ok = *p >= 0x20 && *p < 0x7f;
    if (!ok) {
        char shown[64];
        return fb_yaml_fail(y, fb_yaml_line(v), path, "'%s' is not a GPU model name; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    }
    *out = xstrdup(text);
    return 0;
}

/* "400", "400Gb/s", "400 Gb/sec", "400G", "400Gbps": Gb/s. */
static int s_parse_rate(const char *text, double *out)
{
    char *end = NULL;
    if (!isdigit((unsigned char)text[0]))
        return -EINVAL;
    double v = strtod(text, &end);
    if (end == text || !(v > 0 && v <= 1e6))
        return -EINVAL;
    while (*end == ' ')
        end++;
    static const char *units[] = {"", "g", "gb/s", "gb/sec", "gbps", "gbit/s"};
    for (size_t i = 0; i < FB_ARRAY_LEN(units); i++)
        if (!strcasecmp(end, units[i])) {
            *out = v;
            return 0;
        }
    return -EINVAL;
}

static int s_rate(fb_yaml_t *y, const yaml_node_t *v, const char *path, double *out)
{
    const char *expected = "expected a port rate in Gb/s, e.g. 400, 400Gb/s or \"200 Gb/sec\"";
    const char *text;
    if (fb_yaml_scalar(y, v, path, expected, &text))
        return -EINVAL;
    if (s_parse_rate(text, out)) {
        char shown[64];
        return fb_yaml_fail(y, fb_yaml_line(v), path, "'%s' is not a rate; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    }
    return 0;
}

/* "gen5x16", "Gen5 x16", "gen4", "x16": generation 1-6 and width 1-32 (a power of two). */
static int s_parse_pcie(const char *text, unsigned *gen, unsigned *width)
{
    *gen = *width = 0;
    const char *p = text;
    if (!strncasecmp(p, "gen", 3)) {
        p += 3;
        if (*p < '1' || *p > '6')
            return -EINVAL;
        *gen = (unsigned)(*p++ - '0');
        while (*p == ' ')
            p++;
    }
    if (*p == 'x' || *p == 'X') {
        char *end = NULL;
        if (!isdigit((unsigned char)p[1]))
            return -EINVAL;
        unsigned long w = strtoul(p + 1, &end, 10);
        if (w < 1 || w > 32 || (w & (w - 1)))
            return -EINVAL;
        *width = (unsigned)w;
        p = end;
    }
    return *p || (!*gen && !*width) ? -EINVAL : 0;
}

static int s_pcie(fb_yaml_t *y, const yaml_node_t *v, const char *path, unsigned *gen,
                  unsigned *width)
{
    const char *expected = "expected a PCIe link such as gen5x16, gen4 or x16 (generation 1-6, "
                           "width 1-32)";
    const char *text;
    if (fb_yaml_scalar(y, v, path, expected, &text))
        return -EINVAL;
    if (s_parse_pcie(text, gen, width)) {
        char shown[64];
        return fb_yaml_fail(y, fb_yaml_line(v), path, "'%s' is not a PCIe link; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    }
    return 0;
}

static int s_nodes(fb_yaml_t *y, const yaml_node_t *v, const char *path, char **out)
{
    const char *expected = "expected hostlist notation such as gpu[001-128],login01";
    const char *text;
    if (fb_yaml_scalar(y, v, path, expected, &text))
        return -EINVAL;
    char err[256];
    if (hostlist_check(text, NULL, err, sizeof err))
        return fb_yaml_fail(y, fb_yaml_line(v), path, "%s; %s", err, expected);
    *out = xstrdup(text);
    return 0;
}

/* One key of an entry; *seen has one flag per key of FB_EXPECT_KEYS. */
static int s_field(fb_yaml_t *y, const yaml_node_t *k, const yaml_node_t *v, const char *path,
                   fb_expect_entry_t *e, unsigned *seen)
{
    static const char *const keys[] = {"nodes",  "gpus",     "gpu_model", "gpu_memory",
                                       "memory", "ib_ports", "ib_rate",   "pcie"};
    if (k->type != YAML_SCALAR_NODE || fb_yaml_is_null(k) ||
        memchr(k->data.scalar.value, 0, k->data.scalar.length))
        return fb_yaml_fail(y, fb_yaml_line(k), path, "a key is %s; expected one of %s",
                            k->type == YAML_SCALAR_NODE ? "not a name" : fb_yaml_kind(k),
                            FB_EXPECT_KEYS);
    const char *key = (const char *)k->data.scalar.value;
    size_t i = 0;
    while (i < FB_ARRAY_LEN(keys) && strcmp(keys[i], key))
        i++;
    char *kpath = s_kpath(path, key);
    int rc;
    if (i == FB_ARRAY_LEN(keys))
        rc = fb_yaml_fail(y, fb_yaml_line(k), kpath, "unknown key; expected one of %s",
                          FB_EXPECT_KEYS);
    else if (*seen & (1u << i))
        rc = fb_yaml_fail(y, fb_yaml_line(k), kpath, "key given twice; expected each key once");
    else if (i == 0)
        rc = s_nodes(y, v, kpath, &e->nodes);
    else if (i == 1)
        rc = s_uint(y, v, kpath, FB_EXPECT_MAX_GPUS, "the number of GPUs", &e->gpus);
    else if (i == 2)
        rc = s_model(y, v, kpath, &e->gpu_model);
    else if (i == 3)
        rc = s_size(y, v, kpath, &e->gpu_memory, &e->gpu_memory_text);
    else if (i == 4)
        rc = s_size(y, v, kpath, &e->memory, &e->memory_text);
    else if (i == 5)
        rc = s_uint(y, v, kpath, FB_EXPECT_MAX_PORTS, "the number of active HCA ports",
                    &e->ib_ports);
    else if (i == 6)
        rc = s_rate(y, v, kpath, &e->ib_rate_gbps);
    else
        rc = s_pcie(y, v, kpath, &e->pcie_gen, &e->pcie_width);
    e->has_gpus |= rc == 0 && i == 1;
    e->has_ib_ports |= rc == 0 && i == 5;
    *seen |= 1u << i;
    free(kpath);
    return rc;
}

static int s_entry(fb_yaml_t *y, const yaml_node_t *node, const char *path, fb_expect_entry_t *e)
{
    e->line = fb_yaml_line(node);
    if (node->type != YAML_MAPPING_NODE || fb_yaml_is_null(node))
        return fb_yaml_fail(y, fb_yaml_line(node), path,
                            "is %s; expected a mapping of what the nodes must have, with keys "
                            "from %s",
                            fb_yaml_is_null(node) ? "empty" : fb_yaml_kind(node), FB_EXPECT_KEYS);
    unsigned seen = 0;
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = fb_yaml_node(y, pair->key), *v = fb_yaml_node(y, pair->value);
        if (!k || !v || s_field(y, k, v, path, e, &seen))
            return -EINVAL;
    }
    if ((seen & ~1u) == 0)
        return fb_yaml_fail(y, e->line, path,
                            "states nothing to check; expected at least one of gpus, gpu_model, "
                            "gpu_memory, memory, ib_ports, ib_rate, pcie");
    return 0;
}

int fb_expect_parse(fb_yaml_t *y, const yaml_node_t *node, const char *path, fb_expect_t **out)
{
    *out = NULL;
    fb_expect_t *x = xcalloc(1, sizeof *x);
    int rc = 0;
    if (node->type == YAML_SEQUENCE_NODE) {
        size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
        if (n == 0)
            rc = fb_yaml_fail(y, fb_yaml_line(node), path,
                              "is an empty list; expected entries such as {nodes: "
                              "\"gpu[001-128]\", gpus: 8}");
        x->entries = xcalloc(n ? n : 1, sizeof *x->entries);
        for (size_t i = 0; i < n && !rc; i++) {
            yaml_node_t *item = fb_yaml_node(y, node->data.sequence.items.start[i]);
            char *ipath = xasprintf("%s[%zu]", path, i);
            x->n = i + 1;
            rc = item ? s_entry(y, item, ipath, &x->entries[i]) : -EINVAL;
            /* Entries are tried in order: one after a catch-all is never used. */
            if (!rc && i > 0 && !x->entries[i - 1].nodes)
                rc = fb_yaml_fail(y, x->entries[i].line, ipath,
                                  "never applies: %s[%zu] has no nodes and applies to every node "
                                  "first; expected entries with nodes before the one without",
                                  path, i - 1);
            free(ipath);
        }
    } else {
        x->entries = xcalloc(1, sizeof *x->entries);
        x->n = 1;
        rc = s_entry(y, node, path, &x->entries[0]);
    }
    if (rc) {
        fb_expect_destroy(&x);
        return -EINVAL;
    }
    *out = x;
    return 0;
}

void fb_expect_destroy(fb_expect_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_expect_t *x = *self_p;
    for (size_t i = 0; i < x->n; i++) {
        fb_expect_entry_t *e = &x->entries[i];
        free(e->nodes);
        free(e->gpu_model);
        free(e->gpu_memory_text);
        free(e->memory_text);
        hostlist_free(e->names, e->n_names);
    }
    free(x->entries);
    free(x);
    *self_p = NULL;
}

int fb_expect_campaign_check(fb_yaml_t *y, const fb_campaign_t *c)
{
    for (size_t i = 0; i < c->n_stages; i++)
        if (!strcmp(c->stages[i].workload, "health"))
            return 0;
    return fb_yaml_fail(y, c->expect->entries[0].line, "expect",
                        "is checked by the health stage, and this campaign has none; expected a "
                        "stage with workload: health (a passive sweep of seconds), e.g. first "
                        "{name: health, workload: health}");
}

static int s_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

const fb_expect_entry_t *fb_expect_for_node(fb_expect_t *self, const char *node)
{
    for (size_t i = 0; self && node && i < self->n; i++) {
        fb_expect_entry_t *e = &self->entries[i];
        if (!e->nodes)
            return e;
        if (!e->expanded) {
            /* checked by the parser; an expansion failure leaves the entry naming no node */
            if (hostlist_expand(e->nodes, &e->names, &e->n_names, NULL, 0) == 0)
                qsort(e->names, e->n_names, sizeof *e->names, s_strcmp_p);
            e->expanded = true;
        }
        if (e->n_names && bsearch(&node, e->names, e->n_names, sizeof *e->names, s_strcmp_p))
            return e;
    }
    return NULL;
}

bool fb_expect_wants_gpus(const fb_expect_entry_t *e)
{
    if (!e)
        return false;
    if (e->has_gpus)
        return e->gpus > 0;
    return e->gpu_model || e->gpu_memory || e->pcie_gen || e->pcie_width;
}

bool fb_expect_gpu_workload(const char *workload)
{
    static const char *const gpu[] = {"gpuburn", "gpumemtest", "p2p", "allreduce"};
    for (size_t i = 0; workload && i < FB_ARRAY_LEN(gpu); i++)
        if (!strcmp(workload, gpu[i]))
            return true;
    return false;
}

/* ---- facts ----------------------------------------------------------------------------------- */

void fb_node_facts_add_gpu(fb_node_facts_t *f, const char *pci, const char *model,
                           uint64_t memory_bytes, unsigned gen, unsigned width)
{
    f->gpus = xrealloc(f->gpus, (f->n_gpus + 1) * sizeof *f->gpus);
    f->gpus[f->n_gpus++] = (fb_gpu_facts_t){xstrdup(pci ? pci : ""), xstrdup(model ? model : ""),
                                            memory_bytes, gen, width};
}

void fb_node_facts_add_port(fb_node_facts_t *f, const char *name, unsigned port, const char *state,
                            double rate_gbps)
{
    f->ports = xrealloc(f->ports, (f->n_ports + 1) * sizeof *f->ports);
    f->ports[f->n_ports++] =
        (fb_port_facts_t){xstrdup(name ? name : ""), port, xstrdup(state ? state : ""), rate_gbps};
}

void fb_node_facts_clear(fb_node_facts_t *f)
{
    for (size_t i = 0; i < f->n_gpus; i++) {
        free(f->gpus[i].pci);
        free(f->gpus[i].model);
    }
    for (size_t i = 0; i < f->n_ports; i++) {
        free(f->ports[i].name);
        free(f->ports[i].state);
    }
    free(f->gpus);
    free(f->ports);
    memset(f, 0, sizeof *f);
}

unsigned fb_pcie_gen_of_speed(const char *speed)
{
    static const struct {
        double gts;
        unsigned gen;
    } gens[] = {{2.5, 1}, {5, 2}, {8, 3}, {16, 4}, {32, 5}, {64, 6}};
    if (!speed || !isdigit((unsigned char)speed[0]))
        return 0;
    char *end = NULL;
    double v = strtod(speed, &end);
    if (strncmp(end, " GT/s", 5) != 0)
        return 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(gens); i++)
        if (fabs(v - gens[i].gts) < 0.01)
            return gens[i].gen;
    return 0;
}

/* ---- the check ------------------------------------------------------------------------------- */

typedef struct {
    fb_mismatch_t *v;
    size_t n;
} s_list_t;

/* The kind of part a mismatch names, as the health sweep's findings name it. */
static const char *s_kind(const char *field, const char *part)
{
    if (!strcmp(field, "memory"))
        return "memory";
    if (!strcmp(field, "pcie") || !strcmp(field, "ib_rate"))
        return "link";
    if (!strcmp(field, "ib_ports"))
        return "nic";
    return strchr(part, '/') ? "gpu" : "node";
}

static void s_add(s_list_t *l, const char *field, char *part, const char *expected, char *found,
                  char *what)
{
    l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] =
        (fb_mismatch_t){xstrdup(field), part, xstrdup(expected), found, what, s_kind(field, part)};
}

static bool s_size_ok(uint64_t found, uint64_t expected)
{
    double ratio = (double)found / (double)expected;
    return ratio >= 1.0 - FB_EXPECT_BELOW_PCT / 100.0 && ratio <= 1.0 + FB_EXPECT_ABOVE_PCT / 100.0;
}

static char *s_gib(uint64_t bytes)
{
    return xasprintf("%.1f GiB", (double)bytes / (double)(1ull << 30));
}

/* "141GiB" as written, with its value in GiB when the unit was not GiB ("2TB (1862.6 GiB)"). */
static char *s_size_expected(const char *text, uint64_t bytes)
{
    size_t n = strlen(text);
    if (n > 3 && !strcasecmp(text + n - 3, "GiB"))
        return xstrdup(text);
    char *gib = s_gib(bytes);
    char *out = xasprintf("%s (%s)", text, gib);
    free(gib);
    return out;
}

/* Whether name holds word as a whole word, case-insensitively ("H200" in "NVIDIA H200", not
 * "A100" in "A1000"). */
static bool s_has_word(const char *name, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = name; *p; p++) {
        if (strncasecmp(p, word, n))
            continue;
        bool start = p == name || !isalnum((unsigned char)p[-1]);
        bool end = !isalnum((unsigned char)p[n]);
        if (start && end)
            return true;
    }
    return false;
}

/* GPUs that differ in one field, grouped by what was found. */
typedef struct {
    char *found;
    char **gpus; /* "gpu3" */
    size_t n;
} s_group_t;

typedef struct {
    s_group_t *v;
    size_t n;
} s_groups_t;

static void s_group_add(s_groups_t *g, char *found, size_t gpu)
{
    size_t i = 0;
    while (i < g->n && strcmp(g->v[i].found, found))
        i++;
    if (i == g->n) {
        g->v = xrealloc(g->v, (g->n + 1) * sizeof *g->v);
        g->v[g->n++] = (s_group_t){found, NULL, 0};
    } else {
        free(found);
    }
    s_group_t *grp = &g->v[i];
    grp->gpus = xrealloc(grp->gpus, (grp->n + 1) * sizeof *grp->gpus);
    grp->gpus[grp->n++] = xasprintf("gpu%zu", gpu);
}

/* One mismatch per group: "<field>: expected <expected>, found <found> on gpu3 (0000:41:00.0)"
 * or "... on gpu[0-7]" (all GPUs: "on all 8 GPUs"); the part is the GPU when it is one. */
static void s_groups_emit(s_groups_t *g, s_list_t *l, const char *field, const char *expected,
                          const char *node, const fb_node_facts_t *now)
{
    for (size_t i = 0; i < g->n; i++) {
        s_group_t *grp = &g->v[i];
        char *where, *part;
        if (grp->n == 1) {
            size_t idx = strtoul(grp->gpus[0] + 3, NULL, 10);
            where = xasprintf("%s (%s)", grp->gpus[0], now->gpus[idx].pci);
            part = xasprintf("%s/%s", node, grp->gpus[0]);
        } else if (grp->n == now->n_gpus) {
            where = xasprintf("all %zu GPUs", grp->n);
            part = xstrdup(node);
        } else {
            where = hostlist_compress((const char *const *)grp->gpus, grp->n);
            part = xstrdup(node);
        }
        char *found = xasprintf("%s on %s", grp->found, where);
        char *what = xasprintf("%s: expected %s, found %s", field, expected, found);
        s_add(l, field, part, expected, found, what);
        free(where);
        free(grp->found);
        hostlist_free(grp->gpus, grp->n);
    }
    free(g->v);
    g->v = NULL;
    g->n = 0;
}

static void s_check_gpus(const fb_expect_entry_t *e, const char *node, const fb_node_facts_t *now,
                         const fb_node_facts_t *before, s_list_t *l)
{
    if (!e->has_gpus || now->n_gpus == e->gpus)
        return;
    /* GPUs an earlier inventory of this node listed that are not on the bus now */
    size_t cap = 256, len = 0, n_missing = 0;
    char *missing = xcalloc(1, cap);
    for (size_t i = 0; before && i < before->n_gpus; i++) {
        bool present = false;
        for (size_t j = 0; j < now->n_gpus && !present; j++)
            present = !strcmp(before->gpus[i].pci, now->gpus[j].pci);
        if (present || !before->gpus[i].pci[0])
            continue;
        if (n_missing++ < 16) {
            const char *pci = before->gpus[i].pci;
            if (len + strlen(pci) + 3 > cap)
                missing = xrealloc(missing, cap = cap * 2 + strlen(pci));
            len += (size_t)sprintf(missing + len, "%s%s", len ? ", " : "", pci);
        }
    }
    char expected[32];
    snprintf(expected, sizeof expected, "%u", e->gpus);
    char *found = xasprintf("%zu", now->n_gpus);
    char *what;
    if (n_missing)
        what = xasprintf("gpus: expected %u, found %zu (missing %s%s, listed in an earlier "
                         "inventory of this node)",
                         e->gpus, now->n_gpus, missing, n_missing > 16 ? ", ..." : "");
    else
        what = xasprintf("gpus: expected %u, found %zu", e->gpus, now->n_gpus);
    free(missing);
    s_add(l, "gpus", xstrdup(node), expected, found, what);
}

/* A field that has no GPU to be judged on: said once, unless the count already says so. */
static bool s_no_gpus(const fb_expect_entry_t *e, const char *node, const fb_node_facts_t *now,
                      const char *field, const char *expected, s_list_t *l)
{
    if (now->n_gpus)
        return false;
    if (!e->has_gpus)
        s_add(l, field, xstrdup(node), expected, xstrdup("no GPUs"),
              xasprintf("%s: expected %s, found no GPUs", field, expected));
    return true;
}

static void s_check_model(const fb_expect_entry_t *e, const char *node, const fb_node_facts_t *now,
                          s_list_t *l)
{
    if (!e->gpu_model || s_no_gpus(e, node, now, "gpu_model", e->gpu_model, l))
        return;
    s_groups_t g = {0};
    for (size_t i = 0; i < now->n_gpus; i++) {
        const char *model = now->gpus[i].model;
        if (!s_has_word(model, e->gpu_model))
            s_group_add(&g,
                        *model ? xasprintf("'%s'", model)
                               : xstrdup("no name (no GPU management library answered)"),
                        i);
    }
    s_groups_emit(&g, l, "gpu_model", e->gpu_model, node, now);
}

static void s_check_gpu_memory(const fb_expect_entry_t *e, const char *node,
                               const fb_node_facts_t *now, s_list_t *l)
{
    if (!e->gpu_memory)
        return;
    char *expected = s_size_expected(e->gpu_memory_text, e->gpu_memory);
    if (!s_no_gpus(e, node, now, "gpu_memory", expected, l)) {
        s_groups_t g = {0};
        for (size_t i = 0; i < now->n_gpus; i++) {
            uint64_t m = now->gpus[i].memory_bytes;
            if (!m)
                s_group_add(&g, xstrdup("unknown size (no GPU management library answered)"), i);
            else if (!s_size_ok(m, e->gpu_memory))
                s_group_add(&g, s_gib(m), i);
        }
        s_groups_emit(&g, l, "gpu_memory", expected, node, now);
    }
    free(expected);
}

static void s_check_pcie(const fb_expect_entry_t *e, const char *node, const fb_node_facts_t *now,
                         s_list_t *l)
{
    if (!e->pcie_gen && !e->pcie_width)
        return;
    char expected[32];
    snprintf(expected, sizeof expected, "%s%.0u%s%.0u", e->pcie_gen ? "gen" : "", e->pcie_gen,
             e->pcie_width ? "x" : "", e->pcie_width);
    if (s_no_gpus(e, node, now, "pcie", expected, l))
        return;
    s_groups_t g = {0};
    for (size_t i = 0; i < now->n_gpus; i++) {
        const fb_gpu_facts_t *gpu = &now->gpus[i];
        bool gen_bad = e->pcie_gen && gpu->gen < e->pcie_gen;
        bool width_bad = e->pcie_width && gpu->width < e->pcie_width;
        if (!gen_bad && !width_bad)
            continue;
        char gen[16] = "gen?", width[16] = "x?";
        if (gpu->gen)
            snprintf(gen, sizeof gen, "gen%u", gpu->gen);
        if (gpu->width)
            snprintf(width, sizeof width, "x%u", gpu->width);
        s_group_add(&g, xasprintf("%s%s", e->pcie_gen ? gen : "", e->pcie_width ? width : ""), i);
    }
    s_groups_emit(&g, l, "pcie", expected, node, now);
}

static void s_check_memory(const fb_expect_entry_t *e, const char *node, const fb_node_facts_t *now,
                           s_list_t *l)
{
    if (!e->memory || (now->mem_total_bytes && s_size_ok(now->mem_total_bytes, e->memory)))
        return;
    char *expected = s_size_expected(e->memory_text, e->memory);
    char *found = now->mem_total_bytes ? s_gib(now->mem_total_bytes) : xstrdup("unknown");
    char *what;
    if (now->mem_total_bytes)
        what = xasprintf("memory: expected %s, found %s (%.1f%%; %.0f%% to %.0f%% of it counts)",
                         expected, found, 100.0 * (double)now->mem_total_bytes / (double)e->memory,
                         100.0 - FB_EXPECT_BELOW_PCT, 100.0 + FB_EXPECT_ABOVE_PCT);
    else
        what = xasprintf("memory: expected %s, found no MemTotal in the inventory", expected);
    s_add(l, "memory", xstrdup(node), expected, found, what);
    free(expected);
}

static bool s_active(const fb_port_facts_t *p)
{
    return !strcmp(p->state, "ACTIVE");
}

static void s_check_ib_ports(const fb_expect_entry_t *e, const char *node,
                             const fb_node_facts_t *now, s_list_t *l)
{
    if (!e->has_ib_ports)
        return;
    size_t active = 0;
    for (size_t i = 0; i < now->n_ports; i++)
        active += s_active(&now->ports[i]);
    if (active == e->ib_ports)
        return;
    size_t cap = 256, len = 0, listed = 0;
    char *others = xcalloc(1, cap);
    for (size_t i = 0; i < now->n_ports && listed < 16; i++) {
        const fb_port_facts_t *p = &now->ports[i];
        if (s_active(p))
            continue;
        char item[160];
        int n = snprintf(item, sizeof item, "%s%s:%u %s", listed ? ", " : "", p->name, p->port,
                         p->state[0] ? p->state : "state unknown");
        if (len + (size_t)n + 1 > cap)
            others = xrealloc(others, cap = cap * 2 + (size_t)n);
        memcpy(others + len, item, (size_t)n + 1);
        len += (size_t)n;
        listed++;
    }
    char expected[32];
    snprintf(expected, sizeof expected, "%u", e->ib_ports);
    char *found = xasprintf("%zu", active);
    char *what = xasprintf("ib_ports: expected %u active, found %zu%s%s%s", e->ib_ports, active,
                           listed ? " (not active: " : "", others, listed ? ")" : "");
    free(others);
    s_add(l, "ib_ports", xstrdup(node), expected, found, what);
}

static void s_check_ib_rate(const fb_expect_entry_t *e, const char *node,
                            const fb_node_facts_t *now, s_list_t *l)
{
    if (!e->ib_rate_gbps)
        return;
    char expected[32];
    snprintf(expected, sizeof expected, "%g Gb/s", e->ib_rate_gbps);
    /* slow active ports, grouped by their rate */
    for (size_t i = 0; i < now->n_ports; i++) {
        const fb_port_facts_t *p = &now->ports[i];
        if (!s_active(p) || p->rate_gbps >= e->ib_rate_gbps - 1e-9)
            continue;
        bool done = false;
        for (size_t j = 0; j < i && !done; j++)
            done = s_active(&now->ports[j]) && now->ports[j].rate_gbps == p->rate_gbps;
        if (done)
            continue;
        size_t n = 0;
        char *names = xstrdup(""), *first = NULL;
        for (size_t j = i; j < now->n_ports; j++) {
            const fb_port_facts_t *q = &now->ports[j];
            if (!s_active(q) || q->rate_gbps != p->rate_gbps)
                continue;
            char *next = xasprintf("%s%s%s:%u", names, n ? ", " : "", q->name, q->port);
            free(names);
            names = next;
            if (!n++)
                first = xasprintf("%s/%s:%u", node, q->name, q->port);
        }
        char *found = p->rate_gbps > 0 ? xasprintf("%g Gb/s on %s", p->rate_gbps, names)
                                       : xasprintf("an unknown rate on %s", names);
        char *what = xasprintf("ib_rate: expected at least %s, found %s", expected, found);
        s_add(l, "ib_rate", n == 1 ? first : xstrdup(node), expected, found, what);
        if (n != 1)
            free(first);
        free(names);
    }
}

size_t fb_expect_check(const fb_expect_entry_t *e, const char *node, const fb_node_facts_t *now,
                       const fb_node_facts_t *before, fb_mismatch_t **out)
{
    *out = NULL;
    if (!e || !now)
        return 0;
    s_list_t l = {0};
    s_check_gpus(e, node, now, before, &l);
    s_check_model(e, node, now, &l);
    s_check_gpu_memory(e, node, now, &l);
    s_check_memory(e, node, now, &l);
    s_check_ib_ports(e, node, now, &l);
    s_check_ib_rate(e, node, now, &l);
    s_check_pcie(e, node, now, &l);
    *out = l.v;
    return l.n;
}

void fb_mismatches_free(fb_mismatch_t *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].field);
        free(m[i].part);
        free(m[i].expected);
        free(m[i].found);
        free(m[i].what);
    }
    free(m);
}

/* ---- expect --from --------------------------------------------------------------------------- */

typedef struct {
    char *text;
    size_t len, cap;
} s_buf_t;

static void s_put(s_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void s_put(s_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->text = xrealloc(b->text, b->cap);
    }
    memcpy(b->text + b->len, s, n + 1);
    b->len += n;
    free(s);
}

/* A size that the check accepts for every GPU's found size, in GiB with one decimal (MiB below
 * 8 GiB): the smallest, when the largest is within tolerance of it. */
static void s_put_size(s_buf_t *b, const char *key, uint64_t lo, uint64_t hi)
{
    double gib = (double)lo / (double)(1ull << 30);
    uint64_t written;
    char text[48];
    if (gib >= 8) {
        double rounded = floor(gib * 10.0 + 0.5) / 10.0;
        snprintf(text, sizeof text, "%.1fGiB", rounded);
        size_t n = strlen(text);
        if (n > 5 && !strcmp(text + n - 5, ".0GiB"))
            memmove(text + n - 5, "GiB", 4);
    } else {
        snprintf(text, sizeof text, "%lluMiB", (unsigned long long)(lo >> 20));
    }
    if (fb_parse_bytes(text, &written) == 0 && s_size_ok(lo, written) && s_size_ok(hi, written))
        s_put(b, "  %s: %s\n", key, text);
    else
        s_put(b, "  # %s: sizes differ too much to state one (%.1f to %.1f GiB)\n", key, gib,
              (double)hi / (double)(1ull << 30));
}

static void s_from_gpus(s_buf_t *b, const fb_node_facts_t *f)
{
    s_put(b, "  gpus: %zu\n", f->n_gpus);
    if (!f->n_gpus)
        return;
    bool same_model = f->gpus[0].model[0] != '\0';
    uint64_t lo = UINT64_MAX, hi = 0;
    unsigned gen = UINT32_MAX, width = UINT32_MAX;
    for (size_t i = 0; i < f->n_gpus; i++) {
        const fb_gpu_facts_t *g = &f->gpus[i];
        same_model &= !strcmp(g->model, f->gpus[0].model);
        lo = g->memory_bytes < lo ? g->memory_bytes : lo;
        hi = g->memory_bytes > hi ? g->memory_bytes : hi;
        gen = g->gen < gen ? g->gen : gen;
        width = g->width < width ? g->width : width;
    }
    if (same_model)
        s_put(b, "  gpu_model: \"%s\"\n", f->gpus[0].model);
    else
        s_put(b, "  # gpu_model: %s\n",
              f->gpus[0].model[0] ? "the GPUs have different models"
                                  : "no GPU management library named "
                                    "the GPUs");
    if (lo)
        s_put_size(b, "gpu_memory", lo, hi);
    else
        s_put(b, "  # gpu_memory: no GPU management library gave every GPU's memory\n");
    if (gen && width)
        s_put(b, "  pcie: gen%ux%u\n", gen, width);
    else if (width)
        s_put(b, "  pcie: x%u   # the link speed of some GPU is unknown\n", width);
    else
        s_put(b, "  # pcie: the links of the GPUs are not known\n");
}

char *fb_expect_from_facts(const fb_node_facts_t *f, const char *comment)
{
    s_buf_t b = {0};
    if (comment)
        s_put(&b, "# %s\n", comment);
    s_put(&b, "expect:\n");
    s_from_gpus(&b, f);
    if (f->mem_total_bytes)
        s_put_size(&b, "memory", f->mem_total_bytes, f->mem_total_bytes);
    size_t active = 0;
    double rate = 0;
    for (size_t i = 0; i < f->n_ports; i++) {
        if (!s_active(&f->ports[i]))
            continue;
        if (!active++ || f->ports[i].rate_gbps < rate)
            rate = f->ports[i].rate_gbps;
    }
    s_put(&b, "  ib_ports: %zu\n", active);
    if (active && rate > 0)
        s_put(&b, "  ib_rate: %g\n", rate);
    return b.text;
}
