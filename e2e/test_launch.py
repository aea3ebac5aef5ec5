"""Launched workers never outlive what launched them: an interrupted cell,
a restarted kernel, or a kernel killed with SIGKILL leaves no worker process
(checked in /proc)."""
import os
import signal
import time
from pathlib import Path
from queue import Empty

from kernelclient import PROMPT, TIMEOUT, collect, run, running_kernel, shell_reply, stdout_of

SLEEPY = '''import (
\t"fmt"
\t"time"
\t"github.com/goaccel/goaccel/debuglauncher"
)

func sleepy() {
\tfmt.Println("worker up")
\ttime.Sleep(time.Hour)
}
'''


def workers_of(kernel_pid):
    """PIDs of goaccel worker processes started by the kernel kernel_pid."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            env = (d / "environ").read_bytes().split(b"\0")
            state = [l for l in (d / "status").read_text().splitlines() if l.startswith("State:")]
        except OSError:
            continue
        if len(argv) > 1 and argv[1] == b"worker" and f"GOACCEL_LAUNCHER_PID={kernel_pid}".encode() in env:
            found.append((int(d.name), state[0] if state else ""))
    return found


def kernel_pid(km):
    return km.provisioner.process.pid


def wait_until(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def start_sleepy_launch(kc, pid, n=3):
    run(kc, SLEEPY)
    msg_id = kc.execute("debuglauncher.DebugLauncher(sleepy, nil, %d)" % n)
    assert wait_until(lambda: len(workers_of(pid)) == n, TIMEOUT), workers_of(pid)
    return msg_id


def outputs_until(kc, msg_id, text, timeout):
    """IOPub messages of msg_id up to the first stream that contains text."""
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        out.append(msg)
        if text in stdout_of([msg]):
            return out
    raise AssertionError(f"no {text!r} from {msg_id} within {timeout}s; got {[m['msg_type'] for m in out]}")


def test_interrupt_stops_every_worker():
    with running_kernel() as (km, kc):
        pid = kernel_pid(km)
        msg_id = start_sleepy_launch(kc, pid)
        # A worker process exists some 100 ms before it runs the function
        # (it loads the compiled cells first): interrupt once one does.
        early = outputs_until(kc, msg_id, "worker up", TIMEOUT)
        t0 = time.monotonic()
        km.interrupt_kernel()
        reply = shell_reply(kc, msg_id)
        elapsed = time.monotonic() - t0
        out = early + collect(kc, msg_id)
        # The workers sleep an hour: the launch ending proves they were
        # stopped (SIGINT, SIGTERM, SIGKILL within 5 s on an idle machine).
        print(f"\ninterrupt → reply {elapsed:.1f}s")
        assert elapsed < PROMPT, f"interrupt took {elapsed:.1f}s"
        assert "worker up" in stdout_of(out)
        assert wait_until(lambda: not workers_of(pid), PROMPT), f"left behind: {workers_of(pid)}"
        # the kernel is fine afterwards
        _, out = run(kc, "1 + 1")
        assert any(m["msg_type"] == "execute_result" for m in out)


def test_restart_stops_every_worker():
    with running_kernel() as (km, kc):
        pid = kernel_pid(km)
        start_sleepy_launch(kc, pid)
        km.restart_kernel(now=True)
        assert wait_until(lambda: not workers_of(pid), PROMPT), f"left behind: {workers_of(pid)}"


def test_kill_9_of_the_kernel_stops_every_worker():
    with running_kernel() as (km, kc):
        pid = kernel_pid(km)
        start_sleepy_launch(kc, pid)
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: not workers_of(pid), PROMPT), f"left behind: {workers_of(pid)}"
