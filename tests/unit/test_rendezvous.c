/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of scheduler/rendezvous, the exchange broker of group tasks: an NCCL-style unique
 * id posted by rank 0 reaches every rank in rank order; duplicate posts are idempotent and a
 * resend after completion is answered alone; a member that never posts ends the exchange at its
 * deadline with an error naming it; a lost member fails the task's pending exchanges; a member
 * that ended fails only what it never posted to; many tasks at once stay apart and are
 * forgotten when they end; bad posts are refused. */
#include "scheduler/rendezvous.h"
#include "common/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *const s_members[] = {"n1", "n2", "n3", "n4"};

static int s_post(fb_rendezvous_t *r, const char *task, const char *key, unsigned rank, size_t size,
                  const char *value, uint64_t timeout_ms, uint64_t now, fb_rdv_reply_t *reply)
{
    return fb_rendezvous_post(r, task, key, rank, s_members, size, value, value ? strlen(value) : 0,
                              timeout_ms, now, reply);
}

static void s_expect_to(const fb_rdv_reply_t *reply, const unsigned *ranks, size_t n)
{
    assert_int_equal(reply->n_to, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(reply->ranks[i], ranks[i]);
        assert_string_equal(reply->nodes[i], s_members[ranks[i]]);
    }
}

static void test_unique_id_reaches_every_rank(void **state)
{
    (void)state;
    fb_rendezvous_t *r = fb_rendezvous_new();
    uint8_t id[128];
    for (size_t i = 0; i < sizeof id; i++)
        id[i] = (uint8_t)(i * 7 + 1);
    fb_rdv_reply_t reply;
    /* Ranks arrive in any order; only rank 0 has something to say (the unique id). */
    assert_int_equal(s_post(r, "c/1/r0.g0", "ncclid", 2, 4, NULL, 0, 100, &reply), FB_RDV_WAITING);
    assert_int_equal(reply.n_to, 0);
    assert_int_equal(fb_rendezvous_post(r, "c/1/r0.g0", "ncclid", 0, s_members, 4, id, sizeof id, 0,
                                        110, &reply),
                     FB_RDV_WAITING);
    assert_int_equal(s_post(r, "c/1/r0.g0", "ncclid", 3, 4, NULL, 0, 120, &reply), FB_RDV_WAITING);
    assert_int_equal(s_post(r, "c/1/r0.g0", "ncclid", 1, 4, NULL, 0, 130, &reply), FB_RDV_COMPLETE);
    assert_true(reply.ok);
    assert_string_equal(reply.task_id, "c/1/r0.g0");
    assert_string_equal(reply.key, "ncclid");
    assert_int_equal(reply.n_values, 4);
    assert_int_equal(reply.values[0].len, sizeof id);
    assert_memory_equal(reply.values[0].data, id, sizeof id);
    for (size_t i = 1; i < 4; i++)
        assert_int_equal(reply.values[i].len, 0);
    const unsigned all[] = {0, 1, 2, 3};
    s_expect_to(&reply, all, 4);
    fb_rdv_reply_clear(&reply);
    fb_rdv_reply_clear(&reply); /* clearing twice is fine */

    /* Ranks are assigned by the group: every rank's value lands at its index. */
    assert_int_equal(s_post(r, "c/1/r0.g0", "names", 1, 3, "n2", 0, 200, &reply), 0);
    assert_int_equal(s_post(r, "c/1/r0.g0", "names", 0, 3, "n1", 0, 200, &reply), 0);
    assert_int_equal(s_post(r, "c/1/r0.g0", "names", 2, 3, "n3", 0, 200, &reply), 1);
    for (size_t i = 0; i < 3; i++)
        assert_memory_equal(reply.values[i].data, s_members[i], 2);
    fb_rdv_reply_clear(&reply);
    assert_int_equal(fb_rendezvous_count(r), 2);
    fb_rendezvous_end_task(r, "c/1/r0.g0");
    assert_int_equal(fb_rendezvous_count(r), 0);
    fb_rendezvous_destroy(&r);
    assert_null(r);
    fb_rendezvous_destroy(&r);
}

static void test_duplicate_posts(void **state)
{
    (void)state;
    fb_rendezvous_t *r = fb_rendezvous_new();
    fb_rdv_reply_t reply;
    assert_int_equal(s_post(r, "t", "qp", 0, 2, "first", 0, 0, &reply), FB_RDV_WAITING);
    /* A resend after a reconnect: still waiting, and the first value stays. */
    assert_int_equal(s_post(r, "t", "qp", 0, 2, "again", 0, 10, &reply), FB_RDV_WAITING);
    assert_int_equal(s_post(r, "t", "qp", 1, 2, "peer", 0, 20, &reply), FB_RDV_COMPLETE);
    assert_int_equal(reply.values[0].len, 5);
    assert_memory_equal(reply.values[0].data, "first", 5);
    fb_rdv_reply_clear(&reply);
    /* Rank 1 missed the reply (reconnect) and posts again: the values again, to it alone. */
    assert_int_equal(s_post(r, "t", "qp", 1, 2, "peer", 0, 30, &reply), FB_RDV_COMPLETE);
    const unsigned one[] = {1};
    s_expect_to(&reply, one, 1);
    assert_memory_equal(reply.values[1].data, "peer", 4);
    fb_rdv_reply_clear(&reply);
    assert_int_equal(fb_rendezvous_count(r), 1);
    fb_rendezvous_destroy(&r);
}

static void test_member_never_arrives(void **state)
{
    (void)state;
    fb_rendezvous_t *r = fb_rendezvous_new();
    fb_rdv_reply_t reply, *replies = NULL;
    assert_int_equal(s_post(r, "t", "names", 0, 3, "a", 5000, 1000, &reply), 0);
    assert_int_equal(s_post(r, "t", "names", 1, 3, "b", 5000, 3000, &reply), 0);
    /* The deadline counts from the first post. */
    assert_int_equal(fb_rendezvous_expire(r, 5999, &replies), 0);
    assert_null(replies);
    assert_int_equal(fb_rendezvous_expire(r, 6000, &replies), 1);
    assert_false(replies[0].ok);
    assert_string_equal(replies[0].error, "exchange names: rank 2 (n3) did not post within 5.0 s "
                                          "(2 of 3 ranks posted)");
    const unsigned posted[] = {0, 1};
    s_expect_to(&replies[0], posted, 2);
    fb_rdv_replies_free(&replies, 1);
    assert_null(replies);
    /* Expiry happens once; the latecomer is told why it is too late. */
    assert_int_equal(fb_rendezvous_expire(r, 9000, &replies), 0);
    assert_int_equal(s_post(r, "t", "names", 2, 3, "c", 5000, 9000, &reply), FB_RDV_FAILED);
    assert_non_null(strstr(reply.error, "rank 2 (n3) did not post"));
    const unsigned late[] = {2};
    s_expect_to(&reply, late, 1);
    fb_rdv_reply_clear(&reply);

    /* Timeout 0 means the default; two ranks missing are both named. */
    assert_int_equal(s_post(r, "u", "k", 1, 3, "x", 0, 0, &reply), 0);
    assert_int_equal(fb_rendezvous_expire(r, FB_RENDEZVOUS_DEFAULT_TIMEOUT_MS - 1, &replies), 0);
    assert_int_equal(fb_rendezvous_expire(r, FB_RENDEZVOUS_DEFAULT_TIMEOUT_MS, &replies), 1);
    assert_string_equal(replies[0].error, "exchange k: ranks 0 (n1), 2 (n3) did not post within "
                                          "120.0 s (1 of 3 ranks posted)");
    fb_rdv_replies_free(&replies, 1);

    /* Without member names the ranks alone are named. */
    assert_int_equal(fb_rendezvous_post(r, "v", "k", 0, NULL, 2, "x", 1, 10, 0, &reply), 0);
    assert_int_equal(fb_rendezvous_expire(r, 10, &replies), 1);
    assert_string_equal(replies[0].error,
                        "exchange k: rank 1 did not post within 0.0 s (1 of 2 ranks posted)");
    assert_string_equal(replies[0].nodes[0], "");
    fb_rdv_replies_free(&replies, 1);
    fb_rendezvous_destroy(&r);
}

static void test_fail_task(void **state)
{
    (void)state;
    fb_rendezvous_t *r = fb_rendezvous_new();
    fb_rdv_reply_t reply, *replies = NULL;
    assert_int_equal(s_post(r, "t", "done", 0, 2, "a", 0, 0, &reply), 0);
    assert_int_equal(s_post(r, "t", "done", 1, 2, "b", 0, 0, &reply), FB_RDV_COMPLETE);
    fb_rdv_reply_clear(&reply);
    assert_int_equal(s_post(r, "t", "pending", 1, 2, "b", 0, 0, &reply), 0);
    assert_int_equal(s_post(r, "other", "pending", 0, 2, "z", 0, 0, &reply), 0);
    /* Only the pending exchange of that task fails, and only the rank that posted hears it. */
    assert_int_equal(fb_rendezvous_fail_task(r, "t", "n1 (rank 0) lost: agent lost", &replies), 1);
    assert_string_equal(replies[0].key, "pending");
    assert_string_equal(replies[0].error, "exchange pending: n1 (rank 0) lost: agent lost");
    const unsigned poster[] = {1};
    s_expect_to(&replies[0], poster, 1);
    fb_rdv_replies_free(&replies, 1);
    assert_int_equal(fb_rendezvous_fail_task(r, "t", "again", &replies), 0);
    assert_int_equal(fb_rendezvous_fail_task(r, "unknown", "x", &replies), 0);
    /* A completed exchange still answers a resend until the task ends. */
    assert_int_equal(s_post(r, "t", "done", 0, 2, "a", 0, 0, &reply), FB_RDV_COMPLETE);
    fb_rdv_reply_clear(&reply);
    assert_int_equal(fb_rendezvous_count(r), 3);
    fb_rendezvous_end_task(r, "t");
    fb_rendezvous_end_task(r, "t");
    assert_int_equal(fb_rendezvous_count(r), 1);
    /* After the end a post starts afresh (the coordinator refuses posts to ended tasks). */
    assert_int_equal(s_post(r, "t", "done", 0, 2, "a", 0, 0, &reply), FB_RDV_WAITING);
    fb_rendezvous_destroy(&r);
}

static void test_fail_rank(void **state)
{
    (void)state;
    fb_rendezvous_t *r = fb_rendezvous_new();
    fb_rdv_reply_t reply, *replies = NULL;
    assert_int_equal(s_post(r, "t", "a", 0, 3, "x", 0, 0, &reply), 0);
    assert_int_equal(s_post(r, "t", "a", 2, 3, "x", 0, 0, &reply), 0);
    assert_int_equal(s_post(r, "t", "b", 1, 3, "x", 0, 0, &reply), 0);
    /* Rank 2 ended: "b" can never complete, "a" still can. */
    assert_int_equal(fb_rendezvous_fail_rank(r, "t", 2, "n3 (rank 2) ended (skipped)", &replies),
                     1);
    assert_string_equal(replies[0].key, "b");
    assert_string_equal(replies[0].error, "exchange b: n3 (rank 2) ended (skipped)");
    fb_rdv_replies_free(&replies, 1);
    assert_int_equal(s_post(r, "t", "a", 1, 3, "x", 0, 0, &reply), FB_RDV_COMPLETE);
    fb_rdv_reply_clear(&reply);
    assert_int_equal(fb_rendezvous_fail_rank(r, "t", 7, "out of range", &replies), 0);
    fb_rendezvous_destroy(&r);
}

static void test_many_tasks(void **state)
{
    (void)state;
    fb_rendezvous_t *r = fb_rendezvous_new();
    fb_rdv_reply_t reply;
    enum { TASKS = 500 };
    size_t complete = 0;
    /* Every task's ranks post interleaved with every other task's, under two keys. */
    for (unsigned rank = 0; rank < 2; rank++)
        for (unsigned k = 0; k < 2; k++)
            for (unsigned t = 0; t < TASKS; t++) {
                char task[32], value[32];
                snprintf(task, sizeof task, "c/0/r0.g%u", t);
                snprintf(value, sizeof value, "%u:%u:%u", t, k, rank);
                int rc = s_post(r, task, k ? "qp" : "port", rank, 2, value, 0, 0, &reply);
                assert_int_equal(rc, rank ? FB_RDV_COMPLETE : FB_RDV_WAITING);
                if (rc == FB_RDV_COMPLETE) {
                    complete++;
                    char want[32];
                    snprintf(want, sizeof want, "%u:%u:0", t, k);
                    assert_int_equal(reply.values[0].len, strlen(want));
                    assert_memory_equal(reply.values[0].data, want, strlen(want));
                }
                fb_rdv_reply_clear(&reply);
            }
    assert_int_equal(complete, 2 * TASKS);
    assert_int_equal(fb_rendezvous_count(r), 2 * TASKS);
    fb_rdv_reply_t *replies = NULL;
    assert_int_equal(fb_rendezvous_expire(r, UINT64_MAX, &replies), 0);
    for (unsigned t = 0; t < TASKS; t++) {
        char task[32];
        snprintf(task, sizeof task, "c/0/r0.g%u", t);
        fb_rendezvous_end_task(r, task);
    }
    assert_int_equal(fb_rendezvous_count(r), 0);
    fb_rendezvous_destroy(&r);
}

static void test_bad_posts(void **state)
{
    (void)state;
    fb_rendezvous_t *r = fb_rendezvous_new();
    fb_rdv_reply_t reply;
    assert_int_equal(s_post(r, "t", "k", 2, 2, "x", 0, 0, &reply), -EINVAL);
    assert_int_equal(s_post(r, "t", "k", 0, 0, "x", 0, 0, &reply), -EINVAL);
    assert_int_equal(s_post(r, "t", "k", 0, 2, "x", 0, 0, &reply), 0);
    assert_int_equal(s_post(r, "t", "k", 1, 3, "x", 0, 0, &reply), -EINVAL); /* other size */
    uint8_t *big = xcalloc(1, FB_RENDEZVOUS_MAX_BYTES + 1);
    assert_int_equal(fb_rendezvous_post(r, "t", "big", 0, s_members, 2, big,
                                        FB_RENDEZVOUS_MAX_BYTES + 1, 0, 0, &reply),
                     -EINVAL);
    /* Each value fits, the sum does not: the exchange fails for those who posted. */
    size_t half = FB_RENDEZVOUS_MAX_BYTES / 2 + 1;
    assert_int_equal(fb_rendezvous_post(r, "t", "sum", 0, s_members, 2, big, half, 0, 0, &reply),
                     0);
    assert_int_equal(fb_rendezvous_post(r, "t", "sum", 1, s_members, 2, big, half, 0, 0, &reply),
                     FB_RDV_FAILED);
    assert_non_null(strstr(reply.error, "total more than"));
    assert_int_equal(reply.n_to, 2);
    fb_rdv_reply_clear(&reply);
    free(big);
    /* A task holds a bounded number of exchanges. */
    for (unsigned i = 0; i < FB_RENDEZVOUS_MAX_KEYS; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", i);
        int rc = s_post(r, "many", key, 0, 2, "x", 0, 0, &reply);
        assert_int_equal(rc, 0);
    }
    assert_int_equal(s_post(r, "many", "one-more", 0, 2, "x", 0, 0, &reply), -ENOSPC);
    assert_int_equal(s_post(r, "many", "k0", 1, 2, "x", 0, 0, &reply), FB_RDV_COMPLETE);
    fb_rdv_reply_clear(&reply);
    fb_rendezvous_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unique_id_reaches_every_rank),
        cmocka_unit_test(test_duplicate_posts),
        cmocka_unit_test(test_member_never_arrives),
        cmocka_unit_test(test_fail_task),
        cmocka_unit_test(test_fail_rank),
        cmocka_unit_test(test_many_tasks),
        cmocka_unit_test(test_bad_posts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
