"""Exports the JAX test programs of importers/stablehlo (run with JAX).

    python3 export_jax.py OUTDIR

writes NAME.mlir (StableHLO in MLIR's generic form, no locations), NAME.inK.npy
(the inputs) and NAME.out.npy (JAX's output, float32 matmuls at full precision).
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_default_matmul_precision", "highest")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)


def rnd(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def save(name, f, *args):
    lowered = jax.jit(f).lower(*args)
    mod = lowered.compiler_ir("stablehlo")
    text = mod.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    with open(os.path.join(out, name + ".mlir"), "w") as fh:
        fh.write(text)
    for i, a in enumerate(args):
        np.save(os.path.join(out, f"{name}.in{i}.npy"), np.asarray(a))
    y = jax.jit(f)(*args)
    np.save(os.path.join(out, name + ".out.npy"), np.asarray(y))
    print(name, "ok", len(text), "chars")


# An MLP: dense, relu, dense, softmax.
w1, b1, w2, b2 = rnd(16, 32), rnd(32), rnd(32, 8), rnd(8)


def mlp(x):
    h = jax.nn.relu(x @ w1 + b1)
    return jax.nn.softmax(h @ w2 + b2, axis=-1)


# A CNN in NCHW: grouped and strided convolutions, max and average pooling
# with reduce_window, a spatial mean, a dense layer.
k1, k2, k3, wd = rnd(8, 3, 3, 3), rnd(8, 4, 3, 3), rnd(3, 3, 8, 6), rnd(6, 5)


def cnn(x):
    y = lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    y = jax.nn.relu(y)
    y = lax.conv_general_dilated(y, k2, (2, 2), ((1, 1), (1, 1)), feature_group_count=2,
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    # the same layer in NHWC, as Flax writes it
    z = jnp.transpose(y, (0, 2, 3, 1))
    z = lax.conv_general_dilated(z, k3, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    z = lax.reduce_window(z, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / 4.0
    return jnp.mean(z, axis=(1, 2)) @ wd


# A transformer block: embedding (gather), layer norm, causal multi-head
# attention with einsums, a tanh GELU MLP, residuals.
V, D, H = 40, 32, 4
emb, wqkv, wo, w_up, w_dn = rnd(V, D), rnd(D, 3 * D, scale=0.2), rnd(D, D, scale=0.2), rnd(D, 64, scale=0.2), rnd(64, D, scale=0.2)
g, beta = 1 + rnd(D, scale=0.1), rnd(D, scale=0.1)


def layer_norm(x):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + beta


def attention(ids):
    x = jnp.take(emb, ids, axis=0)
    B, T = ids.shape
    q, k, v = jnp.split(layer_norm(x) @ wqkv, 3, axis=-1)
    q, k, v = (t.reshape(B, T, H, D // H) for t in (q, k, v))
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(D // H).astype(jnp.float32)
    causal = jnp.tril(jnp.ones((T, T), dtype=bool))
    s = jnp.where(causal, s, -1e9)
    p = jax.nn.softmax(s, axis=-1)
    a = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, T, D)
    x = x + a @ wo
    return x + jax.nn.gelu(layer_norm(x) @ w_up, approximate=True) @ w_dn


save("mlp", mlp, rnd(4, 16, scale=1))
save("cnn", cnn, rnd(2, 3, 12, 12, scale=1))
save("attention", attention, rng.integers(0, V, (2, 8)).astype(np.int32))
