"""The notebook part of scripts/gpu-check.sh: runs
examples/notebooks/gpt_shakespeare.ipynb headless with nbclient in short
mode (GOACCEL_GPT_STEPS) in a goaccel kernel whose environment gives the
Accelerator a GPU (CUDA_VISIBLE_DEVICES), checks every code cell as the
end-to-end tests do (e2e/notebookrun.py's check_cell: the expectations in
the cells' metadata), and asks the same kernel, after the cells, which
GoMLX backend an Accelerator gets there: gxa.ChooseBackend(acc.Device()),
the backend gxa.AcceleratorBackend builds (its description and its
device's), and a computation run on it. Before the notebook, the same
question goes to a kernel started with the environment exactly as given,
to show what a user who sets nothing gets.

Writes one line per check to --results (name TAB status TAB seconds TAB
detail; status PASS, FAIL or SKIP) and the executed notebook (the probe
appended as a last cell) to --out-notebook after every cell, so a run cut
short leaves what it did. Stays inside --budget seconds: every cell's
timeout is what is left.

    python scripts/gpu_check_notebook.py --results R --out-notebook NB \
        --budget 240 --cuda-visible 0 [--steps 60]

Needs the goaccel virtualenv's Python (nbclient, nbformat,
jupyter_client) and bin/goaccel (make build)."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "notebooks" / "gpt_shakespeare.ipynb"
BINARY = ROOT / "bin" / "goaccel"
KERNEL_NAME = "goaccel-gpucheck"

# A cell for the end: which backend an Accelerator of this kernel gets, and
# proof that it computes there. Its names are its own (gpuCheck...), so it
# redeclares nothing of the notebook's.
PROBE = """import (
	"encoding/json"
	"fmt"
	"os"

	gpuCheckGraph "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/goaccel/goaccel/accelerate"
	gpuCheckGXA "github.com/goaccel/goaccel/accelerate/gomlx"
)

gpuCheck := map[string]any{}
for _, k := range []string{"CUDA_VISIBLE_DEVICES", "PJRT_PLUGIN_LIBRARY_PATH", "GOMLX_BACKEND", "GOMLX_NO_AUTO_INSTALL", "XLA_FLAGS"} {
	v, ok := os.LookupEnv(k)
	if !ok {
		v = "(unset)"
	}
	gpuCheck["env_"+k] = v
}
accelerate.ResetState()
if gpuCheckAcc, err := accelerate.NewAccelerator(); err != nil {
	gpuCheck["accelerator_error"] = err.Error()
} else {
	c := gpuCheckGXA.ChooseBackend(gpuCheckAcc.Device())
	gpuCheck["device"], gpuCheck["config"], gpuCheck["plugin"], gpuCheck["why"] = gpuCheckAcc.Device(), c.Config, c.Plugin, c.Why
	if b, err := gpuCheckGXA.AcceleratorBackend(gpuCheckAcc); err != nil {
		gpuCheck["backend_error"] = err.Error()
	} else {
		gpuCheck["backend"] = b.Description()
		gpuCheck["num_devices"] = b.NumDevices()
		gpuCheck["device_description"] = b.DeviceDescription(0)
		if t, err := gpuCheckGraph.ExecOnce(b, func(x *gpuCheckGraph.Node) *gpuCheckGraph.Node {
			return gpuCheckGraph.Add(x, x)
		}, float32(21)); err != nil {
			gpuCheck["exec_error"] = err.Error()
		} else {
			gpuCheck["exec"] = fmt.Sprint(t.Value())
		}
		b.Finalize()
	}
	gpuCheckAcc.EndTraining()
}
accelerate.ResetState()
gpuCheckJSON, _ := json.Marshal(gpuCheck)
fmt.Println("GPUCHECK " + string(gpuCheckJSON))
"""

START = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - START:6.1f}s] {msg}", flush=True)


def one_line(s, n=300):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 3] + "..."


class Results:
    def __init__(self, path):
        self.path = path
        self.rows = {}
        self.order = []

    def set(self, name, status, seconds, detail):
        if name not in self.rows:
            self.order.append(name)
        self.rows[name] = (status, int(round(seconds)), one_line(detail, 600))
        self.write()

    def write(self):
        with open(self.path, "w") as f:
            for name in self.order:
                status, secs, detail = self.rows[name]
                f.write(f"{name}\t{status}\t{secs}\t{detail.replace(chr(9), ' ')}\n")


def load_check_cell():
    """e2e/notebookrun.py's check_cell, without running e2e/conftest.py
    (which installs a kernelspec of its own at import): a stand-in conftest
    gives notebookrun the two names it imports."""
    stub = types.ModuleType("conftest")
    stub.KERNEL_NAME, stub.ROOT = KERNEL_NAME, ROOT
    sys.modules["conftest"] = stub
    sys.path.insert(0, str(ROOT / "e2e"))
    try:
        import notebookrun
        return notebookrun.check_cell, "e2e/notebookrun.py"
    except Exception as e:  # nbformat/nbclient missing, or notebookrun changed
        log(f"cannot import e2e/notebookrun.py ({e!r}); checking for errors only")

        def errors_only(i, cell):
            errs = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
            if "raises-exception" in cell.metadata.get("tags", []):
                assert errs, f"cell {i}: expected an error"
            else:
                assert not errs, f"cell {i}: unexpected error {errs[0]['ename']}: {errs[0]['evalue']}"
        return errors_only, "errors only"


def probe_result(cell):
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            for line in o.get("text", "").splitlines():
                if line.startswith("GPUCHECK "):
                    return json.loads(line[len("GPUCHECK "):])
    errs = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
    if errs:
        return {"cell_error": f"{errs[0]['ename']}: {errs[0]['evalue']}"}
    return {"cell_error": "the probe printed no GPUCHECK line"}


def probe_summary(p):
    """One line: the verdict first, then what the probe saw."""
    if "cell_error" in p:
        return "probe cell failed: " + p["cell_error"]
    if "accelerator_error" in p:
        return "NewAccelerator failed: " + p["accelerator_error"]
    dev, cfg = p.get("device"), p.get("config")
    if on_cuda(p):
        lead = "XLA CUDA"
    elif cfg == "xla:cuda":
        lead = "XLA CUDA chosen but unusable"
    elif dev == "cpu":
        lead = (f"{cfg} because the Accelerator's device is cpu (CUDA_VISIBLE_DEVICES={p.get('env_CUDA_VISIBLE_DEVICES')}: "
                "accelerate gives an Accelerator a GPU only when that variable lists one)")
    elif str(dev).startswith("cuda"):
        lead = (f"{cfg} although the Accelerator's device is {dev}: no pjrt_c_api_cuda_plugin.so in "
                f"PJRT_PLUGIN_LIBRARY_PATH={p.get('env_PJRT_PLUGIN_LIBRARY_PATH')}, and ChooseBackend falls back without a word")
    else:
        lead = str(cfg)
    s = f"{lead} -- device {dev}, ChooseBackend -> {cfg} ({p.get('why')})"
    if "backend_error" in p:
        return s + "; building the backend failed: " + p["backend_error"]
    s += f"; backend {p.get('backend')}, device 0: {p.get('device_description')}"
    if "exec_error" in p:
        return s + "; running x+x on it failed: " + p["exec_error"]
    return s + f"; x+x with x=21 on it gave {p.get('exec')}"


def on_cuda(p):
    """Whether the probe shows an XLA CUDA backend that computes."""
    if p.get("config") != "xla:cuda" or "backend_error" in p or "exec_error" in p or "cell_error" in p:
        return False
    desc = f"{p.get('backend', '')} {p.get('device_description', '')}".lower()
    return "cuda" in desc and p.get("exec") == "42"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--out-notebook", required=True)
    ap.add_argument("--budget", type=float, required=True, help="seconds for everything here")
    ap.add_argument("--cuda-visible", default="",
                    help="CUDA_VISIBLE_DEVICES for the notebook's kernel when the environment has none "
                         "(empty: leave it unset, every GPU visible)")
    ap.add_argument("--steps", default=os.environ.get("GOACCEL_GPT_STEPS", "60"))
    a = ap.parse_args()
    given = dict(os.environ)  # the kernels' environment: as given, before anything here sets a variable
    deadline = START + a.budget
    res = Results(a.results)

    def left():
        return deadline - time.monotonic()

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    check_cell, checker = load_check_cell()

    # A private kernelspec, Jupyter data and runtime directories (as
    # e2e/conftest.py does), and a scratch working directory for the
    # notebook's runs/ (the tree stays untouched).
    scratch = Path(tempfile.mkdtemp(prefix="goaccel-gpucheck-"))
    os.environ["JUPYTER_PATH"] = str(scratch / "share" / "jupyter")
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    os.environ["JUPYTER_RUNTIME_DIR"] = str(scratch / "runtime")
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    workdir = scratch / "work"
    workdir.mkdir()

    t = time.monotonic()
    log(f"installing the kernelspec {KERNEL_NAME} (goaccel install; prebuilds the packages cells import)")
    try:
        p = subprocess.run([str(BINARY), "install", "--prefix", str(scratch), "--name", KERNEL_NAME,
                            "--display-name", "Go (goaccel gpu-check)"],
                           capture_output=True, text=True, timeout=max(10, left() - 30))
        print(p.stdout[-3000:] + p.stderr[-3000:], flush=True)
        ok = p.returncode == 0
        detail = "bin/goaccel install --prefix ... (prebuild)" if ok else f"goaccel install exited {p.returncode}: {p.stderr.strip()[-300:]}"
    except subprocess.TimeoutExpired:
        ok, detail = False, f"goaccel install (prebuild) did not finish in {time.monotonic() - t:.0f} s"
    res.set("kernel-install", "PASS" if ok else "FAIL", time.monotonic() - t, detail)
    if not ok:
        for n in ("default-env", "notebook-cells", "notebook-backend"):
            res.set(n, "SKIP", 0, "the kernelspec could not be installed")
        return 1

    # 1. The environment as given: what a user who sets nothing gets.
    t = time.monotonic()
    probe_nb = nbformat.v4.new_notebook()
    probe_nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    c0 = NotebookClient(probe_nb, kernel_name=KERNEL_NAME, timeout=int(max(10, min(180, left() - 60))),
                        allow_errors=True, resources={"metadata": {"path": str(workdir)}})
    cvd = given.get("CUDA_VISIBLE_DEVICES")
    log(f"probe in a kernel with the environment as given (CUDA_VISIBLE_DEVICES={cvd if cvd is not None else '(unset)'})")
    try:
        with c0.setup_kernel(env=given):
            c0.execute_cell(probe_nb.cells[0], 0)
        p0 = probe_result(probe_nb.cells[0])
    except (CellTimeoutError, DeadKernelError, RuntimeError) as e:
        p0 = {"cell_error": f"{type(e).__name__}: {one_line(e)}"}
    log("default environment: " + json.dumps(p0))
    d = probe_summary(p0)
    if p0.get("device") == "cpu" and not cvd:
        d += "; so the notebook's in-process runs and bench/gpt's kernel cell and go run use the CPU unless it is set"
    res.set("default-env", "PASS" if on_cuda(p0) else "FAIL", time.monotonic() - t, d)

    # 2. The notebook, short mode, in a kernel whose Accelerator has a GPU.
    env = dict(given)
    if not env.get("CUDA_VISIBLE_DEVICES") and a.cuda_visible:
        env["CUDA_VISIBLE_DEVICES"] = a.cuda_visible
    env["GOACCEL_GPT_STEPS"] = str(a.steps)
    env.setdefault("GOPROXY", "off")  # as e2e/test_notebooks.py: the notebook fetches no module
    log(f"notebook {NOTEBOOK.relative_to(ROOT)}: GOACCEL_GPT_STEPS={env['GOACCEL_GPT_STEPS']} "
        f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', '(unset)')} GOPROXY={env['GOPROXY']}; {left():.0f} s left")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=60, allow_errors=True,
                            resources={"metadata": {"path": str(workdir)}})
    t = time.monotonic()
    failures, evidence, stopped, train_ok = [], [], None, None
    probe = None
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    try:
        with client.setup_kernel(env=env):
            for i in code_cells:
                cell = nb.cells[i]
                if left() < 20:
                    stopped = f"out of time before cell {i}"
                    break
                client.timeout = int(left() - 15)
                tc = time.monotonic()
                try:
                    client.execute_cell(cell, i)
                except CellTimeoutError:
                    stopped = f"cell {i} timed out after {time.monotonic() - tc:.0f} s"
                    break
                except DeadKernelError:
                    stopped = f"the kernel died in cell {i}"
                    break
                finally:
                    nbformat.write(nb, a.out_notebook)
                status = "ok"
                try:
                    check_cell(i, cell)
                except AssertionError as e:
                    status = "FAILED: " + one_line(str(e).split("\n-- outputs --")[0].splitlines()[0], 200)
                    errs = [o for o in cell.outputs if o["output_type"] == "error"]
                    if errs:
                        status = f"FAILED: {errs[0]['ename']}: {one_line(errs[0]['evalue'], 400)}"
                    failures.append(f"cell {i} {status[len('FAILED: '):]}")
                if "one, err := fit(" in cell.source:
                    train_ok = status == "ok"
                log(f"cell {i}: {time.monotonic() - tc:.1f} s, {status}")
                for o in cell.outputs:
                    if o["output_type"] != "stream":
                        continue
                    for line in o.get("text", "").splitlines():
                        if any(k in line for k in ("processes trained steps", "Launching training", "validation loss over every",
                                                   "pure-Go backend", "nvidia", "CUDA", "cuda", "PJRT", "XLA")):
                            evidence.append(f"cell {i} {o.get('name')}: {one_line(line, 300)}")
                            print(f"    {o.get('name')}: {line}", flush=True)
            # 3. The probe, in the same kernel after the cells.
            if left() > 10:
                pc = nbformat.v4.new_code_cell(PROBE, metadata={"gpu_check": "probe"})
                nb.cells.append(pc)
                client.timeout = int(max(5, left() - 5))
                tp = time.monotonic()
                try:
                    client.execute_cell(pc, len(nb.cells) - 1)
                    probe = probe_result(pc)
                except (CellTimeoutError, DeadKernelError) as e:
                    probe = {"cell_error": f"{type(e).__name__}: {one_line(e)}"}
                nbformat.write(nb, a.out_notebook)
                log(f"probe after the notebook ({time.monotonic() - tp:.1f} s): " + json.dumps(probe))
    except KeyboardInterrupt as e:
        stopped = f"stopped ({e})"
    except Exception as e:  # kernel start failure and the like
        stopped = f"{type(e).__name__}: {one_line(e)}"
    finally:
        try:
            nbformat.write(nb, a.out_notebook)
        except Exception:
            pass
        shutil.rmtree(scratch, ignore_errors=True)
    nb_seconds = time.monotonic() - t

    ran = sum(1 for i in code_cells if nb.cells[i].get("execution_count"))
    if stopped:
        res.set("notebook-cells", "FAIL", nb_seconds,
                f"{stopped}; {ran} of {len(code_cells)} code cells ran" + (f"; failed: {'; '.join(failures)}" if failures else ""))
    elif failures:
        res.set("notebook-cells", "FAIL", nb_seconds,
                f"{len(failures)} of {len(code_cells)} code cells failed ({checker}): " + "; ".join(failures))
    else:
        res.set("notebook-cells", "PASS", nb_seconds,
                f"all {len(code_cells)} code cells ran and met their expectations ({checker})")

    trained = [e for e in evidence if "processes trained steps" in e]
    if probe is None:
        res.set("notebook-backend", "FAIL" if stopped else "SKIP", 0, f"the probe did not run ({stopped or 'no time left'})")
    else:
        d = probe_summary(probe)
        if train_ok is not True:
            d = f"the in-process training cell {'failed' if train_ok is False else 'did not run'}; " + d
        elif trained:
            d += "; " + trained[0]
        res.set("notebook-backend", "PASS" if on_cuda(probe) and train_ok else "FAIL", 0, d)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        log(f"stopped: {e}")
        sys.exit(130)
