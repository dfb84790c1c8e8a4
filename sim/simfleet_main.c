/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simfleet: a simulated fleet of N agents against the real coordinator.
 *
 *   fleetburn-simfleet --agents N [--topology FILE] --faults FILE --campaign FILE [--db PATH]
 *                      --report-json OUT [--seed S] [--delay-ms MIN[-MAX]] [--stats FILE]
 *   fleetburn-simfleet --coordinator EP [--key FILE --server-key FILE] --agents N --first I
 *                      --fleet M --faults FILE (--no-submit | --campaign FILE --db PATH ...)
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
 * With --coordinator the agents join a running `fleetburn serve` instead, so that several
 * processes (each under its own descriptor limit) make one fleet: each runs a slice of the names
 * (--first, of --fleet in all). Agent-only processes (--no-submit) run until a signal; the one that
 * submits waits until the coordinator's database lists the whole fleet alive, then submits.
 *
 * Exit status as `fleetburn run`: 0 every task passed, 1 some did not, 2 usage, campaign or fault
 * file errors, 3 the campaign could not be run (coordinator, agents, limits).
 *
 * This file holds the command line, the phases (coordinator starting, agents registering, the
 * campaign running) driven by one timer, and the end; the fleet, the coordinator process and the
 * campaign are in simfleet_fleet.c, simfleet_coord.c and simfleet_campaign.c (simfleet.h). */
#include "simfleet.h"

#include "common/cliopt.h"
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
#define S_FLEET_POLL_MS 100 /* how often a submitting process counts the fleet in the database */

/* ---- command line ------------------------------------------------------------------------- */

static void s_usage(FILE *out)
{
    fprintf(
        out,
        "usage: fleetburn-simfleet --agents N --faults FILE --campaign FILE --report-json OUT\n"
        "                          [--topology FILE] [--db PATH] [--seed S] [options]\n"
        "  --agents N            simulated agents sim-0 ... (1-%d)\n"
        "  --faults FILE         fault file (docs/simfleet.md)\n"
        "  --campaign FILE       campaign to run\n"
        "  --report-json OUT     write the JSON report here (- for stdout)\n"
        "  --topology FILE       fabric (leaf/spine text or ibnetdiscover output); default:\n"
        "                        leaves of %d nodes, each on %d spines\n"
        "  --routes FILE         the fabric's routing: ibnetdiscover output with ibroute or\n"
        "                        ibdiagnet2.fdbs tables (default: by destination)\n"
        "  --db PATH             the coordinator's database (default: a temporary one)\n"
        "  --seed S              overrides the fault file's seed\n"
        "  --delay-ms MIN[-MAX]  real time a simulated task takes (default 0-50)\n"
        "  --heartbeat-ms MS, --liveness N   passed to the coordinator\n"
        "  --tick-ms MS          how often each agent checks its timers and socket\n"
        "                        (default %d; a real agent: 100)\n"
        "  --stats FILE          timings as key=value lines (bench/scale.sh reads them)\n"
        "  --curve               CURVE on every connection: keys are made in the work\n"
        "                        directory (one agent key for sim-*, with a nodes: line)\n"
        "  --connect-window W    at most W agents connecting and waiting for their Welcome\n"
        "                        at a time; the others start as agents register (default:\n"
        "                        all at once)\n"
        "  --keep                keep the work directory (coordinator log, database)\n"
        "  --verbose             agent and coordinator details on stderr\n"
        "One fleet from several processes, joining a running `fleetburn serve`:\n"
        "  --coordinator EP      join this coordinator instead of starting one\n"
        "  --key FILE            the agents' secret key (one key for every simulated node;\n"
        "                        its .pub in the coordinator's keys/agents with a nodes: line)\n"
        "  --server-key FILE     the coordinator's public key (with --key)\n"
        "  --operator-key FILE   secret key of an operator, for the submission (with --key)\n"
        "  --fleet M             agents of the whole fleet, named sim-0 ... with the width of\n"
        "                        M-1 (default: --first + --agents)\n"
        "  --first I             this process runs agents I ... I+N-1 of the fleet (default 0)\n"
        "  --no-submit           agents only, until SIGINT or SIGTERM (exit 0); no campaign\n"
        "  --db PATH             (to submit) the coordinator's database, read here: the fleet\n"
        "                        is counted in it before the campaign is submitted, and the\n"
        "                        report and timings come from it\n"
        "  --coordinator-pid PID read the coordinator's memory and CPU from /proc/PID\n"
        "  --relay EP            (repeated) this process's agents connect to these\n"
        "                        `fleetburn relay`s instead, in equal contiguous shares\n"
        "  --relay-key FILE      (with --key; one per --relay, same order) that relay's\n"
        "                        public key, pinned by its agents\n",
        SIMFLEET_MAX_AGENTS, SIMFLEET_LEAF_SIZE, SIMFLEET_SPINES, SIMFLEET_TICK_MS);
}

/* --delay-ms MIN[-MAX]: 0, or -EINVAL with *error (heap) saying why. */
static int s_parse_delay(const char *text, simfleet_cli_t *cli, char **error)
{
    const char *dash = strchr(text, '-');
    char *lo = dash ? xstrndup(text, (size_t)(dash - text)) : xstrdup(text);
    uint64_t min, max;
    int rc = fb_cliopt_uint("delay-ms", lo, 0, 600000, &min, error);
    free(lo);
    if (!rc && dash)
        rc = fb_cliopt_uint("delay-ms", dash + 1, min, 600000, &max, error);
    if (!rc) {
        cli->delay_min_ms = (uint32_t)min;
        cli->delay_max_ms = (uint32_t)(dash ? max : min);
    }
    return rc;
}

enum {
    S_OPT_COORD = 256,
    S_OPT_KEY,
    S_OPT_SERVER_KEY,
    S_OPT_OP_KEY,
    S_OPT_FIRST,
    S_OPT_FLEET,
    S_OPT_NO_SUBMIT,
    S_OPT_PID,
    S_OPT_WINDOW,
    S_OPT_ROUTES,
    S_OPT_RELAY,
    S_OPT_RELAY_KEY
};

static int s_check_cli(simfleet_cli_t *cli);

/* The options the table (common/cliopt.h) cannot store: 0, or -EINVAL with *error (heap) when
 * the reason is not printed yet. */
static int s_parse_other(int c, simfleet_cli_t *cli, char **error)
{
    uint64_t v;
    switch (c) {
    case 's':
        if (fb_parse_uint(optarg, UINT64_MAX, &cli->seed)) {
            *error = xasprintf("--seed: '%s' is not a number", optarg);
            return -EINVAL;
        }
        cli->has_seed = true;
        return 0;
    case 'D':
        return s_parse_delay(optarg, cli, error);
    case S_OPT_PID:
        if (fb_cliopt_uint("coordinator-pid", optarg, 1, INT32_MAX, &v, error))
            return -EINVAL;
        cli->coordinator_pid = (int)v;
        return 0;
    case S_OPT_RELAY:
    case S_OPT_RELAY_KEY:
        if ((c == S_OPT_RELAY ? cli->n_relays : cli->n_relay_keys) == SIMFLEET_MAX_RELAYS) {
            *error = xasprintf("at most %d --relay and --relay-key", SIMFLEET_MAX_RELAYS);
            return -EINVAL;
        }
        if (c == S_OPT_RELAY)
            cli->relays[cli->n_relays++] = optarg;
        else
            cli->relay_keys[cli->n_relay_keys++] = optarg;
        return 0;
    case 'h':
        s_usage(stdout);
        exit(0);
    default:
        return -EINVAL;
    }
}

static int s_parse_cli(int argc, char **argv, simfleet_cli_t *cli)
{
    memset(cli, 0, sizeof *cli);
    cli->delay_max_ms = 50;
    cli->tick_ms = SIMFLEET_TICK_MS;
    const fb_cliopt_t table[] = {
        {"agents", 'n', FB_CLIOPT_UINT, &cli->agents, 1, SIMFLEET_MAX_AGENTS},
        {"topology", 't', FB_CLIOPT_TEXT, &cli->topology, 0, 0},
        {"faults", 'f', FB_CLIOPT_TEXT, &cli->faults, 0, 0},
        {"campaign", 'c', FB_CLIOPT_TEXT, &cli->campaign, 0, 0},
        {"db", 'd', FB_CLIOPT_TEXT, &cli->db, 0, 0},
        {"report-json", 'r', FB_CLIOPT_TEXT, &cli->report, 0, 0},
        {"seed", 's', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"delay-ms", 'D', FB_CLIOPT_CALLER, NULL, 0, 0},
        {"heartbeat-ms", 'H', FB_CLIOPT_UINT, &cli->heartbeat_ms, 10, 600000},
        {"liveness", 'L', FB_CLIOPT_UINT, &cli->liveness, 1, 100},
        {"stats", 'S', FB_CLIOPT_TEXT, &cli->stats, 0, 0},
        {"keep", 'k', FB_CLIOPT_SET, &cli->keep, 0, 0},
        {"verbose", 'v', FB_CLIOPT_SET, &cli->verbose, 0, 0},
        {"help", 'h', FB_CLIOPT_CALLER_FLAG, NULL, 0, 0},
        {"tick-ms", 'T', FB_CLIOPT_UINT, &cli->tick_ms, 10, 10000},
        {"curve", 'C', FB_CLIOPT_SET, &cli->curve, 0, 0},
        {"coordinator", S_OPT_COORD, FB_CLIOPT_TEXT, &cli->coordinator, 0, 0},
        {"key", S_OPT_KEY, FB_CLIOPT_TEXT, &cli->key, 0, 0},
        {"server-key", S_OPT_SERVER_KEY, FB_CLIOPT_TEXT, &cli->server_key, 0, 0},
        {"operator-key", S_OPT_OP_KEY, FB_CLIOPT_TEXT, &cli->operator_key, 0, 0},
        {"first", S_OPT_FIRST, FB_CLIOPT_UINT, &cli->first, 0, SIMFLEET_MAX_AGENTS - 1},
        {"fleet", S_OPT_FLEET, FB_CLIOPT_UINT, &cli->fleet, 1, SIMFLEET_MAX_AGENTS},
        {"no-submit", S_OPT_NO_SUBMIT, FB_CLIOPT_SET, &cli->no_submit, 0, 0},
        {"coordinator-pid", S_OPT_PID, FB_CLIOPT_CALLER, NULL, 0, 0},
        {"connect-window", S_OPT_WINDOW, FB_CLIOPT_UINT, &cli->connect_window, 1,
         SIMFLEET_MAX_AGENTS},
        {"routes", S_OPT_ROUTES, FB_CLIOPT_TEXT, &cli->routes, 0, 0},
        {"relay", S_OPT_RELAY, FB_CLIOPT_CALLER, NULL, 0, 0},
        {"relay-key", S_OPT_RELAY_KEY, FB_CLIOPT_CALLER, NULL, 0, 0},
        {0}};
    int c;
    char *error = NULL;
    while ((c = fb_cliopt_next(argc, argv, "n:t:f:c:d:r:s:D:H:L:S:T:kvh", table, &error)) > 0)
        if (s_parse_other(c, cli, &error)) {
            c = -EINVAL;
            break;
        }
    if (error)
        fprintf(stderr, "fleetburn-simfleet: %s\n", error);
    free(error);
    if (c)
        return -EINVAL;
    if (optind < argc) {
        fprintf(stderr, "fleetburn-simfleet: unexpected argument '%s'\n", argv[optind]);
        return -EINVAL;
    }
    return s_check_cli(cli);
}

static int s_cli_error(const char *what)
{
    fprintf(stderr, "fleetburn-simfleet: %s\n", what);
    return -EINVAL;
}

/* What goes together: a spawned coordinator takes --curve, --heartbeat-ms and --liveness; a joined
 * one takes key files, a slice of a larger fleet and agent-only processes; a process that
 * submits needs the campaign and where the report goes (and, joined, the database to read). */
static int s_check_cli(simfleet_cli_t *cli)
{
    bool joined = cli->coordinator != NULL, submit = !cli->no_submit;
    const char *missing = !cli->agents               ? "--agents"
                          : !cli->faults             ? "--faults"
                          : submit && !cli->campaign ? "--campaign"
                          : submit && !cli->report   ? "--report-json"
                          : joined && submit && !cli->db
                              ? "--db (the database of the coordinator, to count the fleet and "
                                "read the report)"
                              : NULL;
    if (missing) {
        fprintf(stderr, "fleetburn-simfleet: %s is required\n", missing);
        return -EINVAL;
    }
    if (!joined && (cli->key || cli->server_key || cli->operator_key || cli->first || cli->fleet ||
                    cli->no_submit || cli->coordinator_pid))
        return s_cli_error("--key, --server-key, --operator-key, --first, --fleet, --no-submit "
                           "and --coordinator-pid go with --coordinator (a coordinator started "
                           "elsewhere)");
    if (joined && (cli->curve || cli->heartbeat_ms || cli->liveness))
        return s_cli_error("--curve, --heartbeat-ms and --liveness set up the coordinator "
                           "fleetburn-simfleet starts; with --coordinator give its keys (--key, "
                           "--server-key, --operator-key) and set the others on fleetburn serve");
    if (!cli->key != !cli->server_key)
        return s_cli_error("--key and --server-key go together (the agents' secret key and the "
                           "coordinator's public key)");
    if (cli->operator_key && !cli->key)
        return s_cli_error("--operator-key needs --key and --server-key");
    if (joined && submit && cli->key && !cli->operator_key)
        return s_cli_error("--operator-key is required to submit to a keyed coordinator (an "
                           "agent key may not submit campaigns); or run with --no-submit");
    if (cli->no_submit && (cli->campaign || cli->report))
        return s_cli_error("--no-submit runs agents only: no --campaign or --report-json");
    if (!cli->fleet)
        cli->fleet = cli->first + cli->agents;
    if ((uint64_t)cli->first + cli->agents > cli->fleet)
        return s_cli_error("--first + --agents is more than --fleet; expected this process's "
                           "agents to be part of the fleet");
    if (cli->n_relays && !joined)
        return s_cli_error("--relay goes with --coordinator (relays started elsewhere, joined to "
                           "that coordinator)");
    if (cli->key ? cli->n_relay_keys != cli->n_relays : cli->n_relay_keys != 0)
        return s_cli_error("one --relay-key (the relay's public key) for each --relay, in the "
                           "same order, with --key; none without");
    if (cli->n_relays > cli->agents)
        return s_cli_error("more --relay than --agents");
    if (strlen(cli->coordinator ? cli->coordinator : "") >= 200)
        return s_cli_error("--coordinator: the endpoint is too long");
    return 0;
}

/* ---- phases, driven by one timer ------------------------------------------------------------ */

/* Every agent the submission needs is registered: the coordinator's memory and CPU at this
 * point, then the campaign. */
static void s_submit_now(fleet_t *f)
{
    simfleet_read_coord_memory(f);
    f->coord_rss_registered_mb = f->coord_rss_mb;
    f->coord_cpu_registered_s = simfleet_coord_cpu_s(f);
    f->phase = S_RUNNING;
    if (simfleet_submit(f))
        simfleet_stop(f, EXIT_INFRA);
}

static bool s_print_due(fleet_t *f, uint64_t now)
{
    if (now - f->last_print < (f->tty ? 250u : 2000u))
        return false;
    f->last_print = now;
    return true;
}

static void s_on_registering(fleet_t *f, uint64_t now)
{
    f->registered = simfleet_count_registered(f);
    if (simfleet_start_more(f, f->registered)) {
        simfleet_stop(f, EXIT_INFRA);
        return;
    }
    uint64_t limit = 30000 + (uint64_t)f->cli->agents * 20;
    if (f->registered == f->cli->agents) {
        f->t_registered = now;
        f->unix_registered = fb_now_ms();
        fprintf(stderr, "%s%u agents registered in %.2f s\n", f->tty ? "\r\033[K" : "",
                f->cli->agents, (double)(now - f->t_agents) / 1000.0);
        if (f->cli->no_submit) {
            f->phase = S_SERVING;
            simfleet_summary(f); /* the stats file tells a driver script that they are in */
            fprintf(stderr, "serving until SIGINT or SIGTERM\n");
        } else if (f->cli->coordinator) {
            f->phase = S_WAITING;
        } else {
            s_submit_now(f);
        }
    } else if (now - f->t_agents > limit) {
        fprintf(stderr,
                "\nfleetburn-simfleet: only %zu of %u agents registered within %.0f s; see "
                "%s\n",
                f->registered, f->cli->agents, (double)limit / 1000.0, f->log_path);
        simfleet_stop(f, EXIT_INFRA);
    } else if (s_print_due(f, now)) {
        fprintf(stderr, "%sregistered %zu/%u agents%s", f->tty ? "\r\033[K" : "", f->registered,
                f->cli->agents, f->tty ? "" : "\n");
    }
}

/* Joined and submitting: the campaign's nodes are the agents the coordinator has, so wait until
 * its database lists every agent of the fleet (other processes' too) alive. */
static void s_on_waiting(fleet_t *f, uint64_t now)
{
    if (now - f->t_counted < S_FLEET_POLL_MS)
        return;
    f->t_counted = now;
    uint64_t limit = 30000 + (uint64_t)f->cli->fleet * 20;
    int rc = simfleet_count_fleet(f, &f->fleet_registered);
    if (rc && rc != -EAGAIN) {
        simfleet_stop(f, EXIT_INFRA);
    } else if (rc == 0 && f->fleet_registered >= f->cli->fleet) {
        f->t_fleet = now;
        f->unix_fleet = fb_now_ms();
        fprintf(stderr,
                "%sthe coordinator lists all %u agents of the fleet alive, %.2f s after "
                "this process started its agents\n",
                f->tty ? "\r\033[K" : "", f->cli->fleet, (double)(now - f->t_agents) / 1000.0);
        simfleet_close_fleet_db(f);
        s_submit_now(f);
    } else if (now - f->t_agents > limit) {
        fprintf(stderr,
                "\nfleetburn-simfleet: the coordinator lists only %zu of the fleet's %u agents "
                "alive after %.0f s; expected the other fleetburn-simfleet processes (--first, "
                "--fleet) to have joined\n",
                f->fleet_registered, f->cli->fleet, (double)limit / 1000.0);
        simfleet_stop(f, EXIT_INFRA);
    } else if (s_print_due(f, now)) {
        fprintf(stderr, "%sthe coordinator lists %zu/%u agents of the fleet alive%s",
                f->tty ? "\r\033[K" : "", f->fleet_registered, f->cli->fleet, f->tty ? "" : "\n");
    }
}

static void s_on_poll(uv_timer_t *h)
{
    fleet_t *f = h->data;
    uint64_t now = fb_mono_ms();
    switch (f->phase) {
    case S_STARTING:
        if (f->cli->coordinator || simfleet_port_open(f->port)) {
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
        break;
    case S_REGISTERING:
        s_on_registering(f, now);
        break;
    case S_WAITING:
        s_on_waiting(f, now);
        break;
    default:
        break;
    }
}

static void s_on_signal(uv_signal_t *h, int signum)
{
    fleet_t *f = h->data;
    if (f->phase == S_SERVING) { /* the normal end of agents that serve another's campaign */
        fprintf(stderr, "fleetburn-simfleet: signal %d: stopping %u agents\n", signum,
                f->cli->agents);
        simfleet_stop(f, EXIT_PASS);
        return;
    }
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
    if (simfleet_coord_pid(f) > 0) {
        simfleet_read_coord_memory(f);
        f->coord_cpu_end_s = simfleet_coord_cpu_s(f);
    }
    simfleet_close_fleet_db(f);
    if (f->campaign_id && (exit_code == EXIT_PASS || exit_code == EXIT_FAILED) &&
        simfleet_write_report(f))
        f->exit_code = EXIT_INFRA;
    for (unsigned i = 0; f->agents && i < f->cli->agents; i++)
        agent_destroy(&f->agents[i]);
    fb_zsock_close(&f->client);
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

/* Joined: no work directory, no coordinator to start; the keys are the caller's files. */
static int s_join(fleet_t *f)
{
    const simfleet_cli_t *cli = f->cli;
    snprintf(f->endpoint, sizeof f->endpoint, "%s", cli->coordinator);
    f->db = cli->db ? xstrdup(cli->db) : NULL;
    f->log_path = xstrdup("the coordinator's log");
    f->coord_pid = cli->coordinator_pid;
    f->agent_key = cli->key ? xstrdup(cli->key) : NULL;
    f->server_key = cli->server_key ? xstrdup(cli->server_key) : NULL;
    f->operator_key = cli->operator_key ? xstrdup(cli->operator_key) : NULL;
    return 0;
}

/* Starting the coordinator: a work directory for its log, database and --curve keys. */
static int s_spawn(fleet_t *f)
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
    if (f->cli->curve) {
        if (simfleet_make_keys(f))
            return EXIT_INFRA;
        f->agent_key = simfleet_work_path(f, "sim-agent");
        f->operator_key = simfleet_work_path(f, "operator");
        f->server_key = simfleet_work_path(f, "keys/coordinator.pub");
    }
    return simfleet_spawn_coordinator(f) ? EXIT_INFRA : 0;
}

static int s_run(fleet_t *f)
{
    int rc = simfleet_raise_fd_limit(f->cli->agents);
    if (rc) {
        if (rc != -EMFILE)
            fprintf(stderr, "fleetburn-simfleet: cannot raise the file descriptor limit: %s\n",
                    strerror(-rc));
        return EXIT_INFRA;
    }
    f->loop = uv_default_loop();
    f->t_start = fb_mono_ms();
    rc = f->cli->coordinator ? s_join(f) : s_spawn(f);
    if (rc)
        return rc;
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
