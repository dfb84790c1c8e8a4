/* SPDX-License-Identifier: Apache-2.0 */
/* What the command line shows of campaigns (cli.h): the progress line of `fleetburn run`,
 * local or remote, and `fleetburn follow`; the table of `fleetburn campaigns`. */
#include "cli.h"
#include "report.h"
#include "conns.h"
#include "common/json.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/securemem.h"
#include "common/units.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

/* --- progress display ----------------------------------------------------------------------- */

void cli_show_progress(progress_view_t *view, const char *stage, unsigned idx, unsigned count,
                       unsigned total, unsigned done, unsigned failed, uint64_t elapsed_ms,
                       bool finished)
{
    uint64_t now = fb_mono_ms();
    bool changed = !view->printed || idx != view->last_stage || done != view->last_done;
    if (!finished && !changed && now - view->last_print < (view->tty ? 1000u : 10000u))
        return;
    char elapsed[32];
    fb_format_duration(elapsed_ms, elapsed, sizeof elapsed);
    if (finished) {
        if (view->tty)
            fprintf(stderr, "\r\033[K");
        fprintf(stderr, "campaign finished after %s\n", elapsed);
        view->line_open = false;
    } else {
        fprintf(stderr, "%s[stage %u/%u %s] %u/%u nodes done, %u failed, %s elapsed%s",
                view->tty ? "\r\033[K" : "", idx + 1 > count ? count : idx + 1, count, stage, done,
                total, failed, elapsed, view->tty ? "" : "\n");
        view->line_open = view->tty;
    }
    fflush(stderr);
    view->last_print = now;
    view->last_stage = idx;
    view->last_done = done;
    view->printed = true;
}

void cli_progress_break(progress_view_t *view)
{
    if (view->line_open)
        fputc('\n', stderr);
    view->line_open = false;
}

/* --- the campaigns table -------------------------------------------------------------------- */

enum { S_ID, S_NAME, S_STATE, S_VERDICT, S_STARTED, S_DURATION, S_NODES, S_COLUMNS };

/* One row's cells, peer text made safe for a terminal. */
typedef struct {
    char cell[S_COLUMNS][256];
} s_row_t;

static bool s_ended(const Fleetburn__CampaignInfo *c)
{
    return strcmp(c->state, "running") && strcmp(c->state, "queued");
}

static void s_row(const Fleetburn__CampaignInfo *c, uint64_t now_ms, s_row_t *r)
{
    fb_log_sanitize(c->id, r->cell[S_ID], sizeof r->cell[S_ID]);
    fb_log_sanitize(c->name[0] ? c->name : "-", r->cell[S_NAME], sizeof r->cell[S_NAME]);
    fb_log_sanitize(c->state, r->cell[S_STATE], sizeof r->cell[S_STATE]);
    snprintf(r->cell[S_VERDICT], sizeof r->cell[S_VERDICT], "%s",
             s_ended(c) ? fb_verdict_name((fb_verdict_t)c->verdict) : "-");
    snprintf(r->cell[S_STARTED], sizeof r->cell[S_STARTED], "-");
    snprintf(r->cell[S_DURATION], sizeof r->cell[S_DURATION], "-");
    if (c->started_ms) {
        time_t t = (time_t)(c->started_ms / 1000);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(r->cell[S_STARTED], sizeof r->cell[S_STARTED], "%Y-%m-%d %H:%M:%S", &tm);
        uint64_t end = c->finished_ms ? c->finished_ms : s_ended(c) ? 0 : now_ms;
        if (end >= c->started_ms)
            fb_format_duration(end - c->started_ms, r->cell[S_DURATION],
                               (int)sizeof r->cell[S_DURATION]);
    }
    fb_log_sanitize(c->nodes[0] ? c->nodes : "-", r->cell[S_NODES], sizeof r->cell[S_NODES]);
}

static void s_print_json(const Fleetburn__CampaignList *list, FILE *out)
{
    fb_json_t *j = fb_json_new(true);
    fb_json_object_begin(j, NULL);
    fb_json_array_begin(j, "campaigns");
    for (size_t i = 0; i < list->n_campaigns; i++) {
        const Fleetburn__CampaignInfo *c = list->campaigns[i];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "id", c->id);
        fb_json_string(j, "name", c->name);
        fb_json_string(j, "state", c->state);
        if (s_ended(c))
            fb_json_string(j, "verdict", fb_verdict_name((fb_verdict_t)c->verdict));
        else
            fb_json_null(j, "verdict");
        if (c->started_ms)
            fb_json_int(j, "started_ms", (int64_t)c->started_ms);
        else
            fb_json_null(j, "started_ms");
        if (c->finished_ms)
            fb_json_int(j, "finished_ms", (int64_t)c->finished_ms);
        else
            fb_json_null(j, "finished_ms");
        fb_json_string(j, "nodes", c->nodes);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_object_end(j);
    fprintf(out, "%s\n", fb_json_text(j));
    fb_json_destroy(&j);
}

void cli_print_campaigns(const Fleetburn__CampaignList *list, bool json, uint64_t now_ms, FILE *out)
{
    if (json) {
        s_print_json(list, out);
        return;
    }
    static const char *const heads[S_COLUMNS] = {"ID",      "NAME",     "STATE", "VERDICT",
                                                 "STARTED", "DURATION", "NODES"};
    s_row_t *rows = xcalloc(list->n_campaigns + 1, sizeof *rows);
    int width[S_COLUMNS];
    for (int k = 0; k < S_COLUMNS; k++)
        width[k] = (int)strlen(heads[k]);
    for (size_t i = 0; i < list->n_campaigns; i++) {
        s_row(list->campaigns[i], now_ms, &rows[i]);
        for (int k = 0; k < S_COLUMNS; k++) {
            int w = (int)strlen(rows[i].cell[k]);
            width[k] = w > width[k] ? w : width[k];
        }
    }
    for (size_t i = 0; i <= list->n_campaigns; i++)
        for (int k = 0; k < S_COLUMNS; k++) {
            const char *cell = i ? rows[i - 1].cell[k] : heads[k];
            if (k + 1 < S_COLUMNS)
                fprintf(out, "%-*s  ", width[k], cell);
            else
                fprintf(out, "%s\n", cell);
        }
    if (!list->n_campaigns)
        fprintf(out, "(no campaigns yet)\n");
    free(rows);
}
