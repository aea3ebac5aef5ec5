"""goaccel launch in a real Slurm (e2e/slurmcluster.py: Debian's slurmctld
and two slurmd's playing two nodes on this host): an sbatch job of 2 nodes,
one `srun goaccel launch` per node, each starting 2 processes that join one
process group of 4 from the SLURM_* variables alone (plus the secret every
node holds); a failing rank fails the job, named; scancel leaves no
process; goaccel launch outside srun in a 2-node job says why it cannot; a
training notebook exported with `goaccel export` runs as a 2-node × 2-process
job and prints the losses and weights its notebook run printed."""
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

import nbformat
from nbclient import NotebookClient

from jupyter_client.manager import KernelManager

from conftest import KERNEL_NAME, ROOT
from test_multinode import DECLS, EXPECTED, Cell, launch_cell, run_cell
from slurmcluster import SlurmCluster, free_ports

GOACCEL = ROOT / "bin" / "goaccel"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    c.start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    """The test program of cli's launch tests, built once."""
    out = tmp_path_factory.mktemp("prog") / "launchprog"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/internal/cli/testdata/launchprog"], cwd=ROOT, check=True)
    return out


@pytest.fixture(scope="module")
def secret(tmp_path_factory):
    f = tmp_path_factory.mktemp("secret") / "secret"
    # Raw bytes, as `head -c 32 /dev/urandom` writes them, with a NUL for sure.
    f.write_bytes(os.urandom(16) + b"\0" + os.urandom(15))
    f.chmod(0o600)
    return f


def job(tmp_path, body, nodes=2):
    script = tmp_path / "job.sh"
    out = tmp_path / "job.out"
    script.write_text(f"#!/bin/bash\n#SBATCH --nodes={nodes} --ntasks-per-node=1 --output={out}\n{body}\n")
    return script, out


def launch_line(prog, secret, extra=""):
    port = free_ports(1)[0]
    return (f"srun --kill-on-bad-exit=1 {GOACCEL} launch --cpu --num_processes 2 --main_process_port {port} "
            f"--rdzv_conf secret_file={secret} {prog}{extra}")


def test_two_nodes_two_processes_each(cluster, prog, secret, tmp_path):
    script, out = job(tmp_path, launch_line(prog, secret, " x"))
    r = cluster.run(["sbatch", "--wait", str(script)], timeout=600)
    text = out.read_text() if out.exists() else ""
    assert r.returncode == 0, (r.stdout, r.stderr, text, cluster.logs())
    for rank in range(4):
        assert re.search(rf"^\[node \d rank {rank}\] rank {rank} of 4: sum 10, args \[\"x\"\]", text, re.M), text


def test_a_failing_rank_fails_the_job_and_is_named(cluster, prog, secret, tmp_path):
    script, out = job(tmp_path, "export FAIL_RANK=3\n" + launch_line(prog, secret))
    r = cluster.run(["sbatch", "--wait", str(script)], timeout=600)
    text = out.read_text() if out.exists() else ""
    assert r.returncode != 0, text
    # Node 0 names the node and its ranks, node 1 the rank; both say why.
    assert "node 1 (127.0.0.1, ranks 2-3) failed: launcher: rank 3 (local rank 1) failed (exit status 3)" in text, text
    assert "failing on purpose" in text, text


def squeue(cluster):
    return cluster.run(["squeue", "-h", "-o", "%i"]).stdout.split()


def test_scancel_leaves_no_process(cluster, prog, secret, tmp_path):
    # FAIL_RANK names no rank: every rank waits for good after its line.
    script, out = job(tmp_path, "export FAIL_RANK=99\n" + launch_line(prog, secret))
    r = cluster.run(["sbatch", "--parsable", str(script)])
    assert r.returncode == 0, r.stderr
    jobid = r.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 600  # a bound for a broken run; each check is progress
    while not (out.exists() and len(re.findall(r"of 4: sum 10", out.read_text())) == 4):
        assert time.monotonic() < deadline, (out.read_text() if out.exists() else "", cluster.logs())
        time.sleep(0.2)
    assert cluster.run(["scancel", jobid]).returncode == 0
    while jobid in squeue(cluster):
        assert time.monotonic() < deadline, "the job outlived scancel"
        time.sleep(0.2)
    while subprocess.run(["pgrep", "-f", str(prog)], capture_output=True).returncode == 0:
        left = subprocess.run(["pgrep", "-af", str(prog)], capture_output=True, text=True).stdout
        assert time.monotonic() < deadline, "processes left after scancel:\n" + left
        time.sleep(0.2)


def test_launch_outside_srun_says_why(cluster, prog, secret, tmp_path):
    script, out = job(tmp_path, f"{GOACCEL} launch --cpu --num_processes 2 --rdzv_conf secret_file={secret} {prog}")
    r = cluster.run(["sbatch", "--wait", str(script)], timeout=600)
    text = out.read_text() if out.exists() else ""
    assert r.returncode != 0 and "outside srun, on the first one only" in text, text


TRAINING = re.compile(r"(step \d+: loss \S+|w = .*)$", re.M)


def test_an_exported_notebook_trains_on_two_nodes_as_in_the_notebook(cluster, secret, tmp_path):
    path = ROOT / "examples" / "notebooks" / "cluster_job.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=600,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.outputs if o["output_type"] == "stream" and o["name"] == "stdout")
    want = TRAINING.findall(printed)
    assert len(want) == 6, printed
    env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod")
    prog = tmp_path / "cluster_job"
    r = subprocess.run([str(GOACCEL), "export", str(path), "-o", str(prog)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    subprocess.run(["go", "build", "-o", "train", "."], cwd=prog, env=env, check=True)
    script, out = job(tmp_path, launch_line(prog / "train", secret))
    r = cluster.run(["sbatch", "--wait", str(script)], timeout=600)
    text = out.read_text() if out.exists() else ""
    assert r.returncode == 0, (r.stdout, r.stderr, text, cluster.logs())
    assert "training on 4 process(es)" in text, text
    # acc.Print prints on each node's local main process (as Accelerate's
    # accelerator.print): rank 0's lines, and rank 2's, are the notebook's.
    for rank in (0, 2):
        lines = "\n".join(l for l in text.splitlines() if re.match(rf"\[node \d rank {rank}\] ", l))
        assert TRAINING.findall(lines) == want, text


# A notebook in the job launches the multi-node tests' functions with
# NumNodes left 0: the allocation gives the nodes.
LAUNCH_CELL = launch_cell("allreduce, nil", "NumProcesses: 2, UseCPU: true")
SLEEP_CELL = launch_cell("sleepy, []any{5}", "NumProcesses: 2, UseCPU: true")


def agents_left():
    return subprocess.run(["pgrep", "-af", f"{GOACCEL} node --rdzv-backend c10d"],
                          capture_output=True, text=True).stdout


@pytest.fixture
def allocation_kernel(cluster, tmp_path):
    """A kernel inside a running job of 2 nodes, as `srun --pty jupyter lab`
    on the job's first node would start it: the job's variables and this
    node's name. Yields (jobid, kernel client)."""
    r = cluster.run(["sbatch", "--parsable", "--nodes=2", "--ntasks-per-node=1",
                     f"--output={tmp_path / 'holder.out'}", "--wrap", "sleep 3000"])
    assert r.returncode == 0, r.stderr
    jobid = r.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 600  # a bound for a broken cluster; each check is progress
    while cluster.run(["squeue", "-h", "-j", jobid, "-o", "%T"]).stdout.strip() != "RUNNING":
        assert time.monotonic() < deadline, cluster.logs()
        time.sleep(0.2)
    env = dict(cluster.env, SLURM_JOB_ID=jobid, SLURM_JOB_NODELIST="n[1-2]", SLURM_JOB_NUM_NODES="2",
               SLURM_NODEID="0", SLURMD_NODENAME="n1")
    km = KernelManager(kernel_name=KERNEL_NAME)
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=300)
        run_cell(kc, DECLS)
        yield jobid, km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        cluster.run(["scancel", jobid])


def wait_gone(what, deadline):
    while what():
        assert time.monotonic() < deadline, "still running:\n" + what()
        time.sleep(0.2)


def workers_left():
    """goaccel worker processes, on any node (all nodes are this host)."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            zombie = "State:\tZ" in (d / "status").read_text()
        except OSError:
            continue
        if len(argv) > 1 and argv[1] == b"worker" and argv[0].endswith(b"goaccel") and not zombie:
            found.append(d.name + " " + b" ".join(argv).decode(errors="replace"))
    return "\n".join(found)


def test_a_notebook_in_an_allocation_launches_on_every_node(cluster, allocation_kernel):
    jobid, _, kc = allocation_kernel
    out = run_cell(kc, LAUNCH_CELL).text()
    assert "LAUNCH ERROR" not in out, out + cluster.logs()
    assert f"Slurm job {jobid}: node 0 is this node (n1); srun starts the agents of nodes 1-1 (n2)." in out, out
    results = [l[len("RESULT "):] for l in out.splitlines() if l.startswith("RESULT ")]
    assert results == EXPECTED, out
    assert "[node 1 rank 3] rank 3 of 4 on node 1" in out, out
    # The agents lived for the launch only: their step is gone.
    wait_gone(agents_left, time.monotonic() + 600)
    # A second launch in the same kernel starts them again.
    out = run_cell(kc, LAUNCH_CELL).text()
    assert [l for l in out.splitlines() if l.startswith("RESULT ")] == ["RESULT " + r for r in results], out


def test_interrupt_and_a_lost_node_stop_every_node(cluster, allocation_kernel):
    jobid, km, kc = allocation_kernel
    deadline = time.monotonic() + 600
    # The notebook's interrupt.
    c = Cell(kc, SLEEP_CELL)
    c.wait_for("] sleeping", count=4)
    km.interrupt_kernel()
    reply = c.finish()
    assert reply["content"]["status"] == "error" or "LAUNCH ERROR" in c.text(), c.text()
    wait_gone(agents_left, deadline)
    wait_gone(workers_left, deadline)
    # A node lost mid-run (its agents' step cancelled): named.
    c = Cell(kc, SLEEP_CELL)
    c.wait_for("] sleeping", count=4)
    steps = cluster.run(["squeue", "-h", "-s", "-j", jobid, "-o", "%i %j"]).stdout.split("\n")
    step = [l.split()[0] for l in steps if l.endswith("goaccel-node")]
    assert step, steps
    assert cluster.run(["scancel", "--signal=KILL", step[0]]).returncode == 0
    c.finish()
    out = c.text()
    assert "LAUNCH ERROR" in out and "node 1" in out, out
    wait_gone(agents_left, deadline)
    wait_gone(workers_left, deadline)
