#!/bin/sh
# Pins an MPI rank to its CPU, then runs the program: rank i gets the i-th CPU of
# $MPI_BENCH_CPUS (comma-separated, default "0,1"). The rank comes from the launcher's
# environment (PMI_RANK: madrun and Hydra; OMPI_COMM_WORLD_RANK: Open MPI), so every library's
# ranks are pinned the same way, before the library starts any thread of its own.
rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-}}
if [ -z "$rank" ]; then
    echo "pin.sh: no rank in the environment (PMI_RANK, OMPI_COMM_WORLD_RANK)" >&2
    exit 1
fi
cpus=${MPI_BENCH_CPUS:-0,1}
cpu=$(echo "$cpus" | cut -d, -f$((rank + 1)))
[ -n "$cpu" ] || cpu=$(echo "$cpus" | cut -d, -f1)
exec taskset -c "$cpu" "$@"
