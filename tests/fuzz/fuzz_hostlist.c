/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_hostlist_expand (campaign files, command lines) and fb_hostlist_compress (node names from
 * agents, written into reports). The input is expanded; whatever expands, and the input's lines
 * when every one is a valid node name, must survive compress -> expand as the same set of names
 * (hostlist.h promises it). */
#include "fuzz.h"

#include "common/hostlist.h"
#include "common/wire.h"

#include <errno.h>
#include <stdbool.h>

/* Round trips above this many names cost more time than they find. */
#define S_ROUND_TRIP_MAX 65536

FZ_INITIALIZE()

static int s_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts names and drops repeats; returns the new count. */
static size_t s_sorted_set(char **names, size_t n)
{
    if (n == 0)
        return 0;
    qsort(names, n, sizeof *names, s_cmp);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (strcmp(names[i], names[k - 1]) != 0)
            names[k++] = names[i];
    return k;
}

/* compress(names) expands to the same set as names. */
static void s_round_trip(const char *const *names, size_t n)
{
    char *text = fb_hostlist_compress(names, n);
    FZ_CHECK(text != NULL);
    char **back = NULL;
    size_t n_back = 0;
    char err[256];
    if (n == 0) {
        FZ_CHECK(text[0] == '\0');
        free(text);
        return;
    }
    int rc = fb_hostlist_expand(text, &back, &n_back, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "compressed '%s' does not expand: %s\n", text, err);
    FZ_CHECK(rc == 0);
    char **want = xmalloc(n * sizeof *want);
    memcpy(want, names, n * sizeof *want);
    size_t n_want = s_sorted_set(want, n);
    char **got = xmalloc(n_back * sizeof *got);
    memcpy(got, back, n_back * sizeof *got);
    size_t n_got = s_sorted_set(got, n_back);
    FZ_CHECK(n_got == n_back); /* expansion gives each name once */
    FZ_CHECK(n_got == n_want);
    for (size_t i = 0; i < n_got; i++)
        FZ_CHECK(strcmp(got[i], want[i]) == 0);
    free(want);
    free(got);
    fb_hostlist_free(back, n_back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    char **names = NULL;
    size_t n = 0;
    char err[256];
    int rc = fb_hostlist_expand(text, &names, &n, err, sizeof err);
    if (rc == 0) {
        FZ_CHECK(n >= 1 && n <= FB_HOSTLIST_MAX_NAMES);
        if (n <= S_ROUND_TRIP_MAX)
            s_round_trip((const char *const *)names, n);
        fb_hostlist_free(names, n);
    } else {
        FZ_CHECK(rc == -EINVAL && names == NULL && n == 0 && err[0] != '\0');
    }

    /* The input's lines as node names, the way agents' names reach fb_hostlist_compress. */
    size_t cap = 16, count = 0;
    const char **lines = xmalloc(cap * sizeof *lines);
    bool valid = true;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (count == cap)
            lines = xrealloc(lines, (cap *= 2) * sizeof *lines);
        lines[count++] = line;
        valid = valid && fb_wire_valid_name(line);
    }
    if (valid && count <= S_ROUND_TRIP_MAX)
        s_round_trip(lines, count);
    else
        free(fb_hostlist_compress(lines, count));
    free(lines);
    free(text);
    return 0;
}
