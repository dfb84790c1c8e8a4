/* SPDX-License-Identifier: Apache-2.0 */
/* Port error counters around a run: a snapshot of /sys/class/infiniband/<hca>/ports/<n>/counters
 * (the PortCounters attribute: symbol errors, link recoveries, link downs, receive errors ...),
 * hw_counters (the HCA's own transport counters: ACK timeouts, sequence errors, ICRC errors ...)
 * and the port's rate and width, taken before and after; then the comparison, which turns every
 * counter that moved and every rate that dropped into a finding naming `<node>/<hca>:<port>`.
 * Pure: reads files under a root prefix, writes findings into a result. */
#ifndef FB_IBCOUNTERS_H
#define FB_IBCOUNTERS_H

#include "common/result.h"
#include "ibport.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IB_MAX_COUNTERS 96

typedef struct {
    char name[48]; /* "symbol_error", or "hw_counters/local_ack_timeout_err" */
    uint64_t value;
} ib_counter_t;

typedef struct {
    ib_port_t port; /* state, rate, width when the snapshot was taken */
    ib_counter_t counters[IB_MAX_COUNTERS];
    size_t n;
} ib_snapshot_t;

/* Reads port `hca:port`: its attributes and every counter in counters/ and hw_counters/ (the
 * latter when the driver provides it). A counter file that is absent is left out (never read
 * as 0); one that is not a number makes the snapshot fail with -EINVAL and err naming the file
 * and its content. -ENOENT when the port does not exist. */
int ib_snapshot_read(const char *root, const char *hca, unsigned port, ib_snapshot_t *out,
                     char *err, size_t errlen);

/* The counter called name ("link_downed", "hw_counters/out_of_sequence"), or NULL. */
const ib_counter_t *ib_snapshot_counter(const ib_snapshot_t *s, const char *name);

/* What a counter means for the comparison. */
typedef enum {
    IB_COUNTER_IGNORED = 0, /* traffic counters (port_xmit_data, rx_write_requests ...) */
    IB_COUNTER_LINK,        /* physical link: the cable, a transceiver or the switch port */
    IB_COUNTER_NIC,         /* the HCA's transport or the fabric's configuration */
    IB_COUNTER_NOTE,        /* logged when it moves, not a fault (VL15_dropped) */
} ib_counter_class_t;

/* The class of a counter name as ib_snapshot_read names it; `saturate` (may be NULL) gets the
 * value the counter sticks at (PortCounters fields are 4 to 16 bits wide and stop at their
 * maximum; 0 for 64-bit counters). */
ib_counter_class_t ib_counter_class(const char *name, uint64_t *saturate);

/* Compares two snapshots of the same port. For every LINK or NIC counter that went up, a
 * finding on `<node>/<hca>:<port>` (kind "link" or "nic") with the counter names and deltas;
 * a counter that went down (cleared during the run, e.g. perfquery -R) counts its new value as
 * the lower bound of what happened. A rate or width that changed, or a port that left ACTIVE, is
 * a "link" finding. Counters stuck at their maximum before the run (they cannot show new errors)
 * and NOTE counters that moved are told through note() (may be NULL), one line each. `during`
 * ("rdmabw write 4096 B") goes into the evidence. Returns the number of findings added. */
size_t ib_snapshot_compare(const ib_snapshot_t *before, const ib_snapshot_t *after,
                           const char *node, const char *during, fb_result_t *result,
                           void (*note)(void *user, const char *line), void *user);

/* Judges port p against the best rate and width of the same hardware on this node (ports[0..n),
 * see ib_ports_best): a port below either is a "link" finding on `<node>/<hca>:<port>`. Returns
 * 1 when a finding was added, else 0. */
size_t ib_port_judge_rate(const ib_port_t *ports, size_t n, const ib_port_t *p, const char *node,
                          fb_result_t *result);

#endif
