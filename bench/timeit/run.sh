#!/usr/bin/env bash
# %timeit in a real kernel beside testing.Benchmark of the same code.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python
"$py" bench/timeit/timeit.py
