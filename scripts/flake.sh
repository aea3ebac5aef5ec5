#!/usr/bin/env bash
# make flake: runs the timing-sensitive tests many times under full CPU load,
# as a busy CI machine would run them, and prints every test that failed at
# least once with its failure count. Not part of `make test`.
#
#   FLAKE_N        runs of each test (default 20)
#   FLAKE_PKGS     Go packages (default: pg, the GoMLX adapter's and the
#                  resume test's launches, the launcher, the notebook engine;
#                  "" runs none)
#   FLAKE_GORUN    a -test.run pattern for the Go packages (default: all
#                  their tests)
#   FLAKE_PYTESTS  e2e pytest runs, ";"-separated, each "files [-k expr]"
#                  relative to e2e/ (default: launch, multi-node,
#                  test_interrupt.py, and the interrupt tests of
#                  test_client.py; "" runs none)
#   FLAKE_LOAD     0 runs without the load generator (default 1)
#   FLAKE_TIMEOUT  -test.timeout of each run of a package (default 20m)
#   FLAKE_OUT      where the logs go (default: a new directory in /tmp)
#
# Per-test failures are counted from go test's events (go tool test2json) and
# pytest's JUnit reports.
#
# The load is a Go busy loop on every core (scripts/busyloop.go); it is
# stopped when this script exits, however it exits.
set -uo pipefail
cd "$(dirname "$0")/.."

N=${FLAKE_N:-20}
PKGS=${FLAKE_PKGS-./accelerate/pg/ ./accelerate/gomlx/ ./accelerate/internal/resumetest/ ./launcher/... ./notebook/...}
GORUN=${FLAKE_GORUN:-}
PYTESTS=${FLAKE_PYTESTS-test_launch.py test_multinode.py test_interrupt.py test_gc_roots.py;test_client.py -k interrupt or stuck}
LOAD=${FLAKE_LOAD:-1}
TIMEOUT=${FLAKE_TIMEOUT:-20m}
OUT=${FLAKE_OUT:-$(mktemp -d /tmp/goaccel-flake.XXXXXX)}
GO=${GO:-go}
MAKE=${MAKE:-make}
PY=${PY:-${GOACCEL_VENV:-$HOME/.cache/goaccel/venv}/bin/python}
mkdir -p "$OUT"

# The Makefile's LDFLAGS (as its go-test target uses them), unless given.
if [ -z "${LDFLAGS:-}" ]; then
  LDFLAGS=$(printf 'print-ldflags:\n\t@echo $(LDFLAGS)\n' | "$MAKE" --no-print-directory -s -f Makefile -f - print-ldflags)
fi

echo "== make build"
"$MAKE" --no-print-directory build || exit 1

loadpid=
stop_load() {
  if [ -n "$loadpid" ]; then
    kill "$loadpid" 2>/dev/null
    wait "$loadpid" 2>/dev/null
    loadpid=
  fi
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT
trap 'stop_load; exit 143' TERM

if [ "$LOAD" != 0 ]; then
  "$GO" build -o "$OUT/busyloop" scripts/busyloop.go || exit 1
  "$OUT/busyloop" &
  loadpid=$!
  echo "== load: busy loop on $(nproc) cores (pid $loadpid)"
else
  echo "== load: off (FLAKE_LOAD=0)"
fi

# Each run of a package is a fresh test binary, as in CI: `go test
# -count=N` would repeat the tests inside one process, where the notebook's
# tests cannot run twice (a Go plugin is opened once per process, and a
# rebuilt cell is the same plugin). The binary is built once (go test -c,
# with the Makefile's LDFLAGS) and run N times in its package's directory,
# with -test.v; go tool test2json turns the output into go test -json's
# events (go test -json itself would make os.Stderr the same file as
# os.Stdout in the binary, which the tests of fd capture notice).
if [ -n "$PKGS" ]; then
  # shellcheck disable=SC2086
  pkgs=$("$GO" list $PKGS) || exit 1
  mkdir -p "$OUT/bin" "$OUT/go"
  for p in $pkgs; do
    dir=$("$GO" list -f '{{.Dir}}' "$p")
    bin="$OUT/bin/$(echo "$p" | tr / _).test"
    if ! "$GO" test -c -ldflags="$LDFLAGS" -o "$bin" "$p" > "$OUT/build.log" 2>&1; then
      cat "$OUT/build.log"
      echo "build-failed $p" > "$OUT/go/$(echo "$p" | tr / _)-build.status"
      continue
    fi
    [ -x "$bin" ] || continue # no test files
    fails=0
    for ((i = 1; i <= N; i++)); do
      run="$OUT/go/$(basename "$bin" .test)-$i"
      (cd "$dir" && "$bin" -test.v -test.count=1 -test.timeout="$TIMEOUT" ${GORUN:+-test.run="$GORUN"}) 2>&1 \
        | tee "$run.log" | "$GO" tool test2json -t -p "$p" > "$run.json"
      rc=${PIPESTATUS[0]}
      echo "$p $rc" > "$run.status"
      [ "$rc" = 0 ] || fails=$((fails + 1))
    done
    echo "== go test $p: $N runs, $fails failed"
  done
fi

if [ -n "$PYTESTS" ]; then
  if [ ! -x "$PY" ]; then
    echo "no Python virtualenv at $PY: run \`make venv\`" >&2
    exit 1
  fi
  IFS=';' read -ra runs <<< "$PYTESTS"
  for ((i = 1; i <= N; i++)); do
    for j in "${!runs[@]}"; do
      read -ra args <<< "${runs[$j]}"
      # "-k expr with spaces": everything after -k is the expression.
      for k in "${!args[@]}"; do
        if [ "${args[$k]}" = -k ]; then
          args=("${args[@]:0:$k}" -k "${args[*]:$((k + 1))}")
          break
        fi
      done
      echo "== pytest run $i/$N: ${runs[$j]}"
      (cd e2e && "$PY" -m pytest -p no:cacheprovider -q --junitxml="$OUT/py-$j-$i.xml" "${args[@]}") \
        > "$OUT/py-$j-$i.log" 2>&1
      tail -n 1 "$OUT/py-$j-$i.log" | sed 's/^/   /'
    done
  done
fi

stop_load

echo
echo "== failures out of $N runs (load $([ "$LOAD" != 0 ] && echo on || echo off); logs in $OUT)"
python3 - "$OUT" "$N" <<'EOF'
import glob, json, os, sys
import xml.etree.ElementTree as ET
from collections import defaultdict

out, n = sys.argv[1], int(sys.argv[2])
runs = defaultdict(int)    # (package, test) -> runs seen
fails = defaultdict(int)   # (package, test) -> failures

# One JSON file and one status file per run of a package's test binary.
for status in sorted(glob.glob(os.path.join(out, "go", "*.status"))):
    words = open(status).read().split()
    if words and words[0] == "build-failed":
        pkg = words[1]
        fails[(pkg, "(the package does not build)")] += 1
        runs[(pkg, "(the package does not build)")] += 1
        continue
    pkg, rc = words
    open_runs, failed_here = defaultdict(int), False
    with open(status[:-len(".status")] + ".json", errors="replace") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            test, act = e.get("Test"), e.get("Action")
            if not test:
                continue
            key = (pkg, test)
            if act == "run":
                open_runs[key] += 1
            elif act in ("pass", "fail", "skip"):
                open_runs[key] -= 1
                runs[key] += 1
                if act == "fail":
                    fails[key] += 1
                    failed_here = True
    # A test still running when the binary died (a timeout, a crash) never
    # reported: a failure too.
    for key, k in open_runs.items():
        if k > 0:
            fails[key] += k
            runs[key] += k
            failed_here = True
    # A run that failed with no test failing: the test binary itself.
    key = (pkg, "(the test binary: TestMain, exit or crash)")
    if rc != "0" and not failed_here:
        fails[key] += 1

for log in sorted(glob.glob(os.path.join(out, "py-*.log"))):
    if not os.path.exists(log[:-len(".log")] + ".xml"):
        fails[("e2e", "(pytest wrote no report: see " + os.path.basename(log) + ")")] += 1
for path in sorted(glob.glob(os.path.join(out, "py-*.xml"))):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        fails[("e2e", os.path.basename(path) + " (no report)")] += 1
        continue
    for tc in root.iter("testcase"):
        key = ("e2e/" + tc.get("classname", "?").replace(".", "/") + ".py", tc.get("name", "?"))
        runs[key] += 1
        if tc.find("failure") is not None or tc.find("error") is not None:
            fails[key] += 1

failed = sorted(k for k, v in fails.items() if v)
if not failed:
    print(f"0 failures: every one of {len(runs)} tests passed all its runs")
    sys.exit(0)
width = max(len(t) for _, t in failed)
last = None
for pkg, test in failed:
    if pkg != last:
        print(pkg)
        last = pkg
    print(f"  {test:<{width}}  {fails[(pkg, test)]:>3}/{max(runs[(pkg, test)], n)} failed")
print(f"{len(failed)} of {len(runs)} tests failed at least once")
sys.exit(1)
EOF
