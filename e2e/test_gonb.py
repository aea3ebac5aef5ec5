"""A notebook written in GoNB's language, through the real jupyter_client:
its special commands (%%, %args, !*, %goflags, %capture), gonbui's
displays (HTML, Markdown, an update by display id), an input box answered
on the stdin channel, and widgets driven the way a browser drives them,
over the "gonb_comm" comm.

The kernel runs without network for modules (GOPROXY=off): gonbui's module,
github.com/janpfeifer/gonb, is in goaccel's own module graph, so `make
test-deps` (go mod download) has put it in the module cache.
"""
import time
from queue import Empty

import pytest

from kernelclient import TIMEOUT, collect, run, running_kernel, shell_reply, stdout_of

GONBUI = 'import "github.com/janpfeifer/gonb/gonbui"\n'


@pytest.fixture(scope="module")
def kernel():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GOPROXY", "off")
        with running_kernel() as (km, kc):
            yield km, kc


def ok(reply):
    assert reply["content"]["status"] == "ok", reply["content"]


def displays(outputs, kind="display_data"):
    return [m["content"] for m in outputs if m["msg_type"] == kind]


def test_main_marker_and_gonbui_displays(kernel):
    _, kc = kernel
    # definitions above %%, the body of func main below it; fmt is imported
    # for the cell as GoNB does
    reply, out = run(kc, GONBUI + 'func greet(who string) string { return "hello " + who }\n\n%%\n'
                     'gonbui.DisplayHTML("<b>bold</b>")\ngonbui.DisplayMarkdown("# Title")\n'
                     'fmt.Println(greet("gopher"))')
    ok(reply)
    data = [d["data"] for d in displays(out)]
    assert {"text/html": "<b>bold</b>"} in data, data
    assert {"text/markdown": "# Title"} in data, data
    assert stdout_of(out) == "hello gopher\n"
    # the definitions stay; a later cell's func main replaces the earlier one
    reply, out = run(kc, 'func main() {\n\tfmt.Println(greet("again"))\n}')
    ok(reply)
    assert stdout_of(out) == "hello again\n"
    reply, out = run(kc, '%%\nfmt.Println(greet("third"))')
    ok(reply)
    assert stdout_of(out) == "hello third\n"


def test_args_reach_flags_parsed_for_main(kernel):
    _, kc = kernel
    # %args in a cell with code sets the arguments silently, as GoNB's does
    reply, out = run(kc, '%args --who=Wally\nimport "flag"\nvar flagWho = flag.String("who", "nobody", "who")\n\n'
                     'func main() {\n\tflag.Parse()\n\tfmt.Println("who:", *flagWho)\n}')
    ok(reply)
    assert stdout_of(out) == "who: Wally\n"
    # %% ARGS: main's arguments, parsed before main runs
    reply, out = run(kc, '%% --who=world\nfmt.Println("who:", *flagWho, flag.Args())')
    ok(reply)
    assert stdout_of(out) == "who: world []\n"
    # %args alone shows what it set; a later %% without arguments is a run
    # without any, every flag back to its default
    reply, out = run(kc, "%args --who=x y")
    ok(reply)
    assert 'os.Args[1:] = ["--who=x" "y"]' in stdout_of(out)
    reply, out = run(kc, '%%\nfmt.Println("who:", *flagWho, flag.Args())')
    ok(reply)
    assert stdout_of(out) == "who: nobody []\n"


def test_shell_in_the_session_module_goflags_and_capture(kernel, tmp_path):
    _, kc = kernel
    # !* runs in the folder of the module cells are built in
    reply, out = run(kc, "!*test -f go.mod && grep -c '^module ' go.mod")
    ok(reply)
    assert stdout_of(out).strip() == "1"
    reply, out = run(kc, "%goflags -tags=e2e")
    ok(reply)
    assert '%goflags=["-tags=e2e"]' in stdout_of(out)
    reply, out = run(kc, '%goflags ""')
    ok(reply)
    assert "%goflags=[]" in stdout_of(out)
    # %capture writes the cell's output to a file as well
    cap = tmp_path / "captured.txt"
    reply, out = run(kc, f'%capture {cap}\n%%\nfmt.Println("Ping")')
    ok(reply)
    assert stdout_of(out) == "Ping\n"
    assert cap.read_text() == "Ping\n"
    reply, out = run(kc, f'%capture -a {cap}\n%%\nfmt.Println("Pong")')
    ok(reply)
    assert cap.read_text() == "Ping\nPong\n"
    # a failing shell line fails the cell and names the command
    reply, out = run(kc, "!*exit 3")
    assert reply["content"]["status"] == "error"
    assert "exit status 3" in reply["content"]["evalue"]


def test_update_by_display_id(kernel):
    _, kc = kernel
    reply, out = run(kc, GONBUI + '%%\nid := "counter_e2e"\nfor i := 0; i < 3; i++ {\n'
                     '\tgonbui.UpdateHTML(id, fmt.Sprintf("count %d", i))\n}')
    ok(reply)
    shown = displays(out)
    updates = displays(out, "update_display_data")
    assert [d["data"] for d in shown] == [{"text/html": "count 0"}], out
    assert shown[0]["transient"]["display_id"] == "counter_e2e"
    assert [d["data"] for d in updates] == [{"text/html": "count 1"}, {"text/html": "count 2"}]
    assert all(d["transient"]["display_id"] == "counter_e2e" for d in updates)


def test_transient_javascript_lands_under_each_cell(kernel):
    # gonbui/dom keeps the display id of its transient script in a package
    # variable, made once per process: one process per cell in GoNB, one
    # per session here. Each cell must still get its own block, or the
    # second cell's script would run in the first cell's output.
    _, kc = kernel
    cell = ('import "github.com/janpfeifer/gonb/gonbui/dom"\n%%\n'
            'dom.TransientJavascript(`console.log("cell {}")`)')
    ids = []
    for n in (1, 2):
        reply, out = run(kc, cell.format(n))
        ok(reply)
        shown = displays(out)
        assert len(shown) == 1 and "console.log(\"cell {}\")".format(n) in shown[0]["data"]["text/html"], out
        updates = displays(out, "update_display_data")
        assert [u["data"] for u in updates] == [{"text/html": ""}], out
        ids.append(shown[0]["transient"]["display_id"])
        assert updates[0]["transient"]["display_id"] == ids[-1]
    assert ids[0] != ids[1], ids


def test_input_boxes_answered_on_stdin(kernel):
    _, kc = kernel
    msg_id = kc.execute(GONBUI + '%%\ngonbui.RequestInput("Enter:", false)\nvar x int\nfmt.Scan(&x)\n'
                        'fmt.Printf("int=%d\\n", x)\ngonbui.RequestInput("Pin:", true)\nvar pin string\n'
                        'fmt.Scan(&pin)\nfmt.Printf("pin has %d characters\\n", len(pin))', allow_stdin=True)
    for prompt, password, answer in (("Enter:", False, "42"), ("Pin:", True, "123456")):
        req = kc.get_stdin_msg(timeout=TIMEOUT)
        assert req["msg_type"] == "input_request"
        assert req["content"]["prompt"].strip() == prompt
        assert req["content"]["password"] is password
        kc.input(answer)
    ok(shell_reply(kc, msg_id))
    out = collect(kc, msg_id)
    assert stdout_of(out) == "int=42\npin has 6 characters\n"
    # %with_inputs: a shell command's input comes from an input box
    msg_id = kc.execute("%with_inputs\n!read str ; echo \"str=$str\"", allow_stdin=True)
    req = kc.get_stdin_msg(timeout=TIMEOUT)
    assert req["content"]["password"] is False
    kc.input("foo")
    ok(shell_reply(kc, msg_id))
    assert "str=foo" in stdout_of(collect(kc, msg_id))


def test_widgets_over_the_gonb_comm(kernel):
    """The test is the browser: it opens the "gonb_comm" comm, answers the
    widgets' JavaScript with the values a browser's would send (a button's
    first counter, a click, a slider's value) and receives the values the
    cell sends (a slider's SetValue)."""
    _, kc = kernel
    comm_id = "e2e-gonb-front"
    kc.shell_channel.send(kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": "gonb_comm", "data": {}}))
    msg_id = kc.execute(GONBUI + 'import "github.com/janpfeifer/gonb/gonbui/widgets"\n\n%%\n'
                        'b := widgets.Button("Ok").WithAddress("e2e/button").Done()\n'
                        'clicks := b.Listen()\ngonbui.DisplayHTML("<i>button ready</i>")\n'
                        'fmt.Println("clicked", <-clicks.C)\nclicks.Close()\n'
                        's := widgets.Slider(0, 100, 50).WithAddress("e2e/slider").Done()\n'
                        'moves := s.Listen()\ngonbui.DisplayHTML("<i>slider ready</i>")\n'
                        'fmt.Println("slider", <-moves.C)\nmoves.Close()\ns.SetValue(77)\n')

    def front(address, value):
        kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"address": address, "value": value}}))

    acked = False
    from_kernel = []
    stdout = ""
    deadline = time.monotonic() + TIMEOUT
    idle = False
    while not idle:
        assert time.monotonic() < deadline, f"no idle within {TIMEOUT}s; stdout {stdout!r}"
        try:
            m = kc.get_iopub_msg(timeout=1)
        except Empty:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "comm_msg" and c["comm_id"] == comm_id:
            if c["data"].get("address") == "#comm_open_ack":
                acked = True
            else:
                from_kernel.append(c["data"])
            continue
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if t == "display_data":
            html = c["data"].get("text/html", "")
            # what the widgets' JavaScript sends once the element exists
            if "<button" in html:
                front("e2e/button", 0)
            elif "button ready" in html:
                front("e2e/button", 1)
            elif 'type="range"' in html:
                front("e2e/slider", 50)  # the value the page reports first
            elif "slider ready" in html:
                front("e2e/slider", 42)
        elif t == "stream" and c["name"] == "stdout":
            stdout += c["text"]
        elif t == "status" and c["execution_state"] == "idle":
            idle = True
    ok(shell_reply(kc, msg_id))
    assert acked
    assert stdout == "clicked 1\nslider 42\n"
    # the slider's new value reaches the browser (after idle at the latest)
    deadline = time.monotonic() + TIMEOUT
    while {"address": "e2e/slider", "value": 77} not in from_kernel:
        assert time.monotonic() < deadline, from_kernel
        try:
            m = kc.get_iopub_msg(timeout=1)
        except Empty:
            continue
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
            from_kernel.append(m["content"]["data"])


def test_goworkfix_makes_go_work_modules_importable_and_tracked(kernel, tmp_path):
    _, kc = kernel
    mod = tmp_path / "e2elocal"
    mod.mkdir()
    (mod / "go.mod").write_text("module example.com/e2elocal\n\ngo 1.21\n")
    (mod / "e2elocal.go").write_text('package e2elocal\n\nfunc Hello() string { return "hello from a go.work module" }\n')
    reply, out = run(kc, f'!*rm -f go.work && go work init && go work use . "{mod}"\n%goworkfix')
    ok(reply)
    assert f'Added replace rule for module "example.com/e2elocal" to local directory "{mod}"' in stdout_of(out)
    reply, out = run(kc, "%track")
    ok(reply)
    assert f"<li>{mod}</li>" in "".join(d["data"].get("text/html", "") for d in displays(out))
    reply, out = run(kc, 'import "example.com/e2elocal"\n\n%%\nfmt.Println(e2elocal.Hello())')
    ok(reply)
    assert stdout_of(out) == "hello from a go.work module\n"
    reply, out = run(kc, f"%untrack {tmp_path}...\n%track")
    ok(reply)
    assert "No files or directory being tracked" in "".join(d["data"].get("text/html", "") for d in displays(out))


def test_test_command_runs_the_cells_tests_and_benchmarks(kernel):
    _, kc = kernel
    reply, out = run(kc, 'import "testing"\n\nfunc double(x int) int { return 2 * x }\n\n'
                     'func TestDouble(t *testing.T) {\n\tif double(21) != 42 {\n\t\tt.Fatal("double(21) != 42")\n\t}\n}\n\n'
                     'func BenchmarkDouble(b *testing.B) {\n\tfor i := 0; i < b.N; i++ {\n\t\t_ = double(i)\n\t}\n}\n\n'
                     '%test -test.v -test.bench=. -test.benchtime=10x')
    ok(reply)
    text = stdout_of(out)
    for want in ("=== RUN   TestDouble", "--- PASS: TestDouble", "pkg: goaccel.session", "BenchmarkDouble", "PASS"):
        assert want in text, text
    # a failing test fails the cell
    reply, out = run(kc, 'func TestDoubleWrong(t *testing.T) {\n\tif double(2) != 5 {\n\t\tt.Error("double(2) is not 5")\n\t}\n}\n\n'
                     '%test -test.run=TestDoubleWrong')
    assert reply["content"]["status"] == "error"
    assert "double(2) is not 5" in stdout_of(out)
