/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine: the chance behind fleet significance (docs/diagnosis.md "Naming"). A
 * healthy part's record after its first failure is a run of tests that fail at the fleet's
 * false-fail rate f; the rule asks after every round whether the record is too extreme for
 * chance, and every round it asks is another chance for a healthy record to look extreme. The
 * chance that counts is therefore that of a healthy record crossing the part's own tail
 * probability at any round of the session, not at the one round it is asked in. Pure logic. */
#include "diagnosis_internal.h"

#include "common/util.h"

#include <math.h>
#include <stdlib.h>

/* P(X >= k) for X ~ Binomial(n, p): the first term from log-gamma, the rest by the ratio of
 * successive terms, until they no longer change the sum (past the mode they only shrink). */
double diag__binom_tail(unsigned n, unsigned k, double p)
{
    if (k == 0)
        return 1.0;
    if (k > n || p <= 0.0)
        return 0.0;
    if (p >= 1.0)
        return 1.0;
    double term = exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + k * log(p) +
                      (n - k) * log1p(-p));
    double sum = 0.0, odds = p / (1.0 - p);
    for (unsigned j = k; j <= n; j++) {
        sum += term;
        if (term < sum * 1e-17 && (double)j > (double)n * p)
            break;
        term *= (double)(n - j) / (double)(j + 1) * odds;
    }
    return sum > 1.0 ? 1.0 : sum;
}

/* The fewest failures in n tests whose tail probability is at most p, from `from` up (the
 * boundary only rises with n); n + 1 when none is. */
static unsigned s_boundary(unsigned n, unsigned from, double p, double f)
{
    unsigned k = from ? from : 1;
    while (k <= n && diag__binom_tail(n, k, f) > p)
        k++;
    return k;
}

/* Looks beyond this many tests add nothing a session can reach (24 rounds of 8 rails is 192). */
#define S_MAX_TESTS 4096u

double diag__looks_chance(double p, double f, unsigned per_look, unsigned looks)
{
    if (p >= 1.0 || per_look == 0 || looks == 0 || f <= 0.0)
        return p < 1.0 ? p : 1.0;
    if (f >= 1.0)
        return 1.0;
    if ((unsigned long)per_look * looks > S_MAX_TESTS)
        looks = S_MAX_TESTS / per_look ? S_MAX_TESTS / per_look : 1;
    size_t top = (size_t)per_look * looks + 1;
    double *pmf = xcalloc(per_look + 1, sizeof *pmf);
    for (unsigned j = 0; j <= per_look; j++)
        pmf[j] = diag__binom_tail(per_look, j, f) - diag__binom_tail(per_look, j + 1, f);
    /* mass[k]: healthy records with k failures that have not crossed yet */
    double *mass = xcalloc(top, sizeof *mass), *next = xcalloc(top, sizeof *next);
    mass[0] = 1.0;
    double crossed = 0.0;
    unsigned bound = 0, reach = 0; /* failures below the boundary; the most a record has */
    for (unsigned look = 1; look <= looks; look++) {
        unsigned n = look * per_look;
        unsigned top_k = reach + per_look;
        for (unsigned k = 0; k <= top_k; k++)
            next[k] = 0.0;
        for (unsigned k = 0; k <= reach; k++)
            for (unsigned j = 0; j <= per_look && mass[k] > 0.0; j++)
                next[k + j] += mass[k] * pmf[j];
        bound = s_boundary(n, bound, p, f);
        reach = top_k < bound ? top_k : bound - 1;
        for (unsigned k = bound; k <= top_k; k++)
            crossed += next[k];
        double *swap = mass;
        mass = next;
        next = swap;
    }
    free(pmf);
    free(mass);
    free(next);
    return crossed > p ? (crossed < 1.0 ? crossed : 1.0) : p;
}
