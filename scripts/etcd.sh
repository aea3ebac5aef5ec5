#!/usr/bin/env bash
# Installs what the multi-node tests use as an external etcd: Debian's
# etcd-server. Idempotent (nothing to do when `etcd` is there); the package's
# service is not started (tests run their own etcd in a network namespace).
set -euo pipefail
if command -v etcd >/dev/null 2>&1; then
  exit 0
fi
echo "installing Debian's etcd-server"
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server </dev/null >/dev/null
command -v etcd >/dev/null
