#!/usr/bin/env bash
# A real Slurm on this one machine, for tests: Debian's slurm-wlm (controller + one node) and munge, all state,
# pid and log files in a scratch folder, no systemd, no cgroups, no accounting.
#
#   bash tools/slurm_local.sh start    # installs slurm-wlm and munge if missing (root), starts, waits for `idle`;
#                                      # prints `export SLURM_CONF=...` for the callers (sbatch, sinfo, ...)
#   bash tools/slurm_local.sh status   # the daemons' PIDs and the node's state; exit 1 when not up
#   bash tools/slurm_local.sh stop     # stops the daemons it started, by the PIDs in their pid files
#
# Idempotent: `start` on a running cluster only prints the export line; `stop` on a stopped one does nothing.
# The folder is ${LLM_NB_SLURM_DIR:-/tmp/llm_nb-slurm}. Log noise to ignore: pmix "can not load PMIx library".
set -euo pipefail
DIR=${LLM_NB_SLURM_DIR:-/tmp/llm_nb-slurm}
CONF=$DIR/slurm.conf
HOST=$(hostname -s)
export SLURM_CONF=$CONF

die() { echo "slurm_local: $*" >&2; exit 1; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }  # the process named by pid file $1 runs
node_state() { timeout 10 sinfo -h -o %T 2>/dev/null | head -n 1; }

install_slurm() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return
  [ "$(id -u)" = 0 ] || die "slurm-wlm/munge are not installed and installing them needs root"
  command -v apt-get >/dev/null || die "slurm-wlm/munge are not installed and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q slurm-wlm munge >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q slurm-wlm munge >/dev/null; }
}

write_conf() {
  local mem
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)  # MiB, a bit under the total
  mkdir -p "$DIR"/{state,spool,log}
  cat >"$CONF" <<EOF
ClusterName=llmnb
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MinJobAge=4
MailProg=/bin/true
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
NodeName=$HOST CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return  # one is running already (not ours: left running)
  mkdir -p /run/munge && chown munge:munge /run/munge
  [ -s /etc/munge/munge.key ] || { mungekey -c -f -k /etc/munge/munge.key && chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || die "munged does not answer"
  cp /run/munge/munged.pid "$DIR/munged.pid"  # ours: `stop` stops it
}

start() {
  if alive "$DIR/slurmctld.pid" && alive "$DIR/slurmd.pid" && [ "$(node_state)" != "" ]; then
    echo "export SLURM_CONF=$CONF"; return
  fi
  stop >/dev/null
  install_slurm
  write_conf
  start_munge
  slurmctld -c -f "$CONF"
  slurmd -f "$CONF"
  local state=""
  for _ in $(seq 120); do
    state=$(node_state || true)
    case $state in idle*) break ;; esac
    sleep 0.5
  done
  case $state in idle*) ;; *) tail -n 20 "$DIR"/log/*.log >&2; die "node state '$state' after 60 s, not idle" ;; esac
  echo "export SLURM_CONF=$CONF"
}

stop() {  # TERM to each daemon we started, then wait for all of them (KILL after 10 s)
  local name pid pids=""
  for name in slurmd slurmctld munged; do
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
  for name in slurmctld slurmd munged; do
    if alive "$DIR/$name.pid"; then echo "$name: running, pid $(cat "$DIR/$name.pid")"
    else echo "$name: not running (from $DIR)"; [ $name = munged ] || up=1; fi
  done
  [ $up = 0 ] && echo "node $HOST: $(node_state)" && echo "export SLURM_CONF=$CONF"
  return $up
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: $0 start|stop|status" ;;
esac
