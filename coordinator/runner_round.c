/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's tasks and rounds (runner.c describes the whole): tasks and their members, dispatch,
 * verdicts from results, lost agents and deadlines, and the end of a round. */
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
#include "scheduler/stage.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_task_free(rtask_t *t);
static bool s_round_busy(const runner_t *self, bool *uncancelled);
static void s_fill_group(runner_t *self, const rtask_t *t, size_t rank, Fleetburn__Group *g,
                         const char **addresses);
static void s_dispatch(runner_t *self, rtask_t *t);
static void s_member_result(runner_t *self, rtask_t *t, size_t rank, const fb_result_t *r);
static bool s_listed(char **ids, size_t n, const char *id);

rtask_t *rn_task_new(runner_t *self, char *id, const fb_group_t *g, bool group, unsigned round)
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
    fb_strmap_put(self->task_index, t->id, t);
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

void rn_clear_tasks(runner_t *self)
{
    self->round_over = false;
    for (size_t i = 0; i < self->n_tasks; i++)
        s_task_free(self->tasks[i]);
    free(self->tasks);
    self->tasks = NULL;
    self->n_tasks = self->round_first = 0;
    fb_strmap_destroy(&self->task_index);
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
    self->bisect_follow_ms = 0;
}

size_t rn_rank_of(const rtask_t *t, const char *node)
{
    for (size_t i = 0; node && i < t->n_members; i++)
        if (!strcmp(t->nodes[i], node))
            return i;
    return SIZE_MAX;
}

/* "n3 (rank 2)" for a group member, "n3" for a task of scope node. */
char *rn_member_name(const rtask_t *t, size_t rank)
{
    return t->group ? xasprintf("%s (rank %zu)", t->nodes[rank], rank) : xstrdup(t->nodes[rank]);
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

/* Ends the round when every task has a verdict and no member still runs (see the top of the
 * file): then the next round begins (from a timer), or the stage ends. */
void rn_check_round_done(runner_t *self)
{
    if (!self->stage_running || self->resuming)
        return; /* a resumed round is judged once its agents had time to register again */
    if (self->round_over)
        return; /* ended already; events until the next round begins change nothing */
    for (size_t i = self->round_first; i < self->n_tasks; i++)
        if (self->tasks[i]->verdict == FB_VERDICT_NONE)
            return;
    bool uncancelled;
    if (!self->stop_waiting && s_round_busy(self, &uncancelled)) {
        if (!uncancelled && !self->winding_down) { /* the wind-down replaces the deadline */
            self->winding_down = true;
            rn_start_deadline(self, S_WIND_DOWN_MS);
        }
        return;
    }
    uv_timer_stop(&self->deadline);
    self->rounds_ended++;
    self->round_over = true;
    self->winding_down = self->stop_waiting = false;
    if (self->bisect)
        rn_bisect_record_round(self);
    if (self->round + 1 < self->n_rounds) {
        self->round++;
        rn_schedule_next(self, true);
        return;
    }
    if (rn_bisect_continue(self))
        return;
    rn_end_stage(self);
}

/* Cancels the members of t that still run, with reason. */
void rn_cancel_running(runner_t *self, rtask_t *t, const char *reason)
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
void rn_decide(runner_t *self, rtask_t *t, fb_verdict_t verdict, const char *why, const char *node)
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
            rn_cancel_running(self, t, why);
        coord_exchange_task_ended(self->coord, t->id, why);
    }
}

/* A member of t ended with verdict (lost, or the agent restarted: no result will come). */
void rn_member_gone(runner_t *self, rtask_t *t, size_t rank, fb_verdict_t verdict, const char *why)
{
    rmember_t *m = &t->members[rank];
    if (m->verdict != FB_VERDICT_NONE)
        return;
    m->verdict = verdict;
    char *who = rn_member_name(t, rank);
    char *reason =
        t->group ? xasprintf("member %s %s: %s", who, fb_verdict_name(verdict), why) : xstrdup(why);
    rn_decide(self, t, verdict, reason, t->nodes[rank]);
    free(reason);
    free(who);
}

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
int rn_send_member(runner_t *self, const rtask_t *t, size_t rank)
{
    const fb_stage_t *stage = rn_stage(self);
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
    const fb_stage_t *stage = rn_stage(self);
    for (size_t k = 0; k < t->n_members; k++) {
        if (coord_node_alive(self->coord, t->nodes[k]))
            continue;
        char *who = rn_member_name(t, k);
        char *why = t->group ? xasprintf("member %s not connected when the round started", who)
                             : xstrdup("node not connected when the stage started");
        t->members[k].verdict = FB_VERDICT_LOST;
        rn_decide(self, t, FB_VERDICT_LOST, why, t->nodes[k]);
        free(why);
        free(who);
        return; /* nothing was sent: no member waits for it */
    }
    for (size_t k = 0; k < t->n_members; k++) {
        int rc = rn_send_member(self, t, k);
        if (rc) {
            char *why = xasprintf("could not send the task to %s: %s", t->nodes[k], strerror(-rc));
            t->members[k].verdict = FB_VERDICT_ERROR;
            rn_decide(self, t, FB_VERDICT_ERROR, why, t->nodes[k]);
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

/* The late-firing allowance: a timer that runs this much later than due was held up by a stall
 * of the coordinator itself (the liveness timer uses the same rule). */
#define S_STALL_MS 2000

void rn_start_deadline(runner_t *self, uint64_t ms)
{
    self->deadline_due = fb_mono_ms() + ms;
    uv_timer_start(&self->deadline, rn_on_deadline, ms, 0);
}

void rn_on_deadline(uv_timer_t *h)
{
    runner_t *self = h->data;
    uint64_t now = fb_mono_ms();
    if (now > self->deadline_due + S_STALL_MS) {
        /* The coordinator was stopped past the deadline: what the agents sent meanwhile is still
         * on its way in (the socket's own thread was stopped too). The stall is not the agents'
         * time: the deadline moves by it. */
        uint64_t late = now - self->deadline_due;
        log_info("stage %s: deadline passed %.1f s late (the coordinator was stalled); extended "
                 "by that much",
                 rn_stage(self)->name, (double)late / 1000.0);
        rn_start_deadline(self, late);
        return;
    }
    /* A deadline that passed while the coordinator itself was stalled (stopped, paused, a slow
     * write) must not time out tasks whose results wait on the socket: they are read first, and
     * if they ended the round, the deadline is moot. */
    unsigned rounds_ended = self->rounds_ended;
    coord_read_pending(self->coord);
    if (self->frozen || self->finished || self->rounds_ended != rounds_ended)
        return;
    self->stop_waiting = true; /* whatever still runs is left behind */
    if (self->winding_down) {
        rn_check_round_done(self);
        return;
    }
    char why[128];
    snprintf(why, sizeof why, "no result within the stage deadline of %.1f s",
             (double)fb_stage_deadline_ms(rn_stage(self)->timeout_ms) / 1000.0);
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        if (t->verdict == FB_VERDICT_NONE)
            rn_decide(self, t, FB_VERDICT_TIMEOUT, why, t->group ? NULL : t->nodes[0]);
        rn_cancel_running(self, t, why);
    }
    rn_check_round_done(self);
}

/* "round 1 of 3: 2 pairs (random, seed 7)" style description of the running round. */
void rn_round_event(runner_t *self, const fb_plan_t *plan)
{
    const fb_stage_t *st = rn_stage(self);
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
void rn_dispatch_round(runner_t *self)
{
    for (size_t i = self->round_first; i < self->n_tasks; i++)
        s_dispatch(self, self->tasks[i]);
    rn_start_deadline(self, fb_stage_deadline_ms(rn_stage(self)->timeout_ms));
    rn_progress(self);
    rn_check_round_done(self);
}

void rn_begin_round(runner_t *self)
{
    self->round_over = false;
    const fb_stage_t *stage = rn_stage(self);
    const fb_plan_t *plan = &self->plans[self->round];
    store_t *store = coord_store(self->coord);
    bool group = stage->scope != FB_SCOPE_NODE;
    self->round_first = self->n_tasks;
    rn_round_event(self, plan);
    for (size_t g = 0; g < plan->n_groups; g++) {
        char *id = group
                       ? xasprintf("%s/%zu/r%u.g%zu", self->id, self->stage, self->round, g)
                       : xasprintf("%s/%zu/%s", self->id, self->stage, plan->groups[g].members[0]);
        rtask_t *t = rn_task_new(self, id, &plan->groups[g], group, self->round);
        if (store_task_create(store, t->id, self->id, self->stage_ids[self->stage],
                              (const char *const *)t->nodes, t->n_members, fb_now_ms()))
            log_error("cannot store task %s: %s", t->id, store_errmsg(store));
    }
    rn_dispatch_round(self);
}

/* Keeps the judged metrics of a pair member's result. */
void rn_note_metrics(const runner_t *self, rmember_t *m, const fb_result_t *r)
{
    const fb_pair_metrics_t *pm = fb_pairjudge_metrics(rn_stage(self)->workload);
    if (rn_stage(self)->scope != FB_SCOPE_PAIRS || !pm)
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
        char *name = rn_member_name(t, rank);
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
    char *name = rn_member_name(t, who);
    const char *error = who == rank && r->error ? r->error : NULL;
    char *why = xasprintf("member %s %s%s%s", name, fb_verdict_name(v), error ? ": " : "",
                          error ? error : "");
    rn_decide(self, t, v, why, t->nodes[who]);
    free(why);
    free(name);
}

bool rn_members_running(const runner_t *self)
{
    bool uncancelled;
    return s_round_busy(self, &uncancelled);
}

void runner_on_result(runner_t *self, const fb_result_t *r)
{
    rtask_t *t = self->task_index ? fb_strmap_get(self->task_index, r->task_id) : NULL;
    size_t rank = t ? rn_rank_of(t, r->node) : SIZE_MAX;
    if (rank == SIZE_MAX)
        return; /* not a task of this stage: stored, nothing to decide */
    rmember_t *m = &t->members[rank];
    if (self->cancelled) { /* its stages are over: only whether members still run matters */
        if (m->verdict == FB_VERDICT_NONE)
            m->verdict = r->verdict;
        rn_cancel_settle(self);
        return;
    }
    /* Between a stage's end and the next stage's begin (a timer away) its tasks are still
     * indexed, every one decided, and self->stage already names the next stage, or none after
     * the last: a late result is stored and changes nothing here. */
    if (!self->stage_running)
        return;
    if (m->verdict == FB_VERDICT_NONE) {
        m->verdict = r->verdict;
        rn_note_metrics(self, m, r);
        rn_note_counters(self, m, r);
        if (t->verdict == FB_VERDICT_NONE)
            s_member_result(self, t, rank, r);
    }
    /* a late result for a task already decided is stored, but the verdict stands */
    rn_progress_after_result(self);
    if (t->verdict != FB_VERDICT_NONE)
        rn_check_round_done(self);
}

void runner_on_node_lost(runner_t *self, const char *node, const char *why)
{
    if (!self->stage_running && !self->cancelled)
        return; /* between stages: every task of the last one is decided (runner_on_result) */
    char *reason = xasprintf("agent lost (%s)", why);
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        size_t rank = rn_rank_of(t, node);
        if (rank != SIZE_MAX)
            rn_member_gone(self, t, rank, FB_VERDICT_LOST, reason);
    }
    free(reason);
    if (self->cancelled) {
        rn_cancel_settle(self);
        return;
    }
    rn_progress(self);
    rn_check_round_done(self);
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
    if (self->resuming) {
        rn_resume_hello(self, node, running, n_running, unacked, n_unacked);
        return;
    }
    bool changed = false;
    for (size_t i = self->round_first; i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        size_t rank = rn_rank_of(t, node);
        if (rank == SIZE_MAX || t->members[rank].verdict != FB_VERDICT_NONE ||
            s_listed(running, n_running, t->id))
            continue;
        char *result_id = t->group ? xasprintf("%s@%s", t->id, node) : xstrdup(t->id);
        bool spooled = s_listed(unacked, n_unacked, result_id);
        free(result_id);
        if (spooled)
            continue; /* its result is on the way */
        rn_member_gone(self, t, rank, FB_VERDICT_LOST, "agent restarted; the task died with it");
        changed = true;
    }
    if (changed) {
        rn_progress(self);
        rn_check_round_done(self);
    }
}

const char *const *runner_group(const runner_t *self, const char *task_id, size_t *n_out)
{
    rtask_t *t = self->task_index ? fb_strmap_get(self->task_index, task_id) : NULL;
    if (!t || !t->group || t->verdict != FB_VERDICT_NONE)
        return NULL;
    *n_out = t->n_members;
    return (const char *const *)t->nodes;
}
