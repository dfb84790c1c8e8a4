/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis session of one stage (bisect.h): feeds test results to the suspicion engine,
 * measured flows to the slow-part judge and group results to split searches; plans sweeps and
 * follow-up rounds of pairs, or the levels of the splits of failing groups; and turns what the
 * three know into one list of verdicts with evidence. docs/diagnosis.md says how the parts fit. */
#include "bisect.h"

#include "common/strmap.h"
#include "common/util.h"
#include "topology.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A group test of the stage, kept for the evidence of split verdicts. */
typedef struct {
    char *test_id;
    char **members;
    size_t n_members;
    bool failed;
} s_gtest_t;

/* The flow judgment of the flows recorded so far; valid while the count matches. */
typedef struct {
    fb_flow_judgment_t j;
    size_t n_flows;
    bool valid;
} s_cache_t;

/* Where a planned test of a group session belongs. */
typedef struct {
    size_t split, part;
    bool recorded;
} s_planned_t;

struct fb_bisect {
    fb_bisect_opts_t o;
    fb_diag_t *diag;
    fb_flowjudge_t *flows;
    unsigned rounds, follow_ups;
    bool any_failed;
    size_t n_nodes;
    /* groups */
    s_gtest_t *gtests;
    size_t n_gtests;
    size_t *failing; /* indices into gtests of the stage's failing groups */
    size_t n_failing;
    fb_split_t **splits;
    size_t n_splits;
    bool splits_started;
    unsigned level_runs;
    s_planned_t *planned;
    size_t n_planned;
    /* slow */
    fb_strmap_t *ever_pending; /* nodes that were pending at some point */
    s_cache_t *cache;       /* the last flow judgment (judging is the costly part) */
};

void fb_bisect_opts_default(fb_bisect_opts_t *o)
{
    assert(o);
    memset(o, 0, sizeof *o);
    o->scope = FB_SCOPE_PAIRS;
    o->pairing = FB_PAIRING_RANDOM;
    o->seed = 1;
    o->sweeps = 1;
    o->max_rounds = 12;
    o->split_k = 4;
    o->split_repeat = 2;
    fb_diag_params_default(&o->diag);
    fb_flow_params_default(&o->flow);
}

fb_bisect_t *fb_bisect_new(const fb_bisect_opts_t *opts)
{
    assert(opts);
    if ((opts->scope != FB_SCOPE_PAIRS && opts->scope != FB_SCOPE_GROUP) || opts->sweeps == 0 ||
        opts->split_k < 2 || opts->split_repeat == 0 ||
        (opts->pairing == FB_PAIRING_TOPOLOGY && !opts->topology))
        return NULL;
    fb_diag_t *d = fb_diag_new(&opts->diag);
    fb_flowjudge_t *fj = fb_flowjudge_new(&opts->flow);
    if (!d || !fj) {
        fb_diag_destroy(&d);
        fb_flowjudge_destroy(&fj);
        return NULL;
    }
    fb_bisect_t *b = xcalloc(1, sizeof *b);
    b->o = *opts;
    b->diag = d;
    b->flows = fj;
    b->ever_pending = fb_strmap_new();
    b->cache = xcalloc(1, sizeof *b->cache);
    return b;
}

static void s_gtest_free(s_gtest_t *g)
{
    free(g->test_id);
    for (size_t i = 0; i < g->n_members; i++)
        free(g->members[i]);
    free(g->members);
}

void fb_bisect_destroy(fb_bisect_t **self_p)
{
    assert(self_p);
    fb_bisect_t *b = *self_p;
    if (!b)
        return;
    fb_diag_destroy(&b->diag);
    fb_flowjudge_destroy(&b->flows);
    for (size_t i = 0; i < b->n_gtests; i++)
        s_gtest_free(&b->gtests[i]);
    free(b->gtests);
    free(b->failing);
    for (size_t i = 0; i < b->n_splits; i++)
        fb_split_destroy(&b->splits[i]);
    free(b->splits);
    free(b->planned);
    fb_strmap_destroy(&b->ever_pending);
    fb_flow_judgment_clear(&b->cache->j);
    free(b->cache);
    free(b);
    *self_p = NULL;
}

int fb_bisect_add_node(fb_bisect_t *b, const char *node, const char *rails_csv)
{
    assert(b);
    int rc = fb_diag_add_node(b->diag, node, rails_csv);
    b->n_nodes += rc == 0;
    return rc;
}

int fb_bisect_record_local(fb_bisect_t *b, const char *test_id, const char *node, bool failed)
{
    assert(b);
    const char *m[1] = {node};
    int rc = fb_diag_record(b->diag, test_id, m, 1, failed);
    b->any_failed |= rc == 0 && failed;
    return rc;
}

/* ---- recording ---- */

/* The fabric links of the flow src -> dst that are known: the two leaf-spine links when the
 * spine is (from the routing, or because the leaves share one spine). Heap names in links[2]. */
static size_t s_links(const fb_bisect_t *b, const char *src, const char *dst, char **links)
{
    const fb_topology_t *t = b->o.topology;
    const char *la = t ? fb_topology_leaf_of(t, src) : NULL;
    const char *lb = t ? fb_topology_leaf_of(t, dst) : NULL;
    if (!la || !lb || !strcmp(la, lb))
        return 0;
    const char *spine = b->o.route ? b->o.route(b->o.route_arg, src, dst) : NULL;
    fb_link_t path[4];
    if (!spine && fb_topology_path(t, src, dst, path, 4) == 4 && strcmp(path[1].b, "*"))
        spine = path[1].b;
    if (!spine)
        return 0;
    links[0] = xasprintf("%s<->%s", la, spine);
    links[1] = xasprintf("%s<->%s", lb, spine);
    return 2;
}

static int s_record_flows(fb_bisect_t *b, const fb_bisect_result_t *r)
{
    for (size_t i = 0; i < r->n_flows; i++) {
        const fb_bisect_flow_t *f = &r->flows[i];
        if (!f->src || !f->dst || !isfinite(f->value))
            continue; /* a member that did not measure */
        char *links[2] = {NULL, NULL};
        size_t n = s_links(b, f->src, f->dst, links);
        int rc = fb_flowjudge_record(b->flows, r->test_id, f->src, f->dst, r->rail, f->value,
                                     (const char *const *)links, n);
        free(links[0]);
        free(links[1]);
        if (rc)
            return rc;
    }
    return 0;
}

/* The engine's members: "node/rail" where the node has the rail, else the node. */
static char **s_members(const fb_bisect_t *b, const fb_bisect_result_t *r)
{
    char **m = xcalloc(r->n_members, sizeof *m);
    for (size_t i = 0; i < r->n_members; i++) {
        char *railed = r->rail ? xasprintf("%s/%s", r->members[i], r->rail) : NULL;
        if (railed && !isnan(fb_diag_p_bad(b->diag, railed)))
            m[i] = railed;
        else {
            free(railed);
            m[i] = xstrdup(r->members[i]);
        }
    }
    return m;
}

static void s_keep_group(fb_bisect_t *b, const fb_bisect_result_t *r)
{
    b->gtests = xrealloc(b->gtests, (b->n_gtests + 1) * sizeof *b->gtests);
    s_gtest_t *g = &b->gtests[b->n_gtests++];
    g->test_id = xstrdup(r->test_id);
    g->members = xcalloc(r->n_members, sizeof *g->members);
    for (size_t i = 0; i < r->n_members; i++)
        g->members[i] = xstrdup(r->members[i]);
    g->n_members = r->n_members;
    g->failed = !r->judged || r->failed;
    if (r->planned < 0 && r->judged && r->failed && r->n_members >= 2) {
        b->failing = xrealloc(b->failing, (b->n_failing + 1) * sizeof *b->failing);
        b->failing[b->n_failing++] = b->n_gtests - 1;
    }
}

int fb_bisect_record(fb_bisect_t *b, const fb_bisect_result_t *r)
{
    assert(b && r);
    if (!r->test_id || !r->members || r->n_members == 0 ||
        (r->planned >= 0 && (size_t)r->planned >= b->n_planned && b->o.scope == FB_SCOPE_GROUP))
        return -EINVAL;
    for (size_t i = 0; i < r->n_members; i++)
        if (isnan(fb_diag_p_bad(b->diag, r->members[i])))
            return -ENOENT;
    if (r->judged) {
        char **m = s_members(b, r);
        int rc =
            fb_diag_record(b->diag, r->test_id, (const char *const *)m, r->n_members, r->failed);
        for (size_t i = 0; i < r->n_members; i++)
            free(m[i]);
        free(m);
        if (rc)
            return rc;
        b->any_failed |= r->failed;
    }
    for (size_t i = 0; i < r->n_counters; i++) {
        const fb_bisect_counter_t *c = &r->counters[i];
        char *rail = xasprintf("%s/%s", c->node ? c->node : "", c->rail ? c->rail : "");
        fb_diag_record_counter(b->diag, r->test_id, rail, c->what);
        free(rail);
    }
    if (b->o.scope == FB_SCOPE_GROUP) {
        s_keep_group(b, r);
        if (r->planned >= 0 && !b->planned[r->planned].recorded) {
            s_planned_t *p = &b->planned[r->planned];
            p->recorded = true;
            /* a part that did not run to a verdict stays suspect */
            fb_split_record(b->splits[p->split], p->part, !r->judged || r->failed);
        }
    }
    return s_record_flows(b, r);
}

/* ---- planning ---- */

/* The judgment of every flow so far (borrowed, until the next call). */
static const fb_flow_judgment_t *s_judgment(const fb_bisect_t *b)
{
    s_cache_t *c = b->cache;
    if (!c->valid || c->n_flows != fb_flowjudge_flows(b->flows)) {
        fb_flow_judgment_clear(&c->j);
        fb_flowjudge_judge(b->flows, &c->j);
        c->n_flows = fb_flowjudge_flows(b->flows);
        c->valid = true;
    }
    return &c->j;
}

static void s_add_test(fb_bisect_round_t *out, size_t *cap, const char *const *members, size_t n,
                       const char *rail, const char *suspect)
{
    if (out->n_tests == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        out->tests = xrealloc(out->tests, *cap * sizeof *out->tests);
    }
    fb_bisect_test_t *t = &out->tests[out->n_tests++];
    t->members = xcalloc(n, sizeof *t->members);
    for (size_t i = 0; i < n; i++)
        t->members[i] = xstrdup(members[i]);
    t->n_members = n;
    t->rail = rail ? xstrdup(rail) : NULL;
    t->suspect = suspect ? xstrdup(suspect) : NULL;
}

static int s_next_pairs(fb_bisect_t *b, fb_bisect_round_t *out)
{
    fb_diag_settle(b->diag);
    bool sweep = b->rounds < b->o.sweeps;
    const fb_flow_judgment_t *j = s_judgment(b);
    for (size_t i = 0; i < j->n_pending; i++)
        fb_strmap_put(b->ever_pending, j->pending[i], (void *)1);
    if (!sweep &&
        ((fb_diag_done(b->diag) && j->n_pending == 0) || b->follow_ups >= b->o.max_rounds))
        return 0;
    fb_diag_round_opts_t ro = {b->o.seed,         b->rounds,     sweep,
                               (int)b->o.pairing, b->o.topology, (const char *const *)j->pending,
                               j->n_pending};
    fb_diag_round_t plan;
    int rc = fb_diag_plan_round(b->diag, &ro, &plan);
    if (rc)
        return rc;
    if (plan.n_tests == 0 && !sweep) {
        fb_diag_round_clear(&plan);
        return 0; /* suspects left, but no trusted partner for any of them */
    }
    size_t cap = 0;
    for (size_t i = 0; i < plan.n_tests; i++) {
        const fb_diag_test_t *t = &plan.tests[i];
        const char *m[2] = {t->a, t->b};
        s_add_test(out, &cap, m, 2, t->rail, t->suspect);
    }
    const char *const *rails;
    size_t n_rails = fb_diag_rails(b->diag, &rails);
    b->rounds++;
    out->round = b->rounds;
    out->follow_up = !sweep;
    if (sweep)
        out->why = xasprintf("round %u: fresh matchings of every node on %zu rail(s) (%zu tests); "
                             "%zu suspect(s) re-tested with trusted partners",
                             b->rounds, n_rails ? n_rails : 1, plan.n_tests, plan.n_suspects);
    else
        out->why =
            xasprintf("bisect round %u: %zu suspect(s) re-paired with trusted partners "
                      "(%zu tests on %zu rail(s))",
                      b->follow_ups + 1, plan.n_suspects, plan.n_tests, n_rails ? n_rails : 1);
    b->follow_ups += !sweep;
    fb_diag_round_clear(&plan);
    return 1;
}

/* Parts of the last group round that never reported count as failed: a part stays suspect until
 * it passes. */
static void s_fill_unrecorded(fb_bisect_t *b)
{
    for (size_t i = 0; i < b->n_planned; i++)
        if (!b->planned[i].recorded) {
            b->planned[i].recorded = true;
            fb_split_record(b->splits[b->planned[i].split], b->planned[i].part, true);
        }
}

static void s_start_splits(fb_bisect_t *b)
{
    b->splits_started = true;
    b->splits = xcalloc(b->n_failing + 1, sizeof *b->splits);
    for (size_t i = 0; i < b->n_failing; i++) {
        const s_gtest_t *g = &b->gtests[b->failing[i]];
        b->splits[b->n_splits++] = fb_split_new((const char *const *)g->members, g->n_members,
                                                b->o.split_k, b->o.split_repeat);
    }
}

static int s_next_groups(fb_bisect_t *b, fb_bisect_round_t *out)
{
    s_fill_unrecorded(b);
    if (!b->splits_started)
        s_start_splits(b);
    else if (b->level_runs >= b->o.split_repeat) {
        for (size_t i = 0; i < b->n_splits; i++)
            fb_split_next(b->splits[i]);
        b->level_runs = 0;
    }
    size_t n_parts = 0, n_groups = 0;
    for (size_t i = 0; i < b->n_splits; i++) {
        n_parts += fb_split_n_parts(b->splits[i]);
        n_groups += fb_split_n_parts(b->splits[i]) > 0;
    }
    if (n_parts == 0 || b->follow_ups >= b->o.max_rounds)
        return 0;
    free(b->planned);
    b->planned = xcalloc(n_parts, sizeof *b->planned);
    b->n_planned = 0;
    size_t cap = 0;
    unsigned level = 0;
    for (size_t i = 0; i < b->n_splits; i++) {
        size_t np = fb_split_n_parts(b->splits[i]);
        if (np)
            level = fb_split_levels(b->splits[i]);
        for (size_t k = 0; k < np; k++) {
            size_t size;
            const char *const *m = fb_split_part(b->splits[i], k, &size);
            char *what =
                xasprintf("part %zu of %zu (%zu node%s)", k + 1, np, size, size == 1 ? "" : "s");
            s_add_test(out, &cap, m, size, NULL, what);
            free(what);
            b->planned[b->n_planned++] = (s_planned_t){i, k, false};
        }
    }
    b->rounds++;
    b->follow_ups++;
    b->level_runs++;
    out->round = b->rounds;
    out->follow_up = true;
    out->why = xasprintf("bisect round %u: %zu failing group(s) split into %zu part(s), level %u, "
                         "run %u of %u",
                         b->follow_ups, n_groups, n_parts, level, b->level_runs, b->o.split_repeat);
    return 1;
}

int fb_bisect_next(fb_bisect_t *b, fb_bisect_round_t *out)
{
    assert(b && out);
    memset(out, 0, sizeof *out);
    return b->o.scope == FB_SCOPE_PAIRS ? s_next_pairs(b, out) : s_next_groups(b, out);
}

void fb_bisect_round_clear(fb_bisect_round_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_tests; i++) {
        for (size_t k = 0; k < r->tests[i].n_members; k++)
            free(r->tests[i].members[k]);
        free(r->tests[i].members);
        free(r->tests[i].rail);
        free(r->tests[i].suspect);
    }
    free(r->tests);
    free(r->why);
    memset(r, 0, sizeof *r);
}

unsigned fb_bisect_follow_ups(const fb_bisect_t *b)
{
    assert(b);
    return b->follow_ups;
}

bool fb_bisect_needed(const fb_bisect_t *b)
{
    assert(b);
    return b->any_failed || s_judgment(b)->n_slow > 0;
}

const fb_diag_t *fb_bisect_diag(const fb_bisect_t *b)
{
    assert(b);
    return b->diag;
}

const char *fb_bisect_state_name(fb_bisect_state_t s)
{
    return s == FB_BISECT_BAD ? "bad" : (s == FB_BISECT_UNDECIDED ? "undecided" : "cleared");
}

/* ---- verdicts ---- */

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

static char *s_diag_what(const fb_diag_evidence_t *e)
{
    if (e->counter)
        return xasprintf("port counter: %s; P %.3g -> %.3g", e->counter, e->p_before, e->p_after);
    const char *result = e->failed ? "failed" : "passed";
    if (!*e->partners)
        return xasprintf("alone: %s; P %.3g -> %.3g", result, e->p_before, e->p_after);
    return xasprintf("with %s (%u of %u trusted): %s; P %.3g -> %.3g", e->partners, e->n_trusted,
                     e->n_partners, result, e->p_before, e->p_after);
}

static char *s_diag_summary(const fb_diag_verdict_t *x, fb_bisect_state_t st)
{
    char counters[64] = "";
    if (x->n_counters)
        snprintf(counters, sizeof counters, ", %u port-counter increase(s)", x->n_counters);
    if (st == FB_BISECT_BAD && x->ambiguous)
        return xasprintf("bad node or its only NIC (one rail cannot tell them apart): failed %u "
                         "of %u tests, with %u distinct trusted partners; P(bad) %.4f",
                         x->n_failed, x->n_tests, x->n_trusted_fail_partners, x->p_unit);
    if (st == FB_BISECT_BAD)
        return xasprintf("bad %s: failed %u of %u tests, with %u distinct trusted partners%s; "
                         "P(bad) %.4f",
                         x->kind, x->n_failed, x->n_tests, x->n_trusted_fail_partners, counters,
                         x->p_bad);
    if (st == FB_BISECT_UNDECIDED)
        return xasprintf("undecided: failed %u of %u tests%s; P(bad) %.3f", x->n_failed, x->n_tests,
                         counters, x->p_bad);
    return xasprintf("cleared: failed %u of %u tests, then passed with trusted partners; P(bad) "
                     "%.2g",
                     x->n_failed, x->n_tests, x->p_bad);
}

static bool s_diag_bad(const fb_diag_verdict_t *v, size_t n, const char *suspect)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].suspect, suspect))
            return v[i].state == FB_DIAG_BAD;
    return false;
}

/* Every suspect of the engine: in a failed test, or with a port counter against it. */
static void s_diag_verdicts(const fb_bisect_t *b, s_vlist_t *l)
{
    fb_diag_verdict_t *v;
    size_t n = fb_diag_verdicts(b->diag, &v);
    for (size_t i = 0; i < n; i++) {
        const fb_diag_verdict_t *x = &v[i];
        if (x->n_failed == 0 && x->n_counters == 0)
            continue;
        if (x->parent && x->state != FB_DIAG_BAD && s_diag_bad(v, n, x->parent))
            continue; /* a NIC of a node named bad: the node's verdict covers it */
        fb_bisect_state_t st =
            x->state == FB_DIAG_BAD
                ? FB_BISECT_BAD
                : (x->state == FB_DIAG_UNDECIDED ? FB_BISECT_UNDECIDED : FB_BISECT_CLEARED);
        double p = x->ambiguous ? x->p_unit : x->p_bad;
        fb_bisect_verdict_t *bv =
            s_verdict_new(l, x->suspect, x->kind, st, st == FB_BISECT_CLEARED ? 1.0 - p : p);
        bv->summary = s_diag_summary(x, st);
        for (size_t k = 0; k < x->n_evidence; k++) {
            s_evidence_add(bv, x->evidence[k].test_id, s_diag_what(&x->evidence[k]));
            s_partners_add(bv, x->evidence[k].partners);
        }
    }
    free(v);
}

static bool s_has_member(const s_gtest_t *g, const char *node)
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
    for (size_t t = 0; t < b->n_gtests; t++) {
        const s_gtest_t *g = &b->gtests[t];
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

/* One split search: its single nodes that fail are bad, irreducible or unfinished groups are
 * undecided, the other members of the failing group are cleared. */
static void s_split_verdicts(const fb_bisect_t *b, size_t si, s_vlist_t *l)
{
    const fb_split_t *s = b->splits[si];
    const s_gtest_t *g = &b->gtests[b->failing[si]];
    bool *named = xcalloc(g->n_members, sizeof *named);
    size_t nf = fb_split_n_findings(s), np = fb_split_n_parts(s);
    for (size_t k = 0; k < nf + np; k++) {
        size_t size;
        const char *const *m =
            k < nf ? fb_split_finding(s, k, &size) : fb_split_part(s, k - nf, &size);
        for (size_t i = 0; i < size; i++)
            for (size_t j = 0; j < g->n_members; j++)
                named[j] |= !strcmp(g->members[j], m[i]);
        if (k >= nf)
            continue; /* unfinished parts: reported below as one group */
        double p = size == 1 ? fb_diag_p_bad(b->diag, m[0]) : NAN;
        char *part = s_join(m, size);
        fb_bisect_verdict_t *v =
            s_verdict_new(l, part, size == 1 ? "node" : "group",
                          size == 1 ? FB_BISECT_BAD : FB_BISECT_UNDECIDED, isnan(p) ? 0.5 : p);
        v->summary = size == 1 ? xasprintf("bad node: failed alone after its group of %zu failed "
                                           "and every split down to it failed; P(bad) %.4f",
                                           g->n_members, p)
                               : xasprintf("undecided group of %zu: fails together, no part fails "
                                           "alone (the fault needs this scale, or it hid)",
                                           size);
        s_group_evidence(b, v, m, size);
        free(part);
    }
    if (np) {
        const char **m = xcalloc(g->n_members, sizeof *m);
        size_t n = 0;
        for (size_t k = 0; k < np; k++) {
            size_t size;
            const char *const *pm = fb_split_part(s, k, &size);
            for (size_t i = 0; i < size; i++)
                m[n++] = pm[i];
        }
        char *part = s_join(m, n);
        fb_bisect_verdict_t *v = s_verdict_new(l, part, "group", FB_BISECT_UNDECIDED, 0.5);
        v->summary = xasprintf("undecided: %zu node(s) still being split at level %u when the "
                               "round limit was reached",
                               n, fb_split_levels(s));
        free(part);
        free(m);
    }
    for (size_t j = 0; j < g->n_members; j++) {
        if (named[j] || s_find_verdict(l, g->members[j]))
            continue;
        double p = fb_diag_p_bad(b->diag, g->members[j]);
        fb_bisect_verdict_t *v =
            s_verdict_new(l, g->members[j], "node", FB_BISECT_CLEARED, 1.0 - p);
        v->summary = xasprintf("cleared: in a failing group of %zu, but its part passed every run; "
                               "P(bad) %.2g",
                               g->n_members, p);
        const char *m[1] = {g->members[j]};
        s_group_evidence(b, v, m, 1);
    }
    free(named);
}

/* The chance that n_partners partners were all slow with a healthy part by chance, from the
 * fleet's stray slow flows (those no finding explains): confidence = 1 - r^n_partners. */
static double s_slow_confidence(const fb_flow_judgment_t *j, const fb_flow_finding_t *f)
{
    size_t explained = 0;
    for (size_t i = 0; i < j->n_findings; i++)
        explained += j->findings[i].n_slow;
    double stray = (double)(j->n_slow > explained ? j->n_slow - explained : 0);
    double r = (stray + 1.0) / ((double)j->n_flows + 2.0);
    return 1.0 - pow(r, (double)f->n_partners);
}

#define S_MAX_FLOW_EVIDENCE 24

static void s_slow_finding(const fb_flow_judgment_t *j, const fb_flow_finding_t *f, s_vlist_t *l)
{
    const char *how = !strcmp(f->direction, "both")
                          ? "both ways"
                          : (!strcmp(f->direction, "send") ? "when sending" : "when receiving");
    char *summary = xasprintf("slow %s %s: %zu flows at %.2f of their median, with %u distinct "
                              "partners",
                              f->kind, how, f->n_flows, f->ratio, f->n_partners);
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
        v->confidence = s_slow_confidence(j, f);
    }
    for (size_t k = 0; k < f->n_slow; k++) {
        const fb_flow_sample_t *s = &f->slow[k];
        s_partner_add(v, !strcmp(f->direction, "receive") ? s->src : s->dst,
                      strlen(!strcmp(f->direction, "receive") ? s->src : s->dst));
        if (k == S_MAX_FLOW_EVIDENCE) {
            s_evidence_add(v, s->test_id, xasprintf("... and %zu more slow flows", f->n_slow - k));
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
    const fb_flow_judgment_t *j = s_judgment(b);
    for (size_t i = 0; i < j->n_findings; i++)
        s_slow_finding(j, &j->findings[i], l);
    for (size_t i = 0; i < j->n_pending; i++) {
        if (s_find_verdict(l, j->pending[i]))
            continue;
        fb_bisect_verdict_t *v = s_verdict_new(l, j->pending[i], "node", FB_BISECT_UNDECIDED, 0.5);
        v->summary = xstrdup("undecided: slow flows that too few partners confirm so far");
    }
    size_t pos = 0;
    const char *node;
    void *val;
    while (fb_strmap_next(b->ever_pending, &pos, &node, &val)) {
        if (s_find_verdict(l, node))
            continue;
        fb_bisect_verdict_t *v = s_verdict_new(l, node, "node", FB_BISECT_CLEARED, 0.99);
        v->summary = xstrdup("cleared: a slow flow once, fast with its other partners");
    }
}

size_t fb_bisect_bad(const fb_bisect_t *b, char ***parts)
{
    assert(b && parts);
    fb_diag_settle(b->diag);
    char **out = NULL;
    size_t n = 0;
    if (b->o.scope == FB_SCOPE_PAIRS) {
        fb_diag_verdict_t *v;
        size_t nv = fb_diag_verdicts(b->diag, &v);
        for (size_t i = 0; i < nv; i++)
            if (v[i].state == FB_DIAG_BAD) {
                out = xrealloc(out, (n + 1) * sizeof *out);
                out[n++] = xstrdup(v[i].suspect);
            }
        free(v);
    }
    for (size_t i = 0; i < b->n_splits; i++)
        for (size_t k = 0; k < fb_split_n_findings(b->splits[i]); k++) {
            size_t size;
            const char *const *m = fb_split_finding(b->splits[i], k, &size);
            if (size != 1)
                continue;
            out = xrealloc(out, (n + 1) * sizeof *out);
            out[n++] = xstrdup(m[0]);
        }
    const fb_flow_judgment_t *j = s_judgment(b);
    for (size_t i = 0; i < j->n_findings; i++) {
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = !strcmp(out[k], j->findings[i].part);
        if (seen)
            continue;
        out = xrealloc(out, (n + 1) * sizeof *out);
        out[n++] = xstrdup(j->findings[i].part);
    }
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
    fb_diag_settle(b->diag);
    s_vlist_t l = {0};
    if (b->o.scope == FB_SCOPE_PAIRS)
        s_diag_verdicts(b, &l);
    else
        for (size_t i = 0; i < b->n_splits; i++)
            s_split_verdicts(b, i, &l);
    s_slow_verdicts(b, &l);
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
