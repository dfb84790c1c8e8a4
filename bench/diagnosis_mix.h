/* SPDX-License-Identifier: Apache-2.0 */
/* The faults of one benchmark trial, drawn from a documented distribution: the failure mix of a
 * real fleet (Llama 3 on 16k H100s, 419 unexpected interruptions in 54 days: GPU 30%, HBM 17%,
 * switch/cable 8%, host 8%, NIC 2%, silent data corruption 1.4%), mapped to the simulator's
 * fault kinds (sim/faultmodel.h), with bursts, several faults on a node and noisy nodes. The
 * table of the mapping is in diagnosis_mix.c and docs/diagnosis.md; dmix_describe prints it.
 *
 * A trial's faults come out as fault-file lines (the simulator's truth) and as the parts the
 * engine should name (its naming: "node", "node/mlx5_R", "leafNNN<->spineNN", and a leaf by its
 * name). Draws come from the caller's fb_splitmix64 state: the same state, the same world. */
#ifndef FB_BENCH_DIAGNOSIS_MIX_H
#define FB_BENCH_DIAGNOSIS_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a fault is, for the diagnosis: which part, how it shows. */
typedef enum {
    DMIX_NODE_HARD,
    DMIX_NODE_INTERMITTENT, /* q in [0.3, 0.9) per test */
    DMIX_NODE_BURSTY,       /* active a share q in [0.1, 0.5), bursts of 60 s - 1 h */
    DMIX_NODE_SLOW,         /* factor in [0.6, 0.8) */
    DMIX_NODE_SLOW_MILD,    /* factor in [0.8, 0.9]: under the engine's 0.8 threshold */
    DMIX_SDC,               /* silent data corruption: a node, q in [0.05, 0.2) */
    DMIX_NIC_HARD,
    DMIX_NIC_INTERMITTENT, /* a flapping NIC or cable: q in [0.3, 0.9) */
    DMIX_NIC_BURSTY,
    DMIX_LEAF_HARD,         /* a switch: every node behind it */
    DMIX_LEAF_INTERMITTENT, /* q in [0.3, 0.9) */
    DMIX_UPLINK_SLOW,       /* a leaf-spine link at a factor in [0.5, 0.8) */
    DMIX_N
} dmix_type_t;

/* The sites, for grouping in reports. */
typedef enum { DMIX_AT_NODE, DMIX_AT_NIC, DMIX_AT_LEAF, DMIX_AT_UPLINK } dmix_site_t;

typedef struct {
    dmix_type_t type;
    const char *category; /* the real fleet's category it stands for (static) */
    char *part;           /* as the engine names it */
    char *node;           /* node and NIC faults: the node; NULL otherwise */
    char *leaf;           /* the leaf the part is behind, is, or (an uplink) starts at */
    double q, burst_s, factor;
    bool second; /* a second fault on the node of an earlier one (the part is named once) */
} dmix_fault_t;

/* How a trial's world is drawn. */
typedef struct {
    int only;                        /* a dmix_type_t for worlds of one type, -1: the fleet mix */
    unsigned faults_min, faults_max; /* faults per trial (the second ones on a node extra) */
    double q, factor, burst_s;       /* for one-type worlds: the value (> 0), else drawn as above */
    double second_share; /* share of node faults that get a second fault on their node */
    double noisy_share;  /* share of the other nodes that are noisy (not faults) */
    double noisy_sigma;
} dmix_opts_t;

/* The fabric the faults are placed on: nodes names[0..n) on leaves of leaf_size in order,
 * named leaf001 ..., every leaf on spines spine01 ... spine<spines>; rails per node. */
typedef struct {
    char *const *names;
    unsigned n, rails, leaf_size, spines;
} dmix_fabric_t;

typedef struct {
    dmix_fault_t *faults;
    size_t n_faults;
    char **noisy; /* noisy nodes */
    size_t n_noisy;
    char *yaml; /* the fault file's list items, "  - {...}\n" each */
} dmix_world_t;

/* Draws a world. 0, or -EINVAL when the options cannot be met (more faults than parts). */
int dmix_draw(const dmix_opts_t *o, const dmix_fabric_t *fab, uint64_t *rng, dmix_world_t *out);
void dmix_world_free(dmix_world_t *w);

const char *dmix_type_name(dmix_type_t t);
/* The type named name, or -1. */
int dmix_type_parse(const char *name);
dmix_site_t dmix_type_site(dmix_type_t t);
/* The fleet mix's share of faults of each type (before second faults on a node), summing to 1. */
double dmix_type_share(dmix_type_t t);
/* Whether a fault of this type should be named, never cleared, by the standard: hard and
 * intermittent (q >= 0.3) and bursty faults. */
bool dmix_type_never_cleared(dmix_type_t t);
/* Prints the mix: categories, their shares, the types they map to, the parameters drawn, and
 * what the simulator cannot represent; every line starts with prefix. */
void dmix_describe(FILE *out, const char *prefix);

#endif
