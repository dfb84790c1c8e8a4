/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_campaign_parse: a campaign file as `fleetburn run` reads it and as a Submit carries it
 * to the coordinator. A parsed campaign's node selections are expanded and its parameters read,
 * as the runner does; an error is one line. */
#include "fuzz.h"

#include "common/hostlist.h"
#include "scheduler/campaign.h"

#include <errno.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fb_campaign_t *c = NULL;
    char *error = NULL;
    int rc = fb_campaign_parse((const char *)data, size, "fuzz.yaml", &c, &error);
    if (rc != 0) {
        FZ_CHECK((rc == -EINVAL || rc == -EFBIG) && c == NULL);
        FZ_CHECK(error != NULL && error[0] != '\0' && strchr(error, '\n') == NULL);
        free(error);
        return 0;
    }
    FZ_CHECK(c != NULL && error == NULL && c->n_stages >= 1);
    for (size_t i = 0; i < c->n_stages; i++) {
        const fb_stage_t *s = &c->stages[i];
        FZ_CHECK(s->name && s->workload && s->timeout_ms > 0);
        for (size_t k = 0; k < s->n_params; k++)
            FZ_CHECK(fb_stage_param(s, s->params[k].key) != NULL);
        (void)fb_on_fail_name(s->on_fail);
        bool all = false;
        char **names = NULL;
        size_t n = 0;
        char err[256];
        /* Parsing checked every hostlist, so the runner's expansion cannot fail. */
        rc = fb_stage_nodes(c, s, &all, &names, &n, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "stage %s: %s\n", s->name, err);
        FZ_CHECK(rc == 0);
        hostlist_free(names, n);
    }
    fb_campaign_destroy(&c);
    FZ_CHECK(c == NULL);
    return 0;
}
