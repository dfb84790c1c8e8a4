/* SPDX-License-Identifier: Apache-2.0 */
/* Reports read from the timeline store: the JSON report (docs/report-json.md), the text summary
 * people read in the morning, and the `fleetburn nodes` table. Each report reads one consistent
 * snapshot, so it may run while a campaign is still writing.
 *
 * All functions return 0 or negative errno: -ENOENT for an unknown campaign, -EIO when writing
 * to out fails, or the store's error (message in store_errmsg). The store and out are borrowed;
 * nothing is written to out when the campaign cannot be read. Text from nodes (names, errors,
 * findings) is escaped in JSON and has control characters replaced in text output. */
#ifndef FB_REPORT_H
#define FB_REPORT_H

#include "store.h"

#include <stdio.h>

/* The version of the JSON report format ("format_version"); bumped on incompatible changes. */
#define REPORT_JSON_FORMAT_VERSION 1

int report_write_json(store_t *store, const char *campaign_id, FILE *out);
int report_write_text(store_t *store, const char *campaign_id, FILE *out);
/* The `fleetburn nodes` table: name, state, last seen, summary. */
int report_write_nodes(store_t *store, FILE *out);

/* The campaign verdict reports show: "running" while the campaign runs; otherwise "pass" when
 * the recorded verdict (if any) and every task's verdict are pass or skipped, else "fail" (a
 * task without a verdict in a campaign that ended fails it). Borrowed static string. */
const char *report_campaign_verdict(const store_campaign_t *campaign);

#endif
