/* SPDX-License-Identifier: Apache-2.0 */
/* Formatting of an Inventory message for people and for the store: a one-line summary and a
 * JSON object. Both daemons use it: the agent logs its summary, the coordinator stores both. */
#include "inventory_format.h"

#include "json.h"
#include "units.h"
#include "util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *s_or_empty(const char *s)
{
    return s ? s : "";
}

char *fb_inventory_summary(const Fleetburn__Inventory *inv)
{
    if (!inv)
        return xstrdup("no inventory");
    char mem[32];
    fb_format_bytes(inv->mem_total_bytes, mem, sizeof mem);
    char *cpus = inv->numa_nodes ? xasprintf("%u CPU%s/%u NUMA", inv->cpus,
                                             inv->cpus == 1 ? "" : "s", inv->numa_nodes)
                                 : xasprintf("%u CPU%s", inv->cpus, inv->cpus == 1 ? "" : "s");

    /* GPU vendors in order of first appearance, with counts. */
    const char *vendors[8];
    size_t counts[8], n_vendors = 0, other = 0;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const char *v = s_or_empty(inv->gpus[i]->vendor);
        size_t j = 0;
        while (j < n_vendors && strcmp(vendors[j], v) != 0)
            j++;
        if (j == n_vendors) {
            if (n_vendors == FB_ARRAY_LEN(vendors)) {
                other++;
                continue;
            }
            vendors[n_vendors] = v;
            counts[n_vendors++] = 0;
        }
        counts[j]++;
    }
    char *gpus;
    if (n_vendors == 0) {
        gpus = xasprintf("%zu GPU", inv->n_gpus);
    } else if (n_vendors == 1) {
        gpus = xasprintf("%zu GPU (%s)", inv->n_gpus, vendors[0]);
    } else {
        gpus = xasprintf("%zu GPU (", inv->n_gpus);
        for (size_t j = 0; j < n_vendors; j++) {
            char *next = xasprintf("%s%s%zu %s", gpus, j ? ", " : "", counts[j], vendors[j]);
            free(gpus);
            gpus = next;
        }
        char *next = other ? xasprintf("%s, %zu other)", gpus, other) : xasprintf("%s)", gpus);
        free(gpus);
        gpus = next;
    }

    /* HCAs are counted by device: mlx5_0 with two ports is one HCA. */
    size_t hcas = 0, nics = 0;
    for (size_t i = 0; i < inv->n_nics; i++) {
        const Fleetburn__Nic *nic = inv->nics[i];
        if (!strcmp(s_or_empty(nic->kind), "infiniband")) {
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = !strcmp(s_or_empty(inv->nics[j]->kind), "infiniband") &&
                       !strcmp(s_or_empty(inv->nics[j]->name), s_or_empty(nic->name));
            if (!seen)
                hcas++;
        } else {
            nics++;
        }
    }

    char *out = xasprintf("%s, %s, %zu DIMM%s, %s, %zu HCA, %zu NIC", cpus, mem, inv->n_dimms,
                          inv->n_dimms == 1 ? "" : "s", gpus, hcas, nics);
    free(cpus);
    free(gpus);
    return out;
}

char *fb_inventory_to_json(const Fleetburn__Inventory *inv)
{
    if (!inv)
        return xstrdup("null");
    fb_json_t *j = fb_json_new(false);
    fb_json_object_begin(j, NULL);
    fb_json_string(j, "hostname", s_or_empty(inv->hostname));
    fb_json_string(j, "kernel", s_or_empty(inv->kernel));
    fb_json_string(j, "cpu_model", s_or_empty(inv->cpu_model));
    fb_json_int(j, "cpus", inv->cpus);
    fb_json_int(j, "numa_nodes", inv->numa_nodes);
    fb_json_int(j, "mem_total_bytes", (int64_t)inv->mem_total_bytes);
    fb_json_string(j, "agent_version", s_or_empty(inv->agent_version));

    fb_json_array_begin(j, "dimms");
    for (size_t i = 0; i < inv->n_dimms; i++) {
        const Fleetburn__Dimm *d = inv->dimms[i];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "label", s_or_empty(d->label));
        fb_json_string(j, "location", s_or_empty(d->location));
        fb_json_int(j, "size_mb", (int64_t)d->size_mb);
        fb_json_int(j, "ce_count", (int64_t)d->ce_count);
        fb_json_int(j, "ue_count", (int64_t)d->ue_count);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);

    fb_json_array_begin(j, "gpus");
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const Fleetburn__Gpu *g = inv->gpus[i];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "vendor", s_or_empty(g->vendor));
        fb_json_string(j, "vendor_id", s_or_empty(g->vendor_id));
        fb_json_string(j, "device_id", s_or_empty(g->device_id));
        fb_json_string(j, "pci_address", s_or_empty(g->pci_address));
        fb_json_string(j, "link_speed", s_or_empty(g->link_speed));
        fb_json_int(j, "link_width", g->link_width);
        fb_json_string(j, "max_link_speed", s_or_empty(g->max_link_speed));
        fb_json_int(j, "max_link_width", g->max_link_width);
        fb_json_int(j, "numa_node", g->numa_node);
        fb_json_string(j, "model", s_or_empty(g->model));
        fb_json_int(j, "memory_bytes", (int64_t)g->memory_bytes);
        fb_json_object_end(j);
    }
    fb_json_array_end(j);

    fb_json_array_begin(j, "nics");
    for (size_t i = 0; i < inv->n_nics; i++) {
        const Fleetburn__Nic *n = inv->nics[i];
        fb_json_object_begin(j, NULL);
        fb_json_string(j, "name", s_or_empty(n->name));
        fb_json_string(j, "kind", s_or_empty(n->kind));
        fb_json_int(j, "port", n->port);
        fb_json_string(j, "state", s_or_empty(n->state));
        fb_json_string(j, "rate", s_or_empty(n->rate));
        fb_json_int(j, "speed_mbps", (int64_t)n->speed_mbps);
        fb_json_string(j, "address", s_or_empty(n->address));
        fb_json_object_end(j);
    }
    fb_json_array_end(j);

    fb_json_object_begin(j, "software");
    for (size_t i = 0; i < inv->n_software; i++) {
        const Fleetburn__Inventory__SoftwareEntry *e = inv->software[i];
        fb_json_string(j, s_or_empty(e->key), s_or_empty(e->value));
    }
    fb_json_object_end(j);
    fb_json_object_end(j);

    char *text = fb_json_take(j);
    fb_json_destroy(&j);
    return text;
}
