/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-agent: the per-node daemon. Parses its command line and its local, root-owned site
 * configuration (--config, default /etc/fleetburn/agent.conf; common/conffile.h), options
 * winning over the file, then runs the agent (agent.c) on a libuv loop until SIGINT/SIGTERM.
 * Site settings that choose programs (mpirun, mpirun_args, rsh_agent, mpirun_allow_run_as_root)
 * reach the workers only from here (fleetburn-worker --site), never from the network. Exit
 * status: 0 on a signal, 2 for usage or configuration errors or a coordinator that refused this
 * agent, 1 when it could not start. */
#include "agent.h"
#include "common/cliopt.h"
#include "common/conffile.h"
#include "common/endpoint.h"
#include "common/log.h"
#include "common/service.h"
#include "scheduler/inject.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: fleetburn-agent --coordinator HOST:PORT [options]\n"
            "  --config FILE            site configuration, key = value lines (default\n"
            "                           " FB_AGENT_CONFIG_DEFAULT ", read when it exists); the\n"
            "                           options below win over its settings\n"
            "  --coordinator EP         the coordinator: tcp://HOST:PORT, HOST:PORT or HOST\n"
            "                           (port 7755); required here or in the file\n"
            "  --name NAME              node name (default: the host name)\n"
            "  --spool DIR              results awaiting acknowledgement\n"
            "                           (default /var/lib/fleetburn/spool/NAME as root,\n"
            "                            else ~/.local/state/fleetburn/spool/NAME)\n"
            "  --address ADDR           where peers reach this node for multi-node workloads\n"
            "                           (default: the local address of the route to the\n"
            "                            coordinator)\n"
            "  --worker PATH            fleetburn-worker to run tasks with (default: next\n"
            "                           to this program, else in ../libexec/fleetburn)\n"
            "  --key FILE               this agent's CURVE secret key (\"\": none)\n"
            "  --server-key FILE        the coordinator's CURVE public key, pinned (\"\": none)\n"
            "  --allow-fault-injection  honour test-only inject_* parameters\n"
            "  --inject [WORKLOAD.]KEY=VALUE  test-only: add a parameter to tasks\n"
            "  --verbose                debug logging\n"
            "  --version                print the version and exit\n"
            "  --help                   print this and exit\n"
            "Under systemd (deploy/systemd/fleetburn-agent.service) it reports ready once\n"
            "registered, its state as the unit's status, and pings the watchdog.\n");
}

/* The unit's status line and readiness (common/service.h): ready once registered. */
typedef struct {
    agent_t *agent;
    const char *name, *coordinator;
} s_service_arg_t;

static bool s_service_state(void *arg, char *status, size_t len)
{
    const s_service_arg_t *a = arg;
    bool registered = agent_registered(a->agent);
    if (registered)
        snprintf(status, len, "registered with %s as %s; %zu task(s) running, %zu result(s) "
                              "awaiting acknowledgement",
                 a->coordinator, a->name, agent_running_count(a->agent), agent_unacked(a->agent));
    else
        snprintf(status, len, "connecting to %s as %s; %zu result(s) awaiting acknowledgement",
                 a->coordinator, a->name, agent_unacked(a->agent));
    return registered;
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

/* Keys of the site configuration (docs/security.md, "Site settings"). The first ones have a
 * command-line option of the same name, which wins over the file. */
static const char *const s_conf_keys[] = {
    "coordinator", "name",        "spool",     "address",
    "worker",      "key",         "server_key", "mpirun",
    "mpirun_args", "rsh_agent",   "mpirun_allow_run_as_root", NULL,
};

/* Site settings the agent hands to every worker (fleetburn-worker --site KEY=VALUE): which
 * programs a workload may run, and how. They never come from the coordinator. */
static const char *const s_worker_site_keys[] = {"mpirun", "mpirun_args", "rsh_agent",
                                                 "mpirun_allow_run_as_root", NULL};

/* Reads the site configuration: the file given with --config (which must exist), else the
 * default one when there is one. *conf stays NULL without a file. 0, or 2 (usage) with the
 * reason printed. */
static int s_load_config(const char *given, fb_conf_t **conf)
{
    const char *path = given ? given : FB_AGENT_CONFIG_DEFAULT;
    char *error = NULL;
    int rc = fb_conf_load(path, s_conf_keys, conf, &error);
    if (rc == -ENOENT && !given) {
        free(error);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "fleetburn-agent: %s\n", error);
        free(error);
        return 2;
    }
    bool b;
    if (fb_conf_get_bool(*conf, "mpirun_allow_run_as_root", false, &b, &error)) {
        fprintf(stderr, "fleetburn-agent: %s\n", error);
        free(error);
        fb_conf_destroy(conf);
        return 2;
    }
    return 0;
}

/* The command line's value, else the configuration's (borrowed), else NULL. */
static const char *s_setting(const char *option, const fb_conf_t *conf, const char *key)
{
    return option ? option : fb_conf_get(conf, key);
}

int main(int argc, char **argv)
{
    /* A worker that exits while its exchange reply is being written must not kill the agent. */
    signal(SIGPIPE, SIG_IGN);
    agent_options_t opts = {0};
    const char *opt_coordinator = NULL, *opt_name = NULL, *opt_spool = NULL, *opt_worker = NULL;
    const char *opt_address = NULL, *opt_key = NULL, *opt_server_key = NULL, *opt_config = NULL;
    char *name = NULL, *spool = NULL, *worker = NULL;
    fb_conf_t *conf = NULL;
    const char *site[8];
    char *site_owned[8] = {NULL};
    size_t n_site = 0;
    bool verbose = false;
    int status = 0;
    const char **inject = xcalloc((size_t)argc, sizeof(char *));
    size_t n_inject = 0;
    int c;
    char coordinator[FB_ENDPOINT_MAX];
    const fb_cliopt_t table[] = {
        {"coordinator", 'c', FB_CLIOPT_TEXT, &opt_coordinator, 0, 0},
        {"name", 'n', FB_CLIOPT_TEXT, &opt_name, 0, 0},
        {"spool", 's', FB_CLIOPT_TEXT, &opt_spool, 0, 0},
        {"worker", 'w', FB_CLIOPT_TEXT, &opt_worker, 0, 0},
        {"allow-fault-injection", 'F', FB_CLIOPT_SET, &opts.allow_fault_injection, 0, 0},
        {"verbose", 'v', FB_CLIOPT_SET, &verbose, 0, 0},
        {"inject", 'i', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"address", 'a', FB_CLIOPT_TEXT, &opt_address, 0, 0},
        {"config", 'C', FB_CLIOPT_TEXT, &opt_config, 0, 0},
        {"key", 'k', FB_CLIOPT_TEXT, &opt_key, 0, 0},
        {"server-key", 'K', FB_CLIOPT_TEXT, &opt_server_key, 0, 0},
        {"help", 'h', FB_CLIOPT_CALLER_FLAG, NULL, 0, 0},
        {"version", 'V', FB_CLIOPT_CALLER_FLAG, NULL, 0, 0},
        {0}};
    char *error = NULL;
    opterr = 0; /* unknown options are named below, without the whole usage */
    while ((c = fb_cliopt_next(argc, argv, ":c:n:s:w:Fvhi:a:", table, &error)) > 0) {
        switch (c) {
        case 'i': {
            char err[2048];
            if (fb_inject_check(optarg, NULL, err, sizeof err)) {
                fprintf(stderr, "fleetburn-agent: --inject: %s\n", err);
                status = 2;
                goto out;
            }
            inject[n_inject++] = optarg;
            break;
        }
        case 'h': s_usage(stdout); status = 0; goto out;
        case 'V':
            printf("fleetburn-agent %s (protocol %d)\n", FB_VERSION, FB_PROTOCOL_VERSION);
            status = 0;
            goto out;
        }
    }
    if (c < 0) { /* an unknown option or a missing value */
        fprintf(stderr, "fleetburn-agent: %s (fleetburn-agent --help lists the options)\n",
                error ? error : "bad option");
        free(error);
        status = 2;
        goto out;
    }
    if (optind < argc) {
        fprintf(stderr, "fleetburn-agent: unexpected argument '%s'\n", argv[optind]);
        s_usage(stderr);
        status = 2;
        goto out;
    }
    status = s_load_config(opt_config, &conf);
    if (status)
        goto out;
    opts.coordinator = s_setting(opt_coordinator, conf, "coordinator");
    char ep_err[300];
    if (opts.coordinator && fb_endpoint_normalize(opts.coordinator, coordinator,
                                                  sizeof coordinator, ep_err, sizeof ep_err)) {
        fprintf(stderr, "fleetburn-agent: %s: %s\n",
                opt_coordinator ? "--coordinator" : "coordinator", ep_err);
        status = 2;
        goto out;
    }
    if (opts.coordinator)
        opts.coordinator = coordinator;
    opts.address = s_setting(opt_address, conf, "address");
    opts.key_file = s_setting(opt_key, conf, "key");
    opts.server_key_file = s_setting(opt_server_key, conf, "server_key");
    /* An empty --key / --server-key: none, whatever the file says (run --local's agents). */
    if (opts.key_file && !*opts.key_file)
        opts.key_file = NULL;
    if (opts.server_key_file && !*opts.server_key_file)
        opts.server_key_file = NULL;
    if (opts.address && !s_valid_address(opts.address)) {
        fprintf(stderr, "fleetburn-agent: %s '%s' is not a host name or IP address\n",
                opt_address ? "--address" : "address", opts.address);
        status = 2;
        goto out;
    }
    if (!opts.coordinator) {
        fprintf(stderr, "fleetburn-agent: --coordinator is required (or coordinator = ... in "
                        "%s)\n",
                opt_config ? opt_config : FB_AGENT_CONFIG_DEFAULT);
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
    for (size_t i = 0; s_worker_site_keys[i]; i++) {
        const char *v = fb_conf_get(conf, s_worker_site_keys[i]);
        if (v) {
            site_owned[n_site] = xasprintf("%s=%s", s_worker_site_keys[i], v);
            site[n_site] = site_owned[n_site];
            n_site++;
        }
    }
    opts.site = site;
    opts.n_site = n_site;
    name = xstrdup(s_setting(opt_name, conf, "name"));
    if (!name)
        name = s_default_name();
    if (!fb_wire_valid_name(name)) {
        fprintf(stderr,
                "fleetburn-agent: --name '%s' is not a valid node name: use letters, digits, "
                "'.', '_' and '-', at most %d characters\n",
                name, FB_WIRE_MAX_NAME);
        status = 2;
        goto out;
    }
    spool = xstrdup(s_setting(opt_spool, conf, "spool"));
    if (!spool)
        spool = s_default_spool(name);
    worker = xstrdup(s_setting(opt_worker, conf, "worker"));
    if (!worker) {
        const char *env = getenv("FLEETBURN_WORKER");
        worker = env ? xstrdup(env) : fb_program_path("fleetburn-worker");
    }
    char component[160];
    snprintf(component, sizeof component, "agent %s", name);
    fb_log_init(component, verbose ? FB_LOG_DEBUG : FB_LOG_INFO);
    if (conf)
        log_info("site configuration %s", opt_config ? opt_config : FB_AGENT_CONFIG_DEFAULT);
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
    s_service_arg_t service_arg = {agent, name, opts.coordinator};
    fb_service_t *service = fb_service_start(loop, s_service_state, &service_arg);
    uv_run(loop, UV_RUN_DEFAULT);
    fb_service_stop(&service);

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
    for (size_t i = 0; i < n_site; i++)
        free(site_owned[i]);
    fb_conf_destroy(&conf);
    return status;
}
