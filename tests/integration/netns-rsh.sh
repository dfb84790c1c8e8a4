#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An rsh/ssh stand-in for tests whose "hosts" are network namespaces on one machine (netns.sh):
# it runs a command inside the namespace that holds HOST, the way ssh would run it on HOST.
# Give it to OpenMPI as the launch agent:
#
#   mpirun --mca plm_rsh_agent /path/to/tests/integration/netns-rsh.sh --host ns1,ns2 ...
#
#   netns-rsh.sh [ssh options ...] HOST COMMAND [ARG ...]
#
# HOST is looked up in the file named by FB_NETNS_MAP (lines "HOST NAMESPACE"; netns.sh's
# netns_rsh_map writes it with the node names nsI and their addresses). Without a match, an IP
# address is looked for among the namespaces' interfaces (fb-* namespaces first). Like ssh, the
# words of the command are joined with spaces and run by sh -c in the namespace, so the command
# line mpirun builds (environment assignments, `;`, quoting) means what it would on a real host;
# standard input, output and the exit status pass through. Leading options (-x, -T, -o KEY=VALUE,
# -p PORT, -l USER ...) are accepted and ignored: there is no remote login here.
# Exit status: the command's, or 255 (as ssh) when HOST is unknown or the namespace cannot be
# entered.
set -u

while [ $# -gt 0 ]; do
    case $1 in
    -o | -p | -l | -i | -F | -E | -b | -c | -J | -m | -S | -W | -w | -Q | -e | -L | -R | -D)
        shift 2 ;;
    -o* | -p* | -l* | -i* | -F* | -E* | -b* | -c* | -J* | -m* | -S* | -W* | -w* | -Q* | -e* \
        | -L* | -R* | -D*)
        shift ;;
    --)
        shift
        break ;;
    -*)
        shift ;;
    *)
        break ;;
    esac
done
if [ $# -lt 2 ]; then
    echo "usage: netns-rsh.sh [ssh options] HOST COMMAND [ARG ...]" >&2
    exit 255
fi
host=${1#*@}
shift

ns=
if [ -n "${FB_NETNS_MAP:-}" ] && [ -r "$FB_NETNS_MAP" ]; then
    ns=$(awk -v h="$host" '$1 == h { print $2; exit }' "$FB_NETNS_MAP")
fi
if [ -z "$ns" ]; then
    for cand in $(ip netns list 2>/dev/null | awk '{print $1}' | sort -r); do
        if ip -n "$cand" -o addr show 2>/dev/null | awk '{print $4}' | grep -qx "$host/[0-9]*"; then
            ns=$cand
            case $cand in fb-*) break ;; esac
        fi
    done
fi
if [ -z "$ns" ]; then
    echo "netns-rsh.sh: no network namespace for host '$host'" \
        "(FB_NETNS_MAP=${FB_NETNS_MAP:-unset})" >&2
    exit 255
fi
# Every "host" has its own temporary directory, as separate machines would: Open MPI's daemons
# create their session directories under TMPDIR, and daemons of several namespaces racing on the
# same /tmp/ompi.* path fail with "File exists".
tmp="${TMPDIR:-/tmp}/fb-netns-tmp-$ns"
mkdir -p "$tmp"
exec ip netns exec "$ns" env TMPDIR="$tmp" sh -c "$*"
