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
 *   nodes (from any campaign, store_node_results): fleetburn_node_last_verdict{node,campaign,
 *     stage,workload,verdict} (1) and fleetburn_node_last_failed{node} (0/1) of the node's last
 *     result, fleetburn_node_metric{node,workload,metric,unit} (the key metrics of its last
 *     result of each workload: per-size, per-pair and per-device entries are left
 *     to the report, so that series stay bounded)
 *
 * Label values that came from the network are escaped (backslash, quote, newline) and made valid
 * UTF-8. */
#include "http_serve.h"
#include "report.h"
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
    s_gauge(out, "fleetburn_up", "1 when the coordinator's loop published its health.", h ? 1 : 0);
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
    s_sample(ag->seen_out, "fleetburn_agent_last_seen_timestamp_seconds", a->last_seen_ms / 1000.0,
             (const char *const[]){"node", a->name, NULL});
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

static void s_campaign_series(FILE *tasks, FILE *info, const store_campaign_t *c)
{
    const char *verdict = report_campaign_verdict(c);
    s_sample(info, "fleetburn_campaign_info", 1,
             (const char *const[]){"campaign", c->id, "name", c->name, "state", c->state, "verdict",
                                   verdict, NULL});
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *st = &c->stages[s];
        size_t by[FB_VERDICT_MAX + 1] = {0};
        for (size_t t = 0; t < st->n_tasks; t++)
            by[st->tasks[t].verdict <= FB_VERDICT_MAX ? st->tasks[t].verdict : FB_VERDICT_ERROR]++;
        for (int v = 0; v <= FB_VERDICT_MAX; v++)
            s_sample(tasks, "fleetburn_tasks", (double)by[v],
                     (const char *const[]){
                         "campaign", c->id, "stage", st->name, "workload", st->workload, "verdict",
                         v == FB_VERDICT_NONE ? "pending" : fb_verdict_name((fb_verdict_t)v),
                         NULL});
    }
}

/* Results a node's view looks back over for the last result of each workload. */
#define S_NODE_WINDOW 64

static void s_node_result(FILE *verdicts, FILE *failed, FILE *metrics, const store_node_result_t *r)
{
    if (r->last) {
        const char *v = fb_verdict_name(r->verdict);
        s_sample(verdicts, "fleetburn_node_last_verdict", 1,
                 (const char *const[]){"node", r->node, "campaign", r->campaign_id, "stage",
                                       r->stage, "workload", r->workload, "verdict", v, NULL});
        s_sample(failed, "fleetburn_node_last_failed", fb_verdict_ok(r->verdict) ? 0 : 1,
                 (const char *const[]){"node", r->node, NULL});
    }
    size_t shown = 0;
    for (size_t m = 0; m < r->metrics->n_metrics && shown < S_NODE_METRICS_MAX; m++) {
        const fb_metric_t *mt = &r->metrics->metrics[m];
        if (!mt->name || !s_key_metric(mt->name))
            continue;
        shown++;
        s_sample(metrics, "fleetburn_node_metric", mt->value,
                 (const char *const[]){"node", r->node, "workload", r->workload, "metric", mt->name,
                                       "unit", mt->unit ? mt->unit : "", NULL});
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
    for (size_t k = 0; k < n; k++) {
        s_campaign_series(p[TASKS].f, p[INFO].f, cs[k]);
        s_sample(p[START].f, "fleetburn_campaign_start_timestamp_seconds",
                 cs[k]->started_ms / 1000.0, (const char *const[]){"campaign", cs[k]->id, NULL});
    }
    store_node_result_t *results = NULL;
    size_t n_results = 0;
    rc = store_node_results(store, S_NODE_WINDOW, &results, &n_results);
    for (size_t i = 0; i < n_results; i++)
        s_node_result(p[VERDICT].f, p[FAILED].f, p[METRIC].f, &results[i]);
    store_node_results_free(results, n_results);
    s_part_flush(out, &p[INFO], "fleetburn_campaign_info",
                 "The campaigns running and the latest one (1), with their state and verdict.");
    s_part_flush(out, &p[START], "fleetburn_campaign_start_timestamp_seconds",
                 "When each campaign started (Unix time).");
    s_part_flush(out, &p[TASKS], "fleetburn_tasks", "Tasks of each stage by verdict.");
    s_part_flush(out, &p[VERDICT], "fleetburn_node_last_verdict",
                 "Each node's last result (1), with its verdict, from any campaign.");
    s_part_flush(out, &p[FAILED], "fleetburn_node_last_failed",
                 "1 when the node's last result did not pass.");
    s_part_flush(out, &p[METRIC], "fleetburn_node_metric",
                 "Key metrics of each node's last result of each workload.");
    while (n)
        store_campaign_destroy(&cs[--n]);
    return rc;
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
