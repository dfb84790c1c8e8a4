/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes and round plans: round-robin meets every pair exactly once over its rounds (n = 2..40),
 * random plans are perfect matchings that depend on the seed only, group sizes and remainders,
 * and bad node lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "scheduler/pairing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 64

static char s_names[MAX_NODES][16];
static const char *s_nodes[MAX_NODES];

static void s_make_nodes(size_t n)
{
    assert_true(n <= MAX_NODES);
    for (size_t i = 0; i < n; i++) {
        snprintf(s_names[i], sizeof s_names[i], "node%02zu", i + 1);
        s_nodes[i] = s_names[i];
    }
}

static size_t s_index(const char *name)
{
    unsigned v = 0;
    assert_int_equal(sscanf(name, "node%u", &v), 1);
    assert_true(v >= 1 && v <= MAX_NODES);
    return v - 1;
}

/* Every one of the n nodes appears exactly once, in a group or idle. */
static void s_assert_partition(const fb_plan_t *plan, size_t n)
{
    int seen[MAX_NODES] = {0};
    for (size_t g = 0; g < plan->n_groups; g++)
        for (size_t i = 0; i < plan->groups[g].n_members; i++)
            seen[s_index(plan->groups[g].members[i])]++;
    for (size_t i = 0; i < plan->n_idle; i++)
        seen[s_index(plan->idle[i])]++;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(seen[i], 1);
}

static void test_scope_and_pairing_names(void **state)
{
    (void)state;
    fb_scope_t s;
    fb_pairing_t p;
    assert_int_equal(fb_scope_parse("pairs", &s), 0);
    assert_int_equal(s, FB_SCOPE_PAIRS);
    assert_string_equal(fb_scope_name(FB_SCOPE_GROUP), "group");
    assert_int_equal(fb_scope_parse("pair", &s), -EINVAL);
    assert_int_equal(fb_scope_parse(NULL, &s), -EINVAL);
    assert_int_equal(fb_pairing_parse("round-robin", &p), 0);
    assert_int_equal(p, FB_PAIRING_ROUND_ROBIN);
    assert_string_equal(fb_pairing_name(FB_PAIRING_TOPOLOGY), "topology");
    assert_int_equal(fb_pairing_parse("roundrobin", &p), -EINVAL);
}

static void test_round_robin_covers_every_pair_once(void **state)
{
    (void)state;
    static int met[MAX_NODES][MAX_NODES];
    for (size_t n = 2; n <= 40; n++) {
        s_make_nodes(n);
        memset(met, 0, sizeof met);
        int idle[MAX_NODES] = {0};
        unsigned rounds = fb_round_robin_rounds(n);
        assert_int_equal(rounds, n % 2 ? n : n - 1);
        for (unsigned r = 0; r < rounds; r++) {
            fb_plan_t plan;
            assert_int_equal(fb_plan_pairs_round_robin(s_nodes, n, r, &plan), 0);
            s_assert_partition(&plan, n);
            assert_int_equal(plan.n_groups, n / 2);
            assert_int_equal(plan.n_idle, n % 2);
            for (size_t g = 0; g < plan.n_groups; g++) {
                assert_int_equal(plan.groups[g].n_members, 2);
                size_t a = s_index(plan.groups[g].members[0]);
                size_t b = s_index(plan.groups[g].members[1]);
                assert_true(a < b); /* earlier input node is rank 0 */
                assert_int_equal(fb_round_robin_partner(n, r, a), b);
                assert_int_equal(fb_round_robin_partner(n, r, b), a);
                met[a][b]++;
            }
            for (size_t i = 0; i < plan.n_idle; i++) {
                idle[s_index(plan.idle[i])]++;
                assert_int_equal(fb_round_robin_partner(n, r, s_index(plan.idle[i])), SIZE_MAX);
            }
            fb_plan_clear(&plan);
        }
        for (size_t a = 0; a < n; a++) {
            for (size_t b = a + 1; b < n; b++)
                assert_int_equal(met[a][b], 1);
            assert_int_equal(idle[a], n % 2 ? 1 : 0);
        }
        /* The round number wraps: round `rounds` is round 0. */
        fb_plan_t p0, pw;
        assert_int_equal(fb_plan_pairs_round_robin(s_nodes, n, 0, &p0), 0);
        assert_int_equal(fb_plan_pairs_round_robin(s_nodes, n, rounds, &pw), 0);
        for (size_t g = 0; g < p0.n_groups; g++)
            assert_string_equal(p0.groups[g].members[0], pw.groups[g].members[0]);
        fb_plan_clear(&p0);
        fb_plan_clear(&pw);
    }
}

static void test_round_robin_small(void **state)
{
    (void)state;
    fb_plan_t plan;
    s_make_nodes(1);
    assert_int_equal(fb_plan_pairs_round_robin(s_nodes, 1, 0, &plan), 0);
    assert_int_equal(plan.n_groups, 0);
    assert_int_equal(plan.n_idle, 1);
    fb_plan_clear(&plan);
    assert_int_equal(fb_plan_pairs_round_robin(NULL, 0, 3, &plan), 0);
    assert_int_equal(plan.n_groups + plan.n_idle, 0);
    fb_plan_clear(&plan);
    fb_plan_clear(&plan); /* twice is fine */
    fb_plan_clear(NULL);
}

static void s_pairs_key(const fb_plan_t *plan, int partner[MAX_NODES])
{
    for (size_t i = 0; i < MAX_NODES; i++)
        partner[i] = -1;
    for (size_t g = 0; g < plan->n_groups; g++) {
        size_t a = s_index(plan->groups[g].members[0]);
        size_t b = s_index(plan->groups[g].members[1]);
        partner[a] = (int)b;
        partner[b] = (int)a;
    }
}

static void test_random_is_perfect_matching_and_seeded(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 41; n++) {
        s_make_nodes(n);
        int distinct = 0;
        int first[MAX_NODES];
        for (uint64_t seed = 1; seed <= 8; seed++) {
            fb_plan_t plan, again;
            assert_int_equal(fb_plan_pairs_random(s_nodes, n, seed, &plan), 0);
            assert_int_equal(fb_plan_pairs_random(s_nodes, n, seed, &again), 0);
            s_assert_partition(&plan, n);
            assert_int_equal(plan.n_groups, n / 2);
            assert_int_equal(plan.n_idle, n % 2);
            int p[MAX_NODES], q[MAX_NODES];
            s_pairs_key(&plan, p);
            s_pairs_key(&again, q);
            assert_memory_equal(p, q, sizeof p); /* deterministic for a seed */
            for (size_t g = 0; g < plan.n_groups; g++)
                assert_int_equal(plan.groups[g].n_members, 2);
            if (seed == 1)
                memcpy(first, p, sizeof first);
            else if (memcmp(first, p, sizeof p) != 0)
                distinct++;
            fb_plan_clear(&plan);
            fb_plan_clear(&again);
        }
        if (n >= 6)
            assert_true(distinct >= 5); /* seeds give different matchings */
    }
}

static void test_groups(void **state)
{
    (void)state;
    fb_plan_t plan;
    s_make_nodes(10);
    assert_int_equal(fb_plan_groups(s_nodes, 10, 0, &plan), 0);
    assert_int_equal(plan.n_groups, 1);
    assert_int_equal(plan.groups[0].n_members, 10);
    assert_string_equal(plan.groups[0].members[0], "node01"); /* rank = input order */
    fb_plan_clear(&plan);

    assert_int_equal(fb_plan_groups(s_nodes, 10, 4, &plan), 0); /* 4 4 2 */
    s_assert_partition(&plan, 10);
    assert_int_equal(plan.n_groups, 3);
    assert_int_equal(plan.groups[0].n_members, 4);
    assert_int_equal(plan.groups[1].n_members, 4);
    assert_int_equal(plan.groups[2].n_members, 2);
    assert_string_equal(plan.groups[2].members[1], "node10");
    assert_int_equal(plan.n_idle, 0);
    size_t rank = 9;
    const fb_group_t *g = fb_plan_group_of(&plan, "node06", &rank);
    assert_ptr_equal(g, &plan.groups[1]);
    assert_int_equal(rank, 1);
    assert_null(fb_plan_group_of(&plan, "node99", NULL));
    fb_plan_clear(&plan);

    assert_int_equal(fb_plan_groups(s_nodes, 9, 4, &plan), 0); /* 4 4, one idle */
    s_assert_partition(&plan, 9);
    assert_int_equal(plan.n_groups, 2);
    assert_int_equal(plan.n_idle, 1);
    assert_string_equal(plan.idle[0], "node09");
    fb_plan_clear(&plan);

    assert_int_equal(fb_plan_groups(s_nodes, 8, 20, &plan), 0);
    assert_int_equal(plan.n_groups, 1);
    fb_plan_clear(&plan);
    assert_int_equal(fb_plan_groups(s_nodes, 8, 1, &plan), -EINVAL);
    assert_int_equal(plan.n_groups, 0);

    assert_int_equal(fb_plan_nodes(s_nodes, 3, &plan), 0);
    assert_int_equal(plan.n_groups, 3);
    assert_string_equal(plan.groups[2].members[0], "node03");
    fb_plan_clear(&plan);
}

static void test_bad_node_lists(void **state)
{
    (void)state;
    fb_plan_t plan;
    const char *dup[] = {"a", "b", "a"};
    const char *empty[] = {"a", ""};
    const char *null[] = {"a", NULL};
    assert_int_equal(fb_plan_pairs_random(dup, 3, 1, &plan), -EINVAL);
    assert_int_equal(plan.n_groups + plan.n_idle, 0);
    assert_int_equal(fb_plan_pairs_round_robin(empty, 2, 0, &plan), -EINVAL);
    assert_int_equal(fb_plan_groups(null, 2, 0, &plan), -EINVAL);
    assert_int_equal(fb_plan_nodes(NULL, 2, &plan), -EINVAL);
    fb_plan_clear(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scope_and_pairing_names),
        cmocka_unit_test(test_round_robin_covers_every_pair_once),
        cmocka_unit_test(test_round_robin_small),
        cmocka_unit_test(test_random_is_perfect_matching_and_seeded),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_bad_node_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
