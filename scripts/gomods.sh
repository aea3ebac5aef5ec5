#!/usr/bin/env bash
# Puts the modules the example notebooks fetch (their `%go get MODULE@VERSION`
# lines) and the modules of the packages they import into the Go module
# cache, so that the notebook tests run without network (test_notebooks.py
# runs the kernel with GOPROXY=off).
#
# It does what the kernel does: `go get` in a module that requires goaccel
# from this source tree, `go list -deps` of the imported packages, then
# `go mod download` and `go list -m all` of that build list. The module lives in $1 (under ~/.cache/goaccel). Idempotent: with
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
# The packages the notebooks import from modules (quoted import paths whose
# first element has a dot, escaped as \"...\" in the JSON): what the
# kernel's first imports resolve, GoMLX's packages among them (their
# modules' own dependencies are not all goaccel's).
pkgs=$(grep -ohE '\\"[a-z0-9.-]+\.[a-z]+/[^"\\ ]+\\"' "$@" 2>/dev/null | tr -d '\\"' | sort -u || true)
if [ -z "$mods$pkgs" ]; then
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
gov=$(go env GOVERSION | sed 's/^go//; s/[ -].*//')
cat >go.mod <<EOF2
module goaccel.notebookmods

go $gov

require github.com/goaccel/goaccel v0.0.0-00010101000000-000000000000

replace github.com/goaccel/goaccel => $root
EOF2
cp "$root/go.sum" go.sum
{
  echo "package notebookmods"
  echo
  for p in $pkgs; do echo "import _ \"$p\""; done
} >imports.go
export GOWORK=off GOFLAGS=-mod=mod
# go get and go list -deps fetch what building the packages needs; the
# kernel also lists the session's whole module graph (go list -m all),
# which reads the go.mod of modules no package needs (fonts, pdf helpers of
# gonum/plot), so that is fetched too.
fetch() {
  if [ -n "$mods" ]; then
    # shellcheck disable=SC2086
    go get $mods || return 1
  fi
  go list -deps ./... >/dev/null && go mod download && go list -m -json all >/dev/null
}
if GOPROXY=off fetch >/dev/null 2>&1; then
  exit 0
fi
echo "fetching the notebooks' modules into the module cache: $(echo $mods) (and the modules of $(echo "$pkgs" | wc -w) imported packages)"
fetch >/dev/null
