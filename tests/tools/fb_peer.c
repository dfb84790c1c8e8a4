/* SPDX-License-Identifier: Apache-2.0 */
/* fb_peer: a scripted protocol peer for security tests. It speaks the wire protocol as an agent
 * would (optionally with CURVE keys), registers under a name, then posts what it is told to:
 * results and task events for any task id, as a hostile or confused node could. It prints one
 * line per answer ("welcome accepted", "welcome refused: ...", "ack RESULT_ID") so a test can
 * assert what the coordinator did.
 *
 *   fb_peer --coordinator EP --name NAME [--key F --server-key F]
 *           [--result TASK_ID,RESULT_ID,pass|fail]... [--event TASK_ID]... [--wait-ms N]
 *           [--relay-for AGENT.pub [--tag NODE]]
 *
 * With --relay-for it acts as a (hostile) `fleetburn relay`: everything it sends goes in a
 * Relayed tagged with NODE (default: NAME) and the agent key of AGENT.pub ("-": none), and the
 * Relayed answers are unwrapped before they are printed. */
#include "common/keys.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define MAX_POSTS 32

/* --relay-for: the tag and agent key of every message; NULL tag: a plain agent. */
static const char *s_tag;
static char s_agent_key[FB_KEY_Z85_LEN + 1];

static int s_send(void *sock, Fleetburn__Envelope *env)
{
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(env, &len);
    if (s_tag) {
        size_t outer_len = 0;
        uint8_t *wrapped = fb_wire_encode_relayed(s_tag, s_agent_key, 1, buf, len, &outer_len);
        free(buf);
        buf = wrapped;
        len = outer_len;
    }
    int rc = zmq_send(sock, buf, len, 0);
    free(buf);
    return rc < 0 ? -1 : 0;
}

/* A Relayed answer's frame, decoded in place of the envelope (relay mode). */
static void s_unwrap(Fleetburn__Envelope **env_p)
{
    Fleetburn__Envelope *env = *env_p;
    if (!env || env->body_case != FLEETBURN__ENVELOPE__BODY_RELAYED)
        return;
    Fleetburn__Envelope *inner = NULL;
    char err[256];
    if (fb_wire_decode(env->relayed->frame.data, env->relayed->frame.len, &inner, err,
                       sizeof err))
        printf("bad relayed frame: %s\n", err);
    fb_wire_free(env_p);
    *env_p = inner;
}

/* Prints what the coordinator answered, for up to wait_ms. Returns 1 if a Welcome came. */
static int s_listen(void *sock, int wait_ms)
{
    int welcomed = 0;
    uint64_t end = fb_mono_ms() + (uint64_t)wait_ms;
    while (fb_mono_ms() < end) {
        zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, (long)(end - fb_mono_ms())) <= 0)
            continue;
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, sock, 0) < 0) {
            zmq_msg_close(&msg);
            continue;
        }
        Fleetburn__Envelope *env = NULL;
        char err[256];
        if (fb_wire_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), &env, err, sizeof err) == 0 &&
            (s_unwrap(&env), env)) {
            if (env->body_case == FLEETBURN__ENVELOPE__BODY_WELCOME) {
                printf("welcome %s%s%s\n", env->welcome->accepted ? "accepted" : "refused",
                       env->welcome->accepted ? "" : ": ", env->welcome->reason);
                welcomed = 1;
            } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_ACK) {
                for (size_t i = 0; i < env->ack->n_result_ids; i++)
                    printf("ack %s\n", env->ack->result_ids[i]);
            } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_RUN_TASK) {
                printf("run_task %s\n", env->run_task->task_id);
            }
            fflush(stdout);
        }
        fb_wire_free(&env);
        zmq_msg_close(&msg);
        if (welcomed && wait_ms > 0 && end - fb_mono_ms() > 100000)
            break;
    }
    return welcomed;
}

static void s_post_result(void *sock, const char *spec, const char *name)
{
    char *copy = xstrdup(spec);
    char *task = strtok(copy, ","), *rid = strtok(NULL, ","), *verdict = strtok(NULL, ",");
    if (!task || !rid || !verdict) {
        fprintf(stderr, "fb_peer: --result wants TASK_ID,RESULT_ID,VERDICT\n");
        exit(2);
    }
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__TaskResult r = FLEETBURN__TASK_RESULT__INIT;
    r.task_id = task;
    r.result_id = rid;
    r.node = (char *)name;
    r.verdict = !strcmp(verdict, "fail") ? FLEETBURN__VERDICT__VERDICT_FAIL
                                         : FLEETBURN__VERDICT__VERDICT_PASS;
    r.started_ms = r.finished_ms = fb_now_ms();
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_RESULT;
    env.task_result = &r;
    s_send(sock, &env);
    free(copy);
}

static void s_post_event(void *sock, const char *task)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__TaskEvent ev = FLEETBURN__TASK_EVENT__INIT;
    ev.task_id = (char *)task;
    ev.kind = FLEETBURN__TASK_EVENT__KIND__KIND_LOG;
    ev.time_ms = fb_now_ms();
    ev.message = "forged log line";
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_EVENT;
    env.task_event = &ev;
    s_send(sock, &env);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"coordinator", required_argument, 0, 'c'}, {"name", required_argument, 0, 'n'},
        {"key", required_argument, 0, 'k'},         {"server-key", required_argument, 0, 's'},
        {"result", required_argument, 0, 'r'},      {"event", required_argument, 0, 'e'},
        {"wait-ms", required_argument, 0, 'w'},     {"relay-for", required_argument, 0, 'R'},
        {"tag", required_argument, 0, 't'},         {0, 0, 0, 0}};
    const char *relay_for = NULL, *tag = NULL;
    const char *endpoint = NULL, *name = NULL, *key = NULL, *server_key = NULL;
    const char *results[MAX_POSTS], *events[MAX_POSTS];
    size_t n_results = 0, n_events = 0;
    int wait_ms = 3000, c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            endpoint = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'k':
            key = optarg;
            break;
        case 's':
            server_key = optarg;
            break;
        case 'r':
            if (n_results < MAX_POSTS)
                results[n_results++] = optarg;
            break;
        case 'e':
            if (n_events < MAX_POSTS)
                events[n_events++] = optarg;
            break;
        case 'w':
            wait_ms = atoi(optarg);
            break;
        case 'R':
            relay_for = optarg;
            break;
        case 't':
            tag = optarg;
            break;
        default:
            return 2;
        }
    }
    if (!endpoint || !name) {
        fprintf(stderr, "usage: fb_peer --coordinator EP --name NAME [--key F --server-key F] "
                        "[--result TASK,RESULT_ID,VERDICT]... [--event TASK]... [--wait-ms N]\n");
        return 2;
    }
    if (relay_for) {
        s_tag = tag ? tag : name;
        if (strcmp(relay_for, "-")) {
            fb_key_t agent;
            char kerr[512];
            if (fb_key_load_public(relay_for, &agent, NULL, kerr, sizeof kerr)) {
                fprintf(stderr, "fb_peer: %s\n", kerr);
                return 2;
            }
            memcpy(s_agent_key, agent.public_key, sizeof s_agent_key);
        }
    }
    void *ctx = zmq_ctx_new();
    void *sock = fb_zsock_new_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    char err[512];
    if (fb_key_apply_client(sock, key, server_key, err, sizeof err)) {
        fprintf(stderr, "fb_peer: %s\n", err);
        return 2;
    }
    zmq_connect(sock, endpoint);
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    Fleetburn__Inventory inv = FLEETBURN__INVENTORY__INIT;
    inv.hostname = (char *)name;
    hello.name = (char *)name;
    hello.inventory = &inv;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    s_send(sock, &env);
    int welcomed = s_listen(sock, wait_ms);
    if (welcomed) {
        for (size_t i = 0; i < n_results; i++)
            s_post_result(sock, results[i], name);
        for (size_t i = 0; i < n_events; i++)
            s_post_event(sock, events[i]);
        if (n_results || n_events)
            s_listen(sock, wait_ms);
    } else {
        printf("no welcome\n");
    }
    zmq_close(sock);
    zmq_ctx_term(ctx);
    return welcomed ? 0 : 1;
}
