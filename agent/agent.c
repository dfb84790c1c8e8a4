/* SPDX-License-Identifier: Apache-2.0 */
/* Agent protocol state machine.
 *
 * Until the coordinator's Welcome arrives the agent repeats Hello (a DEALER drops nothing while
 * disconnected, but a coordinator that restarted has forgotten us, so Hello must be re-sent).
 * Once welcomed it heartbeats; the coordinator answers each heartbeat, so silence for
 * liveness x interval means the coordinator is gone: the agent drops the socket, makes a new
 * one (a fresh identity) and says Hello again, listing its spooled results and running tasks.
 * Results are spooled before they are sent and deleted only on Ack; unacknowledged ones are
 * re-sent after every Welcome and periodically. The coordinator stores each result id once.
 * Tasks themselves are handled in agent_tasks.c. */
#include "agent_internal.h"
#include "gpuprobe.h"
#include "inventory.h"
#include "spool.h"
#include "task.h"
#include "common/exline.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "common/keys.h"
#include "common/ratelimit.h"
#include "scheduler/workload.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>


static void s_on_message(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                         void *arg);

int agent_send(agent_t *self, Fleetburn__Envelope *env)
{
    if (!self->zs)
        return -ENOTCONN;
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(env, &len);
    const void *frames[] = {buf};
    int rc = fb_zsock_send(self->zs, frames, &len, 1);
    free(buf);
    if (rc && rc != -EAGAIN)
        log_warn("send to coordinator failed: %s", zmq_strerror(-rc));
    return rc;
}

/* The coordinator refused the handshake: the agent keeps trying (the operator may add its key
 * and reload), and says why once a minute. */
static void s_on_handshake(unsigned event, uint32_t value, const char *endpoint, void *arg)
{
    (void)endpoint;
    agent_t *self = arg;
    const char *why = fb_key_handshake_failure(event, value, self->key_file != NULL);
    uint64_t held = 0;
    if (why && fb_ratelimit_ok(&self->handshake_log, fb_mono_ms(), &held))
        log_error("coordinator %s refused the connection: %s (still trying; %llu more refusals "
                  "since the last line)",
                  self->coordinator, why, (unsigned long long)held);
}

/* Bad key files are a start-up error with the file named, not a failed connect later. */
static int s_check_keys(const agent_options_t *opts, char *err, size_t errlen)
{
    if (opts->key || opts->server_key) {
        if (!opts->key || !opts->server_key || !opts->key->secret_key[0]) {
            snprintf(err, errlen, "a loaded key needs its secret key and the coordinator's "
                                  "public key");
            return -EINVAL;
        }
        return 0;
    }
    if (!opts->key_file && !opts->server_key_file)
        return 0;
    if (!opts->key_file || !opts->server_key_file) {
        snprintf(err, errlen, "--key and --server-key go together (this agent's secret key and "
                              "the coordinator's public key)");
        return -EINVAL;
    }
    fb_key_t key;
    int rc = fb_key_load_secret(opts->key_file, &key, err, errlen);
    memset(&key, 0, sizeof key);
    if (rc == 0)
        rc = fb_key_load_public(opts->server_key_file, &key, NULL, err, errlen);
    return rc;
}

static int s_connect(agent_t *self)
{
    void *sock = fb_zsock_new_socket(self->zctx, ZMQ_DEALER);
    if (!sock) /* out of sockets or descriptors (closed ones are reaped later): the tick retries */
        return -errno;
    int linger = 0, hwm = 10000, ivl = 100, ivl_max = 2000;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    char err[512];
    int krc = self->key ? fb_key_apply_client_keys(sock, self->key, self->server_key, err,
                                                   sizeof err)
                        : fb_key_apply_client(sock, self->key_file, self->server_key_file, err,
                                              sizeof err);
    if (krc) {
        log_error("%s", err);
        zmq_close(sock);
        return krc;
    }
    /* a real agent: one monitor per connection, made before it connects so that the first
     * refusal is seen */
    if (self->handshake_log.interval_ms)
        self->monitor = fb_zsock_monitor_new(self->loop, self->zctx, sock,
                                             FB_ZSOCK_HANDSHAKE_FAILED, s_on_handshake, self);
    if (zmq_connect(sock, self->coordinator) != 0) {
        int rc = -errno;
        fb_zsock_close(&self->monitor);
        zmq_close(sock);
        return rc;
    }
    self->zs = fb_zsock_new(self->loop, sock, s_on_message, self);
    /* The tick drains the socket itself (s_on_tick), as often as the safety timer would: a
     * second timer per agent only costs thousands of simulated agents CPU. */
    fb_zsock_set_safety_ms(self->zs, 0);
    self->welcomed = false;
    self->last_hello = 0;
    return 0;
}

static void s_send_hello(agent_t *self)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    hello.name = self->name;
    hello.inventory = self->inventory;
    hello.address = self->address;
    char **unacked = NULL;
    size_t n_unacked = 0;
    if (spool_list(self->spool, &unacked, &n_unacked) == 0) {
        hello.unacked_result_ids = unacked;
        hello.n_unacked_result_ids = n_unacked;
    }
    size_t n_running = 0;
    for (running_t *r = self->running; r; r = r->next)
        n_running++;
    char **running = xcalloc(n_running, sizeof(char *));
    n_running = 0;
    for (running_t *r = self->running; r; r = r->next)
        running[n_running++] = r->id;
    hello.running_task_ids = running;
    hello.n_running_task_ids = n_running;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    agent_send(self, &env);
    free(running);
    spool_ids_free(unacked, n_unacked);
    self->last_hello = fb_mono_ms();
}

void agent_send_spooled_result(agent_t *self, const char *result_id)
{
    uint8_t *data = NULL;
    size_t len = 0;
    if (spool_get(self->spool, result_id, &data, &len) != 0)
        return;
    Fleetburn__TaskResult *msg = fleetburn__task_result__unpack(NULL, len, data);
    free(data);
    if (!msg) {
        log_error("spooled result %s is unreadable; removing it", result_id);
        spool_remove(self->spool, result_id);
        return;
    }
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_RESULT;
    env.task_result = msg;
    agent_send(self, &env);
    fleetburn__task_result__free_unpacked(msg, NULL);
}

static void s_resend_spool(agent_t *self)
{
    char **ids = NULL;
    size_t n = 0;
    if (spool_list(self->spool, &ids, &n) != 0)
        return;
    if (n)
        log_info("sending %zu unacknowledged result(s)", n);
    for (size_t i = 0; i < n; i++)
        agent_send_spooled_result(self, ids[i]);
    spool_ids_free(ids, n);
    self->last_resend = fb_mono_ms();
}

static void s_send_heartbeat(agent_t *self)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Heartbeat hb = FLEETBURN__HEARTBEAT__INIT;
    hb.time_ms = fb_now_ms();
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    agent_send(self, &env);
    self->last_heartbeat = fb_mono_ms();
}

static void s_reconnect(agent_t *self, const char *why)
{
    log_warn("%s; reconnecting to %s", why, self->coordinator);
    fb_zsock_close(&self->monitor);
    fb_zsock_close(&self->zs);
    int rc = s_connect(self);
    if (rc)
        log_error("cannot connect to %s: %s", self->coordinator, zmq_strerror(-rc));
}

/* Time this agent's loop did not run (the process was stopped, the machine paused) is its own
 * silence, not the coordinator's: when the tick runs later than two of its periods after the last
 * one, the lateness moves the coordinator's deadline by as much. */
static void s_forgive_own_stall(agent_t *self, uint64_t now)
{
    uint64_t last = self->last_tick;
    self->last_tick = now;
    if (!last || now - last <= 2 * (uint64_t)self->tick_ms || !self->last_heard)
        return;
    uint64_t stall = now - last - self->tick_ms;
    if (stall >= self->heartbeat_ms)
        log_warn("this agent's loop did not run for %.1f s (stopped or stalled); the "
                 "coordinator's silence during it does not count",
                 (double)stall / 1000.0);
    self->last_heard = self->last_heard + stall < now ? self->last_heard + stall : now;
}

static void s_on_tick(uv_timer_t *h)
{
    agent_t *self = h->data;
    /* What the coordinator sent while the loop was away is read before its silence is judged. */
    fb_zsock_drain(self->zs);
    uint64_t now = fb_mono_ms();
    s_forgive_own_stall(self, now);
    if (!self->zs) {
        s_reconnect(self, "no connection");
        return;
    }
    if (!self->welcomed) {
        if (now - self->last_hello >= AGENT_HELLO_RETRY_MS)
            s_send_hello(self);
        return;
    }
    if (now - self->last_heard > (uint64_t)self->heartbeat_ms * self->liveness) {
        char why[128];
        snprintf(why, sizeof why, "coordinator silent for %.1f s",
                 (double)(now - self->last_heard) / 1000.0);
        s_reconnect(self, why);
        s_send_hello(self);
        return;
    }
    if (now - self->last_heartbeat >= self->heartbeat_ms)
        s_send_heartbeat(self);
    if (now - self->last_resend >= AGENT_RESEND_MS)
        s_resend_spool(self);
}

static void s_on_welcome(agent_t *self, const Fleetburn__Welcome *m)
{
    if (!m->accepted) {
        log_error("coordinator %s refused this agent: %s", self->coordinator, m->reason);
        self->fatal = 2;
        uv_stop(self->loop);
        return;
    }
    bool first = !self->welcomed;
    self->welcomed = true;
    self->heartbeat_ms = m->heartbeat_interval_ms;
    self->liveness = m->liveness;
    if (first)
        log_info("registered with %s as %s (heartbeat %u ms)", self->coordinator, self->name,
                 self->heartbeat_ms);
    s_resend_spool(self);
}

/* A RunTask the wire refused (a value over a limit of common/value_limits.h) still names its
 * task: the agent answers with an `error` result rather than leave the coordinator waiting. */
static void s_refuse_invalid_task(agent_t *self, const uint8_t *data, size_t len, const char *why)
{
    Fleetburn__Envelope *raw = fleetburn__envelope__unpack(NULL, len, data);
    if (raw && raw->body_case == FLEETBURN__ENVELOPE__BODY_RUN_TASK && raw->run_task)
        agent_refuse_run_task(self, raw->run_task, why);
    if (raw)
        fleetburn__envelope__free_unpacked(raw, NULL);
}

static void s_on_message(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                         void *arg)
{
    (void)zs;
    agent_t *self = arg;
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = fb_wire_decode(frames[n - 1], lens[n - 1], &env, err, sizeof err);
    if (rc == -EPROTONOSUPPORT && env->body_case == FLEETBURN__ENVELOPE__BODY_WELCOME) {
        log_error("coordinator speaks another protocol: %s", err);
        self->fatal = 2;
        uv_stop(self->loop);
    }
    if (rc) {
        log_warn("dropped a message from the coordinator: %s", err);
        fb_wire_free(&env);
        if (rc == -EINVAL && self->welcomed)
            s_refuse_invalid_task(self, frames[n - 1], lens[n - 1], err);
        return;
    }
    self->last_heard = fb_mono_ms();
    switch (env->body_case) {
    case FLEETBURN__ENVELOPE__BODY_WELCOME:
        s_on_welcome(self, env->welcome);
        break;
    case FLEETBURN__ENVELOPE__BODY_HEARTBEAT:
        break;
    case FLEETBURN__ENVELOPE__BODY_RUN_TASK:
        if (self->welcomed)
            agent_on_run_task(self, env->run_task);
        break;
    case FLEETBURN__ENVELOPE__BODY_CANCEL_TASK:
        agent_on_cancel(self, env->cancel_task);
        break;
    case FLEETBURN__ENVELOPE__BODY_EXCHANGE:
        agent_on_exchange(self, env->exchange);
        break;
    case FLEETBURN__ENVELOPE__BODY_ACK:
        for (size_t i = 0; i < env->ack->n_result_ids; i++)
            if (spool_remove(self->spool, env->ack->result_ids[i]) == 0)
                log_debug("result %s acknowledged", env->ack->result_ids[i]);
        break;
    default:
        log_warn("ignored an unexpected message (body %d) from the coordinator",
                 (int)env->body_case);
    }
    fb_wire_free(&env);
}

/* --- lifecycle ------------------------------------------------------------------------------ */

/* The local address of the route to the coordinator: the interface peers most likely reach too
 * (a UDP connect sends nothing, it only picks the route). "" when it cannot be found. */
static char *s_default_address(const char *endpoint)
{
    const char *host = strstr(endpoint, "://");
    if (!host || strncmp(endpoint, "tcp", 3))
        return xstrdup("127.0.0.1");
    host += 3;
    char name[256];
    const char *colon = strrchr(host, ':');
    size_t n = colon ? (size_t)(colon - host) : strlen(host);
    if (n >= sizeof name)
        return xstrdup("");
    memcpy(name, host, n);
    name[n] = '\0';
    if (name[0] == '[' && n > 1 && name[n - 1] == ']') {
        memmove(name, name + 1, n - 2);
        name[n - 2] = '\0';
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(name, "9", &hints, &res) != 0 || !res)
        return xstrdup("");
    char out[INET6_ADDRSTRLEN] = "";
    int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_storage local;
    socklen_t len = sizeof local;
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&local, &len) == 0)
        getnameinfo((struct sockaddr *)&local, len, out, sizeof out, NULL, 0, NI_NUMERICHOST);
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return xstrdup(out);
}

/* Workers write their result files here. */
static int s_make_work_dir(agent_t *self, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(self->work_dir, sizeof self->work_dir, "%s/fleetburn-agent-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(self->work_dir)) {
        int rc = -errno;
        snprintf(err, errlen, "cannot create a work directory in %s: %s", tmp ? tmp : "/tmp",
                 strerror(errno));
        self->work_dir[0] = '\0';
        return rc;
    }
    return 0;
}

agent_t *agent_new(uv_loop_t *loop, const agent_options_t *opts, char *err, size_t errlen)
{
    agent_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->exec = opts->executor ? opts->executor : &agent_worker_executor;
    self->tick_ms = opts->tick_ms ? opts->tick_ms : AGENT_TICK_MS;
    self->coordinator = xstrdup(opts->coordinator);
    self->name = xstrdup(opts->name);
    self->worker_path = opts->executor ? NULL : xstrdup(opts->worker_path);
    self->sysfs_root = xstrdup(opts->sysfs_root ? opts->sysfs_root : "");
    self->address = opts->address && *opts->address ? xstrdup(opts->address)
                                                    : s_default_address(opts->coordinator);
    log_info("peers reach this node at %s", *self->address ? self->address : "(unknown)");
    self->allow_fault_injection = opts->allow_fault_injection;
    self->inject = xcalloc(opts->n_inject, sizeof(char *));
    for (size_t i = 0; i < opts->n_inject; i++)
        self->inject[self->n_inject++] = xstrdup(opts->inject[i]);
    self->site = xcalloc(opts->n_site, sizeof(char *));
    for (size_t i = 0; i < opts->n_site; i++)
        self->site[self->n_site++] = xstrdup(opts->site[i]);
    self->heartbeat_ms = AGENT_DEFAULT_HEARTBEAT_MS;
    self->liveness = AGENT_DEFAULT_LIVENESS;
    int rc = opts->spool_dir ? spool_open(opts->spool_dir, &self->spool)
                             : spool_open_memory(&self->spool);
    if (rc) {
        snprintf(err, errlen, "cannot open spool directory %s: %s", opts->spool_dir,
                 strerror(-rc));
        agent_destroy(&self);
        return NULL;
    }
    if (!opts->executor && (rc = s_make_work_dir(self, err, errlen)) != 0) {
        agent_destroy(&self);
        return NULL;
    }
    if (opts->inventory) {
        self->inventory = (Fleetburn__Inventory *)opts->inventory;
    } else {
        self->inventory = inventory_read(self->sysfs_root);
        self->own_inventory = true;
        if (!opts->executor) /* model, memory and versions from the GPU management library */
            gpuprobe_run(self->inventory, self->worker_path, GPUPROBE_TIMEOUT_MS);
    }
    if (!opts->executor) {
        agent_note_gpu_vendors(self);
        char *summary = fb_inventory_summary(self->inventory);
        log_info("inventory: %s", summary);
        free(summary);
    }
    self->own_zctx = !opts->zmq_context;
    self->zctx = opts->zmq_context ? opts->zmq_context : zmq_ctx_new();
    self->key_file = opts->key_file;
    self->server_key_file = opts->server_key_file;
    self->key = opts->key;
    self->server_key = opts->server_key;
    if (!opts->executor)
        self->handshake_log = (fb_ratelimit_t)FB_RATELIMIT_INIT(60000);
    if ((rc = s_check_keys(opts, err, errlen)) != 0) {
        agent_destroy(&self);
        return NULL;
    }
    rc = s_connect(self);
    if (rc) {
        snprintf(err, errlen, "cannot connect to '%s': %s", opts->coordinator, zmq_strerror(-rc));
        agent_destroy(&self);
        return NULL;
    }
    uv_timer_init(loop, &self->tick);
    self->tick.data = self;
    uv_timer_start(&self->tick, s_on_tick, 0, self->tick_ms);
    return self;
}

static void s_free(agent_t *self)
{
    spool_destroy(&self->spool);
    if (self->own_inventory)
        inventory_free(&self->inventory);
    if (self->work_dir[0])
        rmdir(self->work_dir);
    free(self->coordinator);
    free(self->name);
    free(self->worker_path);
    free(self->sysfs_root);
    free(self->address);
    for (size_t i = 0; i < self->n_inject; i++)
        free(self->inject[i]);
    free(self->inject);
    for (size_t i = 0; i < self->n_site; i++)
        free(self->site[i]);
    free(self->site);
    free(self);
}

static void s_on_tick_closed(uv_handle_t *h)
{
    agent_t *self = h->data;
    /* With a shared context nobody waits for this agent's handles: the last one frees it. */
    if (!self->own_zctx)
        s_free(self);
}

void agent_destroy(agent_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    agent_t *self = *self_p;
    *self_p = NULL;
    while (self->running) {
        running_t *r = self->running;
        self->running = r->next;
        self->exec->abort(r->task);
        free(r->id);
        free(r->result_id);
        free(r);
    }
    fb_zsock_close(&self->monitor);
    if (self->zs && self->welcomed && !self->fatal) {
        /* Goodbye, so the coordinator records this agent `gone`, not `lost`; the socket lingers
         * long enough to send it. */
        Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
        Fleetburn__Heartbeat hb = FLEETBURN__HEARTBEAT__INIT;
        hb.time_ms = fb_now_ms();
        hb.goodbye = (char *)"agent stopped";
        env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        if (agent_send(self, &env) == 0)
            log_info("said goodbye to %s", self->coordinator);
        fb_zsock_close_linger(&self->zs, AGENT_GOODBYE_LINGER_MS);
    }
    fb_zsock_close(&self->zs);
    bool closing = self->tick.data != NULL;
    if (closing)
        uv_close((uv_handle_t *)&self->tick, s_on_tick_closed);
    if (!self->own_zctx) {
        if (!closing)
            s_free(self);
        return;
    }
    /* Let libuv close every handle and reap the killed workers before the context goes; the
     * caller has closed its own handles, so this returns once ours are gone. */
    uv_run(self->loop, UV_RUN_DEFAULT);
    if (self->zctx)
        zmq_ctx_term(self->zctx);
    s_free(self);
}

int agent_fatal(const agent_t *self)
{
    return self->fatal;
}

bool agent_registered(const agent_t *self)
{
    return self->welcomed;
}

size_t agent_unacked(const agent_t *self)
{
    return spool_count(self->spool);
}

size_t agent_running_count(const agent_t *self)
{
    size_t n = 0;
    for (const running_t *r = self->running; r; r = r->next)
        n++;
    return n;
}
