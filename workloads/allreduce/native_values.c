/* SPDX-License-Identifier: Apache-2.0 */
/* launcher: native (native.h), its pure half, with no process and no I/O (unit-tested in
 * test_allreduce): the values the members trade in exchanges "gpus" and "results" as text lines,
 * the merge of the ranks' sizes into one, and how much of a GPU's memory the sweep may use. */
#include "allreduce/native.h"
#include "common/units.h"
#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AR_GPU_RESERVE (2ull << 30) /* 2 GiB: runtime context, NCCL's buffers */

uint64_t ar_gpu_fit_bytes(uint64_t mem_bytes)
{
    return mem_bytes > AR_GPU_RESERVE ? (mem_bytes - AR_GPU_RESERVE) / 2 : 0;
}

size_t ar_gpu_sweep(const ar_opts_t *opts, uint64_t max_bytes, uint64_t **sizes_out)
{
    uint64_t *sizes = NULL;
    size_t n = ar_sweep(opts, &sizes), kept = 0;
    for (size_t i = 0; i < n; i++)
        if (sizes[i] <= max_bytes)
            sizes[kept++] = sizes[i];
    if (!kept) {
        free(sizes);
        sizes = NULL;
    }
    *sizes_out = sizes;
    return kept;
}

char *ar_member_format(const ar_member_t *m)
{
    char devs[AR_MAX_LOCAL_GPUS * 6 + 2] = "";
    size_t off = 0;
    for (unsigned i = 0; i < m->n && i < AR_MAX_LOCAL_GPUS; i++)
        off += (size_t)snprintf(devs + off, sizeof devs - off, "%s%d", i ? "," : "", m->devices[i]);
    if (!off)
        snprintf(devs, sizeof devs, "-");
    /* The reason ends the line: keep it on one line. */
    char why[sizeof m->why];
    fb_strlcpy(why, m->why, sizeof why);
    for (char *p = why; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return xasprintf("fbgpus1 %d %u %s %d %" PRIu64 " %s", (int)m->state, m->n, devs,
                     m->nccl_version, m->min_mem_bytes, why);
}

/* Next blank-separated field of *p (advanced past it); NULL at the end. */
static char *s_field(char **p)
{
    char *s = *p;
    while (*s == ' ')
        s++;
    if (!*s)
        return NULL;
    char *e = strchr(s, ' ');
    if (e) {
        *e = '\0';
        *p = e + 1;
    } else {
        *p = s + strlen(s);
    }
    return s;
}

static int s_parse_devices(char *text, ar_member_t *m)
{
    if (!strcmp(text, "-"))
        return m->n == 0 ? 0 : -EINVAL;
    unsigned n = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (n >= AR_MAX_LOCAL_GPUS || fb_parse_uint(tok, 1u << 20, &v))
            return -EINVAL;
        m->devices[n++] = (int)v;
    }
    return n == m->n ? 0 : -EINVAL;
}

int ar_member_parse(const void *data, size_t len, ar_member_t *out)
{
    memset(out, 0, sizeof *out);
    if (!data || len == 0 || len > 4096 || memchr(data, '\0', len))
        return -EINVAL;
    char *text = xstrndup(data, len), *p = text;
    char *magic = s_field(&p), *state = s_field(&p), *n = s_field(&p), *devs = s_field(&p);
    char *nccl = s_field(&p), *mem = s_field(&p);
    uint64_t v_state, v_n, v_mem;
    char *end = NULL;
    long v_nccl = nccl ? strtol(nccl, &end, 10) : 0;
    int rc = -EINVAL;
    if (magic && !strcmp(magic, "fbgpus1") && state && !fb_parse_uint(state, 2, &v_state) && n &&
        !fb_parse_uint(n, AR_MAX_LOCAL_GPUS, &v_n) && devs && nccl && end && !*end && v_nccl >= 0 &&
        v_nccl < INT_MAX && mem && !fb_parse_uint(mem, UINT64_MAX, &v_mem)) {
        out->state = (ar_member_state_t)v_state;
        out->n = (unsigned)v_n;
        out->nccl_version = (int)v_nccl;
        out->min_mem_bytes = v_mem;
        while (*p == ' ')
            p++;
        fb_strlcpy(out->why, p, sizeof out->why);
        rc = s_parse_devices(devs, out);
        if (rc == 0 && (out->state == AR_MEMBER_OK) != (out->n > 0))
            rc = -EINVAL;
    }
    free(text);
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

int ar_size_merge(ar_size_result_t *into, const ar_size_result_t *from)
{
    if (into->bytes != from->bytes || into->count != from->count || into->iters != from->iters)
        return -EINVAL;
    into->avg_us = from->avg_us > into->avg_us ? from->avg_us : into->avg_us;
    into->min_us = from->min_us > into->min_us ? from->min_us : into->min_us;
    into->max_us = from->max_us > into->max_us ? from->max_us : into->max_us;
    into->errors += from->errors;
    if (from->first_bad_rank >= 0 &&
        (into->first_bad_rank < 0 || from->first_bad_rank < into->first_bad_rank))
        into->first_bad_rank = from->first_bad_rank;
    return 0;
}

void ar_size_finish(ar_size_result_t *r, unsigned nranks)
{
    double s = r->avg_us * 1e-6;
    r->algbw_gbs = ar_algbw_gbs(r->bytes, s);
    r->busbw_gbs = ar_busbw_gbs(r->bytes, s, nranks);
}

char *ar_results_format(const char *error, const ar_size_result_t *sizes, size_t n,
                        const ar_rank_error_t *bad, size_t n_bad)
{
    char *text = xasprintf("fbresults1 %zu %zu\n", n, n_bad);
    for (size_t i = 0; i < n; i++) {
        const ar_size_result_t *r = &sizes[i];
        char *next = xasprintf("%s%" PRIu64 " %" PRIu64 " %.17g %.17g %.17g %" PRIu64 " %d %u\n",
                               text, r->bytes, r->count, r->avg_us, r->min_us, r->max_us, r->errors,
                               r->first_bad_rank, r->iters);
        free(text);
        text = next;
    }
    for (size_t i = 0; i < n_bad; i++) {
        char line[512];
        ar_format_error_line(&bad[i], line, sizeof line);
        char *next = xasprintf("%s%s\n", text, line);
        free(text);
        text = next;
    }
    /* The error is last and runs to the end, so it may hold anything but NUL. */
    char *next = xasprintf("%serror %s", text, error ? error : "");
    free(text);
    return next;
}

static int s_parse_size_line(const char *line, ar_size_result_t *r)
{
    memset(r, 0, sizeof *r);
    int used = 0;
    unsigned long long bytes, count, errors;
    if (sscanf(line, "%llu %llu %lf %lf %lf %llu %d %u%n", &bytes, &count, &r->avg_us, &r->min_us,
               &r->max_us, &errors, &r->first_bad_rank, &r->iters, &used) != 8 ||
        line[used] != '\0' || r->first_bad_rank < -1 || !(r->avg_us >= 0))
        return -EINVAL;
    r->bytes = bytes;
    r->count = count;
    r->errors = errors;
    return 0;
}

/* The next line of *p, terminated in place; NULL when none is left. */
static char *s_line(char **p)
{
    char *s = *p, *nl = strchr(s, '\n');
    if (!nl)
        return NULL;
    *nl = '\0';
    *p = nl + 1;
    return s;
}

int ar_results_parse(const void *data, size_t len, char **error_out, ar_size_result_t **sizes_out,
                     size_t *n_out, ar_rank_error_t **bad_out, size_t *n_bad_out)
{
    *error_out = NULL;
    *sizes_out = NULL;
    *n_out = 0;
    *bad_out = NULL;
    *n_bad_out = 0;
    if (!data || len == 0 || memchr(data, '\0', len))
        return -EINVAL;
    char *text = xstrndup(data, len), *p = text, *line = s_line(&p);
    unsigned long long n = 0, n_bad = 0;
    int used = 0;
    if (!line || sscanf(line, "fbresults1 %llu %llu%n", &n, &n_bad, &used) != 2 || line[used] ||
        n > 4096 || n_bad > 65536) {
        free(text);
        return -EINVAL;
    }
    ar_size_result_t *sizes = xcalloc((size_t)n + 1, sizeof *sizes);
    ar_rank_error_t *bad = xcalloc((size_t)n_bad + 1, sizeof *bad);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = (line = s_line(&p)) ? s_parse_size_line(line, &sizes[i]) : -EINVAL;
    for (size_t i = 0; rc == 0 && i < n_bad; i++)
        rc = (line = s_line(&p)) ? ar_parse_error_line(line, &bad[i]) : -EINVAL;
    if (rc == 0 && strncmp(p, "error ", 6))
        rc = -EINVAL;
    if (rc) {
        free(sizes);
        free(bad);
        free(text);
        return rc;
    }
    *error_out = xstrdup(p + 6);
    *sizes_out = sizes;
    *n_out = (size_t)n;
    *bad_out = bad;
    *n_bad_out = (size_t)n_bad;
    free(text);
    return 0;
}
