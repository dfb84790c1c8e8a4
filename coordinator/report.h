/* SPDX-License-Identifier: Apache-2.0 */
/* Reports read from the timeline store: the JSON report (docs/report-json.md), the text summary
 * people read in the morning, and the `fleetburn nodes` table. Each report reads one consistent
 * snapshot, so it may run while a campaign is still writing.
 *
 * All functions return 0 or negative errno: -ENOENT for an unknown campaign, -EPIPE when out is
 * a pipe whose reader has gone (`fleetburn report | head`), -EIO when writing to out fails
 * otherwise, or the store's error (message in store_errmsg). The store and out are borrowed;
 * nothing is written to out when the campaign cannot be read. Text from nodes (names, errors,
 * findings) is escaped in JSON and has control characters replaced in text output. */
#ifndef FB_REPORT_H
#define FB_REPORT_H

#include "store.h"

#include <stdbool.h>
#include <stdio.h>

/* The version of the JSON report format ("format_version"); bumped on incompatible changes. */
#define REPORT_JSON_FORMAT_VERSION 1

int report_write_json(store_t *store, const char *campaign_id, FILE *out);
/* Opens a fleetburn JSON document (the report, the alert, `fleetburn compare --json`): its
 * top-level object, with "format", "format_version", "generator" (fleetburn and its version)
 * and "generated" (now, ISO 8601). The caller writes the rest and closes the object. */
struct fb_json;
void report_json_begin(struct fb_json *j, const char *format, int format_version);
int report_write_text(store_t *store, const char *campaign_id, FILE *out);
/* The HTML report (report_html*.c; docs/operations.md "HTML report"): one self-contained file,
 * no script, SVG charts, nothing fetched when viewed. baseline_id: a campaign whose allreduce
 * bandwidth is drawn next to this one's (NULL: none). live: the view `fleetburn serve --http`
 * serves, which reloads itself while the campaign runs. */
typedef struct {
    const char *baseline_id;
    bool live;
} report_html_options_t;
int report_write_html(store_t *store, const char *campaign_id,
                      const report_html_options_t *opts, FILE *out);
/* The live view's index: the campaigns, newest first (at most max), each linking to
 * campaigns/ID. */
int report_write_html_campaigns(store_t *store, size_t max, FILE *out);
/* For other tools (report_formats.c): JUnit XML, a testsuite per stage and a testcase per task
 * (failing tasks as <failure> with their error and findings; timeout, lost, error and undecided
 * as <error>; skipped as <skipped>), and CSV, one row per metric of each result
 * (campaign,stage,workload,task,node,verdict,metric,value,unit; RFC 4180). */
int report_write_junit(store_t *store, const char *campaign_id, FILE *out);
int report_write_csv(store_t *store, const char *campaign_id, FILE *out);
/* The `fleetburn nodes` table: name, state, last seen, summary. */
int report_write_nodes(store_t *store, FILE *out);

/* The campaign verdict reports show: "running" while the campaign runs; otherwise "pass" when
 * the recorded verdict (if any) and every task's verdict are pass or skipped, else "fail" (a
 * task without a verdict in a campaign that ended fails it). Borrowed static string. */
const char *report_campaign_verdict(const store_campaign_t *campaign);

/* ---- Alerts (report_alert.c; docs/operations.md "Alerts") ------------------------------------ */

/* The version of the alert document's format ("format_version"). */
#define REPORT_ALERT_FORMAT_VERSION 1

/* A regression the end-of-run baseline comparison found, as `fleetburn compare` reports it: the
 * part (node, pair, group), the metric, its baseline and current values, and the relative change
 * of the part and of the fleet's median. Borrowed by the functions below. */
typedef struct {
    const char *part, *metric;
    double base, now, change, fleet_change;
} report_regression_t;

/* The alert triggers (FB_ALERT_* of scheduler/webhook.h) a campaign that ended meets: bad when it
 * finished with verdict fail (a bad part, or a stage that failed) or its diagnosis names a bad
 * part; error when it ended cancelled, interrupted or error; regression when `regressions`. 0 for
 * a campaign that still runs. */
unsigned report_alert_triggers(const store_campaign_t *campaign, bool regressions);
/* The alert document of a campaign (docs/operations.md "Alerts"): one JSON object naming the
 * campaign, its verdict, the triggers it met, its stages, its bad and undecided parts with a
 * one-line summary of their evidence, the failures nothing explains, and the regressions; lists
 * are cut at REPORT_ALERT_LIST_MAX entries (with the totals). Heap text. */
#define REPORT_ALERT_LIST_MAX 50
char *report_alert_json(const store_campaign_t *campaign, unsigned triggers,
                        const report_regression_t *regressions, size_t n_regressions);

#endif
