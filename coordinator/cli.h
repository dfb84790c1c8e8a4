/* SPDX-License-Identifier: Apache-2.0 */
/* The `fleetburn` command line, shared by its files: main.c (options, serve, report, nodes,
 * keygen), cli_local.c (`run --local`: an embedded coordinator and local agents), cli_remote.c
 * (the clients of `fleetburn serve`: `run --coordinator`, `follow`, `cancel`, `campaigns`, their
 * keys and configuration file) and cli_progress.c (the progress line both runs show, and the
 * campaigns table). */
#ifndef FB_CLI_H
#define FB_CLI_H

#include "campaign_file.h"
#include "coord.h"
#include "common/conffile.h"
#include "common/endpoint.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define EXIT_PASS 0
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_INFRA 3
#define EXIT_DETACHED 130 /* Ctrl-C: the client let go; the campaign keeps running */
#define FB_CLIENT_DEFAULT_COORDINATOR "tcp://127.0.0.1:7755" /* serve's default without keys */
#define FB_CLIENT_DEFAULT_WAIT_MS 120000 /* --wait: how long a coordinator may stay silent */
#define FB_CLIENT_CONFIG_DEFAULT "/etc/fleetburn/client.conf"
#define MAX_INJECT 64

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
    uint64_t wait_ms; /* client: --wait (FB_CLIENT_DEFAULT_WAIT_MS) */
    bool wait_given;
    bool queue;         /* run --coordinator: --queue */
    const char *reason; /* cancel: --reason */
    const char *from;   /* expect: --from NODE */
    bool markdown;      /* workloads: --markdown */
    const char *node;   /* timeline: --node NODE */
    bool list;          /* report: --list */
    const char *format;
    unsigned local;
    bool local_given;
    uint32_t heartbeat_ms, liveness;
    uint32_t max_connections, max_per_address; /* serve */
    uint64_t forget_after_ms;                  /* serve */
    uint64_t store_timeout_ms;                 /* serve: --store-timeout */
    uint64_t handshake_ms;                     /* serve */
    unsigned io_threads;                       /* serve; 0: 1 */
    const char *webhook_allow;                 /* serve: --webhook-allow */
    const char *webhook_ca;                    /* serve, run --local: --webhook-ca */
    bool verbose, keep_logs;
    const char *agent_config; /* run --local: --config of the local agents */
    const char *slurm_bin;    /* serve, run --local: --slurm-bin DIR (sinfo, scontrol) */
    const char *baseline;     /* run --baseline ID|latest|NAME (cli_compare.c) */
    const char *http;            /* serve --http ADDR (cli_http.c) */
    const char *http_token_file; /* serve --http-token-file FILE */
    const char *inject[MAX_INJECT];
    size_t n_inject;
    const char *positional[4];
    size_t n_positional;
    /* --coordinator (or the client configuration's) and --bind as ZeroMQ endpoints: HOST:PORT
     * means tcp://HOST:PORT (common/endpoint.h) */
    char coordinator_buf[FB_ENDPOINT_MAX];
    char bind_buf[FB_ENDPOINT_MAX];
} cli_t;

typedef struct {
    bool tty;
    unsigned width; /* the terminal's columns (tty) */
    uint64_t last_print;
    unsigned last_stage, last_done, last_failed;
    char last_note[512];
    bool printed;
} progress_view_t;

/* A running node as the progress shows it (the worker's latest progress event). */
typedef struct {
    const char *node, *phase; /* phase: "" before the worker's first event */
    double fraction;
    uint64_t elapsed_ms, eta_ms; /* eta 0: unknown */
} cli_node_progress_t;

/* A campaign's progress, from the embedded coordinator or a Progress message. Text is shown as
 * given: callers make peer text safe for a terminal first. */
typedef struct {
    const char *stage;
    unsigned stage_index, stage_count;
    unsigned total, done, failed, running;
    uint64_t elapsed_ms, eta_ms; /* eta 0: unknown */
    const char *stage_note;      /* why the stage did not run, or NULL/"" */
    const cli_node_progress_t *nodes; /* the slowest running, slowest first */
    size_t n_nodes;
    bool finished;
} cli_progress_t;

/* The slowest nodes a progress line names. */
#define CLI_PROGRESS_SLOWEST 3

/* Sets up view for stderr: a terminal gets one line rewritten in place (cut to its width), any
 * other file plain lines without carriage returns or escape codes. Log lines end an open
 * terminal line first (fb_log_set_before). */
void cli_progress_init(progress_view_t *view);
/* Shows a campaign's progress on stderr: per stage the tasks done, failed and running, the time
 * elapsed, the estimated time left, and the slowest nodes with their workers' phase. On a
 * terminal the line is rewritten at most once a second; otherwise a line is printed when the
 * counts change and every 5 to 60 s (a tenth of the time elapsed). A stage that cannot run gets a
 * line saying why. */
void cli_show_progress(progress_view_t *view, const cli_progress_t *p);
/* Ends a progress line left open on a terminal, so that a message starts on its own line. */
void cli_progress_break(progress_view_t *view);
/* The campaigns table of `fleetburn campaigns` (ID, NAME, STATE, VERDICT, STARTED, DURATION,
 * NODES), or with json a {"campaigns": [...]} document; now_ms (epoch) times the running ones. */
void cli_print_campaigns(const Fleetburn__CampaignList *list, bool json, uint64_t now_ms,
                         FILE *out);
/* run --local: ownership of *campaign passes; yaml is borrowed. Returns the exit status. */
int cli_run_local(cli_t *cli, struct fb_campaign **campaign, char *yaml);
/* run --coordinator: submits cf (its text and attached files). Returns the exit status. */
int cli_run_remote(cli_t *cli, const campaign_file_t *cf);
/* follow [ID]: re-attaches to a campaign's progress; exits like run (0, 1; 3 when it was
 * cancelled or cannot be followed). cancel [ID] [--reason TEXT]: 0 once it ended `cancelled`.
 * campaigns: the table of the coordinator's campaigns. A malformed ID exits 2. */
int cli_follow(cli_t *cli);
int cli_cancel(cli_t *cli);
int cli_campaigns(cli_t *cli);
/* expect --from NODE: the expect section NODE's stored inventory meets, on stdout (cli_expect.c).
 * Returns the exit status: 2 for a missing or unknown node, 3 when the database cannot be read. */
int cli_expect(cli_t *cli);
/* `fleetburn workloads [NAME] [--markdown]` (cli_workloads.c). */
int cli_workloads(cli_t *cli);
/* Regressions (cli_compare.c, docs/regressions.md). compare BASE [CAMPAIGN]: 0 no regression,
 * 1 a regression, 2 an unknown campaign or baseline, 3 the database. baseline set NAME ID | list |
 * delete NAME. cli_baseline_check: run --baseline, before the campaign runs: 0, or the exit status
 * after saying why not (an unknown campaign or name, no database to compare in). After it ran:
 * cli_compare_after_run prints the comparison and returns the exit status, run_code made 1 by a
 * regression (store NULL: opened from --db). */
int cli_compare(cli_t *cli);
int cli_baseline(cli_t *cli);
int cli_baseline_check(cli_t *cli, const struct fb_campaign *campaign);
/* What a baseline argument (ID, NAME or latest) stands for, for campaign_id: 0 with *id_out
 * (heap), -ENOENT with a message in *why (heap) when it names nothing, or the store's error. */
int cli_baseline_resolve(store_t *store, const char *db, const char *spec,
                         const char *campaign_id, char **id_out, char **why);
/* serve --http (cli_http.c): cli_http_start validates the address and token and starts the
 * listener (NULL with a message in err); cli_http_attach publishes coord's health to it from the
 * loop; cli_http_stop stops both (the loop must run once more to close the timer). */
typedef struct cli_http cli_http_t;
cli_http_t *cli_http_start(const cli_t *cli, char *err, size_t errlen);
void cli_http_attach(cli_http_t *self, uv_loop_t *loop, coord_t *coord);
void cli_http_stop(cli_http_t **self_p);
/* report --format html [--baseline ID|NAME|latest] (cli_report_html.c): the exit status. */
int cli_report_html(cli_t *cli, store_t *store, const char *campaign_id);
int cli_compare_after_run(cli_t *cli, store_t *store, const char *campaign_id, int run_code);
/* run --local --inject NODE:[WORKLOAD.]KEY=VALUE (cli_inject.c): every NODE one of the local
 * agents, every WORKLOAD one that a stage of the campaign runs, every KEY a parameter of it and
 * VALUE valid for it. 0, or -EINVAL after printing what is wrong. */
int cli_check_injections(const cli_t *cli, const struct fb_campaign *campaign);
/* timeline [ID] [--node N] [--format text|json|trace] (cli_timeline.c): what a campaign did in
 * time order, its telemetry; trace is Chrome trace-event JSON for Perfetto. Returns the exit
 * status: 2 for an unknown campaign or format, 3 when the database cannot be read. */
int cli_timeline(cli_t *cli);
/* relay --coordinator EP --bind EP [--keys DIR --key FILE --server-key FILE] (cli_relay.c): parses
 * its own options from argv[2] on; the exit status. */
int cli_relay(int argc, char **argv);
/* report --list [--format text|json] (cli_report.c): the campaigns of the database, newest first,
 * in the table of `fleetburn campaigns`. Returns the exit status. */
int cli_report_list(cli_t *cli);
/* Opens an existing database for reading (report, nodes, timeline), or says why not on stderr and
 * returns NULL. */
store_t *cli_open_store(const char *db);
/* Reads the client configuration into cli (coordinator, key, server_key where the command line
 * gave none). 0, or -EINVAL after printing why. */
int cli_load_client_config(cli_t *cli);

/* The usage of every command (cli_usage.c), and `fleetburn CMD --help`: CMD's part of it and the
 * notes common to all; false when there is no command CMD. */
void cli_usage(FILE *out);
bool cli_command_usage(const char *cmd, FILE *out);

#endif
