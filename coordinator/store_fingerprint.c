/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline's part of expected hardware and environment fingerprints (store.h, "Expected
 * hardware and fingerprints"): a node's facts read out of its stored inventory JSON for the
 * expectation check (scheduler/expect.h), and the fingerprints table, one row per component per
 * node per campaign (scheduler/fingerprint.h), recorded from the node's inventory when the
 * campaign first gives it a task. SQLite's JSON functions unpack the inventory; statements are
 * prepared per call (they run once per node per campaign, or for a report). */
#include "store_internal.h"

#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- statements ------------------------------------------------------------------------------ */

static sqlite3_stmt *s_prepare(store_t *self, const char *sql, const char *what)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(self->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        store__sqlite_err(self, rc, what);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* 1 with a row, 0 at the end (the statement reset), or -errno. */
static int s_step(store_t *self, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    int err = rc == SQLITE_DONE ? 0 : store__sqlite_err(self, rc, what);
    sqlite3_reset(st);
    return err;
}

/* The text of the first column of the first row of sql with ?1 = a (and ?2 = b, when not NULL):
 * 0 with a heap copy in *out (NULL for SQL NULL or no row), or -errno. */
static int s_one_text(store_t *self, const char *sql, const char *a, const char *b,
                      const char *what, char **out)
{
    *out = NULL;
    sqlite3_stmt *st = s_prepare(self, sql, what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, a);
    if (b)
        store__bind_text(st, 2, b);
    int rc = s_step(self, st, what);
    if (rc > 0)
        *out = store__col_dup(st, 0);
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

/* ---- facts ----------------------------------------------------------------------------------- */

/* Fills f from an inventory JSON text (docs/inventory.md): memory, GPUs in inventory (PCI) order,
 * HCA ports. */
static int s_facts_of_json(store_t *self, const char *json, fb_node_facts_t *f)
{
    static const char *sql_mem = "SELECT json_extract(?1, '$.mem_total_bytes')";
    static const char *sql_gpus =
        "SELECT json_extract(g.value, '$.pci_address'), json_extract(g.value, '$.model'),"
        " json_extract(g.value, '$.memory_bytes'), json_extract(g.value, '$.max_link_speed'),"
        " json_extract(g.value, '$.link_width')"
        " FROM json_each(?1, '$.gpus') g ORDER BY g.key";
    static const char *sql_ports =
        "SELECT json_extract(n.value, '$.name'), json_extract(n.value, '$.port'),"
        " json_extract(n.value, '$.state'), json_extract(n.value, '$.speed_mbps')"
        " FROM json_each(?1, '$.nics') n"
        " WHERE json_extract(n.value, '$.kind') = 'infiniband' ORDER BY n.key";
    const char *what = "reading a node's inventory";
    sqlite3_stmt *st = s_prepare(self, sql_mem, what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, json);
    int rc = s_step(self, st, what);
    if (rc > 0) {
        sqlite3_int64 mem = sqlite3_column_int64(st, 0);
        f->mem_total_bytes = mem > 0 ? (uint64_t)mem : 0;
    }
    sqlite3_finalize(st);
    if (rc < 0 || !(st = s_prepare(self, sql_gpus, what)))
        return rc < 0 ? rc : -EIO;
    store__bind_text(st, 1, json);
    while ((rc = s_step(self, st, what)) > 0) {
        sqlite3_int64 mem = sqlite3_column_int64(st, 2), width = sqlite3_column_int64(st, 4);
        fb_node_facts_add_gpu(f, store__col_text(st, 0), store__col_text(st, 1),
                              mem > 0 ? (uint64_t)mem : 0,
                              fb_pcie_gen_of_speed(store__col_text(st, 3)),
                              width > 0 && width <= 64 ? (unsigned)width : 0);
    }
    sqlite3_finalize(st);
    if (rc < 0 || !(st = s_prepare(self, sql_ports, what)))
        return rc < 0 ? rc : -EIO;
    store__bind_text(st, 1, json);
    while ((rc = s_step(self, st, what)) > 0) {
        sqlite3_int64 port = sqlite3_column_int64(st, 1), mbps = sqlite3_column_int64(st, 3);
        fb_node_facts_add_port(f, store__col_text(st, 0),
                               port > 0 && port < 256 ? (unsigned)port : 0, store__col_text(st, 2),
                               mbps > 0 ? (double)mbps / 1000.0 : 0);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_agent_facts(store_t *self, const char *node, fb_node_facts_t *now,
                      fb_node_facts_t *earlier, uint64_t *time_ms)
{
    memset(now, 0, sizeof *now);
    if (earlier)
        memset(earlier, 0, sizeof *earlier);
    if (time_ms)
        *time_ms = 0;
    int err = store__begin_read(self);
    if (err)
        return err;
    char *json = NULL, *before = NULL, *when = NULL;
    err = s_one_text(self,
                     "SELECT inventory_json FROM agents WHERE name = ?1"
                     " AND json_valid(inventory_json) AND json_type(inventory_json) = 'object'",
                     node, NULL, "reading a node's inventory", &json);
    if (!err && !json)
        err = store__fail(self, -ENOENT, "no inventory of node %s in the store", node);
    if (!err)
        err = s_facts_of_json(self, json, now);
    if (!err && time_ms)
        err = s_one_text(self,
                         "SELECT MAX(time_ms) FROM inventory_snapshots WHERE agent = ?1"
                         " AND inventory_json = ?2",
                         node, json, "reading a node's inventory", &when);
    /* the latest earlier inventory that listed a GPU more: the GPUs missing now are named */
    char count[32];
    snprintf(count, sizeof count, "%zu", now->n_gpus);
    if (!err && earlier)
        err = s_one_text(self,
                         "SELECT inventory_json FROM inventory_snapshots WHERE agent = ?1"
                         " AND json_valid(inventory_json)"
                         " AND json_array_length(inventory_json, '$.gpus') > CAST(?2 AS INTEGER)"
                         " ORDER BY id DESC LIMIT 1",
                         node, count, "reading a node's earlier inventory", &before);
    if (!err && before)
        err = s_facts_of_json(self, before, earlier);
    if (when && time_ms)
        *time_ms = strtoull(when, NULL, 10);
    free(json);
    free(before);
    free(when);
    err = store__end(self, err);
    if (err) {
        fb_node_facts_clear(now);
        if (earlier)
            fb_node_facts_clear(earlier);
    }
    return err;
}

/* ---- fingerprints ---------------------------------------------------------------------------- */

/* The fingerprint of an inventory JSON text: fleetburn is the agent's version, the rest comes
 * from its software map (components fb_fingerprint_component does not know are left out). */
static int s_fingerprint_of_json(store_t *self, const char *json, fb_fingerprint_t *fp)
{
    const char *what = "reading a node's software versions";
    sqlite3_stmt *st = s_prepare(self,
                                 "SELECT 'fleetburn', json_extract(?1, '$.agent_version')"
                                 " UNION ALL SELECT s.key, s.value"
                                 " FROM json_each(?1, '$.software') s WHERE s.type = 'text'",
                                 what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, json);
    int rc;
    while ((rc = s_step(self, st, what)) > 0)
        fb_fingerprint_set(fp, store__col_text(st, 0), store__col_text(st, 1));
    sqlite3_finalize(st);
    return rc;
}

int store_fingerprint_insert(store_t *self, const char *campaign_id, const char *node,
                             const fb_fingerprint_t *fp, uint64_t now_ms)
{
    if (!campaign_id || !node || !fp)
        return store__fail(self, -EINVAL,
                           "fingerprint: campaign, node and fingerprint are required");
    sqlite3_stmt *st = store__stmt(self, STMT_FINGERPRINT_SEEN);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, campaign_id);
    store__bind_text(st, 2, node);
    int rc = s_step(self, st, "looking up a fingerprint");
    if (rc > 0)
        sqlite3_reset(st);
    if (rc)
        return rc < 0 ? rc : 0; /* taken when the campaign first gave the node a task */
    const char *what = "storing a fingerprint";
    /* an empty fingerprint is recorded all the same, so that it is taken once */
    fb_fp_item_t unknown = {"fleetburn", "unknown"};
    const fb_fp_item_t *items = fp->n ? fp->items : &unknown;
    size_t n = fp->n ? fp->n : 1;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        if (!(st = store__stmt(self, STMT_FINGERPRINT_INSERT)))
            return -EIO;
        store__bind_text(st, 1, campaign_id);
        store__bind_text(st, 2, node);
        store__bind_text(st, 3, items[i].component);
        store__bind_text(st, 4, items[i].version);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)now_ms);
        err = store__run(self, st, what);
        if (!err && i == 0 && sqlite3_changes(self->db) == 0)
            err = store__fail(self, -ENOENT, "fingerprint: no campaign %s", campaign_id);
    }
    return err;
}

int store_fingerprint_record(store_t *self, const char *campaign_id, const char *node,
                             uint64_t now_ms)
{
    if (!campaign_id || !node)
        return store__fail(self, -EINVAL, "fingerprint: campaign and node are required");
    int err = store__begin(self);
    if (err)
        return err;
    char *json = NULL;
    err = s_one_text(self,
                     "SELECT inventory_json FROM agents WHERE name = ?1"
                     " AND json_valid(inventory_json) AND json_type(inventory_json) = 'object'",
                     node, NULL, "reading a node's inventory", &json);
    if (!err && !json)
        err = store__fail(self, -ENOENT, "fingerprint: no inventory of node %s", node);
    fb_fingerprint_t fp = {0};
    if (!err)
        err = s_fingerprint_of_json(self, json, &fp);
    if (!err)
        err = store_fingerprint_insert(self, campaign_id, node, &fp, now_ms);
    fb_fingerprint_clear(&fp);
    free(json);
    return store__end(self, err);
}

void store_node_fingerprints_free(store_node_fingerprint_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].node);
        free(v[i].previous_campaign);
        fb_fingerprint_clear(&v[i].fingerprint);
        fb_fingerprint_clear(&v[i].previous);
    }
    free(v);
}

/* Reads the rows of (campaign, node) through st (?1 campaign, ?2 node) into fp. */
static int s_read_fingerprint(store_t *self, sqlite3_stmt *st, const char *campaign_id,
                              const char *node, fb_fingerprint_t *fp)
{
    store__bind_text(st, 1, campaign_id);
    store__bind_text(st, 2, node);
    int rc;
    while ((rc = s_step(self, st, "reading a fingerprint")) > 0)
        fb_fingerprint_set(fp, store__col_text(st, 0), store__col_text(st, 1));
    return rc;
}

static int s_campaign_fingerprints(store_t *self, const char *campaign_id,
                                   store_node_fingerprint_t **out, size_t *n_out)
{
    char *known = NULL;
    int err = s_one_text(self, "SELECT id FROM campaigns WHERE id = ?1", campaign_id, NULL,
                         "looking up a campaign", &known);
    if (!err && !known)
        err = store__fail(self, -ENOENT, "no campaign %s", campaign_id);
    free(known);
    sqlite3_stmt *nodes = NULL, *rows = NULL, *prev = NULL;
    if (!err &&
        (!(nodes = s_prepare(self,
                             "SELECT DISTINCT node FROM fingerprints WHERE campaign_id = ?1"
                             " ORDER BY node",
                             "listing fingerprints")) ||
         !(rows = s_prepare(self,
                            "SELECT component, version FROM fingerprints"
                            " WHERE campaign_id = ?1 AND node = ?2",
                            "reading a fingerprint")) ||
         /* the node's latest campaign that started before this one and recorded it */
         !(prev = s_prepare(self,
                            "SELECT f.campaign_id FROM fingerprints f"
                            " JOIN campaigns c ON c.id = f.campaign_id, campaigns me"
                            " WHERE me.id = ?1 AND f.node = ?2 AND f.campaign_id <> ?1"
                            " AND (c.started_ms < me.started_ms"
                            "      OR (c.started_ms = me.started_ms AND c.rowid < me.rowid))"
                            " ORDER BY c.started_ms DESC, c.rowid DESC LIMIT 1",
                            "looking up a node's previous campaign"))))
        err = -EIO;
    store_node_fingerprint_t *v = NULL;
    size_t n = 0;
    int rc = 0;
    if (!err) {
        store__bind_text(nodes, 1, campaign_id);
        while ((rc = s_step(self, nodes, "listing fingerprints")) > 0) {
            v = xrealloc(v, (n + 1) * sizeof *v);
            memset(&v[n], 0, sizeof v[n]);
            v[n++].node = store__col_dup(nodes, 0);
        }
        err = rc;
    }
    for (size_t i = 0; i < n && !err; i++) {
        err = s_read_fingerprint(self, rows, campaign_id, v[i].node, &v[i].fingerprint);
        store__bind_text(prev, 1, campaign_id);
        store__bind_text(prev, 2, v[i].node);
        if (!err && (rc = s_step(self, prev, "looking up a node's previous campaign")) > 0) {
            v[i].previous_campaign = store__col_dup(prev, 0);
            sqlite3_reset(prev);
        }
        err = err ? err : rc < 0 ? rc : 0;
        if (!err && v[i].previous_campaign)
            err = s_read_fingerprint(self, rows, v[i].previous_campaign, v[i].node, &v[i].previous);
    }
    sqlite3_finalize(nodes);
    sqlite3_finalize(rows);
    sqlite3_finalize(prev);
    if (err) {
        store_node_fingerprints_free(v, n);
        return err;
    }
    *out = v;
    *n_out = n;
    return 0;
}

int store_campaign_fingerprints(store_t *self, const char *campaign_id,
                                store_node_fingerprint_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    int err = store__begin_read(self);
    if (err)
        return err;
    err = s_campaign_fingerprints(self, campaign_id, out, n_out);
    return store__end(self, err);
}

static int s_by_node(const void *key, const void *item)
{
    return strcmp(key, ((const store_node_fingerprint_t *)item)->node);
}

int store_fingerprint_changes(store_t *self, const char *base_id, const char *campaign_id,
                              fb_fp_group_t **out, size_t *n_out, size_t *n_compared)
{
    *out = NULL;
    *n_out = 0;
    if (n_compared)
        *n_compared = 0;
    store_node_fingerprint_t *now = NULL, *base = NULL;
    size_t n_now = 0, n_base = 0;
    int err = store__begin_read(self);
    if (err)
        return err;
    err = s_campaign_fingerprints(self, campaign_id, &now, &n_now);
    if (!err && base_id)
        err = s_campaign_fingerprints(self, base_id, &base, &n_base);
    err = store__end(self, err);
    if (err) {
        store_node_fingerprints_free(now, n_now);
        return err;
    }
    fb_fp_node_t *nodes = xcalloc(n_now ? n_now : 1, sizeof *nodes);
    size_t compared = 0;
    for (size_t i = 0; i < n_now; i++) {
        const store_node_fingerprint_t *b =
            base_id ? bsearch(now[i].node, base, n_base, sizeof *base, s_by_node) : NULL;
        const fb_fingerprint_t *before = base_id
                                             ? (b ? &b->fingerprint : NULL)
                                             : (now[i].previous_campaign ? &now[i].previous : NULL);
        nodes[i] = (fb_fp_node_t){now[i].node, before, &now[i].fingerprint};
        compared += before != NULL;
    }
    *n_out = fb_fingerprint_group(nodes, n_now, out);
    if (n_compared)
        *n_compared = compared;
    free(nodes);
    store_node_fingerprints_free(now, n_now);
    store_node_fingerprints_free(base, n_base);
    return 0;
}
