/* SPDX-License-Identifier: Apache-2.0 */
/* actions.slurm when a campaign ends (docs/operations.md "Slurm"): the nodes of its bad parts
 * are drained, the nodes that passed and that fleetburn drained are resumed, within the breaker.
 *
 * On the loop, the campaign is read from the store and each node's outcome taken from the
 * diagnosis the reports show (report_outcome.h); sinfo and scontrol then run on libuv's thread
 * pool (slurm_client.h: fixed argument vectors, a timeout each), so that a slow or absent
 * slurmctld never holds the loop; back on the loop every action, refusal and failure becomes an
 * event of kind "slurm" on the campaign's timeline, and the runner is told it may report the
 * campaign finished. Nothing here changes what the campaign stored: a failing scontrol is an
 * event, never a lost result. */
#include "coord_internal.h"
#include "report_outcome.h"
#include "slurm_client.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/util.h"
#include "scheduler/slurm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { S_INFO, S_WARN, S_ERROR } s_level_t;

typedef struct {
    s_level_t level;
    char *node; /* NULL for the campaign */
    char *text;
} s_msg_t;

struct coord_slurm_actions {
    uv_work_t work;
    coord_t *coord;       /* NULL once the coordinator is gone: the result is dropped */
    void (*done)(void *); /* NULL once the runner forgot it */
    void *done_arg;
    char *campaign_id;
    char *bin_dir;
    fb_slurm_actions_t conf;
    report_outcome_t outcome;
    s_msg_t *msgs; /* what happened, for the timeline */
    size_t n_msgs;
    struct coord_slurm_actions *next;
};

typedef struct coord_slurm_actions s_job_t;

static void s_msg(s_job_t *job, s_level_t level, const char *node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void s_msg(s_job_t *job, s_level_t level, const char *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = xvasprintf(fmt, ap);
    va_end(ap);
    job->msgs = xrealloc(job->msgs, (job->n_msgs + 1) * sizeof *job->msgs);
    job->msgs[job->n_msgs++] = (s_msg_t){level, xstrdup(node), text};
}

/* ---- on the thread pool ------------------------------------------------------------------- */

/* Distinct nodes of the bad parts. */
static size_t s_bad_nodes(const report_outcome_t *o)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n_bad; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !strcmp(o->bad[k].node, o->bad[i].node);
        n += !seen;
    }
    return n;
}

static void s_header(s_job_t *job)
{
    const report_outcome_t *o = &job->outcome;
    s_msg(job, S_INFO, NULL,
          "actions.slurm (drain: %s, resume: %s, max_fraction: %.0f%%%s): %zu node(s), %zu "
          "named by a bad part, %zu passed every stage",
          job->conf.drain ? "yes" : "no", job->conf.resume ? "yes" : "no",
          100.0 * job->conf.max_fraction, job->conf.dry_run ? ", dry run" : "", o->n_nodes,
          s_bad_nodes(o), o->n_passed);
}

/* The plan as a dry run says it. */
static void s_tell_plan(s_job_t *job, const fb_slurm_plan_t *plan)
{
    for (size_t k = 0; k < plan->n_ops; k++) {
        const fb_slurm_op_t *op = &plan->ops[k];
        if (op->kind == FB_SLURM_OP_DRAIN)
            s_msg(job, S_INFO, op->node,
                  "dry run: would drain %s: scontrol update NodeName=%s State=DRAIN Reason='%s'",
                  op->node, op->node, op->reason);
        else if (op->kind == FB_SLURM_OP_RESUME)
            s_msg(job, S_INFO, op->node,
                  "dry run: would resume %s: scontrol update NodeName=%s State=RESUME (drained by "
                  "fleetburn: '%s')",
                  op->node, op->node, op->reason);
    }
}

/* The state sinfo gives a node after the actions, or "?" when it could not be read. */
static const char *s_state_now(const fb_slurm_nodes_t *after, bool read, const char *node)
{
    const fb_slurm_node_t *n = read ? fb_slurm_nodes_find(after, node) : NULL;
    return n ? n->state : "?";
}

/* Runs the drains and resumes; stops at the first scontrol that could not run at all or did
 * not answer (Slurm is not there: the rest would wait as long each). */
static void s_execute(s_job_t *job, const fb_slurm_plan_t *plan)
{
    bool *done = xcalloc(plan->n_ops + 1, sizeof *done);
    const char **touched = xcalloc(plan->n_ops + 1, sizeof *touched);
    size_t n_touched = 0, k = 0;
    for (; k < plan->n_ops; k++) {
        const fb_slurm_op_t *op = &plan->ops[k];
        if (op->kind == FB_SLURM_OP_NOTE)
            continue;
        char *why = NULL;
        int rc = slurm_update_node(job->bin_dir, op->node,
                                   op->kind == FB_SLURM_OP_DRAIN ? op->reason : NULL, &why);
        if (rc == 0) {
            done[k] = true;
            touched[n_touched++] = op->node;
        } else {
            s_msg(job, S_ERROR, op->node, "error: cannot %s %s: %s",
                  op->kind == FB_SLURM_OP_DRAIN ? "drain" : "resume", op->node, why);
        }
        free(why);
        if (rc == -ETIMEDOUT || rc == -ENOENT || rc == -ECONNREFUSED) {
            size_t left = 0;
            for (size_t r = k + 1; r < plan->n_ops; r++)
                left += plan->ops[r].kind != FB_SLURM_OP_NOTE;
            if (left)
                s_msg(job, S_ERROR, NULL,
                      "error: scontrol could not run or did not answer; %zu more drain(s) and "
                      "resume(s) not tried",
                      left);
            break;
        }
    }
    /* What Slurm says now, for the record: without slurmd a resumed node is idle* or down*. */
    fb_slurm_nodes_t after = {0};
    char *why = NULL, *list = n_touched ? fb_hostlist_compress(touched, n_touched) : NULL;
    bool read = list && slurm_sinfo(job->bin_dir, list, NULL, &after, &why) == 0;
    if (list && !read)
        s_msg(job, S_WARN, NULL, "cannot read the nodes' state after the actions: %s", why);
    for (size_t i = 0; i < plan->n_ops; i++) {
        const fb_slurm_op_t *op = &plan->ops[i];
        if (!done[i])
            continue;
        if (op->kind == FB_SLURM_OP_DRAIN)
            s_msg(job, S_WARN, op->node, "drained %s (now %s): Reason='%s'", op->node,
                  s_state_now(&after, read, op->node), op->reason);
        else {
            const char *now = s_state_now(&after, read, op->node);
            size_t len = strlen(now);
            s_msg(job, S_INFO, op->node, "resumed %s (now %s%s); fleetburn had drained it: '%s'",
                  op->node, now,
                  len && now[len - 1] == '*'
                      ? ": not responding until slurmctld hears from its slurmd again"
                      : "",
                  op->reason);
        }
    }
    fb_slurm_nodes_fini(&after);
    free(why);
    free(list);
    free(touched);
    free(done);
}

static void s_work(uv_work_t *w)
{
    s_job_t *job = w->data;
    const report_outcome_t *o = &job->outcome;
    s_header(job);
    if (o->n_nodes == 0) {
        s_msg(job, S_INFO, NULL, "the campaign ran no task; nothing to drain or resume");
        return;
    }
    /* only names that may reach argv are asked about (fb_slurm_name_ok); the plan notes others */
    const char **askable = xcalloc(o->n_nodes + 1, sizeof *askable);
    size_t n_askable = 0;
    for (size_t i = 0; i < o->n_nodes; i++)
        if (fb_slurm_name_ok(o->nodes[i]))
            askable[n_askable++] = o->nodes[i];
    char *all = fb_hostlist_compress(askable, n_askable), *why = NULL;
    free(askable);
    fb_slurm_nodes_t slurm;
    int rc = slurm_sinfo(job->bin_dir, all, NULL, &slurm, &why);
    free(all);
    if (rc) {
        s_msg(job, S_ERROR, NULL,
              "error: cannot ask Slurm about the campaign's nodes: %s; no node drained or resumed",
              why);
        free(why);
        return;
    }
    if (slurm.n_ignored)
        s_msg(job, S_WARN, NULL, "sinfo: %zu line(s) not understood and ignored (%s)",
              slurm.n_ignored, slurm.ignored);
    fb_slurm_bad_t *bad = xcalloc(o->n_bad + 1, sizeof *bad);
    for (size_t i = 0; i < o->n_bad; i++)
        bad[i] = (fb_slurm_bad_t){o->bad[i].node, o->bad[i].part, o->bad[i].what};
    fb_slurm_input_t in = {.campaign_id = job->campaign_id,
                           .conf = &job->conf,
                           .nodes = (const char *const *)o->nodes,
                           .n_nodes = o->n_nodes,
                           .bad = bad,
                           .n_bad = o->n_bad,
                           .passed = (const char *const *)o->passed,
                           .n_passed = o->n_passed,
                           .slurm = &slurm};
    fb_slurm_plan_t plan;
    fb_slurm_plan(&in, &plan);
    if (plan.breaker)
        s_msg(job, S_WARN, NULL, "%s%s", job->conf.dry_run ? "dry run: " : "",
              plan.breaker_message);
    if (job->conf.dry_run)
        s_tell_plan(job, &plan);
    else
        s_execute(job, &plan);
    for (size_t k = 0; k < plan.n_ops; k++)
        if (plan.ops[k].kind == FB_SLURM_OP_NOTE)
            s_msg(job, S_INFO, plan.ops[k].node, "%s", plan.ops[k].message);
    for (size_t k = 0; k < o->n_notes; k++)
        s_msg(job, S_INFO, NULL, "%s", o->notes[k]);
    if (plan.n_drain == 0 && plan.n_resume == 0 && !plan.breaker)
        s_msg(job, S_INFO, NULL, "nothing to drain or resume");
    else if (job->conf.dry_run)
        s_msg(job, S_INFO, NULL,
              "dry run: nothing was changed in Slurm (actions.slurm.dry_run is true)");
    fb_slurm_plan_fini(&plan);
    fb_slurm_nodes_fini(&slurm);
    free(bad);
}

/* ---- on the loop -------------------------------------------------------------------------- */

static void s_unlink(coord_t *self, s_job_t *job)
{
    for (s_job_t **p = &self->slurm_jobs; *p; p = &(*p)->next)
        if (*p == job) {
            *p = job->next;
            return;
        }
}

static void s_free(s_job_t *job)
{
    for (size_t i = 0; i < job->n_msgs; i++) {
        free(job->msgs[i].node);
        free(job->msgs[i].text);
    }
    free(job->msgs);
    report_outcome_free(&job->outcome);
    free(job->campaign_id);
    free(job->bin_dir);
    free(job);
}

static void s_after(uv_work_t *w, int status)
{
    s_job_t *job = w->data;
    coord_t *self = job->coord;
    if (self) {
        s_unlink(self, job);
        if (status)
            s_msg(job, S_ERROR, NULL, "error: the Slurm actions did not run: %s",
                  uv_strerror(status));
        for (size_t i = 0; i < job->n_msgs; i++) {
            const s_msg_t *m = &job->msgs[i];
            coord_event(self, job->campaign_id, NULL, m->node, "slurm", "%s", m->text);
            if (m->level == S_ERROR)
                log_error("campaign %s: slurm: %s", job->campaign_id, m->text);
            else if (m->level == S_WARN)
                log_warn("campaign %s: slurm: %s", job->campaign_id, m->text);
            else
                log_info("campaign %s: slurm: %s", job->campaign_id, m->text);
        }
    }
    if (self && job->done)
        job->done(job->done_arg);
    s_free(job);
}

coord_slurm_actions_t *coord_slurm_actions_start(coord_t *self, const char *campaign_id,
                                                 const fb_campaign_t *campaign,
                                                 void (*done)(void *arg), void *arg)
{
    if (!campaign->actions.has_slurm)
        return NULL;
    coord_flush(self); /* the campaign's last results, read back below */
    store_campaign_t *c = NULL;
    if (store_campaign_load(self->store, campaign_id, &c)) {
        coord_event(self, campaign_id, NULL, NULL, "slurm",
                    "error: cannot read the campaign from the database: %s; no node drained or "
                    "resumed",
                    store_errmsg(self->store));
        log_error("campaign %s: slurm: cannot read the campaign: %s", campaign_id,
                  store_errmsg(self->store));
        return NULL;
    }
    s_job_t *job = xcalloc(1, sizeof *job);
    job->coord = self;
    job->done = done;
    job->done_arg = arg;
    job->campaign_id = xstrdup(campaign_id);
    job->bin_dir = xstrdup(self->slurm_bin);
    job->conf = campaign->actions.slurm;
    report_outcome_build(c, &job->outcome);
    store_campaign_destroy(&c);
    job->work.data = job;
    int rc = uv_queue_work(self->loop, &job->work, s_work, s_after);
    if (rc) {
        coord_event(self, campaign_id, NULL, NULL, "slurm",
                    "error: the Slurm actions cannot run: %s; no node drained or resumed",
                    uv_strerror(rc));
        s_free(job);
        return NULL;
    }
    job->next = self->slurm_jobs;
    self->slurm_jobs = job;
    return job;
}

void coord_slurm_actions_forget(coord_slurm_actions_t *job)
{
    if (job)
        job->done = NULL;
}

void coord_slurm_jobs_orphan(coord_t *self)
{
    for (s_job_t *job = self->slurm_jobs; job; job = job->next)
        job->coord = NULL;
    self->slurm_jobs = NULL;
}
