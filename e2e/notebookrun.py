"""Executing notebooks headless with nbclient and checking each code cell's
outputs against the expectations stored in the cell's metadata
("goaccel_expect"): stdout and stderr substrings, MIME types shown, the
text/plain result, the error name or value. Cells tagged raises-exception
must raise; every other cell must not. Shared by test_notebooks.py and
test_trackers.py."""
import json
import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from conftest import KERNEL_NAME, ROOT

ARTIFACTS = ROOT / "e2e" / "artifacts"
VENV = Path(os.environ.get("GOACCEL_VENV") or Path.home() / ".cache" / "goaccel" / "venv")
# The aim tracker's bridge runs $GOACCEL_VENV/bin/python (`make` exports it).
os.environ.setdefault("GOACCEL_VENV", str(VENV))


def stream_text(outputs, name):
    return "".join(o.get("text", "") for o in outputs
                   if o["output_type"] == "stream" and o.get("name") == name)


def mimes(outputs):
    seen = set()
    for o in outputs:
        if o["output_type"] in ("display_data", "execute_result"):
            seen.update(o.get("data", {}).keys())
    return seen


def check_cell(i, cell):
    expect = cell.metadata.get("goaccel_expect", {})
    outs = cell.get("outputs", [])
    where = f"cell {i}:\n{cell.source}\n-- outputs --\n{json.dumps(outs, indent=1)[:3000]}"
    errors = [o for o in outs if o["output_type"] == "error"]
    if "raises-exception" in cell.metadata.get("tags", []):
        assert errors, f"expected an error in {where}"
    else:
        assert not errors, f"unexpected error in {where}"
    for s in expect.get("stdout", []):
        assert s in stream_text(outs, "stdout"), f"stdout lacks {s!r} in {where}"
    for s in expect.get("stderr", []):
        assert s in stream_text(outs, "stderr"), f"stderr lacks {s!r} in {where}"
    for m in expect.get("mime", []):
        assert m in mimes(outs), f"no {m} output in {where}"
    results = [o for o in outs if o["output_type"] == "execute_result"]
    if "result" in expect:
        assert results, f"no execute_result in {where}"
        assert results[-1]["data"]["text/plain"] == expect["result"], where
    for m in expect.get("result_mime", []):
        assert results and m in results[-1]["data"], f"result lacks {m} in {where}"
    if "error" in expect:
        text = " ".join(e["ename"] + " " + e["evalue"] + " " + "\n".join(e["traceback"]) for e in errors)
        assert expect["error"] in text, f"error lacks {expect['error']!r} in {where}"


def run_notebook(path, workdir=None, save_as=None):
    """Executes the notebook at path with its folder (or workdir) as the
    working directory, saves the executed copy under e2e/artifacts, checks
    every code cell and returns the executed notebook."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=600,
                            resources={"metadata": {"path": str(workdir or path.parent)}})
    client.execute()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, ARTIFACTS / (save_as or path.name))
    code_cells = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert code_cells
    for i, cell in code_cells:
        check_cell(i, cell)
    return nb
