/* SPDX-License-Identifier: Apache-2.0 */
/* allreduce core: what every way of running the all-reduce shares. Parameters are read once here
 * (and handed to rank binaries as words), the sweep and the nccl-tests formulas are computed here,
 * ranks report in the line formats parsed here, and a finished sweep is judged here into metrics,
 * a readable per-size table, findings that name the rank that saw wrong data, and a verdict. Pure
 * C with no I/O but worker_ctx, so the GPU rank binaries link it as they are. */
#include "ar.h"
#include "common/units.h"
#include "common/util.h"
#include "worker.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AR_GPU_DEFAULT_MAX (8ull << 30)
#define AR_CPU_DEFAULT_MAX (1ull << 30)
#define AR_MAX_FINDINGS 16 /* wrong-element findings itemised; the rest are counted */

static const char *const s_dtype_names[] = {"float", "half", "bfloat16", "double", "int32"};
static const size_t s_dtype_sizes[] = {4, 2, 2, 8, 4};
static const char *const s_op_names[] = {"sum", "prod", "max", "min"};
static const char *const s_launcher_names[] = {"mpirun", "native"};

void ar_expect_table(ar_op_t op, unsigned nranks, double table[4])
{
    for (unsigned a = 0; a < 4; a++) {
        double acc = op == AR_OP_PROD  ? 1.0
                     : op == AR_OP_MAX ? -1e300
                     : op == AR_OP_MIN ? 1e300
                                       : 0.0;
        for (unsigned r = 0; r < nranks; r++) {
            uint64_t g = (uint64_t)r * 40503u;
            g ^= g >> 13;
            unsigned bits = op == AR_OP_PROD ? (unsigned)((g >> 3) & 1u) : (unsigned)(g & 3u);
            double v = 1.0 + (double)((a ^ bits) & (op == AR_OP_PROD ? 1u : 3u));
            if (op == AR_OP_SUM)
                acc += v;
            else if (op == AR_OP_PROD)
                acc *= v;
            else if (op == AR_OP_MAX)
                acc = v > acc ? v : acc;
            else
                acc = v < acc ? v : acc;
        }
        table[a] = acc;
    }
}

/* Integers up to 2^p are exact in a type with p significant bits; a sum of n values <= 4 stays
 * below 4n, and a product of n values in {1, 2} is a power of two below the type's largest. */
unsigned ar_exact_ranks(ar_dtype_t dtype, ar_op_t op)
{
    static const unsigned sig_bits[] = {24, 11, 8, 53, 31};
    static const unsigned max_pow2[] = {127, 15, 127, 1023, 30};
    if (op == AR_OP_MAX || op == AR_OP_MIN)
        return UINT_MAX;
    if (op == AR_OP_PROD)
        return max_pow2[dtype];
    unsigned bits = sig_bits[dtype];
    return bits >= 34 ? UINT_MAX : (unsigned)((1ull << bits) / 4);
}

size_t ar_dtype_size(ar_dtype_t dtype)
{
    return s_dtype_sizes[dtype];
}

const char *ar_dtype_name(ar_dtype_t dtype)
{
    return s_dtype_names[dtype];
}

const char *ar_op_name(ar_op_t op)
{
    return s_op_names[op];
}

static int s_lookup(const char *text, const char *const *names, size_t n)
{
    for (size_t i = 0; text && i < n; i++)
        if (!strcmp(text, names[i]))
            return (int)i;
    return -1;
}

/* ---- parameters ------------------------------------------------------------------------------ */

/* A parameter as given, else the schema's default (scheduler/workload.c), so that both places
 * never disagree on a default. */
static const char *s_param(const worker_ctx_t *ctx, const char *key, const char *fallback)
{
    const char *v = worker_param(ctx, key);
    return v ? v : fallback;
}

static int s_bad(char *err, size_t errlen, const char *key, const char *value, const char *expected)
{
    snprintf(err, errlen, "%s: '%s' is not %s", key, value, expected);
    return -EINVAL;
}

static int s_enum(const char *key, const char *value, const char *const *names, size_t n, int *out,
                  char *err, size_t errlen)
{
    int i = s_lookup(value, names, n);
    if (i < 0) {
        char list[128] = "";
        for (size_t k = 0; k < n; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                     names[k]);
        char expected[160];
        snprintf(expected, sizeof expected, "one of %s", list);
        return s_bad(err, errlen, key, value, expected);
    }
    *out = i;
    return 0;
}

static int s_count(const char *key, const char *value, uint64_t min, uint64_t max, unsigned *out,
                   char *err, size_t errlen)
{
    uint64_t v = 0;
    if (fb_parse_uint(value, max, &v) || v < min) {
        char expected[96];
        snprintf(expected, sizeof expected, "an integer from %" PRIu64 " to %" PRIu64, min, max);
        return s_bad(err, errlen, key, value, expected);
    }
    *out = (unsigned)v;
    return 0;
}

/* Fills every field but the launcher and inject_corrupt from key/value text; shared by the worker
 * (task parameters) and the rank binaries (their words). */
typedef struct {
    const char *min_size, *max_size, *factor, *dtype, *op, *iters, *warmup;
} s_texts_t;

static int s_opts_from_texts(const s_texts_t *t, ar_opts_t *out, char *err, size_t errlen)
{
    int dtype = 0, op = 0;
    if (fb_parse_bytes(t->min_size, &out->min_bytes) || out->min_bytes == 0)
        return s_bad(err, errlen, "min_size", t->min_size, "a byte size of at least 1");
    out->max_bytes = 0;
    if (t->max_size && (fb_parse_bytes(t->max_size, &out->max_bytes) || out->max_bytes == 0))
        return s_bad(err, errlen, "max_size", t->max_size, "a byte size of at least 1");
    if (s_count("factor", t->factor, 2, 1024, &out->factor, err, errlen) ||
        s_enum("dtype", t->dtype, s_dtype_names, 5, &dtype, err, errlen) ||
        s_enum("op", t->op, s_op_names, 4, &op, err, errlen) ||
        s_count("iters", t->iters, 1, 100000, &out->iters, err, errlen) ||
        s_count("warmup", t->warmup, 0, 100000, &out->warmup, err, errlen))
        return -EINVAL;
    out->dtype = (ar_dtype_t)dtype;
    out->op = (ar_op_t)op;
    return 0;
}

int ar_opts_from_params(const worker_ctx_t *ctx, bool gpu, uint64_t host_mem_bytes,
                        unsigned ranks_per_node, ar_opts_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int launcher = 0;
    if (s_enum("launcher", s_param(ctx, "launcher", "mpirun"), s_launcher_names, 2, &launcher, err,
               errlen))
        return -EINVAL;
    out->launcher = (ar_launcher_t)launcher;
    s_texts_t t = {s_param(ctx, "min_size", "8"), worker_param(ctx, "max_size"),
                   s_param(ctx, "factor", "2"),   s_param(ctx, "dtype", "float"),
                   s_param(ctx, "op", "sum"),     s_param(ctx, "iters", "20"),
                   s_param(ctx, "warmup", "5")};
    if (s_opts_from_texts(&t, out, err, errlen))
        return -EINVAL;
    const char *bw = worker_param(ctx, "min_busbw_gbs");
    double min_bw = 0;
    if (bw && (fb_parse_double(bw, &min_bw) || min_bw < 0))
        return s_bad(err, errlen, "min_busbw_gbs", bw, "a non-negative number");
    const char *inject = worker_param(ctx, "inject_corrupt");
    if (inject) {
        if (fb_parse_bool(inject, &out->inject_corrupt))
            return s_bad(err, errlen, "inject_corrupt", inject, "a boolean");
        if (out->inject_corrupt && !worker_fault_injection_allowed(ctx)) {
            snprintf(err, errlen,
                     "inject_corrupt refused: the agent was not started with "
                     "--allow-fault-injection");
            return -EINVAL;
        }
    }
    if (out->max_bytes == 0) {
        /* Two buffers per rank, and room for MPI's own: a quarter of memory per rank. */
        uint64_t per_rank = host_mem_bytes / (4ull * (ranks_per_node ? ranks_per_node : 1));
        out->max_bytes = gpu                                               ? AR_GPU_DEFAULT_MAX
                         : host_mem_bytes && per_rank < AR_CPU_DEFAULT_MAX ? per_rank
                                                                           : AR_CPU_DEFAULT_MAX;
        if (out->max_bytes < out->min_bytes)
            out->max_bytes = out->min_bytes;
    }
    if (out->min_bytes > out->max_bytes) {
        char a[32], b[32];
        snprintf(err, errlen, "min_size %s is larger than max_size %s",
                 fb_format_bytes(out->min_bytes, a, sizeof a),
                 fb_format_bytes(out->max_bytes, b, sizeof b));
        return -EINVAL;
    }
    return 0;
}

/* ---- sweep and formulas ---------------------------------------------------------------------- */

size_t ar_sweep(const ar_opts_t *opts, uint64_t **sizes_out)
{
    size_t elem = ar_dtype_size(opts->dtype), n = 0, cap = 16;
    uint64_t *sizes = xmalloc(cap * sizeof *sizes);
    uint64_t factor = opts->factor >= 2 ? opts->factor : 2;
    for (uint64_t b = opts->min_bytes; b && b <= opts->max_bytes;) {
        uint64_t whole = b / elem ? b / elem * elem : elem;
        /* Rounding to whole elements can repeat a size (1, 2, 4 B of float are all 4 B). */
        if (whole <= opts->max_bytes && (n == 0 || sizes[n - 1] != whole)) {
            if (n == cap)
                sizes = xrealloc(sizes, (cap *= 2) * sizeof *sizes);
            sizes[n++] = whole;
        }
        if (b > UINT64_MAX / factor)
            break;
        b *= factor;
    }
    if (n == 0) /* max_bytes below one element: the one element still says something */
        sizes[n++] = elem;
    *sizes_out = sizes;
    return n;
}

int ar_rank_sweep(const ar_rank_sweep_t *s, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->n_sizes; k++) {
        ar_size_result_t r;
        ar_rank_error_t bad;
        bool inject = s->inject && s->rank == 0 && k == s->n_sizes - 1;
        rc = s->run_size(s->rank_self, s->sizes[k], inject, &r, &bad);
        if (rc == 0)
            rc = s->size_done(s->done_self, k, &r, r.errors ? &bad : NULL, err, errlen);
    }
    return rc;
}

double ar_algbw_gbs(uint64_t bytes, double seconds)
{
    return seconds > 0 ? (double)bytes / seconds / 1e9 : 0.0;
}

double ar_busbw_gbs(uint64_t bytes, double seconds, unsigned nranks)
{
    if (nranks == 0)
        return 0.0;
    return ar_algbw_gbs(bytes, seconds) * 2.0 * (double)(nranks - 1) / (double)nranks;
}

/* ---- lines ----------------------------------------------------------------------------------- */

void ar_format_line(const ar_size_result_t *r, char *buf, size_t len)
{
    snprintf(buf, len,
             "fb-allreduce bytes=%" PRIu64 " count=%" PRIu64
             " avg_us=%.3f min_us=%.3f max_us=%.3f errors=%" PRIu64 " bad_rank=%d iters=%u",
             r->bytes, r->count, r->avg_us, r->min_us, r->max_us, r->errors, r->first_bad_rank,
             r->iters);
}

/* Reads "key=" then a number ending at a space or the end; advances *p past it. */
static int s_field(const char **p, const char *key, char *num, size_t numlen)
{
    size_t klen = strlen(key);
    while (**p == ' ')
        (*p)++;
    if (strncmp(*p, key, klen) || (*p)[klen] != '=')
        return -EINVAL;
    *p += klen + 1;
    size_t n = strcspn(*p, " \t\r\n");
    if (n == 0 || n >= numlen)
        return -EINVAL;
    memcpy(num, *p, n);
    num[n] = '\0';
    *p += n;
    return 0;
}

static int s_u64(const char **p, const char *key, uint64_t *out)
{
    char num[32];
    return s_field(p, key, num, sizeof num) || fb_parse_uint(num, UINT64_MAX, out) ? -EINVAL : 0;
}

static int s_uint(const char **p, const char *key, unsigned *out)
{
    uint64_t v = 0;
    if (s_u64(p, key, &v) || v > UINT_MAX)
        return -EINVAL;
    *out = (unsigned)v;
    return 0;
}

static int s_dbl(const char **p, const char *key, double *out)
{
    char num[48];
    return s_field(p, key, num, sizeof num) || fb_parse_double(num, out) ? -EINVAL : 0;
}

static int s_int(const char **p, const char *key, int *out)
{
    char num[24], *end = NULL;
    if (s_field(p, key, num, sizeof num))
        return -EINVAL;
    long v = strtol(num, &end, 10);
    if (*end || v < -1 || v > INT_MAX)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

/* The line's prefix word, then only trailing blanks after the fields. */
static int s_prefix(const char **p, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(*p, word, n) || (*p)[n] != ' ')
        return -EINVAL;
    *p += n;
    return 0;
}

static int s_end(const char *p)
{
    while (*p == ' ' || *p == '\r' || *p == '\n')
        p++;
    return *p ? -EINVAL : 0;
}

int ar_parse_line(const char *line, ar_size_result_t *out)
{
    ar_size_result_t r = {0};
    const char *p = line;
    if (!line || s_prefix(&p, "fb-allreduce") || s_u64(&p, "bytes", &r.bytes) ||
        s_u64(&p, "count", &r.count) || s_dbl(&p, "avg_us", &r.avg_us) ||
        s_dbl(&p, "min_us", &r.min_us) || s_dbl(&p, "max_us", &r.max_us) ||
        s_u64(&p, "errors", &r.errors) || s_int(&p, "bad_rank", &r.first_bad_rank) ||
        s_uint(&p, "iters", &r.iters) || s_end(p))
        return -EINVAL;
    /* An iteration takes less than 1e13 us (116 days; a task runs 30 days at most): a larger
     * time is not a measurement, and ar_format_line could not write it back as the parser
     * reads it (found by fuzzing). */
    if (r.bytes == 0 || r.count == 0 || r.avg_us < 0 || r.min_us < 0 || r.max_us < 0 ||
        r.avg_us > 1e13 || r.min_us > 1e13 || r.max_us > 1e13 ||
        (r.errors > 0) != (r.first_bad_rank >= 0))
        return -EINVAL;
    *out = r;
    return 0;
}

void ar_format_rank_line(unsigned rank, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "fb-allreduce-rank rank=%u name=%s", rank, name && *name ? name : "?");
    /* A name is one word: blanks would end it early for the parser. */
    for (char *c = strstr(buf, "name=") + 5; *c; c++)
        if (*c == ' ' || *c == '\t')
            *c = '_';
}

int ar_parse_rank_line(const char *line, unsigned *rank, char *name, size_t namelen)
{
    const char *p = line;
    char word[256];
    if (!line || s_prefix(&p, "fb-allreduce-rank") || s_uint(&p, "rank", rank) ||
        s_field(&p, "name", word, sizeof word) || s_end(p))
        return -EINVAL;
    fb_strlcpy(name, word, namelen);
    return 0;
}

void ar_format_error_line(const ar_rank_error_t *e, char *buf, size_t len)
{
    snprintf(buf, len,
             "fb-allreduce-error bytes=%" PRIu64 " rank=%u errors=%" PRIu64 " index=%" PRIu64
             " iter=%u expected=%.17g got=%.17g",
             e->bytes, e->rank, e->errors, e->index, e->iter, e->expected, e->got);
}

/* "got" may be NaN or infinite (a poisoned or garbage element): accepted here, unlike
 * fb_parse_double. */
static int s_any_dbl(const char **p, const char *key, double *out)
{
    char num[48], *end = NULL;
    if (s_field(p, key, num, sizeof num))
        return -EINVAL;
    *out = strtod(num, &end);
    return *end ? -EINVAL : 0;
}

int ar_parse_error_line(const char *line, ar_rank_error_t *out)
{
    ar_rank_error_t e = {0};
    const char *p = line;
    if (!line || s_prefix(&p, "fb-allreduce-error") || s_u64(&p, "bytes", &e.bytes) ||
        s_uint(&p, "rank", &e.rank) || s_u64(&p, "errors", &e.errors) ||
        s_u64(&p, "index", &e.index) || s_uint(&p, "iter", &e.iter) ||
        s_any_dbl(&p, "expected", &e.expected) || s_any_dbl(&p, "got", &e.got) || s_end(p) ||
        e.errors == 0)
        return -EINVAL;
    *out = e;
    return 0;
}

void ar_opts_to_args(const ar_opts_t *opts, char words[AR_ARGS_N][AR_ARG_MAX])
{
    snprintf(words[0], AR_ARG_MAX, "min_bytes=%" PRIu64, opts->min_bytes);
    snprintf(words[1], AR_ARG_MAX, "max_bytes=%" PRIu64, opts->max_bytes);
    snprintf(words[2], AR_ARG_MAX, "factor=%u", opts->factor);
    snprintf(words[3], AR_ARG_MAX, "dtype=%s", ar_dtype_name(opts->dtype));
    snprintf(words[4], AR_ARG_MAX, "op=%s", ar_op_name(opts->op));
    snprintf(words[5], AR_ARG_MAX, "iters=%u", opts->iters);
    snprintf(words[6], AR_ARG_MAX, "warmup=%u", opts->warmup);
    snprintf(words[7], AR_ARG_MAX, "inject_corrupt=%d", opts->inject_corrupt ? 1 : 0);
}

int ar_opts_from_args(int argc, char *const *argv, ar_opts_t *out, char *err, size_t errlen)
{
    static const char *const keys[] = {"min_bytes", "max_bytes", "factor", "dtype",
                                       "op",        "iters",     "warmup", "inject_corrupt"};
    const char *vals[8] = {"8", NULL, "2", "float", "sum", "20", "5", "0"};
    for (int i = 0; i < argc; i++) {
        const char *eq = argv[i] ? strchr(argv[i], '=') : NULL;
        for (size_t k = 0; eq && k < 8; k++)
            if (strlen(keys[k]) == (size_t)(eq - argv[i]) &&
                !strncmp(argv[i], keys[k], (size_t)(eq - argv[i])))
                vals[k] = eq + 1;
    }
    memset(out, 0, sizeof *out);
    out->launcher = AR_LAUNCH_MPIRUN;
    s_texts_t t = {vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6]};
    if (!vals[1]) {
        snprintf(err, errlen, "max_bytes= is missing");
        return -EINVAL;
    }
    if (s_opts_from_texts(&t, out, err, errlen))
        return -EINVAL;
    if (fb_parse_bool(vals[7], &out->inject_corrupt))
        return s_bad(err, errlen, "inject_corrupt", vals[7], "a boolean");
    if (out->min_bytes > out->max_bytes) {
        snprintf(err, errlen, "min_bytes is larger than max_bytes");
        return -EINVAL;
    }
    return 0;
}

/* ---- judging ----------------------------------------------------------------------------------
 */

static const char *s_rank_name(const char *const *rank_names, unsigned r)
{
    return rank_names && rank_names[r] && *rank_names[r] ? rank_names[r] : "?";
}

/* "node-3/gpu1" is a GPU; a bare node name is the node. */
static const char *s_kind(const char *name)
{
    return strstr(name, "/gpu") ? "gpu" : "node";
}

/* nccl-tests prints sizes in bytes; people read 1 MiB faster than 1048576. */
static void s_log_table(worker_ctx_t *ctx, const ar_size_result_t *sizes, size_t n, unsigned nranks,
                        const char *dtype, const char *op)
{
    worker_log(ctx, "allreduce: %u ranks, %s %s; time is the average of the checked iterations",
               nranks, dtype, op);
    worker_log(ctx, "%12s %12s %10s %10s %10s %9s %9s %8s", "size", "count", "time(us)", "min(us)",
               "max(us)", "algbw", "busbw", "#wrong");
    for (size_t i = 0; i < n; i++) {
        const ar_size_result_t *s = &sizes[i];
        char b[32];
        worker_log(ctx, "%12s %12" PRIu64 " %10.2f %10.2f %10.2f %9.2f %9.2f %8" PRIu64,
                   fb_format_bytes(s->bytes, b, sizeof b), s->count, s->avg_us, s->min_us,
                   s->max_us, s->algbw_gbs, s->busbw_gbs, s->errors);
    }
}

static void s_metrics(fb_result_t *res, const ar_size_result_t *sizes, size_t n, unsigned nranks)
{
    double peak = 0;
    uint64_t errors = 0;
    for (size_t i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof name, "allreduce.%" PRIu64 ".busbw_gbs", sizes[i].bytes);
        fb_result_set_metric(res, name, sizes[i].busbw_gbs, "GB/s");
        snprintf(name, sizeof name, "allreduce.%" PRIu64 ".algbw_gbs", sizes[i].bytes);
        fb_result_set_metric(res, name, sizes[i].algbw_gbs, "GB/s");
        snprintf(name, sizeof name, "allreduce.%" PRIu64 ".avg_us", sizes[i].bytes);
        fb_result_set_metric(res, name, sizes[i].avg_us, "us");
        peak = sizes[i].busbw_gbs > peak ? sizes[i].busbw_gbs : peak;
        errors += sizes[i].errors;
    }
    if (n) {
        fb_result_set_metric(res, "allreduce.busbw_gbs", sizes[n - 1].busbw_gbs, "GB/s");
        fb_result_set_metric(res, "allreduce.algbw_gbs", sizes[n - 1].algbw_gbs, "GB/s");
        fb_result_set_metric(res, "allreduce.peak_busbw_gbs", peak, "GB/s");
        fb_result_set_metric(res, "allreduce.lat_us", sizes[0].avg_us, "us");
        fb_result_set_metric(res, "allreduce.max_bytes", (double)sizes[n - 1].bytes, "B");
    }
    fb_result_set_metric(res, "allreduce.ranks", nranks, "");
    fb_result_set_metric(res, "allreduce.errors", (double)errors, "");
}

/* Findings from the per-rank details: one per rank that saw wrong elements, with its sizes and
 * its first wrong element. Returns the number of ranks that saw any. */
static unsigned s_detail_findings(fb_result_t *res, unsigned nranks, const char *const *rank_names,
                                  const ar_rank_error_t *errors, size_t n_errors)
{
    unsigned bad_ranks = 0;
    for (unsigned r = 0; r < nranks; r++) {
        const ar_rank_error_t *first = NULL;
        uint64_t total = 0;
        unsigned n_sizes = 0;
        for (size_t i = 0; i < n_errors; i++) {
            if (errors[i].rank != r)
                continue;
            first = first ? first : &errors[i];
            total += errors[i].errors;
            n_sizes++;
        }
        if (!first)
            continue;
        if (bad_ranks++ >= AR_MAX_FINDINGS)
            continue;
        const char *name = s_rank_name(rank_names, r);
        char b[32];
        fb_result_add_findingf(res, name, s_kind(name),
                               "allreduce rank %u (%s): %" PRIu64 " wrong element(s) in %u "
                               "size(s); first at %s element %" PRIu64 " iteration %u: "
                               "expected %.17g, got %.17g",
                               r, name, total, n_sizes, fb_format_bytes(first->bytes, b, sizeof b),
                               first->index, first->iter, first->expected, first->got);
    }
    return bad_ranks;
}

/* Findings from the per-size lines only: the lowest rank that saw wrong data at each size. */
static void s_size_findings(fb_result_t *res, const ar_size_result_t *sizes, size_t n,
                            unsigned nranks, const char *const *rank_names)
{
    unsigned added = 0;
    for (size_t i = 0; i < n && added < AR_MAX_FINDINGS; i++) {
        const ar_size_result_t *s = &sizes[i];
        if (!s->errors)
            continue;
        int r = s->first_bad_rank;
        const char *name =
            r >= 0 && (unsigned)r < nranks ? s_rank_name(rank_names, (unsigned)r) : "?";
        char b[32];
        fb_result_add_findingf(res, name, s_kind(name),
                               "allreduce at %s: %" PRIu64 " wrong element(s) over %u "
                               "iterations; rank %d (%s) is the lowest rank that saw one",
                               fb_format_bytes(s->bytes, b, sizeof b), s->errors, s->iters, r,
                               name);
        added++;
    }
}

/* The node part of a rank name ("node-3/gpu1" -> "node-3") in buf. */
static const char *s_node_of(const char *name, char *buf, size_t len)
{
    size_t n = strcspn(name, "/");
    snprintf(buf, len, "%.*s", (int)n, name);
    return buf;
}

/* True when every rank runs on the same node (then a slow all-reduce is that node's). */
static bool s_one_node(unsigned nranks, const char *const *rank_names, char *node, size_t len)
{
    char other[256];
    s_node_of(s_rank_name(rank_names, 0), node, len);
    for (unsigned r = 1; r < nranks; r++)
        if (strcmp(s_node_of(s_rank_name(rank_names, r), other, sizeof other), node))
            return false;
    return strcmp(node, "?") != 0;
}

fb_verdict_t ar_report_detail(worker_ctx_t *ctx, const ar_size_result_t *sizes, size_t n,
                              unsigned nranks, const char *const *rank_names,
                              const ar_rank_error_t *errors, size_t n_errors)
{
    fb_result_t *res = worker_result(ctx);
    const char *dtype = worker_param(ctx, "dtype"), *op = worker_param(ctx, "op");
    /* Bandwidths always from the average time here, whatever the caller filled in. */
    ar_size_result_t *own = xcalloc(n ? n : 1, sizeof *own);
    for (size_t i = 0; i < n; i++) {
        own[i] = sizes[i];
        own[i].algbw_gbs = ar_algbw_gbs(own[i].bytes, own[i].avg_us * 1e-6);
        own[i].busbw_gbs = ar_busbw_gbs(own[i].bytes, own[i].avg_us * 1e-6, nranks);
    }
    sizes = own;
    s_log_table(ctx, sizes, n, nranks, dtype ? dtype : "float", op ? op : "sum");
    s_metrics(res, sizes, n, nranks);
    uint64_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += sizes[i].errors;
    fb_verdict_t verdict = n ? FB_VERDICT_PASS : FB_VERDICT_ERROR;
    if (n == 0)
        fb_result_set_error(res, "allreduce: no size of the sweep completed");
    if (wrong) {
        if (n_errors)
            s_detail_findings(res, nranks, rank_names, errors, n_errors);
        else
            s_size_findings(res, sizes, n, nranks, rank_names);
        fb_result_set_error(res, "allreduce: %" PRIu64 " wrong element(s) in the results", wrong);
        worker_log(ctx, "allreduce: %" PRIu64 " wrong element(s); see the findings", wrong);
        verdict = FB_VERDICT_FAIL;
    }
    const char *bw = worker_param(ctx, "min_busbw_gbs");
    double min_bw = 0;
    if (n && bw && !fb_parse_double(bw, &min_bw) && sizes[n - 1].busbw_gbs < min_bw) {
        char b[32], node[256];
        fb_format_bytes(sizes[n - 1].bytes, b, sizeof b);
        /* A slow group cannot be pinned on a node from one run (pair rounds do that); a slow
         * run inside one node is that node's. */
        if (s_one_node(nranks, rank_names, node, sizeof node))
            fb_result_add_findingf(res, node, "node",
                                   "allreduce busbw %.2f GB/s at %s over %u ranks is below "
                                   "min_busbw_gbs %.2f",
                                   sizes[n - 1].busbw_gbs, b, nranks, min_bw);
        if (verdict == FB_VERDICT_PASS)
            fb_result_set_error(res, "allreduce: busbw %.2f GB/s at %s is below min_busbw_gbs %.2f",
                                sizes[n - 1].busbw_gbs, b, min_bw);
        worker_log(ctx, "allreduce: busbw %.2f GB/s at %s is below min_busbw_gbs %.2f",
                   sizes[n - 1].busbw_gbs, b, min_bw);
        verdict = verdict == FB_VERDICT_PASS ? FB_VERDICT_FAIL : verdict;
    }
    free(own);
    return verdict;
}

fb_verdict_t ar_report(worker_ctx_t *ctx, const ar_size_result_t *sizes, size_t n, unsigned nranks,
                       const char *const *rank_names)
{
    return ar_report_detail(ctx, sizes, n, nranks, rank_names, NULL, 0);
}
