#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes a relocatable fleetburn bundle: BUNDLE/bin holds the programs, BUNDLE/lib the shared
# libraries they need beyond glibc and the GPU driver/toolkit (ZeroMQ and its dependencies, libuv,
# protobuf-c, SQLite, libyaml), and BUNDLE/env.sh sets LD_LIBRARY_PATH. For nodes where those
# libraries are not installed (containers, images without ZeroMQ).
#   deploy/make-bundle.sh BUILD_DIR BUNDLE_DIR
set -euo pipefail
build=${1:?usage: make-bundle.sh BUILD_DIR BUNDLE_DIR}
out=${2:?usage: make-bundle.sh BUILD_DIR BUNDLE_DIR}
mkdir -p "$out/bin" "$out/lib"
for p in fleetburn fleetburn-agent fleetburn-worker fleetburn-worker-cuda fleetburn-worker-hip \
    fleetburn-mpirank fleetburn-mpirank-cuda fleetburn-mpirank-hip; do
    [ -x "$build/bin/$p" ] && cp "$build/bin/$p" "$out/bin/"
done
# glibc, the C++ runtime and vendor GPU libraries come from the node itself; so does MPI, whose
# library must match the node's mpirun and its plugins (the rank programs link libmpi.so.40).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libresolv\.|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libnvidia|libamdhip|librocm|libhsa|libmpi|libopen-(rte|pal)|libhwloc|libevent|libpmix|libuc[pstm]|libfabric|libpsm)'
for p in "$out"/bin/*; do
    ldd "$p" | awk '/=> \//{print $1, $3}' | while read -r name path; do
        [[ $name =~ $skip ]] && continue
        cp -L "$path" "$out/lib/$name"
    done
done
cat >"$out/env.sh" <<'SH'
# Source this: puts the bundle's programs and libraries first.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$here/bin:$PATH" LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SH
echo "bundle in $out: $(ls "$out/bin" | tr '\n' ' ')"
