/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn expect --from NODE`: the expectation a known-good node meets, from its inventory in
 * the timeline store, written as the expect section of a campaign file (scheduler/expect.h
 * fb_expect_from_facts) so that it can be pasted into one. */
#include "cli.h"

#include "store.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_expect(cli_t *cli)
{
    if (!cli->from || cli->n_positional) {
        fprintf(stderr, "fleetburn expect: expected --from NODE (a node of `fleetburn nodes`)\n");
        return EXIT_USAGE;
    }
    store_t *store = NULL;
    char *err = NULL;
    int rc = store_open_existing(cli->db, &store, &err);
    if (rc) {
        fprintf(stderr, "fleetburn expect: %s\n", err ? err : strerror(-rc));
        free(err);
        return rc == -ENOENT ? EXIT_USAGE : EXIT_INFRA;
    }
    fb_node_facts_t facts;
    uint64_t when = 0;
    rc = store_agent_facts(store, cli->from, &facts, NULL, &when);
    if (rc == -ENOENT) {
        char shown[64];
        fprintf(stderr,
                "fleetburn expect: no inventory of node '%s' in %s (`fleetburn nodes` "
                "lists the nodes it knows)\n",
                fb_show_value(cli->from, shown, sizeof shown), cli->db);
    } else if (rc) {
        fprintf(stderr, "fleetburn expect: cannot read %s: %s\n", cli->db, store_errmsg(store));
    } else {
        char iso[40];
        char *comment = xasprintf(
            "what %s had in its inventory of %s (fleetburn expect --from "
            "%s)",
            cli->from, when ? fb_iso8601(when, iso, sizeof iso) : "unknown time", cli->from);
        char *text = fb_expect_from_facts(&facts, comment);
        fputs(text, stdout);
        free(text);
        free(comment);
        fb_node_facts_clear(&facts);
    }
    store_destroy(&store);
    return rc == -ENOENT ? EXIT_USAGE : rc ? EXIT_INFRA : 0;
}
