/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis session of one stage (bisect.h): holds each round's results back until the round
 * is read, then feeds them in order of test id to the suspicion engine, the slow-part judge and
 * the split searches; plans sweeps and follow-up rounds of pairs, or the pair re-tests and split
 * levels of failing groups; ends by the engine's verdicts or the budget. The verdicts are built in
 * bisect_verdicts.c. docs/diagnosis.md says how the parts fit. */
#include "bisect_internal.h"

#include "common/util.h"
#include "topology.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fb_bisect_opts_default(fb_bisect_opts_t *o)
{
    assert(o);
    memset(o, 0, sizeof *o);
    o->scope = FB_SCOPE_PAIRS;
    o->pairing = FB_PAIRING_RANDOM;
    o->seed = 1;
    o->sweeps = 1;
    o->max_rounds = 24;
    o->split_k = 4;
    o->split_repeat = 2;
    o->split_floor = 2;
    o->sweep_idle = true;
    fb_diag_params_default(&o->diag);
    fb_flow_params_default(&o->flow);
}

fb_bisect_t *fb_bisect_new(const fb_bisect_opts_t *opts)
{
    assert(opts);
    if ((opts->scope != FB_SCOPE_PAIRS && opts->scope != FB_SCOPE_GROUP) || opts->sweeps == 0 ||
        opts->split_k < 2 || opts->split_repeat == 0 || opts->split_floor == 0 ||
        !(opts->budget_s >= 0.0 && isfinite(opts->budget_s)) ||
        (opts->pairing == FB_PAIRING_TOPOLOGY && !opts->topology))
        return NULL;
    /* Fleet significance is asked after every round the session can run: a node-local round
     * before it, the sweeps (or the stage's round) and the follow-ups. */
    fb_diag_params_t diag = opts->diag;
    if (!diag.rounds)
        diag.rounds = 1 + opts->sweeps + opts->max_rounds;
    fb_diag_t *d = fb_diag_new(&diag);
    fb_flowjudge_t *fj = fb_flowjudge_new(&opts->flow);
    if (!d || !fj) {
        fb_diag_destroy(&d);
        fb_flowjudge_destroy(&fj);
        return NULL;
    }
    fb_bisect_t *b = xcalloc(1, sizeof *b);
    b->o = *opts;
    b->o.diag = diag;
    b->diag = d;
    b->flows = fj;
    b->st = xcalloc(1, sizeof *b->st);
    b->ever_pending = fb_strmap_new();
    return b;
}

static void s_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void s_held_free(bisect_held_t *h)
{
    free(h->test_id);
    s_names_free(h->members, h->n_members);
    free(h->rail);
    for (size_t i = 0; i < h->n_flows; i++) {
        free((char *)h->flows[i].src);
        free((char *)h->flows[i].dst);
    }
    free(h->flows);
    for (size_t i = 0; i < h->n_counters; i++) {
        free((char *)h->counters[i].node);
        free((char *)h->counters[i].rail);
        free((char *)h->counters[i].what);
    }
    free(h->counters);
}

static void s_gtest_free(bisect_gtest_t *g)
{
    free(g->test_id);
    s_names_free(g->members, g->n_members);
}

void fb_bisect_destroy(fb_bisect_t **self_p)
{
    assert(self_p);
    fb_bisect_t *b = *self_p;
    if (!b)
        return;
    fb_diag_destroy(&b->diag);
    fb_flowjudge_destroy(&b->flows);
    bisect_state_t *st = b->st;
    for (size_t i = 0; i < st->n_held; i++)
        s_held_free(&st->held[i]);
    free(st->held);
    for (size_t i = 0; i < st->n_gtests; i++)
        s_gtest_free(&st->gtests[i]);
    free(st->gtests);
    free(st->failing);
    fb_flow_judgment_clear(&st->cache.j);
    free(st);
    for (size_t i = 0; i < b->n_splits; i++)
        fb_split_destroy(&b->splits[i]);
    free(b->splits);
    free(b->split_group);
    free(b->planned);
    fb_strmap_destroy(&b->ever_pending);
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
    fb_bisect_result_t r = {test_id, -1, m, 1, NULL, true, failed, NULL, 0, NULL, 0};
    return fb_bisect_record(b, &r);
}

/* ---- recording: held until the round is read ---- */

static char *s_dup(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

int fb_bisect_record(fb_bisect_t *b, const fb_bisect_result_t *r)
{
    assert(b && r);
    if (!r->test_id || !r->members || r->n_members == 0 || (r->n_flows && !r->flows) ||
        (r->n_counters && !r->counters) ||
        (r->planned >= 0 && (size_t)r->planned >= b->n_planned && b->o.scope == FB_SCOPE_GROUP))
        return -EINVAL;
    for (size_t i = 0; i < r->n_members; i++)
        if (!r->members[i] || isnan(fb_diag_p_bad(b->diag, r->members[i])))
            return -ENOENT;
    bisect_state_t *st = b->st;
    st->held = xrealloc(st->held, (st->n_held + 1) * sizeof *st->held);
    bisect_held_t *h = &st->held[st->n_held++];
    memset(h, 0, sizeof *h);
    h->test_id = xstrdup(r->test_id);
    h->planned = r->planned;
    h->members = xcalloc(r->n_members, sizeof *h->members);
    for (size_t i = 0; i < r->n_members; i++)
        h->members[i] = xstrdup(r->members[i]);
    h->n_members = r->n_members;
    h->rail = s_dup(r->rail);
    h->judged = r->judged;
    h->failed = r->failed;
    h->flows = xcalloc(r->n_flows + 1, sizeof *h->flows);
    for (size_t i = 0; i < r->n_flows; i++)
        h->flows[i] =
            (fb_bisect_flow_t){s_dup(r->flows[i].src), s_dup(r->flows[i].dst), r->flows[i].value};
    h->n_flows = r->n_flows;
    h->counters = xcalloc(r->n_counters + 1, sizeof *h->counters);
    for (size_t i = 0; i < r->n_counters; i++)
        h->counters[i] = (fb_bisect_counter_t){
            s_dup(r->counters[i].node), s_dup(r->counters[i].rail), s_dup(r->counters[i].what)};
    h->n_counters = r->n_counters;
    return 0;
}

/* ---- reading a round ---- */

/* The fabric links of the flow src -> dst that are known: the two leaf-spine links when the
 * spine is (from the routing, or because the leaves share one spine). Heap names in links[2]. */
static size_t s_links(const fb_bisect_t *b, const char *src, const char *dst, const char *rail,
                      char **links)
{
    const fb_topology_t *t = b->o.topology;
    const char *la = t ? fb_topology_leaf_of(t, src) : NULL;
    const char *lb = t ? fb_topology_leaf_of(t, dst) : NULL;
    if (!la || !lb || !strcmp(la, lb))
        return 0;
    const char *spine = b->o.route ? b->o.route(b->o.route_arg, src, dst, rail) : NULL;
    fb_link_t path[4];
    if (!spine && fb_topology_path(t, src, dst, path, 4) == 4 && strcmp(path[1].b, "*"))
        spine = path[1].b;
    if (!spine)
        return 0;
    links[0] = xasprintf("%s<->%s", la, spine);
    links[1] = xasprintf("%s<->%s", lb, spine);
    return 2;
}

static void s_read_flows(const fb_bisect_t *b, const bisect_held_t *h)
{
    for (size_t i = 0; i < h->n_flows; i++) {
        const fb_bisect_flow_t *f = &h->flows[i];
        if (!f->src || !f->dst || !isfinite(f->value))
            continue; /* a member that did not measure */
        char *links[2] = {NULL, NULL};
        size_t n = s_links(b, f->src, f->dst, h->rail, links);
        fb_flowjudge_record(b->flows, h->test_id, f->src, f->dst, h->rail, f->value,
                            (const char *const *)links, n);
        free(links[0]);
        free(links[1]);
    }
}

/* The engine's members: "node/rail" where the node has the rail, else the node. */
static char **s_members(const fb_bisect_t *b, const bisect_held_t *h)
{
    char **m = xcalloc(h->n_members, sizeof *m);
    for (size_t i = 0; i < h->n_members; i++) {
        char *railed = h->rail ? xasprintf("%s/%s", h->members[i], h->rail) : NULL;
        if (railed && !isnan(fb_diag_p_bad(b->diag, railed)))
            m[i] = railed;
        else {
            free(railed);
            m[i] = xstrdup(h->members[i]);
        }
    }
    return m;
}

/* A group session keeps every test between several nodes: the evidence of group verdicts, and
 * the stage's own failing groups. */
static void s_keep_group(const fb_bisect_t *b, const bisect_held_t *h)
{
    bisect_state_t *st = b->st;
    st->gtests = xrealloc(st->gtests, (st->n_gtests + 1) * sizeof *st->gtests);
    bisect_gtest_t *g = &st->gtests[st->n_gtests++];
    g->test_id = xstrdup(h->test_id);
    g->members = xcalloc(h->n_members, sizeof *g->members);
    for (size_t i = 0; i < h->n_members; i++)
        g->members[i] = xstrdup(h->members[i]);
    g->n_members = h->n_members;
    g->failed = !h->judged || h->failed;
    if (h->planned < 0 && h->judged && h->failed && h->n_members >= 2) {
        st->failing = xrealloc(st->failing, (st->n_failing + 1) * sizeof *st->failing);
        st->failing[st->n_failing++] = st->n_gtests - 1;
    }
}

static void s_read_one(const fb_bisect_t *b, const bisect_held_t *h)
{
    if (h->judged) {
        char **m = s_members(b, h);
        fb_diag_record(b->diag, h->test_id, (const char *const *)m, h->n_members, h->failed);
        s_names_free(m, h->n_members);
        b->st->any_failed |= h->failed;
    }
    for (size_t i = 0; i < h->n_counters; i++) {
        const fb_bisect_counter_t *c = &h->counters[i];
        char *rail = xasprintf("%s/%s", c->node ? c->node : "", c->rail ? c->rail : "");
        fb_diag_record_counter(b->diag, h->test_id, rail, c->what);
        free(rail);
    }
    if (b->o.scope == FB_SCOPE_GROUP) {
        if (h->n_members >= 2)
            s_keep_group(b, h);
        bisect_planned_t *p = h->planned >= 0 ? &b->planned[h->planned] : NULL;
        if (p && !p->recorded && p->split != SIZE_MAX)
            /* a part that did not run to a verdict stays suspect */
            fb_split_record(b->splits[p->split], p->part, !h->judged || h->failed);
        if (p)
            p->recorded = true;
    }
    s_read_flows(b, h);
}

static int s_cmp_held(const void *a, const void *b)
{
    const bisect_held_t *x = a, *y = b;
    int c = strcmp(x->test_id, y->test_id);
    return c ? c : (x->planned > y->planned) - (x->planned < y->planned);
}

void bisect__read(const fb_bisect_t *b)
{
    bisect_state_t *st = b->st;
    if (st->n_held) {
        qsort(st->held, st->n_held, sizeof *st->held, s_cmp_held);
        for (size_t i = 0; i < st->n_held; i++) {
            s_read_one(b, &st->held[i]);
            s_held_free(&st->held[i]);
        }
        st->n_held = 0;
    }
    fb_diag_settle(b->diag);
}

const fb_flow_judgment_t *bisect__judgment(const fb_bisect_t *b)
{
    bisect__read(b);
    bisect_cache_t *c = &b->st->cache;
    if (!c->valid || c->n_flows != fb_flowjudge_flows(b->flows)) {
        fb_flow_judgment_clear(&c->j);
        fb_flowjudge_judge(b->flows, &c->j);
        c->n_flows = fb_flowjudge_flows(b->flows);
        c->valid = true;
    }
    return &c->j;
}

/* ---- planning ---- */

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

/* Whether the session ends before planning a follow-up: by the budget. */
static bool s_budget_spent(fb_bisect_t *b)
{
    if (b->follow_ups >= b->o.max_rounds) {
        b->end = FB_BISECT_END_ROUNDS;
        return true;
    }
    if (b->o.budget_s > 0.0 && b->elapsed_s >= b->o.budget_s) {
        b->end = FB_BISECT_END_TIME;
        return true;
    }
    return false;
}

/* The re-tests of a round with trusted partners, as session tests; 0 or the planner's error. */
static int s_plan_retests(fb_bisect_t *b, bool sweep, const char *const *busy, size_t n_busy,
                          fb_bisect_round_t *out, size_t *cap, fb_diag_round_t *plan)
{
    const fb_flow_judgment_t *j = bisect__judgment(b);
    fb_diag_round_opts_t ro = {b->o.seed,         b->rounds,     sweep,
                               (int)b->o.pairing, b->o.topology, (const char *const *)j->pending,
                               j->n_pending,      busy,          n_busy};
    int rc = fb_diag_plan_round(b->diag, &ro, plan);
    if (rc)
        return rc;
    for (size_t i = 0; i < plan->n_tests; i++) {
        const fb_diag_test_t *t = &plan->tests[i];
        const char *m[2] = {t->a, t->b};
        s_add_test(out, cap, m, 2, t->rail, t->suspect);
    }
    return 0;
}

static void s_note_pending(fb_bisect_t *b)
{
    const fb_flow_judgment_t *j = bisect__judgment(b);
    for (size_t i = 0; i < j->n_pending; i++)
        fb_strmap_put(b->ever_pending, j->pending[i], (void *)1);
}

/* The rounds it takes to clear a part after its first failure: passes in a row that rule out a
 * fault showing in q_clear of tests with the clearing confidence. */
static unsigned s_clear_rounds(const fb_bisect_t *b)
{
    double q = fb_diag_q_clear(b->diag);
    return (unsigned)ceil(log(1.0 - b->o.diag.clear_confidence) / log(1.0 - q));
}

static int s_next_pairs(fb_bisect_t *b, fb_bisect_round_t *out)
{
    s_note_pending(b);
    bool sweep = b->rounds < b->o.sweeps;
    /* Idle nodes are swept in a follow-up round only while what it implicates can still be
     * cleared within the round budget. */
    bool fresh =
        sweep || (b->o.sweep_idle && b->follow_ups + 1 + s_clear_rounds(b) <= b->o.max_rounds);
    if (!sweep && fb_diag_done(b->diag) && bisect__judgment(b)->n_pending == 0) {
        b->end = FB_BISECT_END_DECIDED;
        return 0;
    }
    if (!sweep && s_budget_spent(b))
        return 0;
    fb_diag_round_t plan;
    size_t cap = 0;
    int rc = s_plan_retests(b, fresh, NULL, 0, out, &cap, &plan);
    if (rc)
        return rc;
    if (plan.n_tests == 0 && !sweep) {
        fb_diag_round_clear(&plan);
        b->end = FB_BISECT_END_STUCK;
        return 0;
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
        out->why = xasprintf("bisect round %u: %zu suspect(s) re-paired with trusted partners%s "
                             "(%zu tests on %zu rail(s))",
                             b->follow_ups + 1, plan.n_suspects,
                             fresh ? ", the others matched freshly" : "", plan.n_tests,
                             n_rails ? n_rails : 1);
    b->follow_ups += !sweep;
    fb_diag_round_clear(&plan);
    return 1;
}

/* ---- groups ---- */

/* Whether some member of the group is implicated (or named): then the engine resolves it with
 * trusted partners; otherwise the failure pointed at nobody and the group is split first. */
static bool s_group_implicates(const fb_bisect_t *b, const bisect_gtest_t *g, fb_diag_verdict_t *v,
                               size_t nv)
{
    for (size_t i = 0; i < g->n_members; i++)
        for (size_t k = 0; k < nv; k++)
            if (!v[k].parent && !strcmp(v[k].suspect, g->members[i]) &&
                (v[k].state == FB_DIAG_UNDECIDED || v[k].state == FB_DIAG_BAD))
                return true;
    (void)b;
    return false;
}

static void s_start_groups(fb_bisect_t *b)
{
    b->groups_started = true;
    const bisect_state_t *st = b->st;
    fb_diag_verdict_t *v;
    size_t nv = fb_diag_verdicts(b->diag, &v);
    b->splits = xcalloc(st->n_failing + 1, sizeof *b->splits);
    b->split_group = xcalloc(st->n_failing + 1, sizeof *b->split_group);
    for (size_t i = 0; i < st->n_failing; i++) {
        const bisect_gtest_t *g = &st->gtests[st->failing[i]];
        if (s_group_implicates(b, g, v, nv))
            continue;
        b->split_group[b->n_splits] = i;
        b->splits[b->n_splits++] =
            fb_split_new_floor((const char *const *)g->members, g->n_members, b->o.split_k,
                               b->o.split_repeat, b->o.split_floor);
    }
    free(v);
}

/* Parts of the last group round that never reported count as failed: a part stays suspect until
 * it passes. */
static void s_fill_unrecorded(fb_bisect_t *b)
{
    for (size_t i = 0; i < b->n_planned; i++)
        if (!b->planned[i].recorded) {
            b->planned[i].recorded = true;
            if (b->planned[i].split != SIZE_MAX)
                fb_split_record(b->splits[b->planned[i].split], b->planned[i].part, true);
        }
}

static void s_planned_push(fb_bisect_t *b, size_t *cap, size_t split, size_t part)
{
    if (b->n_planned == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        b->planned = xrealloc(b->planned, *cap * sizeof *b->planned);
    }
    b->planned[b->n_planned++] = (bisect_planned_t){split, part, false};
}

/* This round's parts of every split, as tests; their nodes are busy for the pair re-tests. */
static size_t s_plan_parts(fb_bisect_t *b, fb_bisect_round_t *out, size_t *cap, size_t *pcap,
                           char ***busy, size_t *n_busy, unsigned *level)
{
    size_t n_groups = 0;
    for (size_t i = 0; i < b->n_splits; i++) {
        size_t np = fb_split_n_parts(b->splits[i]);
        n_groups += np > 0;
        if (np)
            *level = fb_split_levels(b->splits[i]);
        for (size_t k = 0; k < np; k++) {
            size_t size;
            const char *const *m = fb_split_part(b->splits[i], k, &size);
            char *what =
                xasprintf("part %zu of %zu (%zu node%s)", k + 1, np, size, size == 1 ? "" : "s");
            s_add_test(out, cap, m, size, NULL, what);
            free(what);
            s_planned_push(b, pcap, i, k);
            *busy = xrealloc(*busy, (*n_busy + size + 1) * sizeof **busy);
            for (size_t x = 0; x < size; x++)
                (*busy)[(*n_busy)++] = (char *)m[x];
        }
    }
    return n_groups;
}

static int s_next_groups(fb_bisect_t *b, fb_bisect_round_t *out)
{
    bisect__read(b);
    s_fill_unrecorded(b);
    s_note_pending(b);
    if (!b->groups_started) {
        s_start_groups(b);
    } else if (b->level_runs >= b->o.split_repeat) {
        for (size_t i = 0; i < b->n_splits; i++)
            fb_split_next(b->splits[i]);
        b->level_runs = 0;
    }
    size_t n_parts = 0;
    for (size_t i = 0; i < b->n_splits; i++)
        n_parts += fb_split_n_parts(b->splits[i]);
    if (n_parts == 0 && fb_diag_done(b->diag) && bisect__judgment(b)->n_pending == 0) {
        b->end = FB_BISECT_END_DECIDED;
        return 0;
    }
    if (s_budget_spent(b))
        return 0;
    free(b->planned);
    b->planned = NULL;
    b->n_planned = 0;
    size_t cap = 0, pcap = 0, n_busy = 0;
    char **busy = NULL;
    unsigned level = 0;
    size_t n_groups = s_plan_parts(b, out, &cap, &pcap, &busy, &n_busy, &level);
    fb_diag_round_t plan;
    size_t before = out->n_tests;
    int rc = s_plan_retests(b, false, (const char *const *)busy, n_busy, out, &cap, &plan);
    free(busy);
    if (rc)
        return rc;
    for (size_t i = before; i < out->n_tests; i++)
        s_planned_push(b, &pcap, SIZE_MAX, 0);
    if (out->n_tests == 0) {
        fb_diag_round_clear(&plan);
        b->end = FB_BISECT_END_STUCK;
        return 0;
    }
    b->rounds++;
    b->follow_ups++;
    b->level_runs += n_parts > 0;
    out->round = b->rounds;
    out->follow_up = true;
    if (n_parts)
        out->why = xasprintf("bisect round %u: %zu failing group(s) split into %zu part(s), level "
                             "%u, run %u of %u; %zu suspect(s) re-tested with trusted partners",
                             b->follow_ups, n_groups, n_parts, level, b->level_runs,
                             b->o.split_repeat, plan.n_suspects);
    else
        out->why = xasprintf("bisect round %u: %zu suspect(s) re-tested in twos with trusted "
                             "partners",
                             b->follow_ups, plan.n_suspects);
    fb_diag_round_clear(&plan);
    return 1;
}

int fb_bisect_next(fb_bisect_t *b, fb_bisect_round_t *out)
{
    assert(b && out);
    memset(out, 0, sizeof *out);
    if (b->end != FB_BISECT_RUNNING)
        return 0;
    bisect__read(b);
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

void fb_bisect_set_elapsed(fb_bisect_t *b, double seconds)
{
    assert(b);
    b->elapsed_s = isfinite(seconds) && seconds > 0.0 ? seconds : 0.0;
}

fb_bisect_end_t fb_bisect_end(const fb_bisect_t *b)
{
    assert(b);
    return b->end;
}

const char *fb_bisect_end_name(fb_bisect_end_t e)
{
    static const char *const names[] = {"running", "decided", "budget: rounds", "budget: time",
                                        "no trusted partner"};
    return (unsigned)e < 5 ? names[e] : "?";
}

bool fb_bisect_needed(const fb_bisect_t *b)
{
    assert(b);
    bisect__read(b);
    return b->st->any_failed || bisect__judgment(b)->n_slow > 0;
}

const fb_diag_t *fb_bisect_diag(const fb_bisect_t *b)
{
    assert(b);
    bisect__read(b);
    return b->diag;
}

uint64_t fb_bisect_name_seed(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = name ? name : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h;
}
