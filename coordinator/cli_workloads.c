/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn workloads [NAME] [--markdown]`: the workloads a campaign may name and their
 * parameters, from the schema the campaign parser checks against (scheduler/workload_doc.h).
 * --markdown prints the generated part of docs/campaign-file.md. */
#include "cli.h"

#include "common/util.h"
#include "scheduler/workload_doc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* A reader that left the pipe early (`| head`) is not an error. */
static int s_print(char *text)
{
    int rc = fputs(text, stdout) < 0 || fflush(stdout) ? -errno : 0;
    free(text);
    return rc && rc != -EPIPE ? EXIT_INFRA : 0;
}

int cli_workloads(cli_t *cli)
{
    if (cli->n_positional > 1 || (cli->markdown && cli->n_positional)) {
        fprintf(stderr, "fleetburn workloads: expected at most one workload name, or --markdown "
                        "alone\n");
        return EXIT_USAGE;
    }
    if (cli->markdown)
        return s_print(fb_workload_markdown());
    if (cli->n_positional == 0) {
        int rc = s_print(fb_workload_listing());
        if (rc == 0)
            printf("\n`fleetburn workloads NAME` shows a workload's parameters.\n");
        return rc;
    }
    const fb_workload_spec_t *w = fb_workload_find(cli->positional[0]);
    if (!w) {
        char names[512], shown[64];
        fprintf(stderr, "fleetburn workloads: no workload '%s'; expected one of %s\n",
                fb_show_value(cli->positional[0], shown, sizeof shown),
                fb_workload_names(names, sizeof names));
        return EXIT_USAGE;
    }
    return s_print(fb_workload_describe(w, false));
}
