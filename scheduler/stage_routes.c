/* SPDX-License-Identifier: Apache-2.0 */
/* A stage's routes key and file (stage_routes.h). */
#include "stage_routes.h"
#include "campaign_internal.h"
#include "routes.h"
#include "topology.h"
#include "common/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_EXPECTED                                                                                 \
    "expected ibnetdiscover output followed by the switches' forwarding tables (ibroute, or "      \
    "ibdiagnet2.fdbs)"

int fb_stage_routes_key(fb_yaml_t *ctx, const yaml_node_t *v, const char *kpath, fb_stage_t *st)
{
    const char *text;
    if (fb_yaml_scalar(ctx, v, kpath,
                       "expected the path of ibnetdiscover output with the switches' forwarding "
                       "tables (docs/campaign-file.md, Routes)",
                       &text))
        return -EINVAL;
    free(st->routes_path);
    st->routes_path = xstrdup(text);
    st->routes_line = fb_yaml_line(v);
    return 0;
}

static bool s_is_leaf(const fb_topology_t *t, const char *name)
{
    for (size_t i = 0; i < fb_topology_n_leaves(t); i++)
        if (!strcmp(fb_topology_leaf_name(t, i), name))
            return true;
    return false;
}

static bool s_is_spine(const fb_topology_t *t, const char *name)
{
    for (size_t i = 0; i < fb_topology_n_spines(t); i++)
        if (!strcmp(fb_topology_spine_name(t, i), name))
            return true;
    return false;
}

/* A switch of the routes that the topology does not hold as the same kind, or NULL. */
static const char *s_foreign_switch(const fb_routes_t *r, const fb_topology_t *t, bool *spine)
{
    for (size_t i = 0; i < fb_routes_n_leaves(r); i++)
        if (!s_is_leaf(t, fb_routes_leaf_name(r, i))) {
            *spine = false;
            return fb_routes_leaf_name(r, i);
        }
    for (size_t i = 0; i < fb_routes_n_spines(r); i++)
        if (!s_is_spine(t, fb_routes_spine_name(r, i))) {
            *spine = true;
            return fb_routes_spine_name(r, i);
        }
    return NULL;
}

int fb_stage_routes_attach(fb_campaign_t *c, size_t i, const fb_campaign_file_t *files, size_t n,
                           char **error_out)
{
    fb_stage_t *st = &c->stages[i];
    char *text;
    if (campaign__attached_text(c, i, "routes", st->routes_path, st->routes_line, files, n,
                                S_EXPECTED, error_out, &text))
        return -EINVAL;
    char shown[256], name[128];
    fb_show_value(st->routes_path, shown, sizeof shown);
    char err[512];
    fb_routes_t *r = NULL;
    int rc = fb_routes_parse(text, &r, err, sizeof err);
    free(text);
    if (rc)
        return campaign__file_fail(c, i, "routes", c->stages[i].routes_line, error_out,
                                   "cannot load '%s': %s", shown, err);
    bool spine = false;
    const char *foreign = st->topology ? s_foreign_switch(r, st->topology, &spine) : NULL;
    if (foreign) {
        fb_show_value(foreign, name, sizeof name);
        fb_routes_destroy(&r);
        return campaign__file_fail(
            c, i, "routes", c->stages[i].routes_line, error_out,
            "'%s' routes over %s %s, which is no %s of the topology; expected the "
            "routes of the fabric the topology describes",
            shown, spine ? "spine" : "leaf", name, spine ? "spine" : "leaf");
    }
    st->routes = r;
    return 0;
}
