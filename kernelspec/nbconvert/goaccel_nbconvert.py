"""goaccel's nbconvert exporter, installed by `goaccel install`.

`jupyter nbconvert --to goaccel NOTEBOOK.ipynb`, and JupyterLab's File →
Save and Export Notebook As → Go Program, write the Go program that
`goaccel export` makes of the notebook's code cells (main.go; go.mod and
go.sum come with `goaccel export -o DIR`)."""
import os
import subprocess
import tempfile

import nbformat
from nbconvert.exporters import Exporter
from traitlets import default

# The goaccel binary that installed this exporter ($GOACCEL overrides it).
GOACCEL = "@GOACCEL@"


class GoProgramExporter(Exporter):
    export_from_notebook = "Go Program"
    output_mimetype = "text/x-go"

    @default("file_extension")
    def _file_extension_default(self):
        return ".go"

    def from_notebook_node(self, nb, resources=None, **kw):
        nb, resources = super().from_notebook_node(nb, resources, **kw)
        with tempfile.TemporaryDirectory(prefix="goaccel-nbconvert-") as d:
            src = os.path.join(d, "notebook.ipynb")
            nbformat.write(nb, src)
            out = os.path.join(d, "program")
            r = subprocess.run([os.environ.get("GOACCEL") or GOACCEL, "export", "--no-build", src, "-o", out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("goaccel export failed:\n" + r.stderr)
            with open(os.path.join(out, "main.go"), encoding="utf-8") as f:
                program = f.read()
        resources["output_extension"] = ".go"
        return program, resources
