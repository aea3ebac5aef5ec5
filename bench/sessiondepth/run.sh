#!/usr/bin/env bash
# Stack unwinding and garbage collection after hundreds of cells, beside a
# new session's.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run -ldflags="-checklinkname=0 -extldflags=-Wl,-z,lazy -X github.com/goaccel/goaccel/notebook/build.SourceDir=$PWD" ./bench/sessiondepth "$@"
