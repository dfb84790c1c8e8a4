/* SPDX-License-Identifier: Apache-2.0 */
/* GPUs of one model for gpuburn's host logic tests (burn_fixture.h). */
#include "burn_fixture.h"

#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>

burn_gpu_t *burn_fixture_gpus(size_t n, const char *name, double peak_tflops, uint64_t c_buffers,
                              uint64_t gemms, uint64_t kat_checked)
{
    burn_gpu_t *g = xcalloc(n, sizeof *g);
    for (size_t i = 0; i < n; i++) {
        g[i].device = (int)i;
        snprintf(g[i].pci, sizeof g[i].pci, "0000:%02zx:00.0", 0x19 + i);
        snprintf(g[i].name, sizeof g[i].name, "%s", name);
        g[i].peak_tflops = peak_tflops;
        g[i].matrix = 8192;
        g[i].c_buffers = c_buffers;
        g[i].gemms = gemms;
        burn_counters_clear(&g[i].repeat);
        burn_counters_clear(&g[i].kat);
        g[i].kat_checked = kat_checked;
    }
    return g;
}

void burn_fixture_free_gpus(burn_gpu_t *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        burn_gpu_clear(&g[i]);
    free(g);
}
