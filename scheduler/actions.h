/* SPDX-License-Identifier: Apache-2.0 */
/* What a campaign does with its verdicts when it ends: the `actions:` mapping of the campaign
 * file (docs/campaign-file.md, "actions").
 *
 *   actions:
 *     slurm: {drain: true, resume: true, dry_run: false, max_fraction: 0.25}
 *     webhook: {url: https://hooks.example.com/fleetburn, on: [bad, error]}   (webhook.h)
 *
 * One subkey per kind of action, each parsed by its own function; the coordinator carries them
 * out (coordinator/slurm_actions.c for slurm, coordinator/coord_webhook.c for webhook). Parsing is pure: it checks the YAML node it is
 * handed and reports errors in the campaign parser's format, `FILE:LINE: KEYPATH: what is
 * wrong; expected WHAT`. */
#ifndef FB_ACTIONS_H
#define FB_ACTIONS_H

#include "webhook.h"
#include "common/yamldoc.h"

#include <stdbool.h>

/* The breaker's default: drain none when more than half of the campaign's nodes would be
 * drained (NVSentinel stops at half its nodes cordoned). */
#define FB_SLURM_MAX_FRACTION_DEFAULT 0.5

/* actions.slurm: drain the nodes of bad parts, resume nodes that passed and that fleetburn
 * drained (docs/operations.md "Slurm"). */
typedef struct {
    bool drain;          /* default true */
    bool resume;         /* default true */
    bool dry_run;        /* default true: say what would be done, do nothing */
    double max_fraction; /* the breaker: drain none when more than this fraction of the
                          * campaign's nodes would be drained; default 0.5, range (0, 1] */
} fb_slurm_actions_t;

typedef struct fb_actions {
    bool has_slurm; /* actions.slurm was written */
    fb_slurm_actions_t slurm;
    fb_webhook_t *webhook; /* actions.webhook, NULL when absent */
} fb_actions_t;

/* Parses the `actions:` node (a mapping) into *out, which it fills with defaults first. path is
 * the key path of the node in messages ("actions"). 0, or -EINVAL with the error in ctx. */
int fb_actions_parse(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, fb_actions_t *out);
/* Frees what *a holds (the webhook) and empties it; also after a failed parse. */
void fb_actions_fini(fb_actions_t *a);

#endif
