/* SPDX-License-Identifier: Apache-2.0 */
/* Telemetry in the timeline store (store_telemetry.h; tables telemetry_series and telemetry,
 * schema step s_schema_telemetry in store_schema.c). Writes come from the coordinator's loop
 * thread as buckets close (coord_telemetry.c); retention merges old buckets into wider ones;
 * readers get the buckets of a campaign in series order. */
#include "store_internal.h"
#include "store_telemetry.h"
#include "tseries.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buckets this narrow or wider are past retention's last tier and outside its partial index
 * (telemetry_unmerged in s_schema_telemetry). */
#define S_WIDEST_TIER_MS 300000u

/* The id of row's series, created when the campaign has none of that name yet. -ENOENT for an
 * unknown campaign. */
static int s_series_id(store_t *self, const store_telemetry_t *row, int64_t *id)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        sqlite3_stmt *st = store__stmt(self, STMT_TSERIES_ID);
        if (!st)
            return -EIO;
        store__bind_text(st, 1, row->campaign_id);
        store__bind_text(st, 2, row->node);
        store__bind_text(st, 3, row->device ? row->device : "");
        store__bind_text(st, 4, row->quantity);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            *id = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (rc == SQLITE_ROW)
            return 0;
        if (rc != SQLITE_DONE)
            return store__sqlite_err(self, rc, "looking up a telemetry series");
        if (attempt)
            break;
        sqlite3_stmt *add = store__stmt(self, STMT_TSERIES_ADD);
        if (!add)
            return -EIO;
        store__bind_text(add, 1, row->campaign_id);
        store__bind_text(add, 2, row->node);
        store__bind_text(add, 3, row->device ? row->device : "");
        store__bind_text(add, 4, row->quantity);
        store__bind_text(add, 5, row->unit ? row->unit : "");
        int err = store__run(self, add, "adding a telemetry series");
        if (err)
            return err;
        if (sqlite3_changes(self->db) == 0)
            return store__fail(self, -ENOENT, "telemetry: no campaign '%s'", row->campaign_id);
    }
    return store__fail(self, -EIO, "telemetry: series of %s vanished", row->node);
}

static int s_put(store_t *self, const store_telemetry_t *row)
{
    if (!row->campaign_id || !row->node || !row->quantity || !*row->quantity || !row->count ||
        !row->span_ms)
        return store__fail(self, -EINVAL,
                           "telemetry: a bucket needs a campaign, node, quantity and samples");
    if (!isfinite(row->min) || !isfinite(row->max) || !isfinite(row->mean))
        return store__fail(self, -EINVAL, "telemetry: %s %s: value not finite", row->node,
                           row->quantity);
    int64_t id = 0;
    int err = s_series_id(self, row, &id);
    if (err)
        return err;
    sqlite3_stmt *st = store__stmt(self, STMT_TELEMETRY_PUT);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, (int64_t)row->time_ms);
    sqlite3_bind_int64(st, 3, (int64_t)row->span_ms);
    sqlite3_bind_int64(st, 4, (int64_t)row->count);
    sqlite3_bind_double(st, 5, row->min);
    sqlite3_bind_double(st, 6, row->max);
    sqlite3_bind_double(st, 7, row->mean);
    return store__run(self, st, "storing telemetry");
}

int store_telemetry_insert(store_t *self, const store_telemetry_t *rows, size_t n)
{
    if (!n)
        return 0;
    if (!rows)
        return store__fail(self, -EINVAL, "telemetry: no rows");
    int err = store__begin(self);
    for (size_t i = 0; !err && i < n; i++)
        err = s_put(self, &rows[i]);
    return store__end(self, err);
}

int store_telemetry_foreach(store_t *self, const store_telemetry_filter_t *filter,
                            int (*cb)(const store_telemetry_t *row, void *arg), void *arg)
{
    if (!filter || !filter->campaign_id)
        return store__fail(self, -EINVAL, "telemetry: which campaign?");
    int err = store__begin_read(self);
    if (err)
        return err;
    sqlite3_stmt *st = store__stmt(self, STMT_TELEMETRY_READ);
    if (!st)
        return store__end(self, -EIO);
    store__bind_text(st, 1, filter->campaign_id);
    store__bind_text(st, 2, filter->node);
    store__bind_text(st, 3, filter->device);
    store__bind_text(st, 4, filter->quantity);
    store__bind_time(st, 5, filter->from_ms);
    store__bind_time(st, 6, filter->to_ms);
    int rc;
    while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_telemetry_t row = {
            .campaign_id = filter->campaign_id,
            .node = store__col_text(st, 0),
            .device = store__col_text(st, 1),
            .quantity = store__col_text(st, 2),
            .unit = store__col_text(st, 3),
            .time_ms = store__col_time(st, 4),
            .span_ms = store__col_time(st, 5),
            .count = (uint32_t)sqlite3_column_int64(st, 6),
            .min = sqlite3_column_double(st, 7),
            .max = sqlite3_column_double(st, 8),
            .mean = sqlite3_column_double(st, 9),
        };
        err = cb(&row, arg);
    }
    if (!err && rc != SQLITE_DONE)
        err = store__sqlite_err(self, rc, "reading telemetry");
    sqlite3_reset(st);
    return store__end(self, err);
}

/* Runs one statement of the compaction with the cutoff and the widths bound; *out gets what it
 * changed (or, for a query, its one integer). Prepared here: it runs a few times an hour. */
static int s_compact_step(store_t *self, const char *sql, uint64_t before, uint64_t span,
                          uint64_t from_span, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(self->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return store__sqlite_err(self, rc, "preparing telemetry retention");
    sqlite3_bind_int64(st, 1, (int64_t)before);
    sqlite3_bind_int64(st, 2, (int64_t)span);
    sqlite3_bind_int64(st, 3, (int64_t)from_span);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && out)
        *out = sqlite3_column_int64(st, 0);
    else if (rc == SQLITE_DONE && out)
        *out = sqlite3_changes(self->db);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0
                                                 : store__sqlite_err(self, rc, "telemetry retention");
}

/* clang-format off */
/* The buckets to merge: of one narrower width (?3), started before the cutoff. The literal bound
 * lets SQLite use the partial index telemetry_unmerged (span_ms, time_ms): each pass reads only
 * what it merges. */
#define S_UNMERGED "span_ms < 300000 AND span_ms = ?3 AND time_ms < ?1"
static const char s_count_sql[] = "SELECT COUNT(*) FROM telemetry WHERE " S_UNMERGED;
/* One wide bucket per series and period. Where a row already sits at the period's start it is
 * either one of the buckets being merged (narrower: the aggregate replaces it) or a wide bucket
 * from an earlier pass (the aggregate merges into it). SQLite evaluates the SELECT in full before
 * it writes, since it reads the table it inserts into. */
static const char s_merge_sql[] =
    "INSERT INTO telemetry(series_id, time_ms, span_ms, n, vmin, vmax, vmean)"
    " SELECT series_id, time_ms - time_ms % ?2, ?2, SUM(n), MIN(vmin), MAX(vmax),"
    " SUM(vmean * n) / SUM(n) FROM telemetry WHERE " S_UNMERGED
    " GROUP BY series_id, time_ms - time_ms % ?2"
    " ON CONFLICT(series_id, time_ms) DO UPDATE SET"
    " vmean = CASE WHEN span_ms < excluded.span_ms THEN excluded.vmean"
    "         ELSE (vmean * n + excluded.vmean * excluded.n) / (n + excluded.n) END,"
    " n = CASE WHEN span_ms < excluded.span_ms THEN excluded.n ELSE n + excluded.n END,"
    " vmin = CASE WHEN span_ms < excluded.span_ms THEN excluded.vmin"
    "        ELSE MIN(vmin, excluded.vmin) END,"
    " vmax = CASE WHEN span_ms < excluded.span_ms THEN excluded.vmax"
    "        ELSE MAX(vmax, excluded.vmax) END,"
    " span_ms = MAX(span_ms, excluded.span_ms)";
static const char s_delete_sql[] = "DELETE FROM telemetry WHERE " S_UNMERGED;
/* clang-format on */

/* Merges the buckets of width from_span that start before `before` into buckets of span. */
static int s_compact_width(store_t *self, uint64_t before, uint64_t span, uint64_t from_span,
                           int64_t *merged)
{
    *merged = 0;
    int err = s_compact_step(self, s_count_sql, before, span, from_span, merged);
    if (!err && *merged)
        err = s_compact_step(self, s_merge_sql, before, span, from_span, NULL);
    if (!err && *merged)
        err = s_compact_step(self, s_delete_sql, before, span, from_span, NULL);
    return err;
}

int store_telemetry_compact(store_t *self, uint64_t before_ms, uint64_t span_ms,
                            size_t *merged_out)
{
    if (merged_out)
        *merged_out = 0;
    if (!span_ms || span_ms > S_WIDEST_TIER_MS)
        return store__fail(self, -EINVAL, "telemetry retention: width %llu ms not in 1..%u",
                           (unsigned long long)span_ms, S_WIDEST_TIER_MS);
    uint64_t before = tseries_bucket_start(before_ms, span_ms);
    /* Stored widths are the tiers' (the aggregator's, and what earlier passes made). */
    size_t n_tiers, total = 0;
    const tseries_tier_t *tiers = tseries_tiers(&n_tiers);
    int err = store__begin(self);
    for (size_t i = 0; !err && i < n_tiers && tiers[i].span_ms < span_ms; i++) {
        int64_t merged = 0;
        err = s_compact_width(self, before, span_ms, tiers[i].span_ms, &merged);
        total += (size_t)merged;
    }
    err = store__end(self, err);
    if (!err && merged_out)
        *merged_out = total;
    return err;
}

int store_telemetry_retain(store_t *self, uint64_t now_ms, size_t *merged_out)
{
    size_t n_tiers, total = 0;
    const tseries_tier_t *tiers = tseries_tiers(&n_tiers);
    int err = 0;
    for (size_t i = 1; !err && i < n_tiers; i++) {
        if (now_ms < tiers[i].after_ms)
            break;
        size_t merged = 0;
        err = store_telemetry_compact(self, now_ms - tiers[i].after_ms, tiers[i].span_ms, &merged);
        total += merged;
    }
    if (merged_out)
        *merged_out = total;
    return err;
}
