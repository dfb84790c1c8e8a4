/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn-worker --probe` (probe.h): the GPUs as the management library names them, and the
 * versions line, for the agent's inventory. */
#include "probe.h"

#include "gpu/host/telemetry.h"
#include "health/health.h"

#include <stdlib.h>
#include <string.h>

/* Text from the library on one line: control characters become blanks. */
static void s_clean(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

int worker_probe(FILE *out)
{
    char why[256] = "";
    tel_backend_t *b = telemetry_backend_open(why, sizeof why);
    if (!b) {
        s_clean(why);
        fprintf(out, "none %s\n", why[0] ? why : "no GPU management library");
    }
    for (size_t i = 0; b && i < b->n_gpus; i++) {
        tel_gpu_info_t info = {0};
        b->info(b, i, &info);
        s_clean(info.name);
        s_clean(info.vbios);
        s_clean(info.inforom);
        fprintf(out, "gpu %s", info.pci);
        if (info.memory_bytes)
            fprintf(out, " memory=%llu", (unsigned long long)info.memory_bytes);
        if (info.vbios[0] && !strchr(info.vbios, ' '))
            fprintf(out, " vbios=%s", info.vbios);
        if (info.inforom[0] && !strchr(info.inforom, ' '))
            fprintf(out, " inforom=%s", info.inforom);
        fprintf(out, " name=%s\n", info.name);
    }
    const char *root = getenv("FLEETBURN_SYSFS_ROOT");
    char *versions = health_versions(root ? root : "", b, true);
    s_clean(versions);
    fprintf(out, "versions: %s\n", versions);
    free(versions);
    telemetry_backend_destroy(&b);
    fflush(out);
    return 0;
}
