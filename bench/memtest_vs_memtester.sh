#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares fleetburn's memtest with memtester on the same amount of memory: memtester for one
# loop, then the fleetburn worker with memtester's pattern set on one thread (like for like) and
# on every CPU (how fleetburn runs), then all fleetburn patterns on every CPU. Prints wall and CPU
# times and effective bandwidth (buffer sweeps x size / wall time, the same formula for both).
#
#   bench/memtest_vs_memtester.sh MEMTESTER_PATH [SIZE]     SIZE as memtester takes it (256M)
#
# REPEAT=N runs every configuration N times, interleaved, and reports the fastest run of each
# (shared machines are noisy; the minimum is the least disturbed run). FB_WORKER overrides the
# worker binary (default: build/bin/fleetburn-worker or build/workloads/fleetburn-worker). Run as
# root, or with a RLIMIT_MEMLOCK above SIZE, so that both tools lock their memory.
set -euo pipefail

memtester=${1:?usage: $0 MEMTESTER_PATH [SIZE]}
size=${2:-256M}
repeat=${REPEAT:-1}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
# Debian installs memtester in /usr/sbin; a bare name is looked up on PATH.
[[ -x $memtester ]] || memtester=$(command -v "$memtester" || true)
[[ -n $memtester && -x $memtester ]] || { echo "memtester not executable: $1" >&2; exit 2; }
find_worker fleetburn-worker "$here/build/bin/fleetburn-worker" "$here/build/workloads/fleetburn-worker"

# Size in bytes: memtester reads B/K/M/G as powers of 1024, and so does fleetburn for K/M/G.
bytes=$(numfmt --from=iec "${size%B}")

# memtester 4.x, one loop: stuck address 16x(write+read), random 2, six compare tests 4 each,
# solid bits 64x2, sequential increment 2, checkerboard 64x2, block sequential 256x2, walking
# zeros and ones 128x2 each, bit spread 128x2, bit flip 512x2, 8-bit and 16-bit writes 4 each.
memtester_sweeps=2628
memtester_set=stuck_address,random,compare_xor,compare_sub,compare_mul,compare_div,compare_or
memtester_set+=,compare_and,solid_bits,sequential_increment,block_sequential,checkerboard
memtester_set+=,bit_spread,bit_flip,walking_ones,walking_zeros
fleetburn_set_sweeps=2620 # the same without the 8-bit and 16-bit write tests
fleetburn_all_sweeps=2715 # every pattern: adds own_address, moving_inversions, block_move

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs a command with its output in $tmp/log; leaves "wall user sys" in $tmp/time.
timed() {
    local TIMEFORMAT='%R %U %S'
    { time "$@" >"$tmp/log" 2>&1; } 2>"$tmp/time"
}

# Keeps the fastest run of configuration $1 in $tmp/best.$1 ("wall user sys own_mbs").
keep_best() {
    local own=${2:-} line
    line="$(cat "$tmp/time") $own"
    if [[ ! -f $tmp/best.$1 ]] ||
        awk -v a="${line%% *}" -v b="$(cut -d' ' -f1 "$tmp/best.$1")" 'BEGIN { exit !(a < b) }'; then
        echo "$line" >"$tmp/best.$1"
    fi
}

run_memtester() {
    if ! timed "$memtester" "$size" 1; then
        echo "memtester failed:" >&2
        tail -20 "$tmp/log" >&2
        exit 1
    fi
    keep_best memtester
}

run_worker() { # config threads patterns
    timed "$worker" --workload memtest --task-id bench --result "$tmp/result.pb" \
        size="$bytes" passes=1 threads="$2" patterns="$3" seed=1
    if ! grep -q "memtest: 0 miscompares" "$tmp/log"; then
        echo "fleetburn memtest did not pass:" >&2
        cat "$tmp/log" >&2
        exit 1
    fi
    keep_best "$1" "$(sed -n 's/.*miscompares, \([0-9]*\) MB\/s.*/\1/p' "$tmp/log" | tail -1)"
}

report() { # label config sweeps
    read -r wall user sys own <"$tmp/best.$2"
    awk -v n="$1" -v s="$3" -v t="$wall" -v u="$user" -v y="$sys" -v b="$bytes" -v own="${own:-}" \
        'BEGIN { printf "%-44s %7.1f s wall %7.1f s cpu %7.0f MB/s effective%s\n", n, t, u + y,
                 s * b / t / 1e6, own == "" ? "" : "  (worker metric " own " MB/s)" }'
}

echo "memtest vs memtester: $size ($bytes bytes), $(nproc) CPUs, $(uname -r), best of $repeat"
echo "memtester: $memtester $(dpkg-query -W -f='${Version}' memtester 2>/dev/null || true)"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < repeat; i++)); do
    run_memtester
    run_worker set1 1 "$memtester_set"
    run_worker setauto auto "$memtester_set"
    run_worker allauto auto all
done
report "memtester $size 1 (1 thread)" memtester "$memtester_sweeps"
report "fleetburn memtest, memtester's set, 1 thread" set1 "$fleetburn_set_sweeps"
report "fleetburn memtest, memtester's set, auto" setauto "$fleetburn_set_sweeps"
report "fleetburn memtest, all patterns, auto" allauto "$fleetburn_all_sweeps"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
