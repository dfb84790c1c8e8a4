/* SPDX-License-Identifier: Apache-2.0 */
/* Hostlist notation as Slurm and ClusterShell write it: "node[01-16,20],gpu-a[1-4],login".
 *
 * Grammar accepted by fb_hostlist_expand():
 *   list    := item { (',' | whitespace) item }       -- an empty item ("a,,b", "a,") is an error
 *   item    := { literal | '[' ranges ']' }+          -- several bracket groups: cartesian product
 *   literal := one or more of [A-Za-z0-9._-]
 *   ranges  := range { ',' range }                    -- whitespace around a range is ignored
 *   range   := NUM | NUM '-' NUM [ '/' STEP ]         -- NUM at most 18 digits, STEP >= 1
 * Zero padding: a bound written with a leading zero ("01", "098") fixes the width of every number
 * of its range, and then both bounds must have the same number of digits ("n[01-100]" and
 * "n[8-010]" are errors, as in ClusterShell; write "n[01-99],n100"). "n[8-10]" is unpadded.
 * In a product the first bracket group varies slowest: "r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2.
 * Names come out in the order written, each name once (its first occurrence). */
#ifndef FB_HOSTLIST_H
#define FB_HOSTLIST_H

#include <stddef.h>

/* The largest number of names one expression may expand to (counted before duplicates are
 * removed); a larger expansion is rejected without allocating it. */
#define FB_HOSTLIST_MAX_NAMES 1000000u

/* Expands expr into a new array of *n_out heap strings (*names_out; free with fb_hostlist_free).
 * Returns 0, or -EINVAL with *names_out = NULL, *n_out = 0 and a one-line message in err that
 * names the bad part (err may be NULL when errlen is 0). */
int fb_hostlist_expand(const char *expr, char ***names_out, size_t *n_out, char *err, size_t errlen);

/* Checks expr exactly as fb_hostlist_expand does, in time linear in its length, without making the
 * names: 0 with the number of names it expands to, counted before duplicates are removed (so at
 * least the number fb_hostlist_expand returns), in *n_out (may be NULL), or -EINVAL with the same
 * message as fb_hostlist_expand. For validating text that may name many nodes. */
int fb_hostlist_check(const char *expr, size_t *n_out, char *err, size_t errlen);
/* Frees an array from fb_hostlist_expand. NULL-safe. */
void fb_hostlist_free(char **names, size_t n);

/* Folds names into hostlist notation, e.g. "node[01-03,05],gpu-a[1-2],login" (caller frees; ""
 * for none). Names are grouped by the text before and after their last run of digits and by
 * zero-padding width; groups appear in the order of their first name, numbers inside a group in
 * numeric order; names without digits (or with more than 18 in their last run) are kept as they
 * are; duplicates and empty names are dropped. fb_hostlist_expand() of the result gives the same
 * set of names as long as the names themselves are valid hostnames. */
char *fb_hostlist_compress(const char *const *names, size_t n);

#endif
