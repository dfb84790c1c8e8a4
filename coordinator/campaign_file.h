/* SPDX-License-Identifier: Apache-2.0 */
/* A campaign file read from disk together with the files it names, the one way fleetburn's
 * programs read a campaign (`fleetburn run`, fleetburn-simfleet, tests). The campaign file and
 * every topology file it names (relative to the campaign file's directory) are read with
 * fb_load_file: regular files only, bounded, so a FIFO or /dev/zero named as a topology is a
 * clear error and never a hang. The campaign is parsed and its files attached through the same
 * code the coordinator runs on a submission (fb_campaign_attach_files), and the files are kept
 * so that `run --coordinator` sends them with the campaign (Submit.files): the coordinator
 * never opens a path it is sent. */
#ifndef FB_CAMPAIGN_FILE_H
#define FB_CAMPAIGN_FILE_H

#include "scheduler/campaign.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *path;                /* as given */
    char *yaml;                /* the campaign file's text, NUL-terminated */
    size_t len;                /* its length */
    fb_campaign_t *campaign;   /* parsed, with its files attached */
    fb_campaign_file_t *files; /* the files the campaign names (name as written, content) */
    size_t n_files;
} campaign_file_t;

/* Largest topology file read (a submission carries at most FB_WIRE_MAX_YAML of each). */
#define CAMPAIGN_FILE_MAX_ATTACHED (16u << 20)

/* Reads and parses the campaign at path and the files it names. 0 with *out, or a negative
 * errno (-EINVAL for a campaign that does not parse, the errno of reading the campaign file)
 * with *out = NULL and a one-line heap message in *error_out (when not NULL) in the parser's
 * format, e.g. for a topology that cannot be read:
 *   rack.yaml:7: stages[1].topology: cannot load fabric.topo: /racks/fabric.topo: not a regular
 *   file (a FIFO); expected a topology file ... */
int campaign_file_read(const char *path, campaign_file_t **out, char **error_out);
/* NULL-safe; nulls the pointer. */
void campaign_file_destroy(campaign_file_t **self_p);

/* Whether cf fits a submission (common/wire.h: the campaign and each file at most
 * FB_WIRE_MAX_YAML, at most FB_WIRE_MAX_FILES files, all of it within a frame). 0, or -EFBIG
 * with a one-line heap message in *error_out saying which limit. */
int campaign_file_check_submission(const campaign_file_t *cf, char **error_out);
/* The Submit envelope for cf: its text, its path as the source, and the content of every file
 * it names (Submit.files). Encoded into a new buffer (caller frees), length in *len_out. */
uint8_t *campaign_file_encode_submit(const campaign_file_t *cf, size_t *len_out);

#endif
