/* SPDX-License-Identifier: Apache-2.0 */
/* Expected hardware: what a campaign says its nodes must have (the `expect` key of a campaign
 * file, docs/campaign-file.md "Expected hardware"), and the check of a node's inventory against
 * it. Pure logic: the parser reads the YAML node it is handed, the check reads facts its caller
 * took from the node's stored inventory; nothing here opens a file or prints.
 *
 *   expect: {gpus: 8, gpu_model: H200, gpu_memory: 141GiB, memory: 2TiB,
 *            ib_ports: 8, ib_rate: 400, pcie: gen5x16}
 *   expect:                                   # or per hostlist: the first entry that names
 *     - {nodes: "gpu[001-128]", gpus: 8}      # the node applies; an entry without nodes
 *     - {gpus: 0}                             # applies to every node (it must come last)
 *
 * Sizes follow common/units.h (GiB and TiB are 1024-based, GB and TB 1000-based). A size counts
 * as the expected one when it is at most FB_EXPECT_BELOW_PCT below it (what firmware, the kernel
 * and the GPU driver keep for themselves: a 2 TiB node shows about 2015 GiB of MemTotal, a
 * 141 GiB H200 about 140.4 GiB through NVML) and at most FB_EXPECT_ABOVE_PCT above it (rounding
 * in what was written). Counts are exact; rates and PCIe links are minimums. */
#ifndef FB_EXPECT_H
#define FB_EXPECT_H

#include "common/yamldoc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FB_EXPECT_BELOW_PCT 4.0
#define FB_EXPECT_ABOVE_PCT 1.0
#define FB_EXPECT_MAX_GPUS 1024
#define FB_EXPECT_MAX_PORTS 1024
/* The keys of an entry, in the order messages and `expect --from` list them. */
#define FB_EXPECT_KEYS "nodes, gpus, gpu_model, gpu_memory, memory, ib_ports, ib_rate, pcie"

/* One entry: what the nodes it names must have. A field not stated is not checked. */
typedef struct {
    char *nodes; /* hostlist notation; NULL: every node */
    int line;    /* where the entry starts */
    bool has_gpus;
    unsigned gpus;
    char *gpu_model;       /* a word of the GPU's name ("H200" in "NVIDIA H200"); NULL: any */
    uint64_t gpu_memory;   /* bytes; 0: not stated */
    char *gpu_memory_text; /* as written, for messages */
    uint64_t memory;       /* host memory (MemTotal), bytes; 0: not stated */
    char *memory_text;
    bool has_ib_ports;
    unsigned ib_ports;   /* HCA ports in state ACTIVE */
    double ib_rate_gbps; /* every active HCA port at least this; 0: not stated */
    unsigned pcie_gen;   /* every GPU's link at least this generation; 0: not stated */
    unsigned pcie_width; /* ... and at least this width; 0: not stated */
    /* the nodes expanded on first use (fb_expect_for_node), sorted */
    char **names;
    size_t n_names;
    bool expanded;
} fb_expect_entry_t;

/* Tagged so that other headers can forward-declare it as struct fb_expect. */
typedef struct fb_expect {
    fb_expect_entry_t *entries;
    size_t n; /* >= 1 */
} fb_expect_t;

/* Parses the value of an `expect` key (node, in y's document) whose key path is path: a mapping
 * (one entry for every node) or a list of mappings. Returns 0 with *out, or -EINVAL with the
 * error recorded in y (fb_yaml_fail: "FILE:LINE: expect[1].gpus: ...; expected ..."). */
int fb_expect_parse(fb_yaml_t *y, const yaml_node_t *node, const char *path, fb_expect_t **out);
/* NULL-safe; nulls the pointer. */
void fb_expect_destroy(fb_expect_t **self_p);
/* The rest of the campaign c agrees with its expect section: the expectation is checked in the
 * health stage (docs/campaign-file.md), so c must have a stage with workload health. 0, or
 * -EINVAL with the error recorded in y. */
struct fb_campaign;
int fb_expect_campaign_check(fb_yaml_t *y, const struct fb_campaign *c);

/* The entry that applies to node: the first whose nodes name it, or one without nodes; NULL when
 * none does (the node is not checked). Expands each entry's hostlist once, on first use (not
 * thread-safe: call from one thread). */
const fb_expect_entry_t *fb_expect_for_node(fb_expect_t *self, const char *node);
/* Whether the entry says its nodes have GPUs (gpus >= 1, or a GPU model, memory or link). */
bool fb_expect_wants_gpus(const fb_expect_entry_t *e);
/* The workloads that need GPUs and report `skipped` on a node without any: gpuburn,
 * gpumemtest, p2p, allreduce. On a node expected to have GPUs such a skip is a failure. */
bool fb_expect_gpu_workload(const char *workload);

/* ---- What a node has, from its inventory ---------------------------------------------------- */

typedef struct {
    char *pci;             /* "0000:41:00.0" */
    char *model;           /* the management library's name, "NVIDIA H200"; "" unknown */
    uint64_t memory_bytes; /* 0 unknown */
    unsigned gen;          /* PCIe generation of the GPU's best link speed; 0 unknown */
    unsigned width;        /* its current link width (a width does not drop when idle); 0 unknown */
} fb_gpu_facts_t;

typedef struct {
    char *name; /* "mlx5_0" */
    unsigned port;
    char *state; /* "ACTIVE", "DOWN" ...; "" unknown */
    double rate_gbps;
} fb_port_facts_t;

typedef struct {
    uint64_t mem_total_bytes;
    fb_gpu_facts_t *gpus; /* in PCI address order: gpuN is gpus[N] */
    size_t n_gpus;
    fb_port_facts_t *ports; /* HCA ports */
    size_t n_ports;
} fb_node_facts_t;

/* Appends a GPU or a port (strings copied; NULL reads as ""). */
void fb_node_facts_add_gpu(fb_node_facts_t *f, const char *pci, const char *model,
                           uint64_t memory_bytes, unsigned gen, unsigned width);
void fb_node_facts_add_port(fb_node_facts_t *f, const char *name, unsigned port, const char *state,
                            double rate_gbps);
/* Frees what f holds and zeroes it. */
void fb_node_facts_clear(fb_node_facts_t *f);
/* The PCIe generation of a link speed as sysfs prints it: "32.0 GT/s PCIe" and "32 GT/s" are 5,
 * "2.5 GT/s" is 1; 0 for anything else. */
unsigned fb_pcie_gen_of_speed(const char *speed);

/* ---- The check ------------------------------------------------------------------------------- */

typedef struct {
    char *field;      /* the key: "gpus", "gpu_memory", ... */
    char *part;       /* what differs: the node, or "<node>/gpu3", "<node>/mlx5_2:1" */
    char *expected;   /* "8", "H200", "141GiB" */
    char *found;      /* "6", "NVIDIA H100 80GB HBM3", "79.6 GiB on gpu[0-7]" */
    char *what;       /* one line: "gpus: expected 8, found 6 (missing 0000:1b:00.0, ...)" */
    const char *kind; /* the part's kind, as findings name it: node, gpu, memory, nic, link */
} fb_mismatch_t;

/* Checks node's facts against entry e. before (may be NULL) is an earlier inventory of the same
 * node: GPUs it lists that now are gone are named as missing. Returns the number of mismatches
 * (0: the node has what e says) with a heap array in *out (NULL when none; free with
 * fb_mismatches_free). GPUs of one field that differ alike are one mismatch (part: the GPU when
 * it is one, else the node). */
size_t fb_expect_check(const fb_expect_entry_t *e, const char *node, const fb_node_facts_t *now,
                       const fb_node_facts_t *before, fb_mismatch_t **out);
void fb_mismatches_free(fb_mismatch_t *m, size_t n);

/* The expectation a node meets, as YAML ready to paste into a campaign file:
 *   expect:
 *     gpus: 8
 *     gpu_model: "NVIDIA H200"
 *     ...
 * comment (may be NULL) is written first as "# comment". Parsing the text back and checking the
 * same facts finds no mismatch. Fields the facts cannot state (GPUs of different models, no
 * known link speed) are written as comments saying why. Heap string. */
char *fb_expect_from_facts(const fb_node_facts_t *facts, const char *comment);

#endif
