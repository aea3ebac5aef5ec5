"""goaccel installed the Go way: `go install .../cmd/goaccel@VERSION`, then
`goaccel install`, gives a working kernel with no checkout — the kernel finds
its source in the module cache.

The module is served at a version of its own by a file GOPROXY made from the
tracked files of this checkout (as the module proxy would serve a tag); its
dependencies come from the module cache already here, so nothing is fetched.
A private module cache keeps the user's clean.
"""
import hashlib
import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT
from kernelclient import run, running_kernel, stdout_of, result_text

MODULE = "github.com/goaccel/goaccel"
KERNEL = "goaccel-goinstall"


def go_env(name):
    return subprocess.run(["go", "env", name], check=True, capture_output=True, text=True).stdout.strip()


def module_files():
    """The module's files as git sees them (tracked, and new ones it does not
    ignore), nested modules left out."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    nested = {str(Path(n.decode()).parent) for n in names if n.endswith(b"/go.mod")}
    for n in names:
        if not n:
            continue
        rel = n.decode()
        if any(rel.startswith(d + "/") for d in nested):
            continue
        if (ROOT / rel).is_file():
            yield rel


def make_proxy(dir):
    files = sorted(module_files())
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.encode() + b"\0" + (ROOT / rel).read_bytes())
    version = "v0.0.1-e2e." + h.hexdigest()[:12]
    at = dir / MODULE / "@v"
    at.mkdir(parents=True)
    with zipfile.ZipFile(at / f"{version}.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for rel in files:
            z.write(ROOT / rel, f"{MODULE}@{version}/{rel}")
    shutil.copy(ROOT / "go.mod", at / f"{version}.mod")
    (at / f"{version}.info").write_text('{"Version":"%s"}' % version)
    (at / "list").write_text(version + "\n")
    return version


def remove_tree(path):
    """Removes a module cache (its files are read-only)."""
    def writable(func, p, _):
        os.chmod(p, stat.S_IWRITE | stat.S_IREAD | stat.S_IEXEC)
        func(p)
    shutil.rmtree(path, onerror=writable)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("goinstall")
    version = make_proxy(tmp / "proxy")
    modcache = tmp / "modcache"
    env = dict(os.environ,
               GOBIN=str(tmp / "bin"),
               GOMODCACHE=str(modcache),
               GOPROXY=f"file://{tmp / 'proxy'},file://{go_env('GOMODCACHE')}/cache/download,off",
               GOSUMDB="off", GOFLAGS="", GOTOOLCHAIN="local")
    # The one line README gives.
    subprocess.run(["go", "install", "-ldflags=-checklinkname=0 -extldflags=-Wl,-z,lazy",
                    f"{MODULE}/cmd/goaccel@{version}"], env=env, check=True, cwd=tmp)
    binary = tmp / "bin" / "goaccel"
    jupyter = Path(os.environ["JUPYTER_PATH"])
    # No shared library for this kernel: it would be a second one, minutes
    # of linking, for what the rest of the suite tests.
    subprocess.run([str(binary), "install", "--prefix", str(jupyter.parent.parent), "--name", KERNEL,
                    "--no-prebuild", "--env", "GOACCEL_SHARED_LIB=0",
                    "--env", f"GOMODCACHE={modcache}", "--env", f"GOPROXY={env['GOPROXY']}",
                    "--env", "GOSUMDB=off", "--env", "GOFLAGS="], env=env, check=True, cwd=tmp)
    yield version, binary, modcache
    remove_tree(modcache)


def test_go_install_gives_a_working_kernel(installed):
    version, binary, modcache = installed
    out = subprocess.run([str(binary), "version"], check=True, capture_output=True, text=True).stdout
    assert version in out, out
    with running_kernel(kernel_name=KERNEL) as (km, kc):
        reply, outputs = run(kc, 'import "fmt"\nfunc sq(x int) int { return x * x }\n'
                                 'for i := 1; i <= 3; i++ { fmt.Println(sq(i)) }')
        assert reply["content"]["status"] == "ok", outputs
        assert stdout_of(outputs) == "1\n4\n9\n"
        # The cells were built against the source in the module cache.
        reply, outputs = run(kc, 'import "runtime/debug"\nbi, _ := debug.ReadBuildInfo()\nbi.Main.Version')
        assert reply["content"]["status"] == "ok", outputs
        assert result_text(outputs) == f'"{version}"'
    assert (modcache / f"{MODULE}@{version}" / "notebook" / "gxrt").is_dir()
