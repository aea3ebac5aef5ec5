"""Read an Aim repository with Aim's own SDK and print it as JSON.

Usage: python read_aim.py REPO_DIR

Uses aim.Repo(path).iter_runs() (which lists indexed runs), each run's
name, experiment, hparams, metric sequences (name, context, steps, values),
text sequences and image sequences (each step's value a list of images:
caption, width, height, format, sha256 of the RGBA pixels, and whether a
list was tracked).
"""
import hashlib
import json
import math
import sys

import aim


def main():
    repo = aim.Repo(sys.argv[1])
    runs = []
    for run in repo.iter_runs():
        metrics = []
        for m in run.metrics():
            steps, columns = m.data.items_list()  # steps, [values, epochs, timestamps]
            values = columns[0]
            metrics.append({
                "name": m.name,
                "context": m.context.to_dict(),
                "steps": [int(s) for s in steps],
                # JSON has no infinities or NaN: send those as their repr
                "values": [float(v) if math.isfinite(v) else repr(float(v)) for v in values],
            })
        texts = []
        for name, context, _ in run.iter_sequence_info_by_type("aim.text"):
            seq = run.get_text_sequence(name, context)
            steps, columns = seq.data.items_list()
            texts.append({
                "name": name,
                "context": context.to_dict(),
                "steps": [int(s) for s in steps],
                "values": [t.data for t in columns[0]],
            })
        images = []
        for name, context, _ in run.iter_sequence_info_by_type("aim.image"):
            seq = run.get_image_sequence(name, context)
            steps, columns = seq.data.items_list()
            values = []
            for v in columns[0]:
                group = v if isinstance(v, list) else [v]
                values.append({"list": isinstance(v, list), "images": [{
                    "caption": im.caption,
                    "width": im.width,
                    "height": im.height,
                    "format": im.format,
                    "rgba_sha256": hashlib.sha256(im.to_pil_image().convert("RGBA").tobytes()).hexdigest(),
                } for im in group]})
            images.append({
                "name": name,
                "context": context.to_dict(),
                "steps": [int(s) for s in steps],
                "values": values,
            })
        runs.append({
            "hash": run.hash,
            "name": run.name,
            "experiment": run.experiment,
            "hparams": run.get("hparams"),
            "active": run.active,
            "metrics": metrics,
            "texts": texts,
            "images": images,
        })
    print(json.dumps(runs, default=str))


if __name__ == "__main__":
    main()
