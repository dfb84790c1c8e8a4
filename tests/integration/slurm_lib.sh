# SPDX-License-Identifier: Apache-2.0
# A real Slurm cluster in $WORK for tests (sourced after lib.sh): munged with a fresh key,
# slurmctld and one slurmd per node, all in the foreground as root, on free ports, with their
# sockets, state and logs under $WORK/slurm. They are in PIDS, so lib.sh's cleanup stops them
# on every exit path. Clients find the cluster through SLURM_CONF, which slurm_start exports.
#
#   slurm_require                      exit 77 (skip) unless root and the programs are there
#   slurm_start CONF_LINES SLURMD...   writes slurm.conf (the common settings, then CONF_LINES:
#                                      NodeName= and PartitionName= lines, where @PORT@ in a
#                                      NodeName line becomes a free port), starts munged,
#                                      slurmctld, and slurmd for each named node; waits until
#                                      those nodes are idle; SLURMCTLD_PID is slurmctld's
#   slurm_state NODE                   sinfo's state of NODE (idle, drained, ...)
#   slurm_reason NODE                  its reason ("none" when none)

SLURM_PROGRAMS=(munged slurmctld slurmd sinfo scontrol)

slurm_require() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: slurmctld, slurmd and munged are started as root by this test; run it as root"
        exit 77
    fi
    local p
    for p in "${SLURM_PROGRAMS[@]}"; do
        if ! command -v "$p" >/dev/null; then
            echo "SKIP: $p is not installed (deploy/install-deps.sh installs munge, slurmctld, slurmd, slurm-client)"
            exit 77
        fi
    done
}

# Waits up to $2 seconds (default 20) for a command to succeed.
slurm_wait() {
    local what=$1 limit=${2:-20} i=0
    until eval "$what" >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt $((limit * 10)) ] && fail "timed out waiting for: $what"
        sleep 0.1
    done
}

slurm_state() { sinfo --noheader --Node --nodes="$1" --format=%T | head -n 1; }
slurm_reason() { sinfo --noheader --Node --nodes="$1" --format=%E | head -n 1; }

slurm_start() {
    local lines=$1; shift
    SLURM_DIR="$WORK/slurm"
    mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/state" "$SLURM_DIR/spool"
    chmod 700 "$SLURM_DIR/munge"
    dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 600 "$SLURM_DIR/munge/munge.key"
    munged --foreground --force --socket="$SLURM_DIR/munge/munge.sock" \
        --key-file="$SLURM_DIR/munge/munge.key" --pid-file="$SLURM_DIR/munge/munged.pid" \
        --log-file="$WORK/munged.log" --seed-file="$SLURM_DIR/munge/munged.seed" \
        >>"$WORK/munged.out" 2>&1 &
    PIDS+=("$!")
    slurm_wait "[ -S '$SLURM_DIR/munge/munge.sock' ]"
    while [[ $lines == *@PORT@* ]]; do lines=${lines/@PORT@/$(free_port)}; done
    cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=fbtest
SlurmctldHost=localhost
SlurmctldPort=$(free_port)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmdPidFile=$SLURM_DIR/spool/slurmd-%n.pid
SlurmdLogFile=$WORK/slurmd-%n.log
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmctldLogFile=$WORK/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
MailProg=/bin/true
ReturnToService=1
SlurmdTimeout=0
$lines
EOF
    export SLURM_CONF="$SLURM_DIR/slurm.conf"
    slurmctld -D -i -f "$SLURM_CONF" >>"$WORK/slurmctld.out" 2>&1 &
    SLURMCTLD_PID=$!
    PIDS+=("$SLURMCTLD_PID")
    slurm_wait "sinfo --noheader"
    local node
    for node in "$@"; do
        mkdir -p "$SLURM_DIR/spool/$node"
        slurmd -D -N "$node" -f "$SLURM_CONF" >>"$WORK/slurmd-$node.out" 2>&1 &
        PIDS+=("$!")
    done
    for node in "$@"; do
        slurm_wait "[ \"\$(slurm_state $node)\" = idle ]" 30
    done
}
