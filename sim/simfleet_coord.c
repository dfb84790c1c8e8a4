/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simfleet's coordinator: the real `fleetburn serve` (next to this program) started as
 * its own process on a free loopback port, so that what is measured is the coordinator a fleet
 * would talk to; with --curve its key directory, one agent key for every simulated node and an
 * operator key, made in the work directory; and its resident memory and CPU time read from
 * /proc (of the spawned one, or of an external one named by --coordinator-pid). */
#include "simfleet.h"

#include "common/hostlist.h"
#include "common/keys.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

bool simfleet_port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static void s_on_coord_exit(uv_process_t *p, int64_t status, int term_signal)
{
    fleet_t *f = p->data;
    f->coord_running = false;
    uv_close((uv_handle_t *)p, NULL);
    if (f->phase != S_STOPPING) {
        fprintf(stderr,
                "fleetburn-simfleet: the coordinator exited (status %lld, signal %d); "
                "see %s\n",
                (long long)status, term_signal, f->log_path);
        simfleet_stop(f, EXIT_INFRA);
    }
}

/* --curve: the key directory of a keyed coordinator in the work directory, one agent key shared
 * by every simulated node (a nodes: line, as an image-baked key would be), and an operator key
 * for the submission. Secret keys of the agents and the operator stay outside keys/. */
static const char *const s_key_files[] = {"keys/coordinator",
                                          "keys/coordinator.pub",
                                          "keys/agents/sim.pub",
                                          "keys/operators/simfleet.pub",
                                          "sim-agent",
                                          "operator",
                                          "keys/agents",
                                          "keys/operators",
                                          "keys"};

char *simfleet_work_path(const fleet_t *f, const char *name)
{
    return xasprintf("%s/%s", f->workdir, name);
}

static int s_make_key(const fleet_t *f, const char *name, char *err, size_t errlen)
{
    fb_key_t key;
    char *path = simfleet_work_path(f, name);
    int rc = fb_key_generate(&key);
    if (rc == 0)
        rc = fb_key_write(path, &key, err, errlen);
    memset(&key, 0, sizeof key);
    free(path);
    return rc;
}

/* Moves WORK/from.pub to WORK/to (a public key into the coordinator's directory) and, for an
 * agent key, adds the nodes: line. */
static int s_place_public(const fleet_t *f, const char *from, const char *to, const char *nodes)
{
    char *src = xasprintf("%s/%s.pub", f->workdir, from), *dst = simfleet_work_path(f, to);
    int rc = rename(src, dst) == 0 ? 0 : -errno;
    if (rc == 0 && nodes) {
        FILE *out = fopen(dst, "a");
        rc = out && fprintf(out, "nodes: %s\n", nodes) > 0 && fclose(out) == 0 ? 0 : -EIO;
    }
    free(src);
    free(dst);
    return rc;
}

int simfleet_make_keys(fleet_t *f)
{
    char err[512] = "";
    char *dirs[] = {simfleet_work_path(f, "keys"), simfleet_work_path(f, "keys/agents"),
                    simfleet_work_path(f, "keys/operators")};
    int rc = 0;
    for (size_t i = 0; i < 3; i++) {
        if (rc == 0 && mkdir(dirs[i], 0700) != 0)
            rc = -errno;
        free(dirs[i]);
    }
    char *nodes = fb_hostlist_compress((const char *const *)f->names, f->cli->fleet);
    if (rc == 0)
        rc = s_make_key(f, "keys/coordinator", err, sizeof err);
    if (rc == 0)
        rc = s_make_key(f, "sim-agent", err, sizeof err);
    if (rc == 0)
        rc = s_make_key(f, "operator", err, sizeof err);
    if (rc == 0)
        rc = s_place_public(f, "sim-agent", "keys/agents/sim.pub", nodes);
    if (rc == 0)
        rc = s_place_public(f, "operator", "keys/operators/simfleet.pub", NULL);
    free(nodes);
    if (rc)
        fprintf(stderr, "fleetburn-simfleet: cannot make keys: %s\n", err[0] ? err : strerror(-rc));
    return rc;
}

void simfleet_remove_keys(const fleet_t *f)
{
    for (size_t i = 0; i < sizeof s_key_files / sizeof s_key_files[0]; i++) {
        char *path = simfleet_work_path(f, s_key_files[i]);
        if (unlink(path) != 0 && errno == EISDIR)
            rmdir(path);
        else
            rmdir(path);
        free(path);
    }
}

int simfleet_spawn_coordinator(fleet_t *f)
{
    char *dir = fb_exe_dir();
    char *path = xasprintf("%s/fleetburn", dir ? dir : ".");
    free(dir);
    f->port = s_free_port();
    snprintf(f->endpoint, sizeof f->endpoint, "tcp://127.0.0.1:%d", f->port);
    char hb[16], lv[16];
    snprintf(hb, sizeof hb, "%u", f->cli->heartbeat_ms);
    snprintf(lv, sizeof lv, "%u", f->cli->liveness);
    char *args[16];
    size_t n = 0;
    args[n++] = path;
    args[n++] = "serve";
    args[n++] = "--bind";
    args[n++] = f->endpoint;
    args[n++] = "--db";
    args[n++] = f->db;
    /* Every simulated agent connects from loopback. */
    args[n++] = "--max-connections-per-address";
    args[n++] = "0";
    if (f->cli->heartbeat_ms) {
        args[n++] = "--heartbeat-ms";
        args[n++] = hb;
    }
    if (f->cli->liveness) {
        args[n++] = "--liveness";
        args[n++] = lv;
    }
    if (f->cli->verbose)
        args[n++] = "--verbose";
    char *keys_dir = f->cli->curve ? xasprintf("%s/keys", f->workdir) : NULL;
    if (keys_dir) {
        args[n++] = "--keys";
        args[n++] = keys_dir;
    }
    args[n] = NULL;
    int log_fd = open(f->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    uv_stdio_container_t stdio[3] = {
        {UV_IGNORE, {0}}, {UV_INHERIT_FD, {.fd = log_fd}}, {UV_INHERIT_FD, {.fd = log_fd}}};
    uv_process_options_t po = {0};
    po.file = path;
    po.args = args;
    po.exit_cb = s_on_coord_exit;
    po.stdio = stdio;
    po.stdio_count = 3;
    f->coord.data = f;
    int rc = log_fd < 0 ? -errno : uv_spawn(f->loop, &f->coord, &po);
    if (log_fd >= 0)
        close(log_fd);
    if (rc)
        fprintf(stderr, "fleetburn-simfleet: cannot start %s: %s\n", path,
                log_fd < 0 ? strerror(-rc) : uv_strerror(rc));
    else
        f->coord_running = true;
    free(path);
    free(keys_dir);
    return rc;
}

int simfleet_coord_pid(const fleet_t *f)
{
    return f->coord_running ? f->coord.pid : f->coord_pid;
}

/* CPU time (user + system) the coordinator has used, seconds; on a shared machine a steadier
 * measure of its cost than elapsed time. */
double simfleet_coord_cpu_s(const fleet_t *f)
{
    int pid = simfleet_coord_pid(f);
    if (pid <= 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    char *text = fb_read_file(path, NULL);
    const char *p = text ? strrchr(text, ')') : NULL;
    unsigned long utime = 0, stime = 0;
    /* After "pid (comm)": state, then fields 4..13, then utime and stime (fields 14, 15). */
    if (p)
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime);
    free(text);
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* Resident and peak resident memory of the coordinator, MiB, from /proc. */
void simfleet_read_coord_memory(fleet_t *f)
{
    int pid = simfleet_coord_pid(f);
    if (pid <= 0)
        return;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *in = fopen(path, "r");
    if (!in)
        return;
    char line[256];
    unsigned long kb;
    while (fgets(line, sizeof line, in)) {
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
            f->coord_rss_mb = (double)kb / 1024.0;
        else if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
            f->coord_peak_mb = (double)kb / 1024.0;
    }
    fclose(in);
}
