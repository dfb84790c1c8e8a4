/* SPDX-License-Identifier: Apache-2.0 */
/* Encoding and strict decoding of what rdmabw members exchange: queue-pair details (text, through
 * the coordinator), the per-connection results after the run (text) and the control messages of
 * the run itself (32 bytes, little-endian). Decoders treat their input as hostile: every number is
 * range-checked, every line bounded, and a message that does not parse is refused with the line
 * and the key that failed. */
#include "rdma_wire.h"

#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAGIC "fbrdma 1"
#define S_RESULT_MAGIC "fbrdma-result 1"
#define S_MAX_MSG 65536

static void s_gid_hex(const uint8_t gid[16], char out[33])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[gid[i] >> 4];
        out[2 * i + 1] = hex[gid[i] & 15];
    }
    out[32] = '\0';
}

static int s_hex_gid(const char *text, uint8_t gid[16])
{
    if (strlen(text) != 32)
        return -EINVAL;
    for (int i = 0; i < 32; i++) {
        char c = text[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -EINVAL;
        if (i % 2 == 0)
            gid[i / 2] = (uint8_t)(d << 4);
        else
            gid[i / 2] |= (uint8_t)d;
    }
    return 0;
}

char *rdma_endpoints_encode(const rdma_endpoint_t *eps, size_t n, const char *reason)
{
    if (reason) {
        /* One line: the reason must not end the message early or forge lines. */
        char *r = xstrdup(reason);
        for (char *p = r; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        char *msg = xasprintf(S_MAGIC "\nnone %s\n", r);
        free(r);
        return msg;
    }
    size_t cap = 64 + n * 512, used = 0;
    char *msg = xmalloc(cap);
    used += (size_t)snprintf(msg, cap, S_MAGIC "\n");
    for (size_t i = 0; i < n; i++) {
        const rdma_endpoint_t *e = &eps[i];
        char gid[33];
        s_gid_hex(e->gid, gid);
        used += (size_t)snprintf(
            msg + used, cap - used,
            "ep port=%s lid=%u gid=%s mtu=%u qpn=%u psn=%u cqpn=%u cpsn=%u rkey=%u src=%" PRIx64
            " sink=%" PRIx64 " region=%" PRIu64 " lrkey=%u laddr=%" PRIx64
            " gbps=%.17g roce=%d gpu=%d\n",
            e->port, e->lid, gid, e->mtu, e->qpn, e->psn, e->ctl_qpn, e->ctl_psn, e->rkey,
            e->src_addr, e->sink_addr, e->region, e->lat_rkey, e->lat_addr, e->gbps, e->roce,
            e->gpu);
    }
    return msg;
}

/* ---- decoding -------------------------------------------------------------------------------- */

/* Copies the message into a terminated buffer; refuses NUL bytes and oversize input. */
static char *s_terminated(const void *msg, size_t len, char *err, size_t errlen)
{
    if (len > S_MAX_MSG) {
        snprintf(err, errlen, "message of %zu bytes is over %u", len, S_MAX_MSG);
        return NULL;
    }
    if (memchr(msg, '\0', len)) {
        snprintf(err, errlen, "message holds a NUL byte");
        return NULL;
    }
    char *text = xmalloc(len + 1);
    memcpy(text, msg, len);
    text[len] = '\0';
    return text;
}

static int s_u64(const char *v, int base, uint64_t max, uint64_t *out)
{
    if (!*v || *v == '-' || *v == '+' || *v == ' ')
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, base);
    if (errno || *end || x > max)
        return -EINVAL;
    *out = x;
    return 0;
}

enum {
    K_PORT = 1 << 0,
    K_LID = 1 << 1,
    K_GID = 1 << 2,
    K_MTU = 1 << 3,
    K_QPN = 1 << 4,
    K_PSN = 1 << 5,
    K_CQPN = 1 << 6,
    K_CPSN = 1 << 7,
    K_RKEY = 1 << 8,
    K_SRC = 1 << 9,
    K_SINK = 1 << 10,
    K_REGION = 1 << 11,
    K_LRKEY = 1 << 12,
    K_LADDR = 1 << 13,
    K_GBPS = 1 << 14,
    K_ROCE = 1 << 15,
    K_GPU = 1 << 16,
    K_ALL = (1 << 17) - 1,
};

/* One "key=value" of an ep line into e; sets the key's bit in *seen. */
static int s_ep_field(rdma_endpoint_t *e, const char *key, const char *v, unsigned *seen)
{
    uint64_t x = 0;
    int rc = 0;
    unsigned bit = 0;
    if (!strcmp(key, "port")) {
        size_t l = strlen(v);
        bit = K_PORT;
        if (l == 0 || l >= sizeof e->port ||
            strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.:") != l)
            return -EINVAL;
        memcpy(e->port, v, l + 1);
    } else if (!strcmp(key, "lid")) {
        bit = K_LID, rc = s_u64(v, 10, 0xffff, &x), e->lid = (uint16_t)x;
    } else if (!strcmp(key, "gid")) {
        bit = K_GID, rc = s_hex_gid(v, e->gid);
    } else if (!strcmp(key, "mtu")) {
        bit = K_MTU, rc = s_u64(v, 10, 4096, &x), e->mtu = (uint32_t)x;
        if (rc == 0 && x != 256 && x != 512 && x != 1024 && x != 2048 && x != 4096)
            rc = -EINVAL;
    } else if (!strcmp(key, "qpn")) {
        bit = K_QPN, rc = s_u64(v, 10, 0xffffff, &x), e->qpn = (uint32_t)x;
    } else if (!strcmp(key, "psn")) {
        bit = K_PSN, rc = s_u64(v, 10, 0xffffff, &x), e->psn = (uint32_t)x;
    } else if (!strcmp(key, "cqpn")) {
        bit = K_CQPN, rc = s_u64(v, 10, 0xffffff, &x), e->ctl_qpn = (uint32_t)x;
    } else if (!strcmp(key, "cpsn")) {
        bit = K_CPSN, rc = s_u64(v, 10, 0xffffff, &x), e->ctl_psn = (uint32_t)x;
    } else if (!strcmp(key, "rkey")) {
        bit = K_RKEY, rc = s_u64(v, 10, UINT32_MAX, &x), e->rkey = (uint32_t)x;
    } else if (!strcmp(key, "src")) {
        bit = K_SRC, rc = s_u64(v, 16, UINT64_MAX, &e->src_addr);
    } else if (!strcmp(key, "sink")) {
        bit = K_SINK, rc = s_u64(v, 16, UINT64_MAX, &e->sink_addr);
    } else if (!strcmp(key, "region")) {
        /* At most 1 TiB: a peer claiming more is confused or lying. */
        bit = K_REGION, rc = s_u64(v, 10, UINT64_C(1) << 40, &e->region);
        if (rc == 0 && e->region == 0)
            rc = -EINVAL;
    } else if (!strcmp(key, "lrkey")) {
        bit = K_LRKEY, rc = s_u64(v, 10, UINT32_MAX, &x), e->lat_rkey = (uint32_t)x;
    } else if (!strcmp(key, "laddr")) {
        bit = K_LADDR, rc = s_u64(v, 16, UINT64_MAX, &e->lat_addr);
    } else if (!strcmp(key, "gbps")) {
        char *end = NULL;
        bit = K_GBPS;
        errno = 0;
        e->gbps = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(e->gbps) || e->gbps < 0 || e->gbps > 1e6)
            rc = -EINVAL;
    } else if (!strcmp(key, "roce") || !strcmp(key, "gpu")) {
        bit = key[0] == 'r' ? K_ROCE : K_GPU;
        rc = s_u64(v, 10, 1, &x);
        if (key[0] == 'r')
            e->roce = x == 1;
        else
            e->gpu = x == 1;
    } else {
        return 0; /* a key from a newer peer */
    }
    if (rc == 0)
        *seen |= bit;
    return rc;
}

static int s_ep_line(char *line, rdma_endpoint_t *e, char *err, size_t errlen, unsigned lineno)
{
    memset(e, 0, sizeof *e);
    unsigned seen = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) {
            snprintf(err, errlen, "line %u: '%.40s' is not key=value", lineno, tok);
            return -EINVAL;
        }
        *eq = '\0';
        if (s_ep_field(e, tok, eq + 1, &seen) < 0) {
            char shown[64];
            snprintf(err, errlen, "line %u: %s='%s' is out of range or malformed", lineno, tok,
                     fb_show_value(eq + 1, shown, sizeof shown));
            return -EINVAL;
        }
    }
    if (seen != K_ALL) {
        static const char *const names[] = {"port",  "lid",   "gid",  "mtu",  "qpn",  "psn",
                                            "cqpn",  "cpsn",  "rkey", "src",  "sink", "region",
                                            "lrkey", "laddr", "gbps", "roce", "gpu"};
        for (unsigned i = 0; i < FB_ARRAY_LEN(names); i++)
            if (!(seen >> i & 1)) {
                snprintf(err, errlen, "line %u: key %s is missing", lineno, names[i]);
                break;
            }
        return -EINVAL;
    }
    return 0;
}

/* One line of a text message, numbered from 1 (the magic line): 0 to go on, 1 to stop reading,
 * or a negative errno with err written. */
typedef int (*s_line_fn)(char *line, unsigned lineno, void *arg, char *err, size_t errlen);

/* Hands the lines of msg to fn in order until it returns non-zero; a message without lines is
 * "empty WHAT message". Returns 0 or fn's (or the framing's) negative errno. */
static int s_each_line(const void *msg, size_t len, const char *what, s_line_fn fn, void *arg,
                       char *err, size_t errlen)
{
    char *text = s_terminated(msg, len, err, errlen);
    if (!text)
        return -EINVAL;
    int rc = 0;
    unsigned lineno = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && rc == 0;
         line = strtok_r(NULL, "\n", &save))
        rc = fn(line, ++lineno, arg, err, errlen);
    if (rc == 0 && lineno == 0) {
        snprintf(err, errlen, "empty %s message", what);
        rc = -EINVAL;
    }
    free(text);
    return rc < 0 ? rc : 0;
}

/* What rdma_endpoints_decode fills, for s_endpoints_line. */
typedef struct {
    rdma_endpoint_t *eps;
    size_t cap, n;
    bool *none;
    char *reason;
    size_t reason_len;
} s_endpoints_t;

static int s_endpoints_line(char *line, unsigned lineno, void *arg, char *err, size_t errlen)
{
    s_endpoints_t *d = arg;
    if (lineno == 1) {
        if (strcmp(line, S_MAGIC) == 0)
            return 0;
        snprintf(err, errlen, "not an rdmabw endpoint message (first line '%.40s')", line);
        return -EINVAL;
    }
    if (!strncmp(line, "none ", 5) && lineno == 2) {
        *d->none = true;
        fb_strlcpy(d->reason, line + 5, d->reason_len);
        return 1;
    }
    if (strncmp(line, "ep ", 3) != 0) {
        snprintf(err, errlen, "line %u: expected 'ep ...' or 'none ...'", lineno);
        return -EINVAL;
    }
    if (d->n >= d->cap || d->n >= RDMA_MAX_CONNS) {
        snprintf(err, errlen, "more than %zu endpoints",
                 d->cap < RDMA_MAX_CONNS ? d->cap : (size_t)RDMA_MAX_CONNS);
        return -EINVAL;
    }
    int rc = s_ep_line(line + 3, &d->eps[d->n], err, errlen, lineno);
    if (rc == 0)
        d->n++;
    return rc;
}

int rdma_endpoints_decode(const void *msg, size_t len, rdma_endpoint_t *eps, size_t cap, bool *none,
                          char *reason, size_t reason_len, char *err, size_t errlen)
{
    *none = false;
    if (reason_len)
        reason[0] = '\0';
    s_endpoints_t d = {eps, cap, 0, none, reason, reason_len};
    int rc = s_each_line(msg, len, "endpoint", s_endpoints_line, &d, err, errlen);
    return rc < 0 ? rc : (int)d.n;
}

/* ---- the result summary ---------------------------------------------------------------------- */

char *rdma_summary_encode(const rdma_summary_t *s)
{
    size_t cap = 128 + s->n * 64 + sizeof s->error, used = 0;
    char *msg = xmalloc(cap);
    used += (size_t)snprintf(msg, cap, S_RESULT_MAGIC "\n");
    for (size_t i = 0; i < s->n && i < RDMA_MAX_CONNS; i++)
        used += (size_t)snprintf(msg + used, cap - used, "tx %zu %.17g\n", i, s->tx_gbps[i]);
    if (s->error[0]) {
        char *e = xstrdup(s->error);
        for (char *p = e; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        snprintf(msg + used, cap - used, "error %s\n", e);
        free(e);
    }
    return msg;
}

static int s_summary_line(char *line, unsigned lineno, void *arg, char *err, size_t errlen)
{
    rdma_summary_t *out = arg;
    if (lineno == 1) {
        if (strcmp(line, S_RESULT_MAGIC) == 0)
            return 0;
        snprintf(err, errlen, "not an rdmabw result message");
        return -EINVAL;
    }
    if (!strncmp(line, "error ", 6)) {
        fb_strlcpy(out->error, line + 6, sizeof out->error);
        return 0;
    }
    unsigned idx;
    double gbps;
    int used = 0;
    if (sscanf(line, "tx %u %lf%n", &idx, &gbps, &used) != 2 || line[used] != '\0' ||
        idx != out->n || idx >= RDMA_MAX_CONNS || !isfinite(gbps) || gbps > 1e6) {
        snprintf(err, errlen, "line %u: expected 'tx %zu <Gb/s>'", lineno, out->n);
        return -EINVAL;
    }
    out->tx_gbps[out->n++] = gbps;
    return 0;
}

int rdma_summary_decode(const void *msg, size_t len, rdma_summary_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    return s_each_line(msg, len, "result", s_summary_line, out, err, errlen);
}

/* ---- control messages ------------------------------------------------------------------------ */

#define S_CTL_MAGIC 0x43524246u /* "FBRC" */

static void s_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void s_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t s_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t s_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void rdma_ctl_encode(const rdma_ctl_t *m, uint8_t out[RDMA_CTL_BYTES])
{
    memset(out, 0, RDMA_CTL_BYTES);
    s_put32(out, S_CTL_MAGIC);
    s_put32(out + 4, m->kind);
    s_put32(out + 8, m->step);
    s_put32(out + 12, (uint32_t)m->status);
    s_put64(out + 16, m->value);
}

int rdma_ctl_decode(const uint8_t in[RDMA_CTL_BYTES], rdma_ctl_t *m)
{
    if (s_get32(in) != S_CTL_MAGIC)
        return -EINVAL;
    m->kind = s_get32(in + 4);
    m->step = s_get32(in + 8);
    m->status = (int32_t)s_get32(in + 12);
    m->value = s_get64(in + 16);
    if (m->kind < RDMA_CTL_READY || m->kind > RDMA_CTL_ABORT)
        return -EINVAL;
    return 0;
}
