/* SPDX-License-Identifier: Apache-2.0 */
/* The text reports people read: the campaign summary printed at the end of `fleetburn run` and
 * by `fleetburn report` (verdict, one table row per task with its key metrics, findings, the
 * diagnosis, why tasks did not pass, software that differs across nodes), and the `fleetburn
 * nodes` table. Text from nodes is cut to a width and has control characters replaced, so that
 * a node cannot write to the operator's terminal. */
#include "report_internal.h"
#include "units.h"
#include "util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Text -------------------------------------------------------------------------------- */

/* A copy safe for a terminal: C0 and C1 control characters and DEL become '?', and at most max
 * characters (UTF-8 code points) are kept, the last one replaced by '~' when cut. */
static char *s_clean(const char *text, size_t max)
{
    if (!text)
        text = "";
    size_t len = strlen(text);
    char *out = xmalloc(len + 1);
    size_t o = 0, chars = 0;
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        bool start = (*p & 0xC0) != 0x80;
        if (start && chars == max) {
            /* Cut: replace the last character with '~'. */
            while (o > 0 && ((unsigned char)out[o - 1] & 0xC0) == 0x80)
                o--;
            if (o > 0)
                o--;
            out[o++] = '~';
            break;
        }
        if (start)
            chars++;
        if (*p < 0x20 || *p == 0x7F) {
            out[o++] = '?';
            p++;
        } else if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
            out[o++] = '?';
            p += 2;
        } else {
            out[o++] = (char)*p++;
        }
    }
    out[o] = '\0';
    return out;
}

/* Display width in characters (UTF-8 code points). */
static size_t s_width(const char *text)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

#define S_COLS_MAX 8
/* Free text (evidence, errors) wraps at this many characters. */
#define S_TEXT_WIDTH 88

/* Splits text into lines of at most width characters, at spaces where it can (a word longer
 * than width is split inside). *lines: heap array of heap strings. */
static size_t s_wrap(const char *text, size_t width, char ***lines)
{
    size_t n = 0, cap = 4;
    *lines = xcalloc(cap, sizeof **lines);
    const char *p = text;
    if (width < 8)
        width = 8;
    do {
        /* the longest prefix of at most width characters, ended at a space when there is one */
        const char *q = p, *cut = NULL;
        size_t chars = 0;
        while (*q && chars < width) {
            q++;
            while (((unsigned char)*q & 0xC0) == 0x80)
                q++;
            chars++;
            if (*q == ' ')
                cut = q;
        }
        const char *end = !*q ? q : cut ? cut : q;
        if (n == cap) {
            cap *= 2;
            *lines = xrealloc(*lines, cap * sizeof **lines);
        }
        (*lines)[n++] = xasprintf("%.*s", (int)(end - p), p);
        p = end;
        while (*p == ' ')
            p++;
    } while (*p);
    return n;
}

typedef struct {
    size_t n_cols;
    const size_t *max; /* per column: wider text wraps onto more lines */
    char **cells;      /* n_rows * n_cols, cleaned */
    size_t n_rows;
} s_table_t;

static void s_table_row(s_table_t *t, const char *const *cols, const size_t *max)
{
    t->max = max;
    t->cells = xrealloc(t->cells, (t->n_rows + 1) * t->n_cols * sizeof *t->cells);
    for (size_t i = 0; i < t->n_cols; i++)
        t->cells[t->n_rows * t->n_cols + i] = s_clean(cols[i], SIZE_MAX);
    t->n_rows++;
}

static void s_table_print(s_table_t *t, FILE *out, const char *indent)
{
    size_t width[S_COLS_MAX] = {0};
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t i = 0; i < t->n_cols; i++) {
            size_t w = s_width(t->cells[r * t->n_cols + i]);
            if (w > t->max[i])
                w = t->max[i];
            if (w > width[i])
                width[i] = w;
        }
    for (size_t r = 0; r < t->n_rows; r++) {
        char **lines[S_COLS_MAX];
        size_t n_lines[S_COLS_MAX], height = 1;
        for (size_t i = 0; i < t->n_cols; i++) {
            n_lines[i] = s_wrap(t->cells[r * t->n_cols + i], width[i], &lines[i]);
            height = n_lines[i] > height ? n_lines[i] : height;
        }
        for (size_t l = 0; l < height; l++) {
            fputs(indent, out);
            size_t last = t->n_cols; /* the last column with text on this line */
            for (size_t i = 0; i < t->n_cols; i++)
                if (l < n_lines[i] && *lines[i][l])
                    last = i;
            for (size_t i = 0; i < t->n_cols && last < t->n_cols && i <= last; i++) {
                const char *cell = l < n_lines[i] ? lines[i][l] : "";
                fputs(cell, out);
                if (i < last)
                    fprintf(out, "%*s", (int)(width[i] - s_width(cell) + 2), "");
            }
            fputc('\n', out);
        }
        for (size_t i = 0; i < t->n_cols; i++) {
            for (size_t l = 0; l < n_lines[i]; l++)
                free(lines[i][l]);
            free(lines[i]);
        }
    }
}

/* text wrapped at width, its first line after a prefix already printed, the others indented by
 * indent spaces. */
static void s_print_wrapped(FILE *out, const char *text, size_t indent, size_t width)
{
    char *clean = s_clean(text, SIZE_MAX);
    char **lines;
    size_t n = s_wrap(clean, width, &lines);
    for (size_t l = 0; l < n; l++) {
        fprintf(out, "%*s%s\n", l ? (int)indent : 0, "", lines[l]);
        free(lines[l]);
    }
    free(lines);
    free(clean);
}

static void s_table_free(s_table_t *t)
{
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->n_rows = 0;
}

/* Metrics worth a column, in order of preference; other metrics fill up to S_KEY_METRICS. */
static const char *const s_key_metric_names[] = {
    "bandwidth_mbs", "busbw_gbs",   "algbw_gbs",     "bandwidth_gbs", "tflops",
    "gflops",        "miscompares", "edac_ce_delta", "edac_ue_delta", "errors",
    /* gpuburn: speed, GEMMs checked by checksums, their cost against the same-run peak */
    "tflops_median", "gemms_checked", "overhead_vs_peak_pct",
};
#define S_KEY_METRICS 3

/* Integral values in full, large ones to one decimal, small ones to four significant digits. */
static void s_format_metric(char *buf, size_t len, const report_metric_t *m)
{
    const char *unit = m->unit ? m->unit : "";
    const char *sep = *unit ? " " : "";
    double v = m->value;
    if (!isfinite(v))
        snprintf(buf, len, "%s=n/a", m->key);
    else if (fabs(v) < 1e15 && v == floor(v))
        snprintf(buf, len, "%s=%.0f%s%s", m->key, v, sep, unit);
    else if (fabs(v) >= 100)
        snprintf(buf, len, "%s=%.1f%s%s", m->key, v, sep, unit);
    else
        snprintf(buf, len, "%s=%.4g%s%s", m->key, v, sep, unit);
}

static char *s_key_metrics(const store_stage_t *stage, const store_task_t *task)
{
    char *headline = report__headline(stage->workload, task);
    if (headline)
        return headline;
    report_metrics_t ms = {0};
    report__task_metrics(task, &ms);
    bool used[64] = {false};
    size_t picked[S_KEY_METRICS], n = 0;
    for (size_t k = 0; k < FB_ARRAY_LEN(s_key_metric_names) && n < S_KEY_METRICS; k++)
        for (size_t i = 0; i < ms.n && i < 64 && n < S_KEY_METRICS; i++)
            if (!used[i] &&
                (!strcmp(ms.items[i].key, s_key_metric_names[k]) ||
                 (!strncmp(ms.items[i].key, s_key_metric_names[k], strlen(s_key_metric_names[k])) &&
                  ms.items[i].key[strlen(s_key_metric_names[k])] == '@'))) {
                used[i] = true;
                picked[n++] = i;
            }
    if (n == 0)
        for (size_t i = 0; i < ms.n && i < 64 && n < 2; i++)
            picked[n++] = i;
    char *text = xstrdup(n ? "" : "-");
    for (size_t i = 0; i < n; i++) {
        char one[160];
        s_format_metric(one, sizeof one, &ms.items[picked[i]]);
        char *joined = xasprintf("%s%s%s", text, i ? ", " : "", one);
        free(text);
        text = joined;
    }
    report__metrics_free(&ms);
    return text;
}

static char *s_join_nodes(const store_task_t *task)
{
    if (task->n_nodes == 0)
        return xstrdup("-");
    if (task->n_nodes > 3)
        return xasprintf("%s,%s +%zu", task->nodes[0], task->nodes[1], task->n_nodes - 2);
    return fb_strjoin(task->nodes, task->n_nodes, ",");
}

static void s_print_field(FILE *out, const char *label, const char *value)
{
    char *clean = s_clean(value, 200);
    fprintf(out, "%-10s%s\n", label, clean);
    free(clean);
}

/* Undecided parts listed one by one (the most suspect first); the rest are counted. */
#define S_UNDECIDED_SHOWN 20

static int s_cmp_confidence(const void *a, const void *b)
{
    const report_suspect_t *x = *(const report_suspect_t *const *)a,
                           *y = *(const report_suspect_t *const *)b;
    double cx = isfinite(x->confidence) ? x->confidence : 2.0;
    double cy = isfinite(y->confidence) ? y->confidence : 2.0;
    return cx > cy ? -1 : (cx < cy ? 1 : strcmp(x->part, y->part));
}

static void s_text_part(const report_suspect_t *sus, FILE *out)
{
    char *part = s_clean(sus->part, 64);
    char *kind = s_clean(sus->kind ? sus->kind : "?", 16);
    char *why = xasprintf(
        "%s  [%s]", sus->summary ? sus->summary : (sus->n_evidence ? sus->evidence[0].what : ""),
        sus->stage && sus->stage->name ? sus->stage->name : "?");
    char conf[16] = "     -";
    if (isfinite(sus->confidence))
        snprintf(conf, sizeof conf, "%.4f", sus->confidence);
    /* the evidence wraps under itself, never cut */
    int lead = fprintf(out, "  %-9s %-24s %-6s %s  ", sus->state == REPORT_BAD ? "BAD" : "UNDECIDED",
                       part, kind, conf);
    s_print_wrapped(out, why, lead > 0 ? (size_t)lead : 0, S_TEXT_WIDTH);
    free(kind);
    free(part);
    free(why);
}

/* Whether part k is one that a count line of state lists: not named bad elsewhere, and for the
 * undecided, only those on watch (the others have a line each). */
static bool s_counted(const report_diag_t *d, size_t k, report_state_t state)
{
    const report_suspect_t *sus = &d->v[k];
    return sus->state == state && !report__diag_bad(d, sus->part) &&
           (state != REPORT_UNDECIDED || sus->on_watch);
}

/* One line per part of a state, counted and the first ones named. */
static void s_text_count(const report_diag_t *d, report_state_t state, const char *label, FILE *out)
{
    size_t count = 0, shown = 0;
    for (size_t k = 0; k < d->n; k++)
        count += s_counted(d, k, state);
    if (!count)
        return;
    fprintf(out, "  %-9s %zu part(s):", label, count);
    for (size_t k = 0; k < d->n && shown < 12; k++)
        if (s_counted(d, k, state)) {
            char *part = s_clean(d->v[k].part, 64);
            fprintf(out, " %s", part);
            free(part);
            shown++;
        }
    fprintf(out, "%s\n", count > shown ? " ..." : "");
}

/* The diagnosis for people: every bad part and the most suspect undecided ones with their
 * summaries; the undecided on watch, the cleared and the passed ones counted and named; how
 * each diagnosis ended. */
static void s_text_diagnosis(const store_campaign_t *c, FILE *out)
{
    report_diag_t d;
    report__diag_build(&d, c);
    if (d.n == 0 && d.n_sessions == 0) {
        report__diag_free(&d);
        return;
    }
    fprintf(out, "\ndiagnosis\n");
    const report_suspect_t **und = xcalloc(d.n + 1, sizeof *und);
    size_t n_und = 0;
    for (size_t k = 0; k < d.n; k++) {
        if (d.v[k].state == REPORT_BAD)
            s_text_part(&d.v[k], out);
        else if (d.v[k].state == REPORT_UNDECIDED && !d.v[k].on_watch)
            und[n_und++] = &d.v[k];
    }
    qsort(und, n_und, sizeof *und, s_cmp_confidence);
    for (size_t k = 0; k < n_und && k < S_UNDECIDED_SHOWN; k++)
        s_text_part(und[k], out);
    if (n_und > S_UNDECIDED_SHOWN)
        fprintf(out, "  undecided %zu more, each at P(bad) %.2g or less (all in the JSON report)\n",
                n_und - S_UNDECIDED_SHOWN,
                isfinite(und[S_UNDECIDED_SHOWN]->confidence) ? und[S_UNDECIDED_SHOWN]->confidence
                                                             : 1.0);
    free(und);
    s_text_count(&d, REPORT_UNDECIDED, "on watch", out);
    s_text_count(&d, REPORT_CLEARED, "cleared", out);
    s_text_count(&d, REPORT_PASSED, "passed", out);
    for (size_t i = 0; i < d.n_sessions; i++) {
        const fb_result_t *r = d.sessions[i].result;
        const fb_metric_t *fu = fb_result_metric(r, "follow_up_rounds");
        char *stage = s_clean(d.sessions[i].stage->name, 64);
        char *why = s_clean(r->error ? r->error : "", 80);
        fprintf(out, "  %-9s %s %s after %.0f follow-up round(s)\n", "session", stage, why,
                fu ? fu->value : 0.0);
        free(stage);
        free(why);
    }
    report__diag_free(&d);
}

/* Why stages did not run, from the campaign's timeline ("net cannot run: ...", "gpu skipped:
 * ..."): the text after the stage's name, by stage. */
typedef struct {
    const store_campaign_t *c;
    char **why; /* by stage index; NULL when none */
} s_stage_notes_t;

static int s_stage_note(const store_event_t *e, void *arg)
{
    s_stage_notes_t *n = arg;
    if (!e->kind || strcmp(e->kind, "stage") || !e->message)
        return 0;
    for (size_t i = 0; i < n->c->n_stages; i++) {
        const char *name = n->c->stages[i].name;
        size_t len = strlen(name);
        const char *rest = e->message + len;
        if (strncmp(e->message, name, len) || rest[0] != ' ')
            continue;
        if (!strncmp(rest, " cannot run: ", 13) || !strncmp(rest, " skipped: ", 10)) {
            free(n->why[i]);
            n->why[i] = xstrdup(rest + 1);
        }
    }
    return 0;
}

static void s_text_report(const store_campaign_t *c, char *const *stage_why, FILE *out)
{
    char a[40], b[40], dur[32];
    const char *verdict = report_campaign_verdict(c);
    char *title = xasprintf("%s%s%s", c->id, c->name ? "  " : "", c->name ? c->name : "");
    s_print_field(out, "campaign", title);
    free(title);
    if (c->source)
        s_print_field(out, "source", c->source);
    char *line = xasprintf("%s (%s)",
                           !strcmp(verdict, "pass")   ? "PASS"
                           : !strcmp(verdict, "fail") ? "FAIL"
                                                      : "RUNNING",
                           c->state ? c->state : "?");
    s_print_field(out, "verdict", line);
    free(line);
    uint64_t end = c->finished_ms ? c->finished_ms : fb_now_ms();
    fb_format_duration(end >= c->started_ms ? end - c->started_ms : 0, dur, sizeof dur);
    line = xasprintf("%s .. %s, %s%s", fb_iso8601(c->started_ms, a, sizeof a),
                     c->finished_ms ? fb_iso8601(c->finished_ms, b, sizeof b) : "now", dur,
                     c->finished_ms ? "" : " so far");
    s_print_field(out, "time", line);
    free(line);

    size_t counts[FB_VERDICT_MAX + 1], total;
    report__count_tasks(c, counts, &total);
    char *tasks = xasprintf("%zu", total);
    for (int v = 1; v <= FB_VERDICT_MAX + 1; v++) {
        int vv = v <= FB_VERDICT_MAX ? v : FB_VERDICT_NONE; /* pending last */
        if (!counts[vv])
            continue;
        char *joined = xasprintf("%s%s %zu %s", tasks, strchr(tasks, ':') ? "," : ":", counts[vv],
                                 fb_verdict_name((fb_verdict_t)vv));
        free(tasks);
        tasks = joined;
    }
    s_print_field(out, "tasks", tasks);
    free(tasks);
    fputc('\n', out);

    /* The table: one row per task (one per stage without tasks). */
    static const size_t max[] = {24, 16, 32, 8, 72, 8};
    s_table_t table = {.n_cols = FB_ARRAY_LEN(max)};
    const char *header[] = {"STAGE", "WORKLOAD", "NODES", "VERDICT", "METRICS", "FINDINGS"};
    s_table_row(&table, header, max);
    size_t n_findings_total = 0, n_errors = 0;
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *stage = &c->stages[s];
        if (stage->n_tasks == 0) {
            const char *row[] = {stage->name,
                                 stage->workload,
                                 "-",
                                 stage->verdict ? fb_verdict_name(stage->verdict) : "-",
                                 stage_why[s] ? stage_why[s] : "-",
                                 "-"};
            s_table_row(&table, row, max);
        }
        for (size_t t = 0; t < stage->n_tasks; t++) {
            const store_task_t *task = &stage->tasks[t];
            size_t nf = 0;
            for (size_t r = 0; r < task->n_results; r++)
                nf += task->results[r].result->n_findings;
            n_findings_total += nf;
            n_errors += task->error != NULL;
            char *nodes = s_join_nodes(task);
            char *metrics = s_key_metrics(stage, task);
            char count[24];
            snprintf(count, sizeof count, "%zu", nf);
            const char *row[] = {stage->name, stage->workload,
                                 nodes,       fb_verdict_name(task->verdict),
                                 metrics,     count};
            s_table_row(&table, row, max);
            free(nodes);
            free(metrics);
        }
    }
    s_table_print(&table, out, "");
    s_table_free(&table);

    if (n_findings_total) {
        fprintf(out, "\nfindings\n");
        static const size_t fmax[] = {48, 10, 72, 64};
        s_table_t ft = {.n_cols = FB_ARRAY_LEN(fmax)};
        for (size_t s = 0; s < c->n_stages; s++)
            for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
                const store_task_t *task = &c->stages[s].tasks[t];
                for (size_t r = 0; r < task->n_results; r++) {
                    const fb_result_t *res = task->results[r].result;
                    for (size_t f = 0; f < res->n_findings; f++) {
                        if (res->findings[f].kind && !strcmp(res->findings[f].kind, "evidence"))
                            continue; /* cited under "diagnosis" */
                        char *where = xasprintf("task %s%s%s", task->id, res->node ? " on " : "",
                                                res->node ? res->node : "");
                        const char *row[] = {res->findings[f].part, res->findings[f].kind,
                                             res->findings[f].what, where};
                        s_table_row(&ft, row, fmax);
                        free(where);
                    }
                }
            }
        s_table_print(&ft, out, "  ");
        s_table_free(&ft);
    }
    s_text_diagnosis(c, out);
    if (n_errors) {
        fprintf(out, "\nwhy tasks did not pass (errors, timeouts, skips)\n");
        for (size_t s = 0; s < c->n_stages; s++)
            for (size_t t = 0; t < c->stages[s].n_tasks; t++) {
                const store_task_t *task = &c->stages[s].tasks[t];
                if (!task->error)
                    continue;
                char *id = s_clean(task->id, 64);
                fprintf(out, "  %s (%s): ", id, fb_verdict_name(task->verdict));
                s_print_wrapped(out, task->error, 4, S_TEXT_WIDTH);
                free(id);
            }
    }
}

static void s_text_fleet(const report_software_t *sw, FILE *out)
{
    bool header = false;
    for (size_t i = 0; i < sw->n;) {
        size_t end = report__sw_component_end(sw, i);
        if (report__sw_differs(sw, i, end)) {
            if (!header)
                fprintf(out, "\nsoftware that differs across nodes\n");
            header = true;
            char *component = s_clean(sw->rows[i].component, 64);
            fprintf(out, "  %s:", component);
            free(component);
            for (size_t k = i; k < end;) {
                char *version = s_clean(sw->rows[k].version, 80);
                fprintf(out, "%s %s on", k == i ? "" : ";", version);
                free(version);
                size_t v = k;
                for (; v < end && !strcmp(sw->rows[v].version, sw->rows[k].version); v++) {
                    char *node = s_clean(sw->rows[v].node, 64);
                    fprintf(out, "%s %s", v == k ? "" : ",", node);
                    free(node);
                }
                k = v;
            }
            fputc('\n', out);
        }
        i = end;
    }
}

int report_write_text(store_t *store, const char *campaign_id, FILE *out)
{
    store_campaign_t *c = NULL;
    int err = store_campaign_load(store, campaign_id, &c);
    if (err)
        return err;
    s_stage_notes_t notes = {c, xcalloc(c->n_stages + 1, sizeof(char *))};
    store_event_foreach(store, campaign_id, s_stage_note, &notes);
    s_text_report(c, notes.why, out);
    for (size_t i = 0; i < c->n_stages; i++)
        free(notes.why[i]);
    free(notes.why);
    report_software_t sw = {0};
    store_software_foreach(store, campaign_id, report__sw_add, &sw);
    s_text_fleet(&sw, out);
    report_env_t env;
    report__env_load(store, campaign_id, &env); /* report_environment.c */
    report__env_text(&env, out);
    report__env_free(&env);
    report__sw_free(&sw);
    report__text_slurm(store, campaign_id, out);
    store_campaign_destroy(&c);
    return report__finish_output(out);
}

/* ---- Nodes ------------------------------------------------------------------------------- */

typedef struct {
    s_table_t table;
    uint64_t now_ms;
} s_nodes_t;

static void s_when(char *buf, size_t len, uint64_t ms, uint64_t now_ms)
{
    char iso[40], ago[32];
    if (!ms) {
        snprintf(buf, len, "never");
        return;
    }
    fb_iso8601(ms, iso, sizeof iso);
    iso[19] = '\0'; /* to the second */
    if (now_ms >= ms)
        snprintf(buf, len, "%sZ (%s ago)", iso, fb_format_duration(now_ms - ms, ago, sizeof ago));
    else
        snprintf(buf, len, "%sZ", iso);
}

static const size_t s_nodes_max[] = {40, 12, 40, 40, 100};

static int s_node_row(const store_agent_t *agent, void *arg)
{
    s_nodes_t *nodes = arg;
    char seen[96], since[96];
    s_when(seen, sizeof seen, agent->last_seen_ms, nodes->now_ms);
    s_when(since, sizeof since, agent->state_since_ms, nodes->now_ms);
    const char *row[] = {agent->name, agent->state, seen, since,
                         agent->summary ? agent->summary : "-"};
    s_table_row(&nodes->table, row, s_nodes_max);
    return 0;
}

int report_write_nodes(store_t *store, FILE *out)
{
    s_nodes_t nodes = {.table = {.n_cols = FB_ARRAY_LEN(s_nodes_max)}, .now_ms = fb_now_ms()};
    const char *header[] = {"NAME", "STATE", "LAST SEEN", "STATE SINCE", "SUMMARY"};
    s_table_row(&nodes.table, header, s_nodes_max);
    int err = store_agent_foreach(store, s_node_row, &nodes);
    if (!err) {
        if (nodes.table.n_rows == 1)
            fprintf(out, "no agent has registered yet\n");
        else
            s_table_print(&nodes.table, out, "");
    }
    s_table_free(&nodes.table);
    return err ? err : report__finish_output(out);
}
