/* SPDX-License-Identifier: Apache-2.0 */
/* What the libFuzzer harnesses in tests/fuzz share: a NUL-terminated copy of the input, quiet
 * logging, and a check that aborts (so libFuzzer records the input) when an invariant of a
 * decoder does not hold. Each harness is one tests/fuzz/fuzz_<name>.c with its own
 * LLVMFuzzerTestOneInput; docs/fuzzing.md lists them. */
#ifndef FB_FUZZ_H
#define FB_FUZZ_H

#include "common/log.h"
#include "common/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A heap copy of the input with a terminating NUL (the input may hold NULs of its own). */
static inline char *fz_cstr(const uint8_t *data, size_t size)
{
    char *s = xmalloc(size + 1);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Decoders log what they reject; at fuzzing speed that is only noise. */
static inline void fz_quiet(void)
{
    fb_log_set_level((fb_log_level_t)(FB_LOG_ERROR + 1));
}

/* An invariant of the code under test: a failure aborts, and libFuzzer saves the input. */
#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
