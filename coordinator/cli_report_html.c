/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn report [ID] --format html [--baseline ID|NAME|latest]`: the HTML report of a
 * campaign on stdout (report_html.c), its allreduce curves drawn against the baseline's when one
 * is named (resolved as `fleetburn compare` resolves it). */
#include "cli.h"
#include "report.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_report_html(cli_t *cli, store_t *store, const char *campaign_id)
{
    char *base = NULL, *why = NULL;
    if (cli->baseline) {
        int rc = cli_baseline_resolve(store, cli->db, cli->baseline, campaign_id, &base, &why);
        if (rc) {
            fprintf(stderr, "fleetburn report: --baseline: %s\n", why ? why : store_errmsg(store));
            free(why);
            return rc == -ENOENT ? EXIT_USAGE : EXIT_INFRA;
        }
    }
    report_html_options_t opts = {.baseline_id = base};
    int rc = report_write_html(store, campaign_id, &opts, stdout);
    free(base);
    if (rc == -EPIPE) /* `fleetburn report | head`: the reader had what it wanted */
        return 0;
    if (rc == -ENOENT) {
        fprintf(stderr, "fleetburn: no campaign '%s' in %s\n", campaign_id, cli->db);
        return EXIT_USAGE;
    }
    if (rc) {
        fprintf(stderr, "fleetburn: cannot report %s: %s\n", campaign_id,
                rc == -EIO ? strerror(EIO) : store_errmsg(store));
        return EXIT_INFRA;
    }
    return 0;
}
