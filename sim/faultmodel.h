/* SPDX-License-Identifier: Apache-2.0 */
/* The ground truth of a simulated fleet: which parts are bad and how (a fault file), and the
 * outcome of any test over any set of nodes derived from it. fleetburn-simfleet's agents ask it
 * for their results, and the diagnosis benchmarks ask it for theirs, so both judge the same way.
 *
 * The simulator is a test of the diagnosis engine, not its twin: besides faults that show
 * independently in each test (what the engine's likelihood assumes), it has faults that come in
 * bursts of simulated time, switch faults that take a whole leaf, several faults on one node,
 * heavy-tailed measurement noise, noisy nodes, lost results and members that disagree.
 *
 * Fault file (YAML; docs/simfleet.md has the exact semantics of every key):
 *     seed: 7                      # default 1; every random draw derives from it
 *     false_fail_rate: 0.01        # any test fails spuriously with this probability (default 0)
 *     lost_rate: 0.002             # a member's result of a test is never reported (default 0)
 *     disagree_rate: 0.005         # one member of a group test reports the opposite verdict
 *     noise: {dist: lognormal, sigma: 0.05}   # measurement noise (default uniform, width 0.01)
 *     rails: 8                     # NICs (rails) per node, mlx5_0 ... (default 8)
 *     faults:
 *       - {node: sim-0017, kind: hard}                 # every test containing it fails
 *       - {node: sim-0420, kind: intermittent, q: 0.5} # shows in a test with probability q
 *       - {node: sim-0421, kind: intermittent, q: 0.2, burst: 600}  # active 20% of the time,
 *                                                      # in periods of 600 s on average
 *       - {node: sim-0333, kind: slow, factor: 0.6}    # bandwidth/throughput x factor
 *       - {node: sim-0333, kind: intermittent, q: 0.3} # a second fault on the same node
 *       - {node: sim-0500, kind: noisy, sigma: 0.2}    # not a fault: noisier measurements
 *       - {nic: sim-0100/1, kind: hard}                # rail 1 of one node
 *       - {link: leaf02<->spine01, kind: slow, factor: 0.5}
 *       - {leaf: leaf07, kind: hard}                   # the switch: every flow through it
 * A fault sits at a node, a NIC (NODE/RAIL), a link (NODE<->LEAF or LEAF<->SPINE, either order)
 * or a leaf switch. Errors are one line, `FILE:LINE: KEYPATH: what is wrong; expected WHAT`, as
 * in scheduler/campaign.h.
 *
 * Which tests see a fault: a node fault, every test with the node as a member (node-local ones
 * too); a NIC fault, tests of two or more members that include the node and run on that rail (or
 * on every rail: rail -1); a link fault, tests of two or more members with a flow whose route
 * crosses the link; a leaf fault, tests of two or more members with a flow that starts or ends
 * at a node behind the leaf (every rail). Flows: both directions between the two members of a
 * pair; in a larger group, both directions between neighbours of the ring of members in sorted
 * order. Routes come from the topology: node -> leaf, and between leaves up to one spine and
 * down; where the two leaves share several spines, the one at index hash(destination) mod count
 * carries the flow (routing is destination-based and static, as a subnet manager's is), so a bad
 * uplink affects some flows through its leaf, not all.
 *
 * How a test ends: each hard or intermittent fault in the test shows independently with its q
 * (1 for hard); an intermittent fault with a burst shows instead exactly when it is active at
 * the test's simulated start time (an alternating process of active and quiet periods with
 * exponential lengths, active a share q of the time); the test also fails spuriously with
 * false_fail_rate. Every draw is a hash of (seed, test id, sorted member names, which draw):
 * deterministic, independent of member order and of the order tests are judged in, so every
 * member of a group derives the same verdict by itself. A slow part multiplies the bandwidth of
 * every flow through it (and a slow node its node-local throughput) by its factor; a flow
 * through several slow parts gets the smallest factor.
 *
 * Pure logic: the parser takes text; whoever names the file reads it (common/fileload.h). A
 * model borrows the topology it is bound to, which must outlive it. Nothing in a model changes
 * after parse and bind (but the seed, by fb_faultmodel_set_seed): threads may share one. */
#ifndef FB_FAULTMODEL_H
#define FB_FAULTMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fb_topology;

typedef enum {
    FB_FAULT_HARD,
    FB_FAULT_INTERMITTENT,
    FB_FAULT_SLOW,
    FB_FAULT_NOISY
} fb_fault_kind_t;
typedef enum {
    FB_FAULT_AT_NODE,
    FB_FAULT_AT_NIC,
    FB_FAULT_AT_LINK,
    FB_FAULT_AT_LEAF
} fb_fault_site_t;
typedef enum { FB_NOISE_UNIFORM, FB_NOISE_LOGNORMAL } fb_noise_dist_t;

typedef struct {
    fb_fault_site_t site;
    fb_fault_kind_t kind;
    char *part;     /* as written: "sim-0017", "sim-0100/1", "leaf02<->spine01", "leaf07" */
    char *a;        /* node (node, nic), leaf (leaf) or the first end of a link */
    char *b;        /* the other end of a link; NULL otherwise */
    unsigned rail;  /* nic: the rail index */
    double q;       /* hard 1; intermittent: P(shows in a test that contains it), or with a burst
                     * the share of simulated time it is active; slow, noisy: 0 */
    double burst_s; /* intermittent: mean length of an active period, simulated seconds; 0: no
                     * bursts (every test draws on its own) */
    double factor;  /* slow: bandwidth multiplier in (0, 1); 1 otherwise */
    double sigma;   /* noisy: sigma of the extra lognormal noise of its measurements; 0 otherwise */
    int line;       /* where it is written */
} fb_fault_t;

typedef struct fb_faultmodel fb_faultmodel_t;

/* Parses a fault file (text[0..len), need not be NUL-terminated; source names it in messages,
 * NULL: "<faults>"), under common/yamldoc.h's limits (FB_FAULTMODEL_MAX_BYTES, nesting depth,
 * alias expansion). 0 with *out, or -EINVAL with *out = NULL and a one-line heap message in
 * *error_out when error_out is not NULL. */
int fb_faultmodel_parse(const char *text, size_t len, const char *source, fb_faultmodel_t **out,
                        char **error_out);
/* Largest fault file text fb_faultmodel_parse takes. */
#define FB_FAULTMODEL_MAX_BYTES (16u << 20)
/* Longest mean burst (simulated seconds) a fault file may give: about 116 days. */
#define FB_FAULTMODEL_MAX_BURST_S 1e7
/* NULL-safe; nulls the pointer. */
void fb_faultmodel_destroy(fb_faultmodel_t **self_p);

/* Binds the model to the fleet's fabric (borrowed) and checks every fault against it: nodes of
 * node and NIC faults are nodes of the topology, rails are below `rails`, links join a node and
 * its leaf or a leaf and one of its spines, leaves are leaves of the topology. 0, or -EINVAL with
 * a message in the parser's format naming the fault's line. Until bound, tests have no routes
 * (link and leaf faults never show). */
int fb_faultmodel_bind(fb_faultmodel_t *self, const struct fb_topology *topo, char **error_out);
/* Routes flows over the spines the subnet manager's tables give (scheduler/routes.h; borrowed,
 * NULL: the model's own routing, by destination among the two leaves' common spines). A flow the
 * tables give no spine of the topology for keeps the model's own. */
struct fb_routes;
void fb_faultmodel_set_routes(fb_faultmodel_t *self, const struct fb_routes *routes);

uint64_t fb_faultmodel_seed(const fb_faultmodel_t *self);
/* Overrides the file's seed (a command line's --seed). */
void fb_faultmodel_set_seed(fb_faultmodel_t *self, uint64_t seed);
double fb_faultmodel_false_fail_rate(const fb_faultmodel_t *self);
double fb_faultmodel_lost_rate(const fb_faultmodel_t *self);
double fb_faultmodel_disagree_rate(const fb_faultmodel_t *self);
/* The noise distribution; *param its parameter: uniform, the half-width; lognormal, sigma. */
fb_noise_dist_t fb_faultmodel_noise_dist(const fb_faultmodel_t *self, double *param);
unsigned fb_faultmodel_rails(const fb_faultmodel_t *self);
size_t fb_faultmodel_count(const fb_faultmodel_t *self);
/* Fault i in file order (i < count), borrowed; NULL when out of range. */
const fb_fault_t *fb_faultmodel_fault(const fb_faultmodel_t *self, size_t i);

/* One test to judge. Strings are borrowed for the call. */
typedef struct {
    const char *test_id;        /* unique per test (the task id); feeds every draw */
    const char *const *members; /* node names, any order, no duplicates; 1 = node-local */
    size_t n_members;
    int rail; /* the rail the test runs on, or -1 for all rails */
} fb_sim_test_t;

#define FB_SIM_CAUSES_MAX 8

typedef struct {
    bool failed;
    bool spurious;   /* failed only by the false-fail draw */
    size_t n_causes; /* faults that showed; the first FB_SIM_CAUSES_MAX indices in causes */
    size_t causes[FB_SIM_CAUSES_MAX];
    double factor; /* smallest slow factor over the test's flows (node-local: the node); 1 */
    /* The member that reports the opposite of `failed` (disagree_rate; tests of two or more
     * members), borrowed from the test's members; NULL when every member reports `failed`. */
    const char *disagreeing;
} fb_sim_outcome_t;

/* Judges a test that starts at simulated time start_s (seconds; it decides only whether bursty
 * faults are active). 0, or -EINVAL for a test without members or id. */
int fb_faultmodel_judge_at(const fb_faultmodel_t *self, const fb_sim_test_t *test, double start_s,
                           fb_sim_outcome_t *out);
/* fb_faultmodel_judge_at at simulated time 0. */
int fb_faultmodel_judge(const fb_faultmodel_t *self, const fb_sim_test_t *test,
                        fb_sim_outcome_t *out);
/* The verdict `member` of a judged test reports: out->failed, or its opposite for the
 * disagreeing member. */
bool fb_sim_member_failed(const fb_sim_outcome_t *out, const char *member);
/* Whether member's result of test test_id is lost (never reported): a draw with lost_rate of
 * (seed, test id, member), independent of the verdict's draws. */
bool fb_faultmodel_lost(const fb_faultmodel_t *self, const char *test_id, const char *member);
/* Whether fault i is active at simulated time t_s: an intermittent fault with a burst per its
 * process (t_s < 0 counts as 0); every other fault always. False for i out of range. */
bool fb_faultmodel_active(const fb_faultmodel_t *self, size_t i, double t_s);

/* Bandwidth factor of the flow src -> dst on rail (-1: all rails): the smallest factor of the
 * slow parts it crosses (both nodes, their NICs on that rail, the links of its route, the leaves
 * at its ends); 1 when none. */
double fb_faultmodel_flow_factor(const fb_faultmodel_t *self, const char *src, const char *dst,
                                 int rail);
/* The spine the flow src -> dst is routed over (borrowed from the topology), or NULL when both
 * nodes are on one leaf, a node is unknown or the model is not bound. The simulated fabric's
 * routing, which the diagnosis engine is not given (it must find uplinks from the topology and
 * the routes a real fabric's subnet manager reports). */
const char *fb_faultmodel_spine(const fb_faultmodel_t *self, const char *src, const char *dst);
/* Throughput factor of a node-local test on node: its slow node faults; 1 when none. */
double fb_faultmodel_node_factor(const fb_faultmodel_t *self, const char *node);
/* The multiplicative noise of one measurement, named by (key, salt), that involves the nodes
 * nodes[0..n) (a flow's two ends, or the node of a node-local test): a draw from the fleet's
 * noise distribution (uniform: 1 + width x U(-1, 1); lognormal: exp(sigma x Z), median 1), times
 * exp(sigma_k x Z_k) for each noisy node among them. Deterministic in (seed, key, salt, nodes). */
double fb_faultmodel_noise(const fb_faultmodel_t *self, const char *key, const char *salt,
                           const char *const *nodes, size_t n);
/* A deterministic draw in [0, 1) from (seed, key, salt): for jitter and delays that must not
 * disturb the outcome draws. */
double fb_faultmodel_uniform(const fb_faultmodel_t *self, const char *key, const char *salt);

/* "hard", "intermittent", "slow", "noisy"; "node", "nic", "link", "leaf"; "uniform",
 * "lognormal". */
const char *fb_fault_kind_name(fb_fault_kind_t kind);
const char *fb_fault_site_name(fb_fault_site_t site);
const char *fb_noise_dist_name(fb_noise_dist_t dist);

#endif
