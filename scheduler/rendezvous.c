/* SPDX-License-Identifier: Apache-2.0 */
/* Exchange broker for group tasks: collects each rank's value of an all-gather and says when it
 * is complete, when it has failed and whom to tell. Tasks are found by id in a map; a task holds
 * its few exchanges in a small array (a workload uses a handful of keys), so every operation on
 * one task is cheap however many tasks run at once. Entries outlive completion so that a rank
 * resending its post after a reconnect still gets its answer; the coordinator forgets a task's
 * entries when the task ends. Pure: no I/O, time passed in. */
#include "rendezvous.h"

#include "common/strmap.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *key;
    size_t size;
    char **nodes;           /* by rank; "" when unknown */
    fb_rdv_value_t *values; /* by rank */
    bool *posted;
    size_t n_posted, bytes;
    uint64_t first_ms, deadline_ms;
    fb_rdv_state_t state;
    char *error; /* FAILED */
} s_exchange_t;

typedef struct {
    char *id;
    s_exchange_t *ex;
    size_t n_ex;
} s_task_t;

struct fb_rendezvous {
    fb_strmap_t *tasks; /* id -> s_task_t */
    size_t n_exchanges;
};

/* ---- entries ---- */

static void s_exchange_fini(s_exchange_t *e)
{
    free(e->key);
    for (size_t i = 0; i < e->size; i++) {
        free(e->nodes[i]);
        free(e->values[i].data);
    }
    free(e->nodes);
    free(e->values);
    free(e->posted);
    free(e->error);
}

static void s_task_free(s_task_t *t)
{
    for (size_t i = 0; i < t->n_ex; i++)
        s_exchange_fini(&t->ex[i]);
    free(t->ex);
    free(t->id);
    free(t);
}

static s_exchange_t *s_find(s_task_t *t, const char *key)
{
    for (size_t i = 0; t && i < t->n_ex; i++)
        if (!strcmp(t->ex[i].key, key))
            return &t->ex[i];
    return NULL;
}

static s_exchange_t *s_add(fb_rendezvous_t *self, s_task_t *t, const char *key,
                           const char *const *members, size_t size, uint64_t timeout_ms,
                           uint64_t now_ms)
{
    t->ex = xrealloc(t->ex, (t->n_ex + 1) * sizeof *t->ex);
    s_exchange_t *e = &t->ex[t->n_ex++];
    memset(e, 0, sizeof *e);
    e->key = xstrdup(key);
    e->size = size;
    e->nodes = xcalloc(size, sizeof *e->nodes);
    for (size_t i = 0; i < size; i++)
        e->nodes[i] = xstrdup(members && members[i] ? members[i] : "");
    e->values = xcalloc(size, sizeof *e->values);
    e->posted = xcalloc(size, sizeof *e->posted);
    e->first_ms = now_ms;
    e->deadline_ms = now_ms + (timeout_ms ? timeout_ms : FB_RENDEZVOUS_DEFAULT_TIMEOUT_MS);
    e->state = FB_RDV_WAITING;
    self->n_exchanges++;
    return e;
}

/* ---- replies ---- */

static void s_reply_init(fb_rdv_reply_t *r, const char *task_id, const s_exchange_t *e)
{
    memset(r, 0, sizeof *r);
    r->task_id = xstrdup(task_id);
    r->key = xstrdup(e->key);
    r->ok = e->state == FB_RDV_COMPLETE;
    if (r->ok) {
        r->values = xcalloc(e->size, sizeof *r->values);
        r->n_values = e->size;
        for (size_t i = 0; i < e->size; i++) {
            r->values[i].len = e->values[i].len;
            if (e->values[i].len) {
                r->values[i].data = xmalloc(e->values[i].len);
                memcpy(r->values[i].data, e->values[i].data, e->values[i].len);
            }
        }
    } else {
        r->error = xstrdup(e->error);
    }
    r->ranks = xcalloc(e->size, sizeof *r->ranks);
    r->nodes = xcalloc(e->size, sizeof *r->nodes);
}

static void s_reply_to(fb_rdv_reply_t *r, const s_exchange_t *e, unsigned rank)
{
    r->ranks[r->n_to] = rank;
    r->nodes[r->n_to] = xstrdup(e->nodes[rank]);
    r->n_to++;
}

/* The reply for every rank that posted (a completion reaches all of them). */
static void s_reply_posted(fb_rdv_reply_t *r, const char *task_id, const s_exchange_t *e)
{
    s_reply_init(r, task_id, e);
    for (unsigned i = 0; i < e->size; i++)
        if (e->posted[i])
            s_reply_to(r, e, i);
}

void fb_rdv_reply_clear(fb_rdv_reply_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_values; i++)
        free(r->values[i].data);
    for (size_t i = 0; i < r->n_to; i++)
        free(r->nodes[i]);
    free(r->values);
    free(r->nodes);
    free(r->ranks);
    free(r->error);
    free(r->task_id);
    free(r->key);
    memset(r, 0, sizeof *r);
}

void fb_rdv_replies_free(fb_rdv_reply_t **replies_p, size_t n)
{
    if (!replies_p || !*replies_p)
        return;
    for (size_t i = 0; i < n; i++)
        fb_rdv_reply_clear(&(*replies_p)[i]);
    free(*replies_p);
    *replies_p = NULL;
}

/* ---- failing ---- */

static void s_fail(s_exchange_t *e, char *error)
{
    e->state = FB_RDV_FAILED;
    free(e->error);
    e->error = error;
}

/* "rank 2 (n3)" / "ranks 1 (n2), 2 (n3)": the ranks that have not posted, heap. */
static char *s_missing(const s_exchange_t *e)
{
    size_t missing = e->size - e->n_posted, cap = 16 + e->size * 48, len = 0;
    char *out = xmalloc(cap);
    len += (size_t)snprintf(out, cap, "%s ", missing == 1 ? "rank" : "ranks");
    bool first = true;
    for (size_t i = 0; i < e->size; i++) {
        if (e->posted[i])
            continue;
        const char *node = e->nodes[i];
        char item[200];
        int n = node[0] ? snprintf(item, sizeof item, "%s%zu (%.128s)", first ? "" : ", ", i, node)
                        : snprintf(item, sizeof item, "%s%zu", first ? "" : ", ", i);
        first = false;
        if (len + (size_t)n + 1 > cap) {
            cap = (len + (size_t)n + 1) * 2;
            out = xrealloc(out, cap);
        }
        memcpy(out + len, item, (size_t)n + 1);
        len += (size_t)n;
    }
    return out;
}

typedef bool (*s_pick_fn)(const s_exchange_t *e, const void *arg);
typedef char *(*s_why_fn)(const s_exchange_t *e, const void *arg);

/* Fails the pending exchanges of task t that pick selects, appending one reply each. */
static void s_fail_where(const s_task_t *t, s_pick_fn pick, s_why_fn why, const void *arg,
                         fb_rdv_reply_t **replies, size_t *n, size_t *cap)
{
    for (size_t i = 0; i < t->n_ex; i++) {
        s_exchange_t *e = &t->ex[i];
        if (e->state != FB_RDV_WAITING || !pick(e, arg))
            continue;
        s_fail(e, why(e, arg));
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 4;
            *replies = xrealloc(*replies, *cap * sizeof **replies);
        }
        s_reply_posted(&(*replies)[(*n)++], t->id, e);
    }
}

static bool s_pick_all(const s_exchange_t *e, const void *arg)
{
    (void)e;
    (void)arg;
    return true;
}

static char *s_why_given(const s_exchange_t *e, const void *arg)
{
    return xasprintf("exchange %s: %s", e->key, (const char *)arg);
}

size_t fb_rendezvous_fail_task(fb_rendezvous_t *self, const char *task_id, const char *why,
                               fb_rdv_reply_t **replies_out)
{
    *replies_out = NULL;
    size_t n = 0, cap = 0;
    s_task_t *t = fb_strmap_get(self->tasks, task_id);
    if (t)
        s_fail_where(t, s_pick_all, s_why_given, why, replies_out, &n, &cap);
    return n;
}

typedef struct {
    unsigned rank;
    const char *why;
} s_rank_arg_t;

static bool s_pick_unposted(const s_exchange_t *e, const void *arg)
{
    const s_rank_arg_t *a = arg;
    return a->rank < e->size && !e->posted[a->rank];
}

static char *s_why_rank(const s_exchange_t *e, const void *arg)
{
    return xasprintf("exchange %s: %s", e->key, ((const s_rank_arg_t *)arg)->why);
}

size_t fb_rendezvous_fail_rank(fb_rendezvous_t *self, const char *task_id, unsigned rank,
                               const char *why, fb_rdv_reply_t **replies_out)
{
    *replies_out = NULL;
    size_t n = 0, cap = 0;
    s_task_t *t = fb_strmap_get(self->tasks, task_id);
    s_rank_arg_t a = {rank, why};
    if (t)
        s_fail_where(t, s_pick_unposted, s_why_rank, &a, replies_out, &n, &cap);
    return n;
}

static bool s_pick_expired(const s_exchange_t *e, const void *arg)
{
    return e->deadline_ms <= *(const uint64_t *)arg;
}

static char *s_why_expired(const s_exchange_t *e, const void *arg)
{
    (void)arg;
    char *missing = s_missing(e);
    char *why =
        xasprintf("exchange %s: %s did not post within %.1f s (%zu of %zu ranks posted)", e->key,
                  missing, (double)(e->deadline_ms - e->first_ms) / 1000.0, e->n_posted, e->size);
    free(missing);
    return why;
}

size_t fb_rendezvous_expire(fb_rendezvous_t *self, uint64_t now_ms, fb_rdv_reply_t **replies_out)
{
    *replies_out = NULL;
    size_t n = 0, cap = 0, pos = 0;
    void *value;
    while (fb_strmap_next(self->tasks, &pos, NULL, &value))
        s_fail_where(value, s_pick_expired, s_why_expired, &now_ms, replies_out, &n, &cap);
    return n;
}

/* ---- posting ---- */

/* Records rank's first value; a repeat keeps the first (a resend carries the same bytes). */
static void s_record(s_exchange_t *e, unsigned rank, const void *value, size_t len)
{
    if (e->posted[rank])
        return;
    e->posted[rank] = true;
    e->n_posted++;
    e->bytes += len;
    e->values[rank].len = len;
    if (len) {
        e->values[rank].data = xmalloc(len);
        memcpy(e->values[rank].data, value, len);
    }
}

int fb_rendezvous_post(fb_rendezvous_t *self, const char *task_id, const char *key, unsigned rank,
                       const char *const *members, size_t size, const void *value, size_t len,
                       uint64_t timeout_ms, uint64_t now_ms, fb_rdv_reply_t *reply)
{
    memset(reply, 0, sizeof *reply);
    if (!task_id || !key || size == 0 || rank >= size || len > FB_RENDEZVOUS_MAX_BYTES ||
        (len && !value))
        return -EINVAL;
    s_task_t *t = fb_strmap_get(self->tasks, task_id);
    s_exchange_t *e = s_find(t, key);
    if (e && e->size != size)
        return -EINVAL;
    if (e && e->state != FB_RDV_WAITING) { /* a resend: answer this rank again */
        s_reply_init(reply, task_id, e);
        s_reply_to(reply, e, rank);
        return (int)e->state;
    }
    if (!e) {
        if (!t) {
            t = xcalloc(1, sizeof *t);
            t->id = xstrdup(task_id);
            fb_strmap_put(self->tasks, t->id, t);
        }
        if (t->n_ex >= FB_RENDEZVOUS_MAX_KEYS)
            return -ENOSPC;
        e = s_add(self, t, key, members, size, timeout_ms, now_ms);
    }
    bool was_posted = e->posted[rank];
    s_record(e, rank, value, len);
    if (!was_posted && e->bytes > FB_RENDEZVOUS_MAX_BYTES) {
        s_fail(e, xasprintf("exchange %s: the values of %zu ranks total more than %u bytes", key,
                            e->n_posted, FB_RENDEZVOUS_MAX_BYTES));
        s_reply_posted(reply, task_id, e);
        return FB_RDV_FAILED;
    }
    if (e->n_posted < e->size)
        return FB_RDV_WAITING;
    e->state = FB_RDV_COMPLETE;
    s_reply_posted(reply, task_id, e);
    return FB_RDV_COMPLETE;
}

/* ---- lifecycle ---- */

void fb_rendezvous_end_task(fb_rendezvous_t *self, const char *task_id)
{
    s_task_t *t = fb_strmap_remove(self->tasks, task_id);
    if (!t)
        return;
    self->n_exchanges -= t->n_ex;
    s_task_free(t);
}

size_t fb_rendezvous_count(const fb_rendezvous_t *self)
{
    return self->n_exchanges;
}

fb_rendezvous_t *fb_rendezvous_new(void)
{
    fb_rendezvous_t *self = xcalloc(1, sizeof *self);
    self->tasks = fb_strmap_new();
    return self;
}

void fb_rendezvous_destroy(fb_rendezvous_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_rendezvous_t *self = *self_p;
    size_t pos = 0;
    void *value;
    while (fb_strmap_next(self->tasks, &pos, NULL, &value))
        s_task_free(value);
    fb_strmap_destroy(&self->tasks);
    free(self);
    *self_p = NULL;
}
