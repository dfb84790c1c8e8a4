/* SPDX-License-Identifier: Apache-2.0 */
/* NVML through dlopen: the sensors (temperature, power, clocks, throttle reasons), the error
 * counters (ECC, retired pages, remapped rows, PCIe replays, NVLink errors) and Xid events that
 * telemetry samples during GPU workloads and the health sweep reads before them. NVML's types and
 * prototypes are declared here from its documented C API, so the build needs neither nvml.h nor
 * the library; a node whose driver lacks a function just reports that value unknown. */
#include "nvml.h"

#include "common/kmsg.h"
#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the NVML C API, as documented ----------------------------------------------------------- */

typedef int nvmlReturn_t; /* an enum in nvml.h */
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH 18

typedef struct nvml_device *nvmlDevice_t;
typedef struct nvml_event_set *nvmlEventSet_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef union {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType; /* nvmlValueType_t */
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

#define NVML_VALUE_TYPE_DOUBLE 0
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define NVML_VALUE_TYPE_SIGNED_INT 5
#define NVML_VALUE_TYPE_UNSIGNED_SHORT 6
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_FEATURE_ENABLED 1
#define NVML_EVENT_TYPE_XID 0x8ULL

/* The functions fleetburn uses. Names after '|' are older variants tried when the first is
 * missing. */
#define S_FUNCS(X)                                                                                 \
    X(init, nvmlReturn_t, (void), "nvmlInit_v2|nvmlInit")                                          \
    X(shutdown, nvmlReturn_t, (void), "nvmlShutdown")                                              \
    X(error_string, const char *, (nvmlReturn_t), "nvmlErrorString")                               \
    X(driver_version, nvmlReturn_t, (char *, unsigned), "nvmlSystemGetDriverVersion")              \
    X(nvml_version, nvmlReturn_t, (char *, unsigned), "nvmlSystemGetNVMLVersion")                  \
    X(cuda_version, nvmlReturn_t, (int *),                                                         \
      "nvmlSystemGetCudaDriverVersion_v2|nvmlSystemGetCudaDriverVersion")                          \
    X(count, nvmlReturn_t, (unsigned *), "nvmlDeviceGetCount_v2|nvmlDeviceGetCount")               \
    X(by_index, nvmlReturn_t, (unsigned, nvmlDevice_t *),                                          \
      "nvmlDeviceGetHandleByIndex_v2|nvmlDeviceGetHandleByIndex")                                  \
    X(by_pci, nvmlReturn_t, (const char *, nvmlDevice_t *),                                        \
      "nvmlDeviceGetHandleByPciBusId_v2|nvmlDeviceGetHandleByPciBusId")                            \
    X(pci_info, nvmlReturn_t, (nvmlDevice_t, nvmlPciInfo_t *),                                     \
      "nvmlDeviceGetPciInfo_v3|nvmlDeviceGetPciInfo_v2")                                           \
    X(name, nvmlReturn_t, (nvmlDevice_t, char *, unsigned), "nvmlDeviceGetName")                   \
    X(uuid, nvmlReturn_t, (nvmlDevice_t, char *, unsigned), "nvmlDeviceGetUUID")                   \
    X(vbios, nvmlReturn_t, (nvmlDevice_t, char *, unsigned), "nvmlDeviceGetVbiosVersion")          \
    X(inforom, nvmlReturn_t, (nvmlDevice_t, char *, unsigned), "nvmlDeviceGetInforomImageVersion") \
    X(memory, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t *), "nvmlDeviceGetMemoryInfo")             \
    X(temperature, nvmlReturn_t, (nvmlDevice_t, int, unsigned *), "nvmlDeviceGetTemperature")      \
    X(field_values, nvmlReturn_t, (nvmlDevice_t, int, nvmlFieldValue_t *),                         \
      "nvmlDeviceGetFieldValues")                                                                  \
    X(power, nvmlReturn_t, (nvmlDevice_t, unsigned *), "nvmlDeviceGetPowerUsage")                  \
    X(power_limit, nvmlReturn_t, (nvmlDevice_t, unsigned *), "nvmlDeviceGetEnforcedPowerLimit")    \
    X(clock, nvmlReturn_t, (nvmlDevice_t, int, unsigned *), "nvmlDeviceGetClockInfo")              \
    X(throttle, nvmlReturn_t, (nvmlDevice_t, unsigned long long *),                                \
      "nvmlDeviceGetCurrentClocksEventReasons|nvmlDeviceGetCurrentClocksThrottleReasons")          \
    X(ecc, nvmlReturn_t, (nvmlDevice_t, int, int, unsigned long long *),                           \
      "nvmlDeviceGetTotalEccErrors")                                                               \
    X(retired, nvmlReturn_t, (nvmlDevice_t, int, unsigned *, unsigned long long *),                \
      "nvmlDeviceGetRetiredPages")                                                                 \
    X(retired_pending, nvmlReturn_t, (nvmlDevice_t, int *),                                        \
      "nvmlDeviceGetRetiredPagesPendingStatus")                                                    \
    X(remapped, nvmlReturn_t, (nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *),      \
      "nvmlDeviceGetRemappedRows")                                                                 \
    X(replay, nvmlReturn_t, (nvmlDevice_t, unsigned *), "nvmlDeviceGetPcieReplayCounter")          \
    X(pcie_gen, nvmlReturn_t, (nvmlDevice_t, unsigned *), "nvmlDeviceGetCurrPcieLinkGeneration")   \
    X(pcie_max_gen, nvmlReturn_t, (nvmlDevice_t, unsigned *),                                      \
      "nvmlDeviceGetMaxPcieLinkGeneration")                                                        \
    X(pcie_width, nvmlReturn_t, (nvmlDevice_t, unsigned *), "nvmlDeviceGetCurrPcieLinkWidth")      \
    X(pcie_max_width, nvmlReturn_t, (nvmlDevice_t, unsigned *), "nvmlDeviceGetMaxPcieLinkWidth")   \
    X(nvlink_state, nvmlReturn_t, (nvmlDevice_t, unsigned, int *), "nvmlDeviceGetNvLinkState")     \
    X(nvlink_errors, nvmlReturn_t, (nvmlDevice_t, unsigned, int, unsigned long long *),            \
      "nvmlDeviceGetNvLinkErrorCounter")                                                           \
    X(event_set_create, nvmlReturn_t, (nvmlEventSet_t *), "nvmlEventSetCreate")                    \
    X(event_set_free, nvmlReturn_t, (nvmlEventSet_t), "nvmlEventSetFree")                          \
    X(event_types, nvmlReturn_t, (nvmlDevice_t, unsigned long long *),                             \
      "nvmlDeviceGetSupportedEventTypes")                                                          \
    X(register_events, nvmlReturn_t, (nvmlDevice_t, unsigned long long, nvmlEventSet_t),           \
      "nvmlDeviceRegisterEvents")                                                                  \
    X(event_wait, nvmlReturn_t, (nvmlEventSet_t, nvmlEventData_t *, unsigned),                     \
      "nvmlEventSetWait_v2|nvmlEventSetWait")

#define S_FIELD(name, ret, args, syms) ret(*name) args;
struct nvml {
    void *lib;
    S_FUNCS(S_FIELD)
};

struct nvml_events {
    nvml_t *nvml;
    nvmlEventSet_t set;
};

/* ---- loading --------------------------------------------------------------------------------- */

/* Looks up the first of the '|'-separated names that the library has. */
static void *s_sym(void *lib, const char *names)
{
    char name[96];
    for (const char *p = names; *p;) {
        size_t n = strcspn(p, "|");
        if (n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            void *f = dlsym(lib, name);
            if (f)
                return f;
        }
        p += n;
        if (*p == '|')
            p++;
    }
    return NULL;
}

static int s_errno(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return 0;
    case NVML_ERROR_INVALID_ARGUMENT:
        return -EINVAL;
    case NVML_ERROR_NOT_SUPPORTED:
        return -EOPNOTSUPP;
    case NVML_ERROR_NO_PERMISSION:
        return -EPERM;
    case NVML_ERROR_NOT_FOUND:
        return -ENOENT;
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return -ENOSPC;
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return -ENXIO;
    case NVML_ERROR_TIMEOUT:
        return -ETIMEDOUT;
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return -ENOSYS;
    case NVML_ERROR_GPU_IS_LOST:
        return -ENODEV;
    default:
        return -EIO;
    }
}

static void s_why(char *why, size_t len, const char *what, const char *detail)
{
    if (why && len)
        snprintf(why, len, "%s: %s", what, detail);
}

int nvml_open(const char *lib, nvml_t **out, char *why, size_t whylen)
{
    *out = NULL;
    if (!lib)
        lib = "libnvidia-ml.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        char what[160];
        snprintf(what, sizeof what, "%s not loadable", lib);
        s_why(why, whylen, what, e ? e : "unknown error");
        return -ENOENT;
    }
    nvml_t *self = xcalloc(1, sizeof *self);
    self->lib = h;
#define S_LOAD(fname, ret, args, syms) *(void **)(&self->fname) = s_sym(h, syms);
    S_FUNCS(S_LOAD)
#undef S_LOAD
    if (!self->init || !self->shutdown) {
        s_why(why, whylen, lib, "not NVML (no nvmlInit)");
        dlclose(h);
        free(self);
        return -ENOENT;
    }
    nvmlReturn_t r = self->init();
    if (r != NVML_SUCCESS) {
        const char *msg = self->error_string ? self->error_string(r) : NULL;
        s_why(why, whylen, "nvmlInit failed", msg ? msg : "error");
        dlclose(h);
        free(self);
        int rc = s_errno(r);
        return rc == -EOPNOTSUPP || rc == -ENOENT ? -EIO : rc;
    }
    *out = self;
    return 0;
}

void nvml_close(nvml_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    nvml_t *self = *self_p;
    self->shutdown();
    dlclose(self->lib);
    free(self);
    *self_p = NULL;
}

/* Calls fn(args) when the library has it; -ENOSYS otherwise. */
#define S_CALL(self, fn, ...) ((self)->fn ? s_errno((self)->fn(__VA_ARGS__)) : -ENOSYS)

/* ---- versions -------------------------------------------------------------------------------- */

static int s_string(int rc, char *dst, size_t len, const char *src)
{
    if (rc == 0)
        fb_strlcpy(dst, src, len);
    return rc;
}

int nvml_driver_version(nvml_t *self, char *buf, size_t len)
{
    char v[96] = "";
    return s_string(S_CALL(self, driver_version, v, sizeof v), buf, len, v);
}

int nvml_library_version(nvml_t *self, char *buf, size_t len)
{
    char v[96] = "";
    return s_string(S_CALL(self, nvml_version, v, sizeof v), buf, len, v);
}

int nvml_cuda_version(nvml_t *self, char *buf, size_t len)
{
    int v = 0;
    int rc = S_CALL(self, cuda_version, &v);
    if (rc == 0) {
        if (v <= 0)
            return -EIO;
        snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
    }
    return rc;
}

/* ---- devices --------------------------------------------------------------------------------- */

int nvml_device_count(nvml_t *self, unsigned *n)
{
    unsigned v = 0;
    int rc = S_CALL(self, count, &v);
    if (rc == 0)
        *n = v;
    return rc;
}

int nvml_device_by_index(nvml_t *self, unsigned index, nvml_dev_t *dev)
{
    nvmlDevice_t d = NULL;
    int rc = S_CALL(self, by_index, index, &d);
    if (rc == 0)
        *dev = d;
    return rc;
}

int nvml_device_by_pci(nvml_t *self, const char *pci, nvml_dev_t *dev)
{
    char canon[16];
    if (fb_kmsg_pci_canon(pci, canon) < 0)
        return -EINVAL;
    nvmlDevice_t d = NULL;
    int rc = S_CALL(self, by_pci, canon, &d);
    if (rc == 0)
        *dev = d;
    return rc;
}

int nvml_device_pci(nvml_t *self, nvml_dev_t dev, char out[16])
{
    nvmlPciInfo_t info;
    memset(&info, 0, sizeof info);
    int rc = S_CALL(self, pci_info, dev, &info);
    if (rc < 0)
        return rc;
    info.busId[sizeof info.busId - 1] = '\0';
    if (fb_kmsg_pci_canon(info.busId, out) == 0)
        return 0;
    if (info.domain > 0xffff || info.bus > 0xff || info.device > 0x1f)
        return -EIO;
    snprintf(out, 16, "%04x:%02x:%02x.0", info.domain, info.bus, info.device);
    return 0;
}

int nvml_device_name(nvml_t *self, nvml_dev_t dev, char *buf, size_t len)
{
    char v[96] = "";
    return s_string(S_CALL(self, name, dev, v, sizeof v), buf, len, v);
}

int nvml_device_uuid(nvml_t *self, nvml_dev_t dev, char *buf, size_t len)
{
    char v[96] = "";
    return s_string(S_CALL(self, uuid, dev, v, sizeof v), buf, len, v);
}

int nvml_device_vbios(nvml_t *self, nvml_dev_t dev, char *buf, size_t len)
{
    char v[64] = "";
    return s_string(S_CALL(self, vbios, dev, v, sizeof v), buf, len, v);
}

int nvml_device_inforom(nvml_t *self, nvml_dev_t dev, char *buf, size_t len)
{
    char v[64] = "";
    return s_string(S_CALL(self, inforom, dev, v, sizeof v), buf, len, v);
}

int nvml_device_memory_total(nvml_t *self, nvml_dev_t dev, uint64_t *bytes)
{
    nvmlMemory_t m = {0, 0, 0};
    int rc = S_CALL(self, memory, dev, &m);
    if (rc == 0) {
        if (m.total == 0)
            return -EIO;
        *bytes = m.total;
    }
    return rc;
}

/* ---- sensors --------------------------------------------------------------------------------- */

int nvml_temperature(nvml_t *self, nvml_dev_t dev, double *celsius)
{
    unsigned v = 0;
    int rc = S_CALL(self, temperature, dev, NVML_TEMPERATURE_GPU, &v);
    if (rc == 0)
        *celsius = v;
    return rc;
}

int nvml_memory_temperature(nvml_t *self, nvml_dev_t dev, double *celsius)
{
    nvmlFieldValue_t fv;
    memset(&fv, 0, sizeof fv);
    fv.fieldId = NVML_FI_DEV_MEMORY_TEMP;
    int rc = S_CALL(self, field_values, dev, 1, &fv);
    if (rc < 0)
        return rc;
    if (fv.nvmlReturn != NVML_SUCCESS)
        return s_errno(fv.nvmlReturn);
    double v;
    switch (fv.valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
        v = fv.value.dVal;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        v = fv.value.uiVal;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        v = (double)fv.value.ulVal;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        v = (double)fv.value.ullVal;
        break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        v = (double)fv.value.sllVal;
        break;
    case NVML_VALUE_TYPE_SIGNED_INT:
        v = fv.value.siVal;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        v = fv.value.usVal;
        break;
    default:
        return -EIO;
    }
    /* 0 is what boards without a memory sensor sometimes answer instead of "not supported". */
    if (!(v > 0 && v < 200))
        return -EOPNOTSUPP;
    *celsius = v;
    return 0;
}

/* The call must complete before mw is read: keep it a separate statement (argument evaluation
 * order is unspecified, and reading mw as a sibling argument gave 0 W). */
static int s_milliwatts(int rc, const unsigned *mw, double *watts)
{
    if (rc == 0)
        *watts = *mw / 1000.0;
    return rc;
}

int nvml_power(nvml_t *self, nvml_dev_t dev, double *watts)
{
    unsigned mw = 0;
    int rc = S_CALL(self, power, dev, &mw);
    return s_milliwatts(rc, &mw, watts);
}

int nvml_power_limit(nvml_t *self, nvml_dev_t dev, double *watts)
{
    unsigned mw = 0;
    int rc = S_CALL(self, power_limit, dev, &mw);
    return s_milliwatts(rc, &mw, watts);
}

static int s_clock(nvml_t *self, nvml_dev_t dev, int which, double *mhz)
{
    unsigned v = 0;
    int rc = S_CALL(self, clock, dev, which, &v);
    if (rc == 0)
        *mhz = v;
    return rc;
}

int nvml_sm_clock(nvml_t *self, nvml_dev_t dev, double *mhz)
{
    return s_clock(self, dev, NVML_CLOCK_SM, mhz);
}

int nvml_mem_clock(nvml_t *self, nvml_dev_t dev, double *mhz)
{
    return s_clock(self, dev, NVML_CLOCK_MEM, mhz);
}

int nvml_throttle_reasons(nvml_t *self, nvml_dev_t dev, uint64_t *mask)
{
    unsigned long long v = 0;
    int rc = S_CALL(self, throttle, dev, &v);
    if (rc == 0)
        *mask = v;
    return rc;
}

/* ---- counters -------------------------------------------------------------------------------- */

int nvml_ecc_errors(nvml_t *self, nvml_dev_t dev, bool uncorrected, bool aggregate, uint64_t *count)
{
    unsigned long long v = 0;
    int rc = S_CALL(self, ecc, dev, uncorrected ? 1 : 0, aggregate ? 1 : 0, &v);
    if (rc == 0)
        *count = v;
    return rc;
}

int nvml_retired_pages(nvml_t *self, nvml_dev_t dev, bool double_bit, uint64_t *count)
{
    if (!self->retired)
        return -ENOSYS;
    /* A count of 0 asks for the number only: NVML answers it with success or "insufficient
     * size", depending on the version. */
    unsigned n = 0;
    unsigned long long addr = 0;
    nvmlReturn_t r = self->retired(dev, double_bit ? 1 : 0, &n, &addr);
    if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE)
        return s_errno(r);
    *count = n;
    return 0;
}

int nvml_retired_pending(nvml_t *self, nvml_dev_t dev, bool *pending)
{
    int v = 0;
    int rc = S_CALL(self, retired_pending, dev, &v);
    if (rc == 0)
        *pending = v == NVML_FEATURE_ENABLED;
    return rc;
}

int nvml_remapped_rows(nvml_t *self, nvml_dev_t dev, nvml_remap_t *out)
{
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    int rc = S_CALL(self, remapped, dev, &corr, &unc, &pending, &failure);
    if (rc == 0)
        *out = (nvml_remap_t){corr, unc, pending != 0, failure != 0};
    return rc;
}

int nvml_pcie_replay(nvml_t *self, nvml_dev_t dev, uint64_t *count)
{
    unsigned v = 0;
    int rc = S_CALL(self, replay, dev, &v);
    if (rc == 0)
        *count = v;
    return rc;
}

int nvml_pcie_link(nvml_t *self, nvml_dev_t dev, nvml_pcie_t *out)
{
    nvml_pcie_t p = {0, 0, 0, 0};
    int rc1 = S_CALL(self, pcie_gen, dev, &p.gen);
    int rc2 = S_CALL(self, pcie_max_gen, dev, &p.max_gen);
    int rc3 = S_CALL(self, pcie_width, dev, &p.width);
    int rc4 = S_CALL(self, pcie_max_width, dev, &p.max_width);
    if (rc1 && rc2 && rc3 && rc4)
        return rc1;
    *out = p;
    return 0;
}

int nvml_nvlink_active(nvml_t *self, nvml_dev_t dev, unsigned link, bool *active)
{
    int v = 0;
    int rc = S_CALL(self, nvlink_state, dev, link, &v);
    if (rc == 0)
        *active = v == NVML_FEATURE_ENABLED;
    return rc;
}

int nvml_nvlink_errors(nvml_t *self, nvml_dev_t dev, unsigned link, nvml_nvlink_counter_t which,
                       uint64_t *count)
{
    unsigned long long v = 0;
    int rc = S_CALL(self, nvlink_errors, dev, link, (int)which, &v);
    if (rc == 0)
        *count = v;
    return rc;
}

/* ---- Xid events ------------------------------------------------------------------------------ */

int nvml_events_open(nvml_t *self, nvml_events_t **out)
{
    *out = NULL;
    unsigned n = 0;
    if (!self->event_set_create || !self->register_events || !self->event_wait ||
        nvml_device_count(self, &n) < 0)
        return -EOPNOTSUPP;
    nvmlEventSet_t set = NULL;
    int rc = s_errno(self->event_set_create(&set));
    if (rc < 0)
        return rc;
    unsigned registered = 0;
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t d = NULL;
        unsigned long long types = 0;
        if (self->by_index(i, &d) != NVML_SUCCESS)
            continue;
        if (self->event_types && self->event_types(d, &types) == NVML_SUCCESS &&
            !(types & NVML_EVENT_TYPE_XID))
            continue;
        if (self->register_events(d, NVML_EVENT_TYPE_XID, set) == NVML_SUCCESS)
            registered++;
    }
    if (registered == 0) {
        if (self->event_set_free)
            self->event_set_free(set);
        return -EOPNOTSUPP;
    }
    nvml_events_t *ev = xcalloc(1, sizeof *ev);
    ev->nvml = self;
    ev->set = set;
    *out = ev;
    return 0;
}

int nvml_events_wait(nvml_events_t *ev, unsigned timeout_ms, nvml_dev_t *dev, uint64_t *xid)
{
    nvmlEventData_t data;
    memset(&data, 0, sizeof data);
    nvmlReturn_t r = ev->nvml->event_wait(ev->set, &data, timeout_ms);
    if (r == NVML_ERROR_TIMEOUT)
        return 0;
    if (r != NVML_SUCCESS)
        return s_errno(r);
    if (!(data.eventType & NVML_EVENT_TYPE_XID))
        return 0;
    *dev = data.device;
    *xid = data.eventData;
    return 1;
}

void nvml_events_close(nvml_events_t **ev_p)
{
    if (!ev_p || !*ev_p)
        return;
    nvml_events_t *ev = *ev_p;
    if (ev->nvml->event_set_free)
        ev->nvml->event_set_free(ev->set);
    free(ev);
    *ev_p = NULL;
}
