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
#include "runner_internal.h"
#include "common/hostlist.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strmap.h"
#include "common/util.h"
#include "scheduler/bisect.h"
#include "scheduler/campaign.h"
#include "scheduler/pairing.h"
#include "scheduler/pairjudge.h"
#include "scheduler/slurm.h"
#include "scheduler/stage.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *s_params_json(const fb_stage_t *stage);
static void s_finish_campaign(runner_t *self);
static size_t s_select_nodes(runner_t *self, char ***names_out);
static int s_plan_round(runner_t *self, const char *const *names, size_t n, unsigned round,
                        fb_plan_t *out, char *err, size_t errlen);
static void s_begin_stage(runner_t *self);
static void s_on_next_cb(uv_timer_t *h);
static void s_on_closed(uv_handle_t *h);

const fb_stage_t *rn_stage(const runner_t *self)
{
    return &self->campaign->stages[self->stage];
}

/* The nodes of the stage's tasks that were sent and are not decided, with their task ids. */
static size_t s_running(const runner_t *self, const char ***nodes, const char ***tasks,
                        unsigned *n_tasks)
{
    size_t n = 0, cap = 0;
    *nodes = *tasks = NULL;
    *n_tasks = 0;
    for (size_t i = 0; self->stage_running && i < self->n_tasks; i++) {
        const rtask_t *t = self->tasks[i];
        if (t->verdict != FB_VERDICT_NONE)
            continue;
        bool any = false;
        for (size_t m = 0; m < t->n_members; m++) {
            if (!t->members[m].sent || t->members[m].verdict != FB_VERDICT_NONE)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                *nodes = xrealloc(*nodes, cap * sizeof **nodes);
                *tasks = xrealloc(*tasks, cap * sizeof **tasks);
            }
            (*nodes)[n] = t->nodes[m];
            (*tasks)[n++] = t->id;
            any = true;
        }
        *n_tasks += any;
    }
    return n;
}

static void s_fill_progress(const runner_t *self, coord_progress_t *out)
{
    coord_progress_t p = {0};
    p.campaign_id = self->id;
    p.campaign_name = self->campaign->name;
    p.stage_count = (unsigned)self->campaign->n_stages;
    p.stage_index = (unsigned)self->stage;
    p.stage = self->stage < self->campaign->n_stages ? rn_stage(self)->name : "";
    /* Between stages the tasks are the last stage's: the next stage's counts start at 0. */
    if (self->stage_running) {
        p.tasks_total =
            (unsigned)(self->planned_tasks > self->n_tasks ? self->planned_tasks : self->n_tasks);
        for (size_t i = 0; i < self->n_tasks; i++) {
            if (self->tasks[i]->verdict == FB_VERDICT_NONE)
                continue;
            p.tasks_done++;
            if (!fb_verdict_ok(self->tasks[i]->verdict))
                p.tasks_failed++;
        }
        const char **nodes, **tasks;
        size_t n = s_running(self, &nodes, &tasks, &p.tasks_running);
        coord_progress_nodes(self->coord, nodes, tasks, n, &p);
        free(nodes);
        free(tasks);
    }
    p.stage_note = self->stage_note;
    p.elapsed_ms = fb_mono_ms() - self->started_mono;
    p.finished = self->finished;
    p.verdict = self->verdict;
    p.state = !self->finished ? "running" : self->cancelled ? "cancelled" : "finished";
    *out = p;
}

void rn_progress(runner_t *self)
{
    self->last_progress = fb_mono_ms();
    if (!self->cb)
        return;
    coord_progress_t p;
    s_fill_progress(self, &p);
    self->cb(&p, self->arg);
}

void rn_progress_after_result(runner_t *self)
{
    if (fb_mono_ms() - self->last_progress >= RN_RESULT_PROGRESS_MS)
        rn_progress(self);
}

void runner_progress(const runner_t *self, coord_progress_t *out)
{
    s_fill_progress(self, out);
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

void rn_schedule_next(runner_t *self, bool round)
{
    self->next_is_round = round;
    uv_timer_start(&self->next, s_on_next_cb, 0, 0);
}

static void s_actions_done(void *arg)
{
    runner_t *self = arg;
    self->slurm_actions = NULL;
    if (!self->frozen) /* frozen: the store lost writes; the campaign is rebuilt from it */
        s_finish_campaign(self);
}

static void s_finish_campaign(runner_t *self)
{
    /* The campaign's Slurm actions come first, so that its report and its watchers see what they
     * did; a cancelled campaign takes none. */
    if (!self->actions_started && !self->cancelled) {
        self->actions_started = true;
        self->slurm_actions =
            coord_slurm_actions_start(self->coord, self->id, self->campaign, s_actions_done, self);
    }
    if (self->slurm_actions || self->finished)
        return;
    self->finished = true;
    self->verdict = self->cancelled    ? FB_VERDICT_ERROR
                    : self->any_failed ? FB_VERDICT_FAIL
                                       : FB_VERDICT_PASS;
    const char *state = self->cancelled ? "cancelled" : "finished";
    store_t *store = coord_store(self->coord);
    if (store_campaign_end(store, self->id, state, self->verdict, fb_now_ms()))
        log_error("cannot store the end of campaign %s: %s", self->id, store_errmsg(store));
    coord_event(self->coord, self->id, NULL, NULL, "campaign", "%s: %s", state,
                fb_verdict_name(self->verdict));
    log_info("campaign %s (%s) %s: %s", self->id, self->campaign->name, state,
             fb_verdict_name(self->verdict));
    rn_progress(self);
}

void rn_end_stage(runner_t *self)
{
    uv_timer_stop(&self->deadline);
    self->stage_running = false;
    if (!self->bisect) /* a bisect stage's flows are judged by its session */
        rn_judge_pairs(self);
    fb_verdict_t *verdicts = xcalloc(self->n_tasks + 1, sizeof *verdicts);
    for (size_t i = 0; i < self->n_tasks; i++)
        verdicts[i] = self->tasks[i]->verdict;
    fb_verdict_t verdict = self->bisect ? rn_bisect_finish(self, verdicts, self->n_tasks)
                                        : fb_stage_verdict(verdicts, self->n_tasks);
    free(verdicts);
    rn_keep_locals(self);
    const fb_stage_t *stage = rn_stage(self);
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
                        "%s skipped: stage %s failed with on_fail: stop", rn_stage(self)->name,
                        stage->name);
        }
        free(self->stage_note);
        self->stage_note = xasprintf("the stages after %s are skipped: it failed with on_fail: "
                                     "stop",
                                     stage->name);
    }
    rn_progress(self);
    rn_schedule_next(self, false);
}

static size_t s_select_nodes(runner_t *self, char ***names_out)
{
    const fb_stage_t *stage = rn_stage(self);
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
        fb_hostlist_free(names, n);
        return coord_campaign_alive_nodes(self->coord, self->id, names_out);
    }
    *names_out = names;
    return n;
}

/* Plans round `round` of the running stage over names. 0, or -errno with err. */
static int s_plan_round(runner_t *self, const char *const *names, size_t n, unsigned round,
                        fb_plan_t *out, char *err, size_t errlen)
{
    const fb_stage_t *st = rn_stage(self);
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
int rn_plan_stage(runner_t *self, char **names, size_t n, uint64_t seed, char *err, size_t errlen)
{
    const fb_stage_t *st = rn_stage(self);
    self->n_rounds = st->scope == FB_SCOPE_PAIRS ? st->rounds : 1;
    self->seed = seed;
    if (st->on_fail == FB_ON_FAIL_BISECT) {
        int rc = rn_bisect_begin(self, names, n, err, errlen);
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

/* A stage that cannot run says why: on the timeline, in the log, and to its watchers. */
static void s_cannot_run(runner_t *self, const char *why)
{
    const fb_stage_t *stage = rn_stage(self);
    coord_event(self->coord, self->id, NULL, NULL, "stage", "%s cannot run: %s", stage->name, why);
    log_info("stage %s cannot run: %s", stage->name, why);
    free(self->stage_note);
    self->stage_note =
        xasprintf("stage %s (%s) cannot run: %s", stage->name, stage->workload, why);
}

static void s_begin_stage(runner_t *self)
{
    rn_clear_tasks(self);
    if (self->stage >= self->campaign->n_stages) {
        s_finish_campaign(self);
        return;
    }
    const fb_stage_t *stage = rn_stage(self);
    store_t *store = coord_store(self->coord);
    store_stage_start(store, self->stage_ids[self->stage], fb_now_ms());
    char **names = NULL;
    size_t n = s_select_nodes(self, &names);
    self->task_index = fb_strmap_new();
    char err[512];
    /* The plan's inputs are stored: a resumed stage is planned again exactly (runner_resume.c). */
    uint64_t seed = stage->has_seed ? stage->seed : fb_now_ms() ^ ((uint64_t)self->stage << 32);
    int rc =
        store_stage_plan(store, self->stage_ids[self->stage], seed, (const char *const *)names, n);
    if (rc)
        log_error("cannot store the plan of stage %s: %s", stage->name, store_errmsg(store));
    rc = rn_plan_stage(self, names, n, seed, err, sizeof err);
    fb_hostlist_free(names, n);
    self->stage_running = true;
    if (rc) {
        s_cannot_run(self, err);
        rn_end_stage(self); /* no tasks: the stage verdict is error */
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
        if (!rn_bisect_continue(self))
            rn_end_stage(self);
        return;
    }
    if (self->planned_tasks == 0) {
        rn_round_event(self, &self->plans[0]); /* says who was left idle */
        if (n == 0)
            snprintf(err, sizeof err, "it selected no connected node");
        else
            snprintf(err, sizeof err, "%zu node(s) selected, too few for a %s", n,
                     stage->scope == FB_SCOPE_PAIRS ? "pair" : "group");
        s_cannot_run(self, err);
        rn_end_stage(self);
        return;
    }
    rn_begin_round(self);
}

static void s_on_next_cb(uv_timer_t *h)
{
    runner_t *self = h->data;
    if (self->next_is_round && self->bisect_next)
        rn_begin_bisect_round(self);
    else if (self->next_is_round)
        rn_begin_round(self);
    else
        s_begin_stage(self);
}

/* Progress every second while the campaign runs: elapsed time and the nodes' phases move even
 * when no task ends for hours. */
#define S_TICK_MS 1000
static void s_on_tick(uv_timer_t *h)
{
    runner_t *self = h->data;
    if (!self->finished && !self->frozen)
        rn_progress(self);
}

runner_t *rn_alloc(coord_t *coord, fb_campaign_t **campaign, const char *id, coord_progress_cb cb,
                   void *arg)
{
    runner_t *self = xcalloc(1, sizeof *self);
    self->coord = coord;
    self->campaign = *campaign;
    *campaign = NULL;
    self->id = xstrdup(id);
    self->cb = cb;
    self->arg = arg;
    self->started_mono = fb_mono_ms();
    self->stage_ids = xcalloc(self->campaign->n_stages, sizeof(int64_t));
    self->locals = xcalloc(self->campaign->n_stages, sizeof *self->locals);
    uv_loop_t *loop = coord_loop(coord);
    uv_timer_init(loop, &self->deadline);
    uv_timer_init(loop, &self->next);
    uv_timer_init(loop, &self->resume_timer);
    uv_timer_init(loop, &self->tick);
    self->deadline.data = self->next.data = self->resume_timer.data = self->tick.data = self;
    self->open_handles = 4;
    uv_timer_start(&self->tick, s_on_tick, S_TICK_MS, S_TICK_MS);
    return self;
}

/* Everything a resumed campaign needs besides its results: its text, the files it names and
 * every stage, written before anything runs. */
static int s_store_campaign(runner_t *self, const char *yaml, const fb_campaign_file_t *files,
                            size_t n_files)
{
    store_t *store = coord_store(self->coord);
    int rc = store_campaign_create(store, self->id, self->campaign->name, self->campaign->source,
                                   yaml, fb_now_ms());
    for (size_t i = 0; rc == 0 && i < n_files; i++)
        rc =
            store_campaign_add_file(store, self->id, files[i].name, files[i].content, files[i].len);
    for (size_t i = 0; rc == 0 && i < self->campaign->n_selections; i++)
        rc = store_node_selection_add(store, self->id, self->campaign->selections[i].expr,
                                      self->campaign->selections[i].nodes);
    for (size_t i = 0; rc == 0 && i < self->campaign->n_stages; i++) {
        const fb_stage_t *s = &self->campaign->stages[i];
        char *params = s_params_json(s);
        rc = store_stage_create(store, self->id, (int)i, s->name, s->workload, params,
                                fb_on_fail_name(s->on_fail), s->timeout_ms, &self->stage_ids[i]);
        free(params);
    }
    if (rc)
        log_error("cannot store campaign %s: %s", self->id, store_errmsg(store));
    return rc;
}

runner_t *runner_new(coord_t *coord, fb_campaign_t **campaign, const char *id, const char *yaml,
                     const fb_campaign_file_t *files, size_t n_files, coord_progress_cb cb,
                     void *arg)
{
    runner_t *self = rn_alloc(coord, campaign, id, cb, arg);
    if (s_store_campaign(self, yaml, files, n_files)) {
        runner_destroy(&self);
        return NULL;
    }
    coord_event(coord, id, NULL, NULL, "campaign", "started: %s (%zu stages) from %s",
                self->campaign->name, self->campaign->n_stages, self->campaign->source);
    for (size_t i = 0; i < self->campaign->n_selections; i++)
        coord_event(coord, id, NULL, NULL, "slurm", "nodes: %s is %s (sinfo, at submission)",
                    self->campaign->selections[i].expr, self->campaign->selections[i].nodes);
    return self;
}

void runner_start(runner_t *self)
{
    rn_schedule_next(self, false);
}

static void s_on_closed(uv_handle_t *h)
{
    runner_t *self = h->data;
    if (--self->open_handles > 0)
        return;
    rn_clear_tasks(self);
    for (size_t i = 0; self->locals && i < self->campaign->n_stages; i++)
        rn_locals_free(&self->locals[i]);
    free(self->locals);
    fb_hostlist_free(self->resume_wait, self->n_resume_wait);
    free(self->stage_note);
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
    coord_slurm_actions_forget(self->slurm_actions);
    uv_close((uv_handle_t *)&self->deadline, s_on_closed);
    uv_close((uv_handle_t *)&self->next, s_on_closed);
    uv_close((uv_handle_t *)&self->resume_timer, s_on_closed);
    uv_close((uv_handle_t *)&self->tick, s_on_closed);
}

const char *runner_id(const runner_t *self)
{
    return self->id;
}

const fb_campaign_t *runner_campaign(const runner_t *self)
{
    return self->campaign;
}

bool runner_finished(const runner_t *self)
{
    return self->finished;
}

void runner_freeze(runner_t *self)
{
    self->frozen = true;
    uv_timer_stop(&self->deadline);
    uv_timer_stop(&self->next);
    uv_timer_stop(&self->resume_timer);
}

void runner_abandon(runner_t *self, const char *why)
{
    for (size_t i = self->round_first; i < self->n_tasks; i++)
        rn_cancel_running(self, self->tasks[i], why);
}

void runner_cancel(runner_t *self, const char *why)
{
    if (self->finished)
        return;
    self->cancelled = true;
    self->resuming = false;
    uv_timer_stop(&self->resume_timer);
    uv_timer_stop(&self->deadline);
    uv_timer_stop(&self->next);
    store_t *store = coord_store(self->coord);
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        if (t->verdict == FB_VERDICT_NONE)
            rn_decide(self, t, FB_VERDICT_ERROR, why, t->group ? NULL : t->nodes[0]);
        rn_cancel_running(self, t, why);
    }
    if (self->stage_running && self->stage < self->campaign->n_stages) {
        store_stage_finish(store, self->stage_ids[self->stage], FB_VERDICT_ERROR, fb_now_ms());
        coord_event(self->coord, self->id, NULL, NULL, "stage", "%s cancelled: %s",
                    rn_stage(self)->name, why);
        self->stage_running = false;
        self->stage++;
    }
    for (; self->stage < self->campaign->n_stages; self->stage++) {
        store_stage_finish(store, self->stage_ids[self->stage], FB_VERDICT_SKIPPED, fb_now_ms());
        coord_event(self->coord, self->id, NULL, NULL, "stage",
                    "%s skipped: the campaign was "
                    "cancelled",
                    rn_stage(self)->name);
    }
    rn_cancel_settle(self);
}

static void s_on_cancel_waited(uv_timer_t *h)
{
    runner_t *self = h->data;
    if (!self->finished)
        s_finish_campaign(self);
}

/* A cancelled campaign ends, and frees its nodes, once the members it cancelled have reported
 * (or S_WIND_DOWN_MS passed): the next campaign on those nodes must not overlap them. */
void rn_cancel_settle(runner_t *self)
{
    if (!self->cancelled || self->finished)
        return;
    if (!rn_members_running(self)) {
        uv_timer_stop(&self->deadline);
        s_finish_campaign(self);
    } else if (!uv_is_active((uv_handle_t *)&self->deadline)) {
        uv_timer_start(&self->deadline, s_on_cancel_waited, S_WIND_DOWN_MS, 0);
    }
}
