"""Launches across nodes (issue 10), through the real kernel.

Three hosts on this machine, made of Linux network namespaces
(scripts/netns.sh: 10.77.0.1-3 on a bridge, addresses only inside the
namespaces): the goaccel kernel runs on host 1 (jupyter_client reaches it over
ipc sockets, which cross network namespaces), `goaccel node` agents on host 2,
and Debian's etcd-server on host 3 for the tests of an external etcd. A cell
calls NotebookLauncher(…, Options{NumNodes: 2, NumProcesses: 2, RdzvBackend:
…}) and the checks read what reaches the frontend: every rank's line,
prefixed with its node and rank; the results, in rank order; the all-reduce,
broadcast and gather across the veth link; the error naming a node whose agent
was killed, or whose lease expired; a restart that completes once the agent
comes back; nothing left running on any host after an interrupt.

These tests skip only where network namespaces cannot be created (not root,
no `ip netns`), and say so.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

import pytest
from jupyter_client.manager import KernelManager

from conftest import BINARY, KERNEL_NAME, ROOT
from kernelclient import PROMPT, TIMEOUT, shell_reply
from test_launch import wait_until, workers_of

NETNS = ROOT / "scripts" / "netns.sh"
PREFIX = f"ga{os.getpid()}"
ADDR = {1: "10.77.0.1", 2: "10.77.0.2", 3: "10.77.0.3"}
ETCD_PORT = 2379

DECLS = '''import (
\t"fmt"
\t"os"
\t"strconv"
\t"time"
\t"github.com/goaccel/goaccel/accelerate"
\t"github.com/goaccel/goaccel/launcher"
)

func allreduce() (string, error) {
\tacc, err := accelerate.NewAccelerator()
\tif err != nil {
\t\treturn "", err
\t}
\tdefer acc.EndTraining()
\tr := acc.ProcessIndex()
\tfmt.Printf("rank %d of %d on node %d\\n", r, acc.NumProcesses(), acc.NodeRank())
\tsum := []float64{float64(r)}
\tif err := acc.AllReduceFloat64(sum, "sum"); err != nil {
\t\treturn "", err
\t}
\tb := []float64{0}
\tif r == 0 {
\t\tb[0] = 42
\t}
\tif err := acc.BroadcastFloat64s(b, 0); err != nil {
\t\treturn "", err
\t}
\tg, err := acc.GatherFloat64s([]float64{float64(r * r)})
\tif err != nil {
\t\treturn "", err
\t}
\tif err := acc.WaitForEveryone(); err != nil {
\t\treturn "", err
\t}
\treturn fmt.Sprintf("rank=%d node=%d sum=%v bcast=%v gather=%v", r, acc.NodeRank(), sum[0], b[0], g), nil
}

// sleepy sleeps until the group has been restarted finishAt times, then
// does the all-reduce.
func sleepy(finishAt int) (string, error) {
\tif n, _ := strconv.Atoi(os.Getenv("TORCHELASTIC_RESTART_COUNT")); n >= finishAt {
\t\treturn allreduce()
\t}
\tfmt.Println("sleeping")
\ttime.Sleep(time.Hour)
\treturn "", nil
}
'''


def launch_cell(fn, opts):
    return (f'res, err := launcher.NotebookLauncher({fn}, launcher.Options{{{opts}}})\n'
            'if err != nil {\n\tfmt.Println("LAUNCH ERROR:", err)\n}\n'
            'for _, r := range res {\n\tfmt.Println("RESULT", r[0])\n}\n')


EXPECTED = [f"rank={r} node={r // 2} sum=6 bcast=42 gather=[0 1 4 9]" for r in range(4)]


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def hosts():
    r = subprocess.run(["bash", str(NETNS), "up", PREFIX, "3"], capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(["bash", str(NETNS), "down", PREFIX], capture_output=True)
        pytest.skip("network namespaces cannot be created here (root and iproute2's `ip netns` are "
                    f"needed): {r.stderr.strip()}")
    try:
        yield {i: f"{PREFIX}-{i}" for i in (1, 2, 3)}
    finally:
        subprocess.run(["bash", str(NETNS), "down", PREFIX], check=True)


@pytest.fixture
def scratch():
    d = Path(tempfile.mkdtemp(prefix="goaccel-multinode-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def netns_kernelspec(ns, tmpdir):
    """A kernelspec that starts the e2e kernel inside ns, with its own TMPDIR
    (where an embedded etcd keeps its data)."""
    base = Path(os.environ["JUPYTER_PATH"]) / "kernels"
    spec = json.loads((base / KERNEL_NAME / "kernel.json").read_text())
    spec["argv"] = ["ip", "netns", "exec", ns, *spec["argv"]]
    spec["env"] = {**spec.get("env", {}), "TMPDIR": str(tmpdir)}
    name = f"{KERNEL_NAME}-{ns}"
    (base / name).mkdir(exist_ok=True)
    (base / name / "kernel.json").write_text(json.dumps(spec))
    return name


@contextmanager
def kernel_on(ns, scratch):
    tmpdir = scratch / "kernel-tmp"
    tmpdir.mkdir(exist_ok=True)
    km = KernelManager(kernel_name=netns_kernelspec(ns, tmpdir), transport="ipc", ip=str(scratch / "kipc"))
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        yield km, kc, tmpdir
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


class Cell:
    """A cell whose output is read while it runs."""

    def __init__(self, kc, code):
        self.kc, self.msgs, self.idle = kc, [], False
        self.msg_id = kc.execute(code)

    def _pump(self, timeout):
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except Empty:
            return
        if msg["parent_header"].get("msg_id") != self.msg_id:
            return
        self.msgs.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            self.idle = True

    def text(self, name="stdout"):
        return "".join(m["content"]["text"] for m in self.msgs
                       if m["msg_type"] == "stream" and m["content"]["name"] == name)

    def wait_for(self, needle, name="stdout", timeout=TIMEOUT, count=1):
        end = time.monotonic() + timeout
        while self.text(name).count(needle) < count:
            if self.idle or time.monotonic() > end:
                raise AssertionError(f"{needle!r} not seen on {name} within {timeout}s:\n"
                                     f"stdout: {self.text()}\nstderr: {self.text('stderr')}")
            self._pump(0.2)

    def finish(self, timeout=2 * TIMEOUT):
        reply = shell_reply(self.kc, self.msg_id, timeout)
        end = time.monotonic() + TIMEOUT
        while not self.idle and time.monotonic() < end:
            self._pump(0.2)
        return reply


def run_cell(kc, code, timeout=2 * TIMEOUT):
    c = Cell(kc, code)
    reply = c.finish(timeout)
    assert reply["content"]["status"] == "ok", (reply["content"], c.text(), c.text("stderr"))
    return c


class Agent:
    """`goaccel node` on a host, its log in a file."""

    def __init__(self, ns, scratch, *args):
        self.log = scratch / f"agent-{ns}-{time.monotonic_ns()}.log"
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, str(BINARY), "node", *args],
                                     stdout=self.log.open("w"), stderr=subprocess.STDOUT)

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def output(self):
        return self.log.read_text()


@pytest.fixture
def agents():
    started = []

    def start(*a):
        ag = Agent(*a)
        started.append(ag)
        return ag
    yield start
    for ag in started:
        ag.stop()


@pytest.fixture(scope="module")
def external_etcd(hosts):
    """Debian's etcd-server on host 3 (installed by `make test-deps`)."""
    etcd = shutil.which("etcd")
    assert etcd, "etcd is not installed: `make test-deps` installs Debian's etcd-server"
    data = Path(tempfile.mkdtemp(prefix="goaccel-etcd-server-"))
    url = f"http://{ADDR[3]}:{ETCD_PORT}"
    log = (data / "etcd.log").open("w+")
    proc = subprocess.Popen(
        ["ip", "netns", "exec", hosts[3], etcd, "--name", "e2e", "--data-dir", str(data / "data"),
         "--listen-client-urls", url, "--advertise-client-urls", url,
         "--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
         "--initial-cluster", "e2e=http://127.0.0.1:2380"],
        stdout=log, stderr=subprocess.STDOUT)
    ok = wait_until(lambda: "ready to serve client requests" in (data / "etcd.log").read_text(), TIMEOUT)
    assert ok, (data / "etcd.log").read_text()
    try:
        yield f"{ADDR[3]}:{ETCD_PORT}"
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(data, ignore_errors=True)


def etcd_keys(ns, endpoint, prefix):
    """Keys under prefix in the etcd at endpoint, read through its JSON gateway from host ns."""
    import base64
    body = json.dumps({"key": base64.b64encode(prefix.encode()).decode(),
                       "range_end": base64.b64encode((prefix[:-1] + chr(ord(prefix[-1]) + 1)).encode()).decode(),
                       "keys_only": True})
    code = ("import sys, urllib.request; r = urllib.request.urlopen(urllib.request.Request("
            f"'http://{endpoint}/v3/kv/range', data=sys.argv[1].encode())); print(r.read().decode())")
    out = subprocess.run(["ip", "netns", "exec", ns, "python3", "-c", code, body],
                         capture_output=True, text=True, check=True).stdout
    return [base64.b64decode(kv["key"]).decode() for kv in json.loads(out).get("kvs", [])]


def node_workers(pid):
    return [p for p, _ in workers_of(pid)]


def embedded_dirs(tmpdir):
    return sorted(p.name for p in Path(tmpdir).glob("goaccel-etcd-*"))


def test_two_nodes_all_reduce_embedded_etcd(hosts, scratch, agents):
    """2 nodes x 2 processes, etcd embedded in the kernel: one command per
    host, nothing installed."""
    ag = agents(hosts[2], scratch, "--rdzv-endpoint", f"{ADDR[1]}:29500", "--rdzv-id", "e2e-embedded",
                "--node-rank", "1", "--nproc-per-node", "2")
    with kernel_on(hosts[1], scratch) as (km, kc, tmpdir):
        run_cell(kc, DECLS)
        c = run_cell(kc, launch_cell("allreduce, nil", f'NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", '
                                     f'MasterAddr: "{ADDR[1]}", RdzvID: "e2e-embedded"'))
        out = c.text()
        assert "LAUNCH ERROR" not in out, out + c.text("stderr") + ag.output()
        assert "Launching training on 2 CPUs on node 0 of 2." in out
        for r in range(4):
            assert f"[node {r // 2} rank {r}] rank {r} of 4 on node {r // 2}\n" in out, out
        results = [line[len("RESULT "):] for line in out.splitlines() if line.startswith("RESULT ")]
        assert results == EXPECTED, out
        # The embedded etcd's data goes with the launch (in the background:
        # etcd gives the agents' watches up to 7 s).
        assert wait_until(lambda: not embedded_dirs(tmpdir), TIMEOUT), embedded_dirs(tmpdir)
    assert "node 1 of round" in ag.output() and "world size 4, ranks 2-3" in ag.output(), ag.output()


def test_killed_agent_is_named_and_leaves_no_worker(hosts, scratch, agents):
    ag = agents(hosts[2], scratch, "--rdzv-endpoint", f"{ADDR[1]}:29500", "--rdzv-id", "e2e-kill",
                "--node-rank", "1")
    with kernel_on(hosts[1], scratch) as (km, kc, tmpdir):
        run_cell(kc, DECLS)
        c = Cell(kc, launch_cell("sleepy, []any{5}", f'NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", '
                                 f'MasterAddr: "{ADDR[1]}", RdzvID: "e2e-kill"'))
        c.wait_for("] sleeping", count=4)
        assert "[node 1 rank 3] sleeping" in c.text()
        assert embedded_dirs(tmpdir), "the embedded etcd keeps its data in the kernel's TMPDIR while it runs"
        agent_workers = node_workers(ag.proc.pid)
        assert len(agent_workers) == 2, agent_workers
        t0 = time.monotonic()
        ag.kill()
        c.finish()
        took = time.monotonic() - t0
        out = c.text()
        # The message names the closed connection (not a lease expiry): the
        # loss was seen at once; the workers would sleep an hour.
        assert "LAUNCH ERROR: launcher: node 1 (10.77.0.2, ranks 2-3) was lost: its agent's connection to the launcher closed" in out, out
        print(f"\nkill → error {took:.1f}s")
        assert took < PROMPT, f"the loss of node 1 was reported after {took:.1f}s"
        assert wait_until(lambda: not any(os.path.exists(f"/proc/{p}") and not _zombie(p) for p in agent_workers), PROMPT), \
            f"workers of the killed agent left behind: {agent_workers}"
        assert not node_workers(km.provisioner.process.pid), "node 0's workers left behind"


def _zombie(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_max_restarts_with_agent_restarted_external_etcd(hosts, scratch, agents, external_etcd):
    """MaxRestarts=1 against Debian's etcd-server on host 3: the agent is
    killed mid-run, a new one joins the restarted group, the launch completes.
    Nothing is embedded: the rounds are in the external etcd."""
    args = ("--rdzv-endpoint", external_etcd, "--rdzv-id", "e2e-external", "--node-rank", "1")
    ag = agents(hosts[2], scratch, *args)
    with kernel_on(hosts[1], scratch) as (km, kc, tmpdir):
        run_cell(kc, DECLS)
        c = Cell(kc, launch_cell("sleepy, []any{1}", f'NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", '
                                 f'RdzvEndpoint: "{external_etcd}", RdzvID: "e2e-external", MaxRestarts: 1'))
        c.wait_for("] sleeping", count=4)
        assert not embedded_dirs(tmpdir), "an etcd was embedded although RdzvEndpoint names one"
        ag.kill()
        c.wait_for("restarting all 4 workers on 2 nodes (restart 1 of 1)", name="stderr")
        assert "launcher: node 1 (10.77.0.2, ranks 2-3) was lost; restarting" in c.text("stderr")
        agents(hosts[2], scratch, *args)
        c.finish()
        out = c.text()
        assert "LAUNCH ERROR" not in out, out + c.text("stderr")
        results = [line[len("RESULT "):] for line in out.splitlines() if line.startswith("RESULT ")]
        assert results == EXPECTED, out
        assert not embedded_dirs(tmpdir)
    keys = etcd_keys(hosts[3], external_etcd, "/goaccel/rdzv/e2e-external/")
    assert any("/done/" in k for k in keys), keys


def test_frozen_agent_lease_expires(hosts, scratch, agents, external_etcd):
    """A node that stops answering (SIGSTOP: its connections stay open) is
    named once its etcd lease expires (lease_ttl 5 s: short, for the expiry
    to come soon after the SIGSTOP, not so short that a busy machine lets it
    expire before)."""
    ag = agents(hosts[2], scratch, "--rdzv-endpoint", external_etcd, "--rdzv-id", "e2e-frozen", "--node-rank", "1",
                "--rdzv-conf", "lease_ttl=5")
    with kernel_on(hosts[1], scratch) as (km, kc, tmpdir):
        run_cell(kc, DECLS)
        c = Cell(kc, launch_cell("sleepy, []any{5}", f'NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", '
                                 f'RdzvEndpoint: "{external_etcd}", RdzvID: "e2e-frozen"'))
        c.wait_for("] sleeping", count=4)
        agent_workers = node_workers(ag.proc.pid)
        t0 = time.monotonic()
        ag.kill(signal.SIGSTOP)
        c.finish()
        took = time.monotonic() - t0
        out = c.text()
        assert ("LAUNCH ERROR: launcher: node 1 (10.77.0.2, ranks 2-3) was lost: its rendezvous lease expired: "
                "no keep-alive within its lease_ttl (5s)") in out, out
        print(f"\nSIGSTOP → error {took:.1f}s")
        assert took < PROMPT, f"the lost lease was reported after {took:.1f}s"
        ag.kill(signal.SIGKILL)
        assert wait_until(lambda: not any(os.path.exists(f"/proc/{p}") and not _zombie(p) for p in agent_workers), PROMPT)


def test_c10d_across_nodes(hosts, scratch, agents):
    secret = scratch / "secret"
    secret.write_text(os.urandom(24).hex())
    secret.chmod(0o600)
    endpoint = f"{ADDR[1]}:29400"
    ag = agents(hosts[2], scratch, "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", "e2e-c10d",
                "--rdzv-conf", f"secret_file={secret}")
    with kernel_on(hosts[1], scratch) as (km, kc, tmpdir):
        run_cell(kc, DECLS)
        c = run_cell(kc, launch_cell("allreduce, nil", f'NumNodes: 2, NumProcesses: 2, RdzvBackend: "c10d", '
                                     f'RdzvEndpoint: "{endpoint}", MasterAddr: "{ADDR[1]}", RdzvID: "e2e-c10d", '
                                     f'RdzvConf: map[string]string{{"secret_file": "{secret}"}}'))
        out = c.text()
        assert "LAUNCH ERROR" not in out, out + ag.output()
        results = [line[len("RESULT "):] for line in out.splitlines() if line.startswith("RESULT ")]
        assert results == EXPECTED, out
        assert "[node 1 rank 2] rank 2 of 4 on node 1" in out


def test_interrupt_stops_every_node(hosts, scratch, agents):
    ag = agents(hosts[2], scratch, "--rdzv-endpoint", f"{ADDR[1]}:29500", "--rdzv-id", "e2e-interrupt",
                "--node-rank", "1")
    with kernel_on(hosts[1], scratch) as (km, kc, tmpdir):
        run_cell(kc, DECLS)
        c = Cell(kc, launch_cell("sleepy, []any{5}", f'NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", '
                                 f'MasterAddr: "{ADDR[1]}", RdzvID: "e2e-interrupt"'))
        c.wait_for("] sleeping", count=4)
        kpid = km.provisioner.process.pid
        assert len(node_workers(kpid)) == 2 and len(node_workers(ag.proc.pid)) == 2
        t0 = time.monotonic()
        km.interrupt_kernel()
        reply = c.finish()
        took = time.monotonic() - t0
        # the workers sleep an hour: the launch ending proves they were stopped
        print(f"\ninterrupt → reply {took:.1f}s")
        assert took < PROMPT, f"interrupt took {took:.1f}s"
        assert wait_until(lambda: not node_workers(kpid) and not node_workers(ag.proc.pid), PROMPT), \
            (node_workers(kpid), node_workers(ag.proc.pid))
        shown = json.dumps([m["content"] for m in c.msgs]) + json.dumps(reply["content"])
        assert "nterrupt" in shown, shown
        assert ag.proc.poll() is None, "the agent must stay up for the next launch"
        # the kernel is fine and the agent serves the next launch
        c = Cell(kc, launch_cell("allreduce, nil", f'NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", '
                                 f'MasterAddr: "{ADDR[1]}", RdzvID: "e2e-interrupt", RdzvConf: map[string]string{{"join_timeout": "{TIMEOUT}"}}'))
        try:
            c.finish()
        except Empty:
            raise AssertionError(f"the second launch did not end:\n{c.text()}{c.text('stderr')}\nagent:\n{ag.output()}")
        results = [line[len("RESULT "):] for line in c.text().splitlines() if line.startswith("RESULT ")]
        assert results == EXPECTED, c.text() + c.text("stderr")


SHARDED = '''import (
\t"fmt"
\t"math"
\t"math/rand/v2"
\t"strings"
\t"github.com/gomlx/gomlx/pkg/core/graph"
\t"github.com/gomlx/gomlx/pkg/core/tensors"
\tmlctx "github.com/gomlx/gomlx/pkg/ml/context"
\t"github.com/gomlx/gomlx/pkg/ml/layers"
\t"github.com/gomlx/gomlx/pkg/ml/layers/activations"
\t"github.com/gomlx/gomlx/pkg/ml/train/losses"
\t"github.com/goaccel/goaccel/accelerate"
\t"github.com/goaccel/goaccel/accelerate/fsdp"
\tgxa "github.com/goaccel/goaccel/accelerate/gomlx"
\t"github.com/goaccel/goaccel/launcher"
)

func denseNet(ctx *mlctx.Context, _ any, in []*graph.Node) []*graph.Node {
\th := activations.Relu(layers.Dense(ctx.In("hidden"), in[0], true, 64))
\treturn []*graph.Node{layers.Dense(ctx.In("out"), h, true, 4)}
}

// trainEach trains the same model from the same start in one launch with
// DDP and with FSDP's SHARD_GRAD_OP, FULL_SHARD and HYBRID_SHARD (AdamW
// with decay on the matrices, clipping by norm), and returns the runs'
// global losses and a checksum of the final whole masters.
func trainEach(steps int) (string, error) {
\tvar out []string
\tfor _, strategy := range []fsdp.ShardingStrategy{0, fsdp.ShardGradOp, fsdp.FullShard, fsdp.HybridShard} {
\t\tvar opts []accelerate.Option
\t\tname := "DDP"
\t\tif strategy != 0 {
\t\t\topts, name = append(opts, accelerate.WithFSDPPlugin(fsdp.Plugin{ShardingStrategy: strategy})), strategy.String()
\t\t}
\t\tacc, err := accelerate.NewAccelerator(opts...)
\t\tif err != nil {
\t\t\treturn "", err
\t\t}
\t\tbackend, err := gxa.AcceleratorBackend(acc)
\t\tif err != nil {
\t\t\treturn "", err
\t\t}
\t\tctx := mlctx.New()
\t\tctx.SetParam(mlctx.ParamInitialSeed, int64(3))
\t\ttr, err := gxa.NewTrainer(acc, backend, ctx, denseNet, losses.SparseCategoricalCrossEntropyLogits,
\t\t\tgxa.AdamW().LearningRate(1e-2).WeightDecay(0.1, gxa.DecayMatrices), nil, nil, gxa.WithClipGradNorm(0.5, 2))
\t\tif err != nil {
\t\t\treturn "", err
\t\t}
\t\tlo, hi := acc.SplitBetweenProcesses(32)
\t\tvar ls []string
\t\tfor step := range steps {
\t\t\trng := rand.New(rand.NewPCG(9, uint64(step)))
\t\t\tx, y := make([]float32, 32*16), make([]int32, 32)
\t\t\tfor i := range x {
\t\t\t\tx[i] = float32(rng.NormFloat64())
\t\t\t}
\t\t\tfor i := range y {
\t\t\t\ty[i] = int32(i % 4)
\t\t\t\tx[i*16+i%4] += 2 // learnable
\t\t\t}
\t\t\tm, err := tr.TrainStep(nil, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x[lo*16:hi*16], hi-lo, 16)},
\t\t\t\t[]*tensors.Tensor{tensors.FromFlatDataAndDimensions(y[lo:hi], hi-lo, 1)})
\t\t\tif err != nil {
\t\t\t\treturn "", err
\t\t\t}
\t\t\tl, err := acc.Reduce([]float64{float64(tensors.ToScalar[float32](m[0]))}, "mean")
\t\t\tif err != nil {
\t\t\t\treturn "", err
\t\t\t}
\t\t\tls = append(ls, fmt.Sprintf("%.9g", l[0]))
\t\t}
\t\tsum := 0.0
\t\tfor _, v := range tr.MasterValues() {
\t\t\tfor _, x := range v {
\t\t\t\tsum += math.Abs(float64(x))
\t\t\t}
\t\t}
\t\tout = append(out, fmt.Sprintf("%s/%s %s %.9g", name, acc.DistributedType(), strings.Join(ls, ","), sum))
\t}
\treturn strings.Join(out, ";"), nil
}
'''


def test_sharding_across_nodes_follows_ddp(hosts, scratch, agents):
    """FSDP's SHARD_GRAD_OP, FULL_SHARD and HYBRID_SHARD for a GoMLX model
    on 2 nodes x 1 process, the reduce-scatter and all-gather (HYBRID_SHARD:
    the all-reduce of the replicas' shares) crossing the veth link: 10 steps
    give the losses DDP gives in the same launch within 1e-5 relative, and
    both processes end with the same whole weights."""
    ag = agents(hosts[2], scratch, "--rdzv-endpoint", f"{ADDR[1]}:29500", "--rdzv-id", "e2e-fsdp",
                "--node-rank", "1", "--nproc-per-node", "1")
    with kernel_on(hosts[1], scratch) as (km, kc, tmpdir):
        run_cell(kc, SHARDED)
        c = run_cell(kc, launch_cell("trainEach, []any{10}", f'NumNodes: 2, NumProcesses: 1, RdzvBackend: "etcd", '
                                     f'MasterAddr: "{ADDR[1]}", RdzvID: "e2e-fsdp"'))
        out = c.text()
        assert "LAUNCH ERROR" not in out, out + c.text("stderr") + ag.output()
        results = [line[len("RESULT "):] for line in out.splitlines() if line.startswith("RESULT ")]
        assert len(results) == 2 and results[0] == results[1], out  # the same on both nodes
        runs = [r.split(" ") for r in results[0].split(";")]
        assert [r[0] for r in runs] == ["DDP/MULTI_CPU", "SHARD_GRAD_OP/FSDP", "FULL_SHARD/FSDP", "HYBRID_SHARD/FSDP"], results[0]
        ddp = [float(x) for x in runs[0][1].split(",")]
        assert len(ddp) == 10 and ddp[-1] < ddp[0], results[0]
        for name, losses, checksum in runs[1:]:
            shard = [float(x) for x in losses.split(",")]
            assert len(shard) == 10, results[0]
            for i, (d, s) in enumerate(zip(ddp, shard)):
                assert abs(d - s) <= 1e-5 * max(1, abs(d)), f"step {i + 1}: DDP {d}, {name} {s}"
            assert abs(float(runs[0][2]) - float(checksum)) <= 1e-4 * float(runs[0][2]), (name, results[0])
