/* SPDX-License-Identifier: Apache-2.0 */
/* The campaigns a coordinator runs at once (docs/operations.md "Several campaigns"). Each holds
 * the nodes it selected while it runs: a campaign whose nodes another one holds is refused,
 * naming the holder and the nodes, or waits in a queue (Submit.queue) until they are free. Its
 * watchers are the clients that submitted or follow it and, for `run --local`, an in-process
 * callback. A campaign that ended is reaped on the next loop iteration (never inside its own
 * runner's callback): its nodes are freed and queued campaigns that now fit start. */
#include "coord_internal.h"
#include "report.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "scheduler/campaign.h"
#include "scheduler/slurm.h"
#include "scheduler/stage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Progress to a remote watcher at most this often, except the final one. */
#define S_PROGRESS_EVERY_MS 250

/* --- lookup ---------------------------------------------------------------------------------- */

campaign_slot_t *coord_campaign_find(coord_t *self, const char *id)
{
    for (campaign_slot_t *s = self->campaigns; s && id; s = s->next)
        if (!strcmp(s->id, id))
            return s;
    return NULL;
}

/* Task ids start with their campaign's id: "<campaign>/<stage>/...". */
campaign_slot_t *coord_campaign_of_task(coord_t *self, const char *task_id)
{
    size_t len = task_id ? strcspn(task_id, "/") : 0;
    for (campaign_slot_t *s = self->campaigns; s && len; s = s->next)
        if (strlen(s->id) == len && !strncmp(s->id, task_id, len))
            return s;
    return NULL;
}

const char *coord_campaign_holding(const coord_t *self, const char *node)
{
    campaign_slot_t *s = node ? fb_strmap_get(self->held, node) : NULL;
    return s ? s->id : NULL;
}

size_t coord_running_count(const coord_t *self)
{
    size_t n = 0;
    for (const campaign_slot_t *s = self->campaigns; s; s = s->next)
        n += s->runner && !s->ended;
    return n;
}

/* --- holding nodes --------------------------------------------------------------------------- */

static void s_hold(coord_t *self, campaign_slot_t *slot, const char *node)
{
    if (fb_strmap_get(self->held, node))
        return;
    slot->held = xrealloc(slot->held, (slot->n_held + 1) * sizeof *slot->held);
    slot->held[slot->n_held] = xstrdup(node);
    fb_strmap_put(self->held, slot->held[slot->n_held], slot);
    slot->n_held++;
}

static void s_release(coord_t *self, campaign_slot_t *slot)
{
    for (size_t i = 0; i < slot->n_held; i++)
        if (fb_strmap_get(self->held, slot->held[i]) == slot)
            fb_strmap_remove(self->held, slot->held[i]);
    fb_hostlist_free(slot->held, slot->n_held);
    slot->held = NULL;
    slot->n_held = 0;
}

static void s_add_name(char ***names, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*names)[i], name))
            return;
    *names = xrealloc(*names, (*n + 1) * sizeof **names);
    (*names)[(*n)++] = xstrdup(name);
}

/* Every node campaign's stages select: named nodes as written, `all` as the nodes alive now. */
static size_t s_campaign_nodes(coord_t *self, const fb_campaign_t *campaign, char ***out)
{
    char **names = NULL;
    size_t n = 0;
    for (size_t i = 0; i < campaign->n_stages; i++) {
        bool all = false;
        char **stage_names = NULL, err[256];
        size_t ns = 0;
        if (fb_stage_nodes(campaign, &campaign->stages[i], &all, &stage_names, &ns, err,
                           sizeof err) == 0 &&
            all) {
            fb_hostlist_free(stage_names, ns);
            ns = coord_alive_names(self, &stage_names);
        }
        for (size_t k = 0; k < ns; k++)
            s_add_name(&names, &n, stage_names[k]);
        fb_hostlist_free(stage_names, ns);
    }
    *out = names;
    return n;
}

/* "campaign X holds n[1-3]; campaign Y holds n7": why names cannot be held now, or NULL when
 * they can. Heap. */
static char *s_conflicts(coord_t *self, char **names, size_t n)
{
    char *msg = NULL;
    for (campaign_slot_t *s = self->campaigns; s; s = s->next) {
        char **mine = NULL;
        size_t nm = 0;
        for (size_t i = 0; i < n; i++)
            if (fb_strmap_get(self->held, names[i]) == s)
                s_add_name(&mine, &nm, names[i]);
        if (!nm)
            continue;
        char *list = fb_hostlist_compress((const char *const *)mine, nm);
        char *more =
            xasprintf("%s%scampaign %s holds %s", msg ? msg : "", msg ? "; " : "", s->id, list);
        free(msg);
        msg = more;
        free(list);
        fb_hostlist_free(mine, nm);
    }
    return msg;
}

size_t coord_campaign_alive_nodes(coord_t *self, const char *campaign_id, char ***names_out)
{
    campaign_slot_t *slot = coord_campaign_find(self, campaign_id);
    char **alive = NULL;
    size_t n = coord_alive_names(self, &alive), kept = 0;
    for (size_t i = 0; i < n; i++) {
        campaign_slot_t *holder = fb_strmap_get(self->held, alive[i]);
        if (holder && holder != slot) {
            free(alive[i]); /* another campaign's */
            continue;
        }
        if (slot && !holder)
            s_hold(self, slot, alive[i]); /* a node that registered since the campaign began */
        alive[kept++] = alive[i];
    }
    *names_out = alive;
    return kept;
}

/* --- watchers -------------------------------------------------------------------------------- */

void coord_campaign_watch(coord_t *self, campaign_slot_t *slot, const char *identity)
{
    (void)self;
    for (watcher_t *w = slot->watchers; w; w = w->next)
        if (!strcmp(w->identity, identity))
            return;
    watcher_t *w = xcalloc(1, sizeof *w);
    w->identity = xstrdup(identity);
    w->next = slot->watchers;
    slot->watchers = w;
}

static void s_watchers_free(campaign_slot_t *slot)
{
    while (slot->watchers) {
        watcher_t *w = slot->watchers;
        slot->watchers = w->next;
        free(w->identity);
        free(w);
    }
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

char *coord_campaign_summary(coord_t *self, const char *campaign_id)
{
    coord_flush(self); /* whoever hears "finished" may read the store at once */
    char *summary = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&summary, &len);
    report_write_text(self->store, campaign_id, mem);
    fclose(mem);
    s_fit_summary(summary, len);
    return summary;
}

static void s_slot_progress(const coord_progress_t *p, void *arg)
{
    campaign_slot_t *slot = arg;
    coord_t *self = slot->coord;
    if (p->finished && slot->runner) {
        coord_campaign_alert(self, p->campaign_id);
        /* Never "finished" while what it rests on is not on disk: a failed commit freezes it. */
        coord_flush(self);
        if (coord_store_down(self))
            return;
    }
    if (slot->cb)
        slot->cb(p, slot->cb_arg);
    if (p->finished)
        slot->ended = true;
    if (!slot->watchers)
        return;
    uint64_t now = fb_mono_ms();
    char *summary = p->finished ? coord_campaign_summary(self, p->campaign_id) : NULL;
    for (watcher_t **wp = &slot->watchers; *wp;) {
        watcher_t *w = *wp;
        if (!p->finished && now - w->last_sent < S_PROGRESS_EVERY_MS) {
            wp = &w->next;
            continue;
        }
        w->last_sent = now;
        if (coord_send_progress(self, w->identity, p, NULL, summary) == -EHOSTUNREACH) {
            *wp = w->next; /* the client went away (it may follow again from a new connection) */
            free(w->identity);
            free(w);
            continue;
        }
        wp = &w->next;
    }
    free(summary);
}

/* --- starting, ending ------------------------------------------------------------------------ */

static char *s_new_id(void)
{
    char stamp[32];
    time_t now = (time_t)(fb_now_ms() / 1000);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    static unsigned counter;
    return xasprintf("%s-%04x", stamp,
                     (unsigned)(fb_mono_ms() ^ (uint64_t)getpid() ^ (++counter * 0x9e37u)) &
                         0xffff);
}

static void s_slot_link(coord_t *self, campaign_slot_t *slot)
{
    campaign_slot_t **tail = &self->campaigns;
    while (*tail)
        tail = &(*tail)->next;
    *tail = slot;
}

static void s_files_free(campaign_slot_t *slot)
{
    for (size_t i = 0; i < slot->n_files; i++) {
        free((char *)slot->files[i].name);
        free((char *)slot->files[i].content);
    }
    free(slot->files);
    slot->files = NULL;
    slot->n_files = 0;
}

static void s_files_copy(campaign_slot_t *slot, const fb_campaign_file_t *files, size_t n)
{
    slot->files = xcalloc(n + 1, sizeof *slot->files);
    for (size_t i = 0; i < n; i++) {
        char *content = xmalloc(files[i].len + 1);
        memcpy(content, files[i].content, files[i].len);
        content[files[i].len] = '\0';
        slot->files[i] = (fb_campaign_file_t){xstrdup(files[i].name), content, files[i].len};
    }
    slot->n_files = n;
}

static void s_slot_free(campaign_slot_t *slot)
{
    s_files_free(slot);
    runner_destroy(&slot->runner);
    fb_campaign_destroy(&slot->pending);
    free(slot->pending_yaml);
    s_watchers_free(slot);
    fb_hostlist_free(slot->held, slot->n_held);
    free(slot->id);
    free(slot);
}

/* Starts slot's campaign (held nodes already taken). 0 or -EIO. */
static int s_slot_run(coord_t *self, campaign_slot_t *slot)
{
    slot->runner = runner_new(self, &slot->pending, slot->id, slot->pending_yaml, slot->files,
                              slot->n_files, s_slot_progress, slot);
    free(slot->pending_yaml);
    slot->pending_yaml = NULL;
    s_files_free(slot);
    if (!slot->runner)
        return -EIO;
    runner_start(slot->runner);
    return 0;
}

int coord_start_campaign(coord_t *self, fb_campaign_t **campaign, const char *yaml,
                         const coord_start_t *how, char **id_out, char **error_out)
{
    *id_out = NULL;
    if (error_out)
        *error_out = NULL;
    char **names = NULL;
    if (coord_campaign_alert_check(self, *campaign, error_out))
        return -EINVAL;
    size_t n = s_campaign_nodes(self, *campaign, &names);
    char *conflict = s_conflicts(self, names, n);
    if (conflict && !how->queue) {
        if (error_out)
            *error_out = xasprintf("busy: %s; wait with --queue, or choose other nodes", conflict);
        free(conflict);
        fb_hostlist_free(names, n);
        return -EBUSY;
    }
    campaign_slot_t *slot = xcalloc(1, sizeof *slot);
    slot->coord = self;
    slot->id = s_new_id();
    slot->cb = how->cb;
    slot->cb_arg = how->cb_arg;
    slot->pending = *campaign;
    *campaign = NULL;
    slot->pending_yaml = xstrdup(yaml);
    s_files_copy(slot, how->files, how->n_files);
    if (how->watcher)
        coord_campaign_watch(self, slot, how->watcher);
    s_slot_link(self, slot);
    *id_out = xstrdup(slot->id);
    if (conflict) {
        slot->queued = true;
        log_info("campaign %s (%s) queued: %s", slot->id, slot->pending->name, conflict);
        free(conflict);
        fb_hostlist_free(names, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        s_hold(self, slot, names[i]);
    fb_hostlist_free(names, n);
    int rc = s_slot_run(self, slot);
    if (rc) {
        slot->ended = true;
        free(*id_out);
        *id_out = NULL;
        if (error_out)
            *error_out = xasprintf("cannot start the campaign: cannot write to the database %s",
                                   store_path(self->store));
    }
    return rc;
}

campaign_slot_t *coord_campaign_adopt(coord_t *self, const char *id, char **nodes, size_t n)
{
    campaign_slot_t *slot = xcalloc(1, sizeof *slot);
    slot->coord = self;
    slot->id = xstrdup(id);
    for (size_t i = 0; i < n; i++)
        s_hold(self, slot, nodes[i]);
    s_slot_link(self, slot);
    return slot;
}

void coord_campaign_attach(campaign_slot_t *slot, runner_t *runner)
{
    slot->runner = runner;
}

coord_progress_cb coord_campaign_progress_cb(campaign_slot_t *slot, void **arg_out)
{
    *arg_out = slot;
    return s_slot_progress;
}

/* Queued campaigns whose nodes are free now start, in the order they came. */
static void s_start_queued(coord_t *self)
{
    for (campaign_slot_t *s = self->campaigns; s; s = s->next) {
        if (!s->queued || s->ended)
            continue;
        char **names = NULL;
        size_t n = s_campaign_nodes(self, s->pending, &names);
        char *conflict = s_conflicts(self, names, n);
        if (!conflict) {
            for (size_t i = 0; i < n; i++)
                s_hold(self, s, names[i]);
            s->queued = false;
            log_info("campaign %s leaves the queue: its nodes are free", s->id);
            if (s_slot_run(self, s)) {
                coord_progress_t p = {.campaign_id = s->id,
                                      .finished = true,
                                      .verdict = FB_VERDICT_ERROR,
                                      .state = "error"};
                s_slot_progress(&p, s);
            }
        }
        free(conflict);
        fb_hostlist_free(names, n);
    }
}

void coord_campaigns_reap(coord_t *self)
{
    bool freed = false;
    for (campaign_slot_t **p = &self->campaigns; *p;) {
        campaign_slot_t *s = *p;
        if (!s->ended || s->frozen || (s->runner && !runner_finished(s->runner) && !s->queued)) {
            p = &s->next;
            continue;
        }
        *p = s->next;
        s_release(self, s);
        s_slot_free(s);
        freed = true;
    }
    if (freed)
        s_start_queued(self);
}

int coord_campaign_cancel(coord_t *self, campaign_slot_t *slot, const char *why)
{
    if (slot->ended)
        return -EALREADY;
    coord_event(self, slot->id, NULL, NULL, "campaign", "cancel: %s", why);
    log_warn("campaign %s cancelled: %s", slot->id, why);
    if (slot->runner) {
        runner_cancel(slot->runner, why);
        return 0;
    }
    /* queued: it never started; nothing was stored */
    coord_progress_t p = {.campaign_id = slot->id,
                          .campaign_name = slot->pending ? slot->pending->name : "",
                          .finished = true,
                          .verdict = FB_VERDICT_ERROR,
                          .state = "cancelled"};
    s_slot_progress(&p, slot);
    return 0;
}

void coord_campaigns_destroy(coord_t *self)
{
    while (self->campaigns) {
        campaign_slot_t *s = self->campaigns;
        self->campaigns = s->next;
        s_slot_free(s);
    }
    fb_strmap_destroy(&self->held);
}

/* --- agents' events, routed to the campaigns ------------------------------------------------- */

void coord_campaigns_node_lost(coord_t *self, const char *node, const char *why)
{
    for (campaign_slot_t *s = self->campaigns; s; s = s->next)
        if (s->runner && !s->frozen && !runner_finished(s->runner))
            runner_on_node_lost(s->runner, node, why);
}

void coord_campaigns_result(coord_t *self, const fb_result_t *r)
{
    campaign_slot_t *s = coord_campaign_of_task(self, r->task_id);
    if (s && s->runner && !s->frozen && !runner_finished(s->runner))
        runner_on_result(s->runner, r);
}

/* Tasks an agent runs for a campaign that is not running here (finished, cancelled, or unknown
 * to this coordinator) are cancelled, so that they do not overlap what runs next on the node. */
void coord_campaigns_hello(coord_t *self, const char *node, char **running, size_t n_running,
                           char **unacked, size_t n_unacked)
{
    for (size_t i = 0; i < n_running; i++) {
        campaign_slot_t *s = coord_campaign_of_task(self, running[i]);
        if (s && s->runner && !runner_finished(s->runner))
            continue;
        coord_event(self, NULL, running[i], node, "cancel",
                    "the agent runs a task of a campaign that is not running here; cancelled");
        log_warn("agent %s runs task %s of a campaign that is not running here: cancelling it",
                 node, running[i]);
        coord_send_cancel(self, node, running[i],
                          "its campaign is not running on this coordinator");
    }
    for (campaign_slot_t *s = self->campaigns; s; s = s->next)
        if (s->runner && !s->frozen && !runner_finished(s->runner))
            runner_on_hello(s->runner, node, running, n_running, unacked, n_unacked);
}

/* --- resuming after a restart ---------------------------------------------------------------- */

static int s_collect_running(const store_campaign_t *c, void *arg)
{
    void **a = arg;
    char ***ids = a[0];
    size_t *n = a[1];
    if (strcmp(c->state, "running"))
        return 0;
    *ids = xrealloc(*ids, (*n + 1) * sizeof **ids);
    (*ids)[(*n)++] = xstrdup(c->id);
    return 0;
}

/* A `nodes: slurm:...` selection as it was resolved when the campaign was submitted. */
static int s_apply_selection(const char *expr, const char *nodes, void *campaign)
{
    return fb_campaign_resolve_selection(campaign, expr, nodes);
}

/* The campaign's text parsed again with the files it was submitted with, and the nodes its Slurm
 * selections were then. */
static int s_reparse(coord_t *self, const store_campaign_t *c, fb_campaign_t **out, char *err,
                     size_t errlen)
{
    char *perr = NULL;
    int rc = fb_campaign_parse(c->yaml ? c->yaml : "", c->yaml ? strlen(c->yaml) : 0,
                               c->source ? c->source : "stored campaign", out, &perr);
    store_file_t *files = NULL;
    size_t n = 0;
    if (rc == 0 && (rc = store_campaign_files(self->store, c->id, &files, &n)) != 0)
        perr = xasprintf("cannot read its files: %s", store_errmsg(self->store));
    if (rc == 0 && (n || fb_campaign_file_names(*out, NULL, 0))) {
        fb_campaign_file_t *cf = xcalloc(n + 1, sizeof *cf);
        for (size_t i = 0; i < n; i++)
            cf[i] = (fb_campaign_file_t){files[i].name, files[i].content, files[i].len};
        rc = fb_campaign_attach_files(*out, cf, n, &perr);
        free(cf);
    }
    store_files_free(files, n);
    if (rc == 0 && store_node_selection_foreach(self->store, c->id, s_apply_selection, *out)) {
        perr = xasprintf("cannot read its Slurm node selections: %s", store_errmsg(self->store));
        rc = -EIO;
    }
    if (rc) {
        snprintf(err, errlen, "%s", perr ? perr : "its text does not parse");
        fb_campaign_destroy(out);
    }
    free(perr);
    return rc;
}

/* One campaign resumed (into slot, or a new one holding its nodes), or ended `interrupted`
 * saying why it could not be. */
static void s_resume_one(coord_t *self, const char *id, campaign_slot_t *slot)
{
    char err[512] = "";
    store_campaign_t *c = NULL;
    fb_campaign_t *campaign = NULL;
    runner_t *runner = NULL;
    if (store_campaign_load(self->store, id, &c))
        snprintf(err, sizeof err, "cannot load it: %s", store_errmsg(self->store));
    else if (s_reparse(self, c, &campaign, err, sizeof err) == 0) {
        char **names = NULL;
        size_t n = s_campaign_nodes(self, campaign, &names);
        for (size_t i = 0; i < c->n_stages; i++)
            for (size_t k = 0; k < c->stages[i].n_nodes; k++)
                s_add_name(&names, &n, c->stages[i].nodes[k]);
        if (!slot)
            slot = coord_campaign_adopt(self, id, names, n);
        fb_hostlist_free(names, n);
        void *arg;
        coord_progress_cb cb = coord_campaign_progress_cb(slot, &arg);
        runner = runner_resume(self, &campaign, c, cb, arg, err, sizeof err);
        fb_campaign_destroy(&campaign);
    }
    store_campaign_destroy(&c);
    if (runner) {
        coord_campaign_attach(slot, runner);
        return;
    }
    if (slot) {
        slot->ended = true; /* reaped on the next loop iteration */
        coord_progress_t p = {.campaign_id = id,
                              .finished = true,
                              .verdict = FB_VERDICT_ERROR,
                              .state = "interrupted"};
        for (watcher_t *w = slot->watchers; w; w = w->next)
            coord_send_progress(self, w->identity, &p, err, NULL);
    }
    log_error("campaign %s left running by an earlier coordinator cannot be resumed: %s", id, err);
    coord_event(self, id, NULL, NULL, "campaign", "interrupted: cannot be resumed: %s", err);
    store_campaign_end(self->store, id, "interrupted", FB_VERDICT_ERROR, fb_now_ms());
    coord_campaign_alert(self, id);
}

void coord_campaigns_resume(coord_t *self)
{
    char **ids = NULL;
    size_t n = 0;
    void *arg[2] = {&ids, &n};
    if (store_campaign_foreach(self->store, s_collect_running, arg) < 0)
        log_error("cannot list the campaigns left running: %s", store_errmsg(self->store));
    for (size_t i = n; i-- > 0;) /* oldest first: they held their nodes first */
        s_resume_one(self, ids[i], NULL);
    fb_hostlist_free(ids, n);
}

void coord_campaign_reload(coord_t *self, campaign_slot_t *slot, const char *down)
{
    runner_destroy(&slot->runner);
    coord_event(self, slot->id, NULL, NULL, "store",
                "the database could not be written for %s; the campaign continues from what it "
                "holds",
                down);
    s_resume_one(self, slot->id, slot);
}
