/* SPDX-License-Identifier: Apache-2.0 */
/* Stage scopes and round plans: who runs alone, in groups or in pairs in one round of a stage.
 * Pure, deterministic functions of the node list and a seed or round number, so that the
 * coordinator can recompute any past round's placement from the timeline and tests can assert
 * coverage properties (round-robin meets every pair exactly once). */
#include "pairing.h"

#include "common/rng.h"
#include "common/strmap.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_scope_names[] = {"node", "group", "pairs"};
static const char *const s_pairing_names[] = {"random", "round-robin", "topology"};

int fb_scope_parse(const char *text, fb_scope_t *out)
{
    for (size_t i = 0; text && i < FB_ARRAY_LEN(s_scope_names); i++)
        if (strcmp(text, s_scope_names[i]) == 0) {
            *out = (fb_scope_t)i;
            return 0;
        }
    return -EINVAL;
}

const char *fb_scope_name(fb_scope_t scope)
{
    return (size_t)scope < FB_ARRAY_LEN(s_scope_names) ? s_scope_names[scope] : "?";
}

int fb_pairing_parse(const char *text, fb_pairing_t *out)
{
    for (size_t i = 0; text && i < FB_ARRAY_LEN(s_pairing_names); i++)
        if (strcmp(text, s_pairing_names[i]) == 0) {
            *out = (fb_pairing_t)i;
            return 0;
        }
    return -EINVAL;
}

const char *fb_pairing_name(fb_pairing_t pairing)
{
    return (size_t)pairing < FB_ARRAY_LEN(s_pairing_names) ? s_pairing_names[pairing] : "?";
}

int fb_plan_check_nodes(const char *const *nodes, size_t n)
{
    if (n > 0 && !nodes)
        return -EINVAL;
    fb_strmap_t *seen = fb_strmap_new();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!nodes[i] || !nodes[i][0] || fb_strmap_get(seen, nodes[i]))
            rc = -EINVAL;
        else
            fb_strmap_put(seen, nodes[i], (void *)nodes[i]);
    }
    fb_strmap_destroy(&seen);
    return rc;
}

void fb_plan_add_group(fb_plan_t *plan, const char *const *names, size_t k)
{
    /* Capacity doubles: a plan of many nodes is not copied once per node. */
    if (plan->n_groups == plan->cap_groups) {
        plan->cap_groups = plan->cap_groups ? 2 * plan->cap_groups : 8;
        plan->groups = xrealloc(plan->groups, plan->cap_groups * sizeof *plan->groups);
    }
    fb_group_t *g = &plan->groups[plan->n_groups++];
    g->members = xcalloc(k ? k : 1, sizeof *g->members);
    g->n_members = k;
    for (size_t i = 0; i < k; i++)
        g->members[i] = xstrdup(names[i]);
}

void fb_plan_add_idle(fb_plan_t *plan, const char *name)
{
    if (plan->n_idle == plan->cap_idle) {
        plan->cap_idle = plan->cap_idle ? 2 * plan->cap_idle : 8;
        plan->idle = xrealloc(plan->idle, plan->cap_idle * sizeof *plan->idle);
    }
    plan->idle[plan->n_idle++] = xstrdup(name);
}

static void s_add_pair(fb_plan_t *plan, const char *a, const char *b)
{
    const char *pair[2] = {a, b};
    fb_plan_add_group(plan, pair, 2);
}

void fb_plan_clear(fb_plan_t *plan)
{
    if (!plan)
        return;
    for (size_t g = 0; g < plan->n_groups; g++) {
        for (size_t i = 0; i < plan->groups[g].n_members; i++)
            free(plan->groups[g].members[i]);
        free(plan->groups[g].members);
    }
    free(plan->groups);
    for (size_t i = 0; i < plan->n_idle; i++)
        free(plan->idle[i]);
    free(plan->idle);
    memset(plan, 0, sizeof *plan);
}

/* Empties out, validates the names. */
static int s_begin(const char *const *nodes, size_t n, fb_plan_t *out)
{
    assert(out);
    memset(out, 0, sizeof *out);
    return fb_plan_check_nodes(nodes, n);
}

int fb_plan_nodes(const char *const *nodes, size_t n, fb_plan_t *out)
{
    int rc = s_begin(nodes, n, out);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        fb_plan_add_group(out, &nodes[i], 1);
    return 0;
}

int fb_plan_groups(const char *const *nodes, size_t n, size_t group_size, fb_plan_t *out)
{
    int rc = s_begin(nodes, n, out);
    if (rc < 0)
        return rc;
    if (group_size == 1)
        return -EINVAL;
    if (group_size == 0 || group_size > n)
        group_size = n;
    size_t i = 0;
    while (i < n) {
        size_t k = n - i < group_size ? n - i : group_size;
        if (k == 1)
            fb_plan_add_idle(out, nodes[i]);
        else
            fb_plan_add_group(out, &nodes[i], k);
        i += k;
    }
    return 0;
}

int fb_plan_pairs_random(const char *const *nodes, size_t n, uint64_t seed, fb_plan_t *out)
{
    int rc = s_begin(nodes, n, out);
    if (rc < 0)
        return rc;
    if (n == 0)
        return 0;
    size_t *order = xcalloc(n, sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    uint64_t state = seed;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)fb_rng_below(&state, (uint64_t)i + 1);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i + 1 < n; i += 2)
        s_add_pair(out, nodes[order[i]], nodes[order[i + 1]]);
    if (n % 2)
        fb_plan_add_idle(out, nodes[order[n - 1]]);
    free(order);
    return 0;
}

unsigned fb_round_robin_rounds(size_t n)
{
    if (n < 2)
        return 0;
    return (unsigned)(n % 2 ? n : n - 1);
}

static void s_add_ordered_pair(fb_plan_t *plan, const char *const *nodes, size_t i, size_t j)
{
    if (i < j)
        s_add_pair(plan, nodes[i], nodes[j]);
    else
        s_add_pair(plan, nodes[j], nodes[i]);
}

int fb_plan_pairs_round_robin(const char *const *nodes, size_t n, unsigned round, fb_plan_t *out)
{
    int rc = s_begin(nodes, n, out);
    if (rc < 0)
        return rc;
    if (n < 2) {
        if (n == 1)
            fb_plan_add_idle(out, nodes[0]);
        return 0;
    }
    /* Circle method. m (odd) positions turn around a circle; for even n the last node is fixed
     * in the middle and meets position r, for odd n position r is idle. In round r the pairs
     * are (r+k, r-k) mod m: i and j meet in the round with 2r = i+j (mod m), unique as m is odd. */
    size_t m = n % 2 ? n : n - 1;
    size_t r = round % m;
    if (n % 2 == 0)
        s_add_ordered_pair(out, nodes, r, n - 1);
    for (size_t k = 1; k <= (m - 1) / 2; k++)
        s_add_ordered_pair(out, nodes, (r + k) % m, (r + m - k) % m);
    if (n % 2)
        fb_plan_add_idle(out, nodes[r]);
    return 0;
}

size_t fb_round_robin_partner(size_t n, unsigned round, size_t i)
{
    if (n < 2 || i >= n)
        return SIZE_MAX;
    size_t m = n % 2 ? n : n - 1;
    size_t r = round % m;
    if (n % 2 == 0 && i == n - 1)
        return r;
    if (i == r)
        return n % 2 ? SIZE_MAX : n - 1;
    return (2 * r + m - i) % m; /* (r+k, r-k): i + j = 2r (mod m) */
}

const fb_group_t *fb_plan_group_of(const fb_plan_t *plan, const char *node, size_t *rank_out)
{
    for (size_t g = 0; plan && node && g < plan->n_groups; g++)
        for (size_t i = 0; i < plan->groups[g].n_members; i++)
            if (strcmp(plan->groups[g].members[i], node) == 0) {
                if (rank_out)
                    *rank_out = i;
                return &plan->groups[g];
            }
    return NULL;
}
