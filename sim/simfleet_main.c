/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simfleet: a simulated fleet of N agents against the real coordinator.
 *
 *   fleetburn-simfleet --agents N [--topology FILE] --faults FILE --campaign FILE [--db PATH]
 *                      --report-json OUT [--seed S] [--delay-ms MIN[-MAX]] [--stats FILE]
 *
 * The coordinator is the real one, run as its own process (`fleetburn serve` next to this
 * program, on a free loopback port), so that what is measured and reported is the coordinator a
 * fleet would talk to: its own event loop, its own memory, the same code path as production.
 * The N agents are the real agent state machine (agent/agent.c: Hello with an inventory, Welcome,
 * heartbeats, RunTask, TaskResult, spool until Ack), each with its own ZeroMQ DEALER connection,
 * all on this process's one loop thread; only task execution is simulated (sim/simtask.h) and the
 * spool kept in memory. The campaign goes in through the wire like `fleetburn run --coordinator`
 * (Submit/Progress). At the end the report JSON is read from the coordinator's store, exactly
 * as `fleetburn report --format json` writes it.
 *
 * Exit status as `fleetburn run`: 0 every task passed, 1 some did not, 2 usage, campaign or fault
 * file errors, 3 the campaign could not be run (coordinator, agents, limits).
 *
 * This file holds the command line, the phases (coordinator starting, agents registering, the
 * campaign running) driven by one timer, and the end; the fleet, the coordinator process and the
 * campaign are in simfleet_fleet.c, simfleet_coord.c and simfleet_campaign.c (simfleet.h). */
#include "simfleet.h"

#include "common/log.h"
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define S_POLL_MS 10
#define S_COORD_START_MS 15000

/* ---- command line ------------------------------------------------------------------------- */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: fleetburn-simfleet --agents N --faults FILE --campaign FILE --report-json OUT\n"
            "                          [--topology FILE] [--db PATH] [--seed S] [options]\n"
            "  --agents N            simulated agents sim-0 ... (1-%d)\n"
            "  --faults FILE         fault file (docs/simfleet.md)\n"
            "  --campaign FILE       campaign to run\n"
            "  --report-json OUT     write the JSON report here (- for stdout)\n"
            "  --topology FILE       fabric (leaf/spine text or ibnetdiscover output); default:\n"
            "                        leaves of %d nodes, each on %d spines\n"
            "  --db PATH             the coordinator's database (default: a temporary one)\n"
            "  --seed S              overrides the fault file's seed\n"
            "  --delay-ms MIN[-MAX]  real time a simulated task takes (default 0-50)\n"
            "  --heartbeat-ms MS, --liveness N   passed to the coordinator\n"
            "  --tick-ms MS          how often each agent checks its timers and socket\n"
            "                        (default %d; a real agent: 100)\n"
            "  --stats FILE          timings as key=value lines (bench/scale.sh reads them)\n"
            "  --curve               CURVE on every connection: keys are made in the work\n"
            "                        directory (one agent key for sim-*, with a nodes: line)\n"
            "  --keep                keep the work directory (coordinator log, database)\n"
            "  --verbose             agent and coordinator details on stderr\n",
            SIMFLEET_MAX_AGENTS, SIMFLEET_LEAF_SIZE, SIMFLEET_SPINES, SIMFLEET_TICK_MS);
}

static int s_parse_u32(const char *opt, const char *text, uint64_t min, uint64_t max, uint32_t *out)
{
    uint64_t v;
    if (fb_parse_uint(text, max, &v) || v < min) {
        fprintf(stderr, "fleetburn-simfleet: %s: '%s' is not a number from %llu to %llu\n", opt,
                text, (unsigned long long)min, (unsigned long long)max);
        return -EINVAL;
    }
    *out = (uint32_t)v;
    return 0;
}

static int s_parse_delay(const char *text, simfleet_cli_t *cli)
{
    const char *dash = strchr(text, '-');
    char *lo = dash ? xstrndup(text, (size_t)(dash - text)) : xstrdup(text);
    int rc = s_parse_u32("--delay-ms", lo, 0, 600000, &cli->delay_min_ms);
    free(lo);
    cli->delay_max_ms = cli->delay_min_ms;
    if (!rc && dash)
        rc = s_parse_u32("--delay-ms", dash + 1, cli->delay_min_ms, 600000, &cli->delay_max_ms);
    return rc;
}

static int s_parse_cli(int argc, char **argv, simfleet_cli_t *cli)
{
    static const struct option longopts[] = {{"agents", required_argument, 0, 'n'},
                                             {"topology", required_argument, 0, 't'},
                                             {"faults", required_argument, 0, 'f'},
                                             {"campaign", required_argument, 0, 'c'},
                                             {"db", required_argument, 0, 'd'},
                                             {"report-json", required_argument, 0, 'r'},
                                             {"seed", required_argument, 0, 's'},
                                             {"delay-ms", required_argument, 0, 'D'},
                                             {"heartbeat-ms", required_argument, 0, 'H'},
                                             {"liveness", required_argument, 0, 'L'},
                                             {"stats", required_argument, 0, 'S'},
                                             {"keep", no_argument, 0, 'k'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {"help", no_argument, 0, 'h'},
                                             {"tick-ms", required_argument, 0, 'T'},
                                             {"curve", no_argument, 0, 'C'},
                                             {0, 0, 0, 0}};
    memset(cli, 0, sizeof *cli);
    cli->delay_max_ms = 50;
    cli->tick_ms = SIMFLEET_TICK_MS;
    int c;
    uint32_t v;
    while ((c = getopt_long(argc, argv, "n:t:f:c:d:r:s:D:H:L:S:T:kvh", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (s_parse_u32("--agents", optarg, 1, SIMFLEET_MAX_AGENTS, &v))
                return -EINVAL;
            cli->agents = v;
            break;
        case 't':
            cli->topology = optarg;
            break;
        case 'f':
            cli->faults = optarg;
            break;
        case 'c':
            cli->campaign = optarg;
            break;
        case 'd':
            cli->db = optarg;
            break;
        case 'r':
            cli->report = optarg;
            break;
        case 'S':
            cli->stats = optarg;
            break;
        case 's':
            if (fb_parse_uint(optarg, UINT64_MAX, &cli->seed)) {
                fprintf(stderr, "fleetburn-simfleet: --seed: '%s' is not a number\n", optarg);
                return -EINVAL;
            }
            cli->has_seed = true;
            break;
        case 'D':
            if (s_parse_delay(optarg, cli))
                return -EINVAL;
            break;
        case 'H':
            if (s_parse_u32("--heartbeat-ms", optarg, 10, 600000, &cli->heartbeat_ms))
                return -EINVAL;
            break;
        case 'L':
            if (s_parse_u32("--liveness", optarg, 1, 100, &cli->liveness))
                return -EINVAL;
            break;
        case 'T':
            if (s_parse_u32("--tick-ms", optarg, 10, 10000, &cli->tick_ms))
                return -EINVAL;
            break;
        case 'k':
            cli->keep = true;
            break;
        case 'C':
            cli->curve = true;
            break;
        case 'v':
            cli->verbose = true;
            break;
        case 'h':
            s_usage(stdout);
            exit(0);
        default:
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fleetburn-simfleet: unexpected argument '%s'\n", argv[optind]);
        return -EINVAL;
    }
    const char *missing = !cli->agents     ? "--agents"
                          : !cli->faults   ? "--faults"
                          : !cli->campaign ? "--campaign"
                          : !cli->report   ? "--report-json"
                                           : NULL;
    if (missing) {
        fprintf(stderr, "fleetburn-simfleet: %s is required\n", missing);
        return -EINVAL;
    }
    return 0;
}

/* ---- phases, driven by one timer ------------------------------------------------------------ */

static void s_on_poll(uv_timer_t *h)
{
    fleet_t *f = h->data;
    uint64_t now = fb_mono_ms();
    if (f->phase == S_STARTING) {
        if (simfleet_port_open(f->port)) {
            f->phase = S_REGISTERING;
            if (simfleet_start_agents(f))
                simfleet_stop(f, EXIT_INFRA);
        } else if (now - f->t_start > S_COORD_START_MS) {
            fprintf(stderr,
                    "fleetburn-simfleet: the coordinator did not listen on %s within "
                    "%d s; see %s\n",
                    f->endpoint, S_COORD_START_MS / 1000, f->log_path);
            simfleet_stop(f, EXIT_INFRA);
        }
        return;
    }
    if (f->phase != S_REGISTERING)
        return;
    f->registered = simfleet_count_registered(f);
    uint64_t limit = 30000 + (uint64_t)f->cli->agents * 20;
    if (f->registered == f->cli->agents) {
        f->t_registered = now;
        simfleet_read_coord_memory(f);
        f->coord_rss_registered_mb = f->coord_rss_mb;
        f->coord_cpu_registered_s = simfleet_coord_cpu_s(f);
        fprintf(stderr, "%s%u agents registered in %.2f s\n", f->tty ? "\r\033[K" : "",
                f->cli->agents, (double)(now - f->t_agents) / 1000.0);
        f->phase = S_RUNNING;
        if (simfleet_submit(f))
            simfleet_stop(f, EXIT_INFRA);
    } else if (now - f->t_agents > limit) {
        fprintf(stderr,
                "\nfleetburn-simfleet: only %zu of %u agents registered within %.0f s; see "
                "%s\n",
                f->registered, f->cli->agents, (double)limit / 1000.0, f->log_path);
        simfleet_stop(f, EXIT_INFRA);
    } else if (now - f->last_print >= (f->tty ? 250u : 2000u)) {
        f->last_print = now;
        fprintf(stderr, "%sregistered %zu/%u agents%s", f->tty ? "\r\033[K" : "", f->registered,
                f->cli->agents, f->tty ? "" : "\n");
    }
}

static void s_on_signal(uv_signal_t *h, int signum)
{
    fleet_t *f = h->data;
    fprintf(stderr, "\nfleetburn-simfleet: interrupted (signal %d)\n", signum);
    simfleet_stop(f, EXIT_INFRA);
}

static void s_close_if_open(uv_handle_t *h)
{
    if (h->loop && !uv_is_closing(h))
        uv_close(h, NULL);
}

void simfleet_stop(fleet_t *f, int exit_code)
{
    if (f->phase == S_STOPPING)
        return;
    f->phase = S_STOPPING;
    f->exit_code = exit_code;
    if (f->coord_running) {
        simfleet_read_coord_memory(f);
        f->coord_cpu_end_s = simfleet_coord_cpu_s(f);
    }
    if (f->campaign_id && (exit_code == EXIT_PASS || exit_code == EXIT_FAILED) &&
        simfleet_write_report(f))
        f->exit_code = EXIT_INFRA;
    for (unsigned i = 0; f->agents && i < f->cli->agents; i++)
        agent_destroy(&f->agents[i]);
    zsock_close(&f->client);
    s_close_if_open((uv_handle_t *)&f->poll);
    s_close_if_open((uv_handle_t *)&f->sigint);
    s_close_if_open((uv_handle_t *)&f->sigterm);
    if (f->coord_running)
        uv_process_kill(&f->coord, SIGTERM);
}

static void s_cleanup(fleet_t *f)
{
    simfleet_free_fleet(f);
    if (f->workdir[0]) {
        if (f->cli->keep || f->exit_code == EXIT_INFRA) {
            fprintf(stderr, "work directory kept: %s\n", f->workdir);
        } else {
            unlink(f->log_path);
            if (f->cli->curve)
                simfleet_remove_keys(f);
            if (!f->cli->db) {
                unlink(f->db);
                char *wal = xasprintf("%s-wal", f->db), *shm = xasprintf("%s-shm", f->db);
                unlink(wal);
                unlink(shm);
                free(wal);
                free(shm);
            }
            rmdir(f->workdir);
        }
    }
    free(f->db);
    free(f->log_path);
    free(f->agent_key);
    free(f->operator_key);
    free(f->server_key);
    free(f->yaml);
    campaign_file_destroy(&f->campaign_file);
    free(f->campaign_id);
}

static int s_run(fleet_t *f)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(f->workdir, sizeof f->workdir, "%s/fleetburn-simfleet-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->workdir)) {
        fprintf(stderr, "fleetburn-simfleet: cannot create a work directory: %s\n",
                strerror(errno));
        f->workdir[0] = '\0';
        return EXIT_INFRA;
    }
    f->db = f->cli->db ? xstrdup(f->cli->db) : xasprintf("%s/fleetburn.db", f->workdir);
    f->log_path = xasprintf("%s/coordinator.log", f->workdir);
    int rc = simfleet_raise_fd_limit(f->cli->agents);
    if (rc) {
        if (rc != -EMFILE)
            fprintf(stderr, "fleetburn-simfleet: cannot raise the file descriptor limit: %s\n",
                    strerror(-rc));
        return EXIT_INFRA;
    }
    if (f->cli->curve) {
        if (simfleet_make_keys(f))
            return EXIT_INFRA;
        f->agent_key = simfleet_work_path(f, "sim-agent");
        f->operator_key = simfleet_work_path(f, "operator");
        f->server_key = simfleet_work_path(f, "keys/coordinator.pub");
    }
    f->loop = uv_default_loop();
    f->t_start = fb_mono_ms();
    if (simfleet_spawn_coordinator(f))
        return EXIT_INFRA;
    uv_timer_init(f->loop, &f->poll);
    f->poll.data = f;
    uv_timer_start(&f->poll, s_on_poll, S_POLL_MS, S_POLL_MS);
    uv_signal_init(f->loop, &f->sigint);
    uv_signal_init(f->loop, &f->sigterm);
    f->sigint.data = f->sigterm.data = f;
    uv_signal_start(&f->sigint, s_on_signal, SIGINT);
    uv_signal_start(&f->sigterm, s_on_signal, SIGTERM);
    uv_run(f->loop, UV_RUN_DEFAULT);
    uv_loop_close(f->loop);
    simfleet_summary(f);
    return f->exit_code;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    simfleet_cli_t cli;
    if (s_parse_cli(argc, argv, &cli)) {
        s_usage(stderr);
        return EXIT_USAGE;
    }
    fb_log_init("simfleet", cli.verbose ? FB_LOG_INFO : FB_LOG_WARN);
    fleet_t f = {0};
    f.cli = &cli;
    f.tty = isatty(STDERR_FILENO);
    f.verdict = FB_VERDICT_ERROR;
    int status = simfleet_load_inputs(&f) ? EXIT_USAGE : s_run(&f);
    s_cleanup(&f);
    return status;
}
