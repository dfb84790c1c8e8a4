/* SPDX-License-Identifier: Apache-2.0 */
/* Statements that are not in the store's cache (store_internal.h, "Statements of rare calls"):
 * the files whose calls run once per command or once per node and campaign prepare their SQL
 * where they use it, and step it here, with the store's error recording. */
#include "store_internal.h"

sqlite3_stmt *store__prepare(store_t *self, const char *sql, const char *what)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(self->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        store__sqlite_err(self, rc, what);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

int store__step(store_t *self, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    int err = rc == SQLITE_DONE ? 0 : store__sqlite_err(self, rc, what);
    sqlite3_reset(st);
    return err;
}
