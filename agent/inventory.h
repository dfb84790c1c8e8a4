/* SPDX-License-Identifier: Apache-2.0 */
/* What the agent reports about its machine when it registers: host, CPUs and NUMA nodes, memory
 * and DIMMs (EDAC labels), GPUs (PCI identity and link), network devices and InfiniBand HCA ports,
 * and software versions. Everything is read from procfs and sysfs under a root directory, so
 * tests point it at a fixture tree. docs/inventory.md lists every source.
 *
 * Ownership: inventory_read returns a Fleetburn__Inventory built by hand in the exact layout
 * protobuf-c's unpacker produces with the default allocator: the message, every sub-message, every
 * pointer array and every string are separate malloc blocks, and no string is NULL (an empty field
 * holds a heap "" or protobuf_c_empty_string). inventory_free therefore frees it with
 * fleetburn__inventory__free_unpacked, and it equally frees an inventory that came from
 * fleetburn__inventory__unpack(NULL, ...). The message may be packed as is, or pointed to from a
 * Hello while the Inventory outlives it. */
#ifndef FB_INVENTORY_H
#define FB_INVENTORY_H

#include "fleetburn.pb-c.h"
#include "common/inventory_format.h"

/* Reads the machine under root ("" or NULL = the live system; tests pass a fixture tree).
 * Never fails on a missing optional source: that field stays empty or 0. Unreadable or malformed
 * content (a non-numeric link width, an unknown port state, non-printable text) leaves that one
 * field empty and logs a warning naming the file. Never returns NULL (host out-of-memory aborts).
 * The caller frees the result with inventory_free. */
Fleetburn__Inventory *inventory_read(const char *root);

/* Frees an inventory from inventory_read (or from fleetburn__inventory__unpack with the default
 * allocator) and sets *inv_p to NULL. NULL-safe. */
void inventory_free(Fleetburn__Inventory **inv_p);

/* One version for n devices: the value when every device has it, else "dev:value,dev:value"
 * ("?" for a device without one), cut with ",..." to stay within the wire's 255 bytes. NULL when
 * no device has a value. Heap string. */
char *inventory_per_device(const char *const *devices, const char *const *values, size_t n);
/* Adds software entry key = value (taken over; NULL or "" adds nothing) unless key is there
 * already: what the agent read itself stands. */
void inventory_add_software(Fleetburn__Inventory *inv, const char *key, char *value);

/* Formatting lives in common/inventory_format.h (the coordinator uses it too). */

#endif
