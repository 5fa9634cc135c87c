#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, as root, without systemd: munge, slurmctld and
# slurmd from Debian's packages, one partition "ci" with this machine's cores. For the tests that
# submit experiment steps through submitit (AA_HARNESS_REQUIRE_SLURM=1 makes them fail, not skip,
# when the cluster is absent).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
command -v slurmctld >/dev/null || apt-get install -y -qq slurm-wlm munge >/dev/null
host="$(hostname -s)"
grep -q "[[:space:]]$host\$" /etc/hosts || echo "127.0.0.1 $host" >> /etc/hosts
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /etc/munge
[ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
chown -R munge:munge /etc/munge /run/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
pgrep -x munged >/dev/null || su -s /bin/sh munge -c munged 2>/dev/null || munged --force
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=2048
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 30); do
  sinfo -h -o %T 2>/dev/null | grep -qE "^idle|^mixed|^alloc" && { sinfo; exit 0; }
  sleep 1
done
echo "slurm did not come up:" >&2; tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2; exit 1
