#!/usr/bin/env bash
# fib(32) and a dot product in a compiled cell (with and without interrupt
# checks) vs the same code built as a Go program (what go run runs), in
# alternating rounds of one run; prints times and ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run -ldflags="-extldflags=-Wl,-z,lazy -X github.com/goaccel/goaccel/notebook/build.SourceDir=$PWD" ./bench/cells "$@"
