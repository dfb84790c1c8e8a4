/* SPDX-License-Identifier: Apache-2.0 */
/* Campaign runner. Every stage and its tasks are written to the store before anything is sent,
 * so the timeline shows what was planned even if the coordinator dies. A stage's tasks end by
 * results, by an agent being lost, or by the deadline (the task timeout plus a grace period for
 * the agent's own timeout result to arrive). Stage and round transitions run from a timer so
 * that they never begin inside a message handler.
 *
 * Scopes (docs/scheduling.md): a stage's nodes are planned into rounds once, when it starts
 * (pure planners in scheduler/pairing.h and topology.h). Scope node is one task per node, as
 * always. Scope group and pairs make one task per group with several members: each member gets
 * the same RunTask plus its Group (rank, peers, addresses, rendezvous = the task id) and reports
 * its own result (<task id>@<node>). A group task is decided by its members' results
 * (fb_group_verdict): a member that fails, errs, times out or is lost decides it at once. After
 * an error, a timeout or a loss the members still running are cancelled, so that none waits for a
 * peer that will never come; after a plain failure they finish their own measurement. A round
 * (and so the stage) ends when every task has a verdict and no member still runs: members that
 * run on are waited for until the deadline, cancelled ones for S_WIND_DOWN_MS at most, so that
 * the next round never overlaps them. When a pair stage ends, the pair
 * judgment (scheduler/pairjudge.h) compares every pair against the stage and stores what it
 * finds as a coordinator result on the tasks involved.
 *
 * on_fail: bisect (scheduler/bisect.h, docs/diagnosis.md): a diagnosis session follows the stage.
 * A pairs stage is planned by it from its first round (its `rounds` are sweeps: every node with
 * fresh partners on every rail; the rounds after re-test suspects with trusted partners); a group
 * stage runs its own round, then splits its failing groups. Every round's results go into the
 * session, which plans the next round until it is done or bisect_rounds follow-up rounds have run;
 * follow-up tasks are real tasks (<campaign>/<stage>/b<k>.g<j>) with the stage's workload and
 * parameters (plus device=<rail> on a rail). The session's verdicts become a diagnosis task
 * (<campaign>/<stage>/diagnosis) with one coordinator result per part, and decide the stage. */
#include "runner.h"
#include "common/hostlist.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strmap.h"
#include "common/util.h"
#include "scheduler/bisect.h"
#include "scheduler/campaign.h"
#include "scheduler/pairing.h"
#include "scheduler/pairjudge.h"
#include "scheduler/stage.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a round waits for the members of early-decided group tasks to report after their
 * cancellation (the agent's kill grace is 3 s), so that the next round does not overlap them. */
#define S_WIND_DOWN_MS 10000

typedef struct {
    fb_verdict_t verdict; /* the member's own result; NONE while it runs */
    bool sent;            /* its RunTask went out */
    bool cancelled;       /* its task was decided while it ran: CancelTask sent */
    double tx, rx;        /* pair stages: judged metrics from its result, NaN when absent */
    fb_kv_t *counters;    /* bisect stages: its port counters that moved, rail -> what */
    size_t n_counters;
} rmember_t;

typedef struct {
    char *id;
    char **nodes;       /* by rank */
    rmember_t *members; /* by rank */
    size_t n_members;
    bool group; /* scope group or pairs: members get a Group */
    unsigned round;
    fb_verdict_t verdict;
    char *rail;   /* bisect: the rail it runs on (sent as device=<rail>), NULL */
    long planned; /* bisect: its index in the session's round, -1 for the stage's own tasks */
} rtask_t;

/* Node-local verdicts of a stage, kept for a later stage's bisect_prior. */
typedef struct {
    char **nodes;
    bool *failed;
    size_t n;
} rlocal_t;

struct runner {
    coord_t *coord;
    fb_campaign_t *campaign;
    char *id;
    coord_progress_cb cb;
    void *arg;
    int64_t *stage_ids;
    size_t stage; /* index of the running stage */
    bool stage_running;
    /* the running stage's plan: one fb_plan_t per round */
    fb_plan_t *plans;
    unsigned n_rounds, round;
    size_t planned_tasks;
    uint64_t seed;   /* pairing random: seed of round 0 (round r uses seed + r) */
    rtask_t **tasks; /* every task of the stage so far, in creation order */
    size_t n_tasks, round_first;
    strmap_t *task_index; /* task id -> rtask_t of the running stage */
    bool winding_down;    /* the round waits (S_WIND_DOWN_MS) for cancelled members only */
    bool stop_waiting;    /* the deadline or the wind-down passed: members still out are left */
    bool next_is_round;   /* what the next timer begins: a round, else a stage */
    uint64_t started_mono;
    bool finished, any_failed;
    fb_verdict_t verdict;
    uv_timer_t deadline;
    uv_timer_t next;
    int open_handles;
    /* on_fail: bisect */
    fb_bisect_t *bisect;      /* the running stage's diagnosis session */
    bool bisect_plans;        /* pairs: every round comes from the session */
    bool bisect_next;         /* the next round to begin is bround */
    fb_bisect_round_t bround; /* the session's round being placed */
    rlocal_t *locals;         /* per stage, for bisect_prior */
};

static const fb_stage_t *s_stage(const runner_t *self)
{
    return &self->campaign->stages[self->stage];
}

static void s_progress(runner_t *self)
{
    if (!self->cb)
        return;
    coord_progress_t p = {0};
    p.campaign_id = self->id;
    p.campaign_name = self->campaign->name;
    p.stage_count = (unsigned)self->campaign->n_stages;
    p.stage_index = (unsigned)self->stage;
    p.stage = self->stage < self->campaign->n_stages ? s_stage(self)->name : "";
    p.tasks_total =
        (unsigned)(self->planned_tasks > self->n_tasks ? self->planned_tasks : self->n_tasks);
    for (size_t i = 0; i < self->n_tasks; i++) {
        if (self->tasks[i]->verdict == FB_VERDICT_NONE)
            continue;
        p.tasks_done++;
        if (!fb_verdict_ok(self->tasks[i]->verdict))
            p.tasks_failed++;
    }
    p.elapsed_ms = fb_mono_ms() - self->started_mono;
    p.finished = self->finished;
    p.verdict = self->verdict;
    self->cb(&p, self->arg);
}

/* ---- tasks ---- */

static rtask_t *s_task_new(runner_t *self, char *id, const fb_group_t *g, bool group,
                           unsigned round)
{
    rtask_t *t = xcalloc(1, sizeof *t);
    t->id = id;
    t->group = group;
    t->round = round;
    t->n_members = g->n_members;
    t->planned = -1;
    t->nodes = xcalloc(g->n_members, sizeof *t->nodes);
    t->members = xcalloc(g->n_members, sizeof *t->members);
    for (size_t i = 0; i < g->n_members; i++) {
        t->nodes[i] = xstrdup(g->members[i]);
        t->members[i].tx = t->members[i].rx = NAN;
    }
    self->tasks = xrealloc(self->tasks, (self->n_tasks + 1) * sizeof *self->tasks);
    self->tasks[self->n_tasks++] = t;
    strmap_put(self->task_index, t->id, t);
    return t;
}

static void s_task_free(rtask_t *t)
{
    for (size_t i = 0; i < t->n_members; i++) {
        free(t->nodes[i]);
        for (size_t k = 0; k < t->members[i].n_counters; k++) {
            free(t->members[i].counters[k].key);
            free(t->members[i].counters[k].value);
        }
        free(t->members[i].counters);
    }
    free(t->rail);
    free(t->nodes);
    free(t->members);
    free(t->id);
    free(t);
}

static void s_clear_tasks(runner_t *self)
{
    for (size_t i = 0; i < self->n_tasks; i++)
        s_task_free(self->tasks[i]);
    free(self->tasks);
    self->tasks = NULL;
    self->n_tasks = self->round_first = 0;
    strmap_destroy(&self->task_index);
    for (unsigned r = 0; r < self->n_rounds; r++)
        fb_plan_clear(&self->plans[r]);
    free(self->plans);
    self->plans = NULL;
    self->n_rounds = self->round = 0;
    self->planned_tasks = 0;
    self->winding_down = self->stop_waiting = false;
    fb_bisect_destroy(&self->bisect);
    fb_bisect_round_clear(&self->bround);
    self->bisect_plans = self->bisect_next = false;
}

static size_t s_rank_of(const rtask_t *t, const char *node)
{
    for (size_t i = 0; node && i < t->n_members; i++)
        if (!strcmp(t->nodes[i], node))
            return i;
    return SIZE_MAX;
}

/* "n3 (rank 2)" for a group member, "n3" for a task of scope node. */
static char *s_member_name(const rtask_t *t, size_t rank)
{
    return t->group ? xasprintf("%s (rank %zu)", t->nodes[rank], rank) : xstrdup(t->nodes[rank]);
}

static char *s_params_json(const fb_stage_t *stage)
{
    fb_json_t *j = fb_json_new(false);
    fb_json_object_begin(j, NULL);
    for (size_t i = 0; i < stage->n_params; i++)
        fb_json_string(j, stage->params[i].key, stage->params[i].value);
    fb_json_object_end(j);
    char *text = fb_json_take(j);
    fb_json_destroy(&j);
    return text;
}

static void s_on_next_cb(uv_timer_t *h);

static void s_schedule_next(runner_t *self, bool round)
{
    self->next_is_round = round;
    uv_timer_start(&self->next, s_on_next_cb, 0, 0);
}

static void s_finish_campaign(runner_t *self)
{
    self->finished = true;
    self->verdict = self->any_failed ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
    store_t *store = coord_store(self->coord);
    if (store_campaign_finish(store, self->id, self->verdict, fb_now_ms()))
        log_error("cannot store the end of campaign %s: %s", self->id, store_errmsg(store));
    coord_event(self->coord, self->id, NULL, NULL, "campaign", "finished: %s",
                fb_verdict_name(self->verdict));
    log_info("campaign %s (%s) finished: %s", self->id, self->campaign->name,
             fb_verdict_name(self->verdict));
    s_progress(self);
}

/* ---- pair judgment ---- */

/* The findings of judgment j that rest on task t's samples, as one coordinator result that
 * fails t. sample_task maps each sample to its task. */
static void s_store_judgment(runner_t *self, rtask_t *t, const fb_pair_judgment_t *j,
                             rtask_t *const *sample_task)
{
    fb_result_t *r = NULL;
    for (size_t f = 0; f < j->n_findings; f++) {
        const fb_pair_finding_t *finding = &j->findings[f];
        bool cites = false;
        for (size_t k = 0; k < finding->n_samples && !cites; k++)
            cites = sample_task[finding->samples[k]] == t;
        if (!cites)
            continue;
        if (!r) {
            r = fb_result_new();
            char *result_id = xasprintf("%s/judge", t->id);
            fb_result_set_ids(r, result_id, t->id, finding->node);
            free(result_id);
            r->verdict = FB_VERDICT_FAIL;
            r->started_ms = r->finished_ms = fb_now_ms();
            fb_result_set_error(r, "pair judgment: %s %s is slow",
                                fb_pair_finding_kind_name(finding->kind), finding->part);
        }
        fb_result_add_finding(r, finding->part, fb_pair_finding_kind_name(finding->kind),
                              finding->what);
    }
    if (!r)
        return;
    store_t *store = coord_store(self->coord);
    if (store_result_insert(store, r, fb_now_ms()))
        log_error("cannot store the pair judgment of task %s: %s", t->id, store_errmsg(store));
    if (fb_verdict_ok(t->verdict))
        t->verdict = FB_VERDICT_FAIL;
    fb_result_destroy(&r);
}

/* Judges a pair stage as a whole once its rounds are over (scheduler/pairjudge.h). */
static void s_judge_pairs(runner_t *self)
{
    const fb_stage_t *stage = s_stage(self);
    const fb_pair_metrics_t *m = fb_pairjudge_metrics(stage->workload);
    if (stage->scope != FB_SCOPE_PAIRS || !m)
        return;
    fb_pair_sample_t *samples = xcalloc(2 * self->n_tasks + 1, sizeof *samples);
    rtask_t **sample_task = xcalloc(2 * self->n_tasks + 1, sizeof *sample_task);
    size_t n = 0;
    for (size_t i = 0; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        for (size_t k = 0; t->n_members == 2 && k < 2; k++) {
            if (!isfinite(t->members[k].tx) && !isfinite(t->members[k].rx))
                continue;
            samples[n] = (fb_pair_sample_t){t->nodes[k], t->nodes[1 - k], t->round,
                                            t->members[k].tx, t->members[k].rx};
            sample_task[n++] = t;
        }
    }
    fb_pair_judgment_t j;
    int found = fb_pairjudge(m, samples, n, &j);
    for (int f = 0; f < found; f++) {
        const fb_pair_finding_t *finding = &j.findings[f];
        coord_event(self->coord, self->id, NULL, finding->node, "judgment", "%s %s: %s",
                    fb_pair_finding_kind_name(finding->kind), finding->part, finding->what);
        log_warn("stage %s: %s %s: %s", stage->name, fb_pair_finding_kind_name(finding->kind),
                 finding->part, finding->what);
    }
    for (size_t i = 0; found > 0 && i < self->n_tasks; i++)
        s_store_judgment(self, self->tasks[i], &j, sample_task);
    if (found == 0 && n)
        coord_event(self->coord, self->id, NULL, NULL, "judgment",
                    "%s: %zu results of %zu pair tests judged, no slow pair (medians %s %.2f, %s "
                    "%.2f)",
                    stage->name, n, self->n_tasks, m->tx, j.median_tx, m->rx, j.median_rx);
    fb_pair_judgment_clear(&j);
    free(samples);
    free(sample_task);
}

/* ---- on_fail: bisect ---- */

/* A node-scope stage that a later stage names in bisect_prior: its verdicts per node. */
static void s_keep_locals(runner_t *self)
{
    const fb_stage_t *st = s_stage(self);
    bool wanted = false;
    for (size_t j = self->stage + 1; j < self->campaign->n_stages && !wanted; j++) {
        const char *prior = self->campaign->stages[j].bisect_prior;
        wanted = prior && !strcmp(prior, st->name);
    }
    if (st->scope != FB_SCOPE_NODE || !wanted)
        return;
    rlocal_t *l = &self->locals[self->stage];
    l->nodes = xcalloc(self->n_tasks + 1, sizeof *l->nodes);
    l->failed = xcalloc(self->n_tasks + 1, sizeof *l->failed);
    for (size_t i = 0; i < self->n_tasks; i++) {
        const rtask_t *t = self->tasks[i];
        if (t->verdict != FB_VERDICT_PASS && t->verdict != FB_VERDICT_FAIL)
            continue; /* lost, timeout, error: says nothing about the node's parts */
        l->nodes[l->n] = xstrdup(t->nodes[0]);
        l->failed[l->n++] = t->verdict == FB_VERDICT_FAIL;
    }
}

static void s_locals_free(rlocal_t *l)
{
    hostlist_free(l->nodes, l->n);
    free(l->failed);
    memset(l, 0, sizeof *l);
}

/* The node-local verdicts of the stage named by bisect_prior, as the session's node-local round;
 * their test ids are the ids of those tasks. */
static void s_bisect_prior(runner_t *self, const char *prior)
{
    for (size_t k = 0; k < self->stage; k++) {
        if (strcmp(self->campaign->stages[k].name, prior))
            continue;
        const rlocal_t *l = &self->locals[k];
        for (size_t i = 0; i < l->n; i++) {
            char *id = xasprintf("%s/%zu/%s", self->id, k, l->nodes[i]);
            fb_bisect_record_local(self->bisect, id, l->nodes[i], l->failed[i]);
            free(id);
        }
    }
}

static char *s_join_rails(const fb_stage_t *st)
{
    size_t len = 1;
    for (size_t i = 0; i < st->n_rails; i++)
        len += strlen(st->rails[i]) + 1;
    char *csv = xcalloc(len, 1);
    for (size_t i = 0; i < st->n_rails; i++) {
        if (i)
            strcat(csv, ",");
        strcat(csv, st->rails[i]);
    }
    return csv;
}

/* Starts the stage's diagnosis session over names. 0, or -EINVAL with err. */
static int s_bisect_begin(runner_t *self, char **names, size_t n, char *err, size_t errlen)
{
    const fb_stage_t *st = s_stage(self);
    fb_bisect_opts_t o;
    fb_bisect_opts_default(&o);
    o.scope = st->scope;
    o.pairing = st->pairing;
    o.topology = st->topology;
    o.seed = self->seed;
    o.sweeps = st->rounds;
    o.max_rounds = st->bisect_rounds;
    o.split_repeat = st->bisect_repeat;
    self->bisect = fb_bisect_new(&o);
    if (!self->bisect) {
        snprintf(err, errlen, "cannot start the diagnosis of on_fail: bisect%s",
                 st->pairing == FB_PAIRING_TOPOLOGY && !st->topology ? " (no topology)" : "");
        return -EINVAL;
    }
    char *rails = s_join_rails(st);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if ((rc = fb_bisect_add_node(self->bisect, names[i], rails)) == -EINVAL)
            snprintf(err, errlen, "node name %s cannot be diagnosed (it holds ',' or '/')",
                     names[i]);
    free(rails);
    if (rc == -EEXIST)
        rc = 0;
    if (!rc && st->bisect_prior)
        s_bisect_prior(self, st->bisect_prior);
    return rc;
}

/* Port counters that moved, from a member's findings ("node/mlx5_2" or "node/mlx5_2:1", kind
 * link or nic): the rail's cable or HCA counted its own errors. */
static void s_note_counters(const runner_t *self, rmember_t *m, const fb_result_t *r)
{
    if (!self->bisect || !r->node)
        return;
    size_t nl = strlen(r->node);
    for (size_t i = 0; i < r->n_findings; i++) {
        const fb_finding_t *f = &r->findings[i];
        if (!f->part || !f->kind || (strcmp(f->kind, "link") && strcmp(f->kind, "nic")) ||
            strncmp(f->part, r->node, nl) || f->part[nl] != '/' || !f->part[nl + 1])
            continue;
        const char *rail = f->part + nl + 1;
        m->counters = xrealloc(m->counters, (m->n_counters + 1) * sizeof *m->counters);
        m->counters[m->n_counters].key = xstrndup(rail, strcspn(rail, ":"));
        m->counters[m->n_counters++].value = xstrdup(f->what ? f->what : f->kind);
    }
}

/* Gives the session every result of the round that ended: the task's verdict (lost, timed-out
 * and erred tasks say nothing about parts), the members' measured flows and port counters. */
static void s_bisect_record_round(runner_t *self)
{
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        const rtask_t *t = self->tasks[i];
        fb_bisect_flow_t flows[4];
        size_t nf = 0, nc = 0;
        for (size_t k = 0; t->n_members == 2 && k < 2; k++) {
            const rmember_t *m = &t->members[k];
            if (isfinite(m->tx))
                flows[nf++] = (fb_bisect_flow_t){t->nodes[k], t->nodes[1 - k], m->tx};
            if (isfinite(m->rx))
                flows[nf++] = (fb_bisect_flow_t){t->nodes[1 - k], t->nodes[k], m->rx};
        }
        for (size_t k = 0; k < t->n_members; k++)
            nc += t->members[k].n_counters;
        fb_bisect_counter_t *counters = xcalloc(nc + 1, sizeof *counters);
        nc = 0;
        for (size_t k = 0; k < t->n_members; k++)
            for (size_t c = 0; c < t->members[k].n_counters; c++)
                counters[nc++] = (fb_bisect_counter_t){t->nodes[k], t->members[k].counters[c].key,
                                                       t->members[k].counters[c].value};
        bool judged = t->verdict == FB_VERDICT_PASS || t->verdict == FB_VERDICT_FAIL;
        fb_bisect_result_t r = {t->id,
                                t->planned,
                                (const char *const *)t->nodes,
                                t->n_members,
                                t->rail,
                                judged,
                                t->verdict == FB_VERDICT_FAIL,
                                flows,
                                nf,
                                counters,
                                nc};
        int rc = fb_bisect_record(self->bisect, &r);
        if (rc)
            log_warn("diagnosis: result of %s not taken: %s", t->id, strerror(-rc));
        free(counters);
    }
}

/* Plans the session's next round when the stage's own rounds are over (or, for a pairs stage,
 * after every round). True when one was scheduled; false when the stage ends. */
static bool s_bisect_continue(runner_t *self)
{
    if (!self->bisect || (!self->bisect_plans && !fb_bisect_needed(self->bisect)))
        return false;
    fb_bisect_round_clear(&self->bround);
    int rc = fb_bisect_next(self->bisect, &self->bround);
    if (rc < 0) {
        coord_event(self->coord, self->id, NULL, NULL, "bisect",
                    "%s: cannot plan the next round: %s", s_stage(self)->name, strerror(-rc));
        return false;
    }
    if (rc == 0)
        return false;
    self->bisect_next = true;
    s_schedule_next(self, true);
    return true;
}

/* The node a part belongs to: "n7" and "n7/mlx5_0" -> n7; links and groups have none. Heap. */
static char *s_part_node(const char *part)
{
    if (strstr(part, "<->") || strchr(part, ','))
        return NULL;
    return xstrndup(part, strcspn(part, "/"));
}

/* Every node a verdict's part names (a group names several), added to nodes once. */
static void s_part_nodes(const char *part, char ***nodes, size_t *n)
{
    if (strstr(part, "<->"))
        return;
    while (*part) {
        size_t len = strcspn(part, ",/");
        bool seen = false;
        for (size_t i = 0; i < *n && !seen; i++)
            seen = strlen((*nodes)[i]) == len && !strncmp((*nodes)[i], part, len);
        if (!seen) {
            *nodes = xrealloc(*nodes, (*n + 1) * sizeof **nodes);
            (*nodes)[(*n)++] = xstrndup(part, len);
        }
        part += len;
        part += strcspn(part, ","); /* skip "/rail" */
        if (*part == ',')
            part++;
    }
}

/* Evidence kept per cleared suspect: the tests after its first failure, enough to see why. */
#define S_CLEARED_EVIDENCE 8

/* The session's verdicts as the diagnosis task of the stage: one coordinator result per part
 * (failing for bad and undecided parts, passing for cleared ones) whose first finding is the part
 * and whose other findings are its evidence, each naming the test it rests on
 * (docs/report-json.md). */
static void s_store_diagnosis(runner_t *self, const fb_bisect_verdict_t *v, size_t n)
{
    store_t *store = coord_store(self->coord);
    char *task_id = xasprintf("%s/%zu/diagnosis", self->id, self->stage);
    char **nodes = NULL;
    size_t nn = 0;
    for (size_t i = 0; i < n; i++)
        s_part_nodes(v[i].part, &nodes, &nn);
    uint64_t now = fb_now_ms();
    if (store_task_create(store, task_id, self->id, self->stage_ids[self->stage],
                          (const char *const *)nodes, nn, now))
        log_error("cannot store task %s: %s", task_id, store_errmsg(store));
    hostlist_free(nodes, nn);
    for (size_t i = 0; i < n; i++) {
        const fb_bisect_verdict_t *x = &v[i];
        fb_result_t *r = fb_result_new();
        char *rid = xasprintf("%s/%s", task_id, x->part), *node = s_part_node(x->part);
        fb_result_set_ids(r, rid, task_id, node);
        r->verdict = x->state == FB_BISECT_CLEARED ? FB_VERDICT_PASS : FB_VERDICT_FAIL;
        r->started_ms = r->finished_ms = now;
        fb_result_set_error(r, "%s", x->summary);
        fb_result_add_metric(r, "confidence", x->confidence, "");
        fb_result_add_metric(r, "undecided", x->state == FB_BISECT_UNDECIDED ? 1.0 : 0.0, "");
        fb_result_add_finding(r, x->part, x->kind, x->summary);
        size_t ne = x->state == FB_BISECT_CLEARED && x->n_evidence > S_CLEARED_EVIDENCE
                        ? S_CLEARED_EVIDENCE
                        : x->n_evidence;
        for (size_t k = 0; k < ne; k++)
            fb_result_add_finding(r, x->evidence[k].test_id, "evidence", x->evidence[k].what);
        if (store_result_insert(store, r, now))
            log_error("cannot store the diagnosis of %s: %s", x->part, store_errmsg(store));
        fb_result_destroy(&r);
        free(rid);
        free(node);
    }
    free(task_id);
}

/* Timeline events for the verdicts: one per bad or undecided part, one for the cleared. */
static void s_diagnosis_events(runner_t *self, const fb_bisect_verdict_t *v, size_t n)
{
    const char *stage = s_stage(self)->name;
    size_t cleared = 0, len = 0;
    char names[512] = "";
    for (size_t i = 0; i < n; i++) {
        const fb_bisect_verdict_t *x = &v[i];
        if (x->state == FB_BISECT_CLEARED) {
            if (len < sizeof names - 80)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                                        cleared ? ", " : "", x->part);
            cleared++;
            continue;
        }
        char *node = s_part_node(x->part);
        coord_event(self->coord, self->id, NULL, node, "diagnosis",
                    "%s: %s %s (%s, confidence %.4f): %s", stage, fb_bisect_state_name(x->state),
                    x->part, x->kind, x->confidence, x->summary);
        log_warn("stage %s: %s %s (%s): %s", stage, fb_bisect_state_name(x->state), x->part,
                 x->kind, x->summary);
        free(node);
    }
    if (cleared)
        coord_event(self->coord, self->id, NULL, NULL, "diagnosis",
                    "%s: cleared %zu suspect(s): %s%s", stage, cleared, names,
                    len >= sizeof names - 80 ? ", ..." : "");
}

/* The end of a bisect stage: its verdicts on the timeline and in the store, and the stage's
 * verdict: failing when a part is bad or undecided; otherwise the failed tests were explained
 * away (spurious, or a partner of a part since cleared) and only lost, timed-out or erred tasks
 * can fail it. */
static fb_verdict_t s_bisect_finish(runner_t *self, fb_verdict_t *verdicts, size_t n)
{
    fb_bisect_verdict_t *v;
    size_t nv = fb_bisect_verdicts(self->bisect, &v), open = 0, cleared = 0;
    for (size_t i = 0; i < nv; i++) {
        open += v[i].state != FB_BISECT_CLEARED;
        cleared += v[i].state == FB_BISECT_CLEARED;
    }
    s_diagnosis_events(self, v, nv);
    if (nv)
        s_store_diagnosis(self, v, nv);
    coord_event(self->coord, self->id, NULL, NULL, "diagnosis",
                "%s: %zu part(s) bad or undecided, %zu suspect(s) cleared, after %u follow-up "
                "round(s)",
                s_stage(self)->name, open, cleared, fb_bisect_follow_ups(self->bisect));
    fb_bisect_verdicts_free(&v, nv);
    if (open)
        return FB_VERDICT_FAIL;
    for (size_t i = 0; i < n; i++)
        if (verdicts[i] == FB_VERDICT_FAIL)
            verdicts[i] = FB_VERDICT_PASS;
    return fb_stage_verdict(verdicts, n);
}

/* ---- stage end ---- */

static void s_end_stage(runner_t *self)
{
    uv_timer_stop(&self->deadline);
    self->stage_running = false;
    if (!self->bisect) /* a bisect stage's flows are judged by its session */
        s_judge_pairs(self);
    fb_verdict_t *verdicts = xcalloc(self->n_tasks + 1, sizeof *verdicts);
    for (size_t i = 0; i < self->n_tasks; i++)
        verdicts[i] = self->tasks[i]->verdict;
    fb_verdict_t verdict = self->bisect ? s_bisect_finish(self, verdicts, self->n_tasks)
                                        : fb_stage_verdict(verdicts, self->n_tasks);
    free(verdicts);
    s_keep_locals(self);
    const fb_stage_t *stage = s_stage(self);
    store_t *store = coord_store(self->coord);
    store_stage_finish(store, self->stage_ids[self->stage], verdict, fb_now_ms());
    coord_event(self->coord, self->id, NULL, NULL, "stage", "%s finished: %s", stage->name,
                fb_verdict_name(verdict));
    log_info("stage %s finished: %s", stage->name, fb_verdict_name(verdict));
    bool failed = !fb_verdict_ok(verdict);
    self->any_failed |= failed;
    self->stage++;
    if (failed && stage->on_fail == FB_ON_FAIL_STOP) {
        for (; self->stage < self->campaign->n_stages; self->stage++) {
            store_stage_finish(store, self->stage_ids[self->stage], FB_VERDICT_SKIPPED,
                               fb_now_ms());
            coord_event(self->coord, self->id, NULL, NULL, "stage",
                        "%s skipped: stage %s failed with on_fail: stop", s_stage(self)->name,
                        stage->name);
        }
    }
    s_progress(self);
    s_schedule_next(self, false);
}

/* Whether members of the round's tasks still run (their agent is there and has not reported):
 * *uncancelled counts those nobody asked to stop. */
static bool s_round_busy(const runner_t *self, bool *uncancelled)
{
    bool busy = false;
    *uncancelled = false;
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        const rtask_t *t = self->tasks[i];
        for (size_t k = 0; k < t->n_members; k++) {
            const rmember_t *m = &t->members[k];
            if (m->verdict != FB_VERDICT_NONE || !m->sent ||
                !coord_node_alive(self->coord, t->nodes[k]))
                continue;
            busy = true;
            *uncancelled |= !m->cancelled;
        }
    }
    return busy;
}

static void s_on_deadline(uv_timer_t *h);

/* Ends the round when every task has a verdict and no member still runs (see the top of the
 * file): then the next round begins (from a timer), or the stage ends. */
static void s_check_round_done(runner_t *self)
{
    if (!self->stage_running)
        return;
    for (size_t i = self->round_first; i < self->n_tasks; i++)
        if (self->tasks[i]->verdict == FB_VERDICT_NONE)
            return;
    bool uncancelled;
    if (!self->stop_waiting && s_round_busy(self, &uncancelled)) {
        if (!uncancelled && !self->winding_down) { /* the wind-down replaces the deadline */
            self->winding_down = true;
            uv_timer_start(&self->deadline, s_on_deadline, S_WIND_DOWN_MS, 0);
        }
        return;
    }
    uv_timer_stop(&self->deadline);
    self->winding_down = self->stop_waiting = false;
    if (self->bisect)
        s_bisect_record_round(self);
    if (self->round + 1 < self->n_rounds) {
        self->round++;
        s_schedule_next(self, true);
        return;
    }
    if (s_bisect_continue(self))
        return;
    s_end_stage(self);
}

/* ---- deciding ---- */

/* Cancels the members of t that still run, with reason. */
static void s_cancel_running(runner_t *self, rtask_t *t, const char *reason)
{
    for (size_t k = 0; k < t->n_members; k++) {
        rmember_t *m = &t->members[k];
        if (m->verdict != FB_VERDICT_NONE || !m->sent || m->cancelled)
            continue;
        /* Sent even when the connection looks gone: the round waits for the member until its
         * agent is declared lost, so the next stage is not placed on it. */
        coord_send_cancel(self->coord, t->nodes[k], t->id, reason);
        m->cancelled = true;
    }
}

/* Sets t's verdict (the first one stands). The coordinator stores it when it decided it itself
 * (lost, timeout, error; a result already set its own), and the task's exchanges end. A group
 * decided by anything but a plain failure has its running members cancelled. */
static void s_decide(runner_t *self, rtask_t *t, fb_verdict_t verdict, const char *why,
                     const char *node)
{
    if (t->verdict != FB_VERDICT_NONE)
        return;
    t->verdict = verdict;
    store_t *store = coord_store(self->coord);
    if (store_task_finish(store, t->id, verdict, why, fb_now_ms()) == -EALREADY)
        log_debug("task %s already had a verdict", t->id);
    coord_event(self->coord, self->id, t->id, node, "verdict", "%s: %s", fb_verdict_name(verdict),
                why);
    log_warn("task %s on %s: %s: %s", t->id, node ? node : t->nodes[0], fb_verdict_name(verdict),
             why);
    if (t->group) {
        if (verdict != FB_VERDICT_FAIL)
            s_cancel_running(self, t, why);
        coord_exchange_task_ended(self->coord, t->id, why);
    }
}

/* A member of t ended with verdict (lost, or the agent restarted: no result will come). */
static void s_member_gone(runner_t *self, rtask_t *t, size_t rank, fb_verdict_t verdict,
                          const char *why)
{
    rmember_t *m = &t->members[rank];
    if (m->verdict != FB_VERDICT_NONE)
        return;
    m->verdict = verdict;
    char *who = s_member_name(t, rank);
    char *reason =
        t->group ? xasprintf("member %s %s: %s", who, fb_verdict_name(verdict), why) : xstrdup(why);
    s_decide(self, t, verdict, reason, t->nodes[rank]);
    free(reason);
    free(who);
}

/* ---- dispatch ---- */

static void s_fill_group(runner_t *self, const rtask_t *t, size_t rank, Fleetburn__Group *g,
                         const char **addresses)
{
    fleetburn__group__init(g);
    g->rank = (uint32_t)rank;
    g->size = (uint32_t)t->n_members;
    g->peers = t->nodes;
    g->n_peers = t->n_members;
    g->rendezvous = t->id;
    for (size_t i = 0; i < t->n_members; i++)
        addresses[i] = coord_node_address(self->coord, t->nodes[i]);
    g->addresses = (char **)addresses;
    g->n_addresses = t->n_members;
}

/* Sends t's RunTask to its member of rank `rank`. */
static int s_send_member(runner_t *self, const rtask_t *t, size_t rank)
{
    const fb_stage_t *stage = s_stage(self);
    Fleetburn__RunTask m = FLEETBURN__RUN_TASK__INIT;
    m.task_id = t->id;
    m.campaign_id = self->id;
    m.stage = stage->name;
    m.workload = stage->workload;
    m.timeout_ms = stage->timeout_ms;
    Fleetburn__Param *params = xcalloc(stage->n_params + 2, sizeof *params);
    Fleetburn__Param **ptrs = xcalloc(stage->n_params + 2, sizeof *ptrs);
    size_t n = 0;
    for (size_t i = 0; i < stage->n_params; i++) {
        if (t->rail && !strcmp(stage->params[i].key, "device"))
            continue; /* a bisect test on one rail: its own device below */
        fleetburn__param__init(&params[n]);
        params[n].key = stage->params[i].key;
        params[n].value = stage->params[i].value;
        ptrs[n] = &params[n];
        n++;
    }
    if (t->rail) {
        fleetburn__param__init(&params[n]);
        params[n].key = "device";
        params[n].value = t->rail;
        ptrs[n] = &params[n];
        n++;
    }
    m.params = ptrs;
    m.n_params = n;
    Fleetburn__Group group;
    const char **addresses = xcalloc(t->n_members, sizeof *addresses);
    if (t->group) {
        s_fill_group(self, t, rank, &group, addresses);
        m.group = &group;
    }
    int rc = coord_send_run_task(self->coord, t->nodes[rank], &m);
    free(addresses);
    free(ptrs);
    free(params);
    return rc;
}

static void s_dispatch(runner_t *self, rtask_t *t)
{
    const fb_stage_t *stage = s_stage(self);
    for (size_t k = 0; k < t->n_members; k++) {
        if (coord_node_alive(self->coord, t->nodes[k]))
            continue;
        char *who = s_member_name(t, k);
        char *why = t->group ? xasprintf("member %s not connected when the round started", who)
                             : xstrdup("node not connected when the stage started");
        t->members[k].verdict = FB_VERDICT_LOST;
        s_decide(self, t, FB_VERDICT_LOST, why, t->nodes[k]);
        free(why);
        free(who);
        return; /* nothing was sent: no member waits for it */
    }
    for (size_t k = 0; k < t->n_members; k++) {
        int rc = s_send_member(self, t, k);
        if (rc) {
            char *why = xasprintf("could not send the task to %s: %s", t->nodes[k], strerror(-rc));
            t->members[k].verdict = FB_VERDICT_ERROR;
            s_decide(self, t, FB_VERDICT_ERROR, why, t->nodes[k]);
            free(why);
            return;
        }
        t->members[k].sent = true;
        if (t->group)
            coord_event(self->coord, self->id, t->id, t->nodes[k], "dispatch", "%s rank %zu of %zu",
                        stage->workload, k, t->n_members);
        else
            coord_event(self->coord, self->id, t->id, t->nodes[k], "dispatch", "%s",
                        stage->workload);
    }
}

static void s_on_deadline(uv_timer_t *h)
{
    runner_t *self = h->data;
    self->stop_waiting = true; /* whatever still runs is left behind */
    if (self->winding_down) {
        s_check_round_done(self);
        return;
    }
    char why[128];
    snprintf(why, sizeof why, "no result within the stage deadline of %.1f s",
             (double)fb_stage_deadline_ms(s_stage(self)->timeout_ms) / 1000.0);
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        if (t->verdict == FB_VERDICT_NONE)
            s_decide(self, t, FB_VERDICT_TIMEOUT, why, t->group ? NULL : t->nodes[0]);
        s_cancel_running(self, t, why);
    }
    s_check_round_done(self);
}

/* ---- planning ---- */

static size_t s_select_nodes(runner_t *self, char ***names_out)
{
    const fb_stage_t *stage = s_stage(self);
    bool all = false;
    char **names = NULL;
    size_t n = 0;
    char err[256];
    if (fb_stage_nodes(self->campaign, stage, &all, &names, &n, err, sizeof err)) {
        /* The parser validated the expression; this cannot fail on a parsed campaign. */
        log_error("stage %s: %s", stage->name, err);
        *names_out = NULL;
        return 0;
    }
    if (all) {
        hostlist_free(names, n);
        return coord_alive_names(self->coord, names_out);
    }
    *names_out = names;
    return n;
}

/* Plans round `round` of the running stage over names. 0, or -errno with err. */
static int s_plan_round(runner_t *self, const char *const *names, size_t n, unsigned round,
                        fb_plan_t *out, char *err, size_t errlen)
{
    const fb_stage_t *st = s_stage(self);
    int rc;
    switch (st->scope) {
    case FB_SCOPE_GROUP:
        rc = fb_plan_groups(names, n, st->group_size, out);
        break;
    case FB_SCOPE_PAIRS:
        if (st->pairing == FB_PAIRING_RANDOM) {
            rc = fb_plan_pairs_random(names, n, self->seed + round, out);
        } else if (st->pairing == FB_PAIRING_ROUND_ROBIN) {
            rc = fb_plan_pairs_round_robin(names, n, round, out);
        } else if (!st->topology) {
            snprintf(err, errlen, "the topology %s was not loaded", st->topology_path);
            return -ENOENT;
        } else {
            rc = fb_plan_pairs_topology(st->topology, names, n, round, out);
            for (size_t i = 0; rc == -ENOENT && i < n; i++)
                if (!fb_topology_leaf_of(st->topology, names[i])) {
                    snprintf(err, errlen, "node %s is not in the topology %s", names[i],
                             st->topology_path);
                    return rc;
                }
        }
        break;
    default:
        rc = fb_plan_nodes(names, n, out);
    }
    if (rc)
        snprintf(err, errlen, "cannot plan round %u: %s", round, strerror(-rc));
    return rc;
}

/* Plans every round of the running stage (a bisect pairs stage: none here, its session plans
 * them). 0, or -errno with err. */
static int s_plan_stage(runner_t *self, char **names, size_t n, char *err, size_t errlen)
{
    const fb_stage_t *st = s_stage(self);
    self->n_rounds = st->scope == FB_SCOPE_PAIRS ? st->rounds : 1;
    self->seed = st->has_seed ? st->seed : fb_now_ms() ^ ((uint64_t)self->stage << 32);
    if (st->on_fail == FB_ON_FAIL_BISECT) {
        int rc = s_bisect_begin(self, names, n, err, errlen);
        if (rc)
            return rc;
        if (st->scope == FB_SCOPE_PAIRS) {
            self->bisect_plans = true;
            self->n_rounds = 0;
            self->planned_tasks = n / 2 * (st->n_rails ? st->n_rails : 1) * st->rounds;
            return 0;
        }
    }
    self->plans = xcalloc(self->n_rounds, sizeof *self->plans);
    for (unsigned r = 0; r < self->n_rounds; r++) {
        int rc = s_plan_round(self, (const char *const *)names, n, r, &self->plans[r], err, errlen);
        if (rc)
            return rc;
        self->planned_tasks += self->plans[r].n_groups;
    }
    return 0;
}

/* "round 1 of 3: 2 pairs (random, seed 7)" style description of the running round. */
static void s_round_event(runner_t *self, const fb_plan_t *plan)
{
    const fb_stage_t *st = s_stage(self);
    if (st->scope == FB_SCOPE_NODE)
        return;
    char how[96] = "";
    if (st->scope == FB_SCOPE_PAIRS && st->pairing == FB_PAIRING_RANDOM)
        snprintf(how, sizeof how, " (random, seed %" PRIu64 ")", self->seed + self->round);
    else if (st->scope == FB_SCOPE_PAIRS)
        snprintf(how, sizeof how, " (%s)", fb_pairing_name(st->pairing));
    coord_event(self->coord, self->id, NULL, NULL, "round", "%s round %u of %u: %zu %s%s, %zu idle",
                st->name, self->round + 1, self->n_rounds, plan->n_groups,
                st->scope == FB_SCOPE_PAIRS ? "pair(s)" : "group(s)", how, plan->n_idle);
    for (size_t i = 0; i < plan->n_idle; i++)
        coord_event(self->coord, self->id, NULL, plan->idle[i], "idle", "idle in %s round %u: %s",
                    st->name, self->round + 1,
                    st->scope == FB_SCOPE_PAIRS ? "no partner this round (odd number of nodes)"
                                                : "left over after the groups were formed");
}

/* Sends the tasks of the round that begins and starts its deadline. */
static void s_dispatch_round(runner_t *self)
{
    for (size_t i = self->round_first; i < self->n_tasks; i++)
        s_dispatch(self, self->tasks[i]);
    uv_timer_start(&self->deadline, s_on_deadline, fb_stage_deadline_ms(s_stage(self)->timeout_ms),
                   0);
    s_progress(self);
    s_check_round_done(self);
}

static void s_begin_round(runner_t *self)
{
    const fb_stage_t *stage = s_stage(self);
    const fb_plan_t *plan = &self->plans[self->round];
    store_t *store = coord_store(self->coord);
    bool group = stage->scope != FB_SCOPE_NODE;
    self->round_first = self->n_tasks;
    s_round_event(self, plan);
    for (size_t g = 0; g < plan->n_groups; g++) {
        char *id = group
                       ? xasprintf("%s/%zu/r%u.g%zu", self->id, self->stage, self->round, g)
                       : xasprintf("%s/%zu/%s", self->id, self->stage, plan->groups[g].members[0]);
        rtask_t *t = s_task_new(self, id, &plan->groups[g], group, self->round);
        if (store_task_create(store, t->id, self->id, self->stage_ids[self->stage],
                              (const char *const *)t->nodes, t->n_members, fb_now_ms()))
            log_error("cannot store task %s: %s", t->id, store_errmsg(store));
    }
    s_dispatch_round(self);
}

/* A round of the diagnosis session (self->bround): a sweep of a bisect pairs stage
 * (<campaign>/<stage>/r<k>.g<j>) or a follow-up round (b<k>.g<j>), one task per test. */
static void s_begin_bisect_round(runner_t *self)
{
    const fb_stage_t *stage = s_stage(self);
    const fb_bisect_round_t *br = &self->bround;
    store_t *store = coord_store(self->coord);
    self->bisect_next = false;
    self->round_first = self->n_tasks;
    self->round = self->bisect_plans ? br->round - 1 : br->round;
    unsigned k = fb_bisect_follow_ups(self->bisect);
    coord_event(self->coord, self->id, NULL, NULL, br->follow_up ? "bisect" : "round", "%s %s",
                stage->name, br->why);
    log_info("stage %s: %s", stage->name, br->why);
    for (size_t i = 0; i < br->n_tests; i++) {
        const fb_bisect_test_t *bt = &br->tests[i];
        char *id = br->follow_up
                       ? xasprintf("%s/%zu/b%u.g%zu", self->id, self->stage, k, i)
                       : xasprintf("%s/%zu/r%u.g%zu", self->id, self->stage, self->round, i);
        fb_group_t g = {bt->members, bt->n_members};
        rtask_t *t = s_task_new(self, id, &g, true, self->round);
        t->rail = bt->rail ? xstrdup(bt->rail) : NULL;
        t->planned = (long)i;
        if (store_task_create(store, t->id, self->id, self->stage_ids[self->stage],
                              (const char *const *)t->nodes, t->n_members, fb_now_ms()))
            log_error("cannot store task %s: %s", t->id, store_errmsg(store));
        if (bt->suspect)
            coord_event(self->coord, self->id, t->id, t->nodes[0], "bisect", "re-tests %s%s%s%s%s",
                        bt->suspect, bt->n_members == 2 ? " with trusted " : "",
                        bt->n_members == 2 ? t->nodes[1] : "", bt->rail ? " on " : "",
                        bt->rail ? bt->rail : "");
    }
    if (self->planned_tasks < self->n_tasks)
        self->planned_tasks = self->n_tasks;
    fb_bisect_round_clear(&self->bround);
    s_dispatch_round(self);
}

static void s_begin_stage(runner_t *self)
{
    s_clear_tasks(self);
    if (self->stage >= self->campaign->n_stages) {
        s_finish_campaign(self);
        return;
    }
    const fb_stage_t *stage = s_stage(self);
    store_t *store = coord_store(self->coord);
    store_stage_start(store, self->stage_ids[self->stage], fb_now_ms());
    char **names = NULL;
    size_t n = s_select_nodes(self, &names);
    self->task_index = strmap_new();
    char err[512];
    int rc = s_plan_stage(self, names, n, err, sizeof err);
    hostlist_free(names, n);
    self->stage_running = true;
    if (rc) {
        coord_event(self->coord, self->id, NULL, NULL, "stage", "%s cannot run: %s", stage->name,
                    err);
        log_error("stage %s cannot run: %s", stage->name, err);
        s_end_stage(self); /* no tasks: the stage verdict is error */
        return;
    }
    coord_event(self->coord, self->id, NULL, NULL, "stage", "%s started: %s on %zu node(s)%s%s%s",
                stage->name, stage->workload, n, stage->scope == FB_SCOPE_NODE ? "" : ", scope ",
                stage->scope == FB_SCOPE_NODE ? "" : fb_scope_name(stage->scope),
                self->bisect ? ", on_fail: bisect" : "");
    log_info("stage %zu/%zu %s: %s on %zu node(s)", self->stage + 1, self->campaign->n_stages,
             stage->name, stage->workload, n);
    if (n == 0)
        log_warn("stage %s selected no connected node", stage->name);
    if (self->bisect_plans) {
        if (!s_bisect_continue(self))
            s_end_stage(self);
        return;
    }
    if (self->planned_tasks == 0) {
        s_round_event(self, &self->plans[0]); /* says who was left idle */
        s_end_stage(self);
        return;
    }
    s_begin_round(self);
}

static void s_on_next_cb(uv_timer_t *h)
{
    runner_t *self = h->data;
    if (self->next_is_round && self->bisect_next)
        s_begin_bisect_round(self);
    else if (self->next_is_round)
        s_begin_round(self);
    else
        s_begin_stage(self);
}

/* ---- lifecycle ---- */

runner_t *runner_new(coord_t *coord, fb_campaign_t **campaign, const char *id, const char *yaml,
                     coord_progress_cb cb, void *arg)
{
    runner_t *self = xcalloc(1, sizeof *self);
    self->coord = coord;
    self->campaign = *campaign;
    *campaign = NULL;
    self->id = xstrdup(id);
    self->cb = cb;
    self->arg = arg;
    self->started_mono = fb_mono_ms();
    store_t *store = coord_store(coord);
    if (store_campaign_create(store, id, self->campaign->name, self->campaign->source, yaml,
                              fb_now_ms())) {
        log_error("cannot store campaign %s: %s", id, store_errmsg(store));
        fb_campaign_destroy(&self->campaign);
        free(self->id);
        free(self);
        return NULL;
    }
    self->stage_ids = xcalloc(self->campaign->n_stages, sizeof(int64_t));
    self->locals = xcalloc(self->campaign->n_stages, sizeof *self->locals);
    for (size_t i = 0; i < self->campaign->n_stages; i++) {
        const fb_stage_t *s = &self->campaign->stages[i];
        char *params = s_params_json(s);
        store_stage_create(store, id, (int)i, s->name, s->workload, params,
                           fb_on_fail_name(s->on_fail), s->timeout_ms, &self->stage_ids[i]);
        free(params);
    }
    coord_event(coord, id, NULL, NULL, "campaign", "started: %s (%zu stages) from %s",
                self->campaign->name, self->campaign->n_stages, self->campaign->source);
    uv_loop_t *loop = coord_loop(coord);
    uv_timer_init(loop, &self->deadline);
    uv_timer_init(loop, &self->next);
    self->deadline.data = self->next.data = self;
    self->open_handles = 2;
    return self;
}

void runner_start(runner_t *self)
{
    s_schedule_next(self, false);
}

static void s_on_closed(uv_handle_t *h)
{
    runner_t *self = h->data;
    if (--self->open_handles > 0)
        return;
    s_clear_tasks(self);
    for (size_t i = 0; self->locals && i < self->campaign->n_stages; i++)
        s_locals_free(&self->locals[i]);
    free(self->locals);
    fb_campaign_destroy(&self->campaign);
    free(self->stage_ids);
    free(self->id);
    free(self);
}

void runner_destroy(runner_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    runner_t *self = *self_p;
    *self_p = NULL;
    uv_close((uv_handle_t *)&self->deadline, s_on_closed);
    uv_close((uv_handle_t *)&self->next, s_on_closed);
}

const char *runner_id(const runner_t *self)
{
    return self->id;
}

bool runner_finished(const runner_t *self)
{
    return self->finished;
}

/* ---- events ---- */

/* Keeps the judged metrics of a pair member's result. */
static void s_note_metrics(const runner_t *self, rmember_t *m, const fb_result_t *r)
{
    const fb_pair_metrics_t *pm = fb_pairjudge_metrics(s_stage(self)->workload);
    if (s_stage(self)->scope != FB_SCOPE_PAIRS || !pm)
        return;
    const fb_metric_t *tx = fb_result_metric(r, pm->tx), *rx = fb_result_metric(r, pm->rx);
    m->tx = tx ? tx->value : NAN;
    m->rx = rx ? rx->value : NAN;
}

/* A member's result, while its task is undecided: decides the task when the group's verdict is
 * known; otherwise the exchanges the member never posted to cannot complete any more. */
static void s_member_result(runner_t *self, rtask_t *t, size_t rank, const fb_result_t *r)
{
    fb_verdict_t *verdicts = xcalloc(t->n_members, sizeof *verdicts);
    for (size_t k = 0; k < t->n_members; k++)
        verdicts[k] = t->members[k].verdict;
    size_t who = rank;
    fb_verdict_t v = fb_group_verdict(verdicts, t->n_members, &who);
    free(verdicts);
    if (v == FB_VERDICT_NONE) {
        char *name = s_member_name(t, rank);
        char *why = xasprintf("%s ended (%s) without posting", name, fb_verdict_name(r->verdict));
        coord_exchange_member_ended(self->coord, t->id, (unsigned)rank, why);
        free(why);
        free(name);
        return;
    }
    bool all_in = true;
    for (size_t k = 0; k < t->n_members; k++)
        all_in &= t->members[k].verdict != FB_VERDICT_NONE;
    if (!t->group || all_in) { /* the results set the stored verdict themselves */
        t->verdict = v;
        if (t->group)
            coord_exchange_task_ended(self->coord, t->id, "the task has ended");
        return;
    }
    char *name = s_member_name(t, who);
    const char *error = who == rank && r->error ? r->error : NULL;
    char *why = xasprintf("member %s %s%s%s", name, fb_verdict_name(v), error ? ": " : "",
                          error ? error : "");
    s_decide(self, t, v, why, t->nodes[who]);
    free(why);
    free(name);
}

void runner_on_result(runner_t *self, const fb_result_t *r)
{
    rtask_t *t = self->task_index ? strmap_get(self->task_index, r->task_id) : NULL;
    size_t rank = t ? s_rank_of(t, r->node) : SIZE_MAX;
    if (rank == SIZE_MAX)
        return; /* not a task of this stage: stored, nothing to decide */
    rmember_t *m = &t->members[rank];
    if (m->verdict == FB_VERDICT_NONE) {
        m->verdict = r->verdict;
        s_note_metrics(self, m, r);
        s_note_counters(self, m, r);
        if (t->verdict == FB_VERDICT_NONE)
            s_member_result(self, t, rank, r);
    }
    /* a late result for a task already decided is stored, but the verdict stands */
    s_progress(self);
    if (t->verdict != FB_VERDICT_NONE)
        s_check_round_done(self);
}

void runner_on_node_lost(runner_t *self, const char *node, const char *why)
{
    char *reason = xasprintf("agent lost (%s)", why);
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        size_t rank = s_rank_of(t, node);
        if (rank != SIZE_MAX)
            s_member_gone(self, t, rank, FB_VERDICT_LOST, reason);
    }
    free(reason);
    s_progress(self);
    s_check_round_done(self);
}

static bool s_listed(char **ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ids[i], id))
            return true;
    return false;
}

void runner_on_hello(runner_t *self, const char *node, char **running, size_t n_running,
                     char **unacked, size_t n_unacked)
{
    bool changed = false;
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        size_t rank = s_rank_of(t, node);
        if (rank == SIZE_MAX || t->members[rank].verdict != FB_VERDICT_NONE ||
            s_listed(running, n_running, t->id))
            continue;
        char *result_id = t->group ? xasprintf("%s@%s", t->id, node) : xstrdup(t->id);
        bool spooled = s_listed(unacked, n_unacked, result_id);
        free(result_id);
        if (spooled)
            continue; /* its result is on the way */
        s_member_gone(self, t, rank, FB_VERDICT_LOST, "agent restarted; the task died with it");
        changed = true;
    }
    if (changed) {
        s_progress(self);
        s_check_round_done(self);
    }
}

const char *const *runner_group(const runner_t *self, const char *task_id, size_t *n_out)
{
    rtask_t *t = self->task_index ? strmap_get(self->task_index, task_id) : NULL;
    if (!t || !t->group || t->verdict != FB_VERDICT_NONE)
        return NULL;
    *n_out = t->n_members;
    return (const char *const *)t->nodes;
}
