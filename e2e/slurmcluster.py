"""A real Slurm (Debian's slurmctld and slurmd) on this host for the tests:
an isolated instance in a temporary directory — its own munge daemon and
socket, its own slurm.conf (SLURM_CONF), two slurmd's (`slurmd -N`) that
play two nodes — started by `SlurmCluster.start()` and stopped by `stop()`.
Nothing under /etc is read or written. scripts/slurm.sh installs the
packages."""
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class SlurmCluster:
    def __init__(self, root, nodes=2, cpus=2):
        self.root = Path(root)
        self.nodes = [f"n{i + 1}" for i in range(nodes)]
        self.cpus = cpus
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=str(self.root / "slurm.conf"))

    def _conf(self):
        r = self.root
        host = socket.gethostname()
        ctld, *ports = free_ports(1 + len(self.nodes))
        nodes = ",".join(self.nodes)
        lines = [
            "ClusterName=goaccel-test",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ctld}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r / 'munge.sock'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "SlurmUser=root",
            "SlurmdUser=root",
            "MailProg=/bin/true",
            "KillWait=5",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool-%n'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={r / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'slurmd-%n.log'}",
        ] + [
            # One line per node: each slurmd on a port of its own.
            f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={p} CPUs={self.cpus} State=UNKNOWN"
            for n, p in zip(self.nodes, ports)
        ] + [
            f"PartitionName=test Nodes={nodes} Default=YES MaxTime=INFINITE State=UP",
        ]
        (r / "slurm.conf").write_text("\n".join(lines) + "\n")

    def start(self, patience=120):
        r = self.root
        r.mkdir(parents=True, exist_ok=True)
        (r / "state").mkdir(exist_ok=True)
        key = r / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._conf()
        self._spawn(["munged", "--foreground", "--force", f"--socket={r / 'munge.sock'}", f"--key-file={key}",
                     f"--pid-file={r / 'munged.pid'}", f"--log-file={r / 'munged.log'}", f"--seed-file={r / 'munge.seed'}"],
                    "munged.out")
        self._wait(lambda: (r / "munge.sock").exists(), "munged's socket", patience)
        self._spawn(["slurmctld", "-D", "-i"], "slurmctld.out")
        for n in self.nodes:
            self._spawn(["slurmd", "-D", "-N", n], f"slurmd-{n}.out")
        self._wait(self._idle, "the nodes to be idle", patience)

    def _spawn(self, argv, out):
        f = open(self.root / out, "wb")
        self.procs.append(subprocess.Popen(argv, env=self.env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True))

    def _idle(self):
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args[0]} exited ({p.returncode}):\n" + self.logs())
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=self.env, capture_output=True, text=True)
        states = dict(l.split() for l in out.stdout.splitlines() if l.strip())
        return out.returncode == 0 and all(states.get(n) == "idle" for n in self.nodes)

    def _wait(self, cond, what, patience):
        # A bound for a broken set-up only: each check is progress.
        deadline = time.monotonic() + patience
        while not cond():
            if time.monotonic() > deadline:
                raise RuntimeError(f"Slurm: waited {patience} s for {what}\n" + self.logs())
            time.sleep(0.1)

    def logs(self):
        parts = []
        for f in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.out")):
            parts.append(f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    def run(self, argv, **kw):
        return subprocess.run(argv, env=kw.pop("env", self.env), capture_output=True, text=True, **kw)

    def stop(self):
        subprocess.run(["scancel", "--full", "-u", "root"], env=self.env, capture_output=True)
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
