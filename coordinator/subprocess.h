/* SPDX-License-Identifier: Apache-2.0 */
/* A program run to its end with a fixed argument vector: posix_spawnp (no shell, so no argument
 * is ever read as shell syntax), stdin from /dev/null, stdout and stderr captured up to a limit,
 * and a timeout after which its whole process group is killed. It blocks its caller: the
 * coordinator calls it from libuv's thread pool (sinfo and scontrol, coordinator/slurm_client.c),
 * never from its loop. */
#ifndef FB_SUBPROCESS_H
#define FB_SUBPROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int spawn_error; /* errno when it could not be started (ENOENT: no such program); 0 */
    bool timed_out;  /* it ran past the timeout and was killed */
    int exit_status; /* its exit status when it exited, else -1 */
    int term_signal; /* the signal that ended it, else 0 */
    char *out, *err; /* what it wrote, NUL-terminated, at most max_output bytes each */
    size_t out_len, err_len;
    bool out_cut, err_cut; /* it wrote more than max_output (the rest was read and dropped) */
} subprocess_result_t;

/* Runs argv[0] (a path, or a name looked up in PATH) with argv (NULL-terminated) in its own
 * process group, with the caller's environment, waiting at most timeout_ms. Fills *res (free
 * with subprocess_result_fini) and returns 0 when it exited with status 0, else -1 (res says
 * why). */
int subprocess_run(const char *const *argv, uint64_t timeout_ms, size_t max_output,
                   subprocess_result_t *res);
void subprocess_result_fini(subprocess_result_t *res);
/* "scontrol update NodeName=n2 State=DRAIN Reason='fleetburn: ...'": argv for messages, an
 * argument with blanks in single quotes. Heap. */
char *subprocess_argv_text(const char *const *argv);
/* Why it did not succeed, in one line: "exit status 1: slurm_update error: Invalid node name
 * specified", "did not end within 30s; killed", "cannot run it: No such file or directory".
 * stderr's first lines are included (control characters replaced). Heap. */
char *subprocess_failure(const subprocess_result_t *res, uint64_t timeout_ms);

#endif
