/* SPDX-License-Identifier: Apache-2.0 */
/* Endpoints as operators write them, made into ZeroMQ endpoints (endpoint.h): `coord:7755`
 * means tcp://coord:7755 rather than a ZeroMQ "protocol not supported". */
#include "endpoint.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_EXPECTED "expected tcp://HOST:PORT, HOST:PORT or HOST (port 7755)"

static const char *const s_transports[] = {"tcp://", "ipc://", "inproc://", NULL};

/* A host name, an IPv4 address or `*`; an IPv6 address only in brackets. */
static bool s_host_ok(const char *host, size_t len)
{
    if (len == 0 || len > 255)
        return false;
    if (host[0] == '[')
        return len > 2 && host[len - 1] == ']' &&
               strspn(host + 1, "0123456789abcdefABCDEF:.%"
                                "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ_-") >= len - 2; /* %zone */
    if (len == 1 && host[0] == '*')
        return true;
    size_t ok = strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_");
    return ok >= len;
}

static bool s_port_ok(const char *port)
{
    if (!strcmp(port, "*"))
        return true;
    size_t n = strspn(port, "0123456789");
    if (n == 0 || n > 5 || port[n])
        return false;
    long v = strtol(port, NULL, 10);
    return v >= 1 && v <= 65535;
}

int fb_endpoint_normalize(const char *text, char *out, size_t outlen, char *err, size_t errlen)
{
    char shown[128];
    fb_show_value(text ? text : "", shown, sizeof shown);
    if (!text || !*text) {
        snprintf(err, errlen, "an empty endpoint; %s", S_EXPECTED);
        return -EINVAL;
    }
    for (size_t i = 0; s_transports[i]; i++)
        if (!strncmp(text, s_transports[i], strlen(s_transports[i]))) {
            if (strlen(text) >= outlen) {
                snprintf(err, errlen, "'%s' is too long; %s", shown, S_EXPECTED);
                return -EINVAL;
            }
            fb_strlcpy(out, text, outlen);
            return 0;
        }
    if (strstr(text, "://")) {
        snprintf(err, errlen, "'%s': unknown transport; %s (or ipc://PATH)", shown, S_EXPECTED);
        return -EINVAL;
    }
    /* HOST:PORT splits at the last colon, after a bracketed IPv6 address if there is one. */
    const char *bracket = text[0] == '[' ? strchr(text, ']') : NULL;
    const char *colon = strrchr(bracket ? bracket : text, ':');
    size_t host_len = colon ? (size_t)(colon - text) : strlen(text);
    if (text[0] != '[' && colon && memchr(text, ':', host_len)) {
        snprintf(err, errlen, "'%s': an IPv6 address goes in brackets, e.g. [::1]:7755; %s",
                 shown, S_EXPECTED);
        return -EINVAL;
    }
    if (!s_host_ok(text, host_len)) {
        snprintf(err, errlen, "'%s' is not a host; %s", shown, S_EXPECTED);
        return -EINVAL;
    }
    if (colon && !s_port_ok(colon + 1)) {
        snprintf(err, errlen, "'%s': '%s' is not a port from 1 to 65535; %s", shown,
                 fb_show_value(colon + 1, (char[64]){0}, 64), S_EXPECTED);
        return -EINVAL;
    }
    int n = colon ? snprintf(out, outlen, "tcp://%s", text)
                  : snprintf(out, outlen, "tcp://%s:%d", text, FB_DEFAULT_PORT);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "'%s' is too long; %s", shown, S_EXPECTED);
        return -EINVAL;
    }
    return 0;
}
