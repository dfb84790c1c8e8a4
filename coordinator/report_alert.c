/* SPDX-License-Identifier: Apache-2.0 */
/* The alert document a webhook posts when a campaign ends (docs/operations.md "Alerts"): what an
 * operator needs to act on, in one small JSON object, from the same model as the reports: the
 * campaign and its verdict, the triggers it met, its stages, its bad and undecided parts each with
 * a one-line summary of its evidence (report__diag_build, the diagnosis of report.c), the failures
 * nothing explains, and the regressions of the end-of-run baseline comparison. It holds no links:
 * the receiver may be a chat channel, and the full report stays with `fleetburn report`. Lists are
 * cut (with their totals), so the document stays small whatever the size of the fleet. */
#include "report_internal.h"
#include "hostlist.h"
#include "json.h"
#include "util.h"
#include "scheduler/webhook.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A line of evidence or of the text at most this long (then "..."). */
#define S_LINE_MAX 300
#define S_TEXT_MAX 1000
#define S_TEXT_PARTS 5          /* bad parts the text names ... */
#define S_TEXT_EVIDENCE_MAX 100 /* ... each with this much of its evidence */

/* ---- Triggers ------------------------------------------------------------------------------ */

static bool s_names_bad_part(const store_campaign_t *c)
{
    report_diag_t d;
    report__diag_build(&d, c);
    bool bad = false;
    for (size_t k = 0; k < d.n && !bad; k++)
        bad = d.v[k].state == REPORT_BAD;
    report__diag_free(&d);
    return bad;
}

unsigned report_alert_triggers(const store_campaign_t *c, bool regressions)
{
    if (!c->state || !strcmp(c->state, "running") || !strcmp(c->state, "queued"))
        return 0;
    unsigned t = regressions ? FB_ALERT_REGRESSION : 0;
    bool finished = !strcmp(c->state, "finished");
    if (!finished)
        t |= FB_ALERT_ERROR; /* cancelled, interrupted, error: it never gave its verdict */
    /* A cancelled campaign's stopped tasks fail it, but name nothing: bad only for a part named. */
    if ((finished && !strcmp(report_campaign_verdict(c), "fail")) || s_names_bad_part(c))
        t |= FB_ALERT_BAD;
    return t;
}

/* ---- One line ---------------------------------------------------------------------------- */

/* text as one line of at most max bytes: control characters become blanks, a longer text is cut
 * at max - 3 and ends with "...". Heap. */
static char *s_one_line(const char *text, size_t max)
{
    size_t n = strlen(text);
    char *line = xstrndup(text, n > max ? max - 3 : n);
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    if (n > max) {
        char *cut = xasprintf("%s...", line);
        free(line);
        line = cut;
    }
    return line;
}

/* "dram: 4 miscompares ... (and 2 more findings)": what a part is known by, in one line. */
static char *s_evidence_line(const report_suspect_t *sus)
{
    const char *what = sus->summary;
    if (!what && sus->n_evidence)
        what = sus->evidence[0].what;
    char *more = !sus->summary && sus->n_evidence > 1
                     ? xasprintf(" (and %zu more finding%s)", sus->n_evidence - 1,
                                 sus->n_evidence > 2 ? "s" : "")
                     : xstrdup("");
    char *text = xasprintf("%s%s%s%s", sus->stage && sus->stage->name ? sus->stage->name : "",
                           sus->stage && sus->stage->name ? ": " : "",
                           what ? what : "no evidence recorded", more);
    char *line = s_one_line(text, S_LINE_MAX);
    free(more);
    free(text);
    return line;
}

/* ---- JSON -------------------------------------------------------------------------------- */

static void s_json_campaign(fb_json_t *j, const store_campaign_t *c)
{
    fb_json_object_begin(j, "campaign");
    report__json_campaign_fields(j, c);
    report__json_span(j, c->started_ms, c->finished_ms);
    fb_json_object_end(j);
}

static void s_json_stages(fb_json_t *j, const store_campaign_t *c)
{
    fb_json_array_begin(j, "stages");
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *st = &c->stages[s];
        size_t failed = 0;
        for (size_t t = 0; t < st->n_tasks; t++)
            failed +=
                st->tasks[t].verdict != FB_VERDICT_NONE && !fb_verdict_ok(st->tasks[t].verdict);
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "name", st->name);
        fb_json_string(j, "workload", st->workload);
        fb_json_string(j, "verdict", fb_verdict_name(st->verdict));
        fb_json_int(j, "tasks", (int64_t)st->n_tasks);
        fb_json_int(j, "tasks_failed", (int64_t)failed);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
}

/* The parts in state, at most REPORT_ALERT_LIST_MAX, then "<key>_total". */
static size_t s_json_parts(fb_json_t *j, const report_diag_t *d, report_state_t state,
                           const char *key)
{
    size_t total = 0;
    fb_json_array_begin(j, key);
    for (size_t k = 0; k < d->n; k++) {
        const report_suspect_t *sus = &d->v[k];
        if (sus->state != state || (state == REPORT_UNDECIDED && report__diag_bad(d, sus->part)))
            continue;
        if (total++ >= REPORT_ALERT_LIST_MAX)
            continue;
        char *line = s_evidence_line(sus);
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "part", sus->part);
        fb_json_string(j, "kind", sus->kind);
        fb_json_string(j, "stage", sus->stage ? sus->stage->name : NULL);
        fb_json_number(j, "confidence", sus->confidence);
        fb_json_bool(j, "on_watch", sus->on_watch);
        fb_json_string(j, "evidence", line);
        fb_json_object_end(j);
        free(line);
    }
    fb_json_array_end(j);
    char *tkey = xasprintf("%s_total", key);
    fb_json_int(j, tkey, (int64_t)total);
    free(tkey);
    return total;
}

static size_t s_json_unattributed(fb_json_t *j, const store_campaign_t *c)
{
    size_t total = 0;
    fb_json_array_begin(j, "unattributed");
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *stage = &c->stages[s];
        for (size_t t = 0; t < stage->n_tasks; t++) {
            const store_task_t *task = &stage->tasks[t];
            if (!report__unattributed(stage, task) || total++ >= REPORT_ALERT_LIST_MAX)
                continue;
            char *nodes = fb_hostlist_compress((const char *const *)task->nodes, task->n_nodes);
            char *error = task->error ? s_one_line(task->error, S_LINE_MAX) : NULL;
            fb_json_object_begin(j, NULL);
            fb_json_string(j, "task", task->id);
            fb_json_string(j, "stage", stage->name);
            fb_json_string(j, "nodes", nodes);
            fb_json_string(j, "verdict", fb_verdict_name(task->verdict));
            fb_json_string(j, "error", error);
            fb_json_object_end(j);
            free(nodes);
            free(error);
        }
    }
    fb_json_array_end(j);
    fb_json_int(j, "unattributed_total", (int64_t)total);
    return total;
}

static void s_json_regressions(fb_json_t *j, const report_regression_t *regs, size_t n)
{
    fb_json_array_begin(j, "regressions");
    for (size_t i = 0; i < n && i < REPORT_ALERT_LIST_MAX; i++) {
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "part", regs[i].part);
        fb_json_string(j, "metric", regs[i].metric);
        fb_json_number(j, "base", regs[i].base);
        fb_json_number(j, "now", regs[i].now);
        fb_json_number(j, "change", regs[i].change);
        fb_json_number(j, "fleet_change", regs[i].fleet_change);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_int(j, "regressions_total", (int64_t)n);
}

/* ---- The text for people ----------------------------------------------------------------- */

/* "fleetburn campaign ID (NAME) finished: fail; 1 bad part: n2 (dram: ...)": the document in one
 * line, for receivers that show a "text" field (chat webhooks). */
static char *s_text(const store_campaign_t *c, const report_diag_t *d, size_t n_bad,
                    size_t n_undecided, size_t n_unattributed, size_t n_regs)
{
    char *text = xasprintf("fleetburn campaign %s (%s) %s: %s", c->id, c->name ? c->name : "",
                           c->state ? c->state : "?", report_campaign_verdict(c));
    char *more = NULL;
    if (n_bad) {
        more = xasprintf("%s; %zu bad part%s:", text, n_bad, n_bad > 1 ? "s" : "");
        free(text);
        text = more;
        size_t named = 0;
        for (size_t k = 0; k < d->n && named < S_TEXT_PARTS; k++) {
            if (d->v[k].state != REPORT_BAD)
                continue;
            char *line = s_evidence_line(&d->v[k]);
            char *brief = s_one_line(line, S_TEXT_EVIDENCE_MAX);
            more = xasprintf("%s%s %s (%s)", text, named ? "," : "", d->v[k].part, brief);
            free(brief);
            free(line);
            free(text);
            text = more;
            named++;
        }
        if (n_bad > named) {
            more = xasprintf("%s and %zu more", text, n_bad - named);
            free(text);
            text = more;
        }
    }
    size_t n_watch = 0;
    for (size_t k = 0; k < d->n; k++)
        n_watch += d->v[k].state == REPORT_UNDECIDED && d->v[k].on_watch &&
                   !report__diag_bad(d, d->v[k].part);
    if (n_undecided) {
        char watch[48] = "";
        if (n_watch)
            snprintf(watch, sizeof watch, " (%zu of them on watch)", n_watch);
        more = xasprintf("%s; %zu undecided%s", text, n_undecided, watch);
        free(text);
        text = more;
    }
    if (n_unattributed) {
        more = xasprintf("%s; %zu failed task%s without a named part", text, n_unattributed,
                         n_unattributed > 1 ? "s" : "");
        free(text);
        text = more;
    }
    if (n_regs) {
        more = xasprintf("%s; %zu regression%s", text, n_regs, n_regs > 1 ? "s" : "");
        free(text);
        text = more;
    }
    char *line = s_one_line(text, S_TEXT_MAX);
    free(text);
    return line;
}

/* ---- The document ------------------------------------------------------------------------ */

char *report_alert_json(const store_campaign_t *c, unsigned triggers,
                        const report_regression_t *regs, size_t n_regs)
{
    report_diag_t d;
    report__diag_build(&d, c);
    fb_json_t *j = fb_json_new(false);
    report_json_begin(j, "fleetburn-alert", REPORT_ALERT_FORMAT_VERSION);
    fb_json_array_begin(j, "triggers");
    for (unsigned bit = 1; bit & FB_ALERT_ALL; bit <<= 1)
        if (triggers & bit)
            fb_json_string(j, NULL, fb_alert_trigger_name(bit));
    fb_json_array_end(j);
    s_json_campaign(j, c);
    s_json_stages(j, c);
    size_t n_bad = s_json_parts(j, &d, REPORT_BAD, "bad");
    size_t n_undecided = s_json_parts(j, &d, REPORT_UNDECIDED, "undecided");
    size_t n_unattributed = s_json_unattributed(j, c);
    s_json_regressions(j, regs, n_regs);
    char *text = s_text(c, &d, n_bad, n_undecided, n_unattributed, n_regs);
    fb_json_string(j, "text", text);
    free(text);
    fb_json_object_end(j);
    report__diag_free(&d);
    char *doc = fb_json_take(j);
    fb_json_destroy(&j);
    return doc;
}
