/* SPDX-License-Identifier: Apache-2.0 */
/* Campaigns handed in by clients (`fleetburn run --coordinator`): who may submit (operator keys),
 * the campaign built from the submitted text and its attached files (never a path of this
 * machine), and the progress a client follows until the final summary. */
#include "coord_internal.h"
#include "report.h"
#include "slurm_client.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- submissions from the CLI --------------------------------------------------------------- */

int coord_send_progress(coord_t *self, const char *identity, const coord_progress_t *p,
                        const char *error, const char *summary)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Progress m = FLEETBURN__PROGRESS__INIT;
    Fleetburn__NodeProgress nodes[COORD_PROGRESS_NODES], *node_ptrs[COORD_PROGRESS_NODES];
    if (p) {
        m.campaign_id = (char *)p->campaign_id;
        m.stage = (char *)(p->stage ? p->stage : "");
        m.stage_index = p->stage_index;
        m.stage_count = p->stage_count;
        m.tasks_total = p->tasks_total;
        m.tasks_done = p->tasks_done;
        m.tasks_failed = p->tasks_failed;
        m.elapsed_ms = p->elapsed_ms;
        m.finished = p->finished;
        m.verdict = (Fleetburn__Verdict)p->verdict;
        m.state = (char *)(p->state ? p->state : p->finished ? "finished" : "running");
        m.tasks_running = p->tasks_running;
        m.eta_ms = p->eta_ms;
        m.stage_note = (char *)(p->stage_note ? p->stage_note : "");
        for (size_t i = 0; i < p->n_nodes; i++) {
            fleetburn__node_progress__init(&nodes[i]);
            nodes[i].node = (char *)p->nodes[i].node;
            nodes[i].fraction = p->nodes[i].fraction;
            nodes[i].phase = (char *)p->nodes[i].phase;
            nodes[i].elapsed_ms = p->nodes[i].elapsed_ms;
            nodes[i].eta_ms = p->nodes[i].eta_ms;
            node_ptrs[i] = &nodes[i];
        }
        m.nodes = node_ptrs;
        m.n_nodes = p->n_nodes;
    } else {
        m.finished = true;
        m.verdict = FLEETBURN__VERDICT__VERDICT_ERROR;
    }
    m.error = (char *)(error ? error : "");
    m.summary = (char *)(summary ? summary : "");
    env.body_case = FLEETBURN__ENVELOPE__BODY_PROGRESS;
    env.progress = &m;
    return coord_send_to(self, identity, &env);
}

/* With keys, only operators submit, follow, cancel and list. The refusal starts with "not
 * authorised" (the client exits 3 on it). */
static bool s_operator(coord_t *self, const char *identity, const char *what)
{
    if (!self->auth)
        return true;
    const char *key = fb_zsock_peer_user_id(self->zs);
    if (key && auth_is_operator(self->auth, key))
        return true;
    const char *file = key ? auth_key_file(self->auth, key) : NULL;
    char *reason = xasprintf("not authorised: this client's key (%s) is not an operator key; "
                             "operator keys are %s/operators/NAME.pub",
                             file ? file : "unknown", auth_dir(self->auth));
    uint64_t held = 0;
    if (fb_ratelimit_ok(&self->refusal_log, fb_mono_ms(), &held))
        log_warn("refused %s from %s: %s (%llu lines held back)", what,
                 fb_zsock_peer_address(self->zs), reason, (unsigned long long)held);
    coord_send_progress(self, identity, NULL, reason, NULL);
    free(reason);
    return false;
}

int coord_campaign_from_submit(const Fleetburn__Submit *m, fb_campaign_t **out, char **error_out)
{
    *out = NULL;
    const char *source = m->source[0] ? m->source : "submitted campaign";
    int rc = fb_campaign_parse(m->campaign_yaml, strlen(m->campaign_yaml), source, out, error_out);
    if (rc)
        return rc;
    /* The files the campaign names come with it; no path from a submission is ever opened. */
    fb_campaign_file_t *files = xcalloc(m->n_files ? m->n_files : 1, sizeof *files);
    for (size_t i = 0; i < m->n_files; i++)
        files[i] = (fb_campaign_file_t){m->files[i]->name, (const char *)m->files[i]->content.data,
                                        m->files[i]->content.len};
    rc = fb_campaign_attach_files(*out, files, m->n_files, error_out);
    free(files);
    if (rc)
        fb_campaign_destroy(out);
    return rc;
}

/* A submission is parsed on libuv's thread pool: campaign text of up to a megabyte with its
 * topologies must not hold the loop that answers every agent's heartbeat. The job keeps its own
 * copy of what it parses (the message is freed when its handler returns). */
typedef struct submit_job {
    uv_work_t work;
    coord_t *coord; /* NULL once the coordinator is gone: the result is dropped */
    char *identity, *yaml, *source;
    char *slurm_bin; /* where sinfo is, for nodes: slurm:... (copied: the job runs off the loop) */
    bool queue;
    Fleetburn__AttachedFile *files;
    Fleetburn__AttachedFile **file_ptrs;
    size_t n_files;
    fb_campaign_t *campaign; /* the parse's result ... */
    char *error;             /* ... or why not */
    struct submit_job *next;
} submit_job_t;

static void s_job_free(submit_job_t *job)
{
    for (size_t i = 0; i < job->n_files; i++) {
        free(job->files[i].name);
        free(job->files[i].content.data);
    }
    free(job->files);
    free(job->file_ptrs);
    free(job->identity);
    free(job->yaml);
    free(job->source);
    free(job->slurm_bin);
    free(job->error);
    fb_campaign_destroy(&job->campaign);
    free(job);
}

static void s_job_parse(uv_work_t *w)
{
    submit_job_t *job = w->data;
    Fleetburn__Submit m = FLEETBURN__SUBMIT__INIT;
    m.campaign_yaml = job->yaml;
    m.source = job->source;
    m.files = job->file_ptrs;
    m.n_files = job->n_files;
    coord_campaign_from_submit(&m, &job->campaign, &job->error);
    /* nodes: slurm:... is resolved here, off the loop: sinfo may take seconds */
    if (job->campaign && slurm_resolve_selections(job->slurm_bin, job->campaign, &job->error))
        fb_campaign_destroy(&job->campaign);
}

static void s_job_unlink(coord_t *self, submit_job_t *job)
{
    for (submit_job_t **p = &self->submit_jobs; *p; p = &(*p)->next)
        if (*p == job) {
            *p = job->next;
            return;
        }
}

static void s_start_parsed(coord_t *self, submit_job_t *job)
{
    const char *identity = job->identity;
    if (coord_store_down(self)) {
        char *msg = xasprintf("cannot start the campaign: the database %s cannot be written: %s",
                              store_path(self->store), self->store_error);
        coord_send_progress(self, identity, NULL, msg, NULL);
        free(msg);
        return;
    }
    if (!job->campaign) {
        log_warn("refused a campaign: %s", job->error ? job->error : "unknown error");
        coord_send_progress(self, identity, NULL, job->error ? job->error : "invalid campaign",
                            NULL);
        return;
    }
    char *id = NULL, *error = NULL;
    fb_campaign_file_t *files = xcalloc(job->n_files + 1, sizeof *files);
    for (size_t i = 0; i < job->n_files; i++)
        files[i] =
            (fb_campaign_file_t){job->files[i].name, (const char *)job->files[i].content.data,
                                 job->files[i].content.len};
    coord_start_t how = {
        .watcher = identity, .queue = job->queue, .files = files, .n_files = job->n_files};
    int rc = coord_start_campaign(self, &job->campaign, job->yaml, &how, &id, &error);
    free(files);
    if (rc) {
        char *msg = error ? error : xasprintf("cannot start the campaign: %s", strerror(-rc));
        log_warn("refused a campaign: %s", msg);
        coord_send_progress(self, identity, NULL, msg, NULL);
        free(msg);
        return;
    }
    /* The client prints "submitted" on this first Progress: the campaign is accepted. */
    campaign_slot_t *slot = coord_campaign_find(self, id);
    coord_progress_t p = {.campaign_id = id,
                          .campaign_name = "",
                          .state = slot && slot->queued ? "queued" : "running"};
    coord_send_progress(self, identity, &p, NULL, NULL);
    free(id);
}

static void s_job_done(uv_work_t *w, int status)
{
    submit_job_t *job = w->data;
    if (job->coord && status == 0) {
        s_job_unlink(job->coord, job);
        s_start_parsed(job->coord, job);
    } else if (job->coord) {
        s_job_unlink(job->coord, job);
    }
    s_job_free(job);
}

void coord_on_submit(coord_t *self, const char *identity, const Fleetburn__Submit *m)
{
    if (!s_operator(self, identity, "a campaign"))
        return;
    submit_job_t *job = xcalloc(1, sizeof *job);
    job->coord = self;
    job->identity = xstrdup(identity);
    job->yaml = xstrdup(m->campaign_yaml);
    job->source = xstrdup(m->source);
    job->slurm_bin = xstrdup(self->slurm_bin);
    job->queue = m->queue;
    job->n_files = m->n_files;
    job->files = xcalloc(m->n_files ? m->n_files : 1, sizeof *job->files);
    job->file_ptrs = xcalloc(m->n_files ? m->n_files : 1, sizeof *job->file_ptrs);
    for (size_t i = 0; i < m->n_files; i++) {
        Fleetburn__AttachedFile *f = &job->files[i];
        fleetburn__attached_file__init(f);
        f->name = xstrdup(m->files[i]->name);
        f->content.len = m->files[i]->content.len;
        f->content.data = xmalloc(f->content.len ? f->content.len : 1);
        if (f->content.len)
            memcpy(f->content.data, m->files[i]->content.data, f->content.len);
        job->file_ptrs[i] = f;
    }
    job->work.data = job;
    job->next = self->submit_jobs;
    self->submit_jobs = job;
    int rc = uv_queue_work(self->loop, &job->work, s_job_parse, s_job_done);
    if (rc) {
        s_job_unlink(self, job);
        char *msg = xasprintf("cannot parse the campaign now: %s", uv_strerror(rc));
        coord_send_progress(self, identity, NULL, msg, NULL);
        free(msg);
        s_job_free(job);
    }
}

void coord_submit_jobs_orphan(coord_t *self)
{
    for (submit_job_t *job = self->submit_jobs; job; job = job->next)
        job->coord = NULL;
    self->submit_jobs = NULL;
}

/* --- follow, cancel, list -------------------------------------------------------------------- */

/* The campaign a request names, or the one running when it names none. NULL after telling the
 * client why. */
static campaign_slot_t *s_requested(coord_t *self, const char *identity, const char *id)
{
    if (id[0]) {
        campaign_slot_t *slot = coord_campaign_find(self, id);
        if (slot && !slot->ended)
            return slot;
        store_campaign_t *c = NULL;
        char *msg = NULL, *summary = NULL;
        if (store_campaign_load(self->store, id, &c) == 0) {
            msg = xasprintf("campaign %s is not running: it is %s (%s); see `fleetburn report %s`",
                            id, c->state, fb_verdict_name(c->verdict), id);
            /* A client that was away when it ended (a coordinator restart, a lost connection)
             * still gets the summary it would have printed. */
            if (store_campaign_state_ended(c->state))
                summary = coord_campaign_summary(self, id);
        } else {
            msg = xasprintf("no campaign %s on this coordinator", id);
        }
        store_campaign_destroy(&c);
        coord_send_progress(self, identity, NULL, msg, summary);
        free(msg);
        free(summary);
        return NULL;
    }
    campaign_slot_t *found = NULL;
    size_t n = 0;
    for (campaign_slot_t *s = self->campaigns; s; s = s->next)
        if (!s->ended) {
            found = s;
            n++;
        }
    if (n == 1)
        return found;
    coord_send_progress(self, identity, NULL,
                        n ? "several campaigns run: name one (`fleetburn campaigns` lists them)"
                          : "no campaign is running",
                        NULL);
    return NULL;
}

typedef struct {
    Fleetburn__CampaignInfo *infos;
    Fleetburn__CampaignInfo **ptrs;
    size_t n, cap;
    char **texts; /* heap strings the infos point to */
    size_t n_texts;
} s_list_t;

static char *s_keep(s_list_t *l, char *text)
{
    l->texts = xrealloc(l->texts, (l->n_texts + 1) * sizeof *l->texts);
    l->texts[l->n_texts++] = text;
    return text;
}

static Fleetburn__CampaignInfo *s_list_add(s_list_t *l)
{
    if (l->n == l->cap)
        return NULL;
    Fleetburn__CampaignInfo *c = &l->infos[l->n];
    fleetburn__campaign_info__init(c);
    l->ptrs[l->n++] = c;
    return c;
}

static int s_list_stored(const store_campaign_t *c, void *arg)
{
    void **a = arg;
    s_list_t *l = a[0];
    coord_t *self = a[1];
    campaign_slot_t *slot = coord_campaign_find(self, c->id);
    Fleetburn__CampaignInfo *info = s_list_add(l);
    if (!info)
        return 1;
    info->id = s_keep(l, xstrdup(c->id));
    info->name = s_keep(l, xstrdup(c->name ? c->name : ""));
    info->state = s_keep(l, xstrdup(c->state ? c->state : ""));
    info->verdict = (Fleetburn__Verdict)c->verdict;
    info->started_ms = c->started_ms;
    info->finished_ms = c->finished_ms;
    info->nodes =
        slot && slot->n_held
            ? s_keep(l, fb_hostlist_compress((const char *const *)slot->held, slot->n_held))
            : "";
    return 0;
}

static void s_send_list(coord_t *self, const char *identity)
{
    s_list_t l = {0};
    l.cap = FB_WIRE_MAX_ITEMS;
    l.infos = xcalloc(l.cap, sizeof *l.infos);
    l.ptrs = xcalloc(l.cap, sizeof *l.ptrs);
    for (campaign_slot_t *s = self->campaigns; s; s = s->next) { /* queued: not stored yet */
        Fleetburn__CampaignInfo *info = s->queued && !s->ended ? s_list_add(&l) : NULL;
        if (!info)
            continue;
        info->id = s->id;
        info->name = s_keep(&l, xstrdup(s->pending ? s->pending->name : ""));
        info->state = "queued";
    }
    coord_flush(self);
    void *arg[2] = {&l, self};
    Fleetburn__CampaignList list = FLEETBURN__CAMPAIGN_LIST__INIT;
    if (store_campaign_foreach(self->store, s_list_stored, arg) < 0)
        list.error = s_keep(&l, xasprintf("cannot read the database %s: %s",
                                          store_path(self->store), store_errmsg(self->store)));
    list.campaigns = l.ptrs;
    list.n_campaigns = l.n;
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    env.body_case = FLEETBURN__ENVELOPE__BODY_CAMPAIGN_LIST;
    env.campaign_list = &list;
    coord_send_to(self, identity, &env);
    for (size_t i = 0; i < l.n_texts; i++)
        free(l.texts[i]);
    free(l.texts);
    free(l.infos);
    free(l.ptrs);
}

void coord_on_campaign_request(coord_t *self, const char *identity,
                               const Fleetburn__CampaignRequest *m)
{
    if (!s_operator(self, identity, "a campaign request"))
        return;
    if (m->action == FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_LIST) {
        s_send_list(self, identity);
        return;
    }
    campaign_slot_t *slot = s_requested(self, identity, m->campaign_id);
    if (!slot)
        return;
    coord_campaign_watch(self, slot, identity);
    if (m->action == FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_CANCEL) {
        char reason[512];
        fb_log_sanitize(m->reason, reason, sizeof reason);
        char *why = xasprintf("cancelled by an operator%s%s", reason[0] ? ": " : "", reason);
        coord_campaign_cancel(self, slot, why);
        free(why);
        return;
    }
    /* follow: the state now, then the stream */
    coord_progress_t p = {.campaign_id = slot->id, .state = slot->queued ? "queued" : "running"};
    if (slot->runner)
        runner_progress(slot->runner, &p);
    coord_send_progress(self, identity, &p, NULL, NULL);
}
