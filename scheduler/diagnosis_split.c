/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnosis engine: split searches over groups that fail (diagnosis.h fb_split_t). Each level
 * cuts every failing group into k contiguous parts, never below a floor (the smallest group that
 * exercises the fault); parts run concurrently, each `repeat` times; parts that fail are split
 * again, parts at the floor that fail and groups none of whose parts fails alone are findings.
 * Pure logic. */
#include "diagnosis.h"

#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int fb_diag_split(size_t n, size_t k, size_t *starts)
{
    if (n == 0 || k < 2 || !starts)
        return -EINVAL;
    size_t parts = k < n ? k : n;
    size_t base = n / parts, extra = n % parts, at = 0;
    for (size_t i = 0; i < parts; i++) {
        starts[i] = at;
        at += base + (i < extra ? 1 : 0);
    }
    starts[parts] = n;
    return (int)parts;
}

typedef struct {
    char **names; /* borrowed from fb_split's own copies */
    size_t n;
    unsigned runs, fails;
    int group;   /* index of the group it was split from */
    bool failed; /* a finding: it failed in a part of its own (else irreducible) */
} s_part_t;

struct fb_split {
    char **all; /* owned copies of the member names */
    size_t n_all;
    size_t k, floor;
    unsigned repeat, levels;
    s_part_t *parts;
    size_t n_parts;
    s_part_t *groups; /* the failing groups being split at this level */
    size_t n_groups;
    s_part_t *found;
    size_t n_found, cap_found;
};

/* Parts of a group of n: k, or fewer so that none is below the floor. */
static size_t s_n_parts(const fb_split_t *s, size_t n)
{
    size_t most = n / s->floor;
    return most < s->k ? most : s->k;
}

static void s_split_level(fb_split_t *s)
{
    free(s->parts);
    s->parts = xcalloc(s->n_groups * s->k + 1, sizeof *s->parts);
    s->n_parts = 0;
    size_t *starts = xmalloc((s->k + 1) * sizeof *starts);
    for (size_t g = 0; g < s->n_groups; g++) {
        int np = fb_diag_split(s->groups[g].n, s_n_parts(s, s->groups[g].n), starts);
        for (int i = 0; i < np; i++) {
            s_part_t *p = &s->parts[s->n_parts++];
            p->names = s->groups[g].names + starts[i];
            p->n = starts[i + 1] - starts[i];
            p->group = (int)g;
        }
    }
    free(starts);
    s->levels++;
}

static void s_split_found(fb_split_t *s, const s_part_t *p)
{
    if (s->n_found == s->cap_found) {
        s->cap_found = s->cap_found ? 2 * s->cap_found : 4;
        s->found = xrealloc(s->found, s->cap_found * sizeof *s->found);
    }
    s->found[s->n_found++] = *p;
}

fb_split_t *fb_split_new(const char *const *members, size_t n, size_t k, unsigned repeat)
{
    return fb_split_new_floor(members, n, k, repeat, 1);
}

fb_split_t *fb_split_new_floor(const char *const *members, size_t n, size_t k, unsigned repeat,
                               size_t floor)
{
    if (!members || n == 0 || k < 2 || repeat == 0 || floor == 0)
        return NULL;
    fb_split_t *s = xcalloc(1, sizeof *s);
    s->all = xmalloc(n * sizeof *s->all);
    for (size_t i = 0; i < n; i++)
        s->all[i] = xstrdup(members[i]);
    s->n_all = n;
    s->k = k;
    s->floor = floor;
    s->repeat = repeat;
    s->groups = xcalloc(1, sizeof *s->groups);
    s->groups[0].names = s->all;
    s->groups[0].n = n;
    s->n_groups = 1;
    if (n < 2 * floor) { /* nothing to split: the group is the finding */
        s->groups[0].failed = true;
        s_split_found(s, &s->groups[0]);
        s->n_groups = 0;
        return s;
    }
    s_split_level(s);
    return s;
}

void fb_split_destroy(fb_split_t **self_p)
{
    assert(self_p);
    fb_split_t *s = *self_p;
    if (!s)
        return;
    for (size_t i = 0; i < s->n_all; i++)
        free(s->all[i]);
    free(s->all);
    free(s->parts);
    free(s->groups);
    free(s->found);
    free(s);
    *self_p = NULL;
}

size_t fb_split_n_parts(const fb_split_t *s)
{
    assert(s);
    return s->n_groups ? s->n_parts : 0;
}

const char *const *fb_split_part(const fb_split_t *s, size_t i, size_t *size)
{
    assert(s);
    if (i >= fb_split_n_parts(s))
        return NULL;
    if (size)
        *size = s->parts[i].n;
    return (const char *const *)s->parts[i].names;
}

int fb_split_record(fb_split_t *s, size_t part, bool failed)
{
    assert(s);
    if (part >= fb_split_n_parts(s) || s->parts[part].runs >= s->repeat)
        return -EINVAL;
    s->parts[part].runs++;
    if (failed)
        s->parts[part].fails++;
    return 0;
}

int fb_split_next(fb_split_t *s)
{
    assert(s);
    if (s->n_groups == 0)
        return 0;
    for (size_t i = 0; i < s->n_parts; i++)
        if (s->parts[i].runs < s->repeat)
            return -EAGAIN;
    s_part_t *next = xcalloc(s->n_parts + 1, sizeof *next);
    size_t n_next = 0;
    for (size_t g = 0; g < s->n_groups; g++) {
        bool any = false;
        for (size_t i = 0; i < s->n_parts; i++) {
            s_part_t *p = &s->parts[i];
            if (p->group != (int)g || p->fails == 0)
                continue;
            any = true;
            s_part_t np = {p->names, p->n, 0, 0, 0, true};
            if (p->n < 2 * s->floor) /* at the floor: tested with trusted partners from here */
                s_split_found(s, &np);
            else
                next[n_next++] = np;
        }
        if (!any) { /* no part fails alone: the fault needs this scale, or it hid */
            s_part_t irreducible = s->groups[g];
            irreducible.failed = false;
            s_split_found(s, &irreducible);
        }
    }
    free(s->groups);
    s->groups = next;
    s->n_groups = n_next;
    if (n_next == 0)
        return 0;
    s_split_level(s);
    return 1;
}

unsigned fb_split_levels(const fb_split_t *s)
{
    assert(s);
    return s->levels;
}

size_t fb_split_n_findings(const fb_split_t *s)
{
    assert(s);
    return s->n_found;
}

const char *const *fb_split_finding(const fb_split_t *s, size_t i, size_t *size)
{
    assert(s);
    if (i >= s->n_found)
        return NULL;
    if (size)
        *size = s->found[i].n;
    return (const char *const *)s->found[i].names;
}

bool fb_split_finding_failed(const fb_split_t *s, size_t i)
{
    assert(s);
    return i < s->n_found && s->found[i].failed;
}
