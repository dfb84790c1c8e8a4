#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Long fuzzing runs: every libFuzzer harness (tests/fuzz, docs/fuzzing.md) for SECONDS each,
# hours where the machine allows it, through tests/fuzz/run.sh (same build, corpora and failure
# rules as CI's 30-second run). The working corpora grow in $FB_FUZZ_WORK and are reused by the
# next run, so runs can be chained (a night, then another). Writes a summary to
# bench/results/fuzz-<date>.txt (RESULTS overrides): the command, the machine, the commit, and per
# harness the seconds run, executions, exec/s, libFuzzer's final coverage (cov: edges, ft:
# features), the corpus it ended with, peak memory and the crash inputs found.
#
#   bench/fuzz.sh SECONDS [HARNESS...]          # e.g. bench/fuzz.sh 14400       (4 h each)
#   FB_FUZZ_JOBS=8 bench/fuzz.sh 28800          # eight harnesses at a time, 8 h each
#
# A crash fails the run (exit 1) and the summary says which harness and where the input is;
# reproduce with build-fuzz/fuzz/fuzz_<name> <input>, fix the decoder, add a unit test, and copy
# the input into tests/fuzz/corpus/<name>/crash-<what> so CI keeps it.
# Environment as for tests/fuzz/run.sh (FB_FUZZ_BUILD, FB_FUZZ_WORK, FB_FUZZ_JOBS, FB_FUZZ_NICE,
# FB_FUZZ_TIMEOUT, FB_FUZZ_FLAGS).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/fuzz.sh SECONDS [HARNESS...]" >&2; exit 2; }
RESULTS=${RESULTS:-bench/results/fuzz-$(date -u +%Y-%m-%d).txt}
build=${FB_FUZZ_BUILD:-build-fuzz}
work=${FB_FUZZ_WORK:-$build/fuzz-work}
summary=$(mktemp "${TMPDIR:-/tmp}/fbfuzz-XXXXXX")
trap 'rm -f "$summary"' EXIT

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The commit the harnesses are built from: taken now, since a run of hours outlives many commits.
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
rc=0
FB_FUZZ_SUMMARY=$summary tests/fuzz/run.sh "$@" || rc=$?
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

{
    echo "# libFuzzer runs of the decoder harnesses (tests/fuzz, docs/fuzzing.md)"
    echo "# command: ${FB_FUZZ_JOBS:+FB_FUZZ_JOBS=$FB_FUZZ_JOBS }${FB_FUZZ_NICE:+FB_FUZZ_NICE=$FB_FUZZ_NICE }bench/fuzz.sh $*"
    echo "# from $started to $finished; $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), ${FB_FUZZ_JOBS:-1} harness(es) at a time"
    echo "# built from commit $commit; $(clang --version | head -1)"
    echo "# seconds: wall time of the run; executions, exec/s, peak rss: libFuzzer's final stats;"
    echo "# cov (edges) and ft (features): its last status line; corpus: units/bytes it ended with"
    echo "# (seed corpus tests/fuzz/corpus/<name> plus the working corpus in $work);"
    echo "# crashes: crash/leak/timeout/oom inputs in $work/artifacts/<name>."
    cat "$summary"
} >"$RESULTS"
cat "$RESULTS"
exit "$rc"
