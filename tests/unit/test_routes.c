/* SPDX-License-Identifier: Apache-2.0 */
/* The subnet manager's routes (scheduler/routes.h) read from the fixtures of the 2-spine, 4-leaf,
 * 16-node fabric (tests/fixtures/routes, made by make-fixtures.py): ibnetdiscover output with the
 * forwarding tables as ibroute prints them and as ibdiagnet2.fdbs holds them give the same spine
 * for every flow (node01, node02, node05, ... over spine01; node03, node04, node07, ... over
 * spine02, from every other leaf); a flow inside a leaf crosses no spine; a rail names the
 * adapter; malformed files give a message naming the line and what was expected. A campaign's
 * `routes: FILE` (with topology): attached like the topology, checked against it, and its errors
 * name the campaign's line, the key and the file's line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/fileload.h"
#include "common/util.h"
#include "scheduler/campaign.h"
#include "scheduler/routes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX FB_FIXTURES "/routes/"

static char *s_text(const char *name)
{
    char *text = NULL, *why = NULL;
    if (fb_load_file(name, 1u << 20, &text, NULL, &why))
        fail_msg("%s", why);
    return text;
}

static fb_routes_t *s_load(const char *name)
{
    char err[256] = "";
    char *text = s_text(name);
    fb_routes_t *r = NULL;
    int rc = fb_routes_parse(text, &r, err, sizeof err);
    free(text);
    if (rc)
        fprintf(stderr, "%s: %s\n", name, err);
    assert_int_equal(rc, 0);
    assert_non_null(r);
    return r;
}

/* The message a malformed file gives; asserts -EINVAL and no routes. */
static void s_fails(const char *name, const char *expect)
{
    char err[256] = "";
    char *text = s_text(name);
    fb_routes_t *r = (fb_routes_t *)1;
    assert_int_equal(fb_routes_parse(text, &r, err, sizeof err), -EINVAL);
    assert_null(r);
    free(text);
    printf("[routes] %s: %s\n", strrchr(name, '/') + 1, err);
    if (!strstr(err, expect))
        fail_msg("'%s' does not hold '%s'", err, expect);
}

static void s_assert_fabric(const fb_routes_t *r)
{
    assert_int_equal(fb_routes_n_leaves(r), 4);
    assert_int_equal(fb_routes_n_spines(r), 2);
    assert_string_equal(fb_routes_leaf_name(r, 0), "leaf01");
    assert_string_equal(fb_routes_spine_name(r, 1), "spine02");
    assert_null(fb_routes_spine_name(r, 2));
    assert_int_equal(fb_routes_n_adapters(r), 16);
    for (unsigned a = 1; a <= 16; a++)
        for (unsigned b = 1; b <= 16; b++) {
            char src[16], dst[16];
            snprintf(src, sizeof src, "node%02u", a);
            snprintf(dst, sizeof dst, "node%02u", b);
            const char *spine = fb_routes_spine(r, src, dst, NULL);
            if ((a - 1) / 4 == (b - 1) / 4) {
                assert_null(spine); /* inside the leaf */
                continue;
            }
            assert_non_null(spine);
            assert_string_equal(spine, (b - 1) % 4 < 2 ? "spine01" : "spine02");
        }
}

static void test_ibroute(void **state)
{
    (void)state;
    fb_routes_t *r = s_load(FIX "fabric-2s4l16n.routes");
    s_assert_fabric(r);
    assert_int_equal(fb_routes_n_entries(r), 6 * 22); /* 6 switches, 22 LIDs each */
    /* a rail names the adapter; a rail the node has no adapter of takes its first */
    assert_string_equal(fb_routes_spine(r, "node01", "node16", "mlx5_0"), "spine02");
    assert_string_equal(fb_routes_spine(r, "node01", "node16", "mlx5_7"), "spine02");
    assert_null(fb_routes_spine(r, "node01", "node99", NULL));
    assert_null(fb_routes_spine(r, "nodeXX", "node16", NULL));
    assert_null(fb_routes_spine(NULL, "node01", "node16", NULL));
    fb_routes_destroy(&r);
    assert_null(r);
    fb_routes_destroy(&r); /* NULL-safe */
}

static void test_fdbs(void **state)
{
    (void)state;
    fb_routes_t *r = s_load(FIX "fabric-2s4l16n-fdbs.routes");
    s_assert_fabric(r);
    assert_int_equal(fb_routes_n_entries(r), 6 * 22); /* UNREACHABLE LIDs are no entries */
    fb_routes_destroy(&r);
}

/* Two adapters per node on one leaf, each with its own LID, routed over different spines: the
 * rail decides which spine a flow crosses. The tables come before ibnetdiscover here (any order).
 */
static void test_rails(void **state)
{
    (void)state;
    const char *text =
        "osm_ucast_mgr_dump_ucast_routes: Switch 0x0000000000000a01\n"
        "LID    : Port : Hops : Optimal\n"
        "0x0001 : 001  : 00   : yes\n0x0002 : 002  : 00   : yes\n"
        "0x0003 : 010  : 01   : yes\n0x0004 : 011  : 01   : yes\n\n"
        "Switch\t36 \"S-0000000000000a01\"\t# \"MF0;la:QM9700/U1\" enhanced port 0 lid 20 lmc 0\n"
        "[1]\t\"H-0000000000000101\"[1](0000000000000101)\t# \"n1 mlx5_0\" lid 1 4xNDR\n"
        "[2]\t\"H-0000000000000102\"[1](0000000000000102)\t# \"n1 mlx5_1\" lid 2 4xNDR\n"
        "[10]\t\"S-0000000000000c01\"[1]\t# \"MF0;sa:QM9700/U1\" lid 30 4xNDR\n"
        "[11]\t\"S-0000000000000c02\"[1]\t# \"MF0;sb:QM9700/U1\" lid 31 4xNDR\n\n"
        "Switch\t36 \"S-0000000000000a02\"\t# \"MF0;lb:QM9700/U1\" enhanced port 0 lid 21 lmc 0\n"
        "[1]\t\"H-0000000000000201\"[1](0000000000000201)\t# \"n2 mlx5_0\" lid 3 4xNDR\n"
        "[2]\t\"H-0000000000000202\"[1](0000000000000202)\t# \"n2 mlx5_1\" lid 4 4xNDR\n"
        "[10]\t\"S-0000000000000c01\"[2]\t# \"MF0;sa:QM9700/U1\" lid 30 4xNDR\n"
        "[11]\t\"S-0000000000000c02\"[2]\t# \"MF0;sb:QM9700/U1\" lid 31 4xNDR\n\n"
        "Switch\t36 \"S-0000000000000c01\"\t# \"MF0;sa:QM9700/U1\" enhanced port 0 lid 30 lmc 0\n"
        "[1]\t\"S-0000000000000a01\"[10]\t# \"MF0;la:QM9700/U1\" lid 20 4xNDR\n"
        "[2]\t\"S-0000000000000a02\"[10]\t# \"MF0;lb:QM9700/U1\" lid 21 4xNDR\n\n"
        "Switch\t36 \"S-0000000000000c02\"\t# \"MF0;sb:QM9700/U1\" enhanced port 0 lid 31 lmc 0\n"
        "[1]\t\"S-0000000000000a01\"[11]\t# \"MF0;la:QM9700/U1\" lid 20 4xNDR\n"
        "[2]\t\"S-0000000000000a02\"[11]\t# \"MF0;lb:QM9700/U1\" lid 21 4xNDR\n";
    char err[256] = "";
    fb_routes_t *r = NULL;
    int rc = fb_routes_parse(text, &r, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    assert_string_equal(fb_routes_spine(r, "n1", "n2", "mlx5_0"), "sa");
    assert_string_equal(fb_routes_spine(r, "n1", "n2", "mlx5_1"), "sb");
    assert_string_equal(fb_routes_spine(r, "n1", "n2", NULL), "sa"); /* the first adapter */
    assert_null(fb_routes_spine(r, "n2", "n1", "mlx5_0"));           /* lb has no table */
    fb_routes_destroy(&r);
}

static void test_malformed(void **state)
{
    (void)state;
    s_fails(FIX "bad-lid.routes", "line 211: expected a unicast LID (1 to 0xBFFF) at the start of "
                                  "a forwarding entry, got '0xzz65'");
    s_fails(FIX "bad-port.routes", "line 215: expected 'LID PORT' (0x0004 001, or 0x0004 : 001 : "
                                   "00 : yes) with a port from 0 to 254, got '300'");
    s_fails(FIX "no-ibnetdiscover.routes", "no ibnetdiscover output");
    s_fails(FIX "no-tables.routes", "no forwarding table of a leaf switch");
    s_fails(FIX "unknown-switch.routes",
            "line 202: forwarding table of switch 0x0002c90200499999, which the ibnetdiscover");
    s_fails(FIX "entry-outside-table.routes",
            "line 202: forwarding entry outside a switch's table");
    /* shorter mistakes, written here */
    char err[256];
    fb_routes_t *r = NULL;
    const char *twice = "Switch 4 \"S-01\" # \"l\" lid 1\n[1] \"H-02\"[1] # \"n m\" lid 2\n\n"
                        "Unicast lids [0x0-0x2] of switch Lid 1 guid 0x01 (l):\n0x0002 001 : x\n"
                        "Unicast lids [0x0-0x2] of switch Lid 1 guid 0x01 (l):\n";
    assert_int_equal(fb_routes_parse(twice, &r, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "line 6: a second forwarding table of switch 0x0000000000000001 "
                                "(the first at line 4)"));
    const char *dup = "Switch 4 \"S-01\" # \"l\" lid 1\n[1] \"H-02\"[1] # \"n m\" lid 2\n\n"
                      "Unicast lids [0x0-0x2] of switch Lid 1 guid 0x01 (l):\n0x0002 001 : x\n"
                      "2 001 : x\n";
    assert_int_equal(fb_routes_parse(dup, &r, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "line 6: LID 0x0002 is routed twice"));
    const char *nolid = "Switch 4 \"S-01\" # \"l\" lid 1\n[1] \"H-02\"[1] # \"n m\"\n";
    assert_int_equal(fb_routes_parse(nolid, &r, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "line 2: adapter port without its description and LID"));
    const char *badport = "Switch 4 \"S-01\" # \"l\" lid 1\n[999] \"H-02\"[1] # \"n m\" lid 2\n";
    assert_int_equal(fb_routes_parse(badport, &r, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "line 2: expected a port line"));
    const char *multicast = "Switch 4 \"S-01\" # \"l\" lid 1\n[1] \"H-02\"[1] # \"n m\" lid 2\n\n"
                            "Unicast lids [0x0-0x2] of switch Lid 1 guid 0x01 (l):\n"
                            "0xC000 001 : x\n";
    assert_int_equal(fb_routes_parse(multicast, &r, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "line 5: expected a unicast LID"));
    /* an empty table (every LID unreachable) is a table with no routes, not an error (the fuzzer
     * found qsort handed NULL for it) */
    const char *empty = "Switch 4 \"S-01\" # \"l\" lid 1\n[1] \"H-02\"[1] # \"n m\" lid 2\n\n"
                        "osm_ucast_mgr_dump_ucast_routes: Switch 0x01\n0x0002 : UNREACHABLE\n";
    assert_int_equal(fb_routes_parse(empty, &r, err, sizeof err), 0);
    assert_int_equal(fb_routes_n_entries(r), 0);
    assert_null(fb_routes_spine(r, "n", "n", NULL));
    fb_routes_destroy(&r);
    assert_int_equal(fb_routes_parse("", &r, err, sizeof err), -EINVAL);
    assert_int_equal(fb_routes_parse(NULL, &r, err, sizeof err), -EINVAL);
    assert_null(r);
}

/* A campaign stage with topology and routes; files attached as the coordinator gets them. */
static int s_campaign(const char *topo, const char *routes, const char *routes_text,
                      fb_campaign_t **out, char **err)
{
    char *yaml =
        xasprintf("name: r\nstages:\n  - name: net\n    workload: rdmabw\n"
                  "    scope: pairs\n%s%s%s%s%s    on_fail: bisect\n",
                  topo ? "    pairing: topology\n    topology: " : "", topo ? topo : "",
                  topo ? "\n" : "", routes ? "    routes: " : "", routes ? "fabric.routes\n" : "");
    int rc = fb_campaign_parse(yaml, strlen(yaml), "c.yaml", out, err);
    free(yaml);
    if (rc)
        return rc;
    char *topo_text = topo ? s_text(FB_FIXTURES "/topology/fabric-2s4l16n.topo") : NULL;
    fb_campaign_file_t files[2] = {
        {"fabric.topo", topo_text, topo_text ? strlen(topo_text) : 0},
        {"fabric.routes", routes_text, routes_text ? strlen(routes_text) : 0}};
    rc = fb_campaign_attach_files(*out, files, routes_text ? 2 : 1, err);
    free(topo_text);
    if (rc)
        fb_campaign_destroy(out);
    return rc;
}

static void test_campaign_key(void **state)
{
    (void)state;
    fb_campaign_t *c = NULL;
    char *err = NULL;
    char *good = s_text(FIX "fabric-2s4l16n-fdbs.routes");
    assert_int_equal(s_campaign("fabric.topo", "fabric.routes", good, &c, &err), 0);
    const char *names[3] = {NULL, NULL, NULL};
    assert_int_equal(fb_campaign_file_names(c, names, 3), 2);
    assert_string_equal(names[1], "fabric.routes");
    assert_non_null(c->stages[0].routes);
    assert_string_equal(fb_routes_spine(c->stages[0].routes, "node05", "node12", "mlx5_0"),
                        "spine02");
    fb_campaign_destroy(&c);

    /* routes without a topology: the leaves are the topology's */
    assert_int_equal(s_campaign(NULL, "fabric.routes", good, &c, &err), -EINVAL);
    printf("[routes] %s\n", err);
    assert_non_null(strstr(err, "c.yaml:6: stages[0].routes: applies only to a stage with "
                                "topology"));
    free(err);
    /* named, not attached */
    assert_int_equal(s_campaign("fabric.topo", "fabric.routes", NULL, &c, &err), -EINVAL);
    assert_non_null(strstr(err, "c.yaml:8: stages[0].routes: 'fabric.routes' was not attached"));
    free(err);
    /* malformed: the campaign's line, the key, the file's line */
    char *bad = s_text(FIX "bad-port.routes");
    assert_int_equal(s_campaign("fabric.topo", "fabric.routes", bad, &c, &err), -EINVAL);
    printf("[routes] %s\n", err);
    assert_non_null(strstr(err, "c.yaml:8: stages[0].routes: cannot load 'fabric.routes': line "
                                "215: expected 'LID PORT'"));
    free(err);
    free(bad);
    /* the routes of another fabric */
    char *other = xstrdup(good);
    for (char *p = other; (p = strstr(p, "spine02")) != NULL;)
        memcpy(p, "spine09", 7);
    assert_int_equal(s_campaign("fabric.topo", "fabric.routes", other, &c, &err), -EINVAL);
    printf("[routes] %s\n", err);
    assert_non_null(strstr(err, "'fabric.routes' routes over spine spine09, which is no spine of "
                                "the topology"));
    free(err);
    free(other);
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ibroute),      cmocka_unit_test(test_fdbs),
        cmocka_unit_test(test_rails),        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_campaign_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
