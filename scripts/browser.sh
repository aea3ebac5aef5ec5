#!/usr/bin/env bash
# Installs what the browser test drives: Debian's chromium and npm's
# playwright-core (no browser download of its own). Idempotent.
set -euo pipefail
nodedir=$1
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
if [ ! -d "$nodedir/node_modules/playwright-core" ]; then
  echo "installing playwright-core into $nodedir"
  mkdir -p "$nodedir"
  npm install --silent --no-audit --no-fund --prefix "$nodedir" playwright-core@1 >/dev/null
fi
