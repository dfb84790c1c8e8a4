/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis session's verdicts (bisect.h): the engine's parts (bad, undecided with what was
 * tried, cleared with the bound that cleared them, passed), leaf switches and the groups a split
 * could not narrow, with the slow parts of the flows (bisect_slow.c) one list with evidence. One
 * standard decides them all (docs/diagnosis.md "Naming"); this file only says it. */
#include "bisect_internal.h"

#include "common/util.h"
#include "topology.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fb_bisect_verdict_t *bisect__verdict_find(bisect_vlist_t *l, const char *part)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].part, part))
            return &l->v[i];
    return NULL;
}

fb_bisect_verdict_t *bisect__verdict_new(bisect_vlist_t *l, const char *part, const char *kind,
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
void bisect__evidence_add(fb_bisect_verdict_t *v, const char *test_id, char *what)
{
    v->evidence = xrealloc(v->evidence, (v->n_evidence + 1) * sizeof *v->evidence);
    v->evidence[v->n_evidence++] = (fb_bisect_evidence_t){xstrdup(test_id), what};
}

void bisect__partner_add(fb_bisect_verdict_t *v, const char *node, size_t len)
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
void bisect__explained_by(fb_bisect_verdict_t *by, fb_bisect_verdict_t *x, char *summary)
{
    bisect__partner_add(by, x->part, strlen(x->part));
    for (size_t e = 0; e < x->n_evidence && e < 2; e++)
        bisect__evidence_add(by, x->evidence[e].test_id,
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
            bisect__partner_add(v, csv, node_len < len ? node_len : len);
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

/* What would put a part held open by the burst rules on watch (and its node back in service):
 * more passes to rule out a steady fault, or, with that done, a P(bad) down to clearing's. */
static void s_watch_more(const fb_diag_verdict_t *x, const fb_diag_params_t *par, char *out,
                         size_t size)
{
    if (x->clear_more > 0)
        snprintf(out, size,
                 "; on watch once %u more passing %s rule out a steady fault and P(bad) is at "
                 "most %.3g",
                 x->clear_more, x->clear_by_rounds ? "round(s)" : "test(s)", par->clear_threshold);
    else
        snprintf(out, size,
                 "; its passes rule out a steady fault: on watch once more passes bring P(bad) "
                 "to at most %.3g",
                 par->clear_threshold);
}

static char *s_undecided_summary(const fb_diag_verdict_t *x, const fb_diag_params_t *par,
                                 const fb_diag_t *diag)
{
    double q_clear = x->q_clear;
    const char *bursty_node = fb_diag_bursty_node(diag);
    const char *short_of =
        x->n_confirmations < par->min_confirmations
            ? "too few independent confirmations"
            : (x->p_bad < par->bad_threshold ? "P(bad) below the threshold"
                                             : "chance can explain its failures");
    char *not_cleared, watch_more[200] = "";
    if ((x->burst_open || x->burst_fleet) && !x->on_watch) /* what would put it on watch */
        s_watch_more(x, par, watch_more, sizeof watch_more);
    if (x->burst_open)
        not_cleared = xasprintf("not cleared: it failed in a round with no passing test of it "
                                "beside the failure, as a fault in bursts would, and passes cannot "
                                "rule such a fault out%s",
                                watch_more);
    else if (x->burst_fleet)
        not_cleared = xasprintf("not cleared: %s, named bad, fails in bursts, so a fault in this "
                                "fleet can stay quiet for longer than the session, and passes "
                                "cannot rule such a fault out%s",
                                bursty_node ? bursty_node : "a node", watch_more);
    else if (x->clear_by_rounds)
        not_cleared = xasprintf("not cleared: %u more passing round(s) would rule out a fault "
                                "showing in %.0f%% of its tests, or in bursts in %.0f%% of rounds "
                                "(it failed in %u of %u rounds since its first failure)",
                                x->clear_more, 100.0 * q_clear, 100.0 * q_clear, x->k_inf_rounds,
                                x->n_inf_rounds);
    else
        not_cleared = xasprintf("not cleared: %u more pass(es) in a row would rule out a fault "
                                "showing in %.0f%% of tests",
                                x->clear_more, 100.0 * q_clear);
    char *s = xasprintf(
        "undecided%s: failed %u of %u informative tests since its first failure "
        "(%u of %u tests in all), %u of %u confirmations, P(bad) %.3g; not bad: "
        "%s; %s%s",
        x->on_watch ? ", on watch" : "", x->k_informative, x->n_informative, x->n_failed,
        x->n_tests, x->n_confirmations, par->min_confirmations, x->p_bad, short_of, not_cleared,
        x->on_watch ? "; its passes rule out a steady fault, as clearing would" : "");
    free(not_cleared);
    return s;
}

static char *s_diag_summary(const fb_diag_verdict_t *x, const fb_diag_params_t *par,
                            const fb_diag_t *diag)
{
    double q_clear = x->q_clear;
    switch (x->state) {
    case FB_DIAG_BAD:
        return s_bad_summary(x, par->min_confirmations);
    case FB_DIAG_UNDECIDED:
        return s_undecided_summary(x, par, diag);
    case FB_DIAG_CLEARED:
        if (!x->parent) /* a node: bursts are ruled out round by round */
            return xasprintf("cleared: after its first failure, %u failure(s) in %u informative "
                             "tests over %u rounds, %u of them with a failure: a fault showing "
                             "in %.0f%% of tests, or in bursts in %.0f%% of rounds, would have "
                             "shown with %.0f%%; P(bad) %.2g",
                             x->k_informative, x->n_informative, x->n_inf_rounds, x->k_inf_rounds,
                             100.0 * q_clear, 100.0 * q_clear, 100.0 * par->clear_confidence,
                             x->p_bad);
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
static void s_diag_verdicts(const fb_bisect_t *b, bisect_vlist_t *l)
{
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(b->diag, &v);
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
        fb_bisect_verdict_t *bv = bisect__verdict_new(l, x->suspect, x->kind, st, conf);
        bv->summary = s_diag_summary(x, &b->o.diag, b->diag);
        bv->unit = !x->parent && railless;
        bv->on_watch = st == FB_BISECT_UNDECIDED && x->on_watch;
        if (bv->unit && st == FB_BISECT_BAD) {
            char *s =
                xasprintf("%s (the node or one of its NICs: its tests used them all)", bv->summary);
            free(bv->summary);
            bv->summary = s;
        }
        for (size_t k = 0; k < x->n_evidence; k++) {
            bisect__evidence_add(bv, x->evidence[k].test_id, s_diag_what(&x->evidence[k]));
            s_partners_add(bv, x->evidence[k].partners);
        }
    }
    free(v);
}

/* ---- leaf switches ---- */

/* P(X >= k) for X ~ Binomial(n, p). */
double bisect__binom_tail(size_t n, size_t k, double p)
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
        double c = bisect__binom_tail(in[k], bad[k], rate) * (double)leaves;
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
static void s_leaf_verdicts(const fb_bisect_t *b, bisect_vlist_t *l)
{
    double *chance;
    size_t named = s_bad_leaves(b, &chance);
    const fb_topology_t *t = b->o.topology;
    for (size_t k = 0; named && k < fb_topology_n_leaves(t); k++) {
        if (chance[k] >= 1.0)
            continue;
        const char *leaf = fb_topology_leaf_name(t, k);
        size_t before = l->n;
        fb_bisect_verdict_t *lv =
            bisect__verdict_new(l, leaf, "leaf", FB_BISECT_BAD, 1.0 - chance[k]);
        size_t n_bad = 0;
        for (size_t i = 0; i < before; i++) {
            fb_bisect_verdict_t *x = &l->v[i];
            const char *xl = strchr(x->part, '/') ? NULL : fb_topology_leaf_of(t, x->part);
            if (x->state != FB_BISECT_BAD || !xl || strcmp(xl, leaf))
                continue;
            n_bad++;
            bisect__explained_by(
                lv, x, xasprintf("passed: its failures are its leaf's (%s named bad)", leaf));
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
        bisect__evidence_add(
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
static void s_split_verdicts(const fb_bisect_t *b, size_t si, bisect_vlist_t *l)
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
        fb_bisect_verdict_t *v = bisect__verdict_new(l, part, "group", FB_BISECT_UNDECIDED, NAN);
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
        fb_bisect_verdict_t *v = bisect__verdict_new(l, part, "group", FB_BISECT_UNDECIDED, NAN);
        v->summary = xasprintf("undecided: %zu node(s) still being split at level %u when the "
                               "session ended (%s)",
                               n, fb_split_levels(s), fb_bisect_end_name(b->end));
        free(part);
    }
    free(m);
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
    *parts = out;
    return bisect__slow_bad(b, parts, n);
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
    bisect_vlist_t l = {0};
    s_diag_verdicts(b, &l);
    s_leaf_verdicts(b, &l);
    for (size_t i = 0; i < b->n_splits; i++)
        s_split_verdicts(b, i, &l);
    bisect__slow_verdicts(b, &l);
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
