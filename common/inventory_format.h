/* SPDX-License-Identifier: Apache-2.0 */
/* Summary line and JSON text of an agent's Inventory (see agent/inventory.h for how it is read). */
#ifndef FB_INVENTORY_FORMAT_H
#define FB_INVENTORY_FORMAT_H

#include "fleetburn.pb-c.h"

/* One line for logs and the agent list, e.g.
 * "16 CPUs/2 NUMA, 503.8 GiB, 8 DIMMs, 8 GPU (nvidia), 4 HCA, 2 NIC" (the hostname is not part
 * of it: callers print it next to the summary). One CPU or DIMM is written in the singular.
 * The "/N NUMA" part is left out when the NUMA node count is unknown (0); mixed GPU vendors read
 * "8 GPU (4 nvidia, 4 amd)"; HCA counts distinct InfiniBand devices (not ports); NIC counts
 * network devices that are not HCA ports. NULL gives "no inventory". Heap string, caller frees. */
char *fb_inventory_summary(const Fleetburn__Inventory *inv);

/* The whole inventory as one compact JSON object (common/json.h writer), field names as in
 * proto/fleetburn.proto; "software" is an object of component -> version. NULL gives "null".
 * Heap, caller frees. */
char *fb_inventory_to_json(const Fleetburn__Inventory *inv);


#endif
