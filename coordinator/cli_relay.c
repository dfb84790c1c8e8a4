/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn relay`: its command line, signals and loop (the relay itself is relay.c).
 *
 *   fleetburn relay --coordinator EP --bind EP --keys DIR --key FILE --server-key FILE
 *
 * Exit status: 0 on SIGINT/SIGTERM, 2 for a bad command line, 3 when it cannot start. */
#include "cli.h"
#include "relay.h"
#include "common/endpoint.h"
#include "common/log.h"
#include "common/securemem.h"
#include "common/units.h"
#include "common/util.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: fleetburn relay --coordinator EP --bind EP [--keys DIR --key FILE "
            "--server-key FILE]\n"
            "                       [--max-connections N] [--max-connections-per-address N]\n"
            "                       [--handshake-timeout DURATION] [--verbose]\n"
            "Holds the connections of many agents and speaks for them to the coordinator over\n"
            "one connection of its own (docs/operations.md \"Relays\").\n"
            "  --coordinator EP   the coordinator (tcp://HOST:PORT, HOST:PORT or HOST)\n"
            "  --bind EP          where agents connect (they pin this relay's public key)\n"
            "  --keys DIR         the agents' keys: DIR/agents/*.pub, as the coordinator's\n"
            "                     (re-read on SIGHUP)\n"
            "  --key FILE         this relay's secret key (FILE.pub in the coordinator's\n"
            "                     KEYS/relays/NAME.pub, with a nodes: HOSTLIST line)\n"
            "  --server-key FILE  the coordinator's public key, pinned\n"
            "Without keys the relay binds loopback only.\n");
}

static void s_on_stop(uv_signal_t *h, int signum)
{
    log_info("signal %d: stopping", signum);
    uv_stop(h->loop);
}

static void s_on_reload(uv_signal_t *h, int signum)
{
    (void)signum;
    char err[512];
    if (relay_reload_keys(h->data, err, sizeof err))
        log_error("SIGHUP: keys not reloaded: %s", err);
    else
        log_info("SIGHUP: keys reloaded");
}

static int s_endpoint(const char *opt, const char *text, char *out, size_t outlen)
{
    char err[256];
    if (!text) {
        fprintf(stderr, "fleetburn relay: %s is required\n", opt);
        return -1;
    }
    if (fb_endpoint_normalize(text, out, outlen, err, sizeof err)) {
        fprintf(stderr, "fleetburn relay: %s: %s\n", opt, err);
        return -1;
    }
    return 0;
}

static int s_count(const char *opt, const char *text, unsigned *out)
{
    uint64_t v;
    if (fb_parse_uint(text, 1000000, &v)) {
        fprintf(stderr, "fleetburn relay: %s: '%s' is not a number up to 1000000\n", opt, text);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int s_run(const relay_options_t *opts)
{
    if (opts->keys_dir && !fb_securemem_use())
        log_warn("CURVE secrets cannot be locked in RAM (RLIMIT_MEMLOCK); they stay out of core "
                 "dumps and are zeroed when freed");
    uv_loop_t *loop = uv_default_loop();
    char err[512];
    relay_t *relay = relay_new(loop, opts, err, sizeof err);
    if (!relay) {
        log_error("%s", err);
        return EXIT_INFRA;
    }
    log_info("fleetburn %s relay on %s for coordinator %s, %s%s", FB_VERSION,
             relay_endpoint(relay), opts->coordinator,
             opts->keys_dir ? "agents' keys from " : "no keys",
             opts->keys_dir ? opts->keys_dir : "");
    uv_signal_t sigint, sigterm, sighup;
    uv_signal_init(loop, &sigint);
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sighup);
    sighup.data = relay;
    uv_signal_start(&sigint, s_on_stop, SIGINT);
    uv_signal_start(&sigterm, s_on_stop, SIGTERM);
    uv_signal_start(&sighup, s_on_reload, SIGHUP);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&sigint, NULL);
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&sighup, NULL);
    relay_destroy(&relay);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    return 0;
}

int cli_relay(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"coordinator", required_argument, 0, 'c'},
        {"bind", required_argument, 0, 'b'},
        {"keys", required_argument, 0, 'k'},
        {"key", required_argument, 0, 'y'},
        {"server-key", required_argument, 0, 'Y'},
        {"max-connections", required_argument, 0, 'm'},
        {"max-connections-per-address", required_argument, 0, 'M'},
        {"handshake-timeout", required_argument, 0, 'H'},
        {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *coordinator = NULL, *bind = NULL;
    relay_options_t opts = {0};
    bool verbose = false;
    optind = 2; /* after "relay" */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        uint64_t ms;
        switch (c) {
        case 'c': coordinator = optarg; break;
        case 'b': bind = optarg; break;
        case 'k': opts.keys_dir = optarg; break;
        case 'y': opts.key_file = optarg; break;
        case 'Y': opts.server_key_file = optarg; break;
        case 'm':
            if (s_count("--max-connections", optarg, &opts.max_connections))
                return EXIT_USAGE;
            break;
        case 'M':
            if (s_count("--max-connections-per-address", optarg, &opts.max_per_address))
                return EXIT_USAGE;
            break;
        case 'H':
            if (fb_parse_duration_ms(optarg, &ms) || ms == 0 || ms > 3600000) {
                fprintf(stderr, "fleetburn relay: --handshake-timeout: '%s' is not a duration "
                                "between 1ms and 1h (e.g. 5s)\n",
                        optarg);
                return EXIT_USAGE;
            }
            opts.handshake_ms = (unsigned)ms;
            break;
        case 'v': verbose = true; break;
        case 'h': s_usage(stdout); return 0;
        case ':':
            fprintf(stderr, "fleetburn relay: %s needs a value\n", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            fprintf(stderr, "fleetburn relay: unknown option '%s'\n", argv[optind - 1]);
            s_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fleetburn relay: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    char coord_ep[FB_ENDPOINT_MAX], bind_ep[FB_ENDPOINT_MAX];
    if (s_endpoint("--coordinator", coordinator, coord_ep, sizeof coord_ep) ||
        s_endpoint("--bind", bind, bind_ep, sizeof bind_ep))
        return EXIT_USAGE;
    if (!opts.keys_dir != !opts.key_file || !opts.key_file != !opts.server_key_file) {
        fprintf(stderr, "fleetburn relay: --keys, --key and --server-key go together (the "
                        "agents' keys, this relay's secret key, the coordinator's public key)\n");
        return EXIT_USAGE;
    }
    if (!opts.keys_dir && !fb_endpoint_is_local(bind_ep)) {
        fprintf(stderr, "fleetburn relay: %s is reachable from other hosts; without keys anyone "
                        "who reaches it could register as any node. Give --keys, --key and "
                        "--server-key (docs/operations.md \"Relays\").\n",
                bind_ep);
        return EXIT_USAGE;
    }
    opts.coordinator = coord_ep;
    opts.bind = bind_ep;
    fb_log_init("fleetburn relay", verbose ? FB_LOG_DEBUG : FB_LOG_INFO);
    return s_run(&opts);
}
