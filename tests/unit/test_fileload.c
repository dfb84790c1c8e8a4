/* SPDX-License-Identifier: Apache-2.0 */
/* The bounded file loader (common/fileload.h): a regular file whole, with its length and a
 * terminator; the size limit both from the file's size and from what is read (a /proc file
 * reports size 0); and everything that is not a regular file refused at once, naming its
 * kind: a FIFO without a writer (which would block a plain reader), /dev/zero (endless), a
 * directory. fb_read_file goes through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/fileload.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char dir[64];
} fixture_t;

static int s_setup(void **state)
{
    fixture_t *f = xcalloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/fbfileload-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int s_teardown(void **state)
{
    fixture_t *f = *state;
    char *cmd = xasprintf("rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

static char *s_write(const fixture_t *f, const char *name, const void *data, size_t len)
{
    char *path = xasprintf("%s/%s", f->dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    fclose(fp);
    return path;
}

static void test_regular_file(void **state)
{
    fixture_t *f = *state;
    char *path = s_write(f, "a.txt", "one\0two\n", 8);
    char *text = NULL, *err = NULL;
    size_t len = 0;
    assert_int_equal(fb_load_file(path, 100, &text, &len, &err), 0);
    assert_null(err);
    assert_int_equal(len, 8);
    assert_memory_equal(text, "one\0two\n", 8);
    assert_int_equal(text[8], '\0');
    free(text);
    /* exactly at the limit is fine; a byte over is not */
    assert_int_equal(fb_load_file(path, 8, &text, NULL, NULL), 0);
    free(text);
    assert_int_equal(fb_load_file(path, 7, &text, &len, &err), -EFBIG);
    assert_null(text);
    char *want = xasprintf("%s: larger than 7 bytes", path);
    assert_string_equal(err, want);
    free(want);
    free(err);
    /* the status of the file read */
    struct stat st;
    assert_int_equal(fb_load_file_stat(path, 100, &text, NULL, &st, NULL), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_uid, geteuid());
    free(text);
    /* an empty file */
    char *empty = s_write(f, "empty", "", 0);
    assert_int_equal(fb_load_file(empty, 0, &text, &len, NULL), 0);
    assert_int_equal(len, 0);
    assert_string_equal(text, "");
    free(text);
    free(empty);
    free(path);
}

static void test_proc_file(void **state)
{
    (void)state;
    /* /proc files say size 0; the limit holds on what is read. */
    char *text = NULL, *err = NULL;
    size_t len = 0;
    assert_int_equal(fb_load_file("/proc/self/status", 1 << 20, &text, &len, &err), 0);
    assert_true(len > 0);
    assert_non_null(strstr(text, "Name:"));
    free(text);
    assert_int_equal(fb_load_file("/proc/self/status", 16, &text, &len, &err), -EFBIG);
    assert_non_null(strstr(err, "larger than 16 bytes"));
    free(err);
}

static void test_not_regular(void **state)
{
    fixture_t *f = *state;
    char *text = NULL, *err = NULL;
    /* A FIFO with no writer: refused at once (a plain open would wait for a writer). */
    char *fifo = xasprintf("%s/fifo", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    double t0 = fb_mono_s();
    assert_int_equal(fb_load_file(fifo, 1 << 20, &text, NULL, &err), -EINVAL);
    assert_true(fb_mono_s() - t0 < 5.0);
    assert_null(text);
    char *want = xasprintf("%s: not a regular file (a FIFO)", fifo);
    assert_string_equal(err, want);
    free(want);
    free(err);
    free(fifo);
    assert_int_equal(fb_load_file("/dev/zero", 1 << 20, &text, NULL, &err), -EINVAL);
    assert_string_equal(err, "/dev/zero: not a regular file (a character device)");
    free(err);
    assert_int_equal(fb_load_file(f->dir, 1 << 20, &text, NULL, &err), -EINVAL);
    assert_non_null(strstr(err, ": not a regular file (a directory)"));
    free(err);
    assert_int_equal(fb_load_file("/nonexistent/x", 1 << 20, &text, NULL, &err), -ENOENT);
    assert_string_equal(err, "/nonexistent/x: cannot read: No such file or directory");
    free(err);
    assert_int_equal(fb_load_file("", 1 << 20, &text, NULL, &err), -EINVAL);
    free(err);
    assert_int_equal(fb_load_file("/nonexistent/x", 1 << 20, &text, NULL, NULL), -ENOENT);
    assert_string_equal(fb_file_kind(S_IFBLK), "a block device");
    assert_string_equal(fb_file_kind(S_IFSOCK), "a socket");
}

static void test_read_file(void **state)
{
    fixture_t *f = *state;
    char *path = s_write(f, "attr", "42 \n\n", 5);
    size_t len = 0;
    char *text = fb_read_file(path, &len);
    assert_string_equal(text, "42");
    assert_int_equal(len, 2);
    free(text);
    uint64_t v = 0;
    assert_int_equal(fb_read_u64(path, &v), 0);
    assert_int_equal(v, 42);
    free(path);
    errno = 0;
    assert_null(fb_read_file("/dev/zero", NULL));
    assert_int_equal(errno, EINVAL);
    assert_null(fb_read_file("/nonexistent/attr", NULL));
    assert_int_equal(errno, ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_regular_file, s_setup, s_teardown),
        cmocka_unit_test(test_proc_file),
        cmocka_unit_test_setup_teardown(test_not_regular, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_read_file, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
