"""What jupyter_kernel_test does not cover, through the real jupyter_client:
interrupt, restart, stdin, comms, update_display_data, stop_on_error, output
ordering and streaming, error reporting, history across restarts, %args and
shell commands, local modules (%use)."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.connect import write_connection_file

from conftest import ROOT
from kernelclient import PROMPT, TIMEOUT, collect, result_text, run, running_kernel, shell_reply, stdout_of


@pytest.fixture(scope="module")
def kernel():
    with running_kernel() as (km, kc):
        yield km, kc


def test_state_persists_and_redefinition(kernel):
    _, kc = kernel
    reply, _ = run(kc, 'import "fmt"\nx := 41\nfunc inc(v int) int { return v + 1 }')
    assert reply["content"]["status"] == "ok"
    reply, out = run(kc, "inc(x)")
    assert result_text(out) == "42"
    reply, _ = run(kc, "func inc(v int) int { return v + 10 }")
    assert reply["content"]["status"] == "ok"
    reply, out = run(kc, "inc(x)")
    assert result_text(out) == "51"
    # re-importing is harmless
    reply, _ = run(kc, 'import "fmt"\nfmt.Println("again")')
    assert reply["content"]["status"] == "ok"


def not_stuck(reply):
    """Fails when an interrupted cell's reply names goroutines that did not stop."""
    tb = "\n".join(reply["content"].get("traceback", []))
    assert "blocked where it cannot be stopped" not in tb, tb


# Each cell runs forever: its end proves the interrupt, and a reply that is
# not a stuck report proves its goroutines stopped within the kernel's grace.
@pytest.mark.parametrize("code", ["for {}", "select {}", "ch := make(chan int)\n<-ch",
                                  'import "time"\ntime.Sleep(time.Hour)'])
def test_interrupt_stops_cell_and_keeps_state(kernel, code):
    km, kc = kernel
    run(kc, "kept := 7")
    msg_id = kc.execute(code)
    time.sleep(0.5)
    t0 = time.monotonic()
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id)
    elapsed = time.monotonic() - t0
    collect(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert "nterrupt" in reply["content"]["ename"] + reply["content"]["evalue"]
    not_stuck(reply)
    print(f"\ninterrupt → reply {elapsed*1000:.0f} ms")
    assert elapsed < PROMPT, f"interrupt took {elapsed:.2f}s"
    _, out = run(kc, "kept")
    assert result_text(out) == "7"


# Issue 13, item 4: each blocking form, in a cell that runs (it prints
# "started" once it is built and running), ends on the interrupt (it would
# run forever), is not left stuck, and the kernel keeps the state of earlier
# cells.
RUNNING = [
    ("endless loop in a declared function", "func spin() {\n\tfor {\n\t}\n}\nfmt.Println(\"started\")\nspin()"),
    ("channel receive in a declared function",
     "func recv(ch chan int) int {\n\treturn <-ch\n}\nfmt.Println(\"started\")\nrecv(make(chan int))"),
    ("select {}", 'fmt.Println("started")\nselect {}'),
    ("WaitGroup.Wait", 'import "sync"\nvar wg sync.WaitGroup\nwg.Add(1)\nfmt.Println("started")\nwg.Wait()'),
    ("double mutex lock", 'import "sync"\nvar mu sync.Mutex\nmu.Lock()\nfmt.Println("started")\nmu.Lock()'),
    ("time.Sleep", 'import "time"\nfmt.Println("started")\ntime.Sleep(time.Hour)'),
    ("workers", 'import (\n\t"sync"\n\t"time"\n)\nvar wg sync.WaitGroup\nfor i := 0; i < 4; i++ {\n\twg.Add(1)\n'
                '\tgo func() {\n\t\tdefer wg.Done()\n\t\tfor {\n\t\t\ttime.Sleep(time.Millisecond)\n\t\t}\n\t}()\n}\n'
                'fmt.Println("started")\nwg.Wait()'),
]


@pytest.mark.parametrize("name,code", RUNNING, ids=[n for n, _ in RUNNING])
def test_interrupt_of_a_running_cell_ends_it(kernel, name, code):
    km, kc = kernel
    run(kc, 'import "fmt"\nstill := 8')
    msg_id = kc.execute(code)
    deadline = time.monotonic() + TIMEOUT
    while True:  # until the cell runs (it was built)
        m = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream" and "started" in m["content"]["text"]:
            break
        assert not (m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"), "the cell ended by itself"
    time.sleep(0.2)
    t0 = time.monotonic()
    km.interrupt_kernel()
    while True:  # until idle
        m = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status" \
                and m["content"]["execution_state"] == "idle":
            break
    elapsed = time.monotonic() - t0
    reply = shell_reply(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "Interrupted", reply["content"]
    not_stuck(reply)
    print(f"\n{name}: interrupt → idle {elapsed*1000:.0f} ms")
    assert elapsed < PROMPT, f"interrupt → idle took {elapsed:.2f}s"
    _, out = run(kc, "still")
    assert result_text(out) == "8"
    _, out = run(kc, "%goroutines")
    assert "no goroutine started by a cell is running" in stdout_of(out)


def test_stuck_cell_is_reported_and_kernel_stays_responsive(kernel):
    km, kc = kernel
    run(kc, 'import (\n\t"fmt"\n\t"syscall"\n)\nvar pipe [2]int\nsyscall.Pipe(pipe[:])\nstuckKept := 5')
    msg_id = kc.execute('fmt.Println("started")\nbuf := make([]byte, 1)\nsyscall.Read(pipe[0], buf)\nfmt.Println("after")')
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream" and "started" in m["content"]["text"]:
            break
    t0 = time.monotonic()
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id)
    elapsed = time.monotonic() - t0
    out = collect(kc, msg_id)
    # Named stuck once the kernel's grace (2 s) has passed, not when the read
    # returns (never).
    assert 1.5 < elapsed < PROMPT, f"stuck cell reported after {elapsed:.2f}s"
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "Interrupted"
    tb = "\n".join(c["traceback"])
    assert "[syscall]" in tb and "syscall.Read" in tb and "]:3 in main.<cell>" in tb, tb
    # responsive, state kept, the goroutine is listed
    _, out = run(kc, "stuckKept")
    assert result_text(out) == "5"
    # and the cell says that the stuck one's output may land under it
    assert "interrupted" in stdout_of(out, "stderr") and "still runs 1 goroutine" in stdout_of(out, "stderr"), out
    _, out = run(kc, "%goroutines")
    assert "(interrupted, not stopped yet)" in stdout_of(out)
    # once the read returns, the stuck code stops without running on
    reply, out = run(kc, 'syscall.Write(pipe[1], []byte{1})')
    deadline = time.monotonic() + TIMEOUT
    while True:  # until the stuck goroutine has stopped
        _, out = run(kc, "%goroutines")
        if "(interrupted, not stopped yet)" not in stdout_of(out) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "after" not in stdout_of(out)
    assert "no goroutine started by a cell is running" in stdout_of(out)


def test_output_streams_while_cell_runs(kernel, tmp_path):
    """The cell waits, after its first output, for a file that the test
    creates only once that output has arrived: it ends only if its output
    streams while it runs."""
    _, kc = kernel
    seen = tmp_path / "seen"
    msg_id = kc.execute('import "fmt"\nimport "os"\nimport "time"\nfmt.Println("early")\n'
                        f'for {{\n\tif _, err := os.Stat({json.dumps(str(seen))}); err == nil {{\n\t\tbreak\n\t}}\n'
                        '\ttime.Sleep(time.Millisecond)\n}\nfmt.Println("late")')
    texts = []
    deadline = time.monotonic() + TIMEOUT
    while True:
        m = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            texts.append(m["content"]["text"])
            if "early" in m["content"]["text"]:
                seen.touch()
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    assert "".join(texts) == "early\nlate\n", texts
    assert shell_reply(kc, msg_id)["content"]["status"] == "ok"


def test_output_order(kernel):
    _, kc = kernel
    code = ('import "fmt"\nimport "github.com/goaccel/goaccel/display"\n'
            'fmt.Println("a")\ndisplay.HTML("<i>h</i>")\nfmt.Println("b")\n6*7')
    _, out = run(kc, code)
    kinds = [(m["msg_type"], m["content"].get("text", "").strip()) for m in out]
    assert kinds == [("stream", "a"), ("display_data", ""), ("stream", "b"), ("execute_result", "")], kinds


def test_update_display_data(kernel):
    _, kc = kernel
    code = ('import "github.com/goaccel/goaccel/display"\n'
            'h := display.HTML("<p>one</p>")\nh.UpdateHTML("<p>two</p>")')
    reply, out = run(kc, code)
    assert reply["content"]["status"] == "ok"
    disp = [m for m in out if m["msg_type"] == "display_data"]
    upd = [m for m in out if m["msg_type"] == "update_display_data"]
    assert len(disp) == 1 and len(upd) == 1
    did = disp[0]["content"]["transient"]["display_id"]
    assert did and upd[0]["content"]["transient"]["display_id"] == did
    assert upd[0]["content"]["data"]["text/html"] == "<p>two</p>"


def test_progress_bar_updates_in_place(kernel):
    _, kc = kernel
    code = ('import "fmt"\nimport "github.com/goaccel/goaccel/display"\nimport "time"\nt0 := time.Now()\n'
            'p := display.NewProgress("steps", 100000)\nfor i := 0; i < 100000; i++ { p.Add(1) }\np.Done()\n'
            'fmt.Println("periods:", int(time.Since(t0) / (100 * time.Millisecond)))')
    reply, out = run(kc, code)
    assert reply["content"]["status"] == "ok"
    upd = [m for m in out if m["msg_type"] == "update_display_data"]
    # Throttled to one redraw per 100 ms (and the last): however slow the
    # machine, at most one per period the loop took, plus two.
    periods = int(stdout_of(out).split("periods:")[1].split()[0])
    assert 1 <= len(upd) <= periods + 2, f"{len(upd)} updates in {periods} periods of 100 ms: not throttled"
    assert "100000/100000" in upd[-1]["content"]["data"]["text/plain"]


def test_clear_output_wait(kernel):
    _, kc = kernel
    _, out = run(kc, 'import "github.com/goaccel/goaccel/display"\ndisplay.ClearOutput(true)')
    clears = [m for m in out if m["msg_type"] == "clear_output"]
    assert clears and clears[0]["content"]["wait"] is True


def test_stop_on_error_aborts_queued(kernel, tmp_path):
    _, kc = kernel
    # the first cell waits for a file the test creates once the next two are
    # queued behind it: a kernel_info reply on the same socket proves they
    # reached the kernel (it reads a socket in order)
    gate = tmp_path / "gate"
    first = kc.execute(f'import (\n\t"os"\n\t"time"\n)\nfor {{\n\tif _, err := os.Stat({json.dumps(str(gate))}); err == nil {{\n'
                       '\t\tbreak\n\t}\n\ttime.Sleep(time.Millisecond)\n}\npanic("first fails")')
    second = kc.execute("y := 1")
    third = kc.execute("z := 2")
    shell_reply(kc, kc.kernel_info())
    gate.touch()
    r1 = shell_reply(kc, first)
    r2 = shell_reply(kc, second)
    r3 = shell_reply(kc, third)
    assert r1["content"]["status"] == "error"
    assert r2["content"]["status"] == "aborted"
    assert r3["content"]["status"] == "aborted"
    # the queue is usable again afterwards, and stop_on_error=False keeps going
    a = kc.execute('panic("no stop")', stop_on_error=False)
    b = kc.execute("40 + 2")
    assert shell_reply(kc, a)["content"]["status"] == "error"
    rb = shell_reply(kc, b)
    assert rb["content"]["status"] == "ok"


def test_stdin_input_and_password(kernel):
    _, kc = kernel
    msg_id = kc.execute('import "fmt"\nvar name string\nfmt.Scanln(&name)\nfmt.Println("hello", name)', allow_stdin=True)
    req = kc.get_stdin_msg(timeout=TIMEOUT)
    assert req["msg_type"] == "input_request"
    assert req["content"]["password"] is False
    kc.input("gopher")
    reply = shell_reply(kc, msg_id)
    out = collect(kc, msg_id)
    assert reply["content"]["status"] == "ok"
    assert "hello gopher" in stdout_of(out)

    msg_id = kc.execute('import "github.com/goaccel/goaccel/input"\nsecret, _ := input.Password("token: ")\nlen(secret)', allow_stdin=True)
    req = kc.get_stdin_msg(timeout=TIMEOUT)
    assert req["content"]["password"] is True
    assert req["content"]["prompt"] == "token: "
    kc.input("s3cr3t")
    shell_reply(kc, msg_id)
    assert result_text(collect(kc, msg_id)) == "6"


def test_stdin_readers_and_the_kernels_own_stdin(kernel):
    _, kc = kernel
    msg_id = kc.execute('import (\n\t"bufio"\n\t"os"\n)\nsc := bufio.NewScanner(os.Stdin)\nsc.Scan()\nfirst := sc.Text()\n'
                        'r := bufio.NewReader(os.Stdin)\nsecond, _ := r.ReadString(\'\\n\')\nfirst + "|" + second', allow_stdin=True)
    for answer in ("one", "two"):
        req = kc.get_stdin_msg(timeout=TIMEOUT)
        assert req["msg_type"] == "input_request"
        kc.input(answer)
    shell_reply(kc, msg_id)
    assert result_text(collect(kc, msg_id)) == '"one|two\\n"'
    # os.Stdin kept as an *os.File is the kernel's own fd 0: end of file, no hang
    reply, out = run(kc, 'f := os.Stdin\nn, err := f.Read(make([]byte, 1))\nfmt.Sprint(n, err)')
    assert result_text(out) == '"0 EOF"'


def test_stdin_not_allowed_is_a_clear_error(kernel):
    _, kc = kernel
    reply, out = run(kc, 'import "fmt"\nvar s string\n_, err := fmt.Scanln(&s)\nfmt.Println("err:", err)', allow_stdin=False)
    assert "stdin" in stdout_of(out).lower()


def test_errors_keep_kernel_alive(kernel):
    _, kc = kernel
    run(kc, "alive := 99")
    reply, out = run(kc, "x := \n1 +")
    assert reply["content"]["status"] == "error"
    assert any(":" in line for line in reply["content"]["traceback"])
    reply, out = run(kc, 'import "os"\nos.Exit(3)')
    assert reply["content"]["status"] == "error"
    assert "3" in reply["content"]["evalue"]
    reply, out = run(kc, "var p *struct{ v int }\np.v")
    assert reply["content"]["status"] == "error"
    # the cell sleeps until the goroutine's panic ends it
    reply, out = run(kc, 'go func() { panic("in a goroutine") }()\nimport "time"\ntime.Sleep(time.Hour)')
    assert reply["content"]["status"] == "error" or "goroutine" in stdout_of(out, "stderr")
    # endless recursion would overflow the stack, which no recover survives
    reply, out = run(kc, "func down(n int) int { return down(n+1) + 1 }\ndown(0)")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "StackOverflow", reply["content"]
    _, out = run(kc, "alive")
    assert result_text(out) == "99"


def test_panic_traceback_names_cell_line(kernel):
    _, kc = kernel
    reply, out = run(kc, 'func boom() {\n\tpanic("deep")\n}\nboom()')
    assert reply["content"]["status"] == "error"
    tb = "\n".join(reply["content"]["traceback"])
    assert "deep" in reply["content"]["evalue"]
    assert "2" in tb, tb


def test_comms(kernel):
    _, kc = kernel
    msg_id = kc.comm_info()
    reply = shell_reply(kc, msg_id)
    assert reply["msg_type"] == "comm_info_reply" and reply["content"]["status"] == "ok"
    # unknown target: the kernel closes the comm
    kc.shell_channel.send(kc.session.msg("comm_open", {"comm_id": "c-unknown", "target_name": "no-such-target", "data": {}}))
    deadline = time.monotonic() + TIMEOUT
    closed = False
    while time.monotonic() < deadline and not closed:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        closed = m["msg_type"] == "comm_close" and m["content"]["comm_id"] == "c-unknown"
    assert closed
    # a target registered by a cell echoes what it receives
    reply, _ = run(kc, 'import "github.com/goaccel/goaccel/comm"\n'
                       'comm.RegisterTarget("echo", func(c *comm.Comm, data map[string]any) { c.OnMessage(func(d map[string]any) { c.Send(d) }) })')
    assert reply["content"]["status"] == "ok", reply["content"]
    info = shell_reply(kc, kc.comm_info())
    kc.shell_channel.send(kc.session.msg("comm_open", {"comm_id": "c-echo", "target_name": "echo", "data": {}}))
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": "c-echo", "data": {"ping": 1}}))
    got = None
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and got is None:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == "c-echo":
            got = m["content"]["data"]
    assert got == {"ping": 1}
    info = shell_reply(kc, kc.comm_info())
    assert "c-echo" in info["content"]["comms"]
    # the kernel reads the shell socket in order: comm_info is answered after
    # the comm_close is handled
    kc.shell_channel.send(kc.session.msg("comm_close", {"comm_id": "c-echo", "data": {}}))
    info = shell_reply(kc, kc.comm_info())
    assert "c-echo" not in info["content"]["comms"]


def test_magics(kernel):
    _, kc = kernel
    _, out = run(kc, "%env GOACCEL_E2E=yes")
    _, out = run(kc, 'import "os"\nos.Getenv("GOACCEL_E2E")')
    assert result_text(out) == '"yes"' or result_text(out) == "yes"
    _, out = run(kc, "!echo from-shell")
    assert "from-shell" in stdout_of(out)
    run(kc, "whoVar := 1")
    _, out = run(kc, "%who")
    assert "whoVar" in stdout_of(out) + (result_text(out) or "")
    _, out = run(kc, '%time\nimport "time"\ntime.Sleep(10 * time.Millisecond)')
    assert "ms" in stdout_of(out) + stdout_of(out, "stderr")
    reply, _ = run(kc, "%reset")
    assert reply["content"]["status"] == "ok"
    reply, _ = run(kc, "whoVar")
    assert reply["content"]["status"] == "error"


def test_args_and_shell_commands(kernel):
    _, kc = kernel
    _, out = run(kc, '%args -v "two words"')
    assert 'os.Args[1:] = ["-v" "two words"]' in stdout_of(out)
    reply, out = run(kc, 'import "flag"\nverbose := flag.Bool("v", false, "talk")\nflag.Parse()\nfmt.Println(*verbose, flag.Args())')
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "true [two words]" in stdout_of(out)
    # a shell line ending in a backslash continues on the next line
    _, out = run(kc, "!echo one \\\n   two")
    assert stdout_of(out).strip() == "one two"
    # a command that fails fails the cell, naming the command and its status
    reply, out = run(kc, "!echo ran; exit 4\nnotRun := 1")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "ShellError"
    assert reply["content"]["evalue"] == "!echo ran; exit 4: exit status 4"
    assert "ran" in stdout_of(out)
    reply, _ = run(kc, "notRun")
    assert reply["content"]["status"] == "error"
    run(kc, "%args")


def test_local_module_with_use(tmp_path):
    """%use makes a local module importable; after an edit, %use again loads
    the new version beside the old one (in a kernel of its own: its
    packages stay loaded)."""
    src = ROOT / "notebook" / "build" / "testdata" / "localmod"
    mod = tmp_path / "localmod"
    shutil.copytree(src, mod)
    with running_kernel() as (_, kc):
        _, out = run(kc, f"%use {mod}")
        assert "using example.com/gxlocal" in stdout_of(out)
        reply, out = run(kc, 'import "example.com/gxlocal"\ngxlocal.Hello()', timeout=300)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert result_text(out) == '"v1"'
        hello = mod / "hello.go"
        hello.write_text(hello.read_text().replace('"v1"', '"v2"'))
        run(kc, f"%use {mod}")
        _, out = run(kc, "gxlocal.Hello()", timeout=300)
        assert result_text(out) == '"v2"'
        reply, _ = run(kc, "%go get")
        assert reply["content"]["ename"] == "MagicError"
        _, out = run(kc, "%go mod")
        assert f"example.com/gxlocal => {mod}" in stdout_of(out)


def test_restart_and_history_across_restart():
    with running_kernel() as (km, kc):
        run(kc, "before := 1")
        h = shell_reply(kc, kc.history(hist_access_type="tail", n=5, output=False, raw=True))
        session_before = h["content"]["history"][-1][0]
        km.restart_kernel(now=False)
        kc.wait_for_ready(timeout=TIMEOUT)
        reply, _ = run(kc, "before")
        assert reply["content"]["status"] == "error", "state survived a restart"
        run(kc, "after := 2")
        h = shell_reply(kc, kc.history(hist_access_type="tail", n=10, output=False, raw=True))
        entries = h["content"]["history"]
        sessions = {e[0] for e in entries}
        assert session_before in sessions and len(sessions) >= 2, entries
        assert any(e[2] == "before := 1" for e in entries)
        s = shell_reply(kc, kc.history(hist_access_type="search", pattern="before*", unique=True))
        assert [e[2] for e in s["content"]["history"]].count("before := 1") == 1


def test_shutdown_reply():
    with running_kernel() as (km, kc):
        msg_id = kc.shutdown(restart=False)
        reply = kc.control_channel.get_msg(timeout=TIMEOUT)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["msg_type"] == "shutdown_reply"
        assert reply["content"]["restart"] is False
        deadline = time.monotonic() + TIMEOUT
        while km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not km.is_alive(), "kernel did not exit after shutdown_request"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie waiting for its reaper is gone for our purpose.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["parent", "jpy_parent_pid"])
def test_kernel_exits_when_its_client_dies(tmp_path, how):
    """A kernel whose client (Jupyter's server) was killed exits on its own,
    as ipykernel does: when its parent process dies, or when the process
    JPY_PARENT_PID names is gone."""
    conn = tmp_path / "kernel.json"
    write_connection_file(str(conn), ip="127.0.0.1")
    binary = ROOT / "bin" / "goaccel"
    pidfile = tmp_path / "kernel.pid"
    env = dict(os.environ)
    server = None
    if how == "jpy_parent_pid":
        server = subprocess.Popen(["sleep", "3600"])
        env["JPY_PARENT_PID"] = str(server.pid)
    # The parent: a shell that starts the kernel and waits for it.
    parent = subprocess.Popen(["sh", "-c", f'"{binary}" kernel -f "{conn}" & echo $! > "{pidfile}"; wait'], env=env)
    deadline = time.monotonic() + TIMEOUT
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    kernel_pid = int(pidfile.read_text())
    try:
        # The kernel answers, so it is up.
        km = BlockingKernelClient(connection_file=str(conn))
        km.load_connection_file()
        km.start_channels()
        km.wait_for_ready(timeout=TIMEOUT)
        km.stop_channels()
        assert _alive(kernel_pid)
        if how == "parent":
            parent.kill()
        else:
            server.kill()
            server.wait()
        parent_wait = time.monotonic() + PROMPT
        while _alive(kernel_pid) and time.monotonic() < parent_wait:
            time.sleep(0.1)
        assert not _alive(kernel_pid), f"the kernel outlived its {how.replace('_', ' ')}"
    finally:
        for p in (parent, server):
            if p is not None and p.poll() is None:
                p.kill()
        if _alive(kernel_pid):
            os.kill(kernel_pid, signal.SIGKILL)
