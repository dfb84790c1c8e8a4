/* SPDX-License-Identifier: Apache-2.0 */
/* The `bisect_budget` key of a stage (bisect_budget.h): rounds and time the diagnosis may spend
 * re-testing what it has not decided. Errors name the line and key path, as the rest of the
 * campaign parser does. */
#include "bisect_budget.h"

#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_KEYS "rounds, time"

static int s_rounds(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath, unsigned *out)
{
    uint64_t n;
    if (fb_yaml_uint(ctx, v, kpath, 1, FB_BISECT_BUDGET_ROUNDS_MAX,
                     "expected an integer from 1 to 1000 (follow-up rounds at most)", &n))
        return -EINVAL;
    *out = (unsigned)n;
    return 0;
}

static int s_time(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath, uint64_t *out)
{
    return fb_yaml_duration_ms(ctx, v, kpath, 1, FB_BISECT_BUDGET_TIME_MAX_MS,
                               "expected a duration above zero and at most 30d, e.g. 30m, 2h, 1d",
                               out);
}

int fb_bisect_budget_parse(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath,
                           unsigned *rounds, uint64_t *time_ms)
{
    *time_ms = 0;
    if (v->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                            "is %s; expected a mapping with rounds, time or both, e.g. "
                            "{rounds: 24, time: 2h}",
                            fb_yaml_kind(v));
    bool seen_rounds = false, seen_time = false;
    int rc = 0;
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top && !rc;
         p++) {
        yaml_node_t *k = fb_yaml_node(ctx, p->key), *val = fb_yaml_node(ctx, p->value);
        if (!k || !val)
            return -EINVAL;
        const char *key;
        if (fb_yaml_scalar(ctx, k, kpath, "expected one of " S_KEYS, &key))
            return -EINVAL;
        char shown[128];
        char *path = xasprintf("%s.%s", kpath, fb_show_value(key, shown, sizeof shown));
        bool *seen = !strcmp(key, "rounds") ? &seen_rounds
                     : !strcmp(key, "time") ? &seen_time
                                            : NULL;
        if (!seen)
            rc = fb_yaml_fail(ctx, fb_yaml_line(k), path, "unknown key; expected one of " S_KEYS);
        else if (*seen)
            rc =
                fb_yaml_fail(ctx, fb_yaml_line(k), path, "key given twice; expected each key once");
        else if (seen == &seen_rounds)
            rc = s_rounds(ctx, val, path, rounds);
        else
            rc = s_time(ctx, val, path, time_ms);
        if (seen)
            *seen = true;
        free(path);
    }
    if (!rc && !seen_rounds && !seen_time)
        rc = fb_yaml_fail(ctx, fb_yaml_line(v), kpath,
                          "names no budget; expected rounds, time or both, e.g. "
                          "{rounds: 24, time: 2h}");
    return rc;
}
