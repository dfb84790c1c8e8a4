/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of scheduler/expect: the `expect` section of a campaign file (both forms, every
 * field typed with its unit, the first entry naming a node applies), one exact error per kind of
 * mistake, the check of a node's facts (a matching node passes at the sizes real hardware
 * reports, every field that differs is one line naming the field, what was expected and what
 * was found, missing GPUs named from an earlier inventory), and `expect --from` text that
 * parses back into an expectation the same node meets. */
#include "scheduler/campaign.h"
#include "scheduler/expect.h"
#include "common/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define GIB (1ull << 30)
#define MIB (1ull << 20)
/* NVML's total of an H200 (nvidia-smi memory.total, bench/results/h200x2-2026-11-22/machine.txt) */
#define H200_NVML_BYTES (143771ull * MIB)

static const char *s_health = "stages:\n  - {name: health, workload: health}\n";

static fb_campaign_t *s_parse_ok(const char *expect_yaml)
{
    char *text = xasprintf("name: t\n%s%s", expect_yaml, s_health);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    if (fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err))
        fail_msg("parse failed: %s\n%s", err, text);
    free(text);
    assert_non_null(c->expect);
    return c;
}

static void s_parse_err(const char *yaml, const char *want)
{
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(yaml, strlen(yaml), "t.yaml", &c, &err), -EINVAL);
    assert_null(c);
    if (strcmp(err, want))
        fail_msg("\n got      '%s'\n expected '%s'", err, want);
    free(err);
}

/* "name: t\n" + expect_yaml + a health stage: the error expected. */
static void s_expect_err(const char *expect_yaml, const char *want)
{
    char *text = xasprintf("name: t\n%s%s", expect_yaml, s_health);
    s_parse_err(text, want);
    free(text);
}

/* An 8-GPU H200 node as NVML and sysfs show it: 140.4 GiB per GPU, Gen5 x16 links, 2015 GiB of
 * MemTotal on 2 TiB of DIMMs, 8 ACTIVE NDR ports. */
static void s_h200_node(fb_node_facts_t *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 8; i++) {
        char pci[32];
        snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x1b + 0x10 * i);
        fb_node_facts_add_gpu(f, pci, "NVIDIA H200", H200_NVML_BYTES, 5, 16);
    }
    f->mem_total_bytes = 2015ull * GIB + 300 * MIB;
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "mlx5_%d", i);
        fb_node_facts_add_port(f, name, 1, "ACTIVE", 400);
    }
}

static const char *s_full = "expect: {gpus: 8, gpu_model: H200, gpu_memory: 141GiB, memory: "
                            "2TiB, ib_ports: 8, ib_rate: 400, pcie: gen5x16}\n";

static void test_parse_fields(void **state)
{
    (void)state;
    fb_campaign_t *c = s_parse_ok(s_full);
    assert_int_equal(c->expect->n, 1);
    const fb_expect_entry_t *e = &c->expect->entries[0];
    assert_null(e->nodes);
    assert_true(e->has_gpus);
    assert_int_equal(e->gpus, 8);
    assert_string_equal(e->gpu_model, "H200");
    assert_int_equal(e->gpu_memory, 141 * GIB);
    assert_int_equal(e->memory, 2048 * GIB);
    assert_true(e->has_ib_ports);
    assert_int_equal(e->ib_ports, 8);
    assert_true(e->ib_rate_gbps == 400.0);
    assert_int_equal(e->pcie_gen, 5);
    assert_int_equal(e->pcie_width, 16);
    assert_true(fb_expect_wants_gpus(e));
    fb_campaign_destroy(&c);

    /* Decimal units, rates and links written other ways. */
    c = s_parse_ok("expect:\n  gpu_memory: 141GB\n  ib_rate: \"200 Gb/sec\"\n  pcie: Gen4 x8\n");
    e = &c->expect->entries[0];
    assert_int_equal(e->gpu_memory, 141000000000ull);
    assert_true(e->ib_rate_gbps == 200.0);
    assert_int_equal(e->pcie_gen, 4);
    assert_int_equal(e->pcie_width, 8);
    assert_false(e->has_gpus);
    fb_campaign_destroy(&c);
    c = s_parse_ok("expect: {pcie: x16, ib_rate: 400Gb/s, gpus: 0}\n");
    e = &c->expect->entries[0];
    assert_int_equal(e->pcie_gen, 0);
    assert_int_equal(e->pcie_width, 16);
    assert_true(e->has_gpus);
    assert_false(fb_expect_wants_gpus(e)); /* gpus: 0 says the node has none */
    fb_campaign_destroy(&c);

    assert_true(fb_expect_gpu_workload("gpuburn"));
    assert_true(fb_expect_gpu_workload("allreduce"));
    assert_false(fb_expect_gpu_workload("memtest"));
    assert_false(fb_expect_gpu_workload("health"));
}

static void test_hostlist_entries(void **state)
{
    (void)state;
    fb_campaign_t *c = s_parse_ok("expect:\n"
                                  "  - {nodes: \"gpu[001-004]\", gpus: 8}\n"
                                  "  - {nodes: \"gpu[003-010]\", gpus: 4}\n"
                                  "  - {gpus: 0}\n");
    fb_expect_t *x = c->expect;
    assert_int_equal(x->n, 3);
    assert_int_equal(x->entries[0].line, 3);
    /* the first entry naming the node applies; the one without nodes catches the rest */
    assert_ptr_equal(fb_expect_for_node(x, "gpu003"), &x->entries[0]);
    assert_ptr_equal(fb_expect_for_node(x, "gpu004"), &x->entries[0]);
    assert_ptr_equal(fb_expect_for_node(x, "gpu005"), &x->entries[1]);
    assert_ptr_equal(fb_expect_for_node(x, "login01"), &x->entries[2]);
    assert_ptr_equal(fb_expect_for_node(x, "gpu3"), &x->entries[2]); /* padding counts */
    fb_campaign_destroy(&c);

    c = s_parse_ok("expect:\n  - {nodes: \"n[1-2]\", gpus: 8}\n");
    assert_null(fb_expect_for_node(c->expect, "n3")); /* named by no entry: not checked */
    assert_non_null(fb_expect_for_node(c->expect, "n2"));
    fb_campaign_destroy(&c);
}

static void test_parse_errors(void **state)
{
    (void)state;
    s_expect_err("expect: {gpus: 8, gpu: H200}\n",
                 "t.yaml:2: expect.gpu: unknown key; expected one of nodes, gpus, gpu_model, "
                 "gpu_memory, memory, ib_ports, ib_rate, pcie");
    s_expect_err("expect:\n  gpus: eight\n",
                 "t.yaml:3: expect.gpus: 'eight' is not a count; expected the number of GPUs, an "
                 "integer from 0 to 1024");
    s_expect_err("expect:\n  gpus: 8\n  gpus: 4\n",
                 "t.yaml:4: expect.gpus: key given twice; expected each key once");
    s_expect_err("expect:\n  gpu_memory: 141\n",
                 "t.yaml:3: expect.gpu_memory: '141' is 141 bytes (a size without its unit?); "
                 "expected a size such as 141GiB or 2TiB (GiB, TiB: 1024-based; GB, TB: "
                 "1000-based)");
    s_expect_err("expect:\n  memory: lots\n",
                 "t.yaml:3: expect.memory: 'lots' is not a size; expected a size such as 141GiB "
                 "or 2TiB (GiB, TiB: 1024-based; GB, TB: 1000-based)");
    s_expect_err("expect:\n  pcie: gen7x16\n",
                 "t.yaml:3: expect.pcie: 'gen7x16' is not a PCIe link; expected a PCIe link "
                 "such as gen5x16, gen4 or x16 (generation 1-6, width 1-32)");
    s_expect_err("expect:\n  pcie: gen5x12\n",
                 "t.yaml:3: expect.pcie: 'gen5x12' is not a PCIe link; expected a PCIe link "
                 "such as gen5x16, gen4 or x16 (generation 1-6, width 1-32)");
    s_expect_err("expect:\n  ib_rate: fast\n",
                 "t.yaml:3: expect.ib_rate: 'fast' is not a rate; expected a port rate in Gb/s, "
                 "e.g. 400, 400Gb/s or \"200 Gb/sec\"");
    s_expect_err("expect:\n  gpu_model: [H100, H200]\n",
                 "t.yaml:3: expect.gpu_model: is a list; expected a word of the GPU's name, e.g. "
                 "H200 or \"NVIDIA H100 80GB HBM3\" (at most 96 printable characters)");
    s_expect_err("expect: {nodes: \"gpu[001-128]\"}\n",
                 "t.yaml:2: expect: states nothing to check; expected at least one of gpus, "
                 "gpu_model, gpu_memory, memory, ib_ports, ib_rate, pcie");
    s_expect_err("expect: {}\n",
                 "t.yaml:2: expect: states nothing to check; expected at least one of gpus, "
                 "gpu_model, gpu_memory, memory, ib_ports, ib_rate, pcie");
    s_expect_err("expect:\n",
                 "t.yaml:2: expect: is empty; expected a mapping of what the nodes must have, "
                 "with keys from nodes, gpus, gpu_model, gpu_memory, memory, ib_ports, ib_rate, "
                 "pcie");
    s_expect_err("expect: 8\n", "t.yaml:2: expect: is a single value; expected a mapping of what "
                                "the nodes must have, with keys from nodes, gpus, gpu_model, "
                                "gpu_memory, memory, ib_ports, ib_rate, pcie");
    s_expect_err("expect: []\n", "t.yaml:2: expect: is an empty list; expected entries such as "
                                 "{nodes: \"gpu[001-128]\", gpus: 8}");
    s_expect_err("expect:\n  - {nodes: \"gpu[16-01]\", gpus: 8}\n",
                 "t.yaml:3: expect[0].nodes: reversed range '16-01' in 'gpu[16-01]'; expected "
                 "hostlist notation such as gpu[001-128],login01");
    s_expect_err("expect:\n  - {gpus: 8}\n  - {nodes: login01, gpus: 0}\n",
                 "t.yaml:4: expect[1]: never applies: expect[0] has no nodes and applies to "
                 "every node first; expected entries with nodes before the one without");
    s_expect_err("expect:\n  - gpus: 8\n  - 4\n",
                 "t.yaml:4: expect[1]: is a single value; expected a mapping of what the nodes "
                 "must have, with keys from nodes, gpus, gpu_model, gpu_memory, memory, "
                 "ib_ports, ib_rate, pcie");
    /* The expectation is checked by the health stage: a campaign without one is refused. */
    s_parse_err("name: t\nexpect: {gpus: 8}\nstages:\n  - {name: burn, workload: gpuburn}\n",
                "t.yaml:2: expect: is checked by the health stage, and this campaign has none; "
                "expected a stage with workload: health (a passive sweep of seconds), e.g. first "
                "{name: health, workload: health}");
}

/* The mismatches of facts f against the single entry of expect_yaml, as lines joined by '\n'. */
static char *s_check(const char *expect_yaml, const fb_node_facts_t *f,
                     const fb_node_facts_t *before)
{
    fb_campaign_t *c = s_parse_ok(expect_yaml);
    fb_mismatch_t *m = NULL;
    size_t n = fb_expect_check(&c->expect->entries[0], "gpu017", f, before, &m);
    char *all = xstrdup("");
    for (size_t i = 0; i < n; i++) {
        char *next = xasprintf("%s%s%s [%s]", all, i ? "\n" : "", m[i].what, m[i].part);
        free(all);
        all = next;
    }
    fb_mismatches_free(m, n);
    fb_campaign_destroy(&c);
    return all;
}

static void s_check_is(const char *expect_yaml, const fb_node_facts_t *f,
                       const fb_node_facts_t *before, const char *want)
{
    char *got = s_check(expect_yaml, f, before);
    if (strcmp(got, want))
        fail_msg("\n got      '%s'\n expected '%s'", got, want);
    free(got);
}

static void test_check_matching_node(void **state)
{
    (void)state;
    fb_node_facts_t f;
    s_h200_node(&f);
    /* 141 GiB of HBM reads 140.4 GiB through NVML; 2 TiB of DIMMs about 2015 GiB of MemTotal */
    s_check_is(s_full, &f, NULL, "");
    s_check_is("expect: {gpu_model: \"NVIDIA H200\", gpu_memory: 140GiB}\n", &f, NULL, "");
    /* the same through cudaMemGetInfo: 139.8 GiB (bench/results/h200x2-2026-11-22) */
    for (size_t i = 0; i < f.n_gpus; i++)
        f.gpus[i].memory_bytes = (uint64_t)(139.8 * (double)GIB);
    s_check_is(s_full, &f, NULL, "");
    /* a Gen5 link may sit in a faster slot: gen and width are minimums */
    f.gpus[0].gen = 6;
    s_check_is(s_full, &f, NULL, "");
    fb_node_facts_clear(&f);

    /* A real H100 VM (bench/results/expect-h100-2026-11-24): NVML's 85520809984 bytes (81559
     * MiB), MemTotal 131981020 kB of 128 GiB, a Gen5 x16 link */
    fb_node_facts_t h100 = {.mem_total_bytes = 131981020ull * 1024};
    fb_node_facts_add_gpu(&h100, "0000:00:06.0", "NVIDIA H100 80GB HBM3", 85520809984ull, 5, 16);
    s_check_is("expect: {gpus: 1, gpu_model: H100, gpu_memory: 80GiB, memory: 128GiB, "
               "pcie: gen5x16, ib_ports: 0}\n",
               &h100, NULL, "");
    fb_node_facts_clear(&h100);

    /* A CPU node that must have none. */
    fb_node_facts_t cpu = {.mem_total_bytes = 503ull * GIB + 800 * MIB};
    s_check_is("expect: {gpus: 0, memory: 512GiB, ib_ports: 0}\n", &cpu, NULL, "");
}

/* Every GPU of f named `model`. */
static void s_set_models(fb_node_facts_t *f, const char *model)
{
    for (size_t i = 0; i < f->n_gpus; i++) {
        free(f->gpus[i].model);
        f->gpus[i].model = xstrdup(model);
    }
}

static void test_check_mismatches(void **state)
{
    (void)state;
    fb_node_facts_t f, before;
    s_h200_node(&before);
    s_h200_node(&f);
    /* two GPUs fell off the bus: the earlier inventory names them */
    fb_node_facts_t six = {.mem_total_bytes = f.mem_total_bytes};
    for (size_t i = 0; i < f.n_gpus; i++)
        if (i != 2 && i != 5)
            fb_node_facts_add_gpu(&six, f.gpus[i].pci, f.gpus[i].model, f.gpus[i].memory_bytes,
                                  f.gpus[i].gen, f.gpus[i].width);
    s_check_is("expect: {gpus: 8}\n", &six, &before,
               "gpus: expected 8, found 6 (missing 0000:3b:00.0, 0000:6b:00.0, listed in an "
               "earlier inventory of this node) [gpu017]");
    s_check_is("expect: {gpus: 8}\n", &six, NULL, "gpus: expected 8, found 6 [gpu017]");
    fb_node_facts_clear(&six);

    /* one GPU with the wrong name and half its memory; every port slow; a link at x8 */
    free(f.gpus[3].model);
    f.gpus[3].model = xstrdup("NVIDIA H100 80GB HBM3");
    f.gpus[3].memory_bytes = 81559ull * MIB;
    f.gpus[4].width = 8;
    f.gpus[5].width = 8;
    for (size_t i = 0; i < f.n_ports; i++)
        f.ports[i].rate_gbps = 200;
    free(f.ports[7].state);
    f.ports[7].state = xstrdup("DOWN");
    f.mem_total_bytes = 1890ull * GIB; /* one of 16 128 GiB DIMMs gone */
    s_check_is(s_full, &f, NULL,
               "gpu_model: expected H200, found 'NVIDIA H100 80GB HBM3' on gpu3 (0000:4b:00.0) "
               "[gpu017/gpu3]\n"
               "gpu_memory: expected 141GiB, found 79.6 GiB on gpu3 (0000:4b:00.0) "
               "[gpu017/gpu3]\n"
               "memory: expected 2TiB (2048.0 GiB), found 1890.0 GiB (92.3%; 96% to 101% of it "
               "counts) [gpu017]\n"
               "ib_ports: expected 8 active, found 7 (not active: mlx5_7:1 DOWN) [gpu017]\n"
               "ib_rate: expected at least 400 Gb/s, found 200 Gb/s on mlx5_0:1, mlx5_1:1, "
               "mlx5_2:1, mlx5_3:1, mlx5_4:1, mlx5_5:1, mlx5_6:1 [gpu017]\n"
               "pcie: expected gen5x16, found gen5x8 on gpu[4-5] [gpu017]");

    /* every GPU alike: one line naming the node; no management library: said so */
    s_set_models(&f, "");
    for (size_t i = 0; i < f.n_gpus; i++)
        f.gpus[i].memory_bytes = 0;
    s_check_is("expect: {gpu_model: H200, gpu_memory: 141GiB}\n", &f, NULL,
               "gpu_model: expected H200, found no name (no GPU management library answered) on "
               "all 8 GPUs [gpu017]\n"
               "gpu_memory: expected 141GiB, found unknown size (no GPU management library "
               "answered) on all 8 GPUs [gpu017]");
    /* model words are whole words, any case */
    s_set_models(&f, "NVIDIA A1000");
    s_check_is("expect: {gpu_model: a100}\n", &f, NULL,
               "gpu_model: expected a100, found 'NVIDIA A1000' on all 8 GPUs [gpu017]");
    s_check_is("expect: {gpu_model: a1000}\n", &f, NULL, "");
    /* decimal units are what they say */
    s_check_is("expect: {memory: 2TB}\n", &before, NULL,
               "memory: expected 2TB (1862.6 GiB), found 2015.3 GiB (108.2%; 96% to 101% of it "
               "counts) [gpu017]");
    fb_node_facts_clear(&f);
    fb_node_facts_clear(&before);

    /* a node without GPUs that should have them */
    fb_node_facts_t none = {.mem_total_bytes = 64 * GIB};
    s_check_is(s_full, &none, NULL,
               "gpus: expected 8, found 0 [gpu017]\n"
               "memory: expected 2TiB (2048.0 GiB), found 64.0 GiB (3.1%; 96% to 101% of it "
               "counts) [gpu017]\n"
               "ib_ports: expected 8 active, found 0 [gpu017]");
    s_check_is("expect: {gpu_model: H200}\n", &none, NULL,
               "gpu_model: expected H200, found no GPUs [gpu017]");
}

/* expect --from: the text parses back, and the node it came from meets it. */
static void s_round_trip(const fb_node_facts_t *f, const char *want_text)
{
    char *text = fb_expect_from_facts(f, "from gpu017's inventory");
    if (want_text && strcmp(text, want_text))
        fail_msg("\n got      '%s'\n expected '%s'", text, want_text);
    char *campaign = xasprintf("name: t\n%s%s", text, s_health);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    if (fb_campaign_parse(campaign, strlen(campaign), "t.yaml", &c, &err))
        fail_msg("expect --from text does not parse: %s\n%s", err, text);
    fb_mismatch_t *m = NULL;
    size_t n = fb_expect_check(fb_expect_for_node(c->expect, "gpu017"), "gpu017", f, NULL, &m);
    if (n)
        fail_msg("the node does not meet its own expectation: %s", m[0].what);
    fb_campaign_destroy(&c);
    free(campaign);
    free(text);
}

static void test_from_facts(void **state)
{
    (void)state;
    fb_node_facts_t f;
    s_h200_node(&f);
    s_round_trip(&f, "# from gpu017's inventory\n"
                     "expect:\n"
                     "  gpus: 8\n"
                     "  gpu_model: \"NVIDIA H200\"\n"
                     "  gpu_memory: 140.4GiB\n"
                     "  pcie: gen5x16\n"
                     "  memory: 2015.3GiB\n"
                     "  ib_ports: 8\n"
                     "  ib_rate: 400\n");
    /* mixed: a slower port, a narrower link, GPUs of different sizes within tolerance */
    f.ports[2].rate_gbps = 200;
    f.gpus[1].width = 8;
    f.gpus[1].gen = 4;
    f.gpus[6].memory_bytes = 141 * GIB;
    free(f.ports[3].state);
    f.ports[3].state = xstrdup("DOWN");
    s_round_trip(&f, "# from gpu017's inventory\n"
                     "expect:\n"
                     "  gpus: 8\n"
                     "  gpu_model: \"NVIDIA H200\"\n"
                     "  gpu_memory: 140.4GiB\n"
                     "  pcie: gen4x8\n"
                     "  memory: 2015.3GiB\n"
                     "  ib_ports: 7\n"
                     "  ib_rate: 200\n");
    /* what cannot be stated is a comment, and the rest still round-trips */
    free(f.gpus[0].model);
    f.gpus[0].model = xstrdup("NVIDIA H100 80GB HBM3");
    f.gpus[0].memory_bytes = 81559ull * MIB;
    f.gpus[2].gen = 0;
    s_round_trip(&f, "# from gpu017's inventory\n"
                     "expect:\n"
                     "  gpus: 8\n"
                     "  # gpu_model: the GPUs have different models\n"
                     "  # gpu_memory: sizes differ too much to state one (79.6 to 141.0 GiB)\n"
                     "  pcie: x8   # the link speed of some GPU is unknown\n"
                     "  memory: 2015.3GiB\n"
                     "  ib_ports: 7\n"
                     "  ib_rate: 200\n");
    fb_node_facts_clear(&f);
    /* small GPUs are written in MiB; a CPU node */
    fb_node_facts_add_gpu(&f, "0000:01:00.0", "NVIDIA T400 4GB", 4096ull * MIB - 7 * MIB, 3, 16);
    f.mem_total_bytes = 31ull * GIB;
    s_round_trip(&f, NULL);
    fb_node_facts_clear(&f);
    fb_node_facts_t cpu = {.mem_total_bytes = 7 * GIB + 500 * MIB};
    s_round_trip(&cpu, "# from gpu017's inventory\n"
                       "expect:\n"
                       "  gpus: 0\n"
                       "  memory: 7668MiB\n"
                       "  ib_ports: 0\n");
}

static void test_pcie_gen(void **state)
{
    (void)state;
    assert_int_equal(fb_pcie_gen_of_speed("32.0 GT/s PCIe"), 5);
    assert_int_equal(fb_pcie_gen_of_speed("16 GT/s"), 4);
    assert_int_equal(fb_pcie_gen_of_speed("2.5 GT/s PCIe"), 1);
    assert_int_equal(fb_pcie_gen_of_speed("64.0 GT/s PCIe"), 6);
    assert_int_equal(fb_pcie_gen_of_speed("Unknown"), 0);
    assert_int_equal(fb_pcie_gen_of_speed("12.0 GT/s"), 0);
    assert_int_equal(fb_pcie_gen_of_speed(""), 0);
    assert_int_equal(fb_pcie_gen_of_speed(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_fields),     cmocka_unit_test(test_hostlist_entries),
        cmocka_unit_test(test_parse_errors),     cmocka_unit_test(test_check_matching_node),
        cmocka_unit_test(test_check_mismatches), cmocka_unit_test(test_from_facts),
        cmocka_unit_test(test_pcie_gen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
