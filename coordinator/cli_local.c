/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn run --local N`: an embedded coordinator on an ephemeral loopback port (no keys:
 * nothing off the host can reach it) and N fleetburn-agent processes named local-0 ...
 * local-(N-1), with a private work directory for their spools and logs (cli.h). */
#include "cli.h"
#include "report.h"
#include "conns.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/securemem.h"
#include "common/units.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "scheduler/campaign.h"
#include "scheduler/slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define LOCAL_REGISTER_TIMEOUT_MS 30000

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
    bool alert_let_go; /* Ctrl-C while the webhook alert's first attempt ran: it stays queued */
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
    uv_stdio_container_t stdio[3] = {
        {UV_IGNORE, {0}}, {UV_INHERIT_FD, {.fd = fd}}, {UV_INHERIT_FD, {.fd = fd}}};
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
        log_error("cannot start %s: %s%s", agent_path, uv_strerror(rc),
                  rc == UV_ENOENT ? " (run --local starts fleetburn-agent from the directory of "
                                    "fleetburn: install the fleetburn-agent package)"
                                  : "");
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
    cli_show_progress(&run->view, p->stage, p->stage_index, p->stage_count, p->tasks_total,
                      p->tasks_done, p->tasks_failed, p->elapsed_ms, p->finished);
    if (p->finished) { /* the signals stay handled: a webhook alert may still be on its way */
        run->campaign_done = true;
        run->verdict = p->verdict;
        s_stop_agents(run);
    }
}

static void s_on_wait(uv_timer_t *h)
{
    local_run_t *run = h->data;
    size_t alive = coord_alive_count(run->coord);
    if (alive >= run->n_agents) {
        uv_timer_stop(h);
        uv_close((uv_handle_t *)h, NULL);
        char *id = NULL, *error = NULL;
        coord_start_t how = {.cb = s_local_progress, .cb_arg = run};
        int rc = coord_start_campaign(run->coord, &run->campaign, run->yaml, &how, &id, &error);
        if (rc) {
            log_error("cannot start the campaign: %s", error ? error : strerror(-rc));
            free(error);
            run->exit_code = rc == -EINVAL ? EXIT_USAGE : EXIT_INFRA; /* -EINVAL: the campaign's */
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
        fprintf(stderr,
                "fleetburn: only %zu of %u local agents registered within %d s; see the "
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
    if (run->campaign_done && run->campaign_started) {
        if (coord_webhooks_in_flight(run->coord))
            fprintf(stderr,
                    "\nfleetburn: not waiting for the webhook alert; it stays queued in %s\n",
                    run->cli->db);
        run->alert_let_go = true;
        uv_close((uv_handle_t *)&run->sigint, NULL);
        uv_close((uv_handle_t *)&run->sigterm, NULL);
        return;
    }
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

int cli_run_local(cli_t *cli, fb_campaign_t **campaign, char *yaml)
{
    uv_loop_t *loop = uv_default_loop();
    /* The embedded coordinator runs as the operator: its webhooks may go to any host. */
    coord_options_t copts = {.bind = "tcp://127.0.0.1:*",
                             .db_path = cli->db,
                             .heartbeat_ms = cli->heartbeat_ms,
                             .liveness = cli->liveness,
                             .webhooks = {.allow_any = true, .ca_file = cli->webhook_ca},
                             .slurm_bin = cli->slurm_bin};
    if (fb_campaign_slurm_selections(*campaign, NULL, 0)) {
        /* Slurm lists the fleet's nodes; run --local's agents are local-0 ... local-(N-1) */
        fprintf(stderr, "fleetburn: nodes: slurm:... selects the nodes of a Slurm cluster, whose "
                        "agents register with `fleetburn serve`; run it with --coordinator EP "
                        "(run --local starts its own agents, local-0 ...)\n");
        fb_campaign_destroy(campaign);
        return EXIT_USAGE;
    }
    char err[512];
    if (webhook_options_check(&copts.webhooks, err, sizeof err)) {
        fprintf(stderr, "fleetburn: %s\n", err);
        fb_campaign_destroy(campaign);
        return EXIT_USAGE;
    }
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
    snprintf(run.workdir, sizeof run.workdir, "%s/fleetburn-local-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(run.workdir)) {
        fprintf(stderr, "fleetburn: cannot create a work directory: %s\n", strerror(errno));
        coord_destroy(&coord);
        fb_campaign_destroy(&run.campaign);
        return EXIT_INFRA;
    }
    char *agent_path = fb_program_path("fleetburn-agent");
    /* Local agents are not a unit's daemon: a `run` started by systemd keeps them from sending it
     * READY and watchdog pings from PIDs it does not know. */
    unsetenv("NOTIFY_SOCKET");
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
    /* The loop runs until the campaign ended, every agent exited and the first attempt of its
     * webhook alert ended; the coordinator's own handles keep it alive, so stop it from a check
     * once that is true. */
    bool said_alert = false;
    while (!(run.campaign_done && run.n_exited == run.n_agents &&
             (run.alert_let_go || !coord_webhooks_in_flight(coord)))) {
        if (run.campaign_done && run.n_exited == run.n_agents && !said_alert) {
            fprintf(stderr,
                    "posting the campaign's webhook alert (Ctrl-C leaves it queued in %s)\n",
                    cli->db);
            said_alert = true;
        }
        if (!run.campaign_done && !run.campaign_started && run.n_exited == run.n_agents &&
            run.n_agents > 0 && rc == 0) {
            fprintf(stderr,
                    "fleetburn: every local agent exited before the campaign started; "
                    "see %s\n",
                    run.workdir);
            cli->keep_logs = true;
            run.exit_code = EXIT_INFRA;
            break;
        }
        uv_run(loop, UV_RUN_ONCE);
    }
    if (run.campaign_started && !run.interrupted) {
        s_print_summary(coord_store(coord), run.campaign_id);
        run.exit_code = fb_verdict_ok(run.verdict) ? EXIT_PASS : EXIT_FAILED;
        run.exit_code =
            cli_compare_after_run(cli, coord_store(coord), run.campaign_id, run.exit_code);
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
