/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of common/hostlist: expansion (ranges, zero padding, products, duplicates, every
 * error class), compression, and round trips. When ClusterShell's nodeset is available (the
 * `nodeset` program on PATH, or the ClusterShell Python module; FB_NODESET overrides the command)
 * it serves as an oracle for expansion, for errors and for what compression writes. */
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

#include <cmocka.h>

/* Expands expr and compares with the space-separated expected list. */
static void s_expect(const char *expr, const char *expected)
{
    char err[256] = "", **names = NULL;
    size_t n = 0;
    int rc = fb_hostlist_expand(expr, &names, &n, err, sizeof err);
    if (rc)
        fail_msg("'%s': %s", expr, err);
    char *got = fb_strjoin(names, n, " ");
    if (strcmp(got, expected))
        fail_msg("'%s': got '%s', expected '%s'", expr, got, expected);
    free(got);
    fb_hostlist_free(names, n);
}

/* Expects an error whose message contains fragment. */
static void s_expect_error(const char *expr, const char *fragment)
{
    char err[256] = "", **names = (char **)1;
    size_t n = 99;
    int rc = fb_hostlist_expand(expr, &names, &n, err, sizeof err);
    if (rc != -EINVAL)
        fail_msg("'%s': expected -EINVAL, got %d", expr, rc);
    assert_null(names);
    assert_int_equal(n, 0);
    if (!strstr(err, fragment))
        fail_msg("'%s': message '%s' lacks '%s'", expr, err, fragment);
    assert_null(strchr(err, '\n'));
    /* fb_hostlist_check says the same */
    char check_err[256] = "";
    n = 99;
    assert_int_equal(fb_hostlist_check(expr, &n, check_err, sizeof check_err), -EINVAL);
    assert_int_equal(n, 0);
    assert_string_equal(check_err, err);
}

static void test_expand_basic(void **state)
{
    (void)state;
    s_expect("login", "login");
    s_expect("node[01-03]", "node01 node02 node03");
    s_expect("n[8-10]", "n8 n9 n10");
    s_expect("n[098-101]", "n098 n099 n100 n101");
    s_expect("n[00-02]", "n00 n01 n02");
    s_expect("n[0-2]", "n0 n1 n2");
    s_expect("node[01-03,05],gpu-a[1-2],login", "node01 node02 node03 node05 gpu-a1 gpu-a2 login");
    s_expect("n[5]", "n5");
    s_expect("n[007]", "n007");
    s_expect("[1-3]", "1 2 3");
    s_expect("n[1-2]-ib", "n1-ib n2-ib");
    s_expect("a_b.c-d", "a_b.c-d");
    s_expect("n[1-10/3]", "n1 n4 n7 n10");
    s_expect("n[01-10/4]", "n01 n05 n09");
    s_expect("n[3-3]", "n3");
}

static void test_expand_product_and_duplicates(void **state)
{
    (void)state;
    s_expect("r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2");
    s_expect("r[1,3]n[01-02]x", "r1n01x r1n02x r3n01x r3n02x");
    s_expect("a[1-2]b[1-2]c[1-2]", "a1b1c1 a1b1c2 a1b2c1 a1b2c2 a2b1c1 a2b1c2 a2b2c1 a2b2c2");
    s_expect("n[1-3],n2,n[2-4]", "n1 n2 n3 n4");
    s_expect("n[1,1-2]", "n1 n2");
    s_expect("b,a,b", "b a");
    /* whitespace separates like a comma, and is allowed inside brackets */
    s_expect("a, b  c\n d", "a b c d");
    s_expect("n[ 1-2 , 4 ]", "n1 n2 n4");
    s_expect("  n1  ", "n1");
}

static void test_expand_errors(void **state)
{
    (void)state;
    s_expect_error("", "empty hostlist");
    s_expect_error("   ", "empty hostlist");
    s_expect_error(NULL, "empty hostlist");
    s_expect_error("a,,b", "empty name");
    s_expect_error(",a", "empty name");
    s_expect_error("a,", "empty name");
    s_expect_error("node[01-16", "unbalanced '[' in 'node[01-16'");
    s_expect_error("node01-16]", "unbalanced ']' in 'node01-16]'");
    s_expect_error("n[1-2]]", "unbalanced ']'");
    s_expect_error("n[[1-2]]", "nested '['");
    s_expect_error("node[5-3]", "reversed range '5-3' in 'node[5-3]'");
    s_expect_error("n[]", "empty range in 'n[]'");
    s_expect_error("n[1,]", "empty range");
    s_expect_error("n[1-]", "bad range '1-' in 'n[1-]'");
    s_expect_error("n[-1]", "bad range '-1'");
    s_expect_error("n[a-b]", "bad range 'a-b'");
    s_expect_error("n[1-2-3]", "bad range");
    s_expect_error("n[1-10/0]", "bad step");
    s_expect_error("no$de1", "bad character '$' in 'no$de1'");
    s_expect_error("node/1", "bad character '/'");
    s_expect_error("n\x01", "bad character '\\x01'");
    s_expect_error("caf\xc3\xa9", "bad character '\\xc3'");
    s_expect_error("n[01-100]", "padding length mismatch in range '01-100'");
    s_expect_error("n[8-010]", "padding length mismatch");
    s_expect_error("n[1234567890123456789]", "number too long");
    s_expect_error("n[1-1000001]", "expands to more than 1000000 names");
    s_expect_error("a[1-1001]b[1-1000]", "more than 1000000");
    s_expect_error("a[1-600000],b[1-600000]", "'b[1-600000]' expands to more than 1000000");
    s_expect_error("n[0-999999999999999999]", "more than 1000000");
    /* a very long bad piece is shortened in the message */
    char big[400];
    memset(big, 'x', sizeof big);
    big[0] = '[';
    big[sizeof big - 1] = '\0';
    char err[128];
    char **names;
    size_t n;
    assert_int_equal(fb_hostlist_expand(big, &names, &n, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "unbalanced '['"));
    assert_int_equal(fb_hostlist_expand("n[", &names, &n, NULL, 0), -EINVAL);
}

static void test_expand_limit(void **state)
{
    (void)state;
    char **names;
    size_t n;
    char err[128];
    assert_int_equal(fb_hostlist_expand("n[1-1000000]", &names, &n, err, sizeof err), 0);
    assert_int_equal(n, 1000000);
    assert_string_equal(names[0], "n1");
    assert_string_equal(names[999999], "n1000000");
    fb_hostlist_free(names, n);
    /* duplicates count toward the limit: the work is bounded by what is written */
    assert_int_equal(fb_hostlist_expand("n[1-500000],n[1-500001]", &names, &n, err, sizeof err),
                     -EINVAL);
    fb_hostlist_free(NULL, 0);
}

/* fb_hostlist_check: the verdict of fb_hostlist_expand (errors: s_expect_error), the count before
 * duplicates are removed, and no names made, so a million is counted at once. The campaign and
 * topology parsers use it before they expand anything (libFuzzer found 156-byte campaigns that
 * took seconds to parse). */
static void test_check(void **state)
{
    (void)state;
    size_t n = 0;
    char err[128];
    assert_int_equal(fb_hostlist_check("node[01-16,20],gpu-a[1-4],login", &n, err, sizeof err), 0);
    assert_int_equal(n, 22);
    assert_int_equal(fb_hostlist_check("a,a,n[1-2],n2", &n, err, sizeof err), 0);
    assert_int_equal(n, 5);
    assert_int_equal(fb_hostlist_check("r[1-1000]n[1-1000]", &n, NULL, 0), 0);
    assert_int_equal(n, 1000000);
    assert_int_equal(fb_hostlist_check("n[1-2]", NULL, NULL, 0), 0);
}

static void s_expect_compress(const char *const *names, size_t n, const char *expected)
{
    char *got = fb_hostlist_compress(names, n);
    if (strcmp(got, expected))
        fail_msg("got '%s', expected '%s'", got, expected);
    free(got);
}

static void test_compress(void **state)
{
    (void)state;
    const char *a[] = {"node01", "node02", "node03", "node05", "gpu-a1", "gpu-a2"};
    s_expect_compress(a, 6, "node[01-03,05],gpu-a[1-2]");
    const char *b[] = {"n10", "n9", "n8", "login", "n9"};
    s_expect_compress(b, 5, "n[8-10],login");
    const char *c[] = {"n098", "n099", "n100", "n101"};
    s_expect_compress(c, 4, "n[098-101]");
    const char *d[] = {"n1", "n01", "n2", "n02"};
    s_expect_compress(d, 4, "n[1-2],n[01-02]");
    const char *e[] = {"n09", "n10", "n99", "n100", "n101"};
    s_expect_compress(e, 5, "n[09-10,99-101]");
    const char *e2[] = {"n09", "n10"};
    s_expect_compress(e2, 2, "n[09-10]");
    const char *e3[] = {"n098", "n099", "n100", "n1000"};
    s_expect_compress(e3, 4, "n[098-100,1000]");
    const char *e4[] = {"n8", "n09", "n10"};
    s_expect_compress(e4, 3, "n8,n[09-10]");
    const char *f[] = {"n5"};
    s_expect_compress(f, 1, "n5");
    const char *g[] = {"r1n1", "r1n2", "r2n1"};
    s_expect_compress(g, 3, "r1n[1-2],r2n1");
    const char *h[] = {"n1-ib", "n2-ib", "n1"};
    s_expect_compress(h, 3, "n[1-2]-ib,n1");
    const char *i[] = {"", "login", NULL, "login"};
    s_expect_compress(i, 4, "login");
    s_expect_compress(NULL, 0, "");
    const char *j[] = {"x12345678901234567890"};
    s_expect_compress(j, 1, "x12345678901234567890");
    const char *k[] = {"n0", "n1", "n00", "n01"};
    s_expect_compress(k, 4, "n[0-1],n[00-01]");
    /* a zero-padded low bound keeps its range within its digit count */
    char **names;
    size_t n;
    assert_int_equal(fb_hostlist_expand("n[09-99],n100,n[101-102]", &names, &n, NULL, 0), 0);
    s_expect_compress((const char *const *)names, n, "n[09-99,100-102]");
    fb_hostlist_free(names, n);
}

/* Expands, compresses and expands again; the sets must agree. */
static void s_round_trip(const char *expr)
{
    char **names, **again;
    size_t n, m;
    char err[256];
    assert_int_equal(fb_hostlist_expand(expr, &names, &n, err, sizeof err), 0);
    char *folded = fb_hostlist_compress((const char *const *)names, n);
    if (fb_hostlist_expand(folded, &again, &m, err, sizeof err))
        fail_msg("'%s' folded to '%s': %s", expr, folded, err);
    if (m != n)
        fail_msg("'%s' folded to '%s': %zu names, expected %zu", expr, folded, m, n);
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < m && !found; j++)
            found = !strcmp(names[i], again[j]);
        if (!found)
            fail_msg("'%s' folded to '%s' loses %s", expr, folded, names[i]);
    }
    free(folded);
    fb_hostlist_free(names, n);
    fb_hostlist_free(again, m);
}

static void test_round_trip(void **state)
{
    (void)state;
    s_round_trip("node[01-16,20],gpu-a[1-4],login");
    s_round_trip("n[098-101],n[1-5],n[001-003]");
    s_round_trip("n[08-12],n[7-11],n[0-3],n[00-03]");
    s_round_trip("r[1-3]n[01-04]-ib,r[1-3]x");
    s_round_trip("n[9-12],n[009-012],n[0099-0101]");
    /* random sets of numbered names, mixed padding */
    srand(12345);
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(rand() % 40) + 1;
        char **names = xcalloc(n, sizeof *names);
        for (size_t i = 0; i < n; i++) {
            int width = rand() % 4;
            int v = rand() % 1200;
            names[i] =
                xasprintf("%s%0*d%s", rand() % 3 ? "n" : "gpu", width, v, rand() % 5 ? "" : "-ib");
        }
        char *folded = fb_hostlist_compress((const char *const *)names, n);
        s_round_trip(folded);
        char **back;
        size_t m;
        char err[256];
        assert_int_equal(fb_hostlist_expand(folded, &back, &m, err, sizeof err), 0);
        for (size_t i = 0; i < n; i++) {
            bool found = false;
            for (size_t j = 0; j < m && !found; j++)
                found = !strcmp(names[i], back[j]);
            if (!found)
                fail_msg("'%s' loses %s", folded, names[i]);
        }
        fb_hostlist_free(back, m);
        free(folded);
        fb_hostlist_free(names, n);
    }
}

/* ---- ClusterShell as an oracle ---- */

static const char *s_oracle(void)
{
    static int probed;
    static char cmd[256];
    if (probed)
        return cmd[0] ? cmd : NULL;
    probed = 1;
    const char *env = getenv("FB_NODESET");
    if (env && *env) {
        fb_strlcpy(cmd, env, sizeof cmd);
    } else if (system("command -v nodeset >/dev/null 2>&1") == 0) {
        fb_strlcpy(cmd, "nodeset", sizeof cmd);
    } else {
        const char *pythons[] = {"python3", "/usr/bin/python3"};
        for (size_t i = 0; i < 2 && !cmd[0]; i++) {
            char probe[256];
            snprintf(probe, sizeof probe, "%s -c 'import ClusterShell.CLI.Nodeset' >/dev/null 2>&1",
                     pythons[i]);
            if (system(probe) == 0)
                snprintf(cmd, sizeof cmd, "%s -m ClusterShell.CLI.Nodeset", pythons[i]);
        }
    }
    return cmd[0] ? cmd : NULL;
}

/* Runs `nodeset -e expr`; returns its exit status and its names sorted in *out. */
static int s_nodeset_expand(const char *expr, char ***out, size_t *n_out)
{
    char *command = xasprintf("%s -e '%s' 2>/dev/null", s_oracle(), expr);
    FILE *p = popen(command, "r");
    free(command);
    assert_non_null(p);
    size_t n = 0, cap = 16;
    char **names = xcalloc(cap, sizeof *names);
    char word[512];
    while (fscanf(p, "%511s", word) == 1) {
        if (n == cap) {
            cap *= 2;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(word);
    }
    int status = pclose(p);
    *out = names;
    *n_out = n;
    return status;
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_oracle(void **state)
{
    (void)state;
    if (!s_oracle()) {
        print_message("nodeset (ClusterShell) not found: oracle comparisons skipped\n");
        skip();
    }
    static const char *const good[] = {
        "node[01-16,20],gpu-a[1-4],login",
        "n[8-10]",
        "n[098-101]",
        "n[00-10]",
        "r[1-2]n[1-2]",
        "r[1,3-4]n[01-03]-ib",
        "n[1-10/3]",
        "n[1-3],n2,n[2-4]",
        "a,b c",
        "n[ 1-2 ]",
        "[1-3]",
        "x[0-99]y[5-7]",
        "n[0001-0120]",
    };
    static const char *const bad[] = {
        "node[5-3]", "n[]", "n[01-100]", "n[8-010]", "n[1-", "n[1-]", "a,,b",
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(good); i++) {
        char **ours, **theirs, err[256];
        size_t n, m;
        assert_int_equal(fb_hostlist_expand(good[i], &ours, &n, err, sizeof err), 0);
        int status = s_nodeset_expand(good[i], &theirs, &m);
        if (status != 0)
            fail_msg("nodeset rejects '%s'", good[i]);
        qsort(ours, n, sizeof *ours, s_cmp_str);
        qsort(theirs, m, sizeof *theirs, s_cmp_str);
        if (n != m)
            fail_msg("'%s': %zu names, nodeset %zu", good[i], n, m);
        for (size_t k = 0; k < n; k++)
            if (strcmp(ours[k], theirs[k]))
                fail_msg("'%s': %s vs nodeset %s", good[i], ours[k], theirs[k]);
        /* what we fold, nodeset must read as the same set */
        char *folded = fb_hostlist_compress((const char *const *)ours, n);
        char **again;
        size_t a;
        assert_int_equal(s_nodeset_expand(folded, &again, &a), 0);
        qsort(again, a, sizeof *again, s_cmp_str);
        if (a != n)
            fail_msg("'%s' folded to '%s': nodeset reads %zu names, expected %zu", good[i], folded,
                     a, n);
        for (size_t k = 0; k < n; k++)
            if (strcmp(ours[k], again[k]))
                fail_msg("'%s' folded to '%s': %s vs nodeset %s", good[i], folded, ours[k],
                         again[k]);
        free(folded);
        fb_hostlist_free(again, a);
        fb_hostlist_free(ours, n);
        fb_hostlist_free(theirs, m);
    }
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++) {
        char **ours, **theirs, err[256];
        size_t n, m;
        assert_int_equal(fb_hostlist_expand(bad[i], &ours, &n, err, sizeof err), -EINVAL);
        int status = s_nodeset_expand(bad[i], &theirs, &m);
        if (status == 0)
            fail_msg("nodeset accepts '%s', we reject it: %s", bad[i], err);
        fb_hostlist_free(theirs, m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand_basic),  cmocka_unit_test(test_expand_product_and_duplicates),
        cmocka_unit_test(test_expand_errors), cmocka_unit_test(test_expand_limit),
        cmocka_unit_test(test_compress),      cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_oracle),        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
