/* SPDX-License-Identifier: Apache-2.0 */
/* The rdmabw data path without an HCA: a small in-process RC transport stands in for libibverbs
 * and a provider (queue pairs, completion queues and memory regions in this process; RDMA write
 * and read are memcpy between registered regions with rkey checks; a send waits for a posted
 * receive as RNR retry would; completions in order, signalled ones only). Through it the real
 * engine and workload run end to end: loopback and a pair of members in two threads (exchange
 * through files), every mode and size, latency ping-pongs, per-port metrics; and the faults the
 * workload exists to find are injected into the transport: a byte corrupted on the way (a data
 * corruption finding on the receiver), and a write that exhausts its retries (a link finding on
 * the sender, and one on the partner that the sender's report explains). Bandwidth figures from
 * memcpy mean nothing; their presence and consistency are what is checked. */
#if defined(__has_include)
#if __has_include(<infiniband/verbs.h>)
#define FB_HAVE_VERBS 1
#endif
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rdma_pair_fixture.h"

#include "common/util.h"
#include "rdma/rdma_verbs.h"
#include "rdma/rdmabw.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FB_HAVE_VERBS

/* ---- the in-process transport ---------------------------------------------------------------- */

typedef struct {
    struct ibv_cq cq; /* first: the engine sees a struct ibv_cq */
    struct ibv_wc *ring;
    size_t cap, head, n;
} fake_cq_t;

typedef struct {
    uint64_t wr_id, addr;
    uint32_t len;
} fake_recv_t;

typedef struct {
    uint8_t *data;
    uint32_t len;
    uint64_t wr_id;
    bool signaled;
    struct fake_qp *from;
} fake_pending_t;

typedef struct fake_qp {
    struct ibv_qp qp;
    uint32_t dest_qpn;
    bool error;
    fake_recv_t rq[1024];
    size_t rq_head, rq_n;
    fake_pending_t pend[1024];
    size_t pend_head, pend_n;
} fake_qp_t;

#define S_MAX_OBJ 256
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_qp_t *g_qps[S_MAX_OBJ];
static struct ibv_mr *g_mrs[S_MAX_OBJ];
static uint32_t g_next_qpn = 100, g_next_key = 0x1000;
static struct ibv_device g_devs[4];
static struct ibv_device *g_dev_list[5];
/* Fault injection: the Nth RDMA write (counted over the process, from 1) is corrupted / fails
 * with a retry-exceeded completion. 0: never. */
static uint64_t g_writes, g_corrupt_write, g_fail_write;

static void s_push(fake_cq_t *c, uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op,
                   uint32_t len, uint32_t qpn)
{
    assert_true(c->n < c->cap);
    c->ring[(c->head + c->n++) % c->cap] =
        (struct ibv_wc){.wr_id = wr_id, .status = st, .opcode = op, .byte_len = len, .qp_num = qpn};
}

static fake_qp_t *s_qp_by_num(uint32_t qpn)
{
    for (int i = 0; i < S_MAX_OBJ; i++)
        if (g_qps[i] && g_qps[i]->qp.qp_num == qpn)
            return g_qps[i];
    return NULL;
}

/* The registered region holding [addr, addr+len) under key, or NULL. */
static struct ibv_mr *s_mr(uint32_t key, uint64_t addr, uint64_t len)
{
    for (int i = 0; i < S_MAX_OBJ; i++) {
        struct ibv_mr *m = g_mrs[i];
        if (m && (m->rkey == key || m->lkey == key) && addr >= (uint64_t)(uintptr_t)m->addr &&
            addr + len <= (uint64_t)(uintptr_t)m->addr + m->length)
            return m;
    }
    return NULL;
}

static void s_deliver(fake_qp_t *dst)
{
    while (dst->rq_n && dst->pend_n) {
        fake_recv_t *r = &dst->rq[dst->rq_head];
        fake_pending_t *p = &dst->pend[dst->pend_head];
        uint32_t len = p->len < r->len ? p->len : r->len;
        memcpy((void *)(uintptr_t)r->addr, p->data, len);
        s_push((fake_cq_t *)dst->qp.recv_cq, r->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, len,
               dst->qp.qp_num);
        if (p->signaled)
            s_push((fake_cq_t *)p->from->qp.send_cq, p->wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, 0,
                   p->from->qp.qp_num);
        free(p->data);
        dst->rq_head = (dst->rq_head + 1) % 1024;
        dst->rq_n--;
        dst->pend_head = (dst->pend_head + 1) % 1024;
        dst->pend_n--;
    }
}

static int s_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    fake_qp_t *q = (fake_qp_t *)ibqp;
    fake_cq_t *scq = (fake_cq_t *)ibqp->send_cq;
    pthread_mutex_lock(&g_lock);
    for (; wr; wr = wr->next) {
        fake_qp_t *dst = s_qp_by_num(q->dest_qpn);
        uint8_t *local = (uint8_t *)(uintptr_t)wr->sg_list[0].addr;
        uint32_t len = wr->sg_list[0].length;
        enum ibv_wc_status st = IBV_WC_SUCCESS;
        enum ibv_wc_opcode op = IBV_WC_RDMA_WRITE;
        if (q->error || !dst) {
            st = IBV_WC_WR_FLUSH_ERR;
        } else if (!(wr->send_flags & IBV_SEND_INLINE) &&
                   !s_mr(wr->sg_list[0].lkey, (uint64_t)(uintptr_t)local, len)) {
            st = IBV_WC_LOC_PROT_ERR;
        } else if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_READ) {
            uint8_t *remote = (uint8_t *)(uintptr_t)wr->wr.rdma.remote_addr;
            op = wr->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
            if (!s_mr(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, len)) {
                st = IBV_WC_REM_ACCESS_ERR;
            } else if (op == IBV_WC_RDMA_READ) {
                memcpy(local, remote, len);
            } else {
                g_writes++;
                if (g_writes == g_fail_write) {
                    st = IBV_WC_RETRY_EXC_ERR;
                } else {
                    memcpy(remote, local, len);
                    if (g_writes == g_corrupt_write)
                        remote[len / 2] ^= 0x04;
                }
            }
        } else if (wr->opcode == IBV_WR_SEND) {
            op = IBV_WC_SEND;
            fake_pending_t *p = &dst->pend[(dst->pend_head + dst->pend_n) % 1024];
            assert_true(dst->pend_n < 1024);
            p->data = xmalloc(len ? len : 1);
            memcpy(p->data, local, len);
            p->len = len;
            p->wr_id = wr->wr_id;
            p->signaled = wr->send_flags & IBV_SEND_SIGNALED;
            p->from = q;
            dst->pend_n++;
            s_deliver(dst);
            continue; /* completes when a receive takes it, as RC with RNR retry does */
        } else {
            st = IBV_WC_REM_INV_REQ_ERR;
        }
        if (st != IBV_WC_SUCCESS) {
            q->error = true;
            s_push(scq, wr->wr_id, st, op, 0, ibqp->qp_num);
        } else if (wr->send_flags & IBV_SEND_SIGNALED) {
            s_push(scq, wr->wr_id, st, op, len, ibqp->qp_num);
        }
    }
    pthread_mutex_unlock(&g_lock);
    (void)bad;
    return 0;
}

static int s_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    fake_qp_t *q = (fake_qp_t *)ibqp;
    pthread_mutex_lock(&g_lock);
    for (; wr; wr = wr->next) {
        assert_true(q->rq_n < 1024);
        fake_recv_t *r = &q->rq[(q->rq_head + q->rq_n++) % 1024];
        r->wr_id = wr->wr_id;
        r->addr = wr->sg_list[0].addr;
        r->len = wr->sg_list[0].length;
    }
    s_deliver(q);
    pthread_mutex_unlock(&g_lock);
    (void)bad;
    return 0;
}

static int s_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    fake_cq_t *c = (fake_cq_t *)ibcq;
    pthread_mutex_lock(&g_lock);
    int k = 0;
    for (; k < n && c->n; k++) {
        wc[k] = c->ring[c->head];
        c->head = (c->head + 1) % c->cap;
        c->n--;
    }
    pthread_mutex_unlock(&g_lock);
    return k;
}

static struct ibv_device **s_get_device_list(int *num)
{
    const char *names[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
    for (int i = 0; i < 4; i++) {
        snprintf(g_devs[i].name, sizeof g_devs[i].name, "%s", names[i]);
        g_dev_list[i] = &g_devs[i];
    }
    g_dev_list[4] = NULL;
    if (num)
        *num = 4;
    return g_dev_list;
}

static void s_free_device_list(struct ibv_device **list)
{
    (void)list;
}

static const char *s_device_name(struct ibv_device *d)
{
    return d->name;
}

static struct ibv_context *s_open_device(struct ibv_device *d)
{
    struct ibv_context *ctx = xcalloc(1, sizeof *ctx);
    ctx->device = d;
    ctx->ops.post_send = s_post_send;
    ctx->ops.post_recv = s_post_recv;
    ctx->ops.poll_cq = s_poll_cq;
    ctx->abi_compat = NULL; /* not extended: ibv_query_port takes the compat path */
    return ctx;
}

static int s_close_device(struct ibv_context *ctx)
{
    free(ctx);
    return 0;
}

static int s_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
    (void)ctx;
    memset(a, 0, sizeof *a);
    a->max_qp_rd_atom = 16;
    a->max_qp_init_rd_atom = 16;
    return 0;
}

static int s_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *c)
{
    (void)ctx;
    (void)port;
    struct ibv_port_attr *a = (struct ibv_port_attr *)c;
    a->state = IBV_PORT_ACTIVE;
    a->active_mtu = IBV_MTU_4096;
    a->lid = 7;
    return 0;
}

static int s_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
    (void)ctx;
    (void)port;
    memset(gid, 0, sizeof *gid);
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    gid->raw[15] = (uint8_t)index;
    return 0;
}

static struct ibv_pd *s_alloc_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = xcalloc(1, sizeof *pd);
    pd->context = ctx;
    return pd;
}

static int s_dealloc_pd(struct ibv_pd *pd)
{
    free(pd);
    return 0;
}

static struct ibv_mr *s_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
    (void)access;
    pthread_mutex_lock(&g_lock);
    struct ibv_mr *m = xcalloc(1, sizeof *m);
    m->context = pd->context;
    m->pd = pd;
    m->addr = addr;
    m->length = len;
    m->lkey = m->rkey = g_next_key++;
    for (int i = 0; i < S_MAX_OBJ; i++)
        if (!g_mrs[i]) {
            g_mrs[i] = m;
            break;
        }
    pthread_mutex_unlock(&g_lock);
    return m;
}

static int s_dereg_mr(struct ibv_mr *m)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < S_MAX_OBJ; i++)
        if (g_mrs[i] == m)
            g_mrs[i] = NULL;
    pthread_mutex_unlock(&g_lock);
    free(m);
    return 0;
}

static struct ibv_cq *s_create_cq(struct ibv_context *ctx, int cqe, void *user,
                                  struct ibv_comp_channel *ch, int vec)
{
    (void)user, (void)ch, (void)vec;
    fake_cq_t *c = xcalloc(1, sizeof *c);
    c->cq.context = ctx;
    c->cq.cqe = cqe;
    c->cap = (size_t)cqe * 4;
    c->ring = xcalloc(c->cap, sizeof *c->ring);
    return &c->cq;
}

static int s_destroy_cq(struct ibv_cq *cq)
{
    fake_cq_t *c = (fake_cq_t *)cq;
    free(c->ring);
    free(c);
    return 0;
}

static struct ibv_qp *s_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
    pthread_mutex_lock(&g_lock);
    fake_qp_t *q = xcalloc(1, sizeof *q);
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = a->send_cq;
    q->qp.recv_cq = a->recv_cq;
    q->qp.qp_num = g_next_qpn++;
    q->qp.qp_type = a->qp_type;
    for (int i = 0; i < S_MAX_OBJ; i++)
        if (!g_qps[i]) {
            g_qps[i] = q;
            break;
        }
    pthread_mutex_unlock(&g_lock);
    return &q->qp;
}

static int s_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    fake_qp_t *q = (fake_qp_t *)qp;
    if (mask & IBV_QP_DEST_QPN)
        q->dest_qpn = a->dest_qp_num;
    if (mask & IBV_QP_STATE)
        qp->state = a->qp_state;
    /* RoCE ports must be addressed by GID. */
    if ((mask & IBV_QP_AV) && a->ah_attr.port_num == 0)
        return EINVAL;
    return 0;
}

static int s_destroy_qp(struct ibv_qp *qp)
{
    fake_qp_t *q = (fake_qp_t *)qp;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < S_MAX_OBJ; i++)
        if (g_qps[i] == q)
            g_qps[i] = NULL;
    while (q->pend_n) {
        free(q->pend[q->pend_head].data);
        q->pend_head = (q->pend_head + 1) % 1024;
        q->pend_n--;
    }
    pthread_mutex_unlock(&g_lock);
    free(q);
    return 0;
}

static const char *s_status_str(enum ibv_wc_status s)
{
    switch (s) {
    case IBV_WC_SUCCESS:
        return "success";
    case IBV_WC_RETRY_EXC_ERR:
        return "transport retry counter exceeded";
    case IBV_WC_REM_ACCESS_ERR:
        return "remote access error";
    default:
        return "error";
    }
}

static struct rdma_verbs g_fake = {
    .lib = NULL,
    .get_device_list = s_get_device_list,
    .free_device_list = s_free_device_list,
    .get_device_name = s_device_name,
    .open_device = s_open_device,
    .close_device = s_close_device,
    .query_device = s_query_device,
    .query_port_compat = s_query_port,
    .query_gid = s_query_gid,
    .alloc_pd = s_alloc_pd,
    .dealloc_pd = s_dealloc_pd,
    .reg_mr = s_reg_mr,
    .reg_mr_iova2 = NULL,
    .reg_dmabuf_mr = NULL,
    .dereg_mr = s_dereg_mr,
    .create_cq = s_create_cq,
    .destroy_cq = s_destroy_cq,
    .create_qp = s_create_qp,
    .modify_qp = s_modify_qp,
    .destroy_qp = s_destroy_qp,
    .wc_status_str = s_status_str,
};

/* ---- running the workload on it -------------------------------------------------------------- */

/* worker.c: progress and log lines to stdout (FB_TEST_VERBOSE=1 shows them). */
void worker_ctx_set_emit(worker_ctx_t *self, bool emit);

static worker_ctx_t *s_ctx(const char *node, const char *const *params, size_t n)
{
    char *root = xasprintf("%s/sysfs/rdma-node", FB_FIXTURES);
    setenv("FLEETBURN_SYSFS_ROOT", root, 1);
    worker_ctx_t *ctx = worker_ctx_new("t-engine", node, params, n, false);
    unsetenv("FLEETBURN_SYSFS_ROOT");
    free(root);
    worker_ctx_set_emit(ctx, getenv("FB_TEST_VERBOSE") != NULL);
    return ctx;
}

static void s_print(worker_ctx_t *ctx, fb_verdict_t v)
{
    fb_result_t *res = worker_result(ctx);
    print_message("  %s: verdict %s %s\n", worker_node(ctx), fb_verdict_name(v),
                  res->error ? res->error : "");
    for (size_t i = 0; i < res->n_findings; i++)
        print_message("  finding %s [%s]: %s\n", res->findings[i].part, res->findings[i].kind,
                      res->findings[i].what);
}

static double s_metric(worker_ctx_t *ctx, const char *name)
{
    const fb_metric_t *m = fb_result_metric(worker_result(ctx), name);
    if (!m)
        fail_msg("%s: no metric %s", worker_node(ctx), name);
    return m->value;
}

static bool s_has_metric(worker_ctx_t *ctx, const char *name)
{
    return fb_result_metric(worker_result(ctx), name) != NULL;
}

static const fb_finding_t *s_finding(worker_ctx_t *ctx, const char *says)
{
    fb_result_t *res = worker_result(ctx);
    for (size_t i = 0; i < res->n_findings; i++)
        if (strstr(res->findings[i].what, says))
            return &res->findings[i];
    fail_msg("%s: no finding saying '%s'", worker_node(ctx), says);
    return NULL;
}

static const char *const s_common[] = {"gpu_memory=no", "min_gbps=0.001", "iters=300",
                                       "lat_iters=500", "max_size=1MiB"};

static worker_ctx_t *s_ctx_with(const char *node, const char *extra0, const char *extra1)
{
    const char *params[8];
    size_t n = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(s_common); i++)
        params[n++] = s_common[i];
    if (extra0)
        params[n++] = extra0;
    if (extra1)
        params[n++] = extra1;
    return s_ctx(node, params, n);
}

static void s_reset_faults(void)
{
    g_writes = 0;
    g_corrupt_write = 0;
    g_fail_write = 0;
}

static void test_loopback(void **state)
{
    (void)state;
    s_reset_faults();
    worker_ctx_t *ctx = s_ctx_with("node01", "loopback=true", "device=mlx5_0,mlx5_3");
    rdmabw_opts_t opts = {NULL, 5000, &g_fake};
    fb_verdict_t v = rdmabw_run_opts(ctx, &opts);
    s_print(ctx, v);
    assert_int_equal(v, FB_VERDICT_PASS);
    assert_int_equal(s_metric(ctx, "rdmabw.connections"), 2);
    assert_int_equal(s_metric(ctx, "rdmabw.miscompare_bytes"), 0);
    assert_int_equal(s_metric(ctx, "rdmabw.gpu_memory"), 0);
    double tx = s_metric(ctx, "rdmabw.tx_gbps");
    assert_true(tx > 0);
    assert_true(s_metric(ctx, "rdmabw.rx_gbps") == tx); /* loopback: one figure */
    assert_true(s_metric(ctx, "rdmabw.mlx5_0.p1.tx_gbps") >= tx);
    assert_true(s_metric(ctx, "rdmabw.mlx5_3.p1.tx_gbps") >= tx);
    for (int m = 0; m < 3; m++) {
        const char *mode = m == 0 ? "write" : m == 1 ? "read" : "send";
        char name[96];
        snprintf(name, sizeof name, "rdmabw.%s.2.avg_gbps", mode);
        assert_true(s_metric(ctx, name) > 0);
        snprintf(name, sizeof name, "rdmabw.%s.1048576.peak_gbps", mode);
        double peak = s_metric(ctx, name);
        snprintf(name, sizeof name, "rdmabw.%s.1048576.min_gbps", mode);
        assert_true(s_metric(ctx, name) <= peak);
        snprintf(name, sizeof name, "rdmabw.%s.avg_gbps", mode);
        assert_true(s_metric(ctx, name) > 0);
    }
    assert_true(s_metric(ctx, "rdmabw.lat_p50_us") > 0);
    assert_true(s_metric(ctx, "rdmabw.lat_p99_us") >= s_metric(ctx, "rdmabw.lat_p50_us"));
    assert_true(s_metric(ctx, "rdmabw.lat_max_us") >= s_metric(ctx, "rdmabw.lat_p999_us"));
    assert_false(s_has_metric(ctx, "rdmabw.send.rx_avg_gbps")); /* pairs only */
    worker_ctx_destroy(&ctx);
}

static void test_loopback_corruption(void **state)
{
    (void)state;
    s_reset_faults();
    g_corrupt_write = 1000; /* in the first write steps, before the largest size */
    worker_ctx_t *ctx = s_ctx_with("node01", "loopback=true", "device=mlx5_0");
    rdmabw_opts_t opts = {NULL, 5000, &g_fake};
    fb_verdict_t v = rdmabw_run_opts(ctx, &opts);
    s_print(ctx, v);
    assert_int_equal(v, FB_VERDICT_FAIL);
    const fb_finding_t *f = s_finding(ctx, "data corruption: RDMA write of");
    assert_string_equal(f->part, "node01/mlx5_0:1");
    assert_string_equal(f->kind, "nic");
    assert_non_null(strstr(f->what, ": 1 bytes differ"));
    assert_int_equal(s_metric(ctx, "rdmabw.miscompare_bytes"), 1);
    assert_int_equal(worker_result(ctx)->n_findings, 1);
    worker_ctx_destroy(&ctx);
}

/* Runs a pair node01 (rank 0) / node02 (rank 1) with the same extra parameter. */
static void s_pair(rdma_pair_member_t m[2], const char *extra)
{
    const char *peers[] = {"node01", "node02"};
    for (unsigned r = 0; r < 2; r++)
        m[r].ctx = s_ctx_with(peers[r], extra, NULL);
    rdmabw_opts_t opts = {NULL, 20000, &g_fake};
    rdma_pair_run(m, &opts);
    for (int i = 0; i < 2; i++)
        s_print(m[i].ctx, m[i].verdict);
}

static void test_pair(void **state)
{
    (void)state;
    s_reset_faults();
    rdma_pair_member_t m[2];
    s_pair(m, "device=mlx5_0,mlx5_3");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(m[i].verdict, FB_VERDICT_PASS);
        assert_int_equal(s_metric(m[i].ctx, "rdmabw.connections"), 2);
        assert_true(s_metric(m[i].ctx, "rdmabw.tx_gbps") > 0);
        assert_true(s_metric(m[i].ctx, "rdmabw.rx_gbps") > 0);
        assert_true(s_metric(m[i].ctx, "rdmabw.write.1048576.avg_gbps") > 0);
        assert_true(s_metric(m[i].ctx, "rdmabw.read.1048576.avg_gbps") > 0);
        assert_true(s_metric(m[i].ctx, "rdmabw.send.1048576.avg_gbps") > 0);
        assert_true(s_metric(m[i].ctx, "rdmabw.send.rx_avg_gbps") > 0);
    }
    /* Each side's rx is the other's tx, per port. */
    assert_true(s_metric(m[0].ctx, "rdmabw.mlx5_3.p1.rx_gbps") ==
                s_metric(m[1].ctx, "rdmabw.mlx5_3.p1.tx_gbps"));
    assert_true(s_metric(m[1].ctx, "rdmabw.mlx5_0.p1.rx_gbps") ==
                s_metric(m[0].ctx, "rdmabw.mlx5_0.p1.tx_gbps"));
    /* Latency is measured by rank 0, which starts each round. */
    assert_true(s_metric(m[0].ctx, "rdmabw.lat_p50_us") > 0);
    assert_false(s_has_metric(m[1].ctx, "rdmabw.lat_p50_us"));
    worker_ctx_destroy(&m[0].ctx);
    worker_ctx_destroy(&m[1].ctx);
}

static void test_pair_retry_exceeded(void **state)
{
    (void)state;
    s_reset_faults();
    g_fail_write = 700; /* node01 writing to node02, mid-sweep */
    rdma_pair_member_t m[2];
    s_pair(m, "device=mlx5_0");
    assert_int_equal(m[0].verdict, FB_VERDICT_FAIL);
    assert_int_equal(m[1].verdict, FB_VERDICT_FAIL);
    const fb_finding_t *f = s_finding(m[0].ctx, "work completion error transport retry counter");
    assert_string_equal(f->part, "node01/mlx5_0:1");
    assert_string_equal(f->kind, "link");
    assert_non_null(strstr(f->what, "packets lost on the link"));
    f = s_finding(m[1].ctx, "stopped by node01, which reported: write on mlx5_0:1 -> mlx5_0:1");
    assert_string_equal(f->part, "node02/mlx5_0:1");
    worker_ctx_destroy(&m[0].ctx);
    worker_ctx_destroy(&m[1].ctx);
}

static void test_pair_corruption(void **state)
{
    (void)state;
    s_reset_faults();
    g_corrupt_write = 500;
    rdma_pair_member_t m[2];
    s_pair(m, "device=mlx5_0");
    /* The sink's owner finds it; which member wrote the bad write depends on the count, so look
     * at both: exactly one has the finding. */
    int found = 0;
    for (int i = 0; i < 2; i++) {
        fb_result_t *res = worker_result(m[i].ctx);
        for (size_t k = 0; k < res->n_findings; k++)
            if (strstr(res->findings[k].what, "data corruption: RDMA write")) {
                found++;
                assert_int_equal(m[i].verdict, FB_VERDICT_FAIL);
                assert_non_null(
                    strstr(res->findings[k].what, i == 0 ? "from node02" : "from node01"));
            }
    }
    assert_int_equal(found, 1);
    worker_ctx_destroy(&m[0].ctx);
    worker_ctx_destroy(&m[1].ctx);
}

int main(void)
{
    if (!rdma_verbs_built()) {
        print_message("the workloads were built without verbs: nothing to test\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback),
        cmocka_unit_test(test_loopback_corruption),
        cmocka_unit_test(test_pair),
        cmocka_unit_test(test_pair_retry_exceeded),
        cmocka_unit_test(test_pair_corruption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void)
{
    print_message("no verbs headers: nothing to test\n");
    return 0;
}

#endif
