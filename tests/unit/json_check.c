/* SPDX-License-Identifier: Apache-2.0 */
/* Python's json module as the unit tests' judge of a JSON document (json_check.h). */
#include "json_check.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cmocka.h>

FILE *json_check_begin(const char *dir, const char *checks)
{
    char *script = xasprintf("%s/check.py", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fprintf(f, "import json, sys\nd = json.loads(sys.stdin.buffer.read().decode('utf-8'))\n%s\n",
            checks);
    fclose(f);
    char *cmd = xasprintf("python3 %s", script);
    FILE *py = popen(cmd, "w");
    assert_non_null(py);
    free(cmd);
    free(script);
    return py;
}

int json_check_end(FILE *py)
{
    int status = pclose(py);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
