#!/usr/bin/env bash
# localhost-up.sh — a one-node Slurm cluster on this machine, for trying the job array
# (docs/scale-out.md). Needs root and the Debian packages slurm-wlm and munge. Writes a
# munge key (when none), a minimal /etc/slurm/slurm.conf naming this host (when none),
# starts munged, slurmctld and slurmd, and waits until sinfo answers. Prints the pids.
#   localhost-up.sh [--stop]    (--stop: ends the daemons this script started and waits
#                                for each to be gone)
set -eu
state=/run/attnfuzz-slurm
if [ "${1:-}" = --stop ]; then
  # each daemon this script started: SIGTERM, then wait (10 s) until it is gone, then SIGKILL
  for d in slurmd slurmctld munged; do
    [ -f "$state/$d.pid" ] || continue
    pid=$(cat "$state/$d.pid")
    [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$d" ] || { rm -f "$state/$d.pid"; continue; }
    kill "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; sleep 0.2; echo "killed $d (pid $pid, SIGKILL)"; else echo "stopped $d (pid $pid)"; fi
    rm -f "$state/$d.pid"
  done
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "localhost-up.sh: needs root"; exit 2; }
command -v slurmctld >/dev/null && command -v munged >/dev/null || { echo "localhost-up.sh: apt-get install slurm-wlm munge"; exit 2; }
mkdir -p "$state" /etc/munge /var/log/munge /run/munge /var/lib/munge /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
if [ ! -s /etc/slurm/slurm.conf ]; then
  mkdir -p /etc/slurm
  cat > /etc/slurm/slurm.conf <<CONF
ClusterName=attnfuzz-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
fi
# pid files of daemons gone (an earlier run) would name another process: dropped
for d in munged slurmctld slurmd; do
  [ -f "$state/$d.pid" ] && [ "$(cat /proc/"$(cat "$state/$d.pid")"/comm 2>/dev/null)" != "$d" ] && rm -f "$state/$d.pid"
done
pgrep -x -r R,S,D munged >/dev/null || { runuser -u munge -- munged 2>/dev/null || munged -f; }
# munged (run as its own user) writes its pid into /run/munge, not into $state
for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
if [ -s /run/munge/munged.pid ]; then cp /run/munge/munged.pid "$state/munged.pid"; else pgrep -xn -r R,S,D munged > "$state/munged.pid"; fi
pgrep -x -r R,S,D slurmctld >/dev/null || slurmctld
pgrep -x -r R,S,D slurmd >/dev/null || slurmd
for _ in $(seq 60); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE 'idle|mixed|alloc'; then
    echo "slurm up on $host: $(sinfo -h -o '%P %D %T %c')"
    for d in munged slurmctld slurmd; do [ -f "$state/$d.pid" ] && echo "  $d pid $(cat "$state/$d.pid")"; done
    exit 0
  fi
  scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  sleep 1
done
echo "localhost-up.sh: slurm did not come up in 60 s; see /var/log/slurm/*.log"
exit 1
