/* SPDX-License-Identifier: Apache-2.0 */
/* The exchange broker behind a group task's rendezvous: an all-gather of small values (NCCL's
 * unique id, queue-pair details, listening ports) among the members of one task, keyed by the
 * task id and a key the workload chooses. Every member posts its value under the key; when every
 * rank has posted, every member gets all the values by rank. The coordinator relays the
 * Exchange messages (docs/protocol.md); this module only decides.
 *
 * Rules:
 *  - An exchange is (task_id, key). Its size and member names come with the first post; later
 *    posts must give the same size.
 *  - A rank posting again is idempotent (a resend after a reconnect): the first value stays.
 *    Posting again after the exchange completed gets the values again, to that rank alone;
 *    after it failed, the error again.
 *  - Deadline: the first post's time plus its timeout_ms (FB_RENDEZVOUS_DEFAULT_TIMEOUT_MS when
 *    0). fb_rendezvous_expire() fails exchanges past it with an error naming the ranks (and
 *    nodes) that never posted.
 *  - fb_rendezvous_fail_task() fails a task's pending exchanges (a member lost or cancelled);
 *    fb_rendezvous_fail_rank() fails those a member that has ended never posted to.
 *  - Completed and failed exchanges are kept, to answer resends, until fb_rendezvous_end_task().
 *
 * Replies name the recipients; for a failure they are the ranks that posted (the others never
 * asked). Time is passed in (now_ms, any monotonic clock), so the module is pure and testable. */
#ifndef FB_RENDEZVOUS_H
#define FB_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FB_RENDEZVOUS_DEFAULT_TIMEOUT_MS 120000u
/* All values of one exchange together: the reply must fit one wire frame (4 MiB). */
#define FB_RENDEZVOUS_MAX_BYTES (3u << 20)
/* Exchanges one task may hold at a time: a runaway worker cannot grow the coordinator. */
#define FB_RENDEZVOUS_MAX_KEYS 256

typedef struct fb_rendezvous fb_rendezvous_t;

typedef struct {
    uint8_t *data; /* owned; NULL when len is 0 */
    size_t len;
} fb_rdv_value_t;

/* What to send after a post, a failure or an expiry. Everything is owned by the reply. */
typedef struct {
    char *task_id, *key;
    bool ok;                /* true: values; false: error */
    fb_rdv_value_t *values; /* ok: one per rank, by rank */
    size_t n_values;
    char *error;     /* !ok: why the exchange cannot complete */
    unsigned *ranks; /* recipients */
    char **nodes;    /* their node names, by recipient ("" when the poster gave none) */
    size_t n_to;
} fb_rdv_reply_t;

typedef enum {
    FB_RDV_WAITING = 0,  /* posted; others have not: nothing to send yet */
    FB_RDV_COMPLETE = 1, /* reply holds every value, for every rank (or the resending rank) */
    FB_RDV_FAILED = 2,   /* reply holds the error, for the poster (and others, if this post
                            made it fail) */
} fb_rdv_state_t;

fb_rendezvous_t *fb_rendezvous_new(void);
/* NULL-safe; nulls the pointer. */
void fb_rendezvous_destroy(fb_rendezvous_t **self_p);

/* Rank `rank` of a task of `size` members posts value[0..len) under key. members: the node
 * names by rank (may be NULL; used in errors and replies). *reply is always initialised; clear
 * it with fb_rdv_reply_clear. Returns an fb_rdv_state_t, or -EINVAL (rank >= size, size 0, a
 * size other than the exchange's, len over FB_RENDEZVOUS_MAX_BYTES), -ENOSPC (the task holds
 * FB_RENDEZVOUS_MAX_KEYS exchanges). */
int fb_rendezvous_post(fb_rendezvous_t *self, const char *task_id, const char *key, unsigned rank,
                       const char *const *members, size_t size, const void *value, size_t len,
                       uint64_t timeout_ms, uint64_t now_ms, fb_rdv_reply_t *reply);

/* Fails every pending exchange of task_id with "exchange KEY: why". *replies_out: a heap array
 * (free with fb_rdv_replies_free; NULL when none); returns how many. */
size_t fb_rendezvous_fail_task(fb_rendezvous_t *self, const char *task_id, const char *why,
                               fb_rdv_reply_t **replies_out);
/* Fails the pending exchanges of task_id that rank has not posted to (it has ended and never
 * will); the others may still complete. Same results as fb_rendezvous_fail_task. */
size_t fb_rendezvous_fail_rank(fb_rendezvous_t *self, const char *task_id, unsigned rank,
                               const char *why, fb_rdv_reply_t **replies_out);
/* Fails the pending exchanges whose deadline is at or before now_ms, with an error naming the
 * ranks and nodes that never posted. Same results as fb_rendezvous_fail_task. */
size_t fb_rendezvous_expire(fb_rendezvous_t *self, uint64_t now_ms, fb_rdv_reply_t **replies_out);
/* Forgets every exchange of task_id, in whatever state. */
void fb_rendezvous_end_task(fb_rendezvous_t *self, const char *task_id);

/* Exchanges held (any state), for tests and logs. */
size_t fb_rendezvous_count(const fb_rendezvous_t *self);

/* Frees what a reply owns and zeroes it. NULL-safe. */
void fb_rdv_reply_clear(fb_rdv_reply_t *reply);
void fb_rdv_replies_free(fb_rdv_reply_t **replies_p, size_t n);

#endif
