/* SPDX-License-Identifier: Apache-2.0 */
/* The regress: key of campaign files: metric globs and their tolerances (regress_config.h).
 * Input is untrusted like the rest of a campaign: every glob and value is checked here, so that
 * `fleetburn run` refuses a malformed one before anything runs, with the line it is on. */
#include "regress_config.h"

#include "campaign.h"
#include "common/util.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S_GLOB_EXPECTED                                                                            \
    "expected a metric name or glob such as netbw.tx_gbps or \"gpu*.tflops_median\" (letters, "    \
    "digits, . _ - : / and * ? [...])"

static bool s_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == ':' || c == '/';
}

/* A bracket expression starting at p ('['): closed, not empty, no '[' inside. Returns the
 * character after its ']', or NULL. */
static const char *s_bracket_end(const char *p)
{
    p++;
    if (*p == '!' || *p == '^')
        p++;
    const char *first = p;
    for (; *p && *p != ']'; p++)
        if (*p == '[' || !(s_name_char(*p) || *p == '*' || *p == '?'))
            return NULL;
    return *p == ']' && p > first ? p + 1 : NULL;
}

int fb_regress_glob_check(const char *glob, const char **why)
{
    size_t len = glob ? strlen(glob) : 0;
    if (len == 0) {
        *why = "is empty";
        return -EINVAL;
    }
    if (len > FB_REGRESS_GLOB_MAX) {
        *why = "is longer than 128 characters";
        return -EINVAL;
    }
    for (const char *p = glob; *p;) {
        if (*p == '[') {
            p = s_bracket_end(p);
            if (!p) {
                *why = "has a bracket expression that is not closed, is empty or holds a "
                       "character that is not allowed";
                return -EINVAL;
            }
            continue;
        }
        if (*p == ']') {
            *why = "has a ']' without its '['";
            return -EINVAL;
        }
        if (!s_name_char(*p) && *p != '*' && *p != '?') {
            *why = "holds a character that is not allowed";
            return -EINVAL;
        }
        p++;
    }
    return 0;
}

/* "5", "2.5", "0.25": a plain decimal number, no sign or exponent. */
static int s_percent(const char *text, size_t len, double *out)
{
    if (len == 0 || len > 16)
        return -EINVAL;
    char buf[24];
    memcpy(buf, text, len);
    buf[len] = '\0';
    bool digit = false, dot = false;
    for (const char *p = buf; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digit = true;
        else if (*p == '.' && !dot)
            dot = true;
        else
            return -EINVAL;
    }
    if (!digit)
        return -EINVAL;
    double v = strtod(buf, NULL);
    if (!isfinite(v) || v < 0 || v > FB_REGRESS_PERCENT_MAX)
        return -EINVAL;
    *out = v;
    return 0;
}

int fb_regress_value_parse(const char *text, fb_regress_entry_t *out)
{
    if (!text)
        return -EINVAL;
    if (!strcasecmp(text, "off")) {
        out->off = true;
        out->tolerance = NAN;
        out->has_better = false;
        return 0;
    }
    const char *pct = strchr(text, '%');
    double v;
    if (!pct || s_percent(text, (size_t)(pct - text), &v))
        return -EINVAL;
    const char *rest = pct + 1;
    while (*rest == ' ')
        rest++;
    out->off = false;
    out->tolerance = v / 100.0;
    out->has_better = *rest != '\0';
    if (!*rest)
        return 0;
    if (!strcasecmp(rest, "higher"))
        out->better = FB_BETTER_HIGHER;
    else if (!strcasecmp(rest, "lower"))
        out->better = FB_BETTER_LOWER;
    else
        return -EINVAL;
    return 0;
}

static void s_push(fb_regress_config_t *c, const fb_regress_entry_t *e)
{
    c->entries = xrealloc(c->entries, (c->n + 1) * sizeof *c->entries);
    c->entries[c->n++] = *e;
}

/* The entry written with exactly this glob, or NULL. */
static const fb_regress_entry_t *s_find(const fb_regress_config_t *c, const char *glob)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->entries[i].glob, glob))
            return &c->entries[i];
    return NULL;
}

/* One glob: value pair of the mapping. */
static int s_entry(fb_yaml_t *ctx, const yaml_node_t *k, const yaml_node_t *v, const char *path,
                   fb_regress_config_t *c)
{
    const char *glob, *text, *why;
    if (fb_yaml_scalar(ctx, k, path, S_GLOB_EXPECTED, &glob))
        return -EINVAL;
    char shown[160];
    fb_show_value(glob, shown, sizeof shown);
    char *kpath = xasprintf("%s.%s", path, shown);
    int rc = 0;
    fb_regress_entry_t e = {.line = fb_yaml_line(k)};
    if (fb_regress_glob_check(glob, &why)) {
        rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath, "the metric glob '%s' %s; %s", shown, why,
                          S_GLOB_EXPECTED);
    } else if (s_find(c, glob)) {
        rc = fb_yaml_fail(ctx, fb_yaml_line(k), kpath,
                          "given twice (also line %d); expected each metric glob once",
                          s_find(c, glob)->line);
    } else if (!fb_yaml_scalar(ctx, v, kpath, FB_REGRESS_VALUE_EXPECTED, &text)) {
        if (fb_regress_value_parse(text, &e)) {
            fb_show_value(text, shown, sizeof shown);
            rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath, "'%s' is not a tolerance; %s", shown,
                              FB_REGRESS_VALUE_EXPECTED);
        } else {
            e.glob = xstrdup(glob);
            s_push(c, &e);
        }
    } else {
        rc = -EINVAL;
    }
    free(kpath);
    return rc;
}

int fb_regress_config_parse(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                            fb_regress_config_t **out)
{
    *out = NULL;
    int rc = fb_yaml_mapping(ctx, node, path,
                             "expected a mapping of metric globs to tolerances, e.g. "
                             "regress: {netbw.tx_gbps: 10%}");
    if (rc)
        return rc;
    fb_regress_config_t *c = xcalloc(1, sizeof *c);
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = fb_yaml_node(ctx, pair->key), *v = fb_yaml_node(ctx, pair->value);
        if (!k || !v || s_entry(ctx, k, v, path, c)) {
            fb_regress_config_destroy(&c);
            return -EINVAL;
        }
    }
    *out = c;
    return 0;
}

/* The value node of the top-level key `regress`, or NULL. */
static const yaml_node_t *s_top_key(fb_yaml_t *ctx, const yaml_node_t *root)
{
    if (!root || root->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        const yaml_node_t *k = fb_yaml_node(ctx, pair->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == 7 &&
            !memcmp(k->data.scalar.value, "regress", 7))
            return fb_yaml_node(ctx, pair->value);
    }
    return NULL;
}

/* The regress key of a campaign file's root (fb_yaml_parse_text) into *arg; none is no error. */
static int s_regress_root(fb_yaml_t *ctx, yaml_node_t *root, void *arg)
{
    const yaml_node_t *v = s_top_key(ctx, root);
    return v ? fb_regress_config_parse(ctx, v, "regress", arg) : 0;
}

int fb_regress_config_from_text(const char *text, size_t len, const char *source,
                                fb_regress_config_t **out, char **error_out)
{
    *out = NULL;
    return fb_yaml_parse_text(text, len, source ? source : "<campaign>", FB_CAMPAIGN_MAX_BYTES,
                              "campaign file", s_regress_root, out, error_out);
}

const fb_regress_entry_t *fb_regress_config_match(const fb_regress_config_t *cfg, const char *name)
{
    for (size_t i = 0; cfg && i < cfg->n; i++)
        if (!strcmp(cfg->entries[i].glob, name) || !fnmatch(cfg->entries[i].glob, name, 0))
            return &cfg->entries[i];
    return NULL;
}

const char *fb_regress_entry_text(const fb_regress_entry_t *e, char *buf, size_t len)
{
    if (e->off)
        snprintf(buf, len, "off");
    else
        snprintf(buf, len, "%g%%%s", e->tolerance * 100,
                 !e->has_better                  ? ""
                 : e->better == FB_BETTER_HIGHER ? " higher"
                                                 : " lower");
    return buf;
}

void fb_regress_config_destroy(fb_regress_config_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_regress_config_t *c = *self_p;
    for (size_t i = 0; i < c->n; i++)
        free(c->entries[i].glob);
    free(c->entries);
    free(c);
    *self_p = NULL;
}
