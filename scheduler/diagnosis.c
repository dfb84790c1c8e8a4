/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine core: Bayesian suspicion per node and per (node, rail) from group/pair test
 * results and port counters, round planning on every rail with trusted partners for suspects and
 * fresh matchings for everyone else, fleet estimates of q and of the false-fail rate, the
 * bad/cleared stopping rule with its evidence, and split planning for faults that show only at
 * scale. The coordinator (and bench/diagnosis) feed it results and run what it plans; this file
 * does no I/O. The model and its approximations are in docs/diagnosis.md. */
#include "diagnosis.h"

#include "common/rng.h"
#include "common/strmap.h"
#include "common/util.h"
#include "pairing.h"
#include "topology.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_P_MIN 1e-12
#define S_P_MAX (1.0 - 1e-12)

typedef struct {
    int *v;
    size_t n, cap;
} s_ivec_t;

typedef struct {
    char *name;
    int parent;        /* index of the node of a rail, -1 for a node */
    int rail;          /* a rail: its index in fb_diag.rails; -1 for a node */
    s_ivec_t children; /* rails of a node */
    double *post;      /* node only: P(all good), P(node bad), P(rail c bad)... (sum 1) */
    size_t n_post;
    double p; /* posterior P(bad) */
    unsigned n_tests, n_failed;
    bool in_failed;         /* has been in a failed test */
    bool bad;               /* named bad (sticky) */
    unsigned n_counters;    /* port-counter increases recorded against it (rails) */
    bool ambiguous;         /* a node named for itself or its only NIC */
    s_ivec_t partners;      /* nodes it was tested with (any result) */
    s_ivec_t fail_partners; /* distinct nodes, trusted at the time, in its failed tests */
    fb_diag_evidence_t *ev;
    size_t n_ev, cap_ev;
} s_ent_t;

struct fb_diag {
    fb_diag_params_t par;
    s_ent_t *ents;
    size_t n_ents, cap_ents;
    fb_strmap_t *index;           /* name -> (index + 1) */
    double ff_tests, ff_fails; /* tests whose members were all cleared, and their failures */
    double q_tests, q_fails;   /* tests of named-bad parts with trusted partners (fb_diag_q) */
    char **rails;              /* rail names over all nodes, in the order first added */
    size_t n_rails;
    bool unsettled; /* results came in since the last fb_diag_settle */
    size_t n_nodes; /* node entities (the rest are rails) */
};

static void s_ivec_push(s_ivec_t *v, int x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4;
        v->v = xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = x;
}

static bool s_ivec_has(const s_ivec_t *v, int x)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == x)
            return true;
    return false;
}

static void s_ivec_add_unique(s_ivec_t *v, int x)
{
    if (!s_ivec_has(v, x))
        s_ivec_push(v, x);
}

void fb_diag_params_default(fb_diag_params_t *p)
{
    assert(p);
    p->q = 0.5;
    p->q_weight = 5.0;
    p->false_fail_rate = 0.01;
    p->false_fail_weight = 200.0;
    p->prior_bad = 0.01;
    p->bad_threshold = 0.99;
    p->clear_threshold = 0.001;
    p->min_trusted_partners = 2;
    p->fleet_error = 0.001;
    p->counter_lr = 100.0;
}

static bool s_prob_ok(double x)
{
    return x > 0.0 && x < 1.0;
}

fb_diag_t *fb_diag_new(const fb_diag_params_t *params)
{
    fb_diag_params_t par;
    if (params)
        par = *params;
    else
        fb_diag_params_default(&par);
    if (!(par.q > 0.0 && par.q <= 1.0) ||
        !(par.false_fail_rate >= 0.0 && par.false_fail_rate < 1.0) ||
        !(par.false_fail_weight >= 0.0) || !s_prob_ok(par.prior_bad) ||
        !s_prob_ok(par.bad_threshold) || !s_prob_ok(par.clear_threshold) ||
        par.clear_threshold >= par.prior_bad || par.prior_bad >= par.bad_threshold ||
        !(par.q_weight >= 0.0) || !(par.counter_lr >= 1.0) ||
        !(par.fleet_error >= 0.0 && par.fleet_error < 1.0))
        return NULL;
    fb_diag_t *d = xcalloc(1, sizeof *d);
    d->par = par;
    d->index = fb_strmap_new();
    return d;
}

void fb_diag_destroy(fb_diag_t **self_p)
{
    assert(self_p);
    fb_diag_t *d = *self_p;
    if (!d)
        return;
    for (size_t i = 0; i < d->n_ents; i++) {
        s_ent_t *e = &d->ents[i];
        free(e->name);
        free(e->children.v);
        free(e->post);
        free(e->partners.v);
        free(e->fail_partners.v);
        for (size_t k = 0; k < e->n_ev; k++) {
            free((char *)e->ev[k].test_id);
            free((char *)e->ev[k].partners);
            free((char *)e->ev[k].counter);
        }
        free(e->ev);
    }
    free(d->ents);
    for (size_t i = 0; i < d->n_rails; i++)
        free(d->rails[i]);
    free(d->rails);
    fb_strmap_destroy(&d->index);
    free(d);
    *self_p = NULL;
}

static int s_find(const fb_diag_t *d, const char *name)
{
    if (!name)
        return -1;
    void *v = fb_strmap_get(d->index, name);
    return v ? (int)((uintptr_t)v - 1) : -1;
}

static int s_add_ent(fb_diag_t *d, const char *name, int parent)
{
    if (d->n_ents == d->cap_ents) {
        d->cap_ents = d->cap_ents ? 2 * d->cap_ents : 64;
        d->ents = xrealloc(d->ents, d->cap_ents * sizeof *d->ents);
    }
    int idx = (int)d->n_ents++;
    s_ent_t *e = &d->ents[idx];
    memset(e, 0, sizeof *e);
    e->name = xstrdup(name);
    e->parent = parent;
    e->rail = -1;
    e->p = d->par.prior_bad;
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

int fb_diag_add_node(fb_diag_t *d, const char *node, const char *rails_csv)
{
    assert(d);
    if (!node || !s_name_ok(node, strlen(node)))
        return -EINVAL;
    if (s_find(d, node) >= 0)
        return -EEXIST;
    /* Validate every rail before adding anything. */
    if (rails_csv && *rails_csv) {
        const char *p = rails_csv;
        for (;;) {
            const char *c = strchr(p, ',');
            size_t len = c ? (size_t)(c - p) : strlen(p);
            if (!s_name_ok(p, len))
                return -EINVAL;
            if (!c)
                break;
            p = c + 1;
        }
    }
    int ni = s_add_ent(d, node, -1);
    d->n_nodes++;
    if (rails_csv && *rails_csv) {
        const char *p = rails_csv;
        for (;;) {
            const char *c = strchr(p, ',');
            size_t len = c ? (size_t)(c - p) : strlen(p);
            char *rail = xasprintf("%s/%.*s", node, (int)len, p);
            if (s_find(d, rail) < 0) { /* a rail listed twice is added once */
                int ri = s_add_ent(d, rail, ni);
                d->ents[ri].rail = s_rail_index(d, p, len);
                s_ivec_push(&d->ents[ni].children, ri);
            }
            free(rail);
            if (!c)
                break;
            p = c + 1;
        }
    }
    s_ent_t *ne = &d->ents[ni];
    ne->n_post = 2 + ne->children.n;
    ne->post = xmalloc(ne->n_post * sizeof *ne->post);
    /* The node and its NICs together: prior_bad for the node, and as much again shared by its
     * rails (a NIC of eight is not as likely to be bad as the whole node). */
    double prior = d->par.prior_bad;
    double rail_prior = ne->children.n ? prior / (double)ne->children.n : 0.0;
    ne->post[0] = 1.0 - prior - rail_prior * (double)ne->children.n;
    ne->post[1] = prior;
    for (size_t h = 2; h < ne->n_post; h++)
        ne->post[h] = rail_prior;
    ne->p = prior;
    for (size_t c = 0; c < ne->children.n; c++)
        d->ents[ne->children.v[c]].p = rail_prior;
    return 0;
}

static int s_node_of(const fb_diag_t *d, int i)
{
    return d->ents[i].parent >= 0 ? d->ents[i].parent : i;
}

/* Undecided: in a failed test, neither bad nor cleared; a part of a unit whose bad part was
 * named is decided with it (one bad part per unit). */
static bool s_undecided(const fb_diag_t *d, int i)
{
    const s_ent_t *e = &d->ents[i];
    if (e->bad || !e->in_failed || e->p <= d->par.clear_threshold)
        return false;
    const s_ent_t *u = &d->ents[e->parent >= 0 ? e->parent : i];
    if (u->bad)
        return false;
    for (size_t c = 0; c < u->children.n; c++)
        if (d->ents[u->children.v[c]].bad)
            return false;
    return true;
}

/* Trusted: neither named bad nor undecided (cleared, never in a failed test, or a healthy part
 * of a unit whose bad part is named). */
static bool s_ent_trusted(const fb_diag_t *d, int i)
{
    return !d->ents[i].bad && !s_undecided(d, i);
}

/* A test member is trusted when it and (for a rail) its node are. */
static bool s_member_trusted(const fb_diag_t *d, int i)
{
    return s_ent_trusted(d, i) && s_ent_trusted(d, s_node_of(d, i));
}

/* A node is a trusted pair partner when it and all its rails are trusted; a rail named bad only
 * keeps it out of tests on that rail. */
static bool s_node_trusted(const fb_diag_t *d, int ni)
{
    if (!s_ent_trusted(d, ni))
        return false;
    const s_ivec_t *ch = &d->ents[ni].children;
    for (size_t k = 0; k < ch->n; k++)
        if (!d->ents[ch->v[k]].bad && !s_ent_trusted(d, ch->v[k]))
            return false;
    return true;
}

double fb_diag_false_fail_rate(const fb_diag_t *d)
{
    assert(d);
    double w = d->par.false_fail_weight;
    double tests = w + d->ff_tests;
    if (tests <= 0.0)
        return d->par.false_fail_rate;
    return (d->par.false_fail_rate * w + d->ff_fails) / tests;
}

double fb_diag_q(const fb_diag_t *d)
{
    assert(d);
    double w = d->par.q_weight;
    if (w <= 0.0 || w + d->q_tests <= 0.0)
        return d->par.q;
    double q = (d->par.q * w + d->q_fails) / (w + d->q_tests);
    return q < 0.01 ? 0.01 : q; /* a part named bad does show, now and then */
}

bool fb_diag_trusted(const fb_diag_t *d, const char *node)
{
    assert(d);
    int i = s_find(d, node);
    return i >= 0 && d->ents[i].parent < 0 && s_node_trusted(d, i);
}

/* Whether evidence e counts towards the estimate of q: a test (not a counter) whose partners
 * were all trusted. */
static bool s_q_evidence(const fb_diag_evidence_t *e)
{
    return !e->counter && e->n_trusted == e->n_partners;
}

/* A part was just named bad: its tests with trusted partners join the estimate of q, except its
 * first failed one (the test that made it a suspect was selected for failing). */
static void s_q_add_part(fb_diag_t *d, const s_ent_t *e)
{
    bool skipped = false;
    for (size_t k = 0; k < e->n_ev; k++) {
        const fb_diag_evidence_t *ev = &e->ev[k];
        if (!skipped && ev->failed && !ev->counter) {
            skipped = true;
            continue;
        }
        if (!s_q_evidence(ev))
            continue;
        d->q_tests += 1.0;
        d->q_fails += ev->failed ? 1.0 : 0.0;
    }
}

double fb_diag_p_bad(const fb_diag_t *d, const char *suspect)
{
    assert(d);
    int i = s_find(d, suspect);
    return i < 0 ? NAN : d->ents[i].p;
}

static void s_push_evidence(s_ent_t *e, const fb_diag_evidence_t *ev)
{
    if (e->n_ev == e->cap_ev) {
        e->cap_ev = e->cap_ev ? 2 * e->cap_ev : 8;
        e->ev = xrealloc(e->ev, e->cap_ev * sizeof *e->ev);
    }
    e->ev[e->n_ev++] = *ev;
}

/* Comma-joined names of the members whose node differs from node `self_node`; counts them
 * (distinct nodes) and the trusted ones. */
static char *s_join_others(const fb_diag_t *d, const int *mem, size_t n, int self_node,
                           unsigned *n_partners, unsigned *n_trusted, const bool *trusted)
{
    size_t len = 1;
    for (size_t k = 0; k < n; k++)
        if (s_node_of(d, mem[k]) != self_node)
            len += strlen(d->ents[mem[k]].name) + 1;
    char *s = xmalloc(len);
    s[0] = '\0';
    size_t at = 0;
    *n_trusted = *n_partners = 0;
    for (size_t k = 0; k < n; k++) {
        int on = s_node_of(d, mem[k]);
        if (on == self_node)
            continue;
        bool again = false;
        for (size_t j = 0; j < k && !again; j++)
            again = s_node_of(d, mem[j]) == on;
        if (!again)
            (*n_partners)++;
        size_t l = strlen(d->ents[mem[k]].name);
        if (at)
            s[at++] = ',';
        memcpy(s + at, d->ents[mem[k]].name, l);
        at += l;
        s[at] = '\0';
        if (trusted[k])
            (*n_trusted)++;
    }
    return s;
}

/* Does hypothesis h of node unit `unit` (1 = the node, 2 + c = its rail c) put the fault in a
 * test with these members? A node fault shows in the node's own tests and its rails' tests; a
 * rail fault only in tests of that rail. */
static bool s_hyp_in_test(const fb_diag_t *d, int unit, size_t h, const int *mem, size_t n)
{
    if (h == 0)
        return false;
    int target = h == 1 ? unit : d->ents[unit].children.v[h - 2];
    for (size_t k = 0; k < n; k++) {
        if (h == 1 ? s_node_of(d, mem[k]) == unit : mem[k] == target)
            return true;
    }
    return false;
}

/* P(X >= k) for X ~ Binomial(n, f): the chance that a healthy part fails k of n tests. */
static double s_binom_tail(unsigned n, unsigned k, double f)
{
    if (k == 0)
        return 1.0;
    if (k > n || f <= 0.0)
        return 0.0;
    double sum = 0.0;
    for (unsigned j = k; j <= n; j++)
        sum += exp(lgamma(n + 1.0) - lgamma(j + 1.0) - lgamma(n - j + 1.0) + j * log(f) +
                   (n - j) * log1p(-f));
    return sum > 1.0 ? 1.0 : sum;
}

/* Whether entity i's failures are too many to be chance anywhere in the fleet: over its tests
 * with trusted partners after the first failed one (which chose it as a suspect), the chance that
 * a healthy part fails as often, times the number of parts of its kind, is at most fleet_error.
 * A part with a port counter against it is exempt (the counter is direct evidence). */
static bool s_significant(const fb_diag_t *d, int i)
{
    const s_ent_t *e = &d->ents[i];
    if (d->par.fleet_error <= 0.0 || e->n_counters)
        return true;
    unsigned n = 0, k = 0;
    bool skipped = false;
    for (size_t j = 0; j < e->n_ev; j++) {
        const fb_diag_evidence_t *ev = &e->ev[j];
        if (!s_q_evidence(ev))
            continue;
        if (!skipped && ev->failed) {
            skipped = true;
            continue;
        }
        n++;
        k += ev->failed;
    }
    size_t parts = e->parent < 0 ? d->n_nodes : d->n_ents - d->n_nodes;
    return s_binom_tail(n, k, fb_diag_false_fail_rate(d)) * (double)parts <= d->par.fleet_error;
}

/* Enough evidence to name entity i: distinct trusted partners in its failed tests (a port
 * counter pointing at it counts as one), and failures that chance does not explain. */
static bool s_witnessed(const fb_diag_t *d, int i)
{
    const s_ent_t *e = &d->ents[i];
    return e->fail_partners.n + (e->n_counters > 0 ? 1 : 0) >= d->par.min_trusted_partners &&
           s_significant(d, i);
}

static void s_name_bad(fb_diag_t *d, int i)
{
    d->ents[i].bad = true;
    s_q_add_part(d, &d->ents[i]);
}

/* Names the bad part of node unit u, if any: the smallest part that holds P >= bad_threshold
 * and is witnessed, a rail before its node. A node with a single rail is a special case: its
 * pair tests cannot tell the node from its NIC (only node-local tests can, and weakly), so once
 * the unit as a whole holds P >= bad_threshold the node is named, as the part that holds both
 * (its verdict says so). */
static void s_check_unit(fb_diag_t *d, int u)
{
    s_ent_t *ue = &d->ents[u];
    const double thr = d->par.bad_threshold;
    for (size_t c = 0; c < ue->children.n; c++) {
        int r = ue->children.v[c];
        if (d->ents[r].bad)
            return; /* one bad part per unit */
        if (ue->post[2 + c] >= thr && s_witnessed(d, r)) {
            s_name_bad(d, r);
            return;
        }
    }
    if (ue->bad)
        return;
    if (ue->post[1] >= thr && s_witnessed(d, u)) {
        s_name_bad(d, u);
        return;
    }
    if (ue->children.n == 1 && 1.0 - ue->post[0] >= thr && s_witnessed(d, u)) {
        ue->ambiguous = true;
        s_name_bad(d, u);
    }
}

void fb_diag_settle(fb_diag_t *d)
{
    assert(d);
    if (!d->unsettled)
        return;
    d->unsettled = false;
    for (size_t i = 0; i < d->n_ents; i++)
        if (d->ents[i].parent < 0)
            s_check_unit(d, (int)i);
}

int fb_diag_record(fb_diag_t *d, const char *test_id, const char *const *members, size_t n,
                   bool failed)
{
    assert(d);
    if (!test_id || !members || n == 0)
        return -EINVAL;
    int *mem = xmalloc(n * sizeof *mem);
    bool *trusted = xmalloc(n * sizeof *trusted);
    /* involved: members plus the nodes of rail members, without repeats */
    int *inv = xmalloc(2 * n * sizeof *inv);
    size_t n_inv = 0;
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        mem[k] = s_find(d, members[k]);
        if (mem[k] < 0) {
            rc = -ENOENT;
            break;
        }
        for (size_t j = 0; j < k; j++)
            if (mem[j] == mem[k])
                rc = -EINVAL;
    }
    if (rc) {
        free(mem);
        free(trusted);
        free(inv);
        return rc;
    }
    for (size_t k = 0; k < n; k++) {
        trusted[k] = s_member_trusted(d, mem[k]);
        int cand[2] = {mem[k], s_node_of(d, mem[k])};
        for (int c = 0; c < 2; c++) {
            bool seen = false;
            for (size_t j = 0; j < n_inv; j++)
                seen = seen || inv[j] == cand[c];
            if (!seen)
                inv[n_inv++] = cand[c];
        }
    }

    /* Bayes per node unit. A node with rails R keeps an exact posterior over single-fault
     * hypotheses {all good, node bad, rail r bad (r in R)}; a faulty part shows in a test that
     * involves it with probability q (a node fault shows in its rail tests too). Other units of
     * the test enter through their current marginal chance to show (mean field):
     *   P(pass | h) = (1 - s_h) * prod_{other units v} (1 - q * P(v has a part in the test bad))
     *                 * (1 - f),      s_h = q if hypothesis h puts the fault in this test, else 0.
     * For a node without rails this is the two-hypothesis rule of docs/diagnosis.md. All units
     * are updated from the posteriors as they were before this result. */
    const double q = fb_diag_q(d);
    const double f = fb_diag_false_fail_rate(d);
    bool all_cleared = true;
    for (size_t i = 0; i < n_inv; i++)
        if (d->ents[inv[i]].p > d->par.clear_threshold)
            all_cleared = false;
    int *units = xmalloc(n * sizeof *units);
    size_t n_units = 0;
    for (size_t k = 0; k < n; k++) {
        int u = s_node_of(d, mem[k]);
        bool seen = false;
        for (size_t j = 0; j < n_units; j++)
            seen = seen || units[j] == u;
        if (!seen)
            units[n_units++] = u;
    }
    double *show = xmalloc(n_units * sizeof *show);
    double **post_new = xmalloc(n_units * sizeof *post_new);
    for (size_t j = 0; j < n_units; j++) {
        const s_ent_t *u = &d->ents[units[j]];
        double m = 0.0;
        for (size_t h = 1; h < u->n_post; h++)
            if (s_hyp_in_test(d, units[j], h, mem, n))
                m += u->post[h];
        show[j] = q * m;
    }
    for (size_t j = 0; j < n_units; j++) {
        const s_ent_t *u = &d->ents[units[j]];
        double others = 1.0;
        for (size_t o = 0; o < n_units; o++)
            if (o != j)
                others *= 1.0 - show[o];
        double *pn = xmalloc(u->n_post * sizeof *pn);
        double sum = 0.0;
        for (size_t h = 0; h < u->n_post; h++) {
            double sh = (h > 0 && s_hyp_in_test(d, units[j], h, mem, n)) ? q : 0.0;
            double pass = (1.0 - sh) * others * (1.0 - f);
            double lik = failed ? 1.0 - pass : pass;
            if (lik < 1e-12)
                lik = 1e-12; /* never rule a hypothesis out for good */
            pn[h] = u->post[h] * lik;
            sum += pn[h];
        }
        for (size_t h = 0; h < u->n_post; h++)
            pn[h] /= sum;
        post_new[j] = pn;
    }
    /* new marginals: entity p = posterior of "this part is the bad one" */
    double *p_new = xmalloc(n_inv * sizeof *p_new);
    for (size_t i = 0; i < n_inv; i++) {
        int ei = inv[i], un = s_node_of(d, ei);
        size_t h = 1;
        if (ei != un) {
            const s_ivec_t *ch = &d->ents[un].children;
            for (size_t c = 0; c < ch->n; c++)
                if (ch->v[c] == ei)
                    h = 2 + c;
        }
        double pn = d->ents[ei].p;
        for (size_t j = 0; j < n_units; j++)
            if (units[j] == un)
                pn = post_new[j][h];
        p_new[i] = pn < S_P_MIN ? S_P_MIN : (pn > S_P_MAX ? S_P_MAX : pn);
    }
    double *p_old = xmalloc(n_inv * sizeof *p_old);
    for (size_t i = 0; i < n_inv; i++)
        p_old[i] = d->ents[inv[i]].p;
    /* commit the unit posteriors; rails of a unit that were not in the test move too */
    for (size_t j = 0; j < n_units; j++) {
        s_ent_t *u = &d->ents[units[j]];
        free(u->post);
        u->post = post_new[j];
        u->p = u->post[1];
        for (size_t c = 0; c < u->children.n; c++)
            d->ents[u->children.v[c]].p = u->post[2 + c];
    }
    free(post_new);
    free(show);
    free(units);
    if (all_cleared) {
        d->ff_tests += 1.0;
        if (failed)
            d->ff_fails += 1.0;
    }

    for (size_t i = 0; i < n_inv; i++) {
        int ei = inv[i];
        s_ent_t *e = &d->ents[ei];
        int self_node = s_node_of(d, ei);
        if (e->in_failed || failed) { /* see fb_diag_evidence_t: from the first failure on */
            fb_diag_evidence_t ev = {0};
            ev.test_id = xstrdup(test_id);
            ev.partners =
                s_join_others(d, mem, n, self_node, &ev.n_partners, &ev.n_trusted, trusted);
            ev.failed = failed;
            ev.p_before = p_old[i];
            ev.p_after = p_new[i];
            s_push_evidence(e, &ev);
            if (e->bad && s_q_evidence(&ev)) { /* a named part tested again */
                d->q_tests += 1.0;
                d->q_fails += failed ? 1.0 : 0.0;
            }
        }
        e->p = p_new[i];
        e->n_tests++;
        for (size_t k = 0; k < n; k++) {
            int on = s_node_of(d, mem[k]);
            if (on == self_node)
                continue;
            s_ivec_add_unique(&e->partners, on);
            if (failed && trusted[k])
                s_ivec_add_unique(&e->fail_partners, on);
        }
        if (failed) {
            e->n_failed++;
            e->in_failed = true;
        }
    }
    d->unsettled = true;
    free(p_old);
    free(p_new);
    free(mem);
    free(trusted);
    free(inv);
    return 0;
}

int fb_diag_record_counter(fb_diag_t *d, const char *test_id, const char *rail, const char *what)
{
    assert(d);
    int ri = s_find(d, rail);
    if (!test_id)
        return -EINVAL;
    if (ri < 0)
        return -ENOENT;
    if (d->ents[ri].parent < 0)
        return -EINVAL;
    s_ent_t *u = &d->ents[d->ents[ri].parent], *e = &d->ents[ri];
    size_t h = 0;
    for (size_t c = 0; c < u->children.n; c++)
        if (u->children.v[c] == ri)
            h = 2 + c;
    double sum = 0.0;
    for (size_t k = 0; k < u->n_post; k++) {
        if (k == h)
            u->post[k] *= d->par.counter_lr;
        sum += u->post[k];
    }
    for (size_t k = 0; k < u->n_post; k++)
        u->post[k] /= sum;
    fb_diag_evidence_t ev = {0};
    ev.test_id = xstrdup(test_id);
    ev.partners = xstrdup("");
    ev.failed = true;
    ev.p_before = e->p;
    ev.counter = xstrdup(what ? what : "port counter increased");
    u->p = u->post[1];
    for (size_t c = 0; c < u->children.n; c++)
        d->ents[u->children.v[c]].p = u->post[2 + c];
    ev.p_after = e->p;
    s_push_evidence(e, &ev);
    e->n_counters++;
    e->in_failed = u->in_failed = true;
    d->unsettled = true;
    return 0;
}

static int s_cmp_p_desc_ctx_p(const void *a, const void *b, const double *p)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (p[x] != p[y])
        return p[x] < p[y] ? 1 : -1;
    return (x > y) - (x < y);
}

/* qsort has no context argument in C11: a small insertion sort is enough for suspect lists. */
static void s_sort_by_p(const fb_diag_t *d, int *v, size_t n)
{
    double *p = xmalloc((d->n_ents ? d->n_ents : 1) * sizeof *p);
    for (size_t i = 0; i < d->n_ents; i++)
        p[i] = d->ents[i].p;
    for (size_t i = 1; i < n; i++) {
        int x = v[i];
        size_t j = i;
        while (j > 0 && s_cmp_p_desc_ctx_p(&v[j - 1], &x, p) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    free(p);
}

int fb_diag_plan_pairs(fb_diag_t *d, uint64_t seed, fb_pair_t **pairs, size_t *n_pairs,
                       char ***rest, size_t *n_rest)
{
    assert(d && pairs && n_pairs && rest && n_rest);
    fb_diag_settle(d);
    size_t ne = d->n_ents;
    int *sus = xmalloc((ne ? ne : 1) * sizeof *sus);
    int *pool = xmalloc((ne ? ne : 1) * sizeof *pool);
    bool *used = xcalloc(ne ? ne : 1, sizeof *used);
    size_t n_sus = 0, n_pool = 0;
    for (size_t i = 0; i < ne; i++) {
        if (s_undecided(d, (int)i))
            sus[n_sus++] = (int)i;
        if (d->ents[i].parent < 0 && s_node_trusted(d, (int)i))
            pool[n_pool++] = (int)i;
    }
    s_sort_by_p(d, sus, n_sus);
    uint64_t st = seed;
    for (size_t i = n_pool; i > 1; i--) {
        size_t j = (size_t)(fb_splitmix64(&st) % i);
        int t = pool[i - 1];
        pool[i - 1] = pool[j];
        pool[j] = t;
    }
    fb_pair_t *out = xmalloc((n_sus ? n_sus : 1) * sizeof *out);
    size_t n_out = 0;
    for (size_t k = 0; k < n_sus; k++) {
        int s = sus[k], sn = s_node_of(d, s);
        if (used[sn])
            continue; /* another suspect of this node is tested this round */
        if (s != sn && s_undecided(d, sn))
            s = sn; /* node and rail both suspect: test the node on another rail first */
        const char *rail = NULL;
        if (s != sn) {
            rail = strchr(d->ents[s].name, '/') + 1;
        } else if (d->ents[sn].children.n) {
            const s_ivec_t *ch = &d->ents[sn].children;
            int best = ch->v[0];
            for (size_t c = 1; c < ch->n; c++)
                if (d->ents[ch->v[c]].p < d->ents[best].p)
                    best = ch->v[c];
            rail = strchr(d->ents[best].name, '/') + 1;
        }
        int pick = -1;
        for (int pass = 0; pass < 2 && pick < 0; pass++)
            for (size_t j = 0; j < n_pool && pick < 0; j++) {
                int t = pool[j];
                if (used[t] || t == sn)
                    continue;
                if (pass == 0 && s_ivec_has(&d->ents[s].partners, t))
                    continue;
                pick = t;
            }
        if (pick < 0)
            continue;
        used[sn] = used[pick] = true;
        out[n_out].suspect = xstrdup(d->ents[s].name);
        out[n_out].partner = xstrdup(d->ents[pick].name);
        out[n_out].rail = xstrdup(rail);
        n_out++;
    }
    char **r = xmalloc((ne ? ne : 1) * sizeof *r);
    size_t n_r = 0;
    for (size_t i = 0; i < ne; i++)
        if (d->ents[i].parent < 0 && !used[i] && !d->ents[i].bad)
            r[n_r++] = xstrdup(d->ents[i].name);
    free(sus);
    free(pool);
    free(used);
    *pairs = out;
    *n_pairs = n_out;
    *rest = r;
    *n_rest = n_r;
    return 0;
}

void fb_diag_pairs_free(fb_pair_t **pairs, size_t n)
{
    assert(pairs);
    if (!*pairs)
        return;
    for (size_t i = 0; i < n; i++) {
        free((*pairs)[i].suspect);
        free((*pairs)[i].partner);
        free((*pairs)[i].rail);
    }
    free(*pairs);
    *pairs = NULL;
}

void fb_diag_names_free(char ***names, size_t n)
{
    assert(names);
    if (!*names)
        return;
    for (size_t i = 0; i < n; i++)
        free((*names)[i]);
    free(*names);
    *names = NULL;
}

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
    const s_ivec_t *ch = &d->ents[ni].children;
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
    const s_ivec_t *ch = &d->ents[ni].children;
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
    s_ivec_t *met; /* per retest node: partners of this round (a new one on every rail) */
    bool *is_retest, *got_partner;
    int *pool; /* trusted nodes */
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
            if (used[t] || t == s || !s_on_pass(d, t, k) || s_ivec_has(&r->met[i], t))
                continue;
            int tr = s_rail_of(d, t, k);
            if (tr >= 0 && !s_ent_trusted(d, tr))
                continue;
            if (pass == 0 && s_ivec_has(&d->ents[s].partners, t))
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
        if (d->ents[i].parent < 0 && !used[i] && !r->is_retest[i] && s_on_pass(d, (int)i, k) &&
            s_node_trusted(d, (int)i))
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
        int a = s_find(d, plan.groups[g].members[0]), b = s_find(d, plan.groups[g].members[1]);
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
        s_ivec_push(&r->met[i], t);
        r->got_partner[s] = true;
        int rail = s_rail_of(d, s, k);
        bool rail_suspect = rail >= 0 && s_undecided(d, rail) && !s_undecided(d, s);
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
    for (size_t i = 0; i < o->n_extra; i++) {
        int x = s_find(d, o->extra[i]);
        if (x >= 0 && d->ents[x].parent < 0 && !d->ents[x].bad)
            r.is_retest[x] = true;
    }
    for (size_t i = 0; i < d->n_ents; i++) {
        if (d->ents[i].parent >= 0 || d->ents[i].bad)
            continue;
        if (!s_node_trusted(d, (int)i))
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

bool fb_diag_done(const fb_diag_t *d)
{
    assert(d);
    for (size_t i = 0; i < d->n_ents; i++)
        if (s_undecided(d, (int)i))
            return false;
    return true;
}

size_t fb_diag_verdicts(const fb_diag_t *d, fb_diag_verdict_t **out)
{
    assert(d && out);
    fb_diag_verdict_t *v = xcalloc(d->n_ents ? d->n_ents : 1, sizeof *v);
    for (size_t i = 0; i < d->n_ents; i++) {
        const s_ent_t *e = &d->ents[i];
        fb_diag_verdict_t *x = &v[i];
        x->suspect = e->name;
        x->parent = e->parent >= 0 ? d->ents[e->parent].name : NULL;
        x->state =
            e->bad ? FB_DIAG_BAD : (s_undecided(d, (int)i) ? FB_DIAG_UNDECIDED : FB_DIAG_CLEARED);
        x->p_bad = e->p;
        x->n_tests = e->n_tests;
        x->n_failed = e->n_failed;
        x->n_trusted_fail_partners = (unsigned)e->fail_partners.n;
        x->n_counters = e->n_counters;
        x->kind = e->parent < 0 ? "node" : (e->n_counters ? "link" : "nic");
        x->ambiguous = e->ambiguous;
        x->p_unit = e->parent < 0 && e->post ? 1.0 - e->post[0] : e->p;
        x->evidence = e->ev;
        x->n_evidence = e->n_ev;
    }
    *out = v;
    return d->n_ents;
}

/* ---- split planning ---- */

int fb_diag_split(size_t n, size_t k, size_t *starts)
{
    if (n == 0 || k < 2 || !starts)
        return -EINVAL;
    size_t parts = k < n ? k : n;
    size_t base = n / parts, extra = n % parts, at = 0;
    for (size_t i = 0; i < parts; i++) {
        starts[i] = at;
        at += base + (i < extra ? 1 : 0);
    }
    starts[parts] = n;
    return (int)parts;
}

typedef struct {
    char **names; /* borrowed from fb_split's own copies */
    size_t n;
    unsigned runs, fails;
    int group; /* index of the group it was split from */
} s_part_t;

struct fb_split {
    char **all; /* owned copies of the member names */
    size_t n_all;
    size_t k;
    unsigned repeat, levels;
    s_part_t *parts;
    size_t n_parts;
    s_part_t *groups; /* the failing groups being split at this level */
    size_t n_groups;
    s_part_t *found;
    size_t n_found, cap_found;
};

static void s_split_level(fb_split_t *s)
{
    free(s->parts);
    s->parts = xcalloc(s->n_groups * s->k + 1, sizeof *s->parts);
    s->n_parts = 0;
    size_t *starts = xmalloc((s->k + 1) * sizeof *starts);
    for (size_t g = 0; g < s->n_groups; g++) {
        int np = fb_diag_split(s->groups[g].n, s->k, starts);
        for (int i = 0; i < np; i++) {
            s_part_t *p = &s->parts[s->n_parts++];
            p->names = s->groups[g].names + starts[i];
            p->n = starts[i + 1] - starts[i];
            p->group = (int)g;
        }
    }
    free(starts);
    s->levels++;
}

static void s_split_found(fb_split_t *s, const s_part_t *p)
{
    if (s->n_found == s->cap_found) {
        s->cap_found = s->cap_found ? 2 * s->cap_found : 4;
        s->found = xrealloc(s->found, s->cap_found * sizeof *s->found);
    }
    s->found[s->n_found++] = *p;
}

fb_split_t *fb_split_new(const char *const *members, size_t n, size_t k, unsigned repeat)
{
    if (!members || n == 0 || k < 2 || repeat == 0)
        return NULL;
    fb_split_t *s = xcalloc(1, sizeof *s);
    s->all = xmalloc(n * sizeof *s->all);
    for (size_t i = 0; i < n; i++)
        s->all[i] = xstrdup(members[i]);
    s->n_all = n;
    s->k = k;
    s->repeat = repeat;
    s->groups = xcalloc(1, sizeof *s->groups);
    s->groups[0].names = s->all;
    s->groups[0].n = n;
    s->n_groups = 1;
    if (n == 1) { /* nothing to split: the member is the finding */
        s_split_found(s, &s->groups[0]);
        s->n_groups = 0;
        return s;
    }
    s_split_level(s);
    return s;
}

void fb_split_destroy(fb_split_t **self_p)
{
    assert(self_p);
    fb_split_t *s = *self_p;
    if (!s)
        return;
    for (size_t i = 0; i < s->n_all; i++)
        free(s->all[i]);
    free(s->all);
    free(s->parts);
    free(s->groups);
    free(s->found);
    free(s);
    *self_p = NULL;
}

size_t fb_split_n_parts(const fb_split_t *s)
{
    assert(s);
    return s->n_groups ? s->n_parts : 0;
}

const char *const *fb_split_part(const fb_split_t *s, size_t i, size_t *size)
{
    assert(s);
    if (i >= fb_split_n_parts(s))
        return NULL;
    if (size)
        *size = s->parts[i].n;
    return (const char *const *)s->parts[i].names;
}

int fb_split_record(fb_split_t *s, size_t part, bool failed)
{
    assert(s);
    if (part >= fb_split_n_parts(s) || s->parts[part].runs >= s->repeat)
        return -EINVAL;
    s->parts[part].runs++;
    if (failed)
        s->parts[part].fails++;
    return 0;
}

int fb_split_next(fb_split_t *s)
{
    assert(s);
    if (s->n_groups == 0)
        return 0;
    for (size_t i = 0; i < s->n_parts; i++)
        if (s->parts[i].runs < s->repeat)
            return -EAGAIN;
    s_part_t *next = xcalloc(s->n_parts + 1, sizeof *next);
    size_t n_next = 0;
    for (size_t g = 0; g < s->n_groups; g++) {
        bool any = false;
        for (size_t i = 0; i < s->n_parts; i++) {
            s_part_t *p = &s->parts[i];
            if (p->group != (int)g || p->fails == 0)
                continue;
            any = true;
            s_part_t np = {p->names, p->n, 0, 0, 0};
            if (p->n == 1)
                s_split_found(s, &np);
            else
                next[n_next++] = np;
        }
        if (!any) /* no part fails alone: the fault needs this scale, or it hid */
            s_split_found(s, &s->groups[g]);
    }
    free(s->groups);
    s->groups = next;
    s->n_groups = n_next;
    if (n_next == 0)
        return 0;
    s_split_level(s);
    return 1;
}

unsigned fb_split_levels(const fb_split_t *s)
{
    assert(s);
    return s->levels;
}

size_t fb_split_n_findings(const fb_split_t *s)
{
    assert(s);
    return s->n_found;
}

const char *const *fb_split_finding(const fb_split_t *s, size_t i, size_t *size)
{
    assert(s);
    if (i >= s->n_found)
        return NULL;
    if (size)
        *size = s->found[i].n;
    return (const char *const *)s->found[i].names;
}
