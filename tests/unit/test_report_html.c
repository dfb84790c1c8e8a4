/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the HTML report and of /metrics on a real SQLite timeline: text from nodes escaped
 * (markup, quotes, control characters, invalid UTF-8), the p2p matrix heatmap, allreduce
 * bandwidth against size, memory errors counted by address range, a slow node listed as an
 * outlier, and the Prometheus exposition of hostile node names; the HTTP listener's address and
 * token rules. Chromium and Prometheus check the same output end to end in
 * tests/integration/test_report_html.sh and test_metrics_prometheus.sh. */
#include "http_serve.h"
#include "report.h"
#include "report_html_internal.h"
#include "store_fixture.h"
#include "store_telemetry.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char *s_html(store_fixture_t *fx, const char *campaign_id)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(report_write_html(fx->store, campaign_id, NULL, f), 0);
    fclose(f);
    return buf;
}

/* With FB_HTML_OUT_DIR set (tests/integration/test_report_html.sh), the page is also written
 * there as NAME.html, for headless Chromium to load: the charts only stored results can show
 * on a machine without GPUs (p2p matrices, GPU telemetry) are then checked in a browser too. */
static void s_dump(const char *name, const char *html)
{
    const char *dir = getenv("FB_HTML_OUT_DIR");
    if (!dir || !*dir)
        return;
    char *path = xasprintf("%s/%s.html", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(html, f);
    assert_int_equal(fclose(f), 0);
    free(path);
}

static size_t s_count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static bool s_valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80             ? 1
                   : (*p & 0xe0) == 0xc0 ? 2
                   : (*p & 0xf0) == 0xe0 ? 3
                   : (*p & 0xf8) == 0xf0 ? 4
                                         : 0;
        if (!n)
            return false;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return false;
        p += n;
    }
    return true;
}

static fb_result_t *s_result(const char *task_id, const char *node, fb_verdict_t verdict)
{
    fb_result_t *r = fb_result_new();
    char *id = xasprintf("%s@%s", task_id, node);
    fb_result_set_ids(r, id, task_id, node);
    free(id);
    r->verdict = verdict;
    r->started_ms = 1700000001000ull;
    r->finished_ms = 1700000061000ull;
    return r;
}

static void s_store(store_fixture_t *fx, fb_result_t *r)
{
    assert_int_equal(store_result_insert(fx->store, r, 1700000062000ull), 0);
    fb_result_destroy(&r);
}

/* ---- Escaping -------------------------------------------------------------------------------- */

static void test_escape(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report__html_text(
        f, "<script>\"a\" & 'b'</script>\x01\x1b[31m \xff\xc3\x28 caf\xc3\xa9 \xf0\x9f\x94\xa5");
    fclose(f);
    assert_string_equal(buf, "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
                             "\xef\xbf\xbd\xef\xbf\xbd[31m \xef\xbf\xbd\xef\xbf\xbd( caf\xc3\xa9 "
                             "\xf0\x9f\x94\xa5");
    free(buf);
}

static void test_hostile_campaign(void **state)
{
    store_fixture_t *fx = *state;
    const char *hostile = "<img src=x onerror=alert(1)>\"' & \x1b[31m \xff\xfe end";
    assert_int_equal(store_campaign_create(fx->store, "c1", hostile, hostile, "yaml", 5), 0);
    int64_t stage = 0;
    assert_int_equal(
        store_stage_create(fx->store, "c1", 0, hostile, "memtest", NULL, NULL, 0, &stage), 0);
    const char *nodes[] = {hostile};
    assert_int_equal(store_task_create(fx->store, "c1/0/x", "c1", stage, nodes, 1, 6), 0);
    fb_result_t *r = s_result("c1/0/x", hostile, FB_VERDICT_FAIL);
    fb_result_add_finding(r, hostile, "node", hostile);
    fb_result_set_error(r, "%s", hostile);
    s_store(fx, r);
    char *html = s_html(fx, "c1");
    assert_null(strstr(html, "<img"));
    assert_null(strstr(html, "\x1b"));
    assert_true(s_valid_utf8(html));
    assert_non_null(strstr(html, "&lt;img src=x onerror=alert(1)&gt;&quot;&#39; &amp;"));
    /* The diagnosis names the hostile part, escaped, in the table of parts to replace. */
    assert_non_null(strstr(html, "<td class=\"part\">&lt;img"));
    free(html);

    size_t len = 0;
    char err[256];
    char *metrics = http_metrics_render(fx->store, NULL, 0, &len, err, sizeof err);
    assert_non_null(metrics);
    /* Every sample line is name{label="escaped",...} value, in ASCII. */
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^[a-z_]+(\\{([a-z_]+=\"([^\"\\\\\n]|\\\\[\"\\\\n])*\",?)+\\})? "
                             "[-+0-9.eEInfNa]+$",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    char *save = NULL;
    size_t samples = 0;
    for (char *line = strtok_r(metrics, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        for (const unsigned char *p = (const unsigned char *)line; *p; p++)
            assert_true(*p >= 0x20 && *p < 0x7f);
        if (regexec(&re, line, 0, NULL, 0))
            fail_msg("not an exposition line: %s", line);
        samples++;
    }
    assert_true(samples > 10);
    regfree(&re);
    free(metrics);
}

/* ---- Workload charts ---------------------------------------------------------------------------
 */

static void test_charts(void **state)
{
    store_fixture_t *fx = *state;
    const uint64_t t0 = 1700000000000ull;
    assert_int_equal(store_campaign_create(fx->store, "c2", "charts", NULL, "yaml", t0), 0);
    int64_t p2p = 0, ar = 0, mem = 0;
    assert_int_equal(store_stage_create(fx->store, "c2", 0, "p2p", "p2p", NULL, NULL, 0, &p2p), 0);
    assert_int_equal(store_stage_create(fx->store, "c2", 1, "ar", "allreduce", NULL, NULL, 0, &ar),
                     0);
    assert_int_equal(store_stage_create(fx->store, "c2", 2, "mem", "memtest", NULL, NULL, 0, &mem),
                     0);
    const char *n1[] = {"n1"}, *both[] = {"n1", "n2"};
    assert_int_equal(store_task_create(fx->store, "c2/0/n1", "c2", p2p, n1, 1, t0 + 1000), 0);
    fb_result_t *r = s_result("c2/0/n1", "n1", FB_VERDICT_PASS);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (i != j) {
                char name[48];
                snprintf(name, sizeof name, "p2p.ce_uni.%d_%d", i, j);
                fb_result_add_metric(r, name, i == 2 && j == 3 ? 21.5 : 380.0 + i + j, "GB/s");
            }
    s_store(fx, r);
    assert_int_equal(store_task_create(fx->store, "c2/1/g0", "c2", ar, both, 2, t0 + 2000), 0);
    r = s_result("c2/1/g0", "n1", FB_VERDICT_PASS);
    for (unsigned long long b = 16; b <= 1048576; b *= 4) {
        char name[64];
        snprintf(name, sizeof name, "allreduce.%llu.busbw_gbs", b);
        fb_result_add_metric(r, name, log2((double)b), "GB/s");
    }
    s_store(fx, r);
    assert_int_equal(store_task_create(fx->store, "c2/2/n2", "c2", mem, &both[1], 1, t0 + 3000), 0);
    r = s_result("c2/2/n2", "n2", FB_VERDICT_FAIL);
    fb_result_add_finding(r, "n2", "memory",
                          "miscompare in walk (pass 1) at virt 0x7f00, phys "
                          "0x1870a2938, NUMA node 0: ...; DIMM A1");
    fb_result_add_finding(r, "n2", "memory",
                          "miscompare in walk (pass 1) at virt 0x7f08, phys "
                          "0x1870a2940, NUMA node 0: ...; DIMM A1");
    fb_result_add_finding(r, "n2", "memory",
                          "miscompare in walk (pass 1) at virt 0x7f10, phys "
                          "0x2a2126b08, NUMA node 0: ...; DIMM B2");
    fb_result_add_finding(r, "n2", "memory", "page phys 0x1870a2000: 2 miscompares itemised");
    s_store(fx, r);
    char *html = s_html(fx, "c2");
    s_dump("charts", html);
    /* p2p: one 4x4 matrix, 12 measured cells, the slow link's value written in its cell. */
    assert_non_null(strstr(html, "id=\"p2p-matrix\""));
    assert_non_null(strstr(html, "n1: copy engine GB/s, row: source, column: destination "
                                 "(slowest 21.5)"));
    assert_int_equal(s_count(html, "<rect class=\"cell\""), 12);
    assert_non_null(strstr(html, "gpu2 \xe2\x86\x92 gpu3: 21.5 GB/s"));
    /* allreduce: one curve of 9 sizes from 16 B to 1 MiB, labelled with its group. */
    const char *chart = strstr(html, "id=\"allreduce-chart\"");
    assert_non_null(chart);
    assert_int_equal(s_count(chart, "<circle class=\"pt"), 9);
    assert_non_null(strstr(chart, "n1,n2: 1 MiB, 20"));
    assert_non_null(strstr(chart, ">16 B</text>"));
    /* memory: two ranges of n2, the one with two miscompares first, with its DIMM. */
    const char *ranges = strstr(html, "id=\"memory-ranges\"");
    assert_non_null(ranges);
    const char *first = strstr(ranges, "phys 0x180000000&ndash;0x1bfffffff</td><td>A1</td><td "
                                       "class=\"num\">2</td>");
    const char *second = strstr(ranges, "phys 0x280000000&ndash;0x2bfffffff</td><td>B2</td><td "
                                        "class=\"num\">1</td>");
    assert_non_null(first);
    assert_non_null(second);
    assert_true(first < second);
    free(html);
}

/* ---- Fleet views ---------------------------------------------------------------------------- */

static void test_outlier(void **state)
{
    store_fixture_t *fx = *state;
    assert_int_equal(store_campaign_create(fx->store, "c3", "fleet", NULL, "yaml", 1000), 0);
    int64_t mem = 0;
    assert_int_equal(store_stage_create(fx->store, "c3", 0, "mem", "memtest", NULL, NULL, 0, &mem),
                     0);
    for (int i = 0; i < 12; i++) {
        char node[16], task[32];
        snprintf(node, sizeof node, "n%02d", i);
        snprintf(task, sizeof task, "c3/0/%s", node);
        const char *nodes[] = {node};
        assert_int_equal(store_task_create(fx->store, task, "c3", mem, nodes, 1, 1000), 0);
        fb_result_t *r = s_result(task, node, FB_VERDICT_PASS);
        fb_result_add_metric(r, "bandwidth_mbs", i == 7 ? 9000 : 20000 + 10 * i, "MB/s");
        s_store(fx, r);
    }
    char *html = s_html(fx, "c3");
    const char *outliers = strstr(html, "id=\"outliers\"");
    assert_non_null(outliers);
    const char *end = strstr(outliers, "</table>");
    assert_non_null(end);
    /* n07 is the one outlier, listed as such; the others are not. */
    assert_int_equal(s_count(outliers, "<td class=\"part\">") - s_count(end, "<td class=\"part\">"),
                     1);
    assert_non_null(strstr(outliers, "<td class=\"part\">n07</td><td><span class=\"badge v-out\">"
                                     "outlier</span></td><td class=\"num\">9000</td>"));
    assert_non_null(strstr(html, "class=\"v-out\"><title>n07 pass, 9000"));
    assert_int_equal(s_count(html, "width=\"8\" height=\"8\" class=\"v-pass\""), 11);
    free(html);
}

/* ---- Telemetry --------------------------------------------------------------------------------
 */

static void s_bucket(store_fixture_t *fx, const char *node, const char *dev, const char *q,
                     const char *unit, uint64_t t, double mean)
{
    store_telemetry_t row = {.campaign_id = "c4",
                             .node = node,
                             .device = dev,
                             .quantity = q,
                             .unit = unit,
                             .time_ms = t,
                             .span_ms = 10000,
                             .count = 10,
                             .min = mean - 1,
                             .max = mean + 1,
                             .mean = mean};
    assert_int_equal(store_telemetry_insert(fx->store, &row, 1), 0);
}

static void test_telemetry(void **state)
{
    store_fixture_t *fx = *state;
    uint64_t now = fb_now_ms(), t0 = now - 1200000; /* 10 minutes of buckets, ended 10 min ago */
    assert_int_equal(store_campaign_create(fx->store, "c4", "gpus", NULL, "yaml", t0), 0);
    int64_t burn = 0;
    assert_int_equal(
        store_stage_create(fx->store, "c4", 0, "burn", "gpuburn", NULL, NULL, 0, &burn), 0);
    const char *n1[] = {"n1"};
    assert_int_equal(store_task_create(fx->store, "c4/0/n1", "c4", burn, n1, 1, t0), 0);
    static const char *const q[][2] = {{"power_w", "W"}, {"power_limit_w", "W"},
                                       {"temp_c", "C"},  {"sm_clock_mhz", "MHz"},
                                       {"throttle", ""}, {"pcie_gen", ""}};
    for (int g = 0; g < 2; g++)
        for (size_t k = 0; k < FB_ARRAY_LEN(q); k++)
            for (int b = 0; b < 60; b++) {
                char dev[8];
                snprintf(dev, sizeof dev, "gpu%d", g);
                s_bucket(fx, "n1", dev, q[k][0], q[k][1], t0 + (uint64_t)b * 10000,
                         100 * (double)(k + 1) + g + b);
            }
    s_bucket(fx, "n1", "", "netbw.rx_gbps_1s", "Gb/s", t0, 95);
    char *html = s_html(fx, "c4");
    s_dump("telemetry", html);
    const char *sec = strstr(html, "<section id=\"telemetry\">");
    assert_non_null(sec);
    assert_non_null(strstr(sec, "id=\"telemetry-power\""));
    /* Power, temperature, clocks, throttling, and the node's own series: five charts, with a
     * line per GPU and quantity (pcie_gen is not plotted). */
    const char *end = strstr(sec, "</section>");
    size_t charts = 0, lines = 0;
    for (const char *p = sec; (p = strstr(p, "<figure class=\"chart\"")) && p < end; p++)
        charts++;
    for (const char *p = sec; (p = strstr(p, "<polyline")) && p < end; p++)
        lines++;
    assert_int_equal(charts, 5);
    assert_int_equal(lines, 2 * 5 + 1);
    assert_non_null(strstr(sec, "n1: GPU power"));
    assert_non_null(strstr(sec, ">gpu1 power_limit_w</text>"));
    assert_null(strstr(sec, "pcie_gen"));
    free(html);

    /* /metrics: the latest bucket of each series of the running campaign, when recent. */
    s_bucket(fx, "n1", "gpu0", "temp_c", "C", now - 30000, 71.5);
    s_bucket(fx, "n1", "gpu0", "mem_temp_c", "C", now - 300000, 80); /* 5 min old: not exported */
    size_t len = 0;
    char err[256];
    char *metrics = http_metrics_render(fx->store, NULL, 0, &len, err, sizeof err);
    assert_non_null(metrics);
    assert_non_null(strstr(metrics,
                           "\nfleetburn_telemetry{node=\"n1\",device=\"gpu0\",quantity=\"temp_c\","
                           "unit=\"C\"} 71.5\n"));
    assert_null(strstr(metrics, "mem_temp_c"));
    assert_null(strstr(metrics, "quantity=\"power_w\"")); /* its latest bucket is 10 min old */
    free(metrics);
}

/* ---- The listener's rules ----------------------------------------------------------------------
 */

static void test_http_rules(void **state)
{
    store_fixture_t *fx = *state;
    assert_true(http_addr_is_loopback("127.0.0.1:9108"));
    assert_true(http_addr_is_loopback("127.1.2.3:0"));
    assert_true(http_addr_is_loopback("localhost:9108"));
    assert_true(http_addr_is_loopback("[::1]:9108"));
    assert_false(http_addr_is_loopback("0.0.0.0:9108"));
    assert_false(http_addr_is_loopback("*:9108"));
    assert_false(http_addr_is_loopback("10.0.0.1:9108"));
    assert_false(http_addr_is_loopback("[::]:9108"));
    assert_false(http_addr_is_loopback("127.0.0.1"));
    assert_false(http_addr_is_loopback("example.com:80"));

    char *path = xasprintf("%s/token", fx->dir), *token = NULL, err[256];
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("  0123456789abcdef0123  \nsecond line\n", f);
    fclose(f);
    chmod(path, 0640);
    assert_int_equal(http_token_load(path, &token, err, sizeof err), -EPERM);
    assert_non_null(strstr(err, "chmod 600"));
    chmod(path, 0600);
    assert_int_equal(http_token_load(path, &token, err, sizeof err), 0);
    assert_string_equal(token, "0123456789abcdef0123");
    free(token);
    f = fopen(path, "w");
    fputs("short\n", f);
    fclose(f);
    assert_int_equal(http_token_load(path, &token, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "at least 16"));
    assert_int_equal(http_token_load("/nonexistent/token", &token, err, sizeof err), -ENOENT);
    free(path);

    http_serve_options_t opts = {.addr = "0.0.0.0:0", .db_path = fx->path};
    assert_null(http_serve_start(&opts, err, sizeof err));
    assert_non_null(strstr(err, "--http-token-file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        STORE_FIXTURE_TEST(test_hostile_campaign),
        STORE_FIXTURE_TEST(test_charts),
        STORE_FIXTURE_TEST(test_outlier),
        STORE_FIXTURE_TEST(test_telemetry),
        STORE_FIXTURE_TEST(test_http_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
