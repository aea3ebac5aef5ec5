#!/usr/bin/env bash
# A 512×512 float64 mat.Dense Mul called from a notebook cell (goaccel's
# notebook engine, with the kernel's symbol tables) vs the same Mul in
# compiled Go, alternating in one process; prints cell speed / compiled speed
# (target >= 0.8) and fails below it.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run ./bench/gonum_matmul "$@"
