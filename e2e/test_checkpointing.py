"""Training that survives (issue 12): examples/notebooks/checkpointing.ipynb,
run headless through the real kernel in a scratch directory, kills a worker
mid-run and resumes from the newest checkpoint, continues an interrupted run,
and saves the model as sharded safetensors (its per-cell expectations are
checked by run_notebook).

Checked here with Python's own reader, safetensors (numpy API: torch's PyPI
wheel brings ~3 GB of CUDA libraries, too much for this test venv): every
file goaccel wrote loads; the shards and their index follow transformers'
layout; the parameters have torch's nn.Sequential names and nn.Linear's
(out, in) layout, so a numpy forward pass over them reproduces the logits
goaccel computed; the last checkpoint holds the final parameters and Adam's
state at step 200; no staging directory is left and TotalLimit kept three
checkpoints.
"""
import json

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file

from conftest import ROOT
from notebookrun import run_notebook

NOTEBOOK = ROOT / "examples" / "notebooks" / "checkpointing.ipynb"
WIDTHS = [2, 32, 32, 2]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("checkpointing")
    nb = run_notebook(NOTEBOOK, workdir=work)
    shown = [o["data"]["application/json"] for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []) if "application/json" in o.get("data", {})]
    assert len(shown) == 1, shown
    return {"root": work / "runs" / "checkpointing" / "crash", "shown": shown[0]}


def load_sharded(model_dir):
    index = json.loads((model_dir / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert shards == [f"model-{i:05d}-of-00003.safetensors" for i in (1, 2, 3)], shards
    tensors = {}
    for shard in shards:
        with safe_open(str(model_dir / shard), framework="np") as f:
            assert f.metadata() == {"format": "pt"}
            for name in f.keys():
                assert index["weight_map"][name] == shard
                tensors[name] = f.get_tensor(name)
    assert index["metadata"]["total_size"] == sum(t.nbytes for t in tensors.values())
    return tensors


def test_model_shards_load_in_python(run):
    tensors = load_sharded(run["root"] / "model")
    names = [f"{2 * l}.{kind}" for l in range(len(WIDTHS) - 1) for kind in ("weight", "bias")]
    assert sorted(tensors) == sorted(names)
    for l in range(len(WIDTHS) - 1):
        assert tensors[f"{2 * l}.weight"].shape == (WIDTHS[l + 1], WIDTHS[l])  # nn.Linear: (out, in)
        assert tensors[f"{2 * l}.bias"].shape == (WIDTHS[l + 1],)
        assert tensors[f"{2 * l}.weight"].dtype == np.float64
    # The very values goaccel trained (returned by the launched function).
    for name, want in zip(names, run["shown"]["params"]):
        assert np.array_equal(tensors[name].ravel(), np.array(want)), name


def test_numpy_forward_matches_goaccel(run):
    t = load_sharded(run["root"] / "model")
    h = np.array(run["shown"]["probe"]).reshape(-1, 2)
    for l in range(len(WIDTHS) - 1):
        h = h @ t[f"{2 * l}.weight"].T + t[f"{2 * l}.bias"]
        if l < len(WIDTHS) - 2:
            h = np.tanh(h)
    want = np.array(run["shown"]["logits"]).reshape(h.shape)
    assert np.allclose(h, want, rtol=1e-12, atol=1e-12), (h, want)


def test_checkpoints_load_in_python(run):
    ckpts = run["root"] / "checkpoints"
    names = sorted(p.name for p in ckpts.iterdir())
    assert names == ["checkpoint_1", "checkpoint_2", "checkpoint_3"], names  # TotalLimit 3, no staging leftovers
    last = ckpts / "checkpoint_3"
    manifest = json.loads((last / "goaccel_checkpoint.json").read_text())
    assert manifest["world_size"] == 2 and manifest["step"] == 400  # 200 steps of 2 micro-batches
    assert sorted(manifest["files"]) == sorted(p.name for p in last.iterdir() if p.name != "goaccel_checkpoint.json")
    for name, info in manifest["files"].items():
        assert (last / name).stat().st_size == info["size"], name
    model = load_file(str(last / "model.safetensors"))
    final = load_sharded(run["root"] / "model")
    for name, t in model.items():
        assert np.array_equal(t, final[name]), name  # the last checkpoint was taken after the last step
    with safe_open(str(last / "optimizer.bin"), framework="np") as f:
        meta = f.metadata()
        assert meta["type"] == "Adam" and meta["step"] == "200" and float(meta["lr"]) == 0.03
        keys = set(f.keys())
        assert keys == {f"{k}.{i}" for k in ("exp_avg", "exp_avg_sq") for i in range(6)}, keys
        assert f.get_tensor("exp_avg_sq.0").shape == (32 * 2,)
        assert (f.get_tensor("exp_avg_sq.0") >= 0).all()
    for rank in (0, 1):
        st = json.loads((last / f"random_states_{rank}.json").read_text())
        assert st["rank"] == rank and st["step"] == 400 and st["sync_gradients"] is True
    assert json.loads((last / "custom_checkpoint_0.bin").read_text()) == {"Attempts": 2}
