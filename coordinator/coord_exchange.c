/* SPDX-License-Identifier: Apache-2.0 */
/* The exchange relay of group tasks (docs/protocol.md): a post is accepted only from the node
 * that holds that rank of a group task that is still running, goes to the broker
 * (scheduler/rendezvous.h), and a completed exchange goes back to every member; a failed or
 * expired one, as an error, to the members that posted. Expiry runs from a timer. */
#include "coord_internal.h"
#include "report.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- exchanges of group tasks ----------------------------------------------------------------- */

static void s_send_exchange(coord_t *self, const char *node_name, Fleetburn__Exchange *ex)
{
    node_t *node = fb_strmap_get(self->nodes, node_name);
    if (!node || !node->alive)
        return; /* a member that is gone: its task is being decided without it */
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    env.body_case = FLEETBURN__ENVELOPE__BODY_EXCHANGE;
    env.exchange = ex;
    coord_send_to(self, node->identity, &env);
}

static const char *s_campaign_id(coord_t *self, const char *task_id)
{
    campaign_slot_t *slot = coord_campaign_of_task(self, task_id);
    return slot ? slot->id : NULL;
}

/* Sends a broker reply (all values, or the error) to its recipients. */
static void s_send_reply(coord_t *self, const fb_rdv_reply_t *reply)
{
    Fleetburn__Exchange ex = FLEETBURN__EXCHANGE__INIT;
    ex.task_id = reply->task_id;
    ex.key = reply->key;
    ProtobufCBinaryData *values = xcalloc(reply->n_values + 1, sizeof *values);
    if (reply->ok) {
        for (size_t i = 0; i < reply->n_values; i++) {
            values[i].data = reply->values[i].data;
            values[i].len = reply->values[i].len;
        }
        ex.values = values;
        ex.n_values = reply->n_values;
    } else {
        ex.error = reply->error;
        log_warn("task %s: %s", reply->task_id, reply->error);
        coord_event(self, s_campaign_id(self, reply->task_id), reply->task_id, NULL, "exchange",
                    "%s", reply->error);
    }
    for (size_t i = 0; i < reply->n_to; i++) {
        ex.rank = reply->ranks[i];
        s_send_exchange(self, reply->nodes[i], &ex);
    }
    free(values);
}

static void s_send_replies(coord_t *self, fb_rdv_reply_t **replies, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s_send_reply(self, &(*replies)[i]);
    fb_rdv_replies_free(replies, n);
}

/* An Exchange that cannot be accepted: the error goes straight back to the poster. */
static void s_refuse_exchange(coord_t *self, node_t *node, const Fleetburn__Exchange *m,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void s_refuse_exchange(coord_t *self, node_t *node, const Fleetburn__Exchange *m,
                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *error = xvasprintf(fmt, ap);
    va_end(ap);
    log_warn("exchange %s of task %s from %s refused: %s", m->key, m->task_id, node->name, error);
    Fleetburn__Exchange ex = FLEETBURN__EXCHANGE__INIT;
    ex.task_id = m->task_id;
    ex.key = m->key;
    ex.rank = m->rank;
    ex.error = error;
    s_send_exchange(self, node->name, &ex);
    free(error);
}

void coord_on_exchange(coord_t *self, node_t *node, const Fleetburn__Exchange *m)
{
    size_t size = 0;
    campaign_slot_t *slot = coord_campaign_of_task(self, m->task_id);
    const char *const *members =
        slot && slot->runner ? runner_group(slot->runner, m->task_id, &size) : NULL;
    if (!members) {
        s_refuse_exchange(self, node, m, "exchange %s: task %s is not a running group task", m->key,
                          m->task_id);
        return;
    }
    if (m->rank >= size || strcmp(members[m->rank], node->name)) {
        s_refuse_exchange(self, node, m, "exchange %s: %s is not rank %u of task %s", m->key,
                          node->name, m->rank, m->task_id);
        return;
    }
    fb_rdv_reply_t reply;
    int rc = fb_rendezvous_post(self->rendezvous, m->task_id, m->key, m->rank, members, size,
                                m->value.data, m->value.len, m->timeout_ms, fb_mono_ms(), &reply);
    if (rc < 0) {
        fb_rdv_reply_clear(&reply);
        s_refuse_exchange(self, node, m, "exchange %s: %s", m->key,
                          rc == -ENOSPC ? "too many exchanges in one task" : "invalid post");
        return;
    }
    if (rc == FB_RDV_COMPLETE)
        log_debug("task %s: exchange %s complete (%zu ranks)", m->task_id, m->key, size);
    if (rc != FB_RDV_WAITING)
        s_send_reply(self, &reply);
    fb_rdv_reply_clear(&reply);
}

void coord_on_exchange_tick(uv_timer_t *h)
{
    coord_t *self = h->data;
    fb_rdv_reply_t *replies = NULL;
    size_t n = fb_rendezvous_expire(self->rendezvous, fb_mono_ms(), &replies);
    s_send_replies(self, &replies, n);
}

void coord_exchange_task_ended(coord_t *self, const char *task_id, const char *why)
{
    fb_rdv_reply_t *replies = NULL;
    size_t n = fb_rendezvous_fail_task(self->rendezvous, task_id, why, &replies);
    s_send_replies(self, &replies, n);
    fb_rendezvous_end_task(self->rendezvous, task_id);
}

void coord_exchange_member_ended(coord_t *self, const char *task_id, unsigned rank, const char *why)
{
    fb_rdv_reply_t *replies = NULL;
    size_t n = fb_rendezvous_fail_rank(self->rendezvous, task_id, rank, why, &replies);
    s_send_replies(self, &replies, n);
}
