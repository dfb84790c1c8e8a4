/* SPDX-License-Identifier: Apache-2.0 */
/* The coordinator's health in plain numbers (coord.h coord_health_t): how many agents are
 * connected, campaigns running and queued, whether the store takes writes, what waits to be
 * acknowledged or posted, and how many messages were dropped. Taken on the loop thread; the HTTP
 * listener (http_serve.c) exports a copy on /metrics. */
#include "coord_internal.h"
#include "util.h"

#include <string.h>

void coord_health(const coord_t *self, coord_health_t *out)
{
    memset(out, 0, sizeof *out);
    out->agents_connected = coord_alive_count(self);
    out->agents_known = fb_strmap_size(self->nodes);
    for (const campaign_slot_t *slot = self->campaigns; slot; slot = slot->next) {
        if (slot->ended)
            continue;
        if (slot->queued)
            out->campaigns_queued++;
        else
            out->campaigns_running++;
    }
    out->store_up = !self->store_down;
    out->store_down_ms = self->store_down ? fb_mono_ms() - self->store_down_since : 0;
    out->results_unacknowledged = self->n_acks;
    out->webhooks_in_flight = coord_webhooks_in_flight(self);
    out->messages_dropped = self->n_bad;
    out->messages_foreign = self->n_foreign;
}
