/* SPDX-License-Identifier: Apache-2.0 */
/* The unit tests' temporary folders (tmpdir.h). */
#include "tmpdir.h"
#include "common/util.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

char *tmpdir_new(const char *name)
{
    char *dir = xasprintf("/tmp/fb-%s.XXXXXX", name);
    assert_non_null(mkdtemp(dir));
    return dir;
}

char *tmpdir_copy(const char *name, const char *src)
{
    char *dir = tmpdir_new(name);
    char *cmd = xasprintf("cp -a '%s/.' '%s/'", src, dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return dir;
}

static int s_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void tmpdir_remove(const char *path)
{
    nftw(path, s_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
