"""Reads a dvclive directory with DVC and dvclive's own readers and prints
what they saw as JSON. argv: <repo root> <dvclive dir relative to it>.
The repo root must already be a DVC repository (dvc init --no-scm)."""
import json
import os
import subprocess
import sys
import types

import dvc.api

from dvclive.serialize import load_yaml
from dvclive.utils import parse_metrics

root, rel = sys.argv[1], sys.argv[2]
d = os.path.join(root, rel)
dvc_bin = os.path.join(os.path.dirname(sys.executable), "dvc")


def dvc_json(*args):
    p = subprocess.run([dvc_bin, *args, "--json"], cwd=root, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"dvc {' '.join(args)} failed: {p.stderr}")
    return json.loads(p.stdout)


history, latest = parse_metrics(types.SimpleNamespace(plots_dir=os.path.join(d, "plots"), metrics_file=os.path.join(d, "metrics.json")))
history = {os.path.relpath(k, os.path.join(d, "plots", "metrics")): v for k, v in history.items()}
out = {
    "metrics_show": dvc_json("metrics", "show"),
    "params_show": dvc.api.params_show(repo=root),
    "plots_show": dvc_json("plots", "show"),
    "history": history,
    "latest": latest,
    "params": load_yaml(os.path.join(d, "params.yaml")),
    "dvcyaml": load_yaml(os.path.join(d, "dvc.yaml")),
}
json.dump(out, sys.stdout)
