/* SPDX-License-Identifier: Apache-2.0 */
/* A rank's member of the group (ar_rank.h): interface addresses first, because namespaces and
 * containers often share one host name; the host name next; the slot order last, because an
 * operator's mpirun_args may change the mapping. */
#include "ar_rank.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AR_RANK_MAX_LOCAL 64

/* The i-th comma-separated item of list into buf; false when there is no such item. */
static bool s_item(const char *list, size_t i, char *buf, size_t len)
{
    const char *p = list;
    for (size_t k = 0; p && k < i; k++) {
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    if (!p)
        return false;
    size_t n = strcspn(p, ",");
    snprintf(buf, len, "%.*s", (int)n, p);
    return true;
}

static size_t s_count(const char *list)
{
    if (!list || !*list)
        return 0;
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    return n;
}

/* The one member whose item satisfies match, or -1 when none or several do. */
static int s_unique(const char *list, size_t n, bool (*match)(const char *, const void *),
                    const void *arg)
{
    int found = -1;
    char item[256];
    for (size_t i = 0; i < n; i++) {
        if (!s_item(list, i, item, sizeof item) || !*item || !match(item, arg))
            continue;
        if (found >= 0)
            return -1;
        found = (int)i;
    }
    return found;
}

typedef struct {
    const char *const *addrs;
    size_t n;
} s_locals_t;

static bool s_is_local(const char *item, const void *arg)
{
    const s_locals_t *l = arg;
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(item, l->addrs[i]))
            return true;
    return false;
}

/* "node7" matches host names "node7" and "node7.cluster.example". */
static bool s_is_host(const char *item, const void *arg)
{
    const char *host = arg;
    size_t n = strlen(item);
    return !strncmp(host, item, n) && (host[n] == '\0' || host[n] == '.');
}

int ar_rank_pick_member(unsigned rank, const char *nodes, const char *addrs, const char *slots,
                        const char *const *local_addrs, size_t n_local, const char *hostname)
{
    size_t n = s_count(nodes);
    if (n == 1)
        return 0;
    if (n == 0)
        return -1;
    s_locals_t locals = {local_addrs, n_local};
    int m = addrs ? s_unique(addrs, n, s_is_local, &locals) : -1;
    if (m < 0 && hostname && *hostname) {
        m = addrs ? s_unique(addrs, n, s_is_host, hostname) : -1;
        if (m < 0)
            m = s_unique(nodes, n, s_is_host, hostname);
    }
    if (m >= 0)
        return m;
    unsigned long first = 0;
    char item[32];
    for (size_t i = 0; slots && i < n && s_item(slots, i, item, sizeof item); i++) {
        unsigned long k = strtoul(item, NULL, 10);
        if (rank < first + k)
            return (int)i;
        first += k;
    }
    return -1;
}

/* This host's numeric addresses (IPv4 and IPv6), as heap strings in out[]. */
static size_t s_local_addrs(char **out, size_t max)
{
    struct ifaddrs *ifs = NULL;
    size_t n = 0;
    if (getifaddrs(&ifs) != 0)
        return 0;
    for (struct ifaddrs *i = ifs; i && n < max; i = i->ifa_next) {
        char buf[INET6_ADDRSTRLEN] = "";
        if (!i->ifa_addr)
            continue;
        if (i->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf, sizeof buf);
        else if (i->ifa_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, buf, sizeof buf);
        if (*buf)
            out[n++] = xstrdup(buf);
    }
    freeifaddrs(ifs);
    return n;
}

void ar_rank_node(unsigned rank, char *node, size_t len)
{
    const char *nodes = getenv("FLEETBURN_AR_NODES");
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    char *locals[AR_RANK_MAX_LOCAL] = {0};
    size_t n_local = s_local_addrs(locals, AR_RANK_MAX_LOCAL);
    int m =
        ar_rank_pick_member(rank, nodes, getenv("FLEETBURN_AR_ADDRS"), getenv("FLEETBURN_AR_SLOTS"),
                            (const char *const *)locals, n_local, host);
    for (size_t i = 0; i < n_local; i++)
        free(locals[i]);
    if (m < 0 || !s_item(nodes, (size_t)m, node, len) || !*node)
        snprintf(node, len, "%s", *host ? host : "?");
}
