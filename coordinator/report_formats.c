/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign report for other tools (report.h, docs/observability.md): JUnit XML for CI
 * systems (a testsuite per stage, a testcase per task, a failing task a <failure> carrying its
 * error and findings, a task that could not run an <error>), and CSV of the metrics (one row per
 * metric of each result, RFC 4180: CRLF line ends, fields with a comma, quote or line break in
 * double quotes, quotes doubled). */
#include "report.h"
#include "common/result.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int s_out_status(FILE *out)
{
    if (fflush(out) || ferror(out))
        return errno == EPIPE ? -EPIPE : -EIO;
    return 0;
}

/* ---- JUnit XML ----------------------------------------------------------------------------- */

/* Text as XML character data or attribute value: markup escaped, and the control characters
 * XML 1.0 cannot hold (all below 0x20 but tab, line feed, carriage return) as '?'. */
static void s_xml(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: fputc(c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : c, out);
        }
    }
}

static double s_seconds(uint64_t from, uint64_t to)
{
    return to > from ? (double)(to - from) / 1000.0 : 0.0;
}

typedef struct {
    unsigned tests, failures, errors, skipped;
} s_counts_t;

/* JUnit's three outcomes besides a pass: a failure (the hardware failed the test), an error (the
 * test could not be judged: timeout, lost, error, no verdict), skipped. */
static void s_count(s_counts_t *c, fb_verdict_t v)
{
    c->tests++;
    if (v == FB_VERDICT_FAIL)
        c->failures++;
    else if (v == FB_VERDICT_SKIPPED)
        c->skipped++;
    else if (v != FB_VERDICT_PASS)
        c->errors++;
}

static void s_task_nodes(FILE *out, const store_task_t *t)
{
    for (size_t i = 0; i < t->n_nodes; i++) {
        if (i)
            fputc(',', out);
        s_xml(out, t->nodes[i]);
    }
}

/* The findings of every result of t, one per line, and its error. */
static void s_task_evidence(FILE *out, const store_task_t *t)
{
    if (t->error) {
        s_xml(out, t->error);
        fputc('\n', out);
    }
    for (size_t r = 0; r < t->n_results; r++) {
        const fb_result_t *res = t->results[r].result;
        for (size_t f = 0; f < res->n_findings; f++) {
            const fb_finding_t *fd = &res->findings[f];
            s_xml(out, fd->part);
            fputs(" (", out);
            s_xml(out, fd->kind);
            fputs("): ", out);
            s_xml(out, fd->what);
            fputc('\n', out);
        }
    }
}

static void s_task_metrics(FILE *out, const store_task_t *t)
{
    bool any = false;
    for (size_t r = 0; r < t->n_results; r++) {
        const fb_result_t *res = t->results[r].result;
        for (size_t m = 0; m < res->n_metrics; m++) {
            if (!any)
                fputs("      <system-out>", out);
            any = true;
            s_xml(out, res->node);
            fputc(' ', out);
            s_xml(out, res->metrics[m].name);
            fprintf(out, "=%g", res->metrics[m].value);
            if (res->metrics[m].unit && *res->metrics[m].unit) {
                fputc(' ', out);
                s_xml(out, res->metrics[m].unit);
            }
            fputc('\n', out);
        }
    }
    if (any)
        fputs("</system-out>\n", out);
}

/* What a failure says in one line where the task has no error: its first finding. */
static const char *s_first_finding(const store_task_t *t)
{
    for (size_t r = 0; r < t->n_results; r++)
        if (t->results[r].result->n_findings)
            return t->results[r].result->findings[0].what;
    return "";
}

static void s_testcase(FILE *out, const store_campaign_t *c, const store_stage_t *s,
                       const store_task_t *t)
{
    fputs("    <testcase classname=\"fleetburn.", out);
    s_xml(out, c->name);
    fputc('.', out);
    s_xml(out, s->name);
    fputs("\" name=\"", out);
    s_task_nodes(out, t);
    fputs(" ", out);
    s_xml(out, t->id);
    fprintf(out, "\" time=\"%.3f\">\n", s_seconds(t->started_ms, t->finished_ms));
    const char *message = t->error ? t->error : s_first_finding(t);
    if (t->verdict == FB_VERDICT_FAIL || (t->verdict != FB_VERDICT_PASS &&
                                          t->verdict != FB_VERDICT_SKIPPED)) {
        bool failure = t->verdict == FB_VERDICT_FAIL;
        const char *type = t->verdict == FB_VERDICT_NONE ? "undecided" : fb_verdict_name(t->verdict);
        fprintf(out, "      <%s type=\"%s\" message=\"", failure ? "failure" : "error", type);
        s_xml(out, *message ? message : type);
        fputs("\">", out);
        s_task_evidence(out, t);
        fprintf(out, "</%s>\n", failure ? "failure" : "error");
    } else if (t->verdict == FB_VERDICT_SKIPPED) {
        fputs("      <skipped message=\"", out);
        s_xml(out, message);
        fputs("\"/>\n", out);
    }
    s_task_metrics(out, t);
    fputs("    </testcase>\n", out);
}

static void s_timestamp(uint64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

int report_write_junit(store_t *store, const char *campaign_id, FILE *out)
{
    store_campaign_t *c = NULL;
    int rc = store_campaign_load(store, campaign_id, &c);
    if (rc)
        return rc;
    s_counts_t all = {0};
    for (size_t i = 0; i < c->n_stages; i++)
        for (size_t k = 0; k < c->stages[i].n_tasks; k++)
            s_count(&all, c->stages[i].tasks[k].verdict);
    char stamp[32];
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"", out);
    s_xml(out, c->name);
    fputs(" ", out);
    s_xml(out, c->id);
    fprintf(out, "\" tests=\"%u\" failures=\"%u\" errors=\"%u\" skipped=\"%u\" time=\"%.3f\">\n",
            all.tests, all.failures, all.errors, all.skipped,
            s_seconds(c->started_ms, c->finished_ms));
    for (size_t i = 0; i < c->n_stages; i++) {
        const store_stage_t *s = &c->stages[i];
        s_counts_t n = {0};
        for (size_t k = 0; k < s->n_tasks; k++)
            s_count(&n, s->tasks[k].verdict);
        s_timestamp(s->started_ms ? s->started_ms : c->started_ms, stamp, sizeof stamp);
        fputs("  <testsuite name=\"", out);
        s_xml(out, s->name);
        fputs("\" package=\"", out);
        s_xml(out, s->workload);
        fprintf(out,
                "\" tests=\"%u\" failures=\"%u\" errors=\"%u\" skipped=\"%u\" time=\"%.3f\" "
                "timestamp=\"%s\">\n",
                n.tests, n.failures, n.errors, n.skipped, s_seconds(s->started_ms, s->finished_ms),
                stamp);
        for (size_t k = 0; k < s->n_tasks; k++)
            s_testcase(out, c, s, &s->tasks[k]);
        fputs("  </testsuite>\n", out);
    }
    fputs("</testsuites>\n", out);
    store_campaign_destroy(&c);
    return s_out_status(out);
}

/* ---- CSV ----------------------------------------------------------------------------------- */

static void s_csv(FILE *out, const char *s, bool last)
{
    s = s ? s : "";
    if (strpbrk(s, ",\"\r\n")) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
    } else {
        fputs(s, out);
    }
    fputs(last ? "\r\n" : ",", out);
}

int report_write_csv(store_t *store, const char *campaign_id, FILE *out)
{
    store_campaign_t *c = NULL;
    int rc = store_campaign_load(store, campaign_id, &c);
    if (rc)
        return rc;
    fputs("campaign,stage,workload,task,node,verdict,metric,value,unit\r\n", out);
    for (size_t i = 0; i < c->n_stages; i++) {
        const store_stage_t *s = &c->stages[i];
        for (size_t k = 0; k < s->n_tasks; k++) {
            const store_task_t *t = &s->tasks[k];
            for (size_t r = 0; r < t->n_results; r++) {
                const fb_result_t *res = t->results[r].result;
                for (size_t m = 0; m < res->n_metrics; m++) {
                    const fb_metric_t *mt = &res->metrics[m];
                    char value[40] = "";
                    if (isfinite(mt->value))
                        snprintf(value, sizeof value, "%.10g", mt->value);
                    s_csv(out, c->id, false);
                    s_csv(out, s->name, false);
                    s_csv(out, s->workload, false);
                    s_csv(out, t->id, false);
                    s_csv(out, res->node, false);
                    s_csv(out, fb_verdict_name(res->verdict), false);
                    s_csv(out, mt->name, false);
                    s_csv(out, value, false);
                    s_csv(out, mt->unit, true);
                }
            }
        }
    }
    store_campaign_destroy(&c);
    return s_out_status(out);
}
