#!/usr/bin/env bash
# Creates or refreshes the Python virtualenv the tests use, from a pinned
# requirements file. Idempotent: a stamp holding the file's hash skips the
# install when nothing changed.
set -euo pipefail
venv=$1 req=$2
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp="$venv/.goaccel-requirements.sha256"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "setting up the Python virtualenv in $venv (once; cached)"
mkdir -p "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -U pip
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
echo "$want" > "$stamp"
