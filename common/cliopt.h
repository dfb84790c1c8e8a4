/* SPDX-License-Identifier: Apache-2.0 */
/* Command lines as tables: an option names where its value goes and, for a number, the range it
 * must be in, so that a program's parser is its table plus code for the few options that need
 * their own (several values, side effects, --help). Built on getopt_long: the caller's optind,
 * optarg and opterr work as with it. Messages about a bad option come back as a heap string. */
#ifndef FB_CLIOPT_H
#define FB_CLIOPT_H

#include <stdint.h>

typedef enum {
    FB_CLIOPT_SET,         /* no value: *(bool *)to = true */
    FB_CLIOPT_UNSET,       /* no value: *(bool *)to = false */
    FB_CLIOPT_TEXT,        /* *(const char **)to = the value (borrowed from argv) */
    FB_CLIOPT_UINT,        /* a whole number within [min, max] into *(unsigned *)to */
    FB_CLIOPT_REAL,        /* a number within [min, max] into *(double *)to */
    FB_CLIOPT_CALLER,      /* takes a value, handled by the caller: fb_cliopt_next returns id */
    FB_CLIOPT_CALLER_FLAG, /* no value, handled by the caller: fb_cliopt_next returns id */
} fb_cliopt_kind_t;

/* One option; a table ends with an entry whose name is NULL. */
typedef struct {
    const char *name; /* the long name, without "--" */
    int id;           /* getopt_long's val: a letter of shortopts for a short form, else > 255 */
    fb_cliopt_kind_t kind;
    void *to;        /* where the value goes (not for the caller's kinds) */
    double min, max; /* the range of a number, inclusive */
} fb_cliopt_t;

/* The most options one table may hold. */
#define FB_CLIOPT_MAX 64

/* Reads options, storing the table's values, until one the caller handles: returns its id (its
 * value, if any, in optarg); 0 when the options are done (optind is the first operand); -EINVAL
 * on a bad option: *error_out is then a heap message naming the option and what was expected
 * (the caller frees it), or NULL where getopt_long has reported it (an unknown option or a
 * missing value while opterr is set; with opterr 0 those come back as messages too). */
int fb_cliopt_next(int argc, char **argv, const char *shortopts, const fb_cliopt_t *table,
                   char **error_out);

/* The value text of option --name as a whole number within [min, max]: 0, or -EINVAL with
 * *error_out "--NAME: 'TEXT' is not a number from MIN to MAX" (heap, the caller frees it). */
int fb_cliopt_uint(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out,
                   char **error_out);
/* The same for a (finite, decimal) real number. */
int fb_cliopt_real(const char *name, const char *text, double min, double max, double *out,
                   char **error_out);

#endif
