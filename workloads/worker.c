/* SPDX-License-Identifier: Apache-2.0 */
/* The worker context: parameters, the result being built, and the stdout channel through which
 * progress and log lines reach the agent. Lines are "progress FRACTION TEXT" and "log TEXT"; the
 * agent forwards them to the coordinator as TaskEvents. */
#include "worker.h"
#include "common/exline.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One rank's value at most (FB_WIRE_MAX_EXCHANGE in common/wire.h). */
#define FB_WIRE_MAX_EXCHANGE_BYTES 65536u

struct worker_ctx {
    char *task_id;
    char *node;
    char **keys, **values;
    size_t n_params;
    char **site_keys, **site_values; /* site settings (worker_site) */
    size_t n_site;
    bool allow_fault_injection;
    bool emit; /* write progress/log lines to stdout */
    fb_result_t *result;
    pthread_mutex_t lock;
    double last_progress_s;
    const char *sysfs_root;
    unsigned rank, size;
    char **peers, **addresses; /* by rank, size entries each */
    pthread_mutex_t exchange_lock;
    char *in_buf; /* bytes read from stdin not yet consumed as lines */
    size_t in_len, in_cap;
};

static void s_free_group(worker_ctx_t *self)
{
    for (unsigned i = 0; self->peers && i < self->size; i++) {
        free(self->peers[i]);
        free(self->addresses[i]);
    }
    free(self->peers);
    free(self->addresses);
    self->peers = self->addresses = NULL;
}

void worker_ctx_set_group(worker_ctx_t *ctx, unsigned rank, unsigned size,
                          const char *const *peers, const char *const *addresses)
{
    s_free_group(ctx);
    ctx->size = size ? size : 1;
    ctx->rank = rank < ctx->size ? rank : 0;
    ctx->peers = xcalloc(ctx->size, sizeof(char *));
    ctx->addresses = xcalloc(ctx->size, sizeof(char *));
    for (unsigned i = 0; i < ctx->size; i++) {
        const char *peer = peers ? peers[i] : (i == ctx->rank ? ctx->node : "");
        ctx->peers[i] = xstrdup(peer ? peer : "");
        ctx->addresses[i] = xstrdup(addresses && addresses[i] ? addresses[i] : "");
    }
}

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
    pthread_mutex_init(&self->exchange_lock, NULL);
    worker_ctx_set_group(self, 0, 1, NULL, NULL);
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
    worker_ctx_set_site(self, NULL, 0);
    free(self->task_id);
    free(self->node);
    fb_result_destroy(&self->result);
    pthread_mutex_destroy(&self->lock);
    s_free_group(self);
    pthread_mutex_destroy(&self->exchange_lock);
    free(self->in_buf);
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

void worker_ctx_set_site(worker_ctx_t *ctx, const char *const *site, size_t n_site)
{
    for (size_t i = 0; i < ctx->n_site; i++) {
        free(ctx->site_keys[i]);
        free(ctx->site_values[i]);
    }
    free(ctx->site_keys);
    free(ctx->site_values);
    ctx->site_keys = ctx->site_values = NULL;
    ctx->n_site = 0;
    if (!n_site)
        return;
    ctx->site_keys = xcalloc(n_site, sizeof(char *));
    ctx->site_values = xcalloc(n_site, sizeof(char *));
    for (size_t i = 0; i < n_site; i++) {
        const char *eq = strchr(site[i], '=');
        if (!eq)
            continue;
        ctx->site_keys[ctx->n_site] = xstrndup(site[i], (size_t)(eq - site[i]));
        ctx->site_values[ctx->n_site] = xstrdup(eq + 1);
        ctx->n_site++;
    }
}

const char *worker_site(const worker_ctx_t *ctx, const char *key)
{
    for (size_t i = 0; i < ctx->n_site; i++)
        if (!strcmp(ctx->site_keys[i], key))
            return ctx->site_values[i];
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
    fb_result_set_errorv(ctx->result, fmt, ap);
    va_end(ap);
    worker_log(ctx, "error: %s", ctx->result->error);
    return FB_VERDICT_ERROR;
}

/* ---- groups and exchanges ------------------------------------------------------------------ */

unsigned worker_rank(const worker_ctx_t *ctx)
{
    return ctx->rank;
}

unsigned worker_size(const worker_ctx_t *ctx)
{
    return ctx->size;
}

const char *worker_peer(const worker_ctx_t *ctx, unsigned r)
{
    return r < ctx->size ? ctx->peers[r] : "";
}

const char *worker_peer_address(const worker_ctx_t *ctx, unsigned r)
{
    return r < ctx->size ? ctx->addresses[r] : "";
}

void worker_blobs_free(worker_blob_t **blobs_p, size_t n)
{
    if (!blobs_p || !*blobs_p)
        return;
    for (size_t i = 0; i < n; i++)
        free((*blobs_p)[i].data);
    free(*blobs_p);
    *blobs_p = NULL;
}

static worker_blob_t s_blob_copy(const void *data, size_t len)
{
    worker_blob_t b = {NULL, len};
    if (len) {
        b.data = xmalloc(len);
        memcpy(b.data, data, len);
    }
    return b;
}

/* "rank 2 (node-c), rank 3 (node-d)" for the ranks whose flag is false. */
static char *s_missing_ranks(const worker_ctx_t *ctx, const bool *arrived)
{
    char *text = xstrdup("");
    for (unsigned r = 0; r < ctx->size; r++) {
        if (arrived[r])
            continue;
        char *next = xasprintf("%s%srank %u (%s)", text, *text ? ", " : "", r,
                               *ctx->peers[r] ? ctx->peers[r] : "?");
        free(text);
        text = next;
    }
    return text;
}

/* Through files KEY.RANK in a directory shared by the ranks (tests, manual runs): written to a
 * temporary name and renamed, so a reader never sees half a value. */
static int s_exchange_files(worker_ctx_t *ctx, const char *dir, const char *key, const void *value,
                            size_t len, uint64_t timeout_ms, worker_blob_t **values_out,
                            char *err, size_t errlen)
{
    /* Named per task, so that one directory serves several tasks. */
    uint64_t h = 1469598103934665603ull;
    for (const char *p = ctx->task_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%016llx", (unsigned long long)h);
    char *tmp = xasprintf("%s/.%s.%s.%u.tmp", dir, prefix, key, ctx->rank);
    char *path = xasprintf("%s/%s.%s.%u", dir, prefix, key, ctx->rank);
    /* Stored as a post line: hex survives text-oriented reads (fb_read_file trims). */
    char *line = fb_exline_post_format(key, 0, value, len);
    int rc = 0;
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(line, f) < 0)
        rc = -errno;
    if (f && fclose(f) != 0 && rc == 0)
        rc = -errno;
    free(line);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    free(tmp);
    free(path);
    if (rc) {
        snprintf(err, errlen, "exchange %s: cannot write to %s: %s", key, dir, strerror(-rc));
        return rc;
    }
    worker_blob_t *values = xcalloc(ctx->size, sizeof *values);
    bool *arrived = xcalloc(ctx->size, sizeof *arrived);
    uint64_t deadline = fb_mono_ms() + timeout_ms;
    unsigned n_arrived = 0;
    while (n_arrived < ctx->size) {
        for (unsigned r = 0; r < ctx->size; r++) {
            if (arrived[r])
                continue;
            char *p = xasprintf("%s/%s.%s.%u", dir, prefix, key, r);
            char *text = fb_read_file(p, NULL), *k = NULL;
            uint64_t unused;
            uint8_t *data = NULL;
            size_t n = 0;
            if (text && fb_exline_post_parse(text, &k, &unused, &data, &n) == 0) {
                values[r].data = data;
                values[r].len = n;
                arrived[r] = true;
                n_arrived++;
            }
            free(k);
            free(text);
            free(p);
        }
        if (n_arrived == ctx->size)
            break;
        if (fb_mono_ms() >= deadline) {
            char *missing = s_missing_ranks(ctx, arrived);
            snprintf(err, errlen, "exchange %s: %s did not arrive within %.1f s", key, missing,
                     (double)timeout_ms / 1000.0);
            free(missing);
            worker_blobs_free(&values, ctx->size);
            free(arrived);
            return -ETIMEDOUT;
        }
        usleep(20 * 1000);
    }
    free(arrived);
    *values_out = values;
    return 0;
}

/* Reads stdin until a whole line is buffered or the deadline passes. *line_out is heap. */
static int s_read_line(worker_ctx_t *ctx, uint64_t deadline_ms, char **line_out)
{
    for (;;) {
        char *nl = ctx->in_len ? memchr(ctx->in_buf, '\n', ctx->in_len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - ctx->in_buf);
            *line_out = xstrndup(ctx->in_buf, n);
            memmove(ctx->in_buf, nl + 1, ctx->in_len - n - 1);
            ctx->in_len -= n + 1;
            return 0;
        }
        uint64_t now = fb_mono_ms();
        if (now >= deadline_ms)
            return -ETIMEDOUT;
        struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
        int wait = (int)(deadline_ms - now > 1000 ? 1000 : deadline_ms - now);
        int pr = poll(&pfd, 1, wait);
        if (pr < 0 && errno != EINTR)
            return -errno;
        if (pr <= 0)
            continue;
        if (ctx->in_cap - ctx->in_len < 65536) {
            ctx->in_cap = ctx->in_cap ? 2 * ctx->in_cap : 131072;
            ctx->in_buf = xrealloc(ctx->in_buf, ctx->in_cap);
        }
        ssize_t n = read(STDIN_FILENO, ctx->in_buf + ctx->in_len, ctx->in_cap - ctx->in_len);
        if (n == 0)
            return -ENOTCONN;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -errno;
        if (n > 0)
            ctx->in_len += (size_t)n;
    }
}

/* Through the agent: a post line on stdout, the coordinator's answer as a line on stdin. The
 * coordinator enforces timeout_ms and names who is missing; the worker waits a little longer so
 * that the coordinator's message, which says more, normally wins. */
static int s_exchange_agent(worker_ctx_t *ctx, const char *key, const void *value, size_t len,
                            uint64_t timeout_ms, worker_blob_t **values_out, char *err,
                            size_t errlen)
{
    char *line = fb_exline_post_format(key, timeout_ms, value, len);
    pthread_mutex_lock(&ctx->lock);
    fputs(line, stdout);
    fflush(stdout);
    pthread_mutex_unlock(&ctx->lock);
    free(line);
    uint64_t deadline = fb_mono_ms() + timeout_ms + 15000;
    for (;;) {
        char *reply = NULL;
        int rc = s_read_line(ctx, deadline, &reply);
        if (rc == -ETIMEDOUT) {
            snprintf(err, errlen, "exchange %s: no answer from the coordinator within %.1f s", key,
                     (double)(timeout_ms + 15000) / 1000.0);
            return rc;
        }
        if (rc) {
            snprintf(err, errlen, "exchange %s: the agent's channel closed (%s)", key,
                     strerror(-rc));
            return -ENOTCONN;
        }
        char *rkey = NULL, *error = NULL;
        bool ok = false;
        fb_exline_blob_t *blobs = NULL;
        size_t n = 0;
        if (fb_exline_reply_parse(reply, &rkey, &ok, &blobs, &n, &error) || strcmp(rkey, key)) {
            fprintf(stderr, "worker: ignoring unexpected line from the agent: %.80s\n", reply);
            free(rkey);
            free(error);
            fb_exline_blobs_free(&blobs, n);
            free(reply);
            continue;
        }
        free(reply);
        free(rkey);
        if (!ok) {
            snprintf(err, errlen, "exchange %s: %s", key, error);
            free(error);
            return -ECONNABORTED;
        }
        if (n != ctx->size) {
            snprintf(err, errlen, "exchange %s: %zu values for a group of %u", key, n, ctx->size);
            fb_exline_blobs_free(&blobs, n);
            return -EPROTO;
        }
        worker_blob_t *values = xcalloc(n, sizeof *values);
        for (size_t i = 0; i < n; i++) {
            values[i].data = blobs[i].data; /* ownership moves */
            values[i].len = blobs[i].len;
            blobs[i].data = NULL;
        }
        fb_exline_blobs_free(&blobs, n);
        *values_out = values;
        return 0;
    }
}

int worker_exchange(worker_ctx_t *ctx, const char *key, const void *value, size_t len,
                    uint64_t timeout_ms, worker_blob_t **values_out, char *err, size_t errlen)
{
    *values_out = NULL;
    if (errlen)
        err[0] = '\0';
    if (!fb_exline_valid_key(key) || len > FB_WIRE_MAX_EXCHANGE_BYTES || (len && !value)) {
        snprintf(err, errlen, "exchange: invalid key or a value over %u bytes",
                 FB_WIRE_MAX_EXCHANGE_BYTES);
        return -EINVAL;
    }
    if (ctx->size == 1) {
        *values_out = xcalloc(1, sizeof **values_out);
        (*values_out)[0] = s_blob_copy(value, len);
        return 0;
    }
    pthread_mutex_lock(&ctx->exchange_lock);
    const char *dir = getenv("FLEETBURN_EXCHANGE_DIR");
    int rc;
    if (dir && *dir)
        rc = s_exchange_files(ctx, dir, key, value, len, timeout_ms, values_out, err, errlen);
    else if (ctx->emit)
        rc = s_exchange_agent(ctx, key, value, len, timeout_ms, values_out, err, errlen);
    else {
        snprintf(err, errlen, "exchange %s: no agent and FLEETBURN_EXCHANGE_DIR is not set", key);
        rc = -ENOTCONN;
    }
    pthread_mutex_unlock(&ctx->exchange_lock);
    return rc;
}
