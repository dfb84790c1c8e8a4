#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# memtest's verified bandwidth as a share of a STREAM-like bound on the same machine: the triad
# (a[i] = b[i] + s*c[i]) of fleetburn-bench-memstream, run by the same threads on the same CPUs
# with the same memory placement as memtest (workloads/memtest/placement.c), then memtest itself
# with all patterns and with the one-write-one-read pattern `random`, on the same total size.
# Prints the machine, the placement, every figure and the shares; bench/results/
# memtest-vs-stream-<date>.txt holds a run.
#
#   bench/memtest_vs_stream.sh [SIZE] [STREAM_SIZE]    # defaults 4GiB and 12GiB
#
# SIZE is what memtest tests and what the triad's three arrays take together in the like-for-like
# run; STREAM_SIZE is the triad run that sets the bound (STREAM's rule: arrays far beyond the
# last-level cache). FB_BIN: the directory holding fleetburn-worker and fleetburn-bench-memstream (default
# build/bin). Run as root, or with RLIMIT_MEMLOCK above SIZE, so that both lock their memory.
set -euo pipefail

size=${1:-4GiB}
stream_size=${2:-12GiB}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${FB_BIN:-$here/build/bin}
worker=$bin/fleetburn-worker
stream=$bin/fleetburn-bench-memstream
for p in "$worker" "$stream"; do
    [[ -x $p ]] || { echo "not executable: $p (build, or set FB_BIN)" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "command: bench/memtest_vs_stream.sh $size $stream_size"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "kernel: $(uname -r)"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1); $(nproc) CPUs usable;" \
    "$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l) NUMA node(s);" \
    "L3 $(lscpu | sed -n 's/^L3 cache: *//p' | head -1)"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB total", $2/1048576} /MemAvailable/ {printf ", %.1f GiB available", $2/1048576}' /proc/meminfo)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# The triad: like for like (SIZE), then with arrays far beyond the cache (STREAM_SIZE).
for s in "$size" "$stream_size"; do
    echo "## triad, $s in all ($stream --size $s --reps 20)"
    "$stream" --size "$s" --reps 20 | tee "$tmp/stream.$s"
    echo
done

# memtest: the worker as the agent runs it, threads=auto (one per usable CPU).
run_memtest() { # label patterns
    echo "## memtest, $2 ($worker --workload memtest size=$size passes=1 threads=auto patterns=$2 seed=1)"
    "$worker" --workload memtest --task-id bench --result "$tmp/result.pb" size="$size" passes=1 \
        threads=auto patterns="$2" seed=1 >"$tmp/log.$1" 2>&1 || true
    grep -E 'memtest: [0-9.]+ (GiB|MiB)|miscompares,' "$tmp/log.$1" | sed 's/^log //'
    if ! grep -q "memtest: 0 miscompares" "$tmp/log.$1"; then
        echo "memtest did not pass:" >&2
        cat "$tmp/log.$1" >&2
        exit 1
    fi
    echo
}
run_memtest all all
run_memtest random random

mbs() { sed -n 's/.*miscompares, \([0-9]*\) MB\/s.*/\1/p' "$tmp/log.$1" | tail -1; }
bound() { sed -n 's/^memstream: bound \([0-9]*\) MB\/s.*/\1/p' "$tmp/stream.$1"; }
b_like=$(bound "$size")
b=$(bound "$stream_size")
echo "## summary (MB/s = 10^6 bytes/s)"
echo "triad bound (arrays of $stream_size, far beyond the LLC): $b MB/s; like for like ($size): $b_like MB/s"
for p in all random; do
    m=$(mbs "$p")
    awk -v p="$p" -v m="$m" -v b="$b" -v l="$b_like" \
        'BEGIN { printf "memtest patterns=%-6s verified %6.0f MB/s = %.1f%% of the triad bound (%.1f%% of the %s triad)\n", p, m, 100 * m / b, 100 * m / l, "like-for-like" }'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
