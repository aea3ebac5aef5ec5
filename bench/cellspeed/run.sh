#!/usr/bin/env bash
# Compiled cells beside go run, in one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python
"$py" bench/cellspeed/cellspeed.py
