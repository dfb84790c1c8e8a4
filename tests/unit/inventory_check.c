/* SPDX-License-Identifier: Apache-2.0 */
/* The unit tests' checks of an Inventory message (inventory_check.h). */
#include "inventory_check.h"
#include "common/wire.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

const char *inventory_check_software(const Fleetburn__Inventory *inv, const char *key)
{
    for (size_t i = 0; i < inv->n_software; i++)
        if (!strcmp(inv->software[i]->key, key))
            return inv->software[i]->value;
    return NULL;
}

void inventory_check_hello(Fleetburn__Inventory *inv)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    hello.name = (char *)"node17";
    hello.inventory = inv;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    char err[256] = "";
    if (fb_wire_validate(&env, err, sizeof err) != 0)
        fail_msg("a Hello with this inventory is refused: %s", err);
}
