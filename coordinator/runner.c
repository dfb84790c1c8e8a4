/* SPDX-License-Identifier: Apache-2.0 */
/* Campaign runner. Every stage and its tasks are written to the store before anything is sent,
 * so the timeline shows what was planned even if the coordinator dies. A stage's tasks end by a
 * result, by their agent being lost, or by the stage deadline (the task timeout plus a grace
 * period for the agent's own timeout result to arrive). Stage transitions run from a timer so
 * that they never happen inside a message handler. */
#include "runner.h"
#include "common/hostlist.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strmap.h"
#include "common/util.h"
#include "scheduler/campaign.h"
#include "scheduler/stage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *id;
    char *node;
    fb_verdict_t verdict;
} rtask_t;

struct runner {
    coord_t *coord;
    fb_campaign_t *campaign;
    char *id;
    coord_progress_cb cb;
    void *arg;
    int64_t *stage_ids;
    size_t stage; /* index of the running stage */
    bool stage_running;
    rtask_t *tasks;
    size_t n_tasks;
    strmap_t *task_index; /* task id -> rtask_t of the running stage */
    uint64_t started_mono;
    bool finished, any_failed;
    fb_verdict_t verdict;
    uv_timer_t deadline;
    uv_timer_t next;
    int open_handles;
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
    p.tasks_total = (unsigned)self->n_tasks;
    for (size_t i = 0; i < self->n_tasks; i++) {
        if (self->tasks[i].verdict == FB_VERDICT_NONE)
            continue;
        p.tasks_done++;
        if (!fb_verdict_ok(self->tasks[i].verdict))
            p.tasks_failed++;
    }
    p.elapsed_ms = fb_mono_ms() - self->started_mono;
    p.finished = self->finished;
    p.verdict = self->verdict;
    self->cb(&p, self->arg);
}

static void s_clear_tasks(runner_t *self)
{
    for (size_t i = 0; i < self->n_tasks; i++) {
        free(self->tasks[i].id);
        free(self->tasks[i].node);
    }
    free(self->tasks);
    self->tasks = NULL;
    self->n_tasks = 0;
    strmap_destroy(&self->task_index);
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

static void s_schedule_next(runner_t *self)
{
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

static void s_end_stage(runner_t *self)
{
    uv_timer_stop(&self->deadline);
    self->stage_running = false;
    fb_verdict_t *verdicts = xcalloc(self->n_tasks, sizeof *verdicts);
    for (size_t i = 0; i < self->n_tasks; i++)
        verdicts[i] = self->tasks[i].verdict;
    fb_verdict_t verdict = fb_stage_verdict(verdicts, self->n_tasks);
    free(verdicts);
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
            store_stage_finish(store, self->stage_ids[self->stage], FB_VERDICT_SKIPPED, fb_now_ms());
            coord_event(self->coord, self->id, NULL, NULL, "stage",
                        "%s skipped: stage %s failed with on_fail: stop", s_stage(self)->name,
                        stage->name);
        }
    }
    s_progress(self);
    s_schedule_next(self);
}

static void s_check_stage_done(runner_t *self)
{
    if (!self->stage_running)
        return;
    for (size_t i = 0; i < self->n_tasks; i++)
        if (self->tasks[i].verdict == FB_VERDICT_NONE)
            return;
    s_end_stage(self);
}

/* A verdict the coordinator decides itself (lost, timeout, error); results carry their own. */
static void s_decide(runner_t *self, rtask_t *t, fb_verdict_t verdict, const char *why)
{
    if (t->verdict != FB_VERDICT_NONE)
        return;
    t->verdict = verdict;
    store_t *store = coord_store(self->coord);
    if (store_task_finish(store, t->id, verdict, why, fb_now_ms()) == -EALREADY)
        log_debug("task %s already had a verdict", t->id);
    coord_event(self->coord, self->id, t->id, t->node, "verdict", "%s: %s",
                fb_verdict_name(verdict), why);
    log_warn("task %s on %s: %s: %s", t->id, t->node, fb_verdict_name(verdict), why);
}

static void s_dispatch(runner_t *self, rtask_t *t)
{
    const fb_stage_t *stage = s_stage(self);
    if (!coord_node_alive(self->coord, t->node)) {
        s_decide(self, t, FB_VERDICT_LOST, "node not connected when the stage started");
        return;
    }
    Fleetburn__RunTask m = FLEETBURN__RUN_TASK__INIT;
    m.task_id = t->id;
    m.campaign_id = self->id;
    m.stage = stage->name;
    m.workload = stage->workload;
    m.timeout_ms = stage->timeout_ms;
    Fleetburn__Param *params = xcalloc(stage->n_params, sizeof *params);
    Fleetburn__Param **ptrs = xcalloc(stage->n_params, sizeof *ptrs);
    for (size_t i = 0; i < stage->n_params; i++) {
        fleetburn__param__init(&params[i]);
        params[i].key = stage->params[i].key;
        params[i].value = stage->params[i].value;
        ptrs[i] = &params[i];
    }
    m.params = ptrs;
    m.n_params = stage->n_params;
    int rc = coord_send_run_task(self->coord, t->node, &m);
    free(ptrs);
    free(params);
    if (rc) {
        char why[128];
        snprintf(why, sizeof why, "could not send the task: %s", strerror(-rc));
        s_decide(self, t, FB_VERDICT_ERROR, why);
        return;
    }
    coord_event(self->coord, self->id, t->id, t->node, "dispatch", "%s", stage->workload);
}

static void s_on_deadline(uv_timer_t *h)
{
    runner_t *self = h->data;
    char why[128];
    snprintf(why, sizeof why, "no result within the stage deadline of %.1f s",
             (double)fb_stage_deadline_ms(s_stage(self)->timeout_ms) / 1000.0);
    for (size_t i = 0; i < self->n_tasks; i++) {
        rtask_t *t = &self->tasks[i];
        if (t->verdict != FB_VERDICT_NONE)
            continue;
        coord_send_cancel(self->coord, t->node, t->id, why);
        s_decide(self, t, FB_VERDICT_TIMEOUT, why);
    }
    s_check_stage_done(self);
}

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
    self->tasks = xcalloc(n, sizeof(rtask_t));
    self->n_tasks = n;
    self->task_index = strmap_new();
    for (size_t i = 0; i < n; i++) {
        rtask_t *t = &self->tasks[i];
        t->node = names[i];
        t->id = xasprintf("%s/%zu/%s", self->id, self->stage, t->node);
        strmap_put(self->task_index, t->id, t);
        const char *nodes[] = {t->node};
        if (store_task_create(store, t->id, self->id, self->stage_ids[self->stage], nodes, 1,
                              fb_now_ms()))
            log_error("cannot store task %s: %s", t->id, store_errmsg(store));
    }
    free(names);
    coord_event(self->coord, self->id, NULL, NULL, "stage", "%s started: %s on %zu node(s)",
                stage->name, stage->workload, n);
    log_info("stage %zu/%zu %s: %s on %zu node(s)", self->stage + 1, self->campaign->n_stages,
             stage->name, stage->workload, n);
    self->stage_running = true;
    for (size_t i = 0; i < n; i++)
        s_dispatch(self, &self->tasks[i]);
    uv_timer_start(&self->deadline, s_on_deadline, fb_stage_deadline_ms(stage->timeout_ms), 0);
    s_progress(self);
    if (n == 0)
        log_warn("stage %s selected no connected node", stage->name);
    s_check_stage_done(self);
}

static void s_on_next_cb(uv_timer_t *h)
{
    s_begin_stage(h->data);
}

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
    uv_timer_start(&self->next, s_on_next_cb, 0, 0);
}

static void s_on_closed(uv_handle_t *h)
{
    runner_t *self = h->data;
    if (--self->open_handles > 0)
        return;
    s_clear_tasks(self);
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

void runner_on_result(runner_t *self, const char *task_id, fb_verdict_t verdict)
{
    rtask_t *t = self->task_index ? strmap_get(self->task_index, task_id) : NULL;
    if (!t || t->verdict != FB_VERDICT_NONE)
        return; /* a late result for a task already decided: stored, but the verdict stands */
    t->verdict = verdict;
    s_progress(self);
    s_check_stage_done(self);
}

void runner_on_node_lost(runner_t *self, const char *node, const char *why)
{
    char *reason = xasprintf("agent lost (%s)", why);
    for (size_t i = 0; i < self->n_tasks; i++)
        if (!strcmp(self->tasks[i].node, node))
            s_decide(self, &self->tasks[i], FB_VERDICT_LOST, reason);
    free(reason);
    s_progress(self);
    s_check_stage_done(self);
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
    for (size_t i = 0; i < self->n_tasks; i++) {
        rtask_t *t = &self->tasks[i];
        if (t->verdict != FB_VERDICT_NONE || strcmp(t->node, node) ||
            s_listed(running, n_running, t->id) || s_listed(unacked, n_unacked, t->id))
            continue;
        s_decide(self, t, FB_VERDICT_LOST, "agent restarted; the task died with it");
        changed = true;
    }
    if (changed) {
        s_progress(self);
        s_check_stage_done(self);
    }
}
