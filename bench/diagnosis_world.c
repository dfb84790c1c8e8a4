/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-bench-diagnosis: the simulated world of one trial. Its fleet (names, leaves and
 * spines, the faults drawn from the mix or read from --faults-file, loaded into the simulator's
 * fault model), one test in it as the runner would see it (the members' verdicts through
 * fb_group_verdict, their flows with the simulator's noise, lost results), the clock of a round,
 * and --check-world, which measures the world against what the options promise. Separate from
 * the methods run on it (diagnosis_methods.c): this is the truth and the measuring, the same for
 * every method. */
#include "diagnosis_internal.h"

#include "common/fileload.h"
#include "common/rng.h"
#include "common/util.h"
#include "scheduler/stage.h"
#include "sim/simfabric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NOMINAL 100.0 /* Gb/s of a healthy flow */

/* ---- the fleet ------------------------------------------------------------------------------ */

/* The world's top-level keys as fault-file text. */
static char *s_world_keys(const dbench_opts_t *o, unsigned trial)
{
    char *noise = o->noise_sigma > 0 ? xasprintf("{dist: lognormal, sigma: %g}", o->noise_sigma)
                                     : xasprintf("{dist: uniform, width: %g}", o->noise_width);
    char *text = xasprintf("seed: %llu\nfalse_fail_rate: %g\nlost_rate: %g\ndisagree_rate: %g\n"
                           "noise: %s\nrails: %u\nfaults:\n",
                           (unsigned long long)(o->seed * 7919ULL + trial), o->false_fail, o->lost,
                           o->disagree, noise, o->rails);
    free(noise);
    return text;
}

static int s_load_model(dbench_fleet_t *f, const char *text, size_t len, const char *source)
{
    char *error = NULL;
    int rc = fb_faultmodel_parse(text, len, source, &f->model, &error);
    if (!rc)
        rc = fb_faultmodel_bind(f->model, f->topo, &error);
    if (rc)
        fprintf(stderr, "%s\n", error ? error : "cannot load the faults");
    free(error);
    return rc;
}

/* The truth of a fault file given with --faults-file, in the benchmark's types. */
static void s_truth_from_file(dbench_fleet_t *f)
{
    for (size_t i = 0; i < fb_faultmodel_count(f->model); i++) {
        const fb_fault_t *ft = fb_faultmodel_fault(f->model, i);
        if (ft->kind == FB_FAULT_NOISY)
            continue;
        dmix_type_t t = DMIX_NODE_HARD;
        bool bursty = ft->burst_s > 0, hard = ft->kind == FB_FAULT_HARD;
        if (ft->site == FB_FAULT_AT_NODE)
            t = ft->kind == FB_FAULT_SLOW
                    ? (ft->factor < 0.8 ? DMIX_NODE_SLOW : DMIX_NODE_SLOW_MILD)
                : hard   ? DMIX_NODE_HARD
                : bursty ? DMIX_NODE_BURSTY
                         : DMIX_NODE_INTERMITTENT;
        else if (ft->site == FB_FAULT_AT_NIC)
            t = hard ? DMIX_NIC_HARD : bursty ? DMIX_NIC_BURSTY : DMIX_NIC_INTERMITTENT;
        else if (ft->site == FB_FAULT_AT_LEAF)
            t = hard ? DMIX_LEAF_HARD : DMIX_LEAF_INTERMITTENT;
        else
            t = DMIX_UPLINK_SLOW;
        dmix_world_t *w = &f->world;
        w->faults = xrealloc(w->faults, (w->n_faults + 1) * sizeof *w->faults);
        dmix_fault_t *d = &w->faults[w->n_faults++];
        memset(d, 0, sizeof *d);
        d->type = t;
        d->category = "fault file";
        d->q = ft->q;
        d->factor = ft->factor;
        d->burst_s = ft->burst_s;
        if (ft->site == FB_FAULT_AT_NIC)
            d->part = xasprintf("%s/mlx5_%u", ft->a, ft->rail);
        else
            d->part = xstrdup(ft->part);
        if (ft->site == FB_FAULT_AT_NODE || ft->site == FB_FAULT_AT_NIC) {
            d->node = xstrdup(ft->a);
            const char *leaf = fb_topology_leaf_of(f->topo, ft->a);
            d->leaf = leaf ? xstrdup(leaf) : NULL;
        } else {
            d->leaf =
                xstrdup(ft->site == FB_FAULT_AT_LEAF || !strncmp(ft->a, "leaf", 4) ? ft->a : ft->b);
        }
    }
}

/* Which fault of the world each fault of the model is: the model holds the world's faults in
 * its order (from its fault-file text or s_truth_from_file), noisy nodes aside. */
static void s_map_faults(dbench_fleet_t *f)
{
    size_t n = fb_faultmodel_count(f->model), w = 0;
    f->world_of = xcalloc(n + 1, sizeof *f->world_of);
    for (size_t i = 0; i < n; i++)
        f->world_of[i] =
            fb_faultmodel_fault(f->model, i)->kind == FB_FAULT_NOISY || w >= f->world.n_faults
                ? -1
                : (int)w++;
    f->showed = xcalloc(f->world.n_faults + 1, sizeof *f->showed);
}

int dbench__fleet_init(dbench_fleet_t *f, const dbench_opts_t *o, unsigned trial)
{
    memset(f, 0, sizeof *f);
    f->o = o;
    f->n = o->nodes;
    f->rails = o->rails;
    int width = snprintf(NULL, 0, "%u", f->n - 1);
    f->names = xcalloc(f->n, sizeof *f->names);
    for (unsigned i = 0; i < f->n; i++)
        f->names[i] = xasprintf("sim-%0*u", width, i); /* as fleetburn-simfleet names them */
    char err[256];
    char *text = fb_simfabric_text(f->names, f->n, DBENCH_LEAF_SIZE, DBENCH_SPINES, 3);
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
        if (rc)
            fprintf(stderr, "%s\n", error);
        free(error);
        if (!rc)
            rc = s_load_model(f, faults, len, o->faults_file);
        free(faults);
        if (!rc) {
            f->rails = fb_faultmodel_rails(f->model);
            s_truth_from_file(f);
        }
    } else {
        uint64_t rng = fb_mix64(o->seed * 1000003ULL + trial);
        dmix_fabric_t fab = {f->names, f->n, f->rails, DBENCH_LEAF_SIZE, DBENCH_SPINES};
        rc = dmix_draw(&o->mix, &fab, &rng, &f->world);
        if (rc)
            fprintf(stderr, "cannot place the faults of trial %u\n", trial);
        char *keys = s_world_keys(o, trial);
        char *yaml = rc ? NULL : xasprintf("%s%s", keys, f->world.yaml);
        if (!rc)
            rc = s_load_model(f, yaml, strlen(yaml), "bench");
        free(keys);
        free(yaml);
    }
    if (!rc)
        s_map_faults(f);
    f->rails_csv = xstrdup("");
    for (unsigned r = 0; r < f->rails; r++) {
        char *x = xasprintf("%s%smlx5_%u", f->rails_csv, r ? "," : "", r);
        free(f->rails_csv);
        f->rails_csv = x;
    }
    return rc;
}

void dbench__fleet_free(dbench_fleet_t *f)
{
    for (unsigned i = 0; i < f->n; i++)
        free(f->names[i]);
    free(f->names);
    free(f->rails_csv);
    free(f->world_of);
    free(f->showed);
    dmix_world_free(&f->world);
    fb_faultmodel_destroy(&f->model);
    fb_topology_destroy(&f->topo);
}

/* ---- one test in the simulator -------------------------------------------------------------- */

/* A measurement as the member `who` reports it (simtask.c's key and salts). */
static double s_measure(const dbench_fleet_t *f, const char *id, const char *who, const char *src,
                        const char *dst, int rail, const char *what)
{
    char *key = xasprintf("%s@%s", id, who);
    const char *ends[2] = {src, dst};
    double v = S_NOMINAL * fb_faultmodel_flow_factor(f->model, src, dst, rail) *
               fb_faultmodel_noise(f->model, key, what, ends, 2);
    free(key);
    return v;
}

static int s_cmp_name(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(char *const *)elem);
}

int dbench__node_index(const dbench_fleet_t *f, const char *name)
{
    /* the names are zero-padded numbers (sim-0000 ...): in order */
    char *const *hit = bsearch(name, f->names, f->n, sizeof *f->names, s_cmp_name);
    return hit ? (int)(hit - f->names) : -1;
}

/* Runs the test over m[0..n) (n = 1 or 2) on rail at simulated time t. */
void dbench__run_test(const dbench_fleet_t *f, const char *id, const char *const *m, size_t n,
                      int rail, double t, dbench_result_t *out)
{
    memset(out, 0, sizeof *out);
    out->min_bw = NAN;
    fb_sim_test_t test = {id, m, n, n > 1 ? rail : -1};
    fb_sim_outcome_t o;
    fb_faultmodel_judge_at(f->model, &test, t, &o);
    for (size_t c = 0; c < o.n_causes && c < FB_SIM_CAUSES_MAX; c++)
        if (f->world_of[o.causes[c]] >= 0)
            f->showed[f->world_of[o.causes[c]]] = true;
    fb_verdict_t v[2] = {FB_VERDICT_NONE, FB_VERDICT_NONE};
    for (size_t k = 0; k < n; k++) {
        if (fb_faultmodel_lost(f->model, id, m[k])) {
            out->lost = true;
            continue;
        }
        v[k] = fb_sim_member_failed(&o, m[k]) ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
        if (n < 2)
            continue;
        const char *me = m[k], *peer = m[1 - k];
        double tx = s_measure(f, id, me, me, peer, rail, "tx");
        double rx = s_measure(f, id, me, peer, me, rail, "rx");
        out->flows[out->n_flows++] = (fb_bisect_flow_t){me, peer, tx};
        out->flows[out->n_flows++] = (fb_bisect_flow_t){peer, me, rx};
        double lo = tx < rx ? tx : rx;
        out->min_bw = isnan(out->min_bw) || lo < out->min_bw ? lo : out->min_bw;
    }
    fb_verdict_t g = fb_group_verdict(v, n, NULL);
    out->judged = g == FB_VERDICT_FAIL || g == FB_VERDICT_PASS;
    out->failed = g == FB_VERDICT_FAIL;
}

/* How long a round lasts: its tests, or until the deadline when a result was lost. */
double dbench__round_s(const dbench_opts_t *o, double test_s, bool lost)
{
    if (!lost)
        return test_s;
    return (double)fb_stage_deadline_ms((uint64_t)(o->timeout_factor * test_s * 1000.0)) / 1000.0;
}

/* ---- the world's own statistics (--check-world) ------------------------------------------- */

typedef struct {
    const char *what;
    double measured, expected, bound;
} s_check_t;

static bool s_check_print(const s_check_t *c)
{
    bool ok = fabs(c->measured - c->expected) <= c->bound;
    printf("  %-46s %10.5f %10.5f +- %-9.5f %s\n", c->what, c->measured, c->expected, c->bound,
           ok ? "ok" : "OFF");
    return ok;
}

/* A binomial share: k of n against p, within 6 standard deviations (+ one count). */
static s_check_t s_share(const char *what, size_t k, size_t n, double p)
{
    double sd = sqrt(p * (1 - p) / (double)(n ? n : 1));
    return (s_check_t){what, n ? (double)k / (double)n : 0, p, 6 * sd + 1.0 / (double)(n ? n : 1)};
}

/* The fault mix: shares of the types over many draws, second faults and noisy nodes. */
static bool s_check_mix(const dbench_opts_t *o, const dbench_fleet_t *f)
{
    size_t counts[DMIX_N] = {0}, first = 0, node_faults = 0, seconds = 0, noisy = 0, others = 0;
    for (unsigned trial = 0; trial < 4000; trial++) {
        uint64_t rng = fb_mix64(o->seed * 1000003ULL + trial);
        dmix_fabric_t fab = {f->names, f->n, f->rails, DBENCH_LEAF_SIZE, DBENCH_SPINES};
        dmix_world_t w;
        if (dmix_draw(&o->mix, &fab, &rng, &w))
            return false;
        for (size_t i = 0; i < w.n_faults; i++) {
            bool second = w.faults[i].second;
            seconds += second;
            if (second)
                continue;
            counts[w.faults[i].type]++;
            first++;
            node_faults += dmix_type_site(w.faults[i].type) == DMIX_AT_NODE;
        }
        noisy += w.n_noisy;
        others += f->n - w.n_faults;
        dmix_world_free(&w);
    }
    bool ok = true;
    for (int t = 0; t < DMIX_N && o->mix.only < 0; t++) {
        char what[64];
        snprintf(what, sizeof what, "share of %s", dmix_type_name((dmix_type_t)t));
        s_check_t c = s_share(what, counts[t], first, dmix_type_share((dmix_type_t)t));
        ok &= s_check_print(&c);
    }
    s_check_t c =
        s_share("node faults with a second fault", seconds, node_faults, o->mix.second_share);
    ok &= s_check_print(&c);
    /* noisy nodes are drawn among the nodes without faults (about f->n - faults of them) */
    c = s_share("noisy share of the other nodes", noisy, others, o->mix.noisy_share);
    c.bound *= 1.2;
    ok &= s_check_print(&c);
    return ok;
}

/* The simulator's rates over healthy pair tests: false fails (with disagreement), lost results,
 * the noise's sigma. */
static bool s_check_rates(const dbench_opts_t *o, const dbench_fleet_t *f)
{
    size_t n = 200000, failed = 0, members = 0, lost = 0, flows = 0;
    double s1 = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        char id[48];
        snprintf(id, sizeof id, "check.%zu", i);
        const char *m[2] = {f->names[0], f->names[1]}; /* a healthy pair: no faults here */
        dbench_result_t r;
        dbench__run_test(f, id, m, 2, (int)(i % f->rails), 0.0, &r);
        failed += r.judged && r.failed;
        members += 2;
        lost += 2 - r.n_flows / 2; /* every member that reported gave two flows */
        for (size_t k = 0; k < r.n_flows; k++, flows++) {
            double x = log(r.flows[k].value / S_NOMINAL);
            s1 += x;
            s2 += x * x;
        }
    }
    /* The runner takes a failure from either member; a lost member's is not heard. A spurious
     * failure (f) fails the test unless both members are lost, or one disagrees (d) and the other
     * is lost; a passing test fails when one member disagrees and is heard. */
    double f_ = o->false_fail, d = o->disagree, l = o->lost;
    double p_fail = f_ * ((1 - d) * (1 - l * l) + d * (1 - l)) + (1 - f_) * d * (1 - l);
    bool ok = true;
    s_check_t c = s_share("healthy pair tests failed", failed, n, p_fail);
    ok &= s_check_print(&c);
    c = s_share("member results lost", lost, members, o->lost);
    ok &= s_check_print(&c);
    double mean = s1 / (double)flows, sd = sqrt(s2 / (double)flows - mean * mean);
    double expected = o->noise_sigma > 0 ? o->noise_sigma : o->noise_width / sqrt(3.0);
    /* flows are reported twice (by each member) with independent noise: n draws */
    c = (s_check_t){"sd of log(measured / nominal)", sd, expected,
                    6 * expected / sqrt(2.0 * (double)flows) + 1e-4};
    ok &= s_check_print(&c);
    return ok;
}

int dbench__check_world(const dbench_opts_t *o)
{
    dbench_opts_t clean = *o;
    clean.mix.faults_min = clean.mix.faults_max = 0;
    dbench_fleet_t f;
    clean.mix.noisy_share = 0;
    if (dbench__fleet_init(&f, &clean, 0))
        return 3;
    printf("# the world of these options, measured (fleetburn-bench-diagnosis --check-world)\n");
    printf("  %-46s %10s %10s    %-9s\n", "measure", "measured", "expected", "bound");
    bool ok = s_check_mix(o, &f) & s_check_rates(o, &f);
    dbench__fleet_free(&f);
    printf("%s\n", ok ? "world ok" : "world OFF");
    return ok ? 0 : 1;
}
