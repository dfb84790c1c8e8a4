/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis session's verdicts (bisect.h): the engine's parts (bad, undecided with what was
 * tried, cleared with the bound that cleared them, passed), the groups a split could not narrow,
 * and the slow parts of the flows, one list with evidence. One standard decides them all
 * (docs/diagnosis.md "Naming"); this file only says it. */
#include "bisect_internal.h"

#include "common/util.h"
#include "topology.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    fb_bisect_verdict_t *v;
    size_t n, cap;
} s_vlist_t;

static fb_bisect_verdict_t *s_find_verdict(s_vlist_t *l, const char *part)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].part, part))
            return &l->v[i];
    return NULL;
}

static fb_bisect_verdict_t *s_verdict_new(s_vlist_t *l, const char *part, const char *kind,
                                          fb_bisect_state_t state, double confidence)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    fb_bisect_verdict_t *v = &l->v[l->n++];
    memset(v, 0, sizeof *v);
    v->part = xstrdup(part);
    v->kind = kind;
    v->state = state;
    v->confidence = confidence;
    return v;
}

/* Takes ownership of what. */
static void s_evidence_add(fb_bisect_verdict_t *v, const char *test_id, char *what)
{
    v->evidence = xrealloc(v->evidence, (v->n_evidence + 1) * sizeof *v->evidence);
    v->evidence[v->n_evidence++] = (fb_bisect_evidence_t){xstrdup(test_id), what};
}

static void s_partner_add(fb_bisect_verdict_t *v, const char *node, size_t len)
{
    for (size_t i = 0; i < v->n_partners; i++)
        if (strlen(v->partners[i]) == len && !strncmp(v->partners[i], node, len))
            return;
    v->partners = xrealloc(v->partners, (v->n_partners + 1) * sizeof *v->partners);
    v->partners[v->n_partners++] = xstrndup(node, len);
}

/* x's findings are explained by the part `by` names (a bad leaf switch or uplink): by takes x's
 * part as a partner and x's first two pieces of evidence, and x becomes passed with summary
 * (taken). */
static void s_explained_by(fb_bisect_verdict_t *by, fb_bisect_verdict_t *x, char *summary)
{
    s_partner_add(by, x->part, strlen(x->part));
    for (size_t e = 0; e < x->n_evidence && e < 2; e++)
        s_evidence_add(by, x->evidence[e].test_id,
                       xasprintf("%s: %s", x->part, x->evidence[e].what));
    x->state = FB_BISECT_PASSED;
    x->confidence = NAN;
    free(x->summary);
    x->summary = summary;
}

/* The nodes of a partner list "n5/mlx5_0,n7". */
static void s_partners_add(fb_bisect_verdict_t *v, const char *csv)
{
    while (csv && *csv) {
        size_t len = strcspn(csv, ",");
        size_t node_len = strcspn(csv, ",/");
        if (node_len > 0)
            s_partner_add(v, csv, node_len < len ? node_len : len);
        csv += len;
        if (*csv == ',')
            csv++;
    }
}

/* ---- the engine's parts ---- */

static char *s_diag_what(const fb_diag_evidence_t *e)
{
    if (e->counter)
        return xasprintf("port counter: %s; P %.3g -> %.3g", e->counter, e->p_before, e->p_after);
    const char *result =
        e->failed ? (e->explained ? "failed (explained by a part named bad)" : "failed") : "passed";
    if (!*e->partners)
        return xasprintf("alone: %s; P %.3g -> %.3g (round %u)", result, e->p_before, e->p_after,
                         e->round);
    return xasprintf("with %s (%u of %u trusted%s): %s; P %.3g -> %.3g (round %u)", e->partners,
                     e->n_trusted, e->n_partners, e->informative ? "" : ", not counted", result,
                     e->p_before, e->p_after, e->round);
}

static char *s_bad_summary(const fb_diag_verdict_t *x, unsigned min_conf)
{
    char counters[64] = "", shows[64] = "";
    if (x->n_counters)
        snprintf(counters, sizeof counters, ", %u port-counter increase(s)", x->n_counters);
    if (isfinite(x->q_est))
        snprintf(shows, sizeof shows, "; shows in about %.0f%% of its tests", 100.0 * x->q_est);
    (void)min_conf;
    return xasprintf("bad %s%s: failed %u of %u tests, %u independent confirmation(s)%s; chance "
                     "alone in this fleet %.2g; P(bad) %.4f%s",
                     x->ambiguous ? "node or its only NIC (one rail cannot tell them apart)"
                                  : x->kind,
                     "", x->n_failed, x->n_tests, x->n_confirmations, counters,
                     x->n_counters ? 0.0 : x->chance, x->ambiguous ? x->p_unit : x->p_bad, shows);
}

static char *s_undecided_summary(const fb_diag_verdict_t *x, const fb_diag_params_t *par,
                                 double q_clear)
{
    const char *short_of =
        x->n_confirmations < par->min_confirmations
            ? "too few independent confirmations"
            : (x->p_bad < par->bad_threshold ? "P(bad) below the threshold"
                                             : "chance can explain its failures");
    char not_cleared[160];
    if (x->burst_open)
        snprintf(not_cleared, sizeof not_cleared,
                 "not cleared: it failed in a round with no passing test of it beside the "
                 "failure, as a fault in bursts would, and passes cannot rule such a fault out");
    else
        snprintf(not_cleared, sizeof not_cleared,
                 "not cleared: %u more pass(es) in a row would rule out a fault showing in "
                 "%.0f%% of tests",
                 x->clear_more, 100.0 * q_clear);
    return xasprintf("undecided: failed %u of %u informative tests since its first failure "
                     "(%u of %u tests in all), %u of %u confirmations, P(bad) %.3g; not bad: %s; "
                     "%s",
                     x->k_informative, x->n_informative, x->n_failed, x->n_tests,
                     x->n_confirmations, par->min_confirmations, x->p_bad, short_of, not_cleared);
}

static char *s_diag_summary(const fb_diag_verdict_t *x, const fb_diag_params_t *par, double q_clear)
{
    switch (x->state) {
    case FB_DIAG_BAD:
        return s_bad_summary(x, par->min_confirmations);
    case FB_DIAG_UNDECIDED:
        return s_undecided_summary(x, par, q_clear);
    case FB_DIAG_CLEARED:
        return xasprintf("cleared: after its first failure, %u failure(s) in %u informative "
                         "tests: a fault showing in %.0f%% of tests would have shown with %.0f%%; "
                         "P(bad) %.2g",
                         x->k_informative, x->n_informative, 100.0 * q_clear,
                         100.0 * par->clear_confidence, x->p_bad);
    default:
        return xasprintf("passed: in %u failed test(s) of %u, none of which pointed at it (each "
                         "explained by a part named bad, or the suspicion stayed under %.0f times "
                         "its prior)",
                         x->n_failed, x->n_tests, par->implicate_ratio);
    }
}

static fb_bisect_state_t s_state(fb_diag_state_t s)
{
    switch (s) {
    case FB_DIAG_BAD:
        return FB_BISECT_BAD;
    case FB_DIAG_UNDECIDED:
        return FB_BISECT_UNDECIDED;
    case FB_DIAG_CLEARED:
        return FB_BISECT_CLEARED;
    default:
        return FB_BISECT_PASSED;
    }
}

static bool s_diag_bad(const fb_diag_verdict_t *v, size_t n, const char *suspect)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].suspect, suspect))
            return v[i].state == FB_DIAG_BAD;
    return false;
}

/* Every part of the engine that was in a failed test or had a counter against it. */
static void s_diag_verdicts(const fb_bisect_t *b, s_vlist_t *l)
{
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(b->diag, &v);
    double q_clear = fb_diag_q_clear(b->diag);
    const char *const *rails;
    bool railless = fb_diag_rails(b->diag, &rails) == 0;
    for (size_t i = 0; i < n; i++) {
        const fb_diag_verdict_t *x = &v[i];
        if (x->n_failed == 0 && x->n_counters == 0)
            continue;
        if (x->parent && x->state != FB_DIAG_BAD && s_diag_bad(v, n, x->parent))
            continue; /* a NIC of a node named bad: the node's verdict covers it */
        fb_bisect_state_t st = s_state(x->state);
        double p = x->ambiguous ? x->p_unit : x->p_bad;
        double conf = st == FB_BISECT_CLEARED ? 1.0 - p : (st == FB_BISECT_PASSED ? NAN : p);
        fb_bisect_verdict_t *bv = s_verdict_new(l, x->suspect, x->kind, st, conf);
        bv->summary = s_diag_summary(x, &b->o.diag, q_clear);
        bv->unit = !x->parent && railless;
        if (bv->unit && st == FB_BISECT_BAD) {
            char *s =
                xasprintf("%s (the node or one of its NICs: its tests used them all)", bv->summary);
            free(bv->summary);
            bv->summary = s;
        }
        for (size_t k = 0; k < x->n_evidence; k++) {
            s_evidence_add(bv, x->evidence[k].test_id, s_diag_what(&x->evidence[k]));
            s_partners_add(bv, x->evidence[k].partners);
        }
    }
    free(v);
}

/* ---- leaf switches ---- */

/* P(X >= k) for X ~ Binomial(n, p). */
static double s_tail(size_t n, size_t k, double p)
{
    if (k == 0)
        return 1.0;
    if (k > n || p <= 0.0)
        return 0.0;
    double sum = 0.0;
    for (size_t j = k; j <= n; j++)
        sum += exp(lgamma((double)n + 1) - lgamma((double)j + 1) - lgamma((double)(n - j) + 1) +
                   (double)j * log(p) + (double)(n - j) * log1p(-p));
    return sum > 1.0 ? 1.0 : sum;
}

static bool s_listed(const char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], name))
            return true;
    return false;
}

/* A leaf switch that takes every node behind it shows as many bad nodes on one leaf. Where the
 * fabric is known, a leaf is named when at least half of its nodes in the stage (and three) are
 * named bad, by the same standard: chance alone (nodes bad at the fleet's rate elsewhere landing
 * on one leaf, times the leaves) at most fleet_error. Fills *chance per leaf (1: not named);
 * returns how many are. */
static size_t s_bad_leaves(const fb_bisect_t *b, double **chance)
{
    const fb_topology_t *t = b->o.topology;
    size_t leaves = t ? fb_topology_n_leaves(t) : 0, named = 0, total = 0, total_bad = 0;
    *chance = xcalloc(leaves + 1, sizeof **chance);
    if (!leaves)
        return 0;
    const char *const *badv;
    size_t nb = fb_diag_bad_parts(b->diag, &badv);
    size_t *in = xcalloc(leaves, sizeof *in), *bad = xcalloc(leaves, sizeof *bad);
    for (size_t k = 0; k < leaves; k++) {
        size_t n;
        const char *const *nodes = fb_topology_leaf_nodes(t, k, &n);
        for (size_t i = 0; i < n; i++) {
            if (isnan(fb_diag_p_bad(b->diag, nodes[i])))
                continue; /* not in this stage */
            in[k]++;
            bad[k] += s_listed(badv, nb, nodes[i]);
        }
        total += in[k];
        total_bad += bad[k];
    }
    for (size_t k = 0; k < leaves; k++) {
        (*chance)[k] = 1.0;
        if (bad[k] < 3 || 2 * bad[k] < in[k])
            continue;
        double rate = (double)(total_bad - bad[k] + 1) / (double)(total - in[k] + 2);
        double c = s_tail(in[k], bad[k], rate) * (double)leaves;
        if (c <= b->o.diag.fleet_error) {
            (*chance)[k] = c;
            named++;
        }
    }
    free((void *)badv);
    free(in);
    free(bad);
    return named;
}

/* The leaves named, as verdicts; their nodes' verdicts become passed: the leaf explains them. */
static void s_leaf_verdicts(const fb_bisect_t *b, s_vlist_t *l)
{
    double *chance;
    size_t named = s_bad_leaves(b, &chance);
    const fb_topology_t *t = b->o.topology;
    for (size_t k = 0; named && k < fb_topology_n_leaves(t); k++) {
        if (chance[k] >= 1.0)
            continue;
        const char *leaf = fb_topology_leaf_name(t, k);
        size_t before = l->n;
        fb_bisect_verdict_t *lv = s_verdict_new(l, leaf, "leaf", FB_BISECT_BAD, 1.0 - chance[k]);
        size_t n_bad = 0;
        for (size_t i = 0; i < before; i++) {
            fb_bisect_verdict_t *x = &l->v[i];
            const char *xl = strchr(x->part, '/') ? NULL : fb_topology_leaf_of(t, x->part);
            if (x->state != FB_BISECT_BAD || !xl || strcmp(xl, leaf))
                continue;
            n_bad++;
            s_explained_by(lv, x,
                           xasprintf("passed: its failures are its leaf's (%s named bad)", leaf));
        }
        lv->summary = xasprintf("bad leaf switch: %zu of its nodes named bad, more than half of "
                                "those in the stage; chance alone in this fleet %.2g",
                                n_bad, chance[k]);
    }
    free(chance);
}

/* ---- groups a split could not narrow ---- */

static bool s_has_member(const bisect_gtest_t *g, const char *node)
{
    for (size_t i = 0; i < g->n_members; i++)
        if (!strcmp(g->members[i], node))
            return true;
    return false;
}

/* The group tests that held every one of members[0..n), as evidence. */
static void s_group_evidence(const fb_bisect_t *b, fb_bisect_verdict_t *v,
                             const char *const *members, size_t n)
{
    const bisect_state_t *st = b->st;
    for (size_t t = 0; t < st->n_gtests; t++) {
        const bisect_gtest_t *g = &st->gtests[t];
        bool all = true;
        for (size_t i = 0; i < n && all; i++)
            all = s_has_member(g, members[i]);
        if (!all)
            continue;
        s_evidence_add(
            v, g->test_id,
            xasprintf("group of %zu: %s", g->n_members, g->failed ? "failed" : "passed"));
    }
}

static char *s_join(const char *const *names, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    char *s = xmalloc(len), *at = s;
    *at = '\0';
    for (size_t i = 0; i < n; i++)
        at += sprintf(at, "%s%s", i ? "," : "", names[i]);
    return s;
}

/* Whether a member of names is named bad by the engine (it explains the group's failure). */
static bool s_any_bad(const fb_bisect_t *b, const char *const *names, size_t n)
{
    fb_diag_verdict_t *v;
    size_t nv = fb_diag_verdicts(b->diag, &v);
    bool bad = false;
    for (size_t i = 0; i < n && !bad; i++)
        for (size_t k = 0; k < nv && !bad; k++)
            bad = v[k].state == FB_DIAG_BAD && !strcmp(v[k].suspect, names[i]);
    free(v);
    return bad;
}

/* One split search: groups none of whose parts failed alone (irreducible) and the nodes still
 * being split when the budget ran out are undecided groups, unless a member named bad explains
 * them. The members of failing parts at the floor are the engine's (pairs with trusted nodes). */
static void s_split_verdicts(const fb_bisect_t *b, size_t si, s_vlist_t *l)
{
    const fb_split_t *s = b->splits[si];
    const bisect_gtest_t *g = &b->st->gtests[b->st->failing[b->split_group[si]]];
    size_t nf = fb_split_n_findings(s), np = fb_split_n_parts(s);
    for (size_t k = 0; k < nf; k++) {
        size_t size;
        const char *const *m = fb_split_finding(s, k, &size);
        if (fb_split_finding_failed(s, k) || s_any_bad(b, m, size))
            continue;
        char *part = s_join(m, size);
        fb_bisect_verdict_t *v = s_verdict_new(l, part, "group", FB_BISECT_UNDECIDED, NAN);
        v->summary = xasprintf("undecided group of %zu: failed together, no part of it failed "
                               "alone in %u run(s) (the fault needs this scale, or it hid, or the "
                               "failure was chance)",
                               size, b->o.split_repeat);
        s_group_evidence(b, v, m, size);
        free(part);
    }
    if (!np)
        return;
    const char **m = xcalloc(g->n_members, sizeof *m);
    size_t n = 0;
    for (size_t k = 0; k < np; k++) {
        size_t size;
        const char *const *pm = fb_split_part(s, k, &size);
        for (size_t i = 0; i < size; i++)
            m[n++] = pm[i];
    }
    if (!s_any_bad(b, m, n)) {
        char *part = s_join(m, n);
        fb_bisect_verdict_t *v = s_verdict_new(l, part, "group", FB_BISECT_UNDECIDED, NAN);
        v->summary = xasprintf("undecided: %zu node(s) still being split at level %u when the "
                               "session ended (%s)",
                               n, fb_split_levels(s), fb_bisect_end_name(b->end));
        free(part);
    }
    free(m);
}

/* ---- slow parts ---- */

#define S_MAX_FLOW_EVIDENCE 24

static void s_slow_finding(const fb_flow_finding_t *f, s_vlist_t *l)
{
    const char *how = !strcmp(f->direction, "both")
                          ? "both ways"
                          : (!strcmp(f->direction, "send") ? "when sending" : "when receiving");
    char *summary = xasprintf("slow %s %s: %zu flows at %.2f of their median, with %u distinct "
                              "partners; chance alone in this fleet %.2g",
                              f->kind, how, f->n_flows, f->ratio, f->n_partners, f->chance);
    fb_bisect_verdict_t *v = s_find_verdict(l, f->part);
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
            v = s_verdict_new(l, f->part, f->kind, FB_BISECT_BAD, 0.0);
        }
        v->summary = summary;
        v->confidence = f->confidence;
    }
    bool recv = !strcmp(f->direction, "receive");
    for (size_t k = 0; k < f->n_slow; k++) {
        const fb_flow_sample_t *s = &f->slow[k];
        s_partner_add(v, recv ? s->src : s->dst, strlen(recv ? s->src : s->dst));
        if (k == S_MAX_FLOW_EVIDENCE) {
            s_evidence_add(v, s->test_id, xasprintf("... and %zu more flows", f->n_slow - k));
            continue;
        }
        if (k > S_MAX_FLOW_EVIDENCE)
            continue;
        s_evidence_add(v, s->test_id,
                       xasprintf("flow %s -> %s%s%s: %.4g, %.2f of the median %.4g (score %.1f)",
                                 s->src, s->dst, s->rail ? " on " : "", s->rail ? s->rail : "",
                                 s->value, s->median > 0 ? s->value / s->median : NAN, s->median,
                                 s->score));
    }
}

static void s_slow_verdicts(const fb_bisect_t *b, s_vlist_t *l)
{
    const fb_flow_judgment_t *j = bisect__judgment(b);
    for (size_t i = 0; i < j->n_findings; i++)
        s_slow_finding(&j->findings[i], l);
    for (size_t i = 0; i < j->n_pending; i++) {
        fb_bisect_verdict_t *v = s_find_verdict(l, j->pending[i]);
        if (v && v->state != FB_BISECT_PASSED)
            continue;
        if (!v)
            v = s_verdict_new(l, j->pending[i], "node", FB_BISECT_UNDECIDED, NAN);
        v->state = FB_BISECT_UNDECIDED;
        free(v->summary);
        v->summary = xstrdup("undecided: its flows are slow enough to matter, but too few flows "
                             "or partners to rule out chance in this fleet so far");
    }
    size_t pos = 0;
    const char *node;
    void *val;
    while (fb_strmap_next(b->ever_pending, &pos, &node, &val)) {
        if (s_find_verdict(l, node) || fb_flow_judgment_pending(j, node))
            continue;
        bool fast = fb_flow_judgment_fast(j, node);
        if (!fast && !fb_flow_judgment_stray(j, node))
            continue; /* its slow flows are a named part's: it is not implicated any more */
        fb_bisect_verdict_t *v = s_verdict_new(
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
            double c = s_tail(in[k], s, rate) * (double)leaves * 2.0;
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

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Whether finding f (a node or NIC that the engine does not name by its failures) is explained by
 * an uplink s_slow_uplinks named, as the flow judge explains: its flows that do not leave or enter
 * that leaf (those that cannot cross the slow uplink), judged again on their own, are not slow
 * (their upper median above slow_fraction of the median, or there are none). *leaf gets the leaf. */
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
    if (explained && n_rest) {
        qsort(rest, n_rest, sizeof *rest, s_cmp_double);
        explained = rest[n_rest / 2] > b->o.flow.slow_fraction;
    }
    free(rest);
    if (explained)
        *leaf = (size_t)at;
    return explained;
}

/* The uplinks named, as verdicts; the nodes and NICs of their leaves named slow by their flows
 * alone become passed: the uplink explains their slow flows. */
static void s_uplink_verdicts(const fb_bisect_t *b, s_vlist_t *l)
{
    const fb_flow_judgment_t *j = bisect__judgment(b);
    double *chance;
    size_t named = s_slow_uplinks(b, j, &chance);
    const fb_topology_t *t = b->o.topology;
    for (size_t k = 0; named && k < fb_topology_n_leaves(t); k++) {
        if (chance[k] >= 1.0)
            continue;
        char *part = xasprintf("%s<->*", fb_topology_leaf_name(t, k));
        fb_bisect_verdict_t *uv = s_verdict_new(l, part, "link", FB_BISECT_BAD, 1.0 - chance[k]);
        free(part);
        size_t n_nodes = 0;
        for (size_t i = 0; i < j->n_findings; i++) {
            const fb_flow_finding_t *f = &j->findings[i];
            size_t leaf;
            fb_bisect_verdict_t *x = s_find_verdict(l, f->part);
            if (!x || x->state != FB_BISECT_BAD || !s_behind_slow_uplink(b, chance, f, &leaf) ||
                leaf != k)
                continue;
            n_nodes++;
            s_explained_by(uv, x,
                           xasprintf("passed: its slow flows are its leaf's uplink's (%s<->* named "
                                     "bad)",
                                     fb_topology_leaf_name(t, k)));
        }
        uv->summary = xasprintf("slow uplink of %s (which spine: the subnet manager's routes tell): "
                                "%zu nodes and NICs whose slow flows leave or enter the leaf; "
                                "chance alone in this fleet %.2g",
                                fb_topology_leaf_name(t, k), n_nodes, chance[k]);
    }
    free(chance);
}

/* ---- the list ---- */

size_t fb_bisect_bad(const fb_bisect_t *b, char ***parts)
{
    assert(b && parts);
    bisect__read(b);
    const char *const *bad;
    size_t nb = fb_diag_bad_parts(b->diag, &bad);
    const fb_flow_judgment_t *j = bisect__judgment(b);
    double *chance;
    size_t named = s_bad_leaves(b, &chance), n = 0;
    const fb_topology_t *t = b->o.topology;
    char **out = xcalloc(nb + j->n_findings + named + 1, sizeof *out);
    for (size_t k = 0; named && k < fb_topology_n_leaves(t); k++)
        if (chance[k] < 1.0)
            out[n++] = xstrdup(fb_topology_leaf_name(t, k));
    for (size_t i = 0; i < nb; i++) {
        const char *leaf = named && !strchr(bad[i], '/') ? fb_topology_leaf_of(t, bad[i]) : NULL;
        bool explained = false;
        for (size_t k = 0; leaf && k < fb_topology_n_leaves(t) && !explained; k++)
            explained = chance[k] < 1.0 && !strcmp(fb_topology_leaf_name(t, k), leaf);
        if (!explained)
            out[n++] = xstrdup(bad[i]);
    }
    free(chance);
    free((void *)bad);
    double *up;
    size_t n_up = s_slow_uplinks(b, j, &up), leaf;
    out = xrealloc(out, (n + j->n_findings + n_up + 1) * sizeof *out);
    for (size_t k = 0; n_up && k < fb_topology_n_leaves(t); k++)
        if (up[k] < 1.0)
            out[n++] = xasprintf("%s<->*", fb_topology_leaf_name(t, k));
    for (size_t i = 0; i < j->n_findings; i++) {
        bool seen = n_up && s_behind_slow_uplink(b, up, &j->findings[i], &leaf);
        for (size_t k = 0; k < n && !seen; k++)
            seen = !strcmp(out[k], j->findings[i].part);
        if (!seen)
            out[n++] = xstrdup(j->findings[i].part);
    }
    free(up);
    *parts = out;
    return n;
}

static int s_cmp_state(const void *a, const void *b)
{
    const fb_bisect_verdict_t *x = a, *y = b;
    if (x->state != y->state)
        return (int)x->state - (int)y->state;
    return strcmp(x->part, y->part);
}

size_t fb_bisect_verdicts(const fb_bisect_t *b, fb_bisect_verdict_t **out)
{
    assert(b && out);
    bisect__read(b);
    s_vlist_t l = {0};
    s_diag_verdicts(b, &l);
    s_leaf_verdicts(b, &l);
    for (size_t i = 0; i < b->n_splits; i++)
        s_split_verdicts(b, i, &l);
    s_slow_verdicts(b, &l);
    s_uplink_verdicts(b, &l);
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, s_cmp_state);
    *out = l.v;
    return l.n;
}

void fb_bisect_verdicts_free(fb_bisect_verdict_t **v, size_t n)
{
    assert(v);
    if (!*v)
        return;
    for (size_t i = 0; i < n; i++) {
        fb_bisect_verdict_t *x = &(*v)[i];
        free(x->part);
        free(x->summary);
        for (size_t k = 0; k < x->n_partners; k++)
            free(x->partners[k]);
        free(x->partners);
        for (size_t k = 0; k < x->n_evidence; k++) {
            free(x->evidence[k].test_id);
            free(x->evidence[k].what);
        }
        free(x->evidence);
    }
    free(*v);
    *v = NULL;
}

const char *fb_bisect_state_name(fb_bisect_state_t s)
{
    static const char *const names[] = {"bad", "undecided", "cleared", "passed"};
    return (unsigned)s < 4 ? names[s] : "?";
}
