"""Kernel benchmark through the real jupyter_client: goaccel beside ipykernel
in the same run. Prints start→ready, trivial-cell round trip (median and p90
of N; and the median of N new `x + N` cells), and stdout throughput of a cell printing 100,000 lines, plus ratios.

Usage: python bench/kernel_bench.py [--rounds 200] [--starts 5]
(run by `make bench`; needs bin/goaccel and the test virtualenv)."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parent.parent

KERNELS = {
    "goaccel": {
        "name": "goaccel-bench",
        "trivial": "1",
        "setup": "x := 1",
        "print": 'import "fmt"\nfor i := 0; i < 100000; i++ {\n\tfmt.Println("line", i, "of the throughput benchmark")\n}',
    },
    "ipykernel": {
        "name": "python3",
        "trivial": "1",
        "setup": "x = 1",
        "print": 'for i in range(100000):\n    print("line", i, "of the throughput benchmark")',
    },
}


def wait_idle(kc, msg_id, count_bytes=False):
    nbytes = 0
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            nbytes += len(m["content"]["text"].encode())
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return nbytes


def start(name):
    t0 = time.perf_counter()
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc, time.perf_counter() - t0


def bench(label, spec, rounds, starts):
    startup = []
    for _ in range(starts):
        km, kc, dt = start(spec["name"])
        startup.append(dt)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    km, kc, _ = start(spec["name"])
    try:
        for _ in range(10):  # warm up
            wait_idle(kc, kc.execute(spec["trivial"]))
        rtt = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            msg_id = kc.execute(spec["trivial"])
            wait_idle(kc, msg_id)
            rtt.append(time.perf_counter() - t0)
            kc.get_shell_msg(timeout=10)
        # A new trivial cell each time (`x + 17`, `x + 18`, ...), which no
        # kernel has seen before: goaccel checks and evaluates it.
        wait_idle(kc, kc.execute(spec["setup"]))
        kc.get_shell_msg(timeout=60)
        fresh = []
        for i in range(rounds):
            t0 = time.perf_counter()
            msg_id = kc.execute(f"x + {i + 17}")
            wait_idle(kc, msg_id)
            fresh.append(time.perf_counter() - t0)
            kc.get_shell_msg(timeout=10)
        t0 = time.perf_counter()
        msg_id = kc.execute(spec["print"])
        nbytes = wait_idle(kc, msg_id, True)
        dt = time.perf_counter() - t0
        kc.get_shell_msg(timeout=10)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    rtt.sort()
    return {
        "start_s": statistics.median(startup),
        "rtt_median_ms": statistics.median(rtt) * 1e3,
        "rtt_p90_ms": rtt[int(0.9 * len(rtt)) - 1] * 1e3,
        "fresh_median_ms": statistics.median(fresh) * 1e3,
        "throughput_MBps": nbytes / dt / 1e6,
        "bytes": nbytes,
    }


def raw_measure(name, trivial, rounds):
    """Start → first kernel_info_reply and execute → execute_reply over raw
    pyzmq sockets (blocking receives, no client-side polling), which shows
    the kernel's own cost without jupyter_client's loop overhead."""
    import json
    import zmq
    from jupyter_client.connect import write_connection_file
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.session import Session

    spec = KernelSpecManager().get_kernel_spec(name)
    fname, cfg = write_connection_file(ip="127.0.0.1")
    argv = [a.replace("{connection_file}", fname) for a in spec.argv]
    if argv[0] == "python":
        argv[0] = sys.executable
    session = Session(key=cfg["key"].encode() if isinstance(cfg["key"], str) else cfg["key"])
    ctx = zmq.Context.instance()
    shell = ctx.socket(zmq.DEALER)
    shell.linger = 0
    # libzmq retries a refused connect after RECONNECT_IVL (100 ms by
    # default); a short interval measures the kernel, not that wait.
    shell.setsockopt(zmq.RECONNECT_IVL, 5)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)
    try:
        shell.connect(f"tcp://127.0.0.1:{cfg['shell_port']}")
        poller = zmq.Poller()
        poller.register(shell, zmq.POLLIN)
        while True:
            session.send(shell, "kernel_info_request", {})
            if poller.poll(20):
                session.recv(shell)
                break
        start = time.perf_counter() - t0
        rtts = []
        for _ in range(rounds):
            t1 = time.perf_counter()
            session.send(shell, "execute_request", {"code": trivial, "silent": False, "store_history": True,
                                                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
            while True:
                _, msg = session.recv(shell, mode=0)
                if msg and msg["header"]["msg_type"] == "execute_reply":
                    break
            rtts.append(time.perf_counter() - t1)
        rtts.sort()
        return start, statistics.median(rtts), rtts[int(0.9 * len(rtts)) - 1]
    finally:
        proc.kill()
        proc.wait()
        shell.close()
        os.unlink(fname)


def bench_debug_launcher(rounds):
    km, kc, _ = start(KERNELS["goaccel"]["name"])
    try:
        setup = ('import "github.com/goaccel/goaccel/debuglauncher"\n'
                 'func trivial() int { return 1 }')
        wait_idle(kc, kc.execute(setup))
        kc.get_shell_msg(timeout=30)
        out = {}
        for n in (2, 4, 8):
            times = []
            for _ in range(rounds + 1):
                t0 = time.perf_counter()
                msg_id = kc.execute(f"_, launchErr := debuglauncher.DebugLauncher(trivial, nil, {n})\nlaunchErr")
                reply = kc.get_shell_msg(timeout=120)
                times.append(time.perf_counter() - t0)
                wait_idle(kc, msg_id)
                if reply["content"]["status"] != "ok":
                    raise RuntimeError(f"DebugLauncher failed: {reply['content']}")
            out[n] = statistics.median(times[1:])
        return out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--launches", type=int, default=5)
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="goaccel-bench-")
    subprocess.run([str(ROOT / "bin" / "goaccel"), "install", "--prefix", scratch, "--name", "goaccel-bench"],
                   check=True, stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(scratch, "share", "jupyter") + os.pathsep + os.path.join(sys.prefix, "share", "jupyter")
    os.environ["XDG_DATA_HOME"] = os.path.join(scratch, "data")
    res = {label: bench(label, spec, args.rounds, args.starts) for label, spec in KERNELS.items()}
    raw = {label: raw_measure(spec["name"], spec["trivial"], args.rounds) for label, spec in KERNELS.items()}
    launch = bench_debug_launcher(args.launches)
    g, p = res["goaccel"], res["ipykernel"]
    print(f"{'':24}{'goaccel':>12}{'ipykernel':>12}{'ratio':>10}   target")
    print(f"{'start → ready (s)':24}{g['start_s']:12.3f}{p['start_s']:12.3f}{p['start_s']/g['start_s']:9.1f}x   ≤ 0.150 s")
    print(f"{'round trip median (ms)':24}{g['rtt_median_ms']:12.3f}{p['rtt_median_ms']:12.3f}{p['rtt_median_ms']/g['rtt_median_ms']:9.1f}x   ≤ 1 ms")
    print(f"{'round trip p90 (ms)':24}{g['rtt_p90_ms']:12.3f}{p['rtt_p90_ms']:12.3f}{p['rtt_p90_ms']/g['rtt_p90_ms']:9.1f}x")
    print(f"{'new `x + N` cell (ms)':24}{g['fresh_median_ms']:12.3f}{p['fresh_median_ms']:12.3f}{p['fresh_median_ms']/g['fresh_median_ms']:9.1f}x   ≤ 1 ms")
    print(f"{'stdout 100k lines (MB/s)':24}{g['throughput_MBps']:12.2f}{p['throughput_MBps']:12.2f}{g['throughput_MBps']/p['throughput_MBps']:9.1f}x   ≥ 10 MB/s")
    print("(ratio = how many times goaccel is ahead of ipykernel)")
    rg, rp = raw["goaccel"], raw["ipykernel"]
    print()
    print("The same over raw pyzmq sockets (no jupyter_client polling loop):")
    print(f"{'exec → kernel_info_reply (s)':30}{rg[0]:10.3f}{rp[0]:12.3f}{rp[0]/rg[0]:9.1f}x   ≤ 0.150 s")
    print(f"{'execute → reply median (ms)':30}{rg[1]*1e3:10.3f}{rp[1]*1e3:12.3f}{rp[1]/rg[1]:9.1f}x   ≤ 1 ms")
    print(f"{'execute → reply p90 (ms)':30}{rg[2]*1e3:10.3f}{rp[2]*1e3:12.3f}{rp[2]/rg[2]:9.1f}x")
    print()
    print("DebugLauncher, execute → reply with trivial workers (median of %d):" % args.launches)
    for n, t in launch.items():
        print(f"  {n} workers: {t*1e3:8.1f} ms" + ("   target ≤ 150 ms" if n == 2 else ""))


if __name__ == "__main__":
    main()
