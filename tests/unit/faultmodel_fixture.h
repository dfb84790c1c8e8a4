/* SPDX-License-Identifier: Apache-2.0 */
/* What the fault model's unit tests (test_faultmodel.c, test_faultmodel_world.c) share: a model
 * parsed from text that must parse, the 16-node test fabric (node01-16, leaf01-04, spine01-02),
 * and a model bound to it. Each fails the running test on an error. */
#ifndef FB_TEST_FAULTMODEL_FIXTURE_H
#define FB_TEST_FAULTMODEL_FIXTURE_H

#include "scheduler/topology.h"
#include "sim/faultmodel.h"

/* text parsed as the fault file source (its name in messages). */
fb_faultmodel_t *fm_fixture_parse(const char *text, const char *source);
/* tests/fixtures/topology/fabric-2s4l16n.topo */
fb_topology_t *fm_fixture_fabric(void);
/* text parsed as source and bound to topo. */
fb_faultmodel_t *fm_fixture_bound(const char *text, const char *source, fb_topology_t *topo);

#endif
