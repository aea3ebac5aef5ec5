"""What notebook users reach for every day, through the real kernel and
jupyter_client: %timeit and %%timeit read as IPython's, tables show as
HTML tables with text that lines up, %whos lists the session."""
import re

import pytest

from kernelclient import result_text, run, running_kernel, stdout_of

TIMEIT = re.compile(r"^[\d.]+ (ns|µs|ms|s) ± [\d.]+ (ns|µs|ms|s) per loop \(mean ± std\. dev\. of (\d+) runs?, ([\d,]+) loops? each\)$")


@pytest.fixture(scope="module")
def kc():
    with running_kernel() as (_, kc):
        yield kc


def ok(kc, code):
    reply, out = run(kc, code)
    assert reply["content"]["status"] == "ok", (code, reply["content"], out)
    return out


def test_timeit_line_and_cell(kc):
    ok(kc, "func fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n\treturn fib(n-1) + fib(n-2)\n}")
    line = stdout_of(ok(kc, "%timeit fib(12)")).strip()
    m = TIMEIT.match(line)
    assert m and m.group(3) == "7", line
    # The loop count IPython would choose: a power of ten.
    assert re.fullmatch(r"1(,000)*|10(,000)*|100(,000)*", m.group(4)), line
    line = stdout_of(ok(kc, "%%timeit -n 10 -r 2 s := make([]int, 64)\nfor i := range s {\n\ts[i] = fib(i % 8)\n}")).strip()
    m = TIMEIT.match(line)
    assert m and m.group(3) == "2" and m.group(4) == "10", line
    # Nothing of it stays: s was the setup's.
    reply, _ = run(kc, "s")
    assert reply["content"]["status"] == "error" and "undefined: s" in reply["content"]["evalue"]


def test_timeit_of_code_that_does_not_compile_is_gos_error(kc):
    reply, _ = run(kc, "%timeit nosuch(1)")
    c = reply["content"]
    assert c["status"] == "error" and re.search(r"cell\[\d+\]:1:9: undefined: nosuch", c["evalue"]), c


def test_a_slice_of_structs_is_a_table(kc):
    out = ok(kc, 'type city struct {\n\tName string\n\tPeople int\n}\n[]city{{"Lyon", 522250}, {"Nice", 348085}}')
    assert result_text(out) == "   Name  People\n0  Lyon  522250\n1  Nice  348085"
    html = [o for o in out if o["msg_type"] == "execute_result"][0]["content"]["data"]["text/html"]
    assert '<table class="goaccel-table">' in html and '<td style="text-align:right">522250</td>' in html


def test_whos(kc):
    ok(kc, "weights := make([]float32, 256)")
    out = ok(kc, "%whos")
    text = [o for o in out if o["msg_type"] == "display_data"][0]["content"]["data"]["text/plain"]
    assert re.search(r"(?m)^weights\s+var\s+\[\]float32\s+1\.0 KiB\s+len 256, cap 256$", text), text
    assert re.search(r"(?m)^fib\s+func\s+func fib\(n int\) int$", text), text
