/* SPDX-License-Identifier: Apache-2.0 */
/* The limits of common/value_limits.h agree on every side: what the campaign checker accepts
 * the wire accepts, what the wire refuses the checker refuses first (FILE:LINE naming the key and
 * the limit), and an agent handed a task over a limit answers with an `error` result. */
#include "agent/agent.h"
#include "common/util.h"
#include "common/value_limits.h"
#include "common/wire.h"
#include "scheduler/campaign.h"
#include "scheduler/workload.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <uv.h>
#include <zmq.h>

/* Parses a one-stage campaign; returns 0 or the error text (caller frees) in *err. */
static int s_parse(const char *stage_lines, char **err)
{
    char *text = xasprintf("name: limits\nstages:\n  - name: s\n%s", stage_lines);
    fb_campaign_t *c = NULL;
    *err = NULL;
    int rc = fb_campaign_parse(text, strlen(text), "limits.yaml", &c, err);
    fb_campaign_destroy(&c);
    free(text);
    return rc;
}

/* The wire's verdict on a RunTask with this timeout and one parameter value. */
static int s_wire(uint64_t timeout_ms, const char *value)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__RunTask rt = FLEETBURN__RUN_TASK__INIT;
    Fleetburn__Param p = FLEETBURN__PARAM__INIT, *pp = &p;
    rt.task_id = (char *)"c1/0/n1";
    rt.campaign_id = (char *)"c1";
    rt.stage = (char *)"s";
    rt.workload = (char *)"sleep";
    rt.timeout_ms = timeout_ms;
    p.key = (char *)"duration";
    p.value = (char *)value;
    rt.params = &pp;
    rt.n_params = 1;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RUN_TASK;
    env.run_task = &rt;
    size_t len;
    uint8_t *buf = fb_wire_encode(&env, &len);
    Fleetburn__Envelope *out = NULL;
    char err[256];
    int rc = fb_wire_decode(buf, len, &out, err, sizeof err);
    fb_wire_free(&out);
    free(buf);
    return rc;
}

static void test_stage_timeout(void **state)
{
    (void)state;
    char *err, *line;
    /* The largest the checker takes, and the wire takes it too. */
    assert_int_equal(s_parse("    workload: sleep\n    timeout: 30d\n", &err), 0);
    assert_int_equal(FB_LIMIT_TIMEOUT_MS_MAX, 30ull * 86400 * 1000);
    assert_int_equal(s_wire(FB_LIMIT_TIMEOUT_MS_MAX, "1s"), 0);
    assert_int_equal(s_wire(FB_LIMIT_TIMEOUT_MS_MIN, "1s"), 0);
    /* One millisecond more: the wire refuses it, so the checker does, naming file, line, key and
     * limit. */
    assert_int_equal(s_wire(FB_LIMIT_TIMEOUT_MS_MAX + 1, "1s"), -EINVAL);
    line = xasprintf("    workload: sleep\n    timeout: %llums\n", FB_LIMIT_TIMEOUT_MS_MAX + 1);
    assert_int_equal(s_parse(line, &err), -EINVAL);
    assert_non_null(strstr(err, "limits.yaml:5:"));
    assert_non_null(strstr(err, "timeout"));
    assert_non_null(strstr(err, "30d"));
    free(err);
    free(line);
    assert_int_equal(s_parse("    workload: sleep\n    timeout: 31d\n", &err), -EINVAL);
    free(err);
}

static void test_param_value_bytes(void **state)
{
    (void)state;
    char *value = xmalloc(FB_LIMIT_PARAM_VALUE_BYTES + 2);
    memset(value, '1', FB_LIMIT_PARAM_VALUE_BYTES + 1);
    value[FB_LIMIT_PARAM_VALUE_BYTES + 1] = '\0';
    char *err, *line;
    /* A text parameter (gpuburn devices) of exactly the limit passes both sides ... */
    value[FB_LIMIT_PARAM_VALUE_BYTES] = '\0';
    assert_int_equal(s_wire(1000, value), 0);
    line = xasprintf("    workload: gpuburn\n    params: {devices: '%s'}\n", value);
    assert_int_equal(s_parse(line, &err), 0);
    free(line);
    /* ... one byte more is refused by both. */
    value[FB_LIMIT_PARAM_VALUE_BYTES] = '1';
    assert_int_equal(s_wire(1000, value), -EINVAL);
    line = xasprintf("    workload: gpuburn\n    params: {devices: '%s'}\n", value);
    assert_int_equal(s_parse(line, &err), -EINVAL);
    assert_non_null(strstr(err, "limits.yaml:5:"));
    assert_non_null(strstr(err, "devices"));
    assert_non_null(strstr(err, "4096"));
    free(err);
    free(line);
    free(value);
}

static void test_durations(void **state)
{
    (void)state;
    char *err, *line;
    assert_int_equal(s_parse("    workload: sleep\n    params: {duration: 30d}\n", &err), 0);
    line = xasprintf("    workload: sleep\n    params: {duration: %llums}\n",
                     FB_LIMIT_DURATION_MS_MAX + 1);
    assert_int_equal(s_parse(line, &err), -EINVAL);
    assert_non_null(strstr(err, "duration"));
    assert_non_null(strstr(err, "30d"));
    free(err);
    free(line);
    /* netbw's worker refuses a measurement under FB_LIMIT_NETBW_DURATION_MS_MIN: so does the
     * schema. */
    const fb_param_spec_t *p = fb_workload_param(fb_workload_find("netbw"), "duration");
    assert_non_null(p);
    char v[32];
    snprintf(v, sizeof v, "%llums", FB_LIMIT_NETBW_DURATION_MS_MIN);
    assert_int_equal(fb_param_validate(p, v, NULL, 0), 0);
    snprintf(v, sizeof v, "%llums", FB_LIMIT_NETBW_DURATION_MS_MIN - 1);
    assert_int_equal(fb_param_validate(p, v, NULL, 0), -EINVAL);
}

static void test_table_rows(void **state)
{
    (void)state;
#define ROW(what, where, lo, hi, unit) {what, where, lo, hi, unit},
    static const fb_limit_t rows[] = {FB_LIMITS_ROWS(ROW)};
#undef ROW
    assert_true(FB_ARRAY_LEN(rows) >= 7);
    for (size_t i = 0; i < FB_ARRAY_LEN(rows); i++)
        assert_true(rows[i].max > rows[i].min);
    /* The wire's names for the same limits. */
    assert_int_equal(FB_WIRE_MAX_NAME, FB_LIMIT_NAME);
    assert_int_equal(FB_WIRE_MAX_ITEMS, FB_LIMIT_GROUP_SIZE);
    assert_int_equal(FB_WIRE_MAX_YAML, FB_LIMIT_CAMPAIGN_BYTES);
}

/* --- the agent side: a task over a limit gets an error result, not silence --- */

static void *s_start(void *arg, uv_loop_t *loop, const task_env_t *env, const char *task_id,
                     const char *workload, const char *const *params, size_t n_params,
                     uint64_t timeout_ms, const task_callbacks_t *cb, fb_result_t **result_out)
{
    (void)loop, (void)env, (void)task_id, (void)workload, (void)params, (void)n_params;
    (void)timeout_ms, (void)cb, (void)result_out;
    (*(int *)arg)++;
    return NULL;
}
static void s_nop(void *task, const char *reason)
{
    (void)task, (void)reason;
}
static void s_nop1(void *task)
{
    (void)task;
}
static void s_nopw(void *task, const char *line)
{
    (void)task, (void)line;
}

/* Runs the agent's loop until the fake coordinator receives a message; returns it (decoded). */
static Fleetburn__Envelope *s_recv(uv_loop_t *loop, void *router, uint8_t *id, size_t *id_len)
{
    for (int i = 0; i < 2000; i++) {
        uv_run(loop, UV_RUN_NOWAIT);
        zmq_msg_t a, b;
        zmq_msg_init(&a);
        if (zmq_msg_recv(&a, router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&a);
            usleep(2000);
            continue;
        }
        *id_len = zmq_msg_size(&a);
        memcpy(id, zmq_msg_data(&a), *id_len);
        zmq_msg_close(&a);
        zmq_msg_init(&b);
        assert_true(zmq_msg_recv(&b, router, 0) >= 0);
        Fleetburn__Envelope *env = NULL;
        char err[256];
        assert_int_equal(fb_wire_decode(zmq_msg_data(&b), zmq_msg_size(&b), &env, err, sizeof err), 0);
        zmq_msg_close(&b);
        return env;
    }
    fail_msg("the agent sent nothing");
    return NULL;
}

static void s_send(void *router, const uint8_t *id, size_t id_len, Fleetburn__Envelope *env)
{
    size_t len;
    uint8_t *buf = fb_wire_encode(env, &len);
    zmq_send(router, id, id_len, ZMQ_SNDMORE);
    zmq_send(router, buf, len, 0);
    free(buf);
}

static void test_agent_answers_over_limit_task(void **state)
{
    (void)state;
    void *zctx = zmq_ctx_new();
    void *router = zmq_socket(zctx, ZMQ_ROUTER);
    int linger = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
    char endpoint[256];
    size_t elen = sizeof endpoint;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &elen);

    uv_loop_t loop;
    uv_loop_init(&loop);
    int started = 0;
    agent_executor_t exec = {s_start, s_nop, s_nop1, s_nopw, &started};
    Fleetburn__Inventory inv = FLEETBURN__INVENTORY__INIT;
    agent_options_t opts = {.coordinator = endpoint,
                            .name = "n1",
                            .sysfs_root = "",
                            .address = "127.0.0.1",
                            .executor = &exec,
                            .inventory = &inv};
    char err[256];
    agent_t *agent = agent_new(&loop, &opts, err, sizeof err);
    assert_non_null(agent);

    uint8_t id[256];
    size_t id_len = 0;
    Fleetburn__Envelope *in = s_recv(&loop, router, id, &id_len);
    assert_int_equal(in->body_case, FLEETBURN__ENVELOPE__BODY_HELLO);
    fb_wire_free(&in);
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Welcome w = FLEETBURN__WELCOME__INIT;
    w.accepted = true;
    w.heartbeat_interval_ms = 1000;
    w.liveness = 5;
    w.protocol_version = FB_PROTOCOL_VERSION;
    env.body_case = FLEETBURN__ENVELOPE__BODY_WELCOME;
    env.welcome = &w;
    s_send(router, id, id_len, &env);

    Fleetburn__RunTask rt = FLEETBURN__RUN_TASK__INIT;
    rt.task_id = (char *)"c1/0/n1";
    rt.campaign_id = (char *)"c1";
    rt.stage = (char *)"s";
    rt.workload = (char *)"sleep";
    rt.timeout_ms = FB_LIMIT_TIMEOUT_MS_MAX + 1;
    Fleetburn__Envelope env2 = FLEETBURN__ENVELOPE__INIT;
    env2.body_case = FLEETBURN__ENVELOPE__BODY_RUN_TASK;
    env2.run_task = &rt;
    s_send(router, id, id_len, &env2);

    Fleetburn__Envelope *res = NULL;
    for (int i = 0; i < 20 && !res; i++) {
        in = s_recv(&loop, router, id, &id_len);
        if (in->body_case == FLEETBURN__ENVELOPE__BODY_TASK_RESULT)
            res = in;
        else
            fb_wire_free(&in);
    }
    assert_non_null(res);
    assert_string_equal(res->task_result->task_id, "c1/0/n1");
    assert_int_equal(res->task_result->verdict, FLEETBURN__VERDICT__VERDICT_ERROR);
    assert_non_null(strstr(res->task_result->error, "timeout"));
    assert_int_equal(started, 0);
    fb_wire_free(&res);

    agent_destroy(&agent);
    uv_loop_close(&loop);
    zmq_close(router);
    zmq_ctx_term(zctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stage_timeout),
        cmocka_unit_test(test_param_value_bytes),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_table_rows),
        cmocka_unit_test(test_agent_answers_over_limit_task),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
