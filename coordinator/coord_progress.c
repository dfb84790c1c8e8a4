/* SPDX-License-Identifier: Apache-2.0 */
/* What a stage's progress shows of its nodes (runner_host.h, docs/observability.md): each node's
 * latest started/progress event (fraction and the worker's words, "pass 1/2 37%"), kept on its
 * registry entry as events arrive; for a progress message, the slowest running nodes and an
 * estimate of the time left where every running worker says how far it is (workloads that know
 * their length: a duration, a number of passes). */
#include "coord_internal.h"
#include "common/log.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

/* Below this fraction, or this soon after the start, an estimate is noise. */
#define S_ETA_MIN_FRACTION 0.02
#define S_ETA_MIN_ELAPSED_MS 1000u

void coord_progress_event(node_t *node, const Fleetburn__TaskEvent *ev)
{
    if (!node->task_id || strcmp(node->task_id, ev->task_id)) {
        free(node->task_id);
        node->task_id = xstrdup(ev->task_id);
        node->task_started = fb_mono_ms();
        node->fraction = 0;
        free(node->phase);
        node->phase = NULL;
    }
    if (ev->kind != FLEETBURN__TASK_EVENT__KIND__KIND_PROGRESS)
        return;
    node->fraction = ev->progress; /* validated: 0..1 */
    char safe[160];
    fb_log_sanitize(ev->message, safe, sizeof safe);
    free(node->phase);
    node->phase = xstrdup(safe);
}

static uint64_t s_eta(double fraction, uint64_t elapsed)
{
    if (fraction < S_ETA_MIN_FRACTION || elapsed < S_ETA_MIN_ELAPSED_MS)
        return 0;
    if (fraction >= 1.0)
        return 1; /* done, its result on the way: "any moment" rather than unknown */
    return (uint64_t)((double)elapsed * (1.0 - fraction) / fraction);
}

/* Slowest first: least done, then longest running. */
static int s_slower(const void *a, const void *b)
{
    const coord_node_progress_t *x = a, *y = b;
    if (x->fraction != y->fraction)
        return x->fraction < y->fraction ? -1 : 1;
    return x->elapsed_ms > y->elapsed_ms ? -1 : x->elapsed_ms < y->elapsed_ms;
}

void coord_progress_nodes(coord_t *self, const char *const *running, const char *const *tasks,
                          size_t n, coord_progress_t *out)
{
    uint64_t now = fb_mono_ms(), eta = 0;
    bool eta_known = n > 0;
    coord_node_progress_t *all = xcalloc(n ? n : 1, sizeof *all);
    for (size_t i = 0; i < n; i++) {
        const node_t *node = fb_strmap_get(self->nodes, running[i]);
        coord_node_progress_t *p = &all[i];
        p->node = running[i];
        p->phase = "";
        if (node && node->task_id && !strcmp(node->task_id, tasks[i])) {
            p->fraction = node->fraction;
            p->phase = node->phase ? node->phase : "";
            p->elapsed_ms = now - node->task_started;
            p->eta_ms = s_eta(p->fraction, p->elapsed_ms);
        }
        if (!p->eta_ms)
            eta_known = false;
        else if (p->eta_ms > eta)
            eta = p->eta_ms;
    }
    qsort(all, n, sizeof *all, s_slower);
    out->n_nodes = n < COORD_PROGRESS_NODES ? n : COORD_PROGRESS_NODES;
    memcpy(out->nodes, all, out->n_nodes * sizeof *all);
    out->eta_ms = eta_known ? eta : 0;
    free(all);
}
