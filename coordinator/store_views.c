/* SPDX-License-Identifier: Apache-2.0 */
/* What `fleetburn serve --http` exports about each node (store.h, "Node views"): its most recent
 * results, whatever campaign they came from, so that /metrics says how every node last did even
 * after other campaigns ran on other nodes. One indexed lookup per agent (results_by_node) over
 * a window of its latest results, so a scrape costs the same after a year of campaigns. These
 * run once per scrape on the listener's own connection, so their statements are prepared where
 * they are used rather than cached. */
#include "store_internal.h"

#include "common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    store_node_result_t *v;
    size_t n, cap;
} s_list_t;

static store_node_result_t *s_push(s_list_t *l)
{
    if (l->n == l->cap)
        l->v = xrealloc(l->v, (l->cap = l->cap ? l->cap * 2 : 64) * sizeof *l->v);
    store_node_result_t *r = &l->v[l->n++];
    memset(r, 0, sizeof *r);
    return r;
}

/* Whether l already holds a result of node for workload (rows arrive newest first). */
static bool s_have_workload(const s_list_t *l, size_t from, const char *workload)
{
    for (size_t i = from; i < l->n; i++)
        if (!strcmp(l->v[i].workload, workload ? workload : ""))
            return true;
    return false;
}

static int s_node(store_t *self, sqlite3_stmt *st, const char *node, size_t window, s_list_t *l)
{
    const char *what = "reading a node's latest results";
    sqlite3_reset(st);
    store__bind_text(st, 1, node);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)window);
    size_t first = l->n;
    int more;
    while ((more = store__step(self, st, what)) > 0) {
        const char *workload = store__col_text(st, 4);
        if (l->n > first && s_have_workload(l, first, workload))
            continue;
        store_node_result_t *r = s_push(l);
        r->node = xstrdup(node);
        r->result_id = store__col_dup(st, 0);
        r->verdict = store__col_verdict(st, 1);
        r->campaign_id = store__col_dup(st, 2);
        r->stage = store__col_dup(st, 3);
        r->workload = xstrdup(workload ? workload : "");
        r->received_ms = store__col_time(st, 5);
        r->last = l->n == first + 1;
    }
    return more;
}

static int s_metrics(store_t *self, sqlite3_stmt *st, store_node_result_t *r)
{
    sqlite3_reset(st);
    store__bind_text(st, 1, r->result_id);
    r->metrics = fb_result_new();
    int more;
    while ((more = store__step(self, st, "reading a result's metrics")) > 0)
        fb_result_add_metric(r->metrics, store__col_text(st, 0), sqlite3_column_double(st, 1),
                             store__col_text(st, 2));
    return more;
}

static int s_read(store_t *self, size_t window, s_list_t *l)
{
    sqlite3_stmt *agents =
        store__prepare(self, "SELECT name FROM agents ORDER BY name", "listing agents");
    sqlite3_stmt *latest = store__prepare(
        self,
        "SELECT r.result_id, r.verdict, t.campaign_id, s.name, s.workload, r.received_ms"
        " FROM results r JOIN tasks t ON t.id = r.task_id JOIN stages s ON s.id = t.stage_id"
        " WHERE r.node = ?1 ORDER BY r.received_ms DESC, r.rowid DESC LIMIT ?2",
        "reading a node's latest results");
    sqlite3_stmt *metrics = store__prepare(self,
                                           "SELECT name, value, unit FROM metrics WHERE "
                                           "result_id = ?1 ORDER BY rowid",
                                           "reading a result's metrics");
    int err = agents && latest && metrics ? 0 : -EIO;
    int more = 0;
    while (!err && (more = store__step(self, agents, "listing agents")) > 0)
        err = s_node(self, latest, store__col_text(agents, 0), window, l);
    err = err ? err : more;
    for (size_t i = 0; i < l->n && !err; i++)
        err = s_metrics(self, metrics, &l->v[i]);
    sqlite3_finalize(agents);
    sqlite3_finalize(latest);
    sqlite3_finalize(metrics);
    return err;
}

int store_node_results(store_t *self, size_t window, store_node_result_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    int err = store__begin_read(self);
    if (err)
        return err;
    s_list_t l = {0};
    err = store__end(self, s_read(self, window ? window : 1, &l));
    if (err) {
        store_node_results_free(l.v, l.n);
        return err;
    }
    *out = l.v;
    *n_out = l.n;
    return 0;
}

void store_node_results_free(store_node_result_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].node);
        free(v[i].result_id);
        free(v[i].campaign_id);
        free(v[i].stage);
        free(v[i].workload);
        fb_result_destroy(&v[i].metrics);
    }
    free(v);
}
