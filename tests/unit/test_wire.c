/* SPDX-License-Identifier: Apache-2.0 */
/* Wire protocol: every message round-trips; version mismatches are reported with both versions;
 * invalid fields, truncated frames and garbage are rejected without crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *s_hello_frame(const char *name, size_t *len)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    Fleetburn__Inventory inv = FLEETBURN__INVENTORY__INIT;
    inv.hostname = "node01";
    inv.cpus = 64;
    char *unacked[] = {"c1/0/node01"};
    hello.name = (char *)name;
    hello.inventory = &inv;
    hello.unacked_result_ids = unacked;
    hello.n_unacked_result_ids = 1;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    return fb_wire_encode(&env, len);
}

static void test_hello_round_trip(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = s_hello_frame("node01", &len);
    Fleetburn__Envelope *env = NULL;
    char err[256];
    assert_int_equal(fb_wire_decode(buf, len, &env, err, sizeof err), 0);
    assert_int_equal(env->body_case, FLEETBURN__ENVELOPE__BODY_HELLO);
    assert_string_equal(env->hello->name, "node01");
    assert_int_equal(env->hello->inventory->cpus, 64);
    assert_int_equal(env->hello->n_unacked_result_ids, 1);
    assert_string_equal(env->hello->unacked_result_ids[0], "c1/0/node01");
    fb_wire_free(&env);
    assert_null(env);
    free(buf);
}

/* A goodbye is a heartbeat with a short reason; a long one is refused. */
static void test_heartbeat_goodbye(void **state)
{
    (void)state;
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Heartbeat hb = FLEETBURN__HEARTBEAT__INIT;
    hb.goodbye = (char *)"agent stopped";
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    size_t len;
    uint8_t *buf = fb_wire_encode(&env, &len);
    Fleetburn__Envelope *out = NULL;
    char err[256];
    assert_int_equal(fb_wire_decode(buf, len, &out, err, sizeof err), 0);
    assert_string_equal(out->heartbeat->goodbye, "agent stopped");
    fb_wire_free(&out);
    free(buf);
    char *long_why = xmalloc(FB_WIRE_MAX_NAME + 2);
    memset(long_why, 'x', FB_WIRE_MAX_NAME + 1);
    long_why[FB_WIRE_MAX_NAME + 1] = '\0';
    hb.goodbye = long_why;
    buf = fb_wire_encode(&env, &len);
    assert_int_equal(fb_wire_decode(buf, len, &out, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "goodbye"));
    free(buf);
    free(long_why);
}

/* A relay's envelope (fb_wire_encode_relayed): round-trips with its frame intact; a bad node tag,
 * an agent key that is not 40 printable characters, an empty or oversized frame are refused, each
 * naming the field. */
static int s_relayed(const char *node, const char *key, const uint8_t *frame, size_t frame_len,
                     char *err, size_t errlen)
{
    size_t len;
    uint8_t *buf = fb_wire_encode_relayed(node, key, 7, frame, frame_len, &len);
    Fleetburn__Envelope *out = NULL;
    int rc = fb_wire_decode(buf, len, &out, err, errlen);
    if (rc == 0) {
        assert_int_equal(out->relayed->link, 7);
        assert_int_equal(out->relayed->frame.len, frame_len);
        assert_memory_equal(out->relayed->frame.data, frame, frame_len);
    }
    fb_wire_free(&out);
    free(buf);
    return rc;
}

static void test_relayed(void **state)
{
    (void)state;
    size_t hello_len;
    uint8_t *hello = s_hello_frame("node01", &hello_len);
    const char *key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
    char err[256];
    assert_int_equal(s_relayed("node01", key, hello, hello_len, err, sizeof err), 0);
    assert_int_equal(s_relayed("node01", "", hello, hello_len, err, sizeof err), 0);
    assert_int_equal(s_relayed("node/01", key, hello, hello_len, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "relayed: invalid node name"));
    assert_int_equal(s_relayed("node01", "short", hello, hello_len, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "agent key of 5 characters"));
    assert_int_equal(s_relayed("node01", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8] f7", hello,
                               hello_len, err, sizeof err),
                     -EINVAL);
    assert_non_null(strstr(err, "outside Z85"));
    assert_int_equal(s_relayed("node01", key, hello, 0, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "relayed: frame of 0 bytes"));
    size_t big_len = FB_WIRE_MAX_RELAYED + 1;
    uint8_t *big = xcalloc(1, big_len);
    assert_int_equal(s_relayed("node01", key, big, big_len, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "relayed: frame of"));
    free(big);
    free(hello);

    /* A relay's status: as many links as nodes, every node a node name. */
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__RelayStatus st = FLEETBURN__RELAY_STATUS__INIT;
    char *nodes[] = {"node01", "node02"};
    uint64_t links[] = {3, 4};
    st.nodes = nodes;
    st.n_nodes = 2;
    st.links = links;
    st.n_links = 2;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RELAY_STATUS;
    env.relay_status = &st;
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), 0);
    st.n_links = 1;
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "relay_status: 1 links for 2 nodes"));
    st.n_links = 2;
    nodes[1] = "node 02";
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "relay_status: node 1 is not a node name"));
}

static void test_version_mismatch_names_both(void **state)
{
    (void)state;
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Heartbeat hb = FLEETBURN__HEARTBEAT__INIT;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    size_t len;
    uint8_t *buf = fb_wire_encode(&env, &len);
    /* Re-pack with a future version, as a newer peer would send. */
    free(buf);
    env.protocol_version = FB_PROTOCOL_VERSION + 7;
    len = fleetburn__envelope__get_packed_size(&env);
    buf = xmalloc(len);
    fleetburn__envelope__pack(&env, buf);
    Fleetburn__Envelope *out = NULL;
    char err[256];
    assert_int_equal(fb_wire_decode(buf, len, &out, err, sizeof err), -EPROTONOSUPPORT);
    assert_non_null(out); /* kept so the receiver can answer with a refusal */
    char expect_peer[32], expect_own[32];
    snprintf(expect_peer, sizeof expect_peer, "version %d", FB_PROTOCOL_VERSION + 7);
    snprintf(expect_own, sizeof expect_own, "speaks %d", FB_PROTOCOL_VERSION);
    assert_non_null(strstr(err, expect_peer));
    assert_non_null(strstr(err, expect_own));
    fb_wire_free(&out);
    free(buf);
}

static void test_invalid_fields_rejected(void **state)
{
    (void)state;
    const char *bad_names[] = {"", "has space", "semi;colon", "../etc",
                               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        size_t len;
        uint8_t *buf = s_hello_frame(bad_names[i], &len);
        Fleetburn__Envelope *env = NULL;
        char err[256];
        assert_int_equal(fb_wire_decode(buf, len, &env, err, sizeof err), -EINVAL);
        assert_null(env);
        assert_non_null(strstr(err, "name"));
        free(buf);
    }

    /* Verdict out of range, progress out of range, missing body. */
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__TaskResult r = FLEETBURN__TASK_RESULT__INIT;
    r.result_id = "r1";
    r.task_id = "t1";
    r.verdict = (Fleetburn__Verdict)42;
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_RESULT;
    env.task_result = &r;
    char err[256];
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "verdict"));
    r.verdict = FLEETBURN__VERDICT__VERDICT_PASS;
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), 0);

    Fleetburn__TaskEvent ev = FLEETBURN__TASK_EVENT__INIT;
    ev.task_id = "t1";
    ev.kind = FLEETBURN__TASK_EVENT__KIND__KIND_PROGRESS;
    ev.progress = NAN;
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_EVENT;
    env.task_event = &ev;
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), -EINVAL);
    ev.progress = 1.5;
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), -EINVAL);
    ev.progress = 0.5;
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), 0);

    Fleetburn__RunTask rt = FLEETBURN__RUN_TASK__INIT;
    rt.task_id = "t1";
    rt.campaign_id = "c1";
    rt.workload = "memtest";
    rt.timeout_ms = 0;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RUN_TASK;
    env.run_task = &rt;
    assert_int_equal(fb_wire_validate(&env, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "timeout"));

    Fleetburn__Envelope empty = FLEETBURN__ENVELOPE__INIT;
    assert_int_equal(fb_wire_validate(&empty, err, sizeof err), -EINVAL);
}

static void test_truncated_and_garbage_frames(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = s_hello_frame("node01", &len);
    char err[256];
    /* Every truncation either fails cleanly or decodes to something valid. */
    for (size_t cut = 0; cut < len; cut++) {
        Fleetburn__Envelope *env = NULL;
        int rc = fb_wire_decode(buf, cut, &env, err, sizeof err);
        if (rc == 0 || rc == -EPROTONOSUPPORT) /* a cut can drop the version field */
            fb_wire_free(&env);
        else
            assert_null(env);
    }
    /* Random garbage and random mutations of a valid frame never crash. */
    srand(12345);
    uint8_t junk[512];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t)(rand() % (int)sizeof junk);
        if (iter % 2) {
            for (size_t i = 0; i < n; i++)
                junk[i] = (uint8_t)rand();
        } else {
            n = len;
            memcpy(junk, buf, len);
            for (int k = 0; k < 3; k++)
                junk[rand() % (int)len] = (uint8_t)rand();
        }
        Fleetburn__Envelope *env = NULL;
        int rc = fb_wire_decode(junk, n, &env, err, sizeof err);
        if (rc == 0 || rc == -EPROTONOSUPPORT)
            fb_wire_free(&env);
    }
    free(buf);
    /* An oversized frame is refused before decoding. */
    Fleetburn__Envelope *env = NULL;
    assert_int_equal(fb_wire_decode((const uint8_t *)"", FB_WIRE_MAX_FRAME + 1, &env, err, sizeof err),
                     -EBADMSG);
}

/* protobuf-c accepts field number 0 written in two bytes (0x80 0x00) and keeps it as an unknown
 * field; packed again it is the one-byte tag 0x00, which no decoder accepts. libFuzzer found it
 * (tests/fuzz/corpus/wire): such frames are refused, unknown fields with valid numbers are kept. */
static void test_invalid_field_numbers(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = s_hello_frame("node01", &len);
    uint8_t *frame = malloc(len + 7);
    assert_non_null(frame);
    memcpy(frame, buf, len);
    char err[256];
    Fleetburn__Envelope *env = NULL;
    /* field 0, varint, written in two bytes; value 0 */
    memcpy(frame + len, "\x80\x00\x00", 3);
    assert_int_equal(fb_wire_decode(frame, len + 3, &env, err, sizeof err), -EBADMSG);
    assert_null(env);
    assert_non_null(strstr(err, "field number 0"));
    /* field 2^29 (five-byte tag), varint 0 */
    memcpy(frame + len, "\x80\x80\x80\x80\x10\x00", 6);
    assert_int_equal(fb_wire_decode(frame, len + 6, &env, err, sizeof err), -EBADMSG);
    assert_null(env);
    /* field 99, unknown but valid: kept, and the frame re-encodes into one that decodes */
    memcpy(frame + len, "\x98\x06\x01", 3);
    assert_int_equal(fb_wire_decode(frame, len + 3, &env, err, sizeof err), 0);
    size_t len2;
    uint8_t *again = fb_wire_encode(env, &len2);
    fb_wire_free(&env);
    assert_int_equal(fb_wire_decode(again, len2, &env, err, sizeof err), 0);
    fb_wire_free(&env);
    free(again);

    /* The same inside a TaskResult: the sub-message's unknown fields are checked too. */
    fb_result_t *r = fb_result_new();
    fb_result_set_ids(r, "c1/0/n1", "c1/0/n1", "n1");
    r->verdict = FB_VERDICT_PASS;
    free(buf);
    buf = fb_wire_result_pack(r, &len);
    uint8_t *bad = malloc(len + 3);
    assert_non_null(bad);
    memcpy(bad, buf, len);
    memcpy(bad + len, "\x80\x00\x00", 3);
    assert_null(fb_wire_result_unpack(bad, len + 3, err, sizeof err));
    fb_result_t *ok = fb_wire_result_unpack(buf, len, err, sizeof err);
    assert_non_null(ok);
    fb_result_destroy(&ok);
    fb_result_destroy(&r);
    free(bad);
    free(frame);
    free(buf);
}

static void test_result_pack_round_trip(void **state)
{
    (void)state;
    fb_result_t *r = fb_result_new();
    fb_result_set_ids(r, "c1/0/n1", "c1/0/n1", "n1");
    r->verdict = FB_VERDICT_FAIL;
    fb_result_add_metric(r, "bandwidth_mbs", 12345.5, "MB/s");
    fb_result_add_finding(r, "n1", "memory", "miscompare at 0x1000");
    fb_result_set_error(r, "1 miscompare");
    size_t len;
    uint8_t *buf = fb_wire_result_pack(r, &len);
    char err[128];
    fb_result_t *back = fb_wire_result_unpack(buf, len, err, sizeof err);
    assert_non_null(back);
    assert_int_equal(back->verdict, FB_VERDICT_FAIL);
    assert_string_equal(back->node, "n1");
    assert_int_equal(back->n_metrics, 1);
    assert_true(back->metrics[0].value == 12345.5);
    assert_string_equal(back->findings[0].what, "miscompare at 0x1000");
    assert_string_equal(back->error, "1 miscompare");
    /* A result without ids is invalid (the spool would not know what it belongs to). */
    fb_result_t *anon = fb_result_new();
    anon->verdict = FB_VERDICT_PASS;
    free(buf);
    buf = fb_wire_result_pack(anon, &len);
    assert_null(fb_wire_result_unpack(buf, len, err, sizeof err));
    free(buf);
    fb_result_destroy(&anon);
    fb_result_destroy(&back);
    fb_result_destroy(&r);
    assert_null(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_round_trip),
        cmocka_unit_test(test_version_mismatch_names_both),
        cmocka_unit_test(test_relayed),
        cmocka_unit_test(test_heartbeat_goodbye),
        cmocka_unit_test(test_invalid_fields_rejected),
        cmocka_unit_test(test_truncated_and_garbage_frames),
        cmocka_unit_test(test_invalid_field_numbers),
        cmocka_unit_test(test_result_pack_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
