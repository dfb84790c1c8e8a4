/* SPDX-License-Identifier: Apache-2.0 */
/* Fabric topology: the text format and its line-numbered errors, the ibnetdiscover fixture
 * (2 spines, 4 leaves, 16 nodes) giving the same model, pair paths, topology pair rounds that
 * are cross-leaf and meet every leaf pair, and the suspect that slow pairs implicate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/fileload.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX FB_FIXTURES "/topology/"

static fb_topology_t *s_load(const char *name)
{
    char err[256] = "", *text = NULL, *why = NULL;
    fb_topology_t *t = NULL;
    if (fb_load_file(name, 1u << 20, &text, NULL, &why))
        fail_msg("%s", why);
    int rc = fb_topology_parse_any(text, &t, err, sizeof err);
    free(text);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(t);
    return t;
}

/* The 2-spine, 4-leaf, 16-node fabric, from either input. */
static void s_assert_fabric(const fb_topology_t *t)
{
    assert_int_equal(fb_topology_n_leaves(t), 4);
    assert_int_equal(fb_topology_n_spines(t), 2);
    assert_int_equal(fb_topology_n_nodes(t), 16);
    for (unsigned n = 1; n <= 16; n++) {
        char node[16], leaf[16];
        snprintf(node, sizeof node, "node%02u", n);
        snprintf(leaf, sizeof leaf, "leaf%02u", (n - 1) / 4 + 1);
        assert_string_equal(fb_topology_leaf_of(t, node), leaf);
    }
    assert_null(fb_topology_leaf_of(t, "node17"));
    assert_null(fb_topology_leaf_of(t, "leaf01"));
    for (size_t l = 0; l < 4; l++) {
        char leaf[16];
        snprintf(leaf, sizeof leaf, "leaf%02zu", l + 1);
        assert_string_equal(fb_topology_leaf_name(t, l), leaf);
        size_t n;
        const char *const *nodes = fb_topology_leaf_nodes(t, l, &n);
        assert_int_equal(n, 4);
        assert_string_equal(fb_topology_leaf_of(t, nodes[3]), leaf);
        const char *const *spines = fb_topology_leaf_spines(t, l, &n);
        assert_int_equal(n, 2);
        assert_string_equal(spines[0], "spine01");
        assert_string_equal(spines[1], "spine02");
    }
    assert_null(fb_topology_leaf_name(t, 4));
    assert_string_equal(fb_topology_spine_name(t, 1), "spine02");
}

static void test_text_format(void **state)
{
    (void)state;
    fb_topology_t *t = s_load(FIX "fabric-2s4l16n.topo");
    s_assert_fabric(t);
    fb_topology_destroy(&t);
    assert_null(t);
    fb_topology_destroy(&t);
    fb_topology_destroy(NULL);

    /* Order does not matter: spines may come first; commas and spaces both separate. */
    char err[256];
    assert_int_equal(fb_topology_parse("spine1: a, b\r\na: n1 n2\nb: n3\n", &t, err, sizeof err),
                     0);
    assert_int_equal(fb_topology_n_leaves(t), 2);
    assert_string_equal(fb_topology_leaf_of(t, "n3"), "b");
    fb_topology_destroy(&t);

    /* A single leaf without spines is a valid (one-switch) fabric. */
    assert_int_equal(fb_topology_parse("sw: node[1-8]", &t, err, sizeof err), 0);
    assert_int_equal(fb_topology_n_spines(t), 0);
    fb_topology_destroy(&t);
}

static void s_assert_error(const char *text, const char *expect)
{
    char err[256] = "";
    fb_topology_t *t = (fb_topology_t *)&err; /* must be reset to NULL */
    assert_int_equal(fb_topology_parse(text, &t, err, sizeof err), -EINVAL);
    assert_null(t);
    if (!strstr(err, expect))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, expect);
    assert_non_null(strstr(err, expect));
}

static void test_text_errors(void **state)
{
    (void)state;
    s_assert_error("leaf01: n[1-2]\nleaf02 n[3-4]\n",
                   "line 2: no ':' after 'leaf02'; expected 'switch: members'");
    s_assert_error("# c\nleaf01: n[1-2]\n\nleaf01: n3\n",
                   "line 4: switch leaf01 is already defined on line 2");
    s_assert_error("leaf01: n[1-2]\nleaf02: n[2-3]\n", "line 2: n2 is on leaf01 and leaf02");
    s_assert_error("leaf01: n[1-2\n", "line 1: leaf01:");
    s_assert_error("leaf01: n1\nleaf02: n2\nspine01: leaf01 leaf05\n",
                   "line 3: spine01 lists switch leaf01 and leaf05");
    s_assert_error("leaf01: n1\nspine01: leaf01\ncore: spine01\n",
                   "line 3: spine core lists spine spine01");
    s_assert_error("leaf01:   # nothing\n", "line 1: switch leaf01 lists no members");
    s_assert_error("le af: n1\n", "line 1: bad switch name");
    s_assert_error("# only comments\n\n", "no leaf switches");
    /* Errors quote at most a token, never the rest of a line (a file sent with a campaign may
     * hold anything the submitter could read). */
    s_assert_error("root:$6$saltsalt$hash:19000:0:99999:7:::\n",
                   "line 1: root: a member holds the character '$'; expected node names");
    s_assert_error("leaf01: n1 n2\x01\n", "line 1: leaf01: a member holds the character 0x01");
    char err[256];
    fb_topology_t *t = NULL;
    assert_int_equal(fb_topology_parse("secretword and more secrets\n", &t, err, sizeof err),
                     -EINVAL);
    assert_string_equal(err, "line 1: no ':' after 'secretword'; expected 'switch: members'");
    assert_int_equal(fb_topology_parse_ibnetdiscover("Switch 36 no-guid secret text\n", &t, err,
                                                     sizeof err),
                     -EINVAL);
    assert_string_equal(err, "line 1: Switch line without a quoted GUID");
    /* fb_topology_parse_any picks the format. */
    assert_int_equal(fb_topology_parse_any("leaf01: n[1-2]\n", &t, err, sizeof err), 0);
    assert_int_equal(fb_topology_n_nodes(t), 2);
    fb_topology_destroy(&t);
    assert_int_equal(fb_topology_parse_any("Switch 36 x\n", &t, err, sizeof err), -EINVAL);
    assert_string_equal(err, "line 1: Switch line without a quoted GUID");
}

/* A few bytes of hostlist name many nodes: the lines together list at most
 * FB_TOPOLOGY_MAX_MEMBERS, refused before they are made (libFuzzer found a 69-byte file of
 * 173056 nodes that took over 30 s to parse under ASan: tests/fuzz/corpus/topology). */
static void test_member_bound(void **state)
{
    (void)state;
    char err[256];
    fb_topology_t *t = NULL;
    /* at the bound: parses, and every node is there */
    assert_int_equal(
        fb_topology_parse("leaf01: n[1-65536]\nleaf02: m[1-65536]\n", &t, err, sizeof err), 0);
    assert_int_equal(fb_topology_n_nodes(t), 2 * 65536);
    /* A round over all of them: 65536 cross-leaf pairs; over one leaf: all idle. Plans grow by
     * doubling (growing by one element, a plan of 66416 idle nodes took fuzz_topology past its
     * 30 s limit under ASan: tests/fuzz/corpus/topology/crash-timeout-66k-idle). */
    const char **all = malloc(2 * 65536 * sizeof *all);
    assert_non_null(all);
    for (size_t l = 0; l < 2; l++) {
        size_t k = 0;
        const char *const *on_leaf = fb_topology_leaf_nodes(t, l, &k);
        assert_int_equal(k, 65536);
        memcpy(all + l * 65536, on_leaf, k * sizeof *all);
    }
    fb_plan_t plan;
    assert_int_equal(fb_plan_pairs_topology(t, all, 2 * 65536, 0, &plan), 0);
    assert_int_equal(plan.n_groups, 65536);
    assert_int_equal(plan.n_idle, 0);
    fb_plan_clear(&plan);
    assert_int_equal(fb_plan_pairs_topology(t, all, 65536, 0, &plan), 0);
    assert_int_equal(plan.n_groups, 0);
    assert_int_equal(plan.n_idle, 65536);
    fb_plan_clear(&plan);
    free(all);
    fb_topology_destroy(&t);
    s_assert_error("leaf01: n[1-65536]\nleaf02: m[1-65537]\n",
                   "line 2: leaf02: the lines up to here list more than 131072 members");
    s_assert_error("leaf00: n[1-1000]m[1-1000]\n",
                   "line 1: leaf00: the lines up to here list more than 131072 members");
    /* many lines, each small: the total counts */
    size_t len = 0, cap = 3 * 1024 * 40;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int i = 0; i < 3 * 1024; i++)
        len += (size_t)snprintf(text + len, cap - len, "l%d: n%d-[1-50]\n", i, i);
    assert_int_equal(fb_topology_parse(text, &t, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "more than 131072 members"));
    free(text);
}

static void test_ibnetdiscover(void **state)
{
    (void)state;
    fb_topology_t *t = s_load(FIX "fabric-2s4l16n.ibnetdiscover");
    s_assert_fabric(t);
    fb_topology_destroy(&t);

    char err[256] = "";
    const char *bad_port =
        "Switch\t36 \"S-0002c9020040f0d0\"\t\t# \"MF0;leaf01:SX6036/U1\" enhanced port 0 lid 3 lmc "
        "0\n"
        "[1]\t\"H-0002c903000a1b2c\"[1](2c903000a1b2d) \t\t# \"node01 mlx5_0\" lid 5 4xHDR\n"
        "[2]\tH-0002c903000a1b3c[1]\n";
    assert_int_equal(fb_topology_parse_ibnetdiscover(bad_port, &t, err, sizeof err), -EINVAL);
    assert_null(t);
    assert_non_null(strstr(err, "line 3: port line without a quoted peer GUID"));
    assert_int_equal(fb_topology_parse_ibnetdiscover("[1]\t\"S-1\"[1]\n", &t, err, sizeof err),
                     -EINVAL);
    assert_non_null(strstr(err, "line 1: port line outside"));
    assert_int_equal(fb_topology_parse_ibnetdiscover("Switch 36 S-1\n", &t, err, sizeof err),
                     -EINVAL);
    assert_non_null(strstr(err, "line 1: Switch line without a quoted GUID"));
    assert_int_equal(fb_topology_parse_ibnetdiscover("# empty\n", &t, err, sizeof err), -EINVAL);

    /* One switch with two nodes, names from the CA blocks when the port line has no comment;
     * an unnamed switch is called by its GUID. */
    const char *tiny = "Switch\t8 \"S-00000000000000aa\"\t\t# \"\" enhanced port 0 lid 3 lmc 0\n"
                       "[1]\t\"H-0000000000000001\"[1](2)\n"
                       "[2]\t\"H-0000000000000003\"[1](4)\t\t# \"gpu-b mlx5_1\" lid 6 4xNDR\n"
                       "\n"
                       "Ca\t1 \"H-0000000000000001\"\t\t# \"gpu-a mlx5_0\"\n"
                       "[1](2) \t\"S-00000000000000aa\"[1]\t\t# lid 5 lmc 0 \"\" lid 3 4xNDR\n";
    assert_int_equal(fb_topology_parse_ibnetdiscover(tiny, &t, err, sizeof err), 0);
    assert_int_equal(fb_topology_n_leaves(t), 1);
    assert_int_equal(fb_topology_n_spines(t), 0);
    assert_string_equal(fb_topology_leaf_of(t, "gpu-a"), "S-00000000000000aa");
    assert_string_equal(fb_topology_leaf_of(t, "gpu-b"), "S-00000000000000aa");
    fb_topology_destroy(&t);
}

static void test_paths(void **state)
{
    (void)state;
    fb_topology_t *t = s_load(FIX "fabric-2s4l16n.topo");
    fb_link_t links[4];
    assert_int_equal(fb_topology_path(t, "node01", "node02", links, 4), 2);
    assert_int_equal(links[0].kind, FB_LINK_NODE_LEAF);
    assert_string_equal(links[0].a, "node01");
    assert_string_equal(links[0].b, "leaf01");
    assert_string_equal(links[1].a, "node02");
    assert_int_equal(fb_topology_path(t, "node01", "node06", links, 4), 4);
    assert_int_equal(links[1].kind, FB_LINK_LEAF_SPINE);
    assert_string_equal(links[1].a, "leaf01");
    assert_string_equal(links[1].b, "*"); /* two spines: routing picks one */
    assert_string_equal(links[2].a, "leaf02");
    assert_string_equal(links[3].a, "node06");
    assert_string_equal(links[3].b, "leaf02");
    assert_int_equal(fb_topology_path(t, "node01", "node06", links, 1), 4); /* truncated */
    assert_int_equal(fb_topology_path(t, "node01", "nodeXX", links, 4), -ENOENT);
    assert_int_equal(fb_topology_path(t, "node01", "node01", links, 4), -EINVAL);
    fb_topology_destroy(&t);

    char err[128];
    assert_int_equal(
        fb_topology_parse("l1: a\nl2: b\nl3: c\ns1: l1 l2\ns2: l3\n", &t, err, sizeof err), 0);
    assert_int_equal(fb_topology_path(t, "a", "b", links, 4), 4);
    assert_string_equal(links[1].b, "s1"); /* one common spine: named */
    assert_int_equal(fb_topology_path(t, "a", "c", links, 4), -EHOSTUNREACH);
    fb_topology_destroy(&t);
}

/* Rounds of topology pairs on the 16-node fabric: cross-leaf, every node paired, every leaf pair
 * met within fb_topology_pair_rounds() rounds, partners change from cycle to cycle. */
static void test_topology_pairs(void **state)
{
    (void)state;
    fb_topology_t *t = s_load(FIX "fabric-2s4l16n.ibnetdiscover");
    char names[16][8];
    const char *nodes[16];
    for (int i = 0; i < 16; i++) {
        snprintf(names[i], sizeof names[i], "node%02d", i + 1);
        nodes[i] = names[i];
    }
    unsigned rounds = fb_topology_pair_rounds(t, nodes, 16);
    assert_int_equal(rounds, 3);
    int met[4][4] = {{0}};
    int node_met[16][16] = {{0}};
    for (unsigned r = 0; r < 2 * rounds; r++) {
        fb_plan_t plan;
        assert_int_equal(fb_plan_pairs_topology(t, nodes, 16, r, &plan), 0);
        assert_int_equal(plan.n_groups, 8);
        assert_int_equal(plan.n_idle, 0);
        for (size_t g = 0; g < plan.n_groups; g++) {
            const char *a = plan.groups[g].members[0], *b = plan.groups[g].members[1];
            const char *la = fb_topology_leaf_of(t, a), *lb = fb_topology_leaf_of(t, b);
            assert_string_not_equal(la, lb);
            met[la[5] - '1'][lb[5] - '1']++;
            met[lb[5] - '1'][la[5] - '1']++;
            node_met[atoi(a + 4) - 1][atoi(b + 4) - 1]++;
        }
        fb_plan_clear(&plan);
        if (r == rounds - 1)
            for (int x = 0; x < 4; x++)
                for (int y = 0; y < 4; y++)
                    assert_true(x == y ? met[x][y] == 0 : met[x][y] > 0);
    }
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < 16; b++)
            assert_true(node_met[a][b] <= 1); /* second cycle: new partners */

    /* A subset with unequal leaves and an odd leaf count: still cross-leaf only; the only
     * idle nodes are those that no other leaf could take. */
    const char *sub[] = {"node01", "node02", "node03", "node04", "node05", "node09"};
    assert_int_equal(fb_topology_pair_rounds(t, sub, 6), 3);
    for (unsigned r = 0; r < 3; r++) {
        fb_plan_t plan;
        assert_int_equal(fb_plan_pairs_topology(t, sub, 6, r, &plan), 0);
        assert_int_equal(plan.n_groups, 2); /* leaf01 has 4 of the 6 */
        assert_int_equal(plan.n_idle, 2);
        for (size_t g = 0; g < plan.n_groups; g++)
            assert_string_not_equal(fb_topology_leaf_of(t, plan.groups[g].members[0]),
                                    fb_topology_leaf_of(t, plan.groups[g].members[1]));
        fb_plan_clear(&plan);
    }
    const char *unknown[] = {"node01", "gpu99"};
    fb_plan_t plan;
    assert_int_equal(fb_plan_pairs_topology(t, unknown, 2, 0, &plan), -ENOENT);
    assert_int_equal(plan.n_groups + plan.n_idle, 0);
    const char *one_leaf[] = {"node01", "node02"};
    assert_int_equal(fb_plan_pairs_topology(t, one_leaf, 2, 0, &plan), 0);
    assert_int_equal(plan.n_idle, 2);
    fb_plan_clear(&plan);
    fb_topology_destroy(&t);
}

/* Random fabrics (2-8 leaves of 1-6 nodes, random subsets): every round is a cross-leaf
 * matching as large as the leaf sizes allow, deterministic, and with equal leaves every two
 * leaves meet within fb_topology_pair_rounds() rounds. */
static void test_topology_pairs_random_fabrics(void **state)
{
    (void)state;
    srand(11);
    for (int iter = 0; iter < 300; iter++) {
        size_t n_leaves = 2 + (size_t)(rand() % 7);
        bool equal = rand() % 3 == 0;
        size_t same = 1 + (size_t)(rand() % 6);
        char text[2048] = "";
        char names[64][16];
        const char *nodes[64];
        size_t leaf_of[64], size[8] = {0}, n = 0, node_no = 0;
        for (size_t l = 0; l < n_leaves; l++) {
            size_t k = equal ? same : 1 + (size_t)(rand() % 6);
            char line[128];
            snprintf(line, sizeof line, "leaf%zu: n[%zu-%zu]\n", l, node_no, node_no + k - 1);
            strcat(text, line);
            for (size_t i = 0; i < k; i++, node_no++) {
                if (!equal && rand() % 4 == 0)
                    continue; /* not selected */
                snprintf(names[n], sizeof names[n], "n%zu", node_no);
                nodes[n] = names[n];
                leaf_of[n++] = l;
                size[l]++;
            }
        }
        strcat(text, "spine: leaf[0-7]\n");
        /* leaf[0-7] names leaves that may not exist: only keep those that do. */
        char *sp = strstr(text, "spine: ");
        snprintf(sp, 64, "spine: leaf[0-%zu]\n", n_leaves - 1);
        fb_topology_t *t = NULL;
        char err[256];
        if (fb_topology_parse(text, &t, err, sizeof err) != 0)
            fprintf(stderr, "%s\n%s\n", err, text);
        assert_non_null(t);
        size_t total = 0, max = 0, active = 0;
        for (size_t l = 0; l < n_leaves; l++) {
            total += size[l];
            max = size[l] > max ? size[l] : max;
            active += size[l] > 0;
        }
        size_t best = total / 2 < total - max ? total / 2 : total - max;
        unsigned rounds = fb_topology_pair_rounds(t, nodes, n);
        assert_int_equal(rounds, active < 2 ? 0 : active % 2 ? active : active - 1);
        int met[8][8] = {{0}};
        for (unsigned r = 0; r < (rounds ? rounds : 1); r++) {
            fb_plan_t plan, again;
            assert_int_equal(fb_plan_pairs_topology(t, nodes, n, r, &plan), 0);
            assert_int_equal(fb_plan_pairs_topology(t, nodes, n, r, &again), 0);
            assert_int_equal(plan.n_groups, best);
            assert_int_equal(plan.n_groups * 2 + plan.n_idle, n);
            for (size_t g = 0; g < plan.n_groups; g++) {
                assert_string_equal(plan.groups[g].members[0], again.groups[g].members[0]);
                assert_string_equal(plan.groups[g].members[1], again.groups[g].members[1]);
                size_t a = 0, b = 0;
                while (strcmp(nodes[a], plan.groups[g].members[0]) != 0)
                    a++;
                while (strcmp(nodes[b], plan.groups[g].members[1]) != 0)
                    b++;
                assert_true(leaf_of[a] != leaf_of[b]);
                met[leaf_of[a]][leaf_of[b]] = met[leaf_of[b]][leaf_of[a]] = 1;
            }
            fb_plan_clear(&plan);
            fb_plan_clear(&again);
        }
        if (equal)
            for (size_t x = 0; x < n_leaves; x++)
                for (size_t y = x + 1; y < n_leaves; y++)
                    assert_true(met[x][y]);
        fb_topology_destroy(&t);
    }
}

/* Truncated and corrupted inputs give a topology or -EINVAL with a message, never a crash
 * (run under ASan/UBSan in CI). */
static void test_parsers_survive_mutations(void **state)
{
    (void)state;
    const char *files[] = {FIX "fabric-2s4l16n.ibnetdiscover", FIX "fabric-2s4l16n.topo"};
    const char junk[] = "[]\"#:;, \n\t\rSCa-0Hx";
    srand(5);
    for (size_t f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        assert_non_null(fp);
        static char orig[32768];
        size_t len = fread(orig, 1, sizeof orig - 1, fp);
        fclose(fp);
        orig[len] = '\0';
        for (int iter = 0; iter < 400; iter++) {
            char *text = malloc(len + 1);
            memcpy(text, orig, len + 1);
            int flips = 1 + rand() % 8;
            for (int i = 0; i < flips; i++)
                text[(size_t)rand() % len] = junk[(size_t)rand() % (sizeof junk - 1)];
            if (rand() % 3 == 0)
                text[(size_t)rand() % len] = '\0';
            char err[256] = "";
            fb_topology_t *t = NULL;
            int rc = f == 0 ? fb_topology_parse_ibnetdiscover(text, &t, err, sizeof err)
                            : fb_topology_parse(text, &t, err, sizeof err);
            if (rc == 0) {
                assert_non_null(t);
                assert_true(fb_topology_n_leaves(t) > 0);
            } else {
                assert_int_equal(rc, -EINVAL);
                assert_null(t);
                assert_true(err[0] != '\0');
            }
            fb_topology_destroy(&t);
            free(text);
        }
    }
}

/* Three rounds of topology pairs; every pair that touches leaf02 is slow. */
static void test_implicate_leaf_uplink(void **state)
{
    (void)state;
    fb_topology_t *t = s_load(FIX "fabric-2s4l16n.topo");
    char names[16][8];
    const char *nodes[16];
    for (int i = 0; i < 16; i++) {
        snprintf(names[i], sizeof names[i], "node%02d", i + 1);
        nodes[i] = names[i];
    }
    fb_pair_result_t results[32];
    fb_plan_t plans[3];
    size_t n = 0;
    for (unsigned r = 0; r < 3; r++) {
        assert_int_equal(fb_plan_pairs_topology(t, nodes, 16, r, &plans[r]), 0);
        for (size_t g = 0; g < plans[r].n_groups; g++) {
            const char *a = plans[r].groups[g].members[0], *b = plans[r].groups[g].members[1];
            results[n++] = (fb_pair_result_t){a, b,
                                              strcmp(fb_topology_leaf_of(t, a), "leaf02") == 0 ||
                                                  strcmp(fb_topology_leaf_of(t, b), "leaf02") == 0};
        }
    }
    fb_suspect_t s[8];
    int k = fb_topology_implicate(t, results, n, s, 8);
    assert_true(k >= 1);
    assert_int_equal(s[0].kind, FB_SUSPECT_LEAF_UPLINK);
    assert_string_equal(s[0].name, "leaf02");
    assert_int_equal(s[0].slow, 12);
    assert_int_equal(s[0].passed, 0);
    assert_string_equal(fb_suspect_kind_name(s[0].kind), "leaf uplink");

    /* Pairs inside leaf02 pass: the uplinks, not the leaf switch, stay the suspect. Make them
     * slow as well and the leaf switch itself is the only part on every slow path. */
    results[n++] = (fb_pair_result_t){"node05", "node06", false};
    k = fb_topology_implicate(t, results, n, s, 8);
    assert_int_equal(k, 2);
    assert_int_equal(s[0].kind, FB_SUSPECT_LEAF_UPLINK);
    assert_int_equal(s[1].kind, FB_SUSPECT_LEAF);
    assert_int_equal(s[1].passed, 1);
    results[n - 1].slow = true;
    k = fb_topology_implicate(t, results, n, s, 8);
    assert_int_equal(k, 1);
    assert_int_equal(s[0].kind, FB_SUSPECT_LEAF);
    assert_string_equal(s[0].name, "leaf02");

    /* Only node07's pairs are slow: its link, ahead of leaf02's uplinks that other pairs passed. */
    n = 0;
    for (unsigned r = 0; r < 3; r++)
        for (size_t g = 0; g < plans[r].n_groups; g++) {
            const char *a = plans[r].groups[g].members[0], *b = plans[r].groups[g].members[1];
            results[n++] =
                (fb_pair_result_t){a, b, strcmp(a, "node07") == 0 || strcmp(b, "node07") == 0};
        }
    k = fb_topology_implicate(t, results, n, s, 8);
    assert_true(k >= 2);
    assert_int_equal(s[0].kind, FB_SUSPECT_NODE_LINK);
    assert_string_equal(s[0].name, "node07");
    assert_int_equal(s[0].passed, 0);
    assert_true(s[1].passed > 0);

    /* Nothing slow: no suspect. Unknown node: -ENOENT. */
    for (size_t i = 0; i < n; i++)
        results[i].slow = false;
    assert_int_equal(fb_topology_implicate(t, results, n, s, 8), 0);
    fb_pair_result_t bad = {"node01", "nodeXX", true};
    assert_int_equal(fb_topology_implicate(t, &bad, 1, s, 8), -ENOENT);
    for (int r = 0; r < 3; r++)
        fb_plan_clear(&plans[r]);
    fb_topology_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_format),
        cmocka_unit_test(test_text_errors),
        cmocka_unit_test(test_member_bound),
        cmocka_unit_test(test_ibnetdiscover),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_topology_pairs),
        cmocka_unit_test(test_topology_pairs_random_fabrics),
        cmocka_unit_test(test_parsers_survive_mutations),
        cmocka_unit_test(test_implicate_leaf_uplink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
