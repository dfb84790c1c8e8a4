/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine: planning the next round (diagnosis.h). Every undecided suspect gets a trusted
 * partner on every rail, a different one on each and one it has not met while there are any;
 * everyone else is matched freshly (sweeps) or sits the round out; parts named bad sit out. Pure
 * logic: what is planned depends on the engine's state and the seed only. */
#include "diagnosis_internal.h"

#include "common/rng.h"
#include "common/util.h"
#include "pairing.h"
#include "topology.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- a whole round, on every rail ---- */

size_t fb_diag_rails(const fb_diag_t *d, const char *const **rails)
{
    assert(d && rails);
    *rails = (const char *const *)d->rails;
    return d->n_rails;
}

/* The entity of node ni's rail k, or -1 when it has none. */
static int s_rail_of(const fb_diag_t *d, int ni, size_t k)
{
    const diag_ivec_t *ch = &d->ents[ni].children;
    for (size_t c = 0; c < ch->n; c++)
        if (d->ents[ch->v[c]].rail == (int)k)
            return ch->v[c];
    return -1;
}

/* Whether node ni takes part in rail pass k: not named bad, and it has that rail and the rail is
 * not named bad (a node without rails takes part in the first pass only). */
static bool s_on_pass(const fb_diag_t *d, int ni, size_t k)
{
    if (d->ents[ni].bad)
        return false;
    if (d->ents[ni].children.n == 0)
        return k == 0;
    int r = s_rail_of(d, ni, k);
    return r >= 0 && !d->ents[r].bad;
}

static uint64_t s_mix2(uint64_t a, uint64_t b)
{
    uint64_t st = a ^ (b * 0x9e3779b97f4a7c15ULL);
    return fb_splitmix64(&st);
}

/* The largest P of a node and its rails: the order in which suspects get their partners. */
static double s_unit_p(const fb_diag_t *d, int ni)
{
    double p = d->ents[ni].p;
    const diag_ivec_t *ch = &d->ents[ni].children;
    for (size_t c = 0; c < ch->n; c++)
        if (d->ents[ch->v[c]].p > p)
            p = d->ents[ch->v[c]].p;
    return p;
}

typedef struct {
    fb_diag_t *d;
    const fb_diag_round_opts_t *o;
    fb_diag_round_t *out;
    size_t cap;
    int *retest; /* nodes re-tested with trusted partners, most suspected first */
    size_t n_retest;
    diag_ivec_t *met; /* per retest node: partners of this round (a new one on every rail) */
    bool *is_retest, *got_partner;
    bool *busy; /* tested otherwise this round (opts->busy) */
    int *pool;  /* trusted nodes */
    size_t n_pool;
} s_round_t;

static void s_push_test(s_round_t *r, int a, int b, size_t k, const char *suspect)
{
    fb_diag_round_t *out = r->out;
    if (out->n_tests == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        out->tests = xrealloc(out->tests, r->cap * sizeof *out->tests);
    }
    const fb_diag_t *d = r->d;
    bool rails = d->n_rails && s_rail_of(d, a, k) >= 0 && s_rail_of(d, b, k) >= 0;
    fb_diag_test_t *t = &out->tests[out->n_tests++];
    t->a = xstrdup(d->ents[a].name);
    t->b = xstrdup(d->ents[b].name);
    t->rail = rails ? xstrdup(d->rails[k]) : NULL;
    t->suspect = suspect ? xstrdup(suspect) : NULL;
}

/* The trusted partner of retest node s on pass k: unused on this pass, not met this round, and
 * (while there is one) never tested with s before. -1 when none is left. */
static int s_pick_partner(s_round_t *r, size_t i, size_t k, const bool *used)
{
    const fb_diag_t *d = r->d;
    int s = r->retest[i];
    for (int pass = 0; pass < 2; pass++)
        for (size_t j = 0; j < r->n_pool; j++) {
            int t = r->pool[j];
            if (used[t] || t == s || !s_on_pass(d, t, k) || diag__ivec_has(&r->met[i], t))
                continue;
            int tr = s_rail_of(d, t, k);
            if (tr >= 0 && !diag__ent_trusted(d, tr))
                continue;
            if (pass == 0 && diag__ivec_has(&d->ents[s].partners, t))
                continue;
            return t;
        }
    return -1;
}

/* Matches the nodes of pass k that are left (trusted, unused) by the fresh pairing. */
static int s_fresh_pass(s_round_t *r, size_t k, size_t n_pass, const bool *used)
{
    const fb_diag_t *d = r->d;
    const fb_diag_round_opts_t *o = r->o;
    const char **names = xmalloc((r->n_pool + 1) * sizeof *names);
    size_t n = 0;
    for (size_t i = 0; i < d->n_ents; i++) /* in the order added: planners want a stable list */
        if (d->ents[i].parent < 0 && !used[i] && !r->is_retest[i] && !r->busy[i] &&
            s_on_pass(d, (int)i, k) && diag__node_trusted(d, (int)i))
            names[n++] = d->ents[i].name;
    fb_plan_t plan = {0};
    unsigned at = o->round * (unsigned)n_pass + (unsigned)k;
    int rc;
    if (o->pairing == FB_PAIRING_TOPOLOGY)
        rc = o->topology ? fb_plan_pairs_topology(o->topology, names, n, at, &plan) : -EINVAL;
    else if (o->pairing == FB_PAIRING_ROUND_ROBIN)
        rc = fb_plan_pairs_round_robin(names, n, at, &plan);
    else
        rc = fb_plan_pairs_random(names, n, s_mix2(o->seed, at + 1), &plan);
    for (size_t g = 0; rc == 0 && g < plan.n_groups; g++) {
        if (plan.groups[g].n_members != 2)
            continue;
        int a = diag__find(d, plan.groups[g].members[0]),
            b = diag__find(d, plan.groups[g].members[1]);
        s_push_test(r, a, b, k, NULL);
    }
    fb_plan_clear(&plan);
    free(names);
    return rc;
}

/* Pass k: every retest node gets a trusted partner, then (fresh) everyone else a matching. */
static int s_plan_pass(s_round_t *r, size_t k, size_t n_pass)
{
    fb_diag_t *d = r->d;
    bool *used = xcalloc(d->n_ents ? d->n_ents : 1, sizeof *used);
    for (size_t i = 0; i < r->n_retest; i++) {
        int s = r->retest[i];
        if (!s_on_pass(d, s, k))
            continue;
        int t = s_pick_partner(r, i, k, used);
        if (t < 0)
            continue;
        used[s] = used[t] = true;
        diag__ivec_push(&r->met[i], t);
        r->got_partner[s] = true;
        int rail = s_rail_of(d, s, k);
        bool rail_suspect = rail >= 0 && diag__undecided(d, rail) && !diag__undecided(d, s);
        s_push_test(r, s, t, k, d->ents[rail_suspect ? rail : s].name);
        r->out->n_retests++;
    }
    int rc = r->o->fresh ? s_fresh_pass(r, k, n_pass, used) : 0;
    free(used);
    return rc;
}

int fb_diag_plan_round(fb_diag_t *d, const fb_diag_round_opts_t *o, fb_diag_round_t *out)
{
    assert(d && o && out);
    memset(out, 0, sizeof *out);
    fb_diag_settle(d);
    size_t ne = d->n_ents ? d->n_ents : 1;
    s_round_t r = {.d = d, .o = o, .out = out};
    r.retest = xmalloc(ne * sizeof *r.retest);
    r.pool = xmalloc(ne * sizeof *r.pool);
    r.is_retest = xcalloc(ne, sizeof *r.is_retest);
    r.got_partner = xcalloc(ne, sizeof *r.got_partner);
    r.busy = xcalloc(ne, sizeof *r.busy);
    for (size_t i = 0; i < o->n_busy; i++) {
        int x = diag__find(d, o->busy[i]);
        if (x >= 0)
            r.busy[diag__node_of(d, x)] = true;
    }
    for (size_t i = 0; i < o->n_extra; i++) {
        int x = diag__find(d, o->extra[i]);
        if (x >= 0 && d->ents[x].parent < 0 && !d->ents[x].bad)
            r.is_retest[x] = true;
    }
    for (size_t i = 0; i < d->n_ents; i++) {
        if (d->ents[i].parent >= 0 || d->ents[i].bad || r.busy[i])
            continue;
        if (!diag__node_trusted(d, (int)i))
            r.is_retest[i] = true;
        if (r.is_retest[i])
            r.retest[r.n_retest++] = (int)i;
        else
            r.pool[r.n_pool++] = (int)i;
    }
    /* most suspected first (insertion sort: suspects are few) */
    for (size_t i = 1; i < r.n_retest; i++) {
        int x = r.retest[i];
        size_t j = i;
        while (j > 0 && s_unit_p(d, r.retest[j - 1]) < s_unit_p(d, x)) {
            r.retest[j] = r.retest[j - 1];
            j--;
        }
        r.retest[j] = x;
    }
    uint64_t st = s_mix2(o->seed, 0x5eedULL + o->round);
    for (size_t i = r.n_pool; i > 1; i--) {
        size_t j = (size_t)(fb_splitmix64(&st) % i);
        int t = r.pool[i - 1];
        r.pool[i - 1] = r.pool[j];
        r.pool[j] = t;
    }
    r.met = xcalloc(r.n_retest ? r.n_retest : 1, sizeof *r.met);
    size_t n_pass = d->n_rails ? d->n_rails : 1;
    int rc = 0;
    for (size_t k = 0; k < n_pass && rc == 0; k++)
        rc = s_plan_pass(&r, k, n_pass);
    for (size_t i = 0; i < r.n_retest; i++) {
        out->n_suspects += r.got_partner[r.retest[i]];
        free(r.met[i].v);
    }
    free(r.met);
    free(r.retest);
    free(r.pool);
    free(r.is_retest);
    free(r.got_partner);
    free(r.busy);
    if (rc)
        fb_diag_round_clear(out);
    return rc;
}

void fb_diag_round_clear(fb_diag_round_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_tests; i++) {
        free(r->tests[i].a);
        free(r->tests[i].b);
        free(r->tests[i].rail);
        free(r->tests[i].suspect);
    }
    free(r->tests);
    memset(r, 0, sizeof *r);
}
