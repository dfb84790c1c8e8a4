/* SPDX-License-Identifier: Apache-2.0 */
/* What the unit tests of the diagnosis engine share (diagnosis_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diagnosis_fixture.h"

#include "common/rng.h"

#include <stdio.h>
#include <string.h>

double diag_fixture_unif(uint64_t *state)
{
    return fb_rng_unit(fb_splitmix64(state));
}

/* A fleet of n nodes "n0" ... without rails, or with rails r0..r(rails-1). */
fb_diag_t *diag_fixture_engine(int n, int rails, const fb_diag_params_t *par)
{
    fb_diag_t *d = fb_diag_new(par);
    assert_non_null(d);
    char name[16], rl[64] = "";
    for (int r = 0; r < rails; r++)
        snprintf(rl + strlen(rl), sizeof rl - strlen(rl), "%sr%d", r ? "," : "", r);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(fb_diag_add_node(d, name, rl), 0);
    }
    return d;
}

void diag_fixture_pair(fb_diag_t *d, const char *id, int a, int b, const char *rail, bool failed)
{
    char x[24], y[24];
    snprintf(x, sizeof x, rail ? "n%d/%s" : "n%d", a, rail);
    snprintf(y, sizeof y, rail ? "n%d/%s" : "n%d", b, rail);
    const char *m[2] = {x, y};
    assert_int_equal(fb_diag_record(d, id, m, 2, failed), 0);
}
