#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# allreduce on the GPUs of one machine, the proof run for the device machine (2x H200 joined by
# NVLink, or one H100): fleetburn's allreduce with launcher native and launcher mpirun over every
# GPU (float sum, MIN..MAX, REPEAT runs of each), through `fleetburn run --local 1` like an
# operator would, then both launchers again with inject_corrupt on the local agent (each must fail
# naming local-0/gpu0), and, when ALL_REDUCE_PERF is given, nccl-tests' all_reduce_perf under
# mpirun before and after, with a busbw table per size and fleetburn/nccl-tests ratios (goal: within
# 3% from 1 MiB up). Without ALL_REDUCE_PERF the table compares with the reference numbers of the
# 2x H200 (issue 4); nccl-tests is peer code that the operator builds (MPI=1), never this project.
#
#   bench/allreduce_gpu_device.sh BUNDLE OUT [ALL_REDUCE_PERF]
#
# BUNDLE comes from deploy/make-bundle.sh over a build with CUDA and MPI (it then holds
# fleetburn-mpirank-cuda); the node's CUDA runtime, NCCL and OpenMPI are used. OUT gets four files:
#   summary.txt         the machine, verdicts, the busbw table, the injection findings
#   report.json         `fleetburn report --format json` of the measured campaign
#   inject-report.json  the same for the injection campaign
#   logs.txt            everything printed: campaign runs, text reports, agent logs, nccl-tests
# Environment: MIN/MAX (1M, 8G), ITERS/WARMUP (20, 5), REPEAT (2), MPIRUN (found on the node).
set -uo pipefail
bundle=${1:?usage: allreduce_gpu_device.sh BUNDLE OUT [ALL_REDUCE_PERF]}
out=${2:?usage: allreduce_gpu_device.sh BUNDLE OUT [ALL_REDUCE_PERF]}
perf=${3:-}
min=${MIN:-1M} max=${MAX:-8G} iters=${ITERS:-20} warmup=${WARMUP:-5} repeat=${REPEAT:-2}
mkdir -p "$out"
bundle=$(cd "$bundle" && pwd)
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fb-argpu-XXXXXX")
summary=$out/summary.txt logs=$out/logs.txt
: >"$summary"
: >"$logs"
say() { echo "$*" | tee -a "$summary"; }
section() { printf '\n===== %s\n' "$*" >>"$logs"; }

# NVLink multicast stays off on shared machines; nccl-tests' reference numbers were taken so too.
export NCCL_NVLS_ENABLE=0
# shellcheck disable=SC1091
. "$bundle/env.sh"

# The node's libraries: CUDA runtime and cuBLAS (the GPU worker links them), NCCL, OpenMPI.
libdir() { # first directory holding a file named like $1, from the loader cache or a search
    local p
    p=$(ldconfig -p 2>/dev/null | awk -v n="$1" 'index($1, n) == 1 {print $NF; exit}')
    [ -z "$p" ] && p=$(find / -xdev -name "$1*" -not -path '/proc/*' 2>/dev/null | head -1)
    [ -n "$p" ] && dirname "$p"
}
for lib in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libnccl.so.2 libmpi.so.40; do
    d=$(libdir "$lib")
    if [ -n "$d" ]; then
        case ":$LD_LIBRARY_PATH:" in *":$d:"*) ;; *) export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d" ;; esac
        [ "$lib" = libnccl.so.2 ] && nccl_dir=$d
    else
        say "warning: $lib not found on this node"
    fi
done
[ -n "${nccl_dir:-}" ] && export FLEETBURN_NCCL_LIBRARY="$nccl_dir/libnccl.so.2"
mpirun=${MPIRUN:-$(command -v mpirun || find / -xdev -name mpirun -type f -perm -u+x -not -path '/proc/*' 2>/dev/null | head -1)}
if [ -n "$mpirun" ]; then
    prefix=$(cd "$(dirname "$(readlink -f "$mpirun")")/.." && pwd)
    [ "$prefix" != /usr ] && export OPAL_PREFIX="$prefix" PATH="$prefix/bin:$PATH"
fi
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
# fleetburn's agent takes the same two from its site configuration, never from the campaign.
{
    [ -n "$mpirun" ] && echo "mpirun = $mpirun"
    [ "$(id -u)" -eq 0 ] && echo "mpirun_allow_run_as_root = yes"
    true
} >"$work/agent.conf"
chmod 600 "$work/agent.conf"
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
bytes() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$1"; }

say "== allreduce on $(hostname): $ngpus GPU(s), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv,noheader 2>>"$logs" | tee -a "$summary"
say "NCCL: ${FLEETBURN_NCCL_LIBRARY:-not found} ($(readlink -f "${FLEETBURN_NCCL_LIBRARY:-/dev/null}"))"
say "mpirun: ${mpirun:-not found} ($("${mpirun:-false}" --version 2>/dev/null | head -1))"
for p in fleetburn fleetburn-agent fleetburn-worker-cuda fleetburn-mpirank-cuda; do
    [ -x "$bundle/bin/$p" ] || say "warning: $bundle/bin/$p missing (build with CUDA and MPI, then make-bundle.sh)"
done
section "machine"
{ nvidia-smi; nvidia-smi topo -m; env | grep -E '^(NCCL|FLEETBURN|LD_LIBRARY_PATH|OPAL)' | sort; } >>"$logs" 2>&1

# One campaign: rounds of (mpirun, native); sizes given as bytes.
campaign() { # name min max rounds
    local name=$1 lo=$2 hi=$3 rounds=$4 r l
    echo "name: $name"
    echo "stages:"
    for r in $(seq 1 "$rounds"); do
        for l in mpirun native; do
            cat <<YAML
  - name: $l-$r
    workload: allreduce
    timeout: 10m
    params: {launcher: $l, min_size: $(bytes "$lo"), max_size: $(bytes "$hi"), factor: 2, dtype: float, op: sum, iters: $iters, warmup: $warmup}
YAML
        done
    done
}

run_campaign() { # name yaml db [fleetburn run options]
    local name=$1 yaml=$2 db=$3
    shift 3
    section "fleetburn run $name"
    cat "$yaml" >>"$logs"
    local t0=$SECONDS
    timeout 900 fleetburn run --local 1 --keep-logs --agent-config "$work/agent.conf" --db "$db" "$@" \
        "$yaml" >"$work/$name-run.txt" 2>&1
    local rc=$?
    cat "$work/$name-run.txt" >>"$logs"
    say "fleetburn run $name: exit $rc after $((SECONDS - t0)) s"
    section "fleetburn report $name"
    fleetburn report --db "$db" >>"$logs" 2>&1
    local agent_logs
    agent_logs=$(grep -o '/[^ ]*fleetburn-local-[A-Za-z0-9]*' "$work/$name-run.txt" | head -1)
    if [ -n "$agent_logs" ] && [ -d "$agent_logs" ]; then
        section "agent logs $name ($agent_logs)"
        tail -n 400 "$agent_logs"/*.log >>"$logs" 2>&1
    fi
}

nccl_tests() { # tag
    [ -n "$perf" ] || return 0
    section "all_reduce_perf $1"
    timeout 300 "$mpirun" "${root[@]}" -np "$ngpus" --bind-to none -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
        "$perf" -b "$min" -e "$max" -f 2 -g 1 -n "$iters" -w "$warmup" >"$work/nccl-tests-$1.txt" 2>&1
    say "all_reduce_perf $1: exit $?"
    cat "$work/nccl-tests-$1.txt" >>"$logs"
}

if [ -n "$perf" ] && [ ! -x "$perf" ]; then
    say "warning: ALL_REDUCE_PERF $perf is not executable; comparing with the reference numbers"
    perf=
fi
nccl_tests before
campaign allreduce-gpu "$min" "$max" "$repeat" >"$work/main.yaml"
run_campaign measure "$work/main.yaml" "$work/main.db"
fleetburn report --db "$work/main.db" --format json >"$out/report.json" 2>>"$logs"
nccl_tests after

# Injection: small sizes, both launchers, the agent allowed to inject into allreduce only.
campaign allreduce-gpu-inject 1M 64M 1 >"$work/inject.yaml"
run_campaign inject "$work/inject.yaml" "$work/inject.db" --inject local-0:allreduce.inject_corrupt=true
fleetburn report --db "$work/inject.db" --format json >"$out/inject-report.json" 2>>"$logs"

python3 - "$out/report.json" "$out/inject-report.json" "$work" >>"$summary" <<'PY'
import glob, json, re, sys

def stages(path):
    try:
        d = json.load(open(path))
    except Exception as e:  # a run that broke leaves no report
        print("no report in %s: %s" % (path, e))
        return {}
    res = {}
    for st in d.get("stages", []):
        per, verdicts, errors, findings = {}, [], [], []
        for t in st.get("tasks", []):
            verdicts.append(t.get("verdict"))
            if t.get("error"):
                errors.append(t["error"])
            for k, v in (t.get("metrics") or {}).items():
                m = re.fullmatch(r"allreduce\.(\d+)\.busbw_gbs", k)
                if m:
                    per[int(m.group(1))] = v
            for f in t.get("findings") or []:
                if "allreduce" in f.get("what", ""):
                    findings.append("%s: %s" % (f.get("part"), f.get("what")))
        res[st["name"]] = (per, verdicts, errors, findings)
    return res

def nccl_tests(path):
    ref = {}
    for line in open(path):
        f = line.split()
        # size count type redop root | time algbw busbw #wrong (out-of-place) | in-place ...
        if len(f) >= 9 and f[0].isdigit() and f[2] == "float":
            ref[int(f[0])] = float(f[7])
    return ref

main, inject = stages(sys.argv[1]), stages(sys.argv[2])
print("\n== verdicts")
for name, (per, v, e, f) in list(main.items()) + [("inject " + k, x) for k, x in inject.items()]:
    print("%-18s %s%s" % (name, ",".join(map(str, v)), ("  " + " | ".join(e))[:600] if e else ""))
print("\n== injection: each run must fail with a finding naming local-0/gpu0")
for name, (per, v, e, f) in inject.items():
    ok = v == ["fail"] and any(x.startswith("local-0/gpu0") for x in f)
    print("%-10s %s  %s" % (name, "OK" if ok else "NOT PROVEN", f[0][:300] if f else "(no finding)"))

refs = {}
for path in sorted(glob.glob(sys.argv[3] + "/nccl-tests-*.txt")):
    t = nccl_tests(path)
    if t:
        refs[path.rsplit("-", 1)[1][:-4]] = t
if refs:
    ref = {s: max(r.get(s, 0) for r in refs.values()) for s in set().union(*refs.values())}
    label = "nccl-tests best of %s" % "/".join(refs)
else:  # issue 4: all_reduce_perf float sum on the 2x H200, busbw range
    ref = {1 << 20: 71.0, 1 << 30: 329.0, 8 << 30: 348.0}
    label = "reference 2xH200 (top of range)"
    print("\n(no ALL_REDUCE_PERF: compared with all_reduce_perf's busbw on the 2x H200 from issue 4:"
          " 59-71 GB/s at 1 MiB, 327-329 at 1 GiB, 346-348 at 8 GiB)")
runs = sorted(n for n in main if n.split("-")[0] in ("native", "mpirun"))
for launcher in ("mpirun", "native"):
    best = {}
    for n in runs:
        if n.startswith(launcher):
            for s, v in main[n][0].items():
                best[s] = max(best.get(s, 0), v)
    main[launcher + " best"] = (best, [], [], [])
cols = runs + ["mpirun best", "native best"]
print("\n== busbw GB/s (out-of-place), ratio = fleetburn best / %s" % label)
print("%12s %10s" % ("bytes", "ref") + "".join(" %12s" % c for c in cols) + "  mpirun/ref native/ref")
sizes = sorted(set(ref) | set().union(*(set(main[c][0]) for c in cols)))
worst = {}
for s in sizes:
    row = "%12d %10s" % (s, "%.2f" % ref[s] if s in ref else "-")
    for c in cols:
        v = main[c][0].get(s)
        row += " %12s" % ("%.2f" % v if v is not None else "-")
    for launcher in ("mpirun", "native"):
        v = main[launcher + " best"][0].get(s)
        if v is not None and ref.get(s):
            r = v / ref[s]
            row += " %10.3f" % r
            if s >= 1 << 20:
                worst[launcher] = min(worst.get(launcher, 9.0), r)
        else:
            row += " %10s" % "-"
    print(row)
for launcher in ("mpirun", "native"):
    if launcher in worst:
        print("%s: worst ratio from 1 MiB up %.3f (goal >= 0.97)" % (launcher, worst[launcher]))
PY
rm -rf "$work"
echo "== outputs: $(ls "$out" | tr '\n' ' ')"
cat "$summary"
