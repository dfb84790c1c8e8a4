/* SPDX-License-Identifier: Apache-2.0 */
/* The netbw workload: TCP bandwidth in both directions and round-trip latency between the two
 * members of a pair task (scope: pairs), for Ethernet-only fleets and as the end-to-end test of
 * the pair machinery.
 *
 * Each member listens on an ephemeral port of its own address and posts the port through
 * worker_exchange; rank 0 opens a control connection to rank 1. Then rank 0 sends to rank 1
 * over `streams` TCP connections for `duration` (after a warm-up that is not counted), the
 * receiver measures and sends back what it got, and the same runs the other way. Last, each
 * member times `lat_iters` ping-pongs of small messages over the control connection. Every byte
 * is a checked pattern (pattern.h): corruption that passed the TCP checksum is a finding.
 *
 * Metrics of each member (rates in Gb/s = 1e9 bit/s, measured by the receiver):
 * netbw.tx_gbps (this node -> partner), netbw.rx_gbps (partner -> this node), netbw.rtt_p50_us,
 * netbw.rtt_p99_us, netbw.rtt_max_us, netbw.streams, netbw.tx_retransmits (TCP segments this
 * node retransmitted), netbw.rx_corrupt_blocks. A direction's findings (below min_gbps,
 * corruption) go on its sender's result, with part "sender->receiver"; a member fails when the
 * direction it sends fails. */
#ifndef FB_NETBW_H
#define FB_NETBW_H

#include "worker.h"

#include <stddef.h>
#include <stdint.h>

fb_verdict_t netbw_run(worker_ctx_t *ctx);

/* Limits, for tests that must not wait for the production ones. 0 = the default. */
typedef struct {
    uint64_t exchange_timeout_ms; /* partner posting its port (default 120 s) */
    uint64_t connect_timeout_ms;  /* connecting, and waiting for the partner's connections and
                                     messages beyond the planned time (default 20 s) */
} netbw_opts_t;
fb_verdict_t netbw_run_opts(worker_ctx_t *ctx, const netbw_opts_t *opts);

/* The value at fraction q (0..1) of the sorted samples v[0..n) by nearest rank (q = 0.5: the
 * median, 0.99: p99, 1: the maximum). n > 0. */
double netbw_percentile(const double *sorted, size_t n, double q);

#endif
