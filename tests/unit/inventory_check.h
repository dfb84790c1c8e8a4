/* SPDX-License-Identifier: Apache-2.0 */
/* What the unit tests of the agent's inventory (test_inventory, test_gpuprobe) ask of an
 * Inventory message. Linked into every unit test (tests/CMakeLists.txt). */
#ifndef FB_TEST_INVENTORY_CHECK_H
#define FB_TEST_INVENTORY_CHECK_H

#include "fleetburn.pb-c.h"

/* The value of software entry key, NULL when there is none. */
const char *inventory_check_software(const Fleetburn__Inventory *inv, const char *key);
/* Fails the test unless a Hello carrying inv passes the coordinator's wire validation. */
void inventory_check_hello(Fleetburn__Inventory *inv);

#endif
