/* SPDX-License-Identifier: Apache-2.0 */
/* TCP plumbing with deadlines for netbw: name resolution through getaddrinfo (so IPv4, IPv6 and
 * host names all work), non-blocking connect waited on with poll, and whole-buffer transfers
 * that give up at a deadline. Nothing here knows about workloads. */
#include "sock.h"

#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Milliseconds left until deadline_ms, as a poll timeout. */
static int s_left(uint64_t deadline_ms)
{
    uint64_t now = fb_mono_ms();
    if (now >= deadline_ms)
        return 0;
    uint64_t left = deadline_ms - now;
    return left > 1000000 ? 1000000 : (int)left;
}

/* Waits until fd has one of events, resuming an interrupted poll: 0 when it has, -ETIMEDOUT when
 * the deadline passed first, or -errno. */
static int s_poll_until(int fd, short events, uint64_t deadline_ms)
{
    for (;;) {
        struct pollfd pfd = {fd, events, 0};
        int pr = poll(&pfd, 1, s_left(deadline_ms));
        if (pr > 0)
            return 0;
        if (pr == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

static const char *s_gai_error(int rc)
{
    return rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc);
}

static int s_bind_any(int *fd_out)
{
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        int off = 0;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        if (bind(fd, (struct sockaddr *)&a6, sizeof a6) == 0) {
            *fd_out = fd;
            return 0;
        }
        close(fd);
    }
    /* No IPv6 in this kernel or namespace. */
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&a4, sizeof a4) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return 0;
}

static int s_bind_address(const char *address, int *fd_out, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    int g = getaddrinfo(address, "0", &hints, &res);
    if (g) {
        snprintf(err, errlen, "cannot resolve own address %s: %s", address, s_gai_error(g));
        return -EADDRNOTAVAIL;
    }
    int rc = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            *fd_out = fd;
            freeaddrinfo(res);
            return 0;
        }
        rc = -errno;
        close(fd);
    }
    freeaddrinfo(res);
    snprintf(err, errlen, "cannot listen on own address %s: %s", address, strerror(-rc));
    return rc;
}

int nsock_listen(const char *address, int backlog, uint16_t *port, char *err, size_t errlen)
{
    int fd = -1, rc;
    if (address && *address) {
        rc = s_bind_address(address, &fd, err, errlen);
    } else {
        rc = s_bind_any(&fd);
        if (rc)
            snprintf(err, errlen, "cannot bind a listening socket: %s", strerror(-rc));
    }
    if (rc)
        return rc;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (listen(fd, backlog) != 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot listen: %s", strerror(-rc));
        close(fd);
        return rc;
    }
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Binds fd to local (any port) when local resolves in the socket's family. */
static int s_bind_local(int fd, int family, const char *local)
{
    struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(local, "0", &hints, &res) || !res)
        return -EADDRNOTAVAIL;
    int rc = bind(fd, res->ai_addr, res->ai_addrlen) == 0 ? 0 : -errno;
    freeaddrinfo(res);
    return rc;
}

/* Finishes a non-blocking connect by the deadline and makes the socket blocking again. */
static int s_connect_wait(int fd, const struct addrinfo *ai, uint64_t deadline_ms)
{
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS)
        return -errno;
    for (;;) {
        struct pollfd pfd = {fd, POLLOUT, 0};
        int left = s_left(deadline_ms);
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return -errno;
        if (pr == 0)
            return -ETIMEDOUT;
        break;
    }
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        return -errno;
    if (soerr)
        return -soerr;
    int flags = fcntl(fd, F_GETFL);
    return fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? 0 : -errno;
}

int nsock_connect(const char *host, uint16_t port, const char *local, uint64_t timeout_ms,
                  char *err, size_t errlen)
{
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(host, service, &hints, &res);
    if (g) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, s_gai_error(g));
        return -EHOSTUNREACH;
    }
    uint64_t deadline = fb_mono_ms() + timeout_ms;
    int rc = -EHOSTUNREACH;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        if (local && *local && s_bind_local(fd, ai->ai_family, local) != 0) {
            rc = -EADDRNOTAVAIL;
            close(fd);
            continue;
        }
        rc = s_connect_wait(fd, ai, deadline);
        if (rc == 0) {
            freeaddrinfo(res);
            return fd;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (rc == -ETIMEDOUT)
        snprintf(err, errlen, "no answer from %s port %u within %.1f s", host, port,
                 (double)timeout_ms / 1000.0);
    else if (rc == -EADDRNOTAVAIL)
        snprintf(err, errlen, "cannot connect to %s port %u from own address %s", host, port,
                 local);
    else
        snprintf(err, errlen, "cannot connect to %s port %u: %s", host, port, strerror(-rc));
    return rc;
}

int nsock_accept(int lfd, uint64_t deadline_ms, char *peer, size_t peerlen)
{
    for (;;) {
        int rc = s_poll_until(lfd, POLLIN, deadline_ms);
        if (rc < 0)
            return rc;
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN))
            continue;
        if (fd < 0)
            return -errno;
        char host[NI_MAXHOST] = "?";
        getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, NULL, 0, NI_NUMERICHOST);
        fb_strlcpy(peer, host, peerlen);
        return fd;
    }
}

int nsock_wait_readable(int fd, uint64_t timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    int pr = poll(&pfd, 1, timeout_ms > 1000000 ? 1000000 : (int)timeout_ms);
    if (pr < 0)
        return errno == EINTR ? 0 : -errno;
    return pr > 0 ? 1 : 0;
}

/* Moves len bytes one way; is_send picks the direction. */
static int s_transfer(int fd, void *buf, size_t len, uint64_t deadline_ms, bool is_send)
{
    size_t done = 0;
    while (done < len) {
        int rc = s_poll_until(fd, is_send ? POLLOUT : POLLIN, deadline_ms);
        if (rc < 0)
            return rc;
        ssize_t n = is_send ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
        if (n == 0 && !is_send)
            return -ECONNRESET;
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n < 0)
            return errno == EPIPE ? -ECONNRESET : -errno;
        done += (size_t)n;
    }
    return 0;
}

int nsock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ms)
{
    return s_transfer(fd, (void *)buf, len, deadline_ms, true);
}

int nsock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ms)
{
    return s_transfer(fd, buf, len, deadline_ms, false);
}

int nsock_tune(int fd, unsigned io_timeout_ms, unsigned user_timeout_ms, int nodelay)
{
    struct timeval tv = {(time_t)(io_timeout_ms / 1000), (long)(io_timeout_ms % 1000) * 1000};
    if (io_timeout_ms && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
                          setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0))
        return -errno;
    if (user_timeout_ms &&
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms))
        return -errno;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay) != 0)
        return -errno;
    return 0;
}
