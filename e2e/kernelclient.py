"""Small helpers over jupyter_client for goaccel's end-to-end tests."""
import time
from contextlib import contextmanager
from queue import Empty

from jupyter_client.manager import KernelManager

from conftest import KERNEL_NAME

# A hang guard for every wait on the kernel, never a budget: a cell's first
# build of a package for plugins takes 40 s on a cold, busy machine (and a
# launch builds in every worker); only a kernel that never answers should
# fail a test.
TIMEOUT = 300

# What "at once" means for what an interrupt, a kill or a failure must end,
# against an alternative of an hour or forever: the bound proves the point
# however busy the machine.
PROMPT = 120


# How many times a kernel that dies before it answers is started again on
# new ports. jupyter_client picks ports that are free when it writes the
# connection file; another process may take one before the kernel binds it
# (the kernel then exits: "bind: address already in use"). Jupyter's own
# restarter starts such a kernel again on new random ports
# (KernelRestarter.random_ports_until_alive); so do the tests. A kernel
# that dies at every start still fails.
START_ATTEMPTS = 3


def start_kernel(env=None, **kw):
    """A started KernelManager and a ready client, on new ports per try;
    env, when given, is the kernel's whole environment."""
    for attempt in range(1, START_ATTEMPTS + 1):
        km = KernelManager(**{"kernel_name": KERNEL_NAME, **kw})
        km.start_kernel(**({"env": env} if env is not None else {}))
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=TIMEOUT)
            return km, kc
        except RuntimeError:
            died = not km.is_alive()
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            if not died or attempt == START_ATTEMPTS:
                raise


@contextmanager
def running_kernel(**kw):
    km, kc = start_kernel(**kw)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def collect(kc, msg_id, timeout=TIMEOUT):
    """IOPub messages whose parent is msg_id, up to and including idle."""
    out = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no idle for {msg_id} within {timeout}s; got {[m['msg_type'] for m in out]}")
        try:
            msg = kc.get_iopub_msg(timeout=left)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        out.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out


def shell_reply(kc, msg_id, timeout=TIMEOUT, km=None):
    """The shell reply to msg_id; with km, a kernel that dies meanwhile
    fails the wait at once instead of at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.01, deadline - time.monotonic())
        try:
            msg = kc.get_shell_msg(timeout=left if km is None else min(left, 1.0))
        except Empty:
            if km is not None and not km.is_alive():
                raise AssertionError(f"the kernel died before it replied to {msg_id} (its stderr is in the test's captured output)")
            if time.monotonic() < deadline:
                continue
            raise
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def run(kc, code, timeout=TIMEOUT, km=None, **kw):
    """Executes code and returns (reply, iopub outputs without status/execute_input);
    with km, a kernel that dies fails it at once."""
    msg_id = kc.execute(code, **kw)
    reply = shell_reply(kc, msg_id, timeout, km=km)
    msgs = collect(kc, msg_id, timeout)
    outputs = [m for m in msgs if m["msg_type"] not in ("status", "execute_input")]
    return reply, outputs


def stdout_of(outputs, name="stdout"):
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == name)


def result_text(outputs):
    for m in outputs:
        if m["msg_type"] == "execute_result":
            return m["content"]["data"]["text/plain"]
    return None
