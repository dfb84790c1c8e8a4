/* SPDX-License-Identifier: Apache-2.0 */
/* The verbs data path of rdmabw. Each connection holds an RC data queue pair over one buffer
 * ([source region | sink region], host or GPU memory), an RC control queue pair for lockstep
 * messages, and a small host buffer for latency ping-pongs and flushes.
 *
 * Bandwidth is measured the way perftest does it, so the numbers compare with ib_write_bw: a
 * window of RDMA_TX_DEPTH outstanding operations, every RDMA_SIGNAL_EVERY-th signalled, one
 * timestamp per signalled completion (RC completes in order, so it covers every operation
 * before it). Steps run in lockstep: the passive side prepares (poisons its sink with the
 * complement of the pattern, or fills its source, or posts receives) and says READY; the active
 * side runs, makes its writes visible with a small RDMA read (a read response cannot pass the
 * writes before it, which matters when the sink is GPU memory behind a PCIe switch), and says
 * DONE; the sink's owner then checks every slot.
 *
 * Nothing here can be exercised without an HCA; everything it computes with (the plan, the
 * pattern, the bandwidth arithmetic, the wire formats) lives in rdma_sweep.c and rdma_wire.c and
 * is unit-tested there.
 *
 * It stays one file of about 1,350 lines because the control channel, the bandwidth flows, the
 * latency ping-pong and the steps all drive the same queue pairs, completion queues and small
 * buffer through file-local conventions (work-request tags, the receive marks, the buffer's
 * layout); split, those would become an internal header that four files depend on. */
#include "rdma_engine.h"

#include "common/util.h"
#include "gpu/host/p2p_matrix.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_CPUS 8192

int rdma_pin_to_hca(const char *root, const char *hca)
{
    char *path = xasprintf("%s/sys/class/infiniband/%s/device/local_cpulist", root, hca);
    char *text = fb_read_file(path, NULL);
    free(path);
    if (!text)
        return 0;
    unsigned char *mask = xcalloc(S_MAX_CPUS, 1);
    int n = p2p_parse_cpulist(text, mask, S_MAX_CPUS);
    free(text);
    int rc = n > 0 ? n : 0;
    if (n > 0) {
        cpu_set_t *set = CPU_ALLOC(S_MAX_CPUS);
        size_t size = CPU_ALLOC_SIZE(S_MAX_CPUS);
        CPU_ZERO_S(size, set);
        for (int c = 0; c < S_MAX_CPUS; c++)
            if (mask[c])
                CPU_SET_S((size_t)c, size, set);
        if (sched_setaffinity(0, size, set) != 0)
            rc = -errno;
        CPU_FREE(set);
    }
    free(mask);
    return rc;
}

#ifndef FB_HAVE_VERBS

int rdma_conn_open(rdma_verbs_t *v, const rdma_conn_opts_t *o, rdma_conn_t **out, char *err,
                   size_t errlen)
{
    (void)v;
    (void)o;
    *out = NULL;
    snprintf(err, errlen, "built without verbs");
    return -ENOSYS;
}

void rdma_conn_close(rdma_conn_t **self_p)
{
    if (self_p)
        *self_p = NULL;
}

void rdma_conn_endpoint(const rdma_conn_t *c, rdma_endpoint_t *out)
{
    (void)c;
    memset(out, 0, sizeof *out);
}

int rdma_conn_connect(rdma_conn_t *c, const rdma_endpoint_t *remote, char *err, size_t errlen)
{
    (void)c;
    (void)remote;
    snprintf(err, errlen, "built without verbs");
    return -ENOSYS;
}

static void s_unbuilt(rdma_run_status_t *status)
{
    memset(status, 0, sizeof *status);
    status->rc = -ENOSYS;
    snprintf(status->what, sizeof status->what, "built without verbs");
}

void rdma_run_pair(rdma_conn_t *c, const rdma_step_t *steps, size_t n, const rdma_run_opts_t *o,
                   rdma_step_result_t *results, rdma_run_status_t *status)
{
    (void)c, (void)steps, (void)n, (void)o, (void)results;
    s_unbuilt(status);
}

void rdma_run_loopback(rdma_conn_t *a, rdma_conn_t *b, const rdma_step_t *steps, size_t n,
                       const rdma_run_opts_t *o, rdma_step_result_t *results,
                       rdma_run_status_t *status)
{
    (void)a, (void)b, (void)steps, (void)n, (void)o, (void)results;
    s_unbuilt(status);
}

#else

#define S_CTL_SLOTS 16
#define S_LAT_BYTES 4096  /* latency message area, each of send and receive */
#define S_MAX_INLINE 220  /* what perftest asks for; the provider may grant less */
#define S_SPIN_CHECK 4096 /* busy-poll iterations between clock reads */

struct rdma_conn {
    rdma_verbs_t *v;
    char port_name[IB_NAME_MAX + 8];
    uint8_t port_num;
    bool roce;
    int gid_index;
    union ibv_gid gid;
    uint16_t lid;
    uint32_t mtu_bytes;
    enum ibv_mtu active_mtu;
    double gbps;
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq, *ctl_cq;
    struct ibv_qp *qp, *ctl_qp;
    uint32_t psn, ctl_psn;
    uint32_t max_inline;
    uint8_t max_rd_atomic, max_dest_rd_atomic;
    /* data buffer: source region then sink region */
    uint64_t region;
    uint8_t *host; /* host memory, or NULL when in the GPU */
    uint64_t dptr; /* GPU memory, or 0 */
    size_t gpu_bytes;
    int dmabuf_fd;
    rdma_gpu_t *gpu;
    struct ibv_mr *mr;
    uint8_t *staging; /* one region of host memory for filling and checking GPU memory */
    /* small host buffer: latency send area, latency receive area, flush target, control slots */
    uint8_t *small;
    size_t small_bytes;
    struct ibv_mr *small_mr;
    /* the remote end */
    rdma_endpoint_t remote;
    bool connected;
    uint64_t ctl_seq;
    uint8_t mark_seq; /* arrival order of control receives kept while waiting for a send */
};

/* Message slots of a region: every message of a step gets its own address while they fit, so
 * that the check after the step sees each one (with fewer slots than messages, a bad message can
 * be overwritten by a good one before it is checked). */
#define S_SLOTS(region, size) rdma_slots(region, size, UINT64_MAX)

/* Offsets in the small buffer. */
#define S_LAT_SEND 0
#define S_LAT_RECV S_LAT_BYTES
#define S_FLUSH (2 * S_LAT_BYTES)
#define S_CTL_RECV (S_FLUSH + 64)
#define S_CTL_SEND (S_CTL_RECV + S_CTL_SLOTS * RDMA_CTL_BYTES)
#define S_SMALL_BYTES (S_CTL_SEND + 64)

/* wr_id tags: the top byte says what completed, the rest carries a count or a slot. */
#define S_TAG_DATA (UINT64_C(1) << 56)
#define S_TAG_FLUSH (UINT64_C(2) << 56)
#define S_TAG_RECV (UINT64_C(3) << 56)
#define S_TAG_LAT (UINT64_C(4) << 56)
#define S_TAG_CTL_SEND (UINT64_C(5) << 56)
#define S_TAG_CTL_RECV (UINT64_C(6) << 56)
#define S_TAG_MASK (UINT64_C(0xff) << 56)

static uint64_t s_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t s_random_psn(void)
{
    static uint64_t state;
    if (!state)
        state = s_now_ns() ^ ((uint64_t)getpid() << 32);
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state & 0xffffff);
}

static uint32_t s_mtu_bytes(enum ibv_mtu m)
{
    return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static enum ibv_mtu s_mtu_enum(uint32_t bytes)
{
    switch (bytes) {
    case 256:
        return IBV_MTU_256;
    case 512:
        return IBV_MTU_512;
    case 1024:
        return IBV_MTU_1024;
    case 2048:
        return IBV_MTU_2048;
    default:
        return IBV_MTU_4096;
    }
}

static void s_memlock_hint(char *buf, size_t len)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(buf, len, " (RLIMIT_MEMLOCK is %llu KiB: give the agent LimitMEMLOCK=infinity)",
                 (unsigned long long)(rl.rlim_cur / 1024));
    else
        buf[0] = '\0';
}

/* ---- buffers --------------------------------------------------------------------------------- */

static int s_alloc_buffers(rdma_conn_t *c, const rdma_conn_opts_t *o, char *err, size_t errlen)
{
    size_t bytes = (size_t)(2 * c->region);
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    char hint[160];
    c->dmabuf_fd = -1;
    if (o->gpu) {
        c->gpu = o->gpu;
        c->staging = xmalloc((size_t)c->region);
        int rc = rdma_gpu_alloc(c->gpu, bytes, &c->dptr, &c->gpu_bytes, err, errlen);
        if (rc < 0)
            return rc;
        if (o->gpu_dmabuf) {
            c->dmabuf_fd = rdma_gpu_dmabuf_fd(c->gpu, c->dptr, c->gpu_bytes, err, errlen);
            if (c->dmabuf_fd < 0)
                return c->dmabuf_fd;
            c->mr = c->v->reg_dmabuf_mr(c->pd, 0, c->gpu_bytes, c->dptr, c->dmabuf_fd, access);
        } else {
            c->mr = c->v->reg_mr(c->pd, (void *)(uintptr_t)c->dptr, c->gpu_bytes, access);
        }
        if (!c->mr) {
            int e = errno ? errno : EIO;
            snprintf(err, errlen, "registering %zu bytes of GPU memory with %s (%s) failed: %s",
                     c->gpu_bytes, c->port_name, o->gpu_dmabuf ? "dma-buf" : "nvidia_peermem",
                     strerror(e));
            return -e;
        }
    } else {
        if (posix_memalign((void **)&c->host, 4096, bytes) != 0)
            abort(); /* host out-of-memory: the one place fleetburn aborts (xmalloc's rule) */
        memset(c->host, 0, bytes); /* first touch, on the HCA's node when pinned */
        /* Relaxed ordering where the library and kernel have it, as perftest does by default:
         * without it some platforms lose a third of the write bandwidth. */
        if (c->v->reg_mr_iova2)
            c->mr = c->v->reg_mr_iova2(c->pd, c->host, bytes, (uintptr_t)c->host,
                                       (unsigned)access | IBV_ACCESS_RELAXED_ORDERING);
        else
            c->mr = c->v->reg_mr(c->pd, c->host, bytes, access);
        if (!c->mr) {
            int e = errno ? errno : EIO;
            s_memlock_hint(hint, sizeof hint);
            snprintf(err, errlen, "ibv_reg_mr of %zu bytes on %s failed: %s%s", bytes, c->port_name,
                     strerror(e), hint);
            return -e;
        }
    }
    c->small_bytes = S_SMALL_BYTES;
    if (posix_memalign((void **)&c->small, 4096, c->small_bytes) != 0)
        abort();
    memset(c->small, 0, c->small_bytes);
    c->small_mr = c->v->reg_mr(c->pd, c->small, c->small_bytes, access);
    if (!c->small_mr) {
        int e = errno ? errno : EIO;
        s_memlock_hint(hint, sizeof hint);
        snprintf(err, errlen, "ibv_reg_mr of the control buffer on %s failed: %s%s", c->port_name,
                 strerror(e), hint);
        return -e;
    }
    return 0;
}

static uint64_t s_src_addr(const rdma_conn_t *c)
{
    return c->host ? (uint64_t)(uintptr_t)c->host : c->dptr;
}

static uint64_t s_sink_addr(const rdma_conn_t *c)
{
    return s_src_addr(c) + c->region;
}

/* Writes `count` copies of one message (the pattern or its complement) from region offset
 * base. GPU memory is written in one copy of an image built in the staging buffer (count * size
 * never exceeds a region): one cuMemcpy per small message would take seconds. */
static int s_fill(rdma_conn_t *c, uint64_t base, uint64_t count, uint64_t size, uint64_t seed,
                  bool complement)
{
    uint8_t *img = c->host ? c->host + base : c->staging;
    rdma_pattern_fill(img, size, seed, complement);
    for (uint64_t s = 1; s < count; s++)
        memcpy(img + s * size, img, (size_t)size);
    if (!c->host && rdma_gpu_to_device(c->gpu, c->dptr + base, img, (size_t)(count * size)) < 0)
        return -EIO;
    return 0;
}

/* Checks `count` messages from region offset base; the first bad one goes into r. */
static int s_check(rdma_conn_t *c, uint64_t base, uint64_t count, uint64_t size, uint64_t seed,
                   rdma_step_result_t *r)
{
    r->checked = true;
    const uint8_t *img = c->host ? c->host + base : c->staging;
    if (!c->host &&
        rdma_gpu_to_host(c->gpu, c->staging, c->dptr + base, (size_t)(count * size)) < 0)
        return -EIO;
    for (uint64_t s = 0; s < count; s++) {
        uint64_t first = 0;
        uint8_t want = 0, got = 0;
        uint64_t bad = rdma_pattern_check(img + s * size, size, seed, &first, &want, &got);
        if (bad && r->bad_bytes == 0) {
            r->bad_slot = s;
            r->bad_offset = first;
            r->expected = want;
            r->actual = got;
        }
        r->bad_bytes += bad;
    }
    return 0;
}

/* ---- queue pairs ----------------------------------------------------------------------------- */

static struct ibv_qp *s_create_qp(rdma_conn_t *c, struct ibv_cq *cq, uint32_t send_wr,
                                  uint32_t recv_wr, uint32_t *max_inline)
{
    struct ibv_qp_init_attr a;
    memset(&a, 0, sizeof a);
    a.send_cq = cq;
    a.recv_cq = cq;
    a.cap.max_send_wr = send_wr;
    a.cap.max_recv_wr = recv_wr;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = S_MAX_INLINE;
    a.qp_type = IBV_QPT_RC;
    a.sq_sig_all = 0;
    struct ibv_qp *qp = c->v->create_qp(c->pd, &a);
    if (!qp) {
        /* Providers that cannot inline that much refuse the whole queue pair. */
        a.cap.max_inline_data = 0;
        qp = c->v->create_qp(c->pd, &a);
    }
    if (qp && max_inline)
        *max_inline = a.cap.max_inline_data;
    return qp;
}

static int s_to_init(rdma_conn_t *c, struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = c->port_num;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    return c->v->modify_qp(qp, &a,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int s_post_ctl_recv(rdma_conn_t *c, unsigned slot)
{
    struct ibv_sge sge = {(uint64_t)(uintptr_t)(c->small + S_CTL_RECV + slot * RDMA_CTL_BYTES),
                          RDMA_CTL_BYTES, c->small_mr->lkey};
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = S_TAG_CTL_RECV | slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(c->ctl_qp, &wr, &bad);
}

int rdma_conn_open(rdma_verbs_t *v, const rdma_conn_opts_t *o, rdma_conn_t **out, char *err,
                   size_t errlen)
{
    *out = NULL;
    const ib_port_t *p = o->port;
    rdma_conn_t *c = xcalloc(1, sizeof *c);
    c->v = v;
    c->dmabuf_fd = -1;
    fb_strlcpy(c->port_name, p->name, sizeof c->port_name);
    c->port_num = (uint8_t)p->port;
    c->roce = !p->ib;
    c->gbps = p->gbps;
    c->region = o->region;
    c->gid_index = p->gid_index >= 0 ? p->gid_index : 0;
    int rc = 0;
    c->ctx = rdma_verbs_open_device(v, p->hca);
    if (!c->ctx) {
        snprintf(err, errlen,
                 "libibverbs cannot open %s (no provider for it: install rdma-core / "
                 "ibverbs-providers, or the device is gone)",
                 p->hca);
        rc = -ENODEV;
        goto fail;
    }
    struct ibv_device_attr dev;
    struct ibv_port_attr pa;
    if (v->query_device(c->ctx, &dev) != 0 || rdma_verbs_query_port(v, c->ctx, c->port_num, &pa)) {
        snprintf(err, errlen, "querying %s failed: %s", p->name, strerror(errno ? errno : EIO));
        rc = -EIO;
        goto fail;
    }
    if (pa.state != IBV_PORT_ACTIVE) {
        snprintf(err, errlen, "%s is not ACTIVE (verbs port state %d)", p->name, (int)pa.state);
        rc = -ENETDOWN;
        goto fail;
    }
    if (c->roce && p->gid_index < 0) {
        snprintf(err, errlen,
                 "%s is a RoCE port without a usable GID (no IP address on its network "
                 "interface?)",
                 p->name);
        rc = -EADDRNOTAVAIL;
        goto fail;
    }
    c->lid = pa.lid;
    c->active_mtu = pa.active_mtu;
    c->mtu_bytes = s_mtu_bytes(pa.active_mtu);
    c->max_rd_atomic = (uint8_t)(dev.max_qp_init_rd_atom > 16 ? 16 : dev.max_qp_init_rd_atom);
    c->max_dest_rd_atomic = (uint8_t)(dev.max_qp_rd_atom > 16 ? 16 : dev.max_qp_rd_atom);
    if (!c->max_rd_atomic)
        c->max_rd_atomic = 1;
    if (!c->max_dest_rd_atomic)
        c->max_dest_rd_atomic = 1;
    if (v->query_gid(c->ctx, c->port_num, c->gid_index, &c->gid) != 0)
        memset(&c->gid, 0, sizeof c->gid);
    c->pd = v->alloc_pd(c->ctx);
    if (!c->pd) {
        snprintf(err, errlen, "ibv_alloc_pd on %s failed: %s", p->hca, strerror(errno));
        rc = -EIO;
        goto fail;
    }
    if ((rc = s_alloc_buffers(c, o, err, errlen)) < 0)
        goto fail;
    c->cq = v->create_cq(c->ctx, RDMA_TX_DEPTH + RDMA_RX_DEPTH + 16, NULL, NULL, 0);
    c->ctl_cq = v->create_cq(c->ctx, 2 * S_CTL_SLOTS + 8, NULL, NULL, 0);
    if (!c->cq || !c->ctl_cq) {
        snprintf(err, errlen, "ibv_create_cq on %s failed: %s", p->hca, strerror(errno));
        rc = -EIO;
        goto fail;
    }
    c->qp = s_create_qp(c, c->cq, RDMA_TX_DEPTH + 8, RDMA_RX_DEPTH, &c->max_inline);
    c->ctl_qp = s_create_qp(c, c->ctl_cq, 8, S_CTL_SLOTS, NULL);
    if (!c->qp || !c->ctl_qp) {
        snprintf(err, errlen, "ibv_create_qp (RC) on %s failed: %s", p->hca, strerror(errno));
        rc = -EIO;
        goto fail;
    }
    if (s_to_init(c, c->qp) || s_to_init(c, c->ctl_qp)) {
        snprintf(err, errlen, "moving the queue pairs of %s to INIT failed: %s", p->name,
                 strerror(errno));
        rc = -EIO;
        goto fail;
    }
    /* Control receives go up before the other side can send: a message to a queue pair with
     * nothing posted is an RNR retry, and those are best kept for the data path. */
    for (unsigned s = 0; s < S_CTL_SLOTS; s++)
        if (s_post_ctl_recv(c, s) != 0) {
            snprintf(err, errlen, "posting control receives on %s failed", p->name);
            rc = -EIO;
            goto fail;
        }
    c->psn = s_random_psn();
    c->ctl_psn = s_random_psn();
    *out = c;
    return 0;
fail:
    rdma_conn_close(&c);
    return rc;
}

void rdma_conn_close(rdma_conn_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    rdma_conn_t *c = *self_p;
    rdma_verbs_t *v = c->v;
    if (c->qp)
        v->destroy_qp(c->qp);
    if (c->ctl_qp)
        v->destroy_qp(c->ctl_qp);
    if (c->cq)
        v->destroy_cq(c->cq);
    if (c->ctl_cq)
        v->destroy_cq(c->ctl_cq);
    if (c->mr)
        v->dereg_mr(c->mr);
    if (c->small_mr)
        v->dereg_mr(c->small_mr);
    if (c->dmabuf_fd >= 0)
        close(c->dmabuf_fd);
    if (c->dptr)
        rdma_gpu_free(c->gpu, c->dptr);
    free(c->host);
    free(c->small);
    free(c->staging);
    if (c->pd)
        v->dealloc_pd(c->pd);
    if (c->ctx)
        v->close_device(c->ctx);
    free(c);
    *self_p = NULL;
}

void rdma_conn_endpoint(const rdma_conn_t *c, rdma_endpoint_t *e)
{
    memset(e, 0, sizeof *e);
    fb_strlcpy(e->port, c->port_name, sizeof e->port);
    e->lid = c->lid;
    memcpy(e->gid, c->gid.raw, 16);
    e->mtu = c->mtu_bytes ? c->mtu_bytes : 1024;
    e->qpn = c->qp->qp_num;
    e->psn = c->psn;
    e->ctl_qpn = c->ctl_qp->qp_num;
    e->ctl_psn = c->ctl_psn;
    e->rkey = c->mr->rkey;
    e->src_addr = s_src_addr(c);
    e->sink_addr = s_sink_addr(c);
    e->region = c->region;
    e->lat_rkey = c->small_mr->rkey;
    e->lat_addr = (uint64_t)(uintptr_t)(c->small + S_LAT_RECV);
    e->gbps = c->gbps;
    e->roce = c->roce;
    e->gpu = c->gpu != NULL;
}

static int s_connect_qp(rdma_conn_t *c, struct ibv_qp *qp, uint32_t my_psn, uint32_t dest_qpn,
                        uint32_t dest_psn, const rdma_endpoint_t *r)
{
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    uint32_t mtu = r->mtu < c->mtu_bytes ? r->mtu : c->mtu_bytes;
    a.path_mtu = s_mtu_enum(mtu ? mtu : 1024);
    a.dest_qp_num = dest_qpn;
    a.rq_psn = dest_psn;
    a.max_dest_rd_atomic = c->max_dest_rd_atomic;
    a.min_rnr_timer = 12; /* 0.64 ms, perftest's value */
    a.ah_attr.dlid = r->lid;
    a.ah_attr.sl = 0;
    a.ah_attr.src_path_bits = 0;
    a.ah_attr.port_num = c->port_num;
    /* Routed by GID on RoCE, and on InfiniBand when the peer is in another subnet. */
    bool global = c->roce || r->roce || memcmp(r->gid, c->gid.raw, 8) != 0 || r->lid == 0;
    if (global) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.grh.traffic_class = 0;
        a.ah_attr.grh.flow_label = 0;
    }
    if (c->v->modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return errno ? -errno : -EIO;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14; /* 4.096 us * 2^14 = 67 ms before a retransmission */
    a.retry_cnt = 7;
    a.rnr_retry = 7; /* 7: retry for ever while the receiver has nothing posted */
    a.sq_psn = my_psn;
    a.max_rd_atomic = c->max_rd_atomic;
    if (c->v->modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        return errno ? -errno : -EIO;
    return 0;
}

int rdma_conn_connect(rdma_conn_t *c, const rdma_endpoint_t *remote, char *err, size_t errlen)
{
    c->remote = *remote;
    int rc = s_connect_qp(c, c->qp, c->psn, remote->qpn, remote->psn, remote);
    if (rc == 0)
        rc = s_connect_qp(c, c->ctl_qp, c->ctl_psn, remote->ctl_qpn, remote->ctl_psn, remote);
    if (rc < 0) {
        snprintf(err, errlen, "connecting %s to %s (LID %u, QPN %u) failed: %s", c->port_name,
                 remote->port, remote->lid, remote->qpn, strerror(-rc));
        return rc;
    }
    c->connected = true;
    return 0;
}

/* ---- completions ----------------------------------------------------------------------------- */

typedef struct {
    rdma_run_status_t *status;
    size_t step;
} s_run_t;

static void s_fail(rdma_run_status_t *st, size_t step, int rc, bool fault, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void s_fail(rdma_run_status_t *st, size_t step, int rc, bool fault, const char *fmt, ...)
{
    if (st->rc)
        return; /* the first failure is the one that explains the rest */
    st->rc = rc;
    st->fault = fault;
    st->failed_step = step;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->what, sizeof st->what, fmt, ap);
    va_end(ap);
}

static const char *s_wc_hint(enum ibv_wc_status s)
{
    switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
        return " (no acknowledgement after 7 retransmissions: packets lost on the link, or the "
               "partner's HCA stopped answering)";
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return " (the receiver had no receive posted)";
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
        return " (memory registration refused the access)";
    case IBV_WC_WR_FLUSH_ERR:
        return " (the queue pair was already in error)";
    default:
        return "";
    }
}

/* Reports a work completion error of conn c. */
static void s_wc_error(rdma_conn_t *c, rdma_run_status_t *st, size_t step, const struct ibv_wc *wc,
                       const char *doing)
{
    s_fail(st, step, -EIO, true, "%s on %s -> %s: work completion error %s (%d, vendor 0x%x)%s",
           doing, c->port_name, c->remote.port, c->v->wc_status_str(wc->status), (int)wc->status,
           wc->vendor_err, s_wc_hint(wc->status));
}

/* ---- the control channel --------------------------------------------------------------------- */

/* Marks of control receives that completed while the code was waiting for something else, by
 * slot: 0 = none, else the order they arrived in. They live after the control send message in
 * the small buffer, where the HCA never writes. */
static uint8_t *s_marks(rdma_conn_t *c)
{
    return c->small + S_CTL_SEND + RDMA_CTL_BYTES;
}

static void s_ctl_keep(rdma_conn_t *c, const struct ibv_wc *wc)
{
    unsigned slot = (unsigned)(wc->wr_id & 0xff);
    if ((wc->wr_id & S_TAG_MASK) != S_TAG_CTL_RECV || slot >= S_CTL_SLOTS)
        return;
    if (++c->mark_seq == 0)
        c->mark_seq = 1;
    s_marks(c)[slot] = c->mark_seq;
}

/* Polls the control CQ for one completion: 1 with *wc when one completed, 0 when none had, -EIO
 * when the poll failed, -ECOMM when the completion is an error. */
static int s_ctl_poll(rdma_conn_t *c, struct ibv_wc *wc)
{
    int n = ibv_poll_cq(c->ctl_cq, 1, wc);
    if (n < 0)
        return -EIO;
    if (n == 1 && wc->status != IBV_WC_SUCCESS)
        return -ECOMM;
    return n;
}

/* Sends one control message and waits for its completion (the send buffer is reused by the
 * next message). */
static int s_ctl_send(rdma_conn_t *c, const rdma_ctl_t *m, uint64_t timeout_ns)
{
    uint8_t *buf = c->small + S_CTL_SEND;
    rdma_ctl_encode(m, buf);
    struct ibv_sge sge = {(uint64_t)(uintptr_t)buf, RDMA_CTL_BYTES, c->small_mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = S_TAG_CTL_SEND | (++c->ctl_seq & 0xffffff);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(c->ctl_qp, &wr, &bad))
        return -EIO;
    /* Wait for the send to complete: the control buffer is reused by the next message. Receive
     * completions that come first stay in the CQ only if we leave them, so the wait polls one
     * entry at a time and hands receives to the pending slot. */
    uint64_t deadline = s_now_ns() + timeout_ns;
    for (unsigned spin = 0;; spin++) {
        struct ibv_wc wc;
        int n = s_ctl_poll(c, &wc);
        if (n < 0)
            return n;
        if (n == 1) {
            if ((wc.wr_id & S_TAG_MASK) == S_TAG_CTL_SEND)
                return 0;
            /* A receive that raced ahead of our send's completion: kept for s_ctl_recv. */
            s_ctl_keep(c, &wc);
        }
        if (spin % S_SPIN_CHECK == 0 && s_now_ns() > deadline)
            return -ETIMEDOUT;
    }
}

/* Takes the next control message (one kept by s_ctl_send first), decodes it and reposts its
 * slot. Slots complete in posting order, so the lowest marked slot in posting order is next;
 * with at most a couple of messages in flight, a scan is enough. */
static int s_ctl_recv(rdma_conn_t *c, rdma_ctl_t *m, uint64_t timeout_ns)
{
    uint8_t *marks = s_marks(c);
    uint64_t deadline = s_now_ns() + timeout_ns;
    for (unsigned spin = 0;; spin++) {
        int slot = -1;
        /* Kept receives first, oldest first. */
        for (unsigned s = 0; s < S_CTL_SLOTS; s++)
            if (marks[s] && (slot < 0 || marks[s] < marks[slot]))
                slot = (int)s;
        if (slot < 0) {
            struct ibv_wc wc;
            int n = s_ctl_poll(c, &wc);
            if (n < 0)
                return n;
            if (n == 1 && (wc.wr_id & S_TAG_MASK) == S_TAG_CTL_RECV)
                slot = (int)(wc.wr_id & 0xff);
        }
        if (slot >= 0 && slot < S_CTL_SLOTS) {
            marks[slot] = 0;
            bool pending = false;
            for (unsigned s = 0; s < S_CTL_SLOTS; s++)
                pending |= marks[s] != 0;
            if (!pending)
                c->mark_seq = 0; /* so that the order never wraps */
            int rc = rdma_ctl_decode(c->small + S_CTL_RECV + (unsigned)slot * RDMA_CTL_BYTES, m);
            if (s_post_ctl_recv(c, (unsigned)slot) != 0)
                return -EIO;
            return rc < 0 ? -EPROTO : 0;
        }
        if (spin % S_SPIN_CHECK == 0 && s_now_ns() > deadline)
            return -ETIMEDOUT;
    }
}

/* While a receiver waits for data: has the partner sent ABORT? A receive that completes is kept
 * for s_ctl_recv either way. */
static bool s_ctl_abort_seen(rdma_conn_t *c)
{
    struct ibv_wc wc;
    if (s_ctl_poll(c, &wc) != 1)
        return false;
    s_ctl_keep(c, &wc);
    unsigned slot = (unsigned)(wc.wr_id & 0xff);
    rdma_ctl_t m;
    return (wc.wr_id & S_TAG_MASK) == S_TAG_CTL_RECV && slot < S_CTL_SLOTS &&
           rdma_ctl_decode(c->small + S_CTL_RECV + slot * RDMA_CTL_BYTES, &m) == 0 &&
           m.kind == RDMA_CTL_ABORT;
}

/* Waits for message `kind` of step `step`; ABORT from the partner ends the run. */
static int s_ctl_expect(rdma_conn_t *c, uint32_t kind, size_t step, uint64_t timeout_ns,
                        rdma_ctl_t *m, rdma_run_status_t *st)
{
    int rc = s_ctl_recv(c, m, timeout_ns);
    if (rc == -ETIMEDOUT) {
        s_fail(st, step, rc, true,
               "the partner (%s) sent nothing on the control channel for %.0f s", c->remote.port,
               (double)timeout_ns / 1e9);
        return rc;
    }
    if (rc < 0) {
        s_fail(st, step, rc, true, "control channel %s <-> %s failed: %s", c->port_name,
               c->remote.port, strerror(-rc));
        return rc;
    }
    if (m->kind == RDMA_CTL_ABORT) {
        s_fail(st, step, -ECONNABORTED, false, "the partner stopped at step %u (status %d)",
               m->step, m->status);
        return -ECONNABORTED;
    }
    if (m->kind != kind || m->step != step) {
        s_fail(st, step, -EPROTO, false,
               "out of step with the partner: expected message %u for step %zu, got %u for %u",
               kind, step, m->kind, m->step);
        return -EPROTO;
    }
    return 0;
}

static int s_ctl_say(rdma_conn_t *c, uint32_t kind, size_t step, int32_t status,
                     rdma_run_status_t *st)
{
    rdma_ctl_t m = {kind, (uint32_t)step, status, 0};
    int rc = s_ctl_send(c, &m, 10ull * 1000000000ull);
    if (rc < 0)
        s_fail(st, step, rc, true, "sending on the control channel %s -> %s failed: %s",
               c->port_name, c->remote.port, strerror(-rc));
    return rc;
}

/* ---- bandwidth flows ------------------------------------------------------------------------- */

/* One side's progress through a bandwidth step: the poster of operations, or the receiver of
 * sends. Poll until done; in loopback both flows are polled in turn by one thread. */
typedef struct {
    rdma_conn_t *c;
    rdma_mode_t mode;
    bool receiver;
    uint64_t size, iters, slots, rslots;
    uint64_t posted, completed;
    uint64_t t0;
    uint64_t *t, *ops;
    size_t n_t, cap_t;
    bool done;
} s_flow_t;

static void s_flow_init(s_flow_t *f, rdma_conn_t *c, rdma_mode_t mode, bool receiver, uint64_t size,
                        uint64_t iters)
{
    memset(f, 0, sizeof *f);
    f->c = c;
    f->mode = mode;
    f->receiver = receiver;
    f->size = size;
    f->iters = iters;
    f->slots = S_SLOTS(c->region, size);
    f->rslots = S_SLOTS(c->remote.region, size);
    f->cap_t = (size_t)(iters / RDMA_SIGNAL_EVERY + 2);
    f->t = xcalloc(f->cap_t, sizeof *f->t);
    f->ops = xcalloc(f->cap_t, sizeof *f->ops);
}

static void s_flow_free(s_flow_t *f)
{
    free(f->t);
    free(f->ops);
    f->t = f->ops = NULL;
}

static void s_flow_stamp(s_flow_t *f, uint64_t ops)
{
    if (f->n_t < f->cap_t) {
        f->t[f->n_t] = s_now_ns();
        f->ops[f->n_t] = ops;
        f->n_t++;
    }
}

static int s_post_recv(s_flow_t *f)
{
    rdma_conn_t *c = f->c;
    uint64_t slot = f->posted % f->slots;
    struct ibv_sge sge = {s_sink_addr(c) + slot * f->size, (uint32_t)f->size, c->mr->lkey};
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = S_TAG_RECV | f->posted;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(c->qp, &wr, &bad))
        return -EIO;
    f->posted++;
    return 0;
}

/* The receiver posts its first receives before it says READY. */
static int s_flow_prepost(s_flow_t *f)
{
    while (f->posted < f->iters && f->posted < RDMA_RX_DEPTH)
        if (s_post_recv(f) < 0)
            return -EIO;
    return 0;
}

static int s_post_op(s_flow_t *f)
{
    rdma_conn_t *c = f->c;
    uint64_t i = f->posted;
    bool signal = (i + 1) % RDMA_SIGNAL_EVERY == 0 || i + 1 == f->iters;
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    sge.length = (uint32_t)f->size;
    sge.lkey = c->mr->lkey;
    wr.wr_id = S_TAG_DATA | (i + 1);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
    if (f->mode == RDMA_MODE_READ) {
        sge.addr = s_sink_addr(c) + (i % f->slots) * f->size;
        wr.opcode = IBV_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = c->remote.src_addr + (i % f->rslots) * f->size;
        wr.wr.rdma.rkey = c->remote.rkey;
    } else {
        sge.addr = s_src_addr(c) + (i % f->slots) * f->size;
        if (f->mode == RDMA_MODE_WRITE) {
            wr.opcode = IBV_WR_RDMA_WRITE;
            wr.wr.rdma.remote_addr = c->remote.sink_addr + (i % f->rslots) * f->size;
            wr.wr.rdma.rkey = c->remote.rkey;
        } else {
            wr.opcode = IBV_WR_SEND;
        }
        if (c->host && f->size <= c->max_inline)
            wr.send_flags |= IBV_SEND_INLINE;
    }
    if (ibv_post_send(c->qp, &wr, &bad))
        return -EIO;
    f->posted++;
    return 0;
}

/* One round of progress. Returns 0, or -EIO after recording a failure. */
static int s_flow_poll(s_flow_t *f, rdma_run_status_t *st, size_t step)
{
    rdma_conn_t *c = f->c;
    if (f->done)
        return 0;
    if (!f->receiver) {
        if (f->posted == 0)
            f->t0 = s_now_ns();
        while (f->posted < f->iters && f->posted - f->completed < RDMA_TX_DEPTH)
            if (s_post_op(f) < 0) {
                s_fail(st, step, -EIO, false, "ibv_post_send on %s failed", c->port_name);
                return -EIO;
            }
    }
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(c->cq, 16, wc);
    if (n < 0) {
        s_fail(st, step, -EIO, true, "polling the completion queue of %s failed", c->port_name);
        return -EIO;
    }
    uint64_t before = f->completed;
    for (int i = 0; i < n; i++) {
        if (wc[i].status != IBV_WC_SUCCESS) {
            s_wc_error(c, st, step, &wc[i], rdma_mode_name(f->mode));
            return -EIO;
        }
        uint64_t tag = wc[i].wr_id & S_TAG_MASK, val = wc[i].wr_id & ~S_TAG_MASK;
        if (tag == S_TAG_DATA && !f->receiver) {
            f->completed = val;
        } else if (tag == S_TAG_RECV && f->receiver) {
            /* The receiver cannot see when the sender started: its clock starts at the first
             * arrival, and its count at the arrivals after that one. */
            if (f->completed == 0)
                f->t0 = s_now_ns();
            f->completed++;
            if (f->posted < f->iters && s_post_recv(f) < 0) {
                s_fail(st, step, -EIO, false, "ibv_post_recv on %s failed", c->port_name);
                return -EIO;
            }
        }
    }
    /* One stamp per poll: completions reaped together arrived together as far as this side can
     * tell. The receiver stamps every RDMA_SIGNAL_EVERY arrivals, like a signalled sender. */
    if (f->completed != before &&
        (!f->receiver || f->completed / RDMA_SIGNAL_EVERY != before / RDMA_SIGNAL_EVERY ||
         f->completed == f->iters))
        s_flow_stamp(f, f->receiver ? f->completed - 1 : f->completed);
    if (f->completed >= f->iters)
        f->done = true;
    return 0;
}

static void s_flow_result(const s_flow_t *f, rdma_bw_t *bw)
{
    /* Min and peak over 1/32 of the run, and never less than 20 us: the responder acknowledges
     * several messages at once, and shorter windows would measure that batching. */
    rdma_bw_compute(f->size, f->t0, f->t, f->ops, f->n_t, 32, 20000, bw);
}

/* A deadline for a step of iters operations of size bytes: 1 Gb/s at worst, plus 10 s. */
static uint64_t s_step_timeout_ns(uint64_t size, uint64_t iters)
{
    double secs = 10.0 + (double)size * (double)iters * 8.0 / 1e9;
    return (uint64_t)(secs * 1e9);
}

/* Runs flows until both are done (b may be NULL), or fails on the deadline. watch (may be NULL):
 * a connection whose partner may send ABORT meanwhile (a receiver in a pair). */
static int s_flows_run(s_flow_t *a, s_flow_t *b, rdma_conn_t *watch, uint64_t timeout_ns,
                       rdma_run_status_t *st, size_t step)
{
    uint64_t deadline = s_now_ns() + timeout_ns;
    for (unsigned spin = 0; !a->done || (b && !b->done); spin++) {
        if (s_flow_poll(a, st, step) < 0 || (b && s_flow_poll(b, st, step) < 0))
            return -EIO;
        if (spin % S_SPIN_CHECK == 0 && watch && s_ctl_abort_seen(watch)) {
            s_fail(st, step, -ECONNABORTED, false, "the partner stopped during step %zu", step);
            return -ECONNABORTED;
        }
        if (spin % S_SPIN_CHECK == 0 && s_now_ns() > deadline) {
            const s_flow_t *late = !a->done ? a : b;
            s_fail(st, step, -ETIMEDOUT, true,
                   "%s %" PRIu64 " B on %s: %" PRIu64 " of %" PRIu64
                   " operations completed in %.0f s",
                   rdma_mode_name(late->mode), late->size, late->c->port_name, late->completed,
                   late->iters, (double)timeout_ns / 1e9);
            return -ETIMEDOUT;
        }
    }
    return 0;
}

/* Makes the active side's RDMA writes visible at the remote sink before DONE is sent: an RDMA
 * read of the sink's first bytes returns only after the writes ahead of it are placed. */
static int s_flush(rdma_conn_t *c, rdma_run_status_t *st, size_t step)
{
    struct ibv_sge sge = {(uint64_t)(uintptr_t)(c->small + S_FLUSH), 8, c->small_mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = S_TAG_FLUSH;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = c->remote.sink_addr;
    wr.wr.rdma.rkey = c->remote.rkey;
    if (ibv_post_send(c->qp, &wr, &bad)) {
        s_fail(st, step, -EIO, false, "ibv_post_send (flush) on %s failed", c->port_name);
        return -EIO;
    }
    uint64_t deadline = s_now_ns() + 10ull * 1000000000ull;
    for (unsigned spin = 0;; spin++) {
        struct ibv_wc wc;
        int n = ibv_poll_cq(c->cq, 1, &wc);
        if (n < 0)
            return -EIO;
        if (n == 1) {
            if (wc.status != IBV_WC_SUCCESS) {
                s_wc_error(c, st, step, &wc, "flush read");
                return -EIO;
            }
            if (wc.wr_id == S_TAG_FLUSH)
                return 0;
        }
        if (spin % S_SPIN_CHECK == 0 && s_now_ns() > deadline) {
            s_fail(st, step, -ETIMEDOUT, true, "flush read on %s did not complete in 10 s",
                   c->port_name);
            return -ETIMEDOUT;
        }
    }
}

/* ---- latency --------------------------------------------------------------------------------- */

static int s_lat_post(rdma_conn_t *c, uint64_t size, uint64_t i, rdma_run_status_t *st, size_t step,
                      uint64_t *unsignalled)
{
    uint8_t *msg = c->small + S_LAT_SEND;
    msg[size - 1] = (uint8_t)i;
    bool signal = ++*unsignalled >= RDMA_SIGNAL_EVERY;
    struct ibv_sge sge = {(uint64_t)(uintptr_t)msg, (uint32_t)size, c->small_mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = S_TAG_LAT | i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags =
        (signal ? IBV_SEND_SIGNALED : 0) | (size <= c->max_inline ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = c->remote.lat_addr;
    wr.wr.rdma.rkey = c->remote.lat_rkey;
    if (ibv_post_send(c->qp, &wr, &bad)) {
        s_fail(st, step, -EIO, false, "ibv_post_send (latency) on %s failed", c->port_name);
        return -EIO;
    }
    if (signal)
        *unsignalled = 0;
    /* Reap completions as they come so the send queue never fills with unsignalled work. */
    struct ibv_wc wc[4];
    int n = ibv_poll_cq(c->cq, 4, wc);
    for (int k = 0; k < n; k++)
        if (wc[k].status != IBV_WC_SUCCESS) {
            s_wc_error(c, st, step, &wc[k], "latency write");
            return -EIO;
        }
    return n < 0 ? -EIO : 0;
}

/* Spins until the last byte of c's latency receive area is (uint8_t)i. */
static int s_lat_wait(rdma_conn_t *c, uint64_t size, uint64_t i, uint64_t deadline,
                      rdma_run_status_t *st, size_t step)
{
    const uint8_t *last = c->small + S_LAT_RECV + size - 1;
    for (unsigned spin = 0; __atomic_load_n(last, __ATOMIC_ACQUIRE) != (uint8_t)i; spin++)
        if (spin % S_SPIN_CHECK == 0 && s_now_ns() > deadline) {
            s_fail(st, step, -ETIMEDOUT, true,
                   "latency ping-pong %s <-> %s stalled at round %" PRIu64, c->port_name,
                   c->remote.port, i);
            return -ETIMEDOUT;
        }
    return 0;
}

/* The ping-pong: `a` starts each round, `b` answers. Pair: one of them is NULL (the other side
 * of the round is the partner). Samples are half round trips, as ib_write_lat reports. */
static int s_latency(rdma_conn_t *a, rdma_conn_t *b, bool initiator, uint64_t size, uint64_t iters,
                     rdma_lat_t *out, rdma_run_status_t *st, size_t step)
{
    rdma_conn_t *me = a ? a : b;
    double *samples = initiator ? xcalloc(iters ? iters : 1, sizeof *samples) : NULL;
    uint64_t ua = 0, ub = 0;
    uint64_t deadline = s_now_ns() + 30ull * 1000000000ull + iters * 1000000ull;
    int rc = 0;
    for (uint64_t i = 1; i <= iters && rc == 0; i++) {
        if (a && b) { /* loopback: both ends here */
            uint64_t t = s_now_ns();
            if ((rc = s_lat_post(a, size, i, st, step, &ua)) == 0 &&
                (rc = s_lat_wait(b, size, i, deadline, st, step)) == 0 &&
                (rc = s_lat_post(b, size, i, st, step, &ub)) == 0 &&
                (rc = s_lat_wait(a, size, i, deadline, st, step)) == 0)
                samples[i - 1] = (double)(s_now_ns() - t) / 2e3;
        } else if (initiator) {
            uint64_t t = s_now_ns();
            if ((rc = s_lat_post(me, size, i, st, step, &ua)) == 0 &&
                (rc = s_lat_wait(me, size, i, deadline, st, step)) == 0)
                samples[i - 1] = (double)(s_now_ns() - t) / 2e3;
        } else {
            if ((rc = s_lat_wait(me, size, i, deadline, st, step)) == 0)
                rc = s_lat_post(me, size, i, st, step, &ua);
        }
    }
    if (rc == 0 && samples)
        rdma_lat_compute(samples, (size_t)iters, out);
    free(samples);
    return rc;
}

/* Drains the data CQ after a latency step so that later steps see only their own completions. */
static void s_drain(rdma_conn_t *c)
{
    struct ibv_wc wc[16];
    uint64_t deadline = s_now_ns() + 100000000ull;
    while (s_now_ns() < deadline)
        if (ibv_poll_cq(c->cq, 16, wc) <= 0)
            break;
}

/* ---- steps ----------------------------------------------------------------------------------- */

static uint64_t s_used_slots(uint64_t slots, uint64_t iters)
{
    return iters < slots ? iters : slots;
}

/* The slots a step of iters messages of size bytes uses in a region. */
static uint64_t s_step_slots(const rdma_conn_t *c, uint64_t size, uint64_t iters)
{
    return s_used_slots(S_SLOTS(c->region, size), iters);
}

/* The passive side's preparation: returns 0 or -EIO (GPU copy). */
static int s_prepare_passive(rdma_conn_t *c, const rdma_step_t *s, uint64_t iters,
                             s_flow_t *recv_flow)
{
    uint64_t slots = s_step_slots(c, s->size, iters);
    switch (s->mode) {
    case RDMA_MODE_WRITE:
        return s_fill(c, c->region, slots, s->size, s->seed, true);
    case RDMA_MODE_READ:
        return s_fill(c, 0, slots, s->size, s->seed, false);
    case RDMA_MODE_SEND:
        if (s_fill(c, c->region, slots, s->size, s->seed, true) < 0)
            return -EIO;
        return s_flow_prepost(recv_flow);
    default:
        return 0;
    }
}

static int s_prepare_active(rdma_conn_t *c, const rdma_step_t *s, uint64_t iters)
{
    uint64_t slots = s_step_slots(c, s->size, iters);
    if (s->mode == RDMA_MODE_READ)
        return s_fill(c, c->region, slots, s->size, s->seed, true);
    return s_fill(c, 0, slots, s->size, s->seed, false);
}

static void s_gpu_copy_failed(rdma_run_status_t *st, size_t step, rdma_conn_t *c)
{
    s_fail(st, step, -EIO, false, "copying the test pattern to or from GPU memory for %s failed",
           c->port_name);
}

/* One bandwidth step in a pair. */
static int s_pair_bw(rdma_conn_t *c, const rdma_step_t *s, size_t k, bool active, uint64_t iters,
                     rdma_step_result_t *r, rdma_run_status_t *st)
{
    rdma_ctl_t m;
    uint64_t timeout = s_step_timeout_ns(s->size, iters);
    r->ran = true;
    r->active = active;
    if (!active) {
        s_flow_t f;
        s_flow_init(&f, c, s->mode, true, s->size, iters);
        int rc = s_prepare_passive(c, s, iters, &f);
        if (rc < 0) {
            s_flow_free(&f);
            s_gpu_copy_failed(st, k, c);
            return rc;
        }
        if ((rc = s_ctl_say(c, RDMA_CTL_READY, k, 0, st)) == 0 && s->mode == RDMA_MODE_SEND &&
            (rc = s_flows_run(&f, NULL, c, timeout, st, k)) == 0)
            s_flow_result(&f, &r->bw);
        s_flow_free(&f);
        if (rc == 0)
            rc = s_ctl_expect(c, RDMA_CTL_DONE, k, timeout, &m, st);
        if (rc == 0 && m.status != 0) {
            s_fail(st, k, -ECONNABORTED, false, "the partner failed step %zu", k);
            return -ECONNABORTED;
        }
        if (rc == 0 && s->mode != RDMA_MODE_READ) {
            if (s_check(c, c->region, s_step_slots(c, s->size, iters), s->size, s->seed, r) < 0) {
                s_gpu_copy_failed(st, k, c);
                return -EIO;
            }
        }
        return rc;
    }
    if (s_prepare_active(c, s, iters) < 0) {
        s_gpu_copy_failed(st, k, c);
        return -EIO;
    }
    int rc = s_ctl_expect(c, RDMA_CTL_READY, k, timeout, &m, st);
    if (rc < 0)
        return rc;
    s_flow_t f;
    s_flow_init(&f, c, s->mode, false, s->size, iters);
    rc = s_flows_run(&f, NULL, NULL, timeout, st, k);
    if (rc == 0) {
        s_flow_result(&f, &r->bw);
        if (s->mode == RDMA_MODE_WRITE)
            rc = s_flush(c, st, k);
        if (rc == 0 && s->mode == RDMA_MODE_READ &&
            s_check(c, c->region, s_used_slots(f.slots, iters), s->size, s->seed, r) < 0) {
            s_gpu_copy_failed(st, k, c);
            rc = -EIO;
        }
    }
    s_flow_free(&f);
    int say = s_ctl_say(c, rc == 0 ? RDMA_CTL_DONE : RDMA_CTL_ABORT, k, rc, st);
    return rc < 0 ? rc : say;
}

/* Starts step k of n: its result cleared, and the caller's progress callback told. */
static rdma_step_result_t *s_step_begin(const rdma_step_t *steps, size_t k, size_t n,
                                        const rdma_run_opts_t *o, rdma_step_result_t *results)
{
    rdma_step_result_t *r = &results[k];
    memset(r, 0, sizeof *r);
    if (o->on_step)
        o->on_step(o->user, k, n, &steps[k]);
    return r;
}

void rdma_run_pair(rdma_conn_t *c, const rdma_step_t *steps, size_t n, const rdma_run_opts_t *o,
                   rdma_step_result_t *results, rdma_run_status_t *status)
{
    memset(status, 0, sizeof *status);
    for (size_t k = 0; k < n && status->rc == 0; k++) {
        const rdma_step_t *s = &steps[k];
        rdma_step_result_t *r = s_step_begin(steps, k, n, o, results);
        if (s->mode == RDMA_MODE_LAT) {
            /* Both ends must be spinning before the first ping: a READY each way, sent after the
             * receive area is cleared (a ping that lands before the clear would be lost). */
            rdma_ctl_t m;
            memset(c->small + S_LAT_RECV, 0, S_LAT_BYTES);
            if (s_ctl_say(c, RDMA_CTL_READY, k, 0, status) < 0 ||
                s_ctl_expect(c, RDMA_CTL_READY, k, 30ull * 1000000000ull, &m, status) < 0)
                break;
            r->ran = true;
            r->active = o->rank == 0;
            if (s_latency(o->rank == 0 ? c : NULL, o->rank == 0 ? NULL : c, o->rank == 0, s->size,
                          o->lat_iters, &r->lat, status, k) == 0)
                s_drain(c);
            continue;
        }
        if (s_pair_bw(c, s, k, s->active == o->rank, o->iters, r, status) < 0 && status->rc == 0)
            s_fail(status, k, -EIO, false, "step %zu failed", k);
    }
    /* Tell a partner still waiting that this side stopped, so it fails now, not at its timeout. */
    if (status->rc && status->rc != -ECONNABORTED) {
        rdma_ctl_t m = {RDMA_CTL_ABORT, (uint32_t)status->failed_step, status->rc, 0};
        s_ctl_send(c, &m, 1000000000ull);
    }
}

void rdma_run_loopback(rdma_conn_t *a, rdma_conn_t *b, const rdma_step_t *steps, size_t n,
                       const rdma_run_opts_t *o, rdma_step_result_t *results,
                       rdma_run_status_t *status)
{
    memset(status, 0, sizeof *status);
    for (size_t k = 0; k < n && status->rc == 0; k++) {
        const rdma_step_t *s = &steps[k];
        rdma_step_result_t *r = s_step_begin(steps, k, n, o, results);
        r->ran = true;
        r->active = true;
        if (s->mode == RDMA_MODE_LAT) {
            memset(a->small + S_LAT_RECV, 0, S_LAT_BYTES);
            memset(b->small + S_LAT_RECV, 0, S_LAT_BYTES);
            if (s_latency(a, b, true, s->size, o->lat_iters, &r->lat, status, k) == 0) {
                s_drain(a);
                s_drain(b);
            }
            continue;
        }
        uint64_t timeout = s_step_timeout_ns(s->size, o->iters);
        s_flow_t fa, fb;
        s_flow_init(&fa, a, s->mode, false, s->size, o->iters);
        s_flow_init(&fb, b, s->mode, true, s->size, o->iters);
        bool send = s->mode == RDMA_MODE_SEND;
        if (s_prepare_passive(b, s, o->iters, &fb) < 0 || s_prepare_active(a, s, o->iters) < 0) {
            s_gpu_copy_failed(status, k, a);
        } else if (s_flows_run(&fa, send ? &fb : NULL, NULL, timeout, status, k) == 0) {
            s_flow_result(&fa, &r->bw);
            int rc = s->mode == RDMA_MODE_WRITE ? s_flush(a, status, k) : 0;
            /* The sink is b's for write and send, a's own for read. */
            rdma_conn_t *owner = s->mode == RDMA_MODE_READ ? a : b;
            uint64_t slots = s->mode == RDMA_MODE_READ ? fa.slots : send ? fb.slots : fa.rslots;
            if (rc == 0 && s_check(owner, owner->region, s_used_slots(slots, o->iters), s->size,
                                   s->seed, r) < 0)
                s_gpu_copy_failed(status, k, owner);
        }
        s_flow_free(&fa);
        s_flow_free(&fb);
    }
}

#endif
