"""Interrupts through the real jupyter_client, where the cell's goroutine is
not in the cell's own code: in a local module's loop (compiled with safe
points), in a build, in a module download; and interrupts that come twice,
between cells, or while a cell's goroutine holds a lock another waits on.
In every case the kernel stays alive and responsive and keeps the state of
earlier cells."""
import http.server
import os
import shutil
import threading
import time

import pytest

from conftest import ROOT
from kernelclient import PROMPT, TIMEOUT, collect, result_text, run, running_kernel, shell_reply, stdout_of


def not_stuck(reply):
    tb = "\n".join(reply["content"].get("traceback", []))
    assert "blocked where it cannot be stopped" not in tb, tb


def wait_for_output(kc, msg_id, text):
    """Waits until the cell prints text; fails if it ends first."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        m = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream" and text in m["content"]["text"]:
            return
        assert not (m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"), "the cell ended by itself"


def cpu_seconds(pid):
    """User and system CPU time of process pid, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_pid(km):
    return km.provisioner.process.pid


@pytest.fixture(scope="module")
def kernel():
    with running_kernel() as (km, kc):
        yield km, kc


def test_interrupt_reaches_a_local_modules_loop(tmp_path):
    """A loop in a local module that never calls back into the cell stops at
    the interrupt, with the module's deferred call run; the kernel's CPU falls
    to idle after; nothing is left for %jobs."""
    mod = tmp_path / "spinmod"
    shutil.copytree(ROOT / "notebook" / "build" / "testdata" / "spinmod", mod)
    with running_kernel() as (km, kc):
        run(kc, f"%use {mod}")
        reply, _ = run(kc, 'import (\n\t"fmt"\n\t"sync/atomic"\n\n\t"example.com/gxspin"\n)\nvar n int64\nkept := 4')
        assert reply["content"]["status"] == "ok", reply["content"]
        msg_id = kc.execute('fmt.Println("started")\nspin.Forever(&n, func() { fmt.Println("unwound") })\nfmt.Println("after")')
        wait_for_output(kc, msg_id, "started")
        time.sleep(0.3)
        t0 = time.monotonic()
        km.interrupt_kernel()
        reply = shell_reply(kc, msg_id)
        elapsed = time.monotonic() - t0
        out = stdout_of(collect(kc, msg_id))
        assert reply["content"]["ename"] == "Interrupted", reply["content"]
        not_stuck(reply)
        assert "unwound" in out and "after" not in out, out
        # Idle: the kernel burns no CPU once the cell ended (a loop left
        # running would burn a whole core).
        pid = kernel_pid(km)
        c0, w0 = cpu_seconds(pid), time.monotonic()
        time.sleep(1.0)
        load = (cpu_seconds(pid) - c0) / (time.monotonic() - w0)
        print(f"\nlocal module loop: interrupt → reply {elapsed*1000:.0f} ms; kernel CPU after {load:.2f} cores")
        assert elapsed < PROMPT
        assert load < 0.5, f"the kernel still uses {load:.2f} cores after the interrupt"
        _, out = run(kc, "%jobs")
        assert "no interrupted cell is still running" in stdout_of(out)
        _, out = run(kc, "kept")
        assert result_text(out) == "4"


def test_interrupt_twice(kernel):
    """Two interrupts in a row end the cell once; the next cell runs."""
    km, kc = kernel
    run(kc, 'import "fmt"\ntwice := 5')
    msg_id = kc.execute('fmt.Println("started")\nfor {\n}')
    wait_for_output(kc, msg_id, "started")
    km.interrupt_kernel()
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id)
    collect(kc, msg_id)
    assert reply["content"]["ename"] == "Interrupted", reply["content"]
    not_stuck(reply)
    reply, out = run(kc, "twice")
    assert reply["content"]["status"] == "ok" and result_text(out) == "5", reply["content"]


def test_interrupt_between_cells(kernel):
    """An interrupt while no cell runs changes nothing. The interrupts go
    as km.interrupt_kernel sends them (interrupt_request on the control
    channel), and the next cell only after their replies: control and
    shell are two sockets, and a cell sent right behind an interrupt may
    start before it, as it may in any kernel (a user's next cell comes
    later)."""
    km, kc = kernel
    run(kc, "between := 6")
    for _ in range(2):
        msg = kc.session.msg("interrupt_request", {})
        kc.control_channel.send(msg)
        while True:
            r = kc.get_control_msg(timeout=TIMEOUT)
            if r["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                break
        assert r["msg_type"] == "interrupt_reply" and r["content"]["status"] == "ok", r
    reply, out = run(kc, "between + 1")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert result_text(out) == "7"


def test_interrupt_during_a_build(kernel):
    """An interrupt that comes while the cell is built (a new import, a new
    declaration) ends the cell; the same code runs afterwards."""
    km, kc = kernel
    run(kc, "built := 8")
    code = 'import "encoding/xml"\nfunc xmlName() string {\n\treturn xml.Name{Local: "a"}.Local\n}\n'
    msg_id = kc.execute('import "fmt"\n' + code + 'fmt.Println("started")\nfor {\n}')
    # Once the kernel has taken the cell (an interrupt before that finds no
    # cell to stop), it builds it: the interrupt comes during the build or,
    # on a fast machine, in the loop.
    deadline = time.monotonic() + TIMEOUT
    while True:
        m = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "execute_input":
            break
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id)
    collect(kc, msg_id)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "Interrupted", reply["content"]
    not_stuck(reply)
    reply, out = run(kc, 'import "fmt"\n' + code + "xmlName()")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert result_text(out) == '"a"'
    _, out = run(kc, "built")
    assert result_text(out) == "8"


class _HangingProxy(http.server.BaseHTTPRequestHandler):
    """A module proxy that never answers (until the test ends)."""
    release = threading.Event()

    def do_GET(self):
        self.release.wait(TIMEOUT)
        try:
            self.send_error(404)
        except OSError:
            pass  # the go command was stopped and has gone

    def log_message(self, *args):
        pass


def test_interrupt_during_a_module_download(kernel):
    """An import whose module is being fetched (from a proxy that hangs) ends
    at the interrupt; the kernel answers and keeps its state."""
    km, kc = kernel
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HangingProxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _, out = run(kc, "%env GOPROXY")
    before = stdout_of(out).strip()
    try:
        run(kc, f"%env GOPROXY=http://127.0.0.1:{server.server_address[1]}")
        run(kc, "fetched := 9")
        msg_id = kc.execute('import "example.com/gxhang/pkg"\npkg.F()')
        # The kernel says it fetches the module (stderr) before it blocks.
        deadline = time.monotonic() + TIMEOUT
        while True:
            m = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream" and "gxhang" in m["content"]["text"]:
                break
            assert not (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                        and m["content"]["execution_state"] == "idle"), "the import ended by itself"
        t0 = time.monotonic()
        km.interrupt_kernel()
        reply = shell_reply(kc, msg_id)
        elapsed = time.monotonic() - t0
        collect(kc, msg_id)
        assert reply["content"]["status"] == "error", reply["content"]
        assert "nterrupt" in reply["content"]["ename"] + reply["content"]["evalue"], reply["content"]
        assert elapsed < PROMPT
        print(f"\nmodule download: interrupt → reply {elapsed*1000:.0f} ms")
    finally:
        _HangingProxy.release.set()
        server.shutdown()
        run(kc, f"%env GOPROXY={before}")
    _, out = run(kc, "fetched")
    assert result_text(out) == "9"


def test_interrupt_while_a_lock_is_held(kernel):
    """The cell's goroutine holds a lock another goroutine of the cell waits
    on: both stop; the lock stays held, as the cell left it."""
    km, kc = kernel
    run(kc, 'import (\n\t"fmt"\n\t"sync"\n)\nvar held sync.Mutex')
    msg_id = kc.execute('held.Lock()\ngo func() {\n\theld.Lock()\n\tfmt.Println("got it")\n}()\n'
                        'fmt.Println("started")\nfor {\n}')
    wait_for_output(kc, msg_id, "started")
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id)
    out = stdout_of(collect(kc, msg_id))
    assert reply["content"]["ename"] == "Interrupted", reply["content"]
    not_stuck(reply)
    assert "got it" not in out
    _, out = run(kc, "%goroutines")
    assert "no goroutine started by a cell is running" in stdout_of(out)
    _, out = run(kc, "held.TryLock()")
    assert result_text(out) == "false"


GOMLX_SETUP = '''import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/datasets"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/goaccel/goaccel/accelerate"
	gxa "github.com/goaccel/goaccel/accelerate/gomlx"
)

acc, err := accelerate.NewAccelerator()
if err != nil {
	panic(err)
}
backend, err := gxa.AcceleratorBackend(acc)
if err != nil {
	panic(err)
}
xs, ys := make([][]float32, 256), make([][]float32, 256)
for i := range xs {
	x := float32(i) / 256
	xs[i], ys[i] = []float32{x}, []float32{3*x + 1}
}
ds, err := datasets.InMemoryFromData(backend, "line", []any{xs}, []any{ys})
if err != nil {
	panic(err)
}
ds.BatchSize(32, true).Infinite(true)
line := func(ctx *context.Context, _ any, in []*graph.Node) []*graph.Node {
	return []*graph.Node{layers.DenseWithBias(ctx, in[0], 1)}
}
tr, err := gxa.NewTrainer(acc, backend, context.New(), line, losses.MeanSquaredError, optimizers.Adam().Done(), nil, nil)
if err != nil {
	panic(err)
}'''


def interrupt_training(km, kc, train, step):
    """Runs the cell train (which prints "started" and then trains),
    interrupts it while it trains, and checks that the cell ends as
    interrupted, not stuck, and that the kernel falls idle. Returns the
    step it stopped at (the cell expression step) and what it measured."""
    msg_id = kc.execute('fmt.Println("started")\n' + train)
    wait_for_output(kc, msg_id, "started")
    time.sleep(1.0)  # training (its first step compiles the graph)
    t0 = time.monotonic()
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id)
    elapsed = time.monotonic() - t0
    collect(kc, msg_id)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "Interrupted", reply["content"]
    not_stuck(reply)
    pid = kernel_pid(km)
    c0, w0 = cpu_seconds(pid), time.monotonic()
    time.sleep(1.0)
    load = (cpu_seconds(pid) - c0) / (time.monotonic() - w0)
    _, out = run(kc, f"stoppedAt := {step}\nstoppedAt")
    stopped_at = int(result_text(out))
    assert elapsed < PROMPT
    assert load < 0.5, f"the kernel still uses {load:.2f} cores after the interrupt"
    return stopped_at, elapsed, load


def stops_and_trains_on(km, kc, what, run_steps, step):
    """Interrupts a cell that trains with run_steps (a call with {steps} in
    it) a million steps, which must stop at a step > 0; then the next cell
    runs run_steps for 5 steps, which must take the model (its step, the
    cell expression step) exactly 5 steps on from there."""
    # A million steps: RunSteps keeps a duration per step (8 MB).
    stopped_at, elapsed, load = interrupt_training(km, kc, run_steps.format(steps="1_000_000"), step)
    print(f"\n{what}: interrupt → reply {elapsed*1000:.0f} ms at step {stopped_at}; kernel CPU after {load:.2f} cores")
    assert stopped_at > 0
    reply, out = run(kc, f"_, err = {run_steps.format(steps=5)}\nfmt.Println(err, {step} - stoppedAt)")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(out).strip() == "<nil> 5", stdout_of(out)


def test_interrupt_stops_gomlx_training():
    """A cell training a GoMLX model with gxa.NewLoop (GoMLX's train.Loop
    and dataset: no cell code runs while it trains) stops at the next step
    when interrupted; the kernel's CPU falls to idle; the next cell trains
    the same model on from the step it stopped at."""
    with running_kernel() as (km, kc):
        reply, _ = run(kc, GOMLX_SETUP)
        assert reply["content"]["status"] == "ok", reply["content"]
        stops_and_trains_on(km, kc, "GoMLX training", "gxa.NewLoop(tr, gxa.WithoutProgress()).RunSteps(ds, {steps})",
                            "tr.GlobalStep()")


OWN_LOOP = '''import "github.com/gomlx/gomlx/pkg/ml/train"

gctx := context.New()
gtr := train.NewTrainer(backend, gctx, line, losses.MeanSquaredError, optimizers.Adam().Done(), nil, nil)
loop := train.NewLoop(gtr)'''


def test_interrupt_stops_gomlxs_own_loop_and_eval():
    """GoMLX's own trainer, loop and dataset, nothing of goaccel's while it
    trains: the kernel compiles GoMLX's train package with a check between
    steps (the module cache's safe points), so an interrupt stops
    loop.RunSteps at the next step, with the model's variables at the last
    completed step, and the next cell trains on from there; an evaluation
    over an endless dataset stops as well."""
    with running_kernel() as (km, kc):
        reply, _ = run(kc, GOMLX_SETUP)
        assert reply["content"]["status"] == "ok", reply["content"]
        reply, _ = run(kc, OWN_LOOP)
        assert reply["content"]["status"] == "ok", reply["content"]
        stops_and_trains_on(km, kc, "GoMLX's own train.Loop", "loop.RunSteps(ds, {steps})", "optimizers.GetGlobalStep(gctx)")
        # Eval reads the endless dataset until it is interrupted.
        _, elapsed, load = interrupt_training(km, kc, "gtr.Eval(ds)", "optimizers.GetGlobalStep(gctx)")
        print(f"GoMLX's Trainer.Eval: interrupt → reply {elapsed*1000:.0f} ms; kernel CPU after {load:.2f} cores")
        reply, out = run(kc, "_, err = loop.RunSteps(ds, 1)\nfmt.Println(err)")
        assert stdout_of(out).strip() == "<nil>", (reply["content"], stdout_of(out))
