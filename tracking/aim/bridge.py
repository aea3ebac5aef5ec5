"""goaccel's bridge to Aim: Aim's storage is written only by its Python SDK.

Protocol (one JSON object per line). The first line on stdin opens the run:
  {"repo": PATH, "name": RUN_NAME, "experiment": NAME, "kwargs": {...}}
and is answered with {"seq": 0, "ok": true, "hash": RUN_HASH}, or with
{"seq": 0, "fatal": MESSAGE} when the run cannot be opened. Then each line
  {"seq": N, "op": "hparams", "values": {...}}
  {"seq": N, "op": "track", "name": K, "value": V, "step": S|null,
   "epoch": E|null, "context": {...}|null, "text": true|absent}
  {"seq": N, "op": "image", "name": K, "images": [{"png": BASE64,
   "caption": C}, ...], "list": BOOL, "image_kwargs": {...}, "step": S|null,
   "epoch": E|null, "context": {...}|null}
  {"seq": N, "op": "close"}
is answered with {"seq": N, "ok": true} or {"seq": N, "error": MESSAGE}.
End of input closes the run like "close" (the Go side went away).
"""
import base64
import io
import json
import sys


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def describe(exc):
    return "%s: %s" % (type(exc).__name__, exc)


def main():
    first = sys.stdin.readline()
    if not first:
        return 0
    spec = json.loads(first)
    try:
        import aim
        from aim.sdk.repo import Repo
    except ImportError as exc:
        reply({"seq": 0, "fatal": "the aim tracker needs the Python package aim "
               "(pip install aim) in the interpreter %s: %s" % (sys.executable, describe(exc))})
        return 2
    try:
        repo = Repo.from_path(spec["repo"], init=True)
        kwargs = dict(spec.get("kwargs") or {})
        kwargs.setdefault("experiment", spec.get("experiment"))
        run = aim.Run(repo=repo, **kwargs)
        if spec.get("name"):
            run.name = spec["name"]
    except Exception as exc:
        reply({"seq": 0, "fatal": "aim could not open a run in %s: %s" % (spec["repo"], describe(exc))})
        return 2
    reply({"seq": 0, "ok": True, "hash": run.hash})

    close_seq = None
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError as exc:
            reply({"seq": -1, "error": "bad request line: %s" % describe(exc)})
            continue
        seq = msg.get("seq", -1)
        op = msg.get("op")
        if op == "close":
            close_seq = seq
            break
        try:
            if op == "hparams":
                run["hparams"] = msg["values"]
            elif op == "track":
                value = msg["value"]
                if msg.get("text"):
                    value = aim.Text(value)
                run.track(value, name=msg["name"], step=msg.get("step"),
                          epoch=msg.get("epoch"), context=msg.get("context"))
            elif op == "image":
                from PIL import Image as PILImage
                images = []
                for spec in msg["images"]:
                    pil = PILImage.open(io.BytesIO(base64.b64decode(spec["png"])))
                    pil.load()
                    images.append(aim.Image(pil, caption=spec.get("caption") or "",
                                            **(msg.get("image_kwargs") or {})))
                value = images if msg.get("list") else images[0]
                run.track(value, name=msg["name"], step=msg.get("step"),
                          epoch=msg.get("epoch"), context=msg.get("context"))
            else:
                raise ValueError("unknown op %r" % op)
            reply({"seq": seq, "ok": True})
        except Exception as exc:
            reply({"seq": seq, "error": describe(exc)})

    run_hash = run.hash
    try:
        run.close()
    except Exception as exc:
        reply({"seq": close_seq if close_seq is not None else -1, "error": "closing the run: " + describe(exc)})
        return 1
    # Aim indexes finished runs lazily (aim up / aim storage reindex); index
    # this one now so Repo.iter_runs() lists it at once.
    try:
        from aim.sdk.index_manager import RepoIndexManager
        RepoIndexManager.get_index_manager(repo).index(run_hash)
    except Exception as exc:
        sys.stderr.write("goaccel aim bridge: indexing run %s failed (aim up will index it): %s\n"
                         % (run_hash, describe(exc)))
    if close_seq is not None:
        reply({"seq": close_seq, "ok": True, "closed": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
