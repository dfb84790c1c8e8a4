/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics of `fleetburn serve --http` in the Prometheus text exposition format (0.0.4): what an
 * operator graphs and alerts on next to dcgm-exporter and node-exporter. Every family is
 * documented in docs/operations.md "Metrics and the live view", and deploy/grafana/ uses them.
 *
 *   coordinator: fleetburn_build_info, fleetburn_up, fleetburn_health_age_seconds,
 *     fleetburn_agents_connected, fleetburn_campaigns_running/_queued, fleetburn_store_up,
 *     fleetburn_store_down_seconds, fleetburn_results_unacknowledged,
 *     fleetburn_webhooks_in_flight, fleetburn_messages_dropped_total{reason}
 *   agents: fleetburn_agents{state}, fleetburn_agent_last_seen_timestamp_seconds{node}
 *   campaigns (those running and the latest): fleetburn_campaign_info{campaign,name,state,
 *     verdict}, fleetburn_campaign_start_timestamp_seconds{campaign}, fleetburn_tasks{campaign,
 *     stage,workload,verdict}
 *   nodes (in those campaigns): fleetburn_node_last_verdict{node,campaign,stage,workload,verdict}
 *     (1), fleetburn_node_tasks_failed{node}, fleetburn_node_metric{node,workload,metric,unit}
 *     (the key metrics of the node's last result of each workload: per-size, per-pair and per-device entries are left
 *     to the report, so that series stay bounded)
 *
 * Label values that came from the network are escaped (backslash, quote, newline) and made valid
 * UTF-8. */
#include "http_serve.h"
#include "report.h"
#include "strmap.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Key metrics exported per node and workload at most. */
#define S_NODE_METRICS_MAX 24
/* Campaigns whose tasks are exported: those running, and the latest that is not. */
#define S_CAMPAIGNS_MAX 16

/* ---- Exposition ---------------------------------------------------------------------------- */

static void s_label_value(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '\\' || *p == '"')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p < 0x20 || *p >= 0x7f)
            fputc('?', out); /* keeps the exposition ASCII, whatever a node sent */
        else
            fputc(*p, out);
    }
}

static void s_family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{k1="v1",k2="v2"} value: labels are NULL-terminated key, value pairs. */
static void s_sample(FILE *out, const char *name, double value, const char *const *labels)
{
    fputs(name, out);
    for (size_t i = 0; labels && labels[i]; i += 2) {
        fprintf(out, "%s%s=\"", i ? "," : "{", labels[i]);
        s_label_value(out, labels[i + 1]);
        fputc('"', out);
    }
    if (labels && labels[0])
        fputc('}', out);
    if (isnan(value))
        fputs(" NaN\n", out);
    else if (isinf(value))
        fputs(value > 0 ? " +Inf\n" : " -Inf\n", out);
    else
        fprintf(out, " %.15g\n", value);
}

static void s_gauge(FILE *out, const char *name, const char *help, double value)
{
    s_family(out, name, "gauge", help);
    s_sample(out, name, value, NULL);
}

/* ---- Coordinator ---------------------------------------------------------------------------- */

static void s_coordinator(FILE *out, const coord_health_t *h, uint64_t age_ms)
{
    s_family(out, "fleetburn_build_info", "gauge", "The fleetburn version serving these metrics.");
    s_sample(out, "fleetburn_build_info", 1, (const char *const[]){"version", FB_VERSION, NULL});
    s_gauge(out, "fleetburn_up", "1 when the coordinator's loop published its health.",
            h ? 1 : 0);
    if (!h)
        return;
    s_gauge(out, "fleetburn_health_age_seconds",
            "Age of the coordinator's last health snapshot (published every second; a growing "
            "age is a stalled loop).",
            age_ms / 1000.0);
    s_gauge(out, "fleetburn_agents_connected", "Agents registered and alive now.",
            (double)h->agents_connected);
    s_gauge(out, "fleetburn_campaigns_running", "Campaigns running now.",
            (double)h->campaigns_running);
    s_gauge(out, "fleetburn_campaigns_queued", "Campaigns waiting for nodes others hold.",
            (double)h->campaigns_queued);
    s_gauge(out, "fleetburn_store_up", "1 when the timeline store takes writes.",
            h->store_up ? 1 : 0);
    s_gauge(out, "fleetburn_store_down_seconds", "How long the store has not taken writes.",
            h->store_down_ms / 1000.0);
    s_gauge(out, "fleetburn_results_unacknowledged",
            "Results stored and waiting for the next commit to be acknowledged.",
            (double)h->results_unacknowledged);
    s_gauge(out, "fleetburn_webhooks_in_flight", "Webhook alerts being posted now.",
            (double)h->webhooks_in_flight);
    s_family(out, "fleetburn_messages_dropped_total", "counter",
             "Messages dropped: malformed or unexpected (invalid), or for tasks not given to "
             "their sender (foreign).");
    s_sample(out, "fleetburn_messages_dropped_total", (double)h->messages_dropped,
             (const char *const[]){"reason", "invalid", NULL});
    s_sample(out, "fleetburn_messages_dropped_total", (double)h->messages_foreign,
             (const char *const[]){"reason", "foreign", NULL});
}

/* ---- Agents ---------------------------------------------------------------------------------- */

static const char *const s_agent_states[] = {"alive", "unheard", "gone", "lost"};
#define S_N_STATES (sizeof s_agent_states / sizeof s_agent_states[0])

typedef struct {
    size_t by_state[S_N_STATES + 1]; /* the last: a state this build does not know */
    char *seen;                      /* the last-seen samples, written after the counts */
    size_t seen_len;
    FILE *seen_out;
} s_agents_t;

static int s_agent(const store_agent_t *a, void *arg)
{
    s_agents_t *ag = arg;
    size_t k = 0;
    while (k < S_N_STATES && strcmp(s_agent_states[k], a->state ? a->state : ""))
        k++;
    ag->by_state[k]++;
    s_sample(ag->seen_out, "fleetburn_agent_last_seen_timestamp_seconds",
             a->last_seen_ms / 1000.0, (const char *const[]){"node", a->name, NULL});
    return 0;
}

static int s_agents(FILE *out, store_t *store)
{
    s_agents_t ag = {0};
    ag.seen_out = open_memstream(&ag.seen, &ag.seen_len);
    int rc = ag.seen_out ? store_agent_foreach(store, s_agent, &ag) : -ENOMEM;
    if (ag.seen_out)
        fclose(ag.seen_out);
    if (rc) {
        free(ag.seen);
        return rc;
    }
    s_family(out, "fleetburn_agents", "gauge", "Agents in the timeline by state.");
    for (size_t k = 0; k < S_N_STATES; k++)
        s_sample(out, "fleetburn_agents", (double)ag.by_state[k],
                 (const char *const[]){"state", s_agent_states[k], NULL});
    if (ag.by_state[S_N_STATES])
        s_sample(out, "fleetburn_agents", (double)ag.by_state[S_N_STATES],
                 (const char *const[]){"state", "other", NULL});
    s_family(out, "fleetburn_agent_last_seen_timestamp_seconds", "gauge",
             "When the coordinator last heard from each agent (Unix time).");
    fwrite(ag.seen, 1, ag.seen_len, out);
    free(ag.seen);
    return 0;
}

/* ---- Campaigns and nodes ------------------------------------------------------------------- */

typedef struct {
    char *ids[S_CAMPAIGNS_MAX];
    size_t n;
    bool have_ended; /* the latest campaign that is not running is in */
} s_pick_t;

static int s_pick(const store_campaign_t *c, void *arg)
{
    s_pick_t *p = arg;
    bool running = c->state && !strcmp(c->state, "running");
    if (p->n < S_CAMPAIGNS_MAX && (running || !p->have_ended)) {
        p->ids[p->n++] = xstrdup(c->id);
        p->have_ended |= !running;
    }
    return 0;
}

/* A key metric: not one entry of a per-size, per-pair or per-device family (a name segment that
 * starts with a digit: allreduce.1048576.busbw_gbs, p2p.ce_uni.0_1, h2d.0). */
static bool s_key_metric(const char *name)
{
    for (const char *p = name; *p; p++)
        if ((p == name || p[-1] == '.') && isdigit((unsigned char)*p))
            return false;
    return *name != '\0';
}

typedef struct {
    const char *node, *campaign;
    const store_stage_t *stage;
    const store_task_t *task;
} s_last_t;

static void s_campaign_series(FILE *tasks, FILE *info, const store_campaign_t *c)
{
    const char *verdict = report_campaign_verdict(c);
    s_sample(info, "fleetburn_campaign_info", 1,
             (const char *const[]){"campaign", c->id, "name", c->name, "state", c->state,
                                   "verdict", verdict, NULL});
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *st = &c->stages[s];
        size_t by[FB_VERDICT_MAX + 1] = {0};
        for (size_t t = 0; t < st->n_tasks; t++)
            by[st->tasks[t].verdict <= FB_VERDICT_MAX ? st->tasks[t].verdict : FB_VERDICT_ERROR]++;
        for (int v = 0; v <= FB_VERDICT_MAX; v++)
            s_sample(tasks, "fleetburn_tasks", (double)by[v],
                     (const char *const[]){"campaign", c->id, "stage", st->name, "workload",
                                           st->workload,  "verdict",
                                           v == FB_VERDICT_NONE ? "pending"
                                                                : fb_verdict_name((fb_verdict_t)v),
                                           NULL});
    }
}

/* Keeps in map, under key, the task (of node) that finished last. */
static void s_keep_last(fb_strmap_t *map, const char *key, const s_last_t *cand)
{
    s_last_t *l = fb_strmap_get(map, key);
    if (l && l->task->finished_ms > cand->task->finished_ms)
        return;
    if (!l) {
        l = xmalloc(sizeof *l);
        fb_strmap_put(map, key, l);
    }
    *l = *cand;
}

/* The last finished task of every node (last), and of every node and workload (by_workload,
 * key "node\tworkload"), across the campaigns, by finish time. */
static void s_last_tasks(store_campaign_t **cs, size_t n, fb_strmap_t *last,
                         fb_strmap_t *by_workload)
{
    for (size_t k = 0; k < n; k++)
        for (size_t s = 0; s < cs[k]->n_stages; s++)
            for (size_t t = 0; t < cs[k]->stages[s].n_tasks; t++) {
                const store_task_t *task = &cs[k]->stages[s].tasks[t];
                if (task->verdict == FB_VERDICT_NONE)
                    continue;
                for (size_t i = 0; i < task->n_nodes; i++) {
                    s_last_t cand = {task->nodes[i], cs[k]->id, &cs[k]->stages[s], task};
                    s_keep_last(last, task->nodes[i], &cand);
                    char *key = xasprintf("%s\t%s", task->nodes[i],
                                          cs[k]->stages[s].workload ? cs[k]->stages[s].workload
                                                                    : "");
                    s_keep_last(by_workload, key, &cand);
                    free(key);
                }
            }
}

static void s_free_map(fb_strmap_t **map)
{
    size_t pos = 0;
    const char *key;
    void *val;
    while (fb_strmap_next(*map, &pos, &key, &val))
        free(val);
    fb_strmap_destroy(map);
}

/* fleetburn_node_tasks_failed: per node, the tasks that did not pass in the campaigns exported
 * (every node of last gets a sample, 0 included). */
static void s_failed_counts(FILE *out, store_campaign_t **cs, size_t n, fb_strmap_t *last)
{
    fb_strmap_t *counts = fb_strmap_new();
    for (size_t k = 0; k < n; k++)
        for (size_t s = 0; s < cs[k]->n_stages; s++)
            for (size_t t = 0; t < cs[k]->stages[s].n_tasks; t++) {
                const store_task_t *task = &cs[k]->stages[s].tasks[t];
                if (task->verdict == FB_VERDICT_NONE || fb_verdict_ok(task->verdict))
                    continue;
                for (size_t i = 0; i < task->n_nodes; i++) {
                    size_t *c = fb_strmap_get(counts, task->nodes[i]);
                    if (!c)
                        fb_strmap_put(counts, task->nodes[i], c = xcalloc(1, sizeof *c));
                    (*c)++;
                }
            }
    size_t pos = 0;
    const char *node;
    void *val;
    while (fb_strmap_next(last, &pos, &node, &val)) {
        const size_t *c = fb_strmap_get(counts, node);
        s_sample(out, "fleetburn_node_tasks_failed", c ? (double)*c : 0,
                 (const char *const[]){"node", node, NULL});
    }
    s_free_map(&counts);
}

static void s_node_verdict(FILE *verdicts, FILE *failed, const s_last_t *l)
{
    const char *v = fb_verdict_name(l->task->verdict);
    s_sample(verdicts, "fleetburn_node_last_verdict", 1,
             (const char *const[]){"node", l->node, "campaign", l->campaign, "stage",
                                   l->stage->name, "workload", l->stage->workload, "verdict", v,
                                   NULL});
    (void)failed;
}

static void s_node_metrics(FILE *metrics, const s_last_t *l)
{
    for (size_t r = 0; r < l->task->n_results; r++) {
        const fb_result_t *res = l->task->results[r].result;
        if (!res->node || strcmp(res->node, l->node))
            continue;
        size_t shown = 0;
        for (size_t m = 0; m < res->n_metrics && shown < S_NODE_METRICS_MAX; m++) {
            const char *name = res->metrics[m].name ? res->metrics[m].name : "";
            if (!s_key_metric(name))
                continue;
            shown++;
            s_sample(metrics, "fleetburn_node_metric", res->metrics[m].value,
                     (const char *const[]){"node", l->node, "workload", l->stage->workload,
                                           "metric", name, "unit",
                                           res->metrics[m].unit ? res->metrics[m].unit : "",
                                           NULL});
        }
    }
}

typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} s_part_t;

static void s_part_flush(FILE *out, s_part_t *p, const char *name, const char *help)
{
    fclose(p->f);
    s_family(out, name, "gauge", help);
    fwrite(p->buf, 1, p->len, out);
    free(p->buf);
}

static int s_campaigns(FILE *out, store_t *store)
{
    s_pick_t pick = {0};
    int rc = store_campaign_foreach(store, s_pick, &pick);
    store_campaign_t *cs[S_CAMPAIGNS_MAX];
    size_t n = 0;
    for (size_t k = 0; k < pick.n && !rc; k++) {
        rc = store_campaign_load(store, pick.ids[k], &cs[n]);
        n += rc == 0;
        rc = rc == -ENOENT ? 0 : rc; /* gone between the two reads */
    }
    for (size_t k = 0; k < pick.n; k++)
        free(pick.ids[k]);
    if (rc) {
        while (n)
            store_campaign_destroy(&cs[--n]);
        return rc;
    }
    enum { INFO, START, TASKS, VERDICT, FAILED, METRIC, N_PARTS };
    s_part_t p[N_PARTS];
    for (int i = 0; i < N_PARTS; i++)
        p[i].f = open_memstream(&p[i].buf, &p[i].len);
    fb_strmap_t *last = fb_strmap_new(), *by_workload = fb_strmap_new();
    for (size_t k = 0; k < n; k++) {
        s_campaign_series(p[TASKS].f, p[INFO].f, cs[k]);
        s_sample(p[START].f, "fleetburn_campaign_start_timestamp_seconds",
                 cs[k]->started_ms / 1000.0, (const char *const[]){"campaign", cs[k]->id, NULL});
    }
    s_last_tasks(cs, n, last, by_workload);
    size_t pos = 0;
    const char *key;
    void *val;
    while (fb_strmap_next(last, &pos, &key, &val))
        s_node_verdict(p[VERDICT].f, p[FAILED].f, val);
    for (pos = 0; fb_strmap_next(by_workload, &pos, &key, &val);)
        s_node_metrics(p[METRIC].f, val);
    s_failed_counts(p[FAILED].f, cs, n, last);
    s_free_map(&last);
    s_free_map(&by_workload);
    s_part_flush(out, &p[INFO], "fleetburn_campaign_info",
                 "The campaigns running and the latest one (1), with their state and verdict.");
    s_part_flush(out, &p[START], "fleetburn_campaign_start_timestamp_seconds",
                 "When each campaign started (Unix time).");
    s_part_flush(out, &p[TASKS], "fleetburn_tasks", "Tasks of each stage by verdict.");
    s_part_flush(out, &p[VERDICT], "fleetburn_node_last_verdict",
                 "Each node's last finished task (1), with its verdict.");
    s_part_flush(out, &p[FAILED], "fleetburn_node_tasks_failed",
                 "Tasks of each node that did not pass, in the campaigns running and the latest.");
    s_part_flush(out, &p[METRIC], "fleetburn_node_metric",
                 "Key metrics of each node's last finished task, by workload.");
    while (n)
        store_campaign_destroy(&cs[--n]);
    return 0;
}

char *http_metrics_render(store_t *store, const coord_health_t *health, uint64_t health_age_ms,
                          size_t *len_out, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s_coordinator(out, health, health_age_ms);
    int rc = s_agents(out, store);
    if (!rc)
        rc = s_campaigns(out, store);
    if (!rc)
        rc = http_metrics_telemetry(out, store);
    fclose(out);
    if (rc) {
        snprintf(err, errlen, "the store cannot be read: %s", store_errmsg(store));
        free(buf);
        return NULL;
    }
    *len_out = len;
    return buf;
}
