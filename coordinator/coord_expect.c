/* SPDX-License-Identifier: Apache-2.0 */
/* Expected hardware and environment fingerprints in the coordinator (docs/campaign-file.md
 * "Expected hardware", docs/inventory.md "Fingerprint").
 *
 * The expectation is judged where a verdict is made from a node's real inventory: when a result
 * of a campaign with an expect section arrives, before it is stored.
 *   - A health task: the node's stored inventory is checked against the entry that applies to
 *     it; every mismatch becomes a finding of the result (kind as the part, the evidence saying
 *     what was expected and found) and a passing result fails, so the health stage fails on that
 *     node and the report names the part.
 *   - A GPU workload's task that was `skipped` on a node whose inventory shows no GPUs while the
 *     expectation says it has some (a driver not loaded, GPUs fallen off the bus) fails instead,
 *     with a finding saying so: a burn-in that tested nothing is not a pass.
 * The fingerprint of a node is taken from the inventory of its Hello (kept in memory per node)
 * when a campaign first sends it a task: one indexed lookup and a row per component, so that a
 * campaign of thousands of nodes does not stall its first dispatch on JSON. */
#include "coord_internal.h"

#include "common/log.h"
#include "common/util.h"
#include "scheduler/expect.h"
#include "scheduler/fingerprint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The stage of task_id ("<campaign>/<stage index>/..."), or NULL. */
static const fb_stage_t *s_stage_of(const fb_campaign_t *c, const char *campaign_id,
                                    const char *task_id)
{
    size_t len = strlen(campaign_id);
    if (strncmp(task_id, campaign_id, len) || task_id[len] != '/')
        return NULL;
    char *end = NULL;
    unsigned long idx = strtoul(task_id + len + 1, &end, 10);
    if (end == task_id + len + 1 || *end != '/' || idx >= c->n_stages)
        return NULL;
    return &c->stages[idx];
}

/* A passing (or skipped) result fails; its error says why unless it has one. */
static void s_fail(fb_result_t *r, const char *why)
{
    if (fb_verdict_ok(r->verdict)) {
        r->verdict = FB_VERDICT_FAIL;
        free(r->error);
        r->error = xstrdup(why);
    } else if (!r->error) {
        r->error = xstrdup(why);
    }
}

static void s_check_health(coord_t *self, const char *campaign_id, fb_result_t *r,
                           const fb_expect_entry_t *e, const fb_node_facts_t *now,
                           const fb_node_facts_t *earlier)
{
    fb_mismatch_t *m;
    size_t n = fb_expect_check(e, r->node, now, earlier, &m);
    if (!n)
        return;
    for (size_t i = 0; i < n; i++)
        fb_result_add_finding(r, m[i].part, m[i].kind, m[i].what);
    char *why = xasprintf("hardware differs from the campaign's expect: %s%s", m[0].what,
                          n > 1 ? " (and more: see the findings)" : "");
    s_fail(r, why);
    for (size_t i = 0; i < n; i++)
        coord_event(self, campaign_id, r->task_id, r->node, "expect", "%s", m[i].what);
    log_info("node %s differs from the campaign's expect in %zu field(s): %s", r->node, n,
             m[0].what);
    free(why);
    fb_mismatches_free(m, n);
}

static void s_check_gpu_skip(coord_t *self, const char *campaign_id, const fb_stage_t *stage,
                             fb_result_t *r, const fb_expect_entry_t *e, const fb_node_facts_t *now)
{
    if (!fb_expect_wants_gpus(e) || now->n_gpus > 0)
        return; /* a node with GPUs skips only for reasons of its own (a dtype it cannot run) */
    char expected[32] = "GPUs";
    if (e->has_gpus)
        snprintf(expected, sizeof expected, "%u", e->gpus);
    char *what = xasprintf("gpus: expected %s, found 0 (%s found none: %s)", expected,
                           stage->workload, r->error ? r->error : "skipped");
    fb_result_add_finding(r, r->node, "node", what);
    char *why = xasprintf("%s found no GPUs on a node the campaign's expect says has %s",
                          stage->workload, expected);
    s_fail(r, why);
    coord_event(self, campaign_id, r->task_id, r->node, "expect", "%s", what);
    free(why);
    free(what);
}

void coord_expect_result(coord_t *self, fb_result_t *r)
{
    campaign_slot_t *slot = coord_campaign_of_task(self, r->task_id);
    const fb_campaign_t *c = slot && slot->runner ? runner_campaign(slot->runner) : NULL;
    if (!c || !c->expect || !r->node)
        return;
    const fb_stage_t *stage = s_stage_of(c, slot->id, r->task_id);
    if (!stage)
        return;
    bool health = !strcmp(stage->workload, "health");
    bool gpu_skip = r->verdict == FB_VERDICT_SKIPPED && fb_expect_gpu_workload(stage->workload);
    const fb_expect_entry_t *e = health || gpu_skip ? fb_expect_for_node(c->expect, r->node) : NULL;
    if (!e)
        return;
    fb_node_facts_t now, earlier;
    int rc = store_agent_facts(self->store, r->node, &now, &earlier, NULL);
    if (rc) {
        /* the node registered with an inventory, or it could not have run a task */
        log_error("expect: cannot read the inventory of %s: %s", r->node,
                  store_errmsg(self->store));
        return;
    }
    if (health)
        s_check_health(self, slot->id, r, e, &now, &earlier);
    else
        s_check_gpu_skip(self, slot->id, stage, r, e, &now);
    fb_node_facts_clear(&now);
    fb_node_facts_clear(&earlier);
}

/* What the coordinator keeps per registered node: its fingerprint from its Hello, and the last
 * campaign it was recorded for (a node belongs to one running campaign at a time). */
typedef struct {
    fb_fingerprint_t fp;
    char *campaign;
} s_node_fp_t;

static void s_node_fp_free(s_node_fp_t *e)
{
    if (!e)
        return;
    fb_fingerprint_clear(&e->fp);
    free(e->campaign);
    free(e);
}

void coord_fingerprint_hello(coord_t *self, const char *node, const Fleetburn__Inventory *inv)
{
    if (!node || !inv)
        return;
    if (!self->fingerprinted)
        self->fingerprinted = fb_strmap_new();
    s_node_fp_t *e = fb_strmap_get(self->fingerprinted, node);
    if (!e) {
        e = xcalloc(1, sizeof *e);
        fb_strmap_put(self->fingerprinted, node, e);
    }
    fb_fingerprint_clear(&e->fp);
    fb_fingerprint_set(&e->fp, "fleetburn", inv->agent_version);
    for (size_t i = 0; i < inv->n_software; i++)
        fb_fingerprint_set(&e->fp, inv->software[i]->key, inv->software[i]->value);
}

void coord_fingerprint_dispatch(coord_t *self, const char *campaign_id, const char *node)
{
    if (!campaign_id || !node)
        return;
    s_node_fp_t *e = self->fingerprinted ? fb_strmap_get(self->fingerprinted, node) : NULL;
    if (e && e->campaign && !strcmp(e->campaign, campaign_id))
        return; /* recorded for this campaign already: no query per task */
    /* from the inventory of its Hello; a node known only to the store (it cannot be: tasks go to
     * registered nodes) from the stored one */
    int rc = e ? store_fingerprint_insert(self->store, campaign_id, node, &e->fp, fb_now_ms())
               : store_fingerprint_record(self->store, campaign_id, node, fb_now_ms());
    if (rc) {
        log_warn("cannot record the fingerprint of %s in %s: %s", node, campaign_id,
                 store_errmsg(self->store));
        return;
    }
    if (e) {
        free(e->campaign);
        e->campaign = xstrdup(campaign_id);
    }
}

void coord_expect_destroy(coord_t *self)
{
    size_t pos = 0;
    void *value;
    while (self->fingerprinted && fb_strmap_next(self->fingerprinted, &pos, NULL, &value))
        s_node_fp_free(value);
    fb_strmap_destroy(&self->fingerprinted);
}
