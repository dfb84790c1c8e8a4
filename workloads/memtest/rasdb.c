/* SPDX-License-Identifier: Apache-2.0 */
/* Looking up rasdaemon's mc_event records of one page during one task (rasdb.h). The schema is
 * the one rasdaemon creates (ras-record.c; captured from rasdaemon 0.6.8 in
 * tests/fixtures/rasdaemon/); the lookup reads only the columns every rasdaemon version since
 * 2013 has written. */
#include "rasdb.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define S_BUSY_MS 1000           /* rasdaemon may be writing */
#define S_TEXT_LIMIT (64 * 1024) /* no value this lookup reads is longer */

/* n digits at p into *v; false when any is not a digit. */
static bool s_digits(const char *p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return false;
        *v = *v * 10 + (p[i] - '0');
    }
    return true;
}

int mt_ras_parse_time(const char *text, int64_t *out)
{
    /* "YYYY-MM-DD HH:MM:SS +HHMM": 25 characters exactly. */
    int y, mo, d, h, mi, s, oh, om;
    if (!text || strlen(text) != 25 || text[4] != '-' || text[7] != '-' || text[10] != ' ' ||
        text[13] != ':' || text[16] != ':' || text[19] != ' ' ||
        (text[20] != '+' && text[20] != '-'))
        return -EINVAL;
    if (!s_digits(text, 4, &y) || !s_digits(text + 5, 2, &mo) || !s_digits(text + 8, 2, &d) ||
        !s_digits(text + 11, 2, &h) || !s_digits(text + 14, 2, &mi) ||
        !s_digits(text + 17, 2, &s) || !s_digits(text + 21, 2, &oh) || !s_digits(text + 23, 2, &om))
        return -EINVAL;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 ||
        oh > 14 || om > 59)
        return -EINVAL;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = s};
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return -EINVAL;
    int64_t offset = (int64_t)(oh * 3600 + om * 60) * (text[20] == '-' ? -1 : 1);
    *out = (int64_t)t - offset;
    return 0;
}

static void s_printable(const char *src, char *dst, size_t len)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < len; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c >= 0x20 && c < 0x7F ? (char)c : '?';
    }
    dst[i] = '\0';
}

int mt_ras_event_from_row(const char *timestamp, int64_t count, const char *type, const char *label,
                          int64_t address, mt_ras_event_t *out)
{
    static const char *const types[] = {"Corrected", "Uncorrected", "Deferred", "Fatal", "Info"};
    memset(out, 0, sizeof *out);
    if (mt_ras_parse_time(timestamp, &out->when))
        return -EINVAL;
    size_t t = 0;
    while (t < sizeof types / sizeof *types && (!type || strcmp(type, types[t])))
        t++;
    if (t == sizeof types / sizeof *types)
        return -EINVAL;
    snprintf(out->type, sizeof out->type, "%s", types[t]);
    out->count = count > 0 ? (uint64_t)count : 1; /* a record is at least one error */
    out->address = (uint64_t)address;
    s_printable(label, out->label, sizeof out->label);
    return 0;
}

static int s_open(const char *path, sqlite3 **db, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path,
                 e == ENOENT ? "no rasdaemon database (rasdaemon not installed, or never run)"
                             : strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return -EINVAL;
    }
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open: %s", path, *db ? sqlite3_errmsg(*db) : "no memory");
        sqlite3_close(*db);
        *db = NULL;
        return -EIO;
    }
    sqlite3_busy_timeout(*db, S_BUSY_MS);
    sqlite3_limit(*db, SQLITE_LIMIT_LENGTH, S_TEXT_LIMIT);
    return 0;
}

int mt_ras_lookup(const char *path, uint64_t first, uint64_t last, int64_t from, int64_t to,
                  mt_ras_event_t *out, size_t max, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int rc = s_open(path, &db, err, errlen);
    if (rc)
        return rc;
    static const char sql[] = "SELECT timestamp, err_count, err_type, label, address FROM mc_event"
                              " WHERE address >= ?1 AND address <= ?2 ORDER BY id LIMIT ?3";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: not rasdaemon's mc_event table: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return -EINVAL;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)first);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)last);
    sqlite3_bind_int(st, 3, MT_RAS_MAX_ROWS);
    size_t n = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        mt_ras_event_t ev;
        if (mt_ras_event_from_row(
                (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
                (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3),
                sqlite3_column_int64(st, 4), &ev))
            continue;
        if (ev.when >= from && ev.when <= to && n < max)
            out[n++] = ev;
    }
    rc = step == SQLITE_DONE ? (int)n : -EIO;
    if (rc < 0)
        snprintf(err, errlen, "%s: reading mc_event failed: %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}
