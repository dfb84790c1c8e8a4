/* SPDX-License-Identifier: Apache-2.0 */
/* Environment fingerprints (fingerprint.h): a small ordered map of component -> version, the
 * diff of two, and the grouping of identical changes across nodes into hostlist lines. */
#include "fingerprint.h"

#include "common/hostlist.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

static const char *const s_components[] = {FB_FINGERPRINT_COMPONENTS};

static int s_rank(const char *component)
{
    for (size_t i = 0; component && i < FB_ARRAY_LEN(s_components); i++)
        if (!strcmp(s_components[i], component))
            return (int)i;
    return -1;
}

bool fb_fingerprint_component(const char *component)
{
    return s_rank(component) >= 0;
}

void fb_fingerprint_set(fb_fingerprint_t *fp, const char *component, const char *version)
{
    int rank = s_rank(component);
    if (rank < 0 || !version || !*version)
        return;
    size_t i = 0;
    while (i < fp->n && s_rank(fp->items[i].component) < rank)
        i++;
    if (i < fp->n && !strcmp(fp->items[i].component, component)) {
        free(fp->items[i].version);
        fp->items[i].version = xstrdup(version);
        return;
    }
    fp->items = xrealloc(fp->items, (fp->n + 1) * sizeof *fp->items);
    memmove(&fp->items[i + 1], &fp->items[i], (fp->n - i) * sizeof *fp->items);
    fp->items[i] = (fb_fp_item_t){xstrdup(component), xstrdup(version)};
    fp->n++;
}

const char *fb_fingerprint_get(const fb_fingerprint_t *fp, const char *component)
{
    for (size_t i = 0; fp && i < fp->n; i++)
        if (!strcmp(fp->items[i].component, component))
            return fp->items[i].version;
    return NULL;
}

void fb_fingerprint_clear(fb_fingerprint_t *fp)
{
    for (size_t i = 0; i < fp->n; i++) {
        free(fp->items[i].component);
        free(fp->items[i].version);
    }
    free(fp->items);
    fp->items = NULL;
    fp->n = 0;
}

size_t fb_fingerprint_diff(const fb_fingerprint_t *before, const fb_fingerprint_t *after,
                           fb_fp_change_t **out)
{
    *out = NULL;
    size_t n = 0;
    fb_fp_change_t *v = NULL;
    for (size_t c = 0; c < FB_ARRAY_LEN(s_components); c++) {
        const char *b = fb_fingerprint_get(before, s_components[c]);
        const char *a = fb_fingerprint_get(after, s_components[c]);
        if ((!a && !b) || (a && b && !strcmp(a, b)))
            continue;
        v = xrealloc(v, (n + 1) * sizeof *v);
        v[n++] = (fb_fp_change_t){s_components[c], b, a};
    }
    *out = v;
    return n;
}

static bool s_same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static int s_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int s_cmp_opt(const char *a, const char *b)
{
    return !a ? (b ? -1 : 0) : !b ? 1 : strcmp(a, b);
}

static int s_group_cmp(const void *pa, const void *pb)
{
    const fb_fp_group_t *a = pa, *b = pb;
    int r = s_rank(a->component) - s_rank(b->component);
    if (r)
        return r;
    if (a->n_nodes != b->n_nodes)
        return a->n_nodes > b->n_nodes ? -1 : 1;
    r = s_cmp_opt(a->before, b->before);
    return r ? r : s_cmp_opt(a->after, b->after);
}

size_t fb_fingerprint_group(const fb_fp_node_t *nodes, size_t n, fb_fp_group_t **out)
{
    *out = NULL;
    fb_fp_group_t *g = NULL;
    size_t n_groups = 0;
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i].before || !nodes[i].after)
            continue;
        fb_fp_change_t *ch;
        size_t n_ch = fb_fingerprint_diff(nodes[i].before, nodes[i].after, &ch);
        for (size_t k = 0; k < n_ch; k++) {
            size_t j = 0;
            while (j < n_groups &&
                   !(!strcmp(g[j].component, ch[k].component) &&
                     s_same(g[j].before, ch[k].before) && s_same(g[j].after, ch[k].after)))
                j++;
            if (j == n_groups) {
                g = xrealloc(g, (n_groups + 1) * sizeof *g);
                g[n_groups++] = (fb_fp_group_t){xstrdup(ch[k].component),
                                                xstrdup(ch[k].before),
                                                xstrdup(ch[k].after),
                                                NULL,
                                                0,
                                                NULL};
            }
            g[j].nodes = xrealloc(g[j].nodes, (g[j].n_nodes + 1) * sizeof *g[j].nodes);
            g[j].nodes[g[j].n_nodes++] = xstrdup(nodes[i].node);
        }
        free(ch);
    }
    for (size_t j = 0; j < n_groups; j++) {
        qsort(g[j].nodes, g[j].n_nodes, sizeof *g[j].nodes, s_strcmp_p);
        g[j].hostlist = fb_hostlist_compress((const char *const *)g[j].nodes, g[j].n_nodes);
    }
    if (n_groups)
        qsort(g, n_groups, sizeof *g, s_group_cmp);
    *out = g;
    return n_groups;
}

void fb_fp_groups_free(fb_fp_group_t *groups, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(groups[i].component);
        free(groups[i].before);
        free(groups[i].after);
        fb_hostlist_free(groups[i].nodes, groups[i].n_nodes);
        free(groups[i].hostlist);
    }
    free(groups);
}

char *fb_fp_group_line(const fb_fp_group_t *g)
{
    return xasprintf("%s %s \xe2\x86\x92 %s on %s", g->component, g->before ? g->before : "(none)",
                     g->after ? g->after : "(none)", g->hostlist);
}
