/* SPDX-License-Identifier: Apache-2.0 */
/* The `regress:` key of a campaign file: per-metric tolerances for `fleetburn compare` and
 * `fleetburn run --baseline` (docs/campaign-file.md "regress", docs/regressions.md).
 *
 *   regress:
 *     netbw.tx_gbps: 10%              # a metric
 *     "gpu*.tflops_median": 3%        # a glob (fnmatch: * ? [...]); quote it when it starts with *
 *     mytool.score: 5% higher         # a metric fleetburn does not know, and which way is better
 *     netbw.rtt_p50_us: off           # never compared
 *
 * A metric takes the first entry whose glob matches its name (without "@node"), in the order
 * written; without one, the default of docs/regressions.md. Pure: the parser is handed a YAML
 * node or a text and never opens a file. */
#ifndef FB_REGRESS_CONFIG_H
#define FB_REGRESS_CONFIG_H

#include "regress.h"
#include "common/yamldoc.h"

#include <stdbool.h>
#include <stddef.h>

/* Longest glob (metric names on the wire are at most 128 characters). */
#define FB_REGRESS_GLOB_MAX 128
/* Largest tolerance a campaign may give, in percent. */
#define FB_REGRESS_PERCENT_MAX 1000.0

typedef struct {
    char *glob;
    bool off;         /* never compared */
    double tolerance; /* fraction (5% = 0.05); unset when off */
    bool has_better;  /* "higher" or "lower" was written */
    fb_better_t better;
    int line; /* where it was written (1-based), 0 when not from a file */
} fb_regress_entry_t;

typedef struct fb_regress_config {
    fb_regress_entry_t *entries; /* in the order written */
    size_t n;
} fb_regress_config_t;

/* Checks a metric glob: 1-128 characters of letters, digits, . _ - : / and the glob characters
 * * ? [ ] (a bracket expression closed, not empty, not nested; ! or ^ negates it). Returns 0, or
 * -EINVAL with *why (static text) saying what is wrong. */
int fb_regress_glob_check(const char *glob, const char **why);
/* Parses a value: "5%", "2.5% higher", "10% lower", "off". Returns 0 with the entry's fields set
 * (glob and line untouched), or -EINVAL. */
int fb_regress_value_parse(const char *text, fb_regress_entry_t *out);
/* The expected-what text of value errors. */
#define FB_REGRESS_VALUE_EXPECTED                                                                  \
    "expected a tolerance from 0% to 1000% such as 5%, optionally followed by higher or lower "    \
    "(which way is better), or off"

/* Parses the value of a campaign's regress: key (the mapping node), reporting errors through the
 * campaign parser's context as "FILE:LINE: regress.GLOB: what; expected what". path is "regress".
 * Returns 0 with a new config in *out, or -EINVAL. */
int fb_regress_config_parse(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                            fb_regress_config_t **out);
/* The regress: key of a stored campaign's text, read on its own (the rest of the campaign is not
 * checked, so a campaign stored by an older or newer fleetburn still gives its tolerances).
 * Returns 0 with *out NULL when the text has no regress: key, 0 with a config, or -EINVAL with a
 * heap message in *error_out (when not NULL). */
int fb_regress_config_from_text(const char *text, size_t len, const char *source,
                                fb_regress_config_t **out, char **error_out);
/* The first entry whose glob matches name, or NULL (borrowed). cfg may be NULL. */
const fb_regress_entry_t *fb_regress_config_match(const fb_regress_config_t *cfg, const char *name);
/* "5%", "2.5% higher", "off" into buf. */
const char *fb_regress_entry_text(const fb_regress_entry_t *e, char *buf, size_t len);
/* NULL-safe; nulls the pointer. */
void fb_regress_config_destroy(fb_regress_config_t **self_p);

#endif
