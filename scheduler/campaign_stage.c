/* SPDX-License-Identifier: Apache-2.0 */
/* One stage of a campaign file (campaign_internal.h): its keys (name, workload, timeout, on_fail,
 * nodes, params and the multi-node keys scope, group_size, pairing, seed, topology, routes,
 * rounds, rails and the bisect_* keys), the parameters checked against the workload's schema
 * with their defaults filled in, and the checks that need the whole stage (a key that does not
 * apply to its scope or pairing, on_fail: bisect and its keys, a workload in a scope it cannot
 * run in). Separate from campaign.c, which reads the campaign around the stages (its top-level
 * keys, the files its stages name, the entry points), because a stage has the most keys and
 * most of the rules; the keys with rules of their own parse in their own files
 * (bisect_budget.c, stage_routes.c). Errors point at the line and key path, as in the rest of
 * the parser. */
#include "campaign_internal.h"

#include "bisect_budget.h"
#include "routes.h"
#include "stage_routes.h"
#include "topology.h"
#include "workload.h"
#include "common/conffile.h"
#include "common/hostlist.h"
#include "common/strmap.h"
#include "common/units.h"
#include "common/util.h"
#include "common/value_limits.h"
#include "common/yamldoc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define S_STAGE_NAME_MAX 64
#define S_STAGE_KEYS                                                                               \
    "name, workload, timeout, on_fail, nodes, params, scope, group_size, pairing, seed, "          \
    "topology, routes, rounds, bisect_budget, bisect_rounds, bisect_repeat, bisect_slow, rails, "  \
    "bisect_prior"
#define S_BISECT_ROUNDS_MAX 1000
#define S_BISECT_REPEAT_MAX 100
#define S_GROUP_SIZE_MAX 4096
#define S_ROUNDS_MAX 10000
#define S_RAILS_MAX 64 /* rails (NICs) a stage may name: more than any node has */

/* ---- fields ---- */

static bool s_stage_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > S_STAGE_NAME_MAX)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return false;
    return true;
}

static int s_param_item_check(fb_yaml_t *ctx, const yaml_node_t *item, const char *text,
                              const char *path, const void *arg)
{
    const fb_param_spec_t *spec = arg;
    char problem[512], expected[1024];
    if (fb_param_check(spec, text, problem, sizeof problem, expected, sizeof expected))
        return fb_yaml_fail(ctx, fb_yaml_line(item), path, "%s; %s", problem, expected);
    return 0;
}

static int s_params(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                    const fb_workload_spec_t *w, fb_stage_t *st)
{
    char names[512], problem[512], expected[1024];
    fb_workload_param_names(w, names, sizeof names);
    char **given = xcalloc(w->n_params, sizeof *given);
    int rc = 0;
    if (node && !fb_yaml_is_null(node)) {
        if (node->type != YAML_MAPPING_NODE) {
            rc = fb_yaml_fail(ctx, fb_yaml_line(node), path,
                              "is %s; expected a mapping of parameter: value for workload %s, e.g. "
                              "{%s: ...}",
                              fb_yaml_kind(node), w->name, w->n_params ? w->params[0].name : "key");
            goto out;
        }
        for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
             pair < node->data.mapping.pairs.top; pair++) {
            yaml_node_t *k = fb_yaml_node(ctx, pair->key), *v = fb_yaml_node(ctx, pair->value);
            const char *key;
            if (!k || !v || fb_yaml_key(ctx, k, path, names, &key)) {
                rc = -EINVAL;
                goto out;
            }
            char *kpath = fb_yaml_path(path, key);
            const fb_param_spec_t *spec = fb_workload_param(w, key);
            size_t idx = spec ? (size_t)(spec - w->params) : 0;
            const char *site = spec ? NULL : fb_workload_site_setting(w, key);
            if (site) {
                rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                                  "not a campaign parameter any more: %s is a site setting (%s = "
                                  "... in " FB_AGENT_CONFIG_DEFAULT "); expected it removed from "
                                  "the campaign",
                                  site, key);
            } else if (!spec) {
                rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                                  "unknown parameter for workload %s; expected one of %s", w->name,
                                  names);
            } else if (given[idx]) {
                rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                                  "parameter given twice; expected each once");
            } else {
                fb_param_check(spec, "", NULL, 0, expected, sizeof expected);
                char *value = NULL;
                rc = campaign__scalar_or_list(ctx, v, kpath, expected,
                                              spec->type == FB_PARAM_ENUM_LIST, s_param_item_check,
                                              spec, &value);
                if (!rc &&
                    fb_param_check(spec, value, problem, sizeof problem, expected, sizeof expected))
                    rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "%s; %s", problem, expected);
                if (rc)
                    free(value);
                else
                    given[idx] = value;
            }
            free(kpath);
            if (rc)
                goto out;
        }
    }
    st->params = xcalloc(w->n_params, sizeof *st->params);
    for (size_t i = 0; i < w->n_params; i++) {
        const fb_param_spec_t *spec = &w->params[i];
        const char *value = given[i];
        if (!value && (!spec->default_value || spec->fault_injection))
            continue;
        st->params[st->n_params].key = xstrdup(spec->name);
        st->params[st->n_params].value = value ? given[i] : xstrdup(spec->default_value);
        given[i] = NULL;
        st->n_params++;
    }
out:
    for (size_t i = 0; i < w->n_params; i++)
        free(given[i]);
    free(given);
    return rc;
}

void campaign__stage_fini(fb_stage_t *st)
{
    free(st->name);
    free(st->workload);
    free(st->nodes_expr);
    for (size_t i = 0; i < st->n_params; i++) {
        free(st->params[i].key);
        free(st->params[i].value);
    }
    free(st->params);
    free(st->topology_path);
    fb_topology_destroy(&st->topology);
    free(st->routes_path);
    fb_routes_destroy(&st->routes);
    fb_hostlist_free(st->rails, st->n_rails);
    free(st->bisect_prior);
    memset(st, 0, sizeof *st);
}

static yaml_node_t *s_lookup(fb_yaml_t *ctx, const yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *k = fb_yaml_node(ctx, pair->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            !memcmp(k->data.scalar.value, key, k->data.scalar.length))
            return fb_yaml_node(ctx, pair->value);
    }
    return NULL;
}

/* ---- multi-node keys ---- */

/* Where each multi-node key of a stage was written (0 = absent). Whether a key applies depends
 * on scope and pairing, which may be written after it, so those checks run on the whole stage. */
typedef struct {
    int scope, group_size, pairing, seed, topology, routes, rounds;
    int on_fail, bisect_rounds, bisect_repeat, rails, bisect_prior, bisect_budget, bisect_slow;
} s_scope_lines_t;

static int *s_scope_line(s_scope_lines_t *lines, const char *key)
{
    return !strcmp(key, "scope")           ? &lines->scope
           : !strcmp(key, "group_size")    ? &lines->group_size
           : !strcmp(key, "pairing")       ? &lines->pairing
           : !strcmp(key, "seed")          ? &lines->seed
           : !strcmp(key, "topology")      ? &lines->topology
           : !strcmp(key, "routes")        ? &lines->routes
           : !strcmp(key, "rounds")        ? &lines->rounds
           : !strcmp(key, "bisect_rounds") ? &lines->bisect_rounds
           : !strcmp(key, "bisect_repeat") ? &lines->bisect_repeat
           : !strcmp(key, "rails")         ? &lines->rails
           : !strcmp(key, "bisect_prior")  ? &lines->bisect_prior
           : !strcmp(key, "bisect_budget") ? &lines->bisect_budget
           : !strcmp(key, "bisect_slow")   ? &lines->bisect_slow
                                           : NULL;
}

/* bisect_slow: a fraction strictly between 0 and 1 (0.93 means 7% below the class median). */
static int s_slow_value(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath, double *out)
{
    static const char exp[] = "expected a fraction of the median bandwidth above 0 and below 1, "
                              "e.g. 0.93 (the default) or 0.5";
    const char *text;
    char shown[256], *end = NULL;
    if (fb_yaml_scalar(ctx, v, kpath, exp, &text))
        return -EINVAL;
    errno = 0;
    double f = strtod(text, &end);
    if (end == text || *end || errno || !(f > 0.0 && f < 1.0))
        return fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "'%s': %s",
                            fb_show_value(text, shown, sizeof shown), exp);
    *out = f;
    return 0;
}

/* rails: hostlist notation (mlx5_[0-7]) or a YAML list of names. */
static int s_rails_value(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath, fb_stage_t *st)
{
    char *expr = NULL;
    if (campaign__hostlist(ctx, v, kpath, &expr))
        return -EINVAL;
    char err[256];
    size_t count = 0;
    if (strcmp(expr, "all") && fb_hostlist_check(expr, &count, err, sizeof err) == 0 &&
        count > S_RAILS_MAX) {
        char shown[128];
        fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "'%s' names %zu rails; expected at most %d",
                     fb_show_value(expr, shown, sizeof shown), count, S_RAILS_MAX);
        free(expr);
        return -EINVAL;
    }
    int rc = fb_hostlist_expand(expr, &st->rails, &st->n_rails, err, sizeof err);
    if (rc || st->n_rails == 0 || !strcmp(expr, "all")) {
        fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                     "'%s' names no rails; expected the rails of every node, "
                     "e.g. mlx5_[0-7]",
                     expr);
        free(expr);
        return -EINVAL;
    }
    free(expr);
    return 0;
}

/* Parses the value of one multi-node key into st. */
static int s_scope_value(fb_yaml_t *ctx, const char *key, const yaml_node_t *v, const char *kpath,
                         fb_stage_t *st)
{
    const char *text;
    char shown[256];
    uint64_t n;
    if (!strcmp(key, "scope")) {
        const char *exp = "expected node, group or pairs";
        if (fb_yaml_scalar(ctx, v, kpath, exp, &text))
            return -EINVAL;
        if (fb_scope_parse(text, &st->scope))
            return fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "unknown scope '%s'; %s",
                                fb_show_value(text, shown, sizeof shown), exp);
    } else if (!strcmp(key, "group_size")) {
        const char *exp = "expected 0 (every selected node in one group) or a group size from 2 "
                          "to 4096";
        if (fb_yaml_uint(ctx, v, kpath, 0, S_GROUP_SIZE_MAX, exp, &n))
            return -EINVAL;
        if (n == 1)
            return fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                                "a group of one node tests nothing between nodes (scope: node runs "
                                "each node alone); %s",
                                exp);
        st->group_size = (size_t)n;
    } else if (!strcmp(key, "pairing")) {
        const char *exp = "expected random, round-robin or topology";
        if (fb_yaml_scalar(ctx, v, kpath, exp, &text))
            return -EINVAL;
        if (fb_pairing_parse(text, &st->pairing))
            return fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "unknown pairing '%s'; %s",
                                fb_show_value(text, shown, sizeof shown), exp);
    } else if (!strcmp(key, "seed")) {
        if (fb_yaml_uint(ctx, v, kpath, 0, UINT64_MAX,
                         "expected an integer from 0 to 18446744073709551615", &st->seed))
            return -EINVAL;
        st->has_seed = true;
    } else if (!strcmp(key, "topology")) {
        if (fb_yaml_scalar(ctx, v, kpath,
                           "expected the path of a topology file or of ibnetdiscover output",
                           &text))
            return -EINVAL;
        st->topology_path = xstrdup(text);
        st->topology_line = fb_yaml_line(v);
    } else if (!strcmp(key, "routes")) {
        return fb_stage_routes_key(ctx, v, kpath, st);
    } else if (!strcmp(key, "rounds")) {
        if (fb_yaml_uint(ctx, v, kpath, 1, S_ROUNDS_MAX, "expected an integer from 1 to 10000", &n))
            return -EINVAL;
        st->rounds = (unsigned)n;
    } else if (!strcmp(key, "bisect_rounds")) {
        if (fb_yaml_uint(ctx, v, kpath, 1, S_BISECT_ROUNDS_MAX,
                         "expected an integer from 1 to 1000", &n))
            return -EINVAL;
        st->bisect_rounds = (unsigned)n;
    } else if (!strcmp(key, "bisect_repeat")) {
        if (fb_yaml_uint(ctx, v, kpath, 1, S_BISECT_REPEAT_MAX, "expected an integer from 1 to 100",
                         &n))
            return -EINVAL;
        st->bisect_repeat = (unsigned)n;
    } else if (!strcmp(key, "rails")) {
        return s_rails_value(ctx, v, kpath, st);
    } else if (!strcmp(key, "bisect_prior")) {
        if (fb_yaml_scalar(ctx, v, kpath, "expected the name of an earlier stage with scope: node",
                           &text))
            return -EINVAL;
        st->bisect_prior = xstrdup(text);
    } else if (!strcmp(key, "bisect_budget")) {
        return fb_bisect_budget_parse(ctx, v, kpath, &st->bisect_rounds, &st->bisect_budget_ms);
    } else if (!strcmp(key, "bisect_slow")) {
        return s_slow_value(ctx, v, kpath, &st->bisect_slow);
    }
    return 0;
}

/* A key written where it does not apply: "KEY applies only to WHAT (this stage has NOW)". */
static int s_not_applicable(fb_yaml_t *ctx, int line, const char *path, const char *key,
                            const char *applies, const char *now)
{
    char *kpath = fb_yaml_path(path, key);
    fb_yaml_fail(ctx, line, kpath,
                 "applies only to %s, and this stage has %s; expected %s removed, or %s", applies,
                 now, key, applies);
    free(kpath);
    return -EINVAL;
}

/* The checks that need the whole stage: keys that do not apply to its scope or pairing, and a
 * topology for pairing topology. */
static int s_scope_check(fb_yaml_t *ctx, const char *path, int stage_line,
                         const s_scope_lines_t *lines, const fb_stage_t *st)
{
    char now[64];
    snprintf(now, sizeof now, "scope: %s", fb_scope_name(st->scope));
    if (lines->group_size && st->scope != FB_SCOPE_GROUP)
        return s_not_applicable(ctx, lines->group_size, path, "group_size", "scope: group", now);
    if (lines->pairing && st->scope != FB_SCOPE_PAIRS)
        return s_not_applicable(ctx, lines->pairing, path, "pairing", "scope: pairs", now);
    if (lines->rounds && st->scope != FB_SCOPE_PAIRS)
        return s_not_applicable(ctx, lines->rounds, path, "rounds", "scope: pairs", now);
    if (st->scope == FB_SCOPE_PAIRS)
        snprintf(now, sizeof now, "pairing: %s", fb_pairing_name(st->pairing));
    bool pairs = st->scope == FB_SCOPE_PAIRS;
    if (lines->seed && !(pairs && st->pairing == FB_PAIRING_RANDOM))
        return s_not_applicable(ctx, lines->seed, path, "seed", "pairing: random", now);
    if (lines->topology && !(pairs && st->pairing == FB_PAIRING_TOPOLOGY))
        return s_not_applicable(ctx, lines->topology, path, "topology", "pairing: topology", now);
    if (lines->routes && !lines->topology)
        return s_not_applicable(ctx, lines->routes, path, "routes", "a stage with topology", now);
    if (pairs && st->pairing == FB_PAIRING_TOPOLOGY && !lines->topology) {
        char *kpath = fb_yaml_path(path, "topology");
        fb_yaml_fail(
            ctx, stage_line, kpath,
            "missing: pairing: topology pairs nodes by the fabric; expected topology: FILE, a "
            "topology file or ibnetdiscover output");
        free(kpath);
        return -EINVAL;
    }
    return 0;
}

/* on_fail: bisect and its keys: bisection needs tests between nodes (scope group or pairs);
 * each key applies to the scope that uses it; rails need a workload that can be told which
 * device to use; bisect_prior names an earlier node-local stage. */
static int s_bisect_check(fb_yaml_t *ctx, const char *path, const s_scope_lines_t *lines,
                          const fb_campaign_t *c, size_t index, const fb_stage_t *st)
{
    bool bisect = st->on_fail == FB_ON_FAIL_BISECT;
    char now[64];
    snprintf(now, sizeof now, "scope: %s", fb_scope_name(st->scope));
    if (bisect && st->scope == FB_SCOPE_NODE) {
        char *kpath = fb_yaml_path(path, "on_fail");
        fb_yaml_fail(
            ctx, lines->on_fail, kpath,
            "'bisect' applies only to scope: group or pairs, and this stage has scope: node "
            "(a node-local test names its failing node by itself); expected continue or stop, "
            "or scope: group or pairs");
        free(kpath);
        return -EINVAL;
    }
    const char *keys[] = {"bisect_rounds", "bisect_repeat", "rails",
                          "bisect_prior",  "bisect_budget", "bisect_slow"};
    const int at[] = {lines->bisect_rounds, lines->bisect_repeat, lines->rails,
                      lines->bisect_prior,  lines->bisect_budget, lines->bisect_slow};
    for (size_t i = 0; i < 6; i++)
        if (at[i] && !bisect)
            return s_not_applicable(ctx, at[i], path, keys[i], "on_fail: bisect",
                                    "no on_fail: bisect");
    if (lines->bisect_rounds && lines->bisect_budget) {
        char *kpath = fb_yaml_path(path, "bisect_rounds");
        fb_yaml_fail(ctx, lines->bisect_rounds, kpath,
                     "given with bisect_budget (line %d), which holds the rounds too; expected "
                     "bisect_budget: {rounds: N} alone",
                     lines->bisect_budget);
        free(kpath);
        return -EINVAL;
    }
    if (lines->bisect_repeat && st->scope != FB_SCOPE_GROUP)
        return s_not_applicable(ctx, lines->bisect_repeat, path, "bisect_repeat", "scope: group",
                                now);
    if (lines->rails && st->scope != FB_SCOPE_PAIRS)
        return s_not_applicable(ctx, lines->rails, path, "rails", "scope: pairs", now);
    if (lines->bisect_prior && st->scope != FB_SCOPE_PAIRS)
        return s_not_applicable(ctx, lines->bisect_prior, path, "bisect_prior", "scope: pairs",
                                now);
    if (lines->rails && !fb_workload_param(fb_workload_find(st->workload), "device")) {
        char *kpath = fb_yaml_path(path, "rails");
        fb_yaml_fail(ctx, lines->rails, kpath,
                     "workload %s cannot be told which rail to use (it has no device parameter); "
                     "expected rails removed, or a workload such as rdmabw",
                     st->workload);
        free(kpath);
        return -EINVAL;
    }
    if (st->bisect_prior) {
        bool found = false;
        for (size_t i = 0; i < index && !found; i++)
            found =
                !strcmp(c->stages[i].name, st->bisect_prior) && c->stages[i].scope == FB_SCOPE_NODE;
        if (!found) {
            char *kpath = fb_yaml_path(path, "bisect_prior");
            char shown[256];
            fb_yaml_fail(ctx, lines->bisect_prior, kpath,
                         "'%s' is not an earlier stage with scope: node; expected the name of a "
                         "node-local stage before this one",
                         fb_show_value(st->bisect_prior, shown, sizeof shown));
            free(kpath);
            return -EINVAL;
        }
    }
    return 0;
}

/* fb_stage_param for fb_workload_check_scope. */
static const char *s_stage_param_of(const void *stage, const char *key)
{
    return fb_stage_param(stage, key);
}

int campaign__stage(fb_yaml_t *ctx, const yaml_node_t *node, size_t index, fb_strmap_t *names,
                    fb_campaign_t *c, fb_stage_t *st)
{
    char path[64], workloads[256];
    snprintf(path, sizeof path, "stages[%zu]", index);
    fb_workload_names(workloads, sizeof workloads);
    st->line = fb_yaml_line(node);
    st->timeout_ms = 3600000;
    st->on_fail = FB_ON_FAIL_CONTINUE;
    st->scope = FB_SCOPE_NODE;
    st->pairing = FB_PAIRING_ROUND_ROBIN;
    st->rounds = 1;
    st->bisect_rounds = 24;
    st->bisect_repeat = 2;
    if (node->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(node), path,
                            "is %s; expected a mapping with name, workload and optionally timeout, "
                            "on_fail, nodes, params",
                            fb_yaml_kind(node));

    /* the workload first: parameters are checked against it wherever they are written */
    const fb_workload_spec_t *w = NULL;
    char *kpath = fb_yaml_path(path, "workload");
    yaml_node_t *wnode = s_lookup(ctx, node, "workload");
    char expected[512];
    snprintf(expected, sizeof expected, "expected one of %s", workloads);
    int rc = 0;
    const char *text;
    if (!wnode) {
        rc = fb_yaml_fail(ctx, fb_yaml_line(node), kpath, "missing; %s", expected);
    } else if (!fb_yaml_scalar(ctx, wnode, kpath, expected, &text)) {
        char shown[256];
        w = fb_workload_find(text);
        if (!w)
            rc = fb_yaml_fail(ctx, fb_yaml_line(wnode), kpath, "unknown workload '%s'; %s",
                              fb_show_value(text, shown, sizeof shown), expected);
        else
            st->workload = xstrdup(text);
    } else {
        rc = -EINVAL;
    }
    free(kpath);
    if (rc)
        return rc;

    bool seen_name = false, seen_workload = false, seen_timeout = false, seen_on_fail = false,
         seen_nodes = false, seen_params = false;
    s_scope_lines_t scope_lines = {0};
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top && !rc; pair++) {
        yaml_node_t *k = fb_yaml_node(ctx, pair->key), *v = fb_yaml_node(ctx, pair->value);
        const char *key;
        if (!k || !v || fb_yaml_key(ctx, k, path, S_STAGE_KEYS, &key))
            return -EINVAL;
        kpath = fb_yaml_path(path, key);
        bool *seen = !strcmp(key, "name")       ? &seen_name
                     : !strcmp(key, "workload") ? &seen_workload
                     : !strcmp(key, "timeout")  ? &seen_timeout
                     : !strcmp(key, "on_fail")  ? &seen_on_fail
                     : !strcmp(key, "nodes")    ? &seen_nodes
                     : !strcmp(key, "params")   ? &seen_params
                                                : NULL;
        int *scope_line = seen ? NULL : s_scope_line(&scope_lines, key);
        if (scope_line) {
            if (*scope_line)
                rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                                  "key given twice; expected each key once");
            else
                rc = s_scope_value(ctx, key, v, kpath, st);
            *scope_line = fb_yaml_line(k);
        } else if (!seen) {
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath, "unknown key; expected one of %s",
                              S_STAGE_KEYS);
        } else if (*seen) {
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                              "key given twice; expected each key once");
        } else if (seen == &seen_name) {
            const char *exp = "expected a unique stage name of letters, digits, '.', '_' or '-' "
                              "(at most 64), e.g. dram";
            char shown[256];
            rc = fb_yaml_scalar(ctx, v, kpath, exp, &text);
            if (!rc && !s_stage_name_ok(text))
                rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "'%s' is not a valid stage name; %s",
                                  fb_show_value(text, shown, sizeof shown), exp);
            /* a map, not a scan of the earlier stages: linear in the number of stages */
            size_t prev = rc ? 0 : (size_t)(uintptr_t)fb_strmap_get(names, text);
            if (prev)
                rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                                  "duplicate stage name '%s' (also stages[%zu] at line %d); "
                                  "expected a unique name",
                                  text, prev - 1, c->stages[prev - 1].line);
            if (!rc) {
                st->name = xstrdup(text);
                fb_strmap_put(names, text, (void *)(uintptr_t)(index + 1));
            }
        } else if (seen == &seen_timeout) {
            const char *exp = "expected e.g. 90s, 30m, 2h";
            char shown[256];
            rc = fb_yaml_scalar(ctx, v, kpath, exp, &text);
            if (!rc && fb_parse_duration_ms(text, &st->timeout_ms))
                rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "'%s' is not a duration; %s",
                                  fb_show_value(text, shown, sizeof shown), exp);
            else if (!rc && st->timeout_ms == 0)
                rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                                  "'%s' is zero; expected a duration above zero, "
                                  "e.g. 90s, 30m, 2h",
                                  fb_show_value(text, shown, sizeof shown));
            else if (!rc && st->timeout_ms > FB_LIMIT_TIMEOUT_MS_MAX)
                /* Agents and the wire refuse a longer one (common/value_limits.h). */
                rc =
                    fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                                 "'%s' is over the limit of 30d (%llu ms), the longest timeout "
                                 "an agent accepts; expected at most 30d",
                                 fb_show_value(text, shown, sizeof shown), FB_LIMIT_TIMEOUT_MS_MAX);
        } else if (seen == &seen_on_fail) {
            const char *exp = "expected continue, stop or bisect";
            char shown[256];
            rc = fb_yaml_scalar(ctx, v, kpath, exp, &text);
            scope_lines.on_fail = fb_yaml_line(v);
            if (rc)
                ;
            else if (!strcmp(text, "continue"))
                st->on_fail = FB_ON_FAIL_CONTINUE;
            else if (!strcmp(text, "stop"))
                st->on_fail = FB_ON_FAIL_STOP;
            else if (!strcmp(text, "bisect"))
                st->on_fail = FB_ON_FAIL_BISECT; /* scope group or pairs: s_bisect_check */
            else
                rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "unknown policy '%s'; %s",
                                  fb_show_value(text, shown, sizeof shown), exp);
        } else if (seen == &seen_nodes) {
            rc = campaign__hostlist(ctx, v, kpath, &st->nodes_expr);
        } else if (seen == &seen_params) {
            rc = s_params(ctx, v, kpath, w, st);
        }
        if (seen)
            *seen = true;
        free(kpath);
    }
    if (rc)
        return rc;
    if (!seen_name) {
        kpath = fb_yaml_path(path, "name");
        rc = fb_yaml_fail(ctx, fb_yaml_line(node), kpath,
                          "missing; expected a unique stage name, e.g. name: dram");
        free(kpath);
        return rc;
    }
    if (s_scope_check(ctx, path, st->line, &scope_lines, st) ||
        s_bisect_check(ctx, path, &scope_lines, c, index, st))
        return -EINVAL;
    if (!seen_params && s_params(ctx, NULL, path, w, st)) /* defaults */
        return -EINVAL;
    /* A workload in a scope it does not run in is refused now, not when its tasks fail. */
    char why[512];
    if (fb_workload_check_scope(w, st->scope, scope_lines.scope, s_stage_param_of, st, why,
                                sizeof why)) {
        kpath = fb_yaml_path(path, "scope");
        rc = fb_yaml_fail(ctx, scope_lines.scope ? scope_lines.scope : st->line, kpath,
                          "stage '%s': %s", st->name, why);
        free(kpath);
    }
    return rc;
}
