#!/usr/bin/env bash
# bench/gpt: the notebook's GPT (examples/notebooks/gpt_shakespeare.ipynb)
# in a kernel cell and as go run, beside nanoGPT's model in JAX and PyTorch
# on CPU; see bench.py. Part of `make bench`, never of `make test` or CI:
# the peers' virtualenv is bench/gomlx's (~/.cache/goaccel/bench-venv).
#
#   GPTB_CONFIGS=small,baby,gpt10m GPTB_ROUNDS=5 GPTB_FULL=1 GPTB_BF16=1 bash bench/gpt/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python
bench_venv=${GPTB_BENCH_VENV:-$HOME/.cache/goaccel/bench-venv}
bash scripts/venv.sh "$bench_venv" bench/gomlx/requirements.txt
bash scripts/corpus.sh "$HOME/.cache/goaccel/corpora" e2e/corpus.lock
make build >/dev/null  # the kernel, with the link flags its cells need
export GPTB_BENCH_PYTHON="$bench_venv/bin/python"
echo "load: $(uptime | sed 's/.*load average/load average/')"
"$py" bench/gpt/bench.py
echo "bench/gpt/run.sh: $(($(date +%s) - start)) s in all"
