"""Launch -> first step across nodes, through the real kernel.

usage: launch_latency.py NS1 NS2   (namespaces made by scripts/netns.sh, with
                                   10.77.0.1 and 10.77.0.2)

The kernel runs in NS1, `goaccel node` agents in NS2. A cell calls
NotebookLauncher(firstStep, …): every rank creates its Accelerator (joining
the process group) and all-reduces one number; the figure is the time from
the call to the last rank's end of that step (one clock: the hosts share the
machine). Measured, in the same run: 1 node x 2 processes (the peer), then 2
nodes x 1 process with an external etcd (Debian's etcd-server, in NS1) and
with the etcd embedded in the kernel. The medians and the ratios to the peer
are printed.
"""
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "bin" / "goaccel"
RUNS = 7

DECLS = '''import (
\t"fmt"
\t"time"
\t"github.com/goaccel/goaccel/accelerate"
\t"github.com/goaccel/goaccel/launcher"
)

func firstStep(t0 int64) (float64, error) {
\tacc, err := accelerate.NewAccelerator()
\tif err != nil {
\t\treturn 0, err
\t}
\tdefer acc.EndTraining()
\tbuf := []float64{1}
\tif err := acc.AllReduceFloat64(buf, "sum"); err != nil {
\t\treturn 0, err
\t}
\treturn float64(time.Now().UnixNano()-t0) / 1e6, nil
}

func measure(o launcher.Options) {
\tt0 := time.Now()
\tres, err := launcher.NotebookLauncher(firstStep, []any{t0.UnixNano()}, o)
\tif err != nil {
\t\tfmt.Println("ERROR", err)
\t\treturn
\t}
\tlast := 0.0
\tfor _, r := range res {
\t\tlast = max(last, r[0].(float64))
\t}
\tfmt.Printf("FIRST_STEP_MS %.2f\\n", last)
}
'''


def main(ns1, ns2):
    scratch = Path(tempfile.mkdtemp(prefix="goaccel-bench-multinode-"))
    procs = []
    try:
        import os
        os.environ["JUPYTER_PATH"] = str(scratch / "share" / "jupyter")
        os.environ["JUPYTER_RUNTIME_DIR"] = str(scratch / "runtime")
        subprocess.run([str(BINARY), "install", "--prefix", str(scratch), "--name", "gb"], check=True,
                       capture_output=True)
        specf = scratch / "share" / "jupyter" / "kernels" / "gb" / "kernel.json"
        spec = json.loads(specf.read_text())
        spec["argv"] = ["ip", "netns", "exec", ns1, *spec["argv"]]
        specf.write_text(json.dumps(spec))

        etcd = shutil.which("etcd")
        if etcd:
            url = "http://10.77.0.1:2379"
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns1, etcd, "--name", "b", "--data-dir", str(scratch / "etcd"),
                 "--listen-client-urls", url, "--advertise-client-urls", url,
                 "--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls",
                 "http://127.0.0.1:2380", "--initial-cluster", "b=http://127.0.0.1:2380"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for rdzv, endpoint in (("bench-ext", "10.77.0.1:2379"), ("bench-emb", "10.77.0.1:29500")):
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns2, str(BINARY), "node", "--rdzv-endpoint", endpoint, "--rdzv-id", rdzv,
                 "--node-rank", "1", "--log-level", "warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        from jupyter_client.manager import KernelManager
        km = KernelManager(kernel_name="gb", transport="ipc", ip=str(scratch / "kipc"))
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            run(kc, DECLS)
            cases = [("1 node x 2 processes (peer)", 'NumProcesses: 2'),
                     ("2 nodes x 1 process, etcd-server", 'NumNodes: 2, NumProcesses: 1, RdzvBackend: "etcd", '
                      'RdzvEndpoint: "10.77.0.1:2379", RdzvID: "bench-ext"'),
                     ("2 nodes x 1 process, embedded etcd", 'NumNodes: 2, NumProcesses: 1, RdzvBackend: "etcd", '
                      'MasterAddr: "10.77.0.1", RdzvID: "bench-emb"')]
            if not etcd:
                cases.pop(1)
            results = {}
            for name, opts in cases:
                ts = []
                for _ in range(RUNS):
                    out = run(kc, f"measure(launcher.Options{{{opts}}})")
                    if "FIRST_STEP_MS" not in out:
                        raise SystemExit(f"{name}: {out}")
                    ts.append(float(out.split("FIRST_STEP_MS")[1].split()[0]))
                results[name] = ts
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        peer = statistics.median(results[cases[0][0]])
        print(f"launch -> first step (Accelerator + one all-reduce on every rank), median of {RUNS}, "
              "kernel in one namespace, node agent in the other")
        print(f"{'':38} {'median':>9} {'min':>9} {'max':>9} {'vs peer':>8}")
        for name, _ in cases:
            ts = results[name]
            m = statistics.median(ts)
            print(f"{name:38} {m:7.0f}ms {min(ts):7.0f}ms {max(ts):7.0f}ms {m / peer:7.2f}x")
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(scratch, ignore_errors=True)


def run(kc, code, timeout=120):
    """Executes code, returns its stdout."""
    msg_id = kc.execute(code)
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            out.append("ERROR " + msg["content"]["evalue"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)
    raise SystemExit(f"no reply within {timeout}s")


if __name__ == "__main__":
    main(*sys.argv[1:3])
