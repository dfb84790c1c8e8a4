/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the report formats for other tools (coordinator/report_formats.c): CSV quoting per
 * RFC 4180 (a field with a comma, a quote or a line break in double quotes, quotes doubled, CRLF
 * line ends) and JUnit escaping (markup in a finding escaped, control characters XML cannot hold
 * replaced), on a real store. */
#include "store_fixture.h"

#include "report.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char s_dir[64];
static char *s_path;

static store_t *s_store_with_result(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/fb-test-formats-XXXXXX");
    assert_non_null(mkdtemp(s_dir));
    s_path = xasprintf("%s/t.db", s_dir);
    store_t *st = NULL;
    assert_int_equal(store_open(s_path, &st, NULL), 0);
    assert_int_equal(store_campaign_create(st, "c1", "burn", NULL, NULL, 1000), 0);
    int64_t stage = 0;
    assert_int_equal(store_stage_create(st, "c1", 0, "gpu", "gpuburn", NULL, "continue", 0, &stage), 0);
    const char *nodes[] = {"n1"};
    assert_int_equal(store_task_create(st, "c1/0/n1", "c1", stage, nodes, 1, 1000), 0);
    store_fixture_result_t res = {
        .result_id = "c1/0/n1",
        .task_id = "c1/0/n1",
        .node = "n1",
        .verdict = FB_VERDICT_FAIL,
        .stored_ms = 2000,
        .metric = "gpu0.tflops",
        .value = 650.5,
        .unit = "a,\"b\"\nc",
        .part = "n1/gpu0",
        .kind = "gpu",
        .what = "gpu0 <slow> & \"hot\"\x01 at 91 C",
    };
    store_fixture_result(st, &res);
    return st;
}

static void s_cleanup(store_t **st)
{
    store_destroy(st);
    char *cmd = xasprintf("rm -rf %s", s_dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(s_path);
}

static char *s_render(store_t *st, int (*fn)(store_t *, const char *, FILE *))
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_int_equal(fn(st, "c1", mem), 0);
    fclose(mem);
    return text;
}

static void test_csv_quoting(void **state)
{
    (void)state;
    store_t *st = s_store_with_result();
    char *csv = s_render(st, report_write_csv);
    assert_string_equal(csv, "campaign,stage,workload,task,node,verdict,metric,value,unit\r\n"
                             "c1,gpu,gpuburn,c1/0/n1,n1,fail,gpu0.tflops,650.5,\"a,\"\"b\"\"\nc\"\r\n");
    free(csv);
    assert_int_equal(report_write_csv(st, "nope", stdout), -ENOENT);
    s_cleanup(&st);
}

static void test_junit_escaping(void **state)
{
    (void)state;
    store_t *st = s_store_with_result();
    char *xml = s_render(st, report_write_junit);
    assert_non_null(strstr(xml, "<testsuites name=\"burn c1\" tests=\"1\" failures=\"1\""));
    assert_non_null(
        strstr(xml, "<failure type=\"fail\" message=\"gpu0 &lt;slow&gt; &amp; &quot;hot&quot;? at 91 C\">"));
    assert_non_null(strstr(xml, "n1/gpu0 (gpu): gpu0 &lt;slow&gt; &amp; &quot;hot&quot;? at 91 C\n"));
    assert_null(strchr(xml, '\x01'));
    free(xml);
    s_cleanup(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_junit_escaping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
