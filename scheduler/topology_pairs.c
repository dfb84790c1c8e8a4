/* SPDX-License-Identifier: Apache-2.0 */
/* Topology-aware pairing and link diagnosis over the fabric model of topology.c: cross-leaf pair
 * rounds that load every leaf-spine uplink, and the scoring that turns slow pairs into a suspect
 * leaf, uplink or node link. Apart from the model because it plans and judges, where topology.c
 * reads and describes. */
#include "topology.h"
#include "topology_internal.h"

#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        size_t k = topology__node(self, nodes[i]);
        if (!k) {
            if (!skip_unknown) {
                rc = -ENOENT;
                break;
            }
            continue;
        }
        s_active_t *a = &act[self->node_leaf[k - 1]];
        a->nodes = topology__grow(a->nodes, a->n_nodes, &a->cap_nodes, sizeof *a->nodes);
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
        size_t ka = topology__node(self, results[i].a), kb = topology__node(self, results[i].b);
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
