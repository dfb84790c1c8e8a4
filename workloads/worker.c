/* SPDX-License-Identifier: Apache-2.0 */
/* The worker context: parameters, the result being built, and the stdout channel through which
 * progress and log lines reach the agent. Lines are "progress FRACTION TEXT" and "log TEXT"; the
 * agent forwards them to the coordinator as TaskEvents. */
#include "worker.h"
#include "common/util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct worker_ctx {
    char *task_id;
    char *node;
    char **keys, **values;
    size_t n_params;
    bool allow_fault_injection;
    bool emit; /* write progress/log lines to stdout */
    fb_result_t *result;
    pthread_mutex_t lock;
    double last_progress_s;
    const char *sysfs_root;
};

worker_ctx_t *worker_ctx_new(const char *task_id, const char *node, const char *const *params,
                             size_t n_params, bool allow_fault_injection)
{
    worker_ctx_t *self = xcalloc(1, sizeof *self);
    self->task_id = xstrdup(task_id ? task_id : "");
    self->node = xstrdup(node ? node : "");
    self->keys = xcalloc(n_params, sizeof(char *));
    self->values = xcalloc(n_params, sizeof(char *));
    for (size_t i = 0; i < n_params; i++) {
        const char *eq = strchr(params[i], '=');
        if (!eq)
            continue;
        self->keys[self->n_params] = xstrndup(params[i], (size_t)(eq - params[i]));
        self->values[self->n_params] = xstrdup(eq + 1);
        self->n_params++;
    }
    self->allow_fault_injection = allow_fault_injection;
    self->result = fb_result_new();
    pthread_mutex_init(&self->lock, NULL);
    const char *root = getenv("FLEETBURN_SYSFS_ROOT");
    self->sysfs_root = root ? root : "";
    return self;
}

void worker_ctx_destroy(worker_ctx_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    worker_ctx_t *self = *self_p;
    for (size_t i = 0; i < self->n_params; i++) {
        free(self->keys[i]);
        free(self->values[i]);
    }
    free(self->keys);
    free(self->values);
    free(self->task_id);
    free(self->node);
    fb_result_destroy(&self->result);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

/* Used by worker_main: switch progress/log lines on. */
void worker_ctx_set_emit(worker_ctx_t *self, bool emit);
void worker_ctx_set_emit(worker_ctx_t *self, bool emit)
{
    self->emit = emit;
}

const char *worker_param(const worker_ctx_t *ctx, const char *key)
{
    for (size_t i = 0; i < ctx->n_params; i++)
        if (!strcmp(ctx->keys[i], key))
            return ctx->values[i];
    return NULL;
}

bool worker_fault_injection_allowed(const worker_ctx_t *ctx)
{
    return ctx->allow_fault_injection;
}

const char *worker_task_id(const worker_ctx_t *ctx)
{
    return ctx->task_id;
}

const char *worker_node(const worker_ctx_t *ctx)
{
    return ctx->node;
}

fb_result_t *worker_result(worker_ctx_t *ctx)
{
    return ctx->result;
}

const char *worker_sysfs_root(const worker_ctx_t *ctx)
{
    return ctx->sysfs_root;
}

/* One line per write, newlines in the text flattened so the agent's line parser stays simple. */
static void s_emit_line(const char *prefix, const char *text)
{
    char *line = xasprintf("%s %s\n", prefix, text);
    for (char *p = line; p[1]; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fputs(line, stdout);
    fflush(stdout);
    free(line);
}

void worker_progress(worker_ctx_t *ctx, double fraction, const char *fmt, ...)
{
    if (!ctx->emit)
        return;
    pthread_mutex_lock(&ctx->lock);
    double now = fb_mono_s();
    /* At most 4 lines a second, but always the final one. */
    if (now - ctx->last_progress_s >= 0.25 || fraction >= 1.0) {
        ctx->last_progress_s = now;
        va_list ap;
        va_start(ap, fmt);
        char *text = xvasprintf(fmt, ap);
        va_end(ap);
        char prefix[48];
        snprintf(prefix, sizeof prefix, "progress %.4f",
                 fraction < 0 ? 0 : fraction > 1 ? 1 : fraction);
        s_emit_line(prefix, text);
        free(text);
    }
    pthread_mutex_unlock(&ctx->lock);
}

void worker_log(worker_ctx_t *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = xvasprintf(fmt, ap);
    va_end(ap);
    if (ctx->emit) {
        pthread_mutex_lock(&ctx->lock);
        s_emit_line("log", text);
        pthread_mutex_unlock(&ctx->lock);
    }
    free(text);
}

void worker_telemetry(worker_ctx_t *ctx, const fb_metric_t *samples, size_t n)
{
    if (!ctx->emit || n == 0)
        return;
    /* "telemetry name=value:unit name=value:unit ..." */
    size_t cap = 64 + n * 96, len = 0;
    char *line = xmalloc(cap);
    len += (size_t)snprintf(line, cap, "telemetry");
    for (size_t i = 0; i < n && len + 96 < cap; i++)
        len += (size_t)snprintf(line + len, cap - len, " %.60s=%.17g:%.16s", samples[i].name,
                                samples[i].value, samples[i].unit ? samples[i].unit : "");
    pthread_mutex_lock(&ctx->lock);
    fputs(line, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&ctx->lock);
    free(line);
}

fb_verdict_t worker_error(worker_ctx_t *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = xvasprintf(fmt, ap);
    va_end(ap);
    fb_result_set_error(ctx->result, "%s", text);
    worker_log(ctx, "error: %s", text);
    free(text);
    return FB_VERDICT_ERROR;
}
