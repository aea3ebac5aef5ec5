#!/usr/bin/env bash
# A long session's memory, build cache and new-cell time, with cells linked
# against the shared library beside cells that carry their packages.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run -ldflags="-checklinkname=0 -extldflags=-Wl,-z,lazy -X github.com/goaccel/goaccel/notebook/build.SourceDir=$PWD" ./bench/session "$@"
