/* SPDX-License-Identifier: Apache-2.0 */
/* What a campaign does about its outcome when it ends: the `actions:` mapping of the campaign
 * file (docs/campaign-file.md). Each subkey is one kind of action with its own parser and its own
 * field here:
 *
 *   actions:
 *     webhook: {url: https://hooks.example.com/fleetburn, on: [bad, error]}   (webhook.h)
 *
 * Pure: parses the YAML node it is handed, like the rest of the campaign file. */
#ifndef FB_ACTIONS_H
#define FB_ACTIONS_H

#include "webhook.h"
#include "common/yamldoc.h"

typedef struct fb_actions {
    fb_webhook_t *webhook; /* actions.webhook, NULL when absent */
} fb_actions_t;

/* Parses the `actions:` mapping (node) at path ("actions"): 0 with a new fb_actions_t in *out
 * (every field NULL when the mapping is empty), or -EINVAL with the error recorded in y. An
 * unknown subkey is an error naming the known ones. */
int fb_actions_parse(fb_yaml_t *y, const yaml_node_t *node, const char *path, fb_actions_t **out);
/* NULL-safe; nulls the pointer. */
void fb_actions_destroy(fb_actions_t **self_p);

#endif
