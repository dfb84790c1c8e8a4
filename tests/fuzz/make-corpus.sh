#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rewrites the seed corpora in tests/fuzz/corpus/<harness>/ from committed inputs: the fixtures
# (tests/fixtures), the example campaigns (deploy/campaigns), a few hand-written values, and the
# binary seeds that fb-fuzz-seeds makes with the project's own encoders. Seeds that crashed a
# decoder once (tests/fuzz/corpus/*/crash-*, kept as regression inputs) are left alone.
#
#   tests/fuzz/make-corpus.sh [BUILD_DIR]    # BUILD_DIR: an FB_FUZZ=ON build (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-fuzz}
corpus=tests/fuzz/corpus
fix=tests/fixtures

cmake --build "$build" --target fb-fuzz-seeds >/dev/null
for h in wire result spool exline peer keys campaign hostlist topology routes kmsg faultmodel edac inventory units dimmdecode; do
    mkdir -p "$corpus/$h"
    find "$corpus/$h" -type f ! -name 'crash-*' -delete
done

"$build/fuzz/fb-fuzz-seeds" "$corpus"

# Campaign files: the fixtures (good and bad) and the examples.
for f in "$fix"/campaigns/*.yaml deploy/campaigns/*.yaml; do
    cp "$f" "$corpus/campaign/$(basename "$(dirname "$f")")-$(basename "$f")"
done

# A campaign with the topology file it names, as a Submit carries them (fuzz_campaign: the
# campaign, a NUL, the file).
{
    printf 'name: rack\nnodes: node[01-16]\nstages:\n  - name: net\n    workload: netbw\n'
    printf '    scope: pairs\n    pairing: topology\n    topology: fabric.topo\n\0'
    cat "$fix/topology/fabric-2s4l16n.topo"
} >"$corpus/campaign/submit-with-topology"
{
    printf 'name: rack\nstages:\n  - {name: net, workload: rdmabw, scope: pairs, pairing: topology,\n'
    printf '     topology: ib.txt, on_fail: bisect, rails: "mlx5_[0-1]"}\n\0'
    cat "$fix/topology/fabric-2s4l16n.ibnetdiscover"
} >"$corpus/campaign/submit-with-ibnetdiscover"

{
    printf 'name: rack\nstages:\n  - {name: net, workload: rdmabw, scope: pairs, pairing: topology,\n'
    printf '     topology: fabric.topo, routes: fabric.routes, on_fail: bisect}\n\0'
    cat "$fix/topology/fabric-2s4l16n.topo"
    printf '\0'
    cat "$fix/routes/fabric-2s4l16n.routes"
} >"$corpus/campaign/submit-with-routes"

# Fault files: the example, the simulator tests' forms, and the keys one by one.
cp deploy/campaigns/sim-faults.yaml "$corpus/faultmodel/sim-faults.yaml"
printf 'seed: 7\nfalse_fail_rate: 0\nfaults:\n  - {node: node05, kind: hard}\n' >"$corpus/faultmodel/node-hard.yaml"
printf 'faults:\n  - {link: leaf02<->spine01, kind: hard}\n' >"$corpus/faultmodel/link-hard.yaml"
printf 'rails: 2\nfaults:\n  - {nic: node03/1, kind: intermittent, q: 0.25}\n  - {link: node09<->leaf03, kind: slow, factor: 0.4}\n' >"$corpus/faultmodel/nic-link.yaml"
printf 'seed: 1\nfalse_fail_rate: 0.001\nfaults: []\n' >"$corpus/faultmodel/empty.yaml"
printf 'faults:\n  - node: node12\n    kind: slow\n    factor: 0.6\n' >"$corpus/faultmodel/block.yaml"
printf 'lost_rate: 0.002\ndisagree_rate: 0.01\nnoise: {dist: lognormal, sigma: 0.05}\nfaults:\n  - {node: node05, kind: intermittent, q: 0.3, burst: 600}\n  - {node: node05, kind: slow, factor: 0.9}\n  - {node: node07, kind: noisy, sigma: 0.2}\n  - {leaf: leaf03, kind: hard}\n' >"$corpus/faultmodel/messy.yaml"

# Topologies in both formats.
cp "$fix"/topology/* "$corpus/topology/"
printf 'leaf01: a[1-3]\nleaf02: b[1-3]\nspine01: leaf01,leaf02\n' >"$corpus/topology/small.topo"

# Routes: ibnetdiscover output with ibroute or ibdiagnet2.fdbs tables, good and malformed.
cp "$fix"/routes/*.routes "$corpus/routes/"

# Kernel logs: every fixture log, and one record of each kind with its dictionary.
cp "$fix"/kmsg/*.txt "$corpus/kmsg/"
printf '3,1234,5678901,-;NVRM: Xid (PCI:0000:41:00): 79, pid=1234, name=burn, GPU has fallen off the bus.\n SUBSYSTEM=pci\n DEVICE=+pci:0000:41:00.0\n' >"$corpus/kmsg/record-xid"
printf '4,99,100,-;EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x0 offset:0x0 grain:32 syndrome:0x0)\n' >"$corpus/kmsg/record-edac"

# Hostlists.
printf 'node[01-16,20],gpu-a[1-4],login' >"$corpus/hostlist/mixed"
printf 'r[1-2]n[01-04]' >"$corpus/hostlist/product"
printf 'n[0-100/10] n[098-102]' >"$corpus/hostlist/step"
printf 'node01\nnode02\nnode03\nnode05\ngpu-a1\ngpu-a2\nlogin\nn007\nn8\n' >"$corpus/hostlist/names"

# Quantities.
for v in 64MiB 1.5GiB 10GB 80% 1h30m 500ms 90s 4096 0.25 yes walking_ones,random all; do
    printf '%s' "$v" >"$corpus/units/$(printf '%s' "$v" | tr -c 'A-Za-z0-9.' '_')"
done

# File trees (tests/fuzz/fuzz_tree.h): the EDAC fixtures for fuzz_edac, node fixtures for
# fuzz_inventory (with their EDAC parts).
pack_tree() {
    python3 - "$1" <<'PY'
import os, sys
root = sys.argv[1]
out = sys.stdout.buffer
for dirpath, dirnames, filenames in sorted(os.walk(root)):
    dirnames.sort()
    rel = os.path.relpath(dirpath, root)
    if rel != "." and not dirnames and not filenames:
        out.write(b"@" + rel.encode() + b"/\n")
    for name in sorted(dirnames + filenames):
        path = os.path.join(dirpath, name)
        r = os.path.relpath(path, root).encode()
        if os.path.islink(path):
            out.write(b"@" + r + b" -> " + os.readlink(path).encode() + b"\n")
        elif os.path.isfile(path):
            data = open(path, "rb").read()
            if data and not data.endswith(b"\n"):
                data += b"\n"
            out.write(b"@" + r + b"\n" + data)
PY
}
for d in "$fix"/edac/*/; do
    pack_tree "$d" >"$corpus/edac/$(basename "$d")"
done
pack_tree "$fix/sysfs/health-edac" >"$corpus/edac/health-edac"
for n in cpu-node garbage-node gpu-node health-ib rdma-node; do
    pack_tree "$fix/sysfs/$n" >"$corpus/inventory/$n"
done
pack_tree "$fix/edac/dimm" >"$corpus/inventory/edac-dimm"

# DIMM decoders (fuzz_dimmdecode: a selector byte, then the input): the SMBIOS table fixtures (0),
# every EDAC log line of the decoder fixture (1), rasdaemon rows as tab-separated text (2).
for f in "$fix"/smbios/*.dmi; do
    { printf '\0'; cat "$f"; } >"$corpus/dimmdecode/smbios-$(basename "$f" .dmi)"
done
n=0
grep -v '^#' "$fix/edacdecode/lines.txt" | while IFS= read -r line; do
    n=$((n + 1))
    printf '\1%s' "$line" >"$corpus/dimmdecode/edac-line-$n"
done
printf '\2%s\t%s\t%s' '2026-03-01 15:41:13 +0800' Corrected 'CPU_SrcID#0_MC#1_Chan#0_DIMM#0' >"$corpus/dimmdecode/ras-row"
printf '\2%s\t%s\t%s' '2026-02-28 21:11:13 -1030' Deferred 'any memory' >"$corpus/dimmdecode/ras-row-offset"

for h in "$corpus"/*/; do
    echo "$(basename "$h"): $(find "$h" -type f | wc -l) seeds, $(du -sk "$h" | cut -f1) KiB"
done
