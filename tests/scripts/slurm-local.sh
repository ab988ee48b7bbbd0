#!/bin/sh
# A private one-node Slurm for tests (root only): its own config, state and ports in $DIR
# (default /tmp/pm2-slurm); no system file is touched.
#   slurm-local.sh up      start slurmctld + slurmd, wait until the node is idle
#   slurm-local.sh down    stop them
#   slurm-local.sh env     print the SLURM_CONF=... line srun needs
set -eu
DIR=${PM2_SLURM_DIR:-/tmp/pm2-slurm}
CONF=$DIR/slurm.conf
host=$(hostname -s)
case "${1:-}" in
up)
    "$0" down >/dev/null 2>&1 || true
    mkdir -p "$DIR/state" "$DIR/spool"
    cat > "$CONF" <<CONFEOF
ClusterName=pm2test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONFEOF
    slurmctld -f "$CONF"
    slurmd -f "$CONF"
    i=0
    until SLURM_CONF=$CONF sinfo -h -o %t 2>/dev/null | grep -q idle; do
        i=$((i + 1))
        if [ "$i" -gt 60 ]; then
            echo "slurm-local: the node did not become idle; logs in $DIR" >&2
            exit 1
        fi
        sleep 0.5
    done
    ;;
down)
    for d in slurmd slurmctld; do
        [ -f "$DIR/$d.pid" ] && kill "$(cat "$DIR/$d.pid")" 2>/dev/null || true
    done
    sleep 0.5
    ;;
env)
    echo "SLURM_CONF=$CONF"
    ;;
*)
    echo "usage: $0 up | down | env" >&2
    exit 2
    ;;
esac
