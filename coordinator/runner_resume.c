/* SPDX-License-Identifier: Apache-2.0 */
/* A campaign resumed after a coordinator restart (docs/operations.md "Coordinator restarts").
 *
 * Everything the runner decides rests on what it stored: stages with their plan (the seed and the
 * nodes selected), every task before it was sent, every result and coordinator verdict. So a new
 * coordinator on the same database rebuilds the running stage by planning it again from the
 * stored plan (planning is pure) and replaying its rounds in order: each task is created again
 * with its members' stored results; a bisect session is given every finished round's results and
 * asked for its next round exactly as it was the first time, so that the follow-up rounds it
 * plans match the stored ones (a mismatch refuses to resume rather than guess).
 *
 * Nothing advances until the campaign's agents have had time to register again (they notice the
 * restart within their liveness window): a member whose agent says it runs the task, or holds its
 * result unacknowledged, is adopted; one whose agent came back without it is sent the task again
 * (a node task, or a group task none of whose members has it: the coordinator died before the
 * task went out); one whose agent did not come back is lost. The round's deadline counts from its
 * stored start, so time passed while the coordinator was down counts. */
#include "runner_internal.h"
#include "store.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/units.h"
#include "common/util.h"
#include "scheduler/stage.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A resumed round's tasks, from the stored ids "<campaign>/<stage>/r<k>.g<j>" (planned round k),
 * "b<k>.g<j>" (follow-up k of a bisect session) and "<node>" (a node task). */
typedef struct {
    char kind; /* 'r', 'b', or 'n' for node tasks */
    unsigned k;
    size_t first, n; /* stored tasks [first, first + n) of the stage */
} s_round_t;

static bool s_parse_round(const char *task_id, const char *prefix, char *kind, unsigned *k,
                          unsigned *g)
{
    size_t len = strlen(prefix);
    if (strncmp(task_id, prefix, len))
        return false;
    const char *rest = task_id + len;
    if ((rest[0] == 'r' || rest[0] == 'b') && sscanf(rest + 1, "%u.g%u", k, g) == 2) {
        *kind = rest[0];
        return true;
    }
    *kind = 'n';
    *k = *g = 0;
    return true;
}

/* The stored tasks of a stage split into rounds, in the order they were created. */
static size_t s_rounds(const runner_t *self, const store_stage_t *ss, s_round_t **out)
{
    char *prefix = xasprintf("%s/%zu/", self->id, self->stage);
    s_round_t *rounds = xcalloc(ss->n_tasks + 1, sizeof *rounds);
    size_t n = 0;
    for (size_t i = 0; i < ss->n_tasks; i++) {
        char kind;
        unsigned k, g;
        const char *id = ss->tasks[i].id;
        size_t idlen = strlen(id);
        if (idlen > 10 && !strcmp(id + idlen - 10, "/diagnosis"))
            continue;
        if (!s_parse_round(id, prefix, &kind, &k, &g))
            continue;
        if (n && rounds[n - 1].kind == kind && rounds[n - 1].k == k) {
            rounds[n - 1].n++;
            continue;
        }
        rounds[n++] = (s_round_t){kind, k, i, 1};
    }
    free(prefix);
    *out = rounds;
    return n;
}

/* A stored task created again, with its members' results. */
static rtask_t *s_task_again(runner_t *self, const store_task_t *st, unsigned round)
{
    fb_group_t g = {st->nodes, st->n_nodes};
    bool group = rn_stage(self)->scope != FB_SCOPE_NODE;
    rtask_t *t = rn_task_new(self, xstrdup(st->id), &g, group, round);
    t->verdict = st->verdict;
    for (size_t k = 0; k < t->n_members; k++)
        t->members[k].sent = true;
    for (size_t i = 0; i < st->n_results; i++) {
        const fb_result_t *r = st->results[i].result;
        size_t rank = rn_rank_of(t, r->node);
        if (rank == SIZE_MAX)
            continue;
        char *own = group ? xasprintf("%s@%s", t->id, r->node) : xstrdup(t->id);
        bool member_result = !strcmp(own, r->result_id);
        free(own);
        rmember_t *m = &t->members[rank];
        if (!member_result || m->verdict != FB_VERDICT_NONE)
            continue; /* a coordinator result (pair judgment), or a late duplicate */
        m->verdict = r->verdict;
        rn_note_metrics(self, m, r);
        rn_note_counters(self, m, r);
    }
    /* A verdict the coordinator gave (lost, timed out, cancelled, an error) decides the members
     * that did not report. A pass or skip from results is provisional while members are missing:
     * their results are still to come (an adopted task, a result the agent re-sends) and carry
     * the flows and counters the diagnosis needs, as in a run that was never interrupted. */
    bool from_results = t->verdict == FB_VERDICT_PASS || t->verdict == FB_VERDICT_SKIPPED ||
                        t->verdict == FB_VERDICT_FAIL;
    if (t->verdict != FB_VERDICT_NONE && !from_results)
        for (size_t k = 0; k < t->n_members; k++)
            if (t->members[k].verdict == FB_VERDICT_NONE)
                t->members[k].verdict = t->verdict;
    return t;
}

/* The session's round that produced stored round r: asked for again and checked against it. */
static int s_session_round(runner_t *self, const store_stage_t *ss, const s_round_t *r, char *err,
                           size_t errlen)
{
    fb_bisect_round_clear(&self->bround);
    int rc = fb_bisect_next(self->bisect, &self->bround);
    if (rc <= 0 || self->bround.n_tests != r->n) {
        snprintf(err, errlen,
                 "the diagnosis session planned %zu test(s) where %zu were stored: it cannot be "
                 "replayed",
                 rc > 0 ? self->bround.n_tests : 0, r->n);
        return -EPROTO;
    }
    for (size_t j = 0; j < r->n; j++) {
        const fb_bisect_test_t *bt = &self->bround.tests[j];
        const store_task_t *st = &ss->tasks[r->first + j];
        bool same = bt->n_members == st->n_nodes;
        for (size_t k = 0; same && k < bt->n_members; k++)
            same = !strcmp(bt->members[k], st->nodes[k]);
        if (!same) {
            snprintf(err, errlen, "the diagnosis session planned other tests than task %s", st->id);
            return -EPROTO;
        }
    }
    return 0;
}

/* Round r of the running stage created again; a bisect session's round is replayed first. */
static int s_replay_round(runner_t *self, const store_stage_t *ss, const s_round_t *r, char *err,
                          size_t errlen)
{
    bool from_session = self->bisect && (self->bisect_plans || r->kind == 'b');
    unsigned round = r->kind == 'n' ? 0 : r->k;
    if (from_session) {
        int rc = s_session_round(self, ss, r, err, errlen);
        if (rc)
            return rc;
        round = self->bisect_plans ? self->bround.round - 1 : self->bround.round;
    }
    self->round = round;
    self->round_first = self->n_tasks;
    for (size_t j = 0; j < r->n; j++) {
        rtask_t *t = s_task_again(self, &ss->tasks[r->first + j], round);
        if (from_session) {
            const fb_bisect_test_t *bt = &self->bround.tests[j];
            t->rail = bt->rail ? xstrdup(bt->rail) : NULL;
            t->planned = (long)j;
        }
    }
    if (from_session)
        fb_bisect_round_clear(&self->bround);
    return 0;
}

/* The running stage rebuilt: planned from its stored plan, its rounds replayed (every round but
 * the last given to the bisect session; the last is judged when the agents are back). */
static int s_rebuild_stage(runner_t *self, const store_stage_t *ss, char *err, size_t errlen)
{
    if (!ss->planned) {
        snprintf(err, errlen, "stage %s has no stored plan (started by an older fleetburn)",
                 ss->name);
        return -EPROTO;
    }
    self->task_index = fb_strmap_new();
    self->stage_running = true;
    int rc = rn_plan_stage(self, ss->nodes, ss->n_nodes, ss->seed, err, errlen);
    if (rc)
        return rc;
    s_round_t *rounds = NULL;
    size_t n = s_rounds(self, ss, &rounds);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = s_replay_round(self, ss, &rounds[i], err, errlen);
        if (rc == 0 && i + 1 < n && self->bisect)
            rn_bisect_record_round(self);
        if (rc == 0 && rounds[i].kind == 'b' && !self->bisect_follow_ms)
            rn_bisect_resumed(self, ss->tasks[rounds[i].first].started_ms);
    }
    self->n_rounds_stored = n;
    free(rounds);
    if (self->planned_tasks < self->n_tasks)
        self->planned_tasks = self->n_tasks;
    return rc;
}

/* Node-local verdicts of a finished stage, for a later stage's bisect_prior (as rn_keep_locals
 * keeps them when the stage ends). */
static void s_locals_from_store(runner_t *self, size_t idx, const store_stage_t *ss)
{
    rlocal_t *l = &self->locals[idx];
    l->nodes = xcalloc(ss->n_tasks + 1, sizeof *l->nodes);
    l->failed = xcalloc(ss->n_tasks + 1, sizeof *l->failed);
    for (size_t i = 0; i < ss->n_tasks; i++) {
        const store_task_t *t = &ss->tasks[i];
        if (t->n_nodes != 1 || (t->verdict != FB_VERDICT_PASS && t->verdict != FB_VERDICT_FAIL))
            continue;
        l->nodes[l->n] = xstrdup(t->nodes[0]);
        l->failed[l->n++] = t->verdict == FB_VERDICT_FAIL;
    }
}

static void s_add_wait(runner_t *self, const char *node)
{
    for (size_t i = 0; i < self->n_resume_wait; i++)
        if (!strcmp(self->resume_wait[i], node))
            return;
    self->resume_wait =
        xrealloc(self->resume_wait, (self->n_resume_wait + 1) * sizeof *self->resume_wait);
    self->resume_wait[self->n_resume_wait++] = xstrdup(node);
}

/* The nodes the resumed campaign waits for: those of its stored stage plans, and those its other
 * stages name. */
static void s_collect_wait(runner_t *self, const store_campaign_t *c)
{
    for (size_t i = 0; i < c->n_stages; i++)
        for (size_t k = 0; k < c->stages[i].n_nodes; k++)
            s_add_wait(self, c->stages[i].nodes[k]);
    for (size_t i = 0; i < self->campaign->n_stages; i++) {
        bool all = false;
        char **names = NULL, err[256];
        size_t n = 0;
        if (fb_stage_nodes(self->campaign, &self->campaign->stages[i], &all, &names, &n, err,
                           sizeof err) == 0)
            for (size_t k = 0; k < n; k++)
                s_add_wait(self, names[k]);
        fb_hostlist_free(names, n);
    }
}

static bool s_all_back(const runner_t *self)
{
    for (size_t i = 0; i < self->n_resume_wait; i++)
        if (!coord_node_alive(self->coord, self->resume_wait[i]))
            return false;
    return true;
}

static void s_on_settle(uv_timer_t *h);

/* The oldest start among the running round's tasks (epoch ms), 0 when none is stored. */
static uint64_t s_round_started(const store_stage_t *ss, const runner_t *self)
{
    uint64_t first = 0;
    for (size_t i = self->round_first; i < self->n_tasks; i++)
        for (size_t k = 0; k < ss->n_tasks; k++)
            if (!strcmp(ss->tasks[k].id, self->tasks[i]->id) && ss->tasks[k].started_ms &&
                (!first || ss->tasks[k].started_ms < first))
                first = ss->tasks[k].started_ms;
    return first;
}

/* The last event of the campaign: when the earlier coordinator was last heard of. */
static int s_last_event(const store_event_t *e, void *arg)
{
    uint64_t *last = arg;
    if (e->time_ms > *last)
        *last = e->time_ms;
    return 0;
}

runner_t *runner_resume(coord_t *coord, fb_campaign_t **campaign, const store_campaign_t *c,
                        coord_progress_cb cb, void *arg, char *err, size_t errlen)
{
    if ((*campaign)->n_stages != c->n_stages) {
        snprintf(err, errlen, "its text has %zu stages, the database %zu", (*campaign)->n_stages,
                 c->n_stages);
        return NULL;
    }
    runner_t *self = rn_alloc(coord, campaign, c->id, cb, arg);
    uint64_t now = fb_now_ms();
    self->started_mono = fb_mono_ms() - (now > c->started_ms ? now - c->started_ms : 0);
    size_t current = c->n_stages;
    for (size_t i = 0; i < c->n_stages; i++) {
        const store_stage_t *ss = &c->stages[i];
        self->stage_ids[i] = ss->id;
        if (ss->finished_ms) {
            self->any_failed |= !fb_verdict_ok(ss->verdict);
            s_locals_from_store(self, i, ss);
        } else if (current == c->n_stages) {
            current = i;
        }
    }
    self->stage = current;
    int rc = 0;
    if (current < c->n_stages && c->stages[current].started_ms)
        rc = s_rebuild_stage(self, &c->stages[current], err, errlen);
    if (rc == 0 && self->stage_running)
        self->resume_round_started = s_round_started(&c->stages[current], self);
    if (rc) {
        runner_destroy(&self);
        return NULL;
    }
    s_collect_wait(self, c);
    uint64_t last = c->started_ms;
    store_event_foreach(coord_store(coord), c->id, s_last_event, &last);
    char down[32];
    fb_format_duration(now > last ? now - last : 0, down, sizeof down);
    coord_event(
        coord, c->id, NULL, NULL, "campaign",
        "coordinator restarted; campaign resumed (nothing heard for %s): stage %zu of %zu%s", down,
        current + 1 > c->n_stages ? c->n_stages : current + 1, c->n_stages,
        self->stage_running ? ", its tasks adopted from the agents" : "");
    log_info("campaign %s (%s) resumed at stage %zu of %zu; waiting up to %.1f s for %zu agent(s)",
             c->id, self->campaign->name, current + 1 > c->n_stages ? c->n_stages : current + 1,
             c->n_stages, (double)coord_reregister_ms(coord) / 1000.0, self->n_resume_wait);
    self->resuming = true;
    uv_timer_start(&self->resume_timer, s_on_settle,
                   s_all_back(self) ? 0 : coord_reregister_ms(coord), 0);
    return self;
}

void rn_resume_hello(runner_t *self, const char *node, char **running, size_t n_running,
                     char **unacked, size_t n_unacked)
{
    for (size_t i = self->round_first; self->stage_running && i < self->n_tasks; i++) {
        rtask_t *t = self->tasks[i];
        size_t rank = rn_rank_of(t, node);
        if (rank == SIZE_MAX)
            continue;
        char *result_id = t->group ? xasprintf("%s@%s", t->id, node) : xstrdup(t->id);
        bool has = false;
        for (size_t k = 0; k < n_running && !has; k++)
            has = !strcmp(running[k], t->id);
        for (size_t k = 0; k < n_unacked && !has; k++)
            has = !strcmp(unacked[k], result_id);
        free(result_id);
        t->members[rank].adopted = has;
    }
    if (s_all_back(self))
        uv_timer_start(&self->resume_timer, s_on_settle, 0, 0);
}

/* What happens to an undecided task's members once the agents had their time to come back. */
static void s_settle_task(runner_t *self, rtask_t *t, unsigned *adopted, unsigned *again,
                          unsigned *lost)
{
    bool any_has = false;
    for (size_t k = 0; k < t->n_members; k++)
        any_has |= t->members[k].adopted || t->members[k].verdict != FB_VERDICT_NONE;
    for (size_t k = 0; k < t->n_members && t->verdict == FB_VERDICT_NONE; k++) {
        rmember_t *m = &t->members[k];
        if (m->verdict != FB_VERDICT_NONE)
            continue;
        if (m->adopted) {
            (*adopted)++;
        } else if (!coord_node_alive(self->coord, t->nodes[k])) {
            rn_member_gone(self, t, k, FB_VERDICT_LOST,
                           "agent did not register again after the coordinator restarted");
            (*lost)++;
        } else if (!any_has && rn_send_member(self, t, k) == 0) {
            coord_event(self->coord, self->id, t->id, t->nodes[k], "dispatch",
                        "%s, again: the agent did not have it after the coordinator restarted",
                        rn_stage(self)->workload);
            (*again)++;
        } else {
            rn_member_gone(self, t, k, FB_VERDICT_LOST,
                           "the task was not on the agent after the coordinator restarted");
            (*lost)++;
        }
    }
}

/* The agents had their time: members are adopted, sent again or lost; the round's deadline
 * continues from its stored start; the round is judged (it may have ended while the coordinator
 * was down), or the campaign goes on with what was never begun. */
static void s_on_settle(uv_timer_t *h)
{
    runner_t *self = h->data;
    if (!self->resuming)
        return;
    self->resuming = false;
    fb_hostlist_free(self->resume_wait, self->n_resume_wait);
    self->resume_wait = NULL;
    self->n_resume_wait = 0;
    if (!self->stage_running) { /* between stages: the next one begins */
        rn_schedule_next(self, false);
        return;
    }
    if (self->n_rounds_stored == 0) { /* the stage began, its first round was never placed */
        if (self->bisect_plans) {
            if (!rn_bisect_continue(self))
                rn_end_stage(self);
        } else {
            rn_begin_round(self);
        }
        return;
    }
    unsigned adopted = 0, again = 0, lost = 0;
    for (size_t i = self->round_first; i < self->n_tasks; i++)
        s_settle_task(self, self->tasks[i], &adopted, &again, &lost);
    coord_event(self->coord, self->id, NULL, NULL, "campaign",
                "resumed %s round %u: %u member(s) adopted from their agents, %u sent again, %u "
                "lost",
                rn_stage(self)->name, self->round + 1, adopted, again, lost);
    uint64_t deadline = fb_stage_deadline_ms(rn_stage(self)->timeout_ms), now = fb_now_ms();
    uint64_t passed = self->resume_round_started && now > self->resume_round_started
                          ? now - self->resume_round_started
                          : 0;
    rn_start_deadline(self, passed < deadline ? deadline - passed : 0);
    rn_progress(self);
    rn_check_round_done(self);
}
