"""`make slurm-demo`: the README's path from a notebook to a Slurm job, run
on the isolated two-node Slurm of the tests (slurmcluster.py): export
examples/notebooks/cluster_job.ipynb, build it, submit a job of 2 nodes × 2
processes with `srun goaccel launch`, and print the job's output."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from slurmcluster import SlurmCluster, free_ports

ROOT = Path(__file__).resolve().parent.parent
GOACCEL = ROOT / "bin" / "goaccel"


def sh(*argv, **kw):
    print("$", " ".join(str(a) for a in argv), flush=True)
    subprocess.run([str(a) for a in argv], check=True, **kw)


def main():
    work = Path(tempfile.mkdtemp(prefix="goaccel-slurm-demo-"))
    prog = work / "cluster_job"
    sh(GOACCEL, "export", ROOT / "examples" / "notebooks" / "cluster_job.ipynb", "-o", prog)
    sh("go", "build", "-o", "train", ".", cwd=prog)
    secret = work / "secret"
    secret.write_bytes(os.urandom(32))
    secret.chmod(0o600)
    out = work / "job.out"
    script = work / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        f"#SBATCH --nodes=2 --ntasks-per-node=1 --output={out}\n"
        f"srun --kill-on-bad-exit=1 {GOACCEL} launch --cpu --num_processes 2 "
        f"--main_process_port {free_ports(1)[0]} --rdzv_conf secret_file={secret} {prog / 'train'}\n")
    print(f"$ cat {script}\n{script.read_text()}", flush=True)
    cluster = SlurmCluster(work / "slurm")
    cluster.start()
    try:
        print(f"$ sbatch --wait {script}", flush=True)
        r = cluster.run(["sbatch", "--wait", str(script)], timeout=600)
        print(r.stdout, end="")
        print(out.read_text() if out.exists() else "(no output)", end="")
        return r.returncode
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
