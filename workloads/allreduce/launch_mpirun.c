/* SPDX-License-Identifier: Apache-2.0 */
/* `launcher: mpirun` (launch_mpirun.h): the members' exchange of slots, mpirun's command line,
 * running it as a child of rank 0's worker while reading the ranks' lines, and handing rank 0's
 * verdict to the other members. The command line is built by a pure function so that tests read
 * exactly what an operator would type. */
#include "launch_mpirun.h"
#include "common/units.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define LM_SLOTS_TIMEOUT_MS 120000ull
/* Members wait for rank 0's verdict as long as the sweep takes; the agent's deadline bounds it. */
#define LM_DONE_TIMEOUT_MS (24ull * 3600 * 1000)
#define LM_START_TIMEOUT_MS 120000ull /* plus 1 s per node: until rank 0 prints rank lines */
#define LM_STDERR_TAIL 8
#define LM_OTHER_LINES_MAX 200 /* other output lines logged; the rest are counted */
#define LM_MAX_ARGS 256

extern char **environ;

/* ---- member lines ---------------------------------------------------------------------------- */

char *mpirun_member_format(const mpirun_member_t *m)
{
    if (m->error[0])
        return xasprintf("error=%s", m->error);
    return xasprintf("gpu=%d slots=%u mem=%" PRIu64 " path=%s", m->gpu ? 1 : 0, m->slots,
                     m->mem_bytes, m->rank_path);
}

int mpirun_member_parse(const char *text, size_t len, mpirun_member_t *out)
{
    memset(out, 0, sizeof *out);
    char *s = xstrndup(text ? text : "", text ? len : 0);
    int rc = -EINVAL;
    if (!strncmp(s, "error=", 6)) {
        fb_strlcpy(out->error, s[6] ? s + 6 : "unknown error", sizeof out->error);
        rc = 0;
    } else {
        int gpu = -1, used = 0;
        unsigned slots = 0;
        unsigned long long mem = 0;
        if (sscanf(s, "gpu=%d slots=%u mem=%llu path=%n", &gpu, &slots, &mem, &used) == 3 &&
            used > 0 && (gpu == 0 || gpu == 1) && slots >= 1 && slots <= 4096 && s[used] == '/' &&
            strlen(s + used) < sizeof out->rank_path && !strchr(s + used, ' ')) {
            out->gpu = gpu == 1;
            out->slots = slots;
            out->mem_bytes = mem;
            fb_strlcpy(out->rank_path, s + used, sizeof out->rank_path);
            rc = 0;
        }
    }
    free(s);
    return rc;
}

/* ---- the command line ------------------------------------------------------------------------ */

/* True when the blank-separated args contain one of the options (as a word or "opt=..."). */
static bool s_has_option(const char *args, const char *const *opts)
{
    for (const char *p = args; p && *p;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t=");
        for (size_t i = 0; opts[i] && n; i++)
            if (strlen(opts[i]) == n && !strncmp(p, opts[i], n))
                return true;
        p += strcspn(p, " \t");
    }
    return false;
}

/* Appends arg (taking it); arguments past LM_MAX_ARGS are dropped, which only an absurd
 * mpirun_args reaches. */
static void s_push(char **argv, size_t *n, char *arg)
{
    if (*n + 1 >= LM_MAX_ARGS) {
        free(arg);
        return;
    }
    argv[(*n)++] = arg;
}

char **mpirun_argv(const mpirun_plan_t *plan, size_t *argc_out)
{
    static const char *const mapping[] = {"--map-by",  "-map-by",  "--npernode", "-npernode",
                                          "--pernode", "-pernode", "--ppr",      NULL};
    static const char *const binding[] = {"--bind-to", "-bind-to", "--bind-to-core", NULL};
    char **argv = xcalloc(LM_MAX_ARGS, sizeof(char *));
    size_t n = 0;
    unsigned total = 0;
    char *hosts = xstrdup("");
    for (size_t i = 0; i < plan->n; i++) {
        char *next = xasprintf("%s%s%s:%u", hosts, i ? "," : "", plan->hosts[i], plan->slots[i]);
        free(hosts);
        hosts = next;
        total += plan->slots[i];
    }
    s_push(argv, &n, xstrdup(plan->mpirun));
    s_push(argv, &n, xstrdup("--host"));
    s_push(argv, &n, hosts);
    s_push(argv, &n, xstrdup("-np"));
    s_push(argv, &n, xasprintf("%u", total));
    if (plan->as_root)
        s_push(argv, &n, xstrdup("--allow-run-as-root"));
    /* Daemons stay attached to their remote shell: what they say on failure reaches mpirun's
     * output (and so the error message), and a daemon that dies ends its shell, which mpirun
     * notices. Detached, a daemon that died silently left mpirun waiting (1 run in 20 here). */
    s_push(argv, &n, xstrdup("--leave-session-attached"));
    if (plan->rsh_agent && *plan->rsh_agent) {
        s_push(argv, &n, xstrdup("--mca"));
        s_push(argv, &n, xstrdup("plm_rsh_agent"));
        s_push(argv, &n, xstrdup(plan->rsh_agent));
    }
    /* Ranks fill hosts in slot order (ar_rank.h relies on it); no binding, because GPU ranks
     * pick their own CPUs near their GPU and host ranks of several agents share a machine in
     * tests. An operator's mpirun_args win. */
    if (!s_has_option(plan->extra_args, mapping)) {
        s_push(argv, &n, xstrdup("--map-by"));
        s_push(argv, &n, xstrdup("slot"));
    }
    if (!s_has_option(plan->extra_args, binding)) {
        s_push(argv, &n, xstrdup("--bind-to"));
        s_push(argv, &n, xstrdup("none"));
    }
    /* Busy-polling ranks that share CPUs with each other or with other work (several ranks per
     * node, agents in namespaces, CI) take scheduler ticks to meet: 64 B took 27 ms instead of
     * 21 us with 3 ranks on 2 busy cores. Yielding costs next to nothing when no one else wants
     * the CPU. The GPU path leaves it alone: NCCL, not MPI, carries its collective. */
    static const char *const yield[] = {"mpi_yield_when_idle", NULL};
    if (plan->yield_when_idle && !s_has_option(plan->extra_args, yield)) {
        s_push(argv, &n, xstrdup("--mca"));
        s_push(argv, &n, xstrdup("mpi_yield_when_idle"));
        s_push(argv, &n, xstrdup("1"));
    }
    for (size_t i = 0; i < plan->n_env; i++) {
        s_push(argv, &n, xstrdup("-x"));
        s_push(argv, &n, xstrdup(plan->env[i]));
    }
    for (const char *p = plan->extra_args; p && *p;) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, " \t");
        if (len)
            s_push(argv, &n, xstrndup(p, len));
        p += len;
    }
    s_push(argv, &n, xstrdup(plan->rank_path));
    char words[AR_ARGS_N][AR_ARG_MAX];
    ar_opts_to_args(plan->opts, words);
    for (size_t i = 0; i < AR_ARGS_N; i++)
        s_push(argv, &n, xstrdup(words[i]));
    argv[n] = NULL;
    if (argc_out)
        *argc_out = n;
    return argv;
}

void mpirun_argv_free(char ***argv_p)
{
    if (!argv_p || !*argv_p)
        return;
    for (char **a = *argv_p; *a; a++)
        free(*a);
    free(*argv_p);
    *argv_p = NULL;
}

/* Variables the ranks need on every node: the group (ar_rank.h), libraries, fleetburn's and
 * NCCL's settings. Names point into environ (valid until the environment changes). */
static size_t s_env_names(char ***names_out)
{
    size_t n = 0, cap = 16;
    char **names = xcalloc(cap, sizeof(char *));
    for (char **e = environ; *e; e++) {
        size_t len = strcspn(*e, "=");
        bool wanted = (len == 15 && !strncmp(*e, "LD_LIBRARY_PATH", 15)) ||
                      !strncmp(*e, "FLEETBURN_", 10) || !strncmp(*e, "NCCL_", 5) ||
                      !strncmp(*e, "RCCL_", 5);
        if (!wanted || (*e)[len] != '=')
            continue;
        if (n == cap)
            names = xrealloc(names, (cap *= 2) * sizeof(char *));
        names[n++] = xstrndup(*e, len);
    }
    *names_out = names;
    return n;
}

/* ---- running mpirun -------------------------------------------------------------------------- */

typedef struct {
    const uint64_t *sweep; /* the sizes asked for */
    size_t n_sweep;
    uint64_t start_limit_ms; /* the ranks must have reported by then */
    bool started;            /* a rank line arrived */
    bool start_timed_out;    /* mpirun was stopped because none did */
    ar_size_result_t *sizes; /* the sizes reported, in order */
    size_t n_sizes;
    ar_rank_error_t *errors;
    size_t n_errors;
    char **names; /* by rank, from the rank lines */
    unsigned nranks;
    char *tail[LM_STDERR_TAIL]; /* mpirun's last stderr lines */
    size_t n_tail;
    size_t other_lines;
} lm_run_t;

static void s_run_free(lm_run_t *run)
{
    free(run->sizes);
    free(run->errors);
    for (unsigned r = 0; run->names && r < run->nranks; r++)
        free(run->names[r]);
    free(run->names);
    for (size_t i = 0; i < LM_STDERR_TAIL; i++)
        free(run->tail[i]);
}

static void s_progress(worker_ctx_t *ctx, const lm_run_t *run)
{
    double done = 0, all = 0;
    for (size_t i = 0; i < run->n_sweep; i++) {
        all += (double)run->sweep[i];
        if (i < run->n_sizes)
            done += (double)run->sweep[i];
    }
    char b[32];
    const ar_size_result_t *last = &run->sizes[run->n_sizes - 1];
    worker_progress(ctx, all > 0 ? done / all : 1.0, "allreduce %zu/%zu sizes, %s: %.1f us",
                    run->n_sizes, run->n_sweep, fb_format_bytes(last->bytes, b, sizeof b),
                    last->avg_us);
}

static void s_stdout_line(worker_ctx_t *ctx, lm_run_t *run, const char *line)
{
    ar_size_result_t s;
    ar_rank_error_t e;
    unsigned rank = 0;
    char name[256];
    if (!ar_parse_line(line, &s)) {
        run->sizes = xrealloc(run->sizes, (run->n_sizes + 1) * sizeof *run->sizes);
        run->sizes[run->n_sizes++] = s;
        s_progress(ctx, run);
    } else if (!ar_parse_error_line(line, &e)) {
        run->errors = xrealloc(run->errors, (run->n_errors + 1) * sizeof *run->errors);
        run->errors[run->n_errors++] = e;
    } else if (!ar_parse_rank_line(line, &rank, name, sizeof name)) {
        run->started = true;
        if (rank < run->nranks) {
            free(run->names[rank]);
            run->names[rank] = xstrdup(name);
        }
    } else if (run->other_lines++ < LM_OTHER_LINES_MAX) {
        worker_log(ctx, "mpirun: %s", line);
    }
}

static void s_stderr_line(worker_ctx_t *ctx, lm_run_t *run, const char *line)
{
    if (!*line || strspn(line, "-* ") == strlen(line)) /* Open MPI's banner rules */
        return;
    if (run->other_lines++ < LM_OTHER_LINES_MAX)
        worker_log(ctx, "mpirun: %s", line);
    if (run->n_tail == LM_STDERR_TAIL) {
        free(run->tail[0]);
        memmove(run->tail, run->tail + 1, (LM_STDERR_TAIL - 1) * sizeof run->tail[0]);
        run->n_tail--;
    }
    run->tail[run->n_tail++] = xstrdup(line);
}

typedef struct {
    int fd;
    char *buf;
    size_t len, cap;
} lm_stream_t;

/* Reads what is there; hands over complete lines; false at end of stream. */
static bool s_drain(worker_ctx_t *ctx, lm_run_t *run, lm_stream_t *s, bool is_stderr)
{
    if (s->cap - s->len < 4096)
        s->buf = xrealloc(s->buf, s->cap = s->cap ? s->cap * 2 : 16384);
    ssize_t got = read(s->fd, s->buf + s->len, s->cap - s->len - 1);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    bool eof = got <= 0;
    if (got > 0)
        s->len += (size_t)got;
    if (eof && s->len && s->buf[s->len - 1] != '\n')
        s->buf[s->len++] = '\n';
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++) {
        if (s->buf[i] != '\n')
            continue;
        s->buf[i] = '\0';
        if (i > start && s->buf[i - 1] == '\r')
            s->buf[i - 1] = '\0';
        (is_stderr ? s_stderr_line : s_stdout_line)(ctx, run, s->buf + start);
        start = i + 1;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    return !eof;
}

/* In the child: pipes onto stdout/stderr, nothing on stdin (the worker's stdin carries the
 * agent's exchange replies, which mpirun must not read), and SIGTERM when the worker dies. */
static void s_exec_child(char **argv, int out_fd, int err_fd)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0)
        dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* mpirun waits for ever for a daemon that died without a word (seen with a remote shell that
 * ended normally): when no rank has reported by the deadline, it is stopped (SIGTERM, which makes
 * it stop every daemon and rank; SIGKILL 10 s later). */
static void s_start_watchdog(worker_ctx_t *ctx, lm_run_t *run, pid_t pid, uint64_t deadline,
                             uint64_t *kill_at)
{
    uint64_t now = fb_mono_ms();
    if (run->started || now < deadline)
        return;
    if (!run->start_timed_out) {
        run->start_timed_out = true;
        *kill_at = now + 10000;
        worker_log(ctx, "allreduce: no rank started within %.0f s; stopping mpirun",
                   (double)run->start_limit_ms / 1000.0);
        kill(pid, SIGTERM);
    } else if (*kill_at && now >= *kill_at) {
        *kill_at = 0;
        kill(pid, SIGKILL);
    }
}

/* Runs mpirun to the end; returns its wait status, or -errno when it could not start. */
static int s_spawn_and_read(worker_ctx_t *ctx, char **argv, lm_run_t *run)
{
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return -errno;
    if (pipe2(err, O_CLOEXEC) != 0) {
        int rc = -errno;
        close(out[0]);
        close(out[1]);
        return rc;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        s_exec_child(argv, out[1], err[1]);
    int fork_errno = errno;
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        return -fork_errno;
    }
    lm_stream_t streams[2] = {{out[0], NULL, 0, 0}, {err[0], NULL, 0, 0}};
    bool open_[2] = {true, true};
    uint64_t deadline = fb_mono_ms() + run->start_limit_ms, kill_at = 0;
    while (open_[0] || open_[1]) {
        s_start_watchdog(ctx, run, pid, deadline, &kill_at);
        struct pollfd pfd[2];
        nfds_t n = 0;
        int which[2];
        for (int i = 0; i < 2; i++)
            if (open_[i]) {
                pfd[n] = (struct pollfd){streams[i].fd, POLLIN, 0};
                which[n++] = i;
            }
        if (poll(pfd, n, 1000) < 0 && errno != EINTR)
            break;
        for (nfds_t k = 0; k < n; k++)
            if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
                open_[which[k]] = s_drain(ctx, run, &streams[which[k]], which[k] == 1);
    }
    for (int i = 0; i < 2; i++) {
        close(streams[i].fd);
        free(streams[i].buf);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* ---- rank 0 ---------------------------------------------------------------------------------- */

/* "mpirun exited with status 1: <last stderr lines>" */
static char *s_exit_text(const lm_run_t *run, int status)
{
    char *text = WIFSIGNALED(status)
                     ? xasprintf("mpirun died from signal %d", WTERMSIG(status))
                     : xasprintf("mpirun exited with status %d", WEXITSTATUS(status));
    for (size_t i = 0; i < run->n_tail; i++) {
        char *next = xasprintf("%s%s%s", text, i ? " | " : ": ", run->tail[i]);
        free(text);
        text = next;
    }
    return text;
}

static fb_verdict_t s_judge(worker_ctx_t *ctx, lm_run_t *run, int status)
{
    bool complete = run->n_sizes == run->n_sweep;
    if (status < 0)
        return worker_error(ctx, "allreduce: cannot start mpirun: %s", strerror(-status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && run->n_sizes == 0)
        return worker_error(ctx,
                            "allreduce: cannot run mpirun (%s); install openmpi-bin or set "
                            "mpirun = PATH in the agent's site configuration",
                            run->n_tail ? run->tail[run->n_tail - 1] : "not found");
    if (run->start_timed_out && !run->started) {
        char *why = s_exit_text(run, status);
        fb_verdict_t v = worker_error(ctx,
                                      "allreduce: no rank started within %.0f s (a daemon "
                                      "that never reported?); %s",
                                      (double)run->start_limit_ms / 1000.0, why);
        free(why);
        return v;
    }
    if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *why = s_exit_text(run, status);
        fb_verdict_t v;
        if (run->n_sizes) { /* judge what completed, but the run is an error */
            ar_report_detail(ctx, run->sizes, run->n_sizes, run->nranks,
                             (const char *const *)run->names, run->errors, run->n_errors);
        }
        v = worker_error(ctx, "allreduce: %s after %zu of %zu sizes", why, run->n_sizes,
                         run->n_sweep);
        free(why);
        return v;
    }
    return ar_report_detail(ctx, run->sizes, run->n_sizes, run->nranks,
                            (const char *const *)run->names, run->errors, run->n_errors);
}

static const char *s_host(const worker_ctx_t *ctx, unsigned r);

bool mpirun_host_ok(const char *h)
{
    size_t n = strlen(h);
    return n > 0 && n <= 255 && (isalnum((unsigned char)h[0]) || h[0] == ':') &&
           strspn(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:_%-") == n;
}

/* The members agree on one path and one rank binary; *total gets the ranks. NULL when they do,
 * else a heap text naming who differs. */
static char *s_check_members(const worker_ctx_t *ctx, const mpirun_member_t *m, unsigned n,
                             unsigned *total)
{
    *total = 0;
    for (unsigned r = 0; r < n; r++) {
        char shown[64];
        if (!mpirun_host_ok(s_host(ctx, r)))
            return xasprintf("rank %u: '%s' is not a host name or address mpirun can be given", r,
                             fb_show_value(s_host(ctx, r), shown, sizeof shown));
        if (m[r].error[0])
            return xasprintf("rank %u (%s): %s", r, worker_peer(ctx, r), m[r].error);
        if (m[r].gpu != m[0].gpu)
            return xasprintf("%s has %s but %s has %s: all members of an mpirun group need "
                             "the same path",
                             worker_peer(ctx, 0), m[0].gpu ? "GPUs" : "no GPUs",
                             worker_peer(ctx, r), m[r].gpu ? "GPUs" : "none");
        if (strcmp(m[r].rank_path, m[0].rank_path))
            return xasprintf("the rank binary is %s on %s but %s on %s: mpirun starts one path "
                             "on every node",
                             m[0].rank_path, worker_peer(ctx, 0), m[r].rank_path,
                             worker_peer(ctx, r));
        *total += m[r].slots;
    }
    return NULL;
}

static void s_post_done(worker_ctx_t *ctx, fb_verdict_t verdict)
{
    const fb_result_t *res = worker_result(ctx);
    char *text =
        xasprintf("verdict=%s\n%s", fb_verdict_name(verdict), res->error ? res->error : "");
    worker_blob_t *values = NULL;
    char err[512];
    /* The others posted right after "slots" and wait; only a lost member makes this wait. */
    if (worker_exchange(ctx, "done", text, strlen(text), LM_SLOTS_TIMEOUT_MS, &values, err,
                        sizeof err))
        worker_log(ctx, "allreduce: could not tell the group the verdict: %s", err);
    worker_blobs_free(&values, worker_size(ctx));
    free(text);
}

/* Host names as mpirun reaches the members: the group's addresses, else node names; a group of
 * one is this host. */
static const char *s_host(const worker_ctx_t *ctx, unsigned r)
{
    if (worker_size(ctx) == 1)
        return "localhost";
    const char *a = worker_peer_address(ctx, r);
    return *a ? a : worker_peer(ctx, r);
}

/* FLEETBURN_AR_NODES / _ADDRS / _SLOTS for the ranks (ar_rank.h). */
static void s_export_group(const worker_ctx_t *ctx, const mpirun_member_t *m)
{
    char *nodes = xstrdup(""), *addrs = xstrdup(""), *slots = xstrdup("");
    for (unsigned r = 0; r < worker_size(ctx); r++) {
        const char *sep = r ? "," : "";
        char *a = xasprintf("%s%s%s", nodes, sep, worker_peer(ctx, r));
        char *b = xasprintf("%s%s%s", addrs, sep, worker_size(ctx) == 1 ? "" : s_host(ctx, r));
        char *c = xasprintf("%s%s%u", slots, sep, m[r].slots);
        free(nodes);
        free(addrs);
        free(slots);
        nodes = a;
        addrs = b;
        slots = c;
    }
    setenv("FLEETBURN_AR_NODES", nodes, 1);
    setenv("FLEETBURN_AR_ADDRS", addrs, 1);
    setenv("FLEETBURN_AR_SLOTS", slots, 1);
    free(nodes);
    free(addrs);
    free(slots);
}

static fb_verdict_t s_run_mpirun(worker_ctx_t *ctx, const mpirun_member_t *m, unsigned total)
{
    unsigned n = worker_size(ctx), max_slots = 0;
    uint64_t mem = UINT64_MAX;
    for (unsigned r = 0; r < n; r++) {
        max_slots = m[r].slots > max_slots ? m[r].slots : max_slots;
        mem = m[r].mem_bytes && m[r].mem_bytes < mem ? m[r].mem_bytes : mem;
    }
    ar_opts_t opts;
    char err[512];
    if (ar_opts_from_params(ctx, m[0].gpu, mem == UINT64_MAX ? 0 : mem, max_slots, &opts, err,
                            sizeof err))
        return worker_error(ctx, "allreduce: %s", err);
    if (total > ar_exact_ranks(opts.dtype, opts.op))
        return worker_error(ctx,
                            "allreduce: %s of %s over %u ranks is not exact (at most %u "
                            "ranks); use dtype float",
                            ar_op_name(opts.op), ar_dtype_name(opts.dtype), total,
                            ar_exact_ranks(opts.dtype, opts.op));
    s_export_group(ctx, m);
    const char **hosts = xcalloc(n, sizeof *hosts);
    unsigned *slots = xcalloc(n, sizeof *slots);
    for (unsigned r = 0; r < n; r++) {
        hosts[r] = s_host(ctx, r);
        slots[r] = m[r].slots;
    }
    char **env = NULL;
    size_t n_env = s_env_names(&env);
    /* Which mpirun runs, with what, and whether as root: site settings from the agent's local
     * configuration, never the campaign (docs/security.md "Site settings"). */
    const char *mpirun = worker_site(ctx, "mpirun");
    mpirun_plan_t plan = {mpirun && *mpirun ? mpirun : "mpirun",
                          m[0].rank_path,
                          hosts,
                          slots,
                          n,
                          worker_site(ctx, "rsh_agent"),
                          worker_site(ctx, "mpirun_args"),
                          geteuid() == 0,
                          !m[0].gpu,
                          (const char *const *)env,
                          n_env,
                          &opts};
    char **argv = mpirun_argv(&plan, NULL);
    char *cmd = xstrdup("");
    for (char **a = argv; *a; a++) {
        char *next = xasprintf("%s%s%s", cmd, *cmd ? " " : "", *a);
        free(cmd);
        cmd = next;
    }
    worker_log(ctx, "allreduce: %u ranks on %u node(s): %s", total, n, cmd);
    free(cmd);
    lm_run_t run = {0};
    run.n_sweep = ar_sweep(&opts, (uint64_t **)&run.sweep);
    run.nranks = total;
    /* Launching through a remote shell takes longer the more nodes there are. Tests shorten it
     * with FLEETBURN_AR_START_TIMEOUT_MS. */
    run.start_limit_ms = LM_START_TIMEOUT_MS + 1000ull * n;
    const char *limit = getenv("FLEETBURN_AR_START_TIMEOUT_MS");
    if (limit && strtoull(limit, NULL, 10) > 0)
        run.start_limit_ms = strtoull(limit, NULL, 10);
    run.names = xcalloc(total, sizeof(char *));
    worker_progress(ctx, 0.0, "allreduce: starting %u ranks through mpirun", total);
    int status = s_spawn_and_read(ctx, argv, &run);
    fb_verdict_t verdict = s_judge(ctx, &run, status);
    free((void *)run.sweep);
    s_run_free(&run);
    mpirun_argv_free(&argv);
    for (size_t i = 0; i < n_env; i++)
        free(env[i]);
    free(env);
    free(hosts);
    free(slots);
    return verdict;
}

/* Open MPI refuses to start ranks as root unless told to; fleetburn tells it only when the site
 * says so. NULL when mpirun may run, else why not (static). */
static const char *s_root_refusal(const worker_ctx_t *ctx)
{
    bool allowed = false;
    const char *v = worker_site(ctx, "mpirun_allow_run_as_root");
    if (geteuid() != 0 || (v && !fb_parse_bool(v, &allowed) && allowed))
        return NULL;
    return "this agent runs as root, and mpirun would start every rank as root; set "
           "mpirun_allow_run_as_root = yes in the agent's site configuration "
           "(/etc/fleetburn/agent.conf) to allow it, or run the agent as another user";
}

static fb_verdict_t s_rank0(worker_ctx_t *ctx, mpirun_member_t *m)
{
    const char *root = s_root_refusal(ctx);
    if (root)
        return worker_error(ctx, "allreduce: %s", root);
    unsigned total = 0;
    char *bad = s_check_members(ctx, m, worker_size(ctx), &total);
    fb_verdict_t verdict =
        bad ? worker_error(ctx, "allreduce: %s", bad) : s_run_mpirun(ctx, m, total);
    free(bad);
    return verdict;
}

/* ---- every member ---------------------------------------------------------------------------- */

/* A member other than rank 0 waits for rank 0's verdict and then passes: its part (hosting
 * ranks) is done, and the group's verdict, metrics and findings are rank 0's result. Reporting
 * rank 0's failure here too would race it: the coordinator cancels the members still running as
 * soon as one fails, and rank 0's findings would be lost with it. */
static fb_verdict_t s_follow(worker_ctx_t *ctx)
{
    worker_blob_t *values = NULL;
    char err[512];
    int rc = worker_exchange(ctx, "done", "", 0, LM_DONE_TIMEOUT_MS, &values, err, sizeof err);
    if (rc)
        return worker_error(ctx, "allreduce: no verdict from rank 0 (%s): %s", worker_peer(ctx, 0),
                            err);
    char *text = xstrndup(values[0].data ? values[0].data : "", values[0].len);
    worker_blobs_free(&values, worker_size(ctx));
    char *nl = strchr(text, '\n');
    if (nl)
        *nl = '\0';
    int v = strncmp(text, "verdict=", 8) ? -1 : fb_verdict_parse(text + 8);
    const char *why = nl && nl[1] ? nl + 1 : "";
    worker_log(ctx,
               "allreduce: rank 0 (%s) ran mpirun: %s%s%s; its result holds the group's verdict",
               worker_peer(ctx, 0), v > 0 ? fb_verdict_name((fb_verdict_t)v) : "(unreadable)",
               *why ? ": " : "", why);
    free(text);
    return FB_VERDICT_PASS;
}

fb_verdict_t launch_mpirun(worker_ctx_t *ctx, const mpirun_member_t *me)
{
    char *line = mpirun_member_format(me);
    worker_blob_t *values = NULL;
    char err[512];
    int rc = worker_exchange(ctx, "slots", line, strlen(line), LM_SLOTS_TIMEOUT_MS, &values, err,
                             sizeof err);
    free(line);
    if (rc)
        return worker_error(ctx, "allreduce: %s", err);
    unsigned n = worker_size(ctx);
    mpirun_member_t *m = xcalloc(n, sizeof *m);
    for (unsigned r = 0; r < n; r++)
        if (mpirun_member_parse(values[r].data, values[r].len, &m[r]))
            snprintf(m[r].error, sizeof m[r].error, "posted an unreadable slots line");
    worker_blobs_free(&values, n);
    /* The program mpirun starts is rank 0's own, never what came back through the exchange:
     * every member's posted path must equal it (s_check_members). */
    if (worker_rank(ctx) == 0)
        m[0] = *me;
    fb_verdict_t verdict;
    if (worker_rank(ctx) == 0) {
        verdict = me->error[0] ? worker_error(ctx, "allreduce: %s", me->error) : s_rank0(ctx, m);
        if (n > 1)
            s_post_done(ctx, verdict);
    } else {
        verdict = s_follow(ctx);
        if (me->error[0]) /* rank 0 heard it too; this member's own reason says more */
            verdict = worker_error(ctx, "allreduce: %s", me->error);
    }
    free(m);
    return verdict;
}
