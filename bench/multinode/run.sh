#!/usr/bin/env bash
# Across nodes (hosts made of network namespaces, scripts/netns.sh; needs
# root): the all-reduce of 64 MiB across 2 nodes x 1 process over the veth
# link beside a raw TCP copy over the same link, and launch -> first step
# through the real kernel with 2 nodes beside 1 node with as many processes.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python
prefix=gab$$
if ! bash scripts/netns.sh up "$prefix" 2 2>/dev/null; then
  echo "skipped: network namespaces cannot be created here (root and iproute2's ip netns are needed)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'bash scripts/netns.sh down "$prefix"; rm -rf "$tmp"' EXIT
go build -o "$tmp/allreduce" ./bench/allreduce
ip netns exec "$prefix-1" "$tmp/allreduce" -np 2 -min 64MiB -max 64MiB -time 2s \
  -netns "$prefix-1,$prefix-2" -hosts 10.77.0.1,10.77.0.2
echo
"$py" bench/multinode/launch_latency.py "$prefix-1" "$prefix-2"
