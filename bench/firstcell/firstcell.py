"""The first cell of every example notebook in a new kernel, as a user who
just ran `make lab` (or `goaccel install`) meets it: a fresh kernel started
through jupyter_client, then the notebook's first code cell, timed from the
execute request to the kernel going idle. Beside it, ipykernel starting and
running a one-line first cell in the same run. Target: every first cell
answers in ≤ 2 s."""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client.manager import start_new_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def first_code_cell(path):
    nb = json.load(open(path))
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            if src.strip():
                return src
    return None


def run(kernel_name, code, cwd):
    t0 = time.monotonic()
    km, kc = start_new_kernel(kernel_name=kernel_name, cwd=cwd)
    started = time.monotonic() - t0
    try:
        t1 = time.monotonic()
        msg_id = kc.execute(code)
        err = None
        while True:
            m = kc.get_iopub_msg(timeout=600)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "error":
                err = m["content"]["ename"] + ": " + m["content"]["evalue"]
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        return started, time.monotonic() - t1, err
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main():
    scratch = tempfile.mkdtemp(prefix="goaccel-firstcell-")
    subprocess.run([os.path.join(ROOT, "bin", "goaccel"), "install", "--prefix", scratch, "--name", "goaccel-firstcell",
                    "--no-prebuild"], check=True, stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(scratch, "share", "jupyter") + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "notebooks", "*.ipynb"))):
        code = first_code_cell(path)
        if code is None:
            continue
        started, cell, err = run("goaccel-firstcell", code, os.path.dirname(path))
        rows.append((os.path.basename(path), started, cell, err))
        print(f"{os.path.basename(path):28} start {started:6.2f} s   first cell {cell:6.2f} s" + (f"   ({err})" if err else ""), flush=True)
    py_started, py_cell, _ = run("python3", "x = 1 + 1", ROOT)
    cells = [r[2] for r in rows]
    print(f"goaccel first cells: median {statistics.median(cells):.2f} s, max {max(cells):.2f} s (target ≤ 2 s)")
    print(f"ipykernel: start {py_started:.2f} s, a one-line first cell {py_cell:.3f} s")
    if any(r[3] for r in rows):
        sys.exit("a first cell failed")


if __name__ == "__main__":
    main()
