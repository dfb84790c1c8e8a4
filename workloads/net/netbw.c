/* SPDX-License-Identifier: Apache-2.0 */
/* The netbw workload (see netbw.h): parameters, the rendezvous (ephemeral ports posted through
 * worker_exchange, no fixed port anywhere), the two bandwidth directions one after the other, the
 * latency ping-pongs, and the metrics and findings. Every wait is bounded and also watches the
 * control connection, so a partner that fails or dies ends this member within seconds with an
 * error that names it, instead of leaving it to the stage deadline. */
#include "netbw.h"

#include "control.h"
#include "sock.h"
#include "streams.h"

#include "common/units.h"
#include "common/util.h"
#include "common/value_limits.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NB_DEFAULT_EXCHANGE_MS 120000u
#define NB_DEFAULT_CONNECT_MS 20000u
/* The shortest measurement: the campaign checker refuses a shorter one (common/value_limits.h). */
#define NB_MIN_DURATION_MS ((unsigned)FB_LIMIT_NETBW_DURATION_MS_MIN)
#define NB_TICK_MS 1000u
#define NB_PING_LEN 32u
#define NB_LAT_WARMUP 10u
#define NB_MAX_FINDING_TEXT 512

typedef struct {
    bool measured;
    double gbps;
    uint64_t bytes, ns;
    nbc_result_t found; /* what the receiver's check found */
} dir_t;

typedef struct {
    worker_ctx_t *ctx;
    uint64_t exchange_ms, connect_ms;
    unsigned rank, partner;
    const char *name[2];   /* node names by rank (borrowed) */
    char rank_name[2][16]; /* "rank N" where a name is unknown */
    const char *host[2];   /* where rank r is reached; host[rank] "" = listen on every address */
    uint64_t duration_ms, warmup_ms, lat_iters;
    unsigned streams, inject;
    uint64_t rate_mbit; /* test-only: pacing cap on what this member sends, 0 = none */
    bool have_min;
    double min_gbps;
    int lfd, cfd;
    uint16_t port[2];
    uint64_t nonce[2];
    dir_t dir[2]; /* by sending rank */
    uint64_t retransmits;
    double *rtt_us;
    size_t n_rtt;
    bool partner_failed; /* the partner sent ERROR: do not send one back */
    char err[1024];
} nb_t;

static uint64_t s_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int s_fail(nb_t *nb, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int s_fail(nb_t *nb, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nb->err, sizeof nb->err, fmt, ap);
    va_end(ap);
    return rc < 0 ? rc : -EIO;
}

static const char *s_me(const nb_t *nb)
{
    return nb->name[nb->rank];
}

static const char *s_peer(const nb_t *nb)
{
    return nb->name[nb->partner];
}

/* ---- parameters ----------------------------------------------------------------------------- */

static int s_param_uint(nb_t *nb, const char *key, const char *def, uint64_t min, uint64_t max,
                        uint64_t *out)
{
    const char *text = worker_param(nb->ctx, key);
    if (fb_parse_uint(text ? text : def, max, out) || *out < min)
        return s_fail(nb, -EINVAL, "%s: '%s' is not an integer from %" PRIu64 " to %" PRIu64, key,
                      text ? text : def, min, max);
    return 0;
}

static int s_params(nb_t *nb)
{
    const char *text = worker_param(nb->ctx, "duration");
    if (fb_parse_duration_ms(text ? text : "10s", &nb->duration_ms))
        return s_fail(nb, -EINVAL, "duration: '%s' is not a duration", text);
    if (nb->duration_ms < NB_MIN_DURATION_MS)
        return s_fail(nb, -EINVAL, "duration: '%s' is too short (at least %ums)", text,
                      NB_MIN_DURATION_MS);
    /* Slow start and the first scheduling of the threads are not the link's rate. */
    nb->warmup_ms = nb->duration_ms / 10;
    nb->warmup_ms = nb->warmup_ms < 200 ? 200 : nb->warmup_ms > 1000 ? 1000 : nb->warmup_ms;
    uint64_t v;
    int rc = s_param_uint(nb, "streams", "4", 1, 256, &v);
    if (rc)
        return rc;
    nb->streams = (unsigned)v;
    if ((rc = s_param_uint(nb, "lat_iters", "2000", 0, 10000000, &nb->lat_iters)))
        return rc;
    text = worker_param(nb->ctx, "min_gbps");
    if (text && (fb_parse_double(text, &nb->min_gbps) || nb->min_gbps < 0))
        return s_fail(nb, -EINVAL, "min_gbps: '%s' is not a number of Gb/s", text);
    nb->have_min = text != NULL;
    if (worker_param(nb->ctx, "inject_corrupt")) {
        if (!worker_fault_injection_allowed(nb->ctx))
            return s_fail(nb, -EPERM,
                          "inject_corrupt refused: the agent was not started with "
                          "--allow-fault-injection");
        if ((rc = s_param_uint(nb, "inject_corrupt", "0", 0, 1000000, &v)))
            return rc;
        nb->inject = (unsigned)v;
    }
    if (worker_param(nb->ctx, "inject_rate_mbit")) {
        if (!worker_fault_injection_allowed(nb->ctx))
            return s_fail(nb, -EPERM,
                          "inject_rate_mbit refused: the agent was not started with "
                          "--allow-fault-injection");
        if ((rc = s_param_uint(nb, "inject_rate_mbit", "0", 1, 100000000, &nb->rate_mbit)))
            return rc;
    }
    return 0;
}

/* Test-only throttle (inject_rate_mbit): caps each sending socket at its share of the rate by the
 * kernel's pacing (SO_MAX_PACING_RATE, bytes per second; TCP paces by itself since Linux 4.13),
 * so this member's path is slow the way a bad cable or a congested uplink makes it. */
static int s_pace(nb_t *nb, int fd)
{
    if (!nb->rate_mbit)
        return 0;
    uint64_t bytes = nb->rate_mbit * 1000000ull / 8 / nb->streams;
    unsigned int rate = bytes > 0xfffffffeull ? 0xfffffffeu : (unsigned int)(bytes ? bytes : 1);
    if (setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate))
        return s_fail(nb, -errno, "inject_rate_mbit: cannot set the pacing rate: %s",
                      strerror(errno));
    return 0;
}

/* Names and addresses of the pair. */
static int s_members(nb_t *nb)
{
    worker_ctx_t *ctx = nb->ctx;
    unsigned size = worker_size(ctx);
    if (size == 1)
        return s_fail(nb, -EINVAL,
                      "netbw measures between two nodes: run it in a stage with "
                      "scope: pairs (this task has 1 member)");
    if (size != 2)
        return s_fail(nb, -EINVAL,
                      "netbw runs in pairs: this task has %u members; use scope: "
                      "pairs",
                      size);
    nb->rank = worker_rank(ctx);
    nb->partner = 1 - nb->rank;
    for (unsigned r = 0; r < 2; r++) {
        const char *name = worker_peer(ctx, r);
        if (!*name && r == nb->rank)
            name = worker_node(ctx);
        snprintf(nb->rank_name[r], sizeof nb->rank_name[r], "rank %u", r);
        nb->name[r] = *name ? name : nb->rank_name[r];
    }
    nb->host[nb->rank] = worker_peer_address(ctx, nb->rank);
    /* Without an address the partner's node name is tried as a host name. */
    const char *addr = worker_peer_address(ctx, nb->partner);
    nb->host[nb->partner] = *addr ? addr : worker_peer(ctx, nb->partner);
    if (!*nb->host[nb->partner])
        return s_fail(nb, -EINVAL, "no address for partner %s", s_peer(nb));
    return 0;
}

/* ---- rendezvous ----------------------------------------------------------------------------- */

static uint64_t s_random64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = s_now_ns() ^ ((uint64_t)getpid() << 32);
    return v;
}

/* Listens on an ephemeral port and trades "PORT NONCE" with the partner. */
static int s_rendezvous(nb_t *nb)
{
    char err[512];
    uint16_t port = 0;
    /* Up to 256 data connections may arrive at once. */
    nb->lfd = nsock_listen(nb->host[nb->rank], 512, &port, err, sizeof err);
    if (nb->lfd < 0)
        return s_fail(nb, nb->lfd, "%s", err);
    nb->port[nb->rank] = port;
    nb->nonce[nb->rank] = s_random64();
    char value[64];
    int n = snprintf(value, sizeof value, "%u %016" PRIx64, port, nb->nonce[nb->rank]);
    worker_blob_t *values = NULL;
    int rc = worker_exchange(nb->ctx, "netbw.port", value, (size_t)n, nb->exchange_ms, &values, err,
                             sizeof err);
    if (rc)
        return s_fail(nb, rc, "rendezvous with partner %s: %s", s_peer(nb), err);
    char theirs[64] = "";
    const worker_blob_t *b = &values[nb->partner];
    if (b->len < sizeof theirs)
        memcpy(theirs, b->data, b->len);
    worker_blobs_free(&values, 2);
    unsigned p = 0;
    uint64_t nonce = 0;
    if (sscanf(theirs, "%u %" SCNx64, &p, &nonce) != 2 || p == 0 || p > 65535)
        return s_fail(nb, -EPROTO, "rendezvous: partner %s posted '%.40s', not a port", s_peer(nb),
                      theirs);
    nb->port[nb->partner] = (uint16_t)p;
    nb->nonce[nb->partner] = nonce;
    worker_log(nb->ctx, "netbw: rank %u of %s<->%s, listening on %s port %u, partner at %s port %u",
               nb->rank, nb->name[0], nb->name[1],
               *nb->host[nb->rank] ? nb->host[nb->rank] : "every address", port,
               nb->host[nb->partner], p);
    return 0;
}

/* Connects to the partner's listener and introduces the connection. */
static int s_connect(nb_t *nb, uint32_t kind, uint32_t stream, int *fd_out)
{
    char err[512];
    const char *host = nb->host[nb->partner];
    int fd = nsock_connect(host, nb->port[nb->partner], nb->host[nb->rank], nb->connect_ms, err,
                           sizeof err);
    if (fd < 0)
        return s_fail(nb, fd, "partner %s: %s", s_peer(nb), err);
    nbc_hello_t h = {kind, nb->rank, stream, nb->nonce[nb->partner]};
    uint8_t buf[NBC_HELLO_LEN];
    nbc_hello_encode(&h, buf);
    int rc = nsock_send_all(fd, buf, sizeof buf, fb_mono_ms() + nb->connect_ms);
    if (rc) {
        close(fd);
        return s_fail(nb, rc, "partner %s at %s port %u: %s", s_peer(nb), host,
                      nb->port[nb->partner], strerror(-rc));
    }
    *fd_out = fd;
    return 0;
}

/* Turns what nbc_recv gave when another message was due into the error: the partner's own
 * error, its death, or a protocol violation. when says what this member was doing. */
static int s_unexpected(nb_t *nb, int rc, uint32_t type, const uint8_t *payload, const char *when)
{
    if (rc == 0 && type == NBC_ERROR) {
        nb->partner_failed = true;
        return s_fail(nb, -ECONNABORTED, "partner %s failed: %s", s_peer(nb),
                      (const char *)payload);
    }
    if (rc == -ECONNRESET) {
        nb->partner_failed = true;
        return s_fail(nb, rc,
                      "partner %s (%s) closed the control connection %s: its worker "
                      "stopped or died",
                      s_peer(nb), nb->host[nb->partner], when);
    }
    if (rc)
        return s_fail(nb, rc, "control connection to partner %s %s: %s", s_peer(nb), when,
                      strerror(-rc));
    return s_fail(nb, -EPROTO, "partner %s sent message %u out of turn %s", s_peer(nb), type, when);
}

/* A message on the control connection while none is expected: the partner gave up or died. */
static int s_control_broken(nb_t *nb, const char *when)
{
    uint32_t type = 0;
    uint8_t payload[NBC_MAX_PAYLOAD + 1];
    size_t len = 0;
    int rc = nbc_recv(nb->cfd, &type, payload, &len, fb_mono_ms() + nb->connect_ms);
    return s_unexpected(nb, rc, type, payload, when);
}

/* Accepts the partner's n connections of one kind (placed by stream index) before deadline_ms.
 * Anything else that connects is logged and closed. */
static int s_accept(nb_t *nb, uint32_t kind, int *fds, unsigned n, uint64_t deadline_ms)
{
    unsigned got = 0;
    for (unsigned i = 0; i < n; i++)
        fds[i] = -1;
    while (got < n) {
        if (nb->cfd >= 0 && nsock_wait_readable(nb->cfd, 0) > 0)
            return s_control_broken(nb, "while this node waited for its connections");
        char peer[64] = "?";
        uint64_t slice = fb_mono_ms() + 200;
        int fd =
            nsock_accept(nb->lfd, slice < deadline_ms ? slice : deadline_ms, peer, sizeof peer);
        if (fd == -ETIMEDOUT && fb_mono_ms() < deadline_ms)
            continue;
        if (fd == -ETIMEDOUT)
            return s_fail(nb, fd,
                          "%u of %u connections from partner %s (%s) arrived within "
                          "%.1f s",
                          got, n, s_peer(nb), nb->host[nb->partner],
                          (double)nb->connect_ms / 1000.0);
        if (fd < 0)
            return s_fail(nb, fd, "accept: %s", strerror(-fd));
        uint8_t buf[NBC_HELLO_LEN];
        nbc_hello_t h;
        if (nsock_recv_all(fd, buf, sizeof buf, fb_mono_ms() + 5000) || nbc_hello_decode(buf, &h) ||
            h.nonce != nb->nonce[nb->rank] || h.kind != kind ||
            h.sender != (kind == NBC_CONN_DATA ? nb->partner : 0) || h.stream >= n ||
            fds[h.stream] >= 0) {
            worker_log(nb->ctx,
                       "netbw: ignored a connection from %s: not one expected from "
                       "partner %s",
                       peer, s_peer(nb));
            close(fd);
            continue;
        }
        fds[h.stream] = fd;
        got++;
    }
    return 0;
}

static void s_close_all(int *fds, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Rank 0 opens the control connection; latency is measured on it, so Nagle is off. */
static int s_control(nb_t *nb)
{
    int rc;
    if (nb->rank == 0)
        rc = s_connect(nb, NBC_CONN_CONTROL, 0, &nb->cfd);
    else
        rc = s_accept(nb, NBC_CONN_CONTROL, &nb->cfd, 1, fb_mono_ms() + nb->connect_ms);
    if (rc)
        return rc;
    return nsock_tune(nb->cfd, 0, (unsigned)nb->connect_ms, 1);
}

/* ---- bandwidth ------------------------------------------------------------------------------ */

/* The same on both sides, different for every direction and every run. */
static uint64_t s_seed(const nb_t *nb, unsigned sender)
{
    return nb->nonce[1 - sender] ^ (0x9e3779b97f4a7c15ull * (sender + 1));
}

static double s_gbps(uint64_t bytes, uint64_t ns)
{
    return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

static double s_fraction(const nb_t *nb, unsigned phase, double within)
{
    double bw = nb->lat_iters ? 0.45 : 0.5;
    within = within < 0 ? 0 : within > 1 ? 1 : within;
    return phase < 2 ? bw * (phase + within) : 2 * bw + (1 - 2 * bw) * within;
}

/* Receiver: waits until until_ns, printing the rate every second; watches the streams, the
 * control connection and stalls. *last_bytes / *last_ns carry the previous tick. */
static int s_rx_wait(nb_t *nb, nb_rx_t *rx, uint64_t until_ns, uint64_t start_ns,
                     uint64_t *last_bytes, uint64_t *last_ns, uint64_t *stall_ns)
{
    unsigned sender = nb->partner;
    for (;;) {
        uint64_t now = s_now_ns();
        if (now >= until_ns)
            return 0;
        uint64_t next_tick = *last_ns + NB_TICK_MS * 1000000ull;
        uint64_t wake = next_tick < until_ns ? next_tick : until_ns;
        uint64_t wait_ms = wake > now ? (wake - now + 999999) / 1000000 : 0;
        if (nb_rx_failed(rx))
            return 0; /* nb_rx_finish reports it */
        if (nsock_wait_readable(nb->cfd, wait_ms) > 0)
            return s_control_broken(nb, "while it sent");
        now = s_now_ns();
        if (now < next_tick)
            continue;
        uint64_t bytes = nb_rx_bytes(rx);
        double rate = s_gbps(bytes - *last_bytes, now - *last_ns);
        if (bytes != *last_bytes)
            *stall_ns = now;
        else if (now - *stall_ns > nb->connect_ms * 1000000ull)
            return s_fail(nb, -ETIMEDOUT, "no data from partner %s (%s) for %.0f s", s_peer(nb),
                          nb->host[sender], (double)nb->connect_ms / 1000.0);
        double planned = (double)(nb->warmup_ms + nb->duration_ms) * 1e6;
        worker_progress(nb->ctx, s_fraction(nb, sender, (double)(now - start_ns) / planned),
                        "%s->%s %.3f Gb/s", nb->name[sender], s_me(nb), rate);
        fb_metric_t sample = {"netbw.rx_gbps_1s", rate, "Gb/s"};
        worker_telemetry(nb->ctx, &sample, 1);
        *last_bytes = bytes;
        *last_ns = now;
    }
}

/* Receiver: the window, STOP, the end of every stream, RESULT. */
static int s_rx_measure(nb_t *nb, nb_rx_t *rx)
{
    unsigned sender = nb->partner;
    uint64_t start = s_now_ns(), last_ns = start, last_bytes = 0, stall = start;
    int rc =
        s_rx_wait(nb, rx, start + nb->warmup_ms * 1000000ull, start, &last_bytes, &last_ns, &stall);
    uint64_t b0 = nb_rx_bytes(rx), t0 = s_now_ns();
    if (!rc)
        rc = s_rx_wait(nb, rx, t0 + nb->duration_ms * 1000000ull, start, &last_bytes, &last_ns,
                       &stall);
    uint64_t b1 = nb_rx_bytes(rx), t1 = s_now_ns();
    if (rc)
        return rc;
    char err[512];
    nb_rx_expect_end(rx);
    uint8_t stop[16];
    nbc_put_u64(stop, b1 - b0);
    nbc_put_u64(stop + 8, t1 - t0);
    if (!nb_rx_failed(rx) &&
        (rc = nbc_send(nb->cfd, NBC_STOP, stop, sizeof stop, fb_mono_ms() + nb->connect_ms)))
        return s_fail(nb, rc, "partner %s: cannot send stop: %s", s_peer(nb), strerror(-rc));
    if ((rc = nb_rx_finish(rx, fb_mono_ms() + nb->connect_ms, err, sizeof err)))
        return s_fail(nb, rc, "receiving from partner %s (%s): %s", s_peer(nb), nb->host[sender],
                      err);
    dir_t *d = &nb->dir[sender];
    worker_log(nb->ctx,
               "netbw: %s->%s: %" PRIu64 " bytes received in all (warm-up and drain "
               "included)",
               nb->name[sender], s_me(nb), nb_rx_bytes(rx));
    d->measured = true;
    d->bytes = b1 - b0;
    d->ns = t1 - t0;
    d->gbps = s_gbps(d->bytes, d->ns);
    np_check_t first;
    unsigned stream = 0;
    memset(&first, 0, sizeof first);
    d->found.corrupt_blocks = nb_rx_corruption(rx, &first, &stream);
    d->found.corrupt_stream = stream;
    d->found.first_offset = first.first_offset;
    d->found.first_expected = first.first_expected;
    d->found.first_actual = first.first_actual;
    uint8_t res[NBC_RESULT_LEN];
    nbc_result_encode(&d->found, res);
    if ((rc = nbc_send(nb->cfd, NBC_RESULT, res, sizeof res, fb_mono_ms() + nb->connect_ms)))
        return s_fail(nb, rc, "partner %s: cannot send the result: %s", s_peer(nb), strerror(-rc));
    return 0;
}

static int s_receive_direction(nb_t *nb)
{
    int *fds = xcalloc(nb->streams, sizeof *fds);
    int rc = s_accept(nb, NBC_CONN_DATA, fds, nb->streams, fb_mono_ms() + nb->connect_ms);
    for (unsigned i = 0; !rc && i < nb->streams; i++)
        rc = nsock_tune(fds[i], NB_IO_TICK_MS, (unsigned)nb->connect_ms, 0);
    if (rc) {
        s_close_all(fds, nb->streams);
        free(fds);
        return rc;
    }
    nb_rx_t *rx = nb_rx_start(fds, nb->streams, s_seed(nb, nb->partner));
    free(fds);
    rc = s_rx_measure(nb, rx);
    nb_rx_destroy(&rx);
    return rc;
}

/* Sender: waits for the receiver's STOP while the streams run, printing the rate every second. */
static int s_tx_wait_stop(nb_t *nb, nb_tx_t *tx)
{
    uint64_t start = s_now_ns(), last_ns = start, last_bytes = 0;
    double planned = (double)(nb->warmup_ms + nb->duration_ms) * 1e6;
    uint64_t deadline = fb_mono_ms() + nb->warmup_ms + nb->duration_ms + nb->connect_ms;
    for (;;) {
        if (nsock_wait_readable(nb->cfd, 100) > 0) {
            uint32_t type = 0;
            uint8_t payload[NBC_MAX_PAYLOAD + 1];
            size_t len = 0;
            int rc = nbc_recv(nb->cfd, &type, payload, &len, fb_mono_ms() + nb->connect_ms);
            if (rc == 0 && type == NBC_STOP && len == 16) {
                nb->dir[nb->rank].bytes = nbc_get_u64(payload);
                nb->dir[nb->rank].ns = nbc_get_u64(payload + 8);
                return 0;
            }
            return s_unexpected(nb, rc, type, payload, "while it received");
        }
        if (nb_tx_failed(tx))
            return 0; /* nb_tx_finish reports it */
        if (fb_mono_ms() > deadline)
            return s_fail(nb, -ETIMEDOUT, "partner %s did not end the measurement in time",
                          s_peer(nb));
        uint64_t now = s_now_ns();
        if (now - last_ns >= NB_TICK_MS * 1000000ull) {
            uint64_t bytes = nb_tx_bytes(tx);
            worker_progress(nb->ctx, s_fraction(nb, nb->rank, (double)(now - start) / planned),
                            "%s->%s sending %.3f Gb/s", s_me(nb), s_peer(nb),
                            s_gbps(bytes - last_bytes, now - last_ns));
            last_bytes = bytes;
            last_ns = now;
        }
    }
}

static int s_send_direction(nb_t *nb)
{
    int *fds = xcalloc(nb->streams, sizeof *fds);
    int rc = 0;
    for (unsigned i = 0; i < nb->streams; i++)
        fds[i] = -1;
    for (unsigned i = 0; !rc && i < nb->streams; i++) {
        rc = s_connect(nb, NBC_CONN_DATA, i, &fds[i]);
        if (!rc)
            rc = nsock_tune(fds[i], NB_IO_TICK_MS, (unsigned)nb->connect_ms, 0);
        if (!rc)
            rc = s_pace(nb, fds[i]);
    }
    if (rc) {
        s_close_all(fds, nb->streams);
        free(fds);
        return rc;
    }
    nb_tx_t *tx = nb_tx_start(fds, nb->streams, s_seed(nb, nb->rank), nb->inject);
    free(fds);
    rc = s_tx_wait_stop(nb, tx);
    char err[512];
    int trc = nb_tx_finish(tx, err, sizeof err);
    nb->retransmits = nb_tx_retransmits(tx);
    nb_tx_destroy(&tx);
    if (rc)
        return rc;
    if (trc)
        return s_fail(nb, trc, "sending to partner %s (%s): %s", s_peer(nb), nb->host[nb->partner],
                      err);
    uint32_t type = 0;
    uint8_t payload[NBC_MAX_PAYLOAD + 1];
    size_t len = 0;
    rc = nbc_recv(nb->cfd, &type, payload, &len, fb_mono_ms() + nb->connect_ms);
    if (rc || type != NBC_RESULT || len != NBC_RESULT_LEN)
        return s_unexpected(nb,
                            rc                   ? rc
                            : type == NBC_RESULT ? -EPROTO
                                                 : 0,
                            type, payload, "before it sent the result");
    dir_t *d = &nb->dir[nb->rank];
    nbc_result_decode(payload, &d->found);
    d->measured = true;
    d->gbps = s_gbps(d->bytes, d->ns);
    return 0;
}

/* ---- latency -------------------------------------------------------------------------------- */

static int s_expect(nb_t *nb, uint32_t want, uint8_t *payload, size_t *len)
{
    uint32_t type = 0;
    int rc = nbc_recv(nb->cfd, &type, payload, len, fb_mono_ms() + nb->connect_ms);
    if (rc || type != want)
        return s_unexpected(nb, rc, type, payload, "during the latency test");
    return 0;
}

/* Times lat_iters ping-pongs (after a few that warm the path up); each pong must echo the
 * ping. */
static int s_ping(nb_t *nb)
{
    uint64_t total = nb->lat_iters + NB_LAT_WARMUP;
    nb->rtt_us = xcalloc(nb->lat_iters, sizeof *nb->rtt_us);
    uint64_t last_tick = fb_mono_ms();
    for (uint64_t i = 0; i < total; i++) {
        uint8_t ping[NB_PING_LEN], pong[NBC_MAX_PAYLOAD + 1];
        size_t len = 0;
        for (size_t k = 0; k < NB_PING_LEN; k += 8)
            nbc_put_u64(ping + k, i * 0x9e3779b97f4a7c15ull + k);
        uint64_t t0 = s_now_ns();
        int rc = nbc_send(nb->cfd, NBC_PING, ping, sizeof ping, fb_mono_ms() + nb->connect_ms);
        if (rc)
            return s_fail(nb, rc, "latency test with partner %s: %s", s_peer(nb), strerror(-rc));
        if ((rc = s_expect(nb, NBC_PONG, pong, &len)))
            return rc;
        uint64_t t1 = s_now_ns();
        if (len != NB_PING_LEN || memcmp(ping, pong, NB_PING_LEN))
            return s_fail(nb, -EPROTO, "latency test: partner %s echoed a different message",
                          s_peer(nb));
        if (i >= NB_LAT_WARMUP)
            nb->rtt_us[nb->n_rtt++] = (double)(t1 - t0) / 1000.0;
        if (fb_mono_ms() - last_tick >= NB_TICK_MS) {
            last_tick = fb_mono_ms();
            /* Rank 0 pings in the first half of the latency phase, rank 1 in the second. */
            double within = (nb->rank + (double)(i + 1) / (double)total) / 2.0;
            worker_progress(nb->ctx, s_fraction(nb, 2, within),
                            "%s<->%s latency %" PRIu64 "/%" PRIu64, s_me(nb), s_peer(nb), i + 1,
                            total);
        }
    }
    return nbc_send(nb->cfd, NBC_LAT_DONE, NULL, 0, fb_mono_ms() + nb->connect_ms);
}

static int s_pong(nb_t *nb)
{
    for (;;) {
        uint32_t type = 0;
        uint8_t payload[NBC_MAX_PAYLOAD + 1];
        size_t len = 0;
        int rc = nbc_recv(nb->cfd, &type, payload, &len, fb_mono_ms() + nb->connect_ms);
        if (rc == 0 && type == NBC_LAT_DONE)
            return 0;
        if (rc == 0 && type == NBC_PING) {
            rc = nbc_send(nb->cfd, NBC_PONG, payload, len, fb_mono_ms() + nb->connect_ms);
            if (rc)
                return s_fail(nb, rc, "latency test with partner %s: %s", s_peer(nb),
                              strerror(-rc));
            continue;
        }
        return s_unexpected(nb, rc, type, payload, "during the latency test");
    }
}

static int s_latency(nb_t *nb)
{
    if (!nb->lat_iters)
        return 0;
    int rc = nb->rank == 0 ? s_ping(nb) : s_pong(nb);
    if (!rc)
        rc = nb->rank == 0 ? s_pong(nb) : s_ping(nb);
    return rc;
}

/* ---- results -------------------------------------------------------------------------------- */

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double netbw_percentile(const double *sorted, size_t n, double q)
{
    double rank = ceil(q * (double)n);
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;
    return sorted[i < n ? i : n - 1];
}

static void s_metrics(nb_t *nb)
{
    fb_result_t *res = worker_result(nb->ctx);
    const dir_t *tx = &nb->dir[nb->rank], *rx = &nb->dir[nb->partner];
    if (tx->measured)
        fb_result_add_metric(res, "netbw.tx_gbps", tx->gbps, "Gb/s");
    if (rx->measured)
        fb_result_add_metric(res, "netbw.rx_gbps", rx->gbps, "Gb/s");
    if (nb->n_rtt) {
        qsort(nb->rtt_us, nb->n_rtt, sizeof *nb->rtt_us, s_cmp_double);
        fb_result_add_metric(res, "netbw.rtt_p50_us", netbw_percentile(nb->rtt_us, nb->n_rtt, 0.5),
                             "us");
        fb_result_add_metric(res, "netbw.rtt_p99_us", netbw_percentile(nb->rtt_us, nb->n_rtt, 0.99),
                             "us");
        fb_result_add_metric(res, "netbw.rtt_max_us", nb->rtt_us[nb->n_rtt - 1], "us");
    }
    fb_result_add_metric(res, "netbw.streams", nb->streams, "");
    if (tx->measured)
        fb_result_add_metric(res, "netbw.tx_retransmits", (double)nb->retransmits, "");
    if (rx->measured)
        fb_result_add_metric(res, "netbw.rx_corrupt_blocks", (double)rx->found.corrupt_blocks, "");
}

/* Findings of the direction sent by rank s; true when it failed. Only the sender's result
 * carries them, so that a pair's findings are not doubled. */
static bool s_judge(nb_t *nb, unsigned s)
{
    const dir_t *d = &nb->dir[s];
    const char *from = nb->name[s], *to = nb->name[1 - s];
    char part[160];
    snprintf(part, sizeof part, "%s->%s", from, to);
    bool mine = s == nb->rank, failed = false;
    fb_result_t *res = worker_result(nb->ctx);
    if (!d->measured)
        return false;
    if (d->found.corrupt_blocks) {
        failed = true;
        uint64_t x = d->found.first_expected ^ d->found.first_actual;
        if (mine)
            fb_result_add_findingf(
                res, part, "link",
                "data corruption from %s to %s: %" PRIu64 " corrupt 4 KiB block(s) passed the "
                "TCP checksum; first at byte %" PRIu64 " of stream %" PRIu64 ": expected "
                "0x%016" PRIx64 ", read 0x%016" PRIx64 " (xor 0x%016" PRIx64 ")",
                from, to, d->found.corrupt_blocks, d->found.first_offset, d->found.corrupt_stream,
                d->found.first_expected, d->found.first_actual, x);
    }
    if (nb->have_min && d->gbps < nb->min_gbps) {
        failed = true;
        if (mine)
            fb_result_add_findingf(res, part, "link",
                                   "TCP bandwidth %s->%s is %.3f Gb/s, below min_gbps %g (sent "
                                   "by %s, measured by %s; %u streams over %.1f s)",
                                   from, to, d->gbps, nb->min_gbps, from, to, nb->streams,
                                   (double)d->ns / 1e9);
    }
    if (failed && !mine)
        worker_log(nb->ctx, "netbw: %s failed; the finding is on %s's result", part, from);
    return failed && mine;
}

static fb_verdict_t s_report(nb_t *nb)
{
    s_metrics(nb);
    const dir_t *d0 = &nb->dir[0], *d1 = &nb->dir[1];
    if (nb->n_rtt)
        worker_log(nb->ctx,
                   "netbw: %s->%s %.3f Gb/s, %s->%s %.3f Gb/s, rtt p50 %.1f us p99 %.1f "
                   "us max %.1f us (%u streams, %.1f s each way)",
                   nb->name[0], nb->name[1], d0->gbps, nb->name[1], nb->name[0], d1->gbps,
                   netbw_percentile(nb->rtt_us, nb->n_rtt, 0.5),
                   netbw_percentile(nb->rtt_us, nb->n_rtt, 0.99), nb->rtt_us[nb->n_rtt - 1],
                   nb->streams, (double)nb->duration_ms / 1000.0);
    else
        worker_log(nb->ctx,
                   "netbw: %s->%s %.3f Gb/s, %s->%s %.3f Gb/s (%u streams, %.1f s each "
                   "way)",
                   nb->name[0], nb->name[1], d0->gbps, nb->name[1], nb->name[0], d1->gbps,
                   nb->streams, (double)nb->duration_ms / 1000.0);
    bool fail = s_judge(nb, 0);
    fail = s_judge(nb, 1) || fail;
    return fail ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
}

/* ---- the run -------------------------------------------------------------------------------- */

static int s_measure(nb_t *nb)
{
    int rc = s_rendezvous(nb);
    if (!rc)
        rc = s_control(nb);
    /* Rank 0 sends first, then rank 1. */
    for (unsigned sender = 0; !rc && sender < 2; sender++)
        rc = sender == nb->rank ? s_send_direction(nb) : s_receive_direction(nb);
    if (!rc)
        rc = s_latency(nb);
    return rc;
}

fb_verdict_t netbw_run_opts(worker_ctx_t *ctx, const netbw_opts_t *opts)
{
    nb_t nb = {.ctx = ctx, .lfd = -1, .cfd = -1};
    nb.exchange_ms =
        opts && opts->exchange_timeout_ms ? opts->exchange_timeout_ms : NB_DEFAULT_EXCHANGE_MS;
    nb.connect_ms =
        opts && opts->connect_timeout_ms ? opts->connect_timeout_ms : NB_DEFAULT_CONNECT_MS;
    int rc = s_members(&nb);
    if (!rc)
        rc = s_params(&nb);
    if (!rc)
        rc = s_measure(&nb);
    fb_verdict_t verdict;
    if (rc) {
        /* Tell the partner at once, so that it does not wait for its own timeouts. */
        if (nb.cfd >= 0 && !nb.partner_failed)
            nbc_send(nb.cfd, NBC_ERROR, nb.err,
                     strlen(nb.err) > NBC_MAX_PAYLOAD ? NBC_MAX_PAYLOAD : strlen(nb.err),
                     fb_mono_ms() + 1000);
        s_metrics(&nb);
        verdict = worker_error(ctx, "%s", nb.err);
    } else {
        verdict = s_report(&nb);
    }
    if (nb.cfd >= 0)
        close(nb.cfd);
    if (nb.lfd >= 0)
        close(nb.lfd);
    free(nb.rtt_us);
    return verdict;
}

fb_verdict_t netbw_run(worker_ctx_t *ctx)
{
    return netbw_run_opts(ctx, NULL);
}
