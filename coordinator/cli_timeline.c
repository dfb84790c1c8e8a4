/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn timeline [ID] [--node N] [--format text|json|trace]` (cli.h, docs/observability.md):
 * what a campaign did, in time order, from the store: stages, tasks per node with their verdicts,
 * the workers' progress and log events, and the telemetry buckets (store_telemetry.h). text is
 * for reading, json for scripts, trace is the Chrome trace-event format that Perfetto
 * (ui.perfetto.dev) and chrome://tracing open: a process per node, a thread per stage, tasks as
 * slices, telemetry as counter tracks, events as instants. */
#include "cli.h"
#include "store.h"
#include "store_telemetry.h"
#include "common/hostlist.h"
#include "common/json.h"
#include "common/log.h"
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint64_t time_ms;
    char *node, *task_id, *kind, *message; /* NULL when not set */
} tl_event_t;

typedef struct {
    store_campaign_t *c;
    const char *node; /* --node, or NULL */
    tl_event_t *events;
    size_t n_events, cap_events;
    store_telemetry_t *tel; /* strings owned */
    size_t n_tel, cap_tel;
} timeline_t;

/* ---- reading ------------------------------------------------------------------------------ */

static bool s_task_has_node(const store_task_t *t, const char *node)
{
    for (size_t i = 0; i < t->n_nodes; i++)
        if (!strcmp(t->nodes[i], node))
            return true;
    return false;
}

static int s_on_event(const store_event_t *e, void *arg)
{
    timeline_t *tl = arg;
    if (tl->node && e->node && strcmp(e->node, tl->node))
        return 0;
    if (tl->n_events == tl->cap_events) {
        tl->cap_events = tl->cap_events ? tl->cap_events * 2 : 256;
        tl->events = xrealloc(tl->events, tl->cap_events * sizeof *tl->events);
    }
    tl->events[tl->n_events++] = (tl_event_t){e->time_ms, xstrdup(e->node), xstrdup(e->task_id),
                                              xstrdup(e->kind), xstrdup(e->message)};
    return 0;
}

static int s_on_telemetry(const store_telemetry_t *row, void *arg)
{
    timeline_t *tl = arg;
    if (tl->n_tel == tl->cap_tel) {
        tl->cap_tel = tl->cap_tel ? tl->cap_tel * 2 : 1024;
        tl->tel = xrealloc(tl->tel, tl->cap_tel * sizeof *tl->tel);
    }
    store_telemetry_t *r = &tl->tel[tl->n_tel++];
    *r = *row;
    r->campaign_id = NULL;
    r->node = xstrdup(row->node);
    r->device = xstrdup(row->device);
    r->quantity = xstrdup(row->quantity);
    r->unit = xstrdup(row->unit);
    return 0;
}

static void s_timeline_free(timeline_t *tl)
{
    for (size_t i = 0; i < tl->n_events; i++) {
        free(tl->events[i].node);
        free(tl->events[i].task_id);
        free(tl->events[i].kind);
        free(tl->events[i].message);
    }
    free(tl->events);
    for (size_t i = 0; i < tl->n_tel; i++) {
        free((char *)tl->tel[i].node);
        free((char *)tl->tel[i].device);
        free((char *)tl->tel[i].quantity);
        free((char *)tl->tel[i].unit);
    }
    free(tl->tel);
    store_campaign_destroy(&tl->c);
}

static int s_load(store_t *store, const char *id, const char *node, timeline_t *tl)
{
    memset(tl, 0, sizeof *tl);
    tl->node = node;
    int rc = store_campaign_load(store, id, &tl->c);
    if (!rc)
        rc = store_event_foreach(store, id, s_on_event, tl);
    store_telemetry_filter_t f = {.campaign_id = id, .node = node};
    if (!rc)
        rc = store_telemetry_foreach(store, &f, s_on_telemetry, tl);
    return rc;
}

/* ---- text ---------------------------------------------------------------------------------- */

typedef struct {
    uint64_t time_ms;
    size_t seq; /* keeps the order of lines of the same millisecond */
    const char *node;
    char *text;
} tl_line_t;

static int s_line_cmp(const void *a, const void *b)
{
    const tl_line_t *x = a, *y = b;
    if (x->time_ms != y->time_ms)
        return x->time_ms < y->time_ms ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct {
    tl_line_t *v;
    size_t n, cap;
} tl_lines_t;

static void s_line(tl_lines_t *l, uint64_t t, const char *node, char *text)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n] = (tl_line_t){t, l->n, node ? node : "-", text};
    l->n++;
}

static void s_task_lines(const timeline_t *tl, const store_stage_t *s, tl_lines_t *l)
{
    for (size_t k = 0; k < s->n_tasks; k++) {
        const store_task_t *t = &s->tasks[k];
        if (tl->node && !s_task_has_node(t, tl->node))
            continue;
        const char *who = t->n_nodes == 1 ? t->nodes[0] : tl->node ? tl->node : "-";
        char *nodes = t->n_nodes > 1 ? fb_hostlist_compress((const char *const *)t->nodes, t->n_nodes) : NULL;
        s_line(l, t->started_ms, who,
               xasprintf("task %s started%s%s", t->id, nodes ? " on " : "", nodes ? nodes : ""));
        if (t->finished_ms)
            s_line(l, t->finished_ms, who,
                   xasprintf("task %s: %s%s%s", t->id, fb_verdict_name(t->verdict),
                             t->error ? ": " : "", t->error ? t->error : ""));
        free(nodes);
    }
}

static void s_print_telemetry_text(const timeline_t *tl, FILE *out)
{
    if (!tl->n_tel) {
        fprintf(out, "\nno telemetry recorded%s%s\n", tl->node ? " for " : "",
                tl->node ? tl->node : "");
        return;
    }
    fprintf(out, "\ntelemetry (per series: samples, min / mean / max, over the buckets stored)\n");
    for (size_t i = 0; i < tl->n_tel;) {
        const store_telemetry_t *r = &tl->tel[i];
        uint64_t n = 0, buckets = 0;
        double min = r->min, max = r->max, sum = 0;
        size_t j = i;
        for (; j < tl->n_tel && !strcmp(tl->tel[j].node, r->node) &&
               !strcmp(tl->tel[j].device, r->device) && !strcmp(tl->tel[j].quantity, r->quantity);
             j++) {
            const store_telemetry_t *b = &tl->tel[j];
            n += b->count;
            buckets++;
            sum += b->mean * b->count;
            min = b->min < min ? b->min : min;
            max = b->max > max ? b->max : max;
        }
        char series[192];
        snprintf(series, sizeof series, "%s%s%s", r->device, r->device[0] ? "." : "", r->quantity);
        fprintf(out, "  %-12s %-28s %7llu samples  %g / %g / %g %s  (%llu buckets)\n", r->node,
                series, (unsigned long long)n, min, n ? sum / (double)n : 0.0, max, r->unit,
                (unsigned long long)buckets);
        i = j;
    }
}

static int s_print_text(const timeline_t *tl, FILE *out)
{
    const store_campaign_t *c = tl->c;
    tl_lines_t l = {0};
    /* The campaign's and stages' starts and ends are events of their own; tasks are not. */
    for (size_t i = 0; i < c->n_stages; i++)
        s_task_lines(tl, &c->stages[i], &l);
    for (size_t i = 0; i < tl->n_events; i++) {
        const tl_event_t *e = &tl->events[i];
        if (!strcmp(e->kind, "result"))
            continue; /* the task lines say it */
        s_line(&l, e->time_ms, e->node, xasprintf("%s %s", e->kind, e->message ? e->message : ""));
    }
    qsort(l.v, l.n, sizeof *l.v, s_line_cmp);
    fprintf(out, "campaign %s  %s  %s%s%s\n", c->id, c->name, c->state, tl->node ? "  node " : "",
            tl->node ? tl->node : "");
    fprintf(out, "%-12s %-9s %-12s %s\n", "TIME", "OFFSET", "NODE", "WHAT");
    for (size_t i = 0; i < l.n; i++) {
        char when[16] = "-", offset[32];
        time_t secs = (time_t)(l.v[i].time_ms / 1000);
        struct tm tm;
        if (l.v[i].time_ms && localtime_r(&secs, &tm))
            strftime(when, sizeof when, "%H:%M:%S", &tm);
        uint64_t off = l.v[i].time_ms > c->started_ms ? l.v[i].time_ms - c->started_ms : 0;
        snprintf(offset, sizeof offset, "+%.1fs", (double)off / 1000.0);
        char safe[1024];
        fb_log_sanitize(l.v[i].text, safe, sizeof safe);
        fprintf(out, "%-12s %-9s %-12s %s\n", when, offset, l.v[i].node, safe);
        free(l.v[i].text);
    }
    free(l.v);
    s_print_telemetry_text(tl, out);
    return ferror(out) ? -EPIPE : 0;
}

/* ---- json ---------------------------------------------------------------------------------- */

static void s_json_task(fb_json_t *j, const store_stage_t *s, const store_task_t *t)
{
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "id", t->id);
    fb_json_string(j, "stage", s->name);
    fb_json_string(j, "workload", s->workload);
    fb_json_array_begin(j, "nodes");
    for (size_t i = 0; i < t->n_nodes; i++)
        fb_json_string(j, NULL, t->nodes[i]);
    fb_json_array_end(j);
    fb_json_int(j, "started_ms", (int64_t)t->started_ms);
    if (t->finished_ms)
        fb_json_int(j, "finished_ms", (int64_t)t->finished_ms);
    else
        fb_json_null(j, "finished_ms");
    if (t->verdict != FB_VERDICT_NONE)
        fb_json_string(j, "verdict", fb_verdict_name(t->verdict));
    else
        fb_json_null(j, "verdict");
    if (t->error)
        fb_json_string(j, "error", t->error);
    fb_json_object_end(j);
}

static void s_json_telemetry(fb_json_t *j, const timeline_t *tl)
{
    fb_json_array_begin(j, "telemetry");
    for (size_t i = 0; i < tl->n_tel;) {
        const store_telemetry_t *r = &tl->tel[i];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "node", r->node);
        fb_json_string(j, "device", r->device);
        fb_json_string(j, "quantity", r->quantity);
        fb_json_string(j, "unit", r->unit);
        fb_json_array_begin(j, "buckets"); /* [time_ms, span_ms, count, min, max, mean] */
        size_t k = i;
        for (; k < tl->n_tel && !strcmp(tl->tel[k].node, r->node) &&
               !strcmp(tl->tel[k].device, r->device) && !strcmp(tl->tel[k].quantity, r->quantity);
             k++) {
            const store_telemetry_t *b = &tl->tel[k];
            fb_json_array_begin(j, NULL);
            fb_json_int(j, NULL, (int64_t)b->time_ms);
            fb_json_int(j, NULL, (int64_t)b->span_ms);
            fb_json_int(j, NULL, b->count);
            fb_json_number(j, NULL, b->min);
            fb_json_number(j, NULL, b->max);
            fb_json_number(j, NULL, b->mean);
            fb_json_array_end(j);
        }
        fb_json_array_end(j);
        fb_json_object_end(j);
        i = k;
    }
    fb_json_array_end(j);
}

static int s_print_json(const timeline_t *tl, FILE *out)
{
    const store_campaign_t *c = tl->c;
    fb_json_t *j = fb_json_new(true);
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "campaign", c->id);
    fb_json_string(j, "name", c->name);
    fb_json_string(j, "state", c->state);
    fb_json_int(j, "started_ms", (int64_t)c->started_ms);
    if (c->finished_ms)
        fb_json_int(j, "finished_ms", (int64_t)c->finished_ms);
    else
        fb_json_null(j, "finished_ms");
    if (tl->node)
        fb_json_string(j, "node", tl->node);
    fb_json_array_begin(j, "stages");
    for (size_t i = 0; i < c->n_stages; i++) {
        const store_stage_t *s = &c->stages[i];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "name", s->name);
        fb_json_string(j, "workload", s->workload);
        fb_json_int(j, "started_ms", (int64_t)s->started_ms);
        fb_json_int(j, "finished_ms", (int64_t)s->finished_ms);
        fb_json_string(j, "verdict", fb_verdict_name(s->verdict));
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_array_begin(j, "tasks");
    for (size_t i = 0; i < c->n_stages; i++)
        for (size_t k = 0; k < c->stages[i].n_tasks; k++)
            if (!tl->node || s_task_has_node(&c->stages[i].tasks[k], tl->node))
                s_json_task(j, &c->stages[i], &c->stages[i].tasks[k]);
    fb_json_array_end(j);
    fb_json_array_begin(j, "events");
    for (size_t i = 0; i < tl->n_events; i++) {
        const tl_event_t *e = &tl->events[i];
        fb_json_object_begin(j, NULL);
        fb_json_int(j, "time_ms", (int64_t)e->time_ms);
        fb_json_string(j, "kind", e->kind);
        e->node ? fb_json_string(j, "node", e->node) : fb_json_null(j, "node");
        e->task_id ? fb_json_string(j, "task", e->task_id) : fb_json_null(j, "task");
        fb_json_string(j, "message", e->message ? e->message : "");
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    s_json_telemetry(j, tl);
    fb_json_object_end(j);
    fprintf(out, "%s\n", fb_json_text(j));
    fb_json_destroy(&j);
    return ferror(out) ? -EPIPE : 0;
}

/* ---- trace (Chrome trace-event format) ------------------------------------------------------ */

typedef struct {
    char **names;
    size_t n;
} s_pids_t;

/* The trace's process id of node: 1, 2, ... in order of first appearance; 0 is the coordinator. */
static int s_pid(s_pids_t *p, const char *node)
{
    if (!node)
        return 0;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->names[i], node))
            return (int)i + 1;
    p->names = xrealloc(p->names, (p->n + 1) * sizeof *p->names);
    p->names[p->n++] = xstrdup(node);
    return (int)p->n;
}

/* Microseconds since the campaign started: trace-event times. */
static int64_t s_us(const timeline_t *tl, uint64_t ms)
{
    return ms > tl->c->started_ms ? (int64_t)(ms - tl->c->started_ms) * 1000 : 0;
}

static void s_trace_head(fb_json_t *j, const char *ph, const char *name, const char *cat, int pid,
                         int tid, int64_t ts)
{
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "ph", ph);
    fb_json_string(j, "name", name);
    if (cat)
        fb_json_string(j, "cat", cat);
    fb_json_int(j, "pid", pid);
    fb_json_int(j, "tid", tid);
    fb_json_int(j, "ts", ts);
}

static void s_trace_meta(fb_json_t *j, const char *what, int pid, int tid, const char *name)
{
    s_trace_head(j, "M", what, NULL, pid, tid, 0);
    fb_json_object_begin(j, "args");
    fb_json_string(j, "name", name);
    fb_json_object_end(j);
    fb_json_object_end(j);
}

static void s_trace_task(fb_json_t *j, const timeline_t *tl, s_pids_t *pids, size_t stage,
                         const store_task_t *t, uint64_t end_ms)
{
    const store_stage_t *s = &tl->c->stages[stage];
    for (size_t n = 0; n < t->n_nodes; n++) {
        if (tl->node && strcmp(t->nodes[n], tl->node))
            continue;
        uint64_t end = t->finished_ms ? t->finished_ms : end_ms;
        char name[256];
        snprintf(name, sizeof name, "%s %s", s->workload,
                 t->verdict != FB_VERDICT_NONE ? fb_verdict_name(t->verdict) : "running");
        s_trace_head(j, "X", name, s->workload, s_pid(pids, t->nodes[n]), (int)stage + 1,
                     s_us(tl, t->started_ms));
        fb_json_int(j, "dur", end > t->started_ms ? (int64_t)(end - t->started_ms) * 1000 : 0);
        fb_json_object_begin(j, "args");
        fb_json_string(j, "task", t->id);
        fb_json_string(j, "stage", s->name);
        fb_json_string(j, "verdict", fb_verdict_name(t->verdict));
        if (t->error)
            fb_json_string(j, "error", t->error);
        fb_json_object_end(j);
        fb_json_object_end(j);
    }
}

static void s_trace_counters(fb_json_t *j, const timeline_t *tl, s_pids_t *pids)
{
    for (size_t i = 0; i < tl->n_tel; i++) {
        const store_telemetry_t *b = &tl->tel[i];
        char name[256];
        snprintf(name, sizeof name, "%s%s%s%s%s%s", b->device, b->device[0] ? " " : "",
                 b->quantity, b->unit[0] ? " (" : "", b->unit, b->unit[0] ? ")" : "");
        s_trace_head(j, "C", name, "telemetry", s_pid(pids, b->node), 0, s_us(tl, b->time_ms));
        fb_json_object_begin(j, "args");
        fb_json_number(j, "mean", b->mean);
        fb_json_number(j, "max", b->max);
        fb_json_object_end(j);
        fb_json_object_end(j);
    }
}

static int s_print_trace(const timeline_t *tl, FILE *out)
{
    const store_campaign_t *c = tl->c;
    uint64_t end_ms = c->finished_ms ? c->finished_ms : fb_now_ms();
    s_pids_t pids = {0};
    fb_json_t *j = fb_json_new(false);
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "displayTimeUnit", "ms");
    fb_json_array_begin(j, "traceEvents");
    for (size_t i = 0; i < c->n_stages; i++) {
        const store_stage_t *s = &c->stages[i];
        if (!s->started_ms)
            continue;
        char name[256];
        snprintf(name, sizeof name, "stage %s (%s) %s", s->name, s->workload,
                 fb_verdict_name(s->verdict));
        s_trace_head(j, "X", name, "stage", 0, 1, s_us(tl, s->started_ms));
        uint64_t end = s->finished_ms ? s->finished_ms : end_ms;
        fb_json_int(j, "dur", end > s->started_ms ? (int64_t)(end - s->started_ms) * 1000 : 0);
        fb_json_object_end(j);
        for (size_t k = 0; k < s->n_tasks; k++)
            s_trace_task(j, tl, &pids, i, &s->tasks[k], end_ms);
    }
    for (size_t i = 0; i < tl->n_events; i++) {
        const tl_event_t *e = &tl->events[i];
        s_trace_head(j, "i", e->kind, "event", s_pid(&pids, e->node), 0, s_us(tl, e->time_ms));
        fb_json_string(j, "s", "t");
        fb_json_object_begin(j, "args");
        fb_json_string(j, "message", e->message ? e->message : "");
        if (e->task_id)
            fb_json_string(j, "task", e->task_id);
        fb_json_object_end(j);
        fb_json_object_end(j);
    }
    s_trace_counters(j, tl, &pids);
    /* names: the coordinator, each node, each stage's thread in every node */
    char coord_name[300];
    snprintf(coord_name, sizeof coord_name, "campaign %s", c->id);
    s_trace_meta(j, "process_name", 0, 0, coord_name);
    for (size_t p = 0; p < pids.n; p++) {
        s_trace_meta(j, "process_name", (int)p + 1, 0, pids.names[p]);
        for (size_t i = 0; i < c->n_stages; i++)
            s_trace_meta(j, "thread_name", (int)p + 1, (int)i + 1, c->stages[i].name);
    }
    s_trace_meta(j, "thread_name", 0, 1, "stages");
    fb_json_array_end(j);
    fb_json_object_begin(j, "otherData");
    fb_json_string(j, "campaign", c->id);
    fb_json_string(j, "name", c->name);
    fb_json_int(j, "started_ms", (int64_t)c->started_ms);
    fb_json_object_end(j);
    fb_json_object_end(j);
    fprintf(out, "%s\n", fb_json_text(j));
    fb_json_destroy(&j);
    for (size_t p = 0; p < pids.n; p++)
        free(pids.names[p]);
    free(pids.names);
    return ferror(out) ? -EPIPE : 0;
}

/* ---- the command --------------------------------------------------------------------------- */

int cli_timeline(cli_t *cli)
{
    const char *format = cli->format;
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "trace")) {
        fprintf(stderr, "fleetburn timeline: --format: '%s' is not text, json or trace\n", format);
        return EXIT_USAGE;
    }
    if (cli->n_positional > 1) {
        fprintf(stderr, "fleetburn timeline: expected at most one campaign id\n");
        return EXIT_USAGE;
    }
    store_t *store = cli_open_store(cli->db);
    if (!store)
        return EXIT_INFRA;
    char *id = cli->n_positional ? xstrdup(cli->positional[0]) : NULL;
    if (!id && store_latest_campaign(store, &id)) {
        fprintf(stderr, "fleetburn: %s holds no campaign yet\n", cli->db);
        store_destroy(&store);
        return EXIT_USAGE;
    }
    timeline_t tl;
    int rc = s_load(store, id, cli->node, &tl);
    if (!rc && !strcmp(format, "json"))
        rc = s_print_json(&tl, stdout);
    else if (!rc && !strcmp(format, "trace"))
        rc = s_print_trace(&tl, stdout);
    else if (!rc)
        rc = s_print_text(&tl, stdout);
    if (!rc && fflush(stdout))
        rc = -EPIPE;
    if (rc == -ENOENT)
        fprintf(stderr, "fleetburn: no campaign '%s' in %s\n", id, cli->db);
    else if (rc && rc != -EPIPE)
        fprintf(stderr, "fleetburn: cannot read the timeline of %s: %s\n", id,
                store_errmsg(store)[0] ? store_errmsg(store) : strerror(-rc));
    s_timeline_free(&tl);
    free(id);
    store_destroy(&store);
    return rc == -ENOENT ? EXIT_USAGE : rc && rc != -EPIPE ? EXIT_INFRA : 0;
}
