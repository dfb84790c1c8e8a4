/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign's `actions:` mapping: one parser per subkey, dispatched from a table, so that a
 * new kind of action is a row here, a field in fb_actions_t and its own file. The subkeys' own
 * keys and values are checked by their parsers (webhook.c); this checks the mapping itself: that
 * it is one, that every subkey is known, and that none is given twice. */
#include "actions.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_webhook(fb_yaml_t *y, const yaml_node_t *v, const char *path, fb_actions_t *a)
{
    return fb_webhook_parse(y, v, path, &a->webhook);
}

/* One row per subkey of `actions:`. */
static const struct {
    const char *key;
    int (*parse)(fb_yaml_t *y, const yaml_node_t *v, const char *path, fb_actions_t *a);
} s_subkeys[] = {
    {"webhook", s_webhook},
};

/* "webhook, ..." for messages. */
static const char *s_subkey_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < FB_ARRAY_LEN(s_subkeys); i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s_subkeys[i].key);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    return buf;
}

int fb_actions_parse(fb_yaml_t *y, const yaml_node_t *node, const char *path, fb_actions_t **out)
{
    *out = NULL;
    char names[256];
    s_subkey_names(names, sizeof names);
    if (node->type != YAML_MAPPING_NODE)
        return fb_yaml_fail(y, fb_yaml_line(node), path, "is %s; expected a mapping of %s",
                            fb_yaml_is_null(node) ? "empty" : fb_yaml_kind(node), names);
    fb_actions_t *a = xcalloc(1, sizeof *a);
    bool seen[FB_ARRAY_LEN(s_subkeys)] = {false};
    int rc = 0;
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top && !rc; pair++) {
        const yaml_node_t *k = fb_yaml_node(y, pair->key), *v = fb_yaml_node(y, pair->value);
        const char *key;
        char *expected = xasprintf("expected one of %s", names);
        rc = !k || !v || fb_yaml_scalar(y, k, path, expected, &key) ? -EINVAL : 0;
        free(expected);
        if (rc)
            break;
        char shown[128];
        char *kpath = xasprintf("%s.%s", path, fb_show_value(key, shown, sizeof shown));
        size_t i = 0;
        while (i < FB_ARRAY_LEN(s_subkeys) && strcmp(key, s_subkeys[i].key))
            i++;
        if (i == FB_ARRAY_LEN(s_subkeys))
            rc = fb_yaml_fail(y, fb_yaml_line(k), kpath, "unknown action; expected one of %s",
                              names);
        else if (seen[i])
            rc = fb_yaml_fail(y, fb_yaml_line(k), kpath, "key given twice; expected each key once");
        else
            rc = s_subkeys[i].parse(y, v, kpath, a);
        if (i < FB_ARRAY_LEN(s_subkeys))
            seen[i] = true;
        free(kpath);
    }
    if (rc) {
        fb_actions_destroy(&a);
        return rc;
    }
    *out = a;
    return 0;
}

void fb_actions_destroy(fb_actions_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_actions_t *a = *self_p;
    fb_webhook_destroy(&a->webhook);
    free(a);
    *self_p = NULL;
}
