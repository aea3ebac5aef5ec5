"""Runs the notebooks Go users already have, GoNB's and GoMLX's, as
published, on goaccel, and measures how many of their cells run and how
many reproduce the outputs saved in them.

    make gonb-corpus                       # both corpora
    e2e/gonb_corpus.py --corpus gonb       # one; --only NAME for one notebook
    e2e/gonb_corpus.py --diff              # print every difference

The corpora come from the Go module cache (`go mod download`):
github.com/janpfeifer/gonb@v0.11.1 (examples/tutorial.ipynb and
examples/tests/*.ipynb) and github.com/gomlx/gomlx@v0.26.0
(examples/tutorial/tutorial.ipynb, examples/fft/fft.ipynb,
examples/discretekan/kans_shapes.ipynb). Each notebook runs unchanged, cell
by cell, with nbclient (allow_errors, a timeout per cell, interrupting a
cell that passes it), in a writable copy of its folder, with the
environment GoNB's own notebook tests give them: GONB_GIT_ROOT is GoNB's
source (the module cache's copy) and TEST_DIR a scratch folder.

Input boxes get the values GoNB's own test of the notebook types (INPUTS).
The notebooks whose cells need the page (BROWSER: JavaScript a cell shows
talks back to the kernel, gonbui's widgets, comms and dom) run in
JupyterLab in headless chromium instead, cell by cell
(e2e/browser/runnotebook.mjs), as GoNB's own tests run them in Chrome.

A cell "runs" when it ends without an error output, within its timeout,
with the kernel alive. Its outputs "match" when, normalized, they equal the
saved ones: stream text as a terminal shows it (carriage returns applied,
ANSI colours dropped), consecutive stream chunks joined, timings, dates,
machine-specific paths, addresses and GoNB's random 8-hex-digit ids replaced by
placeholders, PNG images compared by size, and goaccel's own notes on
stderr (lines starting with "goaccel: ": imports added, modules fetched)
left out. The report lists every cell that does not match, with the
reason known for it (KNOWN below) and, with --diff, the difference.

Not part of `make test`: the corpus is other projects' notebooks, fetched
into the module cache, and the GoMLX notebooks train for minutes.
"""
import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellTimeoutError, DeadKernelError  # noqa: E402
from nbclient.util import run_sync  # noqa: E402

from conftest import KERNEL_NAME, ROOT  # noqa: E402  (installs the kernelspec)

GONB = "github.com/janpfeifer/gonb@v0.11.1"
GOMLX = "github.com/gomlx/gomlx@v0.26.0"

# Why a cell's outputs cannot equal the saved ones here, by notebook and
# cell index (the index in the notebook's list of cells, markdown
# included). The report prints these beside each cell that differs.
_STATE = ("goaccel keeps the session's state between cells, where GoNB runs each cell as a new program")
_BROWSER = ("needs a browser running the JavaScript the cell shows (GoNB's own test of it runs headless Chrome through "
            "nbexec): nbclient runs none, so the values that JavaScript would send never come and the cell waits until "
            "its timeout (or its own)")
_COVER = ("coverage (%goflags --cover) is not collected: cells are plugins built with the kernel's settings, which the "
          "%goflags cell says")
_WORKFIX = ("GONB_GIT_ROOT is the module cache's copy of v0.11.1, the version the kernel is built with: %goworkfix says "
            "that no replace rule is needed, where the author's checkout got one")
_PROXY = "the module proxy this machine reaches does not serve {} (403), so the cell cannot build here"
KNOWN = {
    "gonb/tutorial.ipynb": {
        11: _STATE + ": startValue keeps the value cell 9 gave it (2) where GoNB starts again from 1",
        13: "random values; and GoNB's saved run found the cache.Cache value already on disk (one VeryExpensive call)",
        17: ("the session takes progressbar's newest version (v3.19.1), whose last frame drops the [elapsed:left] "
             "times the saved (older) one shows"),
        23: _PROXY.format("github.com/benc-uk/gofract"),
        27: _PROXY.format("github.com/erkkah/margaid"),
        28: _PROXY.format("github.com/erkkah/margaid"),
        30: _PROXY.format("github.com/erkkah/margaid"),
        34: "the plot is of random points: the axes' ticks differ",
        40: _STATE + ": init_a, declared by an earlier cell, ran with that cell and does not run again",
        49: "uses mgSinPlot from cell 30 (margaid, not served here), and its slider " + _BROWSER,
        52: "go version and the folder listing are this machine's",
        54: "the session module's folder holds goaccel's files (go.mod, go.sum, main.go), not GoNB's (a binary, gopls' socket)",
        64: ("a replace of github.com/janpfeifer/gonb (the author's ~/Projects/gonb) is refused with a clear error: the "
             "kernel is built with gonbui v0.11.1, the version cells must use"),
        66: "~/Projects/gonb (the author's checkout) does not exist here: go work use fails, as GoNB's would",
        69: "%track: GoNB tracked the folders of the go.work cell 66 made; that cell fails here",
        72: "%help shows goaccel's help (its magics and GoNB's commands), not GoNB's page",
    },
    "gonb/comms.ipynb": {3: _WORKFIX},
    "gonb/dom.ipynb": {3: _WORKFIX},
    "gonb/widgets.ipynb": {3: _WORKFIX},
    "gonb/goflags.ipynb": {
        9: _COVER,
        14: "go build -gcflags=-m of the program goaccel writes: its main.go is laid out differently from GoNB's",
    },
    "gonb/gotest.ipynb": {**{c: _COVER for c in (3, 7, 9, 11, 13, 15)},
                          5: ("%ls lists fmt (which goaccel imports into the session when a cell uses it) and main "
                              "(GoNB's goimports adds fmt to each program without memorizing it)")},
    "gonb/gowork.ipynb": {
        8: "the session's go.mod requires goaccel (module goaccel.session), GoNB's is the cell's own module",
        10: "%track: GoNB tracks the folders of go.work's modules; goaccel applies them as %use does",
        11: "the session's go.mod requires goaccel (module goaccel.session), GoNB's is the cell's own module",
    },
    "gonb/init.ipynb": {c: _STATE + (": each cell's init functions (init and init_NAME) run when that cell runs, not "
                                     "again before every later cell") for c in (2, 3, 4, 6)},
    "gonb/gonbui.ipynb": {1: _COVER + " (GOCOVERDIR is empty)", 3: _WORKFIX},
    "gonb/input_boxes.ipynb": {
        1: _COVER + " (GOCOVERDIR is empty)",
        3: _WORKFIX,
        5: "the saved [stdin] lines are what JupyterLab writes into the notebook when an input box is answered; nbclient writes none",
        6: "the saved [stdin] lines are what JupyterLab writes into the notebook when an input box is answered; nbclient writes none",
    },
    "gonb/vartuple.ipynb": {
        1: ("%ls lists fmt (which goaccel imports into the session when a cell uses it) and main; GoNB's goimports adds "
            "fmt to each program without memorizing it, and lists its blank identifier as _~635606"),
        3: ("declaring c again replaces only c: a, declared with it by `var a, _, c = tupleFn()`, stays (GoNB drops the "
            "whole declaration), so %rm a removes it"),
    },
    "gonb/wasm.ipynb": {
        1: "the saved output lacks the %goflags line GoNB prints elsewhere (input_boxes cell 1); goaccel prints it",
        5: _WORKFIX,
        7: "goaccel's script that starts the wasm program differs in text from GoNB's (same effect: argv, the .wasm file)",
        9: "the saved JavaScript is indented with tabs the cell's source does not have (an earlier version of the cell)",
    },
}

# Notebooks whose cells need a browser running the JavaScript they show.
BROWSER = {"gonb/comms.ipynb", "gonb/dom.ipynb", "gonb/widgets.ipynb"}

# What the user typed into input boxes, in order: the values GoNB's own
# test of the notebook types (internal/nbtests/inputs_test.go).
INPUTS = {"gonb/input_boxes.ipynb": ["foo", "bar", "42", "123456"]}


class Client(NotebookClient):
    """nbclient with input: input requests are answered with the values in
    self.inputs (nbclient itself allows none)."""

    inputs = []

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        self.kc.allow_stdin = bool(self.inputs)
        done = asyncio.Event()

        async def answer():
            while not done.is_set():
                try:
                    msg = await self.kc.get_stdin_msg(timeout=0.2)
                except Empty:
                    continue
                if msg["msg_type"] == "input_request":
                    self.kc.input(self.inputs.pop(0) if self.inputs else "")

        task = asyncio.ensure_future(answer())
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            done.set()
            await task

    execute_cell = run_sync(async_execute_cell)


def module_dir(mod):
    out = subprocess.run(["go", "mod", "download", "-json", mod], capture_output=True, text=True)
    info = json.loads(out.stdout or "{}")
    if not info.get("Dir"):
        raise SystemExit(f"cannot find {mod} in the module cache: {info.get('Error') or out.stderr}")
    return Path(info["Dir"])


def corpora(which):
    """(corpus name, notebook path, its folder to copy) for the corpora asked."""
    out = []
    if which in ("gonb", "all"):
        d = module_dir(GONB) / "examples"
        out.append(("gonb", d / "tutorial.ipynb", d))
        for p in sorted((d / "tests").glob("*.ipynb")):
            out.append(("gonb", p, d / "tests"))
    if which in ("gomlx", "all"):
        d = module_dir(GOMLX) / "examples"
        for rel in ("tutorial/tutorial.ipynb", "fft/fft.ipynb", "discretekan/kans_shapes.ipynb"):
            out.append(("gomlx", d / rel, (d / rel).parent))
    return out


# --- normalization -------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RULES = [
    # dates and clock times (log lines)
    (re.compile(r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(\.\d+)?"), "<date>"),
    # Go benchmark lines: iterations and ns/op (and the column widths,
    # which depend on the number of CPUs in the name's -N suffix)
    (re.compile(r"(Benchmark\S*)-\d+\s+\d+\s+[\d.]+ ns/op"), r"\1 <bench>"),
    (re.compile(r"(Benchmark\S*)\s+\d+\s+[\d.]+ ns/op"), r"\1 <bench>"),
    (re.compile(r"^cpu: .*$", re.M), "cpu: <cpu>"),
    # the package go test names: GoNB's is gonb_<id>, goaccel's the session module
    (re.compile(r"^pkg: \S+$", re.M), "pkg: <pkg>"),
    # rates and durations
    (re.compile(r"\d[\d.,]*\s*(steps|it|its)/s"), r"<rate> \1/s"),
    (re.compile(r"\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b(\d+(\.\d+)?(ns|µs|us|ms|s))*"), "<dur>"),
    (re.compile(r"lastRenderTime=[\d.]+"), "lastRenderTime=<dur>"),
    # addresses and temporary paths
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    # (a machine's folders: the author's home, GoNB's /tmp, goaccel's
    # cache and the corpus's scratch folder are all one placeholder)
    (re.compile(r"/tmp/[\w.~@-]+(/[\w.~@-]+)*"), "<path>"),
    (re.compile(r"(/home|/root)/[\w.~/@-]+"), "<path>"),
    # GoNB's UniqueId: 8 hex digits (ids of divs, displays, widgets)
    (re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{8}(?![0-9a-fA-F])"), "<id>"),
]


def terminal(text):
    """The text as a terminal shows it: a carriage return goes back to the
    start of the line; ANSI colour codes are dropped."""
    text = ANSI.sub("", text)
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            parts = [p for p in line.split("\r")]
            # the last non-empty overwrite wins (a trailing \r leaves the line)
            kept = ""
            for p in parts:
                if p:
                    kept = p + kept[len(p):]
            line = kept
        lines.append(line.rstrip())
    return "\n".join(lines)


def norm_text(text):
    for rx, rep in RULES:
        text = rx.sub(rep, text)
    return text


def png_size(b64):
    try:
        raw = base64.b64decode(b64[:64] + "=" * (-len(b64[:64]) % 4))
        w, h = struct.unpack(">II", raw[16:24])
        return f"<png {w}x{h}>"
    except Exception:  # noqa: BLE001
        return "<png>"


DATA_PNG = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def norm_data(mime, content):
    if isinstance(content, list):
        content = "".join(content)
    if mime == "image/png":
        return png_size(content)
    if not isinstance(content, str):
        return json.dumps(content, sort_keys=True)
    content = DATA_PNG.sub(lambda m: "data:" + png_size(m.group(1)), content)
    return norm_text(content).strip()


def canon(outputs):
    """The outputs of a cell, normalized, as a list of comparable items."""
    items = []
    for o in outputs:
        t = o.get("output_type")
        if t == "stream":
            text = o.get("text", "")
            if isinstance(text, list):
                text = "".join(text)
            if items and items[-1][0] == "stream" and items[-1][1] == o["name"]:
                items[-1] = ("stream", o["name"], items[-1][2] + text)
            else:
                items.append(("stream", o["name"], text))
        elif t in ("display_data", "execute_result"):
            data = o.get("data", {})
            items.append(("display", tuple(sorted((m, norm_data(m, v)) for m, v in data.items()))))
        elif t == "error":
            items.append(("error", "(an error)"))  # kernels name errors their own way
    out = []
    for it in items:
        if it[0] == "stream":
            text = terminal(it[2])
            if it[1] == "stderr":
                text = "\n".join(ln for ln in text.split("\n") if not ln.startswith("goaccel: "))
            text = norm_text(text).strip("\n")
            if text.strip():
                out.append(("stream", it[1], text))
        else:
            out.append(it)
    return out


def show(items):
    lines = []
    for it in items:
        if it[0] == "stream":
            lines.append(f"[{it[1]}] " + it[2].replace("\n", "\n    "))
        elif it[0] == "display":
            lines.append("[display] " + "; ".join(f"{m}: {v[:300]!r}" for m, v in it[1]))
        else:
            lines.append(f"[error] {it[1]}")
    return "\n".join(lines) or "(no output)"


def error_text(outputs):
    for o in outputs:
        if o.get("output_type") == "error":
            tb = "\n".join(o.get("traceback", []))
            return f"{o.get('ename')}: {o.get('evalue')}\n{ANSI.sub('', tb)}"[:1500]
    return ""


# --- running ---------------------------------------------------------------

def record(corpus, path, saved, i, cell, status, seconds):
    """The result of cell i, compared with the saved notebook, printed."""
    r = {"notebook": f"{corpus}/{path.name}", "cell": i, "source": cell.source, "status": status, "seconds": seconds}
    if r["status"] == "ok" and any(o.output_type == "error" for o in cell.outputs):
        r["status"] = "error"
    want, got = canon(saved.cells[i].outputs), canon(cell.outputs)
    r["match"] = want == got
    r["want"], r["got"] = show(want), show(got)
    r["error"] = error_text(cell.outputs)
    r["known"] = KNOWN.get(f"{corpus}/{path.name}", {}).get(i, "")
    mark = "ok " if r["status"] == "ok" else r["status"].upper()[:5]
    print(f"  {mark:5} {'=' if r['match'] else '≠'} cell {i:3} ({r['seconds']}s) "
          f"{cell.source.strip().splitlines()[0][:60] if cell.source.strip() else '(empty)'}",
          flush=True)
    return r


def run_in_browser(corpus, path, work, saved, args):
    """Runs the notebook in JupyterLab in chromium (runnotebook.mjs)."""
    copy = work / path.name
    shutil.copy(path, copy)
    os.chmod(copy, 0o644)
    env = {**os.environ, "GOACCEL_NODE_DIR": os.environ.get("GOACCEL_NODE_DIR", str(Path.home() / ".cache" / "goaccel" / "node"))}
    proc = subprocess.run(["node", str(ROOT / "e2e" / "browser" / "runnotebook.mjs"), str(copy), str(args.timeout)],
                          capture_output=True, text=True, env=env)
    ran = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            ran[r["cell"]] = r
    nb = nbformat.read(copy, as_version=4)
    results = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        r = ran.get(i, {"status": "not run (the browser run failed)", "seconds": 0})
        results.append(record(corpus, path, saved, i, cell, r["status"], r["seconds"]))
    if proc.returncode != 0:
        print("  the browser run failed: " + proc.stderr.strip()[-1500:], flush=True)
    return nb, results


def run_notebook(corpus, path, folder, args, scratch):
    work = scratch / f"{corpus}-{path.stem}"
    shutil.copytree(folder, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.ipynb"))
    for p in work.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.chmod(work, 0o755)
    saved = nbformat.read(path, as_version=4)
    if f"{corpus}/{path.name}" in BROWSER and not args.no_browser:
        nb, results = run_in_browser(corpus, path, work, saved, args)
        save_run(nb, corpus, path)
        return results
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
    client = Client(nb, kernel_name=KERNEL_NAME, timeout=args.timeout, allow_errors=True,
                    interrupt_on_timeout=True, resources={"metadata": {"path": str(work)}})
    client.inputs = list(INPUTS.get(f"{corpus}/{path.name}", []))
    results = []
    died = False
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            t0 = time.monotonic()
            status = "not run (kernel died)"
            if not died:
                try:
                    client.execute_cell(cell, i)
                    status = "ok"
                except CellTimeoutError:
                    status = "timeout"
                except DeadKernelError:
                    status = "kernel died"
                    died = True
            results.append(record(corpus, path, saved, i, cell, status, round(time.monotonic() - t0, 1)))
    save_run(nb, corpus, path)
    return results


def save_run(nb, corpus, path):
    out_dir = ROOT / "e2e" / "artifacts" / "gonb-corpus"
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out_dir / f"{corpus}-{path.stem}.ipynb")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=["gonb", "gomlx", "all"], default="all")
    ap.add_argument("--only", help="run only notebooks whose name contains this")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("CORPUS_TIMEOUT", "600")),
                    help="seconds per cell")
    ap.add_argument("--diff", action="store_true", help="print each difference")
    ap.add_argument("--no-browser", action="store_true",
                    help="run the notebooks that need a page (BROWSER) with nbclient too")
    ap.add_argument("--json", default=str(ROOT / "e2e" / "artifacts" / "gonb-corpus.json"))
    args = ap.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="goaccel-corpus-"))
    test_dir = scratch / "testdir"
    test_dir.mkdir()
    os.environ["GONB_GIT_ROOT"] = str(module_dir(GONB))
    os.environ["TEST_DIR"] = str(test_dir) + "/"
    # The kernel's parent (this process) works in the scratch folder: the
    # "Jupyter root" GoNB's %wasm writes files under.
    os.chdir(scratch)
    results = []
    for corpus, path, folder in corpora(args.corpus):
        if args.only and args.only not in path.name:
            continue
        print(f"{corpus}: {path.relative_to(path.parents[2]) if corpus == 'gomlx' else path.name}", flush=True)
        results += run_notebook(corpus, path, folder, args, scratch)

    print()
    for corpus in ("gonb", "gomlx"):
        rs = [r for r in results if r["notebook"].startswith(corpus + "/")]
        if not rs:
            continue
        ok = sum(r["status"] == "ok" for r in rs)
        match = sum(r["match"] for r in rs)
        dead = sum(r["status"] == "kernel died" for r in rs)
        print(f"{corpus}: {ok} of {len(rs)} cells end without error; {match} of {len(rs)} match the "
              f"saved outputs; kernel deaths: {dead}")
    print()
    for r in results:
        if r["status"] == "ok" and r["match"]:
            continue
        print(f"- {r['notebook']} cell {r['cell']}: {r['status']}, "
              f"{'outputs match' if r['match'] else 'outputs differ'}"
              f"{': ' + r['known'] if r['known'] else ''}")
        if r["status"] != "ok" and r["error"] and (args.diff or not r["known"]):
            print("    " + r["error"].strip().replace("\n", "\n    ")[:800])
        if args.diff and not r["match"]:
            print("    want: " + r["want"].replace("\n", "\n          ")[:1500])
            print("    got:  " + r["got"].replace("\n", "\n          ")[:1500])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
