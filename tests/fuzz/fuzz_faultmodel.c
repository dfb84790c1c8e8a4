/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_faultmodel_parse: a fault file as fleetburn-simfleet and the diagnosis benchmarks
 * read it. A model that parses is bound to a fixed fabric (that of
 * tests/fixtures/topology/fabric-2s4l16n.topo) and, when it binds, judges tests of one node, a
 * pair and a group, with flow factors, as the simulated agents ask it. */
#include "fuzz.h"

#include "sim/faultmodel.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <math.h>

static fb_topology_t *s_topo;

static const char s_fabric[] = "leaf01: node[01-04]\n"
                               "leaf02: node[05-08]\n"
                               "leaf03: node[09-12]\n"
                               "leaf04: node[13-16]\n"
                               "spine01: leaf[01-04]\n"
                               "spine02: leaf[01-04]\n";

static void s_init(void)
{
    char err[256];
    if (fb_topology_parse(s_fabric, &s_topo, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_faultmodel: fabric: %s\n", err);
        abort();
    }
}

FZ_INITIALIZE(s_init())

static void s_judge(const fb_faultmodel_t *m, const char *id, const char *const *members, size_t n,
                    int rail)
{
    fb_sim_test_t test = {id, members, n, rail};
    fb_sim_outcome_t out, later;
    FZ_CHECK(fb_faultmodel_judge(m, &test, &out) == 0);
    FZ_CHECK(fb_faultmodel_judge_at(m, &test, 1e6, &later) == 0);
    FZ_CHECK(out.n_causes == 0 || out.failed);
    FZ_CHECK(!out.disagreeing || n >= 2);
    FZ_CHECK(fb_sim_member_failed(&out, members[0]) ==
             (out.failed != (out.disagreeing == members[0])));
    (void)fb_faultmodel_lost(m, id, members[0]);
    FZ_CHECK(out.factor > 0 && out.factor <= 1);
    for (size_t i = 0; i < out.n_causes && i < FB_SIM_CAUSES_MAX; i++)
        FZ_CHECK(out.causes[i] < fb_faultmodel_count(m));
}

static void s_use(fb_faultmodel_t *m)
{
    for (size_t i = 0; i < fb_faultmodel_count(m); i++) {
        const fb_fault_t *f = fb_faultmodel_fault(m, i);
        FZ_CHECK(f && f->part && f->a);
        FZ_CHECK(f->q >= 0 && f->q <= 1 && f->factor > 0 && f->factor <= 1);
        (void)fb_fault_kind_name(f->kind);
        (void)fb_fault_site_name(f->site);
    }
    FZ_CHECK(fb_faultmodel_fault(m, fb_faultmodel_count(m)) == NULL);
    double ffr = fb_faultmodel_false_fail_rate(m);
    FZ_CHECK(ffr >= 0 && ffr <= 1);
    (void)fb_faultmodel_rails(m);
    (void)fb_faultmodel_seed(m);
    const char *one[] = {"node01"};
    const char *pair[] = {"node03", "node14"};
    const char *group[] = {"node16", "node01", "node05", "node09", "node02"};
    s_judge(m, "t1", one, 1, -1);
    s_judge(m, "t2", pair, 2, 0);
    s_judge(m, "t3", group, 5, -1);
    double f = fb_faultmodel_flow_factor(m, "node01", "node13", 1);
    FZ_CHECK(f > 0 && f <= 1);
    f = fb_faultmodel_node_factor(m, "node07");
    FZ_CHECK(f > 0 && f <= 1);
    (void)fb_faultmodel_spine(m, "node01", "node13");
    double noise = fb_faultmodel_noise(m, "k", "tx", pair, 2);
    FZ_CHECK(noise > 0 && isfinite(noise));
    for (size_t i = 0; i < fb_faultmodel_count(m); i++)
        (void)fb_faultmodel_active(m, i, 12345.0);
    double u = fb_faultmodel_uniform(m, "node01", "delay");
    FZ_CHECK(u >= 0 && u < 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fb_faultmodel_t *m = NULL;
    char *error = NULL;
    int rc = fb_faultmodel_parse((const char *)data, size, "fuzz.yaml", &m, &error);
    if (rc != 0) {
        FZ_CHECK(rc == -EINVAL && m == NULL);
        FZ_CHECK(error != NULL && error[0] != '\0' && strchr(error, '\n') == NULL);
        free(error);
        return 0;
    }
    FZ_CHECK(m != NULL && error == NULL);
    s_use(m); /* unbound: no links */
    rc = fb_faultmodel_bind(m, s_topo, &error);
    if (rc == 0) {
        FZ_CHECK(error == NULL);
        s_use(m);
    } else {
        FZ_CHECK(rc == -EINVAL && error != NULL && error[0] != '\0');
        free(error);
    }
    fb_faultmodel_destroy(&m);
    return 0;
}
