/* SPDX-License-Identifier: Apache-2.0 */
/* rasdaemon's record of memory errors: /var/lib/rasdaemon/ras-mc_event.db, table mc_event
 * (id, timestamp, err_count, err_type, err_msg, label, mc, top_layer, middle_layer, lower_layer,
 * address, grain, syndrome, driver_detail), one row per EDAC mc_event trace event, with the DIMM
 * label the EDAC driver gave. Timestamps are rasdaemon's "%Y-%m-%d %H:%M:%S %z" in local time;
 * address is the physical address (page << PAGE_SHIFT | offset), 0 when the driver had none.
 * memtest asks it which DIMM reported corrected or uncorrected errors in the page of a
 * miscompare while the task ran. The database is opened read-only and is untrusted: rows are
 * bounded in number and size, and what does not parse is skipped. */
#ifndef FB_MEMTEST_RASDB_H
#define FB_MEMTEST_RASDB_H

#include <stddef.h>
#include <stdint.h>

#define MT_RAS_DB_PATH "/var/lib/rasdaemon/ras-mc_event.db"
#define MT_RAS_MAX_ROWS 256 /* rows examined per lookup */

typedef struct {
    int64_t when;    /* seconds since the epoch */
    uint64_t count;  /* err_count */
    char type[16];   /* err_type: Corrected, Uncorrected, Deferred, Fatal, Info */
    char label[128]; /* printable; "" when the row has none */
    uint64_t address;
} mt_ras_event_t;

/* Parses "2026-03-01 15:41:13 +0800" into seconds since the epoch. Returns 0 or -EINVAL. */
int mt_ras_parse_time(const char *text, int64_t *out);

/* Builds an event from one row's columns (any may be NULL). Returns 0, or -EINVAL when the
 * timestamp does not parse or the error type is not one rasdaemon writes. */
int mt_ras_event_from_row(const char *timestamp, int64_t count, const char *type, const char *label,
                          int64_t address, mt_ras_event_t *out);

/* Rows of the database at path whose address lies in [first, last] and whose timestamp lies in
 * [from, to], oldest first, at most max into out. Returns the number found, or a negative errno
 * with a one-line reason in err: -ENOENT (no database: rasdaemon not installed or never run),
 * -EINVAL (not a regular file, or no mc_event table with these columns), -EIO (SQLite error). */
int mt_ras_lookup(const char *path, uint64_t first, uint64_t last, int64_t from, int64_t to,
                  mt_ras_event_t *out, size_t max, char *err, size_t errlen);

#endif
