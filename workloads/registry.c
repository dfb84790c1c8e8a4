/* SPDX-License-Identifier: Apache-2.0 */
/* The table of workloads this fleetburn-worker was built with. */
#include "worker.h"
#include "allreduce/allreduce.h"
#include "memtest/memtest.h"
#include "sleep.h"
#include "gpu/gpu.h"
#include "health/health.h"
#include "net/netbw.h"
#include "rdma/rdmabw.h"

#include <string.h>

static const workload_entry_t s_workloads[] = {
    {"memtest", memtest_run},
    {"sleep", sleep_run},
    {"gpuburn", gpuburn_run},
    {"gpumemtest", gpumemtest_run},
    {"p2p", p2p_run},
    {"health", health_run},
    {"allreduce", allreduce_run},
    {"netbw", netbw_run},
    {"rdmabw", rdmabw_run},
};

const workload_entry_t *worker_find(const char *name)
{
    for (size_t i = 0; i < sizeof s_workloads / sizeof s_workloads[0]; i++)
        if (!strcmp(s_workloads[i].name, name))
            return &s_workloads[i];
    return NULL;
}
