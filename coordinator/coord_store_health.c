/* SPDX-License-Identifier: Apache-2.0 */
/* When the database cannot be written (a full disk, a read-only remount, a lock held too long):
 * docs/operations.md "Store failures".
 *
 * A failed commit rolls back everything written since the previous one, so the campaigns' state
 * in memory is then ahead of what is stored. Nothing is acknowledged: results stay in the agents'
 * spools, which send them again. The running campaigns are frozen (no timer, no event moves them;
 * their watchers are told nothing new, and no campaign is reported finished), submissions are
 * refused, and the store is tried again every second. When a write goes through, the frozen
 * campaigns are rebuilt from what the store holds, exactly as after a coordinator restart
 * (runner_resume), and the results the agents send again land. A store that stays unwritable past
 * the limit ends each frozen campaign for its watchers with `error`, naming the database and the
 * cause; its members still running are cancelled; the campaign is marked `error` in the store once
 * it can be written again (or resumed by the next coordinator that opens it). */
#include "coord_internal.h"
#include "common/log.h"
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_RETRY_MS 1000

bool coord_store_down(const coord_t *self)
{
    return self->store_down;
}

static void s_freeze_all(coord_t *self)
{
    for (campaign_slot_t *s = self->campaigns; s; s = s->next)
        if (s->runner && !s->ended && !s->frozen) {
            runner_freeze(s->runner);
            s->frozen = true;
        }
}

/* The watchers hear that the campaign stopped; its running members are cancelled; the slot
 * ends. Its id is kept to be marked `error` once the store takes writes again. */
static void s_give_up(coord_t *self, campaign_slot_t *slot, const char *why)
{
    runner_abandon(slot->runner, why);
    coord_progress_t p;
    runner_progress(slot->runner, &p);
    p.finished = true;
    p.verdict = FB_VERDICT_ERROR;
    p.state = "error";
    slot->ended = true;
    for (watcher_t *w = slot->watchers; w; w = w->next)
        coord_send_progress(self, w->identity, &p, why, NULL);
    if (slot->cb)
        slot->cb(&p, slot->cb_arg);
    slot->frozen = false;
    runner_destroy(&slot->runner); /* the slot is reaped; its nodes are free again */
    self->given_up = xrealloc(self->given_up, (self->n_given_up + 1) * sizeof *self->given_up);
    self->given_up[self->n_given_up++] = xstrdup(slot->id);
}

static void s_on_retry(uv_timer_t *h);

void coord_store_failed(coord_t *self, int rc)
{
    if (self->store_down)
        return;
    self->store_down = true;
    self->store_down_since = fb_mono_ms();
    snprintf(self->store_error, sizeof self->store_error, "%s", store_errmsg(self->store));
    char limit[32];
    fb_format_duration(self->store_give_up_ms, limit, sizeof limit);
    log_error("cannot write to the database %s: %s (%s); results stay with the agents, campaigns "
              "are held; trying again every second, giving up on them after %s",
              store_path(self->store), self->store_error, strerror(-rc), limit);
    s_freeze_all(self);
    uv_timer_start(&self->store_retry, s_on_retry, S_RETRY_MS, S_RETRY_MS);
}

/* The store took a write again: frozen campaigns continue from what it holds. */
static void s_recovered(coord_t *self)
{
    char down[32];
    fb_format_duration(fb_mono_ms() - self->store_down_since, down, sizeof down);
    self->store_down = false;
    uv_timer_stop(&self->store_retry);
    log_info("the database %s takes writes again after %s; held campaigns continue from it",
             store_path(self->store), down);
    for (size_t i = 0; i < self->n_given_up; i++) {
        coord_event(self, self->given_up[i], NULL, NULL, "campaign",
                    "error: the database could not be written for %s", down);
        store_campaign_end(self->store, self->given_up[i], "error", FB_VERDICT_ERROR, fb_now_ms());
        coord_campaign_alert(self, self->given_up[i]);
        free(self->given_up[i]);
    }
    free(self->given_up);
    self->given_up = NULL;
    self->n_given_up = 0;
    for (campaign_slot_t *s = self->campaigns; s; s = s->next)
        if (s->frozen && !s->ended) {
            s->frozen = false;
            coord_campaign_reload(self, s, down);
        }
}

static void s_on_retry(uv_timer_t *h)
{
    coord_t *self = h->data;
    store_flush(self->store); /* rolls back what the failed attempt left open */
    int rc = store_event(self->store, fb_now_ms(), NULL, NULL, NULL, "store",
                         "trying the database again after a failed write");
    if (rc == 0)
        rc = store_flush(self->store);
    if (rc == 0) {
        s_recovered(self);
        return;
    }
    snprintf(self->store_error, sizeof self->store_error, "%s", store_errmsg(self->store));
    if (fb_mono_ms() - self->store_down_since < self->store_give_up_ms)
        return;
    char limit[32];
    fb_format_duration(self->store_give_up_ms, limit, sizeof limit);
    char *why = xasprintf("cannot write to the database %s for %s: %s; the campaign stopped; the "
                          "agents keep their results",
                          store_path(self->store), limit, self->store_error);
    for (campaign_slot_t *s = self->campaigns; s; s = s->next)
        if (s->frozen && !s->ended)
            s_give_up(self, s, why);
    log_error("%s", why);
    free(why);
}
