/* SPDX-License-Identifier: Apache-2.0 */
/* The check of a node's facts against an expect entry (expect.h): one mismatch per field, GPUs
 * that differ alike folded into one line naming them in hostlist notation, missing GPUs named from
 * an earlier inventory of the node, the part each mismatch names and its kind; and the other way
 * round, the expectation a known-good node meets written as YAML (`fleetburn expect --from`).
 * Parsing and the facts themselves are expect.c. */
#include "expect.h"

#include "common/hostlist.h"
#include "common/units.h"
#include "common/util.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
            where = fb_hostlist_compress((const char *const *)grp->gpus, grp->n);
            part = xstrdup(node);
        }
        char *found = xasprintf("%s on %s", grp->found, where);
        char *what = xasprintf("%s: expected %s, found %s", field, expected, found);
        s_add(l, field, part, expected, found, what);
        free(where);
        free(grp->found);
        fb_hostlist_free(grp->gpus, grp->n);
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
