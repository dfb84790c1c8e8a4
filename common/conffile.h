/* SPDX-License-Identifier: Apache-2.0 */
/* Local configuration files of "key = value" lines: the agent's site configuration
 * (/etc/fleetburn/agent.conf, docs/security.md "Site settings"). Settings that decide which
 * programs run on a node live here, in a file only root (or the user running the agent) can
 * change, and never come from the network.
 *
 * Format, one setting per line:
 *     # the site's Open MPI
 *     mpirun = /opt/openmpi/bin/mpirun
 *     mpirun_args = --mca btl tcp,self   # a '#' after a blank starts a comment
 * Blank lines and lines starting with '#' are ignored; blanks around key and value are
 * dropped; a value is the rest of the line (no quoting), at most FB_CONF_MAX_VALUE bytes,
 * without control characters. Every error names FILE:LINE and the key: a line without '=', an
 * unknown key, a key given twice, an empty value.
 *
 * fb_conf_load reads through fb_load_file (at most FB_CONF_MAX_BYTES, regular files only) and
 * refuses a file that another user could have written: it must be owned by root or by the user
 * running the program, and not writable by group or others. */
#ifndef FB_CONFFILE_H
#define FB_CONFFILE_H

#include <stdbool.h>
#include <stddef.h>

#define FB_AGENT_CONFIG_DEFAULT "/etc/fleetburn/agent.conf"
#define FB_CONF_MAX_BYTES (64u << 10)
#define FB_CONF_MAX_VALUE 4096

typedef struct fb_conf fb_conf_t;

/* Parses text[0..len) (need not be NUL-terminated); keys is the NULL-terminated list of keys
 * accepted. source names the file in messages. 0 with *out, or -EINVAL with *out = NULL and a
 * one-line heap message in *error_out (when not NULL), e.g.
 *   agent.conf:3: mpirum: unknown key; expected one of coordinator, name, ... */
int fb_conf_parse(const char *text, size_t len, const char *source, const char *const *keys,
                  fb_conf_t **out, char **error_out);

/* Reads path (fb_load_file_stat), checks who may have written it (see above), then parses it.
 * Besides fb_conf_parse's results: a negative errno from reading (-ENOENT for a missing file),
 * -EFBIG past FB_CONF_MAX_BYTES, -EPERM for a file owned by another user or writable by group or
 * others, each with a message naming the path and why. */
int fb_conf_load(const char *path, const char *const *keys, fb_conf_t **out, char **error_out);

/* NULL-safe; nulls the pointer. */
void fb_conf_destroy(fb_conf_t **self_p);

/* The value of key, or NULL when the file does not set it (borrowed). */
const char *fb_conf_get(const fb_conf_t *self, const char *key);
/* A boolean setting: yes/no, true/false, on/off, 1/0. Absent: *out = dflt and 0. Otherwise 0,
 * or -EINVAL with "FILE:LINE: KEY: 'VALUE' is not yes or no; expected yes or no" in *error_out. */
int fb_conf_get_bool(const fb_conf_t *self, const char *key, bool dflt, bool *out,
                     char **error_out);
/* A message about key's value in the file's format, "FILE:LINE: KEY: " + fmt (heap). */
char *fb_conf_error(const fb_conf_t *self, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
