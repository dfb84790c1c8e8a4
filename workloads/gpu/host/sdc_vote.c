/* SPDX-License-Identifier: Apache-2.0 */
/* sdc_vote.h: the majority digest by sorting, then each unit's samples against it. */
#include "sdc_vote.h"

#include "common/util.h"

#include <stdlib.h>
#include <string.h>

static int s_by_digest(const void *a, const void *b)
{
    uint64_t x = ((const sdc_sample_t *)a)->digest, y = ((const sdc_sample_t *)b)->digest;
    return x < y ? -1 : x > y;
}

static int s_by_unit(const void *a, const void *b)
{
    uint32_t x = ((const sdc_sample_t *)a)->unit, y = ((const sdc_sample_t *)b)->unit;
    return x < y ? -1 : x > y;
}

/* The most common digest of the sorted samples and its count. */
static uint64_t s_mode(const sdc_sample_t *sorted, size_t n, size_t *count)
{
    uint64_t best = sorted[0].digest;
    size_t best_n = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && sorted[j].digest == sorted[i].digest)
            j++;
        if (j - i > best_n) {
            best_n = j - i;
            best = sorted[i].digest;
        }
        i = j;
    }
    *count = best_n;
    return best;
}

void sdc_vote(const sdc_sample_t *s, size_t n, sdc_vote_t *v)
{
    memset(v, 0, sizeof *v);
    v->samples = n;
    if (n == 0)
        return;
    sdc_sample_t *copy = xmalloc(n * sizeof *copy);
    memcpy(copy, s, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, s_by_digest);
    v->digest = s_mode(copy, n, &v->agree);
    v->majority = 2 * v->agree > n;
    qsort(copy, n, sizeof *copy, s_by_unit);
    for (size_t i = 0; i < n;) {
        size_t j = i, off = 0;
        for (; j < n && copy[j].unit == copy[i].unit; j++)
            off += copy[j].digest != v->digest;
        v->units++;
        if (v->majority && off) {
            v->odd = xrealloc(v->odd, (v->n_odd + 1) * sizeof *v->odd);
            v->odd[v->n_odd++] = (sdc_odd_t){copy[i].unit, (uint32_t)off, (uint32_t)(j - i)};
        }
        i = j;
    }
    free(copy);
}

void sdc_vote_clear(sdc_vote_t *v)
{
    free(v->odd);
    memset(v, 0, sizeof *v);
}
