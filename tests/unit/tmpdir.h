/* SPDX-License-Identifier: Apache-2.0 */
/* Private temporary folders of the unit tests, made and removed with everything in them. Linked
 * into every unit test (tests/CMakeLists.txt). */
#ifndef FB_TEST_TMPDIR_H
#define FB_TEST_TMPDIR_H

/* A new folder /tmp/fb-<name>.XXXXXX (mkdtemp, mode 0700), as a heap path; fails the test when it
 * cannot be made. */
char *tmpdir_new(const char *name);
/* A new folder as tmpdir_new makes, holding a copy of everything under src (a fixture tree the
 * test may then change); fails the test when the copy fails. */
char *tmpdir_copy(const char *name, const char *src);
/* Removes path and everything under it, removing links rather than following them; nothing when
 * it does not exist. */
void tmpdir_remove(const char *path);

#endif
