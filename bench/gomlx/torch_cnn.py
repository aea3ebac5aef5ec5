"""The example CNN in PyTorch on CPU (eager, NCHW, PyTorch's native
layout): Conv2d(1,32,3,padding=1) relu, MaxPool2d(2), Conv2d(32,64,3,
padding=1) relu, MaxPool2d(2), Linear(3136,10); cross-entropy; Adam (lr 1e-3,
ε 1e-7 as GoMLX's); float32; batch 128. torch.set_num_threads is the number
of CPUs the process may run on (taskset), or GXB_THREADS."""
import os

import torch
from torch import nn

import peer_common as pc


def main():
    n = pc.threads()
    torch.set_num_threads(n)
    torch.manual_seed(pc.SEED)
    x, y = pc.load_mnist()
    x = torch.from_numpy(x.reshape(-1, 1, 28, 28))
    y = torch.from_numpy(y.astype("int64"))
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()

    pc.measure("torch", step, pc.batches(x, y), {
        "Versions": f"torch {torch.__version__}", "Threads": torch.get_num_threads(),
        "InteropThreads": torch.get_num_interop_threads(), "Affinity": len(os.sched_getaffinity(0))})


if __name__ == "__main__":
    main()
