/* SPDX-License-Identifier: Apache-2.0 */
/* launcher: native (native.h): the worker side that forks one rank process per local GPU, the
 * three exchanges with the other members (gpus, ncclid, results), the pipes to the rank
 * processes and their supervision, and the merge of every rank's sweep into one report. Plain
 * C: the GPU itself is only touched in child processes, through the `ar_gpu` table that the GPU
 * workers define (ar_gpu.cu); elsewhere the weak reference is NULL and the member reports that
 * it has no GPUs, after taking part in the first exchange. */
#include "allreduce/native.h"
#include "common/units.h"
#include "common/util.h"
#include "gpu/host/gpu_devices.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Defined only in fleetburn-worker-cuda / -hip and fleetburn-mpirank-cuda (ar_gpu.cu). */
#pragma weak ar_gpu

#define GIB (1024ull * 1024 * 1024)
#define AR_GPU_DEFAULT_MAX (8 * GIB)
#define AR_GPU_RESERVE (2 * GIB) /* runtime context, NCCL's buffers */
#define AR_WATCHDOG_GRACE_MS                                                                       \
    60000 /* the worker waits up to this much longer than a rank's own                             \
             watchdog, so that the rank's own message normally wins */

static const ar_native_limits_t s_default_limits = {60000, 180000, 300000};

/* How long the worker lets a rank stay silent. */
static uint64_t s_watchdog_ms(const ar_native_limits_t *lim)
{
    return lim->stall_ms +
           (lim->stall_ms < AR_WATCHDOG_GRACE_MS ? lim->stall_ms : AR_WATCHDOG_GRACE_MS);
}

/* ---- pure parts (unit-tested) ---------------------------------------------------------------- */

uint64_t ar_gpu_fit_bytes(uint64_t mem_bytes)
{
    return mem_bytes > AR_GPU_RESERVE ? (mem_bytes - AR_GPU_RESERVE) / 2 : 0;
}

size_t ar_gpu_sweep(const ar_opts_t *opts, uint64_t max_bytes, uint64_t **sizes_out)
{
    uint64_t *sizes = NULL;
    size_t n = ar_sweep(opts, &sizes), kept = 0;
    for (size_t i = 0; i < n; i++)
        if (sizes[i] <= max_bytes)
            sizes[kept++] = sizes[i];
    if (!kept) {
        free(sizes);
        sizes = NULL;
    }
    *sizes_out = sizes;
    return kept;
}

char *ar_member_format(const ar_member_t *m)
{
    char devs[AR_MAX_LOCAL_GPUS * 6 + 2] = "";
    size_t off = 0;
    for (unsigned i = 0; i < m->n && i < AR_MAX_LOCAL_GPUS; i++)
        off += (size_t)snprintf(devs + off, sizeof devs - off, "%s%d", i ? "," : "", m->devices[i]);
    if (!off)
        snprintf(devs, sizeof devs, "-");
    /* The reason ends the line: keep it on one line. */
    char why[sizeof m->why];
    fb_strlcpy(why, m->why, sizeof why);
    for (char *p = why; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return xasprintf("fbgpus1 %d %u %s %d %" PRIu64 " %s", (int)m->state, m->n, devs,
                     m->nccl_version, m->min_mem_bytes, why);
}

/* Next blank-separated field of *p (advanced past it); NULL at the end. */
static char *s_field(char **p)
{
    char *s = *p;
    while (*s == ' ')
        s++;
    if (!*s)
        return NULL;
    char *e = strchr(s, ' ');
    if (e) {
        *e = '\0';
        *p = e + 1;
    } else {
        *p = s + strlen(s);
    }
    return s;
}

static int s_parse_devices(char *text, ar_member_t *m)
{
    if (!strcmp(text, "-"))
        return m->n == 0 ? 0 : -EINVAL;
    unsigned n = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (n >= AR_MAX_LOCAL_GPUS || fb_parse_uint(tok, 1u << 20, &v))
            return -EINVAL;
        m->devices[n++] = (int)v;
    }
    return n == m->n ? 0 : -EINVAL;
}

int ar_member_parse(const void *data, size_t len, ar_member_t *out)
{
    memset(out, 0, sizeof *out);
    if (!data || len == 0 || len > 4096 || memchr(data, '\0', len))
        return -EINVAL;
    char *text = xstrndup(data, len), *p = text;
    char *magic = s_field(&p), *state = s_field(&p), *n = s_field(&p), *devs = s_field(&p);
    char *nccl = s_field(&p), *mem = s_field(&p);
    uint64_t v_state, v_n, v_mem;
    char *end = NULL;
    long v_nccl = nccl ? strtol(nccl, &end, 10) : 0;
    int rc = -EINVAL;
    if (magic && !strcmp(magic, "fbgpus1") && state && !fb_parse_uint(state, 2, &v_state) && n &&
        !fb_parse_uint(n, AR_MAX_LOCAL_GPUS, &v_n) && devs && nccl && end && !*end && v_nccl >= 0 &&
        v_nccl < INT_MAX && mem && !fb_parse_uint(mem, UINT64_MAX, &v_mem)) {
        out->state = (ar_member_state_t)v_state;
        out->n = (unsigned)v_n;
        out->nccl_version = (int)v_nccl;
        out->min_mem_bytes = v_mem;
        while (*p == ' ')
            p++;
        fb_strlcpy(out->why, p, sizeof out->why);
        rc = s_parse_devices(devs, out);
        if (rc == 0 && (out->state == AR_MEMBER_OK) != (out->n > 0))
            rc = -EINVAL;
    }
    free(text);
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

int ar_size_merge(ar_size_result_t *into, const ar_size_result_t *from)
{
    if (into->bytes != from->bytes || into->count != from->count || into->iters != from->iters)
        return -EINVAL;
    into->avg_us = from->avg_us > into->avg_us ? from->avg_us : into->avg_us;
    into->min_us = from->min_us > into->min_us ? from->min_us : into->min_us;
    into->max_us = from->max_us > into->max_us ? from->max_us : into->max_us;
    into->errors += from->errors;
    if (from->first_bad_rank >= 0 &&
        (into->first_bad_rank < 0 || from->first_bad_rank < into->first_bad_rank))
        into->first_bad_rank = from->first_bad_rank;
    return 0;
}

void ar_size_finish(ar_size_result_t *r, unsigned nranks)
{
    double s = r->avg_us * 1e-6;
    r->algbw_gbs = ar_algbw_gbs(r->bytes, s);
    r->busbw_gbs = ar_busbw_gbs(r->bytes, s, nranks);
}

char *ar_results_format(const char *error, const ar_size_result_t *sizes, size_t n,
                        const ar_rank_error_t *bad, size_t n_bad)
{
    char *text = xasprintf("fbresults1 %zu %zu\n", n, n_bad);
    for (size_t i = 0; i < n; i++) {
        const ar_size_result_t *r = &sizes[i];
        char *next = xasprintf("%s%" PRIu64 " %" PRIu64 " %.17g %.17g %.17g %" PRIu64 " %d %u\n",
                               text, r->bytes, r->count, r->avg_us, r->min_us, r->max_us, r->errors,
                               r->first_bad_rank, r->iters);
        free(text);
        text = next;
    }
    for (size_t i = 0; i < n_bad; i++) {
        char line[512];
        ar_format_error_line(&bad[i], line, sizeof line);
        char *next = xasprintf("%s%s\n", text, line);
        free(text);
        text = next;
    }
    /* The error is last and runs to the end, so it may hold anything but NUL. */
    char *next = xasprintf("%serror %s", text, error ? error : "");
    free(text);
    return next;
}

static int s_parse_size_line(const char *line, ar_size_result_t *r)
{
    memset(r, 0, sizeof *r);
    int used = 0;
    unsigned long long bytes, count, errors;
    if (sscanf(line, "%llu %llu %lf %lf %lf %llu %d %u%n", &bytes, &count, &r->avg_us, &r->min_us,
               &r->max_us, &errors, &r->first_bad_rank, &r->iters, &used) != 8 ||
        line[used] != '\0' || r->first_bad_rank < -1 || !(r->avg_us >= 0))
        return -EINVAL;
    r->bytes = bytes;
    r->count = count;
    r->errors = errors;
    return 0;
}

/* The next line of *p, terminated in place; NULL when none is left. */
static char *s_line(char **p)
{
    char *s = *p, *nl = strchr(s, '\n');
    if (!nl)
        return NULL;
    *nl = '\0';
    *p = nl + 1;
    return s;
}

int ar_results_parse(const void *data, size_t len, char **error_out, ar_size_result_t **sizes_out,
                     size_t *n_out, ar_rank_error_t **bad_out, size_t *n_bad_out)
{
    *error_out = NULL;
    *sizes_out = NULL;
    *n_out = 0;
    *bad_out = NULL;
    *n_bad_out = 0;
    if (!data || len == 0 || memchr(data, '\0', len))
        return -EINVAL;
    char *text = xstrndup(data, len), *p = text, *line = s_line(&p);
    unsigned long long n = 0, n_bad = 0;
    int used = 0;
    if (!line || sscanf(line, "fbresults1 %llu %llu%n", &n, &n_bad, &used) != 2 || line[used] ||
        n > 4096 || n_bad > 65536) {
        free(text);
        return -EINVAL;
    }
    ar_size_result_t *sizes = xcalloc((size_t)n + 1, sizeof *sizes);
    ar_rank_error_t *bad = xcalloc((size_t)n_bad + 1, sizeof *bad);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = (line = s_line(&p)) ? s_parse_size_line(line, &sizes[i]) : -EINVAL;
    for (size_t i = 0; rc == 0 && i < n_bad; i++)
        rc = (line = s_line(&p)) ? ar_parse_error_line(line, &bad[i]) : -EINVAL;
    if (rc == 0 && strncmp(p, "error ", 6))
        rc = -EINVAL;
    if (rc) {
        free(sizes);
        free(bad);
        free(text);
        return rc;
    }
    *error_out = xstrdup(p + 6);
    *sizes_out = sizes;
    *n_out = (size_t)n;
    *bad_out = bad;
    *n_bad_out = (size_t)n_bad;
    free(text);
    return 0;
}

/* ---- pipes ----------------------------------------------------------------------------------- */

static int s_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* 0, -EPIPE at end of file before len bytes, or -errno. */
static int s_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -EPIPE;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

/* ---- the rank processes ---------------------------------------------------------------------- */

enum { MSG_ID = 1, MSG_JOINED, MSG_SIZE, MSG_DONE, MSG_ERROR };

/* Child to worker; at most PIPE_BUF bytes, so each write arrives whole. */
typedef struct {
    uint32_t type, index;
    int32_t value;
    nccl_dl_id_t id;
    ar_size_result_t size;
    ar_rank_error_t bad; /* MSG_SIZE with errors: the first wrong element */
    char text[1024];
} ar_msg_t;
_Static_assert(sizeof(ar_msg_t) <= PIPE_BUF, "a message must be written atomically");

/* The device probe's answer. */
typedef struct {
    int rc, nccl_rc, nccl_version;
    uint32_t n;
    ar_gpu_dev_t devs[AR_MAX_LOCAL_GPUS];
    char why[512];
} ar_probe_t;
_Static_assert(sizeof(ar_probe_t) <= PIPE_BUF, "the probe answer must be written atomically");

typedef struct {
    pid_t pid;
    int rfd, wfd; /* from the child, to the child */
    int device;
    unsigned rank;
    bool eof, done, failed, killed; /* killed: by the worker, after another rank failed */
    size_t n_sizes;
    ar_size_result_t *sizes;
    ar_rank_error_t *bad; /* by size; errors 0: none */
    uint64_t last_ms;
    bool have_id;
    nccl_dl_id_t id;
    char error[1024];
} child_t;

typedef struct {
    worker_ctx_t *ctx;
    const ar_opts_t *opts;
    const ar_gpu_t *gpu;
    ar_native_limits_t lim;
    const char *library;
    unsigned member, members;
    ar_member_t me;
    ar_member_t *all; /* by member, after exchange "gpus" */
    unsigned first_rank, nranks;
    uint64_t *sizes;
    size_t n_sizes;
    child_t *kids;
    unsigned n_kids;
    size_t progressed;          /* sizes all local ranks have reported */
    ar_size_result_t *local;    /* merged over local ranks, n_sizes */
    ar_rank_error_t *local_bad; /* every local rank's wrong elements, by size */
    size_t n_local_bad;
    bool inject;
    char error[2048]; /* this member's failure; "" none */
} native_t;

typedef struct {
    int to_parent, from_parent;
    unsigned rank;
} child_link_t;

/* A message with every byte defined (it crosses a pipe whole, padding included). */
static ar_msg_t s_msg(uint32_t type)
{
    ar_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = type;
    return m;
}

static int s_child_send(child_link_t *l, ar_msg_t *m, char *err, size_t errlen)
{
    int rc = s_write_all(l->to_parent, m, sizeof *m);
    if (rc)
        snprintf(err, errlen, "writing to the worker: %s", strerror(-rc));
    return rc;
}

static int s_child_share_id(void *self, nccl_dl_id_t *id, char *err, size_t errlen)
{
    child_link_t *l = self;
    if (l->rank == 0) {
        ar_msg_t m = s_msg(MSG_ID);
        m.id = *id;
        int rc = s_child_send(l, &m, err, errlen);
        if (rc)
            return rc;
    }
    int rc = s_read_all(l->from_parent, id, sizeof *id);
    if (rc)
        snprintf(err, errlen, "the worker handed out no NCCL id (%s)",
                 rc == -EPIPE ? "the group gave up" : strerror(-rc));
    return rc;
}

static int s_child_joined(void *self, int version, char *err, size_t errlen)
{
    ar_msg_t m = s_msg(MSG_JOINED);
    m.value = version;
    return s_child_send(self, &m, err, errlen);
}

static int s_child_size_done(void *self, size_t index, const ar_size_result_t *r,
                             const ar_rank_error_t *bad, char *err, size_t errlen)
{
    ar_msg_t m = s_msg(MSG_SIZE);
    m.index = (uint32_t)index;
    m.size = *r;
    if (bad)
        m.bad = *bad;
    return s_child_send(self, &m, err, errlen);
}

/* What every child does first: die with the worker, die of its own faults (not in a handler
 * the worker installed), keep off the worker's line channel to the agent (stdin, and stdout:
 * NCCL_DEBUG writes there), and hold no end of a sibling's pipes, so that closing them reaches
 * the sibling. */
static void s_child_prepare(const native_t *n, unsigned self_index)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    static const int defaults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                                   SIGTERM, SIGINT, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        signal(defaults[i], SIG_DFL);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        close(null);
    }
    dup2(STDERR_FILENO, STDOUT_FILENO);
    for (unsigned i = 0; n && i < self_index; i++) {
        close(n->kids[i].rfd);
        close(n->kids[i].wfd);
    }
}

static void s_rank_main(native_t *n, unsigned i, int to_parent, int from_parent)
{
    child_t *k = &n->kids[i];
    ar_rank_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.opts = *n->opts;
    cfg.sizes = n->sizes;
    cfg.n_sizes = n->n_sizes;
    cfg.device = k->device;
    cfg.rank = k->rank;
    cfg.nranks = n->nranks;
    cfg.inject = n->inject && k->rank == 0;
    cfg.library = n->library;
    cfg.stall_s = (double)n->lim.stall_ms / 1000.0;
    child_link_t l = {to_parent, from_parent, k->rank};
    ar_rank_link_t link = {&l, s_child_share_id, s_child_joined, s_child_size_done};
    ar_msg_t m = s_msg(MSG_DONE);
    int rc = n->gpu->rank_run(&cfg, &link, m.text, sizeof m.text);
    if (rc) {
        m.type = MSG_ERROR;
        m.value = rc;
    }
    char ignored[64];
    s_child_send(&l, &m, ignored, sizeof ignored);
    _exit(rc ? 1 : 0);
}

/* ---- the device probe ------------------------------------------------------------------------ */

static void s_probe_main(const ar_gpu_t *gpu, const char *library, int fd)
{
    ar_probe_t p;
    memset(&p, 0, sizeof p);
    size_t n = 0;
    p.rc = gpu->devices(p.devs, AR_MAX_LOCAL_GPUS, &n, p.why, sizeof p.why);
    p.n = (uint32_t)n;
    if (p.rc == 0)
        p.nccl_rc = gpu->library_version(library, &p.nccl_version, p.why, sizeof p.why);
    _exit(s_write_all(fd, &p, sizeof p) ? 1 : 0);
}

/* Runs the probe in a child: its answer, or -errno with why set (timeout: a hung runtime). */
static int s_probe(const ar_gpu_t *gpu, const char *library, uint64_t timeout_ms, ar_probe_t *out,
                   char *why, size_t whylen)
{
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        return -errno;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        snprintf(why, whylen, "fork: %s", strerror(e));
        return -e;
    }
    if (pid == 0) {
        close(fds[0]);
        s_child_prepare(NULL, 0);
        s_probe_main(gpu, library, fds[1]);
    }
    close(fds[1]);
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int pr;
    do
        pr = poll(&pfd, 1, (int)timeout_ms);
    while (pr < 0 && errno == EINTR);
    int rc = pr > 0 ? s_read_all(fds[0], out, sizeof *out) : -ETIMEDOUT;
    close(fds[0]);
    if (rc)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == -ETIMEDOUT)
        snprintf(why, whylen,
                 "the GPU runtime did not answer within %.0f s (a GPU or the driver "
                 "hangs)",
                 (double)timeout_ms / 1000.0);
    else if (rc)
        snprintf(why, whylen, "the device probe died (%s)",
                 WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "no answer");
    return rc;
}

/* ---- this member's GPUs ---------------------------------------------------------------------- */

static bool s_node_has_gpus(const char *vendor)
{
    const char *v = getenv("FLEETBURN_GPU_VENDORS");
    return v && *v && (!vendor || strstr(v, vendor));
}

static void s_member_none(ar_member_t *m, ar_member_state_t state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_member_none(ar_member_t *m, ar_member_state_t state, const char *fmt, ...)
{
    m->state = state;
    m->n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
}

/* Fills n->me: the probe, then the `devices` selection. */
static void s_local_member(native_t *n)
{
    ar_member_t *m = &n->me;
    memset(m, 0, sizeof *m);
    n->inject = n->opts->inject_corrupt && n->member == 0;
    if (!n->gpu) {
        if (s_node_has_gpus(NULL))
            return s_member_none(m, AR_MEMBER_BROKEN,
                                 "this node has %s GPUs but this fleetburn-worker has no GPU "
                                 "runtime (install the fleetburn-agent-cuda or -hip package, or "
                                 "fleetburn-worker-cuda/-hip next to fleetburn-worker)",
                                 getenv("FLEETBURN_GPU_VENDORS"));
        return s_member_none(m, AR_MEMBER_NO_GPUS, "no GPUs on this node");
    }
    ar_probe_t p;
    char why[512] = "";
    if (s_probe(n->gpu, n->library, n->lim.probe_ms, &p, why, sizeof why))
        return s_member_none(m, AR_MEMBER_BROKEN, "%s", why);
    if (p.rc || p.n == 0) {
        const char *reason = p.rc ? p.why : "the runtime sees no device";
        if (s_node_has_gpus(n->gpu->vendor))
            return s_member_none(m, AR_MEMBER_BROKEN,
                                 "this node has %s GPUs but the runtime "
                                 "sees none: %s",
                                 n->gpu->vendor, reason);
        return s_member_none(m, AR_MEMBER_NO_GPUS, "no GPUs on this node (%s)", reason);
    }
    if (p.nccl_rc)
        return s_member_none(m, AR_MEMBER_BROKEN, "%s", p.why);
    int *devs = NULL;
    size_t nd = 0;
    const char *sel = worker_param(n->ctx, "devices");
    int rc = gpu_parse_devices(sel ? sel : "all", (int)p.n, &devs, &nd);
    if (rc || nd > AR_MAX_LOCAL_GPUS) {
        free(devs);
        return s_member_none(m, AR_MEMBER_BROKEN, "devices: '%s' %s", sel ? sel : "all",
                             rc == -ENODEV ? "names a GPU the runtime does not see"
                                           : "is not a list of GPU indices");
    }
    m->state = AR_MEMBER_OK;
    m->n = (unsigned)nd;
    m->nccl_version = p.nccl_version;
    m->min_mem_bytes = UINT64_MAX;
    for (size_t i = 0; i < nd; i++) {
        m->devices[i] = devs[i];
        uint64_t mem = p.devs[devs[i]].mem_bytes;
        m->min_mem_bytes = mem < m->min_mem_bytes ? mem : m->min_mem_bytes;
    }
    free(devs);
}

/* ---- the group ------------------------------------------------------------------------------- */

/* Member's node name as the coordinator knows it; for this member in a manual run without
 * --node, the host name, so that findings still name a machine. */
static const char *s_node(const native_t *n, unsigned member)
{
    static char host[256];
    const char *p = worker_peer(n->ctx, member);
    if (p && *p)
        return p;
    if (member != n->member)
        return "?";
    if (*worker_node(n->ctx))
        return worker_node(n->ctx);
    if (!*host && gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "?");
    return host;
}

/* "node-3/gpu1" for every global rank. */
static char **s_rank_names(const native_t *n)
{
    char **names = xcalloc(n->nranks, sizeof *names);
    unsigned r = 0;
    for (unsigned m = 0; m < n->members; m++)
        for (unsigned i = 0; i < n->all[m].n; i++, r++)
            names[r] = xasprintf("%s/gpu%d", s_node(n, m), n->all[m].devices[i]);
    return names;
}

/* All-gather under key; on failure sets n->error. Returns 0 or the exchange's errno. */
static int s_exchange(native_t *n, const char *key, const void *value, size_t len,
                      uint64_t timeout_ms, worker_blob_t **values)
{
    char err[1024];
    int rc = worker_exchange(n->ctx, key, value, len, timeout_ms, values, err, sizeof err);
    if (rc)
        snprintf(n->error, sizeof n->error, "%s", err);
    return rc;
}

/* Exchange "gpus" and what follows from it for every member alike. Returns a verdict to end
 * with, or FB_VERDICT_NONE to go on. */
static fb_verdict_t s_agree_gpus(native_t *n)
{
    char *line = ar_member_format(&n->me);
    worker_blob_t *values = NULL;
    int rc = s_exchange(n, "gpus", line, strlen(line), n->lim.exchange_ms, &values);
    free(line);
    if (rc)
        return worker_error(n->ctx, "allreduce: %s", n->error);
    n->all = xcalloc(n->members, sizeof *n->all);
    char *missing = xstrdup("");
    bool any_broken = false;
    for (unsigned m = 0; m < n->members; m++) {
        if (ar_member_parse(values[m].data, values[m].len, &n->all[m]))
            s_member_none(&n->all[m], AR_MEMBER_BROKEN, "posted an unreadable GPU list");
        if (n->all[m].state == AR_MEMBER_OK) {
            if (m < n->member)
                n->first_rank += n->all[m].n;
            n->nranks += n->all[m].n;
            continue;
        }
        any_broken |= n->all[m].state == AR_MEMBER_BROKEN;
        char *next =
            xasprintf("%s%s%s: %s", missing, *missing ? "; " : "", s_node(n, m), n->all[m].why);
        free(missing);
        missing = next;
    }
    worker_blobs_free(&values, n->members);
    fb_verdict_t v = FB_VERDICT_NONE;
    if (*missing && !any_broken && n->nranks == 0) {
        fb_result_set_error(worker_result(n->ctx),
                            "allreduce skipped: launcher native needs GPUs "
                            "(%s)",
                            missing);
        worker_log(n->ctx, "allreduce skipped: launcher native needs GPUs (%s)", missing);
        v = FB_VERDICT_SKIPPED;
    } else if (*missing) {
        v = worker_error(n->ctx, "allreduce: launcher native cannot run on this group: %s",
                         missing);
    } else if (n->nranks > ar_exact_ranks(n->opts->dtype, n->opts->op)) {
        v = worker_error(n->ctx, "allreduce: %u ranks is more than %s %s checks exactly (%u)",
                         n->nranks, ar_dtype_name(n->opts->dtype), ar_op_name(n->opts->op),
                         ar_exact_ranks(n->opts->dtype, n->opts->op));
    }
    free(missing);
    return v;
}

/* The sweep every member runs: the opts' sizes cut to what every GPU of the group holds. */
static fb_verdict_t s_plan_sizes(native_t *n)
{
    uint64_t want = n->opts->max_bytes ? n->opts->max_bytes : AR_GPU_DEFAULT_MAX;
    uint64_t fit = UINT64_MAX;
    unsigned smallest = 0;
    for (unsigned m = 0; m < n->members; m++) {
        uint64_t f = ar_gpu_fit_bytes(n->all[m].min_mem_bytes);
        if (f < fit) {
            fit = f;
            smallest = m;
        }
    }
    ar_opts_t o = *n->opts;
    o.max_bytes = want;
    n->n_sizes = ar_gpu_sweep(&o, fit < want ? fit : want, &n->sizes);
    if (!n->n_sizes)
        return worker_error(n->ctx, "allreduce: no message size fits the GPUs of %s (%.1f GiB)",
                            s_node(n, smallest), (double)n->all[smallest].min_mem_bytes / GIB);
    if (fit < want) {
        char a[32], b[32];
        worker_log(n->ctx,
                   "allreduce: max_size %s does not fit twice in the GPUs of %s "
                   "(%.1f GiB): the sweep stops at %s",
                   fb_format_bytes(want, a, sizeof a), s_node(n, smallest),
                   (double)n->all[smallest].min_mem_bytes / GIB,
                   fb_format_bytes(n->sizes[n->n_sizes - 1], b, sizeof b));
    }
    return FB_VERDICT_NONE;
}

/* Forks the rank process of local GPU i. Returns 0 or -errno. */
static int s_fork_rank(native_t *n, unsigned i)
{
    child_t *k = &n->kids[i];
    int up[2], down[2];
    if (pipe(up) != 0)
        return -errno;
    if (pipe(down) != 0) {
        int e = errno;
        close(up[0]);
        close(up[1]);
        return -e;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(up[0]);
        close(up[1]);
        close(down[0]);
        close(down[1]);
        return -e;
    }
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        s_child_prepare(n, i);
        s_rank_main(n, i, up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    k->pid = pid;
    k->rfd = up[0];
    k->wfd = down[1];
    k->last_ms = fb_mono_ms();
    return 0;
}

/* Starts one rank process per local GPU. Returns 0 or -errno with n->error set. */
static int s_start_ranks(native_t *n)
{
    n->kids = xcalloc(n->me.n, sizeof *n->kids);
    n->local = xcalloc(n->n_sizes, sizeof *n->local);
    n->local_bad = xcalloc((size_t)n->n_sizes * n->me.n, sizeof *n->local_bad);
    for (unsigned i = 0; i < n->me.n; i++) {
        child_t *k = &n->kids[i];
        k->device = n->me.devices[i];
        k->rank = n->first_rank + i;
        k->sizes = xcalloc(n->n_sizes, sizeof *k->sizes);
        k->bad = xcalloc(n->n_sizes, sizeof *k->bad);
        int rc = s_fork_rank(n, i);
        if (rc) {
            snprintf(n->error, sizeof n->error, "%s/gpu%d: cannot start its rank process: %s",
                     s_node(n, n->member), k->device, strerror(-rc));
            return rc;
        }
        n->n_kids = i + 1;
    }
    return 0;
}

static void s_kid_failed(native_t *n, child_t *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_kid_failed(native_t *n, child_t *k, const char *fmt, ...)
{
    if (k->failed || k->done)
        return;
    k->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->error, sizeof k->error, fmt, ap);
    va_end(ap);
}

/* Kills the ranks still running: the others would wait for a failed one forever, and a failed
 * one may be hung. Only the ones that had not failed count as killed by the worker. */
static void s_kill_rest(native_t *n)
{
    for (unsigned i = 0; i < n->n_kids; i++) {
        child_t *k = &n->kids[i];
        if (k->eof || k->done || k->pid <= 0)
            continue;
        kill(k->pid, SIGKILL);
        k->killed |= !k->failed;
    }
}

static bool s_any_failed(const native_t *n)
{
    for (unsigned i = 0; i < n->n_kids; i++)
        if (n->kids[i].failed)
            return true;
    return false;
}

/* A rank process closed its pipe: reap it and, when it had not finished, say how it ended. */
static void s_kid_ended(native_t *n, child_t *k)
{
    k->eof = true;
    close(k->rfd);
    k->rfd = -1;
    int status = 0;
    while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
        ;
    k->pid = -1;
    if (k->done || k->failed || k->killed)
        return;
    if (WIFSIGNALED(status))
        s_kid_failed(n, k, "rank process died: signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
    else
        s_kid_failed(n, k, "rank process exited with status %d before finishing",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void s_kid_message(native_t *n, child_t *k, const ar_msg_t *m)
{
    k->last_ms = fb_mono_ms();
    switch (m->type) {
    case MSG_ID:
        k->id = m->id;
        k->have_id = true;
        break;
    case MSG_JOINED:
        break;
    case MSG_SIZE:
        if (m->index != k->n_sizes || k->n_sizes >= n->n_sizes ||
            m->size.bytes != n->sizes[k->n_sizes])
            s_kid_failed(n, k, "rank process sent size %u out of order", m->index);
        else {
            k->bad[k->n_sizes] = m->size.errors ? m->bad : (ar_rank_error_t){0};
            k->sizes[k->n_sizes++] = m->size;
        }
        break;
    case MSG_DONE:
        if (k->n_sizes == n->n_sizes)
            k->done = true;
        else
            s_kid_failed(n, k, "rank process ended after %zu of %zu sizes", k->n_sizes, n->n_sizes);
        break;
    case MSG_ERROR:
        s_kid_failed(n, k, "%.1000s", m->text);
        break;
    default:
        s_kid_failed(n, k, "rank process sent message type %u", m->type);
        break;
    }
}

/* Sizes every local rank has reported: merged, and a progress line each. */
static void s_progress(native_t *n)
{
    size_t ready = n->n_sizes;
    for (unsigned i = 0; i < n->n_kids; i++)
        ready = n->kids[i].n_sizes < ready ? n->kids[i].n_sizes : ready;
    uint64_t total = 0, done = 0;
    for (size_t s = 0; s < n->n_sizes; s++)
        total += n->sizes[s];
    for (size_t s = 0; s < n->progressed; s++)
        done += n->sizes[s];
    for (; n->progressed < ready; n->progressed++) {
        size_t s = n->progressed;
        n->local[s] = n->kids[0].sizes[s];
        for (unsigned i = 0; i < n->n_kids; i++) {
            if (i && ar_size_merge(&n->local[s], &n->kids[i].sizes[s]))
                s_kid_failed(n, &n->kids[i], "rank process reported another size");
            if (n->kids[i].bad[s].errors)
                n->local_bad[n->n_local_bad++] = n->kids[i].bad[s];
        }
        ar_size_finish(&n->local[s], n->nranks);
        done += n->sizes[s];
        char b[32];
        worker_progress(n->ctx, (double)done / (double)total, "%s: busbw %.1f GB/s, %.1f us%s",
                        fb_format_bytes(n->sizes[s], b, sizeof b), n->local[s].busbw_gbs,
                        n->local[s].avg_us, n->local[s].errors ? ", WRONG RESULTS" : "");
    }
}

static bool s_all_ended(const native_t *n)
{
    for (unsigned i = 0; i < n->n_kids; i++)
        if (!n->kids[i].eof)
            return false;
    return true;
}

/* Reads the ranks' messages until stop(n) holds, every rank has ended, or deadline_ms (0: none)
 * passes. Handles deaths and silence; after the first failure kills the other ranks. */
static void s_pump(native_t *n, bool (*stop)(const native_t *), uint64_t deadline_ms)
{
    struct pollfd *pfds = xcalloc(n->n_kids ? n->n_kids : 1, sizeof *pfds);
    uint64_t watchdog = s_watchdog_ms(&n->lim);
    while (!s_all_ended(n) && !(stop && stop(n))) {
        uint64_t now = fb_mono_ms();
        if (deadline_ms && now >= deadline_ms)
            break;
        nfds_t np = 0;
        for (unsigned i = 0; i < n->n_kids; i++) {
            child_t *k = &n->kids[i];
            pfds[i].fd = k->eof ? -1 : k->rfd;
            pfds[i].events = POLLIN;
            pfds[i].revents = 0;
            np = i + 1;
            if (!k->eof && !k->done && !k->failed && !k->killed && now - k->last_ms > watchdog)
                s_kid_failed(n, k, "no word from the rank for %.0f s (hung in NCCL or the GPU)",
                             (double)(now - k->last_ms) / 1000.0);
        }
        if (s_any_failed(n))
            s_kill_rest(n);
        int pr = poll(pfds, np, 1000);
        if (pr < 0 && errno != EINTR)
            break;
        for (unsigned i = 0; pr > 0 && i < n->n_kids; i++) {
            child_t *k = &n->kids[i];
            if (k->eof || !(pfds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ar_msg_t m;
            if (s_read_all(k->rfd, &m, sizeof m) == 0)
                s_kid_message(n, k, &m);
            else
                s_kid_ended(n, k);
        }
        s_progress(n);
        if (s_any_failed(n))
            s_kill_rest(n);
    }
    free(pfds);
}

static bool s_have_id(const native_t *n)
{
    return n->n_kids && n->kids[0].have_id;
}

/* "node/gpuN (rank R): text" for every rank that failed, into n->error. */
static void s_collect_errors(native_t *n)
{
    for (unsigned i = 0; i < n->n_kids; i++) {
        child_t *k = &n->kids[i];
        if (!k->failed)
            continue;
        size_t off = strlen(n->error);
        snprintf(n->error + off, sizeof n->error - off, "%s%s/gpu%d (rank %u): %s", off ? "; " : "",
                 s_node(n, n->member), k->device, k->rank, k->error);
    }
}

/* Exchange "ncclid": member 0 posts the id its first rank created (nothing when it has none);
 * everyone hands the id to its ranks. Every member takes part even after a local failure, so
 * that the others are not left waiting. */
static int s_hand_out_id(native_t *n)
{
    nccl_dl_id_t id;
    memset(&id, 0, sizeof id);
    bool have = false;
    if (n->member == 0 && !*n->error && n->n_kids) {
        s_pump(n, s_have_id, fb_mono_ms() + n->lim.exchange_ms);
        have = s_have_id(n);
        if (have)
            id = n->kids[0].id;
        else if (!s_any_failed(n))
            s_kid_failed(n, &n->kids[0], "no NCCL id within %.0f s",
                         (double)n->lim.exchange_ms / 1000.0);
    }
    worker_blob_t *values = NULL;
    int rc = s_exchange(n, "ncclid", &id, have ? sizeof id : 0, n->lim.exchange_ms, &values);
    if (rc)
        return rc;
    have = values[0].len == sizeof id;
    if (have)
        memcpy(&id, values[0].data, sizeof id);
    else if (n->member != 0 && !*n->error)
        snprintf(n->error, sizeof n->error, "%s (member 0) handed out no NCCL id", s_node(n, 0));
    worker_blobs_free(&values, n->members);
    if (!have) {
        s_kill_rest(n); /* waiting for an id that will not come */
        return 0;
    }
    uint64_t now = fb_mono_ms();
    for (unsigned i = 0; i < n->n_kids; i++) {
        child_t *k = &n->kids[i];
        k->last_ms = now;
        if (!k->eof && !k->failed && s_write_all(k->wfd, &id, sizeof id) != 0)
            s_kid_failed(n, k, "could not hand the NCCL id to the rank process");
        close(k->wfd);
        k->wfd = -1;
    }
    return 0;
}

/* Ends every rank process (killing the ones left) and frees the pipes. */
static void s_reap(native_t *n)
{
    s_kill_rest(n);
    for (unsigned i = 0; i < n->n_kids; i++) {
        child_t *k = &n->kids[i];
        if (k->wfd >= 0)
            close(k->wfd);
        k->wfd = -1;
        if (!k->eof)
            s_kid_ended(n, k);
    }
}

/* The local run: ranks started, id handed out, ranks supervised to the end. */
static void s_run_local(native_t *n)
{
    s_start_ranks(n);
    if (s_hand_out_id(n) == 0)
        s_pump(n, NULL, 0);
    s_reap(n);
    s_collect_errors(n);
}

/* ---- the group's result ---------------------------------------------------------------------- */

typedef struct {
    ar_size_result_t *merged; /* over the group (n_sizes entries, the first n valid) */
    ar_size_result_t *own;    /* this member's, as it posted them */
    size_t n;
    ar_rank_error_t *bad, *own_bad; /* wrong elements: every member's, this member's */
    size_t n_bad, n_own_bad;
    char *errors; /* "node: text; ..." or "" */
} group_t;

static void s_append(char **text, const char *node, const char *what)
{
    char *next = xasprintf("%s%s%s: %s", *text, **text ? "; " : "", node, what);
    free(*text);
    *text = next;
}

/* Adds member m's posted results to the group. */
static void s_add_member(native_t *n, group_t *g, unsigned m, const worker_blob_t *value)
{
    char *err = NULL;
    ar_size_result_t *sizes = NULL;
    ar_rank_error_t *bad = NULL;
    size_t count = 0, n_bad = 0;
    if (ar_results_parse(value->data, value->len, &err, &sizes, &count, &bad, &n_bad)) {
        s_append(&g->errors, s_node(n, m), "posted unreadable results");
        g->n = 0;
        return;
    }
    if (*err)
        s_append(&g->errors, s_node(n, m), err);
    count = count < n->n_sizes ? count : n->n_sizes;
    if (m == 0)
        memcpy(g->merged, sizes, count * sizeof *sizes);
    g->n = count < g->n ? count : g->n;
    for (size_t s = 0; m > 0 && s < g->n; s++)
        if (ar_size_merge(&g->merged[s], &sizes[s]))
            g->n = s;
    if (m == n->member) {
        memcpy(g->own, sizes, count * sizeof *sizes);
        g->own_bad = xcalloc(n_bad + 1, sizeof *g->own_bad);
        memcpy(g->own_bad, bad, n_bad * sizeof *bad);
        g->n_own_bad = n_bad;
    }
    g->bad = xrealloc(g->bad, (g->n_bad + n_bad + 1) * sizeof *g->bad);
    memcpy(g->bad + g->n_bad, bad, n_bad * sizeof *bad);
    g->n_bad += n_bad;
    free(err);
    free(sizes);
    free(bad);
}

/* Exchange "results" and the merge of every member's sweep, the same on every member. */
static int s_gather(native_t *n, group_t *g)
{
    memset(g, 0, sizeof *g);
    char *mine = ar_results_format(n->error, n->local, n->progressed, n->local_bad, n->n_local_bad);
    worker_blob_t *values = NULL;
    uint64_t timeout = s_watchdog_ms(&n->lim) + n->lim.exchange_ms;
    int rc = s_exchange(n, "results", mine, strlen(mine), timeout, &values);
    free(mine);
    if (rc)
        return rc;
    g->errors = xstrdup("");
    g->merged = xcalloc(n->n_sizes, sizeof *g->merged);
    g->own = xcalloc(n->n_sizes, sizeof *g->own);
    g->n = n->n_sizes;
    for (unsigned m = 0; m < n->members; m++)
        s_add_member(n, g, m, &values[m]);
    worker_blobs_free(&values, n->members);
    for (size_t s = 0; s < g->n; s++)
        ar_size_finish(&g->merged[s], n->nranks);
    return 0;
}

static void s_group_free(group_t *g)
{
    free(g->merged);
    free(g->own);
    free(g->bad);
    free(g->own_bad);
    free(g->errors);
}

static void s_log_versions(native_t *n)
{
    bool same = true;
    for (unsigned m = 1; m < n->members; m++)
        same &= n->all[m].nccl_version == n->all[0].nccl_version;
    char v[32];
    nccl_dl_version_text(n->me.nccl_version, v, sizeof v);
    worker_log(n->ctx,
               "allreduce native: %u ranks on %u node%s, %s %s%s; this node's GPUs: "
               "ranks %u-%u",
               n->nranks, n->members, n->members == 1 ? "" : "s", n->library, v,
               same ? "" : " (versions differ across nodes)", n->first_rank,
               n->first_rank + n->me.n - 1);
    fb_result_add_metric(worker_result(n->ctx), "allreduce.nccl_version", n->me.nccl_version, "");
}

/* Member 0 reports the group; the others report the group's bandwidth with their own errors,
 * so that a node whose GPU computed wrong results fails by itself too. */
static fb_verdict_t s_report(native_t *n, group_t *g)
{
    fb_verdict_t v = FB_VERDICT_NONE;
    if (g->n) {
        ar_size_result_t *view = xcalloc(g->n, sizeof *view);
        memcpy(view, g->merged, g->n * sizeof *view);
        for (size_t s = 0; n->member != 0 && s < g->n; s++) {
            view[s].errors = g->own[s].errors;
            view[s].first_bad_rank = g->own[s].first_bad_rank;
        }
        char **names = s_rank_names(n);
        v = ar_report_detail(n->ctx, view, g->n, n->nranks, (const char *const *)names,
                             n->member == 0 ? g->bad : g->own_bad,
                             n->member == 0 ? g->n_bad : g->n_own_bad);
        fb_names_free(names, n->nranks);
        free(view);
    }
    fb_verdict_t e = FB_VERDICT_NONE;
    if (*g->errors)
        e = worker_error(n->ctx, "allreduce: %s", g->errors);
    else if (g->n < n->n_sizes)
        e = worker_error(n->ctx, "allreduce: only %zu of %zu sizes completed", g->n, n->n_sizes);
    /* Wrong results are a finding even when the run then broke: keep the failure. */
    return e != FB_VERDICT_NONE && v != FB_VERDICT_FAIL ? e : v;
}

/* ---- entry points ---------------------------------------------------------------------------- */

static void s_native_free(native_t *n)
{
    for (unsigned i = 0; n->kids && i < n->me.n; i++) {
        free(n->kids[i].sizes);
        free(n->kids[i].bad);
    }
    free(n->kids);
    free(n->local);
    free(n->local_bad);
    free(n->sizes);
    free(n->all);
}

static const char *s_library(const ar_gpu_t *gpu)
{
    const char *env = getenv("FLEETBURN_NCCL_LIBRARY");
    if (env && *env)
        return env;
    return gpu ? gpu->library : NCCL_DL_NVIDIA;
}

fb_verdict_t ar_native_run_with(worker_ctx_t *ctx, const ar_opts_t *opts, const ar_gpu_t *gpu,
                                const ar_native_limits_t *limits)
{
    native_t n;
    memset(&n, 0, sizeof n);
    n.ctx = ctx;
    n.opts = opts;
    n.gpu = gpu;
    n.lim = limits ? *limits : s_default_limits;
    n.library = s_library(gpu);
    n.member = worker_rank(ctx);
    n.members = worker_size(ctx);
    /* A rank that died must not take the worker with it through a write to its pipe. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);

    s_local_member(&n);
    fb_verdict_t v = s_agree_gpus(&n);
    if (v == FB_VERDICT_NONE)
        v = s_plan_sizes(&n);
    if (v == FB_VERDICT_NONE) {
        s_log_versions(&n);
        s_run_local(&n);
        group_t g;
        if (s_gather(&n, &g))
            v = worker_error(ctx, "allreduce: %s%s%s", n.error, *n.error ? "; " : "",
                             "results were not exchanged");
        else
            v = s_report(&n, &g);
        s_group_free(&g);
    }
    sigaction(SIGPIPE, &old_pipe, NULL);
    s_native_free(&n);
    return v;
}

fb_verdict_t ar_native_run(worker_ctx_t *ctx, const ar_opts_t *opts)
{
    return ar_native_run_with(ctx, opts, &ar_gpu ? &ar_gpu : NULL, NULL);
}

const char *ar_gpu_rank_program(void)
{
    return &ar_gpu ? ar_gpu.rank_program : NULL;
}

int ar_gpu_local_count(worker_ctx_t *ctx, unsigned *n_out, char *why, size_t whylen)
{
    *n_out = 0;
    if (!&ar_gpu)
        return 0;
    ar_probe_t p;
    int rc = s_probe(&ar_gpu, s_library(&ar_gpu), s_default_limits.probe_ms, &p, why, whylen);
    if (rc)
        return rc;
    if (p.rc || p.n == 0) {
        snprintf(why, whylen, "%s", p.rc ? p.why : "the runtime sees no device");
        return s_node_has_gpus(ar_gpu.vendor) ? -ENODEV : 0;
    }
    int *devs = NULL;
    size_t nd = 0;
    const char *sel = worker_param(ctx, "devices");
    rc = gpu_parse_devices(sel ? sel : "all", (int)p.n, &devs, &nd);
    free(devs);
    if (rc) {
        snprintf(why, whylen, "devices: '%s' does not name GPUs of this node", sel);
        return rc;
    }
    *n_out = (unsigned)nd;
    return 0;
}
