/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-agent: the per-node daemon. Parses its command line, then runs the agent (agent.c)
 * on a libuv loop until SIGINT/SIGTERM. Exit status: 0 on a signal, 2 for usage errors or a
 * coordinator that refused this agent, 1 when it could not start. */
#include "agent.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: fleetburn-agent --coordinator tcp://HOST:PORT [options]\n"
            "  --coordinator EP         coordinator endpoint (required)\n"
            "  --name NAME              node name (default: the host name)\n"
            "  --spool DIR              results awaiting acknowledgement\n"
            "                           (default /var/lib/fleetburn/spool/NAME as root,\n"
            "                            else ~/.local/state/fleetburn/spool/NAME)\n"
            "  --address ADDR           where peers reach this node for multi-node workloads\n"
            "                           (default: the local address of the route to the\n"
            "                            coordinator)\n"
            "  --worker PATH            fleetburn-worker to run tasks with\n"
            "                           (default: next to this program)\n"
            "  --allow-fault-injection  honour test-only inject_* parameters\n"
            "  --inject [WORKLOAD.]KEY=VALUE  test-only: add a parameter to tasks\n"
            "  --verbose                debug logging\n");
}

static void s_on_signal(uv_signal_t *h, int signum)
{
    log_info("signal %d: stopping", signum);
    uv_stop(h->loop);
}

static char *s_default_spool(const char *name)
{
    if (geteuid() == 0)
        return xasprintf("/var/lib/fleetburn/spool/%s", name);
    const char *home = getenv("HOME");
    return xasprintf("%s/.local/state/fleetburn/spool/%s", home ? home : "/tmp", name);
}

/* Host name or IP literal: [A-Za-z0-9.:_%-], what the wire accepts in Hello.address. */
static bool s_valid_address(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 255 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789.:_%-") == n;
}

static char *s_default_name(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char *dot = strchr(host, '.');
    if (dot)
        *dot = '\0';
    return xstrdup(host[0] ? host : "localhost");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"coordinator", required_argument, 0, 'c'}, {"name", required_argument, 0, 'n'},
        {"spool", required_argument, 0, 's'},       {"worker", required_argument, 0, 'w'},
        {"allow-fault-injection", no_argument, 0, 'F'}, {"verbose", no_argument, 0, 'v'},
        {"inject", required_argument, 0, 'i'},      {"address", required_argument, 0, 'a'},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    /* A worker that exits while its exchange reply is being written must not kill the agent. */
    signal(SIGPIPE, SIG_IGN);
    agent_options_t opts = {0};
    char *name = NULL, *spool = NULL, *worker = NULL;
    bool verbose = false;
    int status = 0;
    const char **inject = xcalloc((size_t)argc, sizeof(char *));
    size_t n_inject = 0;
    int c;
    while ((c = getopt_long(argc, argv, "c:n:s:w:Fvhi:a:", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': opts.coordinator = optarg; break;
        case 'n': free(name); name = xstrdup(optarg); break;
        case 's': free(spool); spool = xstrdup(optarg); break;
        case 'w': free(worker); worker = xstrdup(optarg); break;
        case 'F': opts.allow_fault_injection = true; break;
        case 'a':
            if (!s_valid_address(optarg)) {
                fprintf(stderr, "fleetburn-agent: --address '%s' is not a host name or IP "
                                "address\n", optarg);
                status = 2;
                goto out;
            }
            opts.address = optarg;
            break;
        case 'i':
            if (!strchr(optarg, '=')) {
                fprintf(stderr, "fleetburn-agent: --inject: expected [WORKLOAD.]KEY=VALUE, got '%s'\n",
                        optarg);
                status = 2;
                goto out;
            }
            inject[n_inject++] = optarg;
            break;
        case 'v': verbose = true; break;
        case 'h': s_usage(stdout); status = 0; goto out;
        default: s_usage(stderr); status = 2; goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fleetburn-agent: unexpected argument '%s'\n", argv[optind]);
        s_usage(stderr);
        status = 2;
        goto out;
    }
    if (!opts.coordinator) {
        fprintf(stderr, "fleetburn-agent: --coordinator is required\n");
        s_usage(stderr);
        status = 2;
        goto out;
    }
    if (n_inject && !opts.allow_fault_injection) {
        fprintf(stderr, "fleetburn-agent: --inject is test-only and needs --allow-fault-injection\n");
        status = 2;
        goto out;
    }
    opts.inject = inject;
    opts.n_inject = n_inject;
    if (!name)
        name = s_default_name();
    if (!wire_valid_name(name)) {
        fprintf(stderr,
                "fleetburn-agent: --name '%s' is not a valid node name: use letters, digits, "
                "'.', '_' and '-', at most %d characters\n",
                name, FB_WIRE_MAX_NAME);
        status = 2;
        goto out;
    }
    if (!spool)
        spool = s_default_spool(name);
    if (!worker) {
        const char *env = getenv("FLEETBURN_WORKER");
        char *dir = fb_exe_dir();
        worker = env ? xstrdup(env) : xasprintf("%s/fleetburn-worker", dir ? dir : ".");
        free(dir);
    }
    char component[160];
    snprintf(component, sizeof component, "agent %s", name);
    fb_log_init(component, verbose ? FB_LOG_DEBUG : FB_LOG_INFO);
    int rc = fb_mkdir_p(spool, 0700);
    if (rc) {
        log_error("cannot create spool directory %s: %s", spool, strerror(-rc));
        status = 1;
        goto out;
    }
    if (access(worker, X_OK) != 0)
        log_warn("worker %s is not executable; every task will end in error", worker);

    opts.name = name;
    opts.spool_dir = spool;
    opts.worker_path = worker;
    const char *root = getenv("FLEETBURN_SYSFS_ROOT");
    opts.sysfs_root = root ? root : "";

    uv_loop_t *loop = uv_default_loop();
    char err[512];
    agent_t *agent = agent_new(loop, &opts, err, sizeof err);
    if (!agent) {
        log_error("%s", err);
        uv_loop_close(loop);
        status = 1;
        goto out;
    }
    uv_signal_t sigint, sigterm;
    uv_signal_init(loop, &sigint);
    uv_signal_init(loop, &sigterm);
    uv_signal_start(&sigint, s_on_signal, SIGINT);
    uv_signal_start(&sigterm, s_on_signal, SIGTERM);
    log_info("fleetburn-agent %s connecting to %s", FB_VERSION, opts.coordinator);
    uv_run(loop, UV_RUN_DEFAULT);

    status = agent_fatal(agent);
    uv_close((uv_handle_t *)&sigint, NULL);
    uv_close((uv_handle_t *)&sigterm, NULL);
    agent_destroy(&agent);
    uv_loop_close(loop);
out:
    free(name);
    free(spool);
    free(worker);
    free(inject);
    return status;
}
