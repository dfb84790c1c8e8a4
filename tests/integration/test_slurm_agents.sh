#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/slurm/fleetburn-agents.sbatch under a real Slurm (slurmctld, slurmd and munge of Debian's
# slurm-wlm, on private ports and sockets in the test's directory): sbatch starts an agent on the
# allocated node, it registers with the coordinator named in FLEETBURN_COORDINATOR (HOST:PORT), a
# campaign naming the node passes, and scancel stops the agent cleanly (it says goodbye; the
# coordinator marks it gone). Skipped (77) when not root or without slurm-wlm and munge.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "skip: slurmd needs root"; exit 77; }
for tool in slurmctld slurmd sbatch squeue scancel munged; do
    command -v "$tool" >/dev/null || { echo "skip: no $tool (Debian: slurm-wlm, munge)"; exit 77; }
done

host=$(hostname -s)
mkdir -p "$WORK/state" "$WORK/slurmd"
head -c 1024 /dev/urandom >"$WORK/munge.key"
chmod 400 "$WORK/munge.key"
munged --foreground --force --socket="$WORK/munge.sock" --key-file="$WORK/munge.key" \
    --pid-file="$WORK/munged.pid" --log-file="$WORK/munged.log" --seed-file="$WORK/munge.seed" \
    >>"$WORK/munged.log" 2>&1 &
PIDS+=($!)
ctld_port=$(free_port) slurmd_port=$(free_port)
cat >"$WORK/slurm.conf" <<CONF
ClusterName=fbtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$WORK/munge.sock
CredType=cred/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/slurmd
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=burnin Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$WORK/slurm.conf"
for _ in $(seq 1 50); do [ -S "$WORK/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >>"$WORK/slurmctld.log" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >>"$WORK/slurmd.log" 2>&1 &
PIDS+=($!)
for i in $(seq 1 100); do
    sinfo -h -o %T 2>/dev/null | grep -q idle && break
    [ "$i" -eq 100 ] && fail "slurm node not idle: $(sinfo 2>&1)"
    sleep 0.2
done
pass "slurmctld and slurmd up: node $host idle"

start_coordinator
port=${ENDPOINT##*:}
job=$(cd "$WORK" && FLEETBURN_COORDINATOR="127.0.0.1:$port" FLEETBURN_AGENT="$AGENT" \
    sbatch --parsable --chdir="$WORK" "$FB_SRC/deploy/slurm/fleetburn-agents.sbatch" \
    --spool "$WORK/spool") || fail "sbatch: $job"
out="$WORK/fleetburn-agents-$job.out"
wait_for_log "$out" "registered with tcp://127.0.0.1:$port as $host" 30
grep -q "fleetburn-agents: job $job starts an agent on $host" "$out" || fail "job output: $(cat "$out")"
pass "sbatch job $job: an agent on $host registered with the coordinator given as HOST:PORT"

cat >"$WORK/c.yaml" <<YAML
name: slurm-allocation
nodes: $host
stages:
  - {name: s, workload: sleep, params: {duration: 200ms}}
YAML
"$FLEETBURN" run "$WORK/c.yaml" --coordinator "$ENDPOINT" >"$WORK/run.out" 2>&1 ||
    fail "campaign on the allocation: $(cat "$WORK/run.out")"
grep -q "sleep  *$host  *pass" "$WORK/run.out" || fail "run: $(cat "$WORK/run.out")"
pass "a campaign on the allocated node passed"

scancel "$job"
wait_for_log "$out" "said goodbye to tcp://127.0.0.1:$port" 20
for i in $(seq 1 50); do
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
    [ "$i" -eq 50 ] && fail "job $job still queued after scancel: $(squeue)"
    sleep 0.2
done
"$FLEETBURN" nodes --db "$WORK/fb.db" >"$WORK/nodes.out"
grep -q "^$host  *gone" "$WORK/nodes.out" || fail "after scancel: $(cat "$WORK/nodes.out")"
pass "scancel: the agent said goodbye and is gone"
