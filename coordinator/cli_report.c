/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn report --list` (cli.h): the campaigns a database holds, newest first, in the table
 * (or JSON) of `fleetburn campaigns`, read from the file instead of asked of a coordinator. The
 * nodes column stays empty: a stored campaign holds no nodes. */
#include "cli.h"
#include "store.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Fleetburn__CampaignInfo *infos;
    Fleetburn__CampaignInfo **ptrs;
    size_t n, cap;
} s_list_t;

static int s_add(const store_campaign_t *c, void *arg)
{
    s_list_t *l = arg;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->infos = xrealloc(l->infos, l->cap * sizeof *l->infos);
    }
    Fleetburn__CampaignInfo *info = &l->infos[l->n++];
    fleetburn__campaign_info__init(info);
    info->id = xstrdup(c->id);
    info->name = xstrdup(c->name ? c->name : "");
    info->state = xstrdup(c->state ? c->state : "");
    info->verdict = (Fleetburn__Verdict)c->verdict;
    info->started_ms = c->started_ms;
    info->finished_ms = c->finished_ms;
    info->nodes = "";
    return 0;
}

int cli_report_list(cli_t *cli)
{
    if (cli->n_positional) {
        fprintf(stderr, "fleetburn report --list: takes no campaign id\n");
        return EXIT_USAGE;
    }
    if (strcmp(cli->format, "text") && strcmp(cli->format, "json")) {
        fprintf(stderr, "fleetburn report --list: --format: '%s' is not text or json\n",
                cli->format);
        return EXIT_USAGE;
    }
    store_t *store = cli_open_store(cli->db);
    if (!store)
        return EXIT_INFRA;
    s_list_t l = {0};
    int rc = store_campaign_foreach(store, s_add, &l);
    if (rc < 0) {
        fprintf(stderr, "fleetburn: cannot read %s: %s\n", cli->db, store_errmsg(store));
    } else {
        l.ptrs = xcalloc(l.n + 1, sizeof *l.ptrs);
        for (size_t i = 0; i < l.n; i++)
            l.ptrs[i] = &l.infos[i];
        Fleetburn__CampaignList list = FLEETBURN__CAMPAIGN_LIST__INIT;
        list.campaigns = l.ptrs;
        list.n_campaigns = l.n;
        cli_print_campaigns(&list, !strcmp(cli->format, "json"), fb_now_ms(), stdout);
        fflush(stdout);
    }
    for (size_t i = 0; i < l.n; i++) {
        free(l.infos[i].id);
        free(l.infos[i].name);
        free(l.infos[i].state);
    }
    free(l.infos);
    free(l.ptrs);
    store_destroy(&store);
    return rc < 0 ? EXIT_INFRA : 0;
}
