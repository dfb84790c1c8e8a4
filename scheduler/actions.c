/* SPDX-License-Identifier: Apache-2.0 */
/* The `actions:` mapping of a campaign file: what the coordinator does with the campaign's
 * verdicts when it ends. One dispatch per subkey (s_subkeys), each subkey parsed by its own
 * function (slurm here, webhook in webhook.c), so that adding a kind of action is one row and
 * one function. Every value is checked
 * here, so that the coordinator acts on a campaign without checking again. */
#include "actions.h"

#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S_SLURM_KEYS "drain, resume, dry_run, max_fraction"

static int s_mapping(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                     const char *expected)
{
    if (node->type == YAML_MAPPING_NODE)
        return 0;
    return fb_yaml_fail(ctx, fb_yaml_line(node), path, "is %s; expected a mapping with keys %s",
                        fb_yaml_is_null(node) ? "empty" : fb_yaml_kind(node), expected);
}

static int s_bool(fb_yaml_t *ctx, const yaml_node_t *v, const char *path, bool *out)
{
    static const char expected[] = "expected true or false";
    const char *text;
    if (fb_yaml_scalar(ctx, v, path, expected, &text))
        return -EINVAL;
    if (fb_parse_bool(text, out)) {
        char shown[64];
        return fb_yaml_fail(ctx, fb_yaml_line(v), path, "'%s' is not a boolean; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    }
    return 0;
}

/* A fraction above 0 and at most 1: "0.25" or "25%". */
static int s_fraction(fb_yaml_t *ctx, const yaml_node_t *v, const char *path, double *out)
{
    static const char expected[] =
        "expected a fraction of the campaign's nodes above 0 and at most 1, such as 0.25 or 25%";
    const char *text;
    if (fb_yaml_scalar(ctx, v, path, expected, &text))
        return -EINVAL;
    size_t len = strlen(text);
    bool percent = len > 1 && text[len - 1] == '%';
    char *number = xstrndup(text, percent ? len - 1 : len);
    double f;
    int rc = fb_parse_double(number, &f);
    free(number);
    if (!rc && percent)
        f /= 100.0;
    if (rc || !(f > 0.0 && f <= 1.0)) {
        char shown[64];
        return fb_yaml_fail(ctx, fb_yaml_line(v), path, "'%s' is not a fraction in (0, 1]; %s",
                            fb_show_value(text, shown, sizeof shown), expected);
    }
    *out = f;
    return 0;
}

/* actions.slurm */
static int s_slurm(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, fb_actions_t *out)
{
    fb_slurm_actions_t *s = &out->slurm;
    *s = (fb_slurm_actions_t){.drain = true,
                              .resume = true,
                              .dry_run = true,
                              .max_fraction = FB_SLURM_MAX_FRACTION_DEFAULT};
    out->has_slurm = true;
    if (fb_yaml_is_null(node)) /* `slurm:` alone: every default (a dry run) */
        return 0;
    if (s_mapping(ctx, node, path, S_SLURM_KEYS))
        return -EINVAL;
    unsigned seen = 0;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = fb_yaml_node(ctx, p->key), *v = fb_yaml_node(ctx, p->value);
        const char *key;
        if (!v || fb_yaml_key(ctx, k, path, S_SLURM_KEYS, &key))
            return -EINVAL;
        static const char *const keys[] = {"drain", "resume", "dry_run", "max_fraction"};
        unsigned which = 0;
        while (which < FB_ARRAY_LEN(keys) && strcmp(keys[which], key))
            which++;
        char *kpath = fb_yaml_path(path, key);
        int rc;
        if (which == FB_ARRAY_LEN(keys))
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath, "unknown key; expected one of %s",
                              S_SLURM_KEYS);
        else if (seen & (1u << which))
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                              "key given twice; expected each key once");
        else if (which == 0)
            rc = s_bool(ctx, v, kpath, &s->drain);
        else if (which == 1)
            rc = s_bool(ctx, v, kpath, &s->resume);
        else if (which == 2)
            rc = s_bool(ctx, v, kpath, &s->dry_run);
        else
            rc = s_fraction(ctx, v, kpath, &s->max_fraction);
        seen |= 1u << (which < FB_ARRAY_LEN(keys) ? which : 0);
        free(kpath);
        if (rc)
            return rc;
    }
    return 0;
}

/* actions.webhook (webhook.c) */
static int s_webhook(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, fb_actions_t *out)
{
    return fb_webhook_parse(ctx, node, path, &out->webhook);
}

/* One row per subkey of `actions:`. */
typedef int (*s_subkey_fn)(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                           fb_actions_t *out);
static const struct {
    const char *key;
    s_subkey_fn parse;
} s_subkeys[] = {
    {"slurm", s_slurm},
    {"webhook", s_webhook},
};
#define S_ACTION_KEYS "slurm, webhook"

int fb_actions_parse(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, fb_actions_t *out)
{
    memset(out, 0, sizeof *out);
    if (s_mapping(ctx, node, path, S_ACTION_KEYS))
        return -EINVAL;
    bool seen[FB_ARRAY_LEN(s_subkeys)] = {false};
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = fb_yaml_node(ctx, p->key), *v = fb_yaml_node(ctx, p->value);
        const char *key;
        if (!v || fb_yaml_key(ctx, k, path, S_ACTION_KEYS, &key))
            return -EINVAL;
        size_t i = 0;
        while (i < FB_ARRAY_LEN(s_subkeys) && strcmp(s_subkeys[i].key, key))
            i++;
        char *kpath = fb_yaml_path(path, key);
        int rc;
        if (i == FB_ARRAY_LEN(s_subkeys))
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath, "unknown action; expected one of %s",
                              S_ACTION_KEYS);
        else if (seen[i])
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                              "key given twice; expected each key once");
        else
            rc = s_subkeys[i].parse(ctx, v, kpath, out);
        if (i < FB_ARRAY_LEN(s_subkeys))
            seen[i] = true;
        free(kpath);
        if (rc)
            return rc;
    }
    return 0;
}

void fb_actions_fini(fb_actions_t *a)
{
    if (!a)
        return;
    fb_webhook_destroy(&a->webhook);
    memset(a, 0, sizeof *a);
}
