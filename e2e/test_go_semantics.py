"""Cells are Go: Go's compile errors, Go's runtime errors at cell lines, output
in program order, the standard library, per-iteration loop variables, types
that print as Go's — through the real kernel and jupyter_client. Expected
values are what `go run` prints for the same code in a func main."""
import pytest

from kernelclient import result_text, run, running_kernel, stdout_of


@pytest.fixture(scope="module")
def kc():
    with running_kernel() as (_, kc):
        yield kc


def error_of(kc, code):
    reply, out = run(kc, code)
    c = reply["content"]
    assert c["status"] == "error", (code, out)
    return c["ename"], c["evalue"], "\n".join(c["traceback"]), out


def ok(kc, code):
    reply, out = run(kc, code)
    assert reply["content"]["status"] == "ok", (code, reply["content"], out)
    return out


def test_undefined_name_is_gos_error_with_position_and_caret(kc):
    reply, _ = run(kc, "1")
    n = reply["content"]["execution_count"] + 1
    ename, evalue, tb, _ = error_of(kc, "y := nosuchFunc(1)")
    assert ename == "CompileError"
    assert "undefined: nosuchFunc" in evalue
    assert f"cell[{n}]:1:6" in tb, tb
    assert "^" in tb


def test_assignment_mismatch_is_rejected(kc):
    ok(kc, "func two() (int, error) { return 1, nil }")
    _, evalue, _, _ = error_of(kc, "v := two()")
    # go/types words it "two returns", the gc compiler "two() returns"
    assert "assignment mismatch: 1 variable but two" in evalue and "returns 2 values" in evalue


def test_rejected_cell_declares_nothing(kc):
    error_of(kc, "half := 1\nnosuch()")
    _, evalue, _, _ = error_of(kc, "half")
    assert "undefined: half" in evalue


def test_unused_variable_inside_a_function_is_gos_error(kc):
    _, evalue, _, _ = error_of(kc, "func f() {\n\tx := 1\n}")
    assert "declared and not used: x" in evalue


def test_cannot_use_as_value(kc):
    _, evalue, _, _ = error_of(kc, 'var s string = 3 + len("ab")')
    assert "cannot use" in evalue and "as string value" in evalue


@pytest.mark.parametrize("code, message, line", [
    ("var p *struct{ A int }\np.A", "runtime error: invalid memory address or nil pointer dereference", 2),
    ("s := []int{}\n_ = 0\ns[3]", "runtime error: index out of range [3] with length 0", 3),
    ("var m map[string]int\nm[\"a\"] = 1", "assignment to entry in nil map", 2),  # Go prints no "runtime error:" here
    ("z := 0\n10 / z", "runtime error: integer divide by zero", 2),
])
def test_runtime_errors_read_like_gos(kc, code, message, line):
    reply, _ = run(kc, "1")
    n = reply["content"]["execution_count"] + 1
    ename, evalue, tb, _ = error_of(kc, code)
    assert ename == "panic"
    assert message in evalue
    assert tb.count(message) == 1, tb  # each line once
    assert tb.startswith("panic: " + message), tb
    assert f"cell[{n}]:{line}:" in tb, tb


def test_panic_in_a_goroutine_names_its_line(kc):
    ename, evalue, tb, _ = error_of(kc, 'go func() {\n\t_ = 1\n\t_ = 2\n\tpanic("in a goroutine")\n}()\nfor {\n}')
    assert ename == "panic" and "in a goroutine" in evalue
    assert ":4:" in tb and "goroutine" in tb, tb


def test_output_in_program_order(kc):
    out = ok(kc, 'import "fmt"\nimport "os"\nfmt.Fprintln(os.Stdout, "one")\nfmt.Println("two")\nos.Stdout.WriteString("three\\n")\nprintln("four")')
    assert stdout_of(out) == "one\ntwo\nthree\n"
    assert stdout_of(out, "stderr") == "four\n"


def test_os_exit_ends_the_cell_without_deferred_calls(kc):
    ename, evalue, _, out = error_of(kc, 'import "os"\nfunc main() {\n\tdefer fmt.Println("deferred")\n\tos.Exit(3)\n}')
    assert evalue == "exit status 3"
    assert "deferred" not in stdout_of(out)
    assert "panic" not in stdout_of(out, "stderr")


@pytest.mark.parametrize("code, want", [
    ('import "syscall"\nsyscall.Getpid() > 0', "true"),
    ('import "slices"\ns := []int{3, 1, 2}\nslices.Sort(s)\nfmt.Sprint(s, slices.Max(s), slices.Equal(s, []int{1, 2, 3}))', '"[1 2 3] 3 true"'),
    ('import "maps"\nm := map[string]int{"a": 1}\nmaps.Equal(maps.Clone(m), m)', "true"),
    ('import "iter"\nfunc count(n int) iter.Seq[int] {\n\treturn func(yield func(int) bool) {\n\t\tfor i := range n {\n\t\t\tif !yield(i) {\n\t\t\t\treturn\n\t\t\t}\n\t\t}\n\t}\n}\nsum := 0\nfor v := range count(4) {\n\tsum += v\n}\nsum', "6"),
    ('type myErr struct{}\nfunc (myErr) Error() string { return "mine" }\nvar err error = fmt.Errorf("wrapped: %w", myErr{})\n_, found := errors.AsType[myErr](err)\nfound', "true"),
    ('import "unsafe"\nunsafe.Sizeof(int64(0))', "8"),
])
def test_standard_library(kc, code, want):
    out = ok(kc, code)
    assert result_text(out) == want


def test_for_range_int_with_closures(kc):
    out = ok(kc, "n := 0\nfor range 3 {\n\tfunc() { n++ }()\n}\nn")
    assert result_text(out) == "3"


def test_per_iteration_loop_variables(kc):
    out = ok(kc, 'var fs []func() int\nfor i := 0; i < 3; i++ {\n\tfs = append(fs, func() int { return i })\n}\n'
                 'import "sync"\nvar wg sync.WaitGroup\ngot := make([]int, 3)\nfor i := range 3 {\n\twg.Go(func() { got[i] = i * 10 })\n}\nwg.Wait()\n'
                 'fmt.Println(fs[0](), fs[1](), fs[2](), got)')
    assert stdout_of(out) == "0 1 2 [0 10 20]\n"


def test_new_of_an_expression(kc):
    out = ok(kc, "p := new(42)\n*p")
    assert result_text(out) == "42"


def test_declared_types_are_go_types(kc):
    out = ok(kc, 'type point struct{ x, y int }\nfmt.Printf("%+v %T %v\\n", point{1, 2}, point{}, point{1, 2} == point{1, 2})')
    assert stdout_of(out) == "{x:1 y:2} main.point true\n"


def test_redefinition_is_late_bound(kc):
    ok(kc, "func greet() string { return \"old\" }\nfunc callGreet() string { return greet() }")
    ok(kc, "func greet() string { return \"new\" }")
    out = ok(kc, "callGreet()")
    assert result_text(out) == '"new"'


def test_methods_on_an_earlier_cells_type(kc):
    ok(kc, "type counter struct{ n int }\nold := &counter{}")
    ok(kc, "func (c *counter) inc() { c.n++ }")
    out = ok(kc, "c := &counter{}\nc.inc()\nc.inc()\nc.n")
    assert result_text(out) == "2"
    # a value made before the method was declared keeps the type it was made with
    _, evalue, _, _ = error_of(kc, "old.inc()")
    assert "old.inc undefined" in evalue


def test_kernel_survives_and_state_is_kept(kc):
    ok(kc, "kept := 42")
    error_of(kc, 'panic("boom")')
    out = ok(kc, "kept")
    assert result_text(out) == "42"


# A program written across cells, as notebook users write it: each
# declaration in its own cell (what `make fidelity FIDELITY_SPLIT=1` does
# to Go's test programs). Each case failed before its fix.

def test_exported_functions_across_cells(kc):
    ok(kc, 'func Hello() string { return "hi" }')
    ok(kc, 'func Greet() string { return Hello() + "!" }')
    out = ok(kc, "func both() string { return Hello() + Greet() }\nfmt.Println(both())")
    assert stdout_of(out) == "hihi!\n"


def test_interface_values_asserted_in_later_cells(kc):
    ok(kc, "type shape interface{ area() float64 }\ntype sq struct{ s float64 }\nfunc (q sq) area() float64 { return q.s * q.s }")
    ok(kc, "var sh shape = sq{2}")
    ok(kc, 'func kind(x shape) string {\n\tswitch x.(type) {\n\tcase sq:\n\t\treturn "sq"\n\t}\n\treturn "other"\n}')
    _, out = run(kc, "_, isSq := sh.(sq)\nfmt.Sprint(isSq, kind(sh), kind(sq{1}))")
    assert result_text(out) == '"truesqsq"'  # Sprint adds no space between strings


def test_recover_in_a_deferred_function_of_an_earlier_cell(kc):
    ok(kc, "func rescue(got *any) { *got = recover() }")
    ok(kc, 'func risky() (got any) {\n\tdefer rescue(&got)\n\tpanic("boom")\n}')
    _, out = run(kc, "risky()")
    assert result_text(out) == '"boom"'


def test_table_of_unnamed_structs_used_by_later_cells(kc):
    ok(kc, 'cases := []struct {\n\tin   string\n\twant int\n}{{"a", 1}, {"bb", 2}, {"ccc", 4}}')
    ok(kc, "func failures() (n int) {\n\tfor _, c := range cases {\n\t\tif len(c.in) != c.want {\n\t\t\tn++\n\t\t}\n\t}\n\treturn n\n}")
    _, out = run(kc, "failures()")
    assert result_text(out) == "1"


def test_generic_types_across_cells(kc):
    ok(kc, "type node[T any] struct {\n\tval  T\n\tnext *node[T]\n}")
    ok(kc, "type stack[T any] struct{ top *node[T] }\nfunc (s *stack[T]) push(v T) { s.top = &node[T]{v, s.top} }")
    ok(kc, "type meters float64\nfunc sum[N ~float64](xs ...N) (t N) {\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}")
    _, out = run(kc, "func top() meters {\n\tvar s stack[meters]\n\ts.push(sum[meters](1, 2))\n\treturn s.top.val\n}\ntop()")
    assert result_text(out) == "3"
