/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's tasks: a RunTask is checked (workload, parameters, test-only injection), started
 * through the executor (fleetburn-worker processes by default) and tracked until its result is
 * spooled and sent; its events, telemetry and exchange lines go to the coordinator, exchange
 * replies back to the worker; CancelTask ends it with the reason. */
#include "agent_internal.h"
#include "inventory.h"
#include "spool.h"
#include "task.h"
#include "common/exline.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "common/keys.h"
#include "common/ratelimit.h"
#include "scheduler/workload.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

/* --- tasks ---------------------------------------------------------------------------------- */

/* A TaskEvent of the task; samples: a TELEMETRY event's metrics (NULL, 0 for the others). */
static void s_send_task_event(agent_t *self, const char *task_id, Fleetburn__TaskEvent__Kind kind,
                              double progress, const char *text, Fleetburn__Metric **samples,
                              size_t n_samples)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__TaskEvent ev = FLEETBURN__TASK_EVENT__INIT;
    ev.task_id = (char *)task_id;
    ev.kind = kind;
    ev.time_ms = fb_now_ms();
    ev.progress = progress;
    ev.message = (char *)(text ? text : "");
    ev.samples = samples;
    ev.n_samples = n_samples;
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_EVENT;
    env.task_event = &ev;
    agent_send(self, &env);
}

/* "name=value:unit ..." from a worker's telemetry line into a TELEMETRY event. */
static void s_send_telemetry(agent_t *self, const char *task_id, const char *text)
{
    char *copy = xstrdup(text);
    size_t cap = 8, n = 0;
    Fleetburn__Metric *samples = xcalloc(cap, sizeof *samples);
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *unit = strchr(eq + 1, ':');
        if (unit)
            *unit++ = '\0';
        char *end = NULL;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || !fb_wire_valid_name(tok))
            continue;
        if (n == cap) {
            cap *= 2;
            samples = xrealloc(samples, cap * sizeof *samples);
        }
        fleetburn__metric__init(&samples[n]);
        samples[n].name = tok;
        samples[n].value = v;
        samples[n].unit = unit ? unit : "";
        n++;
    }
    Fleetburn__Metric **ptrs = xcalloc(n, sizeof *ptrs);
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &samples[i];
    if (n)
        s_send_task_event(self, task_id, FLEETBURN__TASK_EVENT__KIND__KIND_TELEMETRY, 0, NULL, ptrs,
                          n);
    free(ptrs);
    free(samples);
    free(copy);
}

static running_t *s_find_running(agent_t *self, const char *id)
{
    for (running_t *r = self->running; r; r = r->next)
        if (!strcmp(r->id, id))
            return r;
    return NULL;
}

/* A worker's exchange post goes to the coordinator as an Exchange with the member's rank. */
static void s_send_exchange(agent_t *self, running_t *r, const char *line)
{
    char *key = NULL;
    uint64_t timeout_ms = 0;
    uint8_t *value = NULL;
    size_t len = 0;
    if (fb_exline_post_parse(line, &key, &timeout_ms, &value, &len)) {
        log_warn("task %s: malformed exchange line from the worker", r->id);
        char *reply = fb_exline_reply_error_format("invalid", "malformed exchange line");
        self->exec->write_line(r->task, reply);
        free(reply);
        return;
    }
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Exchange ex = FLEETBURN__EXCHANGE__INIT;
    ex.task_id = r->id;
    ex.key = key;
    ex.rank = r->rank;
    ex.value.data = value;
    ex.value.len = len;
    ex.timeout_ms = timeout_ms;
    env.body_case = FLEETBURN__ENVELOPE__BODY_EXCHANGE;
    env.exchange = &ex;
    if (agent_send(self, &env)) {
        /* Not connected: the worker's own timeout ends it, but say why at once. */
        char *reply =
            fb_exline_reply_error_format(key, "the agent is not connected to the coordinator");
        self->exec->write_line(r->task, reply);
        free(reply);
    }
    free(key);
    free(value);
}

/* The coordinator's answer to an exchange goes to the worker's stdin. */
void agent_on_exchange(agent_t *self, const Fleetburn__Exchange *m)
{
    running_t *r = s_find_running(self, m->task_id);
    if (!r) {
        log_debug("exchange %s for task %s that is not running here", m->key, m->task_id);
        return;
    }
    char *line;
    if (m->error && *m->error) {
        line = fb_exline_reply_error_format(m->key, m->error);
    } else {
        fb_exline_blob_t *values = xcalloc(m->n_values, sizeof *values);
        for (size_t i = 0; i < m->n_values; i++) {
            values[i].data = m->values[i].data;
            values[i].len = m->values[i].len;
        }
        line = fb_exline_reply_ok_format(m->key, values, m->n_values);
        free(values);
    }
    self->exec->write_line(r->task, line);
    free(line);
}

static void s_on_task_line(const char *task_id, const char *kind, double progress, const char *text,
                           void *arg)
{
    agent_t *self = arg;
    if (!strcmp(kind, "exchange")) {
        running_t *r = s_find_running(self, task_id);
        if (r)
            s_send_exchange(self, r, text);
        return;
    }
    if (!strcmp(kind, "telemetry")) {
        s_send_telemetry(self, task_id, text);
        return;
    }
    bool is_progress = !strcmp(kind, "progress");
    s_send_task_event(self, task_id,
                      is_progress ? FLEETBURN__TASK_EVENT__KIND__KIND_PROGRESS
                                  : FLEETBURN__TASK_EVENT__KIND__KIND_LOG,
                      progress, text, NULL, 0);
}

static void s_forget_running(agent_t *self, const char *id)
{
    for (running_t **pp = &self->running; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, id)) {
            running_t *r = *pp;
            *pp = r->next;
            free(r->id);
            free(r->result_id);
            free(r);
            return;
        }
    }
}

/* Spool first, then send: a result exists on disk before anyone can lose it. */
static void s_finish_result(agent_t *self, fb_result_t *result)
{
    log_info("task %s: %s%s%s", result->task_id, fb_verdict_name(result->verdict),
             result->error ? ": " : "", result->error ? result->error : "");
    size_t len = 0;
    uint8_t *data = fb_wire_result_pack(result, &len);
    int rc = spool_put(self->spool, result->result_id, data, len);
    free(data);
    if (rc)
        log_error("cannot spool result %s: %s; sending it unspooled", result->result_id,
                  strerror(-rc));
    Fleetburn__TaskResult *view = fb_wire_result_view(result);
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_RESULT;
    env.task_result = view;
    agent_send(self, &env);
    fb_wire_result_view_free(&view);
}

static void s_on_task_done(const char *task_id, fb_result_t **result, void *arg)
{
    agent_t *self = arg;
    running_t *r = s_find_running(self, task_id);
    /* The result id is the agent's to give: a group member's is <task>@<node>, whatever the
     * executor wrote, so that the coordinator stores every member's result. */
    if (r)
        fb_result_set_ids(*result, r->result_id, r->id, self->name);
    s_forget_running(self, task_id);
    s_finish_result(self, *result);
}

bool agent_is_running(agent_t *self, const char *id)
{
    return s_find_running(self, id) != NULL;
}

bool agent_is_spooled(agent_t *self, const char *id)
{
    uint8_t *data = NULL;
    size_t len = 0;
    if (spool_get(self->spool, id, &data, &len) != 0)
        return false;
    free(data);
    return true;
}

/* GPU workloads run in the vendor worker that matches the node's GPUs when it is installed next
 * to the plain worker; otherwise the plain worker reports them skipped or not available. */
static char *s_worker_for(agent_t *self, const char *workload)
{
    if (fb_workload_needs_gpu(workload) && self->gpu_vendors[0]) {
        const char *suffix = strstr(self->gpu_vendors, "nvidia") ? "-cuda" : "-hip";
        char *path = xasprintf("%s%s", self->worker_path, suffix);
        if (access(path, X_OK) == 0)
            return path;
        log_warn("%s: %s not installed; GPU workloads are not available", workload, path);
        free(path);
    }
    return xstrdup(self->worker_path);
}

void agent_note_gpu_vendors(agent_t *self)
{
    self->gpu_vendors[0] = '\0';
    for (size_t i = 0; i < self->inventory->n_gpus; i++) {
        const char *v = self->inventory->gpus[i]->vendor;
        if (!v || !*v || strstr(self->gpu_vendors, v))
            continue;
        if (self->gpu_vendors[0])
            strncat(self->gpu_vendors, ",",
                    sizeof self->gpu_vendors - strlen(self->gpu_vendors) - 1);
        strncat(self->gpu_vendors, v, sizeof self->gpu_vendors - strlen(self->gpu_vendors) - 1);
    }
    /* Workers learn what the node has without reading sysfs again. */
    setenv("FLEETBURN_GPU_VENDORS", self->gpu_vendors, 1);
}

/* A member of a group task reports as <task>@<node> (worker_main does the same). */
static char *s_result_id(agent_t *self, const Fleetburn__RunTask *m)
{
    return m->group ? xasprintf("%s@%s", m->task_id, self->name) : xstrdup(m->task_id);
}

static fb_result_t *s_refusal(agent_t *self, const Fleetburn__RunTask *m, const char *fmt,
                              const char *arg)
{
    fb_result_t *r = fb_result_new();
    char *result_id = s_result_id(self, m);
    fb_result_set_ids(r, result_id, m->task_id, self->name);
    free(result_id);
    r->verdict = FB_VERDICT_ERROR;
    fb_result_set_error(r, fmt, arg);
    r->started_ms = r->finished_ms = fb_now_ms();
    return r;
}

void agent_on_run_task(agent_t *self, const Fleetburn__RunTask *m)
{
    /* Delivery may repeat: a running task keeps running, a finished one is re-sent. */
    if (agent_is_running(self, m->task_id))
        return;
    char *result_id = s_result_id(self, m);
    if (agent_is_spooled(self, result_id)) {
        agent_send_spooled_result(self, result_id);
        free(result_id);
        return;
    }
    size_t n_params = m->n_params;
    const char **params = xcalloc(m->n_params + self->n_inject, sizeof(char *));
    char **owned = xcalloc(m->n_params, sizeof(char *));
    fb_result_t *refused = NULL;
    for (size_t i = 0; i < m->n_params; i++) {
        if (!strncmp(m->params[i]->key, "inject_", 7) && !self->allow_fault_injection && !refused)
            refused = s_refusal(self, m,
                                "%s refused: fault injection is test-only and this agent was "
                                "not started with --allow-fault-injection",
                                m->params[i]->key);
        owned[i] = xasprintf("%s=%s", m->params[i]->key, m->params[i]->value);
        params[i] = owned[i];
    }
    for (size_t i = 0; i < self->n_inject; i++) {
        const char *spec = self->inject[i];
        const char *dot = strchr(spec, '.'), *eq = strchr(spec, '=');
        if (dot && dot < eq) {
            size_t len = (size_t)(dot - spec);
            if (strlen(m->workload) != len || strncmp(spec, m->workload, len))
                continue;
            spec = dot + 1;
        }
        params[n_params++] = spec;
    }
    if (!refused) {
        char *worker = self->worker_path ? s_worker_for(self, m->workload) : NULL;
        task_env_t env = {
            worker, self->work_dir, self->name, m->stage, self->allow_fault_injection, false, 0, 1,
            NULL,   NULL,           NULL,       0};
        env.site = (const char *const *)self->site;
        env.n_site = self->n_site;
        const Fleetburn__Group *g = m->group;
        if (g && g->size == g->n_peers) {
            env.group = true;
            env.rank = g->rank;
            env.size = g->size;
            env.peers = (const char *const *)g->peers;
            env.addresses = g->n_addresses == g->n_peers ? (const char *const *)g->addresses : NULL;
        }
        task_callbacks_t cb = {s_on_task_line, s_on_task_done, self};
        void *task = self->exec->start(self->exec->arg, self->loop, &env, m->task_id, m->workload,
                                       params, n_params, m->timeout_ms, &cb, &refused);
        free(worker);
        if (task) {
            running_t *r = xcalloc(1, sizeof *r);
            r->task = task;
            r->id = xstrdup(m->task_id);
            r->result_id = result_id;
            result_id = NULL;
            r->rank = env.group ? env.rank : 0;
            r->next = self->running;
            self->running = r;
            s_send_task_event(self, m->task_id, FLEETBURN__TASK_EVENT__KIND__KIND_STARTED, 0,
                              m->workload, NULL, 0);
        }
    }
    if (refused) {
        fb_result_set_ids(refused, result_id, m->task_id, self->name);
        s_finish_result(self, refused);
        fb_result_destroy(&refused);
    }
    free(result_id);
    for (size_t i = 0; i < m->n_params; i++)
        free(owned[i]);
    free(owned);
    free(params);
}

void agent_refuse_run_task(agent_t *self, const Fleetburn__RunTask *m, const char *why)
{
    if (!fb_wire_valid_id(m->task_id) || agent_is_running(self, m->task_id))
        return;
    char *result_id = s_result_id(self, m);
    bool spooled = !fb_wire_valid_id(result_id) || agent_is_spooled(self, result_id);
    free(result_id);
    if (spooled)
        return;
    log_warn("refused task %s: %s", m->task_id, why);
    fb_result_t *r = s_refusal(self, m, "this agent refused the task: %s", why);
    s_finish_result(self, r);
    fb_result_destroy(&r);
}

void agent_on_cancel(agent_t *self, const Fleetburn__CancelTask *m)
{
    running_t *r = s_find_running(self, m->task_id);
    if (r)
        self->exec->cancel(r->task, m->reason);
}

/* --- the default executor: fleetburn-worker processes ---------------------------------------- */

static void *s_worker_start(void *arg, uv_loop_t *loop, const task_env_t *env, const char *task_id,
                            const char *workload, const char *const *params, size_t n_params,
                            uint64_t timeout_ms, const task_callbacks_t *cb,
                            fb_result_t **result_out)
{
    (void)arg;
    return task_start(loop, env, task_id, workload, params, n_params, timeout_ms, cb, result_out);
}

static void s_worker_cancel(void *task, const char *reason)
{
    task_cancel(task, reason);
}

static void s_worker_abort(void *task)
{
    task_abort(task);
}

static void s_worker_write_line(void *task, const char *line)
{
    task_write_line(task, line);
}

const agent_executor_t agent_worker_executor = {s_worker_start, s_worker_cancel, s_worker_abort,
                                                s_worker_write_line, NULL};
