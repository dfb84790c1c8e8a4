/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes the exchange lines between a worker and its agent (common/exline.c): the input as a post
 * line (worker -> agent) and as a reply line (agent -> worker). What parses must format into a
 * line that parses to the same key, timeout and values, and a timeout must be the number that was
 * written. Also feeds the input to fb_log_sanitize, which every logged peer text goes through. */
#include "fuzz.h"

#include "common/exline.h"

#include <errno.h>
#include <stdbool.h>

FZ_INITIALIZE()

/* The decimal token that precedes the value in a post line: the second token after the key. */
static bool s_timeout_token_is(const char *line, uint64_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)value);
    const char *p = strncmp(line, "exchange ", 9) ? line : line + 9;
    p += strspn(p, " ");
    p += strcspn(p, " \n"); /* key */
    p += strspn(p, " ");
    size_t n = strcspn(p, " \n");
    while (n > 1 && *p == '0') /* leading zeros write the same number */
        p++, n--;
    return n == strlen(buf) && strncmp(p, buf, n) == 0;
}

static void s_post(const char *line)
{
    char *key = NULL;
    uint64_t timeout = 0;
    uint8_t *value = NULL;
    size_t len = 0;
    if (fb_exline_post_parse(line, &key, &timeout, &value, &len) != 0) {
        FZ_CHECK(key == NULL && value == NULL && len == 0);
        return;
    }
    FZ_CHECK(fb_exline_valid_key(key));
    FZ_CHECK(s_timeout_token_is(line, timeout));
    char *again = fb_exline_post_format(key, timeout, value, len);
    char *key2 = NULL;
    uint64_t timeout2 = 0;
    uint8_t *value2 = NULL;
    size_t len2 = 0;
    FZ_CHECK(fb_exline_post_parse(again, &key2, &timeout2, &value2, &len2) == 0);
    FZ_CHECK(strcmp(key, key2) == 0 && timeout == timeout2 && len == len2);
    FZ_CHECK(len == 0 || memcmp(value, value2, len) == 0);
    free(key);
    free(key2);
    free(value);
    free(value2);
    free(again);
}

static void s_reply(const char *line)
{
    char *key = NULL, *error = NULL;
    bool ok = false;
    fb_exline_blob_t *values = NULL;
    size_t n = 0;
    if (fb_exline_reply_parse(line, &key, &ok, &values, &n, &error) != 0) {
        FZ_CHECK(key == NULL && values == NULL && n == 0 && error == NULL);
        return;
    }
    FZ_CHECK(fb_exline_valid_key(key));
    char *again =
        ok ? fb_exline_reply_ok_format(key, values, n) : fb_exline_reply_error_format(key, error);
    char *key2 = NULL, *error2 = NULL;
    bool ok2 = !ok;
    fb_exline_blob_t *values2 = NULL;
    size_t n2 = 0;
    FZ_CHECK(fb_exline_reply_parse(again, &key2, &ok2, &values2, &n2, &error2) == 0);
    FZ_CHECK(strcmp(key, key2) == 0 && ok == ok2);
    if (ok) {
        FZ_CHECK(n == n2);
        for (size_t i = 0; i < n; i++)
            FZ_CHECK(values[i].len == values2[i].len &&
                     (values[i].len == 0 ||
                      memcmp(values[i].data, values2[i].data, values[i].len) == 0));
    }
    free(key);
    free(key2);
    free(error);
    free(error2);
    fb_exline_blobs_free(&values, n);
    fb_exline_blobs_free(&values2, n2);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = fz_cstr(data, size);
    s_post(line);
    s_reply(line);
    char out[256];
    size_t n = fb_log_sanitize(line, out, sizeof out);
    FZ_CHECK(n < sizeof out && strlen(out) == n);
    for (const char *p = out; *p; p++)
        FZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
    free(line);
    return 0;
}
