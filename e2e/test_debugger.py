"""The debugger (JEP 47) through jupyter_client: debug_request on the control
channel, debug_event on IOPub. The scenarios of ipykernel's
tests/test_debugger.py with Go cells, then what is Go's own: a compiled
session carried into the interpreter and back, stepping, goroutines,
interrupt and a panic while stopped, and a breakpoint in a launched function.
"""
import time
from queue import Empty

import pytest

from kernelclient import TIMEOUT, result_text, run, running_kernel, shell_reply, stdout_of

F_CELL = """func f(a, b int) int {
\tc := a + b
\treturn c
}

f(2, 3)"""


class Debug:
    """A DAP client over the kernel's control channel."""

    def __init__(self, kc):
        self.kc = kc
        self.seq = 0
        self.events = []

    def request(self, command, arguments=None, ok=True):
        self.seq += 1
        msg = self.kc.session.msg("debug_request", {
            "type": "request", "seq": self.seq, "command": command, "arguments": arguments or {}})
        self.kc.control_channel.send(msg)
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self.kc.get_control_msg(timeout=max(0.01, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                break
        content = reply["content"]
        assert reply["msg_type"] == "debug_reply"
        assert content["type"] == "response" and content["command"] == command
        assert content["request_seq"] == self.seq
        if ok:
            assert content["success"], f"{command}: {content.get('message')}"
        return content

    def body(self, command, arguments=None):
        return self.request(command, arguments)["body"]

    def event(self, name, timeout=TIMEOUT, where=lambda body: True):
        """The next debug_event called name (for which where holds); other
        debug_events are kept for later calls."""
        for i, e in enumerate(self.events):
            if e["event"] == name and where(e["body"]):
                return self.events.pop(i)["body"]
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {name} debug_event within {timeout}s")
            try:
                msg = self.kc.get_iopub_msg(timeout=left)
            except Empty:
                continue
            if msg["msg_type"] != "debug_event":
                continue
            if msg["content"]["event"] == name and where(msg["content"]["body"]):
                return msg["content"]["body"]
            self.events.append(msg["content"])

    def finish(self, msg_id, timeout=TIMEOUT):
        """The execute_reply and outputs of a cell; debug_events that come
        meanwhile are kept for event()."""
        reply = shell_reply(self.kc, msg_id, timeout)
        out = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no idle for {msg_id} within {timeout}s")
            try:
                msg = self.kc.get_iopub_msg(timeout=left)
            except Empty:
                continue
            if msg["msg_type"] == "debug_event":
                self.events.append(msg["content"])
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return reply, out
            if msg["msg_type"] not in ("status", "execute_input"):
                out.append(msg)

    def run(self, code, timeout=TIMEOUT):
        return self.finish(self.kc.execute(code), timeout)

    def attach(self):
        r = self.request("initialize", {
            "clientID": "test-client", "clientName": "testClient", "adapterID": "", "pathFormat": "path",
            "linesStartAt1": True, "columnsStartAt1": True, "supportsVariableType": True,
            "supportsVariablePaging": True, "supportsRunInTerminalRequest": True, "locale": "en"})
        assert r["success"]
        self.request("attach")

    def break_at(self, code, *lines):
        source = self.body("dumpCell", {"code": code})["sourcePath"]
        reply = self.body("setBreakpoints", {"breakpoints": [{"line": l} for l in lines],
                                             "source": {"path": source}, "sourceModified": False})
        self.body("configurationDone")
        return source, reply

    def top_frame(self):
        frames = self.body("stackTrace", {"threadId": 1})["stackFrames"]
        return frames[0], frames

    def scope(self, frame_id, name):
        scopes = self.body("scopes", {"frameId": frame_id})["scopes"]
        ref = next(s for s in scopes if s["name"] == name)["variablesReference"]
        return {v["name"]: v for v in self.body("variables", {"variablesReference": ref})["variables"]}


@pytest.fixture()
def kernel():
    with running_kernel() as (km, kc):
        yield km, kc


@pytest.fixture()
def dbg(kernel):
    _, kc = kernel
    d = Debug(kc)
    d.attach()
    try:
        yield d
    finally:
        d.request("disconnect", {"restart": False, "terminateDebuggee": True})


def test_debug_initialize(kernel):
    _, kc = kernel
    r = Debug(kc).request("initialize", {"clientID": "test-client", "adapterID": "", "pathFormat": "path",
                                         "linesStartAt1": True, "columnsStartAt1": True})
    assert r["success"] and r["body"]["supportsConfigurationDoneRequest"]


def test_supported_features(kernel):
    _, kc = kernel
    kc.kernel_info()
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    assert reply["content"]["debugger"] is True
    assert "debugger" in reply["content"]["supported_features"]


def test_attach_debug(dbg):
    r = dbg.request("evaluate", {"expression": '"a" + "b"', "context": "repl"})
    assert r["success"] and r["body"]["result"] == '"ab"'
    info = dbg.body("debugInfo")
    assert info["isStarted"] and info["hashMethod"] == "Murmur2" and info["tmpFileSuffix"] == ".go"


def test_set_breakpoints(dbg):
    source, reply = dbg.break_at(F_CELL, 2)
    assert len(reply["breakpoints"]) == 1
    assert reply["breakpoints"][0]["verified"]
    assert reply["breakpoints"][0]["source"]["path"] == source
    info = dbg.body("debugInfo")
    assert source in [b["source"] for b in info["breakpoints"]]
    assert source.startswith(info["tmpFilePrefix"]) and source.endswith(info["tmpFileSuffix"])


def test_stop_on_breakpoint(kernel, dbg):
    _, kc = kernel
    dbg.body("debugInfo")
    dbg.break_at(F_CELL, 2)
    msg_id = kc.execute(F_CELL)
    assert dbg.event("stopped")["reason"] == "breakpoint"
    dbg.body("continue", {"threadId": 1})
    reply, out = dbg.finish(msg_id)
    assert reply["content"]["status"] == "ok" and result_text(out) == "5"
    # the panel is told the kernel went back to the interpreter
    notes = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
    assert "cells now run on the interpreter" in notes


def test_conditional_breakpoint_and_logpoint(kernel, dbg):
    _, kc = kernel
    code = "t := 0\nfor i := 0; i < 5; i++ {\n\tt += i\n}\nt"
    source = dbg.body("dumpCell", {"code": code})["sourcePath"]
    reply = dbg.body("setBreakpoints", {"source": {"path": source}, "sourceModified": False, "breakpoints": [
        {"line": 2, "logMessage": "loop starts at t={t}"},
        {"line": 3, "condition": "i == 3"},
        {"line": 5, "condition": "t >"}]})
    assert [b["verified"] for b in reply["breakpoints"]] == [True, True, False]
    assert "not a Go expression" in reply["breakpoints"][2]["message"]
    dbg.body("configurationDone")
    msg_id = kc.execute(code)
    assert dbg.event("stopped")["reason"] == "breakpoint"
    frame, _ = dbg.top_frame()
    assert frame["line"] == 3
    assert dbg.body("evaluate", {"expression": "t", "frameId": frame["id"], "context": "repl"})["result"] == "3"
    assert dbg.event("output", where=lambda b: "loop starts" in b.get("output", ""))["output"] == "loop starts at t=0\n"
    dbg.body("continue", {"threadId": 1})
    reply, out = dbg.finish(msg_id)
    assert reply["content"]["status"] == "ok" and result_text(out) == "10"


def test_breakpoint_in_cell_with_leading_empty_lines(kernel, dbg):
    _, kc = kernel
    code = "\n" + F_CELL
    dbg.break_at(code, 7)  # f(2, 3)
    msg_id = kc.execute(code)
    assert dbg.event("stopped")["reason"] == "breakpoint"
    frame, _ = dbg.top_frame()
    assert frame["line"] == 7 and frame["source"]["path"] == dbg.body("dumpCell", {"code": code})["sourcePath"]
    dbg.body("continue", {"threadId": 1})
    assert dbg.finish(msg_id)[0]["content"]["status"] == "ok"


def test_rich_inspect_not_at_breakpoint(kernel, dbg):
    _, kc = kernel
    reply, _ = run(kc, 'text := "Hello the world"\nfmt.Println(text)')
    assert reply["content"]["status"] == "ok"
    variables = dbg.body("inspectVariables")["variables"]
    assert "text" in [v["name"] for v in variables]
    assert dbg.body("richInspectVariables", {"variableName": "text"})["data"] == {"text/plain": '"Hello the world"'}


def test_rich_inspect_renders_html_of_a_compiled_value(kernel, dbg):
    _, kc = kernel
    reply, _ = run(kc, 'type Page string\n\nfunc (p Page) HTML() string { return string(p) }\n\npage := Page("<b>hi</b>")')
    assert reply["content"]["status"] == "ok"
    data = dbg.body("richInspectVariables", {"variableName": "page"})["data"]
    assert data["text/html"] == "<b>hi</b>" and data["text/plain"] == '"<b>hi</b>"'


def test_rich_inspect_at_breakpoint(kernel, dbg):
    _, kc = kernel
    dbg.break_at(F_CELL, 2)
    msg_id = kc.execute(F_CELL)
    dbg.event("stopped")
    frame, _ = dbg.top_frame()
    locals_ = list(dbg.scope(frame["id"], "Locals").values())
    reply = dbg.body("richInspectVariables", {"variableName": locals_[0]["name"], "frameId": frame["id"]})
    assert reply["data"] == {"text/plain": locals_[0]["value"]}
    dbg.body("continue", {"threadId": 1})
    dbg.finish(msg_id)


def test_stack_variables_evaluate_and_steps(kernel, dbg):
    _, kc = kernel
    code = ('type Point struct {\n\tX, Y int\n}\n\n'
            'func scale(p Point, k int) Point {\n\tq := Point{p.X * k, p.Y * k}\n\treturn q\n}\n\n'
            'pts := map[string][]Point{"a": {{1, 2}}}\n'
            'r := scale(pts["a"][0], 3)\n'
            'r.X++')
    dbg.break_at(code, 11)
    msg_id = kc.execute(code)
    dbg.event("stopped")
    frame, _ = dbg.top_frame()
    assert frame["line"] == 11
    globals_ = dbg.scope(frame["id"], "Globals")
    pts = globals_["pts"]
    assert pts["value"] == 'map["a":[{X: 1, Y: 2}]]' and pts["variablesReference"] > 0
    inner = {v["name"]: v for v in dbg.body("variables", {"variablesReference": pts["variablesReference"]})["variables"]}
    assert inner['"a"']["evaluateName"] == 'pts["a"]'
    ev = dbg.body("evaluate", {"expression": 'pts["a"][0].Y * 10', "frameId": frame["id"], "context": "repl"})
    assert ev["result"] == "20"

    dbg.body("stepIn", {"threadId": 1})
    dbg.event("stopped")
    frame, frames = dbg.top_frame()
    assert frame["name"] == "scale" and frame["line"] == 6 and len(frames) >= 1
    p = dbg.scope(frame["id"], "Locals")["p"]
    assert p["value"] == "{X: 1, Y: 2}" and p["type"] == "Point"
    dbg.body("next", {"threadId": 1})
    dbg.event("stopped")
    frame, _ = dbg.top_frame()
    assert frame["line"] == 7
    assert dbg.scope(frame["id"], "Locals")["q"]["value"] == "{X: 3, Y: 6}"
    dbg.body("stepOut", {"threadId": 1})
    dbg.event("stopped")
    dbg.body("next", {"threadId": 1})
    dbg.event("stopped")
    frame, _ = dbg.top_frame()
    assert frame["line"] == 12
    dbg.body("continue", {"threadId": 1})
    assert dbg.finish(msg_id)[0]["content"]["status"] == "ok"
    reply, out = run(kc, "r")
    assert result_text(out) == "{4 6}"


def test_copy_to_globals(kernel, dbg):
    _, kc = kernel
    code = ('func myTest() {\n\tlocal := []string{"test", "content"}\n\tfmt.Println(len(local))\n}\n'
            'a := 2\nmyTest()')
    dbg.break_at(code, 3)
    msg_id = kc.execute(code)
    dbg.event("stopped")
    frame, _ = dbg.top_frame()
    dbg.body("copyToGlobals", {"srcVariableName": "local", "dstVariableName": "local_copy", "srcFrameId": frame["id"]})
    local = next(v for v in dbg.scope(frame["id"], "Locals").values() if "local" in v["evaluateName"])
    global_ = next(v for v in dbg.scope(frame["id"], "Globals").values() if "local_copy" in v["evaluateName"])
    assert global_["value"] == local["value"] and global_["type"] == local["type"]
    dbg.body("continue", {"threadId": 1})
    assert dbg.finish(msg_id)[0]["content"]["status"] == "ok"
    _, out = run(kc, "local_copy[1]")
    assert result_text(out) == '"content"'


def test_inspect_variables_of_a_compiled_session(kernel, dbg):
    _, kc = kernel
    reply, _ = run(kc, 'type T struct {\n\tName string\n\tTags map[string]int\n}\n\n'
                       'n := 42\nt := &T{Name: "x", Tags: map[string]int{"k": 1}}')
    assert reply["content"]["status"] == "ok"
    variables = {v["name"]: v for v in dbg.body("inspectVariables")["variables"]}
    assert variables["n"]["value"] == "42" and variables["n"]["type"] == "int"
    assert variables["t"]["type"] == "*T" and variables["t"]["value"].startswith('&{Name: "x"')
    fields = {v["name"]: v for v in dbg.body("variables", {"variablesReference": variables["t"]["variablesReference"]})["variables"]}
    assert fields["Name"]["value"] == '"x"' and fields["Tags"]["value"] == 'map["k":1]'


def test_compiled_session_is_debugged_and_detaching_goes_back(kernel):
    _, kc = kernel
    decl = "type Acc struct {\n\tSum int\n}\n\nfunc (a *Acc) Add(v int) {\n\ta.Sum += v\n}\n\nacc := &Acc{Sum: 10}"
    reply, _ = run(kc, decl)
    assert reply["content"]["status"] == "ok"
    d = Debug(kc)
    d.attach()
    d.break_at(decl, 6)
    msg_id = kc.execute("acc.Add(5)\ntotal := acc.Sum")
    d.event("stopped")
    frame, _ = d.top_frame()
    assert frame["name"] == "Add" and frame["line"] == 6
    assert frame["source"]["path"] == d.body("dumpCell", {"code": decl})["sourcePath"]
    assert d.scope(frame["id"], "Locals")["v"]["value"] == "5"
    d.body("continue", {"threadId": 1})
    assert d.finish(msg_id)[0]["content"]["status"] == "ok"
    d.request("disconnect", {"restart": False, "terminateDebuggee": False})
    reply, out = run(kc, "fmt.Println(total, acc.Sum)\nacc.Add(1)\nacc.Sum")
    assert reply["content"]["status"] == "ok"
    assert stdout_of(out) == "15 15\n" and result_text(out) == "16"
    assert "cells are compiled again" in stdout_of(out, "stderr")


def test_interrupt_while_stopped_keeps_the_kernel(kernel, dbg):
    km, kc = kernel
    code = "n := 0\nfor i := 0; i < 3; i++ {\n\tn += i\n}"
    dbg.break_at(code, 3)
    msg_id = kc.execute(code)
    dbg.event("stopped")
    km.interrupt_kernel()
    reply, _ = dbg.finish(msg_id)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "Interrupted"
    assert dbg.event("continued")["threadId"] == 1
    dbg.body("setBreakpoints", {"breakpoints": [], "source": {"path": dbg.body("dumpCell", {"code": code})["sourcePath"]}})
    reply, out = run(kc, "1 + 1")
    assert result_text(out) == "2"


def test_restart_while_stopped(kernel):
    km, kc = kernel
    d = Debug(kc)
    d.attach()
    d.break_at(F_CELL, 2)
    kc.execute(F_CELL)
    d.event("stopped")
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=TIMEOUT)
    d = Debug(kc)
    d.attach()
    assert d.body("debugInfo")["stoppedThreads"] == []
    reply, out = run(kc, F_CELL)
    assert reply["content"]["status"] == "ok" and result_text(out) == "5"
    d.request("disconnect")


def test_panic_after_a_stop_keeps_the_kernel(kernel, dbg):
    _, kc = kernel
    code = 'var m map[string]int\nk := "x"\nm[k] = 1'
    dbg.break_at(code, 2)
    msg_id = kc.execute(code)
    dbg.event("stopped")
    dbg.body("next", {"threadId": 1})
    dbg.event("stopped")
    dbg.body("continue", {"threadId": 1})
    reply, _ = dbg.finish(msg_id)
    assert reply["content"]["status"] == "error" and "nil map" in reply["content"]["evalue"]
    _, out = run(kc, "k + k")
    assert result_text(out) == '"xx"'


def test_breakpoints_in_goroutines(kernel, dbg):
    _, kc = kernel
    code = ('ch := make(chan int)\nfor i := 1; i <= 3; i++ {\n\tgo func(k int) {\n\t\tv := k * 7\n\t\tch <- v\n\t}(i)\n}\n'
            'got := <-ch + <-ch + <-ch')
    dbg.break_at(code, 5)
    msg_id = kc.execute(code)
    seen = set()
    for _ in range(3):  # one stop per goroutine, one at a time
        dbg.event("stopped")
        frame, _ = dbg.top_frame()
        assert frame["line"] == 5
        seen.add(dbg.scope(frame["id"], "Locals")["v"]["value"])
        dbg.body("continue", {"threadId": 1})
    assert seen == {"7", "14", "21"}
    assert dbg.finish(msg_id)[0]["content"]["status"] == "ok"
    _, out = run(kc, "got")
    assert result_text(out) == "42"


def test_breakpoint_in_a_launched_function_says_workers_are_not_debugged(kernel, dbg):
    _, kc = kernel
    decl = 'import "github.com/goaccel/goaccel/debuglauncher"\n\nfunc work() {\n\tfmt.Println("in the worker")\n}'
    reply, _ = run(kc, decl)
    assert reply["content"]["status"] == "ok"
    dbg.break_at(decl, 4)
    reply, out = dbg.run("debuglauncher.DebugLauncher(work, nil, 1)", timeout=2 * TIMEOUT)
    assert reply["content"]["status"] == "ok"
    assert "not hit: launched functions run in worker processes" in stdout_of(out, "stderr")
    assert "in the worker" in stdout_of(out)
    dbg.event("output", where=lambda body: "launched functions run in worker processes" in body["output"])
