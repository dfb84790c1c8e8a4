/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the timeline's expected-hardware and fingerprint part (coordinator/store_fingerprint.c):
 * a node's facts read back from the inventory the agent stores (made by the real inventory code
 * from a fixture tree and the GPU probe's output), the earlier inventory that names missing GPUs,
 * fingerprints recorded once per node and campaign, each node's previous campaign, the changes
 * grouped across nodes (since each node's previous campaign, or since a given campaign), unknown
 * names, and a database of the previous schema version migrated. */
#include "gpuprobe.h"
#include "inventory.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct {
    char dir[64];
    char *path;
    store_t *store;
} fixture_t;

static int s_setup(void **state)
{
    fixture_t *fx = xcalloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/fb-test-fp-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    fx->path = xasprintf("%s/timeline.db", fx->dir);
    assert_int_equal(store_open(fx->path, &fx->store, NULL), 0);
    *state = fx;
    return 0;
}

static int s_teardown(void **state)
{
    fixture_t *fx = *state;
    store_destroy(&fx->store);
    const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < FB_ARRAY_LEN(suffixes); i++) {
        char *p = xasprintf("%s%s", fx->path, suffixes[i]);
        unlink(p);
        free(p);
    }
    rmdir(fx->dir);
    free(fx->path);
    free(fx);
    return 0;
}

static const char *s_probe = "gpu 0000:41:00.0 memory=85520809984 vbios=96.00.99.00.01 "
                             "name=NVIDIA H100 80GB HBM3\n"
                             "gpu 0000:c1:00.0 memory=85520809984 vbios=96.00.99.00.01 "
                             "name=NVIDIA H100 80GB HBM3\n"
                             "versions: cuda_driver=13.0 nccl=2.27.3\n";

/* Registers node with the inventory of the expect-node fixture, as the agent builds it, with
 * the driver changed to driver (NULL: as in the fixture) and without GPU drop (its PCI address,
 * NULL: none). */
static void s_register(store_t *store, const char *node, const char *driver, const char *drop,
                       uint64_t now_ms)
{
    Fleetburn__Inventory *inv = inventory_read(FB_FIXTURES "/sysfs/expect-node");
    gpuprobe_merge(inv, s_probe, strlen(s_probe));
    for (size_t i = 0; driver && i < inv->n_software; i++)
        if (!strcmp(inv->software[i]->key, "nvidia_driver")) {
            free(inv->software[i]->value);
            inv->software[i]->value = xstrdup(driver);
        }
    for (size_t i = 0; drop && i < inv->n_gpus; i++)
        if (!strcmp(inv->gpus[i]->pci_address, drop)) {
            fleetburn__gpu__free_unpacked(inv->gpus[i], NULL);
            memmove(&inv->gpus[i], &inv->gpus[i + 1], (inv->n_gpus - i - 1) * sizeof *inv->gpus);
            inv->n_gpus--;
        }
    char *json = fb_inventory_to_json(inv);
    assert_int_equal(store_agent_upsert(store, node, "alive", "summary", json, now_ms), 0);
    free(json);
    inventory_free(&inv);
}

static void test_facts(void **state)
{
    fixture_t *fx = *state;
    s_register(fx->store, "n1", NULL, NULL, 1000);
    fb_node_facts_t now, earlier;
    uint64_t when = 0;
    assert_int_equal(store_agent_facts(fx->store, "n1", &now, &earlier, &when), 0);
    assert_int_equal(when, 1000);
    assert_int_equal(now.mem_total_bytes, 2113233548ull * 1024);
    assert_int_equal(now.n_gpus, 2);
    assert_string_equal(now.gpus[0].pci, "0000:41:00.0");
    assert_string_equal(now.gpus[0].model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(now.gpus[0].memory_bytes, 85520809984ull);
    assert_int_equal(now.gpus[0].gen, 5);
    assert_int_equal(now.gpus[0].width, 16);
    assert_int_equal(now.n_ports, 1);
    assert_string_equal(now.ports[0].name, "mlx5_0");
    assert_int_equal(now.ports[0].port, 1);
    assert_string_equal(now.ports[0].state, "ACTIVE");
    assert_true(now.ports[0].rate_gbps == 400.0);
    assert_int_equal(earlier.n_gpus, 0); /* no earlier inventory */
    fb_node_facts_clear(&now);

    /* A GPU fell off the bus and the agent registered again: the earlier inventory lists it. */
    s_register(fx->store, "n1", NULL, "0000:c1:00.0", 2000);
    assert_int_equal(store_agent_facts(fx->store, "n1", &now, &earlier, &when), 0);
    assert_int_equal(when, 2000);
    assert_int_equal(now.n_gpus, 1);
    assert_int_equal(earlier.n_gpus, 2);
    assert_string_equal(earlier.gpus[1].pci, "0000:c1:00.0");
    fb_node_facts_clear(&now);
    fb_node_facts_clear(&earlier);

    assert_int_equal(store_agent_facts(fx->store, "nobody", &now, NULL, NULL), -ENOENT);
    /* an agent with no inventory (a row written before its Hello was complete) */
    assert_int_equal(store_agent_upsert(fx->store, "n2", "alive", NULL, NULL, 10), 0);
    assert_int_equal(store_agent_facts(fx->store, "n2", &now, NULL, NULL), -ENOENT);
}

static void test_fingerprints(void **state)
{
    fixture_t *fx = *state;
    store_t *s = fx->store;
    s_register(s, "n1", "570.86.15", NULL, 100);
    s_register(s, "n2", "570.86.15", NULL, 100);
    s_register(s, "n3", "570.86.15", NULL, 100);
    assert_int_equal(store_campaign_create(s, "c1", "first", NULL, NULL, 1000), 0);
    assert_int_equal(store_fingerprint_record(s, "c1", "n1", 1001), 0);
    assert_int_equal(store_fingerprint_record(s, "c1", "n2", 1001), 0);
    assert_int_equal(store_fingerprint_record(s, "c1", "n3", 1001), 0);

    /* n1 and n2 upgrade their driver; n3 changes nothing; n4 is new */
    s_register(s, "n1", "580.159.04", NULL, 1500);
    s_register(s, "n2", "580.159.04", NULL, 1500);
    s_register(s, "n4", "580.159.04", NULL, 1500);
    assert_int_equal(store_campaign_create(s, "c2", "second", NULL, NULL, 2000), 0);
    for (int i = 1; i <= 4; i++) {
        char node[8];
        snprintf(node, sizeof node, "n%d", i);
        assert_int_equal(store_fingerprint_record(s, "c2", node, 2001), 0);
    }
    /* recorded once: a later inventory does not change what c2 ran on */
    s_register(s, "n3", "999.0", NULL, 2500);
    assert_int_equal(store_fingerprint_record(s, "c2", "n3", 2501), 0);

    store_node_fingerprint_t *v;
    size_t n;
    assert_int_equal(store_campaign_fingerprints(s, "c2", &v, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(v[0].node, "n1");
    assert_string_equal(fb_fingerprint_get(&v[0].fingerprint, "nvidia_driver"), "580.159.04");
    assert_string_equal(fb_fingerprint_get(&v[0].fingerprint, "fleetburn"), FB_VERSION);
    assert_string_equal(fb_fingerprint_get(&v[0].fingerprint, "os"), "Ubuntu 24.04.1 LTS");
    assert_string_equal(fb_fingerprint_get(&v[0].fingerprint, "bios"), "R13");
    assert_string_equal(fb_fingerprint_get(&v[0].fingerprint, "hca_fw"), "28.39.1002");
    assert_string_equal(fb_fingerprint_get(&v[0].fingerprint, "gpu_vbios"), "96.00.99.00.01");
    assert_string_equal(fb_fingerprint_get(&v[0].fingerprint, "nccl"), "2.27.3");
    assert_string_equal(v[0].previous_campaign, "c1");
    assert_string_equal(fb_fingerprint_get(&v[0].previous, "nvidia_driver"), "570.86.15");
    assert_string_equal(fb_fingerprint_get(&v[2].fingerprint, "nvidia_driver"), "570.86.15");
    assert_string_equal(v[3].node, "n4");
    assert_null(v[3].previous_campaign);
    assert_int_equal(v[3].previous.n, 0);
    store_node_fingerprints_free(v, n);

    fb_fp_group_t *g;
    size_t n_compared;
    assert_int_equal(store_fingerprint_changes(s, NULL, "c2", &g, &n, &n_compared), 0);
    assert_int_equal(n_compared, 3);
    assert_int_equal(n, 1);
    char *line = fb_fp_group_line(&g[0]);
    assert_string_equal(line, "nvidia_driver 570.86.15 \xe2\x86\x92 580.159.04 on n[1-2]");
    free(line);
    fb_fp_groups_free(g, n);
    /* against a named campaign: the same here; the first campaign has nothing before it */
    assert_int_equal(store_fingerprint_changes(s, "c1", "c2", &g, &n, &n_compared), 0);
    assert_int_equal(n, 1);
    assert_int_equal(n_compared, 3);
    fb_fp_groups_free(g, n);
    assert_int_equal(store_fingerprint_changes(s, NULL, "c1", &g, &n, &n_compared), 0);
    assert_int_equal(n, 0);
    assert_int_equal(n_compared, 0);
    /* backwards: c2 as base of c1 reads the change the other way round */
    assert_int_equal(store_fingerprint_changes(s, "c2", "c1", &g, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(g[0].before, "580.159.04");
    fb_fp_groups_free(g, n);

    /* A third campaign of n3 only: its previous one is c2, the latest before it. */
    assert_int_equal(store_campaign_create(s, "c3", "third", NULL, NULL, 3000), 0);
    assert_int_equal(store_fingerprint_record(s, "c3", "n3", 3001), 0);
    assert_int_equal(store_fingerprint_changes(s, NULL, "c3", &g, &n, &n_compared), 0);
    assert_int_equal(n, 1);
    line = fb_fp_group_line(&g[0]);
    assert_string_equal(line, "nvidia_driver 570.86.15 \xe2\x86\x92 999.0 on n3");
    free(line);
    fb_fp_groups_free(g, n);

    /* From a fingerprint in memory (what the coordinator keeps from each Hello): once, too. */
    fb_fingerprint_t mine = {0};
    fb_fingerprint_set(&mine, "fleetburn", "9.9");
    fb_fingerprint_set(&mine, "kernel", "7.0");
    assert_int_equal(store_fingerprint_insert(s, "c3", "n9", &mine, 3002), 0);
    fb_fingerprint_set(&mine, "kernel", "7.1");
    assert_int_equal(store_fingerprint_insert(s, "c3", "n9", &mine, 3003), 0);
    fb_fingerprint_t empty = {0};
    assert_int_equal(store_fingerprint_insert(s, "c3", "n8", &empty, 3004), 0);
    assert_int_equal(store_fingerprint_insert(s, "nope", "n9", &mine, 3005), -ENOENT);
    fb_fingerprint_clear(&mine);
    assert_int_equal(store_campaign_fingerprints(s, "c3", &v, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].node, "n3");
    assert_string_equal(v[1].node, "n8");
    assert_int_equal(v[1].fingerprint.n, 1);
    assert_string_equal(fb_fingerprint_get(&v[1].fingerprint, "fleetburn"), "unknown");
    assert_string_equal(v[2].node, "n9");
    assert_string_equal(fb_fingerprint_get(&v[2].fingerprint, "kernel"), "7.0");
    assert_int_equal(v[2].fingerprint.n, 2);
    store_node_fingerprints_free(v, n);

    assert_int_equal(store_fingerprint_record(s, "nope", "n1", 1), -ENOENT);
    assert_int_equal(store_fingerprint_record(s, "c1", "nobody", 1), -ENOENT);
    assert_int_equal(store_campaign_fingerprints(s, "nope", &v, &n), -ENOENT);
    assert_int_equal(store_fingerprint_changes(s, NULL, "nope", &g, &n, NULL), -ENOENT);
    assert_int_equal(store_fingerprint_changes(s, "nope", "c1", &g, &n, NULL), -ENOENT);
}

/* A database of the schema before fingerprints: the migration adds the table, and what was in
 * the database stays. */
static void test_migration(void **state)
{
    fixture_t *fx = *state;
    s_register(fx->store, "n1", NULL, NULL, 100);
    assert_int_equal(store_campaign_create(fx->store, "c1", "first", NULL, NULL, 1000), 0);
    store_destroy(&fx->store);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    char sql[320];
    snprintf(sql, sizeof sql,
             "DROP TABLE fingerprints; DROP TABLE campaign_node_selections; DROP TABLE baselines;"
             "DROP INDEX campaigns_by_name;"
             "PRAGMA user_version = %d; UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
             3, 3); /* the version before fingerprints (4) */
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    assert_int_equal(store_open(fx->path, &fx->store, NULL), 0);
    assert_int_equal(store_fingerprint_record(fx->store, "c1", "n1", 1001), 0);
    store_node_fingerprint_t *v;
    size_t n;
    assert_int_equal(store_campaign_fingerprints(fx->store, "c1", &v, &n), 0);
    assert_int_equal(n, 1);
    store_node_fingerprints_free(v, n);
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), STORE_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_facts, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_fingerprints, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_migration, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
