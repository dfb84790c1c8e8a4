#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The .deb packages, for real: cpack builds them from this build tree, apt-get installs fleetburn
# and fleetburn-agent on this machine, `fleetburn run --local 2` runs from the installed paths
# (/usr/bin/fleetburn starting /usr/bin/fleetburn-agent, which starts
# /usr/libexec/fleetburn/fleetburn-worker) and passes, GPU stages reach fleetburn-worker-cuda when
# the build made fleetburn-agent-cuda, and apt-get purge leaves nothing behind.
# Skipped (77) when not root, without dpkg-deb, apt-get or cpack, in a sanitizer build, or when
# fleetburn is already installed here (the test would replace it).
. "$(dirname "$0")/lib.sh"

skip() { echo "skip: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "not root: installing packages needs root"
for tool in dpkg-deb dpkg-shlibdeps apt-get cpack; do
    command -v "$tool" >/dev/null || skip "no $tool (Debian: dpkg-dev, apt, cmake)"
done
grep -q "^FB_SANITIZE:BOOL=ON" "$FB_BIN/CMakeCache.txt" && skip "sanitizer builds are not packaged"
for pkg in fleetburn fleetburn-agent fleetburn-agent-cuda; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "installed" &&
        skip "$pkg is installed on this machine; this test would replace it"
done
[ -e /usr/bin/fleetburn ] && skip "/usr/bin/fleetburn exists outside the packages"
etc_before=$([ -e /etc/fleetburn ] && echo yes || echo no)

installed=no
test_cleanup() {
    if [ "$installed" = yes ]; then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -q fleetburn fleetburn-agent \
        fleetburn-agent-cuda >"$WORK/purge.log" 2>&1 || true
    fi
}

mkdir -p "$WORK/pkg"
(cd "$WORK/pkg" && cpack -G DEB --config "$FB_BIN/CPackConfig.cmake" -B "$WORK/pkg") >"$WORK/cpack.log" 2>&1 ||
    fail "cpack: $(tail -20 "$WORK/cpack.log")"
deb() { ls "$WORK/pkg/$1"_*.deb 2>/dev/null | head -1; }
coord_deb=$(deb fleetburn) agent_deb=$(deb fleetburn-agent) cuda_deb=$(deb fleetburn-agent-cuda)
[ -n "$coord_deb" ] && [ -n "$agent_deb" ] || fail "cpack made $(ls "$WORK/pkg")"
depends=$(dpkg-deb -f "$coord_deb" Depends)
for lib in libzmq5 libsqlite3-0 libuv1 libyaml-0-2 libprotobuf-c1; do
    echo "$depends" | grep -q "$lib" || fail "fleetburn does not depend on $lib: $depends"
done
dpkg-deb -f "$agent_deb" Depends >"$WORK/agent.depends"
grep -q libzmq5 "$WORK/agent.depends" || fail "fleetburn-agent's Depends: $(cat "$WORK/agent.depends")"
# (to files first: grep -q ending a pipe early would fail it under pipefail)
dpkg-deb -c "$agent_deb" >"$WORK/agent.files"
dpkg-deb -c "$coord_deb" >"$WORK/coord.files"
grep -q "./usr/libexec/fleetburn/fleetburn-worker$" "$WORK/agent.files" || fail "no worker in fleetburn-agent"
grep -q "./usr/bin/fleetburn$" "$WORK/coord.files" || fail "no /usr/bin/fleetburn in fleetburn"
grep -q "./etc/" "$WORK/agent.files" "$WORK/coord.files" && fail "a package installs into /etc"
pass "cpack: $(basename "$coord_deb") and $(basename "$agent_deb"); Depends: $depends"

# With the CUDA toolkit the build also made fleetburn-agent-cuda: it goes in too.
debs=("./$(basename "$coord_deb")" "./$(basename "$agent_deb")")
[ -n "$cuda_deb" ] && debs+=("./$(basename "$cuda_deb")")
installed=yes
(cd "$WORK/pkg" && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${debs[@]}") \
    >"$WORK/apt.log" 2>&1 || fail "apt-get install: $(tail -20 "$WORK/apt.log")"
for f in /usr/bin/fleetburn /usr/bin/fleetburn-agent /usr/libexec/fleetburn/fleetburn-worker \
    /usr/lib/systemd/system/fleetburn-agent.service /usr/lib/systemd/system/fleetburn-serve.service \
    /usr/share/fleetburn/examples/agent.conf /usr/share/fleetburn/campaigns/local-memtest.yaml \
    /usr/share/doc/fleetburn/copyright /usr/share/doc/fleetburn-agent/copyright; do
    [ -e "$f" ] || fail "$f not installed"
done
version=$(sed -n 's/^project(fleetburn VERSION \([0-9.]*\).*/\1/p' "$FB_SRC/CMakeLists.txt")
/usr/bin/fleetburn --version | grep -q "^fleetburn $version " || fail "installed --version: $(/usr/bin/fleetburn --version)"
pass "apt-get install: programs in /usr/bin and /usr/libexec/fleetburn, units, examples, docs"

# From the installed paths only: a clean environment, a directory of its own.
mkdir -p "$WORK/run"
(cd "$WORK/run" && env -i PATH=/usr/bin:/bin HOME="$WORK/run" TMPDIR="$WORK/run" \
    fleetburn run --local 2 /usr/share/fleetburn/campaigns/local-memtest.yaml) >"$WORK/run.out" 2>&1 ||
    fail "installed fleetburn run --local 2 exited $?: $(tail -20 "$WORK/run.out")"
[ "$(grep -c "memtest  *local-[01]  *pass" "$WORK/run.out")" -eq 2 ] || fail "run: $(cat "$WORK/run.out")"
[ -f "$WORK/run/fleetburn.db" ] || fail "no ./fleetburn.db after the run"
pass "fleetburn run --local 2 from /usr/bin: both local agents passed"

if [ -n "$cuda_deb" ]; then
    # An agent that sees NVIDIA GPUs (a GPU node's sysfs, tests/fixtures) runs gpuburn in
    # /usr/libexec/fleetburn/fleetburn-worker-cuda: without a GPU here it ends in error, but with
    # the CUDA runtime's word, not the plain worker's "built without a worker".
    printf 'name: gpu\nstages:\n  - {name: burn, workload: gpuburn, params: {duration: 1s}}\n' \
        >"$WORK/run/gpu.yaml"
    (cd "$WORK/run" && env -i PATH=/usr/bin:/bin HOME="$WORK/run" TMPDIR="$WORK/run" \
        FLEETBURN_SYSFS_ROOT="$FB_SRC/tests/fixtures/sysfs/gpu-node" \
        fleetburn run --local 1 --db gpu.db gpu.yaml) >"$WORK/gpu.out" 2>&1 || true
    grep -q "burn  *gpuburn  *local-0" "$WORK/gpu.out" || fail "gpu campaign: $(cat "$WORK/gpu.out")"
    grep -q "built without a worker" "$WORK/gpu.out" &&
        fail "the agent did not find /usr/libexec/fleetburn/fleetburn-worker-cuda: $(cat "$WORK/gpu.out")"
    pass "fleetburn-agent-cuda: the agent runs GPU stages in /usr/libexec/fleetburn/fleetburn-worker-cuda"
fi

if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify /usr/lib/systemd/system/fleetburn-agent.service \
        /usr/lib/systemd/system/fleetburn-serve.service >"$WORK/verify.out" 2>&1 ||
        fail "systemd-analyze verify: $(cat "$WORK/verify.out")"
    pass "systemd-analyze verify passes on the installed units"
fi

purge=(fleetburn fleetburn-agent)
[ -n "$cuda_deb" ] && purge+=(fleetburn-agent-cuda)
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${purge[@]}" >"$WORK/purge.log" 2>&1 ||
    fail "apt-get purge: $(tail -20 "$WORK/purge.log")"
installed=no
for f in /usr/bin/fleetburn /usr/bin/fleetburn-agent /usr/libexec/fleetburn /usr/share/fleetburn \
    /usr/share/doc/fleetburn /usr/lib/systemd/system/fleetburn-agent.service; do
    [ -e "$f" ] && fail "$f left after purge"
done
[ "$etc_before" = no ] && [ -e /etc/fleetburn ] && fail "/etc/fleetburn left after purge"
dpkg-query -W fleetburn fleetburn-agent fleetburn-agent-cuda 2>/dev/null | grep -q . &&
    fail "packages still known to dpkg"
pass "apt-get purge removed everything it installed"
