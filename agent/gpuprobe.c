/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU probe (gpuprobe.h): `fleetburn-worker --probe` run once at start-up in its own process
 * group with a deadline, its output read bounded and merged into the inventory field by field,
 * each value checked as sysfs content is (printable, bounded, numbers that parse). */
#include "gpuprobe.h"

#include "inventory.h"
#include "log.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_LINE_MAX 4096
#define S_MODEL_MAX 96   /* within the wire's limit on Gpu.model */
#define S_VERSION_MAX 64 /* a VBIOS, InfoROM, driver or library version */

/* ---- merging --------------------------------------------------------------------------------- */

/* Printable ASCII, 1..max bytes; blanks allowed only when blanks is set. */
static bool s_text_ok(const char *v, size_t max, bool blanks)
{
    size_t n = strlen(v);
    if (n == 0 || n > max)
        return false;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p > 0x7e || (*p == ' ' && !blanks))
            return false;
    return true;
}

static long s_gpu_index(const Fleetburn__Inventory *inv, const char *pci)
{
    for (size_t i = 0; i < inv->n_gpus; i++)
        if (!strcasecmp(inv->gpus[i]->pci_address, pci))
            return (long)i;
    return -1;
}

static void s_set_model(Fleetburn__Gpu *g, const char *name)
{
    if (g->model && g->model != protobuf_c_empty_string)
        free(g->model);
    g->model = xstrdup(name);
}

/* "gpu 0000:41:00.0 memory=N vbios=V inforom=I name=NVIDIA H200" */
static bool s_gpu_line(Fleetburn__Inventory *inv, char *line, char **vbios, char **inforom)
{
    char *p = line + 4;
    size_t n = strcspn(p, " ");
    if (n == 0 || n > 31)
        return false;
    bool more = p[n] == ' ';
    p[n] = '\0';
    long idx = s_gpu_index(inv, p);
    if (idx < 0) {
        log_warn("inventory: GPU probe: %.31s is not a GPU of the inventory, ignored", p);
        return false;
    }
    Fleetburn__Gpu *g = inv->gpus[idx];
    p += more ? n + 1 : n; /* never past the end of the line */
    while (*p) {
        while (*p == ' ')
            p++;
        if (!strncmp(p, "name=", 5)) {
            if (s_text_ok(p + 5, S_MODEL_MAX, true))
                s_set_model(g, p + 5);
            else
                log_warn("inventory: GPU probe: the name of %s is not printable text of at most "
                         "%d bytes, ignored",
                         g->pci_address, S_MODEL_MAX);
            break;
        }
        size_t len = strcspn(p, " ");
        char *next = p[len] ? p + len + 1 : p + len;
        p[len] = '\0';
        char *eq = strchr(p, '=');
        const char *v = eq ? eq + 1 : "";
        uint64_t bytes = 0;
        if (!strncmp(p, "memory=", 7)) {
            if (fb_parse_uint(v, UINT64_MAX, &bytes) == 0 && bytes > 0)
                g->memory_bytes = bytes;
            else
                log_warn("inventory: GPU probe: the memory of %s is not a number, ignored",
                         g->pci_address);
        } else if (!strncmp(p, "vbios=", 6) || !strncmp(p, "inforom=", 8)) {
            char **slot = p[0] == 'v' ? &vbios[idx] : &inforom[idx];
            if (s_text_ok(v, S_VERSION_MAX, false)) {
                free(*slot);
                *slot = xstrdup(v);
            } else {
                log_warn("inventory: GPU probe: a version of %s is not printable text of at most "
                         "%d bytes, ignored",
                         g->pci_address, S_VERSION_MAX);
            }
        }
        p = next;
    }
    return true;
}

/* The versions the agent does not read itself (health.h health_versions names the keys). */
static void s_versions_line(Fleetburn__Inventory *inv, char *p)
{
    static const char *const keys[] = {"cuda_driver",   "nccl",          "rccl",
                                       "amdgpu_driver", "nvidia_driver", "rocm"};
    for (char *save = NULL, *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        for (size_t i = 0; i < FB_ARRAY_LEN(keys); i++) {
            if (strcmp(tok, keys[i]))
                continue;
            if (s_text_ok(eq + 1, S_VERSION_MAX, false))
                inventory_add_software(inv, keys[i], xstrdup(eq + 1));
            else
                log_warn("inventory: GPU probe: %s is not a version, ignored", keys[i]);
        }
    }
}

size_t gpuprobe_merge(Fleetburn__Inventory *inv, const char *text, size_t len)
{
    char *buf = xstrndup(text, len); /* a NUL byte ends the text */
    size_t n = inv->n_gpus, described = 0;
    char **vbios = xcalloc(n ? n : 1, sizeof *vbios),
         **inforom = xcalloc(n ? n : 1, sizeof *inforom);
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strlen(line) > S_LINE_MAX) {
            log_warn("inventory: GPU probe: a line of %zu bytes, ignored", strlen(line));
            continue;
        }
        if (!strncmp(line, "gpu ", 4))
            described += s_gpu_line(inv, line, vbios, inforom);
        else if (!strncmp(line, "versions: ", 10))
            s_versions_line(inv, line + 10);
        else if (!strncmp(line, "none ", 5) && s_text_ok(line + 5, S_LINE_MAX, true))
            log_info("inventory: no GPU management library answered: %s", line + 5);
    }
    char **names = xcalloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = xasprintf("gpu%zu", i);
    inventory_add_software(
        inv, "gpu_vbios",
        inventory_per_device((const char *const *)names, (const char *const *)vbios, n));
    inventory_add_software(
        inv, "gpu_inforom",
        inventory_per_device((const char *const *)names, (const char *const *)inforom, n));
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
        free(vbios[i]);
        free(inforom[i]);
    }
    free(names);
    free(vbios);
    free(inforom);
    free(buf);
    return described;
}

/* ---- running --------------------------------------------------------------------------------- */

static uint64_t s_left(uint64_t deadline)
{
    uint64_t now = fb_mono_ms();
    return now < deadline ? deadline - now : 0;
}

/* Reads fd until EOF, the limit or the deadline; returns the bytes read, *timed_out set when the
 * deadline came first. */
static size_t s_read_all(int fd, char *buf, size_t cap, uint64_t deadline, bool *timed_out)
{
    size_t len = 0;
    *timed_out = false;
    while (len < cap) {
        struct pollfd pfd = {fd, POLLIN, 0};
        uint64_t left = s_left(deadline);
        int rc = left ? poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) : 0;
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0 && !s_left(deadline)) {
            *timed_out = true;
            break;
        }
        if (rc <= 0)
            continue;
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    return len;
}

/* Waits for the child until the deadline, then kills its process group. Returns its status, or
 * -1 when it had to be killed. */
static int s_reap(pid_t pid, uint64_t deadline)
{
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return -1;
        if (!s_left(deadline))
            break;
        usleep(10000);
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return -1;
}

void gpuprobe_run(Fleetburn__Inventory *inv, const char *worker, unsigned timeout_ms)
{
    if (!inv->n_gpus || !worker || !*worker)
        return;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        log_warn("inventory: GPU probe not run: pipe: %s", strerror(errno));
        return;
    }
    uint64_t started = fb_mono_ms(), deadline = started + timeout_ms;
    pid_t pid = fork();
    if (pid < 0) {
        log_warn("inventory: GPU probe not run: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) { /* only async-signal-safe calls until exec */
        setpgid(0, 0);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        dup2(fds[1], STDOUT_FILENO);
        execl(worker, worker, "--probe", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char *buf = xmalloc(GPUPROBE_MAX_OUTPUT);
    bool timed_out;
    size_t len = s_read_all(fds[0], buf, GPUPROBE_MAX_OUTPUT, deadline, &timed_out);
    close(fds[0]);
    int status = s_reap(pid, timed_out ? fb_mono_ms() : deadline);
    if (timed_out || status < 0) {
        log_warn("inventory: GPU probe (%s --probe) did not finish in %u ms and was killed; GPU "
                 "models, memory and library versions are not in the inventory",
                 worker, timeout_ms);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        log_warn("inventory: GPU probe (%s --probe) failed (%s %d); GPU models, memory and "
                 "library versions are not in the inventory",
                 worker, WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    } else {
        size_t n = gpuprobe_merge(inv, buf, len);
        log_info("inventory: GPU probe described %zu of %zu GPUs in %llu ms", n, inv->n_gpus,
                 (unsigned long long)(fb_mono_ms() - started));
    }
    free(buf);
}
