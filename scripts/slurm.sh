#!/usr/bin/env bash
# Installs what the Slurm tests run: Debian's slurmctld, slurmd, the client
# commands and munge (22.05). Idempotent (nothing to do when they are
# there); no service is started: the tests run an isolated instance of
# their own (e2e/slurmcluster.py).
set -euo pipefail
if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
  exit 0
fi
echo "installing Debian's Slurm (slurmctld, slurmd, client) and munge"
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends slurm-wlm slurmd slurmctld slurm-client munge </dev/null >/dev/null
command -v slurmctld >/dev/null
