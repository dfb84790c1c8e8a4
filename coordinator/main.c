/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn: the coordinator and the command line.
 *
 *   fleetburn run CAMPAIGN.yaml [--local N | --coordinator EP] [--db PATH]
 *   fleetburn serve [--bind EP] [--db PATH] [--keys DIR | --insecure]
 *   fleetburn keygen PATH
 *   fleetburn report [CAMPAIGN_ID] [--format text|json] [--db PATH]
 *   fleetburn nodes [--db PATH]
 *
 * `run --local N` (the default, with N = 1) embeds a coordinator on an ephemeral loopback port
 * and starts N fleetburn-agent processes named local-0 … local-(N-1). Exit status of `run`:
 * 0 when every task passed (or was skipped), 1 when any did not, 2 for usage and campaign-file
 * errors, 3 when the campaign could not be run at all (database, agents, coordinator). */
#include "campaign_file.h"
#include "coord.h"
#include "report.h"
#include "conns.h"
#include "common/conffile.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/securemem.h"
#include "common/units.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define EXIT_PASS 0
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_INFRA 3
#define FB_CLIENT_CONFIG_DEFAULT "/etc/fleetburn/client.conf"
#define LOCAL_REGISTER_TIMEOUT_MS 30000
#define MAX_INJECT 64

static const char *s_default_db(void)
{
    const char *env = getenv("FLEETBURN_DB");
    return env && *env ? env : "fleetburn.db";
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: fleetburn COMMAND [options]\n"
            "\n"
            "  run CAMPAIGN.yaml [--local N | --coordinator EP] [--db PATH]\n"
            "      Run a campaign and wait for it. --local N (default 1) starts an embedded\n"
            "      coordinator and N local agents; --coordinator hands the campaign to a\n"
            "      running `fleetburn serve`.\n"
            "      --inject NODE:KEY=VALUE   test-only: pass a fault-injection parameter to one\n"
            "                                local agent (e.g. local-1:inject_bitflips=4)\n"
            "      --keep-logs               keep local agents' logs (printed path)\n"
            "      --agent-config FILE       the local agents' site configuration (their\n"
            "                                --config; default /etc/fleetburn/agent.conf)\n"
            "  serve [--bind EP] [--db PATH] [--keys DIR | --insecure]\n"
            "      Run the coordinator. --keys DIR: CURVE keys (DIR/coordinator, DIR/agents/\n"
            "      NODE.pub, DIR/operators/NAME.pub; re-read on SIGHUP), default bind\n"
            "      tcp://*:7755. Without keys it binds loopback only (tcp://127.0.0.1:7755);\n"
            "      --insecure allows another address without keys (anyone who reaches it\n"
            "      can register as any node and run campaigns).\n"
            "      Limits on peers (docs/security.md, \"Limits\"):\n"
            "      --max-connections N       connections at once (default: what the descriptor\n"
            "                                limit allows, at most 65536)\n"
            "      --max-connections-per-address N\n"
            "                                connections from one address (default 64; 0: none)\n"
            "      --forget-after DURATION   an agent away this long leaves the live registry\n"
            "                                (default 1h; the database keeps it)\n"
            "      --handshake-timeout DURATION\n"
            "                                a connection must finish its ZeroMQ handshake\n"
            "                                within this (default 5s)\n"
            "  keygen PATH\n"
            "      Write a CURVE key pair: PATH (secret, mode 0600) and PATH.pub; never\n"
            "      overwrites.\n"
            "  report [CAMPAIGN_ID] [--format text|json] [--db PATH]\n"
            "      Report a campaign (default: the latest).\n"
            "  nodes [--db PATH]\n"
            "      List agents, their state and inventory.\n"
            "\n"
            "Keys of a client (run --coordinator): --key FILE (own secret key, an operator's)\n"
            "        and --server-key FILE (the coordinator's public key, pinned). --config FILE\n"
            "        (default ~/.config/fleetburn/client.conf, else /etc/fleetburn/client.conf)\n"
            "        may set coordinator, key and server_key.\n"
            "Common: --db PATH (default ./fleetburn.db or $FLEETBURN_DB), --heartbeat-ms MS,\n"
            "        --liveness N (heartbeats missed before an agent is lost), --verbose.\n"
            "Exit status of run: 0 all passed, 1 a task did not pass, 2 usage or campaign\n"
            "error, 3 the campaign could not be run.\n");
}

typedef struct {
    const char *db;
    const char *bind;
    bool bind_given;
    const char *keys_dir;   /* serve --keys */
    bool insecure;          /* serve --insecure */
    const char *config;     /* client: --config FILE */
    fb_conf_t *conf;        /* client: the configuration read (run) */
    const char *key_file;   /* client: own secret key */
    const char *server_key; /* client: the coordinator's public key */
    const char *coordinator;
    const char *format;
    unsigned local;
    bool local_given;
    uint32_t heartbeat_ms, liveness;
    uint32_t max_connections, max_per_address; /* serve */
    uint64_t forget_after_ms;                  /* serve */
    uint64_t handshake_ms;                     /* serve */
    bool verbose, keep_logs;
    const char *agent_config; /* run --local: --config of the local agents */
    const char *inject[MAX_INJECT];
    size_t n_inject;
    const char *positional[4];
    size_t n_positional;
} cli_t;

static int s_parse_u32(const char *opt, const char *text, uint64_t max, uint32_t *out)
{
    uint64_t v;
    if (fb_parse_uint(text, max, &v) || v == 0) {
        fprintf(stderr, "fleetburn: %s: '%s' is not a number between 1 and %llu\n", opt, text,
                (unsigned long long)max);
        return -EINVAL;
    }
    *out = (uint32_t)v;
    return 0;
}

/* Long-only options (no short letter). */
enum {
    S_OPT_MAX_CONNECTIONS = 0x100,
    S_OPT_MAX_PER_ADDRESS,
    S_OPT_FORGET_AFTER,
    S_OPT_HANDSHAKE_TIMEOUT
};

static int s_parse_cli(int argc, char **argv, cli_t *cli)
{
    static const struct option longopts[] = {
        {"db", required_argument, 0, 'd'},          {"bind", required_argument, 0, 'b'},
        {"coordinator", required_argument, 0, 'c'}, {"local", required_argument, 0, 'l'},
        {"format", required_argument, 0, 'f'},      {"heartbeat-ms", required_argument, 0, 'H'},
        {"liveness", required_argument, 0, 'L'},    {"inject", required_argument, 0, 'i'},
        {"keep-logs", no_argument, 0, 'k'},         {"verbose", no_argument, 0, 'v'},
        {"agent-config", required_argument, 0, 'A'}, {"config", required_argument, 0, 'G'},
        {"keys", required_argument, 0, 'K'},        {"insecure", no_argument, 0, 'I'},
        {"key", required_argument, 0, 'y'},         {"server-key", required_argument, 0, 'Y'},
        {"max-connections", required_argument, 0, S_OPT_MAX_CONNECTIONS},
        {"max-connections-per-address", required_argument, 0, S_OPT_MAX_PER_ADDRESS},
        {"forget-after", required_argument, 0, S_OPT_FORGET_AFTER},
        {"handshake-timeout", required_argument, 0, S_OPT_HANDSHAKE_TIMEOUT},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    memset(cli, 0, sizeof *cli);
    cli->db = s_default_db();
    cli->format = "text";
    cli->local = 1;
    cli->max_per_address = CONNS_DEFAULT_PER_ADDRESS;
    optind = 2;
    int c;
    uint32_t v;
    while ((c = getopt_long(argc, argv, "d:b:c:l:f:H:L:i:kvh", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': cli->db = optarg; break;
        case 'b': cli->bind = optarg; cli->bind_given = true; break;
        case 'K': cli->keys_dir = optarg; break;
        case 'I': cli->insecure = true; break;
        case 'y': cli->key_file = optarg; break;
        case 'Y': cli->server_key = optarg; break;
        case 'c': cli->coordinator = optarg; break;
        case 'l':
            if (s_parse_u32("--local", optarg, 4096, &v))
                return -EINVAL;
            cli->local = v;
            cli->local_given = true;
            break;
        case 'f':
            if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
                fprintf(stderr, "fleetburn: --format: '%s' is not text or json\n", optarg);
                return -EINVAL;
            }
            cli->format = optarg;
            break;
        case 'H':
            if (s_parse_u32("--heartbeat-ms", optarg, 600000, &cli->heartbeat_ms))
                return -EINVAL;
            break;
        case 'L':
            if (s_parse_u32("--liveness", optarg, 100, &cli->liveness))
                return -EINVAL;
            break;
        case 'i':
            if (cli->n_inject == MAX_INJECT || !strchr(optarg, ':') || !strchr(optarg, '=')) {
                fprintf(stderr, "fleetburn: --inject: expected NODE:KEY=VALUE, got '%s'\n", optarg);
                return -EINVAL;
            }
            cli->inject[cli->n_inject++] = optarg;
            break;
        case 'k': cli->keep_logs = true; break;
        case 'A': cli->agent_config = optarg; break;
        case 'G': cli->config = optarg; break;
        case 'v': cli->verbose = true; break;
        case S_OPT_MAX_CONNECTIONS:
            if (s_parse_u32("--max-connections", optarg, 1u << 24, &cli->max_connections))
                return -EINVAL;
            break;
        case S_OPT_MAX_PER_ADDRESS: {
            uint64_t n;
            if (fb_parse_uint(optarg, 1u << 24, &n)) {
                fprintf(stderr, "fleetburn: --max-connections-per-address: '%s' is not a number "
                                "between 0 (no limit) and %u\n",
                        optarg, 1u << 24);
                return -EINVAL;
            }
            cli->max_per_address = (uint32_t)n;
            break;
        }
        case S_OPT_FORGET_AFTER:
            if (fb_parse_duration_ms(optarg, &cli->forget_after_ms) || cli->forget_after_ms == 0) {
                fprintf(stderr, "fleetburn: --forget-after: '%s' is not a duration above zero "
                                "(e.g. 30m, 1h, 2d)\n",
                        optarg);
                return -EINVAL;
            }
            break;
        case S_OPT_HANDSHAKE_TIMEOUT:
            if (fb_parse_duration_ms(optarg, &cli->handshake_ms) || cli->handshake_ms < 100 ||
                cli->handshake_ms > 600000) {
                fprintf(stderr, "fleetburn: --handshake-timeout: '%s' is not a duration between "
                                "100ms and 10m\n",
                        optarg);
                return -EINVAL;
            }
            break;
        case 'h': s_usage(stdout); exit(0);
        default: return -EINVAL;
        }
    }
    for (; optind < argc; optind++) {
        if (cli->n_positional == 4) {
            fprintf(stderr, "fleetburn: unexpected argument '%s'\n", argv[optind]);
            return -EINVAL;
        }
        cli->positional[cli->n_positional++] = argv[optind];
    }
    if (cli->coordinator && cli->agent_config) {
        fprintf(stderr, "fleetburn: --agent-config applies to the agents of run --local; agents "
                        "of a coordinator read their own (fleetburn-agent --config)\n");
        return -EINVAL;
    }
    if (cli->coordinator && cli->local_given) {
        fprintf(stderr, "fleetburn: --coordinator and --local exclude each other\n");
        return -EINVAL;
    }
    return 0;
}

/* --- progress display ----------------------------------------------------------------------- */

typedef struct {
    bool tty;
    uint64_t last_print;
    unsigned last_stage, last_done;
    bool printed;
} progress_view_t;

static void s_show_progress(progress_view_t *view, const char *stage, unsigned idx, unsigned count,
                            unsigned total, unsigned done, unsigned failed, uint64_t elapsed_ms,
                            bool finished)
{
    uint64_t now = fb_mono_ms();
    bool changed = !view->printed || idx != view->last_stage || done != view->last_done;
    if (!finished && !changed && now - view->last_print < (view->tty ? 1000u : 10000u))
        return;
    char elapsed[32];
    fb_format_duration(elapsed_ms, elapsed, sizeof elapsed);
    if (finished) {
        if (view->tty)
            fprintf(stderr, "\r\033[K");
        fprintf(stderr, "campaign finished after %s\n", elapsed);
    } else {
        fprintf(stderr, "%s[stage %u/%u %s] %u/%u nodes done, %u failed, %s elapsed%s",
                view->tty ? "\r\033[K" : "", idx + 1 > count ? count : idx + 1, count, stage, done,
                total, failed, elapsed, view->tty ? "" : "\n");
    }
    fflush(stderr);
    view->last_print = now;
    view->last_stage = idx;
    view->last_done = done;
    view->printed = true;
}

/* --- run --local ---------------------------------------------------------------------------- */

typedef struct {
    uv_loop_t *loop;
    coord_t *coord;
    cli_t *cli;
    fb_campaign_t *campaign;
    char *yaml;
    uv_process_t *agents;
    bool *agent_running;
    unsigned n_agents, n_exited;
    char workdir[256];
    uv_timer_t wait_timer;
    uint64_t wait_started;
    bool campaign_started, campaign_done, interrupted;
    fb_verdict_t verdict;
    char *campaign_id;
    int exit_code;
    progress_view_t view;
    uv_signal_t sigint, sigterm;
} local_run_t;

static void s_on_agent_exit(uv_process_t *p, int64_t status, int term_signal)
{
    local_run_t *run = p->data;
    unsigned i = (unsigned)(p - run->agents);
    run->agent_running[i] = false;
    run->n_exited++;
    if (!run->campaign_done && !run->interrupted)
        log_warn("local agent local-%u exited (status %lld, signal %d) during the campaign", i,
                 (long long)status, term_signal);
    uv_close((uv_handle_t *)p, NULL);
}

static int s_spawn_agent(local_run_t *run, unsigned i, const char *agent_path, const char *endpoint)
{
    char name[32], spool[300], log_path[300];
    snprintf(name, sizeof name, "local-%u", i);
    snprintf(spool, sizeof spool, "%s/spool-%s", run->workdir, name);
    snprintf(log_path, sizeof log_path, "%s/%s.log", run->workdir, name);
    char *args[24 + MAX_INJECT * 2];
    size_t n = 0;
    args[n++] = (char *)agent_path;
    args[n++] = "--coordinator";
    args[n++] = (char *)endpoint;
    args[n++] = "--name";
    args[n++] = name;
    args[n++] = "--spool";
    args[n++] = spool;
    bool allow = false;
    for (size_t k = 0; k < run->cli->n_inject; k++) {
        const char *spec = run->cli->inject[k];
        size_t len = (size_t)(strchr(spec, ':') - spec);
        if (len == strlen(name) && !strncmp(spec, name, len)) {
            args[n++] = "--inject";
            args[n++] = (char *)(spec + len + 1);
            allow = true;
        }
    }
    if (allow)
        args[n++] = "--allow-fault-injection";
    if (run->cli->agent_config) {
        args[n++] = "--config";
        args[n++] = (char *)run->cli->agent_config;
    }
    /* The local agents read the site configuration like any agent (its mpirun settings apply),
     * but talk to this loopback coordinator, which has no keys: none, whatever the file says. */
    args[n++] = "--key";
    args[n++] = "";
    args[n++] = "--server-key";
    args[n++] = "";
    if (run->cli->verbose)
        args[n++] = "--verbose";
    args[n] = NULL;
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        log_error("cannot create %s: %s", log_path, strerror(errno));
        return -errno;
    }
    uv_stdio_container_t stdio[3] = {{UV_IGNORE, {0}}, {UV_INHERIT_FD, {.fd = fd}},
                                     {UV_INHERIT_FD, {.fd = fd}}};
    uv_process_options_t opts = {0};
    opts.file = agent_path;
    opts.args = args;
    opts.exit_cb = s_on_agent_exit;
    opts.stdio = stdio;
    opts.stdio_count = 3;
    run->agents[i].data = run;
    int rc = uv_spawn(run->loop, &run->agents[i], &opts);
    close(fd);
    if (rc) {
        log_error("cannot start %s: %s", agent_path, uv_strerror(rc));
        uv_close((uv_handle_t *)&run->agents[i], NULL);
        return rc;
    }
    run->agent_running[i] = true;
    return 0;
}

static void s_stop_agents(local_run_t *run)
{
    for (unsigned i = 0; i < run->n_agents; i++)
        if (run->agent_running[i])
            uv_process_kill(&run->agents[i], SIGTERM);
}

static void s_local_progress(const coord_progress_t *p, void *arg)
{
    local_run_t *run = arg;
    s_show_progress(&run->view, p->stage, p->stage_index, p->stage_count, p->tasks_total,
                    p->tasks_done, p->tasks_failed, p->elapsed_ms, p->finished);
    if (p->finished) {
        run->campaign_done = true;
        run->verdict = p->verdict;
        s_stop_agents(run);
        uv_close((uv_handle_t *)&run->sigint, NULL);
        uv_close((uv_handle_t *)&run->sigterm, NULL);
    }
}

static void s_on_wait(uv_timer_t *h)
{
    local_run_t *run = h->data;
    size_t alive = coord_alive_count(run->coord);
    if (alive >= run->n_agents) {
        uv_timer_stop(h);
        uv_close((uv_handle_t *)h, NULL);
        char *id = NULL;
        int rc = coord_start_campaign(run->coord, &run->campaign, run->yaml, s_local_progress, run,
                                      &id);
        if (rc) {
            log_error("cannot start the campaign: %s", strerror(-rc));
            run->exit_code = EXIT_INFRA;
            run->campaign_done = true;
            s_stop_agents(run);
            return;
        }
        run->campaign_id = id;
        run->campaign_started = true;
        fprintf(stderr, "campaign %s started on %u local agent(s)\n", id, run->n_agents);
        return;
    }
    if (fb_mono_ms() - run->wait_started > LOCAL_REGISTER_TIMEOUT_MS) {
        fprintf(stderr, "fleetburn: only %zu of %u local agents registered within %d s; see the "
                        "agent logs in %s\n",
                alive, run->n_agents, LOCAL_REGISTER_TIMEOUT_MS / 1000, run->workdir);
        run->cli->keep_logs = true;
        run->exit_code = EXIT_INFRA;
        run->campaign_done = true;
        uv_timer_stop(h);
        uv_close((uv_handle_t *)h, NULL);
        uv_close((uv_handle_t *)&run->sigint, NULL);
        uv_close((uv_handle_t *)&run->sigterm, NULL);
        s_stop_agents(run);
    }
}

static void s_on_interrupt(uv_signal_t *h, int signum)
{
    local_run_t *run = h->data;
    fprintf(stderr, "\nfleetburn: interrupted (signal %d); stopping local agents\n", signum);
    run->interrupted = true;
    run->exit_code = EXIT_INFRA;
    run->campaign_done = true;
    s_stop_agents(run);
    uv_close((uv_handle_t *)&run->sigint, NULL);
    uv_close((uv_handle_t *)&run->sigterm, NULL);
    if (!uv_is_closing((uv_handle_t *)&run->wait_timer))
        uv_close((uv_handle_t *)&run->wait_timer, NULL);
}

static void s_remove_tree(const char *dir)
{
    char *cmd = xasprintf("rm -rf '%s'", dir);
    if (system(cmd) != 0)
        log_warn("could not remove %s", dir);
    free(cmd);
}

static void s_print_summary(store_t *store, const char *campaign_id)
{
    if (report_write_text(store, campaign_id, stdout))
        fprintf(stderr, "fleetburn: cannot write the summary for %s\n", campaign_id);
}

static int s_run_local(cli_t *cli, fb_campaign_t **campaign, char *yaml)
{
    uv_loop_t *loop = uv_default_loop();
    coord_options_t copts = {.bind = "tcp://127.0.0.1:*",
                             .db_path = cli->db,
                             .heartbeat_ms = cli->heartbeat_ms,
                             .liveness = cli->liveness};
    char err[512];
    coord_t *coord = coord_new(loop, &copts, err, sizeof err);
    if (!coord) {
        fprintf(stderr, "fleetburn: %s\n", err);
        return EXIT_INFRA;
    }
    local_run_t run = {0};
    run.loop = loop;
    run.coord = coord;
    run.cli = cli;
    run.campaign = *campaign;
    *campaign = NULL;
    run.yaml = yaml;
    run.n_agents = cli->local;
    run.verdict = FB_VERDICT_ERROR;
    run.view.tty = isatty(STDERR_FILENO);
    const char *tmp = getenv("TMPDIR");
    snprintf(run.workdir, sizeof run.workdir, "%s/fleetburn-local-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(run.workdir)) {
        fprintf(stderr, "fleetburn: cannot create a work directory: %s\n", strerror(errno));
        coord_destroy(&coord);
        fb_campaign_destroy(&run.campaign);
        return EXIT_INFRA;
    }
    char *dir = fb_exe_dir();
    char *agent_path = xasprintf("%s/fleetburn-agent", dir ? dir : ".");
    free(dir);
    run.agents = xcalloc(run.n_agents, sizeof(uv_process_t));
    run.agent_running = xcalloc(run.n_agents, sizeof(bool));
    int rc = 0;
    for (unsigned i = 0; i < run.n_agents && rc == 0; i++)
        rc = s_spawn_agent(&run, i, agent_path, coord_endpoint(coord));
    uv_signal_init(loop, &run.sigint);
    uv_signal_init(loop, &run.sigterm);
    run.sigint.data = run.sigterm.data = &run;
    uv_timer_init(loop, &run.wait_timer);
    run.wait_timer.data = &run;
    if (rc) {
        run.exit_code = EXIT_INFRA;
        run.campaign_done = true;
        uv_close((uv_handle_t *)&run.sigint, NULL);
        uv_close((uv_handle_t *)&run.sigterm, NULL);
        uv_close((uv_handle_t *)&run.wait_timer, NULL);
        s_stop_agents(&run);
    } else {
        uv_signal_start(&run.sigint, s_on_interrupt, SIGINT);
        uv_signal_start(&run.sigterm, s_on_interrupt, SIGTERM);
        run.wait_started = fb_mono_ms();
        uv_timer_start(&run.wait_timer, s_on_wait, 50, 50);
        fprintf(stderr, "starting %u local agent(s) (logs in %s)\n", run.n_agents, run.workdir);
    }
    /* The loop runs until the campaign ended and every agent exited; the coordinator's own
     * handles keep it alive, so stop it from a check once that is true. */
    while (!(run.campaign_done && run.n_exited == run.n_agents)) {
        if (!run.campaign_done && !run.campaign_started && run.n_exited == run.n_agents &&
            run.n_agents > 0 && rc == 0) {
            fprintf(stderr, "fleetburn: every local agent exited before the campaign started; "
                            "see %s\n", run.workdir);
            cli->keep_logs = true;
            run.exit_code = EXIT_INFRA;
            break;
        }
        uv_run(loop, UV_RUN_ONCE);
    }
    if (run.campaign_started && !run.interrupted) {
        s_print_summary(coord_store(coord), run.campaign_id);
        run.exit_code = fb_verdict_ok(run.verdict) ? EXIT_PASS : EXIT_FAILED;
    }
    if (!uv_is_closing((uv_handle_t *)&run.wait_timer))
        uv_close((uv_handle_t *)&run.wait_timer, NULL);
    if (!uv_is_closing((uv_handle_t *)&run.sigint))
        uv_close((uv_handle_t *)&run.sigint, NULL);
    if (!uv_is_closing((uv_handle_t *)&run.sigterm))
        uv_close((uv_handle_t *)&run.sigterm, NULL);
    coord_destroy(&coord);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    if (cli->keep_logs || run.exit_code == EXIT_INFRA)
        fprintf(stderr, "local agent logs kept in %s\n", run.workdir);
    else
        s_remove_tree(run.workdir);
    fb_campaign_destroy(&run.campaign);
    free(run.agents);
    free(run.agent_running);
    free(run.campaign_id);
    free(agent_path);
    return run.exit_code;
}

/* --- run --coordinator ---------------------------------------------------------------------- */

typedef struct {
    int exit_code;
    bool done;
    progress_view_t view;
    uint64_t last_heard;
    const char *coordinator;
    bool have_keys;
} remote_run_t;

#define S_HANDSHAKE_EVENTS                                                                         \
    (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |                  \
     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

/* A refused handshake does not get better by retrying: say why and stop. */
static void s_on_handshake(unsigned event, uint32_t value, const char *endpoint, void *arg)
{
    (void)endpoint;
    remote_run_t *run = arg;
    const char *why = fb_key_handshake_failure(event, value, run->have_keys);
    if (!why || run->done)
        return;
    fprintf(stderr, "fleetburn: %s refused the connection: %s\n", run->coordinator, why);
    run->exit_code = EXIT_INFRA;
    run->done = true;
}

static void s_on_remote(zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                        void *arg)
{
    (void)zs;
    remote_run_t *run = arg;
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = wire_decode(frames[n - 1], lens[n - 1], &env, err, sizeof err);
    if (rc || env->body_case != FLEETBURN__ENVELOPE__BODY_PROGRESS) {
        fprintf(stderr, "fleetburn: unexpected reply from the coordinator: %s\n",
                rc ? err : "not a progress message");
        if (rc == -EPROTONOSUPPORT) {
            run->exit_code = EXIT_INFRA;
            run->done = true;
        }
        wire_free(&env);
        return;
    }
    const Fleetburn__Progress *p = env->progress;
    run->last_heard = fb_mono_ms();
    if (p->error[0]) {
        fprintf(stderr, "fleetburn: %s\n", p->error);
        /* A busy coordinator or a key that may not submit: the campaign could not run (3);
         * anything else is about the campaign itself (2). */
        run->exit_code = strncmp(p->error, "busy", 4) && strncmp(p->error, "not authorised", 14)
                             ? EXIT_USAGE
                             : EXIT_INFRA;
        run->done = true;
    } else {
        s_show_progress(&run->view, p->stage, p->stage_index, p->stage_count, p->tasks_total,
                        p->tasks_done, p->tasks_failed, p->elapsed_ms, p->finished);
        if (p->finished) {
            fputs(p->summary, stdout);
            run->exit_code = fb_verdict_ok((fb_verdict_t)p->verdict) ? EXIT_PASS : EXIT_FAILED;
            run->done = true;
        }
    }
    wire_free(&env);
}

/* Hands the campaign, with the content of every file it names (Submit.files), to a running
 * coordinator, which opens no path it is sent. */
static int s_run_remote(cli_t *cli, const campaign_file_t *cf)
{
    char *error = NULL;
    if (campaign_file_check_submission(cf, &error)) {
        fprintf(stderr, "fleetburn: %s\n", error);
        free(error);
        return EXIT_USAGE;
    }
    const char *source = cf->path;
    void *zctx = zmq_ctx_new();
    void *sock = zsock_new_socket(zctx, ZMQ_DEALER);
    char kerr[512];
    if (fb_key_apply_client(sock, cli->key_file, cli->server_key, kerr, sizeof kerr)) {
        fprintf(stderr, "fleetburn: %s\n", kerr);
        zmq_close(sock);
        zmq_ctx_term(zctx);
        return EXIT_USAGE;
    }
    if (!cli->key_file && !fb_endpoint_is_local(cli->coordinator))
        fprintf(stderr, "fleetburn: warning: talking to %s without keys: the campaign and its "
                        "results travel unencrypted, and a keyed coordinator refuses the "
                        "connection (give --key and --server-key)\n",
                cli->coordinator);
    if (zmq_connect(sock, cli->coordinator) != 0) {
        fprintf(stderr, "fleetburn: --coordinator '%s': %s\n", cli->coordinator,
                zmq_strerror(errno));
        zmq_close(sock);
        zmq_ctx_term(zctx);
        return EXIT_USAGE;
    }
    uv_loop_t *loop = uv_default_loop();
    remote_run_t run = {0};
    run.view.tty = isatty(STDERR_FILENO);
    run.last_heard = fb_mono_ms();
    zsock_t *zs = zsock_new(loop, sock, s_on_remote, &run);
    run.coordinator = cli->coordinator;
    run.have_keys = cli->key_file != NULL;
    zsock_t *monitor = zsock_monitor_new(loop, zctx, sock, S_HANDSHAKE_EVENTS, s_on_handshake, &run);
    size_t len = 0;
    uint8_t *buf = campaign_file_encode_submit(cf, &len);
    const void *frames[] = {buf};
    int rc = zsock_send(zs, frames, &len, 1);
    free(buf);
    if (rc) {
        fprintf(stderr, "fleetburn: cannot submit to %s: %s\n", cli->coordinator, zmq_strerror(-rc));
        run.exit_code = EXIT_INFRA;
        run.done = true;
    }
    fprintf(stderr, "submitted %s to %s\n", source, cli->coordinator);
    while (!run.done) {
        uv_run(loop, UV_RUN_ONCE);
        if (fb_mono_ms() - run.last_heard > 30000 && !run.view.printed) {
            fprintf(stderr, "fleetburn: no answer from %s within 30 s\n", cli->coordinator);
            run.exit_code = EXIT_INFRA;
            break;
        }
    }
    zsock_close(&monitor);
    zsock_close(&zs);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    zmq_ctx_term(zctx);
    return run.exit_code;
}

/* The client's configuration (docs/security.md, "Client settings"): --config FILE, else
 * ~/.config/fleetburn/client.conf, else /etc/fleetburn/client.conf, when there is one. It
 * gives coordinator, key and server_key where the command line does not; a coordinator from it
 * sends `run` there unless --local is given. 0, or -EINVAL after printing why. */
static int s_load_client_config(cli_t *cli)
{
    static const char *const keys[] = {"coordinator", "key", "server_key", NULL};
    const char *home = getenv("HOME");
    char *user_path = home && *home ? xasprintf("%s/.config/fleetburn/client.conf", home) : NULL;
    const char *candidates[] = {cli->config, user_path, FB_CLIENT_CONFIG_DEFAULT};
    int rc = 0;
    for (size_t i = cli->config ? 0 : 1; i < 3 && !cli->conf; i++) {
        if (!candidates[i])
            continue;
        char *error = NULL;
        rc = fb_conf_load(candidates[i], keys, &cli->conf, &error);
        if (rc == -ENOENT && !cli->config) {
            free(error);
            rc = 0;
            continue;
        }
        if (rc)
            fprintf(stderr, "fleetburn: %s\n", error);
        free(error);
        break;
    }
    free(user_path);
    if (rc)
        return -EINVAL;
    if (!cli->local_given && !cli->coordinator)
        cli->coordinator = fb_conf_get(cli->conf, "coordinator");
    if (!cli->key_file)
        cli->key_file = fb_conf_get(cli->conf, "key");
    if (!cli->server_key)
        cli->server_key = fb_conf_get(cli->conf, "server_key");
    return 0;
}

static int s_cmd_run(cli_t *cli)
{
    if (cli->n_positional != 1) {
        fprintf(stderr, "fleetburn run: expected one campaign file\n");
        s_usage(stderr);
        return EXIT_USAGE;
    }
    if (s_load_client_config(cli))
        return EXIT_USAGE;
    const char *path = cli->positional[0];
    campaign_file_t *cf = NULL;
    char *error = NULL;
    /* The files it names (topology) are read here, relative to the campaign file, and go with
     * it: a coordinator never opens a path from a submission. */
    if (campaign_file_read(path, &cf, &error)) {
        fprintf(stderr, "fleetburn: %s\n", error);
        free(error);
        return EXIT_USAGE;
    }
    int rc;
    if (cli->coordinator)
        rc = s_run_remote(cli, cf);
    else
        rc = s_run_local(cli, &cf->campaign, cf->yaml);
    campaign_file_destroy(&cf);
    return rc;
}

/* --- serve, report, nodes ------------------------------------------------------------------- */

static void s_on_stop_signal(uv_signal_t *h, int signum)
{
    log_info("signal %d: stopping", signum);
    uv_stop(h->loop);
}

static void s_on_reload_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    char err[512];
    if (coord_reload_keys(h->data, err, sizeof err))
        log_error("SIGHUP: keys not reloaded: %s", err);
}

static int s_cmd_keygen(cli_t *cli)
{
    if (cli->n_positional != 1) {
        fprintf(stderr, "fleetburn keygen: expected one path (the secret key file; PATH.pub gets "
                        "the public key)\n");
        return EXIT_USAGE;
    }
    const char *path = cli->positional[0];
    fb_key_t key;
    char err[512];
    int rc = fb_key_generate(&key);
    if (rc) {
        fprintf(stderr, "fleetburn keygen: cannot make a key: %s\n", strerror(-rc));
        return EXIT_INFRA;
    }
    rc = fb_key_write(path, &key, err, sizeof err);
    memset(&key, 0, sizeof key);
    if (rc) {
        fprintf(stderr, "fleetburn keygen: %s\n", err);
        return rc == -EEXIST ? EXIT_USAGE : EXIT_INFRA;
    }
    printf("%s (secret, mode 0600)\n%s.pub (public)\n", path, path);
    return 0;
}

static int s_cmd_serve(cli_t *cli)
{
    if (cli->n_positional) {
        fprintf(stderr, "fleetburn serve: unexpected argument '%s'\n", cli->positional[0]);
        return EXIT_USAGE;
    }
    const char *bind = cli->bind ? cli->bind
                       : cli->keys_dir ? "tcp://*:7755"
                                       : "tcp://127.0.0.1:7755";
    if (!cli->keys_dir && !fb_endpoint_is_local(bind)) {
        if (!cli->insecure) {
            fprintf(stderr,
                    "fleetburn serve: %s is reachable from other hosts, and without keys anyone "
                    "who reaches it can register as any node and run campaigns.\n"
                    "Make keys and serve with them:\n"
                    "  fleetburn keygen keys/coordinator\n"
                    "  fleetburn keygen keys/agents/NODE        (one per node, or one with a "
                    "'nodes: HOSTLIST' line)\n"
                    "  fleetburn keygen keys/operators/NAME\n"
                    "  fleetburn serve --keys keys --bind %s\n"
                    "(docs/security.md), or pass --insecure to serve without authentication.\n",
                    bind, bind);
            return EXIT_USAGE;
        }
        log_warn("INSECURE: serving %s without keys: anyone who reaches it can register as any "
                 "node, post results and run campaigns (docs/security.md)",
                 bind);
    }
    if (cli->keys_dir && !fb_securemem_use())
        log_warn("CURVE secrets cannot be locked in RAM (RLIMIT_MEMLOCK); they stay out of core "
                 "dumps and are zeroed when freed");
    uv_loop_t *loop = uv_default_loop();
    coord_options_t opts = {.bind = bind,
                            .db_path = cli->db,
                            .heartbeat_ms = cli->heartbeat_ms,
                            .liveness = cli->liveness,
                            .keys_dir = cli->keys_dir,
                            .max_connections = cli->max_connections,
                            .max_connections_per_address = cli->max_per_address,
                            .forget_after_ms = cli->forget_after_ms,
                            .handshake_ms = (uint32_t)cli->handshake_ms};
    char err[512];
    coord_t *coord = coord_new(loop, &opts, err, sizeof err);
    if (!coord) {
        log_error("%s", err);
        return EXIT_INFRA;
    }
    log_info("fleetburn %s coordinator on %s, database %s, %s%s", FB_VERSION,
             coord_endpoint(coord), cli->db, cli->keys_dir ? "CURVE keys from " : "no keys",
             cli->keys_dir ? cli->keys_dir : "");
    uv_signal_t sigint, sigterm, sighup;
    uv_signal_init(loop, &sigint);
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sighup);
    sighup.data = coord;
    uv_signal_start(&sigint, s_on_stop_signal, SIGINT);
    uv_signal_start(&sigterm, s_on_stop_signal, SIGTERM);
    uv_signal_start(&sighup, s_on_reload_signal, SIGHUP);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&sigint, NULL);
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&sighup, NULL);
    coord_destroy(&coord);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    return 0;
}

static store_t *s_open_existing(const char *db)
{
    struct stat st;
    if (stat(db, &st) != 0) {
        fprintf(stderr, "fleetburn: no database at %s (use --db PATH)\n", db);
        return NULL;
    }
    store_t *store = NULL;
    char *err = NULL;
    if (store_open(db, &store, &err)) {
        fprintf(stderr, "fleetburn: cannot open %s: %s\n", db, err ? err : "unknown error");
        free(err);
        return NULL;
    }
    return store;
}

static int s_cmd_report(cli_t *cli)
{
    if (cli->n_positional > 1) {
        fprintf(stderr, "fleetburn report: expected at most one campaign id\n");
        return EXIT_USAGE;
    }
    store_t *store = s_open_existing(cli->db);
    if (!store)
        return EXIT_INFRA;
    char *id = cli->n_positional ? xstrdup(cli->positional[0]) : NULL;
    int rc = 0;
    if (!id && store_latest_campaign(store, &id)) {
        fprintf(stderr, "fleetburn: %s holds no campaign yet\n", cli->db);
        store_destroy(&store);
        return EXIT_USAGE;
    }
    if (!strcmp(cli->format, "json"))
        rc = report_write_json(store, id, stdout);
    else
        rc = report_write_text(store, id, stdout);
    if (rc == -ENOENT)
        fprintf(stderr, "fleetburn: no campaign '%s' in %s\n", id, cli->db);
    else if (rc)
        fprintf(stderr, "fleetburn: cannot report %s: %s\n", id, strerror(-rc));
    free(id);
    store_destroy(&store);
    return rc == -ENOENT ? EXIT_USAGE : rc ? EXIT_INFRA : 0;
}

static int s_cmd_nodes(cli_t *cli)
{
    store_t *store = s_open_existing(cli->db);
    if (!store)
        return EXIT_INFRA;
    int rc = report_write_nodes(store, stdout);
    store_destroy(&store);
    return rc ? EXIT_INFRA : 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        s_usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        s_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("fleetburn %s (protocol %d)\n", FB_VERSION, FB_PROTOCOL_VERSION);
        return 0;
    }
    cli_t cli;
    if (s_parse_cli(argc, argv, &cli)) {
        s_usage(stderr);
        return EXIT_USAGE;
    }
    fb_log_init("fleetburn", cli.verbose ? FB_LOG_DEBUG : FB_LOG_WARN);
    if (!strcmp(cmd, "run")) {
        int rc = s_cmd_run(&cli);
        fb_conf_destroy(&cli.conf);
        return rc;
    }
    if (!strcmp(cmd, "serve")) {
        fb_log_set_level(cli.verbose ? FB_LOG_DEBUG : FB_LOG_INFO);
        return s_cmd_serve(&cli);
    }
    if (!strcmp(cmd, "report"))
        return s_cmd_report(&cli);
    if (!strcmp(cmd, "nodes"))
        return s_cmd_nodes(&cli);
    if (!strcmp(cmd, "keygen"))
        return s_cmd_keygen(&cli);
    fprintf(stderr, "fleetburn: unknown command '%s'\n", cmd);
    s_usage(stderr);
    return EXIT_USAGE;
}
