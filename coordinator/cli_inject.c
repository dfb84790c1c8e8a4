/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn run --local N --inject NODE:[WORKLOAD.]KEY=VALUE`, checked before any agent starts
 * (cli.h cli_check_injections): an injection that names no local agent, a workload the campaign
 * does not run or a parameter that does not exist would inject nothing, and the campaign would
 * pass. The parameter itself is checked by the scheduler (scheduler/inject.h). */
#include "cli.h"
#include "scheduler/campaign.h"
#include "scheduler/inject.h"
#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether node[0..len) names one of run --local's agents, local-0 ... local-(n-1). */
static bool s_local_agent(const char *node, size_t len, unsigned n)
{
    static const char prefix[] = "local-";
    size_t plen = sizeof prefix - 1;
    if (len <= plen || strncmp(node, prefix, plen))
        return false;
    size_t digits = len - plen;
    if (digits > 4 || strspn(node + plen, "0123456789") < digits ||
        (digits > 1 && node[plen] == '0'))
        return false;
    unsigned long i = strtoul(node + plen, NULL, 10);
    return i < n;
}

int cli_check_injections(const cli_t *cli, const fb_campaign_t *campaign)
{
    if (cli->n_inject && cli->coordinator) {
        fprintf(stderr, "fleetburn run: --inject applies to run --local; the agents of a "
                        "coordinator take theirs with fleetburn-agent --allow-fault-injection "
                        "--inject [WORKLOAD.]KEY=VALUE\n");
        return -EINVAL;
    }
    for (size_t i = 0; i < cli->n_inject; i++) {
        const char *spec = cli->inject[i];
        const char *colon = strchr(spec, ':'); /* main.c made sure there is one */
        size_t len = colon ? (size_t)(colon - spec) : 0;
        char err[2048], shown[128];
        if (!s_local_agent(spec, len, cli->local)) {
            char *node = xstrndup(spec, len);
            char agents[64];
            if (cli->local > 1)
                snprintf(agents, sizeof agents, "local-0 to local-%u", cli->local - 1);
            else
                snprintf(agents, sizeof agents, "local-0");
            fprintf(stderr, "fleetburn run: --inject %s: '%s' is not one of the local agents; "
                            "expected %s (--local %u)\n",
                    fb_show_value(spec, shown, sizeof shown), fb_show_value(node, err, 128),
                    agents, cli->local);
            free(node);
            return -EINVAL;
        }
        if (fb_inject_check(colon + 1, campaign, err, sizeof err)) {
            fprintf(stderr, "fleetburn run: --inject %s: %s\n",
                    fb_show_value(spec, shown, sizeof shown), err);
            return -EINVAL;
        }
    }
    return 0;
}
