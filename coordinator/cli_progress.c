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
#include <stdarg.h>
#include <sys/ioctl.h>
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

#define S_DEFAULT_WIDTH 120u

/* A terminal line rewritten in place and not ended yet. One per process (there is one progress
 * on stderr), kept here rather than in a view so that the log hook never points into a frame
 * that has returned. */
static bool s_line_open;

static void s_break_before_log(void *arg)
{
    (void)arg;
    if (s_line_open)
        fputc('\n', stderr);
    s_line_open = false;
}

void cli_progress_init(progress_view_t *view)
{
    memset(view, 0, sizeof *view);
    fb_log_set_before(s_break_before_log, NULL); /* a warning is never glued onto the line */
    view->tty = isatty(STDERR_FILENO);
    view->width = S_DEFAULT_WIDTH;
    struct winsize ws;
    if (view->tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        view->width = ws.ws_col;
}

/* How often a plain (not terminal) line repeats unchanged counts: a tenth of the time elapsed,
 * between 5 s and a minute, so that a short run shows time passing and a night stays readable. */
static uint64_t s_plain_every(uint64_t elapsed_ms)
{
    uint64_t every = elapsed_ms / 10;
    return every < 5000 ? 5000 : every > 60000 ? 60000 : every;
}

static void s_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void s_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

/* "[stage 2/3 gpu] 12/16 done, 1 failed, 3 running, 4m12s elapsed, ETA 1m30s; slowest: node07 41%
 * burn 2/5 (2m01s), ..." */
static void s_format_line(const cli_progress_t *p, char *buf, size_t len)
{
    size_t used = 0;
    char elapsed[32], eta[32], took[32];
    fb_format_duration(p->elapsed_ms, elapsed, sizeof elapsed);
    s_append(buf, len, &used, "[stage %u/%u %s] %u/%u done, %u failed, %u running, %s elapsed",
             p->stage_index + 1, p->stage_count, p->stage, p->done, p->total, p->failed,
             p->running, elapsed);
    if (p->eta_ms && p->running)
        s_append(buf, len, &used, ", ETA %s", fb_format_duration(p->eta_ms, eta, sizeof eta));
    for (size_t i = 0; i < p->n_nodes && i < CLI_PROGRESS_SLOWEST; i++) {
        const cli_node_progress_t *n = &p->nodes[i];
        s_append(buf, len, &used, "%s%s %.0f%%%s%s (%s)", i ? ", " : "; slowest: ", n->node,
                 n->fraction * 100.0, n->phase[0] ? " " : "", n->phase,
                 fb_format_duration(n->elapsed_ms, took, sizeof took));
    }
}

/* Cuts a line to the terminal's width (a wrapped line cannot be rewritten in place). */
static void s_fit(char *buf, unsigned width)
{
    size_t chars = 0;
    for (char *q = buf; *q; q++) {
        if (((unsigned char)*q & 0xC0) == 0x80)
            continue;
        if (++chars == width) {
            *q = '\0';
            return;
        }
    }
}

static void s_show_note(progress_view_t *view, const char *note)
{
    if (!note || !*note || !strcmp(note, view->last_note))
        return;
    snprintf(view->last_note, sizeof view->last_note, "%s", note);
    cli_progress_break(view);
    fprintf(stderr, "%s\n", note);
}

void cli_show_progress(progress_view_t *view, const cli_progress_t *p)
{
    uint64_t now = fb_mono_ms();
    char elapsed[32];
    if (p->finished) {
        s_show_note(view, p->stage_note);
        fb_format_duration(p->elapsed_ms, elapsed, sizeof elapsed);
        if (s_line_open)
            fprintf(stderr, "\r\033[K");
        fprintf(stderr, "campaign finished after %s\n", elapsed);
        s_line_open = false;
        fflush(stderr);
        return;
    }
    s_show_note(view, p->stage_note);
    if (p->stage_index >= p->stage_count || p->total == 0)
        return; /* between stages: the next one's counts come with its tasks */
    bool changed = !view->printed || p->stage_index != view->last_stage ||
                   p->done != view->last_done || p->failed != view->last_failed;
    uint64_t every = view->tty ? 1000 : s_plain_every(p->elapsed_ms);
    if (!changed && now - view->last_print < every)
        return;
    char line[1024];
    s_format_line(p, line, sizeof line);
    if (view->tty) {
        s_fit(line, view->width - 1);
        fprintf(stderr, "\r\033[K%s", line);
    } else {
        fprintf(stderr, "%s\n", line);
    }
    s_line_open = view->tty;
    fflush(stderr);
    view->last_print = now;
    view->last_stage = p->stage_index;
    view->last_done = p->done;
    view->last_failed = p->failed;
    view->printed = true;
}

void cli_progress_break(progress_view_t *view)
{
    (void)view;
    s_break_before_log(NULL);
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
