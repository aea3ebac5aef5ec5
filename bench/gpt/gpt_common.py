"""What the PyTorch and JAX peers of the GPT benchmark share: the command
line, the token file and its train/val split, the training batches
(nanoGPT's get_batch from a seeded numpy Generator) and the fixed
evaluation windows, the initial weights (drawn here in numpy so that both
frameworks start from the same values), nanoGPT's learning-rate schedule,
the FLOP accounting of nanoGPT's estimate_mfu, a float32 matmul peak for the
MFU, and the measurement loop that prints the one result line

    GPTBENCH <torch|jax> <json>

The model is nanoGPT's GPT (model.py): token + learned position embedding,
n_layer pre-LayerNorm blocks (fused qkv Linear, causal softmax attention,
output projection; Linear 4C, exact GELU, Linear C), a final LayerNorm and
logits through the tied token embedding; mean cross-entropy over B·T.

Step numbering: `it` is the optimizer step, counted from 0 over the whole
run (the --warmup-steps unmeasured steps first, then the --steps measured
ones); the schedule is evaluated at `it`. An evaluation "at step s" is taken
after s optimizer steps (s = 0: before the first). --decay-iters defaults to
the number of optimizer steps run (--warmup-steps + --steps; pass
--warmup-steps 0 for a training run of exactly --steps).

A step's time: drawing the batch, handing it to the framework, forward,
backward, clipping, the update, and the loss read back as a Python float.

The JSON (strict: NaN is written as null): framework-specific fields
(torch: version, torch_threads, interop_threads, mkldnn_bf16, sdpa_backend
{train, eval}, optimizer, foreach; jax: version, jaxlib, devices, xla_flags,
optimizer), then framework, dtype, threads, affinity (CPUs the process may
run on), config (every flag, --decay-iters and --threads resolved), params,
params_non_embedding (params − wpe, nanoGPT's count), param_groups
(decay_tensors, decay_params, no_decay_tensors, no_decay_params),
flops_per_token (6·N_non_embedding + 12·L·C·T), tokens_per_step (B·T),
measured_steps, step_ms_median, step_ms_mean, step_ms_min, warmup_s (the
unmeasured steps, compilation included), tokens_per_s (B·T / mean step),
achieved_gflops (flops_per_token · tokens_per_s), peak_gflops (best float32
matmul, measured after the training), peak_gflops_by_size, mfu
(achieved / peak), with --dtype bfloat16 also peak_gflops_bf16,
peak_gflops_bf16_by_size, mfu_bf16; initial_loss, final_loss, train_s (all
steps and evaluations), eval_s, peak_s; in train mode train_log [[it, lr,
loss], ...] for every optimizer step; with --eval-interval evals [[step,
train_eval, val_eval], ...]; wall_s (from the peer's start)."""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

T0 = time.perf_counter()  # the peers import this module first
LN_EPS = 1e-5


# ---------------------------------------------------------------- command line

def parse_args(framework, argv=None):
    p = argparse.ArgumentParser(description=f"nanoGPT character-level GPT in {framework} (bench/gpt)")
    a = p.add_argument
    a("--tokens", required=True, help="the corpus: little-endian int32 token ids")
    a("--vocab", type=int, required=True, help="vocabulary size V (ids are < V)")
    a("--n-layer", type=int, default=4)
    a("--n-head", type=int, default=4)
    a("--n-embd", type=int, default=128)
    a("--block", type=int, default=64, help="context length T")
    a("--batch", type=int, default=12, help="batch size B")
    a("--dropout", type=float, default=0.0)
    a("--bias", type=int, choices=(0, 1), default=0, help="biases in Linear and LayerNorm")
    a("--optimizer", choices=("adamw", "adam"), default="adamw")
    a("--lr", type=float, default=1e-3)
    a("--min-lr", type=float, default=1e-4)
    a("--warmup", type=int, default=100, help="LR warm-up iterations of the schedule")
    a("--decay-iters", type=int, default=None,
      help="end of the cosine decay (default: every optimizer step of the run, --warmup-steps + --steps)")
    a("--schedule", choices=("cosine", "none"), default="cosine", help="none: constant --lr")
    a("--beta2", type=float, default=0.99, help="Adam β2 (β1 is 0.9); 0.99 as nanoGPT's shakespeare_char config")
    a("--eps", type=float, default=1e-8)
    a("--weight-decay", type=float, default=0.1, help="adamw only; on tensors of ≥ 2 dims")
    a("--clip", type=float, default=1.0, help="clip gradients to this global L2 norm; 0 = off")
    a("--steps", type=int, default=30, help="measured optimizer steps")
    a("--warmup-steps", type=int, default=5, help="unmeasured optimizer steps run first")
    a("--threads", type=int, default=0,
      help="PyTorch: set_num_threads; JAX: recorded only (XLA sizes its pool by the CPU affinity). "
           "Default: the CPUs this process may run on")
    a("--dtype", choices=("float32", "bfloat16"), default="float32",
      help="bfloat16: mixed precision (float32 parameters and loss), needs avx512_bf16")
    a("--seed", type=int, default=1337)
    a("--mode", choices=("speed", "train"), default="speed",
      help="train: also the loss and LR of every step and the evaluations")
    a("--eval-interval", type=int, default=0, help="evaluate at step 0, every K steps and at the end; 0 = off")
    a("--eval-windows", type=int, default=200, help="train-split windows evaluated (val: all)")
    a("--no-peak", action="store_true", help="skip the matmul peak (no MFU)")
    args = p.parse_args(argv)
    if args.n_embd % args.n_head:
        p.error("--n-embd must be a multiple of --n-head")
    if args.steps < 1 or args.warmup_steps < 0:
        p.error("--steps must be ≥ 1 and --warmup-steps ≥ 0")
    if args.threads <= 0:
        args.threads = len(os.sched_getaffinity(0))
    if args.decay_iters is None:
        args.decay_iters = args.warmup_steps + args.steps
    if args.dtype == "bfloat16" and not cpu_has_bf16():
        sys.exit(f"{framework}_gpt: --dtype bfloat16 needs a CPU with avx512_bf16 (or amx_bf16); "
                 "this one has neither (see /proc/cpuinfo flags)")
    return args


def cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


# ---------------------------------------------------------------- data

def load_tokens(args):
    """(train, val): int32 arrays, the first int(0.9·n) tokens and the rest."""
    data = np.fromfile(args.tokens, dtype="<i4").astype(np.int32)
    if data.size == 0:
        sys.exit(f"{args.tokens}: no tokens")
    if data.min() < 0 or data.max() >= args.vocab:
        sys.exit(f"{args.tokens}: token ids in [{data.min()}, {data.max()}], outside [0, {args.vocab})")
    n = int(0.9 * len(data))
    train, val = data[:n], data[n:]
    if len(train) <= args.block + 1:
        sys.exit(f"{args.tokens}: {len(train)} training tokens, too few for --block {args.block}")
    return train, val


class Batches:
    """nanoGPT's get_batch: B offsets uniform in [0, len(train) − T),
    x = train[i:i+T], y = train[i+1:i+1+T]; int32 numpy arrays [B, T]."""

    def __init__(self, train, args):
        self.train, self.B, self.T = train, args.batch, args.block
        self.rng = np.random.default_rng(args.seed)
        self.ar = np.arange(self.T)

    def next(self):
        ix = self.rng.integers(0, len(self.train) - self.T, size=self.B)
        idx = ix[:, None] + self.ar
        return self.train[idx], self.train[idx + 1]


def eval_batches(split, args, limit=None):
    """Every non-overlapping window of split (i = 0, T, 2T, ... while
    i + T + 1 <= len), the first `limit` of them if given, in batches of B
    windows (the last one partial): [(x, y)], int32 [b, T]."""
    T = args.block
    starts = np.arange(0, len(split) - T, T)  # i + T + 1 <= len  <=>  i < len − T
    if limit is not None:
        starts = starts[:limit]
    out = []
    for j in range(0, len(starts), args.batch):
        idx = starts[j:j + args.batch, None] + np.arange(T)
        out.append((split[idx], split[idx + 1]))
    return out


# ---------------------------------------------------------------- model

def param_specs(args):
    """The parameters in a fixed order: (name, shape, init), init one of
    ('normal', std), 'zeros', 'ones'. Linear weights in PyTorch's [out, in]
    layout; the LM head is wte (tied)."""
    V, T, C, L = args.vocab, args.block, args.n_embd, args.n_layer
    std, proj_std = 0.02, 0.02 / math.sqrt(2 * L)
    specs = [("wte.weight", (V, C), ("normal", std)), ("wpe.weight", (T, C), ("normal", std))]

    def linear(name, n_out, n_in, s):
        specs.append((name + ".weight", (n_out, n_in), ("normal", s)))
        if args.bias:
            specs.append((name + ".bias", (n_out,), "zeros"))

    def layer_norm(name):
        specs.append((name + ".weight", (C,), "ones"))
        if args.bias:
            specs.append((name + ".bias", (C,), "zeros"))

    for i in range(L):
        h = f"h.{i}."
        layer_norm(h + "ln_1")
        linear(h + "attn.c_attn", 3 * C, C, std)
        linear(h + "attn.c_proj", C, C, proj_std)
        layer_norm(h + "ln_2")
        linear(h + "mlp.c_fc", 4 * C, C, std)
        linear(h + "mlp.c_proj", C, 4 * C, proj_std)
    layer_norm("ln_f")
    return specs


def init_params(args):
    """{name: float32 numpy array} drawn from a Generator seeded with --seed
    (a stream apart from the batches'): nanoGPT's init — N(0, 0.02) for every
    Linear weight and both embeddings, N(0, 0.02/sqrt(2·n_layer)) for the two
    residual projections (c_proj), zero biases, LayerNorm weights 1."""
    rng = np.random.default_rng([args.seed, 0x6770])
    out = {}
    for name, shape, init in param_specs(args):
        if init == "zeros":
            out[name] = np.zeros(shape, np.float32)
        elif init == "ones":
            out[name] = np.ones(shape, np.float32)
        else:
            out[name] = (rng.standard_normal(shape, dtype=np.float32) * np.float32(init[1])).astype(np.float32)
    return out


def decays(name, shape):
    """nanoGPT's two parameter groups: weight decay on tensors of ≥ 2 dims."""
    return len(shape) >= 2


def param_counts(args):
    specs = param_specs(args)
    total = sum(math.prod(s) for _, s, _ in specs)
    wpe = args.block * args.n_embd
    dec = [(n, s) for n, s, _ in specs if decays(n, s)]
    nodec = [(n, s) for n, s, _ in specs if not decays(n, s)]
    return {"total": total, "non_embedding": total - wpe,
            "decay_tensors": len(dec), "decay_params": sum(math.prod(s) for _, s in dec),
            "no_decay_tensors": len(nodec), "no_decay_params": sum(math.prod(s) for _, s in nodec)}


def flops_per_token(args, n_nonembedding):
    """nanoGPT's estimate_mfu: 6·N + 12·L·C·T (forward and backward; the
    attention scores and their weighted sum)."""
    return 6 * n_nonembedding + 12 * args.n_layer * args.n_embd * args.block


# ---------------------------------------------------------------- schedule

def get_lr(it, args):
    """nanoGPT's get_lr at optimizer step it (from 0): linear warm-up to
    --lr over --warmup steps, cosine decay to --min-lr at --decay-iters, then
    --min-lr. --schedule none: --lr throughout."""
    if args.schedule == "none":
        return args.lr
    if it < args.warmup:
        return args.lr * (it + 1) / (args.warmup + 1)
    if it > args.decay_iters or args.decay_iters <= args.warmup:
        return args.min_lr
    ratio = (it - args.warmup) / (args.decay_iters - args.warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return args.min_lr + coeff * (args.lr - args.min_lr)


# ---------------------------------------------------------------- matmul peak

PEAK_SIZES = (512, 1024, 2048)


def peak_matmul(framework, threads, dtype="float32", repeats=5):
    """Best GFLOP/s of an n×n by n×n matmul (n in PEAK_SIZES, `repeats`
    timed runs each after one untimed) in `framework` with the thread setting
    the training had (PyTorch: set_num_threads(threads); JAX: its CPU client).
    Returns (best, {n: best at n})."""
    per = {}
    rng = np.random.default_rng(0)
    if framework == "torch":
        import torch
        torch.set_num_threads(threads)
        td = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
        for n in PEAK_SIZES:
            a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(td)
            b = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(td)
            c = torch.mm(a, b)
            best = math.inf
            for _ in range(repeats):
                t = time.perf_counter()
                c = torch.mm(a, b)
                best = min(best, time.perf_counter() - t)
            per[n] = 2 * n ** 3 / best / 1e9
            del c
    elif framework == "jax":
        import jax
        import jax.numpy as jnp
        jd = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[dtype]
        mm = jax.jit(lambda a, b: a @ b)
        for n in PEAK_SIZES:
            a = jnp.asarray(rng.standard_normal((n, n), dtype=np.float32), jd)
            b = jnp.asarray(rng.standard_normal((n, n), dtype=np.float32), jd)
            mm(a, b).block_until_ready()
            best = math.inf
            for _ in range(repeats):
                t = time.perf_counter()
                mm(a, b).block_until_ready()
                best = min(best, time.perf_counter() - t)
            per[n] = 2 * n ** 3 / best / 1e9
    else:
        raise ValueError(framework)
    return max(per.values()), {str(n): round(g, 2) for n, g in per.items()}


# ---------------------------------------------------------------- the run

def finite(v):
    """v with every NaN or infinite float replaced by None (the line is
    strict JSON: Go's encoding/json reads no NaN)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v


def run(framework, args, step, evaluate, info):
    """Drives the run and prints the result line.

    step(it, x, y, lr) -> float: one optimizer step on the batch (x, y)
    (int32 numpy [B, T]) at learning rate lr, returning the loss (computed
    before the update) as a host float. evaluate(batches) -> float: the mean
    loss over all positions of those (x, y) batches, model in eval mode
    (NaN when there are none: a split shorter than T + 1 tokens).
    info() -> dict: framework-specific fields for the JSON (version,
    threads...), called after the training."""
    train, val = load_tokens(args)
    batches = Batches(train, args)
    ev = None
    if args.eval_interval > 0:
        ev = (eval_batches(train, args, args.eval_windows), eval_batches(val, args))
    total = args.warmup_steps + args.steps
    evals, log, durs = [], [], []
    eval_s = 0.0

    def do_eval(s):
        nonlocal eval_s
        t = time.perf_counter()
        tr, va = evaluate(ev[0]), evaluate(ev[1])
        eval_s += time.perf_counter() - t
        evals.append([s, tr, va])
        print(f"{framework}: step {s}: train {tr:.4f}, val {va:.4f}", file=sys.stderr, flush=True)

    t_train = time.perf_counter()
    warm_s = 0.0
    for it in range(total):
        if ev and it % args.eval_interval == 0:
            do_eval(it)
        t = time.perf_counter()
        x, y = batches.next()
        lr = get_lr(it, args)
        loss = step(it, x, y, lr)
        d = time.perf_counter() - t
        if it < args.warmup_steps:
            warm_s += d
        else:
            durs.append(d)
        if not math.isfinite(loss):
            sys.exit(f"{framework}: loss {loss} at step {it}")
        log.append([it, lr, loss])
    if ev:
        do_eval(total)
    train_s = time.perf_counter() - t_train

    peak = peak_per = None
    peak_bf16 = peak_bf16_per = None
    t = time.perf_counter()
    if not args.no_peak:
        peak, peak_per = peak_matmul(framework, args.threads)
        if args.dtype == "bfloat16":
            peak_bf16, peak_bf16_per = peak_matmul(framework, args.threads, "bfloat16")
    peak_s = time.perf_counter() - t

    counts = param_counts(args)
    fpt = flops_per_token(args, counts["non_embedding"])
    mean_s = statistics.fmean(durs) if durs else math.nan
    tps = args.batch * args.block / mean_s if durs else math.nan
    achieved = fpt * tps / 1e9
    info = info()
    out = dict(info)
    out.update({
        "framework": framework, "dtype": args.dtype, "threads": args.threads,
        "affinity": len(os.sched_getaffinity(0)),
        "config": {k: v for k, v in vars(args).items()},
        "params": counts["total"], "params_non_embedding": counts["non_embedding"],
        "param_groups": {k: counts[k] for k in ("decay_tensors", "decay_params", "no_decay_tensors", "no_decay_params")},
        "flops_per_token": fpt,
        "tokens_per_step": args.batch * args.block,
        "measured_steps": len(durs),
        "step_ms_median": statistics.median(durs) * 1e3 if durs else math.nan,
        "step_ms_mean": mean_s * 1e3,
        "step_ms_min": min(durs) * 1e3 if durs else math.nan,
        "warmup_s": warm_s,
        "tokens_per_s": tps,
        "achieved_gflops": achieved,
        "peak_gflops": peak, "peak_gflops_by_size": peak_per,
        "mfu": achieved / peak if peak and math.isfinite(achieved) else None,
        "initial_loss": log[0][2], "final_loss": log[-1][2],
        "train_s": train_s, "eval_s": eval_s, "peak_s": peak_s,
    })
    if peak_bf16:
        out.update({"peak_gflops_bf16": peak_bf16, "peak_gflops_bf16_by_size": peak_bf16_per,
                    "mfu_bf16": achieved / peak_bf16})
    if args.mode == "train":
        out["train_log"] = log  # [step, lr, loss] for every optimizer step
    if ev:
        out["evals"] = evals  # [step, train_eval, val_eval]
    out["wall_s"] = time.perf_counter() - T0
    out = finite(out)
    print(f"GPTBENCH {framework} {json.dumps(out, allow_nan=False)}", flush=True)
    mfu = f"{100 * out['mfu']:.1f}% of {peak:.0f} GFLOP/s" if out["mfu"] else "n/a"
    print(f"{framework} {info.get('version', '')} {args.dtype} {args.threads} thr: "
          f"L{args.n_layer} H{args.n_head} C{args.n_embd} T{args.block} B{args.batch}, "
          f"{counts['total'] / 1e6:.3f}M params: step {statistics.median(durs) * 1e3 if durs else math.nan:.1f} ms median "
          f"({mean_s * 1e3:.1f} mean), {tps:,.0f} tokens/s, {achieved:.1f} GFLOP/s, MFU {mfu}; "
          f"loss {log[0][2]:.4f} -> {log[-1][2]:.4f}; wall {out['wall_s']:.1f} s", file=sys.stderr, flush=True)
    return out
