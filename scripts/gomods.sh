#!/usr/bin/env bash
# Puts the modules the example notebooks fetch (their `%go get MODULE@VERSION`
# lines) into the Go module cache, so that the notebook tests run without
# network (test_notebooks.py runs the kernel with GOPROXY=off).
#
# It does what the kernel does: `go get` in a module that requires goaccel
# from this source tree, then `go mod download` of everything that build list
# holds. The module lives in $1 (under ~/.cache/goaccel). Idempotent: with
# everything cached it runs offline first and touches nothing.
#
#   scripts/gomods.sh CACHE_DIR NOTEBOOK...
set -euo pipefail
dir=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
# Cell lines that start with %go get (in the notebook's JSON), their
# MODULE@VERSION words.
mods=$(grep -hoE '^\s*"%go get [^"\\]*' "$@" 2>/dev/null | sed 's/^[[:space:]]*"%go get //' | tr ' ' '\n' |
  grep -E '^[^@]+\.[^@]+@[^@]+$' | sort -u || true)
if [ -z "$mods" ]; then
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
gov=$(go env GOVERSION | sed 's/^go//; s/[ -].*//')
cat >go.mod <<EOF
module goaccel.notebookmods

go $gov

require github.com/goaccel/goaccel v0.0.0-00010101000000-000000000000

replace github.com/goaccel/goaccel => $root
EOF
cp "$root/go.sum" go.sum
export GOWORK=off GOFLAGS=-mod=mod
# go get and go mod download fetch what building the modules' packages
# needs; the kernel also lists the session's whole module graph (go list -m
# all), which reads the go.mod of modules no package needs (fonts, pdf
# helpers of gonum/plot), so that is fetched too.
fetch() {
  # shellcheck disable=SC2086
  go get $mods && go mod download && go list -m -json all >/dev/null
}
if GOPROXY=off fetch >/dev/null 2>&1; then
  exit 0
fi
echo "fetching the notebooks' modules into the module cache: $(echo $mods)"
fetch
