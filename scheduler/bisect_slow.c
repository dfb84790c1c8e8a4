/* SPDX-License-Identifier: Apache-2.0 */
/* The slow parts of the diagnosis session's verdicts (bisect.h): what the flow judge names slow,
 * and a leaf's uplinks where the routes are not known; apart from bisect_verdicts.c, which lists
 * the engine's parts, leaf switches and groups, because the question here is another one: which
 * part a slow flow belongs to when the fabric's routes may be unknown. docs/diagnosis.md "Slow,
 * not failing" and "Links: which uplink". */
#include "bisect_internal.h"

#include "common/util.h"
#include "topology.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- slow parts ---- */

#define S_MAX_FLOW_EVIDENCE 24

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The upper median of v[0..n) (NAN when n is 0); sorts v. */
static double s_upper_median(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof *v, s_cmp_double);
    return v[n / 2];
}

/* A node's (or NIC's) flows that leave or enter its leaf, and those that stay inside it: their
 * upper median ratios to the class median, and how many stay inside. */
typedef struct {
    double across, within;
    size_t n_across, n_within;
    const char *leaf;
} s_leaf_split_t;

/* Whether finding f is slow only on flows that cross its leaf's uplinks, while its flows within
 * the leaf are not slow. A slow leaf-spine link looks exactly so to the nodes the subnet manager
 * routes over it: every flow into them from another leaf crosses it, none from their own leaf
 * does; on a fabric of two spines half their flows out cross it too, so they look slow both
 * ways. Without the routes (fb_bisect_opts_t.route) the engine cannot tell that link from the
 * node's own path, so it does not name the node: s_uplink_verdicts names the leaf's uplinks when
 * three or more nodes of the leaf are slow so, and otherwise the node stays undecided. A node
 * slow one way with no flows within its leaf is undecided too (nothing tells the two apart); one
 * slow both ways with none (a throttled host, most often) is named as before. Fills *split when
 * it returns true. */
static bool s_slow_across_leaf_only(const fb_bisect_t *b, const fb_flow_finding_t *f,
                                    s_leaf_split_t *split)
{
    const fb_topology_t *t = b->o.topology;
    if (!t || b->o.route || strstr(f->part, "<->") || !f->n_slow)
        return false;
    double *across = xmalloc(f->n_slow * sizeof *across),
           *within = xmalloc(f->n_slow * sizeof *within);
    size_t na = 0, nw = 0;
    bool known = true;
    for (size_t k = 0; k < f->n_slow && known; k++) {
        const fb_flow_sample_t *x = &f->slow[k];
        const char *ls = fb_topology_leaf_of(t, x->src), *ld = fb_topology_leaf_of(t, x->dst);
        known = ls && ld;
        double r = x->median > 0 ? x->value / x->median : 1.0;
        if (known && strcmp(ls, ld))
            across[na++] = r;
        else if (known)
            within[nw++] = r;
    }
    char *node = xstrndup(f->part, strcspn(f->part, "/"));
    *split = (s_leaf_split_t){s_upper_median(across, na), s_upper_median(within, nw), na, nw,
                              known ? fb_topology_leaf_of(t, node) : NULL};
    free(node);
    free(across);
    free(within);
    double slow = b->o.flow.slow_fraction;
    bool one_way = strcmp(f->direction, "both") != 0;
    return known && split->leaf && na >= b->o.flow.min_partners && split->across <= slow &&
           (nw ? split->within > slow : one_way);
}

/* The flows behind f as v's partners and evidence. */
static void s_flow_evidence(const fb_flow_finding_t *f, fb_bisect_verdict_t *v)
{
    bool recv = !strcmp(f->direction, "receive");
    for (size_t k = 0; k < f->n_slow; k++) {
        const fb_flow_sample_t *s = &f->slow[k];
        bisect__partner_add(v, recv ? s->src : s->dst, strlen(recv ? s->src : s->dst));
        if (k == S_MAX_FLOW_EVIDENCE) {
            bisect__evidence_add(v, s->test_id, xasprintf("... and %zu more flows", f->n_slow - k));
            continue;
        }
        if (k > S_MAX_FLOW_EVIDENCE)
            continue;
        bisect__evidence_add(
            v, s->test_id,
            xasprintf("flow %s -> %s%s%s: %.4g, %.2f of the median %.4g (score %.1f)", s->src,
                      s->dst, s->rail ? " on " : "", s->rail ? s->rail : "", s->value,
                      s->median > 0 ? s->value / s->median : NAN, s->median, s->score));
    }
}

static const char *s_how(const fb_flow_finding_t *f)
{
    return !strcmp(f->direction, "both")
               ? "both ways"
               : (!strcmp(f->direction, "send") ? "when sending" : "when receiving");
}

/* f slow only across its leaf's uplinks (s_slow_across_leaf_only): undecided, unless the engine
 * names the part by its failures anyway. */
static void s_slow_across_finding(const fb_flow_finding_t *f, const s_leaf_split_t *sp,
                                  bisect_vlist_t *l)
{
    fb_bisect_verdict_t *v = bisect__verdict_find(l, f->part);
    if (v && v->state == FB_BISECT_BAD)
        return;
    char within[96];
    if (sp->n_within)
        snprintf(within, sizeof within, "its %zu flows within the leaf at %.2f", sp->n_within,
                 sp->within);
    else
        snprintf(within, sizeof within, "no flows within the leaf to compare");
    char *summary = xasprintf(
        "undecided: slow %s only on the %zu flows that cross %s's uplinks (at %.2f of their "
        "median), %s: the %s's own link or one of %s's uplinks (the subnet manager's routes, "
        "routes:, tell which); chance alone in this fleet %.2g",
        s_how(f), sp->n_across, sp->leaf, sp->across, within, f->kind, sp->leaf, f->chance);
    if (!v)
        v = bisect__verdict_new(l, f->part, f->kind, FB_BISECT_UNDECIDED, NAN);
    v->state = FB_BISECT_UNDECIDED;
    free(v->summary);
    v->summary = summary;
    s_flow_evidence(f, v);
}

static void s_slow_finding(const fb_flow_finding_t *f, bisect_vlist_t *l)
{
    const char *how = s_how(f);
    char *summary = xasprintf("slow %s %s: %zu flows at %.2f of their median, with %u distinct "
                              "partners; chance alone in this fleet %.2g",
                              f->kind, how, f->n_flows, f->ratio, f->n_partners, f->chance);
    fb_bisect_verdict_t *v = bisect__verdict_find(l, f->part);
    if (v && v->state == FB_BISECT_BAD) {
        char *both = xasprintf("%s; %s", v->summary, summary);
        free(v->summary);
        free(summary);
        v->summary = both;
    } else {
        if (v) { /* an engine suspect that the flows name: bad for its slowness */
            v->state = FB_BISECT_BAD;
            v->kind = f->kind;
            free(v->summary);
        } else {
            v = bisect__verdict_new(l, f->part, f->kind, FB_BISECT_BAD, 0.0);
        }
        v->summary = summary;
        v->confidence = f->confidence;
    }
    s_flow_evidence(f, v);
}

static void s_slow_verdicts(const fb_bisect_t *b, bisect_vlist_t *l)
{
    const fb_flow_judgment_t *j = bisect__judgment(b);
    for (size_t i = 0; i < j->n_findings; i++) {
        s_leaf_split_t sp;
        if (s_slow_across_leaf_only(b, &j->findings[i], &sp))
            s_slow_across_finding(&j->findings[i], &sp, l);
        else
            s_slow_finding(&j->findings[i], l);
    }
    for (size_t i = 0; i < j->n_pending; i++) {
        fb_bisect_verdict_t *v = bisect__verdict_find(l, j->pending[i]);
        if (v && v->state != FB_BISECT_PASSED)
            continue;
        if (!v)
            v = bisect__verdict_new(l, j->pending[i], "node", FB_BISECT_UNDECIDED, NAN);
        v->state = FB_BISECT_UNDECIDED;
        free(v->summary);
        v->summary = xstrdup("undecided: its flows are slow enough to matter, but too few flows "
                             "or partners to rule out chance in this fleet so far");
    }
    size_t pos = 0;
    const char *node;
    void *val;
    while (fb_strmap_next(b->ever_pending, &pos, &node, &val)) {
        if (bisect__verdict_find(l, node) || fb_flow_judgment_pending(j, node))
            continue;
        bool fast = fb_flow_judgment_fast(j, node);
        if (!fast && !fb_flow_judgment_stray(j, node))
            continue; /* its slow flows are a named part's: it is not implicated any more */
        fb_bisect_verdict_t *v = bisect__verdict_new(
            l, node, "node", fast ? FB_BISECT_CLEARED : FB_BISECT_UNDECIDED, fast ? 0.99 : NAN);
        v->summary = xstrdup(fast ? "cleared: slow flows once; its flows since rule a slowdown "
                                    "that matters out (99% bound, each way)"
                                  : "undecided: slow flows once; too few flows since to rule a "
                                    "slowdown that matters out");
    }
}

/* ---- slow uplinks, where the routes are not known ---- */

/* A slow leaf-spine link slows the flows routed over it: those to the leaf's nodes that the
 * subnet manager routes through that spine (about one in S of them, with S spines), and those from
 * the leaf to such nodes elsewhere. Without the routes (fb_bisect_opts_t.route) the flow judge has
 * no part for it, and names those nodes slow when receiving. Several nodes of one leaf slow the
 * same way are the leaf's doing, by the leaf switch's standard (s_bad_leaves): at least three, and
 * chance alone (nodes slow at the fleet's rate elsewhere landing on one leaf, in one direction,
 * times the leaves and the two directions) at most fleet_error. The leaf is named by its uplinks,
 * "leaf02<->*": which spine's needs the routes. Fills (*chance)[leaf] (1: not named); returns how
 * many are named. */
static size_t s_slow_uplinks(const fb_bisect_t *b, const fb_flow_judgment_t *j, double **chance)
{
    const fb_topology_t *t = b->o.topology;
    size_t leaves = t ? fb_topology_n_leaves(t) : 0, named = 0;
    *chance = xcalloc(leaves + 1, sizeof **chance);
    if (!leaves)
        return 0;
    size_t *in = xcalloc(leaves, sizeof *in), *slow = xcalloc(2 * leaves, sizeof *slow);
    size_t total = 0, total_slow[2] = {0, 0};
    for (size_t k = 0; k < leaves; k++) {
        size_t n;
        const char *const *nodes = fb_topology_leaf_nodes(t, k, &n);
        for (size_t i = 0; i < n; i++)
            in[k] += !isnan(fb_diag_p_bad(b->diag, nodes[i]));
        total += in[k];
    }
    for (size_t i = 0; i < j->n_findings; i++) {
        const fb_flow_finding_t *f = &j->findings[i];
        /* a node slow both ways is slow each way */
        bool rx = strcmp(f->direction, "send") != 0, tx = strcmp(f->direction, "receive") != 0;
        const char *leaf = strcmp(f->kind, "node") ? NULL : fb_topology_leaf_of(t, f->part);
        for (size_t k = 0; leaf && k < leaves; k++)
            if (!strcmp(fb_topology_leaf_name(t, k), leaf))
                for (size_t dir = 0; dir < 2; dir++)
                    if (dir ? tx : rx) {
                        slow[2 * k + dir]++;
                        total_slow[dir]++;
                    }
    }
    for (size_t k = 0; k < leaves; k++) {
        (*chance)[k] = 1.0;
        for (size_t dir = 0; dir < 2; dir++) {
            size_t s = slow[2 * k + dir];
            if (s < 3)
                continue;
            double rate = (double)(total_slow[dir] - s + 1) / (double)(total - in[k] + 2);
            double c = bisect__binom_tail(in[k], s, rate) * (double)leaves * 2.0;
            if (c <= b->o.diag.fleet_error && c < (*chance)[k])
                (*chance)[k] = c;
        }
        named += (*chance)[k] < 1.0;
    }
    free(in);
    free(slow);
    return named;
}

/* The index of the leaf of node, among those whose uplinks s_slow_uplinks named; -1 if none. */
static long s_named_leaf(const fb_bisect_t *b, const double *chance, const char *node)
{
    const fb_topology_t *t = b->o.topology;
    const char *name = node ? fb_topology_leaf_of(t, node) : NULL;
    for (size_t k = 0; name && k < fb_topology_n_leaves(t); k++)
        if (chance[k] < 1.0 && !strcmp(fb_topology_leaf_name(t, k), name))
            return (long)k;
    return -1;
}

/* Whether finding f (a node or NIC that the engine does not name by its failures) is explained by
 * an uplink s_slow_uplinks named, as the flow judge explains: its flows that do not leave or enter
 * that leaf (those that cannot cross the slow uplink), judged again on their own, are not slow
 * (their upper median above slow_fraction of the median, or there are none). *leaf gets the leaf.
 */
static bool s_behind_slow_uplink(const fb_bisect_t *b, const double *chance,
                                 const fb_flow_finding_t *f, size_t *leaf)
{
    const fb_topology_t *t = b->o.topology;
    if (strstr(f->part, "<->") || !f->n_slow ||
        fb_diag_p_bad(b->diag, f->part) >= b->o.diag.bad_threshold)
        return false;
    long at = -1;
    double *rest = xmalloc(f->n_slow * sizeof *rest);
    size_t n_rest = 0, n_through = 0;
    for (size_t k = 0; k < f->n_slow; k++) {
        const fb_flow_sample_t *x = &f->slow[k];
        const char *ls = fb_topology_leaf_of(t, x->src), *ld = fb_topology_leaf_of(t, x->dst);
        long here = s_named_leaf(b, chance, x->src);
        if (here < 0)
            here = s_named_leaf(b, chance, x->dst);
        if (here >= 0 && (at < 0 || here == at) && ls && ld && strcmp(ls, ld)) {
            at = here;
            n_through++;
        } else {
            rest[n_rest++] = x->median > 0 ? x->value / x->median : 1.0;
        }
    }
    bool explained = at >= 0 && n_through > 0;
    if (explained && n_rest)
        explained = s_upper_median(rest, n_rest) > b->o.flow.slow_fraction;
    free(rest);
    if (explained)
        *leaf = (size_t)at;
    return explained;
}

/* The uplinks named, as verdicts; the nodes and NICs of their leaves named slow by their flows
 * alone become passed: the uplink explains their slow flows. */
static void s_uplink_verdicts(const fb_bisect_t *b, bisect_vlist_t *l)
{
    const fb_flow_judgment_t *j = bisect__judgment(b);
    double *chance;
    size_t named = s_slow_uplinks(b, j, &chance);
    const fb_topology_t *t = b->o.topology;
    for (size_t k = 0; named && k < fb_topology_n_leaves(t); k++) {
        if (chance[k] >= 1.0)
            continue;
        char *part = xasprintf("%s<->*", fb_topology_leaf_name(t, k));
        fb_bisect_verdict_t *uv =
            bisect__verdict_new(l, part, "link", FB_BISECT_BAD, 1.0 - chance[k]);
        free(part);
        size_t n_nodes = 0;
        for (size_t i = 0; i < j->n_findings; i++) {
            const fb_flow_finding_t *f = &j->findings[i];
            size_t leaf;
            fb_bisect_verdict_t *x = bisect__verdict_find(l, f->part);
            if (!x || (x->state != FB_BISECT_BAD && x->state != FB_BISECT_UNDECIDED) ||
                !s_behind_slow_uplink(b, chance, f, &leaf) || leaf != k)
                continue;
            n_nodes++;
            bisect__explained_by(
                uv, x,
                xasprintf("passed: its slow flows are its leaf's uplink's (%s<->* named "
                          "bad)",
                          fb_topology_leaf_name(t, k)));
        }
        uv->summary =
            xasprintf("slow uplink of %s (which spine: the subnet manager's routes tell): "
                      "%zu nodes and NICs whose slow flows leave or enter the leaf; "
                      "chance alone in this fleet %.2g",
                      fb_topology_leaf_name(t, k), n_nodes, chance[k]);
    }
    free(chance);
}

size_t bisect__slow_bad(const fb_bisect_t *b, char ***parts, size_t n)
{
    const fb_flow_judgment_t *j = bisect__judgment(b);
    const fb_topology_t *t = b->o.topology;
    double *up;
    size_t n_up = s_slow_uplinks(b, j, &up), leaf;
    char **out = xrealloc(*parts, (n + j->n_findings + n_up + 1) * sizeof *out);
    for (size_t k = 0; n_up && k < fb_topology_n_leaves(t); k++)
        if (up[k] < 1.0)
            out[n++] = xasprintf("%s<->*", fb_topology_leaf_name(t, k));
    for (size_t i = 0; i < j->n_findings; i++) {
        s_leaf_split_t sp;
        bool seen = (n_up && s_behind_slow_uplink(b, up, &j->findings[i], &leaf)) ||
                    s_slow_across_leaf_only(b, &j->findings[i], &sp);
        for (size_t k = 0; k < n && !seen; k++)
            seen = !strcmp(out[k], j->findings[i].part);
        if (!seen)
            out[n++] = xstrdup(j->findings[i].part);
    }
    free(up);
    *parts = out;
    return n;
}

void bisect__slow_verdicts(const fb_bisect_t *b, bisect_vlist_t *l)
{
    s_slow_verdicts(b, l);
    s_uplink_verdicts(b, l);
}
