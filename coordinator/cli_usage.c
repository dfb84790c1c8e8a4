/* SPDX-License-Identifier: Apache-2.0 */
/* The usage text of `fleetburn` (cli.h): every command's synopsis and options in one text, from
 * which `fleetburn CMD --help` takes its command's part, so that the two cannot differ. */
#include "cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_usage(FILE *out)
{
    fprintf(out,
            "usage: fleetburn COMMAND [options]\n"
            "\n"
            "  run CAMPAIGN.yaml [--local N | --coordinator EP [--queue] [--wait D]] [--db PATH]\n"
            "      Run a campaign and wait for it. --local N (default 1) starts an embedded\n"
            "      coordinator and N local agents; --coordinator hands the campaign to a\n"
            "      running `fleetburn serve`; it prints \"submitted ... as ID\" once the\n"
            "      coordinator accepts it, follows it through coordinator restarts, and\n"
            "      Ctrl-C detaches (exit 130; the campaign keeps running).\n"
            "      --queue                   wait for nodes another campaign holds instead\n"
            "                                of being refused\n"
            "      --wait DURATION           give up (exit 3) when the coordinator stays\n"
            "                                silent this long (default 2m; also follow,\n"
            "                                cancel, campaigns)\n"
            "      --inject NODE:[WORKLOAD.]KEY=VALUE\n"
            "                                test-only: pass a fault-injection parameter to one\n"
            "                                local agent (e.g. local-1:memtest.inject_bitflips=4);\n"
            "                                an unknown node, workload or key is an error\n"
            "      --keep-logs               keep local agents' logs (printed path)\n"
            "      --agent-config FILE       the local agents' site configuration (their\n"
            "                                --config; default /etc/fleetburn/agent.conf)\n"
            "      --baseline ID|latest|NAME compare with this campaign once it ended (latest:\n"
            "                                the previous finished one of the same name; with\n"
            "                                --coordinator, --db is the coordinator's database);\n"
            "                                a regression makes the exit status 1\n"
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
            "      --store-timeout DURATION  how long running campaigns are held while the\n"
            "                                database cannot be written before they end\n"
            "                                error (default 1m; docs/operations.md)\n"
            "      --handshake-timeout DURATION\n"
            "                                a connection must finish its ZeroMQ handshake\n"
            "                                within this (default 5s)\n"
            "      --io-threads N            ZeroMQ I/O threads for agents' connections and\n"
            "                                their CURVE handshakes, 1-16 (default 1)\n"
            "      Webhook alerts (docs/operations.md, \"Alerts\"):\n"
            "      --webhook-allow HOSTS     the hosts campaigns' webhooks may post to, by\n"
            "                                commas: hooks.example.com, *.example.com,\n"
            "                                10.1.2.3:8080, or * for any (default: none)\n"
            "      --webhook-ca FILE         CA bundle (PEM) for https webhooks (default: the\n"
            "                                system's; also run --local)\n"
            "      Metrics and the live view (docs/operations.md, \"Metrics and the live view\"):\n"
            "      --http ADDR               serve /metrics (Prometheus) and the campaigns' live\n"
            "                                HTML reports on ADDR (127.0.0.1:9108; another\n"
            "                                address needs --http-token-file)\n"
            "      --http-token-file FILE    require \"Authorization: Bearer TOKEN\" (the file's\n"
            "                                first line, mode 0600, 16+ characters)\n"
            "      --slurm-bin DIR           where sinfo and scontrol are, for campaigns with\n"
            "                                nodes: slurm:... or actions.slurm (default: PATH;\n"
            "                                docs/operations.md \"Slurm\")\n"
            "  follow [ID]\n"
            "      Re-attach to a running campaign's progress (default: the one running) and\n"
            "      wait for its end; exit status as run's.\n"
            "  cancel [ID] [--reason TEXT]\n"
            "      Cancel a campaign: its running tasks are stopped, it ends `cancelled`.\n"
            "  campaigns [--format text|json]\n"
            "      List the coordinator's campaigns: id, name, state (queued, running,\n"
            "      finished, cancelled, interrupted), verdict, start, duration, nodes held.\n"
            "  relay --coordinator EP --bind EP [--keys DIR --key FILE --server-key FILE]\n"
            "      Hold the connections of many agents and speak for them to the coordinator\n"
            "      over one connection (docs/operations.md \"Relays\"; fleetburn relay --help).\n"
            "  keygen PATH\n"
            "      Write a CURVE key pair: PATH (secret, mode 0600) and PATH.pub; never\n"
            "      overwrites.\n"
            "  report [CAMPAIGN_ID] [--format text|json|html|junit|csv] [--baseline ID|NAME|latest]\n"
            "         [--db PATH]\n"
            "      Report a campaign (default: the latest). html: one self-contained file\n"
            "      (diagnosis, timeline, fleet heatmap, charts); --baseline draws its allreduce\n"
            "      bandwidth against that campaign's. junit is a testcase per task for CI\n"
            "      systems, csv one row per task metric.\n"
            "  report --list [--format text|json] [--db PATH]\n"
            "      List the campaigns the database holds, newest first.\n"
            "  timeline [CAMPAIGN_ID] [--node NODE] [--format text|json|trace] [--db PATH]\n"
            "      What a campaign did in time order (default: the latest): stages, tasks,\n"
            "      progress and log events, telemetry. trace is Chrome trace-event JSON\n"
            "      for ui.perfetto.dev or chrome://tracing.\n"
            "  nodes [--db PATH]\n"
            "      List agents, their state and inventory.\n"
            "  expect --from NODE [--db PATH]\n"
            "      Print the expect section (docs/campaign-file.md) that NODE's stored\n"
            "      inventory meets, to paste into a campaign file.\n"
            "  compare BASE [CAMPAIGN] [--format text|json] [--db PATH]\n"
            "      Compare every metric of CAMPAIGN (default: the latest) with BASE (a campaign\n"
            "      id, a baseline name, or latest: the previous finished campaign of the same\n"
            "      name). Exit 0 no regression, 1 a regression, 2 unknown campaign or name.\n"
            "  baseline set NAME CAMPAIGN_ID | baseline list | baseline delete NAME [--db PATH]\n"
            "      Keep a finished campaign as a named baseline for compare and run --baseline.\n"
            "  workloads [NAME] [--markdown]\n"
            "      List the workloads a campaign may run, or NAME's parameters (type, default,\n"
            "      meaning). --markdown prints the tables of docs/campaign-file.md.\n"
            "\n"
            "Clients (run --coordinator, follow, cancel, campaigns): --coordinator EP, where\n"
            "        EP is tcp://HOST:PORT, HOST:PORT or HOST (port 7755) (for follow, cancel,\n"
            "        campaigns default " FB_CLIENT_DEFAULT_COORDINATOR "), --key FILE (own\n"
            "        secret key, an operator's) and --server-key FILE (the coordinator's public\n"
            "        key, pinned). --config FILE (default ~/.config/fleetburn/client.conf, else\n"
            "        /etc/fleetburn/client.conf) may set coordinator, key and server_key.\n"
            "Common: --db PATH (default ./fleetburn.db or $FLEETBURN_DB), --heartbeat-ms MS,\n"
            "        --liveness N (heartbeats missed before an agent is lost), --verbose.\n"
            "        --help after a command shows that command's usage; --version.\n"
            "Exit status of run and follow: 0 all passed, 1 a task did not pass, 2 usage or\n"
            "campaign error, 3 the campaign could not be run, was cancelled or the coordinator\n"
            "stayed silent past --wait, 130 detached with Ctrl-C.\n");
}

/* The line of text that starts command cmd's part of the usage ("  cmd ..."), or NULL. */
static const char *s_usage_section(const char *text, const char *cmd)
{
    size_t n = strlen(cmd);
    for (const char *line = text; *line;) {
        if (!strncmp(line, "  ", 2) && !strncmp(line + 2, cmd, n) &&
            (line[2 + n] == ' ' || line[2 + n] == '\n'))
            return line;
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    return NULL;
}

/* Where a command's part ends: at the next command's line (two blanks, then a letter) or a blank
 * line. */
static const char *s_usage_section_end(const char *start)
{
    const char *nl = strchr(start, '\n');
    while (nl && nl[1] && nl[1] != '\n' && !(nl[1] == ' ' && nl[2] == ' ' && nl[3] != ' '))
        nl = strchr(nl + 1, '\n');
    return nl ? nl + 1 : start + strlen(start);
}

/* The last paragraph of a text: after its last blank line. */
static const char *s_last_paragraph(const char *text)
{
    const char *last = NULL;
    for (const char *p = strstr(text, "\n\n"); p; p = strstr(p + 1, "\n\n"))
        last = p + 2;
    return last ? last : "";
}

/* `fleetburn CMD --help`: CMD's part of the usage above (its line and the lines indented under
 * it), then the notes common to every command. Taken from the one usage text, so that the two
 * cannot differ. False when there is no command CMD. */
bool cli_command_usage(const char *cmd, FILE *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return false;
    cli_usage(mem);
    fclose(mem);
    const char *start = s_usage_section(text, cmd);
    if (start) {
        const char *end = s_usage_section_end(start);
        fprintf(out, "usage: fleetburn %.*s\n%s", (int)(end - start - 2), start + 2,
                s_last_paragraph(text));
    }
    free(text);
    return start != NULL;
}
