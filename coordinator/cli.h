/* SPDX-License-Identifier: Apache-2.0 */
/* The `fleetburn` command line, shared by its files: main.c (options, serve, report, nodes,
 * keygen), cli_local.c (`run --local`: an embedded coordinator and local agents), cli_remote.c
 * (`run --coordinator`: a client of `fleetburn serve`, its keys and configuration file) and
 * cli_progress.c (the progress line both runs show). */
#ifndef FB_CLI_H
#define FB_CLI_H

#include "campaign_file.h"
#include "coord.h"
#include "common/conffile.h"

#include <stdbool.h>
#include <stdint.h>

#define EXIT_PASS 0
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_INFRA 3
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

typedef struct {
    bool tty;
    uint64_t last_print;
    unsigned last_stage, last_done;
    bool printed;
} progress_view_t;

/* Shows a campaign's progress on stderr: one line rewritten on a terminal, a line per change
 * (and every 10 s) otherwise. */
void cli_show_progress(progress_view_t *view, const char *stage, unsigned idx, unsigned count,
                       unsigned total, unsigned done, unsigned failed, uint64_t elapsed_ms,
                       bool finished);
/* run --local: ownership of *campaign passes; yaml is borrowed. Returns the exit status. */
int cli_run_local(cli_t *cli, struct fb_campaign **campaign, char *yaml);
/* run --coordinator: submits cf (its text and attached files). Returns the exit status. */
int cli_run_remote(cli_t *cli, const campaign_file_t *cf);
/* Reads the client configuration into cli (coordinator, key, server_key where the command line
 * gave none). 0, or -EINVAL after printing why. */
int cli_load_client_config(cli_t *cli);

#endif
