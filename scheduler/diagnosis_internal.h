/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnosis engine's insides, shared by the files that make it up: diagnosis.c (the parts,
 * recording, states, accessors), diagnosis_settle.c (a settle: the fleet's estimates and the
 * posteriors), diagnosis_verdicts.c (the naming standard, verdicts) and diagnosis_plan.c (round
 * planning). Nothing outside scheduler/diagnosis*.c includes this. Functions shared between them
 * are named diag__name; helpers of one file stay static s_name. */
#ifndef FB_DIAGNOSIS_INTERNAL_H
#define FB_DIAGNOSIS_INTERNAL_H

#include "diagnosis.h"

#include "common/strmap.h"

/* The grid of q (how often a fault shows in a test) the mixture is over. The top is not 1: a
 * hard fault that passes once (a member that mis-reported, a test that did not exercise it) is
 * much less likely, not ruled out for good. */
#define DIAG_NQ 10
/* A node fault can also come in bursts (a GPU throwing Xid errors for a while, an ECC storm, a
 * host stalling): active in a share a of rounds, and while active every test of the node, on
 * every rail, fails (but for DIAG_Q_ON's miss). The grid of a. */
#define DIAG_NA 5
#define DIAG_Q_ON 0.97
/* The prior of a bursty node fault, as a share of prior_bad (on top of the steady one). */
#define DIAG_BURSTY_SHARE 0.25
/* A node named bad fails in bursts when, given it is bad, this much of its posterior is on the
 * bursty hypotheses: rounds where every test of it failed beside rounds where every one passed,
 * which no steady q explains. */
#define DIAG_BURSTY_NAMED 0.9

typedef struct {
    int *v;
    size_t n, cap;
} diag_ivec_t;

void diag__ivec_push(diag_ivec_t *v, int x);
bool diag__ivec_has(const diag_ivec_t *v, int x);
void diag__ivec_add_unique(diag_ivec_t *v, int x);

/* One recorded test. Members are entities (nodes or rails); involved entities are the members
 * and the nodes of rail members; units are the distinct nodes. */
typedef struct {
    char *id;
    int *mem;
    size_t n_mem;
    int *inv;
    size_t n_inv;
    int *units;     /* per unit slot: the node entity */
    int *unit_rail; /* per unit slot: the child index of its rail member, -1 for the node itself */
    size_t n_units;
    unsigned round; /* the settle that took it in */
    bool failed;
    bool settled;
    bool *trusted;    /* per member: its node trusted when the round was planned */
    double *p_before; /* per involved entity: P(bad) before and after its round */
    double *p_after;
} diag_test_t;

/* A port-counter increase against a rail. */
typedef struct {
    char *test_id, *what;
    int rail; /* entity */
    unsigned round;
    bool settled;
} diag_counter_t;

typedef struct {
    char *name;
    int parent;           /* index of the node of a rail, -1 for a node */
    int rail;             /* a rail: its index in fb_diag.rails; -1 for a node */
    diag_ivec_t children; /* rails of a node */
    double *post;         /* node only: its unit's hypotheses (diag__hyp, diag__hyp_burst) */
    size_t n_post;
    unsigned *rpass; /* node only: per settled round, its passing tests (any rail) */
    size_t n_rpass;
    double prior;         /* prior P(this part is the bad one) */
    double p;             /* posterior P(bad), as of the last settle */
    unsigned n_pass;      /* settled passing tests that would have shown its fault */
    diag_ivec_t tests;    /* tests involving it, settled ones ordered by (round, id) */
    diag_ivec_t ufails;   /* node only: the unit's settled failed tests */
    diag_ivec_t counters; /* counters against it (rails) */
    diag_ivec_t partners; /* nodes it was tested with (any result) */
    bool bad;             /* named bad (sticky) */
    bool ambiguous;       /* a node named for itself or its only NIC */
    bool implicated;      /* sticky until cleared or every failure explained */
    bool cleared;
    bool trusted; /* node: a trusted partner as of the last settle */
    /* the standard, as of the last settle */
    unsigned confirmations, n_inf, k_inf, clear_more;
    unsigned n_inf_rounds, k_inf_rounds; /* node: rounds after its first failing one with
                                          * informative tests, and those with a failure */
    bool clear_by_rounds;                /* clear_more counts rounds, not tests */
    bool burst_open; /* a failure a burst explains: passes cannot clear it (diag__standard) */
    double chance;
    double chance_named;          /* its fleet significance when it was named */
    unsigned confirmations_named; /* and its confirmations */
    /* evidence built by fb_diag_verdicts, kept until the next call (the caller borrows it) */
    fb_diag_evidence_t *ev;
    size_t n_ev;
} diag_ent_t;

struct fb_diag {
    fb_diag_params_t par;
    diag_ent_t *ents;
    size_t n_ents, cap_ents;
    fb_strmap_t *index; /* name -> (index + 1) */
    diag_test_t *tests;
    size_t n_tests, cap_tests;
    diag_counter_t *counters;
    size_t n_counters;
    size_t settled_tests, settled_counters; /* the first pending ones */
    char **rails; /* rail names over all nodes, in the order first added */
    size_t n_rails;
    size_t n_nodes;  /* node entities (the rest are rails) */
    unsigned rounds; /* settles that took results in */
    bool unsettled;
    /* the fleet's estimates, as of the last settle */
    double f_multi, f_local;       /* false-fail rates of tests between nodes / node-local */
    double f_multi_hi, f_local_hi; /* their upper bounds, for fleet significance */
    double f_multi_lo, f_local_lo; /* their lower bounds, for the clearing bound */
    double mix[DIAG_NQ];           /* the mixture over q */
    double q_clear_of[2]; /* the q the clearing bound rules out for nodes [0] and rails [1] */
    int bursty; /* the first node named bad whose fault comes in bursts (diag__classify), -1:
                 * none yet; sticky: from then on passes clear nothing */
};

extern const double diag__qgrid[DIAG_NQ];
extern const double diag__agrid[DIAG_NA];

/* Hypotheses of a unit with R rails: 0 all good; 1 + p * DIAG_NQ + j: part p (0 the node,
 * 1 + c its rail c) is the bad one and shows with q = diag__qgrid[j]. */
static inline size_t diag__hyp(size_t part, size_t j)
{
    return 1 + part * DIAG_NQ + j;
}

/* After them, a unit with R rails: the node is bad in bursts, active in a share diag__agrid[b] of
 * rounds. */
static inline size_t diag__hyp_burst(size_t R, size_t b)
{
    return 1 + (1 + R) * DIAG_NQ + b;
}

/* The node of entity i (itself for a node). */
int diag__node_of(const fb_diag_t *d, int i);
/* Index of name, -1 when unknown. */
int diag__find(const fb_diag_t *d, const char *name);
/* Undecided: implicated, neither named bad nor cleared. */
bool diag__undecided(const fb_diag_t *d, int i);
/* A node is a trusted pair partner when it and all its rails that are not named bad are not
 * undecided and it is not named bad (as of the last settle). */
bool diag__node_trusted(const fb_diag_t *d, int ni);
/* Whether rail entity i may be a partner's rail: not named bad, not undecided. */
bool diag__ent_trusted(const fb_diag_t *d, int i);

/* diagnosis_settle.c: P(part i bad) from its unit's posterior, and its posterior mass per q (w,
 * DIAG_NQ of them, may be NULL). */
double diag__part_mass(const fb_diag_t *d, int i, double *w);

/* diagnosis_looks.c: P(X >= k) for X ~ Binomial(n, p). */
double diag__binom_tail(unsigned n, unsigned k, double p);
/* The chance that a healthy record (tests failing at rate f), looked at after each of `looks`
 * rounds of `per_look` tests, is at some look at least as extreme as tail probability p (at
 * least p; p itself with one look of all its tests). */
double diag__looks_chance(double p, double f, unsigned per_look, unsigned looks);

/* diagnosis_verdicts.c, the standard (docs/diagnosis.md "Naming"), applied by fb_diag_settle:
 * entity i's confirmations, informative tests, fleet significance and the passes it still needs
 * to be cleared; returns whether it has an unexplained failure. */
bool diag__standard(fb_diag_t *d, int i);
/* Names the bad part of node unit u, if the standard names one; returns whether it did. */
bool diag__name_unit(fb_diag_t *d, int u);
/* Implicated, cleared, and the trust of every node for the next round. */
void diag__classify(fb_diag_t *d);
/* Frees the evidence fb_diag_verdicts built for entity e. */
void diag__evidence_free(diag_ent_t *e);

#endif
