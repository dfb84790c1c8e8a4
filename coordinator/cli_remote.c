/* SPDX-License-Identifier: Apache-2.0 */
/* The clients of `fleetburn serve` (docs/operations.md "Following and cancelling campaigns"):
 * `run --coordinator EP` submits a campaign with the files it names and follows it to its end;
 * `follow [ID]` re-attaches to one; `cancel [ID]` ends one `cancelled`; `campaigns` lists them.
 * They share one connection: the keys and endpoint (the command line, else the client
 * configuration file: cli.h, docs/security.md "Client settings"), a refused handshake said at
 * once, and a coordinator that may go away. The DEALER reconnects by itself; a restarted
 * coordinator does not know this client, so after every reconnect the client asks to FOLLOW its
 * campaign again, and while nothing arrives it asks every few seconds (a FOLLOW is answered at
 * once with the state now), so silence means the coordinator is gone or stalled, never a quiet
 * stage. Past --wait of silence it gives up (exit 3) saying how to follow again. Ctrl-C
 * detaches: the campaign keeps running. */
#include "cli.h"
#include "report.h"
#include "conns.h"
#include "common/hostlist.h"
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

/* --- one client connection ------------------------------------------------------------------ */

typedef enum { S_RUN, S_FOLLOW, S_CANCEL, S_LIST } s_mode_t;

/* How often the loop looks at the clock: the resolution of --wait and of the probes. */
#define S_TICK_MS 100

typedef struct {
    s_mode_t mode;
    cli_t *cli;
    const campaign_file_t *cf; /* run */
    const char *asked;         /* follow, cancel: the id given ("" for the one running) */
    uv_loop_t *loop;
    void *zctx;
    fb_zsock_t *zs, *monitor;
    uv_timer_t tick;
    uv_signal_t sigint;
    int exit_code;
    bool done;
    char *id;          /* the campaign, once the coordinator named it (heap) */
    char *ran_id;      /* run: the campaign it followed to its end, kept for --baseline */
    bool attached;     /* a Progress of it arrived (run: the acceptance) */
    bool queued;       /* its last known state was queued */
    bool want_holders; /* run --queue: a list asked for, to name who holds the nodes */
    bool want_end;     /* it ended while this client was away: a list asked for its verdict */
    char *end_error;   /* ... and what the coordinator said meanwhile */
    char *end_summary; /* ... and the summary it sent with that (NULL: none) */
    bool connected, lost, ever_connected, retry_said, refollow;
    uint64_t last_heard, last_probe, probe_ms;
    progress_view_t view;
} remote_t;

#define S_MONITOR_EVENTS                                                                           \
    (FB_ZSOCK_HANDSHAKE_FAILED | ZMQ_EVENT_CONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |             \
     ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECT_RETRIED)

static void s_end(remote_t *r, int exit_code)
{
    r->exit_code = exit_code;
    r->done = true;
}

static const char *s_wait_text(const remote_t *r, char *buf, int len)
{
    return fb_format_duration(r->cli->wait_ms, buf, len);
}

static bool s_following(const remote_t *r)
{
    return r->id && r->attached && (r->mode == S_RUN || r->mode == S_FOLLOW);
}

/* The keys a hint must repeat: none when they come from the configuration file, which the
 * command in the hint reads too. */
static const char *s_keys_hint(const remote_t *r)
{
    const char *conf_key = fb_conf_get(r->cli->conf, "key");
    return r->cli->key_file && r->cli->key_file != conf_key
               ? " (with the same --key and --server-key)"
               : "";
}

static int s_send(remote_t *r, Fleetburn__Envelope *env)
{
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(env, &len);
    const void *frames[] = {buf};
    int rc = fb_zsock_send(r->zs, frames, &len, 1);
    free(buf);
    return rc;
}

static int s_request(remote_t *r, Fleetburn__CampaignRequest__Action action, const char *id)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__CampaignRequest m = FLEETBURN__CAMPAIGN_REQUEST__INIT;
    m.action = action;
    m.campaign_id = (char *)(id ? id : "");
    m.reason = (char *)(r->cli->reason ? r->cli->reason : "");
    env.body_case = FLEETBURN__ENVELOPE__BODY_CAMPAIGN_REQUEST;
    env.campaign_request = &m;
    return s_send(r, &env);
}

/* The Submit of run: the campaign and its files, and --queue. */
static int s_submit(remote_t *r)
{
    size_t len = 0;
    uint8_t *buf = campaign_file_encode_submit(r->cf, &len);
    if (r->cli->queue) {
        Fleetburn__Envelope *env = NULL;
        char err[256];
        if (fb_wire_decode(buf, len, &env, err, sizeof err)) {
            free(buf);
            fprintf(stderr, "fleetburn: cannot encode the submission: %s\n", err);
            return -EINVAL;
        }
        free(buf);
        env->submit->queue = true;
        buf = fb_wire_encode(env, &len);
        fb_wire_free(&env);
    }
    const void *frames[] = {buf};
    int rc = fb_zsock_send(r->zs, frames, &len, 1);
    free(buf);
    if (rc)
        fprintf(stderr, "fleetburn: cannot submit to %s: %s\n", r->cli->coordinator,
                zmq_strerror(-rc));
    return rc;
}

/* --- what the coordinator says -------------------------------------------------------------- */

/* Campaign A holds n[1-2]: the running campaigns that hold a node this one selects (all of them
 * when it selects `all`). Heap, or NULL when none does. */
static char *s_holders(const remote_t *r, const Fleetburn__CampaignList *list)
{
    const fb_campaign_t *c = r->cf ? r->cf->campaign : NULL;
    char **mine = NULL;
    size_t n_mine = 0;
    bool all = !c;
    for (size_t i = 0; c && i < c->n_stages && !all; i++) {
        char **names = NULL, err[256];
        size_t n = 0;
        bool stage_all = false;
        if (fb_stage_nodes(c, &c->stages[i], &stage_all, &names, &n, err, sizeof err) ||
            stage_all) {
            all = true;
            fb_hostlist_free(names, n);
            break;
        }
        mine = xrealloc(mine, (n_mine + n + 1) * sizeof *mine);
        memcpy(mine + n_mine, names, n * sizeof *names);
        n_mine += n;
        free(names);
    }
    char *msg = NULL;
    for (size_t i = 0; i < list->n_campaigns; i++) {
        const Fleetburn__CampaignInfo *info = list->campaigns[i];
        if (!info->nodes[0] || (r->id && !strcmp(info->id, r->id)))
            continue;
        char **held = NULL;
        size_t n_held = 0;
        if (fb_hostlist_expand(info->nodes, &held, &n_held, NULL, 0))
            continue;
        char **both = xcalloc(n_held + 1, sizeof *both);
        size_t n_both = 0;
        for (size_t k = 0; k < n_held; k++) {
            bool shared = all;
            for (size_t m = 0; m < n_mine && !shared; m++)
                shared = !strcmp(held[k], mine[m]);
            if (shared)
                both[n_both++] = held[k];
        }
        if (n_both) {
            char *nodes = fb_hostlist_compress((const char *const *)both, n_both);
            char id[FB_WIRE_MAX_ID + 1];
            fb_log_sanitize(info->id, id, sizeof id);
            char *more =
                xasprintf("%s%scampaign %s (%s)", msg ? msg : "", msg ? ", " : "", id, nodes);
            free(msg);
            free(nodes);
            msg = more;
        }
        free(both);
        fb_hostlist_free(held, n_held);
    }
    fb_hostlist_free(mine, n_mine);
    return msg;
}

static void s_on_list(remote_t *r, const Fleetburn__CampaignList *list)
{
    if (r->mode == S_LIST) {
        if (list->error[0]) {
            char safe[1024];
            fb_log_sanitize(list->error, safe, sizeof safe);
            fprintf(stderr, "fleetburn: %s\n", safe);
            s_end(r, EXIT_INFRA);
            return;
        }
        cli_print_campaigns(list, !strcmp(r->cli->format, "json"), fb_now_ms(), stdout);
        s_end(r, EXIT_PASS);
        return;
    }
    if (r->want_holders) {
        r->want_holders = false;
        char *holders = r->queued ? s_holders(r, list) : NULL;
        if (r->queued) {
            cli_progress_break(&r->view);
            fprintf(stderr, "queued: waiting for nodes held by %s\n",
                    holders ? holders : "another campaign");
        }
        free(holders);
    }
    if (r->want_end) { /* it ended while this client was away: how? */
        r->want_end = false;
        const Fleetburn__CampaignInfo *info = NULL;
        for (size_t i = 0; i < list->n_campaigns && !info; i++)
            if (!strcmp(list->campaigns[i]->id, r->id))
                info = list->campaigns[i];
        if (info && !strcmp(info->state, "finished")) {
            fb_verdict_t v = (fb_verdict_t)info->verdict;
            if (r->end_summary)
                fputs(r->end_summary, stdout);
            fprintf(stderr,
                    "campaign %s finished while this client was away: %s; `fleetburn report %s` "
                    "on the coordinator's database has the %s\n",
                    r->id, fb_verdict_name(v), r->id, r->end_summary ? "whole report" : "summary");
            s_end(r, fb_verdict_ok(v) ? EXIT_PASS : EXIT_FAILED);
        } else {
            fprintf(stderr, "fleetburn: %s\n", r->end_error);
            s_end(r, EXIT_INFRA);
        }
    }
}

/* A refusal: of the submission (2 for the campaign itself, 3 when it could not run now), of a
 * request (2 when it must name a campaign, 3 otherwise), or of the campaign followed. */
static void s_on_error(remote_t *r, const char *error, const char *summary)
{
    char *safe = xmalloc(strlen(error) * 4 + 1);
    fb_log_sanitize(error, safe, strlen(error) * 4 + 1);
    cli_progress_break(&r->view);
    if (s_following(r)) {
        /* The campaign is no longer running here (a restarted coordinator could not resume it,
         * or it ended while this client was away): the list says how it ended. */
        free(r->end_error);
        r->end_error = safe;
        free(r->end_summary);
        r->end_summary = summary[0] ? xstrdup(summary) : NULL;
        if (!r->want_end && s_request(r, FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_LIST, NULL)) {
            fprintf(stderr, "fleetburn: %s\n", safe);
            s_end(r, EXIT_INFRA);
        }
        r->want_end = true;
        return;
    }
    if (summary[0] && r->mode == S_FOLLOW) /* `follow ID` of a campaign that has ended */
        fputs(summary, stdout);
    fprintf(stderr, "fleetburn: %s\n", safe);
    int code = EXIT_INFRA;
    if (r->mode == S_RUN) {
        static const char *const infra[] = {"busy", "not authorised", "cannot start",
                                            "cannot parse the campaign now"};
        code = EXIT_USAGE;
        for (size_t i = 0; i < sizeof infra / sizeof *infra; i++)
            if (!strncmp(safe, infra[i], strlen(infra[i])))
                code = EXIT_INFRA;
    } else if (!strncmp(safe, "several campaigns", 17)) {
        code = EXIT_USAGE;
    }
    free(safe);
    s_end(r, code);
}

static void s_on_attached(remote_t *r, const char *state)
{
    r->queued = !strcmp(state, "queued");
    if (r->mode == S_RUN) {
        fprintf(stderr, "submitted %s as %s to %s\n", r->cf->path, r->id, r->cli->coordinator);
        if (r->queued) {
            r->want_holders = true;
            if (s_request(r, FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_LIST, NULL)) {
                r->want_holders = false;
                fprintf(stderr, "queued: waiting for nodes another campaign holds\n");
            }
        }
    } else if (r->mode == S_FOLLOW) {
        fprintf(stderr, "following campaign %s on %s (%s)\n", r->id, r->cli->coordinator, state);
        if (r->queued)
            fprintf(stderr, "queued: it waits for nodes another campaign holds\n");
    }
}

/* The progress line, the stage name (campaign text) made safe for a terminal. */
static void s_show(remote_t *r, const Fleetburn__Progress *p, bool finished)
{
    char stage[256], note[512], names[FB_WIRE_MAX_PROGRESS_NODES][128];
    char phases[FB_WIRE_MAX_PROGRESS_NODES][160];
    cli_node_progress_t nodes[FB_WIRE_MAX_PROGRESS_NODES];
    size_t n = p->n_nodes < FB_WIRE_MAX_PROGRESS_NODES ? p->n_nodes : FB_WIRE_MAX_PROGRESS_NODES;
    for (size_t i = 0; i < n; i++) {
        fb_log_sanitize(p->nodes[i]->node, names[i], sizeof names[i]);
        fb_log_sanitize(p->nodes[i]->phase, phases[i], sizeof phases[i]);
        nodes[i] = (cli_node_progress_t){names[i], phases[i], p->nodes[i]->fraction,
                                         p->nodes[i]->elapsed_ms, p->nodes[i]->eta_ms};
    }
    fb_log_sanitize(p->stage, stage, sizeof stage);
    fb_log_sanitize(p->stage_note, note, sizeof note);
    cli_progress_t shown = {stage,
                            p->stage_index,
                            p->stage_count,
                            p->tasks_total,
                            p->tasks_done,
                            p->tasks_failed,
                            p->tasks_running,
                            p->elapsed_ms,
                            p->eta_ms,
                            note,
                            nodes,
                            n,
                            finished};
    cli_show_progress(&r->view, &shown);
}

static void s_on_end(remote_t *r, const Fleetburn__Progress *p, const char *state)
{
    char elapsed[32];
    fb_format_duration(p->elapsed_ms, elapsed, sizeof elapsed);
    if (r->mode == S_CANCEL) {
        if (!strcmp(state, "cancelled")) {
            printf("campaign %s cancelled\n", r->id);
            s_end(r, EXIT_PASS);
        } else {
            fprintf(stderr, "fleetburn: campaign %s ended %s (%s) before it could be cancelled\n",
                    r->id, state, fb_verdict_name((fb_verdict_t)p->verdict));
            s_end(r, EXIT_INFRA);
        }
        return;
    }
    if (!strcmp(state, "finished")) {
        s_show(r, p, true);
        fputs(p->summary, stdout);
        s_end(r, fb_verdict_ok((fb_verdict_t)p->verdict) ? EXIT_PASS : EXIT_FAILED);
        return;
    }
    cli_progress_break(&r->view);
    if (!strcmp(state, "cancelled") && r->queued) {
        fprintf(stderr,
                "fleetburn: campaign %s was cancelled while it waited in the queue; it "
                "never ran\n",
                r->id);
        s_end(r, EXIT_INFRA);
        return;
    }
    fputs(p->summary, stdout);
    if (!strcmp(state, "cancelled"))
        fprintf(stderr,
                "fleetburn: campaign %s was cancelled after %s (`fleetburn report %s` on "
                "the coordinator's database has its timeline)\n",
                r->id, elapsed, r->id);
    else
        fprintf(stderr, "fleetburn: campaign %s ended %s (%s) after %s\n", r->id, state,
                fb_verdict_name((fb_verdict_t)p->verdict), elapsed);
    s_end(r, EXIT_INFRA);
}

static void s_on_progress(remote_t *r, const Fleetburn__Progress *p)
{
    if (p->error[0]) {
        s_on_error(r, p->error, p->summary);
        return;
    }
    if (!p->campaign_id[0] || !fb_wire_valid_id(p->campaign_id) ||
        (r->id && strcmp(p->campaign_id, r->id)))
        return; /* not about this client's campaign */
    if (!r->id)
        r->id = xstrdup(p->campaign_id);
    char state[32];
    fb_log_sanitize(p->state[0]   ? p->state
                    : p->finished ? "finished"
                                  : "running",
                    state, sizeof state);
    if (!r->attached) {
        r->attached = true;
        s_on_attached(r, state);
    }
    if (p->finished) {
        s_on_end(r, p, state);
        return;
    }
    if (r->mode == S_CANCEL)
        return;
    bool queued = !strcmp(state, "queued");
    if (r->queued && !queued) {
        cli_progress_break(&r->view);
        fprintf(stderr, "campaign %s leaves the queue: its nodes are free\n", r->id);
    }
    r->queued = queued;
    if (!queued && p->stage_count)
        s_show(r, p, false);
}

static void s_on_message(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                         void *arg)
{
    (void)zs;
    remote_t *r = arg;
    if (r->done)
        return;
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = fb_wire_decode(frames[n - 1], lens[n - 1], &env, err, sizeof err);
    if (rc) {
        fprintf(stderr, "fleetburn: unexpected reply from the coordinator: %s\n", err);
        if (rc == -EPROTONOSUPPORT)
            s_end(r, EXIT_INFRA);
        return;
    }
    r->last_heard = fb_mono_ms();
    if (env->body_case == FLEETBURN__ENVELOPE__BODY_PROGRESS)
        s_on_progress(r, env->progress);
    else if (env->body_case == FLEETBURN__ENVELOPE__BODY_CAMPAIGN_LIST)
        s_on_list(r, env->campaign_list);
    else
        fprintf(stderr, "fleetburn: unexpected reply from the coordinator: message %d\n",
                (int)env->body_case);
    fb_wire_free(&env);
}

/* The connection's events: a refused handshake does not get better by retrying (say why and
 * stop); a reconnect after a loss makes the client ask for its campaign again. */
static void s_on_event(unsigned event, uint32_t value, const char *endpoint, void *arg)
{
    (void)endpoint;
    remote_t *r = arg;
    if (r->done)
        return;
    char wait[32];
    if (event & FB_ZSOCK_HANDSHAKE_FAILED) {
        const char *why = fb_key_handshake_failure(event, value, r->cli->key_file != NULL);
        if (!why)
            return;
        cli_progress_break(&r->view);
        fprintf(stderr, "fleetburn: %s refused the connection: %s\n", r->cli->coordinator, why);
        s_end(r, EXIT_INFRA);
    } else if (event == ZMQ_EVENT_CONNECT_RETRIED) {
        if (!r->ever_connected && !r->retry_said) {
            r->retry_said = true;
            fprintf(stderr, "fleetburn: cannot reach %s yet; trying for %s (--wait)\n",
                    r->cli->coordinator, s_wait_text(r, wait, sizeof wait));
        }
    } else if (event == ZMQ_EVENT_DISCONNECTED) {
        if (r->connected && s_following(r)) {
            cli_progress_break(&r->view);
            fprintf(stderr,
                    "fleetburn: lost the connection to %s; reconnecting (giving up after %s of "
                    "silence)\n",
                    r->cli->coordinator, s_wait_text(r, wait, sizeof wait));
        }
        r->lost |= r->connected;
        r->connected = false;
    } else if (event == ZMQ_EVENT_CONNECTED || event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        if (r->lost) {
            r->refollow = true;
            if (s_following(r))
                fprintf(stderr, "reconnected to %s; following campaign %s again\n",
                        r->cli->coordinator, r->id);
        }
        r->lost = false;
        r->connected = r->ever_connected = true;
    }
}

/* Ctrl-C: let go of the campaign, which keeps running. */
static void s_on_sigint(uv_signal_t *h, int signum)
{
    (void)signum;
    remote_t *r = h->data;
    if (r->done)
        return;
    cli_progress_break(&r->view);
    const char *ep = r->cli->coordinator;
    if (r->id && r->mode != S_LIST)
        fprintf(stderr,
                "detached; campaign %s keeps running. Follow it with `fleetburn follow %s "
                "--coordinator %s`, cancel it with `fleetburn cancel %s --coordinator %s`%s\n",
                r->id, r->id, ep, r->id, ep, s_keys_hint(r));
    else if (r->mode == S_RUN)
        fprintf(stderr,
                "interrupted before %s accepted the campaign; it may still start: `fleetburn "
                "campaigns --coordinator %s` lists it%s\n",
                ep, ep, s_keys_hint(r));
    else if (r->mode == S_CANCEL)
        fprintf(stderr,
                "interrupted; the cancel may still reach %s: `fleetburn campaigns "
                "--coordinator %s` shows the campaign's state\n",
                ep, ep);
    else
        fprintf(stderr, "interrupted\n");
    s_end(r, EXIT_DETACHED);
}

/* Every tick: ask again after a reconnect, probe a silent coordinator, give up past --wait. */
static void s_on_tick(uv_timer_t *t)
{
    remote_t *r = t->data;
    if (r->done)
        return;
    uint64_t now = fb_mono_ms();
    bool probe = false;
    if (r->refollow) {
        r->refollow = false;
        probe = true;
    }
    if (s_following(r) && now - r->last_heard >= r->probe_ms && now - r->last_probe >= r->probe_ms)
        probe = true;
    if (probe) {
        r->last_probe = now;
        if (r->mode == S_LIST || r->want_end)
            s_request(r, FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_LIST, NULL);
        else if (s_following(r))
            s_request(r, FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_FOLLOW, r->id);
        else if (r->mode == S_FOLLOW) /* the request may have died with the coordinator */
            s_request(r, FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_FOLLOW, r->asked);
        /* a Submit or a Cancel is not sent twice: it is not idempotent */
    }
    if (now - r->last_heard <= r->cli->wait_ms)
        return;
    char wait[32];
    s_wait_text(r, wait, sizeof wait);
    const char *ep = r->cli->coordinator;
    cli_progress_break(&r->view);
    if (r->id && r->mode != S_LIST)
        fprintf(stderr,
                "fleetburn: coordinator %s silent for %s; the campaign may still be running: "
                "`fleetburn follow %s --coordinator %s`%s\n",
                ep, wait, r->id, ep, s_keys_hint(r));
    else if (r->mode == S_RUN)
        fprintf(stderr,
                "fleetburn: no answer from %s within %s; the campaign was not accepted "
                "(`fleetburn campaigns --coordinator %s` shows whether it runs)\n",
                ep, wait, ep);
    else
        fprintf(stderr, "fleetburn: no answer from %s within %s\n", ep, wait);
    s_end(r, EXIT_INFRA);
}

/* Connects to the coordinator with the client's keys. 0, or the exit status after saying why. */
static int s_open(remote_t *r)
{
    cli_t *cli = r->cli;
    if (!cli->wait_ms)
        cli->wait_ms = FB_CLIENT_DEFAULT_WAIT_MS;
    r->probe_ms = cli->wait_ms / 4;
    r->probe_ms = r->probe_ms < 250 ? 250 : r->probe_ms > 5000 ? 5000 : r->probe_ms;
    r->zctx = zmq_ctx_new();
    void *sock = fb_zsock_new_socket(r->zctx, ZMQ_DEALER);
    char kerr[512];
    if (fb_key_apply_client(sock, cli->key_file, cli->server_key, kerr, sizeof kerr)) {
        fprintf(stderr, "fleetburn: %s\n", kerr);
        zmq_close(sock);
        zmq_ctx_term(r->zctx);
        return EXIT_USAGE;
    }
    if (!cli->key_file && !fb_endpoint_is_local(cli->coordinator))
        fprintf(stderr,
                "fleetburn: warning: talking to %s without keys: campaigns and their "
                "results travel unencrypted, and a keyed coordinator refuses the "
                "connection (give --key and --server-key)\n",
                cli->coordinator);
    r->loop = uv_default_loop();
    /* before the connection: a lost "connected" would hide the disconnect that follows */
    r->monitor = fb_zsock_monitor_new(r->loop, r->zctx, sock, S_MONITOR_EVENTS, s_on_event, r);
    if (zmq_connect(sock, cli->coordinator) != 0) {
        fprintf(stderr, "fleetburn: --coordinator '%s': %s\n", cli->coordinator,
                zmq_strerror(errno));
        fb_zsock_close(&r->monitor);
        zmq_close(sock);
        uv_run(r->loop, UV_RUN_NOWAIT); /* the monitor's handles close */
        zmq_ctx_term(r->zctx);
        return EXIT_USAGE;
    }
    cli_progress_init(&r->view);
    r->last_heard = r->last_probe = fb_mono_ms();
    r->zs = fb_zsock_new(r->loop, sock, s_on_message, r);
    uv_timer_init(r->loop, &r->tick);
    r->tick.data = r;
    uv_timer_start(&r->tick, s_on_tick, S_TICK_MS, S_TICK_MS);
    uv_signal_init(r->loop, &r->sigint);
    r->sigint.data = r;
    uv_signal_start(&r->sigint, s_on_sigint, SIGINT);
    return 0;
}

/* Runs until the exchange ends, closes everything, and returns the exit status. */
static int s_run_and_close(remote_t *r)
{
    while (!r->done)
        uv_run(r->loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&r->tick, NULL);
    uv_close((uv_handle_t *)&r->sigint, NULL);
    fb_zsock_close(&r->monitor);
    fb_zsock_close(&r->zs);
    uv_run(r->loop, UV_RUN_DEFAULT);
    uv_loop_close(r->loop);
    zmq_ctx_term(r->zctx);
    fflush(stdout);
    if (r->mode == S_RUN) {
        r->ran_id = r->id;
        r->id = NULL;
    }
    free(r->id);
    free(r->end_error);
    free(r->end_summary);
    return r->exit_code;
}

/* --- the commands --------------------------------------------------------------------------- */

/* Hands the campaign, with the content of every file it names (Submit.files), to a running
 * coordinator, which opens no path it is sent, and follows it to its end. */
int cli_run_remote(cli_t *cli, const campaign_file_t *cf)
{
    char *error = NULL;
    if (campaign_file_check_submission(cf, &error)) {
        fprintf(stderr, "fleetburn: %s\n", error);
        free(error);
        return EXIT_USAGE;
    }
    remote_t r = {.mode = S_RUN, .cli = cli, .cf = cf};
    int rc = s_open(&r);
    if (rc)
        return rc;
    if (s_submit(&r))
        s_end(&r, EXIT_INFRA);
    rc = s_run_and_close(&r);
    rc = cli_compare_after_run(cli, NULL, r.ran_id, rc);
    free(r.ran_id);
    return rc;
}

/* The campaign id a command names ("" for the one running), or NULL after saying why not. */
static const char *s_campaign_arg(cli_t *cli, const char *cmd)
{
    if (cli->n_positional > 1) {
        fprintf(stderr, "fleetburn %s: expected at most one campaign id\n", cmd);
        return NULL;
    }
    const char *id = cli->n_positional ? cli->positional[0] : "";
    if (id[0] && (!fb_wire_valid_id(id) || strchr(id, '/'))) {
        char safe[64];
        fb_log_sanitize(id, safe, sizeof safe);
        fprintf(stderr,
                "fleetburn %s: '%s' is not a campaign id (`fleetburn campaigns` lists them)\n", cmd,
                safe);
        return NULL;
    }
    return id;
}

static int s_campaign_command(cli_t *cli, s_mode_t mode, const char *cmd)
{
    const char *id = "";
    if (mode == S_LIST && cli->n_positional) {
        fprintf(stderr, "fleetburn campaigns: unexpected argument '%s'\n", cli->positional[0]);
        return EXIT_USAGE;
    }
    if (mode != S_LIST && !(id = s_campaign_arg(cli, cmd)))
        return EXIT_USAGE;
    remote_t r = {.mode = mode, .cli = cli, .asked = id};
    int rc = s_open(&r);
    if (rc)
        return rc;
    Fleetburn__CampaignRequest__Action action =
        mode == S_FOLLOW   ? FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_FOLLOW
        : mode == S_CANCEL ? FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_CANCEL
                           : FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_LIST;
    if ((rc = s_request(&r, action, id)) != 0) {
        fprintf(stderr, "fleetburn: cannot reach %s: %s\n", cli->coordinator, zmq_strerror(-rc));
        s_end(&r, EXIT_INFRA);
    }
    return s_run_and_close(&r);
}

int cli_follow(cli_t *cli)
{
    return s_campaign_command(cli, S_FOLLOW, "follow");
}

int cli_cancel(cli_t *cli)
{
    return s_campaign_command(cli, S_CANCEL, "cancel");
}

int cli_campaigns(cli_t *cli)
{
    return s_campaign_command(cli, S_LIST, "campaigns");
}

/* The client's configuration (docs/security.md, "Client settings"): --config FILE, else
 * ~/.config/fleetburn/client.conf, else /etc/fleetburn/client.conf, when there is one. It
 * gives coordinator, key and server_key where the command line does not; a coordinator from it
 * sends `run` there unless --local is given. 0, or -EINVAL after printing why. */
int cli_load_client_config(cli_t *cli)
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
