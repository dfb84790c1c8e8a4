/* SPDX-License-Identifier: Apache-2.0 */
/* What the unit tests of the diagnosis engine (test_diagnosis.c, test_diagnosis_standard.c,
 * test_diagnosis_plan.c) share: a uniform draw, an engine over a fleet of nodes n0 ... with rails
 * r0 ..., and a pair test recorded by hand. Linked into every unit test (tests/CMakeLists.txt). */
#ifndef FB_TEST_DIAGNOSIS_FIXTURE_H
#define FB_TEST_DIAGNOSIS_FIXTURE_H

#include "scheduler/diagnosis.h"

#include <stdbool.h>
#include <stdint.h>

/* A uniform draw in [0, 1) from a splitmix64 state. */
double diag_fixture_unif(uint64_t *state);
/* A fleet of n nodes "n0" ... without rails, or with rails r0..r(rails-1); par NULL: defaults. */
fb_diag_t *diag_fixture_engine(int n, int rails, const fb_diag_params_t *par);
/* Records test id between nodes a and b (on rail, or the nodes themselves when rail is NULL). */
void diag_fixture_pair(fb_diag_t *d, const char *id, int a, int b, const char *rail, bool failed);

#endif
