/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's judgment of pair stages and its on_fail: bisect driving (runner.c describes the
 * whole): the diagnosis session fed with every round's results, its rounds placed as tasks, its
 * verdicts stored as the stage's diagnosis task. */
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
#include "scheduler/routes.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_store_judgment(runner_t *self, rtask_t *t, const fb_pair_judgment_t *j,
                             rtask_t *const *sample_task);
static void s_bisect_prior(runner_t *self, const char *prior);
static char *s_join_rails(const fb_stage_t *st);
static char *s_part_node(const char *part);
static void s_part_nodes(const char *part, char ***nodes, size_t *n);
static void s_store_diagnosis(runner_t *self, const fb_bisect_verdict_t *v, size_t n);
static void s_store_session(runner_t *self, const char *task_id, uint64_t now);
static void s_diagnosis_events(runner_t *self, const fb_bisect_verdict_t *v, size_t n);

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
void rn_judge_pairs(runner_t *self)
{
    const fb_stage_t *stage = rn_stage(self);
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

/* A node-scope stage that a later stage names in bisect_prior: its verdicts per node. */
void rn_keep_locals(runner_t *self)
{
    const fb_stage_t *st = rn_stage(self);
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

void rn_locals_free(rlocal_t *l)
{
    fb_hostlist_free(l->nodes, l->n);
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

static const char *s_route(void *routes, const char *src, const char *dst, const char *rail)
{
    return fb_routes_spine(routes, src, dst, rail);
}

/* Starts the stage's diagnosis session over names. 0, or -EINVAL with err. */
int rn_bisect_begin(runner_t *self, char **names, size_t n, char *err, size_t errlen)
{
    const fb_stage_t *st = rn_stage(self);
    fb_bisect_opts_t o;
    fb_bisect_opts_default(&o);
    o.scope = st->scope;
    o.pairing = st->pairing;
    o.topology = st->topology;
    if (st->routes) { /* routes: the spine of each flow, so an uplink is named as that link */
        o.route = s_route;
        o.route_arg = st->routes;
    }
    /* A stage with no seed of its own (a group stage, pairing topology or round-robin, where
     * seed does not apply) has its session seeded by its name, so that the same results give
     * the same plan in every run; pairing random: the stage's seed, stored with its plan (the
     * runner picks one from the clock only where the campaign gives none). */
    bool own_seed = st->scope == FB_SCOPE_PAIRS && st->pairing == FB_PAIRING_RANDOM;
    o.seed = own_seed ? self->seed : fb_bisect_name_seed(st->name);
    o.sweeps = st->rounds;
    o.max_rounds = st->bisect_rounds;
    o.budget_s = (double)st->bisect_budget_ms / 1000.0;
    if (st->bisect_slow > 0.0)
        o.flow.slow_fraction = st->bisect_slow;
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
void rn_note_counters(const runner_t *self, rmember_t *m, const fb_result_t *r)
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
void rn_bisect_record_round(runner_t *self)
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
bool rn_bisect_continue(runner_t *self)
{
    if (!self->bisect || (!self->bisect_plans && !fb_bisect_needed(self->bisect)))
        return false;
    fb_bisect_round_clear(&self->bround);
    /* The time budget counts from the first follow-up round (a decision on time: a rounds
     * budget alone keeps the diagnosis a function of the results). */
    uint64_t now = fb_now_ms();
    fb_bisect_set_elapsed(self->bisect, self->bisect_follow_ms && now > self->bisect_follow_ms
                                            ? (double)(now - self->bisect_follow_ms) / 1000.0
                                            : 0.0);
    int rc = fb_bisect_next(self->bisect, &self->bround);
    if (rc < 0) {
        coord_event(self->coord, self->id, NULL, NULL, "bisect",
                    "%s: cannot plan the next round: %s", rn_stage(self)->name, strerror(-rc));
        return false;
    }
    if (rc == 0) {
        coord_event(self->coord, self->id, NULL, NULL, "bisect",
                    "%s: diagnosis ended (%s) after %u follow-up round(s)", rn_stage(self)->name,
                    fb_bisect_end_name(fb_bisect_end(self->bisect)),
                    fb_bisect_follow_ups(self->bisect));
        return false;
    }
    self->bisect_next = true;
    rn_schedule_next(self, true);
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

/* How the session ended, as a result of the diagnosis task without a part (docs/report-json.md
 * `diagnosis.sessions`): why it ended, the follow-up rounds, the budget. */
static void s_store_session(runner_t *self, const char *task_id, uint64_t now)
{
    const fb_stage_t *st = rn_stage(self);
    fb_result_t *r = fb_result_new();
    char *rid = xasprintf("%s#session", task_id);
    fb_result_set_ids(r, rid, task_id, NULL);
    r->verdict = FB_VERDICT_PASS;
    r->started_ms = r->finished_ms = now;
    fb_bisect_end_t end = fb_bisect_end(self->bisect);
    fb_result_set_error(r, "ended: %s", fb_bisect_end_name(end));
    fb_result_add_metric(r, "ended", (double)end, "");
    fb_result_add_metric(r, "follow_up_rounds", (double)fb_bisect_follow_ups(self->bisect), "");
    fb_result_add_metric(r, "budget_rounds", (double)st->bisect_rounds, "");
    fb_result_add_metric(r, "budget_time_s", (double)st->bisect_budget_ms / 1000.0, "s");
    store_t *store = coord_store(self->coord);
    if (store_result_insert(store, r, now))
        log_error("cannot store how the diagnosis of %s ended: %s", st->name, store_errmsg(store));
    fb_result_destroy(&r);
    free(rid);
}

/* Evidence kept per cleared or passed part: the tests after its first failure, enough to see
 * why. */
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
    fb_hostlist_free(nodes, nn);
    for (size_t i = 0; i < n; i++) {
        const fb_bisect_verdict_t *x = &v[i];
        fb_result_t *r = fb_result_new();
        char *rid = xasprintf("%s/%s", task_id, x->part), *node = s_part_node(x->part);
        fb_result_set_ids(r, rid, task_id, node);
        bool good = x->state == FB_BISECT_CLEARED || x->state == FB_BISECT_PASSED;
        r->verdict = good ? FB_VERDICT_PASS : FB_VERDICT_FAIL;
        r->started_ms = r->finished_ms = now;
        fb_result_set_error(r, "%s", x->summary);
        if (isfinite(x->confidence)) /* a part that passed makes no claim */
            fb_result_add_metric(r, "confidence", x->confidence, "");
        fb_result_add_metric(r, "undecided", x->state == FB_BISECT_UNDECIDED ? 1.0 : 0.0, "");
        if (x->state == FB_BISECT_PASSED)
            fb_result_add_metric(r, "passed", 1.0, "");
        if (x->unit) /* the node or one of its NICs: a stage with rails may name the NIC */
            fb_result_add_metric(r, "unit", 1.0, "");
        if (x->on_watch) /* undecided only because passes cannot bound a fault in bursts */
            fb_result_add_metric(r, "on_watch", 1.0, "");
        fb_result_add_finding(r, x->part, x->kind, x->summary);
        size_t ne = good && x->n_evidence > S_CLEARED_EVIDENCE ? S_CLEARED_EVIDENCE : x->n_evidence;
        for (size_t k = 0; k < ne; k++)
            fb_result_add_finding(r, x->evidence[k].test_id, "evidence", x->evidence[k].what);
        if (store_result_insert(store, r, now))
            log_error("cannot store the diagnosis of %s: %s", x->part, store_errmsg(store));
        fb_result_destroy(&r);
        free(rid);
        free(node);
    }
    s_store_session(self, task_id, now);
    free(task_id);
}

/* Undecided parts that get an event of their own; the rest are counted. */
#define S_UNDECIDED_EVENTS 32

/* Timeline events for the verdicts: one per bad or undecided part (the most suspect undecided
 * ones), one for those on watch, one for the cleared. */
static void s_diagnosis_events(runner_t *self, const fb_bisect_verdict_t *v, size_t n)
{
    const char *stage = rn_stage(self)->name;
    size_t cleared = 0, len = 0, undecided = 0, watch = 0;
    char names[512] = "";
    for (size_t i = 0; i < n; i++) {
        const fb_bisect_verdict_t *x = &v[i];
        if (x->state == FB_BISECT_PASSED)
            continue;
        if (x->on_watch) {
            watch++;
            continue;
        }
        if (x->state == FB_BISECT_UNDECIDED && ++undecided > S_UNDECIDED_EVENTS)
            continue;
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
    if (undecided > S_UNDECIDED_EVENTS)
        coord_event(self->coord, self->id, NULL, NULL, "diagnosis",
                    "%s: %zu more part(s) undecided (in the report)", stage,
                    undecided - S_UNDECIDED_EVENTS);
    if (watch)
        coord_event(self->coord, self->id, NULL, NULL, "diagnosis",
                    "%s: %zu part(s) undecided on watch: each failed, then passed enough to rule "
                    "out a steady fault; one in bursts is left open (in the report)",
                    stage, watch);
    if (cleared)
        coord_event(self->coord, self->id, NULL, NULL, "diagnosis",
                    "%s: cleared %zu suspect(s): %s%s", stage, cleared, names,
                    len >= sizeof names - 80 ? ", ..." : "");
}

/* Whether the undecided parts lean towards a fault: some node's undecided parts together hold
 * P(bad) >= 0.5 (more likely bad than not), or a group a split could not narrow. Undecided parts
 * that lean towards good (the tail of spurious failures a budget leaves) do not fail a stage;
 * the report lists them. */
static bool s_undecided_fault(const fb_bisect_verdict_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].state != FB_BISECT_UNDECIDED)
            continue;
        if (!strcmp(v[i].kind, "group") || isnan(v[i].confidence))
            return true;
        size_t len = strcspn(v[i].part, "/");
        double sum = 0.0;
        for (size_t k = 0; k < n; k++)
            if (v[k].state == FB_BISECT_UNDECIDED && !strncmp(v[k].part, v[i].part, len) &&
                (v[k].part[len] == '\0' || v[k].part[len] == '/') && isfinite(v[k].confidence))
                sum += v[k].confidence;
        if (sum >= 0.5)
            return true;
    }
    return false;
}

/* The end of a bisect stage: its verdicts on the timeline and in the store, and the stage's
 * verdict: failing when a part is bad or the undecided ones lean towards a fault; otherwise the
 * failed tests were explained away (spurious, or a partner of a part since cleared) and only
 * lost, timed-out or erred tasks can fail it. */
fb_verdict_t rn_bisect_finish(runner_t *self, fb_verdict_t *verdicts, size_t n)
{
    fb_bisect_verdict_t *v;
    size_t nv = fb_bisect_verdicts(self->bisect, &v), bad = 0, undecided = 0, cleared = 0;
    for (size_t i = 0; i < nv; i++) {
        bad += v[i].state == FB_BISECT_BAD;
        undecided += v[i].state == FB_BISECT_UNDECIDED;
        cleared += v[i].state == FB_BISECT_CLEARED;
    }
    bool fault = bad || s_undecided_fault(v, nv);
    s_diagnosis_events(self, v, nv);
    if (nv)
        s_store_diagnosis(self, v, nv);
    coord_event(self->coord, self->id, NULL, NULL, "diagnosis",
                "%s: %zu part(s) bad, %zu undecided, %zu suspect(s) cleared, after %u follow-up "
                "round(s) (ended: %s)",
                rn_stage(self)->name, bad, undecided, cleared, fb_bisect_follow_ups(self->bisect),
                fb_bisect_end_name(fb_bisect_end(self->bisect)));
    fb_bisect_verdicts_free(&v, nv);
    if (fault)
        return FB_VERDICT_FAIL;
    for (size_t i = 0; i < n; i++)
        if (verdicts[i] == FB_VERDICT_FAIL)
            verdicts[i] = FB_VERDICT_PASS;
    return fb_stage_verdict(verdicts, n);
}

void rn_bisect_resumed(runner_t *self, uint64_t follow_started_ms)
{
    self->bisect_follow_ms = follow_started_ms;
}

/* A round of the diagnosis session (self->bround): a sweep of a bisect pairs stage
 * (<campaign>/<stage>/r<k>.g<j>) or a follow-up round (b<k>.g<j>), one task per test. */
void rn_begin_bisect_round(runner_t *self)
{
    self->round_over = false;
    const fb_stage_t *stage = rn_stage(self);
    const fb_bisect_round_t *br = &self->bround;
    store_t *store = coord_store(self->coord);
    self->bisect_next = false;
    self->round_first = self->n_tasks;
    self->round = self->bisect_plans ? br->round - 1 : br->round;
    if (br->follow_up && !self->bisect_follow_ms)
        self->bisect_follow_ms = fb_now_ms();
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
        rtask_t *t = rn_task_new(self, id, &g, true, self->round);
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
    rn_dispatch_round(self);
}
