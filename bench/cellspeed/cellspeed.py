"""Compiled cells vs go run: fib(32), a 1 Mi-element dot product (20
times) and 50 training steps of train_mlp.ipynb's MLP (2-64-64-2, batch
256), declared in cells of the real goaccel kernel, timed inside the cell,
beside the same code built by `go build` and run on the same machine in the
same run. Prints each time and the speed ratio (go run time / cell time)."""
import os
import re
import subprocess
import sys
import tempfile
import time

from jupyter_client.manager import start_new_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def parts():
    src = open(os.path.join(HERE, "bench.go.txt")).read()
    decls = src.split("// -- declarations --\n", 1)[1].split("// -- statements --\n", 1)[0]
    stmts = src.split("// -- statements --\n", 1)[1]
    return decls, stmts


def go_run(decls, stmts):
    with tempfile.TemporaryDirectory() as d:
        body = "\n".join("\t" + l for l in stmts.splitlines())
        open(os.path.join(d, "main.go"), "w").write(f"package main\n\n{decls}\nfunc main() {{\n{body}\n}}\n")
        ver = subprocess.check_output(["go", "env", "GOVERSION"], text=True).strip().removeprefix("go")
        open(os.path.join(d, "go.mod"), "w").write(f"module bench\n\ngo {'.'.join(ver.split('.')[:2])}\n")
        subprocess.check_call(["go", "build", "-o", "bench"], cwd=d)
        return subprocess.check_output([os.path.join(d, "bench")], text=True)


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


def times(text):
    return {k: int(v) for k, v in re.findall(r"^(\w+)_ns (\d+)$", text, re.M)}


def main():
    decls, stmts = parts()
    scratch = tempfile.mkdtemp(prefix="goaccel-cellspeed-")
    subprocess.run([os.path.join(ROOT, "bin", "goaccel"), "install", "--prefix", scratch, "--name", "goaccel-cellspeed"],
                   check=True, stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(scratch, "share", "jupyter")
    km, kc = start_new_kernel(kernel_name="goaccel-cellspeed")
    try:
        t = time.monotonic()
        cell(kc, decls)
        build_s = time.monotonic() - t
        c = times(cell(kc, stmts))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    g = times(go_run(decls, stmts))
    print(f"{'':28}{'cell':>10}{'go run':>10}{'speed ratio':>13}   target")
    for k, label in (("fib", "fib(32), best of 5 (ms)"), ("dot", "dot 1Mi x20, best of 5 (ms)"),
                     ("mlp", "MLP step x50, best of 5 (ms)")):
        print(f"{label:28}{c[k]/1e6:10.1f}{g[k]/1e6:10.1f}{g[k]/c[k]:13.2f}   ≥ 0.8")
    print(f"(declaration cell, built or from the cache: {build_s:.2f} s)")


if __name__ == "__main__":
    main()
