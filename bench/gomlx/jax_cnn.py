"""The example CNN in pure JAX on CPU: conv 32 3×3 SAME relu, maxpool 2,
conv 64 3×3 SAME relu, maxpool 2, dense 10 (NHWC, as GoMLX lays it out),
sparse softmax cross-entropy, Adam (lr 1e-3, β 0.9/0.999, ε 1e-7: GoMLX's
defaults, written out), float32, batch 128, one jitted train step whose
parameters and moments are donated. Threads: JAX's own CPU client, sized by
the CPUs the process may run on (taskset), or by XLA_FLAGS/PJRT_NPROC as
bench.py sets them for the 1-thread run."""
import functools

import jax
import jax.numpy as jnp
import jaxlib
from jax import lax

import peer_common as pc

B1, B2, EPS, LR = 0.9, 0.999, 1e-7, 1e-3


def init(key):
    k = jax.random.split(key, 3)

    def glorot(k, shape, fan_in, fan_out):
        lim = (6 / (fan_in + fan_out)) ** 0.5
        return jax.random.uniform(k, shape, jnp.float32, -lim, lim)

    return {
        "w0": glorot(k[0], (3, 3, 1, 32), 9, 9 * 32), "b0": jnp.zeros(32, jnp.float32),
        "w1": glorot(k[1], (3, 3, 32, 64), 9 * 32, 9 * 64), "b1": jnp.zeros(64, jnp.float32),
        "wd": glorot(k[2], (7 * 7 * 64, 10), 7 * 7 * 64, 10), "bd": jnp.zeros(10, jnp.float32),
    }


def conv(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)


def pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def logits(p, x):
    x = pool(conv(x, p["w0"], p["b0"]))
    x = pool(conv(x, p["w1"], p["b1"]))
    return x.reshape(x.shape[0], -1) @ p["wd"] + p["bd"]


def loss_fn(p, x, y):
    lp = jax.nn.log_softmax(logits(p, x))
    return -jnp.mean(jnp.take_along_axis(lp, y[:, None], axis=1))


@functools.partial(jax.jit, donate_argnums=(0, 1))
def train_step(p, opt, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    m, v, t = opt
    t = t + 1
    m = jax.tree.map(lambda m, g: B1 * m + (1 - B1) * g, m, g)
    v = jax.tree.map(lambda v, g: B2 * v + (1 - B2) * g * g, v, g)
    c1, c2 = 1 / (1 - B1 ** t), 1 / (1 - B2 ** t)
    p = jax.tree.map(lambda p, m, v: p - LR * (m * c1) / (jnp.sqrt(v * c2) + EPS), p, m, v)
    return p, (m, v, t), loss


def main():
    x, y = pc.load_mnist()
    x = x.reshape(-1, 28, 28, 1)
    params = init(jax.random.PRNGKey(pc.SEED))
    zeros = jax.tree.map(jnp.zeros_like, params)
    state = {"p": params, "opt": (zeros, jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.float32))}

    def step(xb, yb):
        state["p"], state["opt"], loss = train_step(state["p"], state["opt"], xb, yb)
        return float(loss)

    pc.measure("jax", step, pc.batches(x, y), {
        "Versions": f"jax {jax.__version__}, jaxlib {jaxlib.__version__}",
        "Devices": str(jax.devices()), "Affinity": len(__import__("os").sched_getaffinity(0))})


if __name__ == "__main__":
    main()
