/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the EDAC reader against fixture copies of the kernel's sysfs layouts (mcN/dimmN,
 * mcN/rankN and the legacy mcN/csrowN/chK_*), malformed and missing trees, and the before/after
 * diff memtest uses to name a DIMM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "common/edac.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *s_fixture(const char *name)
{
    return xasprintf("%s/edac/%s", FB_FIXTURES, name);
}

static const fb_dimm_t *s_dimm(const fb_edac_t *e, const char *location)
{
    for (size_t i = 0; i < e->n_dimms; i++)
        if (!strcmp(e->dimms[i].location, location))
            return &e->dimms[i];
    return NULL;
}

static void test_dimm_layout(void **state)
{
    (void)state;
    char *root = s_fixture("dimm");
    fb_edac_t e;
    assert_int_equal(fb_edac_read(root, &e), 0);
    assert_int_equal(e.n_dimms, 4);
    /* Numeric order: dimm10 after dimm1, mc1 after mc0. */
    assert_string_equal(e.dimms[0].location, "mc0/dimm0");
    assert_string_equal(e.dimms[1].location, "mc0/dimm1");
    assert_string_equal(e.dimms[2].location, "mc0/dimm10");
    assert_string_equal(e.dimms[3].location, "mc1/dimm0");
    const fb_dimm_t *d = &e.dimms[1];
    assert_string_equal(d->label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_int_equal(d->size_mb, 32768);
    assert_int_equal(d->ce_count, 5);
    assert_int_equal(d->ue_count, 1);
    /* An empty dimm_label falls back to the location. */
    assert_string_equal(e.dimms[3].label, "mc1/dimm0");
    assert_int_equal(e.ce_total, 7);
    assert_int_equal(e.ue_total, 1);
    fb_edac_clear(&e);
    assert_int_equal(e.n_dimms, 0);
    assert_null(e.dimms);
    fb_edac_clear(&e); /* twice is harmless */
    free(root);
}

static void test_csrow_layout(void **state)
{
    (void)state;
    char *root = s_fixture("csrow");
    fb_edac_t e;
    assert_int_equal(fb_edac_read(root, &e), 0);
    assert_int_equal(e.n_dimms, 4);
    const fb_dimm_t *a1 = s_dimm(&e, "mc0/csrow0/ch0");
    const fb_dimm_t *b1 = s_dimm(&e, "mc0/csrow0/ch1");
    const fb_dimm_t *b2 = s_dimm(&e, "mc0/csrow1/ch1");
    assert_non_null(a1);
    assert_non_null(b1);
    assert_non_null(b2);
    assert_string_equal(a1->label, "DIMM_A1");
    assert_string_equal(b1->label, "DIMM_B1");
    assert_string_equal(b2->label, "mc0/csrow1/ch1");
    assert_int_equal(a1->ce_count, 1);
    assert_int_equal(b1->ce_count, 2);
    /* The csrow's uncorrected count is shared by its channels; its size is split over them. */
    assert_int_equal(a1->ue_count, 2);
    assert_int_equal(b1->ue_count, 2);
    assert_int_equal(b2->ue_count, 0);
    assert_int_equal(a1->size_mb, 4096);
    assert_int_equal(e.ce_total, 4);
    assert_int_equal(e.ue_total, 2);
    fb_edac_clear(&e);
    free(root);
}

static void test_rank_layout(void **state)
{
    (void)state;
    char *root = s_fixture("rank");
    fb_edac_t e;
    assert_int_equal(fb_edac_read(root, &e), 0);
    assert_int_equal(e.n_dimms, 2);
    assert_string_equal(e.dimms[1].location, "mc0/rank1");
    assert_string_equal(e.dimms[1].label, "mc#0csrow#0channel#1");
    assert_int_equal(e.dimms[1].ce_count, 9);
    /* No mc ce_count file would mean "sum of the DIMMs"; here the file says 0 and wins. */
    assert_int_equal(e.ce_total, 0);
    fb_edac_clear(&e);
    free(root);
}

static void test_malformed_count(void **state)
{
    (void)state;
    char *root = s_fixture("malformed");
    fb_edac_t e;
    assert_int_equal(fb_edac_read(root, &e), -EINVAL);
    assert_int_equal(e.n_dimms, 0);
    assert_null(e.dimms);
    free(root);
    root = s_fixture("missing_counter");
    assert_int_equal(fb_edac_read(root, &e), -EINVAL);
    free(root);
}

static void test_missing_tree(void **state)
{
    (void)state;
    char *root = s_fixture("no-such-tree");
    fb_edac_t e;
    assert_int_equal(fb_edac_read(root, &e), -ENOENT);
    free(root);
    root = s_fixture("empty");
    assert_int_equal(fb_edac_read(root, &e), -ENOENT);
    free(root);
}

/* Copies a fixture tree into a temporary directory the test may change. */
static char *s_copy_fixture(const char *name)
{
    char *src = s_fixture(name);
    char *dir = tmpdir_copy("edac", src);
    free(src);
    return dir;
}

static void s_write(const char *root, const char *rel, const char *text)
{
    char *path = xasprintf("%s/sys/devices/system/edac/mc/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(path);
}

static void s_remove_tree(char *dir)
{
    char *cmd = xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

static void test_diff_names_moved_dimm(void **state)
{
    (void)state;
    char *root = s_copy_fixture("dimm");
    fb_edac_t before, after;
    assert_int_equal(fb_edac_read(root, &before), 0);
    s_write(root, "mc0/dimm1/dimm_ce_count", "8\n");
    s_write(root, "mc0/dimm1/dimm_ue_count", "1\n");
    s_write(root, "mc0/dimm10/dimm_ue_count", "2\n");
    assert_int_equal(fb_edac_read(root, &after), 0);
    fb_edac_change_t changes[8];
    size_t n = fb_edac_diff(&before, &after, changes, 8);
    assert_int_equal(n, 2);
    assert_string_equal(changes[0].dimm->label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_int_equal(changes[0].ce_delta, 3);
    assert_int_equal(changes[0].ue_delta, 0);
    assert_string_equal(changes[1].dimm->location, "mc0/dimm10");
    assert_int_equal(changes[1].ce_delta, 0);
    assert_int_equal(changes[1].ue_delta, 2);
    /* max bounds the output. */
    assert_int_equal(fb_edac_diff(&before, &after, changes, 1), 1);
    /* Nothing moved between a snapshot and itself; a counter going down is a reset, not errors. */
    assert_int_equal(fb_edac_diff(&after, &after, changes, 8), 0);
    assert_int_equal(fb_edac_diff(&after, &before, changes, 8), 0);
    fb_edac_clear(&before);
    fb_edac_clear(&after);
    s_remove_tree(root);
}

static void test_diff_ignores_new_dimm(void **state)
{
    (void)state;
    fb_dimm_t d = {.label = "X", .location = "mc0/dimm0", .ce_count = 5};
    fb_edac_t before = {0};
    fb_edac_t after = {.dimms = &d, .n_dimms = 1};
    fb_edac_change_t change;
    assert_int_equal(fb_edac_diff(&before, &after, &change, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dimm_layout),           cmocka_unit_test(test_csrow_layout),
        cmocka_unit_test(test_rank_layout),           cmocka_unit_test(test_malformed_count),
        cmocka_unit_test(test_missing_tree),          cmocka_unit_test(test_diff_names_moved_dimm),
        cmocka_unit_test(test_diff_ignores_new_dimm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
