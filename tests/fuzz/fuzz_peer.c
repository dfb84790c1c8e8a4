/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes what the members of a multi-node workload decode from each other (values relayed by
 * the coordinator's Exchange, or read from a peer's socket or queue pair) and what a worker reads
 * from the MPI ranks it launched: allreduce's member and results values and rank lines, launcher
 * mpirun's member line, rdmabw's endpoints, summary and control messages, netbw's hello and
 * result. Byte 0 picks the decoder, the rest is the message. What decodes must encode into a
 * message that decodes, and encoding must settle (see s_fixed_point). */
#include "fuzz.h"

#include "allreduce/ar.h"
#include "allreduce/launch_mpirun.h"
#include "allreduce/native.h"
#include "net/control.h"
#include "rdma/rdma_wire.h"

#include <errno.h>

FZ_INITIALIZE()

/* n(text) = encode(decode(text)), NULL when text does not decode. What decodes encodes into text
 * that decodes, and the encoding settles: n(n(n(x))) = n(n(x)). (Free text such as a reason is
 * made one line when encoded, and blanks around it are not kept: the first round may change it.) */
typedef char *(*s_norm_fn)(const uint8_t *data, size_t len);

static void s_fixed_point(s_norm_fn norm, const uint8_t *data, size_t len)
{
    char *once = norm(data, len);
    if (!once)
        return;
    char *twice = norm((const uint8_t *)once, strlen(once));
    if (!twice)
        fprintf(stderr, "an encoding does not decode:\n%s\n", once);
    FZ_CHECK(twice != NULL);
    char *thrice = norm((const uint8_t *)twice, strlen(twice));
    if (!thrice || strcmp(twice, thrice) != 0)
        fprintf(stderr, "the encoding does not settle:\n%s\n--\n%s\n", twice,
                thrice ? thrice : "(rejected)");
    FZ_CHECK(thrice && strcmp(twice, thrice) == 0);
    free(once);
    free(twice);
    free(thrice);
}

static char *s_member(const uint8_t *data, size_t len)
{
    ar_member_t m;
    return ar_member_parse(data, len, &m) == 0 ? ar_member_format(&m) : NULL;
}

static char *s_results(const uint8_t *data, size_t len)
{
    char *error = NULL;
    ar_size_result_t *sizes = NULL;
    ar_rank_error_t *bad = NULL;
    size_t n = 0, n_bad = 0;
    if (ar_results_parse(data, len, &error, &sizes, &n, &bad, &n_bad) != 0)
        return NULL;
    char *text = ar_results_format(error, sizes, n, bad, n_bad);
    free(error);
    free(sizes);
    free(bad);
    return text;
}

static char *s_mpirun_member(const uint8_t *data, size_t len)
{
    mpirun_member_t m;
    return mpirun_member_parse((const char *)data, len, &m) == 0 ? mpirun_member_format(&m) : NULL;
}

static char *s_endpoints(const uint8_t *data, size_t len)
{
    rdma_endpoint_t eps[RDMA_MAX_CONNS];
    bool none = false;
    char reason[256], err[256];
    int n = rdma_endpoints_decode(data, len, eps, RDMA_MAX_CONNS, &none, reason, sizeof reason, err,
                                  sizeof err);
    if (n < 0)
        return NULL;
    FZ_CHECK(n <= RDMA_MAX_CONNS);
    return rdma_endpoints_encode(eps, (size_t)n, none ? reason : NULL);
}

static char *s_summary(const uint8_t *data, size_t len)
{
    rdma_summary_t s;
    char err[256];
    if (rdma_summary_decode(data, len, &s, err, sizeof err) != 0)
        return NULL;
    FZ_CHECK(s.n <= RDMA_MAX_CONNS && memchr(s.error, '\0', sizeof s.error));
    return rdma_summary_encode(&s);
}

/* One line from the ranks' output: text until the first NUL or newline. */
static char *s_line(const uint8_t *data, size_t len)
{
    size_t n = 0;
    while (n < len && data[n] != '\0' && data[n] != '\n')
        n++;
    return xstrndup((const char *)data, n);
}

static char *s_size_line(const uint8_t *data, size_t len)
{
    char *line = s_line(data, len);
    ar_size_result_t r;
    char buf[512];
    int rc = ar_parse_line(line, &r);
    free(line);
    if (rc != 0)
        return NULL;
    ar_format_line(&r, buf, sizeof buf);
    return xstrdup(buf);
}

static char *s_rank_line(const uint8_t *data, size_t len)
{
    char *line = s_line(data, len);
    unsigned rank = 0;
    char name[128], buf[256];
    int rc = ar_parse_rank_line(line, &rank, name, sizeof name);
    free(line);
    if (rc != 0)
        return NULL;
    ar_format_rank_line(rank, name, buf, sizeof buf);
    return xstrdup(buf);
}

static char *s_error_line(const uint8_t *data, size_t len)
{
    char *line = s_line(data, len);
    ar_rank_error_t e;
    char buf[512];
    int rc = ar_parse_error_line(line, &e);
    free(line);
    if (rc != 0)
        return NULL;
    ar_format_error_line(&e, buf, sizeof buf);
    return xstrdup(buf);
}

/* Fixed-size binary messages: decode, encode, and the encoding decodes to the same. */
static void s_binary(unsigned which, const uint8_t *data, size_t len)
{
    uint8_t in[64] = {0}, out[64], again[64];
    memcpy(in, data, len < sizeof in ? len : sizeof in);
    if (which == 0) {
        nbc_hello_t h, h2;
        if (nbc_hello_decode(in, &h) != 0)
            return;
        nbc_hello_encode(&h, out);
        FZ_CHECK(nbc_hello_decode(out, &h2) == 0);
        nbc_hello_encode(&h2, again);
        FZ_CHECK(memcmp(out, again, NBC_HELLO_LEN) == 0);
    } else if (which == 1) {
        nbc_result_t r, r2;
        nbc_result_decode(in, &r);
        nbc_result_encode(&r, out);
        nbc_result_decode(out, &r2);
        nbc_result_encode(&r2, again);
        FZ_CHECK(memcmp(out, again, NBC_RESULT_LEN) == 0);
    } else {
        rdma_ctl_t m, m2;
        if (rdma_ctl_decode(in, &m) != 0)
            return;
        rdma_ctl_encode(&m, out);
        FZ_CHECK(rdma_ctl_decode(out, &m2) == 0);
        rdma_ctl_encode(&m2, again);
        FZ_CHECK(memcmp(out, again, RDMA_CTL_BYTES) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const s_norm_fn text[] = {s_member,  s_results,   s_mpirun_member, s_endpoints,
                                     s_summary, s_size_line, s_rank_line,     s_error_line};
    if (size < 1)
        return 0;
    unsigned which = data[0] % (FB_ARRAY_LEN(text) + 3);
    /* A heap copy of exactly the message, so that a read past its end is seen. */
    uint8_t *msg = xmalloc(size - 1 ? size - 1 : 1);
    memcpy(msg, data + 1, size - 1);
    if (which < FB_ARRAY_LEN(text))
        s_fixed_point(text[which], msg, size - 1);
    else
        s_binary(which - (unsigned)FB_ARRAY_LEN(text), msg, size - 1);
    free(msg);
    return 0;
}
