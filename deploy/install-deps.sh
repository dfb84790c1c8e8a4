#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what fleetburn needs to build and test on Debian/Ubuntu. Idempotent: packages already
# present are not reinstalled, and nothing is downloaded when everything is there.
# GPU toolkits (CUDA, ROCm) are optional and not installed here; OpenMPI is, because allreduce's
# host path runs on every fleet and in CI, and so are the verbs headers, because rdmabw is built
# against them (libibverbs itself is loaded at run time, so nodes without it still run workers).
set -euo pipefail

packages=(
    build-essential cmake pkg-config
    libzmq3-dev libprotobuf-c-dev protobuf-c-compiler libuv1-dev libsqlite3-dev libyaml-dev
    libcmocka-dev
    # the coordinator's webhook alerts (optional: without it a webhook campaign is refused)
    libcurl4-openssl-dev
    python3 iproute2
    # allreduce, launcher mpirun: OpenMPI's mpirun and the host path's rank program
    libopenmpi-dev openmpi-bin
    # rdmabw: verbs headers (build time only)
    libibverbs-dev
    # test oracles and peers for benchmarks
    python3-clustershell memtester
    # libFuzzer harnesses (tests/fuzz): clang and its sanitizer and fuzzer runtimes
    clang libclang-rt-dev
    # Slurm drain, resume and nodes: slurm:... (tests/integration/test_slurm_actions.sh starts its
    # own munged, slurmctld and slurmd; the packages' own services are not used)
    munge slurmctld slurmd slurm-client
    # the daemons' systemd notification (optional at build time); the .deb's dependencies
    # (dpkg-shlibdeps); systemd-analyze, which checks the units
    libsystemd-dev dpkg-dev systemd
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "fleetburn: all build dependencies are installed"
    exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "fleetburn: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
