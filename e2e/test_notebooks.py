"""Runs every notebook in examples/notebooks headless with nbclient and checks
each code cell's outputs against the expectations stored in the cell's
metadata ("goaccel_expect"): stdout substrings, MIME types shown, the
text/plain result, the error name or value. Cells tagged raises-exception must
raise; every other cell must not (see notebookrun.py).

The kernel runs without network for modules (GOPROXY=off): modules that a
notebook fetches (%go get) must be in the module cache, which
`make test-deps` sees to (scripts/gomods.sh).

GOACCEL_MNIST_STEPS shortens mnist_gomlx.ipynb's training runs (unset, it
trains 3 epochs twice: 11-12 minutes on 2 cores); GOACCEL_FSDP_STEPS
fsdp_full_shard.ipynb's two runs (20 steps by default)."""
import pytest

from conftest import ROOT
from notebookrun import run_notebook

NOTEBOOKS = sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "examples/notebooks holds no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_headless(path, monkeypatch):
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOACCEL_MNIST_STEPS", "100")
    monkeypatch.setenv("GOACCEL_GPT_STEPS", "60")
    monkeypatch.setenv("GOACCEL_FSDP_STEPS", "8")
    run_notebook(path)
