/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report (`fleetburn report --format html`, and the live view of `fleetburn serve
 * --http`): one self-contained file an operator opens in the morning or mails to a vendor. It
 * reads top-down in the order the questions come: what to replace and why (the diagnosis with
 * its evidence), how each stage went, the fleet at a glance (node x stage heatmap, outliers),
 * the timeline of tasks per node, telemetry per GPU, GPU peer-to-peer matrices, allreduce
 * bandwidth against message size (and against a baseline), memory errors by address range.
 *
 * The file carries everything it shows: inline style, SVG charts written by this code, no
 * script, and a Content-Security-Policy that forbids fetching anything, so a report opened
 * offline looks the same and a hostile node name cannot make it load or run anything (every
 * text from the network is escaped as well). This file holds the document, its style, the
 * header, the diagnosis and the stage table; the other sections are in report_html_*.c. */
#include "report_html_internal.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Evidence lines shown per part before the rest fold into a <details>. */
#define S_EVIDENCE_SHOWN 6
/* Failures nothing explains listed before "and N more". */
#define S_UNEXPLAINED_MAX 30

static const char s_style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;"
    "color:#1f2328;background:#f6f8fa}"
    "header{background:#24292f;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}"
    "header .meta{color:#c9d1d9;font-size:13px}main{padding:8px 24px 40px;max-width:1400px}"
    "section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px 16px;"
    "margin:14px 0}h2{font-size:17px;margin:8px 0}h3{font-size:15px;margin:10px 0 4px}"
    "table{border-collapse:collapse;margin:6px 0}th,td{border-bottom:1px solid #d8dee4;"
    "padding:3px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-weight:600}"
    ".v-pass{background:#2e7d32;fill:#2e7d32}.v-fail{background:#c62828;fill:#c62828}"
    ".v-skipped{background:#8c959f;fill:#8c959f}.v-timeout{background:#e65100;fill:#e65100}"
    ".v-lost{background:#6a1b9a;fill:#6a1b9a}.v-error{background:#b71c1c;fill:#b71c1c}"
    ".v-none{background:#0969da;fill:#0969da}.v-out{background:#f9a825;fill:#f9a825}"
    ".v-absent{fill:#eaeef2}.v-cleared{background:#a5d6a7;fill:#a5d6a7}"
    ".muted{color:#57606a}.part{font-family:ui-monospace,monospace;font-weight:600}"
    ".evidence{margin:2px 0 2px 0;padding-left:18px}.evidence li{margin:1px 0}"
    "figure.chart{display:inline-block;margin:6px 12px 6px 0;vertical-align:top}"
    "figcaption{font-weight:600;margin-bottom:2px}"
    "svg.plot{background:#fff}svg text{font:11px system-ui,sans-serif;fill:#1f2328}"
    ".frame{fill:none;stroke:#8c959f}.grid{stroke:#eaeef2}.tick{fill:#57606a}"
    ".axis{fill:#1f2328;font-weight:600}.legend{fill:#1f2328}"
    ".line{fill:none;stroke-width:1.6}.dashed{stroke-dasharray:5 4}"
    ".s0{stroke:#0969da;fill:#0969da}.s1{stroke:#c62828;fill:#c62828}"
    ".s2{stroke:#2e7d32;fill:#2e7d32}.s3{stroke:#8250df;fill:#8250df}"
    ".s4{stroke:#e65100;fill:#e65100}.s5{stroke:#1b7c83;fill:#1b7c83}"
    ".s6{stroke:#9a6700;fill:#9a6700}.s7{stroke:#57606a;fill:#57606a}"
    ".base{stroke:#1f2328;fill:#1f2328}polyline.line,line.line{fill:none}"
    ".cell{stroke:#fff}.cell.empty{fill:#eaeef2}.cellv{font-size:10px;fill:#fff}"
    ".hm rect{stroke:none}.lane{fill:#f6f8fa}.bar{stroke:#fff;stroke-width:.5}"
    ".legendbox{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px}"
    "details summary{cursor:pointer;color:#0969da}";

/* ---- Header and stage table ------------------------------------------------------------------ */

static void s_head(report_html_t *h)
{
    FILE *out = h->out;
    const store_campaign_t *c = h->c;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; img-src data:\">"
          "<meta name=\"viewport\" content=\"width=device-width\">",
          out);
    if (h->live && !strcmp(report_campaign_verdict(c), "running"))
        fputs("<meta http-equiv=\"refresh\" content=\"10\">", out);
    fputs("<title>fleetburn: ", out);
    report__html_text(out, c->name);
    fputs(" ", out);
    report__html_text(out, c->id);
    fprintf(out, "</title><style>%s</style></head>\n<body>\n", s_style);
}

static void s_header(report_html_t *h)
{
    FILE *out = h->out;
    const store_campaign_t *c = h->c;
    const char *verdict = report_campaign_verdict(c);
    fputs("<header id=\"summary\"><h1>", out);
    report__html_text(out, c->name);
    fprintf(out, " <span class=\"badge %s\" id=\"campaign-verdict\">%s</span></h1>",
            !strcmp(verdict, "pass")   ? "v-pass"
            : !strcmp(verdict, "fail") ? "v-fail"
                                       : "v-none",
            verdict);
    char start[40], dur[32];
    uint64_t end = c->finished_ms ? c->finished_ms : fb_now_ms();
    fputs("<div class=\"meta\">campaign ", out);
    report__html_text(out, c->id);
    fprintf(out, " &middot; %s &middot; started %s &middot; %s &middot; %zu node%s",
            c->state ? c->state : "?", fb_iso8601(c->started_ms, start, sizeof start),
            report__html_duration(end > c->started_ms ? end - c->started_ms : 0, dur, sizeof dur),
            h->n_nodes, h->n_nodes == 1 ? "" : "s");
    size_t counts[FB_VERDICT_MAX + 1], total;
    report__count_tasks(c, counts, &total);
    fprintf(out, " &middot; %zu tasks:", total);
    for (int v = 0; v <= FB_VERDICT_MAX; v++)
        if (counts[v])
            fprintf(out, " %zu %s", counts[v], report__html_verdict_name((fb_verdict_t)v));
    if (h->base) {
        fputs(" &middot; compared with ", out);
        report__html_text(out, h->base->id);
    }
    if (h->live)
        fputs(" &middot; <a style=\"color:#fff\" href=\"../\">all campaigns</a>", out);
    fputs("</div></header>\n<main>\n", out);
}

static void s_stages(report_html_t *h)
{
    FILE *out = h->out;
    fputs("<section id=\"stages\"><h2>Stages</h2><table><tr><th>stage</th><th>workload</th>"
          "<th>verdict</th><th>tasks</th><th>duration</th><th>compared on</th></tr>",
          out);
    for (size_t s = 0; s < h->c->n_stages; s++) {
        const store_stage_t *st = &h->c->stages[s];
        size_t by[FB_VERDICT_MAX + 1] = {0};
        for (size_t t = 0; t < st->n_tasks; t++)
            by[st->tasks[t].verdict <= FB_VERDICT_MAX ? st->tasks[t].verdict : FB_VERDICT_ERROR]++;
        fputs("<tr><td>", out);
        report__html_text(out, st->name);
        fputs("</td><td>", out);
        report__html_text(out, st->workload);
        fprintf(out, "</td><td><span class=\"badge %s\">%s</span></td><td>",
                report__html_verdict_class(st->verdict), report__html_verdict_name(st->verdict));
        for (int v = 0; v <= FB_VERDICT_MAX; v++)
            if (by[v])
                fprintf(out, "%zu %s ", by[v], report__html_verdict_name((fb_verdict_t)v));
        char dur[32];
        uint64_t end = st->finished_ms ? st->finished_ms : st->started_ms ? fb_now_ms() : 0;
        fprintf(out, "</td><td class=\"num\">%s</td><td>",
                st->started_ms ? report__html_duration(end - st->started_ms, dur, sizeof dur)
                               : "-");
        report__html_text(out, h->headline[s] ? h->headline[s] : "-");
        fputs("</td></tr>", out);
    }
    fputs("</table></section>\n", out);
}

/* ---- Diagnosis ------------------------------------------------------------------------------- */

static void s_evidence_item(FILE *out, const report_evidence_t *ev)
{
    fputs("<li>", out);
    if (ev->stage) {
        report__html_text(out, ev->stage->name);
        fputs(": ", out);
    }
    if (ev->task) {
        fprintf(out, "<span class=\"badge %s\">%s</span> ",
                report__html_verdict_class(ev->task->verdict),
                report__html_verdict_name(ev->task->verdict));
    }
    fputs("<span class=\"muted\">", out);
    report__html_text(out, ev->task_id);
    fputs("</span> ", out);
    report__html_text(out, ev->what);
    fputs("</li>", out);
}

static void s_evidence(FILE *out, const report_suspect_t *sus)
{
    if (!sus->n_evidence)
        return;
    fputs("<ul class=\"evidence\">", out);
    for (size_t e = 0; e < sus->n_evidence && e < S_EVIDENCE_SHOWN; e++)
        s_evidence_item(out, &sus->evidence[e]);
    fputs("</ul>", out);
    if (sus->n_evidence > S_EVIDENCE_SHOWN) {
        fprintf(out, "<details><summary>%zu more</summary><ul class=\"evidence\">",
                sus->n_evidence - S_EVIDENCE_SHOWN);
        for (size_t e = S_EVIDENCE_SHOWN; e < sus->n_evidence; e++)
            s_evidence_item(out, &sus->evidence[e]);
        fputs("</ul></details>", out);
    }
}

/* Whether a part belongs in the table of state; the undecided on watch have their own. */
static bool s_in_table(const report_html_t *h, const report_suspect_t *sus, report_state_t state,
                       bool watch)
{
    return sus->state == state && sus->on_watch == watch &&
           (state != REPORT_CLEARED || !report__diag_bad(&h->diag, sus->part));
}

static size_t s_parts_in(const report_html_t *h, report_state_t state, bool watch)
{
    size_t n = 0;
    for (size_t k = 0; k < h->diag.n; k++)
        n += s_in_table(h, &h->diag.v[k], state, watch);
    return n;
}

static void s_parts_table(report_html_t *h, report_state_t state, bool watch, const char *id)
{
    FILE *out = h->out;
    fprintf(out,
            "<table id=\"%s\"><tr><th>part</th><th>kind</th><th>confidence</th>"
            "<th>stage</th><th>why</th></tr>",
            id);
    for (size_t k = 0; k < h->diag.n; k++) {
        const report_suspect_t *sus = &h->diag.v[k];
        if (!s_in_table(h, sus, state, watch))
            continue;
        fputs("<tr><td class=\"part\">", out);
        report__html_text(out, sus->part);
        fputs("</td><td>", out);
        report__html_text(out, sus->kind);
        fprintf(out, "</td><td class=\"num\">%.0f%%</td><td>", sus->confidence * 100);
        report__html_text(out, sus->stage ? sus->stage->name : "");
        fputs("</td><td>", out);
        report__html_text(out, sus->summary);
        s_evidence(out, sus);
        fputs("</td></tr>", out);
    }
    fputs("</table>", out);
}

static void s_unexplained(report_html_t *h)
{
    FILE *out = h->out;
    size_t n = 0;
    for (size_t s = 0; s < h->c->n_stages; s++)
        for (size_t t = 0; t < h->c->stages[s].n_tasks; t++)
            n += report__unattributed(&h->c->stages[s], &h->c->stages[s].tasks[t]);
    if (!n)
        return;
    fprintf(out,
            "<h3>Failures no part explains (%zu)</h3><table id=\"unexplained\"><tr>"
            "<th>stage</th><th>task</th><th>nodes</th><th>verdict</th><th>error</th></tr>",
            n);
    size_t shown = 0;
    for (size_t s = 0; s < h->c->n_stages; s++)
        for (size_t t = 0; t < h->c->stages[s].n_tasks && shown < S_UNEXPLAINED_MAX; t++) {
            const store_task_t *task = &h->c->stages[s].tasks[t];
            if (!report__unattributed(&h->c->stages[s], task))
                continue;
            shown++;
            fputs("<tr><td>", out);
            report__html_text(out, h->c->stages[s].name);
            fputs("</td><td>", out);
            report__html_text(out, task->id);
            fputs("</td><td>", out);
            for (size_t i = 0; i < task->n_nodes; i++) {
                report__html_text(out, i ? ", " : "");
                report__html_text(out, task->nodes[i]);
            }
            fprintf(out, "</td><td><span class=\"badge %s\">%s</span></td><td>",
                    report__html_verdict_class(task->verdict),
                    report__html_verdict_name(task->verdict));
            report__html_text(out, task->error);
            fputs("</td></tr>", out);
        }
    fputs("</table>", out);
    if (n > shown)
        fprintf(out,
                "<p class=\"muted\">and %zu more (fleetburn report --format json lists "
                "them all)</p>",
                n - shown);
}

static void s_cleared(report_html_t *h)
{
    FILE *out = h->out;
    size_t n = s_parts_in(h, REPORT_CLEARED, false);
    if (!n)
        return;
    fprintf(out,
            "<details id=\"cleared\"><summary>%zu part%s cleared by their own passes"
            "</summary><p>",
            n, n == 1 ? "" : "s");
    bool first = true;
    for (size_t k = 0; k < h->diag.n; k++) {
        const report_suspect_t *sus = &h->diag.v[k];
        if (sus->state != REPORT_CLEARED || report__diag_bad(&h->diag, sus->part))
            continue;
        fputs(first ? "" : ", ", out);
        report__html_text(out, sus->part);
        first = false;
    }
    fputs("</p></details>", out);
}

/* How each stage's diagnosis session ended: decided, or which budget ran out. */
static void s_sessions(report_html_t *h)
{
    if (!h->diag.n_sessions)
        return;
    fputs("<ul id=\"sessions\" class=\"muted\">", h->out);
    for (size_t i = 0; i < h->diag.n_sessions; i++) {
        const fb_result_t *r = h->diag.sessions[i].result;
        const fb_metric_t *fu = fb_result_metric(r, "follow_up_rounds");
        fputs("<li>diagnosis of stage ", h->out);
        report__html_text(h->out, h->diag.sessions[i].stage->name);
        fputs(": ", h->out);
        report__html_text(h->out, r->error ? r->error : "");
        fprintf(h->out, " after %.0f follow-up round%s</li>", fu ? fu->value : 0.0,
                fu && fu->value == 1 ? "" : "s");
    }
    fputs("</ul>", h->out);
}

static void s_diagnosis(report_html_t *h)
{
    FILE *out = h->out;
    size_t bad = s_parts_in(h, REPORT_BAD, false);
    size_t undecided = s_parts_in(h, REPORT_UNDECIDED, false);
    size_t watch = s_parts_in(h, REPORT_UNDECIDED, true);
    fputs("<section id=\"diagnosis\"><h2>What to replace</h2>", out);
    if (bad) {
        fprintf(out, "<p>%zu part%s to replace or repair, each with the tests it rests on.</p>",
                bad, bad == 1 ? "" : "s");
        s_parts_table(h, REPORT_BAD, false, "replace");
    } else if (!strcmp(report_campaign_verdict(h->c), "running")) {
        fputs("<p id=\"replace-none\">No part named yet: the campaign is still running.</p>", out);
    } else {
        fputs("<p id=\"replace-none\">Nothing to replace: no test named a bad part.</p>", out);
    }
    if (undecided) {
        fprintf(out,
                "<h3>Undecided (%zu): the evidence does not separate these from chance"
                "</h3>",
                undecided);
        s_parts_table(h, REPORT_UNDECIDED, false, "undecided");
    }
    if (watch) {
        fprintf(out,
                "<h3>On watch (%zu): failed, then passed enough to rule out a steady fault; a "
                "fault in bursts cannot be ruled out by passes</h3>",
                watch);
        s_parts_table(h, REPORT_UNDECIDED, true, "on-watch");
    }
    s_sessions(h);
    s_unexplained(h);
    s_cleared(h);
    fputs("</section>\n", out);
}

/* ---- The document ---------------------------------------------------------------------------- */

static void s_footer(report_html_t *h)
{
    char now[40];
    fprintf(h->out,
            "<p class=\"muted\">fleetburn %s &middot; written %s &middot; the full data: "
            "<code>fleetburn report ",
            FB_VERSION, fb_iso8601(fb_now_ms(), now, sizeof now));
    report__html_text(h->out, h->c->id);
    fputs(" --format json</code></p>\n</main></body></html>\n", h->out);
}

static void s_document(report_html_t *h)
{
    s_head(h);
    s_header(h);
    s_diagnosis(h);
    report__html_compare(h);
    s_stages(h);
    report__html_fleet(h);
    report__html_timeline(h);
    report__html_telemetry(h);
    report__html_p2p(h);
    report__html_allreduce(h);
    report__html_memory(h);
    s_footer(h);
}

int report_write_html(store_t *store, const char *campaign_id, const report_html_options_t *opts,
                      FILE *out)
{
    store_campaign_t *c = NULL, *base = NULL;
    int err = store_campaign_load(store, campaign_id, &c);
    if (err)
        return err;
    if (opts && opts->baseline_id && (err = store_campaign_load(store, opts->baseline_id, &base))) {
        store_campaign_destroy(&c);
        return err;
    }
    report_html_t h = {
        .out = out, .store = store, .c = c, .base = base, .live = opts && opts->live};
    report__diag_build(&h.diag, c);
    report__html_nodes_build(&h);
    s_document(&h);
    report__html_nodes_free(&h);
    report__diag_free(&h.diag);
    store_campaign_destroy(&base);
    store_campaign_destroy(&c);
    return report__finish_output(out);
}

/* ---- The live view's index ------------------------------------------------------------------- */

typedef struct {
    FILE *out;
    size_t left;
} s_index_t;

static int s_index_row(const store_campaign_t *c, void *arg)
{
    s_index_t *ix = arg;
    if (!ix->left)
        return 1;
    ix->left--;
    char start[40], dur[32];
    const char *verdict = report_campaign_verdict(c);
    uint64_t end = c->finished_ms ? c->finished_ms : fb_now_ms();
    fputs("<tr><td><a href=\"campaigns/", ix->out);
    report__html_text(ix->out, c->id);
    fputs("\">", ix->out);
    report__html_text(ix->out, c->id);
    fputs("</a></td><td>", ix->out);
    report__html_text(ix->out, c->name);
    fprintf(ix->out,
            "</td><td>%s</td><td><span class=\"badge %s\">%s</span></td><td>%s</td>"
            "<td class=\"num\">%s</td></tr>",
            c->state ? c->state : "?",
            !strcmp(verdict, "pass")   ? "v-pass"
            : !strcmp(verdict, "fail") ? "v-fail"
                                       : "v-none",
            verdict, fb_iso8601(c->started_ms, start, sizeof start),
            report__html_duration(end > c->started_ms ? end - c->started_ms : 0, dur, sizeof dur));
    return 0;
}

int report_write_html_campaigns(store_t *store, size_t max, FILE *out)
{
    fprintf(out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; img-src data:\"><meta http-equiv=\"refresh\" "
            "content=\"10\"><title>fleetburn campaigns</title><style>%s</style></head>\n<body>"
            "<header><h1>fleetburn campaigns</h1><div class=\"meta\">newest first; this page "
            "reloads every 10 s; metrics at <a style=\"color:#fff\" href=\"metrics\">/metrics"
            "</a></div></header><main><section id=\"campaigns\"><table><tr><th>campaign</th>"
            "<th>name</th><th>state</th><th>verdict</th><th>started</th><th>duration</th></tr>",
            s_style);
    s_index_t ix = {out, max};
    int rc = store_campaign_foreach(store, s_index_row, &ix);
    if (rc < 0)
        return rc;
    fputs("</table></section></main></body></html>\n", out);
    return report__finish_output(out);
}
