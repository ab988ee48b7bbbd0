#!/bin/sh
# Test "hosts" on this machine: network namespaces on a bridge (root only).
#   netns-hosts.sh up [N] [R]  create pm2h1..pm2hN (10.77.0.11, .12, ...) on bridge pm2br0
#                           (10.77.0.1), their eth0; with R > 0, also R more networks (rails):
#                           bridges pm2br1..pm2brR, each host's interface railK at 10.77.K.(10+i)
#   netns-hosts.sh down     remove them
#   netns-hosts.sh [-x] HOST CMD...  (as mpiexec.hydra -launcher-exec or madrun --launcher-exec
#                           call ssh) runs CMD inside namespace HOST; `exec [-x] HOST CMD...` too
set -eu
case "${1:-}" in
up)
    n=${2:-2}
    rails=${3:-0}
    "$0" down >/dev/null 2>&1 || true
    ip link add pm2br0 type bridge
    ip addr add 10.77.0.1/24 dev pm2br0
    ip link set pm2br0 up
    i=1
    while [ "$i" -le "$n" ]; do
        h=pm2h$i
        ip netns add "$h"
        ip link add "$h-v" type veth peer name eth0 netns "$h"
        ip link set "$h-v" master pm2br0 up
        ip -n "$h" addr add "10.77.0.$((10 + i))/24" dev eth0
        ip -n "$h" link set eth0 up
        ip -n "$h" link set lo up
        k=1
        while [ "$k" -le "$rails" ]; do
            [ "$i" -eq 1 ] && ip link add "pm2br$k" type bridge && ip link set "pm2br$k" up
            ip link add "$h-r$k" type veth peer name "rail$k" netns "$h"
            ip link set "$h-r$k" master "pm2br$k" up
            ip -n "$h" addr add "10.77.$k.$((10 + i))/24" dev "rail$k"
            ip -n "$h" link set "rail$k" up
            k=$((k + 1))
        done
        i=$((i + 1))
    done
    ;;
down)
    # Delete the root ends of the veth pairs first: that is synchronous, whereas a deleted
    # namespace's devices go away later, and a quick `up` would find the names still taken.
    for h in $(ip netns list 2>/dev/null | awk '/^pm2h/ {print $1}'); do
        ip link del "$h-v" 2>/dev/null || true
        for v in $(ip -br link 2>/dev/null | awk -v p="$h-r" 'index($1, p) == 1 {sub(/@.*/, "", $1); print $1}'); do
            ip link del "$v" 2>/dev/null || true
        done
        ip netns del "$h"
    done
    for b in $(ip -br link 2>/dev/null | awk '/^pm2br/ {sub(/@.*/, "", $1); print $1}'); do
        ip link del "$b" 2>/dev/null || true
    done
    # Wait (at most 5 s) for any device a namespace took with it.
    i=0
    while ip -br link 2>/dev/null | grep -q '^pm2' && [ "$i" -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    ;;
exec | -x | pm2h*)
    [ "$1" = "exec" ] && shift
    [ "${1:-}" = "-x" ] && shift
    host=$1
    shift
    # Like ssh: the remaining words form one shell command line.
    exec ip netns exec "$host" sh -c "$*"
    ;;
*)
    echo "usage: $0 up [N] | down | exec -x HOST CMD..." >&2
    exit 2
    ;;
esac
