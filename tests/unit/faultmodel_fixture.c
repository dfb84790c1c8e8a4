/* SPDX-License-Identifier: Apache-2.0 */
#include "faultmodel_fixture.h"
#include "common/fileload.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

fb_faultmodel_t *fm_fixture_parse(const char *text, const char *source)
{
    fb_faultmodel_t *m = NULL;
    char *err = NULL;
    if (fb_faultmodel_parse(text, strlen(text), source, &m, &err))
        fail_msg("unexpected error: %s", err);
    assert_null(err);
    return m;
}

fb_topology_t *fm_fixture_fabric(void)
{
    fb_topology_t *t = NULL;
    char err[256], *text = NULL, *why = NULL;
    if (fb_load_file(FB_FIXTURES "/topology/fabric-2s4l16n.topo", 1u << 20, &text, NULL, &why))
        fail_msg("%s", why);
    if (fb_topology_parse_any(text, &t, err, sizeof err))
        fail_msg("%s", err);
    free(text);
    return t;
}

fb_faultmodel_t *fm_fixture_bound(const char *text, const char *source, fb_topology_t *topo)
{
    fb_faultmodel_t *m = fm_fixture_parse(text, source);
    char *err = NULL;
    if (fb_faultmodel_bind(m, topo, &err))
        fail_msg("bind: %s", err);
    return m;
}
