/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of telemetry as data: the downsampling buckets and the aggregator (coordinator/tseries.c),
 * the telemetry tables of the store with late samples merged, filters, retention's merging of old
 * buckets into wider ones with extremes and means kept, and the migration from the previous
 * schema version. Every store test works on its own database in a fresh temporary directory. */
#include "store.h"
#include "store_fixture.h"
#include "store_telemetry.h"
#include "tseries.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- buckets and names --------------------------------------------------------------------- */

static void test_bucket_math(void **state)
{
    (void)state;
    tseries_bucket_t b;
    tseries_bucket_init(&b, 10000, 1234567, 60.0);
    assert_int_equal(b.time_ms, 1230000);
    tseries_bucket_add(&b, 70.0);
    tseries_bucket_add(&b, 50.0);
    assert_int_equal(b.count, 3);
    assert_true(b.min == 50.0 && b.max == 70.0);
    assert_true(fabs(tseries_bucket_mean(&b) - 60.0) < 1e-9);
    tseries_bucket_t c;
    tseries_bucket_init(&c, 60000, 1235000, 90.0);
    tseries_bucket_merge(&b, &c);
    assert_int_equal(b.count, 4);
    assert_true(b.max == 90.0 && b.min == 50.0);
    assert_int_equal(b.span_ms, 60000);
    assert_true(fabs(tseries_bucket_mean(&b) - 67.5) < 1e-9);
}

static void test_split_name(void **state)
{
    (void)state;
    char dev[16], qty[32];
    assert_true(tseries_split_name("gpu3.power_w", dev, sizeof dev, qty, sizeof qty));
    assert_string_equal(dev, "gpu3");
    assert_string_equal(qty, "power_w");
    assert_true(tseries_split_name("mlx5_1.rx_gbps", dev, sizeof dev, qty, sizeof qty));
    assert_string_equal(dev, "mlx5_1");
    assert_true(tseries_split_name("netbw.rx_gbps_1s", dev, sizeof dev, qty, sizeof qty));
    assert_string_equal(dev, "");
    assert_string_equal(qty, "netbw.rx_gbps_1s");
    assert_true(tseries_split_name("load", dev, sizeof dev, qty, sizeof qty));
    assert_string_equal(qty, "load");
    assert_false(tseries_split_name("", dev, sizeof dev, qty, sizeof qty));
    assert_false(tseries_split_name("gpu0.a_quantity_name_far_too_long_for_the_buffer", dev,
                                    sizeof dev, qty, sizeof qty));
}

static void test_tiers(void **state)
{
    (void)state;
    size_t n;
    const tseries_tier_t *t = tseries_tiers(&n);
    assert_true(n >= 2);
    assert_int_equal(tseries_span_for_age(t, n, 0), TSERIES_BUCKET_MS);
    assert_int_equal(tseries_span_for_age(t, n, 20 * 60 * 1000), 60000);
    assert_int_equal(tseries_span_for_age(t, n, 10 * 3600 * 1000ull), 300000);
    for (size_t i = 1; i < n; i++) /* each tier wider and later, and a multiple of the one before */
        assert_true(t[i].after_ms > t[i - 1].after_ms && t[i].span_ms % t[i - 1].span_ms == 0);
}

/* ---- the aggregator ------------------------------------------------------------------------ */

typedef struct {
    tseries_bucket_t b[64];
    char node[64][16], qty[64][32];
    size_t n;
} emitted_t;

static void s_collect(const tseries_key_t *key, const tseries_bucket_t *b, void *arg)
{
    emitted_t *e = arg;
    assert_true(e->n < 64);
    e->b[e->n] = *b;
    snprintf(e->node[e->n], sizeof e->node[0], "%s", key->node);
    snprintf(e->qty[e->n], sizeof e->qty[0], "%s", key->quantity);
    e->n++;
}

static void test_agg_closes_buckets(void **state)
{
    (void)state;
    emitted_t e = {0};
    tseries_agg_t *agg = tseries_agg_new(10000, s_collect, &e);
    tseries_key_t k = {"c1", "node1", "gpu0", "temp_c", "C"};
    /* 1 Hz for 25 s: two complete buckets emitted, the third open */
    for (uint64_t s = 0; s < 25; s++)
        assert_int_equal(tseries_agg_add(agg, &k, 1000000 + s * 1000, (double)s, s), 0);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.b[0].time_ms, 1000000);
    assert_int_equal(e.b[0].count, 10);
    assert_true(e.b[0].min == 0 && e.b[0].max == 9);
    assert_int_equal(e.b[1].count, 10);
    /* a late sample makes a bucket of its own */
    assert_int_equal(tseries_agg_add(agg, &k, 1000500, 99.0, 30), 0);
    assert_int_equal(e.n, 3);
    assert_int_equal(e.b[2].time_ms, 1000000);
    assert_int_equal(e.b[2].count, 1);
    /* NaN refused */
    assert_int_equal(tseries_agg_add(agg, &k, 1024000, NAN, 31), -ERANGE);
    assert_int_equal(tseries_agg_size(agg), 1);
    tseries_agg_destroy(&agg);
    assert_null(agg);
}

static void test_agg_flush_quiet_and_by_node(void **state)
{
    (void)state;
    emitted_t e = {0};
    tseries_agg_t *agg = tseries_agg_new(10000, s_collect, &e);
    tseries_key_t a = {"c1", "node1", "gpu0", "power_w", "W"};
    tseries_key_t b = {"c1", "node2", "gpu0", "power_w", "W"};
    tseries_agg_add(agg, &a, 5000, 300, 100);
    tseries_agg_add(agg, &b, 5000, 310, 200);
    /* quiet since 150: only node1's */
    assert_int_equal(tseries_agg_flush(agg, NULL, NULL, 150), 1);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.node[0], "node1");
    /* by node */
    assert_int_equal(tseries_agg_flush(agg, "c1", "node3", UINT64_MAX), 0);
    assert_int_equal(tseries_agg_flush(agg, "c1", "node2", UINT64_MAX), 1);
    assert_int_equal(tseries_agg_size(agg), 0);
    tseries_agg_destroy(&agg);
}

static void test_agg_bounds_series_per_node(void **state)
{
    (void)state;
    tseries_agg_t *agg = tseries_agg_new(10000, NULL, NULL);
    char qty[32];
    for (unsigned i = 0; i < TSERIES_MAX_SERIES_PER_NODE; i++) {
        snprintf(qty, sizeof qty, "q%u", i);
        tseries_key_t k = {"c1", "evil", "", qty, ""};
        assert_int_equal(tseries_agg_add(agg, &k, 1000, 1.0, 1), 0);
    }
    tseries_key_t more = {"c1", "evil", "", "one_more", ""};
    assert_int_equal(tseries_agg_add(agg, &more, 1000, 1.0, 1), -ENOSPC);
    tseries_key_t other = {"c1", "good", "gpu0", "temp_c", "C"}; /* other nodes unaffected */
    assert_int_equal(tseries_agg_add(agg, &other, 1000, 1.0, 1), 0);
    /* flushed series no longer count */
    tseries_agg_flush(agg, "c1", "evil", UINT64_MAX);
    assert_int_equal(tseries_agg_add(agg, &more, 1000, 1.0, 1), 0);
    tseries_agg_destroy(&agg);
}

/* ---- the store ----------------------------------------------------------------------------- */

/* A fresh store (store_fixture.h) holding campaign c1. */
static int s_setup(void **state)
{
    store_fixture_setup(state);
    store_fixture_t *fx = *state;
    assert_int_equal(store_campaign_create(fx->store, "c1", "burn", "t.yaml", "x", 1000), 0);
    return 0;
}

typedef struct {
    store_telemetry_t rows[256];
    char text[256][64];
    size_t n;
} read_t;

static int s_read_cb(const store_telemetry_t *row, void *arg)
{
    read_t *r = arg;
    assert_true(r->n < 256);
    r->rows[r->n] = *row;
    snprintf(r->text[r->n], sizeof r->text[0], "%s/%s/%s", row->node, row->device, row->quantity);
    r->rows[r->n].node = r->rows[r->n].device = r->rows[r->n].quantity = r->rows[r->n].unit = NULL;
    r->n++;
    return 0;
}

static store_telemetry_t s_row(const char *node, const char *dev, const char *qty, uint64_t t,
                               uint64_t span, uint32_t n, double min, double max, double mean)
{
    return (store_telemetry_t){"c1", node, dev, qty, "W", t, span, n, min, max, mean};
}

static void test_store_insert_read_merge(void **state)
{
    store_fixture_t *fx = *state;
    store_telemetry_t rows[] = {
        s_row("n2", "gpu0", "power_w", 10000, 10000, 10, 300, 320, 310),
        s_row("n1", "gpu1", "power_w", 10000, 10000, 10, 200, 220, 210),
        s_row("n1", "gpu0", "power_w", 20000, 10000, 10, 100, 140, 120),
        s_row("n1", "gpu0", "power_w", 10000, 10000, 10, 100, 120, 110),
    };
    assert_int_equal(store_telemetry_insert(fx->store, rows, 4), 0);
    /* a late bucket of the same start merges: no second row */
    store_telemetry_t late = s_row("n1", "gpu0", "power_w", 10000, 10000, 10, 90, 400, 130);
    assert_int_equal(store_telemetry_insert(fx->store, &late, 1), 0);
    read_t r = {0};
    store_telemetry_filter_t all = {.campaign_id = "c1"};
    assert_int_equal(store_telemetry_foreach(fx->store, &all, s_read_cb, &r), 0);
    assert_int_equal(r.n, 4);
    assert_string_equal(r.text[0], "n1/gpu0/power_w"); /* ordered by node, device, time */
    assert_int_equal(r.rows[0].time_ms, 10000);
    assert_int_equal(r.rows[0].count, 20);
    assert_true(r.rows[0].min == 90 && r.rows[0].max == 400);
    assert_true(fabs(r.rows[0].mean - 120) < 1e-9);
    assert_int_equal(r.rows[1].time_ms, 20000);
    assert_string_equal(r.text[2], "n1/gpu1/power_w");
    assert_string_equal(r.text[3], "n2/gpu0/power_w");
    /* filters: node, device, time range (buckets overlapping [15000, 20000)) */
    read_t f = {0};
    store_telemetry_filter_t one = {.campaign_id = "c1", .node = "n1", .device = "gpu0",
                                    .quantity = "power_w", .from_ms = 15000, .to_ms = 20000};
    assert_int_equal(store_telemetry_foreach(fx->store, &one, s_read_cb, &f), 0);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.rows[0].time_ms, 10000);
    /* unknown campaign: nothing stored, -ENOENT; no campaign id: -EINVAL */
    store_telemetry_t stray = rows[0];
    stray.campaign_id = "nope";
    assert_int_equal(store_telemetry_insert(fx->store, &stray, 1), -ENOENT);
    assert_int_equal(store_telemetry_foreach(fx->store, &(store_telemetry_filter_t){0}, s_read_cb,
                                             &f),
                     -EINVAL);
    store_telemetry_t nan = rows[0];
    nan.mean = NAN;
    assert_int_equal(store_telemetry_insert(fx->store, &nan, 1), -EINVAL);
}

/* 1 Hz for 3 hours of one series, through the aggregator into the store, then retention as the
 * coordinator applies it: old buckets merged into 60 s and 300 s buckets, no sample lost, the
 * extremes kept. */
typedef struct {
    store_t *store;
} sink_t;

static void s_sink(const tseries_key_t *key, const tseries_bucket_t *b, void *arg)
{
    sink_t *s = arg;
    store_telemetry_t row = {key->campaign_id, key->node, key->device, key->quantity, key->unit,
                             b->time_ms, b->span_ms, b->count, b->min, b->max,
                             tseries_bucket_mean(b)};
    assert_int_equal(store_telemetry_insert(s->store, &row, 1), 0);
}

static void test_retention_tiers(void **state)
{
    store_fixture_t *fx = *state;
    sink_t sink = {fx->store};
    tseries_agg_t *agg = tseries_agg_new(TSERIES_BUCKET_MS, s_sink, &sink);
    tseries_key_t k = {"c1", "n1", "gpu0", "temp_c", "C"};
    const uint64_t t0 = 1800000000000ull, hours = 3, n = hours * 3600;
    store_defer_commits(fx->store, true);
    for (uint64_t s = 0; s < n; s++) {
        double v = 60.0 + (double)(s % 7); /* 60..66 */
        if (s == 1234)
            v = 95.0; /* one spike, early: must survive two merges */
        assert_int_equal(tseries_agg_add(agg, &k, t0 + s * 1000, v, s), 0);
    }
    tseries_agg_flush(agg, NULL, NULL, UINT64_MAX);
    tseries_agg_destroy(&agg);
    assert_int_equal(store_flush(fx->store), 0);
    store_defer_commits(fx->store, false);
    read_t *r = xcalloc(1, sizeof *r);
    store_telemetry_filter_t f = {.campaign_id = "c1", .from_ms = t0, .to_ms = t0 + 600000};
    assert_int_equal(store_telemetry_foreach(fx->store, &f, s_read_cb, r), 0);
    assert_int_equal(r->n, 60); /* ten minutes of 10 s buckets */
    size_t merged = 0;
    uint64_t now = t0 + n * 1000;
    assert_int_equal(store_telemetry_retain(fx->store, now, &merged), 0);
    assert_true(merged > 0);
    /* every bucket now has the width its age calls for; the counts add up to every sample */
    size_t n_tiers;
    const tseries_tier_t *tiers = tseries_tiers(&n_tiers);
    uint64_t count = 0;
    double top = 0;
    size_t rows = 0;
    for (uint64_t from = t0; from < now; from += 3600000) {
        memset(r, 0, sizeof *r);
        f.from_ms = from;
        f.to_ms = from + 3600000;
        assert_int_equal(store_telemetry_foreach(fx->store, &f, s_read_cb, r), 0);
        for (size_t i = 0; i < r->n; i++) {
            if (r->rows[i].time_ms < from)
                continue; /* counted in the hour before */
            uint64_t age = now - (r->rows[i].time_ms + r->rows[i].span_ms);
            uint64_t want = tseries_span_for_age(tiers, n_tiers, age);
            assert_true(r->rows[i].span_ms <= want * 5); /* a 300 s bucket may end inside a tier */
            count += r->rows[i].count;
            top = r->rows[i].max > top ? r->rows[i].max : top;
            rows++;
        }
    }
    assert_int_equal(count, n);
    assert_true(top == 95.0);
    /* 3 h: the first hour past 2 h in 300 s buckets, then 60 s, the last 15 min in 10 s */
    assert_true(rows < 12 + 105 + 90 + 10);
    /* idempotent: nothing left to merge */
    assert_int_equal(store_telemetry_retain(fx->store, now, &merged), 0);
    assert_int_equal(merged, 0);
    /* a late 10 s bucket inside merged history is merged into it on the next pass */
    store_telemetry_t late = {"c1", "n1", "gpu0", "temp_c", "C", t0 + 10000, 10000, 1, 20, 20, 20};
    assert_int_equal(store_telemetry_insert(fx->store, &late, 1), 0);
    assert_int_equal(store_telemetry_retain(fx->store, now, &merged), 0);
    assert_int_equal(merged, 1);
    memset(r, 0, sizeof *r);
    f.from_ms = t0;
    f.to_ms = t0 + 1;
    assert_int_equal(store_telemetry_foreach(fx->store, &f, s_read_cb, r), 0);
    assert_int_equal(r->n, 1);
    assert_int_equal(r->rows[0].span_ms, 300000);
    assert_int_equal(r->rows[0].count, 301);
    assert_true(r->rows[0].min == 20);
    assert_int_equal(store_telemetry_compact(fx->store, now, 600000, NULL), -EINVAL);
    free(r);
}

/* A database of the previous schema version gets the telemetry tables. */
static void test_migrates_previous_version(void **state)
{
    store_fixture_t *fx = *state;
    store_destroy(&fx->store);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    char *sql = xasprintf("DROP TABLE telemetry; DROP TABLE telemetry_series;"
                          " PRAGMA user_version = %d;",
                          STORE_SCHEMA_VERSION - 1);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    free(sql);
    sqlite3_close(db);
    assert_int_equal(store_open(fx->path, &fx->store, NULL), 0);
    store_telemetry_t row = s_row("n1", "gpu0", "power_w", 10000, 10000, 1, 1, 1, 1);
    assert_int_equal(store_telemetry_insert(fx->store, &row, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_math),
        cmocka_unit_test(test_split_name),
        cmocka_unit_test(test_tiers),
        cmocka_unit_test(test_agg_closes_buckets),
        cmocka_unit_test(test_agg_flush_quiet_and_by_node),
        cmocka_unit_test(test_agg_bounds_series_per_node),
        cmocka_unit_test_setup_teardown(test_store_insert_read_merge, s_setup, store_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_retention_tiers, s_setup, store_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_migrates_previous_version, s_setup, store_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
