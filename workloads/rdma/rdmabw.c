/* SPDX-License-Identifier: Apache-2.0 */
/* The rdmabw workload: chooses the ports, takes their error counters, loads libibverbs, opens
 * one connection per port (two in loopback), trades queue-pair details with the partner through
 * the coordinator, runs the lockstep plan on each connection in turn, and turns what it saw into
 * metrics and findings: bandwidth below the floor, data that arrived wrong, work completions in
 * error, counters that moved, ports slower than their siblings. Every way out of a pair task
 * posts this member's part of the "qp" exchange, so a partner never waits for a member that has
 * already given up. It stays one file of about 900 lines because every part works on one run_t
 * (the ports, the connections, the partners, what was measured) along that single path out; the
 * verbs data path and the pure parts are already rdma_engine.c, rdma_sweep.c and rdma_wire.c. */
#include "rdmabw.h"

#include "ibcounters.h"
#include "ibport.h"
#include "rdma_engine.h"
#include "rdma_gpu.h"
#include "rdma_verbs.h"
#include "rdma_wire.h"

#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_DEFAULT_EXCHANGE_MS 300000u
#define S_MAX_STEPS 1024
#define S_LAT_MAX 4096u

/* ---- parameters ------------------------------------------------------------------------------ */

static int s_bad(char *err, size_t errlen, const char *key, const char *value, const char *want)
{
    char shown[64];
    snprintf(err, errlen, "rdmabw: %s '%s' is not %s", key,
             fb_show_value(value, shown, sizeof shown), want);
    return -EINVAL;
}

static const char *s_param(const worker_ctx_t *ctx, const char *key, const char *dflt)
{
    const char *v = worker_param(ctx, key);
    return v ? v : dflt;
}

int rdmabw_params(const worker_ctx_t *ctx, rdmabw_params_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *v = s_param(ctx, "modes", "write,read,send");
    int *ids = NULL;
    size_t n = 0;
    char *bad = NULL;
    if (fb_parse_name_list(v, rdma_mode_names, RDMA_N_MODES, &ids, &n, &bad) < 0) {
        int rc = s_bad(err, errlen, "modes", bad ? bad : v, "a list of write, read, send");
        free(bad);
        return rc;
    }
    for (size_t i = 0; i < n && out->n_modes < FB_ARRAY_LEN(out->modes); i++)
        out->modes[out->n_modes++] = (rdma_mode_t)ids[i];
    free(ids);

    uint64_t min = 0, max = 0;
    v = s_param(ctx, "min_size", "2");
    if (fb_parse_bytes(v, &min) < 0 || min == 0 || min > RDMA_MAX_MESSAGE)
        return s_bad(err, errlen, "min_size", v, "a message size from 1 B to 1 GiB");
    v = s_param(ctx, "max_size", "8MiB");
    if (fb_parse_bytes(v, &max) < 0 || max < min || max > RDMA_MAX_MESSAGE)
        return s_bad(err, errlen, "max_size", v, "a message size from min_size to 1 GiB");
    int ns = rdma_sizes(min, max, out->sizes, RDMA_MAX_SIZES);
    if (ns <= 0)
        return s_bad(err, errlen, "max_size", v, "a size the sweep can reach");
    out->n_sizes = (size_t)ns;

    v = s_param(ctx, "iters", "1000");
    if (fb_parse_uint(v, 100000000, &out->iters) < 0 || out->iters == 0)
        return s_bad(err, errlen, "iters", v, "a count from 1 to 100000000");
    v = s_param(ctx, "lat_iters", "10000");
    if (fb_parse_uint(v, 100000000, &out->lat_iters) < 0)
        return s_bad(err, errlen, "lat_iters", v, "a count from 0 to 100000000");

    out->device = s_param(ctx, "device", "all");
    v = s_param(ctx, "gpu_memory", "auto");
    if (!strcmp(v, "auto"))
        out->gpu = RDMABW_GPU_AUTO;
    else if (!strcmp(v, "yes") || !strcmp(v, "true"))
        out->gpu = RDMABW_GPU_YES;
    else if (!strcmp(v, "no") || !strcmp(v, "false"))
        out->gpu = RDMABW_GPU_NO;
    else
        return s_bad(err, errlen, "gpu_memory", v, "auto, yes or no");
    v = s_param(ctx, "loopback", "false");
    if (fb_parse_bool(v, &out->loopback) < 0)
        return s_bad(err, errlen, "loopback", v, "true or false");
    v = worker_param(ctx, "min_gbps");
    if (v &&
        (fb_parse_double(v, &out->min_gbps) < 0 || !(out->min_gbps > 0) || out->min_gbps > 1e6))
        return s_bad(err, errlen, "min_gbps", v, "a bandwidth in Gb/s above 0");
    return 0;
}

double rdmabw_floor_gbps(double min_gbps, double local_port_gbps, double remote_port_gbps)
{
    if (min_gbps > 0)
        return min_gbps;
    double rate = local_port_gbps;
    if (remote_port_gbps > 0 && (rate <= 0 || remote_port_gbps < rate))
        rate = remote_port_gbps;
    return rate > 0 ? 0.9 * rate : 0;
}

/* ---- the run --------------------------------------------------------------------------------- */

typedef struct {
    worker_ctx_t *ctx;
    fb_result_t *result;
    const rdmabw_opts_t *opts;
    rdmabw_params_t p;
    const char *node, *root, *partner;
    bool pair;
    unsigned rank;
    bool qp_posted;
    ib_port_t *ports;
    size_t n_ports;
    size_t use[RDMA_MAX_CONNS]; /* indices into ports of the ports measured */
    size_t n_use;
    rdma_verbs_t *verbs;
    rdma_gpu_t *gpu[RDMA_MAX_CONNS];
    rdma_conn_t *conn[RDMA_MAX_CONNS][2];
    rdma_endpoint_t remote[RDMA_MAX_CONNS];
    size_t n_conns;
    rdma_step_t steps[S_MAX_STEPS];
    size_t n_steps;
    rdma_step_result_t *res[RDMA_MAX_CONNS];
    rdma_run_status_t status[RDMA_MAX_CONNS];
    double tx[RDMA_MAX_CONNS], rx[RDMA_MAX_CONNS];
    size_t gpu_conns;
    uint64_t bad_bytes;
    size_t conn_index;       /* for progress */
    char partner_error[256]; /* what stopped the partner, from its result */
} run_t;

static uint64_t s_timeout(const run_t *r)
{
    return r->opts->exchange_timeout_ms ? r->opts->exchange_timeout_ms : S_DEFAULT_EXCHANGE_MS;
}

/* Posts "none <reason>" as this member's queue-pair details, once, so that the partner learns
 * at once that there will be no connection. */
static void s_post_none(run_t *r, const char *reason)
{
    if (!r->pair || r->qp_posted)
        return;
    r->qp_posted = true;
    char *msg = rdma_endpoints_encode(NULL, 0, reason);
    worker_blob_t *values = NULL;
    char err[512];
    if (worker_exchange(r->ctx, "qp", msg, strlen(msg), s_timeout(r), &values, err, sizeof err) ==
        0)
        worker_blobs_free(&values, worker_size(r->ctx));
    free(msg);
}

/* Ends the run with verdict v (FB_VERDICT_SKIPPED or FB_VERDICT_ERROR) for the reason fmt gives:
 * the partner is told there are no endpoints, and the reason is recorded and logged as a skip or
 * through worker_error. Returns v. */
static fb_verdict_t s_stop(run_t *r, fb_verdict_t v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static fb_verdict_t s_stop(run_t *r, fb_verdict_t v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *why = xvasprintf(fmt, ap);
    va_end(ap);
    s_post_none(r, why);
    if (v == FB_VERDICT_SKIPPED) {
        fb_result_set_error(r->result, "rdmabw skipped: %s", why);
        worker_log(r->ctx, "rdmabw skipped: %s", why);
    } else {
        worker_error(r->ctx, "rdmabw: %s", why);
    }
    free(why);
    return v;
}

static void s_note(void *user, const char *line)
{
    worker_log((worker_ctx_t *)user, "rdmabw: %s", line);
}

static char *s_part(const run_t *r, const ib_port_t *p)
{
    return xasprintf("%s/%s", r->node, p->name);
}

/* ---- choosing ports -------------------------------------------------------------------------- */

/* Fills r->use from the device parameter. Returns FB_VERDICT_NONE to go on, or the verdict. */
static fb_verdict_t s_choose_ports(run_t *r)
{
    bool absent = false;
    r->n_ports = ib_ports_list(r->root, &r->ports, &absent);
    if (r->n_ports == 0)
        return s_stop(r, FB_VERDICT_SKIPPED, "no RDMA device: /sys/class/infiniband is %s",
                      absent ? "absent" : "empty (no HCA driver loaded)");
    size_t *sel = NULL;
    char why[600];
    int n = ib_ports_select(r->ports, r->n_ports, r->p.device, &sel, why, sizeof why);
    if (n < 0)
        return s_stop(r, FB_VERDICT_ERROR, "%s", why);
    bool named = strcmp(r->p.device, "all") != 0;
    if (n == 0) {
        char states[1024];
        ib_ports_describe(r->ports, r->n_ports, states, sizeof states);
        free(sel);
        return s_stop(r, FB_VERDICT_SKIPPED, "no active RDMA port: %s", states);
    }
    for (int i = 0; i < n; i++) {
        const ib_port_t *p = &r->ports[sel[i]];
        if (p->problem[0]) {
            free(sel);
            return s_stop(r, FB_VERDICT_ERROR, "%s", p->problem);
        }
        if (!p->active) {
            /* The campaign named this port: a dead link is what the test is for. */
            char *part = s_part(r, p);
            fb_result_add_findingf(r->result, part, "link",
                                   "%s port %s is %s (%s): no link to test", p->link_layer, p->name,
                                   p->state, p->phys_state[0] ? p->phys_state : "?");
            free(part);
            continue;
        }
        if (r->n_use == RDMA_MAX_CONNS) {
            worker_log(r->ctx, "rdmabw: more than %u ports selected; %s and later not measured",
                       RDMA_MAX_CONNS, p->name);
            break;
        }
        r->use[r->n_use++] = sel[i];
    }
    free(sel);
    if (r->n_use == 0 && named) {
        s_post_none(r, "none of the ports named in device is active");
        return FB_VERDICT_FAIL;
    }
    return FB_VERDICT_NONE;
}

/* ---- GPU memory ------------------------------------------------------------------------------ */

/* Decides GPU memory for port p, opening the GPU when used. Returns 0 (gpu may stay NULL), or
 * -1 when gpu_memory=yes cannot be honoured (err says why). */
static int s_gpu_for(run_t *r, const ib_port_t *p, rdma_gpu_t **gpu, bool *dmabuf, char *err,
                     size_t errlen)
{
    *gpu = NULL;
    *dmabuf = false;
    char why[512] = "";
    if (r->p.gpu == RDMABW_GPU_NO) {
        worker_log(r->ctx, "rdmabw: %s: GPU memory not used: gpu_memory=no", p->name);
        return 0;
    }
    char pci[16];
    unsigned index = 0;
    bool peermem = rdma_gpu_peermem_module(r->root) != NULL;
    bool lib_dmabuf = rdma_verbs_has_dmabuf(r->verbs);
    if (rdma_gpu_nearest(r->root, p->hca, pci, &index, why, sizeof why) == 0) {
        rdma_gpu_t *g = NULL;
        char gerr[512];
        if (rdma_gpu_open(pci, &g, gerr, sizeof gerr) < 0) {
            snprintf(why, sizeof why, "%s", gerr);
        } else if (lib_dmabuf && rdma_gpu_dmabuf_supported(g)) {
            *gpu = g;
            *dmabuf = true;
        } else if (peermem) {
            *gpu = g;
        } else {
            snprintf(why, sizeof why,
                     "GPUDirect RDMA is not available for gpu%u (%s): no dma-buf support%s and no "
                     "nvidia_peermem module loaded",
                     index, pci,
                     lib_dmabuf ? " in the GPU driver" : " in libibverbs (rdma-core 34+ needed)");
            rdma_gpu_close(&g);
        }
        if (*gpu) {
            worker_log(r->ctx, "rdmabw: %s: source and sink in gpu%u (%s, %s) through %s", p->name,
                       index, rdma_gpu_name(*gpu), pci, *dmabuf ? "dma-buf" : "nvidia_peermem");
            return 0;
        }
    }
    if (r->p.gpu == RDMABW_GPU_YES) {
        snprintf(err, errlen, "gpu_memory=yes, but for %s: %s", p->name, why);
        return -1;
    }
    worker_log(r->ctx, "rdmabw: %s: GPU memory not used: %s", p->name, why);
    return 0;
}

/* ---- connections ----------------------------------------------------------------------------- */

static uint64_t s_region(const run_t *r)
{
    /* Room for the largest message, and for a window of small ones cycling over distinct
     * addresses (perftest's cycle buffer does the same). */
    uint64_t region = r->p.sizes[r->p.n_sizes - 1];
    if (region < (UINT64_C(1) << 20))
        region = UINT64_C(1) << 20;
    return (region + 4095) / 4096 * 4096;
}

static fb_verdict_t s_open_conns(run_t *r)
{
    char err[1024];
    unsigned per_port = r->p.loopback ? 2 : 1;
    for (size_t i = 0; i < r->n_use; i++) {
        const ib_port_t *p = &r->ports[r->use[i]];
        int pin = rdma_pin_to_hca(r->root, p->hca);
        if (pin < 0)
            worker_log(r->ctx, "rdmabw: %s: could not pin to the HCA's CPUs (%s)", p->name,
                       strerror(-pin));
        bool dmabuf = false;
        if (s_gpu_for(r, p, &r->gpu[i], &dmabuf, err, sizeof err) < 0)
            return s_stop(r, FB_VERDICT_ERROR, "%s", err);
        rdma_conn_opts_t o = {p, s_region(r), r->gpu[i], dmabuf};
        for (unsigned k = 0; k < per_port; k++) {
            int rc = rdma_conn_open(r->verbs, &o, &r->conn[i][k], err, sizeof err);
            if (rc < 0 && r->gpu[i] && r->p.gpu == RDMABW_GPU_AUTO && k == 0) {
                /* auto: GPU memory is a preference; a registration that fails falls back. */
                worker_log(r->ctx, "rdmabw: %s: GPU memory not used: %s", p->name, err);
                rdma_gpu_close(&r->gpu[i]);
                o.gpu = NULL;
                rc = rdma_conn_open(r->verbs, &o, &r->conn[i][k], err, sizeof err);
            }
            if (rc < 0)
                return s_stop(r, FB_VERDICT_ERROR, "%s", err);
        }
        if (r->gpu[i])
            r->gpu_conns++;
        r->n_conns++;
    }
    return FB_VERDICT_NONE;
}

static void s_close_conns(run_t *r)
{
    for (size_t i = 0; i < RDMA_MAX_CONNS; i++) {
        rdma_conn_close(&r->conn[i][0]);
        rdma_conn_close(&r->conn[i][1]);
        rdma_gpu_close(&r->gpu[i]);
    }
}

/* Pair: trades endpoints with the partner and connects. Loopback: connects each port's two
 * queue pairs to each other. */
static fb_verdict_t s_connect(run_t *r)
{
    char err[1024];
    if (r->p.loopback) {
        for (size_t i = 0; i < r->n_conns; i++) {
            rdma_endpoint_t ea, eb;
            rdma_conn_endpoint(r->conn[i][0], &ea);
            rdma_conn_endpoint(r->conn[i][1], &eb);
            r->remote[i] = eb;
            if (rdma_conn_connect(r->conn[i][0], &eb, err, sizeof err) < 0 ||
                rdma_conn_connect(r->conn[i][1], &ea, err, sizeof err) < 0)
                return s_stop(r, FB_VERDICT_ERROR, "%s", err);
        }
        return FB_VERDICT_NONE;
    }
    rdma_endpoint_t mine[RDMA_MAX_CONNS];
    for (size_t i = 0; i < r->n_conns; i++)
        rdma_conn_endpoint(r->conn[i][0], &mine[i]);
    char *msg = rdma_endpoints_encode(mine, r->n_conns, NULL);
    worker_blob_t *values = NULL;
    r->qp_posted = true;
    int rc =
        worker_exchange(r->ctx, "qp", msg, strlen(msg), s_timeout(r), &values, err, sizeof err);
    free(msg);
    if (rc < 0)
        return s_stop(r, FB_VERDICT_ERROR, "queue-pair exchange with %s failed: %s", r->partner,
                      err);
    unsigned other = 1 - r->rank;
    bool none = false;
    char reason[512];
    int n = rdma_endpoints_decode(values[other].data, values[other].len, r->remote, RDMA_MAX_CONNS,
                                  &none, reason, sizeof reason, err, sizeof err);
    worker_blobs_free(&values, worker_size(r->ctx));
    if (n < 0)
        return s_stop(r, FB_VERDICT_ERROR, "the queue-pair details from %s do not parse: %s",
                      r->partner, err);
    if (none)
        return s_stop(r, FB_VERDICT_SKIPPED, "the partner %s cannot take part: %s", r->partner,
                      reason);
    if ((size_t)n < r->n_conns) {
        worker_log(r->ctx, "rdmabw: %s has %d port%s to this node's %zu; measuring %d", r->partner,
                   n, n == 1 ? "" : "s", r->n_conns, n);
        for (size_t i = (size_t)n; i < r->n_conns; i++) {
            rdma_conn_close(&r->conn[i][0]);
            rdma_gpu_close(&r->gpu[i]);
        }
        r->n_conns = (size_t)n;
    }
    for (size_t i = 0; i < r->n_conns; i++)
        if (rdma_conn_connect(r->conn[i][0], &r->remote[i], err, sizeof err) < 0) {
            /* The partner is connecting too and will wait in the barrier below, then fail on
             * its first control message: post the barrier anyway so it is not left waiting. */
            worker_blob_t *b = NULL;
            char e2[256];
            if (worker_exchange(r->ctx, "rts", "fail", 4, s_timeout(r), &b, e2, sizeof e2) == 0)
                worker_blobs_free(&b, worker_size(r->ctx));
            return s_stop(r, FB_VERDICT_ERROR, "%s", err);
        }
    /* Both ends must be ready to receive before either sends: a barrier through the
     * coordinator. */
    rc = worker_exchange(r->ctx, "rts", "ok", 2, s_timeout(r), &values, err, sizeof err);
    if (rc < 0)
        return s_stop(r, FB_VERDICT_ERROR, "waiting for %s to connect failed: %s", r->partner, err);
    bool partner_ok = values[other].len == 2 && !memcmp(values[other].data, "ok", 2);
    worker_blobs_free(&values, worker_size(r->ctx));
    if (!partner_ok)
        return s_stop(r, FB_VERDICT_ERROR, "%s could not connect its queue pairs", r->partner);
    return FB_VERDICT_NONE;
}

/* ---- measuring ------------------------------------------------------------------------------- */

static void s_on_step(void *user, size_t index, size_t n_steps, const rdma_step_t *s)
{
    run_t *r = user;
    double done = ((double)r->conn_index + (double)index / (double)n_steps) / (double)r->n_conns;
    char size[32];
    fb_format_bytes(s->size, size, sizeof size);
    const char *how = "out";
    if (s->mode == RDMA_MODE_LAT)
        how = "ping-pong";
    else if (r->pair && s->active != r->rank)
        how = "in";
    worker_progress(r->ctx, 0.1 + 0.85 * done, "rdmabw %s %s %s (step %zu/%zu, port %zu/%zu)",
                    rdma_mode_name(s->mode), how, size, index + 1, n_steps, r->conn_index + 1,
                    r->n_conns);
}

/* A snapshot of port p's counters. Returns 0, or -EINVAL after a log line naming the file
 * when they do not read (the run goes on without the comparison). */
static int s_snapshot(run_t *r, const ib_port_t *p, ib_snapshot_t *s)
{
    char err[512];
    int rc = ib_snapshot_read(r->root, p->hca, p->port, s, err, sizeof err);
    if (rc < 0)
        worker_log(r->ctx, "rdmabw: port counters of %s unreadable: %s", p->name, err);
    return rc;
}

static void s_measure(run_t *r)
{
    rdma_run_opts_t o = {r->rank, r->p.iters, r->p.lat_iters, s_on_step, r};
    for (size_t i = 0; i < r->n_conns; i++) {
        const ib_port_t *p = &r->ports[r->use[i]];
        r->conn_index = i;
        r->res[i] = xcalloc(r->n_steps, sizeof *r->res[i]);
        rdma_pin_to_hca(r->root, p->hca);
        ib_snapshot_t *before = xcalloc(1, sizeof *before), *after = xcalloc(1, sizeof *after);
        bool counters = s_snapshot(r, p, before) == 0;
        if (r->p.loopback)
            rdma_run_loopback(r->conn[i][0], r->conn[i][1], r->steps, r->n_steps, &o, r->res[i],
                              &r->status[i]);
        else
            rdma_run_pair(r->conn[i][0], r->steps, r->n_steps, &o, r->res[i], &r->status[i]);
        if (counters && s_snapshot(r, p, after) == 0) {
            char *during = xasprintf("rdmabw %s %s", r->p.loopback ? "loopback on" : "with",
                                     r->p.loopback ? p->name : r->partner);
            ib_snapshot_compare(before, after, r->node, during, r->result, s_note, r->ctx);
            free(during);
        }
        free(before);
        free(after);
        const rdma_run_status_t *st = &r->status[i];
        if (st->rc && st->fault && st->rc == -ETIMEDOUT)
            break; /* a silent partner will not answer on the next port either */
    }
}

/* ---- results --------------------------------------------------------------------------------- */

static void s_metric(run_t *r, const char *unit, double v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void s_metric(run_t *r, const char *unit, double v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *name = xvasprintf(fmt, ap);
    va_end(ap);
    fb_result_set_metric(r->result, name, v, unit);
    free(name);
}

/* Keeps the value of the weaker connection: per-size metrics are what the slowest port did. */
static void s_metric_min(run_t *r, const char *unit, double v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void s_metric_min(run_t *r, const char *unit, double v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *name = xvasprintf(fmt, ap);
    va_end(ap);
    const fb_metric_t *m = fb_result_metric(r->result, name);
    if (!m || v < m->value)
        fb_result_set_metric(r->result, name, v, unit);
    free(name);
}

/* A metric-safe port name: "mlx5_0.p1". */
static void s_port_key(const ib_port_t *p, char *out, size_t len)
{
    snprintf(out, len, "%s.p%u", p->hca, p->port);
    for (char *c = out; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-'))
            *c = '_';
}

/* The table one connection's bandwidth steps make, in perftest's columns (one table per mode
 * and direction), and the per-size metrics of what this side posted. */
static void s_report_bw(run_t *r, size_t i)
{
    const ib_port_t *p = &r->ports[r->use[i]];
    for (size_t m = 0; m < r->p.n_modes; m++) {
        rdma_mode_t mode = r->p.modes[m];
        for (int out = 1; out >= 0; out--) {
            bool header = false;
            for (size_t k = 0; k < r->n_steps; k++) {
                const rdma_step_t *s = &r->steps[k];
                const rdma_step_result_t *x = &r->res[i][k];
                if (s->mode != mode || !x->ran || x->bw.bytes == 0 || x->active != (out == 1))
                    continue;
                if (!header) {
                    /* The arrow is the direction the data went. */
                    bool to_partner = (mode == RDMA_MODE_READ) != (out == 1);
                    worker_log(r->ctx,
                               "rdmabw %s %s %s %s/%s (%s side): %10s %10s %14s %16s %12s %14s",
                               rdma_mode_name(mode), p->name, to_partner ? "->" : "<-",
                               r->pair ? r->partner : r->node, r->remote[i].port,
                               out ? "posting" : "receiving", "#bytes", "#iters", "BW peak[Gb/s]",
                               "BW average[Gb/s]", "BW min[Gb/s]", "MsgRate[Mpps]");
                    header = true;
                }
                worker_log(r->ctx,
                           "rdmabw %s %s: %10" PRIu64 " %10" PRIu64 " %14.2f %16.2f %12.2f %14.6f",
                           rdma_mode_name(mode), p->name, s->size, r->p.iters, x->bw.peak_gbps,
                           x->bw.avg_gbps, x->bw.min_gbps, x->bw.msg_rate_mps);
                if (!out)
                    continue; /* the receiver's view is logged; metrics are what was posted */
                s_metric_min(r, "Gb/s", x->bw.avg_gbps, "rdmabw.%s.%" PRIu64 ".avg_gbps",
                             rdma_mode_name(mode), s->size);
                s_metric_min(r, "Gb/s", x->bw.peak_gbps, "rdmabw.%s.%" PRIu64 ".peak_gbps",
                             rdma_mode_name(mode), s->size);
                s_metric_min(r, "Gb/s", x->bw.min_gbps, "rdmabw.%s.%" PRIu64 ".min_gbps",
                             rdma_mode_name(mode), s->size);
            }
        }
    }
}

/* The best average write bandwidth this side posted on connection i (what ib_write_bw -a users
 * read off its table), and the summary metrics of each mode at its largest size. */
static double s_summarize(run_t *r, size_t i)
{
    double best_write = -1;
    for (size_t m = 0; m < r->p.n_modes; m++) {
        rdma_mode_t mode = r->p.modes[m];
        const rdma_step_result_t *last = NULL, *rx_last = NULL;
        for (size_t k = 0; k < r->n_steps; k++) {
            const rdma_step_result_t *x = &r->res[i][k];
            if (r->steps[k].mode != mode || !x->ran || x->bw.bytes == 0)
                continue;
            if (x->active) {
                last = x;
                if (mode == RDMA_MODE_WRITE && x->bw.avg_gbps > best_write)
                    best_write = x->bw.avg_gbps;
            } else {
                rx_last = x;
            }
        }
        if (last) {
            s_metric_min(r, "Gb/s", last->bw.avg_gbps, "rdmabw.%s.avg_gbps", rdma_mode_name(mode));
            s_metric_min(r, "Gb/s", last->bw.min_gbps, "rdmabw.%s.min_gbps", rdma_mode_name(mode));
            s_metric_min(r, "Gb/s", last->bw.peak_gbps, "rdmabw.%s.peak_gbps",
                         rdma_mode_name(mode));
        }
        if (rx_last && mode == RDMA_MODE_SEND)
            s_metric_min(r, "Gb/s", rx_last->bw.avg_gbps, "rdmabw.send.rx_avg_gbps");
    }
    return best_write;
}

static void s_report_latency(run_t *r, size_t i)
{
    for (size_t k = 0; k < r->n_steps; k++) {
        const rdma_lat_t *l = &r->res[i][k].lat;
        if (r->steps[k].mode != RDMA_MODE_LAT || l->n == 0)
            continue;
        const ib_port_t *p = &r->ports[r->use[i]];
        worker_log(r->ctx,
                   "rdmabw lat %s <-> %s/%s: %" PRIu64 " B, %zu iterations: min %.2f us, "
                   "p50 %.2f, p99 %.2f, p99.9 %.2f, max %.2f, average %.2f (half round trips)",
                   p->name, r->pair ? r->partner : r->node, r->remote[i].port, r->steps[k].size,
                   l->n, l->min_us, l->p50_us, l->p99_us, l->p999_us, l->max_us, l->avg_us);
        /* Several ports: the slowest one's figures (a slow rail is the news). */
        const struct {
            const char *name;
            double v;
        } m[] = {{"rdmabw.lat_min_us", l->min_us},   {"rdmabw.lat_avg_us", l->avg_us},
                 {"rdmabw.lat_p50_us", l->p50_us},   {"rdmabw.lat_p99_us", l->p99_us},
                 {"rdmabw.lat_p999_us", l->p999_us}, {"rdmabw.lat_max_us", l->max_us}};
        for (size_t j = 0; j < FB_ARRAY_LEN(m); j++) {
            const fb_metric_t *old = fb_result_metric(r->result, m[j].name);
            if (!old || m[j].v > old->value)
                fb_result_set_metric(r->result, m[j].name, m[j].v, "us");
        }
    }
}

/* Data that arrived wrong: the transport's CRCs passed, so it went bad inside a node. */
static void s_report_data(run_t *r, size_t i)
{
    const ib_port_t *p = &r->ports[r->use[i]];
    for (size_t k = 0; k < r->n_steps; k++) {
        const rdma_step_result_t *x = &r->res[i][k];
        if (!x->checked || x->bad_bytes == 0)
            continue;
        r->bad_bytes += x->bad_bytes;
        const rdma_step_t *s = &r->steps[k];
        char *part = s_part(r, p);
        fb_result_add_findingf(
            r->result, part, "nic",
            "data corruption: RDMA %s of %" PRIu64 " B %s %s/%s: %" PRIu64
            " bytes differ, the first in slot %" PRIu64 " at offset %" PRIu64
            " (expected 0x%02x, read 0x%02x). The link's CRCs passed, so the data went bad in "
            "an HCA, its PCIe path or the %s memory",
            rdma_mode_name(s->mode), s->size, s->mode == RDMA_MODE_READ ? "read from" : "from",
            r->pair ? r->partner : r->node, r->remote[i].port, x->bad_bytes, x->bad_slot,
            x->bad_offset, x->expected, x->actual, r->gpu[i] ? "GPU" : "host");
        free(part);
    }
}

/* How a connection's run ended. A fault seen here names this side's port; a partner that
 * stopped because of a fault on its side (it says which in its result) makes a finding here too,
 * naming this side's end of the same link: the pair judgment decides between the two. */
static void s_report_status(run_t *r, size_t i)
{
    const rdma_run_status_t *st = &r->status[i];
    if (st->rc == 0)
        return;
    const ib_port_t *p = &r->ports[r->use[i]];
    const rdma_step_t *s = &r->steps[st->failed_step < r->n_steps ? st->failed_step : 0];
    char *part = s_part(r, p);
    if (st->fault)
        fb_result_add_findingf(r->result, part, "link", "step %zu (%s %" PRIu64 " B): %s",
                               st->failed_step, rdma_mode_name(s->mode), s->size, st->what);
    else if (st->rc == -ECONNABORTED && r->partner_error[0])
        fb_result_add_findingf(r->result, part, "link",
                               "step %zu (%s %" PRIu64 " B) stopped by %s, which reported: %s",
                               st->failed_step, rdma_mode_name(s->mode), s->size, r->partner,
                               r->partner_error);
    else
        worker_log(r->ctx, "rdmabw: %s stopped at step %zu: %s", p->name, st->failed_step,
                   st->what);
    free(part);
}

/* Pair: trades the write bandwidth each side sent, so each also knows what it received. */
static void s_trade_results(run_t *r)
{
    for (size_t i = 0; i < r->n_conns; i++)
        r->rx[i] = r->p.loopback ? r->tx[i] : -1;
    if (!r->pair)
        return;
    rdma_summary_t mine;
    memset(&mine, 0, sizeof mine);
    mine.n = r->n_conns;
    for (size_t i = 0; i < r->n_conns; i++) {
        mine.tx_gbps[i] = r->tx[i];
        if (r->status[i].rc && !mine.error[0])
            snprintf(mine.error, sizeof mine.error, "%s", r->status[i].what);
    }
    char *msg = rdma_summary_encode(&mine);
    worker_blob_t *values = NULL;
    char err[512];
    int rc =
        worker_exchange(r->ctx, "result", msg, strlen(msg), s_timeout(r), &values, err, sizeof err);
    free(msg);
    if (rc < 0) {
        worker_log(r->ctx, "rdmabw: result exchange with %s failed: %s", r->partner, err);
        return;
    }
    rdma_summary_t theirs;
    unsigned other = 1 - r->rank;
    if (rdma_summary_decode(values[other].data, values[other].len, &theirs, err, sizeof err) < 0)
        worker_log(r->ctx, "rdmabw: the result from %s does not parse: %s", r->partner, err);
    else {
        for (size_t i = 0; i < r->n_conns && i < theirs.n; i++)
            r->rx[i] = theirs.tx_gbps[i];
        fb_strlcpy(r->partner_error, theirs.error, sizeof r->partner_error);
    }
    worker_blobs_free(&values, worker_size(r->ctx));
}

/* The write floor, per connection, for what this side sent. */
static void s_judge_floor(run_t *r, size_t i)
{
    const ib_port_t *p = &r->ports[r->use[i]];
    double floor = rdmabw_floor_gbps(r->p.min_gbps, p->gbps, r->remote[i].gbps);
    if (floor <= 0 || r->tx[i] < 0)
        return;
    if (r->tx[i] < floor) {
        char *part = s_part(r, p);
        char basis[128];
        if (r->p.min_gbps > 0)
            snprintf(basis, sizeof basis, "min_gbps");
        else
            snprintf(basis, sizeof basis, "90%% of the %g Gb/sec port rate", floor / 0.9);
        fb_result_add_findingf(r->result, part, "link",
                               "RDMA write bandwidth %s -> %s/%s reached %.1f Gb/s at best, below "
                               "the floor of %.1f Gb/s (%s)",
                               p->name, r->pair ? r->partner : r->node, r->remote[i].port, r->tx[i],
                               floor, basis);
        free(part);
    }
    s_metric_min(r, "Gb/s", floor, "rdmabw.floor_gbps");
}

static void s_report(run_t *r)
{
    double tx_min = -1, rx_min = -1;
    for (size_t i = 0; i < r->n_conns; i++) {
        r->tx[i] = -1;
        if (!r->res[i])
            continue;
        s_report_bw(r, i);
        r->tx[i] = s_summarize(r, i);
        s_report_latency(r, i);
        s_report_data(r, i);
    }
    s_trade_results(r);
    for (size_t i = 0; i < r->n_conns; i++) {
        if (!r->res[i])
            continue;
        s_report_status(r, i);
        char key[96];
        s_port_key(&r->ports[r->use[i]], key, sizeof key);
        if (r->tx[i] >= 0) {
            s_metric(r, "Gb/s", r->tx[i], "rdmabw.%s.tx_gbps", key);
            tx_min = tx_min < 0 || r->tx[i] < tx_min ? r->tx[i] : tx_min;
        }
        if (r->rx[i] >= 0) {
            s_metric(r, "Gb/s", r->rx[i], "rdmabw.%s.rx_gbps", key);
            rx_min = rx_min < 0 || r->rx[i] < rx_min ? r->rx[i] : rx_min;
        }
        s_judge_floor(r, i);
    }
    if (tx_min >= 0)
        s_metric(r, "Gb/s", tx_min, "rdmabw.tx_gbps");
    if (rx_min >= 0)
        s_metric(r, "Gb/s", rx_min, "rdmabw.rx_gbps");
}

/* ---- the workload ---------------------------------------------------------------------------- */

static fb_verdict_t s_group_shape(run_t *r)
{
    unsigned size = worker_size(r->ctx);
    if (r->p.loopback && size != 1)
        return worker_error(r->ctx,
                            "rdmabw: loopback: true measures each HCA against itself and runs "
                            "with scope: node, not in a group of %u",
                            size);
    if (!r->p.loopback && size != 2)
        return worker_error(r->ctx,
                            "rdmabw measures between two nodes: run it with scope: pairs, or "
                            "with loopback: true on scope: node (this task has %u member%s)",
                            size, size == 1 ? "" : "s");
    r->pair = size == 2;
    r->rank = worker_rank(r->ctx);
    r->partner = r->pair ? worker_peer(r->ctx, 1 - r->rank) : r->node;
    if (!r->partner || !*r->partner)
        r->partner = r->pair ? "the partner" : r->node;
    return FB_VERDICT_NONE;
}

/* Counters that do not read are refused before the run, naming the file: a run without them
 * would pass over the evidence it exists to collect. */
static fb_verdict_t s_check_counters(run_t *r)
{
    ib_snapshot_t *snap = xcalloc(1, sizeof *snap);
    char err[600];
    fb_verdict_t v = FB_VERDICT_NONE;
    for (size_t i = 0; i < r->n_use && v == FB_VERDICT_NONE; i++) {
        const ib_port_t *p = &r->ports[r->use[i]];
        if (ib_snapshot_read(r->root, p->hca, p->port, snap, err, sizeof err) < 0)
            v = s_stop(r, FB_VERDICT_ERROR, "port counters of %s unreadable: %s", p->name, err);
    }
    free(snap);
    return v;
}

static fb_verdict_t s_load_verbs(run_t *r)
{
    char err[600];
    int rc = 0;
    if (r->opts->verbs)
        r->verbs = r->opts->verbs;
    else
        rc = rdma_verbs_open(r->opts->verbs_lib, &r->verbs, err, sizeof err);
    const ib_port_t *first = &r->ports[r->use[0]];
    if (rc == -ENOSYS)
        return s_stop(r, FB_VERDICT_ERROR, "%s is here but this worker was %s", first->hca, err);
    if (rc < 0)
        return s_stop(r, FB_VERDICT_ERROR, "%s is here but libibverbs is missing: %s", first->hca,
                      err);
    for (size_t i = 0; i < r->n_use; i++) {
        const char *hca = r->ports[r->use[i]].hca;
        if (!rdma_verbs_has_device(r->verbs, hca))
            return s_stop(r, FB_VERDICT_ERROR,
                          "%s is in sysfs but libibverbs lists no such device (its provider "
                          "library is missing: install rdma-core / ibverbs-providers)",
                          hca);
    }
    return FB_VERDICT_NONE;
}

static void s_plan(run_t *r)
{
    uint64_t lat_size = r->p.sizes[0] < S_LAT_MAX ? r->p.sizes[0] : S_LAT_MAX;
    r->n_steps = rdma_schedule(r->p.modes, r->p.n_modes, r->p.sizes, r->p.n_sizes, r->p.loopback,
                               r->p.lat_iters > 0, lat_size, r->steps, S_MAX_STEPS);
}

static fb_verdict_t s_run(run_t *r)
{
    fb_verdict_t v;
    if ((v = s_group_shape(r)) != FB_VERDICT_NONE)
        return v;
    worker_progress(r->ctx, 0.0, "rdmabw: ports");
    if ((v = s_choose_ports(r)) != FB_VERDICT_NONE)
        return v;
    for (size_t i = 0; i < r->n_use; i++)
        ib_port_judge_rate(r->ports, r->n_ports, &r->ports[r->use[i]], r->node, r->result);
    if ((v = s_check_counters(r)) != FB_VERDICT_NONE)
        return v;
    if ((v = s_load_verbs(r)) != FB_VERDICT_NONE)
        return v;
    worker_progress(r->ctx, 0.05, "rdmabw: opening %zu port%s", r->n_use, r->n_use == 1 ? "" : "s");
    if ((v = s_open_conns(r)) != FB_VERDICT_NONE)
        return v;
    if ((v = s_connect(r)) != FB_VERDICT_NONE)
        return v;
    s_plan(r);
    s_measure(r);
    s_report(r);
    return FB_VERDICT_NONE;
}

fb_verdict_t rdmabw_run_opts(worker_ctx_t *ctx, const rdmabw_opts_t *opts)
{
    double started = fb_mono_s();
    run_t *r = xcalloc(1, sizeof *r);
    r->ctx = ctx;
    r->result = worker_result(ctx);
    r->opts = opts;
    r->node = worker_node(ctx) && *worker_node(ctx) ? worker_node(ctx) : "localhost";
    r->root = worker_sysfs_root(ctx);
    char err[512];
    fb_verdict_t v;
    if (rdmabw_params(ctx, &r->p, err, sizeof err) < 0) {
        v = worker_error(ctx, "%s", err);
    } else {
        v = s_run(r);
        fb_result_set_metric(r->result, "rdmabw.connections", (double)r->n_conns, "");
        fb_result_set_metric(r->result, "rdmabw.gpu_memory", r->gpu_conns ? 1 : 0, "");
        fb_result_set_metric(r->result, "rdmabw.miscompare_bytes", (double)r->bad_bytes, "B");
        if (v == FB_VERDICT_NONE || v == FB_VERDICT_FAIL) {
            v = r->result->n_findings ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
            for (size_t i = 0; i < r->n_conns && v == FB_VERDICT_PASS; i++)
                if (r->status[i].rc)
                    v = worker_error(ctx, "rdmabw: %s", r->status[i].what);
        }
    }
    for (size_t i = 0; i < r->result->n_findings; i++)
        worker_log(ctx, "rdmabw: finding %s [%s]: %s", r->result->findings[i].part,
                   r->result->findings[i].kind, r->result->findings[i].what);
    fb_result_set_metric(r->result, "elapsed_s", fb_mono_s() - started, "s");
    s_close_conns(r);
    if (r->verbs != opts->verbs)
        rdma_verbs_close(&r->verbs);
    for (size_t i = 0; i < RDMA_MAX_CONNS; i++)
        free(r->res[i]);
    free(r->ports);
    free(r);
    worker_progress(ctx, 1.0, "rdmabw: done");
    worker_result(ctx)->verdict = v;
    return v;
}

fb_verdict_t rdmabw_run(worker_ctx_t *ctx)
{
    rdmabw_opts_t opts = {NULL, 0, NULL};
    return rdmabw_run_opts(ctx, &opts);
}
