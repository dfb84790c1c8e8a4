/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven command lines on getopt_long (cliopt.h). */
#include "cliopt.h"
#include "units.h"
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

int fb_cliopt_uint(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out,
                   char **error_out)
{
    uint64_t v;
    if (fb_parse_uint(text, max, &v) || v < min) {
        *error_out = xasprintf("--%s: '%s' is not a number from %llu to %llu", name, text,
                               (unsigned long long)min, (unsigned long long)max);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int fb_cliopt_real(const char *name, const char *text, double min, double max, double *out,
                   char **error_out)
{
    double v;
    if (fb_parse_double(text, &v) || !(v >= min && v <= max)) {
        *error_out = xasprintf("--%s: '%s' is not a number from %g to %g", name, text, min, max);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static bool s_takes_value(fb_cliopt_kind_t kind)
{
    return kind != FB_CLIOPT_SET && kind != FB_CLIOPT_UNSET && kind != FB_CLIOPT_CALLER_FLAG;
}

static const fb_cliopt_t *s_find(const fb_cliopt_t *table, int id)
{
    for (; table->name; table++)
        if (table->id == id)
            return table;
    return NULL;
}

/* Stores the value of one of the table's own kinds. */
static int s_store(const fb_cliopt_t *o, const char *text, char **error_out)
{
    switch (o->kind) {
    case FB_CLIOPT_SET:
    case FB_CLIOPT_UNSET:
        *(bool *)o->to = o->kind == FB_CLIOPT_SET;
        return 0;
    case FB_CLIOPT_TEXT:
        *(const char **)o->to = text;
        return 0;
    case FB_CLIOPT_UINT: {
        uint64_t v;
        int rc = fb_cliopt_uint(o->name, text, (uint64_t)o->min, (uint64_t)o->max, &v, error_out);
        if (!rc)
            *(unsigned *)o->to = (unsigned)v;
        return rc;
    }
    case FB_CLIOPT_REAL:
        return fb_cliopt_real(o->name, text, o->min, o->max, (double *)o->to, error_out);
    default:
        return -EINVAL;
    }
}

/* getopt_long's '?' (an unknown option) or ':' (a missing value, with shortopts starting with
 * ':') as a message naming the option as it was written. */
static char *s_getopt_error(int c, char **argv)
{
    if (c == ':')
        return xasprintf("%s needs a value", argv[optind - 1]);
    if (optopt)
        return xasprintf("unknown option '-%c'", optopt);
    return xasprintf("unknown option '%s'", argv[optind - 1]);
}

int fb_cliopt_next(int argc, char **argv, const char *shortopts, const fb_cliopt_t *table,
                   char **error_out)
{
    *error_out = NULL;
    struct option longopts[FB_CLIOPT_MAX + 1] = {{0}};
    for (size_t i = 0; table[i].name; i++) {
        assert(i < FB_CLIOPT_MAX);
        longopts[i] = (struct option){
            table[i].name, s_takes_value(table[i].kind) ? required_argument : no_argument, NULL,
            table[i].id};
    }
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        const fb_cliopt_t *o = s_find(table, c);
        if (!o) { /* '?' or ':': getopt_long has said what, unless opterr is 0 */
            if (!opterr)
                *error_out = s_getopt_error(c, argv);
            return -EINVAL;
        }
        if (o->kind == FB_CLIOPT_CALLER || o->kind == FB_CLIOPT_CALLER_FLAG)
            return c;
        if (s_store(o, optarg, error_out))
            return -EINVAL;
    }
    return 0;
}
