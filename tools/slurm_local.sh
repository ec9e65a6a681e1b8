#!/usr/bin/env bash
# A real Slurm on this one machine, for tests: Debian's slurm-wlm (a controller and two node daemons) and munge, all
# state, pid and log files in a scratch folder, no systemd, no cgroups, no accounting.
# The two nodes are this host under two names that resolve here, `hostname -s` and `localhost`, each its own slurmd
# (`slurmd -N`, on its own port) offering all the host's CPUs; the partition puts each job on its least loaded node
# (LLN), so the tasks of an array spread over both and a job can ask for 2 nodes: what a multi-node cluster does,
# short of separate machines.
#
#   bash tools/slurm_local.sh start    # installs slurm-wlm and munge if missing (root), starts, waits for `idle`;
#                                      # prints `export SLURM_CONF=...` for the callers (sbatch, sinfo, ...)
#   bash tools/slurm_local.sh status   # the daemons' PIDs and the nodes' states; exit 1 when not up
#   bash tools/slurm_local.sh stop     # stops the daemons it started, by the PIDs in their pid files
#
# Idempotent: `start` on a running cluster only prints the export line (after rewriting a slurm.conf that an older
# version of this script wrote and restarting the controller, which keeps its jobs); `stop` on a stopped one does
# nothing.
# Jobs may requeue themselves (`scontrol requeue`, as llm_nb's preemption-safe sbatch scripts do): Slurm holds a
# requeued job for the job credential's lifetime (AuthInfo=cred_expire, 120 s by default) before it may start again,
# and only the scheduler's periodic pass (every 60 s) starts a job whose hold ended: here 10 s and every 2 s, so a
# test of a requeue waits seconds, not minutes.
# The folder is ${LLM_NB_SLURM_DIR:-/tmp/llm_nb-slurm}. Log noise to ignore: pmix "can not load PMIx library".
set -euo pipefail
DIR=${LLM_NB_SLURM_DIR:-/tmp/llm_nb-slurm}
CONF=$DIR/slurm.conf
HOST=$(hostname -s)
NODES="$HOST localhost"  # both resolve to this host: a job's first node name is a master address that works
DAEMONS="slurmctld $(printf 'slurmd-%s ' $NODES)"  # pid files $DIR/<daemon>.pid
export SLURM_CONF=$CONF

die() { echo "slurm_local: $*" >&2; exit 1; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }  # the process named by pid file $1 runs
node_state() { timeout 10 sinfo -h -N -o %T 2>/dev/null | sort -u | paste -sd, -; }  # e.g. `idle`, `idle,mixed`

install_slurm() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return
  [ "$(id -u)" = 0 ] || die "slurm-wlm/munge are not installed and installing them needs root"
  command -v apt-get >/dev/null || die "slurm-wlm/munge are not installed and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q slurm-wlm munge >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q slurm-wlm munge >/dev/null; }
}

conf_text() {  # the slurm.conf this script wants, on stdout
  local mem
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)  # MiB, a bit under the total
  cat <<EOF
ClusterName=llmnb
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MinJobAge=4
SchedulerParameters=sched_interval=2
MailProg=/bin/true
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool-%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
EOF
  local port=17001 node  # CPUs: the machine's, not `nproc`'s (OMP_NUM_THREADS=1 in a test's environment makes it 1)
  for node in $NODES; do
    echo "NodeName=$node NodeHostname=$HOST Port=$port CPUs=$(getconf _NPROCESSORS_ONLN) RealMemory=$mem State=UNKNOWN"
    port=$((port + 1))
  done
  echo "PartitionName=local Nodes=${NODES// /,} Default=YES MaxTime=INFINITE State=UP LLN=YES"
}

write_conf() { mkdir -p "$DIR"/{state,log}; conf_text >"$CONF"; }

all_alive() { local d; for d in $DAEMONS; do alive "$DIR/$d.pid" || return 1; done; }

start_munge() {
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return  # one is running already (not ours: left running)
  mkdir -p /run/munge && chown munge:munge /run/munge
  [ -s /etc/munge/munge.key ] || { mungekey -c -f -k /etc/munge/munge.key && chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || die "munged does not answer"
  cp /run/munge/munged.pid "$DIR/munged.pid"  # ours: `stop` stops it
}

new_conf() {  # a running cluster gets this script's slurm.conf: the controller restarts without -c (jobs are kept)
  local pid
  write_conf
  pid=$(cat "$DIR/slurmctld.pid") && kill "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  slurmctld -f "$CONF"
  for _ in $(seq 60); do scontrol reconfigure >/dev/null 2>&1 && break; sleep 0.5; done  # the node daemons re-read it
  for _ in $(seq 60); do [ -n "$(node_state)" ] && return; sleep 0.5; done
  die "the controller did not come back with the new slurm.conf"
}

start() {
  if all_alive && [ "$(node_state)" != "" ]; then
    [ "$(conf_text)" = "$(cat "$CONF")" ] || new_conf
    echo "export SLURM_CONF=$CONF"; return
  fi
  stop >/dev/null
  install_slurm
  write_conf
  start_munge
  slurmctld -c -f "$CONF"
  local node state=""
  for node in $NODES; do slurmd -f "$CONF" -N "$node"; done
  for _ in $(seq 120); do
    state=$(node_state || true)
    [ "$state" = idle ] && break
    sleep 0.5
  done
  [ "$state" = idle ] || { tail -n 20 "$DIR"/log/*.log >&2; die "node states '$state' after 60 s, not all idle"; }
  echo "export SLURM_CONF=$CONF"
}

stop() {  # TERM to each daemon we started, then wait for all of them (KILL after 10 s)
  local name pid pids=""
  for name in $DAEMONS slurmd munged; do  # slurmd: the one node daemon of this script's earlier versions
    alive "$DIR/$name.pid" && pids="$pids $(cat "$DIR/$name.pid")" && kill "$(cat "$DIR/$name.pid")"
    rm -f "$DIR/$name.pid"
  done
  for pid in $pids; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  done
  echo "slurm_local: stopped"
}

status() {
  local name up=0
  for name in $DAEMONS munged; do
    if alive "$DIR/$name.pid"; then echo "$name: running, pid $(cat "$DIR/$name.pid")"
    else echo "$name: not running (from $DIR)"; [ $name = munged ] || up=1; fi
  done
  [ $up = 0 ] && timeout 10 sinfo -h -N -o "node %N: %T" && echo "export SLURM_CONF=$CONF"
  return $up
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: $0 start|stop|status" ;;
esac
