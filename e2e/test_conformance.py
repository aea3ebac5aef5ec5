"""Jupyter protocol conformance through jupyter_kernel_test, with every
sample attribute it offers set for Go. conftest.py turns any skip into a
failure."""
import unittest

import jupyter_kernel_test as jkt

from conftest import KERNEL_NAME

DISPLAY = 'import "github.com/goaccel/goaccel/display"\n'


class GoKernelTests(jkt.KernelTests):
    kernel_name = KERNEL_NAME
    language_name = "go"
    file_extension = ".go"

    code_hello_world = 'import "fmt"\nfmt.Println("hello, world")'
    code_stderr = 'import "os"\nfmt.Fprintln(os.Stderr, "this goes to stderr")'

    completion_samples = [
        {"text": "strings.ToUpp", "matches": ["ToUpper", "ToUpperSpecial"]},
        {"text": "fmt.Sprintl", "matches": ["Sprintln"]},
    ]

    complete_code_samples = [
        'fmt.Println("hello")',
        "x := 1",
        "func f() int { return 1 }",
        "type point struct{ x, y int }",
        "%who",
    ]
    incomplete_code_samples = [
        'fmt.Println("hello"',
        "for i := 0; i < 3; i++ {",
        "x := []int{1,",
        "func f() {",
    ]
    invalid_code_samples = [
        "x := )",
        "}",
    ]

    code_page_something = "strings.Split?"

    code_generate_error = 'panic("boom")'

    code_execute_result = [
        {"code": "6*7", "result": "42"},
        {"code": "1.5 * 3", "result": "4.5"},
        {"code": '[]int{1, 2, 3}', "result": "[1 2 3]"},
    ]

    code_display_data = [
        {"code": DISPLAY + 'display.HTML("<b>bold</b>")', "mime": "text/html"},
        {"code": DISPLAY + 'display.Markdown("# title")', "mime": "text/markdown"},
        {"code": DISPLAY + 'display.SVG(`<svg xmlns="http://www.w3.org/2000/svg"/>`)',
         "mime": "image/svg+xml"},
        {"code": DISPLAY + 'display.LaTeX(`$$x^2$$`)', "mime": "text/latex"},
        {"code": DISPLAY + 'display.JSON(map[string]int{"a": 1})', "mime": "application/json"},
        {"code": DISPLAY + 'import "image"\ndisplay.Image(image.NewRGBA(image.Rect(0, 0, 4, 4)))',
         "mime": "image/png"},
    ]

    code_history_pattern = "6*7"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "strings.Split"

    code_clear_output = DISPLAY + "display.ClearOutput(false)"


class GoIopubWelcomeTests(jkt.IopubWelcomeTests):
    kernel_name = KERNEL_NAME
    support_iopub_welcome = True


if __name__ == "__main__":
    unittest.main()
