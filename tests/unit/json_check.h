/* SPDX-License-Identifier: Apache-2.0 */
/* JSON documents checked by Python's json module, as an operator's script would read them: the
 * unit tests of the reports, compare and alerts write their document into a Python program that
 * parses it as strict UTF-8 JSON into d and runs the test's checks (Python statements, asserts).
 * Linked into every unit test (tests/CMakeLists.txt). */
#ifndef FB_TEST_JSON_CHECK_H
#define FB_TEST_JSON_CHECK_H

#include <stdio.h>

/* Writes dir/check.py with the checks and starts it; the caller writes the document to the
 * returned pipe (never NULL: the test fails when python3 cannot be started). */
FILE *json_check_begin(const char *dir, const char *checks);
/* Closes the pipe and waits: the program's exit status, -1 when it did not exit. */
int json_check_end(FILE *py);

#endif
