/* SPDX-License-Identifier: Apache-2.0 */
/* What each `nodes: slurm:...` selection of a campaign resolved to when it was submitted
 * (table campaign_node_selections, schema version 3): a campaign resumed after a coordinator
 * restart runs on the nodes Slurm listed then, not on what it lists now. Rare writes (one per
 * selection per campaign), so the statements are prepared where they are used instead of in the
 * store's statement cache. */
#include "store_internal.h"

#include <errno.h>

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

int store_node_selection_add(store_t *self, const char *campaign_id, const char *expr,
                             const char *nodes)
{
    if (!campaign_id || !expr || !nodes)
        return store__fail(self, -EINVAL,
                           "node selection: campaign, selection and nodes are "
                           "required");
    static const char what[] = "storing a campaign's node selection";
    sqlite3_stmt *st = s_prepare(self,
                                 "INSERT OR REPLACE INTO campaign_node_selections(campaign_id, "
                                 "expr, nodes) SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM "
                                 "campaigns WHERE id = ?1)",
                                 what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, campaign_id);
    store__bind_text(st, 2, expr);
    store__bind_text(st, 3, nodes);
    int err = store__run(self, st, what);
    if (err == 0 && sqlite3_changes(self->db) == 0)
        err = store__fail(self, -ENOENT, "node selection %s: no campaign %s", expr, campaign_id);
    sqlite3_finalize(st);
    return err;
}

int store_node_selection_foreach(store_t *self, const char *campaign_id,
                                 int (*cb)(const char *expr, const char *nodes, void *arg),
                                 void *arg)
{
    static const char what[] = "reading a campaign's node selections";
    sqlite3_stmt *st = s_prepare(self,
                                 "SELECT expr, nodes FROM campaign_node_selections WHERE "
                                 "campaign_id = ?1 ORDER BY rowid",
                                 what);
    if (!st)
        return -EIO;
    store__bind_text(st, 1, campaign_id);
    int rc, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && ret == 0) {
        const char *expr = store__col_text(st, 0), *nodes = store__col_text(st, 1);
        ret = cb(expr ? expr : "", nodes ? nodes : "", arg);
    }
    if (ret == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
        ret = store__sqlite_err(self, rc, what);
    sqlite3_finalize(st);
    return ret;
}
