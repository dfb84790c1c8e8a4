/* SPDX-License-Identifier: Apache-2.0 */
/* Runs a program to its end with a fixed argument vector, bounded output and a timeout
 * (subprocess.h). Blocking by design, for a thread of the thread pool: a poll loop reads both
 * pipes until they close or the time is up, then the child is reaped with waitpid on its own pid
 * (libuv reaps only the pids of its own process handles, so the two never take each other's
 * children). */
#include "subprocess.h"

#include "units.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct {
    int fd;
    char *buf;
    size_t len, max;
    bool cut;
} s_pipe_t;

/* Reads what is there; returns false at end of file or on an error. */
static bool s_drain(s_pipe_t *p)
{
    char chunk[4096];
    ssize_t n = read(p->fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0)
        return false;
    size_t keep = (size_t)n;
    if (p->len + keep > p->max) {
        keep = p->max - p->len;
        p->cut = true;
    }
    memcpy(p->buf + p->len, chunk, keep);
    p->len += keep;
    p->buf[p->len] = '\0';
    return true;
}

static int s_spawn(const char *const *argv, int out_w, int err_w, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_w, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err_w, STDERR_FILENO);
    /* Its own process group, so that a timeout kills what it started as well; default signal
     * dispositions and an empty mask, whatever the calling thread has. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawnp(pid, argv[0], &fa, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc;
}

static void s_collect(s_pipe_t *out, s_pipe_t *err, pid_t pid, uint64_t timeout_ms,
                      subprocess_result_t *res)
{
    uint64_t deadline = fb_mono_ms() + timeout_ms;
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
        uint64_t now = fb_mono_ms();
        if (now >= deadline) {
            res->timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        struct pollfd fds[2] = {{out->fd, POLLIN, 0}, {err->fd, POLLIN, 0}};
        if (!out_open)
            fds[0].fd = -1;
        if (!err_open)
            fds[1].fd = -1;
        uint64_t wait = deadline - now;
        int n = poll(fds, 2, wait > 1000 ? 1000 : (int)wait);
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0)
            continue;
        if (out_open && fds[0].revents)
            out_open = s_drain(out);
        if (err_open && fds[1].revents)
            err_open = s_drain(err);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    res->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

int subprocess_run(const char *const *argv, uint64_t timeout_ms, size_t max_output,
                   subprocess_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->exit_status = -1;
    s_pipe_t out = {.fd = -1, .buf = xmalloc(max_output + 1), .max = max_output};
    s_pipe_t err = {.fd = -1, .buf = xmalloc(max_output + 1), .max = max_output};
    out.buf[0] = err.buf[0] = '\0';
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    pid_t pid = 0;
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))
        res->spawn_error = errno;
    else
        res->spawn_error = s_spawn(argv, po[1], pe[1], &pid);
    if (po[1] >= 0) /* the child has its copies: end of file comes when it is done */
        close(po[1]);
    if (pe[1] >= 0)
        close(pe[1]);
    out.fd = po[0];
    err.fd = pe[0];
    if (!res->spawn_error)
        s_collect(&out, &err, pid, timeout_ms, res);
    if (out.fd >= 0)
        close(out.fd);
    if (err.fd >= 0)
        close(err.fd);
    res->out = out.buf;
    res->out_len = out.len;
    res->out_cut = out.cut;
    res->err = err.buf;
    res->err_len = err.len;
    res->err_cut = err.cut;
    return !res->spawn_error && !res->timed_out && res->exit_status == 0 ? 0 : -1;
}

void subprocess_result_fini(subprocess_result_t *res)
{
    free(res->out);
    free(res->err);
    memset(res, 0, sizeof *res);
}

char *subprocess_argv_text(const char *const *argv)
{
    size_t cap = 64, len = 0;
    char *text = xmalloc(cap);
    text[0] = '\0';
    for (size_t i = 0; argv[i]; i++) {
        bool quote = strpbrk(argv[i], " \t") != NULL;
        size_t need = len + strlen(argv[i]) + 4;
        if (need > cap) {
            cap = need * 2;
            text = xrealloc(text, cap);
        }
        len += (size_t)sprintf(text + len, "%s%s%s%s", i ? " " : "", quote ? "'" : "", argv[i],
                               quote ? "'" : "");
    }
    return text;
}

/* What a program wrote to stderr, on one line: lines joined with " / ", other control
 * characters as '?', at most the first 400 bytes. */
static void s_one_line(const char *text, char *out, size_t outlen)
{
    size_t n = 0, len = strlen(text);
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\r'))
        len--;
    for (size_t i = 0; i < len && n + 4 < outlen; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            memcpy(out + n, " / ", 3);
            n += 3;
        } else {
            out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
        }
    }
    out[n] = '\0';
}

char *subprocess_failure(const subprocess_result_t *res, uint64_t timeout_ms)
{
    if (res->spawn_error)
        return xasprintf("cannot run it: %s", strerror(res->spawn_error));
    char said[400];
    s_one_line(res->err ? res->err : "", said, sizeof said);
    size_t n = strlen(said);
    char when[32];
    if (res->timed_out)
        return xasprintf("did not end within %s; killed%s%s",
                         fb_format_duration(timeout_ms, when, sizeof when), n ? ": " : "", said);
    if (res->term_signal)
        return xasprintf("killed by signal %d%s%s", res->term_signal, n ? ": " : "", said);
    return xasprintf("exit status %d%s%s", res->exit_status, n ? ": " : "",
                     n ? said : "(nothing on stderr)");
}
