/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of agent/spool: the round trip, order, persistence across a reopen (an agent restart),
 * hostile result ids, crash leftovers (temporary files, damaged entries), exclusive
 * ownership, and the memory spool of simulated agents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "spool.h"
#include "log.h"
#include "util.h"
#include "fleetburn.pb-c.h"
#include "tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The spool lives one level inside a private directory, so that "nothing escaped" can look at
 * its parent without meeting other programs' files in /tmp. */
typedef struct {
    char parent[64];
    char dir[80];
} s_fixture_t;

static int s_setup(void **state)
{
    s_fixture_t *f = xcalloc(1, sizeof *f);
    snprintf(f->parent, sizeof f->parent, "/tmp/fb-test-spool-XXXXXX");
    if (!mkdtemp(f->parent))
        return -1;
    snprintf(f->dir, sizeof f->dir, "%s/spool", f->parent);
    if (mkdir(f->dir, 0700) != 0)
        return -1;
    *state = f;
    return 0;
}

static int s_teardown(void **state)
{
    s_fixture_t *f = *state;
    tmpdir_remove(f->parent);
    free(f);
    return 0;
}

static void s_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* Number of directory entries whose name starts with prefix. */
static size_t s_count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (!strncmp(de->d_name, prefix, strlen(prefix)))
            n++;
    closedir(d);
    return n;
}

/* A serialized TaskResult, as the agent stores them. */
static uint8_t *s_result(const char *result_id, size_t *len)
{
    Fleetburn__TaskResult r = FLEETBURN__TASK_RESULT__INIT;
    r.result_id = (char *)result_id;
    r.task_id = (char *)"t1";
    r.verdict = FLEETBURN__VERDICT__VERDICT_PASS;
    r.node = (char *)"node17";
    *len = fleetburn__task_result__get_packed_size(&r);
    uint8_t *buf = xmalloc(*len);
    fleetburn__task_result__pack(&r, buf);
    return buf;
}

static void s_assert_ids(spool_t *spool, const char **want, size_t n_want)
{
    char **ids = NULL;
    size_t n = 99;
    assert_int_equal(spool_list(spool, &ids, &n), 0);
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(ids[i], want[i]);
    spool_ids_free(ids, n);
}

static void test_round_trip(void **state)
{
    s_fixture_t *f = *state;
    char *dir = xasprintf("%s/var/spool", f->dir); /* parents are created too */
    spool_t *spool = NULL;
    assert_int_equal(spool_open(dir, &spool), 0);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    s_assert_ids(spool, NULL, 0);

    const char *ids[] = {"c1/render/node17:gpu0#1", "a-first", "b.second@x"};
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        uint8_t *buf = s_result(ids[i], &len);
        assert_int_equal(spool_put(spool, ids[i], buf, len), 0);
        free(buf);
    }
    assert_int_equal(spool_count(spool), 3);
    s_assert_ids(spool, ids, 3); /* order stored, not name order */

    uint8_t *data = NULL;
    size_t len = 0;
    assert_int_equal(spool_get(spool, ids[0], &data, &len), 0);
    Fleetburn__TaskResult *r = fleetburn__task_result__unpack(NULL, len, data);
    assert_non_null(r);
    assert_string_equal(r->result_id, ids[0]);
    assert_string_equal(r->node, "node17");
    fleetburn__task_result__free_unpacked(r, NULL);
    free(data);

    /* Replacing an entry moves it to the end. */
    assert_int_equal(spool_put(spool, "a-first", (const uint8_t *)"xyz", 3), 0);
    const char *after_replace[] = {"c1/render/node17:gpu0#1", "b.second@x", "a-first"};
    s_assert_ids(spool, after_replace, 3);
    assert_int_equal(spool_get(spool, "a-first", &data, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "xyz", 3);
    free(data);

    /* Zero bytes are a valid entry. */
    assert_int_equal(spool_put(spool, "empty", NULL, 0), 0);
    assert_int_equal(spool_get(spool, "empty", &data, &len), 0);
    assert_int_equal(len, 0);
    assert_non_null(data);
    free(data);

    assert_int_equal(spool_remove(spool, "b.second@x"), 0);
    assert_int_equal(spool_remove(spool, "b.second@x"), -ENOENT);
    assert_int_equal(spool_get(spool, "b.second@x", &data, &len), -ENOENT);
    assert_int_equal(spool_remove(spool, "never-stored"), -ENOENT);
    const char *left[] = {"c1/render/node17:gpu0#1", "a-first", "empty"};
    s_assert_ids(spool, left, 3);
    assert_int_equal(s_count_files(dir, "t."), 0); /* no temporaries left */

    spool_destroy(&spool);
    assert_null(spool);
    spool_destroy(&spool);
    free(dir);
}

static void test_reopen(void **state)
{
    s_fixture_t *f = *state;
    spool_t *spool = NULL;
    assert_int_equal(spool_open(f->dir, &spool), 0);
    char id[32];
    for (int i = 0; i < 50; i++) { /* faster than any file time stamp resolution */
        snprintf(id, sizeof id, "r%02d", 49 - i);
        assert_int_equal(spool_put(spool, id, (const uint8_t *)id, strlen(id)), 0);
    }
    assert_int_equal(spool_remove(spool, "r10"), 0);
    spool_destroy(&spool);

    /* The agent restarts. */
    assert_int_equal(spool_open(f->dir, &spool), 0);
    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(spool_list(spool, &ids, &n), 0);
    assert_int_equal(n, 49);
    assert_string_equal(ids[0], "r49");
    assert_string_equal(ids[48], "r00");
    for (size_t i = 0; i < n; i++)
        assert_string_not_equal(ids[i], "r10");
    spool_ids_free(ids, n);
    uint8_t *data;
    size_t len;
    assert_int_equal(spool_get(spool, "r07", &data, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "r07", 3);
    free(data);

    /* New entries after a restart still sort after the old ones. */
    assert_int_equal(spool_put(spool, "after-restart", (const uint8_t *)"x", 1), 0);
    assert_int_equal(spool_list(spool, &ids, &n), 0);
    assert_string_equal(ids[n - 1], "after-restart");
    spool_ids_free(ids, n);
    spool_destroy(&spool);
}

static void test_hostile_ids(void **state)
{
    s_fixture_t *f = *state;
    spool_t *spool = NULL;
    assert_int_equal(spool_open(f->dir, &spool), 0);
    char long_id[301];
    memset(long_id, 'a', 300);
    long_id[300] = '\0';
    const char *bad[] = {"../x",      "",          "..",      ".",           "/etc/passwd",
                         "a/../../b", "a//b",      "a/",      "a/./b",       "sp ace",
                         "tab\t",     "new\nline", "perc%2F", "back\\slash", "quote\"",
                         "star*",     long_id};
    uint8_t *data = NULL;
    size_t len = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++) {
        assert_false(spool_id_valid(bad[i]));
        assert_int_equal(spool_put(spool, bad[i], (const uint8_t *)"x", 1), -EINVAL);
        assert_int_equal(spool_get(spool, bad[i], &data, &len), -EINVAL);
        assert_int_equal(spool_remove(spool, bad[i]), -EINVAL);
    }
    assert_false(spool_id_valid(NULL));
    assert_int_equal(spool_put(spool, NULL, (const uint8_t *)"x", 1), -EINVAL);

    /* The longest id is fine, and so are dots inside names. */
    long_id[SPOOL_ID_MAX] = '\0';
    assert_true(spool_id_valid(long_id));
    assert_int_equal(spool_put(spool, long_id, (const uint8_t *)"x", 1), 0);
    long_id[SPOOL_ID_MAX] = 'a';
    long_id[SPOOL_ID_MAX + 1] = '\0';
    assert_int_equal(spool_put(spool, long_id, (const uint8_t *)"x", 1), -EINVAL);
    assert_int_equal(spool_put(spool, "a..b/.c/d.", (const uint8_t *)"x", 1), 0);
    assert_int_equal(spool_count(spool), 2);

    /* Nothing escaped the spool directory. */
    char *outside = xasprintf("%s/../x", f->dir);
    assert_int_equal(access(outside, F_OK), -1);
    free(outside);
    spool_destroy(&spool);
}

static void test_crash_leftovers(void **state)
{
    s_fixture_t *f = *state;
    spool_t *spool = NULL;
    assert_int_equal(spool_open(f->dir, &spool), 0);
    size_t len;
    uint8_t *buf = s_result("kept", &len);
    assert_int_equal(spool_put(spool, "kept", buf, len), 0);
    assert_int_equal(spool_put(spool, "damaged", buf, len), 0);
    spool_destroy(&spool);

    /* A crash mid-write leaves a truncated temporary file (a prefix of a real entry). */
    char *entry = xasprintf("%s/r.kept", f->dir);
    size_t full_len = 0;
    char *full = fb_read_file(entry, &full_len);
    assert_non_null(full);
    char *temp = xasprintf("%s/t.0", f->dir);
    s_write_file(temp, full, full_len / 2);
    free(full);
    /* A damaged entry: one payload byte flipped. */
    char *damaged = xasprintf("%s/r.damaged", f->dir);
    int fd = open(damaged, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    assert_int_equal(pread(fd, &byte, 1, 41), 1);
    byte ^= 0x55;
    assert_int_equal(pwrite(fd, &byte, 1, 41), 1);
    close(fd);
    /* A truncated entry (header only says more) and an unrelated file. */
    char *trunc = xasprintf("%s/r.truncated", f->dir);
    s_write_file(trunc, "FBSPOOL1", 8);
    char *other = xasprintf("%s/README", f->dir);
    s_write_file(other, "x", 1);

    assert_int_equal(spool_open(f->dir, &spool), 0);
    const char *want[] = {"kept"};
    s_assert_ids(spool, want, 1);
    assert_int_equal(access(temp, F_OK), -1);           /* temporary cleaned */
    assert_int_equal(s_count_files(f->dir, "bad."), 2); /* damaged ones set aside */
    assert_int_equal(access(other, F_OK), 0);           /* foreign files untouched */
    uint8_t *data;
    size_t got;
    assert_int_equal(spool_get(spool, "kept", &data, &got), 0);
    assert_int_equal(got, len);
    assert_memory_equal(data, buf, len);
    free(data);
    assert_int_equal(spool_get(spool, "damaged", &data, &got), -ENOENT);
    spool_destroy(&spool);
    free(buf);
    free(entry);
    free(temp);
    free(damaged);
    free(trunc);
    free(other);
}

static void test_exclusive(void **state)
{
    s_fixture_t *f = *state;
    spool_t *a = NULL, *b = NULL;
    assert_int_equal(spool_open(f->dir, &a), 0);
    assert_int_equal(spool_open(f->dir, &b), -EBUSY);
    assert_null(b);
    spool_destroy(&a);
    assert_int_equal(spool_open(f->dir, &b), 0);
    spool_destroy(&b);

    /* A path that is a file, not a directory. */
    char *file = xasprintf("%s/plain", f->dir);
    s_write_file(file, "x", 1);
    assert_int_equal(spool_open(file, &a), -ENOTDIR);
    assert_int_equal(spool_open("", &a), -EINVAL);
    free(file);
}

/* A memory spool keeps the same contract without a directory: order, replacement, removal. */
static void test_memory(void **state)
{
    (void)state;
    spool_t *spool = NULL;
    assert_int_equal(spool_open_memory(&spool), 0);
    size_t len = 0;
    uint8_t *a = s_result("t/1", &len);
    assert_int_equal(spool_put(spool, "t/1", a, len), 0);
    assert_int_equal(spool_put(spool, "t/2@node17", (const uint8_t *)"", 0), 0);
    assert_int_equal(spool_put(spool, "../x", a, len), -EINVAL);
    const char *both[] = {"t/1", "t/2@node17"};
    s_assert_ids(spool, both, 2);
    uint8_t *data = NULL;
    size_t got = 0;
    assert_int_equal(spool_get(spool, "t/1", &data, &got), 0);
    assert_int_equal(got, len);
    assert_memory_equal(data, a, len);
    free(data);
    assert_int_equal(spool_get(spool, "t/2@node17", &data, &got), 0);
    assert_non_null(data);
    assert_int_equal(got, 0);
    free(data);
    /* Replacing an entry makes it the newest. */
    assert_int_equal(spool_put(spool, "t/1", a, len), 0);
    const char *replaced[] = {"t/2@node17", "t/1"};
    s_assert_ids(spool, replaced, 2);
    assert_int_equal(spool_remove(spool, "t/2@node17"), 0);
    assert_int_equal(spool_remove(spool, "t/2@node17"), -ENOENT);
    assert_int_equal(spool_get(spool, "t/2@node17", &data, &got), -ENOENT);
    assert_int_equal(spool_count(spool), 1);
    free(a);
    spool_destroy(&spool);
    assert_null(spool);
}

int main(void)
{
    fb_log_init("test", FB_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_reopen, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_hostile_ids, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_crash_leftovers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_exclusive, s_setup, s_teardown),
        cmocka_unit_test(test_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
