/* SPDX-License-Identifier: Apache-2.0 */
/* The table of workloads and their parameters, and validation of a parameter value against its
 * spec. This is the single place where a parameter's type, default and bounds are written down:
 * the campaign parser, the CLI listing and docs/campaign-file.md all follow it. Validation uses
 * the strict parsers of common/units.h, so what passes here is what a worker can convert. */
#include "workload.h"
#include "pairing.h"

#include "common/value_limits.h"
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table ---- */

static const char *const s_memtest_patterns[] = {
    "stuck_address",        "own_address",       "walking_ones", "walking_zeros",    "checkerboard",
    "solid_bits",           "moving_inversions", "random",       "block_move",       "compare_xor",
    "compare_sub",          "compare_mul",       "compare_div",  "compare_or",       "compare_and",
    "sequential_increment", "bit_spread",        "bit_flip",     "block_sequential", NULL,
};

static const char *const s_memtest_dimm_decode[] = {"auto", "passive", "off", NULL};

static const fb_param_spec_t s_memtest_params[] = {
    {"size", FB_PARAM_BYTES_OR_PERCENT, "80%", NULL, 0, 0, false,
     "memory to test on each node: a byte size, or a percentage of the node's available memory "
     "(MemAvailable) when the task starts; a size larger than the available memory fails the "
     "task instead of swapping"},
    {"passes", FB_PARAM_UINT, "1", NULL, 1, 1000000, false,
     "how many times to run every selected pattern over the whole buffer"},
    {"threads", FB_PARAM_UINT_OR_AUTO, "auto", NULL, 1, 4096, false,
     "test threads; auto = one per online CPU, each on the NUMA node of its memory"},
    {"patterns", FB_PARAM_ENUM_LIST, "all", s_memtest_patterns, 0, 0, false,
     "the pattern tests to run, in this order; all = every pattern"},
    {"seed", FB_PARAM_UINT, NULL, NULL, 0, 0, false,
     "seed of the random patterns; absent = each task picks one and reports it, so a failure "
     "can be replayed with the same seed"},
    {"lock", FB_PARAM_BOOL, "true", NULL, 0, 0, false,
     "lock the buffer in RAM (mlock) so that no page is swapped out while it is tested"},
    {"retests", FB_PARAM_UINT, "8", NULL, 0, 1000, false,
     "times the page of each miscompare is written and read again to tell a stuck cell from a "
     "transient error; 0 = no retest"},
    {"dimm_decode", FB_PARAM_ENUM, "auto", s_memtest_dimm_decode, 0, 0, false,
     "how the DIMM of a miscompare is looked up: auto = rasdaemon, the kernel's EDAC address "
     "decoder (counts one corrected error per address) and SMBIOS; passive = without the "
     "decoder; off"},
    {"inject_bitflips", FB_PARAM_UINT, NULL, NULL, 0, 1000000, true,
     "test-only: flip this many bits in the buffer after it is written, to prove detection"},
    {"inject_stuck_bits", FB_PARAM_UINT, NULL, NULL, 0, 64, true,
     "test-only: make this many bits stuck, so that the retest finds them again"},
};

static const char *const s_sleep_exits[] = {"pass", "fail", "crash", "hang", NULL};

static const fb_param_spec_t s_sleep_params[] = {
    {"duration", FB_PARAM_DURATION, "1s", NULL, 0, 0, false, "how long the task runs"},
    {"exit", FB_PARAM_ENUM, "pass", s_sleep_exits, 0, 0, false,
     "how it ends: pass, fail (a failed verdict), crash (killed by a signal), hang (never "
     "returns; the agent must kill it at its deadline)"},
    {"exchange", FB_PARAM_BOOL, NULL, NULL, 0, 0, false,
     "in a group task: all-gather the members' names through the coordinator before sleeping "
     "(tests the rendezvous)"},
};

/* GPU workloads. `devices` selects GPUs by index ("all", or "0,2,3"). Floors that are relative
 * compare a GPU with the median of the GPUs of its class (same model) in the same task. */
static const char *const s_gpu_dtypes[] = {"bf16", "fp16", "tf32", "fp32", "fp64", "fp8", NULL};
static const char *const s_gpu_corruptions[] = {"flip", "nan", "systematic", "gemm", "sdc", NULL};
static const fb_param_spec_t s_gpuburn_params[] = {
    {"dtype", FB_PARAM_ENUM, "bf16", s_gpu_dtypes, 0, 0, false,
     "matrix element type; fp8 only where the GPU has it"},
    {"duration", FB_PARAM_DURATION, "60s", NULL, 0, 0, false, "how long to keep every GPU loaded"},
    {"interval", FB_PARAM_DURATION, "5s", NULL, 0, 0, false,
     "TFLOPS are measured and verification runs once per interval"},
    /* no default here: the worker's depends on the dtype (workloads/gpu/host/burn_judge.h) */
    {"matrix", FB_PARAM_UINT, NULL, NULL, 256, 65536, false,
     "square GEMM dimension (M=N=K); unless given 8192, and 24576 for fp8 (its GEMMs at 8192 are "
     "too short against the checksums' read of each result)"},
    {"mem_fraction", FB_PARAM_DOUBLE, "0.9", NULL, 0, 0, false,
     "fraction of free GPU memory filled with operand and result matrices, as gpu-burn does"},
    {"devices", FB_PARAM_STRING, "all", NULL, 0, 0, false, "GPU indices to load, or all"},
    {"min_tflops", FB_PARAM_DOUBLE, NULL, NULL, 0, 0, false,
     "absolute floor: a GPU whose median TFLOPS is below it fails"},
    {"min_relative", FB_PARAM_DOUBLE, "0.9", NULL, 0, 0, false,
     "relative floor: a GPU below this fraction of its class median fails"},
    {"abft", FB_PARAM_BOOL, "true", NULL, 0, 0, false,
     "check every GEMM's result by block checksums against (e^T A)B and A(Be) before its buffer "
     "is reused"},
    {"abft_sms", FB_PARAM_UINT_OR_AUTO, "auto", NULL, 0, 64, false,
     "SMs the checksums run on beside the GEMMs (0: after each GEMM); auto = the way that "
     "costs the burn least, measured at setup"},
    {"sdc_probe", FB_PARAM_BOOL, "true", NULL, 0, 0, false,
     "once per interval, identical deterministic work on every SM compared bit for bit between "
     "SMs and GPUs (silent data corruption)"},
    {"inject_corrupt", FB_PARAM_ENUM, NULL, s_gpu_corruptions, 0, 0, true,
     "test-only: corrupt a GEMM result (one flipped element, a NaN, a systematic error that "
     "repeats identically, one bit in random GEMMs before their checksums) or one SM's SDC probe "
     "result, to prove verification"},
    {"inject_gemms", FB_PARAM_UINT, NULL, NULL, 1, 32, true,
     "test-only: how many GEMMs inject_corrupt=gemm corrupts"},
    {"inject_seed", FB_PARAM_UINT, NULL, NULL, 0, 0, true,
     "test-only: seed choosing the corrupted GEMMs, elements and SM"},
};
/* gpumemtest's patterns in the order of gpumem_pattern_t (workloads/gpu/host/gpumem_report.h),
 * which names them from this list. */
const char *const fb_workload_gpumem_patterns[] = {
    "walking_ones",
    "walking_zeros",
    "own_address",
    "moving_inversions_8",
    "moving_inversions_32",
    "moving_inversions_random",
    "modulo20",
    "bit_fade",
    NULL,
};
static const fb_param_spec_t s_gpumemtest_params[] = {
    {"mem_fraction", FB_PARAM_DOUBLE, "0.92", NULL, 0, 0, false,
     "fraction of free GPU memory tested (at least 0.9 recommended)"},
    {"passes", FB_PARAM_UINT, "1", NULL, 1, 1000000, false, "passes over every pattern"},
    {"patterns", FB_PARAM_ENUM_LIST, "all", fb_workload_gpumem_patterns, 0, 0, false,
     "pattern tests to run; all = every pattern"},
    {"bit_fade_delay", FB_PARAM_DURATION, "30s", NULL, 0, 0, false,
     "how long bit_fade leaves a pattern untouched before reading it back"},
    {"devices", FB_PARAM_STRING, "all", NULL, 0, 0, false, "GPU indices to test, or all"},
    {"inject_bitflips", FB_PARAM_UINT, NULL, NULL, 0, 1000000, true,
     "test-only: flip this many bits in GPU memory after a pattern is written"},
};
static const fb_param_spec_t s_p2p_params[] = {
    {"size", FB_PARAM_BYTES, "256MiB", NULL, 0, 0, false, "bytes per bandwidth transfer"},
    {"iters", FB_PARAM_UINT, "20", NULL, 1, 100000, false, "transfers timed per measurement"},
    {"devices", FB_PARAM_STRING, "all", NULL, 0, 0, false, "GPU indices to include, or all"},
    {"min_gbs", FB_PARAM_DOUBLE, NULL, NULL, 0, 0, false,
     "absolute floor in GB/s for unidirectional GPU-GPU bandwidth"},
    {"min_relative", FB_PARAM_DOUBLE, "0.9", NULL, 0, 0, false,
     "a pair below this fraction of the median of pairs with the same link type is a finding"},
    {"inject_corrupt", FB_PARAM_BOOL, NULL, NULL, 0, 0, true,
     "test-only: corrupt one received buffer to prove transfer verification"},
};
/* Multi-node workloads (scope: group | pairs; allreduce also runs with scope: node). */
static const char *const s_ar_launchers[] = {"mpirun", "native", NULL};
static const char *const s_ar_dtypes[] = {"float", "half", "bfloat16", "double", "int32", NULL};
static const char *const s_ar_ops[] = {"sum", "prod", "max", "min", NULL};
static const fb_param_spec_t s_allreduce_params[] = {
    {"launcher", FB_PARAM_ENUM, "mpirun", s_ar_launchers, 0, 0, false,
     "mpirun: rank 0's agent runs OpenMPI's mpirun over the group (CPU-only nodes: host "
     "MPI_Allreduce); native: every agent starts one rank per GPU, NCCL's id via the coordinator"},
    {"min_size", FB_PARAM_BYTES, "8", NULL, 0, 0, false, "smallest message of the sweep"},
    {"max_size", FB_PARAM_BYTES, NULL, NULL, 0, 0, false,
     "largest message (default 8GiB on GPUs; on CPUs the smaller of 1GiB and a quarter of "
     "memory per rank)"},
    {"factor", FB_PARAM_UINT, "2", NULL, 2, 1024, false, "size multiplier between steps"},
    {"dtype", FB_PARAM_ENUM, "float", s_ar_dtypes, 0, 0, false, "element type"},
    {"op", FB_PARAM_ENUM, "sum", s_ar_ops, 0, 0, false, "reduction"},
    {"iters", FB_PARAM_UINT, "20", NULL, 1, 100000, false,
     "timed iterations per size, each one's result checked"},
    {"warmup", FB_PARAM_UINT, "5", NULL, 0, 100000, false, "untimed iterations per size"},
    {"ranks_per_node", FB_PARAM_UINT, "1", NULL, 1, 1024, false,
     "host path (nodes without GPUs): MPI ranks per node; GPU nodes run one rank per GPU"},
    {"min_busbw_gbs", FB_PARAM_DOUBLE, NULL, NULL, 0, 0, false,
     "fail when busbw at the largest size is below this (GB/s)"},
    {"inject_corrupt", FB_PARAM_BOOL, NULL, NULL, 0, 0, true,
     "test-only: rank 0 corrupts one element of its result to prove the check"},
};
static const char *const s_rdma_modes[] = {"write", "read", "send", NULL};
static const fb_param_spec_t s_rdmabw_params[] = {
    {"modes", FB_PARAM_ENUM_LIST, "write,read,send", s_rdma_modes, 0, 0, false,
     "RC operations measured"},
    {"min_size", FB_PARAM_BYTES, "2", NULL, 0, 0, false, "smallest message"},
    {"max_size", FB_PARAM_BYTES, "8MiB", NULL, 0, 0, false, "largest message"},
    {"iters", FB_PARAM_UINT, "1000", NULL, 1, 100000000, false, "messages per size"},
    {"lat_iters", FB_PARAM_UINT, "10000", NULL, 0, 100000000, false,
     "ping-pongs for latency percentiles (0: none)"},
    {"device", FB_PARAM_STRING, "all", NULL, 0, 0, false,
     "HCA and port (mlx5_0 or mlx5_0:1), or all active ports"},
    {"gpu_memory", FB_PARAM_STRING, "auto", NULL, 0, 0, false,
     "auto (GPU buffers when GPUDirect RDMA is available), yes, no"},
    {"loopback", FB_PARAM_BOOL, "false", NULL, 0, 0, false,
     "each HCA to itself (scope: node), no peer needed"},
    {"min_gbps", FB_PARAM_DOUBLE, NULL, NULL, 0, 0, false,
     "floor for peak write bandwidth in Gb/s (default: 90% of the port rate)"},
};
static const fb_param_spec_t s_netbw_params[] = {
    {"duration", FB_PARAM_DURATION, "10s", NULL, FB_LIMIT_NETBW_DURATION_MS_MIN, 0, false,
     "time per direction for the bandwidth measurement"},
    {"streams", FB_PARAM_UINT, "4", NULL, 1, 256, false, "parallel TCP streams per direction"},
    {"lat_iters", FB_PARAM_UINT, "2000", NULL, 0, 10000000, false,
     "TCP ping-pongs for latency percentiles (0: none)"},
    {"min_gbps", FB_PARAM_DOUBLE, NULL, NULL, 0, 0, false, "fail a direction below this many Gb/s"},
    {"inject_corrupt", FB_PARAM_UINT, NULL, NULL, 0, 1000000, true,
     "test-only: flip one bit in this many 4 KiB blocks of each direction, to prove detection"},
    {"inject_rate_mbit", FB_PARAM_UINT, NULL, NULL, 1, 100000000, true,
     "test-only: cap what this member sends at this many Mbit/s (socket pacing), to prove that a "
     "slow path is found"},
};
static const fb_param_spec_t s_health_params[] = {
    {"ib_rate", FB_PARAM_STRING, NULL, NULL, 0, 0, false,
     "expected InfiniBand port rate in Gb/sec, e.g. \"200 Gb/sec\" or \"400\"; slower ports are "
     "findings (absent: ports slower than most ports of the same node are)"},
};

#define FB_WORKLOAD(name, summary, params, headline)                                               \
    {                                                                                              \
        name, summary, params, FB_ARRAY_LEN(params), headline, FB_ARRAY_LEN(headline)              \
    }

/* The figures the summary table shows per task (fb_headline_t): what an operator would have read
 * off gpu-burn, memtester, nccl-tests or ib_write_bw. Bytes are shown in GiB (2^-30). */
#define S_GIB (1.0 / 1073741824.0)
static const fb_headline_t s_memtest_headline[] = {
    {"bytes_tested", "tested", FB_HEADLINE_SUM, S_GIB, "GiB"},
    {"miscompares", "errors", FB_HEADLINE_SUM, 0, ""},
    {"bandwidth_mbs", "", FB_HEADLINE_RANGE, 0, NULL},
};
static const fb_headline_t s_sleep_headline[] = {
    {"slept_ms", "slept", FB_HEADLINE_RANGE, 0, NULL},
};
static const fb_headline_t s_gpuburn_headline[] = {
    {"gpu*.tflops_median", "", FB_HEADLINE_RANGE, 0, NULL},
    {"gpu*.burn_vs_peak", "of same-run peak", FB_HEADLINE_RANGE, 100, "%"},
    {"gpu*.power_mean_w", "power", FB_HEADLINE_RANGE, 0, NULL},
    {"gemms_checked", "GEMMs checked", FB_HEADLINE_SUM, 0, ""},
    {"gpu*.errors", "errors", FB_HEADLINE_SUM, 0, ""},
};
static const fb_headline_t s_gpumemtest_headline[] = {
    {"gpu*.tested_bytes", "tested", FB_HEADLINE_SUM, S_GIB, "GiB"},
    {"gpu*.errors", "errors", FB_HEADLINE_SUM, 0, ""},
};
static const fb_headline_t s_p2p_headline[] = {
    {"p2p.ce_uni.*", "CE uni", FB_HEADLINE_RANGE, 0, NULL},
    {"p2p.ce_bidi.*", "CE bidi", FB_HEADLINE_RANGE, 0, NULL},
    {"h2d.*", "h2d", FB_HEADLINE_RANGE, 0, NULL},
    {"p2p.corrupt_transfers", "corrupt", FB_HEADLINE_SUM, 0, ""},
};
static const fb_headline_t s_health_headline[] = {
    {"edac_ce_delta", "EDAC CE", FB_HEADLINE_SUM, 0, ""},
    {"edac_ue_delta", "EDAC UE", FB_HEADLINE_SUM, 0, ""},
};
static const fb_headline_t s_allreduce_headline[] = {
    {"allreduce.busbw_gbs", "busbw", FB_HEADLINE_RANGE, 0, NULL},
    {"allreduce.max_bytes", "at", FB_HEADLINE_RANGE, 1.0 / 1048576.0, "MiB"},
    {"allreduce.errors", "errors", FB_HEADLINE_SUM, 0, ""},
};
static const fb_headline_t s_rdmabw_headline[] = {
    {"rdmabw.*.tx_gbps", "tx", FB_HEADLINE_RANGE, 0, NULL},
    {"rdmabw.*.rx_gbps", "rx", FB_HEADLINE_RANGE, 0, NULL},
    {"rdmabw.miscompare_bytes", "miscompared", FB_HEADLINE_SUM, 0, NULL},
};
static const fb_headline_t s_netbw_headline[] = {
    {"netbw.tx_gbps", "tx", FB_HEADLINE_RANGE, 0, NULL},
    {"netbw.rx_gbps", "rx", FB_HEADLINE_RANGE, 0, NULL},
    {"netbw.rtt_p99_us", "rtt p99", FB_HEADLINE_RANGE, 0, NULL},
};

static const fb_workload_spec_t s_workloads[] = {
    FB_WORKLOAD("memtest", "host DRAM pattern test over locked memory, NUMA-aware",
                s_memtest_params, s_memtest_headline),
    FB_WORKLOAD("sleep", "test workload: takes time, then passes, fails, crashes or hangs",
                s_sleep_params, s_sleep_headline),
    FB_WORKLOAD("gpuburn",
                "sustained GEMM load on every GPU, every GEMM checked by checksums, an SDC probe",
                s_gpuburn_params, s_gpuburn_headline),
    FB_WORKLOAD("gpumemtest", "GPU memory (HBM) pattern test over most of free memory",
                s_gpumemtest_params, s_gpumemtest_headline),
    FB_WORKLOAD("p2p", "GPU peer-to-peer and host-device bandwidth and latency, verified",
                s_p2p_params, s_p2p_headline),
    FB_WORKLOAD("health", "passive pre-stress sweep of links, counters, logs and versions",
                s_health_params, s_health_headline),
    FB_WORKLOAD("allreduce",
                "all-reduce bandwidth sweep (NCCL/RCCL or host MPI), every result "
                "checked",
                s_allreduce_params, s_allreduce_headline),
    FB_WORKLOAD("rdmabw", "RDMA RC bandwidth and latency between HCAs (verbs), port counters",
                s_rdmabw_params, s_rdmabw_headline),
    FB_WORKLOAD("netbw", "TCP bandwidth (several streams, both directions) and latency",
                s_netbw_params, s_netbw_headline),
};

/* Former parameters that became site settings of the agent (docs/security.md, "Site
 * settings"): a campaign names what to run, never which program runs it or how. */
static const struct {
    const char *workload, *key, *what;
} s_site_settings[] = {
    {"allreduce", "mpirun", "the mpirun program"},
    {"allreduce", "mpirun_args", "the argument list of mpirun"},
    {"allreduce", "rsh_agent", "the remote shell mpirun starts its daemons with"},
};

const char *fb_workload_site_setting(const fb_workload_spec_t *w, const char *key)
{
    for (size_t i = 0; w && key && i < FB_ARRAY_LEN(s_site_settings); i++)
        if (!strcmp(s_site_settings[i].workload, w->name) && !strcmp(s_site_settings[i].key, key))
            return s_site_settings[i].what;
    return NULL;
}

/* The stage scopes of the workloads that run across nodes; every other workload tests one node
 * and runs with scope: node only (in a group or a pair it would run on each member alone). */
#define S_NODE (1u << FB_SCOPE_NODE)
#define S_GROUP (1u << FB_SCOPE_GROUP)
#define S_PAIRS (1u << FB_SCOPE_PAIRS)
static const struct {
    const char *workload;
    unsigned scopes;
    const char *node_needs; /* a boolean parameter that scope: node needs true, or NULL */
    const char *why;        /* why not the others, for messages */
} s_scopes[] = {
    {"sleep", S_NODE | S_GROUP | S_PAIRS, NULL, NULL},
    {"allreduce", S_NODE | S_GROUP | S_PAIRS, NULL, NULL},
    {"netbw", S_PAIRS, NULL, "it measures between two nodes"},
    {"rdmabw", S_PAIRS | S_NODE, "loopback",
     "it measures between two nodes, or each HCA against itself with loopback: true"},
};

static size_t s_scope_entry(const fb_workload_spec_t *w)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(s_scopes); i++)
        if (!strcmp(s_scopes[i].workload, w->name))
            return i;
    return FB_ARRAY_LEN(s_scopes);
}

const char *fb_workload_scopes(const fb_workload_spec_t *w, char *buf, size_t len)
{
    size_t e = s_scope_entry(w);
    unsigned scopes = e < FB_ARRAY_LEN(s_scopes) ? s_scopes[e].scopes : S_NODE;
    const char *needs = e < FB_ARRAY_LEN(s_scopes) ? s_scopes[e].node_needs : NULL;
    const fb_scope_t order[] = {FB_SCOPE_PAIRS, FB_SCOPE_GROUP, FB_SCOPE_NODE};
    size_t o = 0, n = 0, total = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(order); i++)
        total += (scopes >> order[i]) & 1u;
    buf[0] = '\0';
    for (size_t i = 0; i < FB_ARRAY_LEN(order) && o < len; i++) {
        if (!((scopes >> order[i]) & 1u))
            continue;
        const char *sep = n == 0 ? "" : n + 1 == total ? (needs ? ", or " : " or ") : ", ";
        o += (size_t)snprintf(buf + o, len - o, "%sscope: %s", sep, fb_scope_name(order[i]));
        if (order[i] == FB_SCOPE_NODE && needs && o < len)
            o += (size_t)snprintf(buf + o, len - o, " with %s: true", needs);
        n++;
    }
    return buf;
}

int fb_workload_check_scope(const fb_workload_spec_t *w, int scope, bool scope_written,
                            const char *(*param)(const void *arg, const char *key),
                            const void *arg, char *msg, size_t len)
{
    size_t e = s_scope_entry(w);
    bool listed = e < FB_ARRAY_LEN(s_scopes);
    unsigned scopes = listed ? s_scopes[e].scopes : S_NODE;
    const char *needs = listed ? s_scopes[e].node_needs : NULL;
    const char *why = listed ? s_scopes[e].why : "it tests one node at a time";
    bool runs_in = (scopes >> scope) & 1u;
    bool set = false;
    const char *value = needs && param ? param(arg, needs) : NULL;
    bool needs_met = !needs || scope != FB_SCOPE_NODE ||
                     (value && fb_parse_bool(value, &set) == 0 && set);
    if (runs_in && needs_met)
        return 0;
    char runs[160], has[96], expected[160];
    fb_workload_scopes(w, runs, sizeof runs);
    snprintf(has, sizeof has, "scope: %s%s", fb_scope_name((fb_scope_t)scope),
             scope_written ? "" : " (the default)");
    if (runs_in) { /* rdmabw with scope: node, without loopback: true */
        snprintf(has + strlen(has), sizeof has - strlen(has), " without %s: true", needs);
        snprintf(expected, sizeof expected, "%s: true in params%s", needs,
                 scopes & S_PAIRS ? ", or scope: pairs" : scopes & S_GROUP ? ", or scope: group" : "");
    } else {
        snprintf(expected, sizeof expected, "%s", runs);
    }
    bool one = (scopes & (scopes - 1)) == 0;
    snprintf(msg, len, "%s runs %swith %s (%s), and this stage has %s; expected %s", w->name,
             one ? "only " : "", runs, why, has, expected);
    return -EINVAL;
}

const fb_workload_spec_t *fb_workload_find(const char *name)
{
    for (size_t i = 0; name && i < FB_ARRAY_LEN(s_workloads); i++)
        if (!strcmp(s_workloads[i].name, name))
            return &s_workloads[i];
    return NULL;
}

size_t fb_workload_count(void)
{
    return FB_ARRAY_LEN(s_workloads);
}

const fb_workload_spec_t *fb_workload_at(size_t i)
{
    return i < FB_ARRAY_LEN(s_workloads) ? &s_workloads[i] : NULL;
}

const fb_param_spec_t *fb_workload_param(const fb_workload_spec_t *w, const char *key)
{
    for (size_t i = 0; w && key && i < w->n_params; i++)
        if (!strcmp(w->params[i].name, key))
            return &w->params[i];
    return NULL;
}

/* ---- validation ---- */

static void s_put(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void s_put(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

static const char *s_join(const char *const *items, const char *sep, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; items && items[i]; i++)
        o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0, "%s%s",
                              i ? sep : "", items[i]);
    return buf;
}

static bool s_all_digits(const char *v)
{
    if (!*v)
        return false;
    for (; *v; v++)
        if (*v < '0' || *v > '9')
            return false;
    return true;
}

static void s_uint_expected(const fb_param_spec_t *p, const char *lead, char *buf, size_t len)
{
    if (p->min == 0 && p->max == 0)
        s_put(buf, len, "expected %sa non-negative integer", lead);
    else if (p->max == 0)
        s_put(buf, len, "expected %san integer of at least %llu", lead, (unsigned long long)p->min);
    else
        s_put(buf, len, "expected %san integer from %llu to %llu", lead, (unsigned long long)p->min,
              (unsigned long long)p->max);
}

/* Checks an unsigned integer against the bounds; 1 = not a number, 2 = out of range. */
static int s_check_uint(const fb_param_spec_t *p, const char *v)
{
    uint64_t x;
    if (!s_all_digits(v))
        return 1;
    if (fb_parse_uint(v, p->max ? p->max : UINT64_MAX, &x) || x < p->min)
        return 2;
    return 0;
}

static bool s_choice(const char *const *choices, const char *v, size_t n)
{
    for (size_t i = 0; choices && choices[i]; i++)
        if (strlen(choices[i]) == n && !strncmp(choices[i], v, n))
            return true;
    return false;
}

const char *fb_param_type_noun(fb_param_type_t t)
{
    switch (t) {
    case FB_PARAM_BYTES:
        return "a byte size";
    case FB_PARAM_BYTES_OR_PERCENT:
        return "a byte size or percentage";
    case FB_PARAM_UINT:
        return "a non-negative integer";
    case FB_PARAM_UINT_OR_AUTO:
        return "'auto' or a non-negative integer";
    case FB_PARAM_DOUBLE:
        return "a number";
    case FB_PARAM_DURATION:
        return "a duration";
    case FB_PARAM_BOOL:
        return "a boolean";
    case FB_PARAM_ENUM:
        return "one of the choices";
    case FB_PARAM_ENUM_LIST:
        return "a list of choices";
    case FB_PARAM_STRING:
        return "text";
    }
    return "a value";
}

int fb_param_check(const fb_param_spec_t *p, const char *value, char *problem, size_t problemlen,
                   char *expected, size_t expectedlen)
{
    char shown[256], list[1024];
    uint64_t u;
    double d;
    bool b;
    int bad = 0; /* 1 = not of the type, 2 = out of range, 3 = problem already written */
    if (!value) {
        s_put(problem, problemlen, "no value");
        bad = 3;
    } else if (strlen(value) > FB_LIMIT_PARAM_VALUE_BYTES) {
        /* The longest value a task carries to an agent (common/value_limits.h). */
        s_put(problem, problemlen, "the value is %zu bytes, over the limit of %u", strlen(value),
              FB_LIMIT_PARAM_VALUE_BYTES);
        bad = 3;
    }
    switch (p->type) {
    case FB_PARAM_BYTES:
        s_put(expected, expectedlen, "expected a byte size, e.g. 4096, 64MiB, 1.5GiB, 10GB");
        if (!bad && fb_parse_bytes(value, &u))
            bad = 1;
        break;
    case FB_PARAM_BYTES_OR_PERCENT:
        s_put(expected, expectedlen,
              "expected a byte size or a percentage of memory above 0%% and at most 100%%, e.g. "
              "64MiB, 16GiB, 80%%");
        if (!bad && fb_parse_bytes_or_percent(value, &u, &d)) {
            size_t n = strlen(value);
            char num[64];
            bad = 1;
            if (n > 1 && n < sizeof num && value[n - 1] == '%') {
                memcpy(num, value, n - 1);
                num[n - 1] = '\0';
                if (!fb_parse_double(num, &d))
                    bad = 2;
            }
        }
        break;
    case FB_PARAM_UINT:
        s_uint_expected(p, "", expected, expectedlen);
        if (!bad)
            bad = s_check_uint(p, value);
        break;
    case FB_PARAM_UINT_OR_AUTO:
        s_uint_expected(p, "'auto' or ", expected, expectedlen);
        if (!bad && strcmp(value, "auto"))
            bad = s_check_uint(p, value);
        break;
    case FB_PARAM_DOUBLE:
        s_put(expected, expectedlen, "expected a number, e.g. 0.5, 12, 1e-3");
        if (!bad && fb_parse_double(value, &d))
            bad = 1;
        break;
    case FB_PARAM_DURATION:
        /* Bounds in ms: min from the spec, max the limit every agent and worker accepts. */
        if (p->min)
            s_put(expected, expectedlen, "expected e.g. 90s, 30m, 2h (from %llums to 30d)",
                  (unsigned long long)p->min);
        else
            s_put(expected, expectedlen, "expected e.g. 90s, 30m, 2h (at most 30d)");
        if (!bad && fb_parse_duration_ms(value, &u))
            bad = 1;
        else if (!bad && (u < p->min || u > FB_LIMIT_DURATION_MS_MAX))
            bad = 2;
        break;
    case FB_PARAM_BOOL:
        s_put(expected, expectedlen, "expected true or false");
        if (!bad && fb_parse_bool(value, &b))
            bad = 1;
        break;
    case FB_PARAM_ENUM:
        s_put(expected, expectedlen, "expected one of %s",
              s_join(p->choices, ", ", list, sizeof list));
        if (!bad && !s_choice(p->choices, value, strlen(value))) {
            s_put(problem, problemlen, "unknown value '%s'",
                  fb_show_value(value, shown, sizeof shown));
            bad = 3;
        }
        break;
    case FB_PARAM_ENUM_LIST:
        s_put(expected, expectedlen, "expected all, or a comma-separated list of %s",
              s_join(p->choices, ", ", list, sizeof list));
        if (!bad && strcmp(value, "all")) {
            const char *s = value;
            for (;;) {
                const char *e = strchr(s, ',');
                size_t n = e ? (size_t)(e - s) : strlen(s);
                const char *t = s;
                while (n && (*t == ' ' || *t == '\t'))
                    t++, n--;
                while (n && (t[n - 1] == ' ' || t[n - 1] == '\t'))
                    n--;
                if (n == 0) {
                    s_put(problem, problemlen, "empty item in list '%s'",
                          fb_show_value(value, shown, sizeof shown));
                    bad = 3;
                    break;
                }
                if (!s_choice(p->choices, t, n)) {
                    char item[256];
                    char *copy = xstrndup(t, n);
                    s_put(problem, problemlen, "unknown value '%s'%s",
                          fb_show_value(copy, item, sizeof item),
                          n == 3 && !strncmp(t, "all", 3) ? " (all must stand alone)" : "");
                    free(copy);
                    bad = 3;
                    break;
                }
                if (!e)
                    break;
                s = e + 1;
            }
        }
        break;
    case FB_PARAM_STRING:
        s_put(expected, expectedlen, "expected text");
        break;
    }
    if (bad == 1)
        s_put(problem, problemlen, "'%s' is not %s", fb_show_value(value, shown, sizeof shown),
              fb_param_type_noun(p->type));
    else if (bad == 2)
        s_put(problem, problemlen, "'%s' is out of range",
              fb_show_value(value, shown, sizeof shown));
    return bad ? -EINVAL : 0;
}

int fb_param_validate(const fb_param_spec_t *p, const char *value, char *err, size_t errlen)
{
    char expected[1024];
    int rc = fb_param_check(p, value, NULL, 0, expected, sizeof expected);
    if (rc)
        s_put(err, errlen, "%s", expected);
    else if (err && errlen)
        err[0] = '\0';
    return rc;
}

const char *fb_workload_param_names(const fb_workload_spec_t *w, char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; w && i < w->n_params; i++) {
        if (w->params[i].fault_injection)
            continue;
        o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0, "%s%s",
                              o ? ", " : "", w->params[i].name);
    }
    return buf;
}

const char *fb_workload_names(char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < FB_ARRAY_LEN(s_workloads); i++)
        o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0, "%s%s",
                              i ? ", " : "", s_workloads[i].name);
    return buf;
}

bool fb_workload_needs_gpu(const char *name)
{
    static const char *const gpu[] = {"gpuburn", "gpumemtest", "p2p", "allreduce"};
    for (size_t i = 0; name && i < FB_ARRAY_LEN(gpu); i++)
        if (!strcmp(name, gpu[i]))
            return true;
    return false;
}
