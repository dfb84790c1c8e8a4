/* SPDX-License-Identifier: Apache-2.0 */
/* What `fleetburn compare` and `run --baseline` need from the timeline (store.h, "Baselines and
 * comparisons"): named baselines (the baselines table), the predecessor of a campaign that
 * `--baseline latest` stands for, and the nodes' environment fingerprints. These run once per
 * command, so their statements are prepared where they are used rather than cached. */
#include "store_internal.h"

#include "common/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The first column of the first row as a heap string in *out, or -ENOENT. */
static int s_one_text(store_t *self, sqlite3_stmt *st, const char *what, char **out)
{
    int more = store__step(self, st, what);
    if (more > 0)
        *out = store__col_dup(st, 0);
    sqlite3_finalize(st);
    if (more < 0)
        return more;
    return more && *out ? 0 : -ENOENT;
}

int store_campaign_head(store_t *self, const char *id, char **name_out, char **state_out,
                        uint64_t *started_ms_out)
{
    const char *what = "reading a campaign";
    sqlite3_stmt *st =
        store__prepare(self, "SELECT name, state, started_ms FROM campaigns WHERE id = ?1", what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, id);
    int more = store__step(self, st, what);
    if (more > 0) {
        if (name_out)
            *name_out = store__col_dup(st, 0);
        if (state_out)
            *state_out = store__col_dup(st, 1);
        if (started_ms_out)
            *started_ms_out = store__col_time(st, 2);
    }
    sqlite3_finalize(st);
    return more < 0 ? more : more ? 0 : -ENOENT;
}

int store_campaign_previous(store_t *self, const char *name, uint64_t before_ms,
                            const char *exclude_id, char **id_out)
{
    *id_out = NULL;
    const char *what = "finding the previous campaign of the same name";
    sqlite3_stmt *st =
        store__prepare(self,
                       "SELECT id FROM campaigns WHERE name = ?1 AND state = 'finished'"
                       " AND started_ms < ?2 AND id IS NOT ?3"
                       " ORDER BY started_ms DESC, rowid DESC LIMIT 1",
                       what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, name);
    sqlite3_bind_int64(st, 2, before_ms > INT64_MAX ? INT64_MAX : (sqlite3_int64)before_ms);
    store__bind_text(st, 3, exclude_id);
    return s_one_text(self, st, what, id_out);
}

int store_baseline_get(store_t *self, const char *name, char **campaign_id_out)
{
    *campaign_id_out = NULL;
    const char *what = "reading a baseline";
    sqlite3_stmt *st =
        store__prepare(self, "SELECT campaign_id FROM baselines WHERE name = ?1", what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, name);
    return s_one_text(self, st, what, campaign_id_out);
}

int store_baseline_set(store_t *self, const char *name, const char *campaign_id, uint64_t now_ms,
                       char **previous_out)
{
    if (previous_out)
        *previous_out = NULL;
    if (!name || !campaign_id)
        return store__fail(self, -EINVAL, "baseline: a name and a campaign id are required");
    int err = store__begin(self);
    if (err)
        return err;
    char *previous = NULL;
    err = store_baseline_get(self, name, &previous);
    if (err == -ENOENT)
        err = 0;
    const char *what = "keeping a baseline";
    sqlite3_stmt *st =
        err ? NULL
            : store__prepare(self,
                             "INSERT INTO baselines(name, campaign_id, set_ms)"
                             " SELECT ?1, ?2, ?3 WHERE EXISTS"
                             " (SELECT 1 FROM campaigns WHERE id = ?2)"
                             " ON CONFLICT(name) DO UPDATE SET"
                             " campaign_id = excluded.campaign_id, set_ms = excluded.set_ms",
                             what);
    if (!err && !st)
        err = -EIO;
    if (st) {
        store__bind_text(st, 1, name);
        store__bind_text(st, 2, campaign_id);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)now_ms);
        err = store__step(self, st, what);
        if (err == 0 && sqlite3_changes(self->db) == 0)
            err = store__fail(self, -ENOENT, "baseline %s: no campaign %s", name, campaign_id);
        sqlite3_finalize(st);
    }
    err = store__end(self, err);
    if (!err && previous_out)
        *previous_out = previous;
    else
        free(previous);
    return err;
}

int store_baseline_delete(store_t *self, const char *name)
{
    const char *what = "forgetting a baseline";
    int err = store__begin(self);
    if (err)
        return err;
    sqlite3_stmt *st = store__prepare(self, "DELETE FROM baselines WHERE name = ?1", what);
    if (!st)
        return store__end(self, -EIO);
    store__bind_text(st, 1, name);
    err = store__step(self, st, what);
    if (err == 0 && sqlite3_changes(self->db) == 0)
        err = -ENOENT;
    sqlite3_finalize(st);
    return store__end(self, err);
}

int store_baseline_foreach(store_t *self, int (*cb)(const store_baseline_t *baseline, void *arg),
                           void *arg)
{
    const char *what = "listing baselines";
    sqlite3_stmt *st =
        store__prepare(self,
                       "SELECT b.name, b.campaign_id, b.set_ms, c.name, c.state,"
                       " c.started_ms FROM baselines b"
                       " LEFT JOIN campaigns c ON c.id = b.campaign_id ORDER BY b.name",
                       what);
    if (!st)
        return -EIO;
    int more, ret = 0;
    while (!ret && (more = store__step(self, st, what)) > 0) {
        store_baseline_t b = {store__col_text(st, 0), store__col_text(st, 1),
                              store__col_text(st, 3), store__col_text(st, 4),
                              store__col_time(st, 2), store__col_time(st, 5)};
        ret = cb(&b, arg);
    }
    sqlite3_finalize(st);
    return ret ? ret : more;
}

typedef int (*s_fingerprint_cb_t)(const char *node, const char *component, const char *version,
                                  void *arg);

/* Runs sql, whose ?1 is campaign_id and whose rows are (node, component, version), and calls cb
 * with each row until it returns non-zero. *found: whether there was a row. 0, cb's return, or
 * -errno. */
static int s_fingerprint_rows(store_t *self, const char *sql, const char *what,
                              const char *campaign_id, s_fingerprint_cb_t cb, void *arg,
                              bool *found)
{
    *found = false;
    sqlite3_stmt *st = store__prepare(self, sql, what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, campaign_id);
    int more, ret = 0;
    while (!ret && (more = store__step(self, st, what)) > 0) {
        *found = true;
        ret = cb(store__col_text(st, 0), store__col_text(st, 1), store__col_text(st, 2), arg);
    }
    sqlite3_finalize(st);
    return ret ? ret : more;
}

int store_node_fingerprint_foreach(store_t *self, const char *campaign_id,
                                   int (*cb)(const char *node, const char *component,
                                             const char *version, void *arg),
                                   void *arg)
{
    /* The fingerprints recorded for the campaign (table fingerprints, schema 4: each node's
     * environment when the campaign first gave it a task). */
    bool found;
    int rc = s_fingerprint_rows(self,
                                "SELECT node, component, version FROM fingerprints"
                                " WHERE campaign_id = ?1 ORDER BY node, component",
                                "reading the nodes' recorded fingerprints", campaign_id, cb, arg,
                                &found);
    if (rc || found)
        return rc;
    /* A campaign run before fingerprints were recorded: what the agent's inventory snapshots
     * hold (the software map and the agent's version), picked by time; snapshots are written
     * when an inventory changes, so the one in force at the campaign's start is the latest at
     * or before it. */
    static const char *sql =
        "WITH start AS (SELECT started_ms AS t FROM campaigns WHERE id = ?1),"
        " nodes AS (SELECT DISTINCT n.value AS node FROM tasks t, json_each(t.nodes_json) n"
        "   WHERE t.campaign_id = ?1),"
        " pick AS (SELECT nodes.node AS node, COALESCE("
        "   (SELECT MAX(s.id) FROM inventory_snapshots s WHERE s.agent = nodes.node"
        "     AND s.time_ms <= (SELECT t FROM start)),"
        "   (SELECT MIN(s.id) FROM inventory_snapshots s WHERE s.agent = nodes.node)) AS sid"
        "   FROM nodes),"
        " inv AS (SELECT pick.node AS node, s.inventory_json AS j FROM pick"
        "   JOIN inventory_snapshots s ON s.id = pick.sid WHERE json_valid(s.inventory_json))"
        " SELECT node, sw.key, sw.value FROM inv, json_each(inv.j, '$.software') sw"
        "   WHERE sw.type = 'text'"
        " UNION ALL SELECT node, 'agent_version', json_extract(j, '$.agent_version') FROM inv"
        "   WHERE json_type(j, '$.agent_version') = 'text'"
        " ORDER BY 1, 2";
    return s_fingerprint_rows(self, sql, "reading the nodes' fingerprints", campaign_id, cb, arg,
                              &found);
}
