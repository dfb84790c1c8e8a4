/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of scheduler/campaign and scheduler/workload: a good campaign file round-trips with
 * defaults filled in and lists joined; every class of error gives its exact one-line
 * `FILE:LINE: KEYPATH: ...; expected ...` message (fixtures under tests/fixtures/campaigns/);
 * parameter validation per type; truncated or randomly mutated files never crash the parser,
 * only produce errors; the YAML limits (nesting depth, alias expansion, size) refuse hostile
 * input at once; former parameters that are site settings now are refused by name; and the
 * files a campaign names are resolved from attached content only. One file of about 1,150 lines
 * because every test goes through the same parser with the same fixtures and expectation helpers;
 * the sections a campaign's other keys parse have their own tests (test_expect, test_regress,
 * test_webhook, test_slurm_actions). */
#include "coordinator/campaign_file.h"
#include "scheduler/campaign.h"
#include "scheduler/topology.h"
#include "scheduler/workload.h"
#include "common/hostlist.h"
#include "common/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define S_DIR FB_FIXTURES "/campaigns/"

static char *s_fixture_text(const char *name, size_t *len)
{
    char *path = xasprintf(S_DIR "%s", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    free(path);
    char *buf = xmalloc(1 << 16);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* Loads fixture name and expects an error message equal to "DIR/" + expected. */
static void s_expect_fixture_error(const char *name, const char *expected)
{
    char *path = xasprintf(S_DIR "%s", name);
    campaign_file_t *c = (campaign_file_t *)1;
    char *err = NULL;
    int rc = campaign_file_read(path, &c, &err);
    assert_int_equal(rc, -EINVAL);
    assert_null(c);
    assert_non_null(err);
    char *want = xasprintf(S_DIR "%s", expected);
    if (strcmp(err, want))
        fail_msg("%s:\n got      '%s'\n expected '%s'", name, err, want);
    free(want);
    free(err);
    free(path);
}

/* Parses text as "t.yaml" and expects an error message that starts with prefix. */
static void s_expect_error(const char *text, const char *prefix)
{
    fb_campaign_t *c = (fb_campaign_t *)1;
    char *err = NULL;
    int rc = fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err);
    if (rc != -EINVAL)
        fail_msg("expected an error for:\n%s", text);
    assert_null(c);
    assert_non_null(err);
    if (strncmp(err, prefix, strlen(prefix)))
        fail_msg("got '%s', expected it to start with '%s'", err, prefix);
    assert_null(strchr(err, '\n'));
    assert_non_null(strstr(err, "; expected "));
    free(err);
}

static fb_campaign_t *s_parse_ok(const char *text)
{
    fb_campaign_t *c = NULL;
    char *err = NULL;
    if (fb_campaign_parse(text, strlen(text), "t.yaml", &c, &err))
        fail_msg("unexpected error: %s", err);
    assert_null(err);
    assert_non_null(c);
    return c;
}

static void s_expect_params(const fb_stage_t *s, const char *expected)
{
    char buf[1024] = "";
    for (size_t i = 0; i < s->n_params; i++) {
        size_t o = strlen(buf);
        snprintf(buf + o, sizeof buf - o, "%s%s=%s", i ? " " : "", s->params[i].key,
                 s->params[i].value);
    }
    if (strcmp(buf, expected))
        fail_msg("stage %s params:\n got      '%s'\n expected '%s'", s->name, buf, expected);
}

/* The nodes named for stage i: fb_stage_nodes succeeds and does not mean "all". Returns how
 * many. */
static size_t s_stage_names(const fb_campaign_t *c, size_t i, char ***names)
{
    bool all = true;
    char errbuf[256];
    size_t n;
    assert_int_equal(fb_stage_nodes(c, &c->stages[i], &all, names, &n, errbuf, sizeof errbuf), 0);
    assert_false(all);
    return n;
}

static void test_good_file(void **state)
{
    (void)state;
    campaign_file_t *cf = NULL;
    char *err = NULL;
    assert_int_equal(campaign_file_read(S_DIR "good.yaml", &cf, &err), 0);
    assert_null(err);
    assert_int_equal(cf->n_files, 0);
    fb_campaign_t *c = cf->campaign;
    assert_string_equal(c->name, "rack12-burnin");
    assert_string_equal(c->nodes_expr, "node[01-16,20],gpu-a[1-4]");
    assert_string_equal(c->source, S_DIR "good.yaml");
    assert_int_equal(c->n_stages, 4);

    const fb_stage_t *s = &c->stages[0];
    assert_string_equal(s->name, "dram");
    assert_string_equal(s->workload, "memtest");
    assert_int_equal(s->timeout_ms, 30 * 60 * 1000);
    assert_int_equal(s->on_fail, FB_ON_FAIL_CONTINUE);
    assert_string_equal(s->nodes_expr, "local-[0-1]");
    assert_int_equal(s->line, 5);
    s_expect_params(s, "size=80% passes=2 threads=auto patterns=walking_ones,random lock=true "
                       "retests=8 dimm_decode=auto");

    s = &c->stages[1];
    assert_string_equal(s->name, "dram-block");
    assert_int_equal(s->timeout_ms, 3600 * 1000);
    assert_int_equal(s->on_fail, FB_ON_FAIL_STOP);
    assert_null(s->nodes_expr);
    assert_int_equal(s->line, 11);
    s_expect_params(s, "size=64MiB passes=1 threads=auto patterns=stuck_address,own_address "
                       "seed=42 lock=no retests=8 dimm_decode=auto");
    assert_string_equal(fb_stage_param(s, "seed"), "42");
    assert_null(fb_stage_param(s, "inject_bitflips"));

    s = &c->stages[2];
    assert_string_equal(s->workload, "sleep");
    s_expect_params(s, "duration=1s exit=pass");
    s = &c->stages[3];
    assert_string_equal(s->name, "quoted.name_1");
    assert_int_equal(s->timeout_ms, 5400 * 1000);
    s_expect_params(s, "duration=500ms exit=fail");

    /* node selection: the stage's own, else the campaign's */
    char **names;
    size_t n = s_stage_names(c, 0, &names);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "local-0");
    assert_string_equal(names[1], "local-1");
    fb_hostlist_free(names, n);
    n = s_stage_names(c, 1, &names);
    assert_int_equal(n, 21);
    assert_string_equal(names[16], "node20");
    assert_string_equal(names[20], "gpu-a4");
    fb_hostlist_free(names, n);

    fb_campaign_destroy(&cf->campaign);
    assert_null(cf->campaign);
    fb_campaign_destroy(&cf->campaign);
    fb_campaign_destroy(NULL);
    campaign_file_destroy(&cf);
    assert_null(cf);
    campaign_file_destroy(NULL);
}

static void test_defaults_and_all(void **state)
{
    (void)state;
    fb_campaign_t *c = s_parse_ok("name: x\nstages:\n  - name: a\n    workload: memtest\n");
    assert_string_equal(c->nodes_expr, "all");
    assert_string_equal(c->source, "t.yaml");
    assert_int_equal(c->stages[0].timeout_ms, 3600000);
    assert_int_equal(c->stages[0].on_fail, FB_ON_FAIL_CONTINUE);
    s_expect_params(&c->stages[0], "size=80% passes=1 threads=auto patterns=all lock=true "
                                   "retests=8 dimm_decode=auto");
    bool all = false;
    char **names = (char **)1;
    size_t n = 5;
    assert_int_equal(fb_stage_nodes(c, &c->stages[0], &all, &names, &n, NULL, 0), 0);
    assert_true(all);
    assert_null(names);
    assert_int_equal(n, 0);
    fb_campaign_destroy(&c);

    /* fault injection is accepted when written, never filled in; params: with no value */
    c = s_parse_ok("name: x\nstages:\n  - name: a\n    workload: memtest\n"
                   "    params: {inject_bitflips: 3, patterns: \"random, bit_flip\"}\n"
                   "  - name: b\n    workload: sleep\n    params:\n    nodes: [n1, 'n[3-4]']\n");
    s_expect_params(&c->stages[0], "size=80% passes=1 threads=auto patterns=random, bit_flip "
                                   "lock=true retests=8 dimm_decode=auto inject_bitflips=3");
    s_expect_params(&c->stages[1], "duration=1s exit=pass");
    assert_string_equal(c->stages[1].nodes_expr, "n1,n[3-4]");
    assert_string_equal(fb_on_fail_name(FB_ON_FAIL_STOP), "stop");
    assert_string_equal(fb_on_fail_name(FB_ON_FAIL_CONTINUE), "continue");
    fb_campaign_destroy(&c);

    /* text that is not NUL-terminated */
    const char text[] = "name: x\nstages: [{name: a, workload: sleep}]\nGARBAGE";
    fb_campaign_t *d = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(text, strlen(text) - 7, NULL, &d, &err), 0);
    assert_string_equal(d->source, "<campaign>");
    fb_campaign_destroy(&d);
}

static void test_fixture_errors(void **state)
{
    (void)state;
    s_expect_fixture_error(
        "bad-param.yaml",
        "bad-param.yaml:9: stages[0].params.sise: unknown parameter for workload memtest; "
        "expected one of size, passes, threads, patterns, seed, lock, retests, dimm_decode");
    s_expect_fixture_error(
        "unknown-workload.yaml",
        "unknown-workload.yaml:5: stages[1].workload: unknown workload 'gpuburnn'; expected one "
        "of memtest, sleep, gpuburn, gpumemtest, p2p, health, allreduce, rdmabw, netbw");
    s_expect_fixture_error(
        "bad-timeout.yaml",
        "bad-timeout.yaml:6: stages[0].timeout: '30x' is not a duration; expected e.g. 90s, 30m, "
        "2h");
    s_expect_fixture_error(
        "syntax.yaml", "syntax.yaml:5: YAML syntax error: mapping values are not allowed in this "
                       "context at column 13; expected valid YAML (check indentation, quoting "
                       "and ': ' after keys)");
    s_expect_fixture_error(
        "empty.yaml", "empty.yaml:1: (top level): empty campaign file; "
                      "expected a mapping with keys name, nodes, expect, stages, regress, actions");
    s_expect_fixture_error("comment-only.yaml",
                           "comment-only.yaml:1: (top level): empty campaign file; expected a "
                           "mapping with keys name, nodes, expect, stages, regress, actions");
    s_expect_fixture_error("no-stages.yaml", "no-stages.yaml:3: stages: no stages; expected at "
                                             "least one stage with name and workload");
    s_expect_fixture_error("missing-stages.yaml",
                           "missing-stages.yaml:1: stages: missing; expected a list of stages, "
                           "each a mapping with name and workload");
    s_expect_fixture_error("missing-name.yaml", "missing-name.yaml:1: name: missing; expected the "
                                                "campaign's name, e.g. name: rack12-burnin");
    s_expect_fixture_error("unknown-key.yaml",
                           "unknown-key.yaml:6: stages[0].retries: unknown key; expected one of "
                           "name, workload, timeout, on_fail, nodes, params, scope, group_size, "
                           "pairing, seed, topology, routes, rounds, bisect_budget, bisect_rounds, "
                           "bisect_repeat, bisect_slow, rails, bisect_prior");
    s_expect_fixture_error("unknown-top-key.yaml",
                           "unknown-top-key.yaml:2: node: unknown key; "
                           "expected one of name, nodes, expect, stages, regress, actions");
    s_expect_fixture_error("duplicate-stage.yaml",
                           "duplicate-stage.yaml:5: stages[1].name: duplicate stage name 'dram' "
                           "(also stages[0] at line 3); expected a unique name");
    s_expect_fixture_error("bisect.yaml",
                           "bisect.yaml:5: stages[0].on_fail: 'bisect' applies only to scope: "
                           "group or pairs, and this stage has scope: node (a node-local test "
                           "names its failing node by itself); expected continue or stop, or "
                           "scope: group or pairs");
    s_expect_fixture_error("bad-nodes.yaml",
                           "bad-nodes.yaml:2: nodes: reversed range '16-01' in 'node[16-01]'; "
                           "expected all, or hostlist notation such as node[01-16,20],gpu-a[1-4]");
    s_expect_fixture_error(
        "bad-pattern.yaml",
        "bad-pattern.yaml:8: stages[0].params.patterns[1]: unknown value 'walking_twos'; expected "
        "all, or a comma-separated list of stuck_address, own_address, walking_ones, "
        "walking_zeros, checkerboard, solid_bits, moving_inversions, random, block_move, "
        "compare_xor, compare_sub, compare_mul, compare_div, compare_or, compare_and, "
        "sequential_increment, bit_spread, bit_flip, block_sequential");
    s_expect_fixture_error("bad-passes.yaml",
                           "bad-passes.yaml:5: stages[0].params.passes: '0' is out of range; "
                           "expected an integer from 1 to 1000000");
    s_expect_fixture_error(
        "missing-workload.yaml",
        "missing-workload.yaml:3: stages[0].workload: missing; expected one of "
        "memtest, sleep, gpuburn, gpumemtest, p2p, health, allreduce, rdmabw, netbw");

    campaign_file_t *c = (campaign_file_t *)1;
    char *err = NULL;
    assert_int_equal(campaign_file_read(S_DIR "does-not-exist.yaml", &c, &err), -ENOENT);
    assert_null(c);
    assert_string_equal(err, S_DIR "does-not-exist.yaml: cannot read: No such file or directory; "
                                   "expected a campaign file");
    free(err);
    assert_int_equal(campaign_file_read(S_DIR "does-not-exist.yaml", &c, NULL), -ENOENT);
    /* Not a file: refused before a byte is read. */
    assert_int_equal(campaign_file_read("/dev/zero", &c, &err), -EINVAL);
    assert_string_equal(err, "/dev/zero: not a regular file (a character device); expected a "
                             "campaign file");
    free(err);
    assert_int_equal(campaign_file_read(S_DIR, &c, &err), -EINVAL);
    assert_non_null(strstr(err, "not a regular file (a directory)"));
    free(err);
}

/* head followed by tail, parsed as t.yaml, is refused with exactly the message expected. */
static void s_expect_exact(const char *head, const char *tail, const char *expected)
{
    char *t = xasprintf("%s%s", head, tail);
    fb_campaign_t *c = (fb_campaign_t *)1;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(t, strlen(t), "t.yaml", &c, &err), -EINVAL);
    assert_null(c);
    if (strcmp(err, expected))
        fail_msg("for:\n%s\n got      '%s'\n expected '%s'", t, err, expected);
    free(err);
    free(t);
}

static void test_inline_errors(void **state)
{
    (void)state;
    const char *head = "name: x\nstages:\n  - name: a\n    workload: memtest\n";
    char *t;
#define S_WITH(tail, prefix)                                                                       \
    do {                                                                                           \
        t = xasprintf("%s%s", head, tail);                                                         \
        s_expect_error(t, prefix);                                                                 \
        free(t);                                                                                   \
    } while (0)
    S_WITH("    params: {size: 0.5%x}\n", "t.yaml:5: stages[0].params.size: '0.5%x' is not a "
                                          "byte size or percentage; expected a byte size");
    S_WITH("    params: {size: 150%}\n", "t.yaml:5: stages[0].params.size: '150%' is out of range");
    S_WITH("    params: {size: [1, 2]}\n", "t.yaml:5: stages[0].params.size: is a list; expected");
    S_WITH("    params: {size: {a: 1}}\n",
           "t.yaml:5: stages[0].params.size: is a mapping; expected");
    S_WITH("    params: {size: }\n", "t.yaml:5: stages[0].params.size: no value; expected");
    S_WITH("    params: {size: ~}\n", "t.yaml:5: stages[0].params.size: no value; expected");
    S_WITH("    params: {threads: many}\n",
           "t.yaml:5: stages[0].params.threads: 'many' is not 'auto' or a non-negative integer; "
           "expected 'auto' or an integer from 1 to 4096");
    S_WITH("    params: {lock: maybe}\n",
           "t.yaml:5: stages[0].params.lock: 'maybe' is not a boolean; expected true or false");
    S_WITH("    params: {seed: -1}\n", "t.yaml:5: stages[0].params.seed: '-1' is not a "
                                       "non-negative integer; expected a non-negative integer");
    S_WITH("    params: {patterns: []}\n", "t.yaml:5: stages[0].params.patterns: is an empty list");
    S_WITH("    params: {patterns: [all, random]}\n",
           "t.yaml:5: stages[0].params.patterns: unknown value 'all' (all must stand alone)");
    S_WITH("    params: {patterns: \"random,,bit_flip\"}\n",
           "t.yaml:5: stages[0].params.patterns: empty item in list");
    S_WITH("    params: {patterns: [[random]]}\n", "t.yaml:5: stages[0].params.patterns[0]: is a "
                                                   "list; expected all");
    S_WITH("    params: {passes: 1, passes: 2}\n",
           "t.yaml:5: stages[0].params.passes: parameter given twice; expected each once");
    S_WITH("    params: [size]\n", "t.yaml:5: stages[0].params: is a list; expected a mapping");
    S_WITH("    params:\n      ? [a]\n      : 1\n", "t.yaml:6: stages[0].params: a key is a list; "
                                                    "expected one of size,");
    S_WITH("    timeout: 0s\n", "t.yaml:5: stages[0].timeout: '0s' is zero; expected a duration");
    S_WITH("    timeout: [1s]\n", "t.yaml:5: stages[0].timeout: is a list; expected e.g. 90s");
    S_WITH("    timeout:\n", "t.yaml:5: stages[0].timeout: no value; expected e.g. 90s");
    S_WITH("    on_fail: retry\n", "t.yaml:5: stages[0].on_fail: unknown policy 'retry'; expected "
                                   "continue, stop or bisect");
    S_WITH("    nodes: n[1-\n",
           "t.yaml:5: stages[0].nodes: unbalanced '[' in 'n[1-'; expected all");
    S_WITH("    name: b\n", "t.yaml:5: stages[0].name: key given twice; expected each key once");
    S_WITH("  - name: b\n    workload: sleep\n    params: {size: 1}\n",
           "t.yaml:7: stages[1].params.size: unknown parameter for workload sleep; expected one "
           "of duration, exit");
    S_WITH("  - name: b\n    workload: sleep\n    params: {exit: boom}\n",
           "t.yaml:7: stages[1].params.exit: unknown value 'boom'; expected one of pass, fail, "
           "crash, hang");
    S_WITH("  - name: b\n    workload: sleep\n    params: {duration: soon}\n",
           "t.yaml:7: stages[1].params.duration: 'soon' is not a duration; expected e.g. 90s");
    S_WITH("  - workload: sleep\n", "t.yaml:5: stages[1].name: missing; expected a unique stage "
                                    "name");
    S_WITH("  - name: b c\n    workload: sleep\n",
           "t.yaml:5: stages[1].name: 'b c' is not a valid stage name; expected");
    S_WITH("  - just-a-string\n", "t.yaml:5: stages[1]: is a single value; expected a mapping");
    S_WITH("  - name: b\n    workload: [memtest]\n",
           "t.yaml:6: stages[1].workload: is a list; expected one of memtest, sleep, gpuburn, "
           "gpumemtest, p2p, health, allreduce, rdmabw, netbw");
    S_WITH("---\nname: y\n", "t.yaml:6: (top level): a second YAML document; expected one");
    S_WITH("nodes: a\nnodes: b\n", "t.yaml:6: nodes: key given twice");
    S_WITH("nodes:\n", "t.yaml:5: nodes: no value; expected all, or hostlist notation");
    S_WITH("\"bad\": \"\\xff\\u0000\"\n", "t.yaml:5: bad: unknown key; expected one of name, "
                                          "nodes, expect, stages, regress, actions");
#undef S_WITH

    s_expect_error("- a\n- b\n", "t.yaml:1: (top level): is a list; expected a mapping with keys "
                                 "name, nodes, expect, stages, regress, actions");
    s_expect_error("just text\n", "t.yaml:1: (top level): is a single value; expected a mapping");
    s_expect_error("~\n", "t.yaml:1: (top level): empty campaign file; expected");
    s_expect_error("name: x\nstages: 3\n", "t.yaml:2: stages: is a single value; expected a list");
    s_expect_error("name: x\nstages:\n", "t.yaml:2: stages: is empty; expected a list of stages");
    s_expect_error("name: [x]\nstages: []\n", "t.yaml:1: name: is a list; expected the campaign's");
    s_expect_error("name: \"a\\nb\"\nstages: []\n", "t.yaml:1: name: not a valid name; expected");
    s_expect_error("name: \"a\\0b\"\n", "t.yaml:1: name: contains a NUL character; expected");
    s_expect_error("name: x\nstages: [{name: a, workload: sleep\n",
                   "t.yaml:3: YAML syntax error: did not find expected ',' or '}' at column 1 "
                   "(while parsing a flow mapping at line 2, column 10); expected valid YAML");
    /* (libyaml's wording for tabs changed between releases: check the prefix only) */
    s_expect_error("name: x\n\tstages: []\n", "t.yaml:2: YAML syntax error: ");
    s_expect_error("name: *nope\n", "t.yaml:1: YAML syntax error: found undefined alias");
    s_expect_error("name: x\nstages: &s [*s]\n", "t.yaml:2: stages[0]: is a list; expected a "
                                                 "mapping");
    /* the reader's errors (encoding) carry an offset, turned into a line */
    const char bad_utf8[] = "name: x\nstages: []\n# \xff\xfe\n";
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(bad_utf8, sizeof bad_utf8 - 1, "u.yaml", &c, &err), -EINVAL);
    assert_string_equal(err, "u.yaml:3: YAML syntax error: invalid leading UTF-8 octet (byte #xff "
                             "at offset 21); expected UTF-8 text");
    free(err);
    const char nul[] = "name: x\n\0stages: []\n";
    assert_int_equal(fb_campaign_parse(nul, sizeof nul - 1, "n.yaml", &c, &err), -EINVAL);
    assert_non_null(strstr(err, "n.yaml:2: YAML syntax error: control characters are not allowed"));
    free(err);
    /* a file name with a newline still gives one line */
    assert_int_equal(fb_campaign_parse("", 0, "a\nb.yaml", &c, &err), -EINVAL);
    assert_null(strchr(err, '\n'));
    free(err);
    assert_int_equal(fb_campaign_parse(NULL, 0, "z.yaml", &c, NULL), -EINVAL);
}

static void test_workload_schema(void **state)
{
    (void)state;
    assert_int_equal(fb_workload_count(), 9);
    assert_string_equal(fb_workload_at(0)->name, "memtest");
    assert_string_equal(fb_workload_at(1)->name, "sleep");
    assert_null(fb_workload_at(9));
    assert_non_null(fb_workload_find("gpuburn"));
    assert_null(fb_workload_find("gpuburnn"));
    assert_null(fb_workload_find(NULL));
    const fb_workload_spec_t *m = fb_workload_find("memtest");
    assert_non_null(m);
    assert_int_equal(m->n_params, 10);
    assert_null(fb_workload_param(m, "sise"));
    const fb_param_spec_t *inj = fb_workload_param(m, "inject_bitflips");
    assert_true(inj->fault_injection);
    assert_null(inj->default_value);
    assert_true(fb_workload_param(m, "inject_stuck_bits")->fault_injection);
    assert_null(fb_workload_param(m, "seed")->default_value);
    size_t n_patterns = 0;
    for (const char *const *p = fb_workload_param(m, "patterns")->choices; *p; p++)
        n_patterns++;
    assert_int_equal(n_patterns, 19);
    /* every default passes its own validation */
    for (size_t w = 0; w < fb_workload_count(); w++) {
        const fb_workload_spec_t *spec = fb_workload_at(w);
        for (size_t i = 0; i < spec->n_params; i++) {
            const fb_param_spec_t *p = &spec->params[i];
            assert_non_null(p->help);
            if (p->default_value && fb_param_validate(p, p->default_value, NULL, 0))
                fail_msg("%s.%s: default '%s' is invalid", spec->name, p->name, p->default_value);
        }
    }

    struct {
        const char *workload, *param, *value;
        int ok;
    } cases[] = {
        {"memtest", "size", "80%", 1},
        {"memtest", "size", "100%", 1},
        {"memtest", "size", "0%", 0},
        {"memtest", "size", "64MiB", 1},
        {"memtest", "size", "1.5GiB", 1},
        {"memtest", "size", "64 MiB", 1},
        {"memtest", "size", "64XB", 0},
        {"memtest", "size", "", 0},
        {"memtest", "passes", "1", 1},
        {"memtest", "passes", "1000000", 1},
        {"memtest", "passes", "1000001", 0},
        {"memtest", "passes", "0", 0},
        {"memtest", "passes", "+1", 0},
        {"memtest", "passes", "1.0", 0},
        {"memtest", "threads", "auto", 1},
        {"memtest", "threads", "8", 1},
        {"memtest", "threads", "0", 0},
        {"memtest", "threads", "Auto", 0},
        {"memtest", "patterns", "all", 1},
        {"memtest", "patterns", "random", 1},
        {"memtest", "patterns", "random,bit_flip", 1},
        {"memtest", "patterns", " random , bit_flip ", 1},
        {"memtest", "patterns", "random,", 0},
        {"memtest", "patterns", "", 0},
        {"memtest", "patterns", "all,random", 0},
        {"memtest", "seed", "0", 1},
        {"memtest", "seed", "18446744073709551615", 1},
        {"memtest", "seed", "18446744073709551616", 0},
        {"memtest", "lock", "yes", 1},
        {"memtest", "lock", "off", 1},
        {"memtest", "lock", "y", 0},
        {"memtest", "inject_bitflips", "3", 1},
        {"sleep", "duration", "1h30m", 1},
        {"sleep", "duration", "90", 1},
        {"sleep", "duration", "9 s", 0},
        {"sleep", "exit", "hang", 1},
        {"sleep", "exit", "HANG", 0},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(cases); i++) {
        const fb_param_spec_t *p =
            fb_workload_param(fb_workload_find(cases[i].workload), cases[i].param);
        assert_non_null(p);
        char err[1024] = "x";
        int rc = fb_param_validate(p, cases[i].value, err, sizeof err);
        if ((rc == 0) != cases[i].ok)
            fail_msg("%s.%s = '%s': rc %d (%s)", cases[i].workload, cases[i].param, cases[i].value,
                     rc, err);
        if (rc) {
            assert_int_equal(rc, -EINVAL);
            assert_memory_equal(err, "expected ", 9);
        }
    }
    const fb_param_spec_t *passes = fb_workload_param(m, "passes");
    char err[64];
    assert_int_equal(fb_param_validate(passes, NULL, err, sizeof err), -EINVAL);
    assert_int_equal(fb_param_validate(passes, "x", NULL, 0), -EINVAL);
    /* a tiny buffer is truncated, never overrun */
    assert_int_equal(fb_param_validate(fb_workload_param(m, "patterns"), "nope", err, 8), -EINVAL);
    assert_int_equal(strlen(err), 7);

    fb_param_spec_t d = {"ratio", FB_PARAM_DOUBLE, NULL, NULL, 0, 0, false, "test"};
    assert_int_equal(fb_param_validate(&d, "0.25", NULL, 0), 0);
    assert_int_equal(fb_param_validate(&d, "nan", NULL, 0), -EINVAL);
    fb_param_spec_t s = {"label", FB_PARAM_STRING, NULL, NULL, 0, 0, false, "test"};
    assert_int_equal(fb_param_validate(&s, "anything at all", NULL, 0), 0);
    fb_param_spec_t b = {"buf", FB_PARAM_BYTES, NULL, NULL, 0, 0, false, "test"};
    assert_int_equal(fb_param_validate(&b, "4096", NULL, 0), 0);
    assert_int_equal(fb_param_validate(&b, "50%", NULL, 0), -EINVAL);
    fb_param_spec_t u = {"n", FB_PARAM_UINT, NULL, NULL, 5, 0, false, "test"};
    char problem[128];
    assert_int_equal(fb_param_check(&u, "4", problem, sizeof problem, err, sizeof err), -EINVAL);
    assert_string_equal(problem, "'4' is out of range");
    assert_string_equal(err, "expected an integer of at least 5");

    char names[256];
    assert_string_equal(
        fb_workload_names(names, sizeof names),
        "memtest, sleep, gpuburn, gpumemtest, p2p, health, allreduce, rdmabw, netbw");
    assert_string_equal(fb_workload_param_names(m, names, sizeof names),
                        "size, passes, threads, patterns, seed, lock, retests, dimm_decode");
    assert_string_equal(fb_workload_names(names, 5), "memt");
}

static size_t s_robust_ok, s_robust_syntax, s_robust_schema;

/* Parses text; whatever the outcome it must be a campaign or one error line naming the file. */
static void s_robust(const char *text, size_t len)
{
    fb_campaign_t *c = NULL;
    char *err = NULL;
    int rc = fb_campaign_parse(text, len, "fuzz.yaml", &c, &err);
    if (rc == 0) {
        assert_non_null(c);
        assert_null(err);
        assert_true(c->n_stages >= 1);
        for (size_t i = 0; i < c->n_stages; i++) {
            assert_non_null(c->stages[i].name);
            assert_non_null(fb_workload_find(c->stages[i].workload));
        }
        fb_campaign_destroy(&c);
        s_robust_ok++;
        return;
    }
    assert_int_equal(rc, -EINVAL);
    if (strstr(err, "YAML syntax error"))
        s_robust_syntax++;
    else
        s_robust_schema++;
    assert_null(c);
    assert_non_null(err);
    if (strncmp(err, "fuzz.yaml:", 10) || strchr(err, '\n') || !strstr(err, "; expected "))
        fail_msg("malformed message '%s'", err);
    free(err);
}

static void test_robustness(void **state)
{
    (void)state;
    size_t len;
    char *good = s_fixture_text("good.yaml", &len);
    /* every prefix */
    for (size_t n = 0; n <= len; n++) {
        char *prefix = xmalloc(n + 1);
        memcpy(prefix, good, n);
        s_robust(prefix, n);
        free(prefix);
    }
    /* random mutations: overwrite, insert, delete, biased toward YAML's special characters */
    static const char special[] = ":-[]{},#&*!|>'\"%@`?\n\t \\0123456789~";
    uint64_t x = 0x9e3779b97f4a7c15ull;
#define S_RAND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    char *buf = xmalloc(len + 64);
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(buf, good, len);
        size_t n = len;
        int edits = 1 + (int)(S_RAND() % 6);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)(S_RAND() % (n + 1));
            char ch = S_RAND() % 3 ? special[S_RAND() % (sizeof special - 1)] : (char)S_RAND();
            switch (S_RAND() % 3) {
            case 0:
                if (at < n)
                    buf[at] = ch;
                break;
            case 1:
                if (n < len + 60) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = ch;
                    n++;
                }
                break;
            default:
                if (at < n) {
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                }
                break;
            }
        }
        s_robust(buf, n);
    }
#undef S_RAND
    free(buf);
    free(good);
    print_message("robustness: %zu parsed, %zu syntax errors, %zu schema errors\n", s_robust_ok,
                  s_robust_syntax, s_robust_schema);
}

/* Multi-node keys: defaults, every key where it applies, and the values kept. */
static void test_scope_keys(void **state)
{
    (void)state;
    fb_campaign_t *c =
        s_parse_ok("name: x\nstages:\n"
                   "  - {name: a, workload: sleep}\n"
                   "  - {name: b, workload: sleep, scope: group}\n"
                   "  - {name: c, workload: sleep, scope: group, group_size: 4}\n"
                   "  - {name: d, workload: netbw, scope: pairs}\n"
                   "  - {name: e, workload: netbw, pairing: random, seed: 7,\n"
                   "     rounds: 3, scope: pairs}\n"
                   "  - {name: f, workload: netbw, scope: pairs, pairing: topology,\n"
                   "     topology: fabric.topo, rounds: 2}\n"
                   "  - {name: g, workload: sleep, scope: group, group_size: 0}\n"
                   "  - {name: h, workload: netbw, scope: pairs, pairing: random}\n");
    const fb_stage_t *s = c->stages;
    assert_int_equal(s[0].scope, FB_SCOPE_NODE);
    assert_int_equal(s[0].rounds, 1);
    assert_int_equal(s[0].group_size, 0);
    assert_null(s[0].topology_path);
    assert_int_equal(s[1].scope, FB_SCOPE_GROUP);
    assert_int_equal(s[1].group_size, 0);
    assert_int_equal(s[2].group_size, 4);
    assert_int_equal(s[3].scope, FB_SCOPE_PAIRS);
    assert_int_equal(s[3].pairing, FB_PAIRING_ROUND_ROBIN);
    assert_int_equal(s[3].rounds, 1);
    assert_false(s[3].has_seed);
    assert_int_equal(s[4].pairing, FB_PAIRING_RANDOM);
    assert_true(s[4].has_seed);
    assert_int_equal(s[4].seed, 7);
    assert_int_equal(s[4].rounds, 3);
    assert_int_equal(s[5].pairing, FB_PAIRING_TOPOLOGY);
    assert_string_equal(s[5].topology_path, "fabric.topo");
    assert_int_equal(s[5].topology_line, 10);
    assert_null(s[5].topology); /* parsing reads no file */
    assert_int_equal(s[5].rounds, 2);
    assert_int_equal(s[6].group_size, 0);
    assert_false(s[7].has_seed);
    fb_campaign_destroy(&c);

    c = s_parse_ok("name: x\nstages:\n  - {name: a, workload: netbw, scope: pairs, pairing: "
                   "random, seed: 18446744073709551615, rounds: 10000}\n");
    assert_true(c->stages[0].seed == UINT64_MAX);
    assert_int_equal(c->stages[0].rounds, 10000);
    fb_campaign_destroy(&c);
}

/* on_fail: bisect on group and pair stages, its keys, and their errors. */
static void test_bisect_keys(void **state)
{
    (void)state;
    fb_campaign_t *c =
        s_parse_ok("name: x\nstages:\n"
                   "  - {name: mem, workload: memtest}\n"
                   "  - {name: net, workload: netbw, scope: pairs, on_fail: bisect}\n"
                   "  - {name: rdma, workload: rdmabw, scope: pairs, pairing: random, rounds: 2,\n"
                   "     on_fail: bisect, bisect_rounds: 20, rails: 'mlx5_[0-3]',\n"
                   "     bisect_prior: mem}\n"
                   "  - {name: ar, workload: allreduce, scope: group, group_size: 8,\n"
                   "     on_fail: bisect, bisect_repeat: 3}\n"
                   "  - {name: ib, workload: rdmabw, scope: pairs, on_fail: bisect,\n"
                   "     bisect_budget: {rounds: 40, time: 2h}}\n"
                   "  - {name: ib2, workload: rdmabw, scope: pairs, on_fail: bisect,\n"
                   "     bisect_budget: {time: 90m}, bisect_slow: 0.5}\n");
    const fb_stage_t *s = c->stages;
    assert_int_equal(s[0].on_fail, FB_ON_FAIL_CONTINUE);
    assert_int_equal(s[1].on_fail, FB_ON_FAIL_BISECT);
    assert_string_equal(fb_on_fail_name(s[1].on_fail), "bisect");
    assert_int_equal(s[1].bisect_rounds, 24);
    assert_int_equal(s[1].bisect_budget_ms, 0);
    assert_int_equal(s[1].n_rails, 0);
    assert_null(s[1].bisect_prior);
    assert_int_equal(s[2].bisect_rounds, 20);
    assert_int_equal(s[2].n_rails, 4);
    assert_string_equal(s[2].rails[3], "mlx5_3");
    assert_string_equal(s[2].bisect_prior, "mem");
    assert_int_equal(s[3].bisect_repeat, 3);
    assert_int_equal(s[4].bisect_rounds, 40);
    assert_int_equal(s[4].bisect_budget_ms, 2 * 3600 * 1000);
    assert_int_equal(s[5].bisect_rounds, 24); /* time only: the default rounds stand */
    assert_int_equal(s[5].bisect_budget_ms, 90 * 60 * 1000);
    assert_true(s[1].bisect_slow == 0.0); /* flowjudge's default */
    assert_true(s[5].bisect_slow == 0.5);
    fb_campaign_destroy(&c);

    const char *head = "name: x\nstages:\n  - name: mem\n    workload: memtest\n"
                       "  - name: a\n    workload: netbw\n";
#define S_BISECT(tail, expected) s_expect_exact(head, tail, expected)
    S_BISECT("    on_fail: bisect\n",
             "t.yaml:7: stages[1].on_fail: 'bisect' applies only to scope: group or pairs, and "
             "this stage has scope: node (a node-local test names its failing node by itself); "
             "expected continue or stop, or scope: group or pairs");
    S_BISECT("    scope: pairs\n    on_fail: halve\n",
             "t.yaml:8: stages[1].on_fail: unknown policy 'halve'; expected continue, stop or "
             "bisect");
    S_BISECT("    scope: pairs\n    bisect_rounds: 3\n",
             "t.yaml:8: stages[1].bisect_rounds: applies only to on_fail: bisect, and this stage "
             "has no on_fail: bisect; expected bisect_rounds removed, or on_fail: bisect");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_rounds: 0\n",
             "t.yaml:9: stages[1].bisect_rounds: '0' is out of range; expected an integer from 1 "
             "to 1000");
    /* bisect_budget: a mapping of rounds and time, each in range, not with bisect_rounds */
    S_BISECT("    scope: pairs\n    bisect_budget: {rounds: 3}\n",
             "t.yaml:8: stages[1].bisect_budget: applies only to on_fail: bisect, and this stage "
             "has no on_fail: bisect; expected bisect_budget removed, or on_fail: bisect");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_budget: 12\n",
             "t.yaml:9: stages[1].bisect_budget: is a single value; expected a mapping with "
             "rounds, time or both, e.g. {rounds: 24, time: 2h}");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_budget: {}\n",
             "t.yaml:9: stages[1].bisect_budget: names no budget; expected rounds, time or both, "
             "e.g. {rounds: 24, time: 2h}");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_budget: {rounds: 0}\n",
             "t.yaml:9: stages[1].bisect_budget.rounds: '0' is out of range; expected an integer "
             "from 1 to 1000 (follow-up rounds at most)");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_budget: {time: soon}\n",
             "t.yaml:9: stages[1].bisect_budget.time: 'soon' is not a duration; expected a "
             "duration above zero and at most 30d, e.g. 30m, 2h, 1d");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_budget: {time: 31d}\n",
             "t.yaml:9: stages[1].bisect_budget.time: '31d' is out of range; expected a "
             "duration above zero and at most 30d, e.g. 30m, 2h, 1d");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_budget: {rounds: 3, days: 2}\n",
             "t.yaml:9: stages[1].bisect_budget.days: unknown key; expected one of rounds, time");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_budget: {rounds: 3, rounds: 4}\n",
             "t.yaml:9: stages[1].bisect_budget.rounds: key given twice; expected each key once");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_rounds: 3\n"
             "    bisect_budget: {time: 1h}\n",
             "t.yaml:9: stages[1].bisect_rounds: given with bisect_budget (line 10), which holds "
             "the rounds too; expected bisect_budget: {rounds: N} alone");
    /* bisect_slow: a fraction of the median strictly between 0 and 1, with on_fail: bisect */
    S_BISECT("    scope: pairs\n    bisect_slow: 0.5\n",
             "t.yaml:8: stages[1].bisect_slow: applies only to on_fail: bisect, and this stage "
             "has no on_fail: bisect; expected bisect_slow removed, or on_fail: bisect");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_slow: 1\n",
             "t.yaml:9: stages[1].bisect_slow: '1': expected a fraction of the median bandwidth "
             "above 0 and below 1, e.g. 0.93 (the default) or 0.5");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_slow: 50%\n",
             "t.yaml:9: stages[1].bisect_slow: '50%': expected a fraction of the median bandwidth "
             "above 0 and below 1, e.g. 0.93 (the default) or 0.5");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_repeat: 2\n",
             "t.yaml:9: stages[1].bisect_repeat: applies only to scope: group, and this stage has "
             "scope: pairs; expected bisect_repeat removed, or scope: group");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    rails: mlx5_[0-7]\n",
             "t.yaml:9: stages[1].rails: workload netbw cannot be told which rail to use (it has "
             "no device parameter); expected rails removed, or a workload such as rdmabw");
    S_BISECT("    scope: group\n    on_fail: bisect\n    bisect_prior: mem\n",
             "t.yaml:9: stages[1].bisect_prior: applies only to scope: pairs, and this stage has "
             "scope: group; expected bisect_prior removed, or scope: pairs");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_prior: a\n",
             "t.yaml:9: stages[1].bisect_prior: 'a' is not an earlier stage with scope: node; "
             "expected the name of a node-local stage before this one");
    S_BISECT("    scope: pairs\n    on_fail: bisect\n    bisect_prior: later\n",
             "t.yaml:9: stages[1].bisect_prior: 'later' is not an earlier stage with scope: node; "
             "expected the name of a node-local stage before this one");
#undef S_BISECT
}

static void test_scope_errors(void **state)
{
    (void)state;
    const char *head = "name: x\nstages:\n  - name: a\n    workload: netbw\n";
#define S_EXACT(tail, expected) s_expect_exact(head, tail, expected)
    S_EXACT("    scope: ring\n",
            "t.yaml:5: stages[0].scope: unknown scope 'ring'; expected node, group or pairs");
    S_EXACT("    scope: [group]\n",
            "t.yaml:5: stages[0].scope: is a list; expected node, group or pairs");
    S_EXACT("    scope: group\n    group_size: 1\n",
            "t.yaml:6: stages[0].group_size: a group of one node tests nothing between nodes "
            "(scope: node runs each node alone); expected 0 (every selected node in one group) or "
            "a group size from 2 to 4096");
    S_EXACT("    scope: group\n    group_size: 5000\n",
            "t.yaml:6: stages[0].group_size: '5000' is out of range; expected 0 (every selected "
            "node in one group) or a group size from 2 to 4096");
    S_EXACT("    scope: group\n    group_size: four\n",
            "t.yaml:6: stages[0].group_size: 'four' is not an integer; expected 0 (every selected "
            "node in one group) or a group size from 2 to 4096");
    /* A key that does not apply, whether written before or after the scope. */
    S_EXACT("    group_size: 4\n    scope: pairs\n",
            "t.yaml:5: stages[0].group_size: applies only to scope: group, and this stage has "
            "scope: pairs; expected group_size removed, or scope: group");
    S_EXACT("    group_size: 4\n",
            "t.yaml:5: stages[0].group_size: applies only to scope: group, and this stage has "
            "scope: node; expected group_size removed, or scope: group");
    S_EXACT("    scope: group\n    pairing: random\n",
            "t.yaml:6: stages[0].pairing: applies only to scope: pairs, and this stage has "
            "scope: group; expected pairing removed, or scope: pairs");
    S_EXACT("    rounds: 3\n",
            "t.yaml:5: stages[0].rounds: applies only to scope: pairs, and this stage has scope: "
            "node; expected rounds removed, or scope: pairs");
    S_EXACT("    scope: pairs\n    seed: 3\n",
            "t.yaml:6: stages[0].seed: applies only to pairing: random, and this stage has "
            "pairing: round-robin; expected seed removed, or pairing: random");
    S_EXACT("    seed: 3\n",
            "t.yaml:5: stages[0].seed: applies only to pairing: random, and this stage has scope: "
            "node; expected seed removed, or pairing: random");
    S_EXACT("    scope: pairs\n    topology: f.topo\n",
            "t.yaml:6: stages[0].topology: applies only to pairing: topology, and this stage has "
            "pairing: round-robin; expected topology removed, or pairing: topology");
    S_EXACT("    scope: pairs\n    pairing: topology\n",
            "t.yaml:3: stages[0].topology: missing: pairing: topology pairs nodes by the fabric; "
            "expected topology: FILE, a topology file or ibnetdiscover output");
    S_EXACT("    scope: pairs\n    pairing: best\n",
            "t.yaml:6: stages[0].pairing: unknown pairing 'best'; expected random, round-robin or "
            "topology");
    S_EXACT("    scope: pairs\n    rounds: 0\n",
            "t.yaml:6: stages[0].rounds: '0' is out of range; expected an integer from 1 to "
            "10000");
    S_EXACT("    scope: pairs\n    pairing: random\n    seed: -4\n",
            "t.yaml:7: stages[0].seed: '-4' is not an integer; expected an integer from 0 to "
            "18446744073709551615");
    S_EXACT("    scope: pairs\n    pairing: random\n    seed: 18446744073709551616\n",
            "t.yaml:7: stages[0].seed: '18446744073709551616' is not an integer; expected an "
            "integer from 0 to 18446744073709551615");
    S_EXACT("    scope: pairs\n    scope: group\n",
            "t.yaml:6: stages[0].scope: key given twice; expected each key once");
    S_EXACT("    scope: pairs\n    pairing: topology\n    topology:\n",
            "t.yaml:7: stages[0].topology: no value; expected the path of a topology file or of "
            "ibnetdiscover output");
#undef S_EXACT
}

/* Writes text to a new file under dir; returns its path (heap). */
static char *s_write(const char *dir, const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Topology files: read with the campaign from disk (relative to the campaign file's directory,
 * regular files only), and resolved by the scheduler from attached content only, with errors
 * that name the stage's line and quote at most a token of the file. */
static void test_topology_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/fbcampaign-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *stage = "name: x\nstages:\n  - name: net\n    workload: netbw\n    scope: pairs\n"
                        "    pairing: topology\n";
    char *text = xasprintf("%s    topology: fabric.topo\n", stage);
    char *campaign = s_write(dir, "c.yaml", text);
    free(text);
    const char *fabric = "leaf01: n[1-2]\nleaf02: n[3-4]\nspine01: leaf[01-02]\n";
    char *topo = s_write(dir, "fabric.topo", fabric);
    campaign_file_t *cf = NULL;
    char *err = NULL;
    assert_int_equal(campaign_file_read(campaign, &cf, &err), 0);
    assert_null(err);
    assert_non_null(cf->campaign->stages[0].topology);
    assert_int_equal(cf->n_files, 1);
    assert_string_equal(cf->files[0].name, "fabric.topo"); /* as the campaign writes it */
    assert_int_equal(cf->files[0].len, strlen(fabric));
    assert_memory_equal(cf->files[0].content, fabric, strlen(fabric));
    campaign_file_destroy(&cf);

    /* Parsed text, files attached separately (what the coordinator does with a submission):
     * a name without an attached file is refused, never looked up on disk. */
    fb_campaign_t *c = NULL;
    text = xasprintf("%s    topology: fabric.topo\n", stage);
    assert_int_equal(fb_campaign_parse(text, strlen(text), "sub.yaml", &c, &err), 0);
    assert_null(c->stages[0].topology);
    const char *names[2] = {NULL, NULL};
    assert_int_equal(fb_campaign_file_names(c, names, 2), 1);
    assert_string_equal(names[0], "fabric.topo");
    assert_int_equal(fb_campaign_attach_files(c, NULL, 0, &err), -EINVAL);
    assert_string_equal(err, "sub.yaml:7: stages[0].topology: 'fabric.topo' was not attached to "
                             "the campaign; expected the topology file's content with it "
                             "(fleetburn run sends the files a campaign names; the coordinator "
                             "opens no path it is sent)");
    free(err);
    fb_campaign_file_t other = {"other.topo", fabric, strlen(fabric)};
    assert_int_equal(fb_campaign_attach_files(c, &other, 1, &err), -EINVAL);
    assert_string_equal(err,
                        "sub.yaml: the file 'other.topo' is attached but the campaign does "
                        "not name it; expected only the files its stages name (topology, routes)");
    free(err);
    fb_campaign_file_t twice[2] = {{"fabric.topo", fabric, strlen(fabric)},
                                   {"fabric.topo", fabric, strlen(fabric)}};
    assert_int_equal(fb_campaign_attach_files(c, twice, 2, &err), -EINVAL);
    assert_non_null(strstr(err, "'fabric.topo' is attached twice"));
    free(err);
    fb_campaign_file_t nul = {"fabric.topo", "leaf01: n1\0x", 12};
    assert_int_equal(fb_campaign_attach_files(c, &nul, 1, &err), -EINVAL);
    assert_non_null(strstr(err, "holds a NUL byte"));
    free(err);
    assert_int_equal(fb_campaign_attach_files(c, twice, 1, &err), 0);
    assert_null(err);
    assert_int_equal(fb_topology_n_nodes(c->stages[0].topology), 4);
    assert_int_equal(fb_campaign_attach_files(c, NULL, 0, NULL), 0); /* attached once */
    fb_campaign_destroy(&c);
    free(text);

    /* Two stages naming one file: one name, one attachment. */
    text = xasprintf("%s    topology: fabric.topo\n  - {name: b, workload: netbw, scope: pairs, "
                     "pairing: topology, topology: fabric.topo}\n",
                     stage);
    assert_int_equal(fb_campaign_parse(text, strlen(text), "two.yaml", &c, &err), 0);
    assert_int_equal(fb_campaign_file_names(c, NULL, 0), 1);
    assert_int_equal(fb_campaign_attach_files(c, twice, 1, &err), 0);
    assert_non_null(c->stages[1].topology);
    fb_campaign_destroy(&c);
    free(text);

    /* An absolute name is read as it is. */
    text = xasprintf("%s    topology: %s\n", stage, FB_FIXTURES "/topology/fabric-2s4l16n.topo");
    char *abs_campaign = s_write(dir, "abs.yaml", text);
    assert_int_equal(campaign_file_read(abs_campaign, &cf, &err), 0);
    assert_int_equal(fb_topology_n_nodes(cf->campaign->stages[0].topology), 16);
    campaign_file_destroy(&cf);
    free(text);

    /* A topology that does not parse: its own line-numbered error inside the campaign's, quoting
     * the offending word only. */
    char *bad = s_write(dir, "bad.topo", "leaf01: n[1-2]\nleaf02 n3 and the rest of the line\n");
    text = xasprintf("%s    topology: bad.topo\n", stage);
    char *bad_campaign = s_write(dir, "bad.yaml", text);
    assert_int_equal(campaign_file_read(bad_campaign, &cf, &err), -EINVAL);
    assert_null(cf);
    char *want = xasprintf("%s:7: stages[0].topology: cannot load 'bad.topo': line 2: no ':' "
                           "after 'leaf02'; expected 'switch: members'; expected a topology file "
                           "(lines 'leaf01: node[01-04]') or ibnetdiscover output",
                           bad_campaign);
    assert_string_equal(err, want);
    free(want);
    free(err);
    free(text);

    /* A secret-looking line: the error names a character, not the text. */
    char *secret =
        s_write(dir, "secret.topo", "root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\n");
    text = xasprintf("%s    topology: secret.topo\n", stage);
    char *secret_campaign = s_write(dir, "secret.yaml", text);
    assert_int_equal(campaign_file_read(secret_campaign, &cf, &err), -EINVAL);
    assert_null(strstr(err, "saltsalt"));
    assert_null(strstr(err, "19000"));
    assert_non_null(strstr(err, "line 1: root: a member holds the character '$'"));
    free(err);
    free(text);

    /* Not a regular file: a FIFO (which would block a reader) and /dev/zero (endless) are
     * refused at once, naming the kind of file. */
    char *fifo = xasprintf("%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    text = xasprintf("%s    topology: fifo\n", stage);
    char *fifo_campaign = s_write(dir, "fifo.yaml", text);
    assert_int_equal(campaign_file_read(fifo_campaign, &cf, &err), -EINVAL);
    want = xasprintf("%s:7: stages[0].topology: cannot load fifo: %s: not a regular file (a "
                     "FIFO); expected a topology file (lines 'leaf01: node[01-04]') or "
                     "ibnetdiscover output",
                     fifo_campaign, fifo);
    assert_string_equal(err, want);
    free(want);
    free(err);
    free(text);
    text = xasprintf("%s    topology: /dev/zero\n", stage);
    char *zero_campaign = s_write(dir, "zero.yaml", text);
    assert_int_equal(campaign_file_read(zero_campaign, &cf, &err), -EINVAL);
    assert_non_null(strstr(err, "/dev/zero: not a regular file (a character device)"));
    free(err);
    free(text);
    text = xasprintf("%s    topology: missing.topo\n", stage);
    char *missing_campaign = s_write(dir, "missing.yaml", text);
    assert_int_equal(campaign_file_read(missing_campaign, &cf, &err), -ENOENT);
    assert_non_null(strstr(err, "stages[0].topology: cannot load missing.topo: "));
    assert_non_null(strstr(err, "missing.topo: cannot read: No such file or directory"));
    free(err);
    free(text);

    const char *files[] = {"bad.topo", "bad.yaml",  "secret.topo", "secret.yaml",
                           "fifo",     "fifo.yaml", "zero.yaml",   "missing.yaml",
                           "abs.yaml", "c.yaml",    "fabric.topo"};
    for (size_t i = 0; i < FB_ARRAY_LEN(files); i++) {
        char *p = xasprintf("%s/%s", dir, files[i]);
        unlink(p);
        free(p);
    }
    rmdir(dir);
    free(bad);
    free(bad_campaign);
    free(secret);
    free(secret_campaign);
    free(fifo);
    free(fifo_campaign);
    free(zero_campaign);
    free(missing_campaign);
    free(abs_campaign);
    free(topo);
    free(campaign);
}

/* Node lists are checked, not expanded, when a campaign is parsed: 200 stages that name a million
 * nodes each parse at once (libFuzzer found campaigns of 156 bytes that took seconds, each stage
 * another million names: tests/fuzz/corpus/campaign). Rails, which a stage keeps: at most 64. */
static void test_hostlist_effort(void **state)
{
    (void)state;
    size_t cap = 200 * 96 + 128, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "name: x\nnodes: a[1-1000]b[1-1000]\nstages:\n");
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "  - {name: s%d, workload: memtest, nodes: 'n[1-1000]m[1-1000]'}\n",
                                i);
    fb_campaign_t *c = s_parse_ok(text);
    assert_int_equal(c->n_stages, 200);
    fb_campaign_destroy(&c);
    free(text);
    s_expect_error(
        "name: x\nstages:\n  - {name: r, workload: rdmabw, scope: pairs, on_fail: bisect,\n"
        "     rails: 'mlx5_[0-64]'}\n",
        "t.yaml:4: stages[0].rails: 'mlx5_[0-64]' names 65 rails; expected at most 64");
    c = s_parse_ok(
        "name: x\nstages:\n  - {name: r, workload: rdmabw, scope: pairs, on_fail: bisect,\n"
        "     rails: 'mlx5_[0-63]'}\n");
    assert_int_equal(c->stages[0].n_rails, 64);
    fb_campaign_destroy(&c);
}

/* allreduce's mpirun, mpirun_args and rsh_agent are site settings of the agent now: a campaign
 * that still sets one is refused, and the message says where the setting went. */
static void test_site_settings_refused(void **state)
{
    (void)state;
    const char *head = "name: x\nstages:\n  - {name: a, workload: sleep}\n"
                       "  - {name: b, workload: sleep}\n  - name: ar\n    workload: allreduce\n";
    char *t = xasprintf("%s    params: {max_size: 4KiB, mpirun: /tmp/evil}\n", head);
    fb_campaign_t *c = (fb_campaign_t *)1;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(t, strlen(t), "t.yaml", &c, &err), -EINVAL);
    assert_null(c);
    assert_string_equal(err, "t.yaml:7: stages[2].params.mpirun: not a campaign parameter any "
                             "more: the mpirun program is a site setting (mpirun = ... in "
                             "/etc/fleetburn/agent.conf); expected it removed from the "
                             "campaign");
    free(err);
    free(t);
    t = xasprintf("%s    params:\n      mpirun_args: --mca plm_rsh_agent /tmp/evil\n", head);
    s_expect_error(t, "t.yaml:8: stages[2].params.mpirun_args: not a campaign parameter any more: "
                      "the argument list of mpirun is a site setting");
    free(t);
    t = xasprintf("%s    params: {rsh_agent: /tmp/evil}\n", head);
    s_expect_error(t, "t.yaml:7: stages[2].params.rsh_agent: not a campaign parameter any more: "
                      "the remote shell mpirun starts its daemons with is a site setting "
                      "(rsh_agent = ... in /etc/fleetburn/agent.conf)");
    free(t);
    /* Other workloads never had them: plainly unknown there. */
    s_expect_error("name: x\nstages:\n  - {name: a, workload: sleep, params: {mpirun: x}}\n",
                   "t.yaml:3: stages[0].params.mpirun: unknown parameter for workload sleep");
    const fb_workload_spec_t *w = fb_workload_find("allreduce");
    assert_null(fb_workload_param(w, "mpirun"));
    assert_null(fb_workload_param(w, "mpirun_args"));
    assert_null(fb_workload_param(w, "rsh_agent"));
    assert_null(fb_workload_site_setting(w, "launcher"));
    assert_null(fb_workload_site_setting(fb_workload_find("sleep"), "mpirun"));
}

/* The YAML limits: nesting depth, alias expansion, size. A megabyte of nesting is refused in
 * well under a second (libyaml alone spent minutes on it); the bound asserted is generous. */
static void test_yaml_limits(void **state)
{
    (void)state;
    /* 32 levels are fine, 33 are not. */
    char *ok = xstrdup("name: x\nstages:\n  - {name: a, workload: sleep}\nnodes: ");
    char *deep = NULL;
    for (int depth = 31; depth <= 32; depth++) {
        size_t n = strlen(ok);
        char *t = xmalloc(n + 2 * (size_t)depth + 2);
        memcpy(t, ok, n);
        memset(t + n, '[', (size_t)depth);
        memset(t + n + depth, ']', (size_t)depth);
        t[n + 2 * (size_t)depth] = '\n';
        t[n + 2 * (size_t)depth + 1] = '\0';
        if (depth == 31) {
            /* 31 lists in the top mapping: 32 levels; refused for what it is, not its depth */
            fb_campaign_t *c = NULL;
            char *err = NULL;
            assert_int_equal(fb_campaign_parse(t, strlen(t), "t.yaml", &c, &err), -EINVAL);
            assert_null(strstr(err, "nested"));
            free(err);
            free(t);
        } else {
            deep = t;
        }
    }
    s_expect_error(deep, "t.yaml:4: YAML nesting: mappings and lists nested more than 32 levels "
                         "deep; expected a campaign file of a few levels");
    free(deep);
    free(ok);

    /* A megabyte of '[' then ']', and of nested flow mappings and block lists. */
    size_t half = 500000;
    char *flat = xmalloc(2 * half + 8);
    memcpy(flat, "a: ", 3);
    memset(flat + 3, '[', half);
    memset(flat + 3 + half, ']', half);
    flat[3 + 2 * half] = '\0';
    double t0 = fb_mono_s();
    s_expect_error(flat, "t.yaml:1: YAML nesting: mappings and lists nested more than 32 levels "
                         "deep");
    char *maps = xmalloc(1 << 20);
    size_t o = 0;
    while (o + 8 < (1u << 20) / 2) {
        memcpy(maps + o, "{a: ", 4);
        o += 4;
    }
    maps[o] = '\0';
    s_expect_error(maps, "t.yaml:1: YAML nesting: ");
    for (o = 0; o + 3 < (1u << 20); o += 2)
        memcpy(maps + o, "- ", 2);
    memcpy(maps + o, "x", 2);
    s_expect_error(maps, "t.yaml:1: YAML nesting: ");
    double took = fb_mono_s() - t0;
    if (took > 5.0)
        fail_msg("three nested megabytes took %.1f s to refuse", took);
    free(maps);
    free(flat);

    /* Aliases that expand beyond the limit ("billion laughs"). */
    char *bomb = xstrdup("a0: &a0 [aaaaaaaaaaaaaaaa, aaaaaaaaaaaaaaaa, aaaaaaaaaaaaaaaa]\n");
    for (int i = 1; i < 40; i++) {
        char *next = xasprintf("%sa%d: &a%d [*a%d, *a%d, *a%d, *a%d]\n", bomb, i, i, i - 1, i - 1,
                               i - 1, i - 1);
        free(bomb);
        bomb = next;
    }
    s_expect_error(bomb, "t.yaml:");
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_campaign_parse(bomb, strlen(bomb), "t.yaml", &c, &err), -EINVAL);
    assert_non_null(strstr(err, "YAML aliases: the document expands to more than 16777216 bytes"));
    free(err);
    free(bomb);
    /* A few aliases are fine. */
    c = s_parse_ok("name: x\nstages:\n  - {name: a, workload: sleep, params: &p {duration: 2s}}\n"
                   "  - {name: b, workload: sleep, params: *p}\n");
    assert_string_equal(fb_stage_param(&c->stages[1], "duration"), "2s");
    fb_campaign_destroy(&c);

    /* The size limit. */
    char *big = xmalloc(FB_CAMPAIGN_MAX_BYTES + 2);
    memset(big, '#', FB_CAMPAIGN_MAX_BYTES + 1);
    big[FB_CAMPAIGN_MAX_BYTES + 1] = '\0';
    assert_int_equal(fb_campaign_parse(big, FB_CAMPAIGN_MAX_BYTES + 1, "big.yaml", &c, &err),
                     -EFBIG);
    assert_string_equal(err, "big.yaml:1: (top level): larger than 16777216 bytes; expected a "
                             "campaign file of at most 16777216 bytes");
    free(err);
    free(big);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),       cmocka_unit_test(test_defaults_and_all),
        cmocka_unit_test(test_fixture_errors),  cmocka_unit_test(test_inline_errors),
        cmocka_unit_test(test_workload_schema), cmocka_unit_test(test_robustness),
        cmocka_unit_test(test_scope_keys),      cmocka_unit_test(test_scope_errors),
        cmocka_unit_test(test_bisect_keys),     cmocka_unit_test(test_topology_files),
        cmocka_unit_test(test_hostlist_effort), cmocka_unit_test(test_site_settings_refused),
        cmocka_unit_test(test_yaml_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
