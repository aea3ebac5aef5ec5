#!/usr/bin/env bash
# The first cell of every example notebook in a fresh kernel (after install).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python
"$py" bench/firstcell/firstcell.py
