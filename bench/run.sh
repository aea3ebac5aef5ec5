#!/usr/bin/env bash
# `make bench`: every benchmark beside its peer, measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python
echo "== kernel: goaccel vs ipykernel (jupyter_client) =="
"$py" bench/kernel_bench.py
for s in bench/*.sh; do
  [ "$s" = bench/run.sh ] && continue
  echo "== $s =="
  bash "$s"
done
echo "== Go benchmarks =="
go test -run '^$' -bench . -benchtime 1x ./... 2>&1 | grep -E '^(Benchmark|ok|FAIL|goos|pkg)' || true
