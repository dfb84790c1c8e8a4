#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer harnesses (clang, FB_FUZZ=ON) and runs each for DURATION_S seconds on its
# seed corpus (tests/fuzz/corpus/<name>, read only) plus a working corpus that grows from run to
# run. Exits 1 when any harness crashes, leaks, hangs past the per-input timeout, runs out of
# memory or trips a sanitizer; the input that did it is kept under the work directory and named
# in the output. docs/fuzzing.md describes the harnesses.
#
#   tests/fuzz/run.sh DURATION_S [HARNESS...]     # default: every tests/fuzz/fuzz_*.c
#
# Environment:
#   FB_FUZZ_BUILD    build directory (default build-fuzz; configured here when it has no cache)
#   FB_FUZZ_WORK     working corpora, crash inputs and logs (default $FB_FUZZ_BUILD/fuzz-work)
#   FB_FUZZ_JOBS     harnesses run at the same time (default 1)
#   FB_FUZZ_NICE     1: run the build and the fuzzers under nice -n 19 (shared machines)
#   FB_FUZZ_TIMEOUT  seconds one input may take before it counts as a hang (default 30)
#   FB_FUZZ_FLAGS    more libFuzzer flags, e.g. "-use_value_profile=1"
#   FB_FUZZ_SUMMARY  also copy the summary table to this file
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
    echo "usage: tests/fuzz/run.sh DURATION_S [HARNESS...]" >&2
    exit 2
fi
duration=$1
shift
build=${FB_FUZZ_BUILD:-build-fuzz}
work=${FB_FUZZ_WORK:-$build/fuzz-work}
jobs=${FB_FUZZ_JOBS:-1}
per_input=${FB_FUZZ_TIMEOUT:-30}
nice_cmd=()
[ "${FB_FUZZ_NICE:-0}" = 1 ] && nice_cmd=(nice -n 19)

if [ $# -gt 0 ]; then
    harnesses=("$@")
else
    harnesses=()
    for f in tests/fuzz/fuzz_*.c; do
        n=$(basename "$f" .c)
        harnesses+=("${n#fuzz_}")
    done
fi
for h in "${harnesses[@]}"; do
    [ -f "tests/fuzz/fuzz_$h.c" ] || { echo "fuzz: no harness tests/fuzz/fuzz_$h.c" >&2; exit 2; }
done

command -v clang >/dev/null || { echo "fuzz: clang is not installed (deploy/install-deps.sh)" >&2; exit 2; }
if [ ! -f "$build/CMakeCache.txt" ]; then
    mkdir -p "$build"
    CC=clang "${nice_cmd[@]}" cmake -S . -B "$build" -DFB_FUZZ=ON -DFB_TESTS=OFF -DWITH_MPI=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
        { cat "$build/configure.log"; exit 1; }
else
    # Configured before: configure again so that harnesses added since then have targets (the
    # build's own check of its file globs runs only for targets it already knows).
    "${nice_cmd[@]}" cmake "$build" >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
fi
targets=()
for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
echo "fuzz: building ${#harnesses[@]} harness(es) in $build (log: $build/build.log)"
"${nice_cmd[@]}" cmake --build "$build" -j"$(nproc)" "${targets[@]}" >"$build/build.log" 2>&1 ||
    { tail -n 60 "$build/build.log"; exit 1; }

# One harness: its log in $work/<h>.log, its summary line in $work/<h>.line.
run_one() {
    local h=$1 corpus=$work/corpus/$1 artifacts=$work/artifacts/$1 log=$work/$1.log
    mkdir -p "$corpus" "$artifacts"
    local dict=()
    [ -f "tests/fuzz/$h.dict" ] && dict=(-dict="tests/fuzz/$h.dict")
    local start rc=0
    start=$(date +%s)
    # shellcheck disable=SC2086
    "${nice_cmd[@]}" "$build/fuzz/fuzz_$h" -max_total_time="$duration" -timeout="$per_input" \
        -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
        ${FB_FUZZ_FLAGS:-} "$corpus" "$src/tests/fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
    local secs=$(($(date +%s) - start))
    local execs speed rss last cov ft corp crashes result=ok
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    last=$(grep -aE '^#[0-9]+.* cov: ' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
    crashes=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | wc -l)
    [ "$rc" -ne 0 ] && result="FAILED (exit $rc)"
    printf '%-12s %8s %12s %9s %6s %7s %12s %7s %8s %s\n' "$h" "$secs" "${execs:--}" \
        "${speed:--}" "${cov:--}" "${ft:--}" "${corp:--}" "${rss:--}" "$crashes" "$result" \
        >"$work/$h.line"
    return "$rc"
}

mkdir -p "$work"
failed=()
running=0
for h in "${harnesses[@]}"; do
    rm -f "$work/$h.line"
    echo "=== fuzz_$h: $duration s"
    run_one "$h" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

summary=$work/summary.txt
printf '%-12s %8s %12s %9s %6s %7s %12s %7s %8s %s\n' harness seconds executions exec/s cov ft \
    corpus rss_mb crashes result >"$summary"
for h in "${harnesses[@]}"; do
    if [ ! -f "$work/$h.line" ] || grep -q FAILED "$work/$h.line"; then
        failed+=("$h")
        echo "--- fuzz_$h failed; the end of $work/$h.log:"
        tail -n 40 "$work/$h.log" 2>/dev/null || true
        find "$work/artifacts/$h" -type f 2>/dev/null | sed 's/^/  input: /'
    fi
    cat "$work/$h.line" >>"$summary" 2>/dev/null || echo "$h (no result)" >>"$summary"
done
cat "$summary"
[ -n "${FB_FUZZ_SUMMARY:-}" ] && cp "$summary" "$FB_FUZZ_SUMMARY"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: ${failed[*]} failed; reproduce with $build/fuzz/fuzz_<name> <input>" >&2
    exit 1
fi
exit 0
