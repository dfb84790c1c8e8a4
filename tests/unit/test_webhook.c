/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of a campaign's webhook alert as the scheduler sees it (scheduler/webhook.h, actions.h):
 * the `actions.webhook` mapping with its defaults, every kind of mistake in it refused with its
 * exact one-line message (bad URLs, an unknown trigger, a bad retry list, unknown keys), the
 * URL's host and origin, the backoff schedule (5, 10, 20, 40, 80 minutes by default) and how an
 * attempt's HTTP answer is judged. */
#include "scheduler/actions.h"
#include "scheduler/campaign.h"
#include "scheduler/webhook.h"
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

/* A campaign of one stage whose `actions:` mapping is the text given (lines start at line 5). */
static int s_parse(const char *actions, fb_campaign_t **out, char **err)
{
    char *text = xasprintf("name: t\nstages:\n  - name: s\n    workload: sleep\n%s", actions);
    int rc = fb_campaign_parse(text, strlen(text), "t.yaml", out, err);
    free(text);
    return rc;
}

static const fb_webhook_t *s_hook(const fb_campaign_t *c)
{
    return c->actions.webhook;
}

static void test_defaults(void **state)
{
    (void)state;
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(
        s_parse("actions:\n  webhook:\n    url: https://hooks.example.com/x\n", &c, &err), 0);
    assert_null(err);
    const fb_webhook_t *w = s_hook(c);
    assert_non_null(w);
    assert_string_equal(w->url, "https://hooks.example.com/x");
    assert_int_equal(w->line, 7);
    assert_int_equal(w->on, FB_ALERT_BAD | FB_ALERT_REGRESSION | FB_ALERT_ERROR);
    assert_int_equal(w->timeout_ms, 30000);
    const uint64_t minutes[] = {5, 10, 20, 40, 80};
    assert_int_equal(w->n_retry, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(w->retry_ms[i], minutes[i] * 60000);
    fb_campaign_destroy(&c);

    /* No actions at all, and an empty mapping: nothing to do. */
    assert_int_equal(s_parse("", &c, &err), 0);
    assert_null(c->actions.webhook);
    fb_campaign_destroy(&c);
    assert_int_equal(s_parse("actions: {}\n", &c, &err), 0);
    assert_null(c->actions.webhook);
    assert_false(c->actions.has_slurm);
    fb_campaign_destroy(&c);
}

static void test_every_key(void **state)
{
    (void)state;
    fb_campaign_t *c = NULL;
    char *err = NULL;
    int rc = s_parse("actions:\n"
                     "  webhook:\n"
                     "    url: http://10.1.2.3:8080/alerts?token=abc\n"
                     "    on: [bad, error]\n"
                     "    retry: [1s, 2s, 90m]\n"
                     "    timeout: 5s\n",
                     &c, &err);
    if (rc)
        fail_msg("%s", err);
    const fb_webhook_t *w = s_hook(c);
    assert_int_equal(w->on, FB_ALERT_BAD | FB_ALERT_ERROR);
    assert_int_equal(w->n_retry, 3);
    assert_int_equal(w->retry_ms[0], 1000);
    assert_int_equal(w->retry_ms[1], 2000);
    assert_int_equal(w->retry_ms[2], 5400000);
    assert_int_equal(w->timeout_ms, 5000);
    fb_campaign_destroy(&c);

    /* A single trigger as a scalar; retry: [] never retries. */
    rc = s_parse("actions:\n  webhook: {url: 'https://h.example/', on: regression, retry: []}\n",
                 &c, &err);
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(s_hook(c)->on, FB_ALERT_REGRESSION);
    assert_int_equal(s_hook(c)->n_retry, 0);
    fb_campaign_destroy(&c);
}

/* actions (from line 5 on) and the exact message it must give. */
static void s_expect(const char *actions, const char *expected)
{
    fb_campaign_t *c = (fb_campaign_t *)1;
    char *err = NULL;
    assert_int_equal(s_parse(actions, &c, &err), -EINVAL);
    assert_null(c);
    assert_non_null(err);
    if (strcmp(err, expected))
        fail_msg("\n got      '%s'\n expected '%s'", err, expected);
    free(err);
}

#define S_URL_EXP "expected an http:// or https:// URL such as https://hooks.example.com/fleetburn"
#define S_HOOK(line) "actions:\n  webhook:\n    " line "\n"

static void test_bad_urls(void **state)
{
    (void)state;
    s_expect(S_HOOK("url: ftp://hooks.example.com/x"),
             "t.yaml:7: actions.webhook.url: 'ftp://hooks.example.com/x': not an http:// or "
             "https:// URL; " S_URL_EXP);
    s_expect(S_HOOK("url: file:///etc/passwd"),
             "t.yaml:7: actions.webhook.url: 'file:///etc/passwd': not an http:// or https:// "
             "URL; " S_URL_EXP);
    s_expect(S_HOOK("url: hooks.example.com/x"),
             "t.yaml:7: actions.webhook.url: 'hooks.example.com/x': not an http:// or https:// "
             "URL; " S_URL_EXP);
    s_expect(S_HOOK("url: http:///x"),
             "t.yaml:7: actions.webhook.url: 'http:///x': no host; " S_URL_EXP);
    s_expect(S_HOOK("url: https://user:secret@hooks.example.com/x"),
             "t.yaml:7: actions.webhook.url: 'https://user:secret@hooks.example.com/x': "
             "user:password@ in a URL is refused (it would be written wherever the URL is); put a "
             "token in the path or the query; " S_URL_EXP);
    s_expect(S_HOOK("url: 'http://hooks.example.com/a b'"),
             "t.yaml:7: actions.webhook.url: 'http://hooks.example.com/a b': a blank, a control "
             "character or a non-ASCII byte at byte 27 (write a host in its ASCII form and escape "
             "the rest as %XX); " S_URL_EXP);
    s_expect(S_HOOK("url: 'http://hooks.example.com/#frag'"),
             "t.yaml:7: actions.webhook.url: 'http://hooks.example.com/#frag': a #fragment is "
             "never sent to the server; remove it; " S_URL_EXP);
    s_expect(S_HOOK("url: 'http://hooks.example.com:0/'"),
             "t.yaml:7: actions.webhook.url: 'http://hooks.example.com:0/': the port must be a "
             "number from 1 to 65535; " S_URL_EXP);
    s_expect(S_HOOK("url: 'http://hooks.example.com:70000/'"),
             "t.yaml:7: actions.webhook.url: 'http://hooks.example.com:70000/': the port must be "
             "a number from 1 to 65535; " S_URL_EXP);
    s_expect(S_HOOK("url: 'http://hooks.exa$mple.com/'"),
             "t.yaml:7: actions.webhook.url: 'http://hooks.exa$mple.com/': '$' in the host "
             "name; " S_URL_EXP);
    s_expect(
        S_HOOK("url: 'http://[fd00::g]/'"),
        "t.yaml:7: actions.webhook.url: 'http://[fd00::g]/': 'g' in an IPv6 address; " S_URL_EXP);
    s_expect(S_HOOK("url: [http://a.example/]"),
             "t.yaml:7: actions.webhook.url: is a list; " S_URL_EXP);
    s_expect("actions:\n  webhook:\n    on: [bad]\n",
             "t.yaml:7: actions.webhook.url: missing; " S_URL_EXP);

    char *long_url = xmalloc(3000);
    memset(long_url, 'a', 2999);
    long_url[2999] = '\0';
    memcpy(long_url, "http://h.example/", 17);
    char *actions = xasprintf(S_HOOK("url: %s"), long_url);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(s_parse(actions, &c, &err), -EINVAL);
    assert_non_null(strstr(err, "actions.webhook.url: 'http://h.example/aaa"));
    assert_non_null(strstr(err, "': longer than 2048 bytes; " S_URL_EXP));
    free(err);
    free(actions);
    free(long_url);
}

#define S_ON_EXP "expected bad, regression or error, or a list of them such as [bad, error]"
#define S_RETRY_EXP                                                                                \
    "expected a list of waits between attempts, each from 1s to 1d, e.g. [5m, 10m, 20m, 40m, "     \
    "80m], or [] for none"

static void test_bad_triggers_and_retries(void **state)
{
    (void)state;
    const char *url = "url: https://h.example/\n    ";
    char *a;
#define S_EXPECT_WITH(line, message)                                                               \
    a = xasprintf("actions:\n  webhook:\n    %s%s\n", url, line);                                  \
    s_expect(a, message);                                                                          \
    free(a)
    S_EXPECT_WITH("on: [bad, panic]",
                  "t.yaml:8: actions.webhook.on[1]: unknown trigger 'panic'; " S_ON_EXP);
    S_EXPECT_WITH("on: failure",
                  "t.yaml:8: actions.webhook.on: unknown trigger 'failure'; " S_ON_EXP);
    S_EXPECT_WITH("on: [bad, bad]",
                  "t.yaml:8: actions.webhook.on[1]: 'bad' given twice; expected each trigger once");
    S_EXPECT_WITH("on: []", "t.yaml:8: actions.webhook.on: is an empty list (nothing would be "
                            "sent); " S_ON_EXP);
    S_EXPECT_WITH("retry: 5m", "t.yaml:8: actions.webhook.retry: is a single value; " S_RETRY_EXP);
    S_EXPECT_WITH("retry:", "t.yaml:8: actions.webhook.retry: is empty; " S_RETRY_EXP);
    S_EXPECT_WITH("retry: {a: 1}", "t.yaml:8: actions.webhook.retry: is a mapping; " S_RETRY_EXP);
    S_EXPECT_WITH("retry: [5m, soon]",
                  "t.yaml:8: actions.webhook.retry[1]: 'soon' is not a duration; " S_RETRY_EXP);
    S_EXPECT_WITH("retry: [0s]",
                  "t.yaml:8: actions.webhook.retry[0]: '0s' is out of range; " S_RETRY_EXP);
    S_EXPECT_WITH("retry: [500ms]",
                  "t.yaml:8: actions.webhook.retry[0]: '500ms' is out of range; " S_RETRY_EXP);
    S_EXPECT_WITH("retry: [1m, 2d]",
                  "t.yaml:8: actions.webhook.retry[1]: '2d' is out of range; " S_RETRY_EXP);
    S_EXPECT_WITH("retry: [[1m]]", "t.yaml:8: actions.webhook.retry[0]: is a list; " S_RETRY_EXP);
    S_EXPECT_WITH("retry: [1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s]",
                  "t.yaml:8: actions.webhook.retry: 21 waits are more than 20; " S_RETRY_EXP);
    S_EXPECT_WITH("timeout: 0s", "t.yaml:8: actions.webhook.timeout: '0s' is out of range; "
                                 "expected a duration from 1s to 5m, e.g. 30s");
    S_EXPECT_WITH("timeout: 1h", "t.yaml:8: actions.webhook.timeout: '1h' is out of range; "
                                 "expected a duration from 1s to 5m, e.g. 30s");
    S_EXPECT_WITH("retries: [1m]", "t.yaml:8: actions.webhook.retries: unknown key; expected one "
                                   "of url, on, retry, timeout");
    S_EXPECT_WITH("url: https://other.example/",
                  "t.yaml:8: actions.webhook.url: key given twice; expected each key once");
#undef S_EXPECT_WITH
}

static void test_bad_actions(void **state)
{
    (void)state;
    s_expect("actions: webhook\n",
             "t.yaml:5: actions: is a single value; expected a mapping with keys slurm, webhook");
    s_expect("actions:\n", "t.yaml:5: actions: is empty; expected a mapping with keys slurm, webhook");
    s_expect("actions:\n  pager: {url: https://h.example/}\n",
             "t.yaml:6: actions.pager: unknown action; expected one of slurm, webhook");
    s_expect("actions:\n  webhook:\n",
             "t.yaml:6: actions.webhook: is empty; expected a mapping with url and optionally on, "
             "retry, timeout, e.g. {url: https://hooks.example.com/fleetburn, on: [bad]}");
    s_expect("actions:\n  webhook: {url: 'https://a.example/'}\n  webhook: {url: "
             "'https://b.example/'}\n",
             "t.yaml:7: actions.webhook: key given twice; expected each key once");
    s_expect("actions: {}\nactions: {}\n", "t.yaml:6: actions: key given twice; expected each key "
                                           "once");
}

static void test_url_parts(void **state)
{
    (void)state;
    char host[256], why[256];
    unsigned port = 1;
    assert_int_equal(fb_webhook_url_check("HTTPS://Hooks.Example.COM:8443/p?q=1", host, sizeof host,
                                          &port, why, sizeof why),
                     0);
    assert_string_equal(host, "hooks.example.com");
    assert_int_equal(port, 8443);
    assert_int_equal(
        fb_webhook_url_check("http://[FD00::1]/x", host, sizeof host, &port, why, sizeof why), 0);
    assert_string_equal(host, "[fd00::1]");
    assert_int_equal(port, 0);
    assert_int_equal(fb_webhook_url_check("http://10.1.2.3", host, sizeof host, &port, NULL, 0), 0);
    assert_string_equal(host, "10.1.2.3");
    /* A host that does not fit the caller's buffer is an error, never cut. */
    assert_int_equal(fb_webhook_url_check("http://abcdefgh/", host, 4, NULL, why, sizeof why),
                     -EINVAL);
    assert_string_equal(why, "the host is longer than 3 bytes");
    assert_int_equal(fb_webhook_url_check("", NULL, 0, NULL, why, sizeof why), -EINVAL);
    assert_string_equal(why, "empty");
    assert_int_equal(fb_webhook_url_check("http://h:/", NULL, 0, NULL, why, sizeof why), -EINVAL);

    /* The origin is what logs and the timeline show: never the path or the query. */
    char *o = fb_webhook_url_origin("https://hooks.slack.example/services/T0/B0/secret?x=1");
    assert_string_equal(o, "https://hooks.slack.example");
    free(o);
    o = fb_webhook_url_origin("http://127.0.0.1:8080?token=1");
    assert_string_equal(o, "http://127.0.0.1:8080");
    free(o);
    o = fb_webhook_url_origin("ftp://x/");
    assert_string_equal(o, "(an invalid URL)");
    free(o);
}

static void test_backoff(void **state)
{
    (void)state;
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(s_parse(S_HOOK("url: https://h.example/"), &c, &err), 0);
    const fb_webhook_t *w = s_hook(c);
    uint64_t delay = 0, total = 0;
    /* After failed attempt k (1-based) the wait is the k-th of the schedule; after the sixth
     * attempt the delivery is given up. */
    const uint64_t want[] = {5, 10, 20, 40, 80};
    for (unsigned k = 1; k <= 5; k++) {
        assert_true(fb_webhook_retry_delay(w->retry_ms, w->n_retry, k, &delay));
        assert_int_equal(delay, want[k - 1] * 60000);
        total += delay;
    }
    assert_int_equal(total, 155 * 60000); /* six attempts over 2h35m */
    assert_false(fb_webhook_retry_delay(w->retry_ms, w->n_retry, 6, &delay));
    assert_false(fb_webhook_retry_delay(w->retry_ms, w->n_retry, 0, &delay));
    fb_campaign_destroy(&c);

    assert_int_equal(s_parse(S_HOOK("url: https://h.example/\n    retry: [1s, 2s]"), &c, &err), 0);
    w = s_hook(c);
    assert_true(fb_webhook_retry_delay(w->retry_ms, w->n_retry, 1, &delay));
    assert_int_equal(delay, 1000);
    assert_true(fb_webhook_retry_delay(w->retry_ms, w->n_retry, 2, &delay));
    assert_int_equal(delay, 2000);
    assert_false(fb_webhook_retry_delay(w->retry_ms, w->n_retry, 3, &delay));
    fb_campaign_destroy(&c);

    assert_false(fb_webhook_retry_delay(NULL, 0, 1, &delay)); /* retry: [] */
}

static void test_judge(void **state)
{
    (void)state;
    const long delivered[] = {200, 201, 202, 204, 299};
    const long retried[] = {0, 408, 429, 500, 502, 503, 504, 599};
    const long refused[] = {100, 301, 302, 307, 308, 400, 401, 403, 404, 405, 410, 413, 422, 600};
    for (size_t i = 0; i < FB_ARRAY_LEN(delivered); i++)
        assert_int_equal(fb_webhook_judge(delivered[i]), FB_WEBHOOK_DELIVERED);
    for (size_t i = 0; i < FB_ARRAY_LEN(retried); i++)
        assert_int_equal(fb_webhook_judge(retried[i]), FB_WEBHOOK_RETRY);
    for (size_t i = 0; i < FB_ARRAY_LEN(refused); i++)
        if (fb_webhook_judge(refused[i]) != FB_WEBHOOK_PERMANENT)
            fail_msg("HTTP %ld is retried", refused[i]);
}

static void test_trigger_names(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(fb_alert_trigger_list(FB_ALERT_ALL, buf, sizeof buf),
                        "bad, regression, error");
    assert_string_equal(fb_alert_trigger_list(FB_ALERT_ERROR, buf, sizeof buf), "error");
    assert_string_equal(fb_alert_trigger_list(0, buf, sizeof buf), "");
    assert_string_equal(fb_alert_trigger_list(FB_ALERT_ALL, buf, 8), "bad");
    assert_string_equal(fb_alert_trigger_name(FB_ALERT_REGRESSION), "regression");
    assert_string_equal(fb_alert_trigger_name(3), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_every_key),
        cmocka_unit_test(test_bad_urls),      cmocka_unit_test(test_bad_triggers_and_retries),
        cmocka_unit_test(test_bad_actions),   cmocka_unit_test(test_url_parts),
        cmocka_unit_test(test_backoff),       cmocka_unit_test(test_judge),
        cmocka_unit_test(test_trigger_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
