/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON report: one document per campaign with its stages, tasks, results, metrics and
 * findings, the diagnosis (bad, undecided and cleared parts with their evidence and partners)
 * and the fleet's software versions. Every field is documented in docs/report-json.md, whose
 * format_version (REPORT_JSON_FORMAT_VERSION) changes only on incompatible changes. */
#include "report_internal.h"
#include "json.h"
#include "strmap.h"
#include "util.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON -------------------------------------------------------------------------------- */

void report_json_begin(struct fb_json *j, const char *format, int format_version)
{
    char now[40];
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "format", format);
    fb_json_int(j, "format_version", format_version);
    fb_json_string(j, "generator", "fleetburn " FB_VERSION);
    fb_json_string(j, "generated", fb_iso8601(fb_now_ms(), now, sizeof now));
}

void report__json_span(struct fb_json *j, uint64_t started_ms, uint64_t finished_ms)
{
    fb_json_time(j, "started", started_ms);
    fb_json_time(j, "finished", finished_ms);
    if (started_ms && finished_ms && finished_ms >= started_ms)
        fb_json_int(j, "duration_ms", (int64_t)(finished_ms - started_ms));
    else
        fb_json_null(j, "duration_ms");
}

void report__json_campaign_fields(struct fb_json *j, const store_campaign_t *c)
{
    fb_json_string(j, "id", c->id);
    fb_json_string(j, "name", c->name);
    fb_json_string(j, "source", c->source);
    fb_json_string(j, "state", c->state);
    fb_json_string(j, "verdict", report_campaign_verdict(c));
}

static void s_json_metrics(fb_json_t *j, const report_metrics_t *ms)
{
    fb_json_object_begin(j, "metrics");
    for (size_t i = 0; i < ms->n; i++)
        fb_json_number(j, ms->items[i].key, ms->items[i].value);
    fb_json_object_end(j);
    fb_json_object_begin(j, "units");
    for (size_t i = 0; i < ms->n; i++)
        fb_json_string(j, ms->items[i].key, ms->items[i].unit ? ms->items[i].unit : "");
    fb_json_object_end(j);
}

/* A stored parameter text is only emitted raw when it is a JSON object; the store checks that
 * on the way in, and this keeps a hand-edited database from breaking the report. */
static bool s_looks_like_object(const char *text)
{
    if (!text)
        return false;
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r')
        text++;
    size_t n = strlen(text);
    while (n > 0 && strchr(" \t\n\r", text[n - 1]))
        n--;
    return n >= 2 && text[0] == '{' && text[n - 1] == '}';
}

static void s_json_task(fb_json_t *j, const store_task_t *task)
{
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "id", task->id);
    fb_json_array_begin(j, "nodes");
    for (size_t i = 0; i < task->n_nodes; i++)
        fb_json_string(j, NULL, task->nodes[i]);
    fb_json_array_end(j);
    fb_json_string(j, "state", task->state);
    fb_json_string(j, "verdict", fb_verdict_name(task->verdict));
    fb_json_string(j, "error", task->error);
    report__json_span(j, task->started_ms, task->finished_ms);

    report_metrics_t ms = {0};
    report__task_metrics(task, &ms);
    s_json_metrics(j, &ms);
    report__metrics_free(&ms);

    fb_json_array_begin(j, "findings");
    for (size_t i = 0; i < task->n_results; i++) {
        const fb_result_t *r = task->results[i].result;
        for (size_t f = 0; f < r->n_findings; f++) {
            fb_json_object_begin(j, NULL);
            fb_json_string(j, "part", r->findings[f].part);
            fb_json_string(j, "kind", r->findings[f].kind);
            fb_json_string(j, "what", r->findings[f].what);
            fb_json_string(j, "node", r->node);
            fb_json_string(j, "result_id", r->result_id);
            fb_json_object_end(j);
        }
    }
    fb_json_array_end(j);

    fb_json_array_begin(j, "results");
    for (size_t i = 0; i < task->n_results; i++) {
        const fb_result_t *r = task->results[i].result;
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "result_id", r->result_id);
        fb_json_string(j, "node", r->node);
        fb_json_string(j, "verdict", fb_verdict_name(r->verdict));
        fb_json_string(j, "error", r->error);
        fb_json_time(j, "started", r->started_ms);
        fb_json_time(j, "finished", r->finished_ms);
        fb_json_time(j, "received", task->results[i].received_ms);
        report_metrics_t rm = {0};
        report__result_metrics(r, &rm);
        s_json_metrics(j, &rm);
        report__metrics_free(&rm);
        fb_json_int(j, "findings", (int64_t)r->n_findings);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
}

static void s_json_stage(fb_json_t *j, const store_stage_t *stage)
{
    fb_json_object_begin(j, NULL);
    fb_json_int(j, "index", stage->idx);
    fb_json_string(j, "name", stage->name);
    fb_json_string(j, "workload", stage->workload);
    fb_json_string(j, "on_fail", stage->on_fail);
    if (stage->timeout_ms)
        fb_json_int(j, "timeout_ms", (int64_t)stage->timeout_ms);
    else
        fb_json_null(j, "timeout_ms");
    fb_json_string(j, "verdict", fb_verdict_name(stage->verdict));
    if (s_looks_like_object(stage->params_json))
        fb_json_raw(j, "params", stage->params_json);
    else if (stage->params_json)
        fb_json_string(j, "params", stage->params_json);
    else
        fb_json_raw(j, "params", "{}");
    report__json_span(j, stage->started_ms, stage->finished_ms);
    fb_json_array_begin(j, "tasks");
    for (size_t t = 0; t < stage->n_tasks; t++)
        s_json_task(j, &stage->tasks[t]);
    fb_json_array_end(j);
    fb_json_object_end(j);
}

/* ---- Diagnosis ---------------------------------------------------------------------------- */

/* The node of a part ("n7", "n7/mlx5_0" -> n7), for telling partners from the part itself. */
static bool s_is_part_node(const char *part, const char *node)
{
    size_t n = strlen(node);
    return !strncmp(part, node, n) && (part[n] == '\0' || part[n] == '/');
}

static void s_json_partners(fb_json_t *j, const char *part, const store_task_t *task)
{
    fb_json_array_begin(j, "partners");
    for (size_t i = 0; task && i < task->n_nodes; i++)
        if (!s_is_part_node(part, task->nodes[i]))
            fb_json_string(j, NULL, task->nodes[i]);
    fb_json_array_end(j);
}

/* Every node the part was tested with, over its evidence, once. */
static void s_json_all_partners(fb_json_t *j, const report_suspect_t *sus)
{
    fb_strmap_t *seen = fb_strmap_new();
    fb_json_array_begin(j, "partners");
    for (size_t e = 0; e < sus->n_evidence; e++) {
        const store_task_t *task = sus->evidence[e].task;
        for (size_t i = 0; task && sus->bisect && i < task->n_nodes; i++) {
            if (s_is_part_node(sus->part, task->nodes[i]) || fb_strmap_get(seen, task->nodes[i]))
                continue;
            fb_strmap_put(seen, task->nodes[i], (void *)1);
            fb_json_string(j, NULL, task->nodes[i]);
        }
    }
    fb_json_array_end(j);
    fb_strmap_destroy(&seen);
}

static void s_json_suspect(fb_json_t *j, const report_suspect_t *sus)
{
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "part", sus->part);
    fb_json_string(j, "kind", sus->kind);
    fb_json_number(j, "confidence", sus->confidence);
    fb_json_string(j, "method", sus->bisect ? "bisect" : "finding");
    fb_json_string(j, "stage", sus->stage ? sus->stage->name : NULL);
    fb_json_string(j, "summary", sus->summary);
    fb_json_bool(j, "on_watch", sus->on_watch);
    s_json_all_partners(j, sus);
    fb_json_array_begin(j, "evidence");
    for (size_t e = 0; e < sus->n_evidence; e++) {
        const report_evidence_t *ev = &sus->evidence[e];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "task", ev->task_id);
        fb_json_string(j, "stage", ev->stage ? ev->stage->name : NULL);
        fb_json_string(j, "node", ev->result->node);
        fb_json_string(j, "result_id", ev->result->result_id);
        if (ev->task)
            fb_json_string(j, "verdict", fb_verdict_name(ev->task->verdict));
        else
            fb_json_null(j, "verdict");
        fb_json_string(j, "what", ev->what);
        if (sus->bisect)
            s_json_partners(j, sus->part, ev->task);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
}

static void s_json_suspects(fb_json_t *j, const report_diag_t *d, const char *key,
                            report_state_t state)
{
    fb_json_array_begin(j, key);
    for (size_t k = 0; k < d->n; k++)
        if (d->v[k].state == state &&
            (state < REPORT_CLEARED || !report__diag_bad(d, d->v[k].part)))
            s_json_suspect(j, &d->v[k]);
    fb_json_array_end(j);
}

static double s_metric(const fb_result_t *r, const char *name)
{
    const fb_metric_t *m = fb_result_metric(r, name);
    return m ? m->value : NAN;
}

/* How each stage's diagnosis session ended (docs/report-json.md `sessions`). */
static void s_json_sessions(fb_json_t *j, const report_diag_t *d)
{
    static const char *const ends[] = {"running", "decided", "budget-rounds", "budget-time",
                                       "no-trusted-partner"};
    fb_json_array_begin(j, "sessions");
    for (size_t i = 0; i < d->n_sessions; i++) {
        const fb_result_t *r = d->sessions[i].result;
        double end = s_metric(r, "ended");
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "stage", d->sessions[i].stage->name);
        fb_json_string(j, "ended", end >= 0 && end < 5 ? ends[(int)end] : NULL);
        fb_json_string(j, "summary", r->error);
        fb_json_number(j, "follow_up_rounds", s_metric(r, "follow_up_rounds"));
        fb_json_number(j, "budget_rounds", s_metric(r, "budget_rounds"));
        double t = s_metric(r, "budget_time_s");
        fb_json_number(j, "budget_time_s", t > 0 ? t : NAN);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
}

/* The `diagnosis` object of docs/report-json.md. */
static void s_diagnosis(fb_json_t *j, const store_campaign_t *c)
{
    report_diag_t d;
    report__diag_build(&d, c);
    fb_json_object_begin(j, "diagnosis");
    fb_json_string(j, "method", d.bisect ? "findings+bisect" : "findings");
    s_json_suspects(j, &d, "bad", REPORT_BAD);
    s_json_suspects(j, &d, "undecided", REPORT_UNDECIDED);
    s_json_suspects(j, &d, "cleared", REPORT_CLEARED);
    s_json_suspects(j, &d, "passed", REPORT_PASSED);
    s_json_sessions(j, &d);
    fb_json_array_begin(j, "unattributed");
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *stage = &c->stages[s];
        for (size_t t = 0; t < stage->n_tasks; t++) {
            const store_task_t *task = &stage->tasks[t];
            if (!report__unattributed(stage, task))
                continue;
            fb_json_object_begin(j, NULL);
            fb_json_string(j, "task", task->id);
            fb_json_string(j, "stage", stage->name);
            fb_json_array_begin(j, "nodes");
            for (size_t i = 0; i < task->n_nodes; i++)
                fb_json_string(j, NULL, task->nodes[i]);
            fb_json_array_end(j);
            fb_json_string(j, "verdict", fb_verdict_name(task->verdict));
            fb_json_string(j, "error", task->error);
            fb_json_object_end(j);
        }
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
    report__diag_free(&d);
}

/* ---- Fleet software versions ------------------------------------------------------------ */

static void s_json_fleet(fb_json_t *j, const report_software_t *sw)
{
    fb_json_object_begin(j, "fleet");
    fb_json_array_begin(j, "software");
    for (size_t i = 0; i < sw->n;) {
        size_t end = report__sw_component_end(sw, i);
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "component", sw->rows[i].component);
        fb_json_bool(j, "differs", report__sw_differs(sw, i, end));
        fb_json_array_begin(j, "versions");
        for (size_t k = i; k < end;) {
            fb_json_object_begin(j, NULL);
            fb_json_string(j, "version", sw->rows[k].version);
            fb_json_array_begin(j, "nodes");
            size_t v = k;
            for (; v < end && !strcmp(sw->rows[v].version, sw->rows[k].version); v++)
                fb_json_string(j, NULL, sw->rows[v].node);
            fb_json_array_end(j);
            fb_json_object_end(j);
            k = v;
        }
        fb_json_array_end(j);
        fb_json_object_end(j);
        i = end;
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
}

static char *s_json_report(const store_campaign_t *c, const report_software_t *sw,
                           const report_env_t *env)
{
    fb_json_t *j = fb_json_new(true);
    size_t counts[FB_VERDICT_MAX + 1], total;
    report__count_tasks(c, counts, &total);

    report_json_begin(j, "fleetburn-report", REPORT_JSON_FORMAT_VERSION);

    fb_json_object_begin(j, "campaign");
    report__json_campaign_fields(j, c);
    if (c->verdict == FB_VERDICT_NONE)
        fb_json_null(j, "recorded_verdict");
    else
        fb_json_string(j, "recorded_verdict", fb_verdict_name(c->verdict));
    report__json_span(j, c->started_ms, c->finished_ms);
    fb_json_object_begin(j, "counts");
    fb_json_int(j, "stages", (int64_t)c->n_stages);
    fb_json_int(j, "tasks", (int64_t)total);
    for (int v = 0; v <= FB_VERDICT_MAX; v++)
        fb_json_int(j, fb_verdict_name((fb_verdict_t)v), (int64_t)counts[v]);
    fb_json_object_end(j);
    fb_json_object_end(j);

    fb_json_array_begin(j, "stages");
    for (size_t s = 0; s < c->n_stages; s++)
        s_json_stage(j, &c->stages[s]);
    fb_json_array_end(j);

    s_diagnosis(j, c);
    s_json_fleet(j, sw);
    report__env_json(j, env); /* report_environment.c */
    fb_json_object_end(j);
    char *text = fb_json_take(j);
    fb_json_destroy(&j);
    return text;
}

int report_write_json(store_t *store, const char *campaign_id, FILE *out)
{
    store_campaign_t *c = NULL;
    int err = store_campaign_load(store, campaign_id, &c);
    if (err)
        return err;
    report_software_t sw = {0};
    store_software_foreach(store, campaign_id, report__sw_add, &sw);
    report_env_t env;
    report__env_load(store, campaign_id, &env);
    char *text = s_json_report(c, &sw, &env);
    report__env_free(&env);
    report__sw_free(&sw);
    store_campaign_destroy(&c);
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return report__finish_output(out);
}
