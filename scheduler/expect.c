/* SPDX-License-Identifier: Apache-2.0 */
/* Expected hardware (expect.h): the `expect` section of a campaign file, parsed into typed
 * fields with the file's line for every error; which entry applies to a node (the first that
 * names it); the facts of a node the check reads. The check itself and `expect --from` are
 * expect_check.c. */
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
    if (fb_hostlist_check(text, NULL, err, sizeof err))
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
    char *kpath = fb_yaml_path(path, key);
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
        fb_hostlist_free(e->names, e->n_names);
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
            if (fb_hostlist_expand(e->nodes, &e->names, &e->n_names, NULL, 0) == 0)
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
