/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign parser's insides, shared by campaign.c (the helpers every key uses, the top-level
 * keys, the entry points, the files stages name) and campaign_stage.c (one stage: its keys and
 * the checks that need the whole stage). Nothing outside scheduler/campaign*.c includes this;
 * campaign.h is the parser's public header. Functions shared between the two files are named
 * campaign__name; helpers of one file stay static s_name. */
#ifndef FB_CAMPAIGN_INTERNAL_H
#define FB_CAMPAIGN_INTERNAL_H

#include "campaign.h"
#include "common/strmap.h"
#include "common/yamldoc.h"

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

/* campaign.c */

/* Checks one item of a list value (campaign__scalar_or_list): 0, or the error recorded in ctx. */
typedef int (*campaign__item_check_fn)(fb_yaml_t *ctx, const yaml_node_t *item, const char *text,
                                       const char *path, const void *arg);

/* Text of a scalar, or of a list of scalars joined with ','. Heap string in *out. list_ok: whether
 * a list is acceptable at all. Each item is checked with item_check when given. */
int campaign__scalar_or_list(fb_yaml_t *ctx, const yaml_node_t *node, const char *path,
                             const char *expected, bool list_ok, campaign__item_check_fn check,
                             const void *arg, char **out);

/* A node selection (nodes:, rails:): all, a Slurm selection or hostlist notation, as a scalar or
 * a list; checked, not expanded. Heap string in *out. */
int campaign__hostlist(fb_yaml_t *ctx, const yaml_node_t *node, const char *path, char **out);

/* Sets *error_out to "SOURCE:LINE: stages[i].KEY: ..." (line: where KEY was written) and
 * returns -EINVAL: errors about the files a stage names, found when they are attached. */
int campaign__file_fail(const fb_campaign_t *c, size_t i, const char *key, int line,
                        char **error_out, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The content of the file that stages[i] names under key (path, written at line), as a heap
 * string in *text_out; or campaign__file_fail's error when it was not attached or holds a NUL
 * byte. expected: the "expected ..." text for the file's content, for that message. */
int campaign__attached_text(const fb_campaign_t *c, size_t i, const char *key, const char *path,
                            int line, const fb_campaign_file_t *files, size_t n,
                            const char *expected, char **error_out, char **text_out);

/* campaign_stage.c */

/* Parses stages[index] into st (defaults filled in). names maps the names of the stages before
 * it to their index + 1 (this one's is added); c->stages[0 .. index - 1] are parsed. */
int campaign__stage(fb_yaml_t *ctx, const yaml_node_t *node, size_t index, fb_strmap_t *names,
                    fb_campaign_t *c, fb_stage_t *st);

/* Frees what a stage holds and zeroes it. */
void campaign__stage_fini(fb_stage_t *st);

#endif
