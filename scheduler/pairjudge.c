/* SPDX-License-Identifier: Apache-2.0 */
/* Pair judgment for scope: pairs stages. Samples are gathered into pair tests (one per round and
 * pair of nodes, up to two samples each); a test is slow when one of its directions is far below
 * the stage median. A node whose slowness follows it from partner to partner, while those
 * partners pass with others, is named; a slow pair nobody explains stays a link finding,
 * undecided between its two ends. The evidence quotes
 * the slow values against the medians so that a reader can check the call. */
#include "pairjudge.h"

#include "robust.h"
#include "common/strmap.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fb_pair_metrics_t s_metrics[] = {
    {"netbw", "netbw.tx_gbps", "netbw.rx_gbps"},
    {"rdmabw", "rdmabw.tx_gbps", "rdmabw.rx_gbps"},
};

const fb_pair_metrics_t *fb_pairjudge_metrics(const char *workload)
{
    for (size_t i = 0; workload && i < FB_ARRAY_LEN(s_metrics); i++)
        if (!strcmp(s_metrics[i].workload, workload))
            return &s_metrics[i];
    return NULL;
}

const char *fb_pair_finding_kind_name(fb_pair_finding_kind_t kind)
{
    return kind == FB_PAIR_FINDING_NODE ? "node" : "link";
}

/* ---- a growing string ---- */

typedef struct {
    char *text;
    size_t len, cap;
} s_buf_t;

static void s_add(s_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void s_add(s_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *piece = xvasprintf(fmt, ap);
    va_end(ap);
    size_t n = strlen(piece);
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->text = xrealloc(b->text, b->cap);
    }
    memcpy(b->text + b->len, piece, n + 1);
    b->len += n;
    free(piece);
}

/* ---- the model ---- */

typedef struct {
    size_t a, b; /* node indices; a is the node of the first sample seen */
    unsigned round;
    size_t samples[2];
    size_t n_samples;
    bool slow;
} s_test_t;

typedef struct {
    const char *name;
    size_t *slow_partners; /* distinct node indices */
    size_t n_slow;
    bool passed; /* in at least one pair test that was not slow */
    bool named;
} s_node_t;

typedef struct {
    const fb_pair_metrics_t *m;
    const fb_pair_sample_t *samples;
    size_t n;
    double med[2], mad[2]; /* [0] tx, [1] rx; NaN when not judged */
    bool *slow[2];         /* per sample and metric */
    s_node_t *nodes;
    size_t n_nodes;
    fb_strmap_t *node_index; /* name -> index + 1 */
    s_test_t *tests;
    size_t n_tests;
} s_model_t;

static double s_value(const fb_pair_sample_t *s, int metric)
{
    return metric ? s->rx : s->tx;
}

static size_t s_node(s_model_t *md, const char *name)
{
    uintptr_t idx = (uintptr_t)fb_strmap_get(md->node_index, name);
    if (idx)
        return idx - 1;
    md->nodes = xrealloc(md->nodes, (md->n_nodes + 1) * sizeof *md->nodes);
    md->nodes[md->n_nodes] = (s_node_t){name, NULL, 0, false, false};
    fb_strmap_put(md->node_index, name, (void *)(uintptr_t)(md->n_nodes + 1));
    return md->n_nodes++;
}

/* Each node's median of its finite values of metric (NaN when it has none), into median[] by
 * node index. Samples are grouped by node in one pass: a scan of every sample per node costs
 * seconds at thousands of nodes. scratch holds md->n values. */
static void s_node_medians(const s_model_t *md, int metric, double *scratch, double *median)
{
    size_t *start = xcalloc(md->n_nodes + 1, sizeof *start);
    size_t *fill = xcalloc(md->n_nodes + 1, sizeof *fill);
    size_t *node_of = xcalloc(md->n ? md->n : 1, sizeof *node_of);
    for (size_t i = 0; i < md->n; i++) {
        node_of[i] = (size_t)(uintptr_t)fb_strmap_get(md->node_index, md->samples[i].node) - 1;
        start[node_of[i] + 1]++;
    }
    for (size_t k = 0; k < md->n_nodes; k++)
        start[k + 1] += start[k];
    for (size_t i = 0; i < md->n; i++) {
        double v = s_value(&md->samples[i], metric);
        if (isfinite(v))
            scratch[start[node_of[i]] + fill[node_of[i]]++] = v;
    }
    for (size_t k = 0; k < md->n_nodes; k++)
        median[k] = fill[k] ? fb_robust_median(scratch + start[k], fill[k]) : NAN;
    free(node_of);
    free(fill);
    free(start);
}

/* The reference of each metric, and which directions are slow against it. The reference is
 * taken over nodes (the median and MAD of each node's own median), not over samples: a node
 * that is slow both ways slows every direction of every pair it is in, which in a small stage
 * is half of all samples (4 nodes, 3 rounds), enough to drag a median over samples down and
 * inflate its MAD; per node, it is one value among many. */
static void s_judge_directions(s_model_t *md)
{
    double *scratch = xcalloc(md->n ? md->n : 1, sizeof *scratch);
    double *per_node = xcalloc(md->n_nodes ? md->n_nodes : 1, sizeof *per_node);
    for (int metric = 0; metric < 2; metric++) {
        size_t k = 0;
        s_node_medians(md, metric, scratch, per_node);
        for (size_t i = 0; i < md->n_nodes; i++)
            if (isfinite(per_node[i]))
                per_node[k++] = per_node[i];
        md->med[metric] = md->mad[metric] = NAN;
        md->slow[metric] = xcalloc(md->n ? md->n : 1, sizeof(bool));
        if (k < 3)
            continue;
        md->med[metric] = fb_robust_median(per_node, k);
        md->mad[metric] = fb_robust_mad(per_node, k);
        for (size_t i = 0; i < md->n; i++) {
            double v = s_value(&md->samples[i], metric);
            md->slow[metric][i] =
                isfinite(v) && v < FB_PAIRJUDGE_SLOW_FRACTION * md->med[metric] &&
                fb_robust_score_from(v, md->med[metric], md->mad[metric]) >= FB_PAIRJUDGE_MIN_SCORE;
        }
    }
    free(per_node);
    free(scratch);
}

/* Gathers samples into pair tests: the two members of one pair in one round. */
static void s_build_tests(s_model_t *md)
{
    fb_strmap_t *index = fb_strmap_new(); /* "round\nlo\nhi" -> test index + 1 */
    for (size_t i = 0; i < md->n; i++) {
        const fb_pair_sample_t *s = &md->samples[i];
        bool node_first = strcmp(s->node, s->partner) < 0;
        char *key = xasprintf("%u\n%s\n%s", s->round, node_first ? s->node : s->partner,
                              node_first ? s->partner : s->node);
        uintptr_t t = (uintptr_t)fb_strmap_get(index, key);
        if (!t) {
            md->tests = xrealloc(md->tests, (md->n_tests + 1) * sizeof *md->tests);
            s_test_t *nt = &md->tests[md->n_tests++];
            memset(nt, 0, sizeof *nt);
            nt->a = s_node(md, s->node);
            nt->b = s_node(md, s->partner);
            nt->round = s->round;
            t = md->n_tests;
            fb_strmap_put(index, key, (void *)t);
        }
        free(key);
        s_test_t *test = &md->tests[t - 1];
        if (test->n_samples < 2)
            test->samples[test->n_samples++] = i;
    }
    fb_strmap_destroy(&index);
}

/* A test is slow when any direction measured in it is. */
static void s_mark_slow_tests(s_model_t *md)
{
    for (size_t t = 0; t < md->n_tests; t++)
        for (size_t k = 0; k < md->tests[t].n_samples; k++) {
            size_t i = md->tests[t].samples[k];
            md->tests[t].slow |= md->slow[0][i] || md->slow[1][i];
        }
}

static void s_add_partner(s_node_t *node, size_t partner)
{
    for (size_t i = 0; i < node->n_slow; i++)
        if (node->slow_partners[i] == partner)
            return;
    node->slow_partners = xrealloc(node->slow_partners, (node->n_slow + 1) * sizeof(size_t));
    node->slow_partners[node->n_slow++] = partner;
}

/* A partner speaks for the node: it passed with some other node, and it is slow with fewer
 * partners than the node is (a partner as widely slow as the node is no evidence against it). */
static bool s_corroborates(const s_model_t *md, size_t partner, size_t node)
{
    return md->nodes[partner].passed && md->nodes[partner].n_slow < md->nodes[node].n_slow;
}

static size_t s_corroborating(const s_model_t *md, size_t node)
{
    size_t n = 0;
    for (size_t k = 0; k < md->nodes[node].n_slow; k++)
        n += s_corroborates(md, md->nodes[node].slow_partners[k], node);
    return n;
}

/* Names the nodes slow with two or more partners that speak for them. */
static void s_attribute(s_model_t *md)
{
    for (size_t t = 0; t < md->n_tests; t++) {
        const s_test_t *test = &md->tests[t];
        if (!test->slow) {
            md->nodes[test->a].passed = md->nodes[test->b].passed = true;
            continue;
        }
        s_add_partner(&md->nodes[test->a], test->b);
        s_add_partner(&md->nodes[test->b], test->a);
    }
    for (size_t i = 0; i < md->n_nodes; i++)
        md->nodes[i].named = s_corroborating(md, i) >= 2;
}

/* ---- evidence ---- */

/* "n1 netbw.tx_gbps 2.10, n2 netbw.rx_gbps 2.05": the slow directions of a test. */
static void s_add_directions(s_buf_t *b, const s_model_t *md, const s_test_t *t)
{
    bool first = true;
    for (size_t k = 0; k < t->n_samples; k++)
        for (int metric = 0; metric < 2; metric++) {
            size_t i = t->samples[k];
            if (!md->slow[metric][i])
                continue;
            s_add(b, "%s%s %s %.2f", first ? "" : ", ", md->samples[i].node,
                  metric ? md->m->rx : md->m->tx, s_value(&md->samples[i], metric));
            first = false;
        }
    if (first)
        s_add(b, "slow");
}

static void s_add_medians(s_buf_t *b, const s_model_t *md)
{
    s_add(b, "; stage medians (over nodes)");
    for (int metric = 0; metric < 2; metric++)
        if (isfinite(md->med[metric]))
            s_add(b, "%s %s %.2f", metric && isfinite(md->med[0]) ? "," : "",
                  metric ? md->m->rx : md->m->tx, md->med[metric]);
    s_add(b, " (slow: below %.0f%% of the median and %.0f robust deviations under it)",
          FB_PAIRJUDGE_SLOW_FRACTION * 100.0, FB_PAIRJUDGE_MIN_SCORE);
}

static fb_pair_finding_t *s_new_finding(fb_pair_judgment_t *j)
{
    j->findings = xrealloc(j->findings, (j->n_findings + 1) * sizeof *j->findings);
    fb_pair_finding_t *f = &j->findings[j->n_findings++];
    memset(f, 0, sizeof *f);
    return f;
}

static void s_cite(fb_pair_finding_t *f, const s_test_t *t)
{
    f->samples = xrealloc(f->samples, (f->n_samples + t->n_samples) * sizeof *f->samples);
    for (size_t k = 0; k < t->n_samples; k++)
        f->samples[f->n_samples++] = t->samples[k];
}

static void s_node_finding(const s_model_t *md, size_t node, fb_pair_judgment_t *j)
{
    const s_node_t *nd = &md->nodes[node];
    fb_pair_finding_t *f = s_new_finding(j);
    f->kind = FB_PAIR_FINDING_NODE;
    f->part = xstrdup(nd->name);
    f->node = xstrdup(nd->name);
    s_buf_t b = {0};
    s_add(&b, "%s is slow with %zu partner%s, %zu of which pass with other nodes:", nd->name,
          nd->n_slow, nd->n_slow == 1 ? "" : "s", s_corroborating(md, node));
    bool first = true;
    for (size_t t = 0; t < md->n_tests; t++) {
        const s_test_t *test = &md->tests[t];
        if (!test->slow || (test->a != node && test->b != node))
            continue;
        size_t other = test->a == node ? test->b : test->a;
        s_add(&b, "%s round %u with %s (", first ? "" : ";", test->round, md->nodes[other].name);
        s_add_directions(&b, md, test);
        s_add(&b, ")");
        first = false;
        s_cite(f, test);
    }
    s_add_medians(&b, md);
    f->what = b.text;
}

/* One link finding per pair of nodes (over all rounds) that no named node explains. */
static void s_link_findings(const s_model_t *md, fb_pair_judgment_t *j)
{
    bool *done = xcalloc(md->n_tests ? md->n_tests : 1, sizeof *done);
    for (size_t t = 0; t < md->n_tests; t++) {
        const s_test_t *test = &md->tests[t];
        if (!test->slow || done[t] || md->nodes[test->a].named || md->nodes[test->b].named)
            continue;
        const char *a = md->nodes[test->a].name, *b_name = md->nodes[test->b].name;
        fb_pair_finding_t *f = s_new_finding(j);
        f->kind = FB_PAIR_FINDING_LINK;
        f->part = xasprintf("%s<->%s", a, b_name);
        f->node = xstrdup(a);
        s_buf_t b = {0};
        s_add(&b, "slow between %s and %s:", a, b_name);
        for (size_t u = t; u < md->n_tests; u++) {
            const s_test_t *same = &md->tests[u];
            if (!same->slow || !((same->a == test->a && same->b == test->b) ||
                                 (same->a == test->b && same->b == test->a)))
                continue;
            done[u] = true;
            s_add(&b, "%s round %u (", u == t ? "" : ";", same->round);
            s_add_directions(&b, md, same);
            s_add(&b, ")");
            s_cite(f, same);
        }
        s_add_medians(&b, md);
        s_add(&b,
              "; undecided between %s and %s: neither is slow with two partners that pass "
              "with other nodes (more rounds, with other partners, tell them apart)",
              a, b_name);
        f->what = b.text;
    }
    free(done);
}

/* ---- entry points ---- */

static void s_model_fini(s_model_t *md)
{
    for (size_t i = 0; i < md->n_nodes; i++)
        free(md->nodes[i].slow_partners);
    free(md->nodes);
    free(md->tests);
    free(md->slow[0]);
    free(md->slow[1]);
    fb_strmap_destroy(&md->node_index);
}

int fb_pairjudge(const fb_pair_metrics_t *m, const fb_pair_sample_t *samples, size_t n,
                 fb_pair_judgment_t *out)
{
    memset(out, 0, sizeof *out);
    out->median_tx = out->median_rx = NAN;
    for (size_t i = 0; i < n; i++)
        if (!samples[i].node || !samples[i].partner || !samples[i].node[0] ||
            !samples[i].partner[0] || !strcmp(samples[i].node, samples[i].partner))
            return -EINVAL;
    s_model_t md = {0};
    md.m = m;
    md.samples = samples;
    md.n = n;
    md.node_index = fb_strmap_new();
    s_build_tests(&md);
    s_judge_directions(&md);
    s_mark_slow_tests(&md);
    s_attribute(&md);
    for (size_t i = 0; i < md.n_nodes; i++)
        if (md.nodes[i].named)
            s_node_finding(&md, i, out);
    s_link_findings(&md, out);
    out->median_tx = md.med[0];
    out->median_rx = md.med[1];
    for (size_t t = 0; t < md.n_tests; t++)
        out->slow_pairs += md.tests[t].slow;
    s_model_fini(&md);
    return (int)out->n_findings;
}

void fb_pair_judgment_clear(fb_pair_judgment_t *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n_findings; i++) {
        free(j->findings[i].part);
        free(j->findings[i].node);
        free(j->findings[i].what);
        free(j->findings[i].samples);
    }
    free(j->findings);
    memset(j, 0, sizeof *j);
    j->median_tx = j->median_rx = NAN;
}
