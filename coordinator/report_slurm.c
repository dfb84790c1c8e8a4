/* SPDX-License-Identifier: Apache-2.0 */
/* The "slurm" section of the text report: what the campaign's Slurm selections resolved to and
 * what actions.slurm did, would do (dry run) or refused (the breaker), from the campaign's
 * timeline events of kind "slurm" (coordinator/slurm_actions.c). */
#include "report_internal.h"
#include "log.h"

#include <stdbool.h>
#include <string.h>

typedef struct {
    FILE *out;
    bool header;
} s_slurm_text_t;

static int s_event(const store_event_t *e, void *arg)
{
    s_slurm_text_t *t = arg;
    if (!e->kind || strcmp(e->kind, "slurm") || !e->message)
        return 0;
    if (!t->header)
        fprintf(t->out, "\nslurm\n");
    t->header = true;
    char line[1024];
    fb_log_sanitize(e->message, line, sizeof line);
    fprintf(t->out, "  %s\n", line);
    return 0;
}

int report__text_slurm(store_t *store, const char *campaign_id, FILE *out)
{
    s_slurm_text_t t = {out, false};
    return store_event_foreach(store, campaign_id, s_event, &t);
}
