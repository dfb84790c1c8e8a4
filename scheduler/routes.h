/* SPDX-License-Identifier: Apache-2.0 */
/* The fabric's unicast routing as its subnet manager set it: which spine a flow between two nodes
 * crosses, so that a slow or failing leaf-spine uplink is named as that link ("leaf02<->spine01")
 * and not as "one of leaf02's uplinks". Read from one text holding two outputs one after the other
 * (docs/campaign-file.md "Routes"):
 *
 *   1. `ibnetdiscover` (the fabric: which switch port leads to which switch or channel adapter, and
 *      every adapter's LID). Only Switch blocks are read: their header ("Switch 40 \"S-<guid>\" #
 *      \"<description>\" ... lid <lid> ...") and their port lines ("[<port>] \"<peer guid>\"[<peer
 *      port>] ... # \"<peer description>\" lid <peer lid> ..."). A switch is named as the topology
 *      names it ("MF0;leaf01:MQM8700/U1" -> "leaf01", else the description, else its GUID); an
 *      adapter is "<node> <hca>" ("node01 mlx5_0"); a switch with an adapter attached is a leaf.
 *   2. The switches' linear forwarding tables (destination LID -> output port), in either form:
 *      `ibroute` (also `dump_lfts.sh`, OpenSM's LFT dump): a header "Unicast lids [0x0-0x..] of
 *      switch ... guid 0x<guid> (...):" then lines "0x0004 001 : (Channel Adapter ...)" and "N
 * valid lids dumped"; or ibdiagnet's `ibdiagnet2.fdbs` (OpenSM's ucast routes dump): a header
 *      "osm_ucast_mgr_dump_ucast_routes: Switch 0x<guid>" then "LID    : Port : Hops : Optimal" and
 *      lines "0x0004 : 001  : 00   : yes" or "0x0004 : UNREACHABLE". A LID is hex (0x...) or
 *      decimal.
 *
 * The route of a flow src -> dst on a rail is read where it is decided in a two-level fat tree: at
 * the leaf of src's adapter, the output port of dst's adapter's LID; the switch on that port is the
 * spine. Errors name the line and what was expected: a table line outside a table, a LID or port
 * that is not a number or out of range (unicast LIDs 1-0xBFFF, ports 0-254), a table for a switch
 * ibnetdiscover does not describe, a table given twice, no ibnetdiscover output, no table of a
 * leaf. Input is bounded by the campaign's attached-file limit; memory is linear in it.
 *
 * Pure logic: parses text, opens nothing, prints nothing. The names returned are borrowed from
 * the routes and live as long as they do. */
#ifndef FB_ROUTES_H
#define FB_ROUTES_H

#include <stddef.h>

typedef struct fb_routes fb_routes_t;

/* Parse text (NUL-terminated) into *out (caller destroys). 0, or -EINVAL with *out = NULL and a
 * one-line message in err such as "line 57: expected 'LID PORT' (0x0004 001), got 'zz'". */
int fb_routes_parse(const char *text, fb_routes_t **out, char *err, size_t errlen);
void fb_routes_destroy(fb_routes_t **self_p);

/* The spine the flow src -> dst crosses on rail (an adapter name such as "mlx5_0"; NULL, or a
 * rail a node has no adapter of, takes the node's first adapter in the text), or NULL when
 * the routing does not say: both on one leaf, a node or LID the text does not know, no table
 * entry, or an output port that leads to no spine. */
const char *fb_routes_spine(const fb_routes_t *self, const char *src, const char *dst,
                            const char *rail);

/* Switches the text describes, by kind, with their names (index < count; file order). */
size_t fb_routes_n_leaves(const fb_routes_t *self);
size_t fb_routes_n_spines(const fb_routes_t *self);
const char *fb_routes_leaf_name(const fb_routes_t *self, size_t i);
const char *fb_routes_spine_name(const fb_routes_t *self, size_t i);
/* Forwarding-table entries read (all switches), and adapters (node, HCA) known. */
size_t fb_routes_n_entries(const fb_routes_t *self);
size_t fb_routes_n_adapters(const fb_routes_t *self);

#endif
