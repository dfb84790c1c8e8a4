/* SPDX-License-Identifier: Apache-2.0 */
/* What the unit tests of the RDMA workload (test_rdma_engine.c, test_rdma_workload.c) share: a
 * pair of members, node01 (rank 0) and node02 (rank 1), run at once in two threads, exchanging
 * through a temporary folder. Linked into every unit test (tests/CMakeLists.txt). */
#ifndef FB_TEST_RDMA_PAIR_FIXTURE_H
#define FB_TEST_RDMA_PAIR_FIXTURE_H

#include "rdma/rdmabw.h"

typedef struct {
    worker_ctx_t *ctx;
    fb_verdict_t verdict;
} rdma_pair_member_t;

/* Makes m[0] and m[1] (their contexts made by the caller) ranks 0 and 1 of the group
 * {node01, node02} and runs rdmabw_run_opts(ctx, opts) on both at once, with
 * FLEETBURN_EXCHANGE_DIR a temporary folder removed after; the verdicts land in m[].verdict. */
void rdma_pair_run(rdma_pair_member_t m[2], const rdmabw_opts_t *opts);

#endif
