"""Experiment tracking end to end, through real notebooks.

examples/notebooks/trackers.ipynb and tracking_example.ipynb run headless
(nbclient) against a real `mlflow server`, then every tracker's output is
read back with that tracker's own tool: TensorBoard's EventAccumulator and
tbparse, dvclive's parser and `dvc metrics show`, MlflowClient, `wandb leet
inspect`, comet_ml's OfflineSender, clearml's offline-session import code and
aim.Repo (the last three through the reader scripts in tracking/*/testdata).
The live chart is checked in the executed notebook: one display whose final
state (update_display_data replaces it in place) holds an SVG line per metric
and the last values.

test_flush_survives_sigkill launches a two-process training from a cell,
kills rank 0 with SIGKILL mid-run and checks that every step rank 0 had
printed more than a second before is in TensorBoard's and dvclive's files.
"""
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import types
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT
from kernelclient import TIMEOUT, running_kernel, shell_reply, run
from notebookrun import VENV, run_notebook, stream_text

NOTEBOOKS = ROOT / "examples" / "notebooks"
TESTDATA = ROOT / "tracking"
PY = str(VENV / "bin" / "python")


# ---------------------------------------------------------------- mlflow server

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory):
    """A real `mlflow server` (sqlite backend) on a free local port; its URI
    is exported as MLFLOW_TRACKING_URI, which kernels started afterwards
    inherit."""
    d = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    uri = f"http://127.0.0.1:{port}"
    log = open(d / "server.log", "wb")
    proc = subprocess.Popen(
        [str(VENV / "bin" / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{d / 'mlflow.db'}",
         "--default-artifact-root", str(d / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(uri + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"mlflow server did not come up: {(d / 'server.log').read_text()[-3000:]}")
            time.sleep(0.3)
        old = os.environ.get("MLFLOW_TRACKING_URI")
        os.environ["MLFLOW_TRACKING_URI"] = uri
        yield uri
    finally:
        if old is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = old
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


# ------------------------------------------------------------------ readers
# Each returns {"metrics": {name: {step: value}}, ...} with grouped scalars
# named "<key>/<member>".

def _json_of(cmd, cwd=None, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT)
    assert p.returncode == 0, f"{cmd} failed:\n{p.stderr[-3000:]}"
    return p.stdout


def read_tensorboard(run_dir):
    from tbparse import SummaryReader
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    metrics, texts = {}, {}
    for dirpath, _, files in sorted(os.walk(run_dir)):
        if not any("tfevents" in f for f in files):
            continue
        ea = EventAccumulator(dirpath, size_guidance={"scalars": 0, "tensors": 0})
        ea.Reload()
        sub = os.path.relpath(dirpath, run_dir)
        for tag in ea.Tags()["scalars"]:
            # add_scalars: member series live in "<tag>_<member>" subfolders
            name = tag if sub == "." else f"{tag}/{sub[len(tag) + 1:]}"
            assert sub == "." or sub.startswith(tag + "_"), (sub, tag)
            metrics[name] = {e.step: e.value for e in ea.Scalars(tag)}
        try:
            for tag in ea.PluginTagToContent("text"):
                texts[tag] = {e.step: tensor_util.make_ndarray(e.tensor_proto).reshape(-1)[0].decode()
                              for e in ea.Tensors(tag)}
        except KeyError:
            pass
    # tbparse, reading the whole tree, must see the same scalars.
    df = SummaryReader(str(run_dir), pivot=False, extra_columns={"dir_name"}).scalars
    seen = {}
    for row in df.itertuples():
        name = row.tag if not row.dir_name else f"{row.tag}/{row.dir_name[len(row.tag) + 1:]}"
        seen.setdefault(name, {})[int(row.step)] = float(row.value)
    assert seen == metrics, f"tbparse and EventAccumulator disagree:\n{seen}\n{metrics}"
    return {"metrics": metrics, "texts": texts}


def read_dvclive(dvclive_dir, scratch):
    """dvclive's own parser, and `dvc metrics show` in a DVC repository
    holding a copy of the folder."""
    from dvclive.utils import parse_metrics

    repo = Path(scratch) / "dvcrepo"
    shutil.copytree(dvclive_dir, repo / "dvclive")
    subprocess.run([str(VENV / "bin" / "dvc"), "init", "--no-scm", "-q"], cwd=repo, check=True)
    shown = json.loads(_json_of([str(VENV / "bin" / "dvc"), "metrics", "show", "--json"], cwd=repo))
    d = repo / "dvclive"
    history, latest = parse_metrics(types.SimpleNamespace(plots_dir=str(d / "plots"), metrics_file=str(d / "metrics.json")))
    metrics = {}
    for path, rows in history.items():
        name = os.path.relpath(path, d / "plots" / "metrics")[: -len(".tsv")]
        col = name.rsplit("/", 1)[-1]
        metrics[name] = {int(r["step"]): float(r[col]) for r in rows}
    return {"metrics": metrics, "latest": latest, "shown": shown[""]["data"]["dvclive/metrics.json"]["data"],
            "params": (d / "params.yaml").read_text()}


def read_mlflow(uri, experiment):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None, f"no MLflow experiment {experiment!r}"
    runs = c.search_runs([exp.experiment_id])
    assert len(runs) == 1, [r.info.run_id for r in runs]
    run = runs[0]
    metrics = {k: {m.step: m.value for m in c.get_metric_history(run.info.run_id, k)} for k in run.data.metrics}
    return {"metrics": metrics, "params": run.data.params, "status": run.info.status}


def read_wandb(wandb_dir, scratch):
    runs = [p for p in Path(wandb_dir).glob("offline-run-*") if p.is_dir()]
    assert len(runs) == 1, runs
    home = Path(scratch) / "wandb-home"
    home.mkdir()
    env = dict(os.environ, WANDB_MODE="offline", WANDB_SILENT="true", WANDB_CONFIG_DIR=str(home / "config"),
               WANDB_CACHE_DIR=str(home / "cache"), WANDB_DATA_DIR=str(home / "data"))
    p = subprocess.run([str(VENV / "bin" / "wandb"), "leet", "inspect", "--json", str(runs[0])],
                       capture_output=True, text=True, cwd=home, env=env, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    err = p.stderr.lower()
    assert "corrupt" not in err and "error" not in err, f"wandb's reader reported damage: {p.stderr}"
    recs = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    metrics, texts, config = {}, {}, {}
    for r in recs:
        if r["type"] == "history":
            step = r["history"]["step"]["num"]
            for k, v in r["history"]["item"].items():
                if k.startswith("_"):
                    continue
                name = k.replace(".", "/")
                if isinstance(v, str):
                    texts.setdefault(name, {})[step] = v
                else:
                    metrics.setdefault(name, {})[step] = v
        elif r["type"] == "config":
            config.update(r["config"].get("update", {}))
    return {"metrics": metrics, "texts": texts, "config": config, "types": {r["type"] for r in recs}}


def read_comet(archive):
    r = json.loads(_json_of([PY, str(TESTDATA / "cometml" / "testdata" / "read_comet.py"), str(archive)]))
    metrics = {}
    for m in r["metrics"]:
        metrics.setdefault(m["metricName"], {})[m["step"]] = float(m["metricValue"])
    return {"metrics": metrics, "params": {p["paramName"]: p["paramValue"] for p in r["parameters"]},
            "others": r["others"], "project": r["metadata"]["project_name"]}


def read_clearml(session_zip):
    r = json.loads(_json_of([PY, str(TESTDATA / "clearml" / "testdata" / "read_clearml.py"), str(session_zip)]))
    metrics = {}
    for e in r["scalars"]:
        metrics.setdefault(f"{e['metric']}/{e['variant']}", {})[e["iter"]] = float(e["value"])
    return {"metrics": metrics, "config": r["configuration"], "project": r["project_name"], "name": r["name"]}


def read_aim(repo):
    runs = json.loads(_json_of([PY, str(TESTDATA / "aim" / "testdata" / "read_aim.py"), str(repo)]))
    assert len(runs) == 1, [r["hash"] for r in runs]
    run = runs[0]
    metrics, texts = {}, {}
    for m in run["metrics"]:
        if m["name"].startswith("__system__"):
            continue
        name = m["name"] + ("/" + m["context"]["subset"] if "subset" in m["context"] else "")
        metrics[name] = dict(zip(m["steps"], m["values"]))
    for t in run["texts"]:
        texts[t["name"]] = dict(zip(t["steps"], t["values"]))
    return {"metrics": metrics, "texts": texts, "hparams": run["hparams"], "name": run["name"],
            "experiment": run["experiment"], "active": run["active"]}


def read_all(run_dir, project, mlflow_uri, scratch):
    """Reads every tracker's output of one run, the subprocess readers in
    parallel."""
    run_dir = Path(run_dir)
    comet = list(run_dir.glob("*.zip"))
    clearml = list((run_dir / "offline").glob("offline-*.zip"))
    assert len(comet) == 1 and len(clearml) == 1, (comet, clearml)
    with ThreadPoolExecutor(4) as pool:
        jobs = {
            "comet_ml": pool.submit(read_comet, comet[0]),
            "clearml": pool.submit(read_clearml, clearml[0]),
            "aim": pool.submit(read_aim, run_dir),
            "wandb": pool.submit(read_wandb, run_dir / "wandb", scratch),
        }
        out = {
            "tensorboard": read_tensorboard(run_dir / project),
            "dvclive": read_dvclive(run_dir / "dvclive", scratch),
            "mlflow": read_mlflow(mlflow_uri, project),
        }
        out.update({k: f.result() for k, f in jobs.items()})
    return out


def assert_series(tracker, got, want, rel):
    """Every (step, value) of want is in got."""
    for name, series in want.items():
        assert name in got, f"{tracker}: no {name!r} among {sorted(got)}"
        for step, v in series.items():
            assert step in got[name], f"{tracker}: {name!r} lacks step {step}; has {sorted(got[name])}"
            assert math.isclose(got[name][step], v, rel_tol=rel, abs_tol=1e-12), \
                f"{tracker}: {name!r} at step {step} is {got[name][step]}, logged {v}"


# Tolerances: TensorBoard and Aim keep float32 (TensorBoard's scalar
# summaries; Aim as tracked through its bridge keeps float64 but allow it),
# the others the float64 that was logged (as decimal text for some).
REL = {"tensorboard": 1e-6, "aim": 1e-9, "dvclive": 1e-12, "mlflow": 1e-12, "wandb": 1e-12,
       "comet_ml": 1e-12, "clearml": 1e-12}


def livechart_output(cell):
    """The live chart's output in cell: exactly one display_data (updates
    replace it in place)."""
    shown = [o for o in cell.outputs if o["output_type"] == "display_data"
             and "image/svg+xml" in o.get("data", {}) and "goaccel-livechart" in o["data"].get("text/html", "")]
    assert len(shown) == 1, f"expected one live chart output, got {len(shown)}"
    return shown[0]["data"]


def polylines(svg):
    return re.findall(r'<polyline data-metric="([^"]+)"[^>]*points="([^"]*)"', svg)


def run_copy(name, tmp_path):
    """Runs examples/notebooks/<name> in a scratch copy of its folder."""
    work = tmp_path / "nb"
    work.mkdir()
    shutil.copy(NOTEBOOKS / name, work / name)
    return run_notebook(work / name, save_as=name), work


# ------------------------------------------------------------------ trackers.ipynb

def loss_at(s): return 2.0 / (1.0 + 0.25 * s) + 0.05
def accuracy_at(s): return 1.0 - 0.9 * math.exp(-s / 10.0)
def lr_at(s): return 0.1 * 0.95 ** s


TOUR_CONFIG = {"learning_rate": 0.1, "optimizer": "sgd", "num_steps": 40, "batch_size": 16}


def tour_expected():
    steps = range(40)
    return {
        "loss": {s: loss_at(s) for s in steps},
        "accuracy": {s: accuracy_at(s) for s in steps},
        "lr": {s: lr_at(s) for s in steps},
        "losses/train": {s: loss_at(s) for s in steps},
        "losses/valid": {s: loss_at(s) + 0.1 for s in steps},
    }


def test_trackers_notebook(mlflow_uri, tmp_path):
    nb, work = run_copy("trackers.ipynb", tmp_path)
    select = next(c for c in nb.cells if "accelerate.WithLogWith(logWith, memory)" in c.source)
    assert "tensorboard dvclive wandb comet_ml clearml aim mlflow memory livechart" in stream_text(select.outputs, "stdout")
    loop = next(c for c in nb.cells if "for step := 0; step < 40; step++" in c.source)

    # Every tracker warned about the unsupported value, naming its key, in
    # the cell's own output.
    warnings = stream_text(loop.outputs, "stderr")
    for name in ("tensorboard", "dvclive", "wandb", "comet_ml", "clearml", "aim", "mlflow", "livechart"):
        assert re.search(rf"{name}: [^\n]*histogram", warnings), f"no {name} warning about 'histogram' in:\n{warnings}"

    # The live chart: its final state (EndTraining ran in a later cell) with
    # one line per metric, the final step and the last values.
    data = livechart_output(loop)
    for svg in (data["image/svg+xml"], data["text/html"]):
        lines = dict(polylines(svg))
        assert sorted(lines) == sorted(tour_expected()), sorted(lines)
        for metric, pts in lines.items():
            assert len(pts.split()) == 40, (metric, pts)
    assert "tour — step 40 (finished)" in data["text/plain"]
    table = dict(l.split(": ", 1) for l in data["text/plain"].splitlines()[1:])
    assert table["loss"] == "0.236047" and table["losses/valid"] == "0.336047" and table["status"] == "done", table
    assert f'<td style="text-align:left">loss</td><td style="text-align:left">0.236047</td>' in data["text/html"]

    got = read_all(work / "runs" / "trackers", "tour", mlflow_uri, tmp_path)
    want = tour_expected()
    for tracker, r in got.items():
        w = want
        if tracker == "clearml":
            # Accelerate's ClearMLTracker reports a plain value as the series
            # "train" of its key, and a group member as the series <member>.
            w = {(k if "/" in k else k + "/train"): v for k, v in want.items()}
        assert_series(tracker, r["metrics"], w, REL[tracker])
        assert set(r["metrics"]) == set(w), f"{tracker}: series {sorted(r['metrics'])}, logged {sorted(w)}"

    # the string value and the configuration, as each tracker keeps them
    tb, dv, ml, wb, cm, cl, aim = (got[k] for k in ("tensorboard", "dvclive", "mlflow", "wandb", "comet_ml", "clearml", "aim"))
    assert tb["texts"]["status"] == {40: "done"}, tb["texts"]
    assert wb["texts"]["status"] == {40: "done"} and wb["config"] == TOUR_CONFIG, wb
    assert aim["texts"]["status"] == {40: "done"} and aim["hparams"] == TOUR_CONFIG and aim["name"] == "tour"
    assert not aim["active"], "the aim run was not closed"
    assert cm["others"]["status"] == "done" and cm["params"] == TOUR_CONFIG and cm["project"] == "tour", cm
    assert cl["config"]["General"]["value"] == TOUR_CONFIG and cl["project"] == "tour", cl["config"]
    assert ml["params"] == {k: str(v) for k, v in TOUR_CONFIG.items()} and ml["status"] == "FINISHED", ml
    assert dv["shown"]["loss"] == pytest.approx(loss_at(39)) and dv["latest"]["losses"]["valid"] == pytest.approx(loss_at(39) + 0.1)
    assert "learning_rate: 0.1" in dv["params"], dv["params"]


# ------------------------------------------------------------------ tracking_example.ipynb

def test_tracking_example_notebook(mlflow_uri, tmp_path):
    nb, work = run_copy("tracking_example.ipynb", tmp_path)
    train = next(c for c in nb.cells if "accelerator.InitTrackers" in c.source)
    got = read_all(work / "runs" / "example", "example_project", mlflow_uri, tmp_path)

    # dvclive keeps the float64 values as text: the reference series.
    ref = got["dvclive"]["metrics"]["training_loss"]
    assert sorted(ref) == list(range(80)), sorted(ref)
    assert ref[79] < ref[0] / 10, f"the loss did not fall: {ref[0]} -> {ref[79]}"
    want = {"training_loss": ref}
    for tracker, r in got.items():
        name = "training_loss/train" if tracker == "clearml" else "training_loss"
        assert_series(tracker, r["metrics"], {name: ref}, REL[tracker])
        assert len(r["metrics"][name]) == 80, (tracker, len(r["metrics"][name]))

    config = {"num_iterations": 5, "learning_rate": 0.01, "loss_function": "myLossFunction (mean squared error)"}
    assert got["wandb"]["config"] == config and got["aim"]["hparams"] == config
    assert got["comet_ml"]["params"] == config and got["clearml"]["config"]["General"]["value"] == config
    assert got["mlflow"]["params"] == {k: str(v) for k, v in config.items()}

    data = livechart_output(train)
    assert [m for m, _ in polylines(data["image/svg+xml"])] == ["training_loss"]
    assert "example_project — step 79 (finished)" in data["text/plain"]
    last = float(data["text/plain"].split("training_loss: ")[1])
    assert math.isclose(last, ref[79], rel_tol=1e-5), (last, ref[79])


# ------------------------------------------------------------------ flush on SIGKILL

FLUSH_CELL = '''import (
\t"fmt"
\t"time"

\t"github.com/goaccel/goaccel/accelerate"
\t"github.com/goaccel/goaccel/launcher"
)

func flushLoop(dir string) error {
\tacc, err := accelerate.NewAccelerator(accelerate.WithLogWith("tensorboard", "dvclive"), accelerate.WithProjectDir(dir))
\tif err != nil {
\t\treturn err
\t}
\tif err := acc.InitTrackers("flush", nil, nil); err != nil {
\t\treturn err
\t}
\tfor i := 0; i < 100000; i++ {
\t\tif err := acc.Log(map[string]any{"loss": 1.0 / float64(i+1)}, i, nil); err != nil {
\t\t\treturn err
\t\t}
\t\tif acc.IsMainProcess() {
\t\t\tfmt.Println("step", i)
\t\t}
\t\ttime.Sleep(50 * time.Millisecond)
\t}
\treturn acc.EndTraining()
}
'''


def rank0_worker(kernel_pid):
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[1] == b"worker" and b"RANK=0" in env \
                and f"GOACCEL_LAUNCHER_PID={kernel_pid}".encode() in env:
            return int(d.name)
    return None


def test_flush_survives_sigkill(tmp_path):
    from dvclive.utils import parse_metrics
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir = tmp_path / "run"
    with running_kernel() as (km, kc):
        kpid = km.provisioner.process.pid
        reply, out = run(kc, FLUSH_CELL)
        assert reply["content"]["status"] == "ok", out
        msg_id = kc.execute(f'_, err := launcher.NotebookLauncher(flushLoop, []any{{"{logdir}"}}, '
                            'launcher.Options{NumProcesses: 2, UsePort: "0"})\nfmt.Println("launch:", err)')
        printed = {}  # step -> when its line arrived
        display_ids, kinds, text = set(), [], ""
        killed_at = None
        start = time.monotonic()
        while True:
            # Kill once enough steps are old enough to be on disk (the launch
            # itself first compiles its cells: its start takes a while).
            if killed_at is None and sum(t < time.monotonic() - 1.2 for t in printed.values()) >= 12:
                pid = rank0_worker(kpid)
                assert pid, "rank 0's worker process not found in /proc"
                os.kill(pid, signal.SIGKILL)
                killed_at = time.monotonic()
            assert time.monotonic() - start < 2 * TIMEOUT, f"the launch did not end; got {sorted(printed)[-3:]}"
            try:
                msg = kc.get_iopub_msg(timeout=0.05)
            except Exception:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            t, c = msg["msg_type"], msg["content"]
            if t == "stream":
                text += c["text"]
                now = time.monotonic()
                for m in re.finditer(r"^\[rank 0\] step (\d+)$", c["text"], re.M):
                    printed.setdefault(int(m.group(1)), now)
            elif t in ("display_data", "update_display_data"):
                kinds.append(t)
                display_ids.add(c.get("transient", {}).get("display_id"))
            elif t == "status" and c["execution_state"] == "idle":
                break
        shell_reply(kc, msg_id)
    assert killed_at is not None, f"the launch ended before the kill:\n{text[-2000:]}"
    assert "launch: " in text and "launch: <nil>" not in text, text[-2000:]
    must = sorted(s for s, t in printed.items() if t < killed_at - 1.0)
    assert len(must) >= 10, f"too few steps printed before the kill: {must}"

    # one live chart for the run (rank 0's), updated in place
    assert kinds and kinds[0] == "display_data" and kinds.count("display_data") == 1, kinds
    assert len(display_ids) == 1 and None not in display_ids, display_ids

    run_dir = logdir / "flush"
    ea = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    ea.Reload()
    tb = {e.step: e.value for e in ea.Scalars("loss")} if "loss" in ea.Tags()["scalars"] else {}
    missing = [s for s in must if s not in tb]
    assert not missing, f"TensorBoard lost steps printed >1 s before SIGKILL: {missing}; has up to {max(tb, default=None)}"
    for s in must:
        assert math.isclose(tb[s], 1.0 / (s + 1), rel_tol=1e-6)

    d = logdir / "dvclive"
    history, _ = parse_metrics(types.SimpleNamespace(plots_dir=str(d / "plots"), metrics_file=str(d / "metrics.json")))
    rows = history[str(d / "plots" / "metrics" / "loss.tsv")]
    dv = {int(r["step"]): float(r["loss"]) for r in rows}
    missing = [s for s in must if s not in dv]
    assert not missing, f"dvclive lost steps printed >1 s before SIGKILL: {missing}; has up to {max(dv, default=None)}"
