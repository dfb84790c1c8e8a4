/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn: the coordinator and the command line.
 *
 *   fleetburn run CAMPAIGN.yaml [--local N | --coordinator EP [--queue] [--wait D]] [--db PATH]
 *   fleetburn follow [ID] | cancel [ID] [--reason TEXT] | campaigns [--format text|json]
 *   fleetburn serve [--bind EP] [--db PATH] [--keys DIR | --insecure] [--http ADDR]
 *   fleetburn keygen PATH
 *   fleetburn report [CAMPAIGN_ID] [--format text|json|html|junit|csv] [--baseline ID] [--db PATH] | report --list
 *   fleetburn timeline [CAMPAIGN_ID] [--node NODE] [--format text|json|trace] [--db PATH]
 *   fleetburn nodes [--db PATH]
 *   fleetburn compare BASE [CAMPAIGN] [--format text|json] [--db PATH]
 *   fleetburn baseline set NAME CAMPAIGN_ID | list | delete NAME [--db PATH]
 *   fleetburn workloads [NAME] [--markdown]
 *
 * `run --local N` (the default, with N = 1) embeds a coordinator on an ephemeral loopback port
 * and starts N fleetburn-agent processes named local-0 … local-(N-1). Exit status of `run`:
 * 0 when every task passed (or was skipped), 1 when any did not, 2 for usage and campaign-file
 * errors, 3 when the campaign could not be run at all (database, agents, coordinator) or was
 * cancelled, 130 when Ctrl-C detached `run --coordinator` from a campaign that keeps running.
 * follow, cancel and campaigns are clients of `fleetburn serve` like `run --coordinator`
 * (cli_remote.c). */
#include "cli.h"
#include "coord.h"
#include "report.h"
#include "conns.h"
#include "common/conffile.h"
#include "common/endpoint.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/securemem.h"
#include "common/service.h"
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

static const char *s_default_db(void)
{
    const char *env = getenv("FLEETBURN_DB");
    return env && *env ? env : "fleetburn.db";
}

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

/* A duration option within [min_ms, max_ms]; otherwise says that text is not a duration
 * `expected` and returns -EINVAL. */
static int s_parse_duration(const char *opt, const char *text, uint64_t min_ms, uint64_t max_ms,
                            const char *expected, uint64_t *out_ms)
{
    uint64_t v;
    if (fb_parse_duration_ms(text, &v) || v < min_ms || v > max_ms) {
        fprintf(stderr, "fleetburn: %s: '%s' is not a duration %s\n", opt, text, expected);
        return -EINVAL;
    }
    *out_ms = v;
    return 0;
}

/* Long-only options (no short letter). */
enum {
    S_OPT_MAX_CONNECTIONS = 0x100,
    S_OPT_MAX_PER_ADDRESS,
    S_OPT_FORGET_AFTER,
    S_OPT_STORE_TIMEOUT,
    S_OPT_HANDSHAKE_TIMEOUT,
    S_OPT_IO_THREADS,
    S_OPT_WAIT,
    S_OPT_QUEUE,
    S_OPT_REASON,
    S_OPT_WEBHOOK_ALLOW,
    S_OPT_WEBHOOK_CA,
    S_OPT_FROM,
    S_OPT_SLURM_BIN,
    S_OPT_BASELINE,
    S_OPT_MARKDOWN,
    S_OPT_HTTP,
    S_OPT_HTTP_TOKEN_FILE,
    S_OPT_NODE,
    S_OPT_LIST
};

/* The --format values a command takes ("text|json" where it is not listed). */
static const char *s_formats_of(const char *cmd)
{
    static const struct {
        const char *cmd, *formats;
    } table[] = {
        {"report", "text|json|html|junit|csv"},
        {"timeline", "text|json|trace"},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(table); i++)
        if (!strcmp(cmd, table[i].cmd))
            return table[i].formats;
    return "text|json";
}

static bool s_format_ok(const char *cmd, const char *format)
{
    size_t len = strlen(format);
    for (const char *p = s_formats_of(cmd); *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && !strncmp(p, format, n))
            return true;
        p += n + (bar != NULL);
    }
    return false;
}

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
        {"store-timeout", required_argument, 0, S_OPT_STORE_TIMEOUT},
        {"handshake-timeout", required_argument, 0, S_OPT_HANDSHAKE_TIMEOUT},
        {"io-threads", required_argument, 0, S_OPT_IO_THREADS},
        {"wait", required_argument, 0, S_OPT_WAIT},
        {"queue", no_argument, 0, S_OPT_QUEUE},
        {"reason", required_argument, 0, S_OPT_REASON},
        {"webhook-allow", required_argument, 0, S_OPT_WEBHOOK_ALLOW},
        {"webhook-ca", required_argument, 0, S_OPT_WEBHOOK_CA},
        {"from", required_argument, 0, S_OPT_FROM},
        {"slurm-bin", required_argument, 0, S_OPT_SLURM_BIN},
        {"baseline", required_argument, 0, S_OPT_BASELINE},
        {"markdown", no_argument, 0, S_OPT_MARKDOWN},
        {"http", required_argument, 0, S_OPT_HTTP},
        {"http-token-file", required_argument, 0, S_OPT_HTTP_TOKEN_FILE},
        {"node", required_argument, 0, S_OPT_NODE},
        {"list", no_argument, 0, S_OPT_LIST},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    memset(cli, 0, sizeof *cli);
    cli->db = s_default_db();
    cli->format = "text";
    cli->local = 1;
    cli->max_per_address = CONNS_DEFAULT_PER_ADDRESS;
    cli->wait_ms = FB_CLIENT_DEFAULT_WAIT_MS;
    optind = 2;
    opterr = 0; /* unknown options are named below */
    int c;
    uint32_t v;
    while ((c = getopt_long(argc, argv, ":d:b:c:l:f:H:L:i:kvh", longopts, NULL)) != -1) {
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
            if (!s_format_ok(argv[1], optarg)) {
                fprintf(stderr, "fleetburn %s: --format: '%s' is not one of %s\n", argv[1],
                        optarg, s_formats_of(argv[1]));
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
            if (s_parse_duration("--forget-after", optarg, 1, UINT64_MAX,
                                 "above zero (e.g. 30m, 1h, 2d)", &cli->forget_after_ms))
                return -EINVAL;
            break;
        case S_OPT_STORE_TIMEOUT:
            if (s_parse_duration("--store-timeout", optarg, 1000, UINT64_MAX,
                                 "of at least 1s (e.g. 30s, 5m)", &cli->store_timeout_ms))
                return -EINVAL;
            break;
        case S_OPT_HANDSHAKE_TIMEOUT:
            if (s_parse_duration("--handshake-timeout", optarg, 100, 600000,
                                 "between 100ms and 10m", &cli->handshake_ms))
                return -EINVAL;
            break;
        case S_OPT_IO_THREADS: {
            uint64_t n;
            if (fb_parse_uint(optarg, COORD_MAX_IO_THREADS, &n) || n < 1) {
                fprintf(stderr, "fleetburn: --io-threads: '%s' is not a whole number from 1 to %d\n",
                        optarg, COORD_MAX_IO_THREADS);
                return -EINVAL;
            }
            cli->io_threads = (unsigned)n;
            break;
        }
        case S_OPT_WAIT:
            if (s_parse_duration("--wait", optarg, 100, 7 * 86400000ull,
                                 "between 100ms and 7d (e.g. 30s, 5m)", &cli->wait_ms))
                return -EINVAL;
            cli->wait_given = true;
            break;
        case S_OPT_QUEUE: cli->queue = true; break;
        case S_OPT_REASON: cli->reason = optarg; break;
        case S_OPT_WEBHOOK_ALLOW: cli->webhook_allow = optarg; break;
        case S_OPT_WEBHOOK_CA: cli->webhook_ca = optarg; break;
        case S_OPT_FROM: cli->from = optarg; break;
        case S_OPT_SLURM_BIN: {
            struct stat st;
            if (optarg[0] != '/' || stat(optarg, &st) || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "fleetburn: --slurm-bin: '%s' is not an absolute path to a "
                                "directory; expected the directory of sinfo and scontrol, e.g. "
                                "/usr/bin\n",
                        optarg);
                return -EINVAL;
            }
            cli->slurm_bin = optarg;
            break;
        }
        case S_OPT_BASELINE: cli->baseline = optarg; break;
        case S_OPT_MARKDOWN: cli->markdown = true; break;
        case S_OPT_HTTP: cli->http = optarg; break;
        case S_OPT_HTTP_TOKEN_FILE: cli->http_token_file = optarg; break;
        case S_OPT_NODE: cli->node = optarg; break;
        case S_OPT_LIST: cli->list = true; break;
        case 'h':
            if (!cli_command_usage(argv[1], stdout)) {
                fprintf(stderr, "fleetburn: unknown command '%s'\n", argv[1]);
                cli_usage(stderr);
                exit(EXIT_USAGE);
            }
            exit(0);
        case ':':
            fprintf(stderr, "fleetburn %s: %s needs a value\n", argv[1], argv[optind - 1]);
            return -EINVAL;
        default:
            fprintf(stderr, "fleetburn %s: unknown option '%s'\n", argv[1],
                    optopt ? (char[3]){'-', (char)optopt, 0} : argv[optind - 1]);
            return -EINVAL;
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

/* The coordinator's endpoint as ZeroMQ wants it: HOST:PORT means tcp://HOST:PORT
 * (common/endpoint.h). 0, or -EINVAL after saying what is wrong. */
static int s_resolve_coordinator(cli_t *cli, const char *cmd)
{
    char err[300];
    if (!cli->coordinator)
        return 0;
    if (fb_endpoint_normalize(cli->coordinator, cli->coordinator_buf, sizeof cli->coordinator_buf,
                              err, sizeof err)) {
        fprintf(stderr, "fleetburn %s: --coordinator: %s\n", cmd, err);
        return -EINVAL;
    }
    cli->coordinator = cli->coordinator_buf;
    return 0;
}

static int s_cmd_run(cli_t *cli)
{
    if (cli->n_positional != 1) {
        fprintf(stderr, "fleetburn run: expected one campaign file\n");
        cli_command_usage("run", stderr);
        return EXIT_USAGE;
    }
    if (cli_load_client_config(cli) || s_resolve_coordinator(cli, "run"))
        return EXIT_USAGE;
    if (cli->webhook_allow || (cli->coordinator && cli->webhook_ca)) {
        fprintf(stderr, "fleetburn run: %s applies to serve%s\n",
                cli->webhook_allow ? "--webhook-allow" : "--webhook-ca",
                cli->webhook_allow ? " (run --local posts to any host: it runs as you)"
                                   : " and run --local");
        return EXIT_USAGE;
    }
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
    if (cli_check_injections(cli, cf->campaign))
        rc = EXIT_USAGE;
    else if (cli->baseline && (rc = cli_baseline_check(cli, cf->campaign)))
        ; /* cli_compare.c said why */
    else if (cli->coordinator)
        rc = cli_run_remote(cli, cf);
    else if (cli->queue || cli->wait_given) {
        fprintf(stderr, "fleetburn run: --queue and --wait apply to run --coordinator\n");
        rc = EXIT_USAGE;
    } else
        rc = cli_run_local(cli, &cf->campaign, cf->yaml);
    campaign_file_destroy(&cf);
    return rc;
}

/* follow, cancel, campaigns: clients of a running coordinator, like run --coordinator. */
static int s_cmd_client(cli_t *cli, const char *cmd)
{
    if (cli->local_given) {
        fprintf(stderr, "fleetburn %s: --local applies to run; %s talks to a coordinator "
                        "(--coordinator EP)\n",
                cmd, cmd);
        return EXIT_USAGE;
    }
    if (cli->queue || (cli->reason && strcmp(cmd, "cancel"))) {
        fprintf(stderr, "fleetburn %s: %s applies to %s\n", cmd, cli->queue ? "--queue" : "--reason",
                cli->queue ? "run --coordinator" : "cancel");
        return EXIT_USAGE;
    }
    if (cli_load_client_config(cli) || s_resolve_coordinator(cli, cmd))
        return EXIT_USAGE;
    if (!cli->coordinator)
        cli->coordinator = FB_CLIENT_DEFAULT_COORDINATOR;
    if (!strcmp(cmd, "follow"))
        return cli_follow(cli);
    if (!strcmp(cmd, "cancel"))
        return cli_cancel(cli);
    return cli_campaigns(cli);
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

/* The unit's status line (common/service.h): ready from the start, since serve binds first. */
static bool s_serve_state(void *arg, char *status, size_t len)
{
    const coord_t *coord = arg;
    snprintf(status, len, "listening on %s; %zu agent(s) alive, %zu campaign(s) running",
             coord_endpoint(coord), coord_alive_count(coord), coord_running_count(coord));
    return true;
}

static int s_cmd_serve(cli_t *cli)
{
    if (cli->n_positional) {
        fprintf(stderr, "fleetburn serve: unexpected argument '%s'\n", cli->positional[0]);
        return EXIT_USAGE;
    }
    char err[512];
    if (cli->bind && fb_endpoint_normalize(cli->bind, cli->bind_buf, sizeof cli->bind_buf, err,
                                           sizeof err)) {
        fprintf(stderr, "fleetburn serve: --bind: %s\n", err);
        return EXIT_USAGE;
    }
    const char *bind = cli->bind ? cli->bind_buf
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
    coord_options_t opts = {.resume = true,
                            .bind = bind,
                            .db_path = cli->db,
                            .heartbeat_ms = cli->heartbeat_ms,
                            .liveness = cli->liveness,
                            .keys_dir = cli->keys_dir,
                            .max_connections = cli->max_connections,
                            .max_connections_per_address = cli->max_per_address,
                            .forget_after_ms = cli->forget_after_ms,
                            .store_give_up_ms = cli->store_timeout_ms,
                            .handshake_ms = (uint32_t)cli->handshake_ms,
                            .io_threads = cli->io_threads,
                            .webhooks = {.allow = cli->webhook_allow, .ca_file = cli->webhook_ca},
                            .slurm_bin = cli->slurm_bin};
    if (webhook_options_check(&opts.webhooks, err, sizeof err)) {
        fprintf(stderr, "fleetburn serve: %s\n", err);
        return EXIT_USAGE;
    }
    if (cli->keys_dir && !fb_securemem_use())
        log_warn("CURVE secrets cannot be locked in RAM (RLIMIT_MEMLOCK); they stay out of core "
                 "dumps and are zeroed when freed");
    cli_http_t *http = NULL; /* cli_http.c: /metrics and the live view */
    if ((cli->http || cli->http_token_file) && !(http = cli_http_start(cli, err, sizeof err))) {
        fprintf(stderr, "fleetburn serve: %s\n", err);
        return EXIT_USAGE;
    }
    uv_loop_t *loop = uv_default_loop();
    coord_t *coord = coord_new(loop, &opts, err, sizeof err);
    if (!coord) {
        log_error("%s", err);
        cli_http_stop(&http);
        return EXIT_INFRA;
    }
    if (http)
        cli_http_attach(http, loop, coord);
    log_info("fleetburn %s coordinator on %s, database %s, %s%s, %u ZeroMQ I/O thread%s",
             FB_VERSION, coord_endpoint(coord), cli->db,
             cli->keys_dir ? "CURVE keys from " : "no keys", cli->keys_dir ? cli->keys_dir : "",
             cli->io_threads ? cli->io_threads : 1, cli->io_threads > 1 ? "s" : "");
    uv_signal_t sigint, sigterm, sighup;
    uv_signal_init(loop, &sigint);
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sighup);
    sighup.data = coord;
    uv_signal_start(&sigint, s_on_stop_signal, SIGINT);
    uv_signal_start(&sigterm, s_on_stop_signal, SIGTERM);
    uv_signal_start(&sighup, s_on_reload_signal, SIGHUP);
    fb_service_t *service = fb_service_start(loop, s_serve_state, coord);
    uv_run(loop, UV_RUN_DEFAULT);
    fb_service_stop(&service);
    cli_http_stop(&http);
    uv_close((uv_handle_t *)&sigint, NULL);
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&sighup, NULL);
    coord_destroy(&coord);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    return 0;
}

store_t *cli_open_store(const char *db)
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
    if (cli->baseline && strcmp(cli->format, "html")) {
        fprintf(stderr, "fleetburn report: --baseline needs --format html (`fleetburn compare` "
                        "compares metrics as text or JSON)\n");
        return EXIT_USAGE;
    }
    if (cli->n_positional > 1) {
        fprintf(stderr, "fleetburn report: expected at most one campaign id\n");
        return EXIT_USAGE;
    }
    if (cli->list)
        return cli_report_list(cli); /* cli_report.c */
    store_t *store = cli_open_store(cli->db);
    if (!store)
        return EXIT_INFRA;
    char *id = cli->n_positional ? xstrdup(cli->positional[0]) : NULL;
    int rc = 0;
    if (!id && store_latest_campaign(store, &id)) {
        fprintf(stderr, "fleetburn: %s holds no campaign yet\n", cli->db);
        store_destroy(&store);
        return EXIT_USAGE;
    }
    if (!strcmp(cli->format, "html")) {
        int status = cli_report_html(cli, store, id); /* cli_report_html.c */
        free(id);
        store_destroy(&store);
        return status;
    }
    if (!strcmp(cli->format, "json"))
        rc = report_write_json(store, id, stdout);
    else if (!strcmp(cli->format, "junit"))
        rc = report_write_junit(store, id, stdout);
    else if (!strcmp(cli->format, "csv"))
        rc = report_write_csv(store, id, stdout);
    else
        rc = report_write_text(store, id, stdout);
    if (rc == -EPIPE) /* `fleetburn report | head`: the reader had what it wanted */
        rc = 0;
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
    store_t *store = cli_open_store(cli->db);
    if (!store)
        return EXIT_INFRA;
    int rc = report_write_nodes(store, stdout);
    store_destroy(&store);
    return rc && rc != -EPIPE ? EXIT_INFRA : 0; /* -EPIPE: the reader of a pipe left */
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        cli_usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || (!strcmp(cmd, "help") && argc == 2)) {
        cli_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("fleetburn %s (protocol %d)\n", FB_VERSION, FB_PROTOCOL_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") && argc == 3) { /* fleetburn help CMD */
        if (cli_command_usage(argv[2], stdout))
            return 0;
        fprintf(stderr, "fleetburn: unknown command '%s'\n", argv[2]);
        cli_usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(cmd, "relay"))
        return cli_relay(argc, argv); /* cli_relay.c: options of its own */
    cli_t cli;
    if (s_parse_cli(argc, argv, &cli)) {
        if (!cli_command_usage(cmd, stderr)) {
            fprintf(stderr, "fleetburn: unknown command '%s'\n", cmd);
            cli_usage(stderr);
        }
        return EXIT_USAGE;
    }
    fb_log_init("fleetburn", cli.verbose ? FB_LOG_DEBUG : FB_LOG_WARN);
    if (!strcmp(cmd, "run")) {
        int rc = s_cmd_run(&cli);
        fb_conf_destroy(&cli.conf);
        return rc;
    }
    if (!strcmp(cmd, "follow") || !strcmp(cmd, "cancel") || !strcmp(cmd, "campaigns")) {
        int rc = s_cmd_client(&cli, cmd);
        fb_conf_destroy(&cli.conf);
        return rc;
    }
    if (!strcmp(cmd, "serve")) {
        fb_log_set_level(cli.verbose ? FB_LOG_DEBUG : FB_LOG_INFO);
        return s_cmd_serve(&cli);
    }
    /* The commands that need nothing but the command line. */
    static const struct {
        const char *name;
        int (*run)(cli_t *cli);
    } commands[] = {
        {"report", s_cmd_report}, {"timeline", cli_timeline},   /* cli_timeline.c */
        {"compare", cli_compare}, {"baseline", cli_baseline},   /* cli_compare.c */
        {"nodes", s_cmd_nodes},   {"expect", cli_expect},       /* cli_expect.c */
        {"keygen", s_cmd_keygen}, {"workloads", cli_workloads}, /* cli_workloads.c */
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(commands); i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(&cli);
    fprintf(stderr, "fleetburn: unknown command '%s'\n", cmd);
    cli_usage(stderr);
    return EXIT_USAGE;
}
