/* SPDX-License-Identifier: Apache-2.0 */
/* Campaign files: YAML in, a validated fb_campaign_t out. The libyaml document API gives every
 * node its position, so each error points at the line of the offending key or value and spells
 * out the key path and what was expected; a campaign that parses has known workloads, valid
 * parameters (defaults filled in), durations and hostlists, and the coordinator can run it
 * without checking again. Only the first error is reported. Input is untrusted: any byte
 * sequence gives either a campaign or one error line.
 *
 * This file holds the campaign around its stages: the value helpers the whole parser uses
 * (scalar or list, hostlists), the top-level keys, the entry points, the files a campaign's
 * stages name, and the accessors of a parsed campaign. A stage's keys and checks are in
 * campaign_stage.c; campaign_internal.h is what the two share. Keys with rules of their own
 * parse in their own files (actions.c, expect.c, regress_config.c, bisect_budget.c,
 * stage_routes.c). */
#include "campaign_internal.h"

#include "actions.h"
#include "expect.h"
#include "slurm.h"
#include "regress_config.h"
#include "stage_routes.h"
#include "topology.h"
#include "common/hostlist.h"
#include "common/strmap.h"
#include "common/util.h"
#include "common/yamldoc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define S_CAMPAIGN_NAME_MAX 200
#define S_TOP_KEYS "name, nodes, expect, stages, regress, actions"
/* What an attached topology file should be, in its messages. */
#define S_TOPOLOGY_EXPECTED                                                                        \
    "expected a topology file (lines 'leaf01: node[01-04]') or ibnetdiscover output"
#define S_HOSTLIST_EXPECTED "expected all, or hostlist notation such as node[01-16,20],gpu-a[1-4]"

/* Text of a scalar, or of a list of scalars joined with ',' (campaign_internal.h). */
int campaign__scalar_or_list(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                             const char *expected, bool list_ok, campaign__item_check_fn check,
                             const void *arg, char **out)
{
    const char *text;
    if (node->type != YAML_SEQUENCE_NODE || !list_ok) {
        if (node->type == YAML_SEQUENCE_NODE)
            return fb_yaml_fail(ctx, fb_yaml_line(node), path, "is a list; %s (a single value)",
                                expected);
        if (fb_yaml_scalar(ctx, node, path, expected, &text))
            return -EINVAL;
        *out = xstrdup(text);
        return 0;
    }
    size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    if (n == 0)
        return fb_yaml_fail(ctx, fb_yaml_line(node), path, "is an empty list; %s", expected);
    size_t cap = 64, len = 0;
    char *joined = xmalloc(cap);
    joined[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *item = fb_yaml_node(ctx, node->data.sequence.items.start[i]);
        char *ipath = xasprintf("%s[%zu]", path, i);
        int rc = item ? fb_yaml_scalar(ctx, item, ipath, expected, &text) : -EINVAL;
        if (!rc && check)
            rc = check(ctx, item, text, ipath, arg);
        free(ipath);
        if (rc) {
            free(joined);
            return -EINVAL;
        }
        size_t tl = strlen(text);
        if (len + tl + 2 > cap) {
            cap = (len + tl + 2) * 2;
            joined = xrealloc(joined, cap);
        }
        if (i)
            joined[len++] = ',';
        memcpy(joined + len, text, tl + 1);
        len += tl;
    }
    *out = joined;
    return 0;
}

/* ---- fields ---- */

int campaign__hostlist(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, char **out)
{
    char *expr;
    if (campaign__scalar_or_list(ctx, node, path, S_HOSTLIST_EXPECTED, true, NULL, NULL, &expr))
        return -EINVAL;
    /* Checked, not expanded: a few bytes can name a million nodes, and a campaign has many
     * stages (the runner expands a stage's nodes when it runs it). A Slurm selection is resolved
     * by the coordinator when the campaign is submitted (scheduler/slurm.h). */
    if (fb_slurm_is_selection(expr)) {
        char err[256];
        if (fb_slurm_selection_parse(expr, NULL, NULL, err, sizeof err)) {
            free(expr);
            return fb_yaml_fail(ctx, fb_yaml_line(node), path, "%s", err);
        }
    } else if (strcmp(expr, "all")) {
        char err[512];
        if (fb_hostlist_check(expr, NULL, err, sizeof err)) {
            free(expr);
            return fb_yaml_fail(ctx, fb_yaml_line(node), path, "%s; %s", err, S_HOSTLIST_EXPECTED);
        }
    }
    *out = expr;
    return 0;
}

/* ---- the campaign ---- */

static int s_campaign(fb_yaml_t *ctx, const yaml_node_t *root, fb_campaign_t *c)
{
    if (root->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(root), "(top level)",
                            "is %s; expected a mapping with keys %s", fb_yaml_kind(root),
                            S_TOP_KEYS);
    bool seen_name = false, seen_nodes = false, seen_stages = false, seen_expect = false,
         seen_actions = false, seen_regress = false;
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = fb_yaml_node(ctx, pair->key), *v = fb_yaml_node(ctx, pair->value);
        const char *key, *text;
        if (!k || !v || fb_yaml_key(ctx, k, "", S_TOP_KEYS, &key))
            return -EINVAL;
        char *kpath = fb_yaml_path("", key);
        int rc = 0;
        bool *seen = !strcmp(key, "name")      ? &seen_name
                     : !strcmp(key, "nodes")   ? &seen_nodes
                     : !strcmp(key, "stages")  ? &seen_stages
                     : !strcmp(key, "expect")  ? &seen_expect
                     : !strcmp(key, "actions") ? &seen_actions
                     : !strcmp(key, "regress") ? &seen_regress /* regress_config.c */
                                               : NULL;
        if (!seen) {
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath, "unknown key; expected one of %s",
                              S_TOP_KEYS);
        } else if (*seen) {
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                              "key given twice; expected each key once");
        } else if (seen == &seen_name) {
            const char *exp = "expected the campaign's name on one line (at most 200 characters), "
                              "e.g. rack12-burnin";
            rc = fb_yaml_scalar(ctx, v, kpath, exp, &text);
            if (!rc) {
                bool ok = strlen(text) <= S_CAMPAIGN_NAME_MAX;
                for (const char *p = text; ok && *p; p++)
                    ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
                if (!ok)
                    rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "not a valid name; %s", exp);
                else
                    c->name = xstrdup(text);
            }
        } else if (seen == &seen_actions) {
            rc = fb_actions_parse(ctx, v, kpath, &c->actions);
        } else if (seen == &seen_expect) {
            rc = fb_expect_parse(ctx, v, kpath, &c->expect); /* scheduler/expect.c */
        } else if (seen == &seen_regress) {
            rc = fb_regress_config_parse(ctx, v, kpath, &c->regress);
        } else if (seen == &seen_nodes) {
            char *expr = NULL;
            rc = campaign__hostlist(ctx, v, kpath, &expr);
            if (!rc) {
                free(c->nodes_expr);
                c->nodes_expr = expr;
            }
        } else {
            if (v->type != YAML_SEQUENCE_NODE) {
                rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                                  "is %s; expected a list of stages, each a mapping with name and "
                                  "workload",
                                  fb_yaml_is_null(v) ? "empty" : fb_yaml_kind(v));
            } else {
                size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
                if (n == 0)
                    rc = fb_yaml_fail(
                        ctx, fb_yaml_line(v), kpath,
                        "no stages; expected at least one stage with name and workload");
                c->stages = xcalloc(n ? n : 1, sizeof *c->stages);
                fb_strmap_t *names = fb_strmap_new(); /* stage name -> index + 1 */
                for (size_t i = 0; i < n && !rc; i++) {
                    yaml_node_t *item = fb_yaml_node(ctx, v->data.sequence.items.start[i]);
                    c->n_stages = i + 1;
                    rc = item ? campaign__stage(ctx, item, i, names, c, &c->stages[i]) : -EINVAL;
                }
                fb_strmap_destroy(&names);
            }
        }
        if (seen)
            *seen = true;
        free(kpath);
        if (rc)
            return rc;
    }
    if (!seen_name)
        return fb_yaml_fail(ctx, fb_yaml_line(root), "name",
                            "missing; expected the campaign's name, e.g. name: rack12-burnin");
    if (!seen_stages)
        return fb_yaml_fail(
            ctx, fb_yaml_line(root), "stages",
            "missing; expected a list of stages, each a mapping with name and workload");
    return c->expect ? fb_expect_campaign_check(ctx, c) : 0;
}

/* ---- entry points ---- */

/* The root of a campaign file (fb_yaml_parse_text) into the campaign arg. */
static int s_campaign_root(fb_yaml_t *ctx, yaml_node_t *root, void *arg)
{
    if (!root || fb_yaml_is_null(root))
        return fb_yaml_fail(ctx, fb_yaml_line(root), "(top level)",
                            "empty campaign file; expected a mapping with keys %s", S_TOP_KEYS);
    int rc = s_campaign(ctx, root, arg);
    /* one document per file: a second one is a mistake (two files pasted together) */
    if (!rc && ctx->extra_document_line)
        rc = fb_yaml_fail(ctx, ctx->extra_document_line, "(top level)",
                          "a second YAML document; expected one campaign per file");
    return rc;
}

int fb_campaign_parse(const char *text, size_t len, const char *source, fb_campaign_t **out,
                      char **error_out)
{
    *out = NULL;
    const char *name = source ? source : "<campaign>";
    fb_campaign_t *c = xcalloc(1, sizeof *c);
    c->source = xstrdup(name);
    c->nodes_expr = xstrdup("all");
    int rc = fb_yaml_parse_text(text, len, name, FB_CAMPAIGN_MAX_BYTES, "campaign file",
                                s_campaign_root, c, error_out);
    if (rc) {
        fb_campaign_destroy(&c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- the files a campaign names ---- */

/* The file a stage names: its topology (which 0) or its routes (1); NULL when none. */
static const char *s_file_of(const fb_stage_t *st, int which)
{
    return which ? st->routes_path : st->topology_path;
}

size_t fb_campaign_file_names(const fb_campaign_t *c, const char **names, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < 2 * c->n_stages; k++) { /* a stage's topology, then its routes */
        const char *name = s_file_of(&c->stages[k / 2], k % 2);
        bool seen = false;
        for (size_t j = 0; name && j < k && !seen; j++)
            seen = s_file_of(&c->stages[j / 2], j % 2) &&
                   !strcmp(s_file_of(&c->stages[j / 2], j % 2), name);
        if (!name || seen)
            continue;
        if (names && n < cap)
            names[n] = name;
        n++;
    }
    return n;
}

int campaign__file_fail(const fb_campaign_t *c, size_t i, const char *key, int line,
                        char **error_out, const char *fmt, ...)
{
    fb_yaml_t ctx = {c->source, "", 0, NULL, NULL, 0};
    char kpath[64];
    snprintf(kpath, sizeof kpath, "stages[%zu].%s", i, key);
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    fb_yaml_fail(&ctx, line, kpath, "%s", what);
    free(what);
    if (error_out)
        *error_out = ctx.error;
    else
        free(ctx.error);
    return -EINVAL;
}

int campaign__attached_text(const fb_campaign_t *c, size_t i, const char *key, const char *path,
                            int line, const fb_campaign_file_t *files, size_t n,
                            const char *expected, char **error_out, char **text_out)
{
    char shown[256];
    fb_show_value(path, shown, sizeof shown);
    const fb_campaign_file_t *file = NULL;
    for (size_t f = 0; f < n && !file; f++)
        if (!strcmp(files[f].name, path))
            file = &files[f];
    if (!file)
        return campaign__file_fail(c, i, key, line, error_out,
                                   "'%s' was not attached to the campaign; expected the %s file's "
                                   "content with it (fleetburn run sends the files a campaign "
                                   "names; the coordinator opens no path it is sent)",
                                   shown, key);
    if (memchr(file->content, 0, file->len))
        return campaign__file_fail(c, i, key, line, error_out, "'%s' holds a NUL byte; %s", shown,
                                   expected);
    *text_out = xstrndup(file->content, file->len);
    return 0;
}

int fb_campaign_attach_files(fb_campaign_t *c, const fb_campaign_file_t *files, size_t n,
                             char **error_out)
{
    if (error_out)
        *error_out = NULL;
    char shown[256];
    for (size_t f = 0; f < n; f++) {
        for (size_t g = 0; g < f; g++)
            if (!strcmp(files[f].name, files[g].name)) {
                if (error_out)
                    *error_out =
                        xasprintf("%s: the file '%s' is attached twice; expected each "
                                  "file the campaign names once",
                                  c->source, fb_show_value(files[f].name, shown, sizeof shown));
                return -EINVAL;
            }
        bool named = false;
        for (size_t k = 0; k < 2 * c->n_stages && !named; k++)
            named = s_file_of(&c->stages[k / 2], k % 2) &&
                    !strcmp(s_file_of(&c->stages[k / 2], k % 2), files[f].name);
        if (!named) {
            if (error_out)
                *error_out =
                    xasprintf("%s: the file '%s' is attached but the campaign does not "
                              "name it; expected only the files its stages name "
                              "(topology, routes)",
                              c->source, fb_show_value(files[f].name, shown, sizeof shown));
            return -EINVAL;
        }
    }
    for (size_t i = 0; i < c->n_stages; i++) {
        fb_stage_t *st = &c->stages[i];
        if (!st->topology_path || st->topology)
            continue;
        char *text;
        if (campaign__attached_text(c, i, "topology", st->topology_path, st->topology_line, files,
                                    n, S_TOPOLOGY_EXPECTED, error_out, &text))
            return -EINVAL;
        fb_show_value(st->topology_path, shown, sizeof shown);
        char err[512];
        int rc = fb_topology_parse_any(text, &st->topology, err, sizeof err);
        free(text);
        if (rc)
            return campaign__file_fail(c, i, "topology", c->stages[i].topology_line, error_out,
                                       "cannot load '%s': %s; %s", shown, err, S_TOPOLOGY_EXPECTED);
    }
    for (size_t i = 0; i < c->n_stages; i++)
        if (c->stages[i].routes_path && !c->stages[i].routes &&
            fb_stage_routes_attach(c, i, files, n, error_out))
            return -EINVAL;
    return 0;
}

void fb_campaign_destroy(fb_campaign_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_campaign_t *c = *self_p;
    for (size_t i = 0; i < c->n_stages; i++)
        campaign__stage_fini(&c->stages[i]);
    free(c->stages);
    fb_expect_destroy(&c->expect);
    free(c->name);
    free(c->nodes_expr);
    free(c->source);
    fb_actions_fini(&c->actions);
    fb_campaign_selections_free(c);
    fb_regress_config_destroy(&c->regress);
    free(c);
    *self_p = NULL;
}

const char *fb_stage_param(const fb_stage_t *s, const char *key)
{
    for (size_t i = 0; s && key && i < s->n_params; i++)
        if (!strcmp(s->params[i].key, key))
            return s->params[i].value;
    return NULL;
}

int fb_stage_nodes(const fb_campaign_t *c, const fb_stage_t *s, bool *all, char ***names, size_t *n,
                   char *err, size_t errlen)
{
    const char *expr = s && s->nodes_expr ? s->nodes_expr : c->nodes_expr;
    *names = NULL;
    *n = 0;
    *all = false;
    if (!expr || !strcmp(expr, "all")) {
        *all = true;
        if (err && errlen)
            err[0] = '\0';
        return 0;
    }
    if (fb_slurm_is_selection(expr)) {
        const char *resolved = fb_campaign_selection(c, expr);
        if (!resolved) {
            snprintf(err, errlen,
                     "nodes: %s was not resolved (the coordinator asks Slurm for it "
                     "when the campaign is submitted)",
                     expr);
            return -EINVAL;
        }
        expr = resolved;
    }
    return fb_hostlist_expand(expr, names, n, err, errlen);
}

const char *fb_on_fail_name(fb_on_fail_t on_fail)
{
    switch (on_fail) {
    case FB_ON_FAIL_CONTINUE:
        return "continue";
    case FB_ON_FAIL_STOP:
        return "stop";
    case FB_ON_FAIL_BISECT:
        return "bisect";
    }
    return "unknown";
}
