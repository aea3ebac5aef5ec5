"""What the JAX and PyTorch peers share with the Go side: MNIST read from
the GoMNIST module's files (the ones datasets/mnist reads), pixels scaled
to [0, 1] as float32, shuffled once with a fixed seed; the warm-up and
measured steps (GXB_WARMUP, GXB_STEPS, as bench.go.txt reads them); and the
measurement: wall time of the measured steps (data included, each step's
loss read back to the host as GoMLX's train.Loop does) and the median
step."""
import gzip
import json
import os
import statistics
import time

import numpy as np

BATCH = 128
SEED = 42


def warmup_steps():
    return int(os.environ.get("GXB_WARMUP", "10"))


def measured_steps():
    return int(os.environ.get("GXB_STEPS", "50"))


def threads():
    """GXB_THREADS when set, else the CPUs this process may run on (taskset)."""
    n = int(os.environ.get("GXB_THREADS", "0"))
    return n if n > 0 else len(os.sched_getaffinity(0))


def load_mnist():
    """The 60,000 training images (N×28×28, float32 in [0, 1]) and labels
    (int32), shuffled with SEED."""
    d = os.environ["GXB_MNIST_DIR"]
    with gzip.open(os.path.join(d, "train-images-idx3-ubyte.gz")) as f:
        raw = f.read()
    n = int.from_bytes(raw[4:8], "big")
    x = np.frombuffer(raw, np.uint8, offset=16).reshape(n, 28, 28).astype(np.float32) / 255
    with gzip.open(os.path.join(d, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int32)
    perm = np.random.default_rng(SEED).permutation(n)
    return np.ascontiguousarray(x[perm]), np.ascontiguousarray(y[perm])


def batches(x, y):
    """Global batches of BATCH, in order, forever (the last short one of an epoch dropped)."""
    per_epoch = len(y) // BATCH
    i = 0
    while True:
        j = (i % per_epoch) * BATCH
        yield x[j:j + BATCH], y[j:j + BATCH]
        i += 1


def measure(name, step, data, info):
    """Runs warm-up steps, then the measured ones; step(x, y) returns the
    loss as a Python float. Prints one line for bench.py."""
    losses, durs = [], []
    t = time.perf_counter()
    for _ in range(warmup_steps()):
        xb, yb = next(data)
        losses.append(step(xb, yb))
    first = time.perf_counter() - t
    start = time.perf_counter()
    for _ in range(measured_steps()):
        t = time.perf_counter()
        xb, yb = next(data)
        losses.append(step(xb, yb))
        durs.append(time.perf_counter() - t)
    wall = time.perf_counter() - start
    m = measured_steps()
    out = dict(info, SamplesPerSec=BATCH * m / wall, StepMs=wall * 1e3 / m,
               MedianStepMs=statistics.median(durs) * 1e3, WarmupS=first, Losses=losses)
    print(f"GXBENCH {name} {json.dumps(out)}", flush=True)
