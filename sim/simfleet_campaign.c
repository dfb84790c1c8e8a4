/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simfleet's campaign: submitted through the wire like `fleetburn run --coordinator`
 * (Submit, then Progress until it finishes), and at the end the JSON report and the per-stage
 * timings read from the coordinator's store, exactly as `fleetburn report --format json` reads
 * them, with the coordinator's memory and CPU into the summary and the --stats file. */
#include "simfleet.h"

#include "coordinator/report.h"
#include "coordinator/store.h"
#include "common/keys.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zmq.h>

/* ---- the campaign, through the wire like `fleetburn run --coordinator` ---------------------- */

static void s_show_progress(fleet_t *f, const Fleetburn__Progress *p)
{
    uint64_t now = fb_mono_ms();
    if (p->finished) {
        fprintf(stderr, "%scampaign finished: %s\n", f->tty ? "\r\033[K" : "",
                fb_verdict_name((fb_verdict_t)p->verdict));
        return;
    }
    if (now - f->last_print < (f->tty ? 250u : 2000u))
        return;
    f->last_print = now;
    fprintf(stderr, "%s[stage %u/%u %s] %u/%u tasks done, %u failed, %.1f s%s",
            f->tty ? "\r\033[K" : "",
            p->stage_index + 1 > p->stage_count ? p->stage_count : p->stage_index + 1,
            p->stage_count, p->stage, p->tasks_done, p->tasks_total, p->tasks_failed,
            (double)p->elapsed_ms / 1000.0, f->tty ? "" : "\n");
}

static void s_on_progress(fb_zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                          void *arg)
{
    (void)zs;
    fleet_t *f = arg;
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = fb_wire_decode(frames[n - 1], lens[n - 1], &env, err, sizeof err);
    if (rc || env->body_case != FLEETBURN__ENVELOPE__BODY_PROGRESS) {
        fprintf(stderr, "fleetburn-simfleet: unexpected reply from the coordinator: %s\n",
                rc ? err : "not a progress message");
        fb_wire_free(&env);
        return;
    }
    const Fleetburn__Progress *p = env->progress;
    if (p->error[0]) {
        fprintf(stderr, "fleetburn-simfleet: the coordinator refused the campaign: %s\n", p->error);
        simfleet_stop(f, strncmp(p->error, "busy", 4) ? EXIT_USAGE : EXIT_INFRA);
    } else if (f->phase == S_RUNNING) {
        if (!f->campaign_id && p->campaign_id[0])
            f->campaign_id = xstrdup(p->campaign_id);
        s_show_progress(f, p);
        if (p->finished) {
            f->t_finished = fb_mono_ms();
            f->verdict = (fb_verdict_t)p->verdict;
            simfleet_stop(f, fb_verdict_ok(f->verdict) ? EXIT_PASS : EXIT_FAILED);
        }
    }
    fb_wire_free(&env);
}

int simfleet_submit(fleet_t *f)
{
    void *sock = fb_zsock_new_socket(f->zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    char kerr[512];
    if (sock && f->operator_key &&
        fb_key_apply_client(sock, f->operator_key, f->server_key, kerr, sizeof kerr)) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", kerr);
        zmq_close(sock);
        return -EIO;
    }
    if (!sock || zmq_connect(sock, f->endpoint) != 0) {
        fprintf(stderr, "fleetburn-simfleet: cannot connect to %s: %s\n", f->endpoint,
                zmq_strerror(errno));
        if (sock)
            zmq_close(sock);
        return -EIO;
    }
    f->client = fb_zsock_new(f->loop, sock, s_on_progress, f);
    size_t len = 0;
    uint8_t *buf = campaign_file_encode_submit(f->campaign_file, &len);
    const void *frames[] = {buf};
    int rc = fb_zsock_send(f->client, frames, &len, 1);
    free(buf);
    if (rc) {
        fprintf(stderr, "fleetburn-simfleet: cannot submit the campaign: %s\n", zmq_strerror(-rc));
        return -EIO;
    }
    f->t_submit = fb_mono_ms();
    fprintf(stderr, "submitted %s to the coordinator\n", f->cli->campaign);
    return 0;
}

/* ---- the fleet, as the coordinator records it ----------------------------------------------- */

/* Read from the database like `fleetburn nodes` or `sqlite3 -readonly` (docs/timeline-store.md:
 * the agents table, state alive), in one cheap query instead of every row with its inventory:
 * names of one fleet have one width, so they sort as their numbers do. */
int simfleet_count_fleet(fleet_t *f, size_t *alive)
{
    if (!f->fleet_db) {
        sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_busy_timeout(db, 1000);
        if (rc == SQLITE_OK)
            rc = sqlite3_prepare_v2(db,
                                    "SELECT count(*) FROM agents WHERE state = 'alive' AND "
                                    "name >= ?1 AND name <= ?2",
                                    -1, &f->fleet_count, NULL);
        if (rc != SQLITE_OK) {
            fprintf(stderr, "fleetburn-simfleet: cannot read %s: %s\n", f->db,
                    db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
            sqlite3_finalize(f->fleet_count);
            f->fleet_count = NULL;
            sqlite3_close(db);
            return -EIO;
        }
        f->fleet_db = db;
        sqlite3_bind_text(f->fleet_count, 1, f->names[0], -1, SQLITE_STATIC);
        sqlite3_bind_text(f->fleet_count, 2, f->names[f->cli->fleet - 1], -1, SQLITE_STATIC);
    }
    int rc = sqlite3_step(f->fleet_count);
    if (rc == SQLITE_ROW)
        *alive = (size_t)sqlite3_column_int64(f->fleet_count, 0);
    sqlite3_reset(f->fleet_count);
    /* Busy (the coordinator holds a write lock past the timeout): try again at the next poll. */
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        return -EAGAIN;
    return rc == SQLITE_ROW ? 0 : -EIO;
}

void simfleet_close_fleet_db(fleet_t *f)
{
    sqlite3_finalize(f->fleet_count);
    f->fleet_count = NULL;
    sqlite3_close(f->fleet_db);
    f->fleet_db = NULL;
}

/* ---- the end --------------------------------------------------------------------------------- */

int simfleet_write_report(fleet_t *f)
{
    store_t *store = NULL;
    char *err = NULL;
    if (store_open_existing(f->db, &store, &err)) {
        fprintf(stderr, "fleetburn-simfleet: cannot open %s: %s\n", f->db, err ? err : "?");
        free(err);
        return -EIO;
    }
    bool to_stdout = !strcmp(f->cli->report, "-");
    FILE *out = to_stdout ? stdout : fopen(f->cli->report, "w");
    int rc = out ? report_write_json(store, f->campaign_id, out) : -errno;
    if (out && !to_stdout && fclose(out) != 0 && rc == 0)
        rc = -EIO;
    if (rc)
        fprintf(stderr, "fleetburn-simfleet: cannot write the report to %s: %s\n", f->cli->report,
                strerror(-rc));
    store_destroy(&store);
    return rc;
}

/* Timings per stage from the coordinator's own records: stage start (before its tasks were
 * created) to the last result stored; and the simulated time the stage stands for. */
static void s_report_stages(fleet_t *f, FILE *stats)
{
    store_t *store = NULL;
    store_campaign_t *c = NULL;
    if (store_open_existing(f->db, &store, NULL) ||
        store_campaign_load(store, f->campaign_id, &c)) {
        store_destroy(&store);
        return;
    }
    double sim_total = 0;
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *st = &c->stages[s];
        uint64_t last = 0;
        size_t results = 0;
        double sim_s = 0;
        for (size_t t = 0; t < st->n_tasks; t++)
            for (size_t r = 0; r < st->tasks[t].n_results; r++) {
                const store_result_t *res = &st->tasks[t].results[r];
                const fb_metric_t *m = fb_result_metric(res->result, "sim.duration_s");
                results++;
                if (res->received_ms > last)
                    last = res->received_ms;
                if (m && m->value > sim_s)
                    sim_s = m->value;
            }
        sim_total += sim_s;
        double stored_s = last && st->started_ms ? (double)(last - st->started_ms) / 1000.0 : -1;
        double stage_s = st->finished_ms && st->started_ms
                             ? (double)(st->finished_ms - st->started_ms) / 1000.0
                             : -1;
        fprintf(stderr,
                "stage %s: %zu tasks, %zu results, every result stored %.2f s after the "
                "stage started (stage %.2f s); simulated %.0f s\n",
                st->name, st->n_tasks, results, stored_s, stage_s, sim_s);
        if (stats)
            fprintf(stats,
                    "stage.%s.tasks=%zu\nstage.%s.results=%zu\nstage.%s.stored_s=%.3f\n"
                    "stage.%s.stage_s=%.3f\nstage.%s.sim_s=%.0f\n",
                    st->name, st->n_tasks, st->name, results, st->name, stored_s, st->name, stage_s,
                    st->name, sim_s);
    }
    fprintf(stderr, "simulated time of the campaign: %.0f s (the sum of its stages)\n", sim_total);
    if (stats)
        fprintf(stats, "sim_total_s=%.0f\n", sim_total);
    store_campaign_destroy(&c);
    store_destroy(&store);
}

void simfleet_summary(fleet_t *f)
{
    FILE *stats = f->cli->stats ? fopen(f->cli->stats, "w") : NULL;
    if (f->cli->stats && !stats)
        fprintf(stderr, "fleetburn-simfleet: cannot write %s: %s\n", f->cli->stats,
                strerror(errno));
    if (stats) {
        fprintf(stats, "agents=%u\nfirst=%u\nfleet=%u\n", f->cli->agents, f->cli->first,
                f->cli->fleet);
        if (f->t_registered)
            fprintf(stats, "register_s=%.3f\nstart_unix_ms=%llu\nregistered_unix_ms=%llu\n",
                    (double)(f->t_registered - f->t_agents) / 1000.0,
                    (unsigned long long)f->unix_agents, (unsigned long long)f->unix_registered);
        if (f->t_fleet)
            fprintf(stats, "fleet_register_s=%.3f\nfleet_registered_unix_ms=%llu\n",
                    (double)(f->t_fleet - f->t_agents) / 1000.0, (unsigned long long)f->unix_fleet);
    }
    if (f->t_finished && f->t_submit) {
        fprintf(stderr, "campaign %s: %s after %.2f s\n", f->campaign_id,
                fb_verdict_name(f->verdict), (double)(f->t_finished - f->t_submit) / 1000.0);
        if (stats)
            fprintf(stats, "campaign_s=%.3f\nverdict=%s\n",
                    (double)(f->t_finished - f->t_submit) / 1000.0, fb_verdict_name(f->verdict));
    }
    if (f->campaign_id)
        s_report_stages(f, stats);
    struct rusage ru;
    if (stats && getrusage(RUSAGE_SELF, &ru) == 0) /* ru_maxrss: KiB on Linux */
        fprintf(stats, "simfleet_peak_rss_mb=%.1f\nsimfleet_cpu_s=%.2f\n",
                (double)ru.ru_maxrss / 1024.0,
                (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    if (f->coord_peak_mb > 0) {
        fprintf(stderr,
                "coordinator memory: %.1f MiB resident with every agent registered, %.1f "
                "MiB at the end, %.1f MiB peak\n",
                f->coord_rss_registered_mb, f->coord_rss_mb, f->coord_peak_mb);
        fprintf(stderr,
                "coordinator CPU time: %.2f s until every agent registered, %.2f s in "
                "all\n",
                f->coord_cpu_registered_s, f->coord_cpu_end_s);
        if (stats)
            fprintf(stats,
                    "coordinator_registered_rss_mb=%.1f\ncoordinator_rss_mb=%.1f\n"
                    "coordinator_peak_rss_mb=%.1f\ncoordinator_cpu_register_s=%.2f\n"
                    "coordinator_cpu_total_s=%.2f\n",
                    f->coord_rss_registered_mb, f->coord_rss_mb, f->coord_peak_mb,
                    f->coord_cpu_registered_s, f->coord_cpu_end_s);
    }
    if (stats)
        fclose(stats);
}
