#!/usr/bin/env bash
# Compares goaccel's native TensorBoard writer with tensorboardX's
# SummaryWriter writing scalars into an event file, in the same run, and
# prints the per-scalar ratio.
#
#   bench/tensorboard_vs_python.sh            # Go: 1M scalars; Python: PY_SCALARS (default 200000)
#   PY_SCALARS=1000000 bench/tensorboard_vs_python.sh
#
# Python's time per scalar does not depend on N here (it is per-call
# overhead), so the default runs a fifth of the million to keep `make bench`
# short; set PY_SCALARS=1000000 for the exact peer of the Go benchmark.
# Needs the test venv (GOACCEL_VENV, default ~/.cache/goaccel/venv; `make test-deps`).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}"
PY="$VENV/bin/python"
if [[ ! -x "$PY" ]]; then
  echo "tensorboard_vs_python: $PY not found: run \`make test-deps\` first" >&2
  exit 1
fi
PY_SCALARS="${PY_SCALARS:-200000}"

echo "== Go: BenchmarkWrite1MScalars (1,000,000 scalars per op)"
go_out=$(go test -run '^$' -bench '^BenchmarkWrite1MScalars$' -benchtime 3x ./tracking/tensorboard)
echo "$go_out" | grep -E '^Benchmark'
go_ns=$(echo "$go_out" | awk '/^BenchmarkWrite1MScalars/ { for (i = 1; i < NF; i++) if ($(i+1) == "ns/scalar") print $i }')

echo "== Python: tensorboardX SummaryWriter.add_scalar ($PY_SCALARS scalars)"
py_out=$("$PY" tracking/tensorboard/testdata/bench_tensorboardx.py "$PY_SCALARS")
echo "$py_out" | head -n1
py_ns=$(echo "$py_out" | awk '/^ns\/scalar/ { print $2 }')

awk -v g="$go_ns" -v p="$py_ns" 'BEGIN {
  printf "Go %.1f ns/scalar, tensorboardX %.1f ns/scalar: Go is %.0fx faster\n", g, p, p / g
  if (g >= p) { print "FAIL: the Go writer is not faster than tensorboardX"; exit 1 }
}'
