"""Reads a TensorBoard log directory with TensorBoard's own EventAccumulator
(size_guidance 0 = keep everything) and with tbparse, and prints what they
saw as JSON for the Go test to assert on."""
import json
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.util import tensor_util
from tbparse import SummaryReader

root = sys.argv[1]
out = {"ea": {}, "tbparse": {}}

for dirpath, _, files in sorted(os.walk(root)):
    if not any("tfevents" in f for f in files):
        continue
    run = os.path.relpath(dirpath, root)
    ea = EventAccumulator(dirpath, size_guidance={"scalars": 0, "tensors": 0, "histograms": 0, "images": 0, "compressedHistograms": 0})
    ea.Reload()
    tags = ea.Tags()
    r = {"scalars": {}, "texts": {}, "images": {}, "hparams": {}, "file_version": ea.file_version}
    for tag in tags["scalars"]:
        r["scalars"][tag] = [[e.step, e.value] for e in ea.Scalars(tag)]
    for tag in tags["images"]:
        r["images"][tag] = [[e.step, e.width, e.height, len(e.encoded_image_string)] for e in ea.Images(tag)]
    try:
        text_tags = ea.PluginTagToContent("text")
    except KeyError:
        text_tags = {}
    for tag in text_tags:
        r["texts"][tag] = [[e.step, tensor_util.make_ndarray(e.tensor_proto).reshape(-1)[0].decode()] for e in ea.Tensors(tag)]
    try:
        hp = ea.PluginTagToContent("hparams")
    except KeyError:
        hp = {}
    for tag, content in hp.items():
        d = plugin_data_pb2.HParamsPluginData.FromString(content)
        kind = d.WhichOneof("data")
        if kind == "experiment":
            r["hparams"]["experiment"] = {"hparams": sorted(h.name for h in d.experiment.hparam_infos),
                                          "types": {h.name: h.type for h in d.experiment.hparam_infos}}
        elif kind == "session_start_info":
            vals = {}
            for k, v in d.session_start_info.hparams.items():
                vals[k] = getattr(v, v.WhichOneof("kind"))
            r["hparams"]["start"] = vals
        elif kind == "session_end_info":
            r["hparams"]["end_status"] = d.session_end_info.status
        r["hparams"].setdefault("tags", []).append(tag)
    out["ea"][run] = r

reader = SummaryReader(root, extra_columns={"dir_name"})
sc = reader.scalars
out["tbparse"]["scalars"] = [[row.dir_name, row.tag, int(row.step), float(row.value)] for row in sc.itertuples()] if len(sc) else []
tx = reader.text
out["tbparse"]["text"] = [[row.dir_name, row.tag, int(row.step), row.value] for row in tx.itertuples()] if len(tx) else []
hp = reader.hparams
out["tbparse"]["hparams"] = {row.tag: (row.value if not hasattr(row.value, "item") else row.value.item()) for row in hp.itertuples()} if len(hp) else {}
json.dump(out, sys.stdout)
