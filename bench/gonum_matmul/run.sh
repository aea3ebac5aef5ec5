#!/usr/bin/env bash
# A 512×512 float64 mat.Dense Mul called from a notebook cell (goaccel's
# notebook engine, with the kernel's symbol tables) vs the same Mul in
# compiled Go, alternating in one process; prints cell speed / compiled speed
# (target >= 0.8) and fails below it.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Linked as the kernel is (see the Makefile's LDFLAGS): it runs the notebook engine.
go run -ldflags="-checklinkname=0 -extldflags=-Wl,-z,lazy -X github.com/goaccel/goaccel/notebook/build.SourceDir=$PWD" ./bench/gonum_matmul "$@"
