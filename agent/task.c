/* SPDX-License-Identifier: Apache-2.0 */
/* Worker process supervision. A worker is started detached (its own session and process group)
 * so that a kill reaches everything it started, and it is killed with SIGTERM then SIGKILL after
 * a grace period. However a worker ends, the agent produces one result: a hung GPU kernel,
 * a segfault or a missed deadline is a verdict, never an agent crash. */
#include "task.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TASK_KILL_GRACE_MS 3000
/* Room for an exchange post: a 64 KiB value as hex plus the head. */
#define TASK_LINE_MAX (2 * 65536 + 256)

struct task {
    uv_loop_t *loop;
    char *id;
    char *workload;
    char *node;
    char *result_path;
    uv_process_t process;
    uv_pipe_t out;
    uv_pipe_t in; /* the worker's stdin: exchange replies */
    uv_timer_t deadline;
    uv_timer_t kill_timer;
    int open_handles;
    task_callbacks_t cb;
    uint64_t timeout_ms;
    uint64_t started_ms;
    bool timed_out;
    bool aborted;
    bool exited;
    char *cancel_reason;
    char line[TASK_LINE_MAX];
    size_t line_len;
};

static void s_on_handle_closed(uv_handle_t *h)
{
    task_t *t = h->data;
    if (--t->open_handles > 0)
        return;
    unlink(t->result_path);
    free(t->id);
    free(t->workload);
    free(t->node);
    free(t->result_path);
    free(t->cancel_reason);
    free(t);
}

static void s_close(task_t *t)
{
    uv_timer_stop(&t->deadline);
    uv_timer_stop(&t->kill_timer);
    uv_handle_t *handles[] = {(uv_handle_t *)&t->process, (uv_handle_t *)&t->out,
                              (uv_handle_t *)&t->in, (uv_handle_t *)&t->deadline,
                              (uv_handle_t *)&t->kill_timer};
    for (size_t i = 0; i < FB_ARRAY_LEN(handles); i++)
        if (!uv_is_closing(handles[i]))
            uv_close(handles[i], s_on_handle_closed);
}

static void s_kill_group(task_t *t, int sig)
{
    if (t->exited || t->process.pid <= 0)
        return;
    /* Negative pid: the whole process group the detached worker leads. */
    if (kill(-t->process.pid, sig) != 0 && errno != ESRCH)
        kill(t->process.pid, sig);
}

static void s_on_kill_timer(uv_timer_t *h)
{
    s_kill_group(h->data, SIGKILL);
}

static void s_terminate(task_t *t)
{
    s_kill_group(t, SIGTERM);
    uv_timer_start(&t->kill_timer, s_on_kill_timer, TASK_KILL_GRACE_MS, 0);
}

static void s_on_deadline(uv_timer_t *h)
{
    task_t *t = h->data;
    t->timed_out = true;
    log_warn("task %s (%s) passed its deadline of %llu ms; killing it", t->id, t->workload,
             (unsigned long long)t->timeout_ms);
    s_terminate(t);
}

static void s_handle_line(task_t *t, char *line)
{
    if (!t->cb.on_line || t->aborted)
        return;
    if (!strncmp(line, "progress ", 9)) {
        char *end = NULL;
        double p = strtod(line + 9, &end);
        if (end && end != line + 9 && p >= 0 && p <= 1) {
            while (*end == ' ')
                end++;
            t->cb.on_line(t->id, "progress", p, end, t->cb.arg);
            return;
        }
    }
    if (!strncmp(line, "telemetry ", 10)) {
        t->cb.on_line(t->id, "telemetry", 0, line + 10, t->cb.arg);
        return;
    }
    if (!strncmp(line, "exchange ", 9)) {
        t->cb.on_line(t->id, "exchange", 0, line, t->cb.arg);
        return;
    }
    if (!strncmp(line, "log ", 4))
        line += 4;
    t->cb.on_line(t->id, "log", 0, line, t->cb.arg);
}

static void s_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = xmalloc(suggested);
    buf->len = suggested;
}

static void s_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    task_t *t = s->data;
    for (ssize_t i = 0; i < n; i++) {
        char c = buf->base[i];
        if (c == '\n' || t->line_len == TASK_LINE_MAX - 1) {
            t->line[t->line_len] = '\0';
            s_handle_line(t, t->line);
            t->line_len = 0;
            if (c == '\n')
                continue;
        }
        t->line[t->line_len++] = c;
    }
    if (n < 0)
        uv_read_stop(s);
    free(buf->base);
}

static fb_result_t *s_result_from_exit(task_t *t, int64_t status, int term_signal)
{
    if (t->timed_out || t->cancel_reason) {
        fb_result_t *r = fb_result_new();
        if (t->timed_out) {
            r->verdict = FB_VERDICT_TIMEOUT;
            fb_result_set_error(r, "%s did not finish within its deadline of %.1f s; killed",
                                t->workload, (double)t->timeout_ms / 1000.0);
        } else {
            r->verdict = FB_VERDICT_ERROR;
            fb_result_set_error(r, "cancelled: %s", t->cancel_reason);
        }
        return r;
    }
    size_t len = 0;
    char *data = fb_read_file(t->result_path, &len);
    if (data && term_signal == 0) {
        char err[256];
        fb_result_t *r = fb_wire_result_unpack((const uint8_t *)data, len, err, sizeof err);
        free(data);
        if (r)
            return r;
        fb_result_t *bad = fb_result_new();
        bad->verdict = FB_VERDICT_ERROR;
        fb_result_set_error(bad, "worker wrote an unreadable result: %s", err);
        return bad;
    }
    free(data);
    fb_result_t *r = fb_result_new();
    r->verdict = FB_VERDICT_ERROR;
    if (term_signal)
        fb_result_set_error(r, "%s worker died from signal %d (%s)", t->workload, term_signal,
                            strsignal(term_signal));
    else
        fb_result_set_error(r, "%s worker exited with status %lld without a result", t->workload,
                            (long long)status);
    return r;
}

static void s_on_exit(uv_process_t *p, int64_t status, int term_signal)
{
    task_t *t = p->data;
    t->exited = true;
    /* Anything the worker left running in its group goes with it. */
    if (kill(-p->pid, SIGKILL) != 0 && errno != ESRCH)
        log_debug("task %s: kill group: %s", t->id, strerror(errno));
    if (!t->aborted) {
        fb_result_t *r = s_result_from_exit(t, status, term_signal);
        fb_result_set_ids(r, t->id, t->id, t->node);
        if (!r->started_ms)
            r->started_ms = t->started_ms;
        if (!r->finished_ms)
            r->finished_ms = fb_now_ms();
        t->cb.on_done(t->id, &r, t->cb.arg);
        fb_result_destroy(&r);
    }
    s_close(t);
}

/* "a,b,c" of n strings (heap). */
static char *s_join(const char *const *items, unsigned n)
{
    size_t len = 1;
    for (unsigned i = 0; i < n; i++)
        len += strlen(items && items[i] ? items[i] : "") + 1;
    char *out = xcalloc(1, len);
    for (unsigned i = 0; i < n; i++) {
        if (i)
            strcat(out, ",");
        strcat(out, items && items[i] ? items[i] : "");
    }
    return out;
}

/* Strings the argument vector points at besides the caller's. */
typedef struct {
    char rank[16], size[16];
    char *peers, *addresses;
} group_args_t;

static char **s_build_args(const task_env_t *env, const char *task_id, const char *workload,
                           const char *result_path, const char *const *params, size_t n_params,
                           group_args_t *g)
{
    char **args = xcalloc(n_params + 2 * env->n_site + 22, sizeof(char *));
    size_t n = 0;
    args[n++] = (char *)env->worker_path;
    args[n++] = "--workload";
    args[n++] = (char *)workload;
    args[n++] = "--task-id";
    args[n++] = (char *)task_id;
    args[n++] = "--result";
    args[n++] = (char *)result_path;
    args[n++] = "--node";
    args[n++] = (char *)env->node;
    if (env->allow_fault_injection)
        args[n++] = "--allow-fault-injection";
    for (size_t i = 0; i < env->n_site; i++) {
        args[n++] = "--site";
        args[n++] = (char *)env->site[i];
    }
    if (env->group) {
        snprintf(g->rank, sizeof g->rank, "%u", env->rank);
        snprintf(g->size, sizeof g->size, "%u", env->size);
        g->peers = s_join(env->peers, env->size);
        args[n++] = "--rank";
        args[n++] = g->rank;
        args[n++] = "--size";
        args[n++] = g->size;
        args[n++] = "--peers";
        args[n++] = g->peers;
        if (env->addresses) {
            g->addresses = s_join(env->addresses, env->size);
            args[n++] = "--addresses";
            args[n++] = g->addresses;
        }
    }
    for (size_t i = 0; i < n_params; i++)
        args[n++] = (char *)params[i];
    args[n] = NULL;
    return args;
}

static char *s_result_path(const char *work_dir, const char *task_id)
{
    /* Task ids contain '/', so the file is named after a hash plus a counter. */
    static unsigned counter;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = task_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return xasprintf("%s/task-%016llx-%u.result", work_dir, (unsigned long long)h, ++counter);
}

task_t *task_start(uv_loop_t *loop, const task_env_t *env, const char *task_id,
                   const char *workload, const char *const *params, size_t n_params,
                   uint64_t timeout_ms, const task_callbacks_t *cb, fb_result_t **result_out)
{
    *result_out = NULL;
    task_t *t = xcalloc(1, sizeof *t);
    t->loop = loop;
    t->id = xstrdup(task_id);
    t->workload = xstrdup(workload);
    t->node = xstrdup(env->node);
    t->result_path = s_result_path(env->work_dir, task_id);
    t->cb = *cb;
    t->timeout_ms = timeout_ms;
    t->started_ms = fb_now_ms();
    unlink(t->result_path);

    uv_pipe_init(loop, &t->out, 0);
    uv_pipe_init(loop, &t->in, 0);
    uv_timer_init(loop, &t->deadline);
    uv_timer_init(loop, &t->kill_timer);
    t->out.data = t->in.data = t->deadline.data = t->kill_timer.data = t->process.data = t;

    group_args_t g = {{0}, {0}, NULL, NULL};
    char **args = s_build_args(env, task_id, workload, t->result_path, params, n_params, &g);
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    stdio[0].data.stream = (uv_stream_t *)&t->in;
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&t->out;
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = STDERR_FILENO;
    uv_process_options_t opts = {0};
    opts.file = env->worker_path;
    opts.args = args;
    opts.exit_cb = s_on_exit;
    opts.stdio = stdio;
    opts.stdio_count = 3;
    opts.flags = UV_PROCESS_DETACHED;
    int rc = uv_spawn(loop, &t->process, &opts);
    free(args);
    free(g.peers);
    free(g.addresses);
    if (rc) {
        fb_result_t *r = fb_result_new();
        r->verdict = FB_VERDICT_ERROR;
        fb_result_set_error(r, "cannot start worker %s: %s", env->worker_path, uv_strerror(rc));
        fb_result_set_ids(r, task_id, task_id, env->node);
        r->started_ms = r->finished_ms = t->started_ms;
        *result_out = r;
        t->open_handles = 5;
        t->exited = true;
        /* A failed spawn still initialised the process handle; close everything. */
        s_close(t);
        return NULL;
    }
    t->open_handles = 5;
    uv_read_start((uv_stream_t *)&t->out, s_on_alloc, s_on_read);
    uv_timer_start(&t->deadline, s_on_deadline, timeout_ms, 0);
    log_info("task %s: started %s (pid %d, deadline %.1f s)", task_id, workload, t->process.pid,
             (double)timeout_ms / 1000.0);
    return t;
}

void task_cancel(task_t *t, const char *reason)
{
    if (t->exited || t->cancel_reason)
        return;
    t->cancel_reason = xstrdup(reason && *reason ? reason : "cancelled by the coordinator");
    log_info("task %s: cancelling: %s", t->id, t->cancel_reason);
    s_terminate(t);
}

void task_abort(task_t *t)
{
    t->aborted = true;
    s_kill_group(t, SIGKILL);
    if (t->exited)
        return;
    /* The exit callback closes the handles once the killed worker is reaped. */
}

const char *task_id(const task_t *t)
{
    return t->id;
}

static void s_on_written(uv_write_t *req, int status)
{
    (void)status; /* a worker that exited meanwhile is not an error worth a message */
    free(req->data);
    free(req);
}

void task_write_line(task_t *t, const char *line)
{
    if (t->exited || t->aborted || uv_is_closing((uv_handle_t *)&t->in))
        return;
    uv_write_t *req = xmalloc(sizeof *req);
    size_t len = strlen(line);
    req->data = xmalloc(len);
    memcpy(req->data, line, len);
    uv_buf_t buf = uv_buf_init(req->data, (unsigned)len);
    int rc = uv_write(req, (uv_stream_t *)&t->in, &buf, 1, s_on_written);
    if (rc) {
        log_warn("task %s: cannot write to the worker: %s", t->id, uv_strerror(rc));
        free(req->data);
        free(req);
    }
}
