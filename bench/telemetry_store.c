/* SPDX-License-Identifier: Apache-2.0 */
/* What telemetry costs in the timeline store (docs/timeline-store.md "Telemetry"): N simulated
 * nodes of G GPUs, each GPU sending the ten quantities of a GPU workload's sampler (temperature,
 * memory temperature, power, power limit, SM and memory clocks, throttle reasons, PCIe replays,
 * link generation and width) once a second for H hours of simulated time, through the same path
 * as the coordinator: the 10 s aggregator (coordinator/tseries.c), store_telemetry_insert under
 * deferred commits (one commit per simulated second), retention every simulated minute
 * (store_telemetry_retain). Prints the database's size and rows every hour, the bytes per
 * node-hour, and the time the writes and the retention passes took.
 *
 *   fleetburn-bench-telemetry [NODES] [GPUS] [HOURS] [DB]   # defaults 16 8 12 ./telemetry-bench.db
 *
 * The figures scale with nodes (each node's series are independent); the bench runs a few nodes
 * for a night and the docs multiply. */
#include "store.h"
#include "store_telemetry.h"
#include "tseries.h"
#include "common/util.h"

#include <math.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const s_quantities[] = {"temp_c",   "mem_temp_c",   "power_w",
                                           "power_limit_w", "sm_clock_mhz", "mem_clock_mhz",
                                           "throttle", "pcie_replay",  "pcie_gen",
                                           "pcie_width"};
static const char *const s_units[] = {"C", "C", "W", "W", "MHz", "MHz", "", "", "", ""};

typedef struct {
    store_t *store;
    store_telemetry_t rows[4096];
    size_t n;
    double write_s;
    bool immediate; /* the final flush: the key's strings go with the series, write at once */
} sink_t;

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void s_write(sink_t *s)
{
    if (!s->n)
        return;
    double t0 = s_now();
    if (store_telemetry_insert(s->store, s->rows, s->n)) {
        fprintf(stderr, "insert: %s\n", store_errmsg(s->store));
        exit(1);
    }
    s->write_s += s_now() - t0;
    s->n = 0;
}

static void s_on_bucket(const tseries_key_t *k, const tseries_bucket_t *b, void *arg)
{
    sink_t *s = arg;
    if (s->n == FB_ARRAY_LEN(s->rows))
        s_write(s);
    /* the key's strings live in the aggregator while the series is open: the rows borrow them
     * until s_write, which runs after each second's samples (and at once in the final flush) */
    s->rows[s->n++] = (store_telemetry_t){k->campaign_id, k->node, k->device, k->quantity, k->unit,
                                          b->time_ms, b->span_ms, b->count, b->min, b->max,
                                          tseries_bucket_mean(b)};
    if (s->immediate)
        s_write(s);
}

/* A plausible value: a loaded GPU drifting with a slow wave and a little noise, so that values
 * are not all integral (which SQLite would store in fewer bytes). */
static double s_value(size_t q, unsigned node, unsigned gpu, uint64_t sec)
{
    double wave = sin((double)sec / 600.0 + node * 0.7 + gpu * 0.3);
    double noise = (double)((sec * 2654435761u + q * 40503u + gpu * 977u) % 1000) / 1000.0;
    switch (q) {
    case 0: return 62 + 6 * wave + noise;
    case 1: return 70 + 5 * wave + noise;
    case 2: return 640 + 40 * wave + 10 * noise;
    case 3: return 700;
    case 4: return 1980 - 30 * (wave > 0.8) + noise;
    case 5: return 2619;
    case 6: return wave > 0.9 ? 4 : 0;
    case 7: return 0;
    case 8: return 5;
    default: return 16;
    }
}

static double s_file_mib(const char *path)
{
    struct stat st;
    double total = 0;
    char *p[2] = {xstrdup(path), xasprintf("%s-wal", path)};
    for (int i = 0; i < 2; i++) {
        if (stat(p[i], &st) == 0)
            total += (double)st.st_size;
        free(p[i]);
    }
    return total / (1024.0 * 1024.0);
}

static long long s_rows(const char *path)
{
    sqlite3 *db;
    long long n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM telemetry", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
}

int main(int argc, char **argv)
{
    unsigned nodes = argc > 1 ? (unsigned)atoi(argv[1]) : 16;
    unsigned gpus = argc > 2 ? (unsigned)atoi(argv[2]) : 8;
    unsigned hours = argc > 3 ? (unsigned)atoi(argv[3]) : 12;
    const char *path = argc > 4 ? argv[4] : "telemetry-bench.db";
    if (!nodes || !gpus || !hours) {
        fprintf(stderr, "usage: %s [NODES] [GPUS] [HOURS] [DB]\n", argv[0]);
        return 2;
    }
    unlink(path);
    sink_t sink = {0};
    char *err = NULL;
    if (store_open(path, &sink.store, &err)) {
        fprintf(stderr, "%s: %s\n", path, err);
        return 1;
    }
    const uint64_t t0 = 1800000000000ull;
    store_campaign_create(sink.store, "bench", "telemetry-bench", NULL, NULL, t0);
    store_defer_commits(sink.store, true);
    tseries_agg_t *agg = tseries_agg_new(TSERIES_BUCKET_MS, s_on_bucket, &sink);
    char (*names)[32] = xcalloc(nodes, sizeof *names);
    char dev[64][16];
    for (unsigned n = 0; n < nodes; n++)
        snprintf(names[n], sizeof names[n], "node%04u", n);
    for (unsigned g = 0; g < gpus && g < 64; g++)
        snprintf(dev[g], sizeof dev[g], "gpu%u", g);
    printf("nodes %u, GPUs per node %u, quantities per GPU %zu, 1 sample/s each, %u h simulated\n",
           nodes, gpus, FB_ARRAY_LEN(s_quantities), hours);
    printf("%5s %10s %12s %14s %12s %12s\n", "hour", "MiB", "rows", "bytes/node-h", "write s",
           "retain s");
    double retain_s = 0, prev_mib = 0;
    const uint64_t seconds = (uint64_t)hours * 3600;
    for (uint64_t sec = 0; sec < seconds; sec++) {
        uint64_t t = t0 + sec * 1000;
        for (unsigned n = 0; n < nodes; n++)
            for (unsigned g = 0; g < gpus; g++)
                for (size_t q = 0; q < FB_ARRAY_LEN(s_quantities); q++) {
                    tseries_key_t k = {"bench", names[n], dev[g], s_quantities[q], s_units[q]};
                    tseries_agg_add(agg, &k, t, s_value(q, n, g, sec), sec);
                }
        s_write(&sink);
        if (store_flush(sink.store)) {
            fprintf(stderr, "flush: %s\n", store_errmsg(sink.store));
            return 1;
        }
        if (sec % 60 == 59) {
            double r0 = s_now();
            if (store_telemetry_retain(sink.store, t + 1000, NULL) || store_flush(sink.store)) {
                fprintf(stderr, "retain: %s\n", store_errmsg(sink.store));
                return 1;
            }
            retain_s += s_now() - r0;
        }
        if (sec % 3600 == 3599) {
            sqlite3 *db;
            sqlite3_open(path, &db);
            sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
            sqlite3_close(db);
            double mib = s_file_mib(path);
            printf("%5llu %10.1f %12lld %14.0f %12.1f %12.1f\n",
                   (unsigned long long)(sec + 1) / 3600, mib, s_rows(path),
                   (mib - prev_mib) * 1048576.0 / nodes, sink.write_s, retain_s);
            fflush(stdout);
            prev_mib = mib;
        }
    }
    sink.immediate = true;
    tseries_agg_flush(agg, NULL, NULL, UINT64_MAX);
    store_flush(sink.store);
    tseries_agg_destroy(&agg);
    store_destroy(&sink.store);
    double mib = s_file_mib(path);
    printf("total %.1f MiB for %u node-hours: %.0f bytes per node-hour over the night, "
           "%.0f per GPU-hour\n",
           mib, nodes * hours, mib * 1048576.0 / (nodes * hours),
           mib * 1048576.0 / (nodes * hours * gpus));
    free(names);
    return 0;
}
