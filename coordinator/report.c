/* SPDX-License-Identifier: Apache-2.0 */
/* Reports out of the timeline: the machine-readable JSON report (every field is documented in
 * docs/report-json.md), the human summary printed at the end of `fleetburn run` and by
 * `fleetburn report`, and the `fleetburn nodes` table. A campaign is loaded from the store in
 * one snapshot and then only formatted here, so these functions never hold a read transaction
 * while writing to a slow pipe. The diagnosis (which parts are bad, undecided or cleared, with
 * their evidence) is built once from findings and from the diagnosis tasks of bisect stages, and
 * written both as JSON and as text.
 *
 * This file holds what the reports share: the campaign verdict, task counts, metrics as reports
 * show them, the diagnosis model and the fleet's software versions. The JSON report is in
 * report_json.c, the text report and the nodes table in report_text.c; report_internal.h is
 * what the three share. */
#include "report_internal.h"
#include "strmap.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>

/* ---- Shared helpers ---------------------------------------------------------------------- */

/* A stage with on_fail: bisect that passed: its diagnosis found no fault (nothing bad, nothing
 * undecided that leans towards bad), so the tests that failed in it failed spuriously (or with a
 * partner since cleared), and do not fail the campaign. */
static bool s_stage_explained(const store_stage_t *stage)
{
    return stage->on_fail && !strcmp(stage->on_fail, "bisect") &&
           stage->verdict != FB_VERDICT_NONE && fb_verdict_ok(stage->verdict);
}

const char *report_campaign_verdict(const store_campaign_t *c)
{
    if (!c->state || !strcmp(c->state, "running"))
        return "running";
    if (c->verdict != FB_VERDICT_NONE && !fb_verdict_ok(c->verdict))
        return "fail";
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks && !s_stage_explained(&c->stages[s]); t++)
            if (!fb_verdict_ok(c->stages[s].tasks[t].verdict))
                return "fail";
    return "pass";
}

static bool s_task_failed(const store_task_t *task)
{
    return task->verdict != FB_VERDICT_NONE && !fb_verdict_ok(task->verdict);
}

/* Whether out is a pipe or a socket whose reader has gone: `fleetburn report | head` after head
 * had its lines. poll reports an error on such a descriptor (EPIPE on the next write). */
static bool s_reader_gone(FILE *out)
{
    struct stat st;
    int fd = fileno(out);
    if (fd < 0 || fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return false;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

int report__finish_output(FILE *out)
{
    if (fflush(out) == 0 && !ferror(out))
        return 0;
    return s_reader_gone(out) ? -EPIPE : -EIO;
}

/* Counts of tasks by verdict (index: fb_verdict_t; NONE counts pending ones). */
void report__count_tasks(const store_campaign_t *c, size_t counts[FB_VERDICT_MAX + 1],
                         size_t *total)
{
    memset(counts, 0, sizeof(size_t) * (FB_VERDICT_MAX + 1));
    *total = 0;
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
            fb_verdict_t v = c->stages[s].tasks[t].verdict;
            counts[(int)v >= 0 && v <= FB_VERDICT_MAX ? v : FB_VERDICT_ERROR]++;
            (*total)++;
        }
}

static void s_metrics_set(report_metrics_t *ms, char *key, double value, const char *unit)
{
    for (size_t i = 0; i < ms->n; i++) {
        if (!strcmp(ms->items[i].key, key)) { /* the last value of a repeated name wins */
            free(key);
            ms->items[i].value = value;
            ms->items[i].unit = unit;
            return;
        }
    }
    ms->items = xrealloc(ms->items, (ms->n + 1) * sizeof *ms->items);
    ms->items[ms->n++] = (report_metric_t){key, value, unit};
}

void report__metrics_free(report_metrics_t *ms)
{
    for (size_t i = 0; i < ms->n; i++)
        free(ms->items[i].key);
    free(ms->items);
    ms->items = NULL;
    ms->n = 0;
}

static const char *s_result_label(const fb_result_t *r)
{
    return r->node && *r->node ? r->node : r->result_id ? r->result_id : "?";
}

/* The metrics of a task: a name reported by one result keeps its name; a name reported by
 * several results (a group task, one result per node) becomes "name@node" for each. */
void report__task_metrics(const store_task_t *task, report_metrics_t *ms)
{
    for (size_t i = 0; i < task->n_results; i++) {
        const fb_result_t *r = task->results[i].result;
        for (size_t m = 0; m < r->n_metrics; m++) {
            const char *name = r->metrics[m].name ? r->metrics[m].name : "";
            bool shared = false;
            for (size_t j = 0; j < task->n_results && !shared; j++)
                shared = j != i && fb_result_metric(task->results[j].result, name) != NULL;
            char *key = shared ? xasprintf("%s@%s", name, s_result_label(r)) : xstrdup(name);
            s_metrics_set(ms, key, r->metrics[m].value, r->metrics[m].unit);
        }
    }
}

void report__result_metrics(const fb_result_t *r, report_metrics_t *ms)
{
    for (size_t m = 0; m < r->n_metrics; m++)
        s_metrics_set(ms, xstrdup(r->metrics[m].name ? r->metrics[m].name : ""),
                      r->metrics[m].value, r->metrics[m].unit);
}

/* ---- Diagnosis ---------------------------------------------------------------------------- */

/* The model and its types are in report_internal.h. */

static bool s_is_bisect(const store_stage_t *stage)
{
    return stage->on_fail && !strcmp(stage->on_fail, "bisect");
}

static bool s_is_diagnosis_task(const store_stage_t *stage, const store_task_t *task)
{
    size_t n = strlen(task->id);
    return s_is_bisect(stage) && n > 10 && !strcmp(task->id + n - 10, "/diagnosis");
}

static report_suspect_t *s_suspect(report_diag_t *d, const char *part, const char *kind,
                                   report_state_t state)
{
    for (size_t k = 0; k < d->n; k++)
        if (!strcmp(d->v[k].part, part) && d->v[k].state == state)
            return &d->v[k];
    d->v = xrealloc(d->v, (d->n + 1) * sizeof *d->v);
    report_suspect_t *sus = &d->v[d->n++];
    *sus = (report_suspect_t){.part = part, .kind = kind, .state = state};
    return sus;
}

static void s_evidence_add(report_suspect_t *sus, report_evidence_t ev)
{
    sus->evidence = xrealloc(sus->evidence, (sus->n_evidence + 1) * sizeof *sus->evidence);
    sus->evidence[sus->n_evidence++] = ev;
}

static double s_metric_or(const fb_result_t *r, const char *name, double dflt)
{
    const fb_metric_t *m = fb_result_metric(r, name);
    return m ? m->value : dflt;
}

/* The parts a bisect stage's diagnosis task names. */
static void s_diag_bisect(report_diag_t *d, const store_stage_t *stage, const store_task_t *task)
{
    d->bisect = true;
    for (size_t r = 0; r < task->n_results; r++) {
        const fb_result_t *res = task->results[r].result;
        size_t idlen = res->result_id ? strlen(res->result_id) : 0;
        if (idlen > 8 && !strcmp(res->result_id + idlen - 8, "#session")) {
            d->sessions = xrealloc(d->sessions, (d->n_sessions + 1) * sizeof *d->sessions);
            d->sessions[d->n_sessions++] = (report_session_t){stage, res};
            continue;
        }
        if (res->n_findings == 0 || !res->findings[0].part)
            continue;
        const fb_finding_t *head = &res->findings[0];
        report_state_t state =
            fb_verdict_ok(res->verdict)
                ? (s_metric_or(res, "passed", 0) > 0 ? REPORT_PASSED : REPORT_CLEARED)
                : (s_metric_or(res, "undecided", 0) > 0 ? REPORT_UNDECIDED : REPORT_BAD);
        report_suspect_t *sus = s_suspect(d, head->part, head->kind, state);
        bool fresh = !sus->bisect && sus->n_evidence == 0;
        double conf = s_metric_or(res, "confidence", NAN);
        if (state == REPORT_PASSED || (fresh && !isfinite(conf)))
            sus->confidence = NAN; /* passed: never implicated, no claim */
        else if (isfinite(conf) && (fresh || !(conf <= sus->confidence)))
            sus->confidence = conf;
        bool unit = s_metric_or(res, "unit", 0) > 0;
        sus->unit = fresh ? unit : sus->unit && unit; /* any route that named it alone wins */
        bool watch = state == REPORT_UNDECIDED && s_metric_or(res, "on_watch", 0) > 0;
        sus->on_watch = fresh ? watch : sus->on_watch && watch; /* any stronger doubt wins */
        sus->summary = head->what;
        sus->bisect = true;
        if (!sus->stage)
            sus->stage = stage;
        for (size_t f = 1; f < res->n_findings; f++) {
            const fb_finding_t *ev = &res->findings[f];
            const char *id = ev->part ? ev->part : "";
            s_evidence_add(sus, (report_evidence_t){fb_strmap_get(d->stage_of, id),
                                                    fb_strmap_get(d->tasks, id), id, res, ev->what});
        }
    }
}

/* The parts the findings of a failed task name. */
static void s_diag_findings(report_diag_t *d, const store_stage_t *stage, const store_task_t *task)
{
    for (size_t r = 0; r < task->n_results; r++) {
        const fb_result_t *res = task->results[r].result;
        for (size_t f = 0; f < res->n_findings; f++) {
            const fb_finding_t *fd = &res->findings[f];
            if (!fd->part)
                continue;
            report_suspect_t *sus = s_suspect(d, fd->part, fd->kind, REPORT_BAD);
            if (!sus->stage)
                sus->stage = stage;
            sus->confidence = 1.0; /* the part named itself */
            s_evidence_add(sus, (report_evidence_t){stage, task, task->id, res, fd->what});
        }
    }
}

/* Whether engine suspect e cites task_id in its evidence. */
static bool s_cites(const report_suspect_t *e, const char *task_id)
{
    for (size_t k = 0; k < e->n_evidence; k++)
        if (e->evidence[k].task_id && !strcmp(e->evidence[k].task_id, task_id))
            return true;
    return false;
}

/* Whether some part of node `node` ("node/...") is named bad. */
static bool s_part_of_bad(const report_diag_t *d, const char *node)
{
    size_t n = strlen(node);
    for (size_t k = 0; k < d->n; k++)
        if (d->v[k].state == REPORT_BAD && !strncmp(d->v[k].part, node, n) &&
            d->v[k].part[n] == '/')
            return true;
    return false;
}

/* Two rules keep one part from being named twice by routes of different resolution. A node-local
 * test a diagnosis session took as evidence (bisect_prior) is judged by the session's standard: a
 * finding that names the same part from such a test does not name it bad by itself (one failure
 * may be chance in a fleet); the engine's verdict on the part stands. And a node the engine named
 * without telling it from its NICs (a stage of groups uses them all) is not named as well when a
 * stage that could tell names one of its NICs. */
static void s_supersede_findings(report_diag_t *d)
{
    size_t kept = 0;
    for (size_t k = 0; k < d->n; k++) {
        report_suspect_t *f = &d->v[k];
        if (f->state == REPORT_BAD && f->unit && s_part_of_bad(d, f->part)) {
            free(f->evidence);
            continue;
        }
        bool judged = false;
        for (size_t x = 0; x < d->n && !f->bisect && !judged; x++) {
            const report_suspect_t *e = &d->v[x];
            if (!e->bisect || strcmp(e->part, f->part))
                continue;
            judged = f->n_evidence > 0;
            for (size_t i = 0; i < f->n_evidence && judged; i++)
                judged = s_cites(e, f->evidence[i].task_id);
        }
        if (judged) {
            free(f->evidence);
            continue;
        }
        d->v[kept++] = *f;
    }
    d->n = kept;
}

void report__diag_build(report_diag_t *d, const store_campaign_t *c)
{
    memset(d, 0, sizeof *d);
    d->tasks = fb_strmap_new();
    d->stage_of = fb_strmap_new();
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
            fb_strmap_put(d->tasks, c->stages[s].tasks[t].id, &c->stages[s].tasks[t]);
            fb_strmap_put(d->stage_of, c->stages[s].tasks[t].id, &c->stages[s]);
        }
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *stage = &c->stages[s];
        for (size_t t = 0; t < stage->n_tasks; t++) {
            const store_task_t *task = &stage->tasks[t];
            if (s_is_diagnosis_task(stage, task))
                s_diag_bisect(d, stage, task);
            else if (!s_is_bisect(stage) && s_task_failed(task))
                s_diag_findings(d, stage, task);
        }
    }
    s_supersede_findings(d);
}

void report__diag_free(report_diag_t *d)
{
    for (size_t k = 0; k < d->n; k++)
        free(d->v[k].evidence);
    free(d->v);
    free(d->sessions);
    fb_strmap_destroy(&d->tasks);
    fb_strmap_destroy(&d->stage_of);
}

/* Whether part is also named bad (a part bad in one stage is not listed as cleared). */
bool report__diag_bad(const report_diag_t *d, const char *part)
{
    for (size_t k = 0; k < d->n; k++)
        if (d->v[k].state == REPORT_BAD && !strcmp(d->v[k].part, part))
            return true;
    return false;
}

/* Failed tasks no finding or diagnosis explains: a timeout, a lost node. In a bisect stage only
 * those that did not run to a verdict (its failures are what the diagnosis explains). */
bool report__unattributed(const store_stage_t *stage, const store_task_t *task)
{
    if (!s_task_failed(task))
        return false;
    if (s_is_bisect(stage))
        return task->verdict != FB_VERDICT_FAIL;
    for (size_t r = 0; r < task->n_results; r++)
        if (task->results[r].result->n_findings > 0)
            return false;
    return true;
}

/* ---- Fleet software versions ------------------------------------------------------------ */

int report__sw_add(const char *component, const char *version, const char *node, void *arg)
{
    report_software_t *sw = arg;
    if (!component || !version || !node)
        return 0;
    if (sw->n == sw->cap) {
        sw->cap = sw->cap ? sw->cap * 2 : 32;
        sw->rows = xrealloc(sw->rows, sw->cap * sizeof *sw->rows);
    }
    sw->rows[sw->n++] = (report_sw_row_t){xstrdup(component), xstrdup(version), xstrdup(node)};
    return 0;
}

void report__sw_free(report_software_t *sw)
{
    for (size_t i = 0; i < sw->n; i++) {
        free(sw->rows[i].component);
        free(sw->rows[i].version);
        free(sw->rows[i].node);
    }
    free(sw->rows);
}

/* Index one past the last row of the component starting at i. */
size_t report__sw_component_end(const report_software_t *sw, size_t i)
{
    size_t e = i;
    while (e < sw->n && !strcmp(sw->rows[e].component, sw->rows[i].component))
        e++;
    return e;
}

bool report__sw_differs(const report_software_t *sw, size_t begin, size_t end)
{
    for (size_t k = begin + 1; k < end; k++)
        if (strcmp(sw->rows[k].version, sw->rows[begin].version))
            return true;
    return false;
}
