/* SPDX-License-Identifier: Apache-2.0 */
/* The delivery queue of webhook alerts in the timeline store (table webhook_deliveries, schema
 * step s_schema_webhooks in store_schema.c): an alert is queued once per campaign and URL, with the
 * document it posts and its retry schedule; every attempt's outcome updates its row. Written and
 * read by coordinator/webhook_queue.c on the coordinator's loop thread, like every store call. */
#include "store_internal.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "300000,600000": the waits between attempts as stored. Heap. */
static char *s_retry_text(const uint64_t *retry_ms, size_t n)
{
    char *text = xcalloc(n * 21 + 1, 1);
    size_t used = 0;
    for (size_t i = 0; i < n; i++)
        used += (size_t)sprintf(text + used, "%s%" PRIu64, i ? "," : "", retry_ms[i]);
    return text;
}

/* The stored waits; text this build did not write reads as no retry at all. */
static size_t s_retry_parse(const char *text, uint64_t **out)
{
    size_t cap = 1, n = 0;
    for (const char *p = text; p && *p; p++)
        cap += *p == ',';
    uint64_t *ms = xcalloc(cap, sizeof *ms);
    for (const char *p = text; p && *p && n < cap;) {
        char *end = NULL;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || (*end && *end != ','))
            break;
        ms[n++] = v;
        p = *end ? end + 1 : end;
    }
    *out = ms;
    return n;
}

int store_webhook_enqueue(store_t *self, const char *campaign_id, const char *url,
                          const char *payload, const uint64_t *retry_ms, size_t n_retry,
                          uint64_t timeout_ms, uint64_t now_ms, int64_t *id_out)
{
    if (!campaign_id || !url || !payload || (n_retry && !retry_ms))
        return store__fail(self, -EINVAL, "webhook: campaign, url and payload are required");
    sqlite3_stmt *st = store__stmt(self, STMT_WEBHOOK_ENQUEUE);
    if (!st)
        return -EIO;
    char *retry = s_retry_text(retry_ms, n_retry);
    store__bind_text(st, 1, campaign_id);
    store__bind_text(st, 2, url);
    store__bind_text(st, 3, payload);
    store__bind_text(st, 4, retry);
    sqlite3_bind_int64(st, 5, (int64_t)timeout_ms);
    sqlite3_bind_int64(st, 6, (int64_t)now_ms);
    int err = store__run(self, st, "queueing a webhook delivery");
    free(retry);
    if (err)
        return err;
    if (sqlite3_changes(self->db) == 0) {
        /* Nothing inserted: the campaign is unknown, or has its delivery to url already. */
        sqlite3_stmt *get = store__stmt(self, STMT_CAMPAIGN_GET);
        if (!get)
            return -EIO;
        store__bind_text(get, 1, campaign_id);
        int rc = sqlite3_step(get);
        sqlite3_reset(get);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return store__sqlite_err(self, rc, "queueing a webhook delivery");
        if (rc == SQLITE_DONE)
            return store__fail(self, -ENOENT, "webhook: no campaign '%s'", campaign_id);
        return store__fail(self, -EEXIST, "webhook: campaign %s has its delivery queued already",
                           campaign_id);
    }
    if (id_out)
        *id_out = sqlite3_last_insert_rowid(self->db);
    return 0;
}

int store_webhook_attempted(store_t *self, int64_t id, unsigned attempts, const char *state,
                            uint64_t next_attempt_ms, const char *error, uint64_t finished_ms)
{
    if (!state ||
        (strcmp(state, "pending") && strcmp(state, "delivered") && strcmp(state, "failed")))
        return store__fail(self, -EINVAL, "webhook: state %s is not pending, delivered or failed",
                           state ? state : "(none)");
    sqlite3_stmt *st = store__stmt(self, STMT_WEBHOOK_ATTEMPTED);
    if (!st)
        return -EIO;
    bool pending = !strcmp(state, "pending");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, attempts);
    store__bind_text(st, 3, state);
    store__bind_time(st, 4, pending ? next_attempt_ms : 0);
    store__bind_text(st, 5, error);
    store__bind_time(st, 6, pending ? 0 : finished_ms);
    int err = store__run(self, st, "recording a webhook attempt");
    if (!err && sqlite3_changes(self->db) == 0)
        err = store__fail(self, -ENOENT, "webhook: no delivery %" PRId64, id);
    return err;
}

int store_webhook_foreach(store_t *self, const char *campaign_id,
                          int (*cb)(const store_webhook_t *w, void *arg), void *arg)
{
    sqlite3_stmt *st = store__stmt(self, campaign_id ? STMT_WEBHOOKS_OF : STMT_WEBHOOKS_PENDING);
    if (!st)
        return -EIO;
    if (campaign_id)
        store__bind_text(st, 1, campaign_id);
    int ret = 0, rc = SQLITE_DONE;
    while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_webhook_t w = {
            .id = sqlite3_column_int64(st, 0),
            .campaign_id = (char *)store__col_text(st, 1),
            .url = (char *)store__col_text(st, 2),
            .payload = (char *)store__col_text(st, 3),
            .timeout_ms = store__col_time(st, 5),
            .attempts = (unsigned)sqlite3_column_int(st, 6),
            .next_attempt_ms = store__col_time(st, 7),
            .state = (char *)store__col_text(st, 8),
            .last_error = (char *)store__col_text(st, 9),
            .created_ms = store__col_time(st, 10),
            .finished_ms = store__col_time(st, 11),
        };
        w.n_retry = s_retry_parse(store__col_text(st, 4), &w.retry_ms);
        ret = cb(&w, arg);
        free(w.retry_ms);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = store__sqlite_err(self, rc, "listing webhook deliveries");
    sqlite3_reset(st);
    return ret;
}
