/* SPDX-License-Identifier: Apache-2.0 */
/* A stage's `routes: FILE` (docs/campaign-file.md "Routes"): the key, and the file loaded when
 * the campaign's files are attached, checked against the stage's topology. Pure: parses the YAML
 * node and the text it is handed, opens nothing, prints nothing. */
#ifndef FB_STAGE_ROUTES_H
#define FB_STAGE_ROUTES_H

#include "campaign.h"
#include "common/yamldoc.h"

/* stages[i].routes: the file's name as written (st->routes_path, routes_line). 0 or -EINVAL
 * with the error in ctx. */
int fb_stage_routes_key(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath, fb_stage_t *st);

/* Parses stage i's routes from the file of that name among files[0..n) into st->routes, after
 * its topology: every leaf and spine the routes name must be one of the topology's (the same
 * fabric). 0, or -EINVAL with "SOURCE:LINE: stages[i].routes: ..." in *error_out (heap). */
int fb_stage_routes_attach(fb_campaign_t *c, size_t i, const fb_campaign_file_t *files, size_t n,
                           char **error_out);

#endif
