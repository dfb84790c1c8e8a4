/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's result spool: task results waiting for the coordinator's Ack. The agent stores each
 * finished task's serialized TaskResult here before sending it and removes it when the coordinator
 * acknowledges its result id; after a restart or a reconnect it re-sends whatever is left, oldest
 * first. The bytes are opaque to the spool.
 *
 * On disk (the header layout is described in spool.c): one file per result, named "r." followed
 * by the result id with '/' written as '%' (a one-to-one mapping, since '%' is not allowed in ids;
 * at most 202 bytes, within any file system's name limit), holding a 40-byte header (magic, store
 * sequence number, store time, length, CRC-32s) and the bytes. Writes
 * go to a temporary file that is fsynced and renamed into place, then the directory is fsynced, so
 * an entry is either wholly there or not there after a crash. Leftover temporary files are deleted
 * by spool_open; an entry whose header or CRC is wrong is renamed "bad.*" (kept for inspection,
 * never re-sent) and not listed.
 *
 * One spool_t owns its directory: spool_open takes an exclusive flock on DIR/.lock and fails with
 * -EBUSY while another open spool (in this or another process) holds it. A spool_t is not
 * thread-safe and does blocking file I/O (fsync) in spool_put. Errors are negative errno;
 * strerror(-rc) describes them. */
#ifndef FB_SPOOL_H
#define FB_SPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct spool spool_t;

/* Longest result id the spool accepts, and the most bytes one entry may hold. */
#define SPOOL_ID_MAX 200
#define SPOOL_DATA_MAX (64u << 20)

/* Opens the spool in dir, creating the directory (mode 0700) if needed, and loads the index of
 * stored entries. Returns 0 and *out, or -errno (-EBUSY when already open elsewhere). */
int spool_open(const char *dir, spool_t **out);
/* Opens a spool with the same contract that keeps its entries in memory only: nothing survives
 * the process, and nothing touches a disk or holds a file descriptor. For simulated agents
 * (fleetburn-simfleet runs thousands in one process, with no disk of their own to survive a
 * restart on). Returns 0 and *out. */
int spool_open_memory(spool_t **out);
/* Closes the spool (entries stay on disk; a memory spool's are freed) and sets *self_p to NULL.
 * NULL-safe. */
void spool_destroy(spool_t **self_p);

/* True when result_id is acceptable: 1..SPOOL_ID_MAX characters of [A-Za-z0-9._:@#/-], and as a
 * '/'-separated path every segment is non-empty and neither "." nor ".." ("../x", "/x", "a//b"
 * and "a/" are refused). */
int spool_id_valid(const char *result_id);
/* The CRC-32 (IEEE) an entry's header and payload carry; for tools that write entries. */
uint32_t spool_crc32(const uint8_t *p, size_t n);

/* Durably stores len bytes under result_id (temporary file, fsync, rename, fsync of the directory)
 * and returns 0 once they would survive a power loss. Replaces an existing entry, which then
 * counts as stored now. -EINVAL for an invalid id, -EFBIG above SPOOL_DATA_MAX bytes, or -errno
 * from the file system (the previous entry, if any, is then untouched unless the failure was the
 * final directory fsync, after which the new bytes are in place but perhaps not yet durable). */
int spool_put(spool_t *self, const char *result_id, const uint8_t *data, size_t len);

/* Deletes the entry. 0, -ENOENT when absent, -EINVAL for an invalid id, or -errno. The directory is
 * not fsynced: an Ack lost to a crash only makes the agent re-send a result the coordinator
 * already stored, which it ignores by id. */
int spool_remove(spool_t *self, const char *result_id);

/* All stored ids, oldest stored first. *ids_out is a heap array of heap strings (NULL when
 * *n_out is 0); free it with spool_ids_free. Returns 0. */
int spool_list(spool_t *self, char ***ids_out, size_t *n_out);
void spool_ids_free(char **ids, size_t n);

/* Reads the bytes stored under result_id into *data_out (heap, caller frees; non-NULL even for 0
 * bytes) and *len_out. -ENOENT when absent, -EINVAL for an invalid id, -EBADMSG when the file on
 * disk is damaged (header or CRC), or -errno. */
int spool_get(spool_t *self, const char *result_id, uint8_t **data_out, size_t *len_out);

/* Number of stored entries. */
size_t spool_count(const spool_t *self);

#endif
