"""The garbage collector sees every package variable of the cells' shared
library from the moment the library is loaded.

A kernel loads the library before the first cell that needs it, and
initializes the library's packages that the kernel itself lacks (all of
GoMLX) before that cell's plugin is opened. The runtime scanned a module's
variables only once a plugin load had made it active, so a collection in
between freed the maps and tables GoMLX's packages had just built; the
kernel died later with "found bad pointer in Go heap", or a launched worker
with "concurrent map read and map write" in go-xla's package sets. Rare at
the default GOGC; with GOGC=1 a collection runs during those
initializations every time, and clobberfree overwrites what it frees, so
the first use of a wrongly freed object fails (about one kernel in four
crashed so before the fix; eight kernels).
"""
import os

from kernelclient import run, running_kernel, stdout_of
from test_interrupt import GOMLX_SETUP

TRAIN = ('runtime.GC()\n'
         '_, err = gxa.NewLoop(tr, gxa.WithoutProgress()).RunSteps(ds, 20)\n'
         'fmt.Println(err, tr.GlobalStep())')

# Fresh kernels under constant collection: each loads the library anew.
KERNELS = 8


def test_gomlx_cells_survive_constant_collection():
    # Built once in an ordinary kernel: the go command inherits the
    # kernel's environment, and under GOGC=1 a first build of GoMLX's cells
    # would take many minutes. Later kernels load the cached plugins.
    with running_kernel() as (_, kc):
        reply, _ = run(kc, GOMLX_SETUP)
        assert reply["content"]["status"] == "ok", reply["content"]
        reply, _ = run(kc, TRAIN)
        assert reply["content"]["status"] == "ok", reply["content"]
    env = dict(os.environ, GOGC="1", GODEBUG="clobberfree=1")
    for i in range(KERNELS):
        with running_kernel(env=env) as (km, kc):
            reply, _ = run(kc, GOMLX_SETUP, km=km)
            assert reply["content"]["status"] == "ok", (i, reply["content"])
            reply, out = run(kc, TRAIN, km=km)
            assert reply["content"]["status"] == "ok", (i, reply["content"])
            assert stdout_of(out).strip() == "<nil> 20", (i, stdout_of(out))
            assert km.is_alive()
