/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine core: the session's parts (nodes and their rails, each with its prior and
 * its unit's hypotheses), the results recorded between settles (tests and port counters), the
 * states every other file reads (undecided, trusted) and the accessors. What a settle makes of
 * the results is in diagnosis_settle.c (the fleet's estimates, the posteriors) and
 * diagnosis_verdicts.c (the naming standard, verdicts with evidence); round planning is in
 * diagnosis_plan.c, splits in diagnosis_split.c. The model and why are in docs/diagnosis.md;
 * this file does no I/O. */
#include "diagnosis_internal.h"

#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const double diag__qgrid[DIAG_NQ] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.97};
const double diag__agrid[DIAG_NA] = {0.1, 0.2, 0.35, 0.5, 0.7};

void diag__ivec_push(diag_ivec_t *v, int x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4;
        v->v = xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = x;
}

bool diag__ivec_has(const diag_ivec_t *v, int x)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == x)
            return true;
    return false;
}

void diag__ivec_add_unique(diag_ivec_t *v, int x)
{
    if (!diag__ivec_has(v, x))
        diag__ivec_push(v, x);
}

void fb_diag_params_default(fb_diag_params_t *p)
{
    assert(p);
    p->prior_bad = 0.01;
    p->false_fail_rate = 0.05;
    p->false_fail_weight = 20.0;
    p->mixture_weight = 1.0;
    p->bad_threshold = 0.99;
    p->implicate_ratio = 3.0;
    p->clear_threshold = 0.001;
    p->clear_q = 0.25;
    p->clear_confidence = 0.99;
    p->min_confirmations = 2;
    p->fleet_error = 0.001;
    p->counter_lr = 100.0;
    p->rounds = 0;
}

static bool s_prob_ok(double x)
{
    return x > 0.0 && x < 1.0;
}

static bool s_params_ok(const fb_diag_params_t *p)
{
    return p->false_fail_rate >= 0.0 && p->false_fail_rate < 1.0 && p->false_fail_weight >= 0.0 &&
           p->mixture_weight > 0.0 && s_prob_ok(p->prior_bad) && s_prob_ok(p->bad_threshold) &&
           s_prob_ok(p->clear_threshold) && p->clear_threshold < p->prior_bad &&
           p->prior_bad < p->bad_threshold && p->implicate_ratio >= 1.0 && s_prob_ok(p->clear_q) &&
           s_prob_ok(p->clear_confidence) && p->min_confirmations >= 1 && p->fleet_error >= 0.0 &&
           p->fleet_error < 1.0 && p->counter_lr >= 1.0;
}

fb_diag_t *fb_diag_new(const fb_diag_params_t *params)
{
    fb_diag_params_t par;
    if (params)
        par = *params;
    else
        fb_diag_params_default(&par);
    if (!s_params_ok(&par))
        return NULL;
    fb_diag_t *d = xcalloc(1, sizeof *d);
    d->par = par;
    d->index = fb_strmap_new();
    d->f_multi = d->f_local = par.false_fail_rate;
    d->f_multi_hi = d->f_local_hi = par.false_fail_rate;
    for (size_t j = 0; j < DIAG_NQ; j++)
        d->mix[j] = 1.0 / DIAG_NQ;
    d->q_clear_of[0] = d->q_clear_of[1] = par.clear_q;
    d->bursty = -1;
    return d;
}

static void s_test_free(diag_test_t *t)
{
    free(t->id);
    free(t->mem);
    free(t->inv);
    free(t->units);
    free(t->unit_rail);
    free(t->trusted);
    free(t->p_before);
    free(t->p_after);
}

void fb_diag_destroy(fb_diag_t **self_p)
{
    assert(self_p);
    fb_diag_t *d = *self_p;
    if (!d)
        return;
    for (size_t i = 0; i < d->n_ents; i++) {
        diag_ent_t *e = &d->ents[i];
        free(e->name);
        free(e->children.v);
        free(e->post);
        free(e->rpass);
        free(e->tests.v);
        free(e->ufails.v);
        free(e->counters.v);
        free(e->partners.v);
        diag__evidence_free(e);
    }
    free(d->ents);
    for (size_t i = 0; i < d->n_tests; i++)
        s_test_free(&d->tests[i]);
    free(d->tests);
    for (size_t i = 0; i < d->n_counters; i++) {
        free(d->counters[i].test_id);
        free(d->counters[i].what);
    }
    free(d->counters);
    for (size_t i = 0; i < d->n_rails; i++)
        free(d->rails[i]);
    free(d->rails);
    fb_strmap_destroy(&d->index);
    free(d);
    *self_p = NULL;
}

int diag__find(const fb_diag_t *d, const char *name)
{
    if (!name)
        return -1;
    void *v = fb_strmap_get(d->index, name);
    return v ? (int)((uintptr_t)v - 1) : -1;
}

int diag__node_of(const fb_diag_t *d, int i)
{
    return d->ents[i].parent >= 0 ? d->ents[i].parent : i;
}

static int s_add_ent(fb_diag_t *d, const char *name, int parent)
{
    if (d->n_ents == d->cap_ents) {
        d->cap_ents = d->cap_ents ? 2 * d->cap_ents : 64;
        d->ents = xrealloc(d->ents, d->cap_ents * sizeof *d->ents);
    }
    int idx = (int)d->n_ents++;
    diag_ent_t *e = &d->ents[idx];
    memset(e, 0, sizeof *e);
    e->name = xstrdup(name);
    e->parent = parent;
    e->rail = -1;
    e->trusted = true;
    e->chance = 1.0;
    fb_strmap_put(d->index, e->name, (void *)(uintptr_t)(idx + 1));
    return idx;
}

/* The index of rail name p[0..len) in d->rails, added when new. */
static int s_rail_index(fb_diag_t *d, const char *p, size_t len)
{
    for (size_t i = 0; i < d->n_rails; i++)
        if (strlen(d->rails[i]) == len && !strncmp(d->rails[i], p, len))
            return (int)i;
    d->rails = xrealloc(d->rails, (d->n_rails + 1) * sizeof *d->rails);
    d->rails[d->n_rails] = xstrndup(p, len);
    return (int)d->n_rails++;
}

static bool s_name_ok(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ',' || s[i] == '/' || (unsigned char)s[i] <= ' ')
            return false;
    return true;
}

static bool s_rails_ok(const char *rails_csv)
{
    if (!rails_csv || !*rails_csv)
        return true;
    for (const char *p = rails_csv;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (!s_name_ok(p, len))
            return false;
        if (!c)
            return true;
        p = c + 1;
    }
}

int fb_diag_add_node(fb_diag_t *d, const char *node, const char *rails_csv)
{
    assert(d);
    if (!node || !s_name_ok(node, strlen(node)) || !s_rails_ok(rails_csv))
        return -EINVAL;
    if (diag__find(d, node) >= 0)
        return -EEXIST;
    int ni = s_add_ent(d, node, -1);
    d->n_nodes++;
    for (const char *p = rails_csv && *rails_csv ? rails_csv : NULL; p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char *rail = xasprintf("%s/%.*s", node, (int)len, p);
        if (diag__find(d, rail) < 0) { /* a rail listed twice is added once */
            int ri = s_add_ent(d, rail, ni);
            d->ents[ri].rail = s_rail_index(d, p, len);
            diag__ivec_push(&d->ents[ni].children, ri);
        }
        free(rail);
        p = c ? c + 1 : NULL;
    }
    diag_ent_t *ne = &d->ents[ni];
    size_t R = ne->children.n;
    /* The node and its NICs together: prior_bad for the node, and as much again shared by its
     * rails (a NIC of eight is not as likely to be bad as the whole node). */
    double bursty = d->par.prior_bad * DIAG_BURSTY_SHARE;
    ne->prior = d->par.prior_bad + bursty;
    ne->n_post = 1 + (1 + R) * DIAG_NQ + DIAG_NA;
    ne->post = xcalloc(ne->n_post, sizeof *ne->post);
    ne->post[0] = 1.0 - d->par.prior_bad * (R ? 2.0 : 1.0) - bursty;
    for (size_t b = 0; b < DIAG_NA; b++)
        ne->post[diag__hyp_burst(R, b)] = bursty / DIAG_NA;
    for (size_t part = 0; part <= R; part++) {
        double pr = part ? d->par.prior_bad / (double)R : d->par.prior_bad;
        if (part)
            d->ents[ne->children.v[part - 1]].prior = d->ents[ne->children.v[part - 1]].p = pr;
        for (size_t j = 0; j < DIAG_NQ; j++)
            ne->post[diag__hyp(part, j)] = pr * d->mix[j];
    }
    ne->p = ne->prior;
    return 0;
}

/* ---- recording ---- */

static diag_test_t *s_new_test(fb_diag_t *d)
{
    if (d->n_tests == d->cap_tests) {
        d->cap_tests = d->cap_tests ? 2 * d->cap_tests : 256;
        d->tests = xrealloc(d->tests, d->cap_tests * sizeof *d->tests);
    }
    diag_test_t *t = &d->tests[d->n_tests++];
    memset(t, 0, sizeof *t);
    return t;
}

/* The members' entities; -ENOENT for an unknown one, -EINVAL for two of one node. */
static int s_members(const fb_diag_t *d, const char *const *members, size_t n, int *mem)
{
    for (size_t k = 0; k < n; k++) {
        mem[k] = diag__find(d, members[k]);
        if (mem[k] < 0)
            return -ENOENT;
    }
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < k; j++)
            if (diag__node_of(d, mem[j]) == diag__node_of(d, mem[k]))
                return -EINVAL;
    return 0;
}

int fb_diag_record(fb_diag_t *d, const char *test_id, const char *const *members, size_t n,
                   bool failed)
{
    assert(d);
    if (!test_id || !members || n == 0)
        return -EINVAL;
    int *mem = xmalloc(n * sizeof *mem);
    int rc = s_members(d, members, n, mem);
    if (rc) {
        free(mem);
        return rc;
    }
    diag_test_t *t = s_new_test(d);
    t->id = xstrdup(test_id);
    t->mem = mem;
    t->n_mem = n;
    t->failed = failed;
    t->inv = xmalloc(2 * n * sizeof *t->inv);
    t->units = xmalloc(n * sizeof *t->units);
    t->unit_rail = xmalloc(n * sizeof *t->unit_rail);
    for (size_t k = 0; k < n; k++)
        t->inv[t->n_inv++] = mem[k];
    for (size_t k = 0; k < n; k++) {
        int u = diag__node_of(d, mem[k]);
        if (u != mem[k])
            t->inv[t->n_inv++] = u;
        int c = -1;
        for (size_t x = 0; u != mem[k] && x < d->ents[u].children.n; x++)
            if (d->ents[u].children.v[x] == mem[k])
                c = (int)x;
        t->units[t->n_units] = u;
        t->unit_rail[t->n_units++] = c;
    }
    d->unsettled = true;
    return 0;
}

int fb_diag_record_counter(fb_diag_t *d, const char *test_id, const char *rail, const char *what)
{
    assert(d);
    int ri = diag__find(d, rail);
    if (!test_id)
        return -EINVAL;
    if (ri < 0)
        return -ENOENT;
    if (d->ents[ri].parent < 0)
        return -EINVAL;
    d->counters = xrealloc(d->counters, (d->n_counters + 1) * sizeof *d->counters);
    d->counters[d->n_counters++] = (diag_counter_t){
        xstrdup(test_id), xstrdup(what ? what : "port counter increased"), ri, 0, false};
    d->unsettled = true;
    return 0;
}

/* ---- states ---- */

bool diag__undecided(const fb_diag_t *d, int i)
{
    const diag_ent_t *e = &d->ents[i];
    return e->implicated && !e->bad && !e->cleared && !d->ents[diag__node_of(d, i)].bad;
}

bool diag__ent_trusted(const fb_diag_t *d, int i)
{
    return !d->ents[i].bad && !diag__undecided(d, i);
}

bool diag__node_trusted(const fb_diag_t *d, int ni)
{
    if (!diag__ent_trusted(d, ni))
        return false;
    const diag_ivec_t *ch = &d->ents[ni].children;
    for (size_t k = 0; k < ch->n; k++)
        if (!d->ents[ch->v[k]].bad && diag__undecided(d, ch->v[k]))
            return false;
    return true;
}

/* ---- accessors ---- */

bool fb_diag_done(const fb_diag_t *d)
{
    assert(d);
    for (size_t i = 0; i < d->n_ents; i++)
        if (diag__undecided(d, (int)i))
            return false;
    return true;
}

double fb_diag_false_fail_rate(const fb_diag_t *d)
{
    assert(d);
    return d->f_multi;
}

size_t fb_diag_q_mixture(const fb_diag_t *d, const double **q, const double **w)
{
    assert(d && q && w);
    *q = diag__qgrid;
    *w = d->mix;
    return DIAG_NQ;
}

double fb_diag_q(const fb_diag_t *d)
{
    assert(d);
    double m = 0.0;
    for (size_t j = 0; j < DIAG_NQ; j++)
        m += d->mix[j] * diag__qgrid[j];
    return m;
}

double fb_diag_q_clear(const fb_diag_t *d)
{
    assert(d);
    return fmin(d->q_clear_of[0], d->q_clear_of[1]);
}

const char *fb_diag_bursty_node(const fb_diag_t *d)
{
    assert(d);
    return d->bursty >= 0 ? d->ents[d->bursty].name : NULL;
}

bool fb_diag_trusted(const fb_diag_t *d, const char *node)
{
    assert(d);
    int i = diag__find(d, node);
    return i >= 0 && d->ents[i].parent < 0 && diag__node_trusted(d, i);
}

double fb_diag_p_bad(const fb_diag_t *d, const char *suspect)
{
    assert(d);
    int i = diag__find(d, suspect);
    return i < 0 ? NAN : d->ents[i].p;
}

unsigned fb_diag_rounds(const fb_diag_t *d)
{
    assert(d);
    return d->rounds;
}

size_t fb_diag_bad_parts(const fb_diag_t *d, const char *const **parts)
{
    assert(d && parts);
    const char **v = xcalloc(d->n_ents + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].bad)
            v[n++] = d->ents[i].name;
    *parts = v;
    return n;
}

const char *fb_diag_state_name(fb_diag_state_t s)
{
    static const char *const names[] = {"undecided", "cleared", "bad", "passed"};
    return (unsigned)s < 4 ? names[s] : "?";
}
