/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes inventory_read (agent/inventory.c): procfs and sysfs under a root built from the input
 * (tests/fuzz/fuzz_tree.h): cpuinfo, meminfo, NUMA nodes, EDAC DIMMs, PCI devices, network
 * devices, HCA ports, driver versions. Whatever the machine's files hold, the inventory must be
 * one the coordinator accepts: a Hello carrying it validates (fb_wire_validate) and survives a round
 * trip through the wire, and the coordinator's summary and JSON of it are made. */
#include "fuzz_tree.h"

#include "agent/inventory.h"
#include "common/inventory_format.h"
#include "common/wire.h"

FZ_INITIALIZE(fz_tree_init())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *root = fz_tree_build(data, size);
    Fleetburn__Inventory *inv = inventory_read(root);
    FZ_CHECK(inv != NULL);

    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    hello.name = "node01";
    hello.inventory = inv;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    char err[256] = "";
    int rc = fb_wire_validate(&env, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "the coordinator would refuse this inventory: %s\n", err);
    FZ_CHECK(rc == 0);
    size_t len = 0;
    uint8_t *frame = fb_wire_encode(&env, &len);
    Fleetburn__Envelope *back = NULL;
    rc = fb_wire_decode(frame, len, &back, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "the coordinator would refuse this Hello: %s\n", err);
    FZ_CHECK(rc == 0);
    free(fb_inventory_summary(back->hello->inventory));
    free(fb_inventory_to_json(back->hello->inventory));
    fb_wire_free(&back);
    free(frame);
    inventory_free(&inv);
    fz_tree_clear();
    return 0;
}
