/* SPDX-License-Identifier: Apache-2.0 */
/* Campaigns handed in by clients (`fleetburn run --coordinator`): who may submit (operator keys),
 * the campaign built from the submitted text and its attached files (never a path of this
 * machine), and the progress a client follows until the final summary. */
#include "coord_internal.h"
#include "report.h"
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

void coord_send_progress(coord_t *self, const char *identity, const coord_progress_t *p,
                         const char *error, const char *summary)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Progress m = FLEETBURN__PROGRESS__INIT;
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
    } else {
        m.finished = true;
        m.verdict = FLEETBURN__VERDICT__VERDICT_ERROR;
    }
    m.error = (char *)(error ? error : "");
    m.summary = (char *)(summary ? summary : "");
    env.body_case = FLEETBURN__ENVELOPE__BODY_PROGRESS;
    env.progress = &m;
    coord_send_to(self, identity, &env);
}

/* A summary longer than a Progress may carry (a line per task: 8192 nodes make 1.4 MB) is cut
 * at a line, with a note: a message over the limit would be dropped by the client, which would
 * then wait for "finished" forever. */
static void s_fit_summary(char *summary, size_t len)
{
    static const char note[] = "... (summary cut to fit a message; `fleetburn report` has all)\n";
    if (!summary || len <= FB_WIRE_MAX_YAML)
        return;
    size_t cut = FB_WIRE_MAX_YAML - sizeof note;
    while (cut > 0 && summary[cut - 1] != '\n')
        cut--;
    memcpy(summary + cut, note, sizeof note);
}

static void s_client_progress(const coord_progress_t *p, void *arg)
{
    client_t *client = arg;
    coord_t *self = client->coord;
    uint64_t now = fb_mono_ms();
    if (!p->finished && now - client->last_sent < 250)
        return;
    client->last_sent = now;
    char *summary = NULL;
    if (p->finished) {
        coord_flush(self); /* whoever hears "finished" may read the store at once */
        size_t len = 0;
        FILE *mem = open_memstream(&summary, &len);
        report_write_text(self->store, p->campaign_id, mem);
        fclose(mem);
        s_fit_summary(summary, len);
    }
    coord_send_progress(self, client->identity, p, NULL, summary);
    free(summary);
}

/* With keys, only operators submit. The refusal starts with "not authorised" (the client exits
 * 3 on it). */
static bool s_submit_allowed(coord_t *self, const char *identity)
{
    if (!self->auth)
        return true;
    const char *key = zsock_peer_user_id(self->zs);
    if (key && auth_is_operator(self->auth, key))
        return true;
    const char *file = key ? auth_key_file(self->auth, key) : NULL;
    char *reason = xasprintf("not authorised: this client's key (%s) is not an operator key; "
                             "operator keys are %s/operators/NAME.pub",
                             file ? file : "unknown", auth_dir(self->auth));
    uint64_t held = 0;
    if (fb_ratelimit_ok(&self->refusal_log, fb_mono_ms(), &held))
        log_warn("refused a campaign from %s: %s (%llu lines held back)",
                 zsock_peer_address(self->zs), reason, (unsigned long long)held);
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
    if (!job->campaign) {
        log_warn("refused a campaign: %s", job->error ? job->error : "unknown error");
        coord_send_progress(self, identity, NULL, job->error ? job->error : "invalid campaign",
                            NULL);
        return;
    }
    client_t *client = xcalloc(1, sizeof *client);
    client->identity = xstrdup(identity);
    client->coord = self;
    char *id = NULL;
    int rc = coord_start_campaign(self, &job->campaign, job->yaml, s_client_progress, client, &id);
    if (rc) {
        char *msg = rc == -EBUSY ? xasprintf("busy: campaign %s is running; try again when it has "
                                             "finished",
                                             self->runner ? runner_id(self->runner) : "?")
                                 : xasprintf("cannot start the campaign: %s", strerror(-rc));
        coord_send_progress(self, identity, NULL, msg, NULL);
        free(msg);
        free(client->identity);
        free(client);
        return;
    }
    self->client = client;
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
    if (!s_submit_allowed(self, identity))
        return;
    submit_job_t *job = xcalloc(1, sizeof *job);
    job->coord = self;
    job->identity = xstrdup(identity);
    job->yaml = xstrdup(m->campaign_yaml);
    job->source = xstrdup(m->source);
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
