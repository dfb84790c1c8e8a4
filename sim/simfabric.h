/* SPDX-License-Identifier: Apache-2.0 */
/* The fabric of a simulated fleet when none is given: fleetburn-simfleet, fleetburn-simengine and
 * the diagnosis benchmark make the same leaf/spine text from their node names. */
#ifndef FB_SIMFABRIC_H
#define FB_SIMFABRIC_H

/* The n names in leaves of leaf_size nodes ("leaf01: a,b,..."), every leaf on each of the spines
 * ("spine01: leaf[01-NN]"), in the text form scheduler/topology.h reads; a heap string. Leaf
 * numbers are zero-padded to width digits, or with width 0 to the 2, 3 or 4 the count needs. */
char *fb_simfabric_text(char *const *names, unsigned n, unsigned leaf_size, unsigned spines,
                        int width);

#endif
