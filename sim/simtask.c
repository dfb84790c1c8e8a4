/* SPDX-License-Identifier: Apache-2.0 */
/* Simulated tasks. The result is decided when the task starts (the fault model is a pure function
 * of the test and its simulated start) and delivered after a short real delay from a timer, so
 * that on_done never runs inside start, results of a thousand-node stage spread over the loop
 * instead of arriving in one burst, and a cancel can still overtake the result like it would a
 * worker. The delay is drawn from the model's seed, so a run with the same seed replays the same
 * order. A result the model says is lost is never delivered (the coordinator's deadline decides
 * the task), unless the task is cancelled.
 *
 * Simulated time: the executor's clock follows the campaign's rounds, not the real clock, so that
 * a bursty fault is active in the same rounds whatever the real delays. A round is the set of
 * tasks whose ids differ only in their group suffix, as the runner names them
 * (`<campaign>/<stage>/r<k>.g<j>`, `.../b<k>.g<j>`; a node stage's tasks
 * `<campaign>/<stage>/<node>` are one round); rounds run back to back in the order their first task
 * starts (the runner starts a round only when the one before it has ended), each as long as its
 * longest task (sim.duration_s), the first at 0. Every task of a round starts at the round's start.
 */
#include "simtask.h"

#include "common/log.h"
#include "common/strmap.h"
#include "common/units.h"
#include "common/util.h"
#include "sim/faultmodel.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Nominal values of a healthy simulated node; slow parts scale them. */
#define S_NET_GBPS 100.0  /* netbw/rdmabw, per direction */
#define S_BUSBW_GBS 90.0  /* allreduce bus bandwidth */
#define S_MEM_MBS 12000.0 /* memtest */
#define S_TFLOPS 700.0    /* gpuburn */
#define S_DEFAULT_DURATION_S 60.0

/* One round of the simulated clock. */
typedef struct {
    double start_s, longest_s;
} s_round_t;

struct simtask_exec {
    agent_executor_t exec;
    const fb_faultmodel_t *model;
    uint32_t delay_min_ms, delay_max_ms;
    simtask_stage_stats_t *stages; /* .stage: owned names */
    size_t n_stages, cap_stages;
    fb_strmap_t *stage_index; /* name -> index + 1 */
    size_t running;
    s_round_t *rounds; /* the simulated clock, in the order rounds started */
    size_t n_rounds, cap_rounds;
    fb_strmap_t *round_index; /* round key -> index + 1 */
};

typedef struct {
    uv_timer_t timer;
    simtask_exec_t *owner;
    size_t stage;
    char *id;
    fb_result_t *result;
    task_callbacks_t cb;
    bool lost; /* the model lost its result: delivered only when cancelled */
} simtask_t;

/* ---- what the test measured ------------------------------------------------------------------ */

static const char *s_param(const char *const *params, size_t n, const char *key)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(params[i], key, klen) && params[i][klen] == '=')
            return params[i] + klen + 1;
    return NULL;
}

/* The rail a test runs on: "rail=N", or "device=mlx5_N" (an HCA of the simulated inventory);
 * -1 (every rail) otherwise. */
static int s_rail(const char *const *params, size_t n)
{
    uint64_t v;
    const char *rail = s_param(params, n, "rail");
    if (rail && fb_parse_uint(rail, 63, &v) == 0)
        return (int)v;
    const char *dev = s_param(params, n, "device");
    const char *us = dev ? strrchr(dev, '_') : NULL;
    if (us && !strncmp(dev, "mlx5_", 5) && fb_parse_uint(us + 1, 63, &v) == 0)
        return (int)v;
    return -1;
}

static double s_sim_duration_s(const char *workload, const char *const *params, size_t n)
{
    uint64_t ms;
    const char *d = s_param(params, n, "duration");
    if (d && fb_parse_duration_ms(d, &ms) == 0)
        return (double)ms / 1000.0;
    return !strcmp(workload, "memtest") ? 600.0 : S_DEFAULT_DURATION_S;
}

/* The measurement noise of one metric, from the fault file's noise and its noisy nodes. */
static double s_noise(const fb_faultmodel_t *m, const char *key, const char *what, const char *a,
                      const char *b)
{
    const char *nodes[2] = {a, b};
    return fb_faultmodel_noise(m, key, what, nodes, b ? 2 : 1);
}

/* A threshold parameter of the stage that the measured value falls below: the test fails the way
 * the real workload would. */
static void s_check_min(fb_result_t *r, const char *const *params, size_t n, const char *key,
                        const char *metric)
{
    const fb_metric_t *mt = fb_result_metric(r, metric);
    const char *text = s_param(params, n, key);
    double min;
    if (!mt || !text || fb_parse_double(text, &min) || mt->value >= min ||
        r->verdict != FB_VERDICT_PASS)
        return;
    r->verdict = FB_VERDICT_FAIL;
    fb_result_set_error(r, "%s %.2f %s is below %s %g", metric, mt->value, mt->unit, key, min);
}

static void s_node_metrics(const fb_faultmodel_t *m, fb_result_t *r, const char *key,
                           const char *workload, const char *node)
{
    double f = fb_faultmodel_node_factor(m, node) * s_noise(m, key, "throughput", node, NULL);
    fb_result_add_metric(r, "sim.throughput", f, "");
    if (!strcmp(workload, "memtest"))
        fb_result_add_metric(r, "bandwidth_mbs", S_MEM_MBS * f, "MB/s");
    else if (!strcmp(workload, "gpuburn"))
        fb_result_add_metric(r, "tflops_median", S_TFLOPS * f, "TFLOPS");
}

/* members sorted; me is this member's index among them. */
static void s_group_metrics(const fb_faultmodel_t *m, fb_result_t *r, const char *key,
                            const char *task_id, const char *workload, const char *const *sorted,
                            size_t n, size_t me, int rail, double ring_factor)
{
    if (!strcmp(workload, "allreduce")) {
        /* Every rank measures the same collective: one value for the whole group. */
        double bw = S_BUSBW_GBS * ring_factor * fb_faultmodel_noise(m, task_id, "busbw", sorted, n);
        fb_result_add_metric(r, "allreduce.busbw_gbs", bw, "GB/s");
        fb_result_add_metric(r, "allreduce.ranks", (double)n, "");
        return;
    }
    const char *next = sorted[(me + 1) % n], *prev = sorted[(me + n - 1) % n];
    double tx = S_NET_GBPS * fb_faultmodel_flow_factor(m, sorted[me], next, rail) *
                s_noise(m, key, "tx", sorted[me], next);
    double rx = S_NET_GBPS * fb_faultmodel_flow_factor(m, prev, sorted[me], rail) *
                s_noise(m, key, "rx", prev, sorted[me]);
    /* named as the workload names them (rdmabw.tx_gbps for rdmabw), so that the pair judgment
     * and the diagnosis read them as they would a real one's */
    const char *family = !strcmp(workload, "rdmabw") ? "rdmabw" : "netbw";
    char name[32];
    snprintf(name, sizeof name, "%s.tx_gbps", family);
    fb_result_add_metric(r, name, tx, "Gb/s");
    snprintf(name, sizeof name, "%s.rx_gbps", family);
    fb_result_add_metric(r, name, rx, "Gb/s");
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The whole result of one member: the group's verdict as this member reports it (a disagreeing
 * member reports the opposite) and this member's measurements, for a test starting at start_s. */
static fb_result_t *s_decide(const simtask_exec_t *self, const task_env_t *env, const char *task_id,
                             const char *workload, const char *const *params, size_t n_params,
                             double start_s)
{
    const fb_faultmodel_t *m = self->model;
    bool group = env->group && env->size >= 2;
    size_t n = group ? env->size : 1;
    const char **sorted = xmalloc(n * sizeof *sorted);
    if (group)
        memcpy(sorted, env->peers, n * sizeof *sorted);
    else
        sorted[0] = env->node;
    qsort(sorted, n, sizeof *sorted, s_cmp_str);
    size_t me = 0;
    while (me + 1 < n && strcmp(sorted[me], env->node))
        me++;
    int rail = s_rail(params, n_params);
    fb_sim_test_t test = {task_id, sorted, n, group ? rail : -1};
    fb_sim_outcome_t out;
    fb_faultmodel_judge_at(m, &test, start_s, &out);
    bool failed = fb_sim_member_failed(&out, env->node);

    char *key = xasprintf("%s@%s", task_id, env->node);
    fb_result_t *r = fb_result_new();
    r->verdict = failed ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
    r->started_ms = fb_now_ms();
    fb_result_add_metric(r, "sim.duration_s", s_sim_duration_s(workload, params, n_params), "s");
    fb_result_add_metric(r, "sim.start_s", start_s, "s");
    if (group) {
        s_group_metrics(m, r, key, task_id, workload, sorted, n, me, rail, out.factor);
        /* A failed group test does not know which member failed it: no finding. */
        if (failed)
            fb_result_set_error(r, "simulated %s failed in a group of %zu", workload, n);
    } else {
        s_node_metrics(m, r, key, workload, env->node);
        if (failed) {
            fb_result_set_error(r, "simulated %s failed", workload);
            fb_result_add_findingf(r, env->node, "node", "simulated %s failure", workload);
        }
    }
    s_check_min(r, params, n_params, "min_gbps", "netbw.tx_gbps");
    s_check_min(r, params, n_params, "min_gbps", "netbw.rx_gbps");
    s_check_min(r, params, n_params, "min_gbps", "rdmabw.tx_gbps");
    s_check_min(r, params, n_params, "min_gbps", "rdmabw.rx_gbps");
    s_check_min(r, params, n_params, "min_busbw_gbs", "allreduce.busbw_gbs");
    s_check_min(r, params, n_params, "min_tflops", "tflops_median");
    free(key);
    free(sorted);
    return r;
}

/* ---- stages ---------------------------------------------------------------------------------- */

static size_t s_stage(simtask_exec_t *self, const char *name)
{
    if (!name || !*name)
        name = "(no stage)";
    size_t i = (size_t)(uintptr_t)fb_strmap_get(self->stage_index, name);
    if (i)
        return i - 1;
    if (self->n_stages == self->cap_stages) {
        self->cap_stages = self->cap_stages ? self->cap_stages * 2 : 8;
        self->stages = xrealloc(self->stages, self->cap_stages * sizeof *self->stages);
    }
    simtask_stage_stats_t *st = &self->stages[self->n_stages];
    memset(st, 0, sizeof *st);
    st->stage = xstrdup(name);
    fb_strmap_put(self->stage_index, st->stage, (void *)(uintptr_t)(self->n_stages + 1));
    return self->n_stages++;
}

/* ---- the simulated clock --------------------------------------------------------------------- */

/* The round a task belongs to: its id without a trailing ".g<digits>" (a group task), or without
 * its last path component (a node task, named after its node). Heap string. */
static char *s_round_key(const char *task_id, bool group)
{
    if (!group) {
        const char *slash = strrchr(task_id, '/');
        return slash ? xstrndup(task_id, (size_t)(slash - task_id)) : xstrdup(task_id);
    }
    const char *g = strrchr(task_id, '.');
    if (!g || g[1] != 'g' || !g[2])
        return xstrdup(task_id);
    for (const char *c = g + 2; *c; c++)
        if (!isdigit((unsigned char)*c))
            return xstrdup(task_id);
    return xstrndup(task_id, (size_t)(g - task_id));
}

/* The simulated start of a task of duration_s in the round of task_id; a new round starts when
 * the last one ends. */
static double s_clock(simtask_exec_t *self, const char *task_id, bool group, double duration_s)
{
    char *key = s_round_key(task_id, group);
    size_t i = (size_t)(uintptr_t)fb_strmap_get(self->round_index, key);
    if (!i) {
        if (self->n_rounds == self->cap_rounds) {
            self->cap_rounds = self->cap_rounds ? self->cap_rounds * 2 : 16;
            self->rounds = xrealloc(self->rounds, self->cap_rounds * sizeof *self->rounds);
        }
        const s_round_t *last = self->n_rounds ? &self->rounds[self->n_rounds - 1] : NULL;
        self->rounds[self->n_rounds] = (s_round_t){last ? last->start_s + last->longest_s : 0, 0};
        fb_strmap_put(self->round_index, key, (void *)(uintptr_t)(++self->n_rounds));
        i = self->n_rounds;
    }
    free(key);
    s_round_t *r = &self->rounds[i - 1];
    if (duration_s > r->longest_s)
        r->longest_s = duration_s;
    return r->start_s;
}

/* ---- the executor ---------------------------------------------------------------------------- */

static void s_on_closed(uv_handle_t *h)
{
    simtask_t *t = h->data;
    fb_result_destroy(&t->result);
    free(t->id);
    free(t);
}

static void s_end(simtask_t *t)
{
    t->owner->running--;
    uv_close((uv_handle_t *)&t->timer, s_on_closed);
}

static void s_on_timer(uv_timer_t *h)
{
    simtask_t *t = h->data;
    simtask_stage_stats_t *st = &t->owner->stages[t->stage];
    fb_result_t *r = t->result;
    t->result = NULL;
    r->finished_ms = fb_now_ms();
    st->done++;
    st->failed += r->verdict != FB_VERDICT_PASS;
    st->last_done_ms = fb_mono_ms();
    t->cb.on_done(t->id, &r, t->cb.arg);
    fb_result_destroy(&r);
    s_end(t);
}

/* What the draws of a task are keyed on: its id without the campaign id in front
 * ("<campaign>/<stage>/<task>" -> "<stage>/<task>"). The coordinator makes campaign ids from the
 * clock, so draws keyed on them made the same seed a different world in every run. */
static const char *s_draw_id(const char *task_id)
{
    const char *slash = strchr(task_id, '/');
    return slash && slash[1] ? slash + 1 : task_id;
}

static void *s_start(void *arg, uv_loop_t *loop, const task_env_t *env, const char *task_id,
                     const char *workload, const char *const *params, size_t n_params,
                     uint64_t timeout_ms, const task_callbacks_t *cb, fb_result_t **result_out)
{
    simtask_exec_t *self = arg;
    *result_out = NULL;
    simtask_t *t = xcalloc(1, sizeof *t);
    t->owner = self;
    t->id = xstrdup(task_id);
    t->cb = *cb;
    task_id = s_draw_id(task_id);
    bool group = env->group && env->size >= 2;
    double start_s = s_clock(self, task_id, group, s_sim_duration_s(workload, params, n_params));
    t->result = s_decide(self, env, task_id, workload, params, n_params, start_s);
    t->stage = s_stage(self, env->stage);
    simtask_stage_stats_t *st = &self->stages[t->stage];
    uint64_t now = fb_mono_ms();
    if (!st->started)
        st->first_start_ms = now;
    st->started++;
    st->last_start_ms = now;
    double sim_s = fb_result_metric(t->result, "sim.duration_s")->value;
    if (sim_s > st->sim_duration_s)
        st->sim_duration_s = sim_s;
    char *key = xasprintf("%s@%s", task_id, env->node);
    uint64_t span = self->delay_max_ms - self->delay_min_ms;
    uint64_t delay =
        self->delay_min_ms +
        (uint64_t)(fb_faultmodel_uniform(self->model, key, "delay") * (double)(span + 1));
    free(key);
    if (delay > timeout_ms)
        delay = timeout_ms;
    uv_timer_init(loop, &t->timer);
    t->timer.data = t;
    t->lost = fb_faultmodel_lost(self->model, task_id, env->node);
    if (!t->lost)
        uv_timer_start(&t->timer, s_on_timer, delay, 0);
    self->running++;
    return t;
}

static void s_cancel(void *task, const char *reason)
{
    simtask_t *t = task;
    fb_result_t *r = fb_result_new();
    r->verdict = FB_VERDICT_ERROR;
    r->started_ms = t->result->started_ms;
    fb_result_set_error(r, "cancelled: %s", reason);
    fb_result_destroy(&t->result);
    t->result = r;
    uv_timer_start(&t->timer, s_on_timer, 0, 0);
}

static void s_abort(void *task)
{
    simtask_t *t = task;
    uv_timer_stop(&t->timer);
    s_end(t);
}

static void s_write_line(void *task, const char *line)
{
    /* Simulated members never post to an exchange, so no reply is ever due. */
    (void)task;
    (void)line;
}

simtask_exec_t *simtask_exec_new(const simtask_options_t *opts)
{
    simtask_exec_t *self = xcalloc(1, sizeof *self);
    self->exec = (agent_executor_t){s_start, s_cancel, s_abort, s_write_line, self};
    self->model = opts->model;
    self->delay_min_ms = opts->delay_min_ms;
    self->delay_max_ms =
        opts->delay_max_ms < opts->delay_min_ms ? opts->delay_min_ms : opts->delay_max_ms;
    self->stage_index = fb_strmap_new();
    self->round_index = fb_strmap_new();
    return self;
}

void simtask_exec_destroy(simtask_exec_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    simtask_exec_t *self = *self_p;
    *self_p = NULL;
    if (self->running)
        log_warn("%zu simulated task(s) still running at shutdown", self->running);
    for (size_t i = 0; i < self->n_stages; i++)
        free((char *)self->stages[i].stage);
    free(self->stages);
    fb_strmap_destroy(&self->stage_index);
    fb_strmap_destroy(&self->round_index);
    free(self->rounds);
    free(self);
}

const agent_executor_t *simtask_exec_executor(simtask_exec_t *self)
{
    return &self->exec;
}

size_t simtask_exec_stages(const simtask_exec_t *self, const simtask_stage_stats_t **stats)
{
    *stats = self->stages;
    return self->n_stages;
}

size_t simtask_exec_running(const simtask_exec_t *self)
{
    return self->running;
}
