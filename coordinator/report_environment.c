/* SPDX-License-Identifier: Apache-2.0 */
/* The reports' environment section: what changed in the nodes' environment (driver, CUDA, NCCL,
 * firmware, kernel, BIOS, OS, fleetburn) since each node's previous campaign, one line per
 * change made alike on several nodes, and the fingerprints themselves, nodes with identical ones
 * folded together. Read from the fingerprints the coordinator recorded
 * (coordinator/store_fingerprint.c); docs/report-json.md documents the JSON form. */
#include "report_internal.h"

#include "common/hostlist.h"
#include "common/json.h"
#include "common/strmap.h"
#include "common/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report__env_load(store_t *store, const char *campaign_id, report_env_t *env)
{
    memset(env, 0, sizeof *env);
    if (store_campaign_fingerprints(store, campaign_id, &env->nodes, &env->n_nodes) ||
        store_fingerprint_changes(store, NULL, campaign_id, &env->changes, &env->n_changes,
                                  &env->n_compared)) {
        report__env_free(env); /* a report without the section rather than no report */
        return;
    }
}

void report__env_free(report_env_t *env)
{
    store_node_fingerprints_free(env->nodes, env->n_nodes);
    fb_fp_groups_free(env->changes, env->n_changes);
    memset(env, 0, sizeof *env);
}

/* Nodes that share a key: a previous campaign, or a whole fingerprint. */
typedef struct {
    size_t first; /* the first node with it */
    char **names;
    size_t n;
} s_bucket_t;

static char *s_fingerprint_key(const fb_fingerprint_t *fp)
{
    size_t len = 1;
    for (size_t k = 0; k < fp->n; k++)
        len += strlen(fp->items[k].component) + strlen(fp->items[k].version) + 2;
    char *key = xcalloc(1, len);
    for (size_t k = 0, o = 0; k < fp->n; k++)
        o += (size_t)sprintf(key + o, "%s\x1f%s\x1e", fp->items[k].component, fp->items[k].version);
    return key;
}

/* The nodes grouped by their previous campaign (by_previous; nodes without one are left out) or
 * by identical fingerprints, in the order of each group's first node. */
static s_bucket_t *s_buckets(const report_env_t *env, bool by_previous, size_t *n_out)
{
    fb_strmap_t *index = fb_strmap_new(); /* key -> bucket index + 1 */
    s_bucket_t *b = NULL;
    size_t n = 0;
    for (size_t i = 0; i < env->n_nodes; i++) {
        const store_node_fingerprint_t *node = &env->nodes[i];
        if (by_previous && !node->previous_campaign)
            continue;
        char *key =
            by_previous ? xstrdup(node->previous_campaign) : s_fingerprint_key(&node->fingerprint);
        size_t at = (size_t)(uintptr_t)fb_strmap_get(index, key);
        if (!at) {
            b = xrealloc(b, (n + 1) * sizeof *b);
            b[n++] = (s_bucket_t){i, NULL, 0};
            fb_strmap_put(index, key, (void *)(uintptr_t)n);
            at = n;
        }
        s_bucket_t *bk = &b[at - 1];
        bk->names = xrealloc(bk->names, (bk->n + 1) * sizeof *bk->names);
        bk->names[bk->n++] = node->node;
        free(key);
    }
    fb_strmap_destroy(&index);
    *n_out = n;
    return b;
}

static void s_buckets_free(s_bucket_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(b[i].names);
    free(b);
}

/* ---- JSON --------------------------------------------------------------------------------- */

void report__env_json(fb_json_t *j, const report_env_t *env)
{
    fb_json_object_begin(j, "environment");
    fb_json_int(j, "nodes", (int64_t)env->n_nodes);
    fb_json_int(j, "compared", (int64_t)env->n_compared);
    fb_json_array_begin(j, "changes");
    for (size_t i = 0; i < env->n_changes; i++) {
        const fb_fp_group_t *g = &env->changes[i];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "component", g->component);
        fb_json_string(j, "before", g->before);
        fb_json_string(j, "after", g->after);
        fb_json_string(j, "nodes", g->hostlist);
        fb_json_array_begin(j, "node_list");
        for (size_t k = 0; k < g->n_nodes; k++)
            fb_json_string(j, NULL, g->nodes[k]);
        fb_json_array_end(j);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);
    fb_json_array_begin(j, "previous_campaigns");
    size_t n;
    s_bucket_t *b = s_buckets(env, true, &n);
    for (size_t i = 0; i < n; i++) {
        char *nodes = fb_hostlist_compress((const char *const *)b[i].names, b[i].n);
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "campaign", env->nodes[b[i].first].previous_campaign);
        fb_json_string(j, "nodes", nodes);
        fb_json_object_end(j);
        free(nodes);
    }
    s_buckets_free(b, n);
    fb_json_array_end(j);
    fb_json_array_begin(j, "fingerprints");
    b = s_buckets(env, false, &n);
    for (size_t i = 0; i < n; i++) {
        const fb_fingerprint_t *fp = &env->nodes[b[i].first].fingerprint;
        char *nodes = fb_hostlist_compress((const char *const *)b[i].names, b[i].n);
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "nodes", nodes);
        fb_json_object_begin(j, "versions");
        for (size_t k = 0; k < fp->n; k++)
            fb_json_string(j, fp->items[k].component, fp->items[k].version);
        fb_json_object_end(j);
        fb_json_object_end(j);
        free(nodes);
    }
    s_buckets_free(b, n);
    fb_json_array_end(j);
    fb_json_object_end(j);
}

/* ---- text --------------------------------------------------------------------------------- */

/* Peer text on one line: control characters become '?'. Heap. */
static char *s_clean(const char *text)
{
    char *out = xstrdup(text ? text : "");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return out;
}

void report__env_text(const report_env_t *env, FILE *out)
{
    if (!env->n_nodes)
        return; /* a campaign from before fingerprints, or one that gave no node a task */
    if (!env->n_compared) {
        fprintf(out, "\nenvironment: recorded for %zu node%s; none ran an earlier campaign\n",
                env->n_nodes, env->n_nodes == 1 ? "" : "s");
        return;
    }
    if (!env->n_changes) {
        fprintf(out, "\nenvironment: unchanged since the previous campaign of %zu of %zu node%s\n",
                env->n_compared, env->n_nodes, env->n_nodes == 1 ? "" : "s");
        return;
    }
    fprintf(out, "\nchanges since previous campaign (%zu of %zu node%s ran one)\n", env->n_compared,
            env->n_nodes, env->n_nodes == 1 ? "" : "s");
    for (size_t i = 0; i < env->n_changes; i++) {
        char *line = fb_fp_group_line(&env->changes[i]);
        char *clean = s_clean(line);
        fprintf(out, "  %s\n", clean);
        free(clean);
        free(line);
    }
}
