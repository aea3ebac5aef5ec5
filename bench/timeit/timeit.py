"""%timeit vs testing.Benchmark: the same statements timed by %timeit in a
cell of the real goaccel kernel and by testing.Benchmark in a program
`go build` made, on the same machine in the same run. Prints each ns per
loop and their ratio (%timeit / testing.Benchmark; the target is ≤ 2), and
%timeit's own cost per loop (a statement that does nothing; target ≤ 5 ns)."""
import os
import re
import subprocess
import sys
import tempfile

from jupyter_client.manager import start_new_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

DECLS = """var xs = make([]float64, 1000)
var k = 3

// The results go to variables, so that neither compiler drops the work.
var sinkI int
var sinkF float64

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
"""

# name → statement; "nothing" measures the loop around the statement.
CASES = {"nothing": "_ = 0", "k*2+1": "sinkI = k*2 + 1", "fib(20)": "sinkI = fib(20)", "sum(1000)": "sinkF = sum(xs)"}

UNITS = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}


def cell(kc, code):
    msg_id = kc.execute(code)
    out, err = "", None
    while True:
        m = kc.get_iopub_msg(timeout=600)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            out += m["content"]["text"]
        elif m["msg_type"] == "error":
            err = m["content"]
        elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    if err:
        sys.exit(f"cell failed: {err['ename']}: {err['evalue']}")
    return out


def per_loop_ns(line):
    m = re.match(r"([\d.]+) (ns|µs|ms|s) ±", line.strip().splitlines()[-1])
    if not m:
        sys.exit(f"not a %timeit report: {line!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def benchmarks():
    """ns/op of each case by testing.Benchmark (best of 3)."""
    with tempfile.TemporaryDirectory() as d:
        bodies = "\n".join(
            f'\tfmt.Println({name!r}, best(func(b *testing.B) {{ for i := 0; i < b.N; i++ {{ {stmt} }} }}))'.replace("'", '"')
            for name, stmt in CASES.items())
        src = f"""package main

import (
	"fmt"
	"testing"
)

{DECLS}
func best(f func(*testing.B)) float64 {{
	b := 0.0
	for i := 0; i < 3; i++ {{
		r := testing.Benchmark(f)
		ns := float64(r.T.Nanoseconds()) / float64(r.N)
		if i == 0 || ns < b {{
			b = ns
		}}
	}}
	return b
}}

func main() {{
{bodies}
}}
"""
        open(os.path.join(d, "main.go"), "w").write(src)
        ver = subprocess.check_output(["go", "env", "GOVERSION"], text=True).strip().removeprefix("go")
        open(os.path.join(d, "go.mod"), "w").write(f"module bench\n\ngo {'.'.join(ver.split('.')[:2])}\n")
        subprocess.check_call(["go", "build", "-o", "bench"], cwd=d)
        out = subprocess.check_output([os.path.join(d, "bench")], text=True)
    res = {}
    for line in out.splitlines():
        m = re.match(r'(.+) ([\d.e+-]+)$', line)
        if m:
            res[m.group(1)] = float(m.group(2))
    return res


def main():
    scratch = tempfile.mkdtemp(prefix="goaccel-timeit-")
    subprocess.run([os.path.join(ROOT, "bin", "goaccel"), "install", "--prefix", scratch, "--name", "goaccel-timeit"],
                   check=True, stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(scratch, "share", "jupyter")
    km, kc = start_new_kernel(kernel_name="goaccel-timeit")
    cells = {}
    try:
        cell(kc, DECLS)
        for name, stmt in CASES.items():
            cells[name] = per_loop_ns(cell(kc, f"%timeit {stmt}"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    bench = benchmarks()
    print(f"{'':12}{'%timeit ns':>12}{'Benchmark ns':>14}{'ratio':>8}   target")
    for name in CASES:
        print(f"{name:12}{cells[name]:12.2f}{bench[name]:14.2f}{cells[name] / max(bench[name], 1e-3):8.2f}   ≤ 2")
    print(f"%timeit's cost per loop (a statement that does nothing): {cells['nothing']:.2f} ns   target ≤ 5")


if __name__ == "__main__":
    main()
