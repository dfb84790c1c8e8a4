/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for NVIDIA's libnvidia-ml.so.1, for integration tests on machines without NVIDIA's
 * driver: put its directory (build/fake-nvml) on LD_LIBRARY_PATH and describe the GPUs in a file
 * named by $FLEETBURN_FAKE_NVML, and fleetburn's real NVML code (workloads/gpu/host/nvml.c, the
 * agent's GPU probe, the health sweep) sees them:
 *
 *   driver 580.65.06
 *   cuda 13000
 *   gpu 0000:41:00.0 85520809984 96.00.99.00.01 G520.0200.00.05 NVIDIA H100 80GB HBM3
 *
 * (gpu: PCI address, memory in bytes, VBIOS, InfoROM, then the name to the end of the line.)
 * Without the variable, or with a file that does not parse, nvmlInit fails as it does when the
 * driver is not loaded. Only what fleetburn's inventory needs is here; every other NVML function
 * is absent, which fleetburn treats as "not supported by this driver". Test equipment: never
 * installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define MAX_GPUS 64

typedef struct {
    char pci[24];
    unsigned long long memory;
    char vbios[64], inforom[64], name[96];
} gpu_t;

static gpu_t s_gpus[MAX_GPUS];
static unsigned s_n;
static char s_driver[64] = "580.65.06";
static int s_cuda = 13000;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

static int s_copy(char *dst, unsigned len, const char *src)
{
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dst, src);
    return NVML_SUCCESS;
}

static gpu_t *s_dev(void *dev)
{
    gpu_t *g = dev;
    return g >= s_gpus && g < s_gpus + s_n ? g : NULL;
}

int nvmlInit_v2(void)
{
    const char *path = getenv("FLEETBURN_FAKE_NVML");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    char line[512];
    s_n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        gpu_t *g = &s_gpus[s_n];
        int name_at = 0;
        if (sscanf(line, "driver %63s", s_driver) == 1 || sscanf(line, "cuda %d", &s_cuda) == 1)
            continue;
        if (s_n < MAX_GPUS &&
            sscanf(line, "gpu %23s %llu %63s %63s %n", g->pci, &g->memory, g->vbios, g->inforom,
                   &name_at) == 4 &&
            name_at) {
            snprintf(g->name, sizeof g->name, "%s", line + name_at);
            s_n++;
        }
    }
    fclose(f);
    return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

const char *nvmlErrorString(int r)
{
    return r == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error";
}

int nvmlSystemGetDriverVersion(char *v, unsigned len)
{
    return s_copy(v, len, s_driver);
}

int nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    *v = s_cuda;
    return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = s_n;
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
    if (i >= s_n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &s_gpus[i];
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **dev)
{
    for (unsigned i = 0; i < s_n; i++)
        if (strstr(pci, s_gpus[i].pci + 5)) { /* "00000000:41:00.0" or "0000:41:00.0" */
            *dev = &s_gpus[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

int nvmlDeviceGetPciInfo_v3(void *dev, nvmlPciInfo_t *info)
{
    gpu_t *g = s_dev(dev);
    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof *info);
    snprintf(info->busId, sizeof info->busId, "0000%s", g->pci); /* NVML's 8-digit domain */
    return NVML_SUCCESS;
}

int nvmlDeviceGetName(void *dev, char *v, unsigned len)
{
    gpu_t *g = s_dev(dev);
    return g ? s_copy(v, len, g->name) : NVML_ERROR_INVALID_ARGUMENT;
}

int nvmlDeviceGetVbiosVersion(void *dev, char *v, unsigned len)
{
    gpu_t *g = s_dev(dev);
    return g ? s_copy(v, len, g->vbios) : NVML_ERROR_INVALID_ARGUMENT;
}

int nvmlDeviceGetInforomImageVersion(void *dev, char *v, unsigned len)
{
    gpu_t *g = s_dev(dev);
    return g ? s_copy(v, len, g->inforom) : NVML_ERROR_INVALID_ARGUMENT;
}

int nvmlDeviceGetMemoryInfo(void *dev, nvmlMemory_t *m)
{
    gpu_t *g = s_dev(dev);
    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->total = g->memory;
    m->free = g->memory;
    m->used = 0;
    return NVML_SUCCESS;
}
