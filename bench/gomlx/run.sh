#!/usr/bin/env bash
# GoMLX under Accelerate (accelerate/gomlx): the example CNN on MNIST in a
# kernel cell, beside go run of the same code, JAX and PyTorch on CPU, and
# 2 processes with DebugLauncher; see bench.py. Part of `make bench`, never
# of `make test` or CI: the peers' virtualenv (~/.cache/goaccel/bench-venv,
# pinned in requirements.txt; PyPI's torch wheel brings its CUDA libraries,
# about 6 GB) is made once and reused.
#
#   GXB_ROUNDS=3 GXB_ONE_THREAD_ROUNDS=2 GXB_WARMUP=10 GXB_STEPS=50 GXB_CPUS=0,1 bash bench/gomlx/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python
bench_venv=${GXB_BENCH_VENV:-$HOME/.cache/goaccel/bench-venv}
bash scripts/venv.sh "$bench_venv" bench/gomlx/requirements.txt
make build >/dev/null  # the kernel, with the link flags its cells need
export GXB_BENCH_PYTHON="$bench_venv/bin/python"
cpus=${GXB_CPUS:-$(taskset -pc $$ | sed 's/.*: //')}
echo "load: $(uptime | sed 's/.*load average/load average/')"
taskset -c "$cpus" "$py" bench/gomlx/bench.py
echo "bench/gomlx/run.sh: $(($(date +%s) - start)) s in all"
