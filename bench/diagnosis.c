/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-bench-diagnosis: seeded trials of the diagnosis session (scheduler/bisect.h, the
 * planning code the runner uses for `on_fail: bisect`) against the simulated fleet's fault model
 * (sim/faultmodel.h, what fleetburn-simfleet's agents answer from), in one process so that
 * thousands of trials run in minutes. Each trial: a fleet of N nodes with R rails on a fat tree
 * (leaves of 32 nodes, 4 spines, as fleetburn-simfleet makes up), 1 + (trial mod 8) faults of one
 * kind (more with --faults), a node-local round, then pair rounds planned by the session until it
 * is done or --rounds. After every round the bad parts named so far are compared with the truth.
 * The same trials run two baselines in the same simulator: two passes of random pairs (a node
 * failing in both is bad, as cluster-health-scanner does) and halving (test the fleet as a group,
 * split failing groups in two, down to single nodes).
 *
 *   fleetburn-bench-diagnosis --nodes N --kind hard|intermittent|slow|nic|uplink|mixed
 *       [--rails R] [--trials T] [--rounds MAX] [--sweeps S] [--cut C] [--seed S]
 *       [--false-fail F] [--faults MIN-MAX] [--no-baselines] [--pairing random|topology]
 *   fleetburn-bench-diagnosis --nodes N --faults-file FILE [--rounds MAX] [--sweeps S]
 *
 * Prints one table row per method: recall and precision at the cut (pair rounds after the
 * node-local round) and when the method ends, rounds, simulated time. With --faults-file, one
 * trial on that fault file (fleetburn-simfleet's format) prints the parts named bad and the
 * rounds, to compare with what the runner names for the same fleet through fleetburn-simfleet.
 * bench/diagnosis.sh runs the whole matrix and writes bench/results/diagnosis-<date>.txt. */
#include "common/fileload.h"
#include "common/rng.h"
#include "common/util.h"
#include "scheduler/bisect.h"
#include "sim/faultmodel.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_LEAF_SIZE 32
#define S_SPINES 4
#define S_NOMINAL 100.0 /* Gb/s of a healthy flow */
#define S_LOCAL_S 600.0 /* simulated length of the node-local round (a memtest) */
#define S_ROUND_S 60.0  /* ... and of one pair or group round */
#define S_MAX_ROUNDS 64

typedef enum { K_HARD, K_INTERMITTENT, K_SLOW, K_NIC, K_UPLINK, K_MIXED } s_kind_t;
static const char *const s_kind_names[] = {"hard",   "intermittent", "slow", "nic",
                                           "uplink", "mixed",        NULL};

typedef struct {
    unsigned nodes, rails, trials, rounds, sweeps, cut, faults_min, faults_max;
    const char *faults_file;
    s_kind_t kind;
    uint64_t seed;
    double false_fail;
    bool baselines;
    fb_pairing_t pairing;
} s_opts_t;

/* Counts over all trials of one method. */
typedef struct {
    unsigned long tp[S_MAX_ROUNDS + 1], fp[S_MAX_ROUNDS + 1], fn[S_MAX_ROUNDS + 1];
    unsigned long end_tp, end_fp, end_fn;
    unsigned *all_found; /* per trial: rounds until every fault was named (0: never) */
    unsigned *ended;     /* per trial: rounds the method ran */
    unsigned trials, perfect_at_cut;
} s_stats_t;

/* The fleet of one trial. */
typedef struct {
    const s_opts_t *o;
    unsigned n;
    char **names;
    fb_topology_t *topo;
    fb_faultmodel_t *model;
    char **truth; /* the bad parts, as the engine names them */
    size_t n_truth;
    uint64_t rng;
} s_fleet_t;

/* ---- the fleet ------------------------------------------------------------------------------ */

static char *s_topology_text(char **names, unsigned n)
{
    unsigned leaves = (n + S_LEAF_SIZE - 1) / S_LEAF_SIZE;
    size_t cap = 256 + (size_t)n * 16 + leaves * 32, len = 0;
    char *text = xmalloc(cap);
    for (unsigned l = 0; l < leaves; l++) {
        len += (size_t)snprintf(text + len, cap - len, "leaf%03u:", l + 1);
        for (unsigned i = l * S_LEAF_SIZE; i < n && i < (l + 1) * S_LEAF_SIZE; i++)
            len += (size_t)snprintf(text + len, cap - len, "%s%s", i % S_LEAF_SIZE ? "," : " ",
                                    names[i]);
        len += (size_t)snprintf(text + len, cap - len, "\n");
    }
    for (unsigned s = 0; s < S_SPINES; s++)
        len +=
            (size_t)snprintf(text + len, cap - len, "spine%02u: leaf[001-%03u]\n", s + 1, leaves);
    return text;
}

static void s_truth_add(s_fleet_t *f, char *part)
{
    f->truth = xrealloc(f->truth, (f->n_truth + 1) * sizeof *f->truth);
    f->truth[f->n_truth++] = part;
}

static bool s_is_truth(const s_fleet_t *f, const char *part)
{
    for (size_t i = 0; i < f->n_truth; i++)
        if (!strcmp(f->truth[i], part))
            return true;
    return false;
}

/* One fault of kind k on a part nobody else has; appends its fault-file line. */
static void s_place_fault(s_fleet_t *f, s_kind_t k, char **yaml, bool *taken)
{
    const s_opts_t *o = f->o;
    unsigned node;
    do
        node = (unsigned)(fb_splitmix64(&f->rng) % f->n);
    while (taken[node]);
    taken[node] = true;
    char *line = NULL, *part = NULL;
    if (k == K_HARD) {
        line = xasprintf("  - {node: %s, kind: hard}\n", f->names[node]);
        part = xstrdup(f->names[node]);
    } else if (k == K_INTERMITTENT) {
        line = xasprintf("  - {node: %s, kind: intermittent, q: 0.5}\n", f->names[node]);
        part = xstrdup(f->names[node]);
    } else if (k == K_SLOW) {
        line = xasprintf("  - {node: %s, kind: slow, factor: 0.6}\n", f->names[node]);
        part = xstrdup(f->names[node]);
    } else if (k == K_NIC) {
        unsigned rail = (unsigned)(fb_splitmix64(&f->rng) % o->rails);
        line = xasprintf("  - {nic: %s/%u, kind: hard}\n", f->names[node], rail);
        part = xasprintf("%s/mlx5_%u", f->names[node], rail);
    } else { /* a slow uplink: a leaf and a spine nobody took (node marks stand for leaves) */
        unsigned leaves = (f->n + S_LEAF_SIZE - 1) / S_LEAF_SIZE, l, s;
        do {
            l = (unsigned)(fb_splitmix64(&f->rng) % leaves);
            s = (unsigned)(fb_splitmix64(&f->rng) % S_SPINES);
        } while (taken[(l * S_SPINES + s) % f->n] && leaves * S_SPINES > 8);
        taken[(l * S_SPINES + s) % f->n] = true;
        line =
            xasprintf("  - {link: leaf%03u<->spine%02u, kind: slow, factor: 0.5}\n", l + 1, s + 1);
        part = xasprintf("leaf%03u<->spine%02u", l + 1, s + 1);
    }
    char *y = xasprintf("%s%s", *yaml, line);
    free(*yaml);
    free(line);
    *yaml = y;
    s_truth_add(f, part);
}

static int s_fleet_init(s_fleet_t *f, const s_opts_t *o, unsigned trial)
{
    memset(f, 0, sizeof *f);
    f->o = o;
    f->n = o->nodes;
    f->rng = o->seed * 1000003ULL + trial;
    int width = snprintf(NULL, 0, "%u", f->n - 1);
    f->names = xcalloc(f->n, sizeof *f->names);
    for (unsigned i = 0; i < f->n; i++)
        f->names[i] = xasprintf("sim-%0*u", width, i);
    char err[256];
    char *text = s_topology_text(f->names, f->n);
    int rc = fb_topology_parse(text, &f->topo, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "topology: %s\n", err);
        return rc;
    }
    if (o->faults_file) {
        char *error = NULL, *faults = NULL;
        size_t len = 0;
        rc = fb_load_file(o->faults_file, FB_FAULTMODEL_MAX_BYTES, &faults, &len, &error);
        if (!rc)
            rc = fb_faultmodel_parse(faults, len, o->faults_file, &f->model, &error);
        free(faults);
        if (!rc)
            rc = fb_faultmodel_bind(f->model, f->topo, &error);
        if (rc) {
            fprintf(stderr, "%s\n", error ? error : "cannot load the fault file");
            free(error);
            return rc;
        }
        for (size_t i = 0; i < fb_faultmodel_count(f->model); i++) {
            const fb_fault_t *ft = fb_faultmodel_fault(f->model, i);
            s_truth_add(f, ft->site == FB_FAULT_AT_NIC ? xasprintf("%s/mlx5_%u", ft->a, ft->rail)
                                                       : xstrdup(ft->part));
        }
        return 0;
    }
    unsigned n_faults = o->faults_min + trial % (o->faults_max - o->faults_min + 1);
    char *yaml =
        xasprintf("seed: %llu\nfalse_fail_rate: %g\nrails: %u\nfaults:\n",
                  (unsigned long long)(o->seed * 7919ULL + trial), o->false_fail, o->rails);
    bool *taken = xcalloc(f->n, sizeof *taken);
    for (unsigned i = 0; i < n_faults; i++)
        s_place_fault(f, o->kind == K_MIXED ? (s_kind_t)(i % K_MIXED) : o->kind, &yaml, taken);
    free(taken);
    char *error = NULL;
    rc = fb_faultmodel_parse(yaml, strlen(yaml), "bench", &f->model, &error);
    if (!rc)
        rc = fb_faultmodel_bind(f->model, f->topo, &error);
    if (rc)
        fprintf(stderr, "faults: %s\n%s", error ? error : "?", yaml);
    free(error);
    free(yaml);
    return rc;
}

static void s_fleet_free(s_fleet_t *f)
{
    for (unsigned i = 0; i < f->n; i++)
        free(f->names[i]);
    free(f->names);
    for (size_t i = 0; i < f->n_truth; i++)
        free(f->truth[i]);
    free(f->truth);
    fb_faultmodel_destroy(&f->model);
    fb_topology_destroy(&f->topo);
}

/* ---- running tests in the simulator --------------------------------------------------------- */

static int s_rail_index(const char *rail)
{
    return rail ? atoi(rail + strlen("mlx5_")) : -1;
}

/* A test's verdict from the fault model. */
static bool s_judge(const s_fleet_t *f, const char *id, const char *const *m, size_t n, int rail)
{
    fb_sim_test_t t = {id, m, n, rail};
    fb_sim_outcome_t out;
    fb_faultmodel_judge(f->model, &t, &out);
    return out.failed;
}

/* What the member at m measures on the flow src -> dst: nominal x slow factors x +-1 % jitter. */
static double s_measure(const s_fleet_t *f, const char *id, const char *src, const char *dst,
                        int rail, const char *who)
{
    char *key = xasprintf("%s@%s", id, who);
    double u = fb_faultmodel_uniform(f->model, key, src);
    free(key);
    return S_NOMINAL * fb_faultmodel_flow_factor(f->model, src, dst, rail) *
           (1.0 + 0.01 * (2 * u - 1));
}

/* The minimum bandwidth of a pair (the baselines' one number per pair). */
static double s_pair_bw(const s_fleet_t *f, const char *id, const char *a, const char *b, int rail)
{
    double x = s_measure(f, id, a, b, rail, a), y = s_measure(f, id, b, a, rail, b);
    return x < y ? x : y;
}

/* ---- scoring ----------------------------------------------------------------------------------
 */

static void s_score(const s_fleet_t *f, char **named, size_t n_named, unsigned long *tp,
                    unsigned long *fp, unsigned long *fn)
{
    unsigned long t = 0;
    for (size_t i = 0; i < n_named; i++) {
        if (s_is_truth(f, named[i]))
            t++;
        else
            (*fp)++;
    }
    *tp += t;
    *fn += f->n_truth - t;
}

static size_t s_named(const fb_bisect_t *b, char ***out)
{
    return fb_bisect_bad(b, out);
}

static void s_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void s_account(s_stats_t *st, unsigned trial, unsigned round, const s_fleet_t *f,
                      char **named, size_t n_named)
{
    unsigned long tp = 0, fp = 0, fn = 0;
    s_score(f, named, n_named, &tp, &fp, &fn);
    st->tp[round] += tp;
    st->fp[round] += fp;
    st->fn[round] += fn;
    if (fn == 0 && !st->all_found[trial])
        st->all_found[trial] = round ? round : S_MAX_ROUNDS + 1; /* +1: found before pairs */
}

/* Carries the last round's counts to the rounds a method no longer ran. */
static void s_carry(s_stats_t *st, unsigned from, unsigned long tp, unsigned long fp,
                    unsigned long fn)
{
    for (unsigned r = from; r <= S_MAX_ROUNDS; r++) {
        st->tp[r] += tp;
        st->fp[r] += fp;
        st->fn[r] += fn;
    }
}

/* ---- the engine --------------------------------------------------------------------------------
 */

static const char *s_route(void *arg, const char *src, const char *dst)
{
    return fb_faultmodel_spine(arg, src, dst);
}

/* FB_BENCH_DEBUG=1: every verdict of a trial, and the truth. */
static void s_debug(const s_fleet_t *f, const fb_bisect_t *b, unsigned trial, unsigned rounds)
{
    fprintf(stderr, "trial %u after %u rounds: truth", trial, rounds);
    for (size_t i = 0; i < f->n_truth; i++)
        fprintf(stderr, " %s", f->truth[i]);
    fprintf(stderr, "\n");
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    for (size_t i = 0; i < n; i++) {
        if (v[i].state == FB_BISECT_CLEARED && !getenv("FB_BENCH_DEBUG_ALL"))
            continue;
        bool truth = s_is_truth(f, v[i].part);
        const char *mark =
            v[i].state == FB_BISECT_BAD ? (truth ? "  " : "FP") : (truth ? "FN" : "  ");
        fprintf(stderr, "%s %-9s %-22s %s %.4f %s\n", mark, fb_bisect_state_name(v[i].state),
                v[i].part, v[i].kind, v[i].confidence, v[i].summary);
        for (size_t k = 0; getenv("FB_BENCH_DEBUG_ALL") && k < v[i].n_evidence; k++)
            fprintf(stderr, "      %s: %s\n", v[i].evidence[k].test_id, v[i].evidence[k].what);
    }
    fb_bisect_verdicts_free(&v, n);
}

static void s_run_engine(const s_opts_t *o, s_fleet_t *f, unsigned trial, s_stats_t *st)
{
    fb_bisect_opts_t bo;
    fb_bisect_opts_default(&bo);
    bo.pairing = o->pairing;
    bo.topology = f->topo;
    bo.route = s_route;
    bo.route_arg = f->model;
    bo.seed = o->seed * 31 + trial;
    bo.sweeps = o->sweeps;
    bo.max_rounds = o->rounds > o->sweeps ? o->rounds - o->sweeps : 0;
    fb_bisect_t *b = fb_bisect_new(&bo);
    char *rails = xstrdup("");
    for (unsigned r = 0; r < o->rails; r++) {
        char *x = xasprintf("%s%smlx5_%u", rails, r ? "," : "", r);
        free(rails);
        rails = x;
    }
    for (unsigned i = 0; i < f->n; i++)
        fb_bisect_add_node(b, f->names[i], rails);
    free(rails);
    /* the node-local round */
    for (unsigned i = 0; i < f->n; i++) {
        char *id = xasprintf("t%u.local.%s", trial, f->names[i]);
        const char *m[1] = {f->names[i]};
        fb_bisect_record_local(b, id, f->names[i], s_judge(f, id, m, 1, -1));
        free(id);
    }
    char **named;
    size_t n_named = s_named(b, &named);
    s_account(st, trial, 0, f, named, n_named);
    s_names_free(named, n_named);
    unsigned round = 0;
    fb_bisect_round_t rd;
    while (round < o->rounds && fb_bisect_next(b, &rd) == 1) {
        round++;
        for (size_t i = 0; i < rd.n_tests; i++) {
            const fb_bisect_test_t *t = &rd.tests[i];
            char *id = xasprintf("t%u.r%u.%zu", trial, round, i);
            const char *a = t->members[0], *c = t->members[1];
            int rail = s_rail_index(t->rail);
            fb_bisect_flow_t flows[4] = {
                {a, c, s_measure(f, id, a, c, rail, a)},
                {c, a, s_measure(f, id, c, a, rail, a)},
                {c, a, s_measure(f, id, c, a, rail, c)},
                {a, c, s_measure(f, id, a, c, rail, c)},
            };
            fb_bisect_result_t r = {id,
                                    (long)i,
                                    (const char *const *)t->members,
                                    2,
                                    t->rail,
                                    true,
                                    s_judge(f, id, (const char *const *)t->members, 2, rail),
                                    flows,
                                    4,
                                    NULL,
                                    0};
            fb_bisect_record(b, &r);
            free(id);
        }
        fb_bisect_round_clear(&rd);
        n_named = s_named(b, &named);
        s_account(st, trial, round, f, named, n_named);
        s_names_free(named, n_named);
    }
    fb_bisect_round_clear(&rd);
    n_named = s_named(b, &named);
    unsigned long tp = 0, fp = 0, fn = 0;
    s_score(f, named, n_named, &tp, &fp, &fn);
    if (getenv("FB_BENCH_STATS")) { /* how often a rail that is not bad fails again */
        static unsigned long hist[8];
        fb_diag_verdict_t *dv;
        size_t nv = fb_diag_verdicts(fb_bisect_diag(b), &dv);
        for (size_t i = 0; i < nv; i++)
            if (dv[i].parent && dv[i].n_failed && !s_is_truth(f, dv[i].suspect) &&
                !s_is_truth(f, dv[i].parent))
                hist[dv[i].n_failed < 7 ? dv[i].n_failed : 7]++;
        free(dv);
        fprintf(stderr, "rail suspects by failures: 1:%lu 2:%lu 3:%lu 4+:%lu\n", hist[1], hist[2],
                hist[3], hist[4] + hist[5] + hist[6] + hist[7]);
    }
    const char *debug = getenv("FB_BENCH_DEBUG");
    if (debug && (strcmp(debug, "wrong") || fp || fn))
        s_debug(f, b, trial, round);
    st->end_tp += tp;
    st->end_fp += fp;
    st->end_fn += fn;
    s_carry(st, round + 1, tp, fp, fn);
    s_names_free(named, n_named);
    st->ended[trial] = round;
    fb_bisect_destroy(&b);
}

/* ---- baseline: two passes of random pairs ------------------------------------------------------
 */

static void s_shuffle(unsigned *v, unsigned n, uint64_t *rng)
{
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)(fb_splitmix64(rng) % i), t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static double s_median(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++) { /* insertion sort is plenty for one trial */
        double x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    return n ? v[n / 2] : NAN;
}

/* A pair is bad when its test fails or (slow kinds) its bandwidth is below 0.8 of the median. */
static void s_pass(const s_fleet_t *f, const char *tag, const unsigned *a, const unsigned *b,
                   unsigned n, bool *bad)
{
    double *bw = xmalloc((n + 1) * sizeof *bw), *sorted = xmalloc((n + 1) * sizeof *sorted);
    for (unsigned i = 0; i < n; i++) {
        char *id = xasprintf("%s.%u", tag, i);
        const char *m[2] = {f->names[a[i]], f->names[b[i]]};
        bad[i] = s_judge(f, id, m, 2, -1);
        bw[i] = sorted[i] = s_pair_bw(f, id, m[0], m[1], -1);
        free(id);
    }
    double med = s_median(sorted, n);
    for (unsigned i = 0; i < n; i++)
        bad[i] |= bw[i] < 0.8 * med;
    free(bw);
    free(sorted);
}

static void s_run_two_pass(const s_opts_t *o, s_fleet_t *f, unsigned trial, s_stats_t *st)
{
    uint64_t rng = o->seed * 7 + trial;
    unsigned n = f->n, *perm = xmalloc(n * sizeof *perm);
    for (unsigned i = 0; i < n; i++)
        perm[i] = i;
    s_shuffle(perm, n, &rng);
    unsigned np = n / 2, *a = xmalloc(np * sizeof *a), *b = xmalloc(np * sizeof *b);
    for (unsigned i = 0; i < np; i++) {
        a[i] = perm[2 * i];
        b[i] = perm[2 * i + 1];
    }
    bool *bad1 = xcalloc(np + 1, sizeof *bad1), *sus = xcalloc(n, sizeof *sus);
    char tag[64];
    snprintf(tag, sizeof tag, "t%u.two.1", trial);
    s_pass(f, tag, a, b, np, bad1);
    unsigned *good = xmalloc(n * sizeof *good), n_good = 0, *s = xmalloc(n * sizeof *s), n_s = 0;
    for (unsigned i = 0; i < np; i++) {
        if (bad1[i]) {
            sus[a[i]] = sus[b[i]] = true;
            s[n_s++] = a[i];
            s[n_s++] = b[i];
        } else {
            good[n_good++] = a[i];
            good[n_good++] = b[i];
        }
    }
    s_shuffle(good, n_good, &rng);
    unsigned n2 = n_s < n_good ? n_s : n_good;
    bool *bad2 = xcalloc(n2 + 1, sizeof *bad2);
    snprintf(tag, sizeof tag, "t%u.two.2", trial);
    s_pass(f, tag, s, good, n2, bad2);
    char **named = xcalloc(n2 + 1, sizeof *named);
    size_t n_named = 0;
    for (unsigned i = 0; i < n2; i++)
        if (bad2[i])
            named[n_named++] = xstrdup(f->names[s[i]]);
    unsigned long tp = 0, fp = 0, fn = 0;
    s_score(f, named, n_named, &tp, &fp, &fn);
    st->end_tp += tp;
    st->end_fp += fp;
    st->end_fn += fn;
    s_carry(st, 2, tp, fp, fn);
    st->ended[trial] = 2;
    if (fn == 0)
        st->all_found[trial] = 2;
    s_names_free(named, n_named);
    free(perm);
    free(a);
    free(b);
    free(bad1);
    free(bad2);
    free(sus);
    free(good);
    free(s);
}

/* ---- baseline: halving -------------------------------------------------------------------------
 */

typedef struct {
    unsigned *v;
    unsigned n;
} s_grp_t;

/* A group fails when its test fails or (slow kinds) its ring is below 0.8 of nominal. */
static bool s_group_bad(const s_fleet_t *f, const char *id, const s_grp_t *g)
{
    const char **m = xmalloc(g->n * sizeof *m);
    for (unsigned i = 0; i < g->n; i++)
        m[i] = f->names[g->v[i]];
    fb_sim_test_t t = {id, m, g->n, -1};
    fb_sim_outcome_t out;
    fb_faultmodel_judge(f->model, &t, &out);
    free(m);
    return out.failed || out.factor < 0.8;
}

static void s_run_halving(const s_opts_t *o, s_fleet_t *f, unsigned trial, s_stats_t *st)
{
    s_grp_t *cur = xcalloc(1, sizeof *cur);
    size_t n_cur = 1;
    cur[0].v = xmalloc(f->n * sizeof *cur[0].v);
    cur[0].n = f->n;
    for (unsigned i = 0; i < f->n; i++)
        cur[0].v[i] = i;
    char **named = xcalloc(f->n + 1, sizeof *named);
    size_t n_named = 0;
    unsigned round = 0;
    while (n_cur && round < S_MAX_ROUNDS) {
        round++;
        s_grp_t *next = xcalloc(2 * n_cur + 1, sizeof *next);
        size_t n_next = 0;
        for (size_t g = 0; g < n_cur; g++) {
            char *id = xasprintf("t%u.half.%u.%zu", trial, round, g);
            bool bad = s_group_bad(f, id, &cur[g]);
            free(id);
            if (!bad) {
                free(cur[g].v);
                continue;
            }
            if (cur[g].n == 1) {
                named[n_named++] = xstrdup(f->names[cur[g].v[0]]);
                free(cur[g].v);
                continue;
            }
            unsigned h = cur[g].n / 2;
            next[n_next].v = xmalloc(h * sizeof(unsigned));
            memcpy(next[n_next].v, cur[g].v, h * sizeof(unsigned));
            next[n_next++].n = h;
            next[n_next].v = xmalloc((cur[g].n - h) * sizeof(unsigned));
            memcpy(next[n_next].v, cur[g].v + h, (cur[g].n - h) * sizeof(unsigned));
            next[n_next++].n = cur[g].n - h;
            free(cur[g].v);
        }
        free(cur);
        cur = next;
        n_cur = n_next;
    }
    for (size_t g = 0; g < n_cur; g++)
        free(cur[g].v);
    free(cur);
    unsigned long tp = 0, fp = 0, fn = 0;
    s_score(f, named, n_named, &tp, &fp, &fn);
    st->end_tp += tp;
    st->end_fp += fp;
    st->end_fn += fn;
    s_carry(st, round + 1 > S_MAX_ROUNDS ? S_MAX_ROUNDS : round + 1, tp, fp, fn);
    st->ended[trial] = round;
    if (fn == 0)
        st->all_found[trial] = round;
    s_names_free(named, n_named);
    (void)o;
}

/* ---- report -------------------------------------------------------------------------------------
 */

static int s_cmp_u(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

static double s_ratio(unsigned long a, unsigned long b)
{
    return b ? (double)a / (double)b : NAN;
}

static void s_print(const s_opts_t *o, const char *method, s_stats_t *st, bool local_round)
{
    unsigned c = o->cut;
    double rc = s_ratio(st->tp[c], st->tp[c] + st->fn[c]),
           pc = s_ratio(st->tp[c], st->tp[c] + st->fp[c]);
    double re = s_ratio(st->end_tp, st->end_tp + st->end_fn),
           pe = s_ratio(st->end_tp, st->end_tp + st->end_fp);
    unsigned *found = xmalloc(st->trials * sizeof *found), n_found = 0, never = 0;
    for (unsigned i = 0; i < st->trials; i++) {
        if (!st->all_found[i])
            never++;
        else
            found[n_found++] = st->all_found[i] > S_MAX_ROUNDS ? 0 : st->all_found[i];
    }
    qsort(found, n_found, sizeof *found, s_cmp_u);
    qsort(st->ended, st->trials, sizeof *st->ended, s_cmp_u);
    unsigned end_med = st->ended[st->trials / 2], end_max = st->ended[st->trials - 1];
    char found_s[48];
    if (n_found)
        snprintf(found_s, sizeof found_s, "%u/%u%s", found[n_found / 2], found[n_found - 1],
                 never ? "+" : "");
    else
        snprintf(found_s, sizeof found_s, "never");
    double sim_s = (local_round ? S_LOCAL_S : 0.0) + S_ROUND_S * end_med;
    char v[4][16];
    const double vals[4] = {rc, pc, re, pe};
    for (int i = 0; i < 4; i++) /* "-": nothing to divide (a baseline judged only at its end) */
        if (isnan(vals[i]))
            snprintf(v[i], sizeof v[i], "%6s", "-");
        else
            snprintf(v[i], sizeof v[i], "%6.4f", vals[i]);
    printf("%-5u %-2u %-13s %-10s %6u %9lu  %s %s  %s %s  %-9s %3u/%-3u %7.0f\n", o->nodes,
           o->rails, s_kind_names[o->kind], method, st->trials, st->end_tp + st->end_fn, v[0], v[1],
           v[2], v[3], found_s, end_med, end_max, sim_s);
    free(found);
}

static void s_stats_init(s_stats_t *st, unsigned trials)
{
    memset(st, 0, sizeof *st);
    st->trials = trials;
    st->all_found = xcalloc(trials, sizeof *st->all_found);
    st->ended = xcalloc(trials, sizeof *st->ended);
}

static void s_stats_free(s_stats_t *st)
{
    free(st->all_found);
    free(st->ended);
}

/* --faults-file: one trial on the given fleet; prints the truth, what was named, and when. */
static int s_one_file(s_opts_t *o)
{
    o->trials = 1;
    s_fleet_t f;
    if (s_fleet_init(&f, o, 0))
        return 3;
    o->rails = fb_faultmodel_rails(f.model);
    s_stats_t st;
    s_stats_init(&st, 1);
    s_run_engine(o, &f, 0, &st);
    printf("truth:");
    for (size_t i = 0; i < f.n_truth; i++)
        printf(" %s", f.truth[i]);
    printf("\nnamed after %u rounds (every fault after %u): tp %lu fp %lu fn %lu\n", st.ended[0],
           st.all_found[0] > S_MAX_ROUNDS ? 0 : st.all_found[0], st.end_tp, st.end_fp, st.end_fn);
    s_stats_free(&st);
    s_fleet_free(&f);
    return 0;
}

static void s_usage(FILE *out)
{
    fprintf(out, "usage: fleetburn-bench-diagnosis --nodes N --kind hard|intermittent|slow|nic|"
                 "uplink|mixed\n"
                 "       [--rails R] [--trials T] [--rounds MAX] [--sweeps S] [--cut C] "
                 "[--seed S]\n"
                 "       [--false-fail F] [--faults MIN-MAX] [--pairing random|topology] "
                 "[--no-baselines] [--header]\n");
}

static int s_parse(int argc, char **argv, s_opts_t *o, bool *header)
{
    *o = (s_opts_t){.nodes = 256,
                    .rails = 8,
                    .trials = 100,
                    .rounds = 12,
                    .sweeps = 2,
                    .cut = 3,
                    .faults_min = 1,
                    .faults_max = 8,
                    .kind = K_HARD,
                    .seed = 1,
                    .false_fail = 0.01,
                    .baselines = true,
                    .pairing = FB_PAIRING_TOPOLOGY};
    static const struct option opts[] = {
        {"nodes", 1, 0, 'n'},  {"rails", 1, 0, 'R'},        {"trials", 1, 0, 't'},
        {"rounds", 1, 0, 'r'}, {"sweeps", 1, 0, 's'},       {"cut", 1, 0, 'c'},
        {"seed", 1, 0, 'S'},   {"false-fail", 1, 0, 'f'},   {"faults", 1, 0, 'F'},
        {"kind", 1, 0, 'k'},   {"no-baselines", 0, 0, 'B'}, {"pairing", 1, 0, 'p'},
        {"header", 0, 0, 'H'}, {"help", 0, 0, 'h'},         {"faults-file", 1, 0, 'x'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            o->nodes = (unsigned)atoi(optarg);
            break;
        case 'R':
            o->rails = (unsigned)atoi(optarg);
            break;
        case 't':
            o->trials = (unsigned)atoi(optarg);
            break;
        case 'r':
            o->rounds = (unsigned)atoi(optarg);
            break;
        case 's':
            o->sweeps = (unsigned)atoi(optarg);
            break;
        case 'c':
            o->cut = (unsigned)atoi(optarg);
            break;
        case 'S':
            o->seed = strtoull(optarg, NULL, 10);
            break;
        case 'f':
            o->false_fail = atof(optarg);
            break;
        case 'x':
            o->faults_file = optarg;
            break;
        case 'F':
            if (sscanf(optarg, "%u-%u", &o->faults_min, &o->faults_max) != 2)
                o->faults_min = o->faults_max = (unsigned)atoi(optarg);
            break;
        case 'k': {
            int k = 0;
            while (s_kind_names[k] && strcmp(s_kind_names[k], optarg))
                k++;
            if (!s_kind_names[k])
                return -EINVAL;
            o->kind = (s_kind_t)k;
            break;
        }
        case 'p':
            o->pairing = !strcmp(optarg, "random") ? FB_PAIRING_RANDOM : FB_PAIRING_TOPOLOGY;
            break;
        case 'B':
            o->baselines = false;
            break;
        case 'H':
            *header = true;
            break;
        case 'h':
            s_usage(stdout);
            exit(0);
        default:
            return -EINVAL;
        }
    }
    if (o->nodes < 4 || o->rails < 1 || o->rails > 64 || o->trials < 1 || o->rounds < 1 ||
        o->rounds > S_MAX_ROUNDS || o->cut > S_MAX_ROUNDS || o->sweeps < 1 || o->faults_min < 1 ||
        o->faults_max < o->faults_min || o->faults_max * 2 > o->nodes)
        return -EINVAL;
    return 0;
}

int main(int argc, char **argv)
{
    s_opts_t o;
    bool header = false;
    if (s_parse(argc, argv, &o, &header)) {
        s_usage(stderr);
        return 2;
    }
    if (header)
        printf("%-5s %-2s %-13s %-10s %6s %9s  %-13s  %-13s  %-9s %-7s %7s\n", "N", "R", "kind",
               "method", "trials", "faults", "recall prec@C", "recall prec", "found@", "rounds",
               "sim_s");
    if (o.faults_file)
        return s_one_file(&o);
    s_stats_t eng, two, half;
    s_stats_init(&eng, o.trials);
    s_stats_init(&two, o.trials);
    s_stats_init(&half, o.trials);
    double t0 = fb_mono_s();
    for (unsigned t = 0; t < o.trials; t++) {
        s_fleet_t f;
        if (s_fleet_init(&f, &o, t))
            return 3;
        s_run_engine(&o, &f, t, &eng);
        if (o.baselines) {
            s_run_two_pass(&o, &f, t, &two);
            s_run_halving(&o, &f, t, &half);
        }
        s_fleet_free(&f);
    }
    char label[32];
    snprintf(label, sizeof label, "engine@%u", o.cut);
    s_print(&o, label, &eng, true);
    if (o.baselines) {
        s_print(&o, "two-pass", &two, false);
        s_print(&o, "halving", &half, false);
    }
    fflush(stdout);
    fprintf(stderr, "%u trials in %.1f s\n", o.trials, fb_mono_s() - t0);
    s_stats_free(&eng);
    s_stats_free(&two);
    s_stats_free(&half);
    return 0;
}
