"""Runs every notebook in examples/notebooks headless with nbclient and checks
each code cell's outputs against the expectations stored in the cell's
metadata ("goaccel_expect"): stdout substrings, MIME types shown, the
text/plain result, the error name or value. Cells tagged raises-exception must
raise; every other cell must not."""
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import KERNEL_NAME, ROOT

NOTEBOOKS = sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))
ARTIFACTS = ROOT / "e2e" / "artifacts"


def test_there_are_notebooks():
    assert NOTEBOOKS, "examples/notebooks holds no notebook"


def _text(outputs, name):
    return "".join(o.get("text", "") for o in outputs
                   if o["output_type"] == "stream" and o.get("name") == name)


def _mimes(outputs):
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
        assert s in _text(outs, "stdout"), f"stdout lacks {s!r} in {where}"
    for s in expect.get("stderr", []):
        assert s in _text(outs, "stderr"), f"stderr lacks {s!r} in {where}"
    for m in expect.get("mime", []):
        assert m in _mimes(outs), f"no {m} output in {where}"
    results = [o for o in outs if o["output_type"] == "execute_result"]
    if "result" in expect:
        assert results, f"no execute_result in {where}"
        assert results[-1]["data"]["text/plain"] == expect["result"], where
    for m in expect.get("result_mime", []):
        assert results and m in results[-1]["data"], f"result lacks {m} in {where}"
    if "error" in expect:
        text = " ".join(e["ename"] + " " + e["evalue"] + " " + "\n".join(e["traceback"]) for e in errors)
        assert expect["error"] in text, f"error lacks {expect['error']!r} in {where}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_headless(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=600,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, ARTIFACTS / path.name)
    code_cells = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert code_cells
    for i, cell in code_cells:
        check_cell(i, cell)
