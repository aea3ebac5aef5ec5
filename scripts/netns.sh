#!/usr/bin/env bash
# Hosts on one machine for the multi-node tests and benchmarks, made of
# Linux network namespaces (needs root):
#
#   scripts/netns.sh up PREFIX N    namespaces PREFIX-1 … PREFIX-N, each with
#                                   lo and eth0 = 10.77.0.<i>/24, all on one
#                                   bridge in the namespace PREFIX-sw
#   scripts/netns.sh down PREFIX    removes every namespace PREFIX-*
#
# Addresses exist only inside the namespaces (the bridge lives in its own
# namespace too), so traffic stays between them; every interface name is
# local to its namespace, so runs with different prefixes do not clash.
set -euo pipefail
cmd=${1:?usage: netns.sh up PREFIX N | down PREFIX}
prefix=${2:?usage: netns.sh up PREFIX N | down PREFIX}
case $cmd in
up)
  n=${3:?usage: netns.sh up PREFIX N}
  trap '"$0" down "$prefix"' ERR
  ip netns add "$prefix-sw"
  ip -n "$prefix-sw" link set lo up
  ip -n "$prefix-sw" link add br0 type bridge
  ip -n "$prefix-sw" link set br0 up
  for i in $(seq 1 "$n"); do
    ns=$prefix-$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$prefix-sw"
    ip -n "$prefix-sw" link set "p$i" master br0
    ip -n "$prefix-sw" link set "p$i" up
    ip -n "$ns" addr add "10.77.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  # Wait until the links are up (IPv4 needs no duplicate-address check).
  for i in $(seq 1 "$n"); do
    for _ in $(seq 50); do
      ip -n "$prefix-$i" -o link show eth0 | grep -q 'state UP' && break
      sleep 0.1
    done
  done
  ;;
down)
  for ns in $(ip netns list | awk '{print $1}'); do
    case $ns in "$prefix"-*) ip netns del "$ns" ;; esac
  done
  ;;
*)
  echo "usage: netns.sh up PREFIX N | down PREFIX" >&2
  exit 2
  ;;
esac
