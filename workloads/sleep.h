/* SPDX-License-Identifier: Apache-2.0 */
/* Test workload with a known duration and outcome (pass, fail, crash, hang). */
#ifndef FB_SLEEP_H
#define FB_SLEEP_H

#include "worker.h"

fb_verdict_t sleep_run(worker_ctx_t *ctx);

#endif
