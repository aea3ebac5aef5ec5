"""Reads an MLflow run back with MlflowClient and prints it as JSON.
argv: <tracking uri> <run id>"""
import json
import math
import sys

from mlflow.tracking import MlflowClient

uri, run_id = sys.argv[1], sys.argv[2]
c = MlflowClient(tracking_uri=uri)
run = c.get_run(run_id)
exp = c.get_experiment(run.info.experiment_id)


def num(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    return v


history = {}
for key in run.data.metrics:
    history[key] = [[m.step, num(m.value), m.timestamp] for m in c.get_metric_history(run_id, key)]
json.dump({
    "status": run.info.status,
    "run_name": run.info.run_name,
    "end_time": run.info.end_time,
    "experiment_name": exp.name,
    "artifact_location": exp.artifact_location,
    "params": run.data.params,
    "tags": run.data.tags,
    "history": history,
}, sys.stdout)
