/* SPDX-License-Identifier: Apache-2.0 */
/* Host DRAM test workload: multithreaded, NUMA-aware pattern tests over locked memory. */
#ifndef FB_MEMTEST_H
#define FB_MEMTEST_H

#include "worker.h"

fb_verdict_t memtest_run(worker_ctx_t *ctx);

#endif
