"""The GPT notebook's bad inputs (examples/notebooks/gpt_shakespeare.ipynb),
through jupyter_client and the real kernel: each is a clear error that names
it, never a hang, a NaN loss or a silent result.

One kernel runs the notebook's declaration cells as they are (the imports,
the model cell — metadata "goaccel_bench": "model" — and the cell that
declares Run and fit), never the cells that train, and then small cells
that provoke each bad input with tiny models (1 layer, 2 heads, width 16,
context 16) and a few steps:

- a corpus directory that does not exist, and a corpus with an empty play;
- a vocabulary larger than the embedding (the corpus has 73 characters);
- a context longer than the position table (Generate with 32 > Block 16);
- a schedule whose warm-up is longer than its steps;
- a global batch that 2 processes cannot split (DebugLauncher, batch 13);
- and the healthy control: the same tiny run trains, its losses finite,
  the first one near ln 73.

After each failing cell a trivial cell shows that the kernel is alive and
that the session's declarations are still there.
"""
import json
import math
import time
from queue import Empty

import nbformat
import pytest

from conftest import ROOT
from kernelclient import TIMEOUT, result_text, running_kernel, shell_reply, stdout_of

NOTEBOOK = ROOT / "examples" / "notebooks" / "gpt_shakespeare.ipynb"
TRAGEDIES = ["hamlet", "lear", "macbeth", "othello", "romeo_and_juliet", "julius_caesar", "coriolanus"]
VOCAB = 73  # distinct characters of the seven tragedies

# A tiny GPT: each case takes seconds. GPT{Vocab: 73, Layers: 1, Embd: 16}
# has 73·16 + (12·16² + 2·16) + 16 = 4288 parameters by nanoGPT's count.
TINY = "GPT{Vocab: %d, Block: 16, Layers: 1, Heads: 2, Embd: 16}"
HEALTHY = ("Run{Model: " + TINY + ", Steps: 5, Batch: 4, LR: 1e-3, MinLR: 1e-4, Warmup: 1, "
           "WeightDecay: 0.1, Clip: 1, Seed: 1}")

# A cell may build packages for a while before its first output (the
# notebook's imports of GoMLX on a cold machine, a launch's workers): a cell
# fails only when nothing at all arrives for IDLE seconds, or it runs past
# LIMIT in all (a hang guard, not a budget).
IDLE = TIMEOUT
LIMIT = 3 * TIMEOUT


def go_string(s):
    """A Go string literal for s (JSON's escapes are Go's for these paths)."""
    return json.dumps(str(s))


def run_patiently(kc, code, idle=IDLE, limit=LIMIT):
    """Executes code and returns (reply, outputs), waiting as long as the cell
    shows progress (any IOPub message of its own) and at most limit seconds."""
    msg_id = kc.execute(code)
    start = last = time.monotonic()
    msgs = []
    while True:
        now = time.monotonic()
        if now - last > idle or now - start > limit:
            raise AssertionError(f"the cell did not end (nothing for {now - last:.0f} s, {now - start:.0f} s in all): "
                                 f"a hang?\n{code}\n-- got: {[m['msg_type'] for m in msgs]}\n{stdout_of(msgs)[-3000:]}")
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        last = time.monotonic()
        msgs.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = shell_reply(kc, msg_id, timeout=idle)
    return reply, [m for m in msgs if m["msg_type"] not in ("status", "execute_input")]


def ok(kc, code, **kw):
    reply, out = run_patiently(kc, code, **kw)
    c = reply["content"]
    assert c["status"] == "ok", f"the cell failed:\n{code}\n-- {c.get('ename')}: {c.get('evalue')}\n" \
                                f"{chr(10).join(c.get('traceback', []))[-3000:]}\n-- stdout:\n{stdout_of(out)[-3000:]}"
    return out


def error_of(kc, code, **kw):
    """The text of the cell's error (ename, evalue, traceback), which the
    cell must raise, and its stdout."""
    reply, out = run_patiently(kc, code, **kw)
    c = reply["content"]
    assert c["status"] == "error", f"no error, a silent result:\n{code}\n-- stdout:\n{stdout_of(out)[-3000:]}"
    errors = [m["content"] for m in out if m["msg_type"] == "error"]
    assert errors, f"the reply is an error but no error output was shown:\n{code}"
    text = "\n".join([c["ename"], c["evalue"], *c["traceback"]])
    print(f"-- error of the cell --\n{c['ename']}: {c['evalue']}")
    return text, stdout_of(out)


def assert_names(text, *words):
    for w in words:
        assert w in text, f"the error does not say {w!r}:\n{text[-3000:]}"
    assert "NaN" not in text, f"the error mentions a NaN:\n{text[-3000:]}"


def alive(kc):
    """The kernel still answers, with the session's declarations."""
    out = ok(kc, TINY % VOCAB + ".Params()")
    assert result_text(out) == "4288", out
    out = ok(kc, "fmt.Println(reflect.TypeOf(fit).NumIn(), reflect.TypeOf(fit).NumOut(), Run{Batch: 12}.Batch)")
    assert stdout_of(out).strip() == "1 2 12", stdout_of(out)


def declaration_cells():
    """The notebook's code cells that only declare (imports, types, funcs,
    consts): the import cell, the model cell and the training-function cell."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    keep = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        depth, statements = 0, False
        for line in cell.source.splitlines():
            if depth == 0 and line.strip() and not line.startswith(
                    ("import", "type ", "func ", "const ", "var ", "//", ")", "}")):
                statements = True
            depth += line.count("(") + line.count("{") - line.count(")") - line.count("}")
        if not statements:
            keep.append(cell)
    return keep


@pytest.fixture(scope="module")
def kc():
    cells = declaration_cells()
    assert len(cells) == 3, [c.source[:80] for c in cells]
    imports, model, training = cells
    assert imports.source.lstrip().startswith("import (") and "accelerate/gomlx" in imports.source
    assert model.metadata.get("goaccel_bench") == "model" and "type GPT struct" in model.source
    assert "type Run struct" in training.source and "func fit(run Run) (Result, error)" in training.source
    assert "func newTrainer(" in training.source and "func corpus()" in training.source
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GOPROXY", "off")
        mp.delenv("GOACCEL_SHAKESPEARE_DIR", raising=False)  # the corpus `make test` installed
        with running_kernel() as (_, kc):
            for cell in cells:
                ok(kc, cell.source)
            alive(kc)
            yield kc


def fit_error(kc, run, env_dir=None):
    """The error of a cell that calls fit(run) and panics with the error it
    returns (as the notebook does), GOACCEL_SHAKESPEARE_DIR set to env_dir
    for the call."""
    code = "_, fitErr := fit(" + run + ")\nif fitErr != nil {\n\tpanic(fitErr)\n}\n"
    if env_dir is not None:
        code = ("oldDir, hadDir := os.LookupEnv(\"GOACCEL_SHAKESPEARE_DIR\")\n"
                f"os.Setenv(\"GOACCEL_SHAKESPEARE_DIR\", {go_string(env_dir)})\n"
                "_, fitErr := fit(" + run + ")\n"
                "if hadDir {\n\tos.Setenv(\"GOACCEL_SHAKESPEARE_DIR\", oldDir)\n} else {\n"
                "\tos.Unsetenv(\"GOACCEL_SHAKESPEARE_DIR\")\n}\n"
                "if fitErr != nil {\n\tpanic(fitErr)\n}\n")
    return error_of(kc, code)


def test_missing_corpus_names_the_path_and_how_to_install_it(kc, tmp_path):
    gone = tmp_path / "no-such-corpus"
    text, _ = fit_error(kc, HEALTHY % VOCAB, env_dir=gone)
    assert_names(text, "the corpus is not installed", f"{gone} (from $GOACCEL_SHAKESPEARE_DIR) does not exist",
                 "`make lab` or `make test` installs it")
    alive(kc)


def test_empty_play_names_the_file(kc, tmp_path):
    for name in TRAGEDIES:
        (tmp_path / f"{name}_gut.txt").write_text("" if name == "macbeth" else f"THE TRAGEDY OF {name.upper()}\n")
    text, _ = fit_error(kc, HEALTHY % VOCAB, env_dir=tmp_path)
    assert_names(text, f"shakespeare: {tmp_path / 'macbeth_gut.txt'} is empty")
    alive(kc)


def test_vocabulary_larger_than_the_embedding(kc):
    text, _ = fit_error(kc, HEALTHY % 65)
    assert_names(text, f"the corpus has {VOCAB} distinct characters", "the model's embedding 65 rows (GPT.Vocab)")
    alive(kc)


def test_context_longer_than_the_position_table(kc):
    code = f"""ctxAcc, ctxErr := accelerate.NewAccelerator()
if ctxErr != nil {{
	panic(ctxErr)
}}
ctxTr, ctxErr := newTrainer(ctxAcc, {HEALTHY % VOCAB})
if ctxErr != nil {{
	panic(ctxErr)
}}
ctxOut, ctxErr := ctxTr.Generate([]int32{{0}}, 5, 32, gxa.SampleOptions{{}})
fmt.Println("generated", len(ctxOut), "tokens")
if ctxErr != nil {{
	panic(ctxErr)
}}
"""
    text, out = error_of(kc, code)
    assert_names(text, "a context of 32 tokens is longer than the position table (GPT.Block = 16)")
    assert "generated 1 tokens" in out, out  # the prompt alone: no token was drawn
    alive(kc)


def test_warmup_longer_than_the_schedule(kc):
    run = HEALTHY.replace("Steps: 5,", "Steps: 50,").replace("Warmup: 1,", "Warmup: 100,") % VOCAB
    assert "Steps: 50," in run and "Warmup: 100," in run
    text, _ = fit_error(kc, run)
    assert_names(text, "WarmupCosine: 100 warm-up steps is more than the 50 steps of the schedule")
    alive(kc)


def test_batch_the_processes_cannot_split(kc):
    run = HEALTHY.replace("Batch: 4,", "Batch: 13,").replace("Steps: 5,", "Steps: 3,") % VOCAB
    assert "Batch: 13," in run and "Steps: 3," in run
    code = f"""import "github.com/goaccel/goaccel/debuglauncher"

accelerate.ResetState()
_, launchErr := debuglauncher.DebugLauncher(fit, []any{{{run}}}, 2)
if launchErr != nil {{
	panic(launchErr)
}}
"""
    text, _ = error_of(kc, code)
    assert_names(text, "a batch of 13 examples cannot be split evenly between 2 processes")
    alive(kc)


def test_healthy_control_trains(kc):
    code = f"""accelerate.ResetState()
okVocab, _, _, okErr := corpus()
if okErr != nil {{
	panic(okErr)
}}
fmt.Println("VOCAB", okVocab.Size())
okRes, okErr := fit({HEALTHY % VOCAB})
if okErr != nil {{
	panic(okErr)
}}
for _, l := range okRes.Losses {{
	fmt.Println("LOSS", l)
}}
fmt.Println("STEP", okRes.GlobalStep)
fmt.Println("VAL", okRes.ValLoss)
"""
    out = stdout_of(ok(kc, code))
    fields = [line.split() for line in out.splitlines() if line.startswith(("VOCAB ", "LOSS ", "STEP ", "VAL "))]
    assert ["VOCAB", str(VOCAB)] in fields, out
    losses = [float(v) for k, v in fields if k == "LOSS"]
    assert len(losses) == 5, out
    assert all(math.isfinite(v) for v in losses), f"a loss is not finite: {losses}"
    assert abs(losses[0] - math.log(VOCAB)) < 0.3, f"the first loss {losses[0]} is not near ln {VOCAB} = {math.log(VOCAB):.3f}"
    assert ["STEP", "5"] in fields, out
    [val] = [float(v) for k, v in fields if k == "VAL"]
    assert math.isfinite(val) and 0 < val < 2 * math.log(VOCAB), val


def test_sharded_strategies_train_as_ddp(kc):
    """FSDP's SHARD_GRAD_OP and FULL_SHARD, turned on as `accelerate launch
    --use_fsdp` does (ACCELERATE_USE_FSDP and FSDP_SHARDING_STRATEGY in the
    workers' environment), train the notebook's GPT on 2 processes as DDP
    does: each step's loss within 1e-5 relative and the validation loss
    within 1e-4. The notebook's fit trains with gxa.NewLoop (FULL_SHARD
    gathers the parameters for the loop and releases them at its end),
    evaluates with tr.Eval (gathered for it) and checks that both processes
    end with the same whole weights (tr.MasterValues gathers them)."""
    run = HEALTHY % VOCAB
    code = f"""import "github.com/goaccel/goaccel/debuglauncher"

for _, strategy := range []string{{"", "SHARD_GRAD_OP", "FULL_SHARD"}} {{
	accelerate.ResetState()
	os.Setenv("ACCELERATE_USE_FSDP", fmt.Sprint(strategy != ""))
	os.Setenv("FSDP_SHARDING_STRATEGY", strategy)
	shardRes, shardErr := debuglauncher.DebugLauncher(fit, []any{{{run}}}, 2)
	os.Unsetenv("ACCELERATE_USE_FSDP")
	os.Unsetenv("FSDP_SHARDING_STRATEGY")
	if shardErr != nil {{
		panic(shardErr)
	}}
	r := shardRes[0][0].(Result)
	fmt.Println("RUN", strategy+"-", r.GlobalStep, r.ValLoss, r.Losses)
}}
"""
    out = stdout_of(ok(kc, code))
    runs = {}
    for line in out.splitlines():
        if line.startswith("RUN "):
            strategy, step, val, losses = line.split(" ", 4)[1:]
            runs[strategy.rstrip("-") or "DDP"] = (int(step), float(val), [float(x) for x in losses.strip("[]").split()])
    assert set(runs) == {"DDP", "SHARD_GRAD_OP", "FULL_SHARD"}, out
    dstep, dval, dlosses = runs["DDP"]
    assert dstep == 5 and len(dlosses) == 5, out
    for strategy in ("SHARD_GRAD_OP", "FULL_SHARD"):
        sstep, sval, slosses = runs[strategy]
        assert sstep == 5 and len(slosses) == 5, out
        for i, (d, s) in enumerate(zip(dlosses, slosses)):
            assert abs(d - s) <= 1e-5 * max(1, abs(d)), f"step {i + 1}: DDP {d}, {strategy} {s}"
        assert abs(dval - sval) <= 1e-4 * max(1, abs(dval)), (strategy, dval, sval)
    alive(kc)
