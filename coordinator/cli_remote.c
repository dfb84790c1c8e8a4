/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn run --coordinator EP`: a client of `fleetburn serve`. It submits the campaign with
 * the files it names, follows the progress, and says why when the coordinator refuses it (the
 * handshake: no key, an unknown key, another coordinator key than the pinned one; or the
 * submission: not an operator key, a bad campaign). Keys and the endpoint may come from the
 * client configuration file (cli.h, docs/security.md "Client settings"). */
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

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

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
        cli_show_progress(&run->view, p->stage, p->stage_index, p->stage_count, p->tasks_total,
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
int cli_run_remote(cli_t *cli, const campaign_file_t *cf)
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
        fprintf(stderr,
                "fleetburn: warning: talking to %s without keys: the campaign and its "
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
    zsock_t *monitor =
        zsock_monitor_new(loop, zctx, sock, S_HANDSHAKE_EVENTS, s_on_handshake, &run);
    size_t len = 0;
    uint8_t *buf = campaign_file_encode_submit(cf, &len);
    const void *frames[] = {buf};
    int rc = zsock_send(zs, frames, &len, 1);
    free(buf);
    if (rc) {
        fprintf(stderr, "fleetburn: cannot submit to %s: %s\n", cli->coordinator,
                zmq_strerror(-rc));
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
