/* SPDX-License-Identifier: Apache-2.0 */
/* What the libFuzzer harnesses in tests/fuzz share: a NUL-terminated copy of the input, quiet
 * logging, a check that aborts (so libFuzzer records the input) when an invariant of a decoder
 * does not hold, and a private directory and whole writes for harnesses that read files. Each
 * harness is one tests/fuzz/fuzz_<name>.c with its own LLVMFuzzerTestOneInput; docs/fuzzing.md
 * lists them. */
#ifndef FB_FUZZ_H
#define FB_FUZZ_H

#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The contract of a parser returning rc and an object through out (with a message in err): 0
 * and an object, or -EINVAL, no object and a message. */
#define FZ_CHECK_PARSED(rc, out, err)                                                              \
    FZ_CHECK((rc) == 0 ? (out) != NULL : ((rc) == -EINVAL && (out) == NULL && (err)[0] != '\0'))

/* The harness's LLVMFuzzerInitialize: quiet logging, then `setup` (a statement; empty for none). */
#define FZ_INITIALIZE(setup)                                                                       \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                                              \
    {                                                                                              \
        (void)argc;                                                                                \
        (void)argv;                                                                                \
        fz_quiet();                                                                                \
        setup;                                                                                     \
        return 0;                                                                                  \
    }

/* A new private directory fb-fuzz-<what>.XXXXXX (a heap path) under /dev/shm when there is one,
 * else $TMPDIR or /tmp: files the harness writes for every input stay in memory. Aborts when it
 * cannot be made. */
static inline char *fz_private_dir(const char *what)
{
    struct stat st;
    const char *tmp = getenv("TMPDIR");
    const char *parent = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm"
                         : tmp && *tmp                                     ? tmp
                                                                           : "/tmp";
    char *dir = xasprintf("%s/fb-fuzz-%s.XXXXXX", parent, what);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "fuzz %s: mkdtemp: %s\n", what, strerror(errno));
        abort();
    }
    return dir;
}

/* Writes all of bytes[0..len) to fd; a short write is an invariant failure. */
static inline void fz_write_all(int fd, const uint8_t *bytes, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, bytes + off, len - off);
        FZ_CHECK(w > 0);
        off += (size_t)w;
    }
}

#endif
