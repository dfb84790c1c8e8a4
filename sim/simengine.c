/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simengine: what the diagnosis of a campaign's `on_fail: bisect` stages should conclude
 * on a simulated fleet, computed in one process: the same session (scheduler/bisect.h) driven as
 * the coordinator's runner drives it (node-local verdicts of a bisect_prior stage, the stage's
 * own round of groups, every round the session plans, task ids as the runner makes them), each
 * test judged by the same fault model fleetburn-simfleet's agents answer from (sim/faultmodel.h,
 * keyed as sim/simtask.c keys its draws, at the simulated time simtask.c gives the round: the
 * rounds one after the other, each as long as its longest test). A member whose result the fault
 * model loses reports nothing, and a disagreeing member reports the opposite verdict; the task's
 * verdict is formed from its members' as the runner forms it (scheduler/stage.h
 * fb_group_verdict), and one without a verdict (the deadline's timeout) says nothing to the
 * session. tests/integration/test_bisect_sim.sh compares its verdicts with the runner's, through
 * the real coordinator, so that the two cannot drift apart. Only node-scope stages and stages
 * with on_fail: bisect are run: another multi-node stage would move simtask.c's clock, and is
 * refused. A time budget (bisect_budget.time) is not applied: it depends on real time.
 *
 *   fleetburn-simengine --agents N --faults FILE --campaign FILE [--topology FILE] [--seed S]
 *
 * Prints one JSON object: per bisect stage, how the session ended, its follow-up rounds and its
 * parts by verdict. Measured flows are not simulated here (the runner's come from the agents):
 * fault files with slow parts are for fleetburn-simfleet alone. Exit status: 0, 2 for usage and
 * file errors. */
#include "coordinator/campaign_file.h"
#include "common/cliopt.h"
#include "common/fileload.h"
#include "common/json.h"
#include "common/units.h"
#include "common/util.h"
#include "scheduler/bisect.h"
#include "scheduler/campaign.h"
#include "scheduler/pairing.h"
#include "scheduler/stage.h"
#include "scheduler/routes.h"
#include "scheduler/topology.h"
#include "sim/faultmodel.h"
#include "sim/simfabric.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_LEAF_SIZE 32 /* fleetburn-simfleet's fabric when none is given (sim/simfleet.h) */
#define S_SPINES 4
#define S_CAMPAIGN                                                                                 \
    "C" /* stands for the campaign id the coordinator would choose: the fault                      \
         * model's draws leave it out */

typedef struct {
    unsigned agents;
    const char *faults, *campaign, *topology;
    bool has_seed;
    uint64_t seed;
} s_cli_t;

typedef struct {
    char **names;
    unsigned n;
    fb_topology_t *topo;
    fb_faultmodel_t *model;
    campaign_file_t *cf;
    /* node-local verdicts of every node-scope stage, for bisect_prior */
    bool **local_failed;
    bool **local_judged;
    double clock_s; /* simulated start of the next round (sim/simtask.c's clock) */
} s_world_t;

static int s_world(const s_cli_t *cli, s_world_t *w)
{
    memset(w, 0, sizeof *w);
    w->n = cli->agents;
    int width = snprintf(NULL, 0, "%u", w->n - 1);
    w->names = xcalloc(w->n, sizeof *w->names);
    for (unsigned i = 0; i < w->n; i++)
        w->names[i] = xasprintf("sim-%0*u", width, i);
    char *text = NULL, *error = NULL, err[512];
    int rc;
    if (cli->topology) {
        rc = fb_load_file(cli->topology, 16u << 20, &text, NULL, &error);
        if (!rc)
            rc = fb_topology_parse_any(text, &w->topo, err, sizeof err);
        else
            snprintf(err, sizeof err, "%s", error);
    } else {
        text = fb_simfabric_text(w->names, w->n, S_LEAF_SIZE, S_SPINES, 0);
        rc = fb_topology_parse(text, &w->topo, err, sizeof err);
    }
    free(text);
    free(error);
    if (rc) {
        fprintf(stderr, "fleetburn-simengine: topology: %s\n", err);
        return 2;
    }
    size_t len = 0;
    error = NULL;
    rc = fb_load_file(cli->faults, FB_FAULTMODEL_MAX_BYTES, &text, &len, &error);
    if (!rc)
        rc = fb_faultmodel_parse(text, len, cli->faults, &w->model, &error);
    free(text);
    if (!rc && cli->has_seed)
        fb_faultmodel_set_seed(w->model, cli->seed);
    if (!rc)
        rc = fb_faultmodel_bind(w->model, w->topo, &error);
    if (!rc)
        rc = campaign_file_read(cli->campaign, &w->cf, &error);
    if (rc) {
        fprintf(stderr, "fleetburn-simengine: %s\n", error ? error : strerror(-rc));
        free(error);
        return 2;
    }
    size_t ns = w->cf->campaign->n_stages;
    w->local_failed = xcalloc(ns, sizeof *w->local_failed);
    w->local_judged = xcalloc(ns, sizeof *w->local_judged);
    return 0;
}

static void s_world_free(s_world_t *w)
{
    for (size_t i = 0; w->cf && i < w->cf->campaign->n_stages; i++) {
        free(w->local_failed[i]);
        free(w->local_judged[i]);
    }
    free(w->local_failed);
    free(w->local_judged);
    for (unsigned i = 0; i < w->n; i++)
        free(w->names[i]);
    free(w->names);
    campaign_file_destroy(&w->cf);
    fb_faultmodel_destroy(&w->model);
    fb_topology_destroy(&w->topo);
}

/* The rail a test runs on, as sim/simtask.c reads it from the task's parameters: the session's
 * rail, else the stage's `rail` or `device: mlx5_N`, else every rail (-1). */
static int s_rail(const fb_stage_t *st, const char *rail)
{
    const char *dev = rail ? rail : fb_stage_param(st, "device");
    const char *r = fb_stage_param(st, "rail");
    if (!rail && r)
        return atoi(r);
    const char *us = dev ? strrchr(dev, '_') : NULL;
    return us && !strncmp(dev, "mlx5_", 5) ? atoi(us + 1) : -1;
}

/* How long one test of the stage runs in simulated time, as sim/simtask.c reads it from the task's
 * parameters: `duration`, else 600 s for memtest and 60 s for anything else. */
static double s_duration_s(const fb_stage_t *st)
{
    uint64_t ms;
    const char *d = fb_stage_param(st, "duration");
    if (d && fb_parse_duration_ms(d, &ms) == 0)
        return (double)ms / 1000.0;
    return !strcmp(st->workload, "memtest") ? 600.0 : 60.0;
}

/* The verdict of test `id` (the runner's task id) over members m, sorted by name, started at
 * start_s, as the runner forms it from what each member reports: *judged false when the task
 * gets no verdict from its members (a lost result, nobody failing). */
static bool s_judge(const s_world_t *w, const char *id, const char *const *m, size_t n, int rail,
                    double start_s, bool *judged)
{
    const char *draw = strchr(id, '/') + 1; /* without the campaign id, as sim/simtask.c */
    fb_sim_test_t t = {draw, m, n, n >= 2 ? rail : -1};
    fb_sim_outcome_t out;
    fb_faultmodel_judge_at(w->model, &t, start_s, &out);
    fb_verdict_t v[n ? n : 1];
    for (size_t i = 0; i < n; i++)
        v[i] = fb_faultmodel_lost(w->model, draw, m[i]) ? FB_VERDICT_NONE
               : fb_sim_member_failed(&out, m[i])       ? FB_VERDICT_FAIL
                                                        : FB_VERDICT_PASS;
    fb_verdict_t g = fb_group_verdict(v, n, NULL);
    *judged = g == FB_VERDICT_FAIL || g == FB_VERDICT_PASS;
    return g == FB_VERDICT_FAIL;
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void s_node_stage(s_world_t *w, size_t k, char **names, size_t n)
{
    w->local_failed[k] = xcalloc(w->n, sizeof **w->local_failed);
    w->local_judged[k] = xcalloc(w->n, sizeof **w->local_judged);
    for (size_t i = 0; i < n; i++) {
        char *id = xasprintf(S_CAMPAIGN "/%zu/%s", k, names[i]);
        const char *m[1] = {names[i]};
        unsigned idx = (unsigned)atoi(strchr(names[i], '-') + 1);
        w->local_failed[k][idx] = s_judge(w, id, m, 1, -1, w->clock_s, &w->local_judged[k][idx]);
        free(id);
    }
    w->clock_s += s_duration_s(&w->cf->campaign->stages[k]);
}

/* The session as coordinator/runner_bisect.c starts it. */
static const char *s_route(void *routes, const char *src, const char *dst, const char *rail)
{
    return fb_routes_spine(routes, src, dst, rail);
}

static fb_bisect_t *s_session(s_world_t *w, size_t k, char **names, size_t n)
{
    const fb_campaign_t *c = w->cf->campaign;
    const fb_stage_t *st = &c->stages[k];
    fb_bisect_opts_t o;
    fb_bisect_opts_default(&o);
    o.scope = st->scope;
    o.pairing = st->pairing;
    o.topology = st->topology;
    /* as the runner seeds it (coordinator/runner_bisect.c): a stage without a seed of its own by
     * its name */
    bool own_seed = st->scope == FB_SCOPE_PAIRS && st->pairing == FB_PAIRING_RANDOM;
    o.seed = own_seed ? st->seed : fb_bisect_name_seed(st->name);
    if (st->routes) { /* the stage's routes, as the runner takes them */
        o.route = s_route;
        o.route_arg = st->routes;
    }
    o.sweeps = st->rounds;
    o.max_rounds = st->bisect_rounds;
    if (st->bisect_slow > 0.0) /* as the runner takes it */
        o.flow.slow_fraction = st->bisect_slow;
    o.split_repeat = st->bisect_repeat;
    fb_bisect_t *b = fb_bisect_new(&o);
    char *rails = fb_strjoin(st->rails, st->n_rails, ",");
    for (size_t i = 0; b && i < n; i++)
        fb_bisect_add_node(b, names[i], rails);
    free(rails);
    for (size_t p = 0; b && st->bisect_prior && p < k; p++) {
        if (strcmp(c->stages[p].name, st->bisect_prior) || !w->local_judged[p])
            continue;
        for (unsigned i = 0; i < w->n; i++) {
            if (!w->local_judged[p][i])
                continue;
            char *id = xasprintf(S_CAMPAIGN "/%zu/%s", p, w->names[i]);
            fb_bisect_record_local(b, id, w->names[i], w->local_failed[p][i]);
            free(id);
        }
    }
    return b;
}

/* One test of the round starting at w->clock_s: the fault model judges its members sorted by name,
 * as every simulated agent sorts them. */
static void s_record(const s_world_t *w, fb_bisect_t *b, const fb_stage_t *st, const char *id,
                     long planned, const char *const *m, size_t n, const char *rail)
{
    const char **sorted = xmalloc((n ? n : 1) * sizeof *sorted);
    memcpy(sorted, m, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, s_cmp_str);
    bool judged = false;
    bool failed = s_judge(w, id, sorted, n, s_rail(st, rail), w->clock_s, &judged);
    free(sorted);
    fb_bisect_result_t r = {id, planned, m, n, rail, judged, failed, NULL, 0, NULL, 0};
    fb_bisect_record(b, &r);
}

/* A group stage's own round: fb_plan_groups over the nodes, as the runner plans it. */
static void s_group_round(s_world_t *w, fb_bisect_t *b, size_t k, char **names, size_t n)
{
    const fb_stage_t *st = &w->cf->campaign->stages[k];
    fb_plan_t plan = {0};
    if (fb_plan_groups((const char *const *)names, n, st->group_size, &plan))
        return;
    for (size_t g = 0; g < plan.n_groups; g++) {
        char *id = xasprintf(S_CAMPAIGN "/%zu/r0.g%zu", k, g);
        s_record(w, b, st, id, -1, (const char *const *)plan.groups[g].members,
                 plan.groups[g].n_members, NULL);
        free(id);
    }
    if (plan.n_groups)
        w->clock_s += s_duration_s(st);
    fb_plan_clear(&plan);
}

/* Every round the session plans, with the runner's task ids. */
static void s_rounds(s_world_t *w, fb_bisect_t *b, size_t k)
{
    const fb_stage_t *st = &w->cf->campaign->stages[k];
    fb_bisect_round_t rd;
    while (fb_bisect_next(b, &rd) == 1) {
        unsigned f = fb_bisect_follow_ups(b);
        unsigned round = st->scope == FB_SCOPE_PAIRS ? rd.round - 1 : rd.round;
        for (size_t i = 0; i < rd.n_tests; i++) {
            const fb_bisect_test_t *t = &rd.tests[i];
            char *id = rd.follow_up ? xasprintf(S_CAMPAIGN "/%zu/b%u.g%zu", k, f, i)
                                    : xasprintf(S_CAMPAIGN "/%zu/r%u.g%zu", k, round, i);
            s_record(w, b, st, id, (long)i, (const char *const *)t->members, t->n_members, t->rail);
            free(id);
        }
        if (rd.n_tests)
            w->clock_s += s_duration_s(st);
        fb_bisect_round_clear(&rd);
    }
    fb_bisect_round_clear(&rd);
}

static void s_print_stage(fb_json_t *j, const fb_stage_t *st, const fb_bisect_t *b)
{
    static const char *const ends[] = {"running", "decided", "budget-rounds", "budget-time",
                                       "no-trusted-partner"};
    fb_bisect_verdict_t *v;
    size_t n = fb_bisect_verdicts(b, &v);
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "stage", st->name);
    fb_json_string(j, "ended", ends[fb_bisect_end(b)]);
    fb_json_int(j, "follow_up_rounds", fb_bisect_follow_ups(b));
    for (int s = FB_BISECT_BAD; s <= FB_BISECT_PASSED; s++) {
        fb_json_array_begin(j, fb_bisect_state_name((fb_bisect_state_t)s));
        for (size_t i = 0; i < n; i++)
            if ((int)v[i].state == s)
                fb_json_string(j, NULL, v[i].part);
        fb_json_array_end(j);
    }
    fb_json_array_begin(j, "on_watch"); /* of the undecided */
    for (size_t i = 0; i < n; i++)
        if (v[i].on_watch)
            fb_json_string(j, NULL, v[i].part);
    fb_json_array_end(j);
    fb_json_object_end(j);
    fb_bisect_verdicts_free(&v, n);
}

static int s_run(s_world_t *w)
{
    const fb_campaign_t *c = w->cf->campaign;
    int rc = 0;
    fb_json_t *j = fb_json_new(true);
    fb_json_object_begin(j, NULL);
    fb_json_array_begin(j, "stages");
    for (size_t k = 0; k < c->n_stages; k++) {
        const fb_stage_t *st = &c->stages[k];
        bool all = false;
        char **names = NULL, err[256];
        size_t n = 0;
        if (fb_stage_nodes(c, st, &all, &names, &n, err, sizeof err))
            continue;
        if (all) {
            names = xcalloc(w->n, sizeof *names);
            for (unsigned i = 0; i < w->n; i++)
                names[i] = xstrdup(w->names[i]);
            n = w->n;
        }
        if (st->scope == FB_SCOPE_NODE)
            s_node_stage(w, k, names, n);
        else if (st->on_fail == FB_ON_FAIL_BISECT) {
            fb_bisect_t *b = s_session(w, k, names, n);
            if (b) {
                if (st->scope == FB_SCOPE_GROUP)
                    s_group_round(w, b, k, names, n);
                s_rounds(w, b, k);
                s_print_stage(j, st, b);
                fb_bisect_destroy(&b);
            }
        } else {
            fprintf(stderr,
                    "fleetburn-simengine: stage %s: scope %s without on_fail: bisect is not "
                    "simulated here (its rounds would move the simulated clock of the stages "
                    "after it); expected node-scope stages and stages with on_fail: bisect\n",
                    st->name, st->scope == FB_SCOPE_GROUP ? "group" : "pairs");
            rc = 2;
        }
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
    if (!rc)
        printf("%s\n", fb_json_text(j));
    fb_json_destroy(&j);
    return rc;
}

static void s_usage(FILE *out)
{
    fprintf(out, "usage: fleetburn-simengine --agents N --faults FILE --campaign FILE "
                 "[--topology FILE] [--seed S]\n");
}

int main(int argc, char **argv)
{
    s_cli_t cli = {0};
    const fb_cliopt_t table[] = {{"agents", 'n', FB_CLIOPT_UINT, &cli.agents, 2, 65536},
                                 {"faults", 'f', FB_CLIOPT_TEXT, &cli.faults, 0, 0},
                                 {"campaign", 'c', FB_CLIOPT_TEXT, &cli.campaign, 0, 0},
                                 {"topology", 't', FB_CLIOPT_TEXT, &cli.topology, 0, 0},
                                 {"seed", 's', FB_CLIOPT_CALLER, NULL, 0, 0},
                                 {"help", 'h', FB_CLIOPT_CALLER_FLAG, NULL, 0, 0},
                                 {0}};
    int ch;
    char *error = NULL;
    while ((ch = fb_cliopt_next(argc, argv, "", table, &error)) > 0) {
        if (ch == 'h') {
            s_usage(stdout);
            return 0;
        }
        if (fb_cliopt_uint("seed", optarg, 0, UINT64_MAX, &cli.seed, &error)) {
            ch = -EINVAL;
            break;
        }
        cli.has_seed = true;
    }
    if (error)
        fprintf(stderr, "fleetburn-simengine: %s\n", error);
    free(error);
    if (ch) {
        s_usage(stderr);
        return 2;
    }
    if (cli.agents < 2 || cli.agents > 65536 || !cli.faults || !cli.campaign || optind < argc) {
        s_usage(stderr);
        return 2;
    }
    s_world_t w;
    int rc = s_world(&cli, &w);
    if (!rc)
        rc = s_run(&w);
    s_world_free(&w);
    return rc;
}
