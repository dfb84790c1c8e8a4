/* SPDX-License-Identifier: Apache-2.0 */
/* The "key = value" configuration reader (common/conffile.h) behind the agent's site
 * configuration: comments, blanks and values as written; every error with FILE:LINE and the
 * key (a line without '=', an unknown key, a key given twice, an empty value, a control
 * character); and a file refused when someone other than its owner could have written it
 * (group- or world-writable, owned by another user), or when it is not a file at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/conffile.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const s_keys[] = {
    "coordinator", "name", "mpirun", "mpirun_args", "mpirun_allow_run_as_root", NULL};

static fb_conf_t *s_parse_ok(const char *text)
{
    fb_conf_t *c = NULL;
    char *err = NULL;
    if (fb_conf_parse(text, strlen(text), "agent.conf", s_keys, &c, &err))
        fail_msg("unexpected error: %s", err);
    assert_null(err);
    return c;
}

static void s_expect_error(const char *text, const char *expected)
{
    fb_conf_t *c = (fb_conf_t *)1;
    char *err = NULL;
    assert_int_equal(fb_conf_parse(text, strlen(text), "agent.conf", s_keys, &c, &err), -EINVAL);
    assert_null(c);
    if (strcmp(err, expected))
        fail_msg("for:\n%s\n got      '%s'\n expected '%s'", text, err, expected);
    free(err);
}

static void test_values(void **state)
{
    (void)state;
    fb_conf_t *c = s_parse_ok("# the site's settings\n"
                              "\n"
                              "coordinator = tcp://10.0.0.1:7755\n"
                              "   name=node01   \r\n"
                              "mpirun = /opt/openmpi/bin/mpirun   # the site's Open MPI\n"
                              "mpirun_args = --mca btl tcp,self --mca x#y\n"
                              "\t# indented comment\n"
                              "mpirun_allow_run_as_root = yes");
    assert_string_equal(fb_conf_get(c, "coordinator"), "tcp://10.0.0.1:7755");
    assert_string_equal(fb_conf_get(c, "name"), "node01");
    assert_string_equal(fb_conf_get(c, "mpirun"), "/opt/openmpi/bin/mpirun");
    assert_string_equal(fb_conf_get(c, "mpirun_args"), "--mca btl tcp,self --mca x#y");
    bool b = false;
    char *err = NULL;
    assert_int_equal(fb_conf_get_bool(c, "mpirun_allow_run_as_root", false, &b, &err), 0);
    assert_true(b);
    assert_null(fb_conf_get(c, "nowhere"));
    char *msg = fb_conf_error(c, "mpirun", "'%s' is wrong; expected better", "x");
    assert_string_equal(msg, "agent.conf:5: mpirun: 'x' is wrong; expected better");
    free(msg);
    fb_conf_destroy(&c);
    assert_null(c);
    fb_conf_destroy(&c);

    c = s_parse_ok("mpirun_allow_run_as_root = maybe\n");
    assert_int_equal(fb_conf_get_bool(c, "mpirun_allow_run_as_root", false, &b, &err), -EINVAL);
    assert_false(b);
    assert_string_equal(err, "agent.conf:1: mpirun_allow_run_as_root: 'maybe' is not yes or no; "
                             "expected yes or no");
    free(err);
    assert_int_equal(fb_conf_get_bool(c, "name", true, &b, NULL), 0); /* absent: the default */
    assert_true(b);
    fb_conf_destroy(&c);
    c = s_parse_ok("");
    assert_null(fb_conf_get(c, "name"));
    fb_conf_destroy(&c);
}

static void test_errors(void **state)
{
    (void)state;
    s_expect_error("name = a\nmpirun /usr/bin/mpirun\n",
                   "agent.conf:2: no '=' after 'mpirun'; expected a setting as key = value");
    s_expect_error("# ok\nmpirum = /usr/bin/mpirun\n",
                   "agent.conf:2: mpirum: unknown key; expected one of coordinator, name, mpirun, "
                   "mpirun_args, mpirun_allow_run_as_root");
    s_expect_error("name = a\n\nname = b\n",
                   "agent.conf:3: name: given twice (also on line 1); expected each key once");
    s_expect_error("mpirun =   # nothing\n",
                   "agent.conf:1: mpirun: no value; expected mpirun = VALUE, or the line left out "
                   "for the default");
    s_expect_error("Mpirun = x\n", "agent.conf:1: 'Mpirun' is not a key; expected a setting as "
                                   "key = value, the key in lower case letters, digits and '_'");
    s_expect_error("= x\n", "agent.conf:1: '' is not a key; expected a setting as key = value, "
                            "the key in lower case letters, digits and '_'");
    s_expect_error("mpirun = a\x1b[2Jb\n", "agent.conf:1: mpirun: the value holds a control "
                                           "character (0x1b); expected text on one line");
    const char nul[] = "name = a\nmpirun = x\0y\n";
    fb_conf_t *c = NULL;
    char *err = NULL;
    assert_int_equal(fb_conf_parse(nul, sizeof nul - 1, "agent.conf", s_keys, &c, &err), -EINVAL);
    assert_string_equal(err, "agent.conf:2: a NUL byte; expected a text file of key = value lines");
    free(err);
    char *long_value = xmalloc(FB_CONF_MAX_VALUE + 32);
    strcpy(long_value, "mpirun = ");
    memset(long_value + 9, 'x', FB_CONF_MAX_VALUE + 1);
    long_value[9 + FB_CONF_MAX_VALUE + 1] = '\0';
    assert_int_equal(fb_conf_parse(long_value, strlen(long_value), "agent.conf", s_keys, &c, &err),
                     -EINVAL);
    assert_string_equal(err, "agent.conf:1: mpirun: a value of 4097 bytes; expected at most 4096");
    free(err);
    free(long_value);
}

/* Who may have written the file: its owner only, and the owner root or the running user. */
static void test_load_permissions(void **state)
{
    (void)state;
    char dir[] = "/tmp/fbconf-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = xasprintf("%s/agent.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("mpirun = /usr/bin/mpirun\n", f);
    fclose(f);
    fb_conf_t *c = NULL;
    char *err = NULL;
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(fb_conf_load(path, s_keys, &c, &err), 0);
    assert_string_equal(fb_conf_get(c, "mpirun"), "/usr/bin/mpirun");
    fb_conf_destroy(&c);

    assert_int_equal(chmod(path, 0664), 0);
    assert_int_equal(fb_conf_load(path, s_keys, &c, &err), -EPERM);
    assert_null(c);
    char *want = xasprintf("%s: writable by its group (mode 0664); expected a file only its owner "
                           "can change (chmod go-w %s): it decides which programs run",
                           path, path);
    assert_string_equal(err, want);
    free(want);
    free(err);
    assert_int_equal(chmod(path, 0646), 0);
    assert_int_equal(fb_conf_load(path, s_keys, &c, &err), -EPERM);
    assert_non_null(strstr(err, "writable by others (mode 0646)"));
    free(err);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(fb_conf_load(path, s_keys, &c, &err), -EPERM);
    assert_non_null(strstr(err, "writable by group and others (mode 0666)"));
    free(err);
    assert_int_equal(chmod(path, 0600), 0);

    if (geteuid() == 0) {
        /* Owned by another user: refused even though nobody else may write it. */
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(fb_conf_load(path, s_keys, &c, &err), -EPERM);
        want = xasprintf("%s: owned by uid 65534; expected a file owned by root or by the user "
                         "running this program (uid 0): it decides which programs run",
                         path);
        assert_string_equal(err, want);
        free(want);
        free(err);
    }

    /* Missing, not a file, errors in the content. */
    char *missing = xasprintf("%s/missing.conf", dir);
    assert_int_equal(fb_conf_load(missing, s_keys, &c, &err), -ENOENT);
    want = xasprintf("%s: cannot read: No such file or directory", missing);
    assert_string_equal(err, want);
    free(want);
    free(err);
    char *fifo = xasprintf("%s/fifo.conf", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(fb_conf_load(fifo, s_keys, &c, &err), -EINVAL);
    assert_non_null(strstr(err, "not a regular file (a FIFO)"));
    free(err);
    char *bad = xasprintf("%s/bad.conf", dir);
    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("name = x\nworker = /tmp/evil\n", f);
    fclose(f);
    chmod(bad, 0600);
    assert_int_equal(fb_conf_load(bad, s_keys, &c, &err), -EINVAL);
    want = xasprintf("%s:2: worker: unknown key; expected one of coordinator, name, mpirun, "
                     "mpirun_args, mpirun_allow_run_as_root",
                     bad);
    assert_string_equal(err, want);
    free(want);
    free(err);

    unlink(path);
    unlink(fifo);
    unlink(bad);
    rmdir(dir);
    free(path);
    free(missing);
    free(fifo);
    free(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_load_permissions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
