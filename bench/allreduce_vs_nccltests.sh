#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares fleetburn's allreduce with nccl-tests' all_reduce_perf on the GPUs of this machine, one
# process per GPU: all_reduce_perf driven by mpirun the way operators run it, then fleetburn's
# allreduce through `fleetburn run --local 1` with launcher mpirun and with launcher native, and a
# table of busbw per size with fleetburn / nccl-tests ratios (the goal: within 3% from 1 MiB up).
#
#   bench/allreduce_vs_nccltests.sh BUNDLE_OR_BUILD ALL_REDUCE_PERF [OUT_DIR]
#
# BUNDLE_OR_BUILD: a bundle (deploy/make-bundle.sh; its env.sh is sourced) or a build directory
# (its bin/ goes first in PATH). ALL_REDUCE_PERF: nccl-tests built with MPI=1. OUT_DIR (default a
# temporary directory, printed) keeps every output. Environment: NGPUS (default: every GPU
# nvidia-smi lists), MIN/MAX (1M, 8G), ITERS/WARMUP (20, 5), both tools get the same; MPIRUN
# (mpirun). NCCL_NVLS_ENABLE=0 for both, as the reference numbers were taken that way.
# busbw is nccl-tests' out-of-place figure; fleetburn reports out-of-place collectives.
set -euo pipefail

src=${1:?usage: $0 BUNDLE_OR_BUILD ALL_REDUCE_PERF [OUT_DIR]}
perf=${2:?usage: $0 BUNDLE_OR_BUILD ALL_REDUCE_PERF [OUT_DIR]}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/fb-allreduce-bench-XXXXXX")}
mkdir -p "$out"
if [[ -f $src/env.sh ]]; then
    # shellcheck disable=SC1091
    . "$src/env.sh"
elif [[ -x $src/bin/fleetburn ]]; then
    export PATH="$(cd "$src/bin" && pwd):$PATH"
else
    echo "$src is neither a bundle (env.sh) nor a build directory (bin/fleetburn)" >&2
    exit 2
fi
[[ -x $perf ]] || { echo "all_reduce_perf not executable: $perf" >&2; exit 2; }
command -v fleetburn >/dev/null || { echo "fleetburn not found in $src" >&2; exit 2; }
mpirun=${MPIRUN:-mpirun}
ngpus=${NGPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
[[ $ngpus -ge 1 ]] || { echo "no GPUs found (set NGPUS)" >&2; exit 2; }
min=${MIN:-1M} max=${MAX:-8G} iters=${ITERS:-20} warmup=${WARMUP:-5}
export NCCL_NVLS_ENABLE=0
root=()
[[ $(id -u) -eq 0 ]] && root=(--allow-run-as-root)

# fleetburn's sizes in bytes, from nccl-tests' size syntax.
bytes() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$1"; }

exec > >(tee "$out/summary.txt") 2>&1
echo "== allreduce vs all_reduce_perf on $(hostname), $ngpus GPU(s), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader 2>/dev/null || true
"$mpirun" --version 2>/dev/null | head -1 || true

echo "== $mpirun -np $ngpus $perf -b $min -e $max -f 2 -g 1 -n $iters -w $warmup"
"$mpirun" "${root[@]}" -np "$ngpus" --bind-to none -x NCCL_NVLS_ENABLE "$perf" \
    -b "$min" -e "$max" -f 2 -g 1 -n "$iters" -w "$warmup" >"$out/nccl-tests.txt" 2>&1 ||
    { cat "$out/nccl-tests.txt"; echo "all_reduce_perf failed" >&2; exit 1; }
grep -E "^#|^ +[0-9]" "$out/nccl-tests.txt" | head -60

cat >"$out/campaign.yaml" <<YAML
name: allreduce-vs-nccl-tests
stages:
  - name: mpirun
    workload: allreduce
    timeout: 30m
    params: {launcher: mpirun, min_size: $(bytes "$min"), max_size: $(bytes "$max"), factor: 2,
             iters: $iters, warmup: $warmup}
  - name: native
    workload: allreduce
    timeout: 30m
    params: {launcher: native, min_size: $(bytes "$min"), max_size: $(bytes "$max"), factor: 2,
             iters: $iters, warmup: $warmup}
YAML
echo "== fleetburn run --local 1 (launcher mpirun, then launcher native)"
fleetburn run --local 1 --db "$out/fb.db" "$out/campaign.yaml" >"$out/fleetburn-run.txt" 2>&1 ||
    echo "fleetburn run exited $? (see $out/fleetburn-run.txt)"
fleetburn report --db "$out/fb.db" --format json >"$out/fleetburn-report.json"
fleetburn report --db "$out/fb.db" >"$out/fleetburn-report.txt" 2>&1 || true

python3 - "$out/nccl-tests.txt" "$out/fleetburn-report.json" <<'PY'
import json, re, sys
ref = {}
for line in open(sys.argv[1]):
    f = line.split()
    # size count type redop root | time algbw busbw #wrong (out-of-place) | in-place ...
    if len(f) >= 9 and f[0].isdigit() and f[2] in ("float", "half", "bfloat16", "double", "int32"):
        ref[int(f[0])] = float(f[7])
d = json.load(open(sys.argv[2]))
fb = {}
for stage in d["stages"]:
    per = {}
    for t in stage["tasks"]:
        for k, v in t.get("metrics", {}).items():
            m = re.fullmatch(r"allreduce\.(\d+)\.busbw_gbs", k)
            if m:
                per[int(m.group(1))] = v
    fb[stage["name"]] = (per, [t["verdict"] for t in stage["tasks"]], [t.get("error") for t in stage["tasks"]])
names = [n for n in ("mpirun", "native") if n in fb]
for n in names:
    print("fleetburn %s: %s%s" % (n, ",".join(fb[n][1]), "" if fb[n][1] == ["pass"] else "  " + str(fb[n][2])))
print("%14s %12s" % ("size (B)", "nccl-tests") + "".join(" %12s %7s" % ("fb " + n, "ratio") for n in names))
worst = {}
for size in sorted(ref):
    row = "%14d %12.2f" % (size, ref[size])
    for n in names:
        v = fb[n][0].get(size)
        if v is None:
            row += " %12s %7s" % ("-", "-")
            continue
        r = v / ref[size] if ref[size] else float("nan")
        row += " %12.2f %7.3f" % (v, r)
        if size >= 1 << 20:
            worst[n] = min(worst.get(n, 9), r)
    print(row)
for n in names:
    if n in worst:
        print("fleetburn %s / nccl-tests, worst ratio from 1 MiB up: %.3f (goal >= 0.97)" % (n, worst[n]))
PY
echo "== outputs in $out"
