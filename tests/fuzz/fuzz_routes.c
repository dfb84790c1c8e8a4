/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes the routes parser of scheduler/routes.c: ibnetdiscover output with the switches'
 * forwarding tables (ibroute or ibdiagnet2.fdbs), a campaign's routes file attached to a Submit.
 * What parses is queried the way the runner uses it: the spine of flows between adapters' nodes
 * in both directions, on a rail and without, and the switch names by index. */
#include "fuzz.h"

#include "scheduler/routes.h"

#include <errno.h>

FZ_INITIALIZE()

static void s_use(const fb_routes_t *r)
{
    size_t leaves = fb_routes_n_leaves(r), spines = fb_routes_n_spines(r);
    for (size_t i = 0; i < leaves; i++)
        FZ_CHECK(fb_routes_leaf_name(r, i) != NULL);
    for (size_t i = 0; i < spines; i++)
        FZ_CHECK(fb_routes_spine_name(r, i) != NULL);
    FZ_CHECK(fb_routes_leaf_name(r, leaves) == NULL && fb_routes_spine_name(r, spines) == NULL);
    FZ_CHECK(leaves >= 1); /* a parsed text has a table of a leaf */
    (void)fb_routes_n_entries(r);
    static const char *const nodes[] = {"node01", "node05", "node16", "n1", "n2", ""};
    static const char *const rails[] = {NULL, "mlx5_0", "mlx5_1"};
    for (size_t a = 0; a < FB_ARRAY_LEN(nodes); a++)
        for (size_t b = 0; b < FB_ARRAY_LEN(nodes); b++)
            for (size_t k = 0; k < FB_ARRAY_LEN(rails); k++) {
                const char *spine = fb_routes_spine(r, nodes[a], nodes[b], rails[k]);
                if (!spine)
                    continue;
                bool known = false; /* a spine returned is one of the routes' spines */
                for (size_t i = 0; i < spines && !known; i++)
                    known = strcmp(fb_routes_spine_name(r, i), spine) == 0;
                FZ_CHECK(known);
            }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    char err[256];
    fb_routes_t *r = NULL;
    int rc = fb_routes_parse(text, &r, err, sizeof err);
    FZ_CHECK_PARSED(rc, r, err);
    if (r)
        s_use(r);
    fb_routes_destroy(&r);
    free(text);
    return 0;
}
