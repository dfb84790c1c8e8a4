#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares fleetburn's p2p workload with the peer tools users run for GPU-to-GPU bandwidth: NVIDIA's
# nvbandwidth or the CUDA sample p2pBandwidthLatencyTest (given by path; fleetburn neither builds
# nor ships them). Runs the peer tool, then the fleetburn CUDA worker's p2p on the same GPUs, and
# prints both: the peer's own output, fleetburn's matrices, and a side-by-side line per pair for
# unidirectional and bidirectional copy-engine bandwidth.
#
#   bench/p2p_vs_nvbandwidth.sh NVBANDWIDTH_OR_P2PBW_BINARY [SIZE] [ITERS]
#
# SIZE (default 256MiB) and ITERS (default 20) go to fleetburn p2p. The peer tool runs with its own
# defaults unless PEER_ARGS is set (nvbandwidth options changed between releases: -b is MiB in new
# ones, --bufferSize bytes in old ones). FB_WORKER overrides the worker (default
# build-p2p/bin/fleetburn-worker-cuda, then build/bin/fleetburn-worker-cuda). RESULTS=FILE also
# writes everything printed to FILE.
#
# Units and meaning differ, so read the side-by-side line with care:
#   - all three report GB/s = 1e9 bytes/s;
#   - fleetburn ce_uni is a copy-engine write (gpuMemcpyPeerAsync on the source GPU's stream), like
#     nvbandwidth device_to_device_memcpy_write_ce and p2pBandwidthLatencyTest's unidirectional
#     P2P=Enabled matrix;
#   - fleetburn ce_bidi is the SUM of both directions (2 x size / time), like
#     p2pBandwidthLatencyTest's bidirectional matrix; nvbandwidth's CE bidirectional tests report
#     the bandwidth of ONE direction under opposite traffic, so the script doubles it for the
#     side-by-side line;
#   - fleetburn verifies every transfer it times; the peer tools do not.
set -euo pipefail

peer=${1:?usage: $0 NVBANDWIDTH_OR_P2PBW_BINARY [SIZE] [ITERS]}
size=${2:-256MiB}
iters=${3:-20}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
[[ -x $peer ]] || peer=$(command -v "$peer" || true)
[[ -n $peer && -x $peer ]] || { echo "peer tool not executable: $1" >&2; exit 2; }
find_worker fleetburn-worker-cuda "$here/build-p2p/bin/fleetburn-worker-cuda" "$here/build/bin/fleetburn-worker-cuda"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n ${RESULTS:-} ]]; then
    exec > >(tee "$RESULTS") 2>&1
fi

echo "== p2p vs $(basename "$peer") on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader || true
    nvidia-smi topo -m || true
fi

# ---- the peer tool ---------------------------------------------------------------------------
peer_kind=p2pbw
case $(basename "$peer") in
*nvbandwidth*) peer_kind=nvbandwidth ;;
esac
echo
echo "== $peer ${PEER_ARGS:-}"
if [[ $peer_kind == nvbandwidth ]]; then
    # One test case per run, so that a test the machine cannot do does not stop the others.
    for t in device_to_device_memcpy_write_ce device_to_device_bidirectional_memcpy_write_ce \
        device_to_device_memcpy_write_sm device_to_device_memcpy_read_ce \
        host_to_device_memcpy_ce device_to_host_memcpy_ce device_to_device_latency_sm; do
        # shellcheck disable=SC2086
        "$peer" ${PEER_ARGS:-} -t "$t" >"$tmp/nvbw.$t" 2>&1 || echo "($t failed or not supported)" >>"$tmp/nvbw.$t"
        cat "$tmp/nvbw.$t"
    done
else
    # shellcheck disable=SC2086
    "$peer" ${PEER_ARGS:-} >"$tmp/peer.txt" 2>&1 || echo "(peer exited with $?)" >>"$tmp/peer.txt"
    cat "$tmp/peer.txt"
fi

# ---- fleetburn ---------------------------------------------------------------------------------
echo
echo "== $worker --workload p2p size=$size iters=$iters"
start=$(date +%s.%N)
"$worker" --workload p2p --task-id bench --result "$tmp/result.pb" size="$size" iters="$iters" \
    >"$tmp/fleetburn.txt" 2>&1 || echo "(fleetburn worker exited with $?)" >>"$tmp/fleetburn.txt"
end=$(date +%s.%N)
grep -v '^progress ' "$tmp/fleetburn.txt" || true
awk -v a="$start" -v b="$end" 'BEGIN { printf "fleetburn p2p wall time %.1f s\n", b - a }'

# ---- side by side ------------------------------------------------------------------------------
# Cell (row, column) of the first matrix after a line matching title in a peer output file.
# Matrices are printed as a header of column indices, then "row v v v" lines.
peer_cell() { # file title-regex row col
    awk -v re="$2" -v r="$3" -v c="$4" '
        found == 0 && $0 ~ re { found = 1; next }
        found == 1 && hdr == 0 && NF > 1 && ($1 ~ /^[0-9]+$/ || $1 == "D\\D") {
            off = ($1 ~ /^[0-9]+$/) ? 0 : 1
            hdr = 1; for (i = 1 + off; i <= NF; i++) col[$i] = i + 1 - off; next }
        found == 1 && hdr == 1 && $1 == r { v = $(col[c]); print (v == "N/A" ? "" : v); exit }
        found == 1 && hdr == 1 && $1 !~ /^[0-9]+$/ { exit }' "$1"
}
# A fleetburn metric from the table lines of the log: row gpuI, column gpuJ of the table titled.
fb_cell() { # title-prefix i j
    awk -v t="log $1" -v i="gpu$2" -v j="gpu$3" '
        index($0, t) == 1 { found = 1; next }
        found == 1 && hdr == 0 { hdr = 1; for (k = 2; k <= NF; k++) col[$k] = k; next }
        found == 1 && $2 == i { print $(col[j] + 1); exit }' "$tmp/fleetburn.txt"
}

gpus=$(sed -n 's/^log p2p: \([0-9]*\) GPU.*/\1/p' "$tmp/fleetburn.txt" | head -1)
echo
echo "== side by side, GB/s (copy engine, write; bidirectional = both directions summed)"
printf '%-12s %12s %12s %8s %12s %12s %8s\n' pair "fb ce_uni" "peer uni" "fb/peer" "fb ce_bidi" "peer bidi" "fb/peer"
for ((i = 0; i < ${gpus:-0}; i++)); do
    for ((j = 0; j < gpus; j++)); do
        ((i == j)) && continue
        fu=$(fb_cell "p2p.ce_uni" "$i" "$j")
        if ((i < j)); then fb_=$(fb_cell "p2p.ce_bidi" "$i" "$j"); else fb_=$(fb_cell "p2p.ce_bidi" "$j" "$i"); fi
        if [[ $peer_kind == nvbandwidth ]]; then
            pu=$(peer_cell "$tmp/nvbw.device_to_device_memcpy_write_ce" 'GB/s' "$i" "$j")
            pb=$(peer_cell "$tmp/nvbw.device_to_device_bidirectional_memcpy_write_ce" 'GB/s' "$i" "$j")
            [[ -n $pb ]] && pb=$(awk -v v="$pb" 'BEGIN { printf "%.2f", 2 * v }')
        else
            pu=$(peer_cell "$tmp/peer.txt" 'Unidirectional P2P=Enabled' "$i" "$j")
            pb=$(peer_cell "$tmp/peer.txt" 'Bidirectional P2P=Enabled' "$i" "$j")
        fi
        awk -v p="gpu$i->gpu$j" -v fu="$fu" -v pu="$pu" -v fb="$fb_" -v pb="$pb" 'BEGIN {
            r1 = (fu != "" && fu != "-" && pu + 0 > 0) ? sprintf("%7.1f%%", 100 * fu / pu) : "      -";
            r2 = (fb != "" && fb != "-" && pb + 0 > 0) ? sprintf("%7.1f%%", 100 * fb / pb) : "      -";
            printf "%-12s %12s %12s %8s %12s %12s %8s\n", p, fu == "" ? "-" : fu, pu == "" ? "-" : pu, r1,
                fb == "" ? "-" : fb, pb == "" ? "-" : pb, r2 }'
    done
done
grep '^log p2p \(pass\|fail\|error\)' "$tmp/fleetburn.txt" || true
