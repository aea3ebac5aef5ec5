"""nanoGPT's GPT in PyTorch on CPU, eager: nn.Module blocks with
F.scaled_dot_product_attention(is_causal=True) as nanoGPT's model.py uses
it, torch.optim.AdamW (fused=False, foreach by default) on nanoGPT's two
parameter groups (or torch.optim.Adam), clip_grad_norm_, nanoGPT's LR
schedule; --dtype bfloat16 runs forward and loss under
torch.autocast('cpu', bfloat16) (logits cast to float32 for the loss).
Threads: torch.set_num_threads(--threads, default the CPUs of the affinity).
The initial weights and the batches come from gpt_common (numpy, seeded),
the same as the JAX peer's. See gpt_common for the CLI and the output."""
import contextlib
import math
import sys

import gpt_common as gc

import torch
import torch.nn.functional as F
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self, c, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, gc.LN_EPS)


def dropout(p):
    return nn.Dropout(p) if p > 0 else nn.Identity()


class Attention(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.n_head, self.p = a.n_head, a.dropout
        self.c_attn = nn.Linear(a.n_embd, 3 * a.n_embd, bias=bool(a.bias))
        self.c_proj = nn.Linear(a.n_embd, a.n_embd, bias=bool(a.bias))
        self.resid_dropout = dropout(a.dropout)

    def qkv(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        hd = C // self.n_head
        return [t.view(B, T, self.n_head, hd).transpose(1, 2) for t in (q, k, v)]

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.p if self.training else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.c_fc = nn.Linear(a.n_embd, 4 * a.n_embd, bias=bool(a.bias))
        self.gelu = nn.GELU()  # exact (erf)
        self.c_proj = nn.Linear(4 * a.n_embd, a.n_embd, bias=bool(a.bias))
        self.dropout = dropout(a.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.ln_1 = LayerNorm(a.n_embd, a.bias)
        self.attn = Attention(a)
        self.ln_2 = LayerNorm(a.n_embd, a.bias)
        self.mlp = MLP(a)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte = nn.Embedding(a.vocab, a.n_embd)
        self.wpe = nn.Embedding(a.block, a.n_embd)
        self.drop = dropout(a.dropout)
        self.h = nn.ModuleList([Block(a) for _ in range(a.n_layer)])
        self.ln_f = LayerNorm(a.n_embd, a.bias)
        self.register_buffer("pos", torch.arange(a.block), persistent=False)

    def forward(self, idx, targets, reduction="mean"):
        T = idx.shape[1]
        x = self.drop(self.wte(idx) + self.wpe(self.pos[:T]))
        for b in self.h:
            x = b(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1), reduction=reduction)


def sdpa_backend(model, a):
    """The SDPA backend PyTorch's dispatcher picks for the training
    attention call and for eval (no dropout): on CPU FLASH_ATTENTION
    (_scaled_dot_product_flash_attention_for_cpu) without dropout, MATH
    (explicit softmax and dropout) with dropout > 0."""
    blk = model.h[0].attn
    with torch.no_grad():
        q, k, v = blk.qkv(torch.zeros(a.batch, a.block, a.n_embd))
    names = {}
    try:
        from torch.nn.attention import SDPBackend
        names = {int(b): n for n, b in SDPBackend.__members__.items()}
    except Exception:
        pass
    out = {}
    for what, p in (("train", a.dropout), ("eval", 0.0)):
        try:
            dt = torch.bfloat16 if a.dtype == "bfloat16" else torch.float32
            q2, k2, v2 = [t.detach().to(dt).requires_grad_(what == "train") for t in (q, k, v)]
            c = torch._fused_sdp_choice(q2, k2, v2, None, p, True)
            out[what] = names.get(int(c), str(c))
        except Exception as e:  # a private API: report, do not fail
            out[what] = f"unknown ({type(e).__name__})"
    return out


def build(a):
    """(model, opt, step, evaluate, info) for gpt_common.run."""
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)  # dropout masks
    model = GPT(a)
    init = gc.init_params(a)
    names = {n for n, _ in model.named_parameters()}
    sd = {name: torch.from_numpy(arr) for name, arr in init.items()}
    missing = names - set(sd)
    extra = set(sd) - names
    if missing or extra:
        sys.exit(f"torch_gpt: parameter names differ from gpt_common's: missing {sorted(missing)}, extra {sorted(extra)}")
    model.load_state_dict(sd, strict=True)
    model.train()

    params = dict(model.named_parameters())
    betas = (0.9, a.beta2)
    if a.optimizer == "adamw":
        decay = [p for n, p in params.items() if gc.decays(n, p.shape)]
        nodecay = [p for n, p in params.items() if not gc.decays(n, p.shape)]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                                 {"params": nodecay, "weight_decay": 0.0}],
                                lr=a.lr, betas=betas, eps=a.eps, fused=False)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=betas, eps=a.eps, weight_decay=0.0, fused=False)

    def amp():
        if a.dtype == "bfloat16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def step(it, x, y, lr):
        x = torch.from_numpy(x).long()
        y = torch.from_numpy(y).long()
        for g in opt.param_groups:
            g["lr"] = lr
        with amp():
            loss = model(x, y)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    def evaluate(batches):
        model.eval()
        total, n = 0.0, 0
        with torch.no_grad(), amp():
            for x, y in batches:
                total += model(torch.from_numpy(x).long(), torch.from_numpy(y).long(), reduction="sum").item()
                n += y.size
        model.train()
        return total / n if n else math.nan

    def info():
        return {"version": torch.__version__, "torch_threads": torch.get_num_threads(),
                "interop_threads": torch.get_num_interop_threads(),
                "mkldnn_bf16": bool(getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: None)()),
                "sdpa_backend": sdpa_backend(model, a),
                "optimizer": type(opt).__name__, "foreach": opt.defaults.get("foreach")}

    return model, opt, step, evaluate, info


def main():
    a = gc.parse_args("torch")
    _, _, step, evaluate, info = build(a)
    gc.run("torch", a, step, evaluate, info)


if __name__ == "__main__":
    main()
