/* SPDX-License-Identifier: Apache-2.0 */
/* The one bounded file loader: every file fleetburn reads whole at its edges (campaign files,
 * topology files, fault files, the agent's configuration, sysfs attributes, worker results)
 * goes through fb_load_file. It reads regular files only, up to a size limit, and never blocks
 * on what is not a file: a FIFO, a device, a socket or a directory is refused with a message
 * that says which it is, before a byte is read. Named pipes are opened non-blocking, so naming
 * one cannot hang the caller. */
#ifndef FB_FILELOAD_H
#define FB_FILELOAD_H

#include <stddef.h>
#include <sys/stat.h>

/* Reads the regular file at path, at most max bytes. On success returns 0 with a heap copy of
 * the content in *text (caller frees), NUL-terminated (the content itself may hold NUL bytes:
 * *len counts them, the terminator not), and *len set when len is not NULL. On failure returns a
 * negative errno with *text = NULL and, when error is not NULL, a one-line heap message in *error
 * (caller frees; NULL on success) naming the path, to which callers add what they expected:
 *   "PATH: cannot read: No such file or directory"   -ENOENT (or the errno of open/read)
 *   "PATH: not a regular file (a FIFO)"              -EINVAL (FIFO, character or block device,
 *                                                    socket, directory)
 *   "PATH: larger than 16777216 bytes"               -EFBIG */
int fb_load_file(const char *path, size_t max, char **text, size_t *len, char **error);

/* fb_load_file that also returns the status of the file it read (fstat of the same open file,
 * so owner and mode are those of the content returned) in *st. */
int fb_load_file_stat(const char *path, size_t max, char **text, size_t *len, struct stat *st,
                      char **error);

/* What kind of file st_mode describes, for messages: "a regular file", "a FIFO", "a directory",
 * "a character device", "a block device", "a socket", "a symbolic link", "an unknown kind". */
const char *fb_file_kind(unsigned mode);

#endif
