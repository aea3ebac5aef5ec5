"""nanoGPT's GPT in pure JAX (jax.numpy) on CPU: the same model as
torch_gpt.py, one jax.jit-ed training step (forward, backward, global-norm
clipping, AdamW or Adam written out with PyTorch's semantics) whose
parameters and optimizer state are donated; nanoGPT's LR schedule computed
on the host and passed in. --dtype bfloat16: parameters and optimizer state
stay float32 and are cast to bfloat16 for the forward (LayerNorm statistics
and the attention softmax in float32, logits cast to float32 for the loss).
Threads: XLA's default CPU client, whose pool is sized by the CPUs the
process may run on (taskset); XLA_FLAGS is honoured as given. The initial
weights and the batches come from gpt_common (numpy, seeded), the same as
the PyTorch peer's. See gpt_common for the CLI and the output."""
import functools
import math
import os
import sys

import gpt_common as gc

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np

B1 = 0.9


def is_linear(name):
    return name.endswith(".weight") and ("attn.c_" in name or "mlp.c_" in name)


def to_jax(init):
    """gpt_common's parameters, Linear weights transposed to [in, out]."""
    return {n: jnp.asarray(w.T if is_linear(n) else w) for n, w in init.items()}


def layer_norm(x, p, name):
    xf = x.astype(jnp.float32)
    mu = xf.mean(-1, keepdims=True)
    var = jnp.square(xf - mu).mean(-1, keepdims=True)
    y = (xf - mu) * jax.lax.rsqrt(var + gc.LN_EPS) * p[name + ".weight"]
    if name + ".bias" in p:
        y = y + p[name + ".bias"]
    return y.astype(x.dtype)


def linear(x, p, name):
    y = x @ p[name + ".weight"]
    if name + ".bias" in p:
        y = y + p[name + ".bias"]
    return y


def gelu(u):
    """Exact GELU, 0.5·u·(1 + erf(u/√2)) as PyTorch's nn.GELU() computes it.
    (jax.nn.gelu(approximate=False) is the same function through erfc; on
    XLA CPU its backward fuses into a slow transposing loop, ~15% of the
    baby model's step.)"""
    return 0.5 * u * (1.0 + jax.lax.erf(u * (1.0 / math.sqrt(2.0))))


def make_model(a):
    """loss(p, x, y, key, train, reduction): the mean (or summed)
    cross-entropy; dropout only when train and a.dropout > 0."""
    C, H, L = a.n_embd, a.n_head, a.n_layer
    D = C // H
    scale = 1.0 / math.sqrt(D)
    cdt = jnp.bfloat16 if a.dtype == "bfloat16" else jnp.float32

    def loss(p, x, y, key, train, reduction="mean"):
        use_drop = train and a.dropout > 0
        keys = iter(jax.random.split(key, 1 + 3 * L)) if use_drop else None

        def drop(t):
            if not use_drop:
                return t
            keep = jax.random.bernoulli(next(keys), 1.0 - a.dropout, t.shape)
            return jnp.where(keep, t / (1.0 - a.dropout), jnp.zeros((), t.dtype)).astype(t.dtype)

        if cdt != jnp.float32:
            p = jax.tree.map(lambda w: w.astype(cdt), p)
        B, T = x.shape
        h = drop(p["wte.weight"][x] + p["wpe.weight"][:T])
        causal = jnp.tril(jnp.ones((T, T), bool))
        for i in range(L):
            pre = f"h.{i}."
            # attention
            u = layer_norm(h, p, pre + "ln_1")
            q, k, v = jnp.split(linear(u, p, pre + "attn.c_attn"), 3, axis=-1)
            q, k, v = (t.reshape(B, T, H, D) for t in (q, k, v))
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) * scale
            s = jnp.where(causal, s, -jnp.inf)
            w = drop(jax.nn.softmax(s, axis=-1).astype(cdt))
            u = jnp.einsum("bhqk,bkhd->bqhd", w, v).reshape(B, T, C)
            h = h + drop(linear(u, p, pre + "attn.c_proj"))
            # MLP
            u = layer_norm(h, p, pre + "ln_2")
            u = gelu(linear(u, p, pre + "mlp.c_fc"))
            h = h + drop(linear(u, p, pre + "mlp.c_proj"))
        h = layer_norm(h, p, "ln_f")
        logits = (h @ p["wte.weight"].T).astype(jnp.float32)  # tied LM head
        lp = jax.nn.log_softmax(logits, axis=-1)
        nll = -jnp.take_along_axis(lp, y[..., None], axis=-1)[..., 0]
        return nll.sum() if reduction == "sum" else nll.mean()

    return loss


def make_step(a, loss, decay_mask):
    b2, eps, wd, clip = a.beta2, a.eps, a.weight_decay, a.clip
    adamw = a.optimizer == "adamw"
    base_key = jax.random.PRNGKey(a.seed)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(p, opt, x, y, lr, it):
        key = jax.random.fold_in(base_key, it)
        lval, g = jax.value_and_grad(loss)(p, x, y, key, True)
        if clip > 0:  # torch.nn.utils.clip_grad_norm_
            norm = jnp.sqrt(sum(jnp.sum(jnp.square(t)) for t in jax.tree.leaves(g)))
            coef = jnp.minimum(1.0, clip / (norm + 1e-6))
            g = jax.tree.map(lambda t: t * coef, g)
        t = opt["t"] + 1
        tf = t.astype(jnp.float32)
        bc1 = 1.0 - B1 ** tf
        bc2_sqrt = jnp.sqrt(1.0 - b2 ** tf)
        m = jax.tree.map(lambda m, g: B1 * m + (1.0 - B1) * g, opt["m"], g)
        v = jax.tree.map(lambda v, g: b2 * v + (1.0 - b2) * g * g, opt["v"], g)

        def update(name, w):
            if adamw and decay_mask[name]:
                w = w * (1.0 - lr * wd)  # decoupled weight decay
            return w - (lr / bc1) * m[name] / (jnp.sqrt(v[name]) / bc2_sqrt + eps)

        p = {n: update(n, w) for n, w in p.items()}
        return p, {"m": m, "v": v, "t": t}, lval

    return step


def build(a):
    """(state, step, evaluate, info) for gpt_common.run; state["p"] holds
    the parameters (Linear weights [in, out]), state["opt"] m, v and t."""
    init = gc.init_params(a)
    decay_mask = {n: gc.decays(n, w.shape) for n, w in init.items()}
    loss = make_model(a)
    step_fn = make_step(a, loss, decay_mask)
    eval_fn = jax.jit(lambda p, x, y: loss(p, x, y, jax.random.PRNGKey(0), False, "sum"))
    state = {"p": to_jax(init)}
    state["opt"] = {"m": jax.tree.map(jnp.zeros_like, state["p"]), "v": jax.tree.map(jnp.zeros_like, state["p"]),
                    "t": jnp.zeros((), jnp.int32)}

    def step(it, x, y, lr):
        state["p"], state["opt"], lval = step_fn(state["p"], state["opt"], x, y, np.float32(lr), np.int32(it))
        return float(lval)

    def evaluate(batches):
        total, n = 0.0, 0
        for x, y in batches:
            total += float(eval_fn(state["p"], x, y))
            n += y.size
        return total / n if n else math.nan

    def info():
        return {"version": jax.__version__, "jaxlib": jaxlib.__version__,
                "devices": str(jax.devices()), "xla_flags": os.environ.get("XLA_FLAGS", ""),
                "optimizer": a.optimizer}

    return state, step, evaluate, info


def main():
    a = gc.parse_args("jax")
    if a.threads != len(os.sched_getaffinity(0)):
        print(f"jax_gpt: --threads {a.threads} is recorded only: XLA's CPU client sizes its pool by the "
              f"{len(os.sched_getaffinity(0))} CPUs of the affinity (use taskset, or XLA_FLAGS)", file=sys.stderr)
    _, step, evaluate, info = build(a)
    gc.run("jax", a, step, evaluate, info)


if __name__ == "__main__":
    main()
