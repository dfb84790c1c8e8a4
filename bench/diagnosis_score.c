/* SPDX-License-Identifier: Apache-2.0 */
/* Scoring of the diagnosis benchmark (diagnosis_score.h): every verdict of a method against the
 * trial's faults, counted per method, per kind of fault and per printed confidence, so that a
 * reader sees not only whether faults were found but what the method claimed on the way: what
 * it named wrongly and next to what, what it left undecided, what it cleared that was bad, and
 * whether its confidences hold (of the parts named at 0.99, are 99% bad?). */
#include "diagnosis_score.h"

#include "common/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Confidence bins of the calibration tables: [edge[i], edge[i + 1]). */
#define S_BINS 5
#define S_TOP 1.0000001 /* the last bin holds 1 */
static const double s_bad_edges[S_BINS + 1] = {0.0, 0.9, 0.95, 0.99, 0.999, S_TOP};
static const double s_undecided_edges[S_BINS + 1] = {0.0, 0.1, 0.5, 0.9, 0.99, S_TOP};
static const double s_cleared_edges[S_BINS + 1] = {0.0, 0.9, 0.99, 0.999, 0.9999, S_TOP};
#define S_NAMED_KINDS 6 /* the engine's kinds of parts, and any other it may add */
static const char *const s_named_kinds[S_NAMED_KINDS] = {"node", "nic",   "link",
                                                         "leaf", "group", "(other)"};

typedef struct {
    size_t faults, named, undecided, cleared, passed, other;
    size_t unseen;    /* passed, and never showed in a test of the session: nothing could see it */
    unsigned *rounds; /* per named fault: the round it was named in */
    double *secs;
    size_t n_times, cap_times;
} s_kind_t;

typedef struct {
    dmix_type_t type;
    unsigned lookalikes; /* dscore_run_t */
} s_passed_t;

typedef struct {
    size_t n, truly; /* parts in the bin; of them truly bad (bad, undecided) or good (cleared) */
} s_bin_t;

struct dscore {
    char *method;
    s_kind_t kind[DMIX_N];
    s_kind_t second; /* second faults on a node, whatever their type */
    size_t trials, fault_parts, found_parts, named_parts, false_related, false_unrelated;
    size_t undecided_faults, undecided_healthy, cleared_faults;
    size_t watch_healthy; /* healthy parts undecided on watch (their nodes are resumed) */
    size_t held_nodes;    /* nodes an undecided part not on watch holds out of service */
    size_t held_any;      /* nodes any undecided part would hold, were none on watch */
    size_t trials_false, trials_unrelated, budget_ended, tests;
    unsigned *rounds;
    double *secs;
    s_bin_t bad[S_BINS], undecided[S_BINS], cleared[S_BINS];
    size_t by_kind[S_NAMED_KINDS][2]; /* named, of them a fault's part */
    s_passed_t *passed;               /* faults that showed and passed */
    size_t n_passed, cap_passed;
};

dscore_t *dscore_new(const char *method)
{
    dscore_t *s = xcalloc(1, sizeof *s);
    s->method = xstrdup(method);
    return s;
}

void dscore_destroy(dscore_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    dscore_t *s = *self_p;
    *self_p = NULL;
    for (int k = 0; k < DMIX_N; k++) {
        free(s->kind[k].rounds);
        free(s->kind[k].secs);
    }
    free(s->second.rounds);
    free(s->second.secs);
    free(s->rounds);
    free(s->secs);
    free(s->passed);
    free(s->method);
    free(s);
}

/* ---- matching ------------------------------------------------------------------------------ */

static bool s_is_group(const char *part)
{
    return strchr(part, ',') != NULL;
}

static bool s_is_link(const char *part)
{
    return strstr(part, "<->") != NULL;
}

/* The node of a node or NIC part ("n/mlx5_2" -> "n"), heap; NULL for links and groups. */
static char *s_node_of(const char *part)
{
    if (s_is_group(part) || s_is_link(part))
        return NULL;
    const char *slash = strchr(part, '/');
    return slash ? xstrndup(part, (size_t)(slash - part)) : xstrdup(part);
}

static bool s_matches(const dscore_truth_t *t, const dmix_fault_t *f, const char *part)
{
    if (!strcmp(f->part, part))
        return true;
    /* "leaf02<->*": one of the leaf's uplinks, which spine's not known without the routes */
    size_t len = f->leaf ? strlen(f->leaf) : 0;
    if (f->type == DMIX_UPLINK_SLOW && len && !strncmp(part, f->leaf, len) &&
        !strcmp(part + len, "<->*"))
        return true;
    /* one rail: the node named for "itself or its only NIC" names a fault of that NIC */
    return t->rails == 1 && dmix_type_site(f->type) == DMIX_AT_NIC && !strcmp(f->node, part);
}

bool dscore_is_fault(const dscore_truth_t *t, const char *part)
{
    for (size_t i = 0; i < t->world->n_faults; i++)
        if (s_matches(t, &t->world->faults[i], part))
            return true;
    return false;
}

/* Whether a group part "a,b,c" holds node. */
static bool s_group_has(const char *group, const char *node)
{
    size_t len = strlen(node);
    for (const char *p = group; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, node, len) && (p[len] == ',' || p[len] == '\0'))
            return true;
    return false;
}

/* Whether part, not f's own, is next to fault f (see the header). */
static bool s_related(const dscore_truth_t *t, const dmix_fault_t *f, const char *part)
{
    if (s_is_group(part))
        return f->node && s_group_has(part, f->node);
    if (s_is_link(part)) /* an uplink of the fault's leaf */
        return f->leaf && !strncmp(part, f->leaf, strlen(f->leaf)) &&
               !strncmp(part + strlen(f->leaf), "<->", 3);
    char *node = s_node_of(part);
    const char *leaf = fb_topology_leaf_of(t->topo, node);
    bool related = false;
    switch (dmix_type_site(f->type)) {
    case DMIX_AT_NODE:
    case DMIX_AT_NIC: /* the node of a bad NIC, a NIC of a bad node, another NIC of it */
        related = !strcmp(node, f->node);
        break;
    default: /* behind a bad leaf, or behind the leaf of a slow uplink */
        related = leaf && !strcmp(leaf, f->leaf);
    }
    free(node);
    return related;
}

/* ---- accumulating -------------------------------------------------------------------------- */

static void s_bin_add(s_bin_t *bins, const double *edges, double c, bool truly)
{
    if (!isfinite(c))
        return;
    for (int i = 0; i < S_BINS; i++)
        if (c >= edges[i] && c < edges[i + 1]) {
            bins[i].n++;
            bins[i].truly += truly;
            return;
        }
}

static int s_named_kind(const char *kind)
{
    for (int i = 0; i < S_NAMED_KINDS - 1; i++)
        if (kind && !strcmp(kind, s_named_kinds[i]))
            return i;
    return S_NAMED_KINDS - 1;
}

static void s_time_add(s_kind_t *k, unsigned round, double secs)
{
    if (k->n_times == k->cap_times) {
        k->cap_times = k->cap_times ? 2 * k->cap_times : 64;
        k->rounds = xrealloc(k->rounds, k->cap_times * sizeof *k->rounds);
        k->secs = xrealloc(k->secs, k->cap_times * sizeof *k->secs);
    }
    k->rounds[k->n_times] = round;
    k->secs[k->n_times++] = secs;
}

/* Whether a fault of this type shows by failing tests (a slow one shows in flows instead). */
static bool s_fails_tests(dmix_type_t t)
{
    return t != DMIX_NODE_SLOW && t != DMIX_NODE_SLOW_MILD && t != DMIX_UPLINK_SLOW;
}

static void s_passed_add(dscore_t *s, dmix_type_t type, unsigned lookalikes)
{
    if (s->n_passed == s->cap_passed) {
        s->cap_passed = s->cap_passed ? 2 * s->cap_passed : 16;
        s->passed = xrealloc(s->passed, s->cap_passed * sizeof *s->passed);
    }
    s->passed[s->n_passed++] = (s_passed_t){type, lookalikes};
}

/* The verdict on fault f: named, another part named, or the state of its own part. */
static void s_score_fault(dscore_t *s, const dscore_truth_t *t, const dscore_run_t *run, size_t i)
{
    const dmix_fault_t *f = &t->world->faults[i];
    /* a second fault on a node is counted apart: its part is the first fault's */
    s_kind_t *k = f->second ? &s->second : &s->kind[f->type];
    k->faults++;
    const fb_bisect_verdict_t *own = NULL;
    bool other = false;
    for (size_t v = 0; v < run->n_verdicts; v++) {
        const fb_bisect_verdict_t *x = &run->verdicts[v];
        if (s_matches(t, f, x->part)) {
            if (!own || x->state == FB_BISECT_BAD)
                own = x;
        } else if (x->state == FB_BISECT_BAD && s_related(t, f, x->part)) {
            other = true;
        }
    }
    if (own && own->state == FB_BISECT_BAD) {
        k->named++;
        if (run->named_round && run->named_round[i])
            s_time_add(k, run->named_round[i], run->named_s[i]);
        else if (!run->named_round)
            s_time_add(k, run->rounds, run->sim_s);
    } else if (other) {
        k->other++;
    } else if (own && own->state == FB_BISECT_UNDECIDED) {
        k->undecided++;
    } else if (own && own->state == FB_BISECT_CLEARED) {
        k->cleared++;
    } else if (run->showed && s_fails_tests(f->type) && !run->showed[i]) {
        k->unseen++; /* a burst that never came while its part was tested */
    } else {
        k->passed++; /* never implicated: passed, or in no failed test at all */
        if (run->lookalikes)
            s_passed_add(s, f->type, run->lookalikes[i]);
    }
}

/* Parts of distinct faults (a node with two faults is one part). */
static void s_score_parts(dscore_t *s, const dscore_truth_t *t, const dscore_run_t *run)
{
    const dmix_world_t *w = t->world;
    for (size_t i = 0; i < w->n_faults; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(w->faults[j].part, w->faults[i].part);
        if (seen)
            continue;
        s->fault_parts++;
        for (size_t v = 0; v < run->n_verdicts; v++) {
            const fb_bisect_verdict_t *x = &run->verdicts[v];
            if (!s_matches(t, &w->faults[i], x->part))
                continue;
            s->found_parts += x->state == FB_BISECT_BAD;
            s->undecided_faults += x->state == FB_BISECT_UNDECIDED;
            s->cleared_faults += x->state == FB_BISECT_CLEARED;
            break;
        }
    }
}

/* Every verdict: false names, precision by kind, calibration. */
static void s_score_verdicts(dscore_t *s, const dscore_truth_t *t, const dscore_run_t *run,
                             size_t *related, size_t *unrelated)
{
    for (size_t v = 0; v < run->n_verdicts; v++) {
        const fb_bisect_verdict_t *x = &run->verdicts[v];
        bool fault = dscore_is_fault(t, x->part);
        if (x->state == FB_BISECT_BAD) {
            s->named_parts++;
            int k = s_named_kind(x->kind);
            s->by_kind[k][0]++;
            s->by_kind[k][1] += fault;
            s_bin_add(s->bad, s_bad_edges, x->confidence, fault);
            if (!fault) {
                bool near = false;
                for (size_t i = 0; i < t->world->n_faults && !near; i++)
                    near = s_related(t, &t->world->faults[i], x->part);
                *(near ? related : unrelated) += 1;
            }
        } else if (x->state == FB_BISECT_UNDECIDED) {
            s->undecided_healthy += !fault;
            s->watch_healthy += !fault && x->on_watch;
            s_bin_add(s->undecided, s_undecided_edges, x->confidence, fault);
        } else if (x->state == FB_BISECT_CLEARED) {
            s_bin_add(s->cleared, s_cleared_edges, x->confidence, !fault);
        } /* passed: no confidence claimed */
    }
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Distinct nodes of the undecided parts not on watch, or of all when watch_holds (a node or one
 * of its NICs; groups, leaves and uplinks hold no node by themselves): the nodes a campaign
 * would not resume. */
static size_t s_held_nodes(const dscore_run_t *run, bool watch_holds)
{
    char **nodes = xcalloc(run->n_verdicts + 1, sizeof *nodes);
    size_t n = 0, distinct = 0;
    for (size_t v = 0; v < run->n_verdicts; v++) {
        const fb_bisect_verdict_t *x = &run->verdicts[v];
        if (x->state != FB_BISECT_UNDECIDED || (x->on_watch && !watch_holds) ||
            strncmp(x->part, "sim-", 4) || strpbrk(x->part, ",<"))
            continue;
        nodes[n++] = xstrndup(x->part, strcspn(x->part, "/"));
    }
    qsort(nodes, n, sizeof *nodes, s_cmp_str);
    for (size_t i = 0; i < n; i++)
        distinct += i == 0 || strcmp(nodes[i], nodes[i - 1]);
    for (size_t i = 0; i < n; i++)
        free(nodes[i]);
    free(nodes);
    return distinct;
}

void dscore_add(dscore_t *s, const dscore_truth_t *t, const dscore_run_t *run)
{
    s->held_nodes += s_held_nodes(run, false);
    s->held_any += s_held_nodes(run, true);
    for (size_t i = 0; i < t->world->n_faults; i++)
        s_score_fault(s, t, run, i);
    s_score_parts(s, t, run);
    size_t related = 0, unrelated = 0;
    s_score_verdicts(s, t, run, &related, &unrelated);
    s->false_related += related;
    s->false_unrelated += unrelated;
    s->trials_false += related + unrelated > 0;
    s->trials_unrelated += unrelated > 0;
    s->budget_ended += run->budget_ended;
    s->tests += run->tests;
    s->rounds = xrealloc(s->rounds, (s->trials + 1) * sizeof *s->rounds);
    s->secs = xrealloc(s->secs, (s->trials + 1) * sizeof *s->secs);
    s->rounds[s->trials] = run->rounds;
    s->secs[s->trials++] = run->sim_s;
}

/* ---- printing ------------------------------------------------------------------------------ */

static int s_cmp_u(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

static int s_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of sorted v[0..n). */
static size_t s_rank(size_t n, double q)
{
    size_t r = (size_t)ceil(q * (double)n);
    return r ? r - 1 : 0;
}

static void s_quantiles_u(unsigned *v, size_t n, char *buf, size_t len)
{
    if (!n) {
        snprintf(buf, len, "-");
        return;
    }
    qsort(v, n, sizeof *v, s_cmp_u);
    snprintf(buf, len, "%u/%u/%u", v[s_rank(n, 0.5)], v[s_rank(n, 0.9)], v[n - 1]);
}

static void s_quantiles_d(double *v, size_t n, char *buf, size_t len)
{
    if (!n) {
        snprintf(buf, len, "-");
        return;
    }
    qsort(v, n, sizeof *v, s_cmp_d);
    snprintf(buf, len, "%.0f/%.0f", v[s_rank(n, 0.5)], v[s_rank(n, 0.9)]);
}

static void s_ratio(char *buf, size_t len, size_t a, size_t b)
{
    if (b)
        snprintf(buf, len, "%.4f", (double)a / (double)b);
    else
        snprintf(buf, len, "-");
}

void dscore_print_summary(FILE *out, dscore_t *const *methods, size_t n)
{
    fprintf(out, "%-10s %6s %6s %7s %7s %7s %6s %7s %7s %7s %7s %6s %6s %-10s %-11s %8s\n",
            "method", "trials", "faults", "recall", "precis", "undec", "clear", "false_t",
            "unrel_t", "undec_h", "watch_h", "held", "held_a", "rounds", "sim_s", "tests");
    for (size_t m = 0; m < n; m++) {
        dscore_t *s = methods[m];
        char r[16], p[16], u[16], c[16], ft[16], ut[16], rounds[40], secs[40];
        s_ratio(r, sizeof r, s->found_parts, s->fault_parts);
        s_ratio(p, sizeof p, s->named_parts - s->false_related - s->false_unrelated,
                s->named_parts);
        s_ratio(u, sizeof u, s->undecided_faults, s->fault_parts);
        s_ratio(c, sizeof c, s->cleared_faults, s->fault_parts);
        s_ratio(ft, sizeof ft, s->trials_false, s->trials);
        s_ratio(ut, sizeof ut, s->trials_unrelated, s->trials);
        s_quantiles_u(s->rounds, s->trials, rounds, sizeof rounds);
        s_quantiles_d(s->secs, s->trials, secs, sizeof secs);
        double per = s->trials ? 1.0 / (double)s->trials : 0.0;
        fprintf(
            out,
            "%-10s %6zu %6zu %7s %7s %7s %6s %7s %7s %7.2f %7.2f %6.1f %6.1f %-10s %-11s %8.0f\n",
            s->method, s->trials, s->fault_parts, r, p, u, c, ft, ut,
            (double)s->undecided_healthy * per, (double)s->watch_healthy * per,
            (double)s->held_nodes * per, (double)s->held_any * per, rounds, secs,
            (double)s->tests * per);
    }
}

void dscore_print_kinds(FILE *out, dscore_t *const *methods, size_t n)
{
    const dscore_t *e = methods[0];
    fprintf(out, "%-18s %6s %7s %7s %7s %7s %7s %7s %-10s %-11s\n",
            "kind ("
            "engine)",
            "faults", "named", "undec", "clear", "passed", "unseen", "other", "rounds", "sim_s");
    for (int k = 0; k <= DMIX_N; k++) {
        s_kind_t *x = (s_kind_t *)(k < DMIX_N ? &e->kind[k] : &e->second);
        if (!x->faults)
            continue;
        char cols[6][16], rounds[40], secs[40];
        size_t v[6] = {x->named, x->undecided, x->cleared, x->passed, x->unseen, x->other};
        for (int i = 0; i < 6; i++)
            s_ratio(cols[i], sizeof cols[i], v[i], x->faults);
        s_quantiles_u(x->rounds, x->n_times, rounds, sizeof rounds);
        s_quantiles_d(x->secs, x->n_times, secs, sizeof secs);
        fprintf(out, "%-18s %6zu %7s %7s %7s %7s %7s %7s %-10s %-11s\n",
                k < DMIX_N ? dmix_type_name((dmix_type_t)k) : "(second fault)", x->faults, cols[0],
                cols[1], cols[2], cols[3], cols[4], cols[5], rounds, secs);
    }
    fprintf(out, "\n%-18s %6s", "kind: named by", "faults");
    for (size_t m = 0; m < n; m++)
        fprintf(out, " %10s", methods[m]->method);
    fprintf(out, "\n");
    for (int k = 0; k <= DMIX_N; k++) {
        const s_kind_t *x = k < DMIX_N ? &e->kind[k] : &e->second;
        if (!x->faults)
            continue;
        fprintf(out, "%-18s %6zu", k < DMIX_N ? dmix_type_name((dmix_type_t)k) : "(second fault)",
                x->faults);
        for (size_t m = 0; m < n; m++) {
            const s_kind_t *y = k < DMIX_N ? &methods[m]->kind[k] : &methods[m]->second;
            char r[16];
            s_ratio(r, sizeof r, y->named, y->faults);
            fprintf(out, " %10s", r);
        }
        fprintf(out, "\n");
    }
}

static void s_print_bins(FILE *out, const char *title, const char *truly, const s_bin_t *bins,
                         const double *edges)
{
    fprintf(out, "%-26s %8s %10s %8s\n", title, "parts", truly, "share");
    for (int i = 0; i < S_BINS; i++) {
        char range[32], share[16];
        if (edges[i + 1] > 1.0)
            snprintf(range, sizeof range, "[%g, 1]", edges[i]);
        else
            snprintf(range, sizeof range, "[%g, %g)", edges[i], edges[i + 1]);
        s_ratio(share, sizeof share, bins[i].truly, bins[i].n);
        fprintf(out, "  %-24s %8zu %10zu %8s\n", range, bins[i].n, bins[i].truly, share);
    }
}

void dscore_print_calibration(FILE *out, const dscore_t *s)
{
    fprintf(out, "%-26s %8s %10s %8s\n", "named bad, by kind", "parts", "a fault's", "precis");
    for (int k = 0; k < S_NAMED_KINDS; k++) {
        char p[16];
        s_ratio(p, sizeof p, s->by_kind[k][1], s->by_kind[k][0]);
        fprintf(out, "  %-24s %8zu %10zu %8s\n", s_named_kinds[k], s->by_kind[k][0],
                s->by_kind[k][1], p);
    }
    s_print_bins(out, "named bad, by confidence", "truly bad", s->bad, s_bad_edges);
    s_print_bins(out, "undecided, by P(bad)", "truly bad", s->undecided, s_undecided_edges);
    s_print_bins(out, "cleared, by P(good)", "truly good", s->cleared, s_cleared_edges);
}

/* Sums of kind counters over the types for which pick(t) holds. */
static void s_sum(const dscore_t *s, bool (*pick)(dmix_type_t), size_t *faults, size_t *named,
                  size_t *cleared, size_t *passed, size_t *unseen)
{
    *faults = *named = *cleared = *passed = *unseen = 0;
    for (int k = 0; k < DMIX_N; k++)
        if (pick((dmix_type_t)k)) {
            *faults += s->kind[k].faults;
            *named += s->kind[k].named;
            *cleared += s->kind[k].cleared;
            *passed += s->kind[k].passed;
            *unseen += s->kind[k].unseen;
        }
}

static bool s_hard(dmix_type_t t)
{
    return t == DMIX_NODE_HARD || t == DMIX_NIC_HARD;
}

static bool s_must_show(dmix_type_t t)
{
    return dmix_type_never_cleared(t) && !s_hard(t) && dmix_type_site(t) != DMIX_AT_LEAF;
}

static bool s_mild(dmix_type_t t)
{
    return t == DMIX_NODE_SLOW_MILD;
}

static bool s_leaf(dmix_type_t t)
{
    return dmix_type_site(t) == DMIX_AT_LEAF;
}

static bool s_intermittent_node(dmix_type_t t)
{
    return t == DMIX_NODE_INTERMITTENT;
}

static void s_goal(FILE *out, const char *goal, const char *measured, const char *target, bool met)
{
    fprintf(out, "  %-58s %-24s %-10s %s\n", goal, measured, target, met ? "met" : "NOT MET");
}

/* The passed faults of the types pick() holds for: how many healthy parts of their kind had as
 * bad a record, each (what implicating the fault would have implicated with it). */
static void s_print_lookalikes(FILE *out, const dscore_t *s, bool (*pick)(dmix_type_t))
{
    char line[256];
    size_t len = 0, shown = 0;
    line[0] = '\0';
    for (size_t i = 0; i < s->n_passed && len + 16 < sizeof line; i++)
        if (pick(s->passed[i].type))
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%u", shown++ ? ", " : "",
                                    s->passed[i].lookalikes);
    if (shown)
        fprintf(out, "  %-58s %s\n", "  passed: healthy parts of its kind with as bad a record",
                line);
}

void dscore_print_goals(FILE *out, const dscore_t *s, unsigned rails, unsigned sweeps,
                        unsigned follow_up_goal)
{
    char m[64];
    size_t faults, named, cleared, passed, unseen;
    snprintf(m, sizeof m, "%zu of %zu trials", s->trials - s->trials_false, s->trials);
    s_goal(out, "no healthy part named bad", m, ">= 99%",
           s->trials && (double)(s->trials - s->trials_false) >= 0.99 * (double)s->trials);
    s_sum(s, s_hard, &faults, &named, &cleared, &passed, &unseen);
    if (faults) {
        snprintf(m, sizeof m, "%zu of %zu", named, faults);
        s_goal(out, "every hard node and NIC fault named", m, "all", named == faults);
    }
    s_sum(s, s_must_show, &faults, &named, &cleared, &passed, &unseen);
    if (faults) {
        snprintf(m, sizeof m, "%zu+%zu of %zu", cleared, passed, faults - unseen);
        s_goal(out, "intermittent (q >= 0.3), bursty: cleared+passed", m, "0",
               cleared + passed == 0);
        if (unseen) /* what never failed a test is out of any method's reach */
            fprintf(out, "  %-58s %zu of %zu\n", "  besides: never showed in a test of the session",
                    unseen, faults);
        s_print_lookalikes(out, s, s_must_show);
    }
    s_sum(s, s_mild, &faults, &named, &cleared, &passed, &unseen);
    if (faults) {
        snprintf(m, sizeof m, "%zu of %zu", named, faults);
        s_goal(out, "a slow node of 0.8-0.9x (the goal's 0.85x) named", m, "all", named == faults);
    }
    s_sum(s, s_leaf, &faults, &named, &cleared, &passed, &unseen);
    if (faults) {
        snprintf(m, sizeof m, "%zu of %zu", named, faults);
        s_goal(out, "a leaf fault named as the leaf", m, "all", named == faults);
    }
    if (!follow_up_goal)
        return;
    const s_kind_t *k = &s->kind[DMIX_NODE_INTERMITTENT];
    size_t in_time = 0;
    for (size_t i = 0; i < k->n_times; i++)
        in_time += k->rounds[i] <= sweeps + follow_up_goal;
    s_sum(s, s_intermittent_node, &faults, &named, &cleared, &passed, &unseen);
    snprintf(m, sizeof m, "%zu of %zu", in_time, faults);
    char goal[96];
    snprintf(goal, sizeof goal, "%u rail(s): intermittent node named within %u follow-ups", rails,
             follow_up_goal);
    s_goal(out, goal, m, ">= 95%", faults && (double)in_time >= 0.95 * (double)faults);
}
