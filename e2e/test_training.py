"""Training that learns (issue 5): examples/notebooks/train_mlp.ipynb, run
headless with nbclient through the real kernel, trains an MLP on two spirals
with NotebookLauncher on 2 CPU processes (bf16 mixed precision, bf16
gradient compression, TensorBoard + DVCLive trackers, profiler traces), then
trains again without compression on 2 processes and on 1 process with the
same global batch. The notebook runs in a scratch directory, so its runs/mlp
lands there.

Checked here, with each tool's own reader: the loss falls; TensorBoard
(EventAccumulator) and DVC (`dvc plots show`, `dvc metrics show`) hold every
step with the values the training function returned; each rank's
profile_{rank}.json is a Chrome trace of the scheduled steps; and the
2-process run matches the 1-process run step by step within 1e-6 relative,
while the compressed run does not (so the comparison can tell them apart).
"""
import json
import math
import subprocess

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from conftest import ROOT
from notebookrun import VENV, run_notebook

NOTEBOOK = ROOT / "examples" / "notebooks" / "train_mlp.ipynb"
STEPS = 200  # Config.Steps in the notebook
RTOL = 1e-6


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("train_mlp")
    nb = run_notebook(NOTEBOOK, workdir=work)  # also checks every cell's goaccel_expect
    curves = [o["data"]["application/json"] for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if "application/json" in o.get("data", {})]
    assert len(curves) == 1, f"expected one JSON output with the loss curves, got {len(curves)}"
    return {"dir": work, "run": work / "runs" / "mlp", "curves": curves[0]}


def _rel(a, b):
    return abs(a - b) / abs(b)


def test_loss_falls(run):
    bf16 = run["curves"]["bf16_run"]
    assert len(bf16) == STEPS
    assert all(math.isfinite(v) for v in bf16)
    assert bf16[0] > 0.6, f"a fresh model on two balanced classes starts near ln 2, got {bf16[0]}"
    assert max(bf16[-10:]) < 0.05, f"the loss did not fall below 0.05: last steps {bf16[-10:]}"
    ref = run["curves"]["one_process"]
    assert max(ref[-10:]) < 0.05, f"the full-precision run did not learn: {ref[-10:]}"


def test_tensorboard_holds_every_step(run):
    ea = EventAccumulator(str(run["run"] / "mlp"), size_guidance={"scalars": 0})
    ea.Reload()
    assert "train/loss" in ea.Tags()["scalars"], ea.Tags()
    events = ea.Scalars("train/loss")
    assert [e.step for e in events] == list(range(STEPS))
    for e, want in zip(events, run["curves"]["bf16_run"]):
        assert abs(e.value - want) <= 1e-6 * abs(want), (e.step, e.value, want)  # stored as float32
    acc = ea.Scalars("train/accuracy")
    assert [e.step for e in acc] == list(range(24, STEPS, 25)), [e.step for e in acc]
    assert acc[-1].value == 1.0


def test_dvc_reads_every_step(run):
    dvc = str(VENV / "bin" / "dvc")
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=run["dir"], check=True)
    shown = subprocess.run([dvc, "plots", "show", "--json"], cwd=run["dir"], check=True,
                           capture_output=True, text=True).stdout
    plots = json.loads(shown)["data"]
    [loss_plot] = [v for k, v in plots.items() if k.endswith("dvclive/plots/metrics/train/loss.tsv")]
    rows = loss_plot[0]["content"]["data"]["values"]
    assert [int(r["step"]) for r in rows] == list(range(STEPS))
    for r, want in zip(rows, run["curves"]["bf16_run"]):
        assert _rel(float(r["loss"]), want) <= 1e-12, (r, want)
    metrics = subprocess.run([dvc, "metrics", "show", "--json"], cwd=run["dir"], check=True,
                             capture_output=True, text=True).stdout
    [(path, m)] = json.loads(metrics)[""]["data"].items()
    assert path.endswith("dvclive/metrics.json")
    assert m["data"]["step"] == STEPS - 1
    assert _rel(m["data"]["train"]["loss"], run["curves"]["bf16_run"][-1]) <= 1e-12
    assert m["data"]["train"]["accuracy"] == 1


@pytest.mark.parametrize("rank", [0, 1])
def test_profile_is_a_chrome_trace(run, rank):
    trace = json.loads((run["run"] / "profile" / f"profile_{rank}.json").read_text())
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    spans = [e for e in events if e.get("ph") == "X"]
    for e in spans:
        assert isinstance(e["name"], str) and e["pid"] == rank
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
    names = {e["name"] for e in spans}
    # Schedule(wait=5, warmup=1, active=3, repeat=1): steps 6, 7 and 8 are recorded.
    assert {n for n in names if n.startswith("ProfilerStep#")} == {"ProfilerStep#6", "ProfilerStep#7", "ProfilerStep#8"}
    for name in ("forward", "backward", "sync_gradients"):
        assert sum(e["name"] == name for e in spans) == 3, (name, names)
    assert (run["run"] / "profile" / f"profile_{rank}.pb.gz").stat().st_size > 0


def test_two_processes_match_one_process(run):
    ref = run["curves"]["one_process"]
    two = run["curves"]["two_processes"]
    assert len(ref) == STEPS and len(two) == 2 and all(len(r) == STEPS for r in two)
    assert two[0] == two[1], "the loss averaged over the processes differs between the ranks"
    worst = max(_rel(a, b) for a, b in zip(two[0], ref))
    print(f"max relative difference per step, 2 processes vs 1: {worst:.2e}")
    assert worst <= RTOL, [(s, a, b) for s, (a, b) in enumerate(zip(two[0], ref)) if _rel(a, b) > RTOL][:5]
    # The comparison can tell runs apart: bf16 autocast and compression drift further.
    drift = max(_rel(a, b) for a, b in zip(run["curves"]["bf16_run"], ref))
    assert drift > 100 * RTOL, f"the bf16 run matches the exact one ({drift:.2e}): the check would not notice a difference"
