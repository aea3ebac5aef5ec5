#!/usr/bin/env bash
# `make bench`: every benchmark beside its peer, measured in the same run.
# Machines are shared and noisy: compare the ratios, not the absolute times.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python

echo "== kernel: goaccel vs ipykernel through jupyter_client (start, round trip, stdout, DebugLauncher) =="
"$py" bench/kernel_bench.py

echo "== all-reduce bandwidth vs a raw loopback TCP copy (separate processes) =="
go run ./bench/allreduce -np 2,4 -min 4KiB -max 256MiB

echo "== ZeRO stage 2 (sharded Adam state, reduce-scattered gradients) vs DDP: step time and Adam's state per rank =="
go run ./bench/zero -np 2,4

echo "== FSDP SHARD_GRAD_OP vs DDP for a GoMLX model, processes from goaccel's launcher: step time, state per process, peak RSS =="
go run ./bench/fsdp -np 2,4 -rounds 3

echo "== TensorBoard writer vs Python's tensorboardX =="
bash bench/tensorboard_vs_python.sh

echo "== Accelerator.Log with tensorboard + dvclive + live chart (calls/s on the main process) =="
go test -run '^$' -bench 'Log10ScalarsTBDVCLiveChart' -benchtime 2s ./tracking/

echo "== SaveState / SaveModel vs a raw write + fsync of the same bytes =="
go run ./bench/checkpoint

echo "== completion and inspection =="
go test -run '^$' -bench . -benchtime 200x ./notebook/complete/

for s in bench/*/run.sh; do
  [ -e "$s" ] || continue
  echo "== $s =="
  bash "$s"
done
