"""Peer benchmark for BenchmarkWrite1MScalars: tensorboardX's SummaryWriter
writing N scalars (one tag) into a fresh event file, flush and close.
Prints the nanoseconds per scalar on the last line as `ns/scalar <value>`."""
import sys
import tempfile
import time

from tensorboardX import SummaryWriter

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
with tempfile.TemporaryDirectory() as d:
    t0 = time.perf_counter()
    w = SummaryWriter(d)
    for s in range(n):
        w.add_scalar("train/loss", s * 0.001, s)
    w.flush()
    w.close()
    dt = time.perf_counter() - t0
print(f"tensorboardX: {n} scalars in {dt:.2f} s")
print(f"ns/scalar {dt / n * 1e9:.1f}")
