/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's side of webhook alerts (docs/operations.md "Alerts"): a campaign that asks
 * for a webhook this coordinator cannot post (its host not allowed, no libcurl) is refused when
 * it is submitted, and when a campaign ends, its alert is built from the store (report_alert.c)
 * and queued (webhook_queue.c) if the end meets the campaign's triggers.
 *
 * The alert is queued from what the store holds, not from the runner: a campaign ends in several
 * places (its runner finishes or is cancelled; one that cannot be resumed after a restart is
 * interrupted; one held while the database could not be written ends in error), and each calls
 * coord_campaign_alert once its end is recorded. The campaign's actions come from its stored
 * text, which is what it ran with. */
#include "compare.h"
#include "coord_internal.h"
#include "report.h"
#include "webhook_queue.h"
#include "common/log.h"
#include "common/util.h"
#include "scheduler/actions.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int coord_campaign_alert_check(coord_t *self, const fb_campaign_t *campaign, char **error_out)
{
    const fb_webhook_t *hook = campaign->actions.webhook;
    if (!hook)
        return 0;
    char why[512];
    int rc = webhook_queue_may_post(self->webhooks, hook->url, why, sizeof why);
    if (rc == 0)
        return 0;
    const char *expected =
        rc == -ENOTSUP ? "actions.webhook removed, or a coordinator built with libcurl "
                         "(libcurl4-openssl-dev)"
        : rc == -EPERM ? "a host this coordinator allows; its administrator adds hosts with "
                         "fleetburn serve --webhook-allow HOST"
                       : "an http:// or https:// URL";
    if (error_out)
        *error_out = xasprintf("%s:%d: actions.webhook.url: %s; expected %s", campaign->source,
                               hook->line, why, expected);
    return -EINVAL;
}

/* ---- regressions -------------------------------------------------------------------------- */

/* The regressions of campaign_id against the previous finished campaign of the same name
 * (what `--baseline latest` stands for), judged as `fleetburn compare` judges them, for a webhook
 * that listens for `regression`: the alert's `regressions` list and its trigger. None when it is
 * the first campaign of its name, or the two cannot be compared (logged). Each part and metric is
 * a heap copy that s_regressions_free frees. The coordinator compares with `latest` because the
 * alert is its own: `run --baseline NAME` compares on the client, with any baseline, and its exit
 * status says so. */
static size_t s_campaign_regressions(coord_t *self, const char *campaign_id,
                                     const fb_webhook_t *hook, report_regression_t **out)
{
    *out = NULL;
    if (!(hook->on & FB_ALERT_REGRESSION))
        return 0;
    char *name = NULL, *base = NULL;
    uint64_t started = 0;
    if (store_campaign_head(self->store, campaign_id, &name, NULL, &started) || !name ||
        store_campaign_previous(self->store, name, started, campaign_id, &base)) {
        free(name);
        return 0; /* the first campaign of its name: nothing to compare with */
    }
    free(name);
    compare_t *cmp = NULL;
    char *err = NULL;
    if (compare_campaigns(self->store, base, campaign_id, &cmp, &err)) {
        log_warn("campaign %s: cannot compare it with %s for its alert: %s", campaign_id, base,
                 err ? err : "unknown error");
        free(err);
        free(base);
        return 0;
    }
    free(base);
    size_t n = cmp->n_regressions;
    report_regression_t *regs = n ? xcalloc(n, sizeof *regs) : NULL;
    for (size_t i = 0; i < n; i++) {
        const compare_item_t *r = &cmp->regressions[i];
        regs[i] = (report_regression_t){xstrdup(r->part), xstrdup(r->metric), r->base, r->now,
                                        r->change, r->fleet_change};
    }
    compare_destroy(&cmp);
    *out = regs;
    return n;
}

static void s_regressions_free(report_regression_t *regs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)regs[i].part);
        free((char *)regs[i].metric);
    }
    free(regs);
}

/* ---- a campaign ended --------------------------------------------------------------------- */

/* The webhook of a stored campaign's text, or NULL (no actions.webhook, or a text that no longer
 * parses, which a campaign that ran cannot have). *parsed owns it. */
static const fb_webhook_t *s_stored_webhook(const store_campaign_t *c, fb_campaign_t **parsed)
{
    char *err = NULL;
    if (fb_campaign_parse(c->yaml ? c->yaml : "", c->yaml ? strlen(c->yaml) : 0,
                          c->source ? c->source : "stored campaign", parsed, &err)) {
        log_warn("campaign %s: its stored text does not parse (%s): no alert", c->id,
                 err ? err : "unknown error");
        free(err);
        return NULL;
    }
    return (*parsed)->actions.webhook;
}

/* Queues the alert of c; its first attempt follows the commit that stores it. */
static void s_queue(coord_t *self, const store_campaign_t *c, const fb_webhook_t *hook,
                    unsigned fired, const report_regression_t *regs, size_t n_regs)
{
    char *origin = fb_webhook_url_origin(hook->url), names[64];
    char *doc = report_alert_json(c, fired, regs, n_regs);
    int rc = webhook_queue_enqueue(self->webhooks, c->id, hook, doc);
    if (rc == -EEXIST) {
        log_debug("campaign %s: its alert to %s was queued already", c->id, origin);
    } else if (rc) {
        log_error("campaign %s: cannot queue its webhook alert to %s: %s", c->id, origin,
                  store_errmsg(self->store));
    } else {
        coord_event(self, c->id, NULL, NULL, "webhook", "webhook to %s queued: the campaign met %s",
                    origin, fb_alert_trigger_list(fired, names, sizeof names));
        /* Posted after the next commit (coord_flush), never before the alert is on disk: a
         * coordinator that dies first posts it when it starts again. */
        self->webhooks_queued = true;
    }
    free(doc);
    free(origin);
}

void coord_campaign_alert(coord_t *self, const char *campaign_id)
{
    store_campaign_t *c = NULL;
    if (store_campaign_load(self->store, campaign_id, &c)) {
        log_error("campaign %s: cannot read it for its alert: %s", campaign_id,
                  store_errmsg(self->store));
        return;
    }
    fb_campaign_t *parsed = NULL;
    const fb_webhook_t *hook = s_stored_webhook(c, &parsed);
    if (hook) {
        report_regression_t *regs = NULL;
        size_t n_regs = s_campaign_regressions(self, campaign_id, hook, &regs);
        unsigned met = report_alert_triggers(c, n_regs > 0);
        char on[64], *origin = fb_webhook_url_origin(hook->url);
        if (met & hook->on)
            s_queue(self, c, hook, met & hook->on, regs, n_regs);
        else
            coord_event(self, c->id, NULL, NULL, "webhook",
                        "webhook to %s not sent: the campaign ended %s, verdict %s, which meets "
                        "none of its triggers (on: %s)",
                        origin, c->state, report_campaign_verdict(c),
                        fb_alert_trigger_list(hook->on, on, sizeof on));
        free(origin);
        s_regressions_free(regs, n_regs);
    }
    fb_campaign_destroy(&parsed);
    store_campaign_destroy(&c);
}

size_t coord_webhooks_in_flight(const coord_t *self)
{
    return webhook_queue_in_flight(self->webhooks);
}
