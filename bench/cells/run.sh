#!/usr/bin/env bash
# fib(32) and a dot product in a compiled cell (with and without interrupt
# checks) vs the same code built as a Go program (what go run runs), in
# alternating rounds of one run; prints times and ratios. Then the
# interruptible channel operations and locks of cell code vs plain Go.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run -ldflags="-extldflags=-Wl,-z,lazy -X github.com/goaccel/goaccel/notebook/build.SourceDir=$PWD" ./bench/cells "$@"
echo "-- blocking operations of cell code (gxrt) vs Go's own --"
go test -run '^$' -bench . -benchtime 1s ./notebook/gxrt/ | grep '^Benchmark'
