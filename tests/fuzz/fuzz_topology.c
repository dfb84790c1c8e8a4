/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes the fabric parsers of scheduler/topology.c: the text format and `ibnetdiscover` output
 * (a campaign's topology file, attached to a Submit). Every input goes through both. A topology
 * that parses is queried the way the scheduler uses it: paths between nodes, pair rounds planned
 * over all its nodes (each node exactly once per round), and slow pairs implicated. */
#include "fuzz.h"

#include "scheduler/pairing.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <stdbool.h>

FZ_INITIALIZE()

/* Every node of the topology, leaf by leaf (borrowed names). */
static const char **s_nodes(const fb_topology_t *t, size_t *n_out)
{
    size_t total = fb_topology_n_nodes(t), n = 0;
    const char **nodes = xmalloc((total + 1) * sizeof *nodes);
    for (size_t i = 0; i < fb_topology_n_leaves(t); i++) {
        size_t k = 0;
        const char *const *leaf = fb_topology_leaf_nodes(t, i, &k);
        FZ_CHECK(fb_topology_leaf_name(t, i) != NULL);
        for (size_t j = 0; j < k; j++) {
            FZ_CHECK(n < total);
            FZ_CHECK(strcmp(fb_topology_leaf_of(t, leaf[j]), fb_topology_leaf_name(t, i)) == 0);
            nodes[n++] = leaf[j];
        }
        size_t n_spines = 0;
        (void)fb_topology_leaf_spines(t, i, &n_spines);
    }
    FZ_CHECK(n == total);
    *n_out = n;
    return nodes;
}

static void s_check_plan(const fb_plan_t *plan, size_t n)
{
    size_t seen = plan->n_idle;
    for (size_t g = 0; g < plan->n_groups; g++) {
        FZ_CHECK(plan->groups[g].n_members == 2);
        seen += plan->groups[g].n_members;
    }
    FZ_CHECK(seen == n);
}

static void s_use(const fb_topology_t *t)
{
    for (size_t i = 0; i < fb_topology_n_spines(t); i++)
        FZ_CHECK(fb_topology_spine_name(t, i) != NULL);
    FZ_CHECK(fb_topology_leaf_name(t, fb_topology_n_leaves(t)) == NULL);
    size_t n = 0;
    const char **nodes = s_nodes(t, &n);
    if (n >= 2) {
        fb_link_t links[4];
        int rc = fb_topology_path(t, nodes[0], nodes[n - 1], links, 4);
        FZ_CHECK(rc == 2 || rc == 4 || rc == -EHOSTUNREACH || rc == -EINVAL);
        unsigned rounds = fb_topology_pair_rounds(t, nodes, n);
        for (unsigned r = 0; r < 2 && r <= rounds; r++) {
            fb_plan_t plan;
            if (fb_plan_pairs_topology(t, nodes, n, r, &plan) == 0)
                s_check_plan(&plan, n);
            fb_plan_clear(&plan);
        }
        fb_pair_result_t results[2] = {{nodes[0], nodes[n - 1], true}, {nodes[0], nodes[1], false}};
        fb_suspect_t suspects[8];
        (void)fb_topology_implicate(t, results, 2, suspects, 8);
    }
    free(nodes);
}

/* The text through one of the topology parsers; what parses is used. */
static void s_parse(int (*parse)(const char *, fb_topology_t **, char *, size_t), const char *text)
{
    char err[256];
    fb_topology_t *t = NULL;
    int rc = parse(text, &t, err, sizeof err);
    FZ_CHECK_PARSED(rc, t, err);
    if (t)
        s_use(t);
    fb_topology_destroy(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    s_parse(fb_topology_parse, text);
    s_parse(fb_topology_parse_ibnetdiscover, text);
    free(text);
    return 0;
}
