# SPDX-License-Identifier: Apache-2.0
# Shell functions the bench scripts share. Source it from a script in this folder:
#
#   . "$(dirname "$0")/lib.sh"

# Sources BUNDLE/env.sh (deploy/make-bundle.sh: the bundle's bin/ and lib/ first on the paths)
# with NVLink multicast off, as it stays on shared machines. The bundle carries no CUDA runtime
# or cuBLAS (they must match the node's driver), so the folders of the node's libcublasLt.so.13
# and libcudart.so.13 are added to LD_LIBRARY_PATH after the bundle's: from the loader cache, or
# the first file of that name on the root file system.
bundle_gpu_env() { # bundle
    local lib p
    export NCCL_NVLS_ENABLE=0
    # shellcheck disable=SC1091
    . "$1/env.sh"
    for lib in libcublasLt.so.13 libcudart.so.13; do
        p=$(ldconfig -p 2>/dev/null | awk -v n="$lib" '$1 == n {print $NF; exit}')
        [ -z "$p" ] && p=$(find / -xdev -name "$lib*" -not -path '/proc/*' 2>/dev/null | head -1)
        [ -n "$p" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$p")"
    done
}

# Sets worker to the fleetburn worker to measure: $FB_WORKER, else the first executable of
# CANDIDATES (the checkout's build folders). Exits 2 naming WHAT when there is none.
find_worker() { # what candidates...
    local what=$1 candidate
    shift
    worker=${FB_WORKER:-}
    for candidate in "$@"; do
        [[ -z $worker && -x $candidate ]] && worker=$candidate
    done
    [[ -n $worker && -x $worker ]] || { echo "$what not found; build it or set FB_WORKER" >&2; exit 2; }
}

# Sets tmp to the folder the logs go to: $OUT (made if need be) when it is set, to keep them;
# else a temporary folder removed on exit.
logs_dir() {
    if [[ -n ${OUT:-} ]]; then
        mkdir -p "$OUT"
        tmp=$OUT
    else
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
    fi
}
